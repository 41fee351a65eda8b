# csi-windows-node — `make help` lists the targets; README.md explains them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BINARY    := csi-windows-node
PKG       := github.com/wincsi/csi-windows-node
OUTPUT    := _output
BIN       := $(CURDIR)/.bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILDDATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -s -w -X $(PKG)/pkg/version.Version=$(VERSION) -X $(PKG)/pkg/version.Commit=$(COMMIT) -X $(PKG)/pkg/version.BuildDate=$(BUILDDATE)

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(BIN)/golangci-lint

# make run: the plugin on the simulated Windows host, everything under
# _output/run (README.md, "Quick start"). RUN_ARGS adds plugin flags;
# SIM_CONFIG is the simulated network (docs/sim-config.md), "" for none;
# HTTP_PORT serves /metrics and /healthz on 127.0.0.1: by default a port
# derived from the checkout's path, so that two checkouts on one machine
# differ, or the next free one above it.
DRIVER_NAME ?= sim.csi.wincsi.io
RUN_DIR     := $(CURDIR)/$(OUTPUT)/run
RUN_ARGS    ?=
SIM_CONFIG  ?= docs/sim-config.yaml
HTTP_PORT   ?=

CSC := $(BIN)/csc

# make image: the Windows image (Dockerfile.windows), pushed to $(IMAGE).
IMAGE ?= registry.example.com/csi-windows-node

.PHONY: all build build-windows run demo csc image test test-unit test-deploy verify fmt tidy generated vet lint bench bench-smoke clean help check-cgo

all: build build-windows

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# go build -v names each package as it compiles it: a first build (minutes,
# most of it compiling dependencies) shows its progress, a later one only
# what changed.
build: ## build the plugin for this OS into _output/
	@echo "Building $(OUTPUT)/$(BINARY); a first build downloads and compiles the dependencies, which takes a few minutes."
	go build -v -trimpath -ldflags '$(LDFLAGS)' -o $(OUTPUT)/$(BINARY) ./cmd/$(BINARY)

build-windows: ## build _output/csi-windows-node.exe (GOOS=windows)
	GOOS=windows GOARCH=amd64 go build -trimpath -ldflags '$(LDFLAGS)' -o $(OUTPUT)/$(BINARY).exe ./cmd/$(BINARY)

run: build ## run the plugin on the simulated Windows host until Ctrl-C (state: _output/run; README.md)
	@mkdir -p $(RUN_DIR)/kubelet $(RUN_DIR)/sim
	@port='$(HTTP_PORT)'; \
	if [ -z "$$port" ]; then \
		port=$$(( 29700 + $$(printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1) % 200 )); \
		while (exec 3<>/dev/tcp/127.0.0.1/$$port) 2>/dev/null; do port=$$((port + 1)); done; \
	fi; \
	echo "make run: the plugin on a simulated Windows host, until Ctrl-C. Its state stays in $(OUTPUT)/run; rm -rf $(OUTPUT)/run resets it."; \
	echo "  CSI socket   unix://$(RUN_DIR)/csi.sock"; \
	echo "  kubelet dir  $(RUN_DIR)/kubelet"; \
	echo "  sim network  $(if $(SIM_CONFIG),$(SIM_CONFIG),none) (SIM_CONFIG=<file> for another, docs/sim-config.md)"; \
	echo "  HTTP         http://127.0.0.1:$$port/metrics and /healthz (HTTP_PORT=<port> for another)"; \
	echo "  more flags   RUN_ARGS='--flag=value ...' (docs/flags.md)"; \
	exec $(OUTPUT)/$(BINARY) --host=sim --sim-dir=$(RUN_DIR)/sim --kubelet-dir=$(RUN_DIR)/kubelet \
		--driver-name=$(DRIVER_NAME) --node-id=sim-node --endpoint=unix://$(RUN_DIR)/csi.sock \
		$(if $(SIM_CONFIG),--sim-config=$(SIM_CONFIG)) --http-endpoint=127.0.0.1:$$port --v=2 $(RUN_ARGS)

image: ## build and push the Windows image with docker buildx (needs a registry; see docs/install.md)
	docker buildx build --platform windows/amd64 -f Dockerfile.windows \
		--build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg BUILD_DATE=$(BUILDDATE) \
		-t $(IMAGE):$(VERSION) --push .

# go install -v names each package as it compiles it: the first install
# (about half a minute, most of it compiling gocsi and gRPC) shows its
# progress instead of sitting silent.
$(CSC):
	@echo "Installing csc into .bin/csc (test/tools pins its version); the first install compiles gocsi and gRPC, about half a minute."
	cd test/tools && GOBIN=$(BIN) go install -v github.com/dell/gocsi/csc
	@echo "csc is ready: .bin/csc"

csc: $(CSC) ## install csc, the CSI command-line client, into .bin/

