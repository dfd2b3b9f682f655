#!/usr/bin/env bash
# make test-faults: the fault suite (package faults) against real crm-server
# processes built into ./bin and a private PostgreSQL cluster under ./.data/faults,
# which the tests kill, freeze (SIGSTOP), restart and stop; the system PostgreSQL
# and DATABASE_URL are never touched. Where the PostgreSQL server binaries are
# not installed it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  echo "test-faults: skipped: the PostgreSQL server binaries (pg_ctl) are not installed"
  exit 0
fi
go build -o bin/crm-server ./cmd/crm-server
mkdir -p .data
stop() { CRM_DATA_DIR=.data/faults bin/crm-server db stop >/dev/null 2>&1 || true; }
trap stop EXIT
echo "--- test-faults: server kill during inserts, frozen, restarted and stopped database (the workers' logs), slow clients, hostile bodies, mail across a kill (private cluster under ./.data/faults)"
unset DATABASE_URL
CRM_FAULTS=1 go test -count=1 -timeout 10m -v ./faults
echo "test-faults: passed"
