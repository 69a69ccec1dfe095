# cuarray — build, test and run. Everything here needs only Go: the default
# build runs on the emulated device (sim). See README.md.

GO       ?= go
PKGS     := ./...
FUZZTIME ?= 60s

.PHONY: mpi-deps mpi-build mpi-run mpi-test mpi-check bench-gpu run test test-latency bench bench-doc bench-deps bench-all cover fuzz mutate build vet cuda-deps python-deps libcuarray test-python ptx example-ptx check-ptx cuda-build cuda-test cuda-emu-test cuda-emu-upstream gpu-bundle gpu-rehearse gpu-hang-check

## run: the main job, on the default device (cuda:0 with -tags cuda and a GPU, else sim:0;
## DEVICE='sim:0?check=streams' picks another): the transfer paths at small sizes, then the FBP
## example in both modes, compared, and a three-line summary (fbp -summary)
DEVICE ?=
run:
	$(GO) run ./cmd/cuarray bench -sizes 4KiB,1MiB,16MiB -budget 64MiB -q -device '$(DEVICE)'
	$(GO) run ./examples/fbp -mode both -size 128 -angles 180 -slices 32 -mem 8MiB -q -summary -device '$(DEVICE)'

## test: vet, then every package with the race detector, on sim (the
## Python module's tests run too where /usr/bin/python3 has NumPy: make python-deps),
## then the packages that move data again on sim with latency (test-latency)
test: vet
	$(GO) test -race -count=1 $(PKGS)
	$(MAKE) --no-print-directory test-latency

## test-latency: the packages that move data, on a sim device whose every stream
## operation completes LATENCY after it is queued, as on a GPU: a synchronous
## call that returns before its work is done fails their tests; with the stream
## race checker on (CHECK=streams; CHECK= turns it off) for every sim device the tests make
## (CUARRAY_SIM_CHECK), so an operation that races with another by CUDA's ordering rules fails them too
LATENCY       ?= 1ms
CHECK         ?= streams
LATENCY_PKGS  := ./devarray/... ./device/... ./transfer/... ./pinned/... ./pool/... ./kernels/... \
                 ./interop/... ./examples/fbp/tomo/... ./python/...
# Packages of LATENCY_PKGS whose tests make no device and read no setting (their test binaries link
# neither device nor device/sim, and they read no environment variable and start no process): the
# latency pass would only repeat them. internal/depcheck's TestLatencyPassLeavesOutOnlyRepeats checks it.
LATENCY_SAME_PKGS := device/ptx device/ptx/entry device/fatbin
test-latency:
	@pkgs=$$($(GO) list $(LATENCY_PKGS) | grep -vxF "$$(printf 'github.com/cuarray/cuarray/%s\n' $(LATENCY_SAME_PKGS))"); \
	set -x; CUARRAY_TEST_DEVICE='sim:0?mem=256MiB&latency=$(LATENCY)$(if $(CHECK),&check=$(CHECK))' \
	CUARRAY_DEVICE='sim:0?latency=$(LATENCY)$(if $(CHECK),&check=$(CHECK))' CUARRAY_SIM_CHECK='$(CHECK)' \
		$(GO) test -race -count=1 $$pkgs

## python-deps: Debian's NumPy for /usr/bin/python3 (the Python module's tests)
python-deps:
	bash scripts/python-deps.sh

## libcuarray: the C library (build/libcuarray.so, build/libcuarray.h) that python/cuarray.py loads
## Built beside and renamed into place, so that a program loading it meanwhile (python under
## mpirun, a second make) never reads a half-written library.
libcuarray:
	@mkdir -p build
	t=$$(mktemp -d build/.libcuarray.XXXXXX) && $(GO) build -buildmode=c-shared -o $$t/libcuarray.so ./libcuarray && \
		mv -f $$t/libcuarray.h build/libcuarray.h && mv -f $$t/libcuarray.so build/libcuarray.so; rc=$$?; rm -rf $$t; exit $$rc

## test-python: the Python module's tests against NumPy, verbosely
test-python: libcuarray
	CUARRAY_LIB=$(CURDIR)/build/libcuarray.so /usr/bin/python3 -m unittest -v python/test_cuarray.py

vet:
	$(GO) vet $(PKGS)

## build: compile every package, and the cuarray and fbp binaries into build/
build:
	$(GO) build $(PKGS)
	$(GO) build -o build/ ./cmd/cuarray ./examples/fbp

