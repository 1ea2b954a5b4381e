#!/usr/bin/env bash
# `make chaos`, part 3: slow clients hold no shared resource hostage.
#
# One organization's sensor gets 200,000 readings of ten inputs (about
# 40 MB of CSV). SLOW_READERS (8) clients with one viewer token of that
# organization then ask for its export and read it at 1 KiB/s (curl
# --limit-rate), as slowly as the issue's attack. The service answers each
# either 200, and streams, or 429 when the export caps are reached. While
# they read, another organization's load (SLOW_RATE requests/s for
# SLOW_SECONDS, a third of them writes) is timed. The run fails if:
#
#   - a slow reader gets anything but 200 or 429, or none gets 200, or one
#     that got 200 has finished before the load did (it was not slow);
#   - any request of the other organization is not 2xx (a 429 too), or
#     gets no answer;
#   - the p99 latency of any kind of its requests is over 1 s;
#   - the service logged a fault.
#
# It prints the readers' statuses, the load's table and a summary line.
# The service runs with its defaults (on this 2-core machine: 4 database
# connections, 2 exports open at once, 2 per token); the environment
# passes through, so DB_MAX_CONNS=10 MAX_STREAMS=8 MAX_STREAMS_PER_TOKEN=8
# lets all eight stream at once. Only 127.0.0.1 is contacted. The run is
# bounded (5 min) and drops its database and stops what it started however
# it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

readers=${SLOW_READERS:-8}
rate=${SLOW_RATE:-50}
seconds=${SLOW_SECONDS:-20}
readings=200000
harness_begin chaos-slow 300 "$@"

harness_build
harness_database
service_start
# The other organization: the one whose requests are timed.
harness_fixtures $(((rate + 39) / 40 + 1)) 2

# The slow readers' organization, with a viewer's token of its own.
out=$(DATABASE_URL=$db_url "$bin" admin bootstrap --org slow-readers --email "owner@slow.test")
slow_org=$(json_field org_id <<<"$out")
(umask 077 && json_field token <<<"$out" | sed 's/^/Authorization: Bearer /' >"$work/slow-owner.header")
(umask 077 && DATABASE_URL=$db_url "$bin" admin user add --org-id "$slow_org" --email "viewer@slow.test" --role viewer |
  json_field token | sed 's/^/Authorization: Bearer /' >"$work/slow-viewer.header")
slow_post() {
  curl -sf -m 60 -H @"$work/slow-owner.header" -H 'Content-Type: application/json' --data-binary @- "$base$1"
}
slow_proj=$(slow_post "/api/v1/org/$slow_org/projects" <<<'{"name":"slow"}' | json_field id)
slow_sensor=$(slow_post "/api/v1/org/$slow_org/proj/$slow_proj/sensors" <<<'{"name":"big"}' | json_field id)
[ -n "$slow_sensor" ] || fail "could not create the slow readers' sensor"

say "posting $readings readings of ten inputs to sensor $slow_sensor"
t=${EPOCHREALTIME/./}
for ((first = 0; first < readings; first += 10000)); do
  # A reading a second from 2024-01-01, ten random inputs each.
  awk -v first="$first" 'BEGIN {
    srand(first); printf "["
    for (n = first; n < first + 10000; n++) {
      printf "%s{\"datetime\":\"2024-01-%02dT%02d:%02d:%02dZ\",\"inputs\":{", (n > first ? "," : ""),
        1 + int(n / 86400), int(n % 86400 / 3600), int(n % 3600 / 60), n % 60
      for (i = 1; i <= 10; i++) printf "%s\"%d\":%.15g", (i > 1 ? "," : ""), i, rand() * 1000
      printf "}}"
    }
    printf "]"
  }' | slow_post "/api/v1/org/$slow_org/proj/$slow_proj/readings/$slow_sensor" >/dev/null ||
    fail "could not post readings from $first"
done
say "posted in $(millis_since "$t") ms"

export_url="$base/api/v1/org/$slow_org/proj/$slow_proj/readings/$slow_sensor/export"
for i in $(seq "$readers"); do
  background curl -s -N --limit-rate 1K -m 600 -H @"$work/slow-viewer.header" \
    -D "$work/reader$i.head" -o /dev/null "$export_url"
  reader_pids[i]=$started
done
# An export of a sensor without a blueprint first finds its CSV columns,
# a scan of the whole range: its status comes once that is done.
deadline=$((SECONDS + 60))
for i in $(seq "$readers"); do
  until [ -s "$work/reader$i.head" ] || [ "$SECONDS" -ge "$deadline" ]; do
    nap 0.2
  done
done
rc=0 streaming=0 refused=0
statuses=''
for i in $(seq "$readers"); do
  status=$(head -n 1 "$work/reader$i.head" 2>/dev/null | awk '{ print $2 }')
  statuses+=" ${status:-none}"
  case $status in
  200) streaming=$((streaming + 1)) ;;
  429) refused=$((refused + 1)) ;;
  *)
    say "slow reader $i got ${status:-no answer in 60 s}, want 200 or 429"
    rc=1
    ;;
  esac
done
say "slow readers:$statuses ($streaming streaming at 1 KiB/s, $refused refused with 429)"
[ "$streaming" -gt 0 ] || fail "no slow reader got its export"

say "timing $rate req/s of organization $org for $seconds s"
"$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration "${seconds}s" -workers 64 -write-ratio 0.33 -latest-ratio 0.25 -batch 100 \
  -allow-503=false -timeout 10s >"$work/load.out" || rc=1
cat "$work/load.out"

for i in $(seq "$readers"); do
  if [ "$(head -n 1 "$work/reader$i.head" | awk '{ print $2 }')" = 200 ] && ! kill -0 "${reader_pids[i]}" 2>/dev/null; then
    say "slow reader $i finished before the load did: it was not slow"
    rc=1
  fi
done
if grep -qE '^  (write|read|latest) .* 429=' "$work/load.out"; then
  say "the other organization got 429s"
  rc=1
fi
# p99 is the table's fifth column, in ms.
worst=$(awk '/^  (write|read|latest) / { v = $5; sub(/ms$/, "", v); if (v + 0 > max) max = v + 0 } END { print max + 0 }' "$work/load.out")
if awk -v w="$worst" 'BEGIN { exit !(w > 1000) }'; then
  say "the other organization's p99 was ${worst} ms, over 1 s"
  rc=1
fi
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
echo "chaos-slow: $streaming of $readers slow exports streaming at 1 KiB/s ($refused refused with 429); another organization at $rate req/s: worst p99 ${worst} ms"
[ "$rc" -eq 0 ] || fail "see above"
