#!/usr/bin/env bash
# `make e2e`: the web console in headless Chromium (Debian's, driven by
# playwright-core) against the real service: bin/readings on a fresh
# database of the private cluster (scripts/devdb.sh), with an organization
# and owner token made by `readings admin bootstrap`. The service and the
# database are removed afterwards, whatever happens; the test itself is
# bounded by E2E_TIMEOUT seconds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
bin="$root/bin/readings"
limit=${E2E_TIMEOUT:-420}
say() { printf 'e2e: %s\n' "$*" >&2; }

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q chromium >&2 || { apt-get update -q >&2 && apt-get install -y -q chromium >&2; }
  else
    say "no Chromium at $chromium: install your system's chromium package, or set CHROMIUM"
    exit 1
  fi
fi
[ -d web/node_modules ] || (cd web && npm ci --no-audit --no-fund)
[ -x "$bin" ] || make -s build  # make e2e builds it first

server_url=$(scripts/devdb.sh start)
db="e2e_$(date +%s)_$$"
db_url="${server_url%/*}/$db?sslmode=disable"
psql_bin=$(ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -1)
psql_bin=${psql_bin:-psql}
psql() { "$psql_bin" -q -v ON_ERROR_STOP=1 "${server_url%/*}/postgres?sslmode=disable" -c "$1" >&2; }

log=$(mktemp)
pid=
cleanup() {
  status=$?
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  psql "DROP DATABASE IF EXISTS $db WITH (FORCE)" || say "could not drop database $db"
  if [ "$status" != 0 ]; then
    say "the service's log:"
    tail -n 40 "$log" >&2
  fi
  rm -f "$log"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

psql "CREATE DATABASE $db"
export DATABASE_URL="$db_url"
"$bin" migrate >"$log" 2>&1
boot=$("$bin" admin bootstrap --org "E2E Monitoring" --email e2e@example.com)
field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([0-9]+)).*/\2\3/" <<<"${2:-$boot}"; }
viewer=$("$bin" admin user add --org-id "$(field org_id)" --email viewer@example.com --role viewer)

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=$((30000 + $$ % 20000))
while port_in_use "$port"; do port=$((port + 1)); done
base="http://127.0.0.1:$port"

# The board of 500 sensors is set up through the API, some 1,050 requests
# of one token: past the default rate limit (50 a second), which the
# console's own use never nears, so this service allows more.
RATE_LIMIT=1000 RATE_BURST=1000 LISTEN_ADDR="127.0.0.1:$port" "$bin" serve >>"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { say "the service exited"; exit 1; }
  sleep 0.2
done
curl -sf "$base/readyz" >/dev/null || { say "the service is not ready"; exit 1; }
say "service on $base, database $db"

mkdir -p test-output/console
# The token goes to the test through the environment: never on a command
# line, where ps would show it.
E2E_BASE="$base" E2E_TOKEN="$(field token)" E2E_VIEWER_TOKEN="$(field token "$viewer")" E2E_ORG="$(field org_id)" CHROMIUM="$chromium" \
  E2E_OUTPUT="$root/test-output" timeout --kill-after=10 "$limit" \
  node --test --test-concurrency=1 --test-reporter=spec web/e2e/
