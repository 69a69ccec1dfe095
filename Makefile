# cuarray — build, test and run. Everything here needs only Go: the default
# build runs on the emulated device (sim). See README.md.

GO       ?= go
PKGS     := ./...
FUZZTIME ?= 60s

.PHONY: run test bench cover fuzz build vet

## run: the main job — the demo on the default device (cuda:0 with -tags cuda and a GPU, else sim:0)
run:
	$(GO) run ./cmd/cuarray demo

## test: vet, then every package with the race detector, on sim
test: vet
	$(GO) test -race -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

build:
	$(GO) build $(PKGS)

## bench: the Go benchmarks (ledger event cost, sim copies)
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## cover: coverage per package, and cover.html
cover:
	$(GO) test -count=1 -coverprofile=cover.out -coverpkg=./devarray/...,./accounting/...,./device/... $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1
	$(GO) tool cover -html=cover.out -o cover.html

## fuzz: run every fuzz target for FUZZTIME each (default 60s)
fuzz:
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzParseTypestr$$' -fuzztime $(FUZZTIME)
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzViews$$' -fuzztime $(FUZZTIME)
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzWrap$$' -fuzztime $(FUZZTIME)
	$(GO) test ./accounting -run '^$$' -fuzz '^FuzzParseBytes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./device -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME)
