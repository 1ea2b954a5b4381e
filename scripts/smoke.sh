#!/usr/bin/env bash
# The quickstart, as a new user runs it: `make run`, then the curl commands
# it prints. Fails unless a reading posted with the printed token comes back.
# CI runs it; it stops the service it started, within a minute at most.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
port=${SMOKE_PORT:-18080}
base="http://127.0.0.1:$port"
log=$(mktemp)

LISTEN_ADDR="127.0.0.1:$port" setsid make run >"$log" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT

fail() { echo "smoke: $*" >&2; echo "--- make run printed:" >&2; cat "$log" >&2; exit 1; }

for _ in $(seq 1 120); do
  curl -sf "$base/readyz" >/dev/null 2>&1 && grep -q 'TOKEN=rdg_' "$log" && break
  kill -0 $pid 2>/dev/null || fail "make run exited"
  sleep 0.5
done
curl -sf "$base/readyz" >/dev/null || fail "not ready within 60 s"

token=$(sed -n 's/.*TOKEN=\(rdg_[0-9A-Za-z]*\).*/\1/p' "$log" | head -1)
org=$(sed -n 's|.*/api/v1/org/\([0-9]*\)/proj/\([0-9]*\)/sensors.*|\1|p' "$log" | head -1)
project=$(sed -n 's|.*/api/v1/org/\([0-9]*\)/proj/\([0-9]*\)/sensors.*|\2|p' "$log" | head -1)
[ -n "$token" ] && [ -n "$org" ] && [ -n "$project" ] || fail "no token, organization or project printed"

auth="Authorization: Bearer $token"
sensor=$(curl -sf -H "$auth" -H 'Content-Type: application/json' -d '{"name": "smoke"}' \
  "$base/api/v1/org/$org/proj/$project/sensors" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
[ -n "$sensor" ] || fail "could not create a sensor"
posted=$(curl -sf -H "$auth" -H 'Content-Type: application/json' \
  -d '[{"datetime": "2024-05-01T14:00:00.5+02:00", "inputs": {"1": 2803.5, "2": 11.2}}]' \
  "$base/api/v1/org/$org/proj/$project/readings/$sensor")
[ "$posted" = '"OK"' ] || fail "POST answered $posted"
got=$(curl -sf -H "$auth" "$base/api/v1/org/$org/proj/$project/readings/$sensor")
want="[{\"id\":\"$sensor-1714564800500000\",\"datetime\":\"2024-05-01T12:00:00.500Z\",\"inputs\":{\"1\":2803.5,\"2\":11.2}}]"
[ "$got" = "$want" ] || fail "GET answered $got, want $want"
echo "smoke: make run, then POST and GET with the printed token: OK"