## bench: every sim figure of docs/perf.md with the command the doc gives, each beside its peer in
## the same run (NumPy, scikit-image with make bench-deps, sim's own allocator, the host's memcpy);
## writes build/bench-sim.json and build/bench-sim.md, the table docs/perf.md's sim section shows.
## STEPS='pool ledger' make bench runs some (the step names are in scripts/bench-sim.sh)
bench:
	GO=$(GO) bash scripts/bench-sim.sh

## bench-doc: put build/bench-sim.md (make bench) into docs/perf.md's generated section
bench-doc:
	$(GO) run ./internal/benchtable -splice docs/perf.md -md build/bench-sim.md

## bench-deps: Debian's NumPy and scikit-image for /usr/bin/python3 (the peers of make bench)
bench-deps:
	bash scripts/python-deps.sh python3-skimage

## bench-all: every Go benchmark of every package
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## cover: coverage per package, and cover.html
cover:
	$(GO) test -count=1 -coverprofile=cover.out -coverpkg=./devarray/...,./accounting/...,./device/...,./pool/...,./plan/...,./kernels/...,./pinned/...,./transfer/...,./interop/... $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1
	$(GO) tool cover -html=cover.out -o cover.html

## fuzz: run every fuzz target for FUZZTIME each (default 60s)
fuzz:
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzParseTypestr$$' -fuzztime $(FUZZTIME)
	$(GO) test ./kernels -run '^$$' -fuzz '^FuzzEmulate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzViews$$' -fuzztime $(FUZZTIME)
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzWrap$$' -fuzztime $(FUZZTIME)
	$(GO) test ./devarray -run '^$$' -fuzz '^FuzzHostStrided$$' -fuzztime $(FUZZTIME)
	$(GO) test ./accounting -run '^$$' -fuzz '^FuzzParseBytes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./accounting -run '^$$' -fuzz '^FuzzReadLog$$' -fuzztime $(FUZZTIME)
	$(GO) test ./device -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME)
	$(GO) test ./device -run '^$$' -fuzz '^FuzzOpenLink$$' -fuzztime $(FUZZTIME)
	$(GO) test ./device/sim -run '^$$' -fuzz '^FuzzArena$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/cuarray -run '^$$' -fuzz '^FuzzParseShape$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/cuarray -run '^$$' -fuzz '^FuzzParseParam$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/cuarray -run '^$$' -fuzz '^FuzzParseMethods$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transfer -run '^$$' -fuzz '^FuzzParsePath$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transfer -run '^$$' -fuzz '^FuzzStridedHostCopy$$' -fuzztime $(FUZZTIME)
	$(GO) test ./transfer -run '^$$' -fuzz '^FuzzParseProfile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./interop -run '^$$' -fuzz '^FuzzImportCAIJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./interop -run '^$$' -fuzz '^FuzzImportDLPack$$' -fuzztime $(FUZZTIME)
	$(GO) test ./interop -run '^$$' -fuzz '^FuzzParseIPC$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzViewOp$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzImportInterface$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzImportDLPack$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzIPCOpen$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzAllocatorCalls$$' -fuzztime $(FUZZTIME)
	$(GO) test ./libcuarray -run '^$$' -fuzz '^FuzzPlanRequest$$' -fuzztime $(FUZZTIME)
	$(GO) test ./mpi -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/mutatecases -run '^$$' -fuzz '^FuzzParseReport$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/mutatecases -run '^$$' -fuzz '^FuzzParseProfile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/mutatecases -run '^$$' -fuzz '^FuzzParseModulePath$$' -fuzztime $(FUZZTIME)
	$(GO) test ./device/cuda/cupti -run '^$$' -fuzz '^FuzzParseRecords$$' -fuzztime $(FUZZTIME)
	@# fbpmpi's command line needs the mpi build (make mpi-deps)
	$(GO) test -tags mpi ./examples/fbpmpi -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	@# the emulated CUDA driver's image parser needs cuda.h (make cuda-deps)
	$(GO) test $(EMU_TAGS) ./device/cuda/emulated -run '^$$' -fuzz '^FuzzParseImage$$' -fuzztime $(FUZZTIME)

