module github.com/cuarray/cuarray

go 1.26.8

require (
	github.com/stretchr/testify v1.10.0
	go4.org/unsafe/assume-no-moving-gc v0.0.0-20231121144256-b99613f794b6
	gorgonia.org/cu v0.9.6
	gorgonia.org/tensor v0.9.24
)

require (
	github.com/apache/arrow/go/arrow v0.0.0-20210105145422-88aaea5262db // indirect
	github.com/chewxy/hm v1.0.0 // indirect
	github.com/chewxy/math32 v1.0.8 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.4.3 // indirect
	github.com/google/flatbuffers v1.12.0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/xtgo/set v1.0.0 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
	gonum.org/v1/gonum v0.8.2 // indirect
	google.golang.org/protobuf v1.25.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	gorgonia.org/vecf32 v0.9.0 // indirect
	gorgonia.org/vecf64 v0.9.0 // indirect
)

// gorgonia.org/cu v0.9.6 with its package init made lazy (cu.Init), so a -tags cuda binary
// starts on a machine without a GPU: third_party/gorgonia-cu/PATCH.md has the diff.
replace gorgonia.org/cu v0.9.6 => ./third_party/gorgonia-cu
