#!/usr/bin/env bash
# `make chaos`, part 4: kill -9 the service between an alarm event's commit
# and its webhook delivery, and check that every event still reaches the
# receiver after the restart, with the same event id.
#
# A receiver on loopback (the service runs with WEBHOOK_ALLOW_PRIVATE=true)
# logs the X-Readings-Event-Id of every POST. Each round posts readings
# that trigger and clear an alarm (two events), one batch each, and kills the service
# with SIGKILL at once: the events are committed, their deliveries sit in
# the outbox (or, claimed a moment before the kill, under their lease,
# -webhook-lease: a minute). After the last restart every event id in
# the database must reach the receiver within 100 s:
#
#   events=N delivered=N duplicates=N
#
# Duplicates are allowed (delivery is at least once); a missing id fails
# the run. Only 127.0.0.1 is contacted; the run is bounded (3 min).
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

rounds=${CHAOS_ROUNDS:-4}
harness_begin chaos-webhook 180 "$@"
export WEBHOOK_ALLOW_PRIVATE=true

harness_build
harness_database
service_start
harness_fixtures 1 0

rport=$((30000 + RANDOM % 20000))
while port_in_use "$rport"; do rport=$((rport + 1)); done
cat >"$work/receiver.py" <<'PY'
import http.server, sys
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(self.headers.get("X-Readings-Event-Id", "") + "\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
background python3 "$work/receiver.py" "$rport" "$work/received"
: >"$work/received"

bp=$(api_post "/api/v1/org/$org/blueprints" '{"name": "gauge", "inputs": [{"key": "x", "name": "X"}], "outputs": []}' | json_field id)
sensor=$(api_post "/api/v1/org/$org/proj/$proj/sensors" "{\"name\": \"gauge\", \"blueprint_id\": $bp}")
sid=$(json_field id <<<"$sensor")
x=$(jq '.inputs[0].id' <<<"$sensor")
api_post "/api/v1/org/$org/proj/$proj/sensors/$sid/alarm-rules" '{"target": "x", "level": "Alert", "direction": "above", "threshold": 0}' >/dev/null ||
  fail "could not create the rule"
api_post "/api/v1/org/$org/proj/$proj/webhooks" "{\"url\": \"http://127.0.0.1:$rport/hook\", \"secret\": \"chaos-secret-0123456789\"}" >/dev/null ||
  fail "could not create the webhook"

minute=0
for r in $(seq "$rounds"); do
  for v in 1 -1; do
    minute=$((minute + 1))
    api_post "/api/v1/org/$org/proj/$proj/readings/$sid" \
      "[{\"datetime\": \"2024-05-01T00:$(printf %02d "$minute"):00Z\", \"inputs\": {\"$x\": $v}}]" >/dev/null || fail "a batch was refused"
  done
  service_kill9
  say "round $r: 2 batches committed, killed at once"
  nap "0.$((RANDOM % 10))"
  service_start
done

events=$(psql "$db_url" -qAtc "SELECT string_agg(id::text, ' ' ORDER BY id) FROM alarm_events")
n=$(wc -w <<<"$events")
deadline=$((SECONDS + 100))
while :; do
  missing=0
  for id in $events; do
    grep -qx "$id" "$work/received" || missing=$((missing + 1))
  done
  [ "$missing" -gt 0 ] && [ "$SECONDS" -lt "$deadline" ] || break
  sleep 0.5
done
service_stop
received=$(grep -c . "$work/received" || true)
unique=$(sort -u "$work/received" | grep -c . || true)
say "events=$n delivered=$((n - missing)) duplicates=$((received - unique))"
[ "$n" -eq $((rounds * 2)) ] || fail "$n events in the database, want $((rounds * 2))"
[ "$missing" -eq 0 ] || fail "$missing events never reached the receiver"
say "OK: $rounds kill -9 between commit and delivery, every event delivered"
