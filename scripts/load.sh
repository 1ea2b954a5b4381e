#!/usr/bin/env bash
# `make load`: a fresh service on a database of its own, a mixed read/write
# load held for LOAD_SECONDS (60) at LOAD_RATE requests/s, then the report.
#
# Half the requests are writes of 100 readings to a random sensor; the rest
# read a random sensor, a full page of 1,000 readings three times in four,
# the latest reading otherwise. The rate is one this 2-core machine sustains
# with the load generator running beside the service and PostgreSQL: any
# answer but 2xx or 429, any transport error, or any request that could not
# start on time (the offered rate was not held) fails the run. 429s, the
# per-token rate limit's answer, are counted, not failed; the load uses
# enough tokens (one per 40 req/s) that the limit (50 req/s a token) does not
# throttle it. The verifier then checks that every acknowledged batch is
# stored whole.
#
# Only 127.0.0.1 is contacted. The run is bounded (LOAD_SECONDS + 3 min) and
# drops its database and stops its service however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

seconds=${LOAD_SECONDS:-60}
rate=${LOAD_RATE:-200}
harness_begin load $((seconds + 180)) "$@"

tokens=$(((${rate%.*} + 39) / 40 + 1))
harness_build
harness_database
service_start
harness_fixtures "$tokens" 10

# Every sensor starts with a few thousand readings, so that reads return full
# pages from the first second.
say "seeding each sensor with readings"
"$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate 40 -duration 3s -write-ratio 1 -batch 1000 -allow-503=false \
  -ack-log "$work/seed.acks" -tag-start 1 >"$work/seed.out" || { cat "$work/seed.out"; fail "seeding failed"; }

say "offering $rate req/s for $seconds s"
rc=0
background "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration "${seconds}s" -workers 128 -write-ratio 0.5 -latest-ratio 0.25 -batch 100 \
  -allow-503=false -ack-log "$work/load.acks" -tag-start 1000
lg=$started
wait "$lg" || rc=$?
service_stop
"$loadgen" verify -database-url "$db_url" "$work/seed.acks" "$work/load.acks" || rc=1
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
[ "$rc" -eq 0 ] || fail "see above"
say "OK: $rate req/s held for $seconds s"
