#!/usr/bin/env bash
# Browser tests of the web console: Debian's chromium driven by
# playwright-core (pinned in browser/package-lock.json) against bin/scheduler
# and bin/executor (built by `make build`, which must have run). Screenshots
# of every page (unless EJC_SHOTS=0) and the measured figures go to browser/artifacts/.
#   EJC_BROWSER_JOBS=N   jobs seeded for the jobs-page measurement (10000)
#   SKIP_BROWSER=1       skip these tests
#   EJC_SHOTS=0          take no screenshots (scripts/test.sh: nobody looks at them there)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${SKIP_BROWSER:-}" ]]; then echo "browser tests skipped (SKIP_BROWSER set)"; exit 0; fi
# EJ_BROWSER_READY (scripts/test.sh): a file to write "ready" to once Chromium and
# playwright-core are installed, or why not, for the real-Kubernetes tier's cluster page.
ready() { if [[ -n "${EJ_BROWSER_READY:-}" && ! -e $EJ_BROWSER_READY ]]; then echo "$1" >"$EJ_BROWSER_READY"; fi; }
trap 'ready "failed: the browser tier could not install Chromium or playwright-core (see its output)"' EXIT
for b in bin/scheduler bin/executor examples/dist/demo-app.tar.gz; do
	[[ -e $b ]] || { echo "$b is missing: run make build first" >&2; exit 1; }
done

need=()
[[ -x /usr/bin/chromium ]] || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
fc-list :lang=zh 2>/dev/null | grep -q . || need+=(fonts-wqy-zenhei) # zh screenshots
fc-list 2>/dev/null | grep -qi liberation || need+=(fonts-liberation)
if ((${#need[@]})); then
	[[ $(id -u) -eq 0 ]] || { echo "missing ${need[*]}: install them (apt-get install ${need[*]})" >&2; exit 1; }
	echo "== installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends "${need[@]}" >/tmp/ejc-browser-apt.log 2>&1 ||
		{ apt-get update -q >>/tmp/ejc-browser-apt.log 2>&1 && apt-get install -y -q --no-install-recommends "${need[@]}" >>/tmp/ejc-browser-apt.log 2>&1; } ||
		{ tail -n 30 /tmp/ejc-browser-apt.log >&2; exit 1; }
fi

# The OpenID provider of the console's SSO test (package internal/oidctest).
export PATH="/usr/local/go/bin:$PATH"
go build -o bin/oidc-provider ./internal/oidctest/cmd/oidc-provider

cd browser
echo "== npm ci (playwright-core)"
npm ci --no-audit --no-fund --loglevel=error
rm -rf artifacts && mkdir -p artifacts
ready ready
echo "== browser tests (chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'))"
node --test --test-concurrency=1 --test-reporter=spec test/
