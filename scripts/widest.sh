#!/usr/bin/env bash
# `make widest`: the service's peak memory on the widest data its limits
# allow, under its heaviest reads. A fresh service on a database of its own
# gets full-size POSTs (16 MiB), four at once, of readings with 100 inputs
# each (the most a reading, and a sensor without a blueprint, may have) to
# two sensors, one with a blueprint of 100 inputs and 100 outputs; then,
# restarted, WIDEST_ROUNDS (4) copies at once of every heavy read of both:
# CSV and JSON pages of 1,000 readings, fill=null aggregates at the
# 200,000-value limit, and CSV exports of every reading, as many at once as
# the export caps allow, the rest waiting the 429's Retry-After
# (scripts/widest/main.go); then, restarted again, one CSV file of the
# largest body, of one-input lines: the most readings a file can bring,
# which stream to the database. It prints the service's peak RSS (VmHWM, from
# /proc) for each phase and fails above WIDEST_MAX_RSS_MIB (256), on any
# answer but a whole 200, or on a fault in the service's log.
#
# Only 127.0.0.1 is contacted. The run is bounded (10 min) and drops its
# database and stops its service however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

harness_begin widest 600 "$@"
harness_build
(cd "$root" && go build -o bin/widest ./scripts/widest)
harness_database
# Memory is the measure here, not speed: the reads queue for the database's
# few connections on this small machine, so they may wait past the default
# 20 s for one (a 503) and should instead all be answered, at once.
export DB_TIMEOUT=120s
service_start
harness_fixtures 0 0

# Each phase on a fresh process, so that each peak is that phase's: the
# reads' is not the heap the POSTs left for the runtime to return.
widest() {
  "$root/bin/widest" -base "$base" -header-file "$work/owner.header" -org "$org" -proj "$proj" -pid "$svc_pid" \
    -state "$work/widest.json" -rounds "${WIDEST_ROUNDS:-4}" -max-rss $((${WIDEST_MAX_RSS_MIB:-256} << 20)) "$@"
}
rc=0
widest -phase ingest || rc=1
service_stop
if [ "$rc" -eq 0 ]; then
  service_start
  widest -phase read || rc=1
  service_stop
fi
if [ "$rc" -eq 0 ]; then
  service_start
  widest -phase file || rc=1
  service_stop
fi
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
[ "$rc" -eq 0 ] || fail "see above"
say "OK: the three peaks within ${WIDEST_MAX_RSS_MIB:-256} MiB"
