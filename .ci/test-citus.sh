#!/usr/bin/env bash
# make test-citus: the tests on a private Citus cluster (a coordinator and two
# workers started from the installed PostgreSQL binaries under ./.data/citus).
# Where the citus extension is not installed it says so and exits 0: Citus is
# not in Debian's packages, and this project never installs it.
set -euo pipefail
cd "$(dirname "$0")/.."

make -s build
set +e
where=$(bin/crm-server db citus check 2>&1)
rc=$?
set -e
if [[ $rc -eq 3 ]]; then
  echo "test-citus: skipped: ${where#crm-server: } (install Citus for PostgreSQL $(ls /usr/lib/postgresql | sort -V | tail -n1) to run it)"
  exit 0
elif [[ $rc -ne 0 ]]; then
  echo "$where" >&2
  exit $rc
fi
mkdir -p .data
log=.data/citus-cluster.log

echo "--- test-citus: a coordinator and two workers under ./.data/citus"
url=$(bin/crm-server db citus start --fresh crm_test 2>>"$log")

echo "--- test-citus: package tests in one shared database, migrated from empty (request statements on one shard each)"
CRM_TEST_DB=shared DATABASE_URL=$url go test -count=1 -timeout 30m ./...

echo "--- test-citus: conformance, two server processes, every statement of a request on one shard"
demo_url=$(bin/crm-server db citus start --fresh crm_conformance 2>>"$log")
DATABASE_URL=$demo_url CONFORMANCE_SERVE_URL="${demo_url}&citus.multi_task_query_log_level=error" CONFORMANCE_SERVERS=2 \
  CONFORMANCE_PORT=18180 .ci/conformance.sh
echo "test-citus: passed"