## mutate: mutation testing with gremlins (GREMLINS, a pinned version run with go run: not a
## dependency in go.mod) of the core packages, or of PKGS (`make mutate PKGS=./plan`): each mutant
## (a conditional negated, a boundary moved, an operator or an increment changed) is tested with its
## package's tests on a copy of the module, and each package's test efficacy (killed of killed +
## lived) and mutator coverage are printed. Slow, so not in CI: docs/testing.md has the figures.
## Then internal/mutatecases runs the mutants gremlins never runs (a switch's case conditions and
## constants lie in no block of the cover profile, so gremlins calls them not covered) and prints
## the figures with them counted beside gremlins' own.
## MUTATE_WORKERS mutants run at once; a mutant's tests time out after MUTATE_TIMEOUT times the
## package's own test time (10: on a loaded 2-core machine 5 let slow runs of killed mutants time
## out). -count=1: a coverage run that go test answered from its cache (0.15 s) made every mutant
## of plan time out. The work tree must be as it was after. MUTATE_ARGS adds gremlins flags, such
## as `-E 'views\.go'` (repeatable) to leave the mutants of the files it matches out. Every mutant
## adds its build to Go's build cache (73 GB here after the core packages' runs): a package is not
## run, and a run fails, when the cache's disk has under MUTATE_MIN_FREE_MB MiB free, since gremlins
## counts a build that failed for want of space as KILLED (`go clean -cache` frees it).
GREMLINS       ?= github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MUTATE_WORKERS ?= 1
MUTATE_TIMEOUT ?= 10
MUTATE_ARGS    ?=
MUTATE_MIN_FREE_MB ?= 2048
# MiB free on the disk of the build cache ($$cache in the recipe)
MUTATE_FREE_MB := df -Pk "$$cache" | awk 'NR==2 {print int($$4/1024)}'
MUTATE_CORE    := ./accounting ./devarray ./plan ./pool ./pinned ./transfer
MUTATE_PKGS    := $(if $(filter ./...,$(PKGS)),$(MUTATE_CORE),$(PKGS))
MUTATE_LOGS    ?= $(or $(TMPDIR),/tmp)/cuarray-mutate
mutate:
	@mkdir -p $(MUTATE_LOGS); before=$$(git status --porcelain); fail=0; cache=$$($(GO) env GOCACHE); \
	for p in $(MUTATE_PKGS); do \
		left=$$($(MUTATE_FREE_MB)); \
		if [ "$$left" -lt $(MUTATE_MIN_FREE_MB) ]; then \
			echo "mutate: $$p: not run: $$left MiB free on the disk of the build cache ($$cache); go clean -cache" >&2; \
			fail=1; continue; fi; \
		log=$(MUTATE_LOGS)/$$(echo "$$p" | sed 's|^\./||; s|/|_|g').log; \
		json=$${log%.log}.json; rm -f $$json; \
		echo "mutate: $$p (each mutant in $$log)"; \
		if GOFLAGS="$(GOFLAGS) -count=1" \
		$(GO) run $(GREMLINS) unleash --workers $(MUTATE_WORKERS) --timeout-coefficient $(MUTATE_TIMEOUT) \
			$(MUTATE_ARGS) -o $$json $$p > $$log 2>&1; then \
			$(GO) run ./internal/mutatecases -json $$json -pkg $$p -workers $(MUTATE_WORKERS) \
				-timeout-coefficient $(MUTATE_TIMEOUT) >> $$log 2>&1 || \
				{ echo "mutate: $$p: mutatecases failed:" >&2; tail -20 $$log >&2; fail=1; }; \
		else echo "mutate: $$p: gremlins failed:" >&2; tail -20 $$log >&2; fail=1; fi; \
		grep -E 'LIVED|TIMED OUT|Killed:|Timed out:|Test efficacy|Mutator coverage|^mutatecases:|left not covered' $$log | \
			sed 's/^ */  /'; \
		left=$$($(MUTATE_FREE_MB)); \
		if [ "$$left" -lt $(MUTATE_MIN_FREE_MB) ]; then \
			echo "mutate: $$p: the figures are not to be trusted: $$left MiB free on the disk of the build cache" \
				"($$cache) after the run, and a mutant whose build failed for want of space counts as KILLED;" \
				"go clean -cache and run it again" >&2; fail=1; fi; \
	done; \
	if [ "$$(git status --porcelain)" != "$$before" ]; then \
		echo "mutate: the work tree changed during the run:" >&2; git status --short >&2; fail=1; fi; \
	exit $$fail

# ---- CUDA: the real backend is built with -tags cuda (see docs/reference.md) ----------

NVCC        ?= nvcc
CUDA_TAGS   := -tags cuda
GPU_DIR     := .gpu
# Packages that have tests, each compiled into one test binary for the GPU run.
TEST_PKGS    = $(shell $(GO) list $(CUDA_TAGS) -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)

