#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after the other, each for
# FUZZTIME (default 60s). Targets are discovered, not listed: packages whose
# tests declare `func FuzzX(f *testing.F)`, then `go test -list` for the
# names, so a new target is picked up without editing this script.
#
#   make fuzz                      # 60s per target
#   FUZZTIME=4s bash scripts/fuzz.sh     # what make test runs
#   FUZZCACHE=/tmp/x bash scripts/fuzz.sh # start from the committed corpus only
#
# FUZZTIME includes go's first pass over the target's corpus (seeds,
# testdata/fuzz and what earlier runs cached in $GOCACHE/fuzz, or in
# FUZZCACHE/<package> when set, as make test does so that a machine's
# accumulated cache does not eat its few seconds).
#   FUZZ_PARALLEL=1 bash scripts/fuzz.sh # one fuzzing worker per target
#   FUZZMINIMIZETIME=30s make fuzz       # minimize found inputs longer (default 200x)
#   bash scripts/fuzz.sh ./jobs/... # only these packages
#   FUZZ_SKIP="pkg1 pkg2" bash scripts/fuzz.sh # all but these packages (import paths)
#
# A failing input is written by go test to the package's
# testdata/fuzz/<FuzzName>/ directory: fix the bug and commit the two together.
# The summary at the end lists executions per target; the script fails when
# any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

fuzztime=${FUZZTIME:-60s}
# go test minimizes every new interesting input for up to -fuzzminimizetime
# (60s by default) and counts none of it as executions: with large inputs
# (archives, event streams) a run would mostly minimize. Bound it by count.
minimize=${FUZZMINIMIZETIME:-200x}
parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then parallel=(-parallel "$FUZZ_PARALLEL"); fi
cache_args() { # the test binary takes the last -test.fuzzcachedir, so this one wins over go test's
	if [ -n "${FUZZCACHE:-}" ]; then echo "-args -test.fuzzcachedir=$FUZZCACHE/$1"; fi
}
patterns=("$@")
if [ ${#patterns[@]} -eq 0 ]; then patterns=(./...); fi

# Packages (import paths) with at least one fuzz target in their test files.
mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' "${patterns[@]}" |
	while read -r path dir files; do
		for f in $files; do
			if grep -qE '^func Fuzz[A-Z0-9_][A-Za-z0-9_]*\(f \*testing\.F\)' "$dir/$f"; then
				echo "$path"
				break
			fi
		done
	done)
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets found in ${patterns[*]}"
	exit 0
fi

# inputs counts the files of a corpus directory (0 when there is none).
inputs() {
	if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}

if [ -n "${FUZZ_SKIP:-}" ]; then
	kept=()
	for pkg in "${pkgs[@]}"; do
		case " $FUZZ_SKIP " in *" $pkg "*) echo "fuzz: skipping $pkg (FUZZ_SKIP)" ;; *) kept+=("$pkg") ;; esac
	done
	pkgs=("${kept[@]}")
fi

summary=$(mktemp /tmp/ejc-fuzz.XXXXXX)
trap 'rm -f "$summary"' EXIT
failed=0
for pkg in "${pkgs[@]}"; do
	mapfile -t targets < <(go test -list '^Fuzz' "$pkg" | grep -E '^Fuzz')
	for target in "${targets[@]}"; do
		echo "== fuzz $pkg $target for $fuzztime"
		log=$(mktemp /tmp/ejc-fuzz-log.XXXXXX)
		corpus="$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target"
		before=$(inputs "$corpus")
		status=ok
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" $(cache_args "$pkg") >"$log" 2>&1; then
			if grep -q '^    context deadline exceeded$' "$log" && [ "$(inputs "$corpus")" -eq "$before" ]; then
				# Go's coordinator can fail a run that reached -fuzztime (golang/go#75804,
				# fixed in Go 1.27): no input was written, nothing failed.
				status="ok (go#75804)"
				grep -E '^(fuzz: elapsed|PASS|ok)' "$log" | tail -n 2
			else
				status=FAIL
				failed=1
				cat "$log"
			fi
		else
			grep -E '^(fuzz: elapsed|PASS|ok)' "$log" | tail -n 3
		fi
		# The last progress line holds the total: "fuzz: elapsed: 5s, execs: 123 (24/sec), ..."
		# (none when FUZZTIME ended during go's baseline pass over the cached corpus)
		execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2 || true)
		printf '%-48s %-26s %12s %s\n' "$pkg" "$target" "${execs:-?}" "$status" >>"$summary"
		rm -f "$log"
	done
done

echo "== fuzz summary (FUZZTIME=$fuzztime per target)"
printf '%-48s %-26s %12s %s\n' package target execs result
cat "$summary"
if [ "$failed" -ne 0 ]; then
	echo "fuzz: a target failed; its input is in the package's testdata/fuzz/<target>/ (see above)"
fi
exit "$failed"
