#!/usr/bin/env bash
# tests/browser/run.sh RENDERER [OUT_DIR]: renders the example diagnosis (and an empty and a
# hostile one) with RENDERER (the render_report program of this folder), opens each page in
# headless Chromium through Playwright, and checks: no console error, no page error, no
# request leaving the file, every chart drawn with data, a screenshot of plausible size.
# Exit 77 (ctest: skipped) only when node or chromium is missing; a missing playwright-core is
# a failure (run report-assets/install.sh). CHROMIUM overrides /usr/bin/chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
renderer=${1:?usage: run.sh RENDERER [OUT_DIR]}
out=${2:-$(mktemp -d)}
chromium=${CHROMIUM:-/usr/bin/chromium}

if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node not found (Debian: apt-get install nodejs npm)"; exit 77
fi
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: no Chromium at $chromium (Debian: apt-get install chromium; or set CHROMIUM)"; exit 77
fi
if [ ! -f "$root/report-assets/node_modules/playwright-core/package.json" ]; then
  echo "FAILED: report-assets/node_modules/playwright-core missing: run report-assets/install.sh" >&2
  exit 1
fi

mkdir -p "$out"
data="$root/tests/data/report"
"$renderer" "$data/diagnosis_example.json" "$out/example.html" "$out/example.md"
"$renderer" "$data/diagnosis_empty.json" "$out/empty.html"
"$renderer" "$data/diagnosis_hostile.json" "$out/hostile.html"
CHROMIUM="$chromium" node "$root/tests/browser/report_test.cjs" "$root" "$out"
