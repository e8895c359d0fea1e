#!/usr/bin/env bash
# Installs the report's npm packages (chart.js, embedded into latdoc at build time; playwright-core,
# for tests/browser) into report-assets/node_modules with `npm ci`, from package-lock.json.
# Idempotent: skipped when node_modules was installed from the same package-lock.json.
# Needs node and npm (Debian 12: apt-get install nodejs npm). Downloads no browser: the browser
# test drives Debian's chromium (apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "report-assets/install.sh: npm not found; install it (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
stamp=node_modules/.latdoc-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
   [ -f node_modules/chart.js/dist/chart.umd.min.js ]; then
  echo "report-assets: node_modules is current"
  exit 0
fi
echo "report-assets: npm ci"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
