#!/usr/bin/env bash
# go test -exec wrapper (scripts/test.sh): runs one package's test binary
# as go test would, then appends the package's wall time and the CPU time
# of the binary and every process it waited for (the schedulers, agents
# and services an e2e test starts), and when it started, to
# $EJ_TEST_CPU_LOG, so that make test can say where a 2-core machine's
# minutes went and what ran beside what.
start=$EPOCHREALTIME
"$@"
status=$?
if [ -n "${EJ_TEST_CPU_LOG:-}" ]; then
	t=$(mktemp)
	times >"$t" # its second line: the children's user and system time
	pkg=${PWD#"${EJ_TEST_ROOT:-$PWD}"}
	awk -v s="$start" -v e="$EPOCHREALTIME" -v p="./${pkg#/}" 'NR == 2 {
		split($1, u, /[ms]/); split($2, y, /[ms]/)
		printf "%s %.1f %.1f %.1f\n", p, e - s, u[1] * 60 + u[2] + y[1] * 60 + y[2], s
	}' "$t" >>"$EJ_TEST_CPU_LOG"
	rm -f "$t"
fi
exit "$status"
