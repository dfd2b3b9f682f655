#!/usr/bin/env bash
# progress.sh NAME WHAT COMMAND [ARG...]: runs COMMAND, saying "NAME: WHAT" as it
# starts, "NAME: still running (N s)" every 15 s (PROGRESS_EVERY) while it runs
# and, when it took that long, how long it took. Exits with COMMAND's status.
# The Makefile's long silent steps (staticcheck, go vet) run under it.
name=$1 what=$2
shift 2
every=${PROGRESS_EVERY:-15}
printf '%s: %s\n' "$name" "$what"
start=$SECONDS
( while sleep "$every"; do printf '%s: still running (%d s)\n' "$name" $((SECONDS - start)); done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null' EXIT
"$@"
rc=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if [[ $((SECONDS - start)) -ge $every ]]; then
  if [[ $rc -eq 0 ]]; then
    printf '%s: done in %d s\n' "$name" $((SECONDS - start))
  else
    printf '%s: failed after %d s\n' "$name" $((SECONDS - start))
  fi
fi
exit "$rc"
