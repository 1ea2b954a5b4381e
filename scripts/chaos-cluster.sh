#!/usr/bin/env bash
# `make chaos-cluster`: faults in the cluster of scripts/cluster.sh (three
# replicas behind HAProxy, which terminates TLS, a primary and a hot
# standby) under a mixed load over https, with figures.
#
#   1. kill -9 one replica: HAProxy must take it out of rotation within its
#      check interval (inter 1s, fall 2), and the load must see no failure a
#      retry would not hide: HAProxy retries the requests that were in flight
#      on the killed replica (retry-on empty-response conn-failure) on
#      another one. The replica is then started again and must come back.
#   2. stop the hot standby for a few seconds: the reads it served (pages,
#      exports, aggregates, latest values) must fall back to the primary with
#      no failure, and go back to it once it is started again.
#   3. restart the primary: while it is away the answers are 503 with
#      Retry-After (from the replicas, or from HAProxy when all of them are
#      out of rotation), and the service must answer 200 again within 5 s
#      of the primary accepting connections.
#
# A load (CHAOS_RATE req/s, half writes of 100 readings) runs through each
# fault, one load per fault so that its answers are counted apart;
# any answer but 2xx, 429 or 503 (and any 503 while a replica is killed),
# and any transport error, fails the run;
# then the verifier checks that every acknowledged batch is stored whole.
# Only 127.0.0.1 is contacted; the run is bounded (4 min) and stops the
# cluster however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

rate=${CHAOS_RATE:-100}
harness_begin chaos-cluster 240 "$@"

harness_cluster
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

# standby_reads: the reads the replicas served from the standby, so far.
standby_reads() {
  local p sum=0 n
  for p in $REPLICA_PORTS; do
    n=$(curl -s -m 2 "http://127.0.0.1:$p/metrics" | awk '/^readings_standby_reads_total / { printf "%d", $2 }')
    sum=$((sum + ${n:-0}))
  done
  echo "$sum"
}

