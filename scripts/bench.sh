#!/usr/bin/env bash
# Runs the benchmark harness (cmd/ejbench): real scheduler processes on 127.0.0.1
# with their own temporary data directories, then the packages' Go
# benchmarks. `make bench` builds first; extra arguments go to the harness,
# e.g. `bash scripts/bench.sh -only producer`. Figures: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
if [ ! -x bin/scheduler ] || [ ! -x bin/executor ] || [ ! -x bin/ejctl ]; then
	make -s build
fi

exec go run ./cmd/ejbench "$@"
