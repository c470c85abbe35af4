# ElasticJob-Cloud in Go. `make run` starts the embedded scheduler on
# 127.0.0.1:8899; `make test` installs what the tests need, starts real
# ZooKeeper and MariaDB on 127.0.0.1, and runs every test tier.
GO       ?= go
DATA_DIR ?= data
BIN      := bin

.PHONY: all build run test unit fuzz bench examples fmt vet clean

all: build

build: examples
	$(GO) build -o $(BIN)/scheduler ./cmd/scheduler
	$(GO) build -o $(BIN)/executor ./cmd/executor
	$(GO) build -o $(BIN)/mesos-local ./cmd/mesos-local
	$(GO) build -o $(BIN)/ejctl ./cmd/ejctl

examples:
	@$(MAKE) -s -C examples

run: build
	$(BIN)/scheduler --data-dir $(DATA_DIR)

test:
	bash scripts/test.sh

# Unit and conformance tiers only (no ZooKeeper, MariaDB or browser).
unit:
	$(GO) test -race ./...

# Every fuzz target for FUZZTIME each (default 60s), one after the other.
fuzz:
	bash scripts/fuzz.sh

bench: build
	bash scripts/bench.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) examples/dist
