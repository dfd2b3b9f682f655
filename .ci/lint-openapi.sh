#!/usr/bin/env bash
# Lint the OpenAPI document with Spectral (spectral:oas) and Redocly CLI.
#
# Usage (from anywhere; the script works from the repo root):
#   .ci/lint-openapi.sh
#   OPENAPI_FILE=path/to/other.yaml .ci/lint-openapi.sh
#   LINT_VERBOSE=1 .ci/lint-openapi.sh     # full tool output even on success
#
# The tools are pinned in .ci/package.json / .ci/package-lock.json and are
# installed into .ci/node_modules with `npm ci` when missing or stale.
# On success only the two tools' summary lines are printed; on failure the
# full output of the failing step is printed. Exit status: 0 ok, 1 failure.
set -euo pipefail

caller_pwd=$PWD
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# OPENAPI_FILE: relative paths are taken from the caller's directory;
# the default is openapi.yaml at the repo root.
if [[ -n "${OPENAPI_FILE:-}" ]]; then
  spec=$OPENAPI_FILE
  [[ "$spec" == /* ]] || spec="$caller_pwd/$spec"
else
  spec="$repo_root/openapi.yaml"
fi

cd "$repo_root"
# Show paths relative to the repo root when the file is inside it.
spec=${spec#"$repo_root"/}

verbose=${LINT_VERBOSE:-}
bin=.ci/node_modules/.bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -f "$spec" ]]; then
  echo "lint-openapi: $spec not found" >&2
  exit 1
fi

# --- install the pinned tools if needed -------------------------------------
if [[ ! -x $bin/spectral || ! -x $bin/redocly \
   || ! -f .ci/node_modules/.package-lock.json \
   || .ci/package-lock.json -nt .ci/node_modules/.package-lock.json ]]; then
  if ! npm ci --prefix .ci --no-audit --no-fund >"$tmp/npm.log" 2>&1; then
    cat "$tmp/npm.log" >&2
    echo "lint-openapi: npm ci --prefix .ci failed" >&2
    exit 1
  fi
  [[ -z "$verbose" ]] || cat "$tmp/npm.log"
fi

# --- run one linter; print summary on success, everything on failure -------
# run NAME SUMMARY_REGEX CMD...
status=0
run() {
  local name=$1 summary=$2
  shift 2
  local log="$tmp/$name.log" rc=0
  "$@" >"$log" 2>&1 || rc=$?
  if [[ $rc -ne 0 || -n "$verbose" ]]; then
    cat "$log"
  else
    # Summary lines only; fall back to the whole log if none matched.
    grep -E "$summary" "$log" || cat "$log"
  fi
  if [[ $rc -ne 0 ]]; then
    echo "lint-openapi: $name failed (exit $rc)" >&2
    status=1
  fi
}

run spectral \
  "(✖ [0-9]+ problems? \(|No results with a severity of)" \
  "$bin/spectral" lint "$spec" --ruleset .ci/spectral.yaml --fail-severity=error

# REDOCLY_SUPPRESS_NOTIFICATIONS: no update check/announcements. There is no
# switch for the Node.js 20 deprecation box; it is only hidden on success
# because the output is reduced to the summary lines.
run redocly \
  "(Woohoo! Your API|You have [0-9]+ warnings?|Validation failed with|explicitly ignored)" \
  env REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_NOTIFICATIONS=true \
  "$bin/redocly" lint "$spec" --config .ci/redocly.yaml --lint-config=error

exit "$status"
