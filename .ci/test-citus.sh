#!/usr/bin/env bash
# make test-citus: the tests on a private Citus cluster (a coordinator and two
# workers started from the installed PostgreSQL binaries under ./.data/citus).
# Where the citus extension is not installed it says so and exits 0: Citus is
# not in Debian's packages, and this project never installs it.
set -euo pipefail
cd "$(dirname "$0")/.."

make -s build
set +e
where=$(env -u DATABASE_URL bin/crm-server db citus check 2>&1)
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

echo "--- test-citus: the cluster's Citus (version, the local plan cache's regression of 13.2.1 and 13.2.2)"
DATABASE_URL=$url bin/crm-server db citus check

echo "--- test-citus: conformance, two server processes, every statement of a request on one shard"
demo_url=$(bin/crm-server db citus start --fresh crm_conformance 2>>"$log")
# The servers' sessions carry an application_name of this run and log every
# command a node sends another on their behalf; the audit below reads them
# from every node's log.
app="crm-request-$(date +%s)-$$"
DATABASE_URL=$demo_url CONFORMANCE_SERVE_URL="${demo_url}&citus.multi_task_query_log_level=error&application_name=${app}&citus.log_remote_commands=on&log_min_messages=notice" \
  CONFORMANCE_SERVERS=2 CONFORMANCE_PORT=18180 .ci/conformance.sh

echo "--- test-citus: one node per request (no two-phase commit, nothing sent to or from a node without the account)"
account=$(DATABASE_URL=$demo_url bin/crm-server demo | sed -n 's/^account_id=//p')
DATABASE_URL=$demo_url bin/crm-server db citus audit --app "$app" --account "$account"
echo "--- test-citus: the cluster changes under load (a shard move, a worker added and rebalanced, then drained and removed)"
moves_url=$(bin/crm-server db citus start --fresh crm_moves 2>>"$log")
spare=$(bin/crm-server db citus spare crm_moves 2>>"$log")
CRM_TEST_DB=shared DATABASE_URL=$moves_url CRM_CITUS_SPARE=$spare go test -count=1 -timeout 15m -run 'TestCitusClusterChanges' -v ./impl

echo "test-citus: passed"
