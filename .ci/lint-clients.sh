#!/usr/bin/env bash
# Keep openapi.yaml friendly to the client generators users reach for: generate a
# client with openapi-typescript and one with @hey-api/openapi-ts into a temporary
# directory and compile both under tsc --strict. The generators are pinned in
# .ci/clients/package.json and package-lock.json and installed there with `npm ci`
# when missing or stale. Without npm the check is skipped, saying so.
#
# Usage: .ci/lint-clients.sh            (LINT_VERBOSE=1 for the tools' whole output)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
if ! command -v npm >/dev/null 2>&1; then
  echo "lint-clients: npm is not installed, so the generated clients are not checked (install Node.js with npm)"
  exit 0
fi

dir=.ci/clients
bin=$dir/node_modules/.bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -x $bin/openapi-ts || ! -x $bin/openapi-typescript || ! -x $bin/tsc \
   || ! -f $dir/node_modules/.package-lock.json \
   || $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
  if ! npm ci --prefix "$dir" --no-audit --no-fund >"$tmp/npm.log" 2>&1; then
    cat "$tmp/npm.log" >&2
    echo "lint-clients: npm ci --prefix $dir failed" >&2
    exit 1
  fi
fi

step() {
  local name=$1
  shift
  if ! "$@" >"$tmp/$name.log" 2>&1; then
    cat "$tmp/$name.log" >&2
    echo "lint-clients: $name failed" >&2
    exit 1
  fi
  [[ -z "${LINT_VERBOSE:-}" ]] || cat "$tmp/$name.log"
}

step openapi-typescript "$bin/openapi-typescript" openapi.yaml -o "$tmp/out/openapi-typescript/api.d.ts"
step openapi-ts "$bin/openapi-ts" -i openapi.yaml -o "$tmp/out/hey-api"
cat >"$tmp/out/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
    "lib": ["ES2022", "DOM", "DOM.Iterable"], "strict": true, "noEmit": true, "types": []
  },
  "include": ["openapi-typescript/**/*.ts", "hey-api/**/*.ts"]
}
JSON
step "tsc --strict" "$bin/tsc" -p "$tmp/out/tsconfig.json"
echo "lint-clients: openapi-typescript and @hey-api/openapi-ts generate clients that compile under tsc --strict"