# The plugin runs in the background until demo.sh is done; the wait for
# its socket ends when the socket appears or the plugin exits.
demo: build $(CSC) ## start the plugin on the sim and drive a disk, an SMB and an iSCSI volume through stage→publish→write→…→read back with csc
	@rm -rf $(OUTPUT)/demo && mkdir -p $(OUTPUT)/demo/kubelet $(OUTPUT)/demo/sim
	@$(OUTPUT)/$(BINARY) --host=sim --sim-dir=$(OUTPUT)/demo/sim --kubelet-dir=$(CURDIR)/$(OUTPUT)/demo/kubelet \
		--driver-name=$(DRIVER_NAME) --node-id=sim-node --endpoint=unix://$(CURDIR)/$(OUTPUT)/demo/csi.sock \
		--sim-config=docs/sim-config.yaml --v=2 > $(OUTPUT)/demo/plugin.log 2>&1 & pid=$$!; \
	while [ ! -S $(OUTPUT)/demo/csi.sock ] && kill -0 $$pid 2>/dev/null; do sleep 0.1; done; \
	rc=0; CSC=$(CSC) test/demo/demo.sh $(OUTPUT)/demo || rc=$$?; \
	kill $$pid 2>/dev/null || true; wait $$pid || true; \
	if [ $$rc -ne 0 ]; then echo "--- plugin log ($(OUTPUT)/demo/plugin.log):"; cat $(OUTPUT)/demo/plugin.log; fi; exit $$rc

# -race needs cgo, and cgo a C compiler; without one Go turns cgo off.
# check-cgo says so in one line instead of go test's "-race requires cgo".
CGO_READY = $(shell [ "$$(go env CGO_ENABLED)" = 1 ] && command -v "$$(go env CC | cut -d' ' -f1)" >/dev/null && echo yes)

check-cgo:
	@$(if $(CGO_READY),:,$(error go test -race needs cgo and a C compiler: install gcc (e.g. apt-get install gcc) and keep CGO_ENABLED=1 (README.md, Prerequisites)))

# The tests are grouped by what they need (test/README.md): unit tests next
# to their code (pkg/, cmd/, internal/), test/rules (the source tree),
# test/system (the plugin in the test process on the simulated host) and
# test/binary (the plugin binary, started as a process).
#
# The binary tests take the plugin built once for the whole run, with -race
# and without (for the crash matrices, which start it hundreds of times):
# the testbin target builds both and the test targets pass them in
# (test/harness/testbin). go test run directly builds them per package.
TESTBIN     := $(CURDIR)/$(OUTPUT)/testbin
TESTBIN_ENV := CSI_WINDOWS_NODE_TEST_BINARY=$(TESTBIN)/csi-windows-node-race \
	CSI_WINDOWS_NODE_TEST_BINARY_NORACE=$(TESTBIN)/csi-windows-node
# The race detector sleeps a second before every process it instruments
# exits (atexit_sleep_ms), so that goroutines still running can report: a
# second per test package and per plugin process a binary test starts. A
# race met while a test runs is reported and fails it without the sleep.
TEST_ENV    := GORACE='atexit_sleep_ms=0 $(GORACE)'
# The test binaries and the plugin the binary tests run are linked without
# DWARF (-ldflags=-w), which no test reads (stack traces and race reports
# come from the runtime's own tables): a third less work for the linker,
# which links some fifty test binaries per run.
TEST_LDFLAGS := -ldflags=-w

.PHONY: testbin test-rules test-system test-binary

testbin: check-cgo
	go build -race $(TEST_LDFLAGS) -o $(TESTBIN)/csi-windows-node-race ./cmd/$(BINARY)
	go build $(TEST_LDFLAGS) -o $(TESTBIN)/csi-windows-node ./cmd/$(BINARY)

test: check-cgo testbin ## every test with -race (the README's test command): unit, rules, system, binary; then test-deploy
	$(TEST_ENV) $(TESTBIN_ENV) go test -race -count=1 $(TEST_LDFLAGS) ./...
	$(MAKE) --no-print-directory test-deploy

test-deploy: ## render and validate deploy/ (kustomize, Helm chart, examples) and Dockerfile.windows
	cd test/deploy && go test -count=1 $(TEST_LDFLAGS) ./...

test-unit: check-cgo ## the inner loop: unit tests only (pkg/, cmd/, internal/), with -race
	$(TEST_ENV) go test -race -count=1 $(TEST_LDFLAGS) $$(go list ./... | grep -v /test/)

test-rules: ## the rules: wiring, no process, docs and references, Windows CI tags (test/rules)
	go test -count=1 $(TEST_LDFLAGS) ./test/rules/...

test-system: check-cgo ## the plugin in the test process on the simulated host, with -race (test/system)
	$(TEST_ENV) go test -race -count=1 $(TEST_LDFLAGS) ./test/system/...

test-binary: check-cgo testbin ## the plugin binary, built once, with -race (test/binary)
	$(TEST_ENV) $(TESTBIN_ENV) go test -race -count=1 $(TEST_LDFLAGS) ./test/binary/...