## cuda-deps: CUDA headers, libcuda and nvcc from Debian's non-free component
cuda-deps:
	bash scripts/cuda-deps.sh

## ptx: compile kernels/kernels.cu into the embedded kernels/kernels.fatbin (sm_90 machine code
## for H100/H200 and compute_70 PTX for any GPU from Volta on), kernels/kernels.ptx (the same PTX
## as text, to read and diff) and kernels/ptx_gen.go (which names the nvcc that made them)
ptx:
	NVCC=$(NVCC) bash scripts/kernels-image.sh kernels

## example-ptx: compile the guide's own kernels (examples/ownkernels/*.cu) and package kernel's test
## kernels (device/kernel/testdata/*.cu) into the committed PTX beside each .cu (nvcc -ptx, compute_70),
## and copy the guide's into package examples/ownkernels/ownptx, which the guide's samples load
EXAMPLE_CU := $(wildcard examples/ownkernels/*.cu device/kernel/testdata/*.cu)
example-ptx:
	@for f in $(EXAMPLE_CU); do $(NVCC) -ptx -arch=compute_70 -o $${f%.cu}.ptx $$f || exit 1; done
	$(GO) generate ./examples/ownkernels/ownptx
	@echo "example-ptx: $(EXAMPLE_CU:.cu=.ptx)"

## check-ptx: fail when the committed fatbin, PTX or ptx_gen.go differ from what `make ptx` makes
## now (and the examples' PTX from what `make example-ptx` makes). nvcc's output is byte-reproducible for one release (Debian's 11.8, from make cuda-deps),
## so the files are compared byte for byte; another nvcc release is reported as such.
check-ptx:
	@d=$$(mktemp -d "$${TMPDIR:-/tmp}/cuarray-check-ptx.XXXXXX"); trap 'rm -rf "$$d"' EXIT; \
	NVCC=$(NVCC) bash scripts/kernels-image.sh $$d || exit 1; \
	if ! cmp -s kernels/ptx_gen.go $$d/ptx_gen.go; then \
		echo "check-ptx: kernels/ptx_gen.go differs: the committed image was made by" \
			"'$$(sed -n 's/.*compiled by nvcc (\(.*\)) into.*/\1/p' kernels/ptx_gen.go)', nvcc here is" \
			"'$$(sed -n 's/.*compiled by nvcc (\(.*\)) into.*/\1/p' $$d/ptx_gen.go)'" >&2; exit 1; fi; \
	for f in kernels.fatbin kernels.ptx; do \
		cmp -s kernels/$$f $$d/$$f || \
			{ echo "check-ptx: kernels/$$f is stale: run make ptx and commit it" >&2; exit 1; }; \
	done; \
	for f in $(EXAMPLE_CU); do \
		$(NVCC) -ptx -arch=compute_70 -o $$d/example.ptx $$f || exit 1; \
		cmp -s $${f%.cu}.ptx $$d/example.ptx || \
			{ echo "check-ptx: $${f%.cu}.ptx is stale: run make example-ptx and commit it" >&2; exit 1; }; \
	done; rm -rf $$d
	@echo "check-ptx: kernels/kernels.fatbin, kernels.ptx and ptx_gen.go match kernels/kernels.cu; $(words $(EXAMPLE_CU)) examples' PTX match their .cu"

## cuda-build: vet and compile everything, test binaries included, with -tags cuda (runs nothing);
## CUDA_TEST_BINARIES=0 leaves the linking of the test binaries to make cuda-test, which compiles
## and runs them all (CI runs both: vet type-checks the tests' code either way)
CUDA_TEST_BINARIES ?= 1
cuda-build:
	$(GO) vet $(CUDA_TAGS) $(PKGS)
	$(GO) build $(CUDA_TAGS) $(PKGS)
	@if [ "$(CUDA_TEST_BINARIES)" != 0 ]; then for p in $(TEST_PKGS); do \
		$(GO) test $(CUDA_TAGS) -c -o /dev/null $$p || exit 1; \
	done; fi
	@if [ -f /usr/include/cublas_v2.h ] && [ -f /usr/include/cufft.h ]; then \
		$(GO) vet -tags cuda,cudalibs ./examples/cudalibs/ && \
		$(GO) build -tags cuda,cudalibs -o /dev/null ./examples/cudalibs/ || exit 1; \
	else echo "cuda-build: cuBLAS or cuFFT headers missing: examples/cudalibs not built"; fi
	@echo "cuda-build: every package and test binary compiles with -tags cuda, and examples/cudalibs with cuBLAS and cuFFT"

## cuda-test: the cuda build's tests on this machine: without a GPU every test that needs one
## skips (cuda:0 answers no device), and the rest, the no-GPU paths among them, must pass; but
## EMU_SAME_PKGS, whose tests it would only repeat (the same files with -tags cuda too)
cuda-test:
	@pkgs="$$($(GO) list $(CUDA_TAGS) $(PKGS))"; \
	pkgs=$$(for p in $$pkgs; do case " $(EMU_SAME) " in *" $$p "*) ;; *) echo $$p;; esac; done); \
	set -x; $(GO) test $(CUDA_TAGS) -count=1 $$pkgs

