# agentbot — the two commands of the quick start are `make demo` and `make test`.
GO        ?= go
BIN       := bin/agentbot
IMAGE     ?= agentbot-sandbox:dev
# Test binaries without DWARF: linking them is a tenth of the suite's CPU,
# and a quarter less of it without; stack traces do not need it. make test
# runs two go test at once (deploy/test-race.sh), each with the default of
# a package per core: four packages at once on two cores. More starves
# the tests' 500 ms Redis deadlines under the race detector. -trimpath
# keeps the checkout's directory out of the build cache's keys, so that
# a clone elsewhere (CI's) reuses what was compiled and vetted before.
GOFLAGS_T ?= -count=1 -timeout 25m -ldflags=-w -trimpath

.PHONY: build test demo deps test-deps sandbox-image sandbox-images bench lint eval

# Static: workers mount the binary into sandbox containers as their executor.
build:
	@echo "building $(BIN) (static)"
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/agentbot

# Install what the demo (deps) and the tests (test-deps) need; no-ops when
# it is there.
deps:
	deploy/install-deps.sh

test-deps:
	deploy/install-deps.sh --test

# The Go image the tests and the demo run. The tests of the python and node
# images build them under the script's own tags (agentbot-sandbox:python and
# :node, the images config init writes) on first use; sandbox-images builds
# them ahead.
sandbox-image: deps
	deploy/sandbox/build-offline.sh go $(IMAGE)

sandbox-images: sandbox-image
	for f in python node; do deploy/sandbox/build-offline.sh $$f || exit 1; done

# The packages whose code runs goroutines of its own (the runner and its
# attempts, the change's steps, the queue, the sandbox and its executor, the
# environment cache) run under the race detector instead of plainly
# (deploy/test-race.sh).
RACE_PKGS := ./runner ./runner/change ./runner/envcache ./runner/sandbox/... ./queue/...

# Vet and the plain tests build as "make build" does, without cgo: the
# binary the demo's test builds, the sandboxes' executor and the test
# binaries then share one compilation of every package; the race
# detector's build is the only other one. deploy/helm is a module of its
# own (the Helm and Kubernetes libraries stay out of the binary's build):
# its chart test runs here too. The sandbox image, when missing, is built
# by the first test that needs it (sandboxtest.Image), while the others
# compile and vet.
test: test-deps
	CGO_ENABLED=0 $(GO) vet -trimpath ./...
	deploy/test-scratch.sh deploy/test-race.sh "$(GO)" "$(GOFLAGS_T)" $(RACE_PKGS)
	cd deploy/helm && $(GO) vet -trimpath ./... && $(GO) test $(GOFLAGS_T) ./...

# The demo is a binary of its own: it links the GitHub simulator and the
# scripted model, which the deployed agentbot does not; it runs $(BIN).
demo: deps sandbox-image build
	$(GO) build -o bin/agentbot-demo ./cmd/agentbot-demo
	bin/agentbot-demo --agentbot $(BIN)

# The shipped suite. Unless AGENTBOT_LLM_BASE_URL names a model endpoint,
# agentbot-demo serves each task's trajectory as one, the model named
# after the task, and agentbot reaches it as it reaches a real model;
# EVAL_FLAGS such as --model M --runs 3 --json.
SUITE := runner/eval/testdata/suite
eval: deps sandbox-image build
ifeq ($(AGENTBOT_LLM_BASE_URL),)
	$(GO) build -o bin/agentbot-demo ./cmd/agentbot-demo
	bin/agentbot-demo model $(SUITE) -- $(BIN) eval $(SUITE) --model '{task}' $(EVAL_FLAGS)
else
	$(BIN) eval $(SUITE) $(EVAL_FLAGS)
endif

bench: deps sandbox-image
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...
	staticcheck ./...
