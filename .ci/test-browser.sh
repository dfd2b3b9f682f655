#!/usr/bin/env bash
# make test-browser: the API reference page and CORS in a real browser.
# Debian's chromium, driven headless by playwright-core (npm, under
# .ci/browser), opens /docs of a server started here (the page must say it is
# loading while the renderer loads, then show each operation's success as its
# first reply sample), finds an operation with the page's search box, opens it, takes a screenshot
# (.data/browser/docs-operation.png), and checks that the page reached no other
# host; then it calls the API from another origin, allowed and not.
#
# It installs what it needs: chromium with apt-get when it is missing (saying
# so), playwright-core with npm ci. Where it cannot (no apt-get, not root, no
# network, no Node.js) it prints one line saying why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "test-browser: skipped: $*"; exit 0; }
mkdir -p .data/browser
log=.data/browser/setup.log
: >"$log"

chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
  command -v apt-get >/dev/null 2>&1 || skip "chromium is not installed, and there is no apt-get to install it"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    sudo -n true 2>/dev/null || skip "chromium is not installed, and installing it with apt-get needs root (or sudo without a password)"
    sudo=(sudo -n)
  fi
  echo "test-browser: Debian's chromium is not installed: installing it with apt-get (about 150 MB, once)"
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y --no-install-recommends chromium fonts-liberation >>"$log" 2>&1; then
    "${sudo[@]}" apt-get update >>"$log" 2>&1 || true
    "${sudo[@]}" apt-get install -y --no-install-recommends chromium fonts-liberation >>"$log" 2>&1 ||
      skip "chromium is not installed and apt-get could not install it (see $log)"
  fi
  chromium=$(command -v chromium) || skip "apt-get installed chromium but it is not on PATH"
fi
command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 || skip "Node.js with npm is not installed"

if [[ ! -d .ci/browser/node_modules/playwright-core || .ci/browser/package-lock.json -nt .ci/browser/node_modules/.package-lock.json ]]; then
  echo "test-browser: installing playwright-core with npm ci into .ci/browser/node_modules"
  npm ci --prefix .ci/browser --no-audit --no-fund --loglevel=error >>"$log" 2>&1 ||
    { cat "$log" >&2; echo "test-browser: npm ci --prefix .ci/browser failed" >&2; exit 1; }
fi

make -s build
[[ -f impl/apidocs/assets/redoc/redoc.standalone.js ]] ||
  { echo "test-browser: the renderer of /docs was not built (make apidocs)" >&2; exit 1; }

if [[ -z "${DATABASE_URL:-}" ]]; then
  DATABASE_URL=$(bin/crm-server db start browser 2>>"$log")
  export DATABASE_URL
fi
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
server_log=.data/browser/server.log
# The page is opened from http://localhost:PORT, an origin of its own beside
# http://127.0.0.1:PORT, so that the same server is also "another origin".
CORS_ALLOWED_ORIGINS="http://localhost:$port" CRM_MAIL=off LOG_FORMAT=text \
  bin/crm-server serve --migrate --addr "127.0.0.1:$port" 2>"$server_log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  kill -0 $pid 2>/dev/null || { cat "$server_log" >&2; echo "test-browser: the server did not start" >&2; exit 1; }
  sleep 0.1
done

echo "test-browser: $("$chromium" --version 2>/dev/null | head -n1) on http://localhost:$port/docs"
CHROMIUM="$chromium" node .ci/browser/docs.test.mjs "$port" .data/browser
