#!/usr/bin/env bash
# Runs every test tier on a fresh Debian machine: installs what is needed,
# starts real ZooKeeper and MariaDB on 127.0.0.1, runs unit, conformance,
# integration and end-to-end tests, and stops what it started.
#
# On a fresh machine most of the time is compiling (SQLite's C-to-Go
# translation above all, once with the race detector for the tests and once
# without for bin/), so the work is arranged around it: from the start the
# race build and `make build` run in the background
# beside the installs and the services; the browser tests run in the
# background beside `go test`. Each phase prints when it
# began (seconds since the start).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export CI="${CI:-true}" # integration tests must not skip under make test

start=$SECONDS
phase() { echo "== [$((SECONDS - start))s] $*"; }
logs=$(mktemp -d /tmp/ejc-test.XXXXXX)
pids=()
svc=
k8s_home=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "$k8s_home" ]; then # the real-Kubernetes tier's cluster, even if go test was killed: stop.sh puts the kernel settings back
		K8S_RUN="$EJ_K8S_RUN" K8S_WIPE=1 bash "$k8s_home/scripts/stop.sh" >/dev/null 2>&1 || true
	fi
	if [ -n "$svc" ]; then
		bash scripts/services.sh stop-ensemble "$svc" || true
		bash scripts/services.sh stop "$svc" || true
		rm -rf "$svc"
	fi
	rm -rf "$logs"
}
trap cleanup EXIT

# background NAME CMD...: runs CMD with its output in $logs/NAME; finish NAME
# waits for it and prints its output when it failed (all of it with -v).
background() {
	local name=$1
	shift
	"$@" >"$logs/$name" 2>&1 &
	pids+=($!)
	echo $! >"$logs/$name.pid"
}
finish() {
	local status=0
	wait "$(cat "$logs/$1.pid")" || status=$?
	if [ "$status" -ne 0 ] || [ "${2:-}" = -v ]; then cat "$logs/$1"; fi
	return "$status"
}

# Where the go test phase's CPU went: scripts/testexec.sh, go test's -exec, logs each
# package's wall and the CPU of its test binary and of what that waited for (the e2e
# tests' schedulers, agents and services); the machine's busy time over the phase says
# how much of it was go test compiling and linking the test binaries, and the browser
# tier beside it; "from" is when a package's test binary started (seconds since the start,
# as the phases print it).
export EJ_TEST_ROOT="$PWD" EJ_TEST_CPU_LOG="$logs/cpu"
busy() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat; }
cpu_summary() {
	[ -s "$EJ_TEST_CPU_LOG" ] || return 0
	local used
	used=$(($(busy) - $2))
	echo "== CPU of the go test phase: ${1} s wall, the machine busy ${used} CPU-s of $((${1} * $(nproc))); the test binaries and what they waited for:"
	sort -k3 -rn "$EJ_TEST_CPU_LOG" | awk -v t0="$3" -v s0="$((gostart - start))" '{ sum += $3; if (NR <= 15) printf "   %7.1f CPU-s %7.1f s wall  from %4.0fs  %s\n", $3, $2, s0 + $4 - t0, $1 } END { printf "   %7.1f CPU-s in all (%d packages); the rest is compiling, linking and the tiers beside go test\n", sum, NR }'
}

phase "compiling in the background: the race build and make build"
go mod download
background race go build -race ./...
background build make -s build

phase "installing test dependencies"
bash scripts/services.sh install
svc=$(mktemp -d /tmp/ejc-services.XXXXXX)
phase "starting ZooKeeper and MariaDB on 127.0.0.1"
bash scripts/services.sh start "$svc"
phase "starting a 3-server ZooKeeper ensemble on 127.0.0.1"
bash scripts/services.sh start-ensemble "$svc"
# shellcheck disable=SC1091
. "$svc/env"
# shellcheck disable=SC1091
. "$svc/ensemble.env"

phase "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi

