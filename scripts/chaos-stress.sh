#!/usr/bin/env bash
# `make chaos`, part 6: compression and chunk creation never cost a write
# (issue 24). On TimescaleDB, for STRESS_SECONDS (60):
#
#   - STRESS_SENSORS (16) writers, one a sensor of one project, each
#     sending one request after another: new readings whose datetimes
#     cross a day of data every few seconds (a new chunk each day, with
#     CHUNK_INTERVAL=1d), overwrites, new readings between old ones, CSV
#     files that overwrite in order and add readings out of order, and
#     range deletes, the last four into old chunks, compressed or being
#     compressed;
#   - STRESS_READERS (4) readers of hourly aggregates (outputs too) and CSV
#     exports;
#   - an edit of a sensor's constants every 300 ms, which queues its
#     output rollups again;
#   - the rollups' maintainer every second (ROLLUP_INTERVAL=1s);
#   - the compression policy's job, called every 3 s (COMPRESS_AFTER=1d:
#     every chunk the writers touch is old enough);
#
# with DB_MAX_CONNS=32, the issue's pool. The run fails on any answer but
# 2xx to a write or an edit, or but 2xx or 429 to a read (the exports'
# caps); on a failed run of the compression job; on any reading that does
# not read back from the database exactly as the writes acknowledged
# left it; on a deadlock PostgreSQL detected; and on a fault in the
# service's log. The per-token rate limit is off (RATE_LIMIT=0): it is not
# what this run is about.
#
# Only 127.0.0.1 is contacted. The run is bounded and drops its database
# and stops what it started however it ends.
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

seconds=${STRESS_SECONDS:-60}
writers=${STRESS_SENSORS:-16}
readers=${STRESS_READERS:-4}
harness_begin chaos-stress $((seconds + 240)) "$@"

harness_build
harness_database
export CHUNK_INTERVAL=1d COMPRESS_AFTER=1d ROLLUP_INTERVAL=1s RATE_LIMIT=0 DB_MAX_CONNS=${DB_MAX_CONNS:-32}
service_start
hypertable=$(PGCONNECT_TIMEOUT=5 psql "$db_url" -qAtc "SELECT count(*) FROM timescaledb_information.hypertables WHERE hypertable_name = 'readings'" 2>/dev/null || true)
[ "$hypertable" = 1 ] || fail "readings are not a TimescaleDB hypertable on the dev cluster: this run needs TimescaleDB (scripts/devdb.sh)"
harness_fixtures $((writers + readers)) 0
(umask 077 && sed 's/^Authorization: Bearer //' "$work/owner.header" >"$work/owner.tokens")

say "$writers writers, $readers readers, an editor and the compression job every 3 s, for $seconds s"
rc=0
"$loadgen" stress -base "$base" -tokens-file "$work/all.tokens" -admin-token-file "$work/owner.tokens" \
  -org "$org" -proj "$proj" -database-url "$db_url" -sensors "$writers" -readers "$readers" \
  -duration "${seconds}s" -compress-every 3s >"$work/stress.out" || rc=1
cat "$work/stress.out"
service_stop
if service_errors >/dev/null; then
  say "the service logged faults (first 5):"
  service_errors 5 >&2
  rc=1
fi
[ "$rc" -eq 0 ] || fail "see above"
say "OK: $(tail -n 1 "$work/stress.out")"