## cuda-emu-test: the cuda backend on the emulated CUDA driver (device/cuda/emulated, -tags
## cuda,cudaemu), two emulated GPUs: every package's tests on cuda:0 with the race detector (but
## EMU_SAME_PKGS, which they would only repeat), then the packages that move data again with each stream operation completing LATENCY after it is
## queued, under the stream race checker (CHECK=streams, CUARRAY_EMULATED_DRIVER check=; CHECK=
## turns it off), so the cuda backend's own stream use is checked; transfer's
## TestCopyAsyncNeverWaits with every stream operation 400ms late (an async copy must not wait); and
## managed memory twice a 256 MiB device (TestManagedLargerThanTheDevice). The driver conformance tests
## (device/cuda/conformance) run that pass without the checker: they read on a stream that waits
## for no other while a second one writes, on purpose, to show that a call did not wait. It needs
## cuda.h (make cuda-deps), not a GPU. EMU_PKGS narrows the packages (both passes), EMU_RUN the
## tests (go test -run): make cuda-emu-test EMU_PKGS=./transfer/... EMU_RUN=Finding
## CUARRAY_PROFILE=off: the planner's defaults, never a transfer profile this machine saved. The
## first pass runs every kernel from its PTX through the interpreter (device/ptx); the passes with
## latency check timing and ordering, and run the project's kernels as their Go references
## (kernels=go), which takes a fraction of the time. So does the first pass for EMU_GO_KERNELS:
## the reconstruction pipelines' tests run volumes that take minutes each interpreted under -race,
## and package kernels checks the same kernels interpreted.
## EMU_RACE is the race detector less its instrumentation of the PTX interpreter (device/ptx): the
## compiler cannot exempt the interpreter's lane functions, which are closures, from -race as
## //go:norace exempts its named hot paths, and there the instrumentation found nothing and tripled
## the time (kernels' TestEstimators on the emulated driver: 64 s instrumented, 21 s not). Every
## other package is instrumented; make test instruments device/ptx too, its own tests included.
EMU_RACE := -race -gcflags=github.com/cuarray/cuarray/device/ptx=-race=false
EMU_TAGS := -tags cuda,cudaemu
EMU_PKGS ?=
EMU_RUN  ?= .
EMU_UNCHECKED := %/device/cuda/conformance
EMU_GO_KERNELS := github.com/cuarray/cuarray/examples/fbp/tomo
# Packages whose tests the emulated passes and make cuda-test would run exactly as make test does,
# so they leave them out: their files are the same in every build and no test of theirs opens the test device or reads
# the emulated driver's settings (device/sim tests the emulation itself, its devices made by its
# tests; device/ptx, device/ptx/entry and device/fatbin the interpreter and the PTX and fatbin
# readers; device/driver has no device; internal/toolchain, internal/gotestlog and
# internal/mutatecases look for the go command, read logs and cover profiles). internal/depcheck's
# TestEmulatedPassesLeaveOutOnlyRepeats checks both for each.
EMU_SAME_PKGS := device/sim device/ptx device/ptx/entry device/fatbin device/driver \
                 internal/toolchain internal/gotestlog internal/mutatecases
