#!/usr/bin/env bash
# `make examples`: every sh example of README.md and docs/*.md, run as
# written, in order, against a fresh `make run` (its own database on the
# private cluster, a port of its own), with BASE and TOKEN set as make run
# tells a reader to set them. Fails on the first example that fails, and on
# any whose output differs from what it shows (scripts/examples).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
port=${EXAMPLES_PORT:-18090}
log=$(mktemp)
db="examples_$(date +%s)_$$"

server_url=$(scripts/devdb.sh start)
admin_url=${server_url%/*}/postgres?sslmode=disable
psql -q "$admin_url" -c "CREATE DATABASE $db"
cleanup() {
  kill -TERM -- -"$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
  rm -f "$log"
}
DATABASE_URL="${server_url%/*}/$db?sslmode=disable" LISTEN_ADDR="127.0.0.1:$port" setsid make run >"$log" 2>&1 &
pid=$!
trap cleanup EXIT

fail() { echo "examples: $*" >&2; echo "--- make run printed:" >&2; cat "$log" >&2; exit 1; }
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && grep -q 'TOKEN=rdg_' "$log" && break
  kill -0 "$pid" 2>/dev/null || fail "make run exited"
  sleep 0.5
done
token=$(sed -n 's/.*TOKEN=\(rdg_[0-9A-Za-z]*\).*/\1/p' "$log" | head -1)
[ -n "$token" ] || fail "make run printed no token"

go build -o "$root/bin/examples" ./scripts/examples
export BASE="http://127.0.0.1:$port" TOKEN="$token"
cd "$(mktemp -d)" # examples that write files write them here
"$root/bin/examples" "$root/README.md" "$root"/docs/*.md
