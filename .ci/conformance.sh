#!/usr/bin/env bash
# Start a server on the demo data and replay conformance/cases against it.
# Uses DATABASE_URL when set, otherwise the database "conformance" of the private
# cluster under ./.data. Expects the binaries in ./bin (make build).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DATABASE_URL:-}" ]]; then
  DATABASE_URL=$(bin/crm-server db start conformance)
  export DATABASE_URL
fi
port=${CONFORMANCE_PORT:-18080}

bin/crm-server migrate >/dev/null
demo=$(bin/crm-server demo)
token=$(sed -n 's/^token=//p' <<<"$demo")
user=$(sed -n 's/^admin_user_id=//p' <<<"$demo")
# -var sample_goods_id=… and the other sample records of the demo account
samples=()
while IFS= read -r line; do samples+=(-var "$line"); done < <(grep '^sample_' <<<"$demo")
mail_account=$(sed -n 's/^admin_mail_account_id=//p' <<<"$demo")
member_token=$(sed -n 's/^member_token=//p' <<<"$demo")

RATE_LIMIT=0 bin/crm-server serve --addr "127.0.0.1:$port" 2>conformance-server.log &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done

bin/crm-conformance -base-url "http://127.0.0.1:$port" -token "$token" -var "user_id=$user" -var "mail_account_id=$mail_account" -var "member_token=$member_token" "${samples[@]}" "$@"
