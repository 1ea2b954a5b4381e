#!/usr/bin/env bash
# `make chaos-cluster`: faults in the cluster of scripts/cluster.sh (three
# replicas behind HAProxy, a primary and a hot standby) under a mixed load,
# with figures.
#
#   1. kill -9 one replica: HAProxy must take it out of rotation within its
#      check interval (inter 1s, fall 2), and the load must see no failure a
#      retry would not hide: HAProxy retries the requests that were in flight
#      on the killed replica (retry-on empty-response conn-failure) on
#      another one. The replica is then started again and must come back.
#   2. stop the hot standby for a few seconds: nothing reads from it, so the
#      load must not notice.
#   3. restart the primary: while it is away the answers are 503 with
#      Retry-After (from the replicas, or from HAProxy when all of them are
#      out of rotation), and the service must answer 200 again within 5 s
#      of the primary accepting connections.
#
# The load (CHAOS_RATE req/s, half writes of 100 readings) runs throughout;
# any answer but 2xx, 429 or 503, and any transport error, fails the run;
# then the verifier checks that every acknowledged batch is stored whole.
# Only 127.0.0.1 is contacted; the run is bounded (4 min) and stops the
# cluster however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

rate=${CHAOS_RATE:-100}
harness_begin chaos-cluster 240 "$@"

cluster_down() {
  local rc=$?
  "$root/scripts/cluster.sh" stop >/dev/null 2>&1 || true
  (exit "$rc")
  harness_cleanup
}
trap cluster_down EXIT

harness_build
"$root/scripts/cluster.sh" start >"$work/cluster.out"
# shellcheck disable=SC1090
source <("$root/scripts/cluster.sh" env)
db_url=$PRIMARY_URL base=$BASE
harness_fixtures 8 8

# backend_status NAME: HAProxy's view of one replica (UP, DOWN, ...).
backend_status() {
  curl -s -m 1 "$STATS_URL;csv" | awk -F, -v s="$1" '$1 == "replicas" && $2 == s { print $18 }'
}
# wait_status NAME WANT SECONDS: wait until HAProxy says WANT; print the ms.
wait_status() {
  local t0=${EPOCHREALTIME/./} deadline=$((SECONDS + $3))
  until [[ "$(backend_status "$1")" == "$2"* ]]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "HAProxy did not mark $1 $2 within $3 s"
    sleep 0.02
  done
  millis_since "$t0"
}

say "offering $rate req/s (half writes) through HAProxy for 40 s"
background "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration 40s -workers 64 -write-ratio 0.5 -batch 100 -timeout 10s \
  -allow-503=true -require-rate=false -ack-log "$work/load.acks"
lg=$started
nap 5

# 1. kill -9 replica 2.
read -r -a ports <<<"$REPLICA_PORTS"
victim=$(cat "$CLUSTER_DIR/replica2.pid")
kill -KILL "$victim"
down_ms=$(wait_status replica2 DOWN 10)
say "replica 2 killed with SIGKILL; HAProxy took it out of rotation after $down_ms ms (check interval 1 s, 2 failures)"
nap 3
DATABASE_URL=$PRIMARY_URL LISTEN_ADDR=127.0.0.1:${ports[1]} LOG_FORMAT=json \
  setsid "$bin" serve >>"$CLUSTER_DIR/replica2.log" 2>&1 </dev/null &
echo $! >"$CLUSTER_DIR/replica2.pid"
up_ms=$(wait_status replica2 UP 20)
say "replica 2 started again; back in rotation after $up_ms ms"
nap 3

# 2. stop the standby.
pg_bin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V -r | head -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/standby" -m fast -w stop >/dev/null
say "standby stopped"
nap 4
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/standby" -l "$CLUSTER_DIR/standby.log" -w start >/dev/null
say "standby started again"
nap 3

# 3. restart the primary, and time the service's recovery from the moment
# PostgreSQL accepts connections again.
token=$(head -n 1 "$work/all.tokens")
(umask 077 && printf 'Authorization: Bearer %s\n' "$token" >"$work/probe.header")
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/primary" -m fast -w stop >/dev/null
code=$(curl -s -m 5 -o /dev/null -D "$work/outage.headers" -w '%{http_code}' -H @"$work/probe.header" "$base/api/v1/me") || true
retry_after=$(sed -n 's/^[Rr]etry-[Aa]fter: *//p' "$work/outage.headers" | tr -d '\r')
[ "$code" = 503 ] && [ -n "$retry_after" ] || fail "with the primary down the service answered $code (Retry-After '$retry_after'), want 503 with Retry-After"
say "primary stopped: the service answers 503 with Retry-After: $retry_after"
nap 2
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/primary" -l "$CLUSTER_DIR/primary.log" -w start >/dev/null
back=${EPOCHREALTIME/./}
until [ "$(curl -s -m 1 -o /dev/null -w '%{http_code}' -H @"$work/probe.header" "$base/api/v1/me")" = 200 ]; do
  [ "$(millis_since "$back")" -lt 5000 ] || fail "the service did not answer 200 within 5 s of the primary's return"
  sleep 0.02
done
recovery_ms=$(millis_since "$back")
say "primary back; the service answered 200 after $recovery_ms ms"

rc=0
wait "$lg" || rc=$?
[ "$rc" -eq 0 ] || say "the load saw failures it should not have (above)"
"$loadgen" verify -database-url "$db_url" "$work/load.acks" >"$work/verify.out" || rc=1
cat "$work/verify.out"
[ "$rc" -eq 0 ] || fail "see above"
say "OK: kill -9 of a replica out of rotation in $down_ms ms; standby stop unnoticed; primary restart recovered in $recovery_ms ms; $(grep '^batches ' "$work/verify.out")"
