#!/usr/bin/env bash
# `make chaos`, part 1: kill -9 the service mid-ingest, several times, and
# check that no acknowledged batch was lost and no batch was half stored.
#
# Writers post tagged batches (CHAOS_RATE requests/s, 100 readings each) for
# the whole run. CHAOS_KILLS times, at random moments 3 to 7 s apart, the
# service is killed with SIGKILL while requests are in flight, then started
# again after a random pause under a second. Refused and reset connections
# are what a killed service looks like, so the writers accept them; any
# other failure, and any status but 2xx, 429 or 503, fails the run. Then the
# verifier counts every batch's readings in the database:
#
#   batches acknowledged=N lost=N partial=N
#
# lost: answered 200 but not all there; partial: some but not all of a
# batch's readings there, answered or not. The run fails unless both are 0.
#
# Only 127.0.0.1 is contacted. The run is bounded (3 min) and drops its
# database and stops what it started however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

kills=${CHAOS_KILLS:-5}
rate=${CHAOS_RATE:-150}
harness_begin chaos-kill 180 "$@"

harness_build
harness_database
service_start
harness_fixtures $(((rate + 39) / 40 + 1)) 8

say "writing $rate batches/s of 100 readings; $kills kill -9 to come"
background "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration 150s -workers 64 -write-ratio 1 -batch 100 -timeout 10s \
  -allow-503=true -allow-conn-errors=true -require-rate=false -ack-log "$work/load.acks"
lg=$started
start=$SECONDS
nap 3
for k in $(seq "$kills"); do
  nap "$((3 + RANDOM % 4)).$((RANDOM % 10))"
  kill -0 "$lg" 2>/dev/null || fail "the writers stopped before kill $k"
  service_kill9
  down_at=${EPOCHREALTIME/./}
  nap "0.$((RANDOM % 10))"
  service_start
  say "kill $k at +$((SECONDS - start)) s: killed, restarted, ready again after $(millis_since "$down_at") ms"
done
nap 4
kill -TERM "$lg"
rc=0
wait "$lg" || rc=$?
service_stop
[ "$rc" -eq 0 ] || say "the writers saw failures they should not have (above)"
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
"$loadgen" verify -database-url "$db_url" "$work/load.acks" >"$work/verify.out" || rc=1
cat "$work/verify.out"
[ "$rc" -eq 0 ] || fail "see above"
say "OK: $kills kill -9 over $((SECONDS - start)) s; $(grep '^batches ' "$work/verify.out")"