# metric NAME_AND_LABELS: its value on the first replica's /metrics.
metric() {
  curl -s -m 5 "http://127.0.0.1:${REPLICA_PORTS%% *}/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

# TLS: HAProxy answers https with a certificate that the cluster's CA
# signed for 127.0.0.1, verified by curl and by the load generator, and a
# plain http request to it gets no answer.
[[ $base == https://* ]] || fail "make cluster answers on $base, want https"
curl -sf -m 5 -o /dev/null "$base/readyz" || fail "https through HAProxy, trusting the cluster's CA, failed"
! curl -s -m 5 -o /dev/null "http://${base#https://}/readyz" || fail "HAProxy answered plain http on its TLS port"
say "TLS: $base answers with a certificate of the cluster's CA; plain http is refused"

# The standby streams through its replication slot, and the replicas'
# metrics say so.
[ "$(metric 'readings_replication_slot_active{slot="standby"}')" = 1 ] || fail "the standby's replication slot is not active in the metrics"
[ -n "$(metric 'readings_standby_replay_lag_bytes{standby="standby"}')" ] || fail "the metrics show no replay lag of the standby"

# 0. Read your writes through HAProxy: each write's X-Readings-LSN, sent
# back as X-Readings-Min-LSN, must find the write, whichever replica reads.
sensor1=${sensors%%,*}
stale=0
for i in $(seq 20); do
  at=$(printf '2024-12-31T00:00:%02dZ' "$i")
  lsn=$(curl -s -m 5 -D - -o /dev/null -H @"$work/owner.header" -H 'Content-Type: application/json' \
    -d "[{\"datetime\":\"$at\",\"inputs\":{\"1\":$i}}]" "$base/api/v1/org/$org/proj/$proj/readings/$sensor1" |
    sed -n 's/^x-readings-lsn: *//Ip' | tr -d '\r')
  [ -n "$lsn" ] || fail "a write through HAProxy answered no X-Readings-LSN"
  curl -s -m 5 -H @"$work/owner.header" -H "X-Readings-Min-LSN: $lsn" \
    "$base/api/v1/org/$org/proj/$proj/readings/$sensor1?datetime__gte=$at&limit=1" | grep -q "${at%Z}" || stale=$((stale + 1))
done
[ "$stale" -eq 0 ] || fail "$stale of 20 reads after a write did not see it"
say "read your writes: 20 of 20 reads sent with the write's LSN saw it ($(standby_reads) served by the standby)"

# load_phase NAME SECONDS ALLOW503: the load for one fault, in the
# background ($lg), its report in $work/NAME.out and its batches in
# $work/NAME.acks, so that each fault's failures are counted apart.
tag=1000
load_phase() {
  say "$1: offering $rate req/s (half writes) through HAProxy for $2 s"
  background "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
    -rate "$rate" -duration "$2s" -workers 64 -write-ratio 0.5 -batch 100 -timeout 10s \
    -allow-503="$3" -require-rate=false -ack-log "$work/$1.acks" -tag-start "$tag" >"$work/$1.out"
  lg=$started
  tag=$((tag + 1000000))
}
# end_phase NAME: wait for the phase's load and print its report.
rc=0
end_phase() {
  wait "$lg" || { rc=1; say "$1: the load saw failures it should not have"; }
  grep -v '^loadgen: latency' "$work/$1.out" | sed "s/^/  $1: /"
}

# 1. kill -9 replica 2: not a single 503 is accepted.
load_phase kill 14 false
nap 3
read -r -a ports <<<"$REPLICA_PORTS"
victim=$(cat "$CLUSTER_DIR/replica2.pid")
kill -KILL "$victim"
down_ms=$(wait_status replica2 DOWN 10)
say "replica 2 killed with SIGKILL; HAProxy took it out of rotation after $down_ms ms (check interval 1 s, 2 failures)"
nap 3
DATABASE_URL=$PRIMARY_URL READ_DATABASE_URL=$STANDBY_URL LISTEN_ADDR=127.0.0.1:${ports[1]} LOG_FORMAT=json \
  setsid "$bin" serve >>"$CLUSTER_DIR/replica2.log" 2>&1 </dev/null &
echo $! >"$CLUSTER_DIR/replica2.pid"
up_ms=$(wait_status replica2 UP 20)
say "replica 2 started again; back in rotation after $up_ms ms"
end_phase kill

# 2. stop the standby: a read in flight on it when it stops answers 503.
load_phase standby 12 true
nap 2
pg_bin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V -r | head -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/standby" -m fast -w stop >/dev/null
stopped=$(standby_reads)
nap 2
slot_active=$(metric 'readings_replication_slot_active{slot="standby"}')
[ "$slot_active" = 0 ] || fail "with the standby stopped its slot shows active=$slot_active in the metrics, want 0"
nap 2
during=$(($(standby_reads) - stopped))
as_pg "$pg_bin/pg_ctl" -D "$CLUSTER_DIR/standby" -l "$CLUSTER_DIR/standby.log" -w start >/dev/null
nap 3
after=$(($(standby_reads) - stopped - during))
[ "$during" -eq 0 ] || fail "$during reads went to the standby while it was stopped"
[ "$after" -gt 0 ] || fail "no read went to the standby once it was back"
say "standby stopped for 4 s: $stopped reads served by it until then, 0 while it was down (the primary served them, and its slot showed inactive), $after in the 3 s after its restart"
end_phase standby

# 3. restart the primary, and time the service's recovery from the moment
# PostgreSQL accepts connections again.
load_phase primary 12 true
nap 2
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
end_phase primary

"$loadgen" verify -database-url "$db_url" "$work/kill.acks" "$work/standby.acks" "$work/primary.acks" >"$work/verify.out" || rc=1
cat "$work/verify.out"
[ "$rc" -eq 0 ] || fail "see above"
say "OK: kill -9 of a replica out of rotation in $down_ms ms; standby stop fell back to the primary; primary restart recovered in $recovery_ms ms; $(grep '^batches ' "$work/verify.out")"
