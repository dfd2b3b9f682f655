#!/usr/bin/env bash
# race-prebuild.sh PACKAGE...: compiles and links the race detector's test
# binaries of the packages, one such build at a time among make test's
# commands (flock on bin/.race-build.lock, where flock is installed): two
# commands that test shares of one package (impl) then compile it once, and
# their go test finds it in the build cache. Its errors are not shown: the go
# test that follows reports them.
cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
if command -v flock >/dev/null 2>&1; then
  mkdir -p bin
  exec 9>bin/.race-build.lock
  flock 9
fi
"$GO" test -race -count=1 -run '^$' "$@" >/dev/null 2>&1
exit 0
