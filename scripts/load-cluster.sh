#!/usr/bin/env bash
# `make load-cluster`: the same mixed load as `make load`, through HAProxy
# to the cluster of scripts/cluster.sh, offered well above what the machine
# serves (LOAD_RATE, 1500 req/s) for LOAD_SECONDS (20) with 1 replica in
# rotation, then with 3, and the throughput of each: where the limit is.
# Answers other than 2xx and 429 fail the run; requests that could not
# start because every worker was busy are counted, not failed (the point is
# to saturate). Then every acknowledged batch is verified.
#
# Only 127.0.0.1 is contacted; the run is bounded (5 min) and stops the
# cluster however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

seconds=${LOAD_SECONDS:-20}
rate=${LOAD_RATE:-1500}
harness_begin load-cluster $((2 * seconds + 240)) "$@"

harness_cluster
harness_fixtures $((rate / 40 + 1)) 10
read -r -a ports <<<"$REPLICA_PORTS"

say "seeding each sensor with readings"
"$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate 40 -duration 3s -write-ratio 1 -batch 1000 -allow-503=false \
  -ack-log "$work/seed.acks" -tag-start 1 >"$work/seed.out" || { cat "$work/seed.out"; fail "seeding failed"; }

in_rotation() {
  curl -s -m 1 "$STATS_URL;csv" | awk -F, '$1 == "replicas" && $2 ~ /^replica/ && $18 ~ /^UP/' | wc -l
}
wait_rotation() {
  local deadline=$((SECONDS + 30))
  until [ "$(in_rotation)" -eq "$1" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "HAProxy did not come to $1 replicas in rotation"
    sleep 0.1
  done
}

rc=0
tag=1000
for n in 1 3; do
  if [ "$n" = 1 ]; then
    # Not children of this shell: stop_pid cannot wait for them.
    for i in 2 3; do kill -TERM "$(cat "$CLUSTER_DIR/replica$i.pid")"; done
  else
    for i in 2 3; do
      DATABASE_URL=$PRIMARY_URL READ_DATABASE_URL=$STANDBY_URL LISTEN_ADDR=127.0.0.1:${ports[$((i - 1))]} LOG_FORMAT=json \
        setsid "$bin" serve >>"$CLUSTER_DIR/replica$i.log" 2>&1 </dev/null &
      echo $! >"$CLUSTER_DIR/replica$i.pid"
    done
  fi
  wait_rotation "$n"
  say "$n replica(s) in rotation: offering $rate req/s for $seconds s"
  "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
    -rate "$rate" -duration "${seconds}s" -workers 256 -write-ratio 0.5 -latest-ratio 0.25 -batch 100 \
    -allow-503=false -require-rate=false -ack-log "$work/load$n.acks" -tag-start "$tag" | tee "$work/load$n.out" || rc=1
  tag=$((tag + 1000000))
done
"$loadgen" verify -database-url "$db_url" "$work/seed.acks" "$work/load1.acks" "$work/load3.acks" || rc=1
[ "$rc" -eq 0 ] || fail "see above"
for n in 1 3; do
  say "$n replica(s): $(grep -o 'throughput.*' "$work/load$n.out")"
done