EMU_SAME      := $(addprefix github.com/cuarray/cuarray/,$(EMU_SAME_PKGS))
# Packages the emulated latency pass leaves out, as it would run them as the first pass did: the
# Python tests give every process they start its device (CUARRAY_DEVICE=sim:0?check=streams, or
# cuda:0 with a CUARRAY_EMULATED_DRIVER of their own), so the pass's driver settings reach none.
EMU_LATENCY_SAME := github.com/cuarray/cuarray/python
cuda-emu-test:
	@pkgs="$$($(GO) list $(EMU_TAGS) $(or $(EMU_PKGS),$(PKGS)))"; \
	pkgs=$$(for p in $$pkgs; do case " $(EMU_SAME) " in *" $$p "*) ;; *) echo $$p;; esac; done); \
	ptx=$$(for p in $$pkgs; do case " $(EMU_GO_KERNELS) " in *" $$p "*) ;; *) echo $$p;; esac; done); \
	refs=$$(for p in $$pkgs; do case " $(EMU_GO_KERNELS) " in *" $$p "*) echo $$p;; esac; done); \
	set -x; \
	env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=2' \
		$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run '$(EMU_RUN)' $$ptx || exit 1; \
	if [ -n "$$refs" ]; then \
		env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=2&kernels=go' \
			$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run '$(EMU_RUN)' $$refs || exit 1; fi
	@pkgs="$$($(GO) list $(EMU_TAGS) $(or $(EMU_PKGS),$(LATENCY_PKGS)))"; \
	pkgs=$$(for p in $$pkgs; do case " $(EMU_SAME) $(EMU_LATENCY_SAME) " in *" $$p "*) ;; *) echo $$p;; esac; done); \
	checked=$$(for p in $$pkgs; do case $$p in $(subst %,*,$(EMU_UNCHECKED))) ;; *) echo $$p;; esac; done); \
	unchecked=$$(for p in $$pkgs; do case $$p in $(subst %,*,$(EMU_UNCHECKED))) echo $$p;; esac; done); \
	set -x; \
	if [ -n "$$checked" ]; then \
		env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=2&kernels=go&latency=$(LATENCY)$(if $(CHECK),&check=$(CHECK))' \
			$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run '$(EMU_RUN)' $$checked || exit 1; fi; \
	if [ -n "$$unchecked" ]; then \
		env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=2&kernels=go&latency=$(LATENCY)' \
			$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run '$(EMU_RUN)' $$unchecked || exit 1; fi; \
	if [ -z "$(EMU_PKGS)" ]; then \
		env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=2&latency=400ms' \
			$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run 'TestCopyAsyncNeverWaits' ./transfer/ || exit 1; fi; \
	if [ -z "$(EMU_PKGS)" ]; then \
		env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_PROFILE=off CUARRAY_EMULATED_DRIVER='devices=1&mem=256MiB' \
			$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -run 'TestManagedLargerThanTheDevice' ./device/ || exit 1; fi
	@if [ -z "$(EMU_PKGS)" ]; then $(MAKE) --no-print-directory cuda-emu-upstream; fi

## cuda-emu-upstream: gorgonia.org/cu v0.9.6's own tests (its root package's 20, from the Go
## module cache) against third_party/gorgonia-cu on the emulated driver, each in a process of its
## own with the race detector, less its instrumentation of device/ptx as in EMU_RACE
## (TestLargeBatch without it: withoutRace in device/cuda/emulated/upstream says why);
## those that fail for now, and why,
## are listed there and logged with the count that passes (go test -v shows them)
cuda-emu-upstream:
	env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE CUARRAY_UPSTREAM_CU=1 CUARRAY_EMULATED_DRIVER='devices=2' \
		$(GO) test $(EMU_TAGS) $(EMU_RACE) -count=1 -v -run TestUpstreamGorgoniaCu ./device/cuda/emulated/upstream/

## bench-gpu: the GPU bundle with the benchmark suite: cuarray's side and its PyTorch and CuPy
## peers, run in one call on the GPU machine (bash .gpu/bench.sh), reported side by side as ratios
bench-gpu: gpu-bundle
	@echo "bench-gpu: on the GPU machine, from the repository root: bash .gpu/bench.sh [SIZE ANGLES SLICES] (default 512 720 512; CUARRAY_BENCH_BUDGET=240 s; docs/gpu-results.md, Running on a GPU machine)"

# Test packages the GPU bundle leaves out: their tests never open the test device (device/sim
# tests the emulation itself, device/driver has no device, internal/toolchain looks for the go
# command and the git history, which the GPU machine lacks, internal/gotestlog reads logs), so
# a GPU run would only repeat CI; device/cuda/emulated has tests only in the cudaemu build,
# and they test the emulated driver itself.
GPU_SKIP_PKGS := device/sim device/driver internal/toolchain internal/gotestlog device/cuda/emulated
# The bundle must stay under the carry limit (64 MiB with the tree, ~3.5 MiB) with room.
GPU_MAX_MIB   := 48

