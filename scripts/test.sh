#!/usr/bin/env bash
# Runs every test tier on a fresh Debian machine: installs what is needed,
# starts real ZooKeeper and MariaDB on 127.0.0.1, runs unit, conformance,
# integration and end-to-end tests, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export CI="${CI:-true}" # integration tests must not skip under make test

start=$SECONDS
phase() { echo "== [$((SECONDS - start))s] $*"; }

# The race-instrumented compile of every package (SQLite's C-to-Go
# translation dominates it) runs in the background from the start, beside
# the installs, the services, vet and the browser tests, so that on a fresh
# machine the test run below finds it in the build cache.
go mod download
prelog=$(mktemp /tmp/ejc-prebuild.XXXXXX)
go build -race ./... >"$prelog" 2>&1 &
prepid=$!

phase "installing test dependencies"
bash scripts/services.sh install

svc=$(mktemp -d /tmp/ejc-services.XXXXXX)
cleanup() {
	kill "$prepid" 2>/dev/null || true
	bash scripts/services.sh stop-ensemble "$svc" || true
	bash scripts/services.sh stop "$svc" || true
	rm -rf "$svc"
}
trap cleanup EXIT
phase "starting ZooKeeper and MariaDB on 127.0.0.1"
bash scripts/services.sh start "$svc"
phase "starting a 3-server ZooKeeper ensemble on 127.0.0.1"
bash scripts/services.sh start-ensemble "$svc"
# shellcheck disable=SC1091
. "$svc/env"
# shellcheck disable=SC1091
. "$svc/ensemble.env"

phase "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
go vet ./...

phase "Prometheus alert rules: promtool check and unit tests"
promtool check config deploy/prometheus/prometheus.yml # and the rule files it loads
promtool test rules deploy/prometheus/alerts_test.yml

phase "building binaries and examples"
make -s build

phase "browser tests (console in headless Chromium)"
bash scripts/browser-test.sh

# The real-Mesos tier (e2e/realmesos) runs as one more package, in parallel with the others,
# whenever a Mesos build exists; its tests say the same when they skip.
mesos_home=${EJ_MESOS_HOME:-}
for d in /work/shared/mesos-1.11 ../shared/mesos-1.11; do
  if [ -z "$mesos_home" ] && [ -x "$d/bin/mesos-master" ]; then mesos_home=$d; fi
done
if [ -n "$mesos_home" ]; then echo "== real Mesos tier: against the Mesos build at $mesos_home"
else echo "== real Mesos tier: skipped: no Mesos build at /work/shared/mesos-1.11 (set EJ_MESOS_HOME)"; fi

# Fuzz targets, each for a few seconds (scripts/fuzz.sh; `make fuzz` runs them longer), on one
# worker in the background while the packages' tests run. SKIP_FUZZ=1 skips them.
fuzzlog=$(mktemp /tmp/ejc-fuzz.XXXXXX)
fuzzpid=
if [ -z "${SKIP_FUZZ:-}" ]; then
	echo "== fuzz targets, ${FUZZTIME:-4s} each, in the background (log: $fuzzlog)"
	FUZZTIME=${FUZZTIME:-4s} FUZZ_PARALLEL=1 FUZZCACHE="$fuzzlog.cache" bash scripts/fuzz.sh >"$fuzzlog" 2>&1 &
	fuzzpid=$!
fi

phase "waiting for the background race build"
if ! wait "$prepid"; then cat "$prelog"; exit 1; fi
rm -f "$prelog"
phase "unit, conformance, integration and end-to-end tests (race detector on)"
log=$(mktemp /tmp/ejc-go-test.XXXXXX)
set +e
go test -race -count=1 -timeout 25m ./... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
passed=$(grep -c '^ok' "$log" || true)
failed=$(grep -cE '^FAIL[[:space:]]' "$log" || true)
phase "packages: $passed passed, $failed failed"
if [ -n "$fuzzpid" ]; then
	fuzzstatus=0
	wait "$fuzzpid" || fuzzstatus=$?
	phase "fuzz targets"
	if [ "$fuzzstatus" -ne 0 ]; then cat "$fuzzlog"; else sed -n '/^== fuzz summary/,$p' "$fuzzlog"; fi
	if [ "$status" -eq 0 ]; then status=$fuzzstatus; fi
fi
rm -rf "$fuzzlog" "$fuzzlog.cache"
# Last, what each failed test said first (its messages, before the logs a
# failed test dumps), so that the end of the output names the failures.
if grep -q -- '--- FAIL' "$log"; then
	echo "== failures (the first lines each failed test printed; the full output is above)"
	awk '/^ *--- FAIL: /{print; n=16; next} n>0 && /^ +[A-Za-z0-9_]+\.go:[0-9]+: /{print substr($0, 1, 240); n--}' "$log"
fi
rm -f "$log"
exit "$status"
