#!/usr/bin/env bash
# Start servers on the demo data and replay conformance/cases against them.
# Uses DATABASE_URL when set, otherwise the database "conformance" of the private
# cluster under ./.data. Expects the binaries in ./bin (make build). Writes the
# reports conformance-report.xml (JUnit) and conformance-report.json.
#
#   CONFORMANCE_SERVERS   how many server processes share the database (default 2);
#                         the cases go to them in turn
#   CONFORMANCE_SERVE_URL the database URL the servers use (default DATABASE_URL;
#                         make test-citus adds a setting that fails any statement
#                         touching more than one shard)
#   CONFORMANCE_PORT      the first server's port (default 18080)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DATABASE_URL:-}" ]]; then
  DATABASE_URL=$(bin/crm-server db start conformance)
  export DATABASE_URL
fi
port=${CONFORMANCE_PORT:-18080}
servers=${CONFORMANCE_SERVERS:-2}
serve_url=${CONFORMANCE_SERVE_URL:-$DATABASE_URL}

bin/crm-server migrate >/dev/null
demo=$(bin/crm-server demo)
token=$(sed -n 's/^token=//p' <<<"$demo")
member_token=$(sed -n 's/^member_token=//p' <<<"$demo")

# The webhook operations need a key for their secrets; the webhook worker stays off,
# so that nothing is delivered anywhere.
CRM_SECRET_KEY=${CRM_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}
export CRM_SECRET_KEY

pids=()
urls=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
: >conformance-server.log
for i in $(seq 0 $((servers - 1))); do
  p=$((port + i))
  DATABASE_URL=$serve_url RATE_LIMIT=0 CRM_MAIL=off CRM_WEBHOOKS=off bin/crm-server serve --addr "127.0.0.1:$p" 2>>conformance-server.log &
  pids+=($!)
  urls+=(-base-url "http://127.0.0.1:$p")
done
for i in $(seq 0 $((servers - 1))); do
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$((port + i))") 2>/dev/null; then break; fi
    sleep 0.1
  done
done

echo "conformance: $servers server processes over one database"
# Exactly as README.md ("Checking a deployment against the contract") shows: the
# tool finds everything else through the API; -strict fails the run on a skipped case.
bin/crm-conformance "${urls[@]}" -token "$token" -member-token "$member_token" -strict \
  -junit conformance-report.xml -json conformance-report.json "$@"