## gpu-bundle: everything a GPU run needs, in .gpu/ (run: bash .gpu/run.sh; bench: bash .gpu/bench.sh):
## the test binaries, cuarray, fbp and libcuarray.so with -tags cuda and gotestlog (which run.sh
## reads the test binaries' output with: a hung test costs only itself) in one bins.tar.xz, and the
## scripts. `make gpu-bundle CUDA_TAGS='-tags cuda,cudaemu'` builds the cuda backend on the emulated
## CUDA driver instead (make gpu-rehearse), `CUDA_TAGS=` against sim: to rehearse the scripts
## without a GPU. .gpu/build says which: cuda, cudaemu or sim; run.sh prints a run: line only for cuda.
gpu-bundle:
	rm -rf $(GPU_DIR) && mkdir -p $(GPU_DIR)/tests
	@for p in $(TEST_PKGS); do \
		rel=$${p#github.com/cuarray/cuarray/}; name=$$(echo $$rel | tr / _); \
		case " $(GPU_SKIP_PKGS) " in *" $$rel "*) echo "gpu-bundle: leaving out $$rel: no test opens the test device"; continue;; esac; \
		$(GO) test $(CUDA_TAGS) -c -ldflags='-s -w' -o $(GPU_DIR)/tests/$$name.test $$p || exit 1; \
		echo "$$name $$rel" >> $(GPU_DIR)/tests/index; \
	done
	$(GO) build $(CUDA_TAGS) -ldflags='-s -w' -o $(GPU_DIR)/cuarray ./cmd/cuarray
	$(GO) build $(CUDA_TAGS) -ldflags='-s -w' -o $(GPU_DIR)/fbp ./examples/fbp
	$(GO) build $(CUDA_TAGS) -buildmode=c-shared -ldflags='-s -w' -o $(GPU_DIR)/libcuarray.so ./libcuarray
	rm -f $(GPU_DIR)/libcuarray.h
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(GPU_DIR)/gotestlog ./internal/gotestlog
	@# One solid xz -9e archive: the binaries share most of their code, so packed together they
	@# take about a third of what each packed alone takes (sim build: 15 MiB against 45 MiB).
	@# unpack.sh unpacks it there.
	cd $(GPU_DIR) && tar -cf - tests/*.test cuarray fbp libcuarray.so gotestlog | xz -9e -T1 > bins.tar.xz && \
		rm tests/*.test cuarray fbp libcuarray.so gotestlog
	cp scripts/gpu-run.sh $(GPU_DIR)/run.sh
	cp scripts/gpu-bench.sh $(GPU_DIR)/bench.sh
	cp scripts/gpu-unpack.sh $(GPU_DIR)/unpack.sh
	mkdir -p $(GPU_DIR)/peers && cp bench/peers/*.py $(GPU_DIR)/peers/
	@# the commit, marked +dirty when tracked files differ from it (the bundle was built from them)
	@c=$$(git rev-parse --short=12 HEAD); \
		git diff --quiet HEAD -- 2>/dev/null || c="$$c+dirty"; echo "$$c" > $(GPU_DIR)/commit
	@echo "$(if $(findstring cudaemu,$(CUDA_TAGS)),cudaemu,$(if $(CUDA_TAGS),cuda,sim))" > $(GPU_DIR)/build
	@kib=$$(du -sk $(GPU_DIR) | cut -f1); files=$$(find $(GPU_DIR) -type f | wc -l); \
		echo "gpu-bundle: $(GPU_DIR) holds $$files files, $$((kib / 1024)) MiB ($$kib KiB), commit $$(cat $(GPU_DIR)/commit), build $$(cat $(GPU_DIR)/build)"; \
		[ $$kib -le $$(( $(GPU_MAX_MIB) * 1024 )) ] || { echo "gpu-bundle: over $(GPU_MAX_MIB) MiB" >&2; exit 1; }

## gpu-rehearse: the GPU run rehearsed here, where CI runs: the bundle built with EMU_TAGS (the cuda
## backend on the emulated CUDA driver, two emulated GPUs) into REHEARSE_DIR, and its run.sh run
## with CUARRAY_RUN_BUDGET=REHEARSE_BUDGET, without the go command (PATH and GOROOT hide it, as the
## GPU machine has none), and with the planted hang (CUARRAY_PLANT_HANG=1: device/cuda's
## TestPlantedHang blocks in cuStreamSynchronize). It prints run.sh's summary (every package's
## time; its last line reads rehearsal:, not run:) and fails unless the planted hang was reported
## hung with its blocked call and the package ran again without it. Some minutes on 2 cores; not
## in CI (make gpu-hang-check is).
REHEARSE_DIR    ?= build/gpu-rehearse
REHEARSE_BUDGET ?= 300
gpu-rehearse:
	$(MAKE) --no-print-directory gpu-bundle CUDA_TAGS='$(EMU_TAGS)' GPU_DIR=$(REHEARSE_DIR)
	bash scripts/gpu-rehearse.sh $(REHEARSE_DIR) $(REHEARSE_BUDGET)

## gpu-hang-check: run.sh's hang handling, cheaply (CI runs it; well under a minute once built):
## device/cuda's test binary alone, built with EMU_TAGS, in a small bundle in build/gpu-hang-check,
## run by run.sh with the planted hang and a 20 s limit: it must report TestPlantedHang hung with
## its blocked cuStreamSynchronize, run the package again without it and without what had run,
## account for every test the binary lists, and print a rehearsal: line, not a run: line.
gpu-hang-check:
	GO=$(GO) EMU_TAGS='$(EMU_TAGS)' bash scripts/gpu-hang-check.sh build/gpu-hang-check

# ---- MPI: cuarray across processes, build tag mpi (see docs/guide.md, "Running on many GPUs") ----

# scripts/mpirun.sh gives each job a session directory of its own, so that jobs started at once
# (two make mpi-check, a test's jobs beside another's) never share Open MPI's.
MPIRUN       ?= bash scripts/mpirun.sh
NP           ?= 2
MPI_SIZE     ?= -size 48 -angles 60 -slices 12
MPI_FAULT_RANK ?=
# --oversubscribe: more ranks than cores (CI has 2); --quiet: no banner after an abort (the
# failing rank's own line says why); as root, Open MPI wants to be told.
MPIRUN_FLAGS ?= --oversubscribe --quiet $(shell [ "$$(id -u)" = 0 ] && echo --allow-run-as-root)

## mpi-deps: Open MPI (mpirun, mpicc, mpi.h) and mpi4py from Debian
mpi-deps:
	bash scripts/mpi-deps.sh

## mpi-build: the fbpmpi command (examples/fbpmpi) with -tags mpi into build/
mpi-build:
	$(GO) vet -tags mpi ./mpi/... ./examples/fbpmpi/...
	@# with the cuda build too (rank r on cuda:(local rank mod GPUs)), where cuda.h is (make cuda-deps)
	@if [ -f /usr/include/cuda.h ]; then $(GO) vet -tags mpi,cuda ./mpi/... ./examples/fbpmpi/...; fi
	@# built beside and renamed into place, so that a job of a make running at the same time
	@# never starts a half-written binary
	$(GO) build -tags mpi -o build/fbpmpi.$$$$ ./examples/fbpmpi && mv -f build/fbpmpi.$$$$ build/fbpmpi

## mpi-run: the distributed FBP on NP ranks on sim at a small size (make mpi-run NP=3): the
## projections split across the ranks, resliced with an Alltoallv of device arrays, the volume
## written with MPI-IO and compared with a one-process run; the last line is rank 0's JSON
## summary. MPI_FAULT_RANK=R makes rank R's device fault part-way: the job ends non-zero.
## MPI_DIR is where the volume goes (default build/mpi-npNP).
MPI_DIR ?= build/mpi-np$(NP)
mpi-run: mpi-build
	$(MPIRUN) $(MPIRUN_FLAGS) -np $(NP) build/fbpmpi $(MPI_SIZE) -dir $(MPI_DIR) -q -json \
		$(if $(MPI_FAULT_RANK),-fault-rank $(MPI_FAULT_RANK))

## mpi-check: make mpi-run on 1, 2 and 3 ranks (NPS), each summary checked: ranks, the volume
## equal to the one-process run's, the ledger's checks; then a faulting rank must end the job
## non-zero within 30 s with one line (scripts/mpi-check.sh)
NPS ?= 1 2 3
mpi-check: mpi-build
	MAKE="$(MAKE)" bash scripts/mpi-check.sh $(NPS)

## mpi-test: the mpi package's and fbpmpi's tests (each starts mpirun itself: ranks 1 to 4, derived
## datatypes, faults, the ledger's sums) and the mpi4py test of the Python module under mpirun -np 2
mpi-test: libcuarray
	$(GO) test -tags mpi -race -count=1 ./mpi/... ./examples/fbpmpi/...
	CUARRAY_LIB=$(CURDIR)/build/libcuarray.so $(MPIRUN) $(MPIRUN_FLAGS) -np 2 /usr/bin/python3 -m unittest python/test_mpi.py
