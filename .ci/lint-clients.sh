#!/usr/bin/env bash
# Keep openapi.yaml friendly to the client generators users reach for: generate a
# client with each of them, compile it, and run a small program through it against
# a live server (one, started here on the demo account): a read (directories and a
# counterparty's card), a write (a deal with a goods position of 1234567890123.45,
# read back exactly) and an expected failure (the card of a missing counterparty),
# each payload decoded into the type the generator made from the operation's
# x-value-schema.
#
#   Go (.ci/clients/go, a module of its own, main.go): oapi-codegen's client mode
#     (with skip-prune, docs/clients.md) and ogen at its defaults, pinned as tools
#     in its go.mod.
#   TypeScript (.ci/clients/ts): openapi-typescript with openapi-fetch,
#     @hey-api/openapi-ts and orval (axios functions) at their defaults, pinned in
#     .ci/clients/package.json and package-lock.json and installed there with
#     `npm ci` when missing or stale; compiled under tsc --strict, bundled with
#     esbuild and run with node. Without npm this part is skipped, saying so.
#
# The server uses DATABASE_URL, or the database "clients" of the private cluster
# under ./.data.
#
# Usage: .ci/lint-clients.sh            (LINT_VERBOSE=1 for the tools' whole output)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
GO=${GO:-go}
say() { printf 'lint-clients: %s\n' "$*"; }

tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

step() {
  local name=$1 log
  shift
  log=$tmp/$(tr -c 'A-Za-z0-9_.-' '_' <<<"$name").log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    [[ ! -s $tmp/server.log ]] || { echo "--- the server's log:" >&2; tail -n 50 "$tmp/server.log" >&2; }
    say "$name failed" >&2
    exit 1
  fi
  [[ -z "${LINT_VERBOSE:-}" ]] || cat "$log"
}

# ---------------------------------------------------------------- generate and compile
gomod=.ci/clients/go
rm -rf "$gomod/out"
step oapi-codegen bash -c "cd $gomod && '$GO' tool oapi-codegen -config oapi-codegen.yaml ../../../openapi.yaml"
step ogen bash -c "cd $gomod && '$GO' tool ogen --target out/ogenclient --package ogenclient --clean ../../../openapi.yaml"
step "go build (the Go clients)" bash -c "cd $gomod && '$GO' build -o '$tmp/clientcheck' ."

ts=
dir=.ci/clients
bin=$dir/node_modules/.bin
if ! command -v npm >/dev/null 2>&1; then
  say "npm is not installed, so the TypeScript clients (openapi-typescript, @hey-api/openapi-ts, orval) are not checked (install Node.js with npm)"
else
  ts=1
  if [[ ! -x $bin/openapi-ts || ! -x $bin/openapi-typescript || ! -x $bin/orval || ! -x $bin/tsc || ! -x $bin/esbuild \
     || ! -f $dir/node_modules/.package-lock.json \
     || $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
    step "npm ci --prefix $dir" npm ci --prefix "$dir" --no-audit --no-fund
  fi
  rm -rf "$dir/out"
  step openapi-typescript "$bin/openapi-typescript" openapi.yaml -o "$dir/out/openapi-typescript/api.d.ts"
  step openapi-ts "$bin/openapi-ts" -i openapi.yaml -o "$dir/out/hey-api"
  step orval "$bin/orval" --input openapi.yaml --output "$dir/out/orval/api.ts"
  step "tsc --strict" "$bin/tsc" -p "$dir/tsconfig.json"
  for program in openapi-fetch hey-api orval; do
    step "esbuild $program" "$bin/esbuild" "$dir/ts/$program.ts" --bundle --packages=external --platform=node \
      --format=esm --target=node18 --log-level=warning --outfile="$dir/out/js/$program.mjs"
  done
fi

# ---------------------------------------------------------------- a live server
step "go build ./cmd/crm-server" "$GO" build -o "$tmp/crm-server" ./cmd/crm-server
if [[ -z "${DATABASE_URL:-}" ]]; then
  if ! DATABASE_URL=$("$tmp/crm-server" db start clients 2>"$tmp/db.log"); then
    cat "$tmp/db.log" >&2
    say "the private PostgreSQL did not start (or set DATABASE_URL)" >&2
    exit 1
  fi
  export DATABASE_URL
fi
step "crm-server migrate" "$tmp/crm-server" migrate
if ! demo=$("$tmp/crm-server" demo 2>"$tmp/demo.log"); then
  cat "$tmp/demo.log" >&2
  say "crm-server demo failed" >&2
  exit 1
fi
CRM_TOKEN=$(sed -n 's/^token=//p' <<<"$demo")
CRM_USER_ID=$(sed -n 's/^admin_user_id=//p' <<<"$demo")
CRM_COMPANY_ID=$(sed -n 's/^sample_company_id=//p' <<<"$demo")
port=${CLIENTS_PORT:-$((20000 + $$ % 20000))}
CRM_URL=http://127.0.0.1:$port
export CRM_URL CRM_TOKEN CRM_USER_ID CRM_COMPANY_ID
RATE_LIMIT=0 CRM_MAIL=off CRM_WEBHOOKS=off "$tmp/crm-server" serve --addr "127.0.0.1:$port" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.log" >&2; say "the server did not start" >&2; exit 1; }
  sleep 0.1
done

# ---------------------------------------------------------------- run the clients
failed=0
run() {
  local out
  if out=$("$@" 2>&1); then
    echo "$out"
  else
    echo "$out" >&2
    failed=1
  fi
}
run "$tmp/clientcheck"
if [[ -n $ts ]]; then
  for program in openapi-fetch hey-api orval; do
    run node "$dir/out/js/$program.mjs"
  done
fi
if [[ $failed != 0 ]]; then
  echo "--- the server's log:" >&2
  tail -n 50 "$tmp/server.log" >&2
  say "a generated client failed against the server" >&2
  exit 1
fi