# Windows only, elevated: real VHDX disks (made with the virtual disk API, as
# selftest makes them) through the WMI/Win32 executor. checkptr is off because go-ole (under
# microsoft/wmi) converts COM pointers in ways -race's checkptr rejects.
# CSI_WINDOWS_NODE_TIMINGS=<file> records one JSON line per RPC.
.PHONY: test-integration
test-integration: ## Windows integration tests (elevated; see test/integration)
	go test -v -race -count=1 -gcflags=all=-d=checkptr=0 -tags integration -timeout 30m ./test/integration/...

verify: fmt tidy generated vet lint ## gofmt, go mod tidy -diff, generated files up to date, go vet and golangci-lint for GOOS=linux and GOOS=windows

# go.mod and go.sum of every module (the plugin, test/deploy, test/tools)
# must be what go mod tidy would write.
tidy:
	go mod tidy -diff
	cd test/deploy && go mod tidy -diff
	cd test/tools && go mod tidy -diff

# Generated files (// Code generated ... DO NOT EDIT.) must be what their
# go:generate line writes: hostgen compares instead of writing when
# HOSTGEN_CHECK=1 and names the stale file.
generated:
	HOSTGEN_CHECK=1 go generate ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...
	GOOS=windows go vet ./...
	GOOS=windows go vet -tags integration ./test/integration/...
	@# Build every test binary for Windows (the integration suite included)
	@# without running it: -exec true stands in for the Windows runner.
	GOOS=windows go test -count=1 -run=NONE -exec=true ./... > /dev/null
	GOOS=windows go test -count=1 -run=NONE -exec=true -tags integration ./test/integration/... > /dev/null

$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# golangci-lint's cache does not tell GOOS apart: after the Linux run, the
# Windows run would take a package's Linux results and miss what only its
# _windows.go files do (a denied import in one, for example). The Windows
# runs keep their own cache.
LINT_CACHE_WINDOWS ?= $(or $(GOLANGCI_LINT_CACHE),$(HOME)/.cache/golangci-lint)-windows

lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
	GOOS=windows GOLANGCI_LINT_CACHE=$(LINT_CACHE_WINDOWS) $(GOLANGCI_LINT) run ./...
	GOOS=windows GOLANGCI_LINT_CACHE=$(LINT_CACHE_WINDOWS) $(GOLANGCI_LINT) run --build-tags integration ./test/integration/...

# The end-to-end bench (test/bench, docs/performance.md) builds the plugin and
# drives it on the simulated host over its socket; its numbers also go to
# _output/bench*.json. BENCH_ARGS passes flags to it (see go run ./test/bench -h).
BENCH_ARGS ?=

bench: ## end-to-end bench of docs/performance.md, then the testing.B benchmarks
	@mkdir -p $(OUTPUT)
	go run ./test/bench -json $(OUTPUT)/bench.json $(BENCH_ARGS)
	go test -run=NONE -bench=. -benchmem ./pkg/... ./test/bench/...

bench-smoke: ## quick bench for CI: -short, no thresholds; testing.B benchmarks at 100 iterations
	@mkdir -p $(OUTPUT)
	go run ./test/bench -short -json $(OUTPUT)/bench-smoke.json $(BENCH_ARGS)
	go test -run=NONE -bench=. -benchtime=100x ./pkg/... ./test/bench/...

# Reliability suites (docs/reliability.md). make test runs the crash matrix,
# the short soak, the hang, confinement, secrets and no-process tests; these
# targets run the long variants.
CRASH_COUNT  ?= 1
SOAK_VOLUMES ?= 1000
SOAK_TIME    ?= 60s
SOAK_SEED    ?= 1
FUZZTIME     ?= 10s
FUZZJOBS     ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: test-crash test-soak fuzz

test-crash: check-cgo ## the full crash matrix, verbose (CRASH_COUNT repeats it)
	CSI_CRASH_MATRIX=full go test -race -count=$(CRASH_COUNT) -v -run 'TestCrashMatrix' ./test/binary/crash/ | grep -E '^(--- FAIL|FAIL|ok)|crash_test.go'

test-soak: check-cgo ## the long soak: SOAK_VOLUMES volumes for SOAK_TIME, with -race
	CSI_SOAK_VOLUMES=$(SOAK_VOLUMES) CSI_SOAK_DURATION=$(SOAK_TIME) CSI_SOAK_SEED=$(SOAK_SEED) \
		go test -race -count=1 -v -timeout 30m -run 'TestSoak' ./test/system/soak/ | grep -E '^(--- |FAIL|ok)|soak_test.go'

fuzz: ## run every fuzz target (go test -fuzz) for FUZZTIME each, FUZZJOBS at a time (test/fuzz/fuzz.sh)
	FUZZTIME=$(FUZZTIME) FUZZJOBS=$(FUZZJOBS) test/fuzz/fuzz.sh

clean: ## remove build and run output
	rm -rf $(OUTPUT)
