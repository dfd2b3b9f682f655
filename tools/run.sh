#!/usr/bin/env bash
# make run: compile crm-server, saying how far it is while it takes, then
# serve the demo account on :$PORT until Ctrl-C.
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

# The packages go build will compile (none it has in its cache): the progress
# below counts the ones done. On a machine without the modules, go list
# downloads them first, naming each ("go: downloading …").
if [[ -z "$("$GO" list -m -f '{{.Dir}}' github.com/spf13/cobra 2>/dev/null)" ]]; then
  say "downloading the Go modules it needs (once)"
fi
total=$("$GO" list -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' ./cmd/crm-server 2> >(grep '^go: downloading' >&2) | grep -c .)
if [[ ${total:-0} -gt 50 ]]; then
  say "compiling crm-server into $(dirname "$bin")/: $total packages, the first time on this machine (2 to 4 minutes on 2 cores; seconds after that)"
else
  say "compiling crm-server into $(dirname "$bin")/"
fi
start=$SECONDS
built=$(mktemp)
trap 'rm -f "$built"' EXIT
( while sleep 10; do
    done_=$(grep -c '^[[:alnum:]][[:alnum:]._/-]*$' "$built" 2>/dev/null)
    say "still compiling: ${done_:-0} of ${total:-?} packages ($((SECONDS - start)) s)"
  done ) &
ticker=$!
disown "$ticker" # no "Terminated" notice when it is stopped
# -v names each package as it is compiled, into $built; what else the
# compiler says (errors) is shown when it fails.
"$GO" build -v -o "$bin" ./cmd/crm-server 2>"$built"
rc=$?
kill "$ticker" 2>/dev/null
if [[ $rc -ge 128 ]]; then
  say "interrupted while compiling"
  exit 0
elif [[ $rc -ne 0 ]]; then
  grep -v '^[[:alnum:]][[:alnum:]._/-]*$' "$built" >&2
  exit "$rc"
fi
if [[ $((SECONDS - start)) -ge 10 ]]; then
  say "compiled in $((SECONDS - start)) s"
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
