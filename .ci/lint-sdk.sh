#!/usr/bin/env bash
# Check the TypeScript SDK's package as users install it (make lint): from a
# copy of sdk/typescript that holds only the files of a clone (nothing
# installed, nothing built), `npm pack` makes the tarball with nothing run
# first, and two pinned tools from npm judge it:
#   - @arethetypeswrong/cli: the types resolve, and match the JavaScript, for
#     require and import under every module resolution of TypeScript;
#   - publint: package.json's entry points exist and are of the right format
#     (--strict: its warnings fail too).
# The tools are pinned in .ci/sdk/package.json and package-lock.json and
# installed into .ci/sdk/node_modules with npm ci when missing or stale.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=.ci/sdk
bin=$PWD/$tools/node_modules/.bin
if [[ ! -x $bin/attw || ! -x $bin/publint || ! -f $tools/node_modules/.package-lock.json \
   || $tools/package-lock.json -nt $tools/node_modules/.package-lock.json ]]; then
  npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The files of a clone: tracked, or new and not ignored (node_modules, .build are).
git ls-files -z --cached --others --exclude-standard -- sdk/typescript |
  while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s\0' "$f"; done |
  xargs -0 cp --parents -t "$tmp"
pkg=$tmp/sdk/typescript
(cd "$pkg" && npm pack --pack-destination "$tmp" --loglevel=error >/dev/null)
tarball=$(ls "$tmp"/*.tgz)
echo "lint-sdk: $(basename "$tarball") packed from a clean copy of sdk/typescript"
"$bin/attw" --format ascii "$tarball"
(cd "$pkg" && "$bin/publint" --strict)
