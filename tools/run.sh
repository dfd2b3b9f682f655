#!/usr/bin/env bash
# make run: compile crm-server, saying so while it takes, then serve the demo
# account on :$PORT until Ctrl-C.
#
# Job control (set -m) runs each step in a process group of its own, which
# the terminal's Ctrl-C reaches alone: the compiler stops, or the server
# drains and exits 0, and neither this script nor make sees the signal, so
# make run ends quietly with status 0 whenever it is interrupted.
set -m
trap ':' INT TERM
cd "$(dirname "$0")/.."
GO=${GO:-go}
bin=${CRM_RUN_BIN:-bin/crm-server} # where the server is built (tests build it elsewhere)
say() { printf 'run: %s\n' "$*"; }

say "compiling crm-server into $(dirname "$bin")/ (a minute or two on a machine that has not built it yet; seconds after that)"
start=$SECONDS
( while sleep 15; do say "still compiling ($((SECONDS - start)) s)"; done ) &
ticker=$!
disown "$ticker" # no "Terminated" notice when it is stopped
"$GO" build -o "$bin" ./cmd/crm-server
rc=$?
kill "$ticker" 2>/dev/null
if [[ $rc -ge 128 ]]; then
  say "interrupted while compiling"
  exit 0
elif [[ $rc -ne 0 ]]; then
  exit "$rc"
fi

if [[ -n "${DATABASE_URL:-}" ]]; then
  say "starting crm-server on :${PORT:-8080} over DATABASE_URL: migrations, the demo account (loaded once), then the API"
else
  say "starting crm-server on :${PORT:-8080}: the private PostgreSQL under ./.data (created the first time), migrations, the demo account (loaded once), then the API"
fi
LOG_FORMAT=${LOG_FORMAT:-text} METRICS_ADDR=${METRICS_ADDR:-main} "$bin" serve --migrate --demo
rc=$?
# The server ends with 0 when interrupted; a signal that killed it is no failure either.
if [[ $rc -ge 128 ]]; then
  exit 0
fi
exit "$rc"
