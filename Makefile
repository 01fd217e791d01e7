# dynwatch: `make demo` runs it against a local API server; `make test` runs the tests.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The image's created time: the commit's, so that one commit always builds the same image.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE     ?=
REGISTRY  ?=
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
TESTENV   := .testenv/bin
GOTESTFLAGS ?=
# The demo's own flags: --interval 1s changes objects faster, --steps N stops after N changes.
DEMO_FLAGS ?=

.PHONY: all build image push release publish release-test testenv test charttest kstatuscheck unit vet demo bench bench-e2e fuzz clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/dynwatch
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/dynwatch ./cmd/dynwatch

image: ## build the image for linux/amd64 and linux/arm64, one index in bin/dynwatch-image (OCI layout), and this machine's as bin/dynwatch-image.tar (docker load -i …); no container engine needed
	$(GO) run ./hack/image -o bin/dynwatch-image -tar bin/dynwatch-image.tar -t dynwatch:$(VERSION) -ldflags "$(LDFLAGS)" \
		-version $(VERSION) -revision $(REVISION) -created $(SOURCE_DATE_EPOCH)

push: ## build the image, then push its index to a registry: make push IMAGE=registry/name:tag (credentials: docker login's)
	@test -n "$(IMAGE)" || { echo "make push: set IMAGE=registry/name:tag"; exit 2; }
	$(MAKE) image
	$(GO) run ./hack/image push --from bin/dynwatch-image $(IMAGE)

release: ## make a release into dist/, pushing nothing, from a checkout without changes (ALLOW_DIRTY=1: with them, its commit then X-dirty): make release VERSION=vX.Y.Z (binaries for linux and darwin, amd64 and arm64, the kubectl plugin's archives, checksums.txt, an SPDX SBOM, the image index as an OCI layout, the chart dynwatch-X.Y.Z.tgz)
	@echo "$(VERSION)" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "make release: set VERSION=vX.Y.Z (e.g. make release VERSION=v0.2.0)"; exit 2; }
	$(GO) run ./hack/release -version $(VERSION) -o dist $(if $(REGISTRY),-image-repository $(patsubst oci://%,%,$(REGISTRY))/dynwatch) $(if $(ALLOW_DIRTY),-allow-dirty)
	@test -z "$(REGISTRY)" || echo "make release pushes nothing: make publish VERSION=$(VERSION) REGISTRY=$(REGISTRY) pushes the image and the chart"

release-test: ## the release tests: make release and make publish into a registry on loopback, and go install …@latest from a module proxy (minutes on a cold build cache; CI runs them after make test)
	DYNWATCH_RELEASE_TESTS=1 $(GO) test -count=1 -timeout 40m -run 'TestReleaseAndPublish|TestGoInstallLatest' -v ./hack/release/

publish: ## make the release, then push its image (REGISTRY/dynwatch:VERSION) and chart (oci://REGISTRY/charts/dynwatch) to a registry: make publish VERSION=vX.Y.Z REGISTRY=host/path (credentials: docker login's)
	@test -n "$(REGISTRY)" || { echo "make publish: set REGISTRY=host/path (e.g. make publish VERSION=$(VERSION) REGISTRY=registry.example.com/dynwatch)"; exit 2; }
	$(MAKE) release
	$(GO) run ./hack/release publish -version $(VERSION) -from dist $(REGISTRY)

testenv: ## build kube-apiserver and etcd into .testenv/bin (once; minutes the first time)
	hack/testenv/build.sh $(TESTENV)

vet: ## go vet
	$(GO) vet ./...

test: testenv vet ## unit and integration tests (real kube-apiserver and etcd), with -race; each benchmark runs once, for its own checks; then charttest and kstatuscheck
	DYNWATCH_TESTENV_BIN=$(CURDIR)/$(TESTENV) $(GO) test -race -count=1 -timeout 30m -bench . -benchtime 1x $(GOTESTFLAGS) ./...
	$(MAKE) charttest
	$(MAKE) kstatuscheck

charttest: testenv ## the Helm chart, the dashboard and the alerts (hack/charttest, a module of its own): render, lint, RBAC against dynwatch rbac, Pod Security, server-side dry run, PromQL names
	cd hack/charttest && $(GO) vet ./... && DYNWATCH_TESTENV_BIN=$(CURDIR)/$(TESTENV) $(GO) test -count=1 -timeout 10m $(GOTESTFLAGS) ./...

kstatuscheck: testenv ## health against kstatus (hack/kstatuscheck, a module of its own): fixtures, Deployments in each phase and custom resources' conditions on the test API server
	cd hack/kstatuscheck && $(GO) vet ./... && DYNWATCH_TESTENV_BIN=$(CURDIR)/$(TESTENV) $(GO) test -count=1 -timeout 10m $(GOTESTFLAGS) ./...

unit: ## only the tests that need no API server
	$(GO) test -race -count=1 ./config/... ./fieldpath/... ./rules/... ./payload/... ./plan/... ./action/... ./discovery/... ./event/... ./state/... ./tail/... ./internal/arch/...

demo: testenv build ## run dynwatch against a local API server with a demo CRD; Ctrl-C stops it all
	$(GO) build -o bin/demo ./hack/demo
	@# The demo itself, not `go run`, takes Ctrl-C: go run exits 1 when interrupted, whatever the demo did.
	DYNWATCH_TESTENV_BIN=$(CURDIR)/$(TESTENV) exec bin/demo --dynwatch bin/dynwatch --config config.example.yaml $(DEMO_FLAGS)

bench: ## Go benchmarks of the hot paths, 6 runs each; compare implementations with: benchstat -col /impl FILE
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./dyninformer/ ./rules/ ./payload/ ./state/ ./watcher/ ./action/

bench-e2e: testenv ## dynwatch against the floor (raw LIST, watch-list stream, raw watch), a dynamic and a typed protobuf informer on a local API server, the goals as ratios; BENCH_E2E_FLAGS="-n 10000 -curve 1000,10000,100000 -crds 300 -idle-window 5m -variants deployments,configmaps,crds,idle -peer PATH -profile DIR"
	DYNWATCH_TESTENV_BIN=$(CURDIR)/$(TESTENV) $(GO) run ./hack/benche2e $(BENCH_E2E_FLAGS)

fuzz: ## fuzz the config loader (and the RBAC rbac prints for it), tail's --where parser and the informers' JSON splitters for a minute each
	$(GO) test ./plan -run '^$$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 5s
	$(GO) test ./tail -run '^$$' -fuzz FuzzParseWhere -fuzztime 60s
	$(GO) test ./dyninformer -run '^$$' -fuzz FuzzParseObject -fuzztime 60s -fuzzminimizetime 5s
	$(GO) test ./dyninformer -run '^$$' -fuzz FuzzFrameReader -fuzztime 60s -fuzzminimizetime 5s
	$(GO) test ./dyninformer -run '^$$' -fuzz FuzzParseList -fuzztime 60s -fuzzminimizetime 5s
	$(GO) test ./dyninformer -run '^$$' -fuzz FuzzFramerSpans -fuzztime 60s -fuzzminimizetime 5s

clean: ## remove build outputs (keeps the control-plane binaries)
	rm -rf bin dist