# goimports at a pinned version (from the module proxy; goimports is not on a fresh machine):
# it lists a file whose imports are not grouped as the project has them, the standard
# library's first, then a blank line, then the others.
phase "goimports"
misgrouped=$(go run golang.org/x/tools/cmd/goimports@v0.51.0 -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$misgrouped" ]; then echo "goimports would change (std imports, blank line, others): $misgrouped"; exit 1; fi

phase "Prometheus alert rules: promtool check and unit tests"
promtool check config deploy/prometheus/prometheus.yml # and the rule files it loads
promtool test rules deploy/prometheus/alerts_test.yml

# The real engines' tiers: what they need is installed here, in the foreground while the race
# build runs in the background (apt-get one at a time: the browser tier's starts after make
# build), not between the race build and go test, where it lengthened the run.
#
# The real-Mesos tier (e2e/realmesos) runs as one more package, in parallel with the others,
# whenever a Mesos build exists; its tests say the same when they skip.
mesos_home=${EJ_MESOS_HOME:-}
for d in ../shared/mesos-1.11; do # beside the repository (the working directory is its root)
  if [ -z "$mesos_home" ] && [ -x "$d/bin/mesos-master" ]; then mesos_home=$d; fi
done
if [ -n "$mesos_home" ]; then echo "== real Mesos tier: against the Mesos build at $mesos_home"
else echo "== real Mesos tier: skipped: no Mesos build at ../shared/mesos-1.11 (set EJ_MESOS_HOME)"; fi
# The libraries the Mesos binaries need are installed once, here (the build's start.sh runs
# apt-get), rather than by the two tiers that start Mesos, at the same time, from their tests.
if [ -n "$mesos_home" ] && ldd "$mesos_home/bin/mesos-master" 2>/dev/null | grep -q "not found"; then
	phase "installing the libraries the Mesos build needs"
	{ bash "$mesos_home/start.sh" "$logs/mesos-libs" >/dev/null && bash "$mesos_home/stop.sh" "$logs/mesos-libs" >/dev/null; } ||
		echo "== the Mesos build's start.sh failed (its tiers will try again): $(tail -3 "$logs/mesos-libs/"*.log 2>/dev/null)"
fi

# The real-Kubernetes tier (e2e/realkube) likewise, whenever the single-node Kubernetes build
# exists: its TestMain starts the cluster (as root) and always runs its stop.sh; the trap above
# runs it too, with the same state directory, should go test be killed.
for d in "${EJ_K8S_HOME:-}" ../shared/k8s-1.37; do
  if [ -z "$k8s_home" ] && [ -n "$d" ] && [ -x "$d/scripts/start.sh" ]; then k8s_home=$(cd "$d" && pwd); fi
done
if [ -n "$k8s_home" ]; then
	echo "== real Kubernetes tier: against the cluster build at $k8s_home"
	phase "installing what the kubelet and the executor image need (runc, CNI plugins, xz, bc, busybox-static)"
	if ! dpkg -s runc containernetworking-plugins xz-utils bc busybox-static >/dev/null 2>&1; then
		apt-get install -y runc containernetworking-plugins xz-utils bc busybox-static >/dev/null 2>&1 ||
			{ apt-get update >/dev/null && apt-get install -y runc containernetworking-plugins xz-utils bc busybox-static >/dev/null; }
	fi
	export EJ_K8S_HOME="$k8s_home" EJ_K8S_RUN="$logs/k8s"
	# Unpack the cluster's binaries once, now: the tier's TestMain and deploy's kustomize tests
	# (kubectl, when none is on PATH) would otherwise both unpack them at once on a fresh machine.
	"$k8s_home/scripts/bin.sh" >/dev/null
else echo "== real Kubernetes tier: skipped: no Kubernetes build at ../shared/k8s-1.37 (set EJ_K8S_HOME)"; fi

phase "waiting for make build (binaries and examples)"
finish build
# Every test that starts the project's programs takes them from bin/ (internal/testbin): one
# make test compiles the tree once, and no test compiles under a deadline of its own.
export EJ_BIN="$PWD/bin"

# The console in headless Chromium, against bin/, beside the Go tests.
phase "browser tests (console in headless Chromium), in the background"
# The real-Kubernetes tier drives the console's cluster page with the same Chromium and
# playwright-core: the browser tier writes this file once they are installed.
if [ -z "${SKIP_BROWSER:-}" ]; then export EJ_BROWSER_READY="$logs/browser.ready"; fi
background browser env EJC_SHOTS="${EJC_SHOTS:-0}" bash scripts/browser-test.sh

phase "waiting for the race build"
finish race
if [ -n "$k8s_home" ]; then
	# The longest tier (its cluster, the installed scheduler's image): it runs beside go vet
	# and then the other packages, from as soon as its test binary can be linked from the race
	# build, instead of taking one of go test's slots late.
	phase "real Kubernetes tier, in the background"
	background realkube go test -race -count=1 -tags e2e -timeout 25m -ldflags=-w -exec "$PWD/scripts/testexec.sh" ./e2e/realkube/
fi
# vet with -race reuses the race build's compiled packages instead of
# compiling every package a second time without the race detector.
phase "go vet"
go vet -race -tags e2e ./...

# Every fuzz target's seed corpus (f.Add and testdata/fuzz) runs as a test in go test below.
# Fuzzing itself is `make fuzz`: its builds instrument every package again (SQLite's
# translation among them), too many CPU minutes for a 2-core run. FUZZTIME=4s make test fuzzes
# each target for that long too, on one worker beside the tests.
fuzzing=${FUZZTIME:-}
if [ -n "$fuzzing" ]; then
	phase "fuzz targets, $FUZZTIME each, in the background"
	background fuzz env FUZZTIME="$FUZZTIME" FUZZ_PARALLEL=1 FUZZCACHE="$logs/fuzzcache" bash scripts/fuzz.sh
fi

phase "unit, conformance, integration and end-to-end tests (race detector on)"
log="$logs/go-test"
gostart=$SECONDS
goepoch=$EPOCHREALTIME
busy0=$(busy)
set +e
mod=$(go list -m)
pkgs=$(go list -tags e2e ./...)
if [ -n "$k8s_home" ]; then pkgs=$(echo "$pkgs" | grep -v '/e2e/realkube$'); fi
# The packages whose tests run in one goroutine (scripts/single-goroutine.txt, checked by
# internal/archtest) run without the race detector, beside the others: it has nothing to
# find there and ran their property tests at a fifth of the speed (round: 71 CPU-s against
# 14). Built as make build builds (CGO_ENABLED=0 -trimpath), they reuse its compiled packages.
single=$(grep -v -e '^#' -e '^[[:space:]]*$' scripts/single-goroutine.txt | sed "s|^|$mod/|")
pkgs=$(echo "$pkgs" | grep -vxF "$single")
background single env CGO_ENABLED=0 go test -count=1 -trimpath -p 1 -timeout 25m -ldflags=-w -exec "$PWD/scripts/testexec.sh" $single
# go test starts the test binaries in the order it is given the packages, so the longest go
# first (their walls in a make test run, longest first, those that mostly wait on processes
# beside those that keep a core busy): in the order of go list, store/etcd (159 s) started
# among the last, when little was left to run beside it and the machine went half idle. A package not
# listed keeps its place in go list's order after these; a listed one that is gone is skipped.
slow="e2e/soak e2e store/etcd e2e/realmesos e2e/ha api engine/mesos/embedded election/etcd
	internal/archtest scheduler history executor deadline history/trace engine/mesos/embedded/tenant
	history/replog e2e/hostile store/cache"
pkgs=$(awk -v mod="$mod" 'NR == FNR { all[$0] = 1; rest[FNR] = $0; n = FNR; next }
	{ for (i = 1; i <= NF; i++) if ((mod "/" $i) in all && !((mod "/" $i) in first)) { print mod "/" $i; first[mod "/" $i] = 1 } }
	END { for (i = 1; i <= n; i++) if (!(rest[i] in first)) print rest[i] }' <(printf '%s\n' "$pkgs") <(echo $slow))
# Three test binaries at a time on two cores (go test's default is GOMAXPROCS, two): a running
# test binary holds one of go test's slots, compiling and linking the next ones included, and
# the longest packages mostly wait on the processes and clocks they drive (e2e 217 s of wall
# for 39 CPU-s, e2e/realmesos 206 s for 25, e2e/ha 180 s for 38, api 135 s for 30); with two
# slots the machine sat a quarter idle over the phase. A fourth slot adds contention that
# tests with sub-second real-time margins (an etcd lease renewal, a MariaDB connect) felt.
# -ldflags=-w: the test binaries are linked without DWARF, which nothing in a test reads (stack
# traces, race reports and profiles use the symbol table, which stays); a race build's link is
# 3-12 CPU-s, a fifth of it writing and compressing DWARF, times a hundred test binaries.
go test -race -count=1 -p 3 -tags e2e -timeout 25m -ldflags=-w -exec "$PWD/scripts/testexec.sh" $pkgs 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
sstatus=0
wait "$(cat "$logs/single.pid")" || sstatus=$?
tee -a "$log" <"$logs/single"
if [ "$status" -eq 0 ]; then status=$sstatus; fi
if [ -n "$k8s_home" ]; then
	kstatus=0
	wait "$(cat "$logs/realkube.pid")" || kstatus=$?
	tee -a "$log" <"$logs/realkube"
	if [ "$status" -eq 0 ]; then status=$kstatus; fi
fi
set -e
passed=$(grep -c '^ok' "$log" || true)
failed=$(grep -cE '^FAIL[[:space:]]' "$log" || true)
phase "packages: $passed passed, $failed failed"
cpu_summary "$((SECONDS - gostart))" "$busy0" "$goepoch"
# What each failed test said first (its messages, before the logs a failed
# test dumps), right under the count and again at the very end, so that an
# excerpt of the output around either names the failures.
failures() {
	if grep -q -- '--- FAIL' "$log"; then
		echo "== failures$1 (the first lines each failed test printed; the full output is above)"
		awk '/^ *--- FAIL: /{print; n=16; next} n>0 && /^ +[A-Za-z0-9_]+\.go:[0-9]+: /{print substr($0, 1, 240); n--}' "$log"
	fi
}
failures ""

phase "browser tests"
bstatus=0
finish browser -v || bstatus=$?
if [ "$status" -eq 0 ]; then status=$bstatus; fi
if [ -n "$fuzzing" ]; then
	phase "fuzz targets"
	fstatus=0
	finish fuzz || fstatus=$?
	if [ "$fstatus" -eq 0 ]; then sed -n '/^== fuzz summary/,$p' "$logs/fuzz"; fi
	if [ "$status" -eq 0 ]; then status=$fstatus; fi
fi
failures ", again"
phase "done"
exit "$status"
