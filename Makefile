# ElasticJob-Cloud in Go. `make run` starts the embedded scheduler on
# 127.0.0.1:8899; `make test` installs what the tests need, starts real
# ZooKeeper and MariaDB on 127.0.0.1, and runs every test tier.
GO       ?= go
DATA_DIR ?= data
BIN      := bin

.PHONY: all build run test unit fuzz bench soak examples fmt vet clean image java java-image

all: build

# The Java library (sdk/java) is built, and put beside the executor, only where a JDK is:
# `make run` needs Go and a shell alone.
JAVAC := $(shell command -v javac 2>/dev/null)

# Static binaries (CGO_ENABLED=0, as examples' go-app): the same bin/ serves the processes
# the tests start and the Kubernetes tier's executor image, so make test compiles the tree
# once (scripts/test.sh points the tests at bin/ through EJ_BIN).
BUILD := CGO_ENABLED=0 $(GO) build -trimpath

build: examples
	$(BUILD) -o $(BIN)/scheduler ./cmd/scheduler
	$(BUILD) -o $(BIN)/executor ./cmd/executor
	$(BUILD) -o $(BIN)/tenant-init ./cmd/tenant-init
	$(BUILD) -o $(BIN)/mesos-local ./cmd/mesos-local
	$(BUILD) -o $(BIN)/ejctl ./cmd/ejctl
	$(BUILD) -o $(BIN)/executor-image ./cmd/executor-image
ifneq ($(JAVAC),)
	cp dist/elasticjob-cloud-executor.jar $(BIN)/elasticjob-cloud-executor.jar
endif

# The Java library with the original's public API: dist/elasticjob-cloud-executor.jar and
# its pom.xml (javac and jar alone, no dependency). See docs/jobs.md.
java:
	@bash sdk/java/build.sh dist

examples: $(if $(JAVAC),java)
	@$(MAKE) -s -C examples

# The executor's container image for Kubernetes, as a docker-archive in dist/ (no daemon):
# the static executor and scheduler (one image for the task pods and deploy/kubernetes),
# Debian's busybox-static for /bin/sh, the CA bundle, and the Java library at
# /usr/share/elasticjob/ when it is built (where a JDK is): the init container of an app with
# an image of its own installs it beside the executor. IMAGE_REF names it.
IMAGE_REF ?= localhost/elasticjob-executor:latest
image: $(if $(JAVAC),java)
	mkdir -p dist
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o dist/elasticjob-executor ./cmd/executor
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o dist/elasticjob-scheduler ./cmd/scheduler
	$(GO) run ./cmd/executor-image -ref $(IMAGE_REF) -executor dist/elasticjob-executor -scheduler dist/elasticjob-scheduler \
		$(if $(wildcard dist/elasticjob-cloud-executor.jar),-java-jar dist/elasticjob-cloud-executor.jar) -o dist/elasticjob-executor-image.tar

# An app image for Java jobs on Kubernetes (an app's containerImage): Debian's
# openjdk-17-jre-headless (its files and the libraries they link), the executor, busybox and
# the Java library at /usr/share/elasticjob/, as a docker-archive in dist/. JRE_IMAGE_REF names it.
JRE_IMAGE_REF ?= localhost/elasticjob-jre:17
java-image: java
	mkdir -p dist
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o dist/elasticjob-executor ./cmd/executor
	$(GO) run ./cmd/executor-image -ref $(JRE_IMAGE_REF) -executor dist/elasticjob-executor -jre openjdk-17-jre-headless \
		-java-jar dist/elasticjob-cloud-executor.jar -o dist/elasticjob-jre-image.tar

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

# The fault soak (package internal/soak, docs/testing.md): SOAK_FLAGS passes flags to
# cmd/ejsoak, e.g. make soak SOAK_FLAGS='-shape zk -duration 10m -seed 7 -dir /tmp/soak'.
SOAK_FLAGS ?=
soak:
	$(GO) run ./cmd/ejsoak $(SOAK_FLAGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) examples/dist dist
