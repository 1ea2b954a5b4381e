#!/usr/bin/env bash
# `make chaos`, part 2: restart PostgreSQL under load, several times, and
# check that the service fails cleanly and recovers fast.
#
# A mixed load (CHAOS_RATE requests/s, half writes of 100 readings) runs
# throughout, with a client timeout of 10 s. CHAOS_RESTARTS times, 6 to 9 s
# apart, `scripts/devdb.sh restart` restarts PostgreSQL (pg_ctl restart -m
# fast). Meanwhile a probe tries, every 50 ms, a fresh connection to
# PostgreSQL, /readyz and a small write. The run fails if:
#
#   - any answer is not 200 or 503 (429 is counted, not failed), or any
#     request gets no answer (a timeout is a hang);
#   - /readyz does not answer 503 during an outage, or 200 after it;
#   - the service does not answer 200 (/readyz and a write) within 5 s of
#     PostgreSQL accepting connections again (measured from the end of the
#     probe's last failed connection, so the figure is never flattering);
#   - an acknowledged batch is not all there, or any batch is half there.
#
# It prints the probe's recovery line and the verifier's line.
#
# The restart is of the whole dev cluster of this checkout: the run's own
# database lives there, but anything else using that cluster at the moment
# (make run, make test in the same checkout) sees the restart too. Other
# checkouts have clusters of their own. Only 127.0.0.1 is contacted. The run
# is bounded (4 min) and drops its database and stops what it started however
# it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

restarts=${CHAOS_RESTARTS:-4}
rate=${CHAOS_RATE:-150}
harness_begin chaos-db 240 "$@"

harness_build
harness_database
service_start
harness_fixtures $(((rate + 39) / 40 + 2)) 8
# The probe has a token of its own, so that the load's tokens' rate limit
# never decides what it sees.
head -n 1 "$work/all.tokens" >"$work/probe.tokens"
tail -n +2 "$work/all.tokens" >"$work/load.tokens"

say "offering $rate req/s; $restarts PostgreSQL restarts to come"
background "$loadgen" load -base "$base" -tokens-file "$work/load.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration 200s -workers 256 -write-ratio 0.5 -batch 100 -timeout 10s \
  -allow-503=true -allow-conn-errors=false -require-rate=false -ack-log "$work/load.acks" >"$work/load.out"
lg=$started
background "$loadgen" probe -base "$base" -tokens-file "$work/probe.tokens" -org "$org" -proj "$proj" -sensors "${sensors%%,*}" \
  -database-url "$db_url" -interval 50ms -timeout 10s -duration 200s -expect-outages "$restarts" -max-recovery 5s \
  -ack-log "$work/probe.acks" >"$work/probe.out"
pr=$started
start=$SECONDS
nap 5
for i in $(seq "$restarts"); do
  t=${EPOCHREALTIME/./}
  "$root/scripts/devdb.sh" restart >>"$work/devdb.log" 2>&1 || fail "scripts/devdb.sh restart failed (see $work/devdb.log)"
  say "restart $i at +$((SECONDS - start)) s: pg_ctl restart took $(millis_since "$t") ms"
  nap "$((6 + RANDOM % 3)).$((RANDOM % 10))"
done
kill -TERM "$lg" "$pr"
rc=0
wait "$lg" || rc=1
wait "$pr" || rc=1
service_stop
cat "$work/load.out" "$work/probe.out"
"$loadgen" verify -database-url "$db_url" "$work/load.acks" "$work/probe.acks" >"$work/verify.out" || rc=1
grep '^verify: ' "$work/verify.out"
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
echo "chaos-db: $restarts PostgreSQL restarts under $rate req/s: $(grep '^recovery ' "$work/probe.out")"
grep '^batches ' "$work/verify.out"
[ "$rc" -eq 0 ] || fail "see above"
