#!/usr/bin/env bash
# `make backup-drill`: a point-in-time restore with pgBackRest, proven.
#
#   1. A private PostgreSQL cluster (TimescaleDB preloaded where it is
#      installed) archiving its WAL to a pgBackRest repository, and the
#      service on it, with an alarm rule on every sensor, under a load of
#      writes that records every batch it sends and every answer (with
#      their times) in an ack log.
#   2. Under that load: a full backup, more writes, an incremental backup,
#      more writes; the target time is taken in the middle of the writes
#      after the incremental, and writes go on past it.
#   3. The cluster is destroyed (kill -9, its directory deleted).
#   4. pgBackRest restores it to the target time into a fresh directory;
#      PostgreSQL replays the archived WAL up to the target and promotes;
#      the service starts on it.
#   5. Checks: every batch answered before the target is there, whole, and
#      none sent after it (loadgen verify -until); /readyz says the storage
#      mode the cluster had; the rollups, once the maintainer has drained
#      its queue, equal what the readings give; each sensor's newest
#      reading and its alarm agree with the readings; the backups' metrics
#      (readings backup-metrics) show both backups.
#
# It prints the backups' sizes and durations and the restore's time, which
# docs/deployment.md reports. Only 127.0.0.1 is contacted; the run is
# bounded (7 min) and deletes what it made however it ends (KEEP_LOGS=1
# keeps the logs, and a failed run keeps them always).
set -euo pipefail
# shellcheck source=scripts/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

rate=${DRILL_RATE:-100}
harness_begin backup-drill 420 "$@"
t_begin=$SECONDS

command -v jq >/dev/null || fail "jq is not installed; install your system's jq package"
command -v pgbackrest >/dev/null || {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail "pgBackRest is not installed; install your system's pgbackrest package"
  say "pgBackRest is not installed; installing Debian's pgbackrest package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q pgbackrest >&2 || { apt-get update -q >&2 && apt-get install -y -q pgbackrest >&2; }
}
bindir=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V -r | head -n 1)")
[ -x "$bindir/pg_ctl" ] || fail "PostgreSQL's server binaries are not installed; run scripts/devdb.sh start once, which installs them"
harness_build

# PostgreSQL and pgBackRest run as the postgres user where we are root, in a
# directory of their own under /var/tmp (see scripts/devdb.sh).
if [ "$(id -u)" = 0 ]; then
  dir=$(mktemp -d /var/tmp/readings-drill.XXXXXX)
  chown postgres: "$dir"
  as_pg() { (cd / && runuser -u postgres -- "$@"); }
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/readings-drill.XXXXXX")
  as_pg() { "$@"; }
fi
pg_pid=''
drill_down() {
  local rc=$?
  trap - EXIT
  [ -z "$svc_pid" ] || service_kill9
  for data in "$dir/pg" "$dir/restored"; do
    [ ! -f "$data/postmaster.pid" ] || as_pg "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
  done
  cp "$dir"/*.log "$dir"/log/*.log "$work"/ 2>/dev/null || true
  rm -rf "$dir"
  (exit "$rc")
  harness_cleanup
}
trap drill_down EXIT

pgport=$((30000 + RANDOM % 20000))
while port_in_use "$pgport"; do pgport=$((pgport + 1)); done
stanza=drill
conf=$dir/pgbackrest.conf
pgbr() { as_pg pgbackrest --config="$conf" --stanza="$stanza" "$@"; }
psql_drill() { as_pg "$bindir/psql" -h "$dir" -p "$pgport" -U postgres -d "${2:-readings}" -v ON_ERROR_STOP=1 -qAtc "$1"; }

# write_pgbackrest_conf DATA: the repository beside the cluster; the
# stanza's data directory is DATA, which the restore changes.
write_pgbackrest_conf() {
  as_pg tee "$conf" >/dev/null <<EOF
[global]
repo1-path=$dir/repo
repo1-retention-full=2
log-path=$dir/log
lock-path=$dir/lock
spool-path=$dir/spool
log-level-console=warn
log-level-file=info
start-fast=y
compress-type=lz4
process-max=2

[$stanza]
pg1-path=$1
pg1-port=$pgport
pg1-socket-path=$dir
pg1-user=postgres
EOF
}

# 1. The cluster, archiving through pgBackRest.
as_pg mkdir -p "$dir/log" "$dir/lock" "$dir/spool" "$dir/repo"
as_pg "$bindir/initdb" -D "$dir/pg" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
mode=postgresql
if ls "$("$bindir/pg_config" --pkglibdir)"/timescaledb-[0-9]*.so >/dev/null 2>&1; then
  mode=timescaledb
fi
as_pg tee -a "$dir/pg/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
port = $pgport
unix_socket_directories = '$dir'
max_connections = 100
shared_buffers = 128MB
wal_level = replica
archive_mode = on
archive_command = 'pgbackrest --config=$conf --stanza=$stanza archive-push %p'
# A segment is archived at least this often under a trickle of writes: the
# most a restore to the latest time loses, if the disk goes with pg_wal.
archive_timeout = 60
EOF
if [ "$mode" = timescaledb ]; then
  as_pg tee -a "$dir/pg/postgresql.conf" >/dev/null <<EOF
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
EOF
fi
write_pgbackrest_conf "$dir/pg"
as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/postgresql.log" -w -t 60 start >/dev/null
psql_drill "CREATE DATABASE readings" postgres
pgbr stanza-create
pgbr check
db_url="postgres://postgres@127.0.0.1:$pgport/readings?sslmode=disable"
say "PostgreSQL ($mode) on 127.0.0.1:$pgport, archiving to the pgBackRest repository in $dir/repo"

service_start
harness_fixtures 8 8
# A gauge with a blueprint, whose output "double" is twice its input, and
# an alarm rule on that output: a writer of its own posts it a random
# level from 0 to 10,000 ten times a second, so that its alarm comes and
# goes and its outputs' rollups are made throughout.
blueprint=$(api_post "/api/v1/org/$org/blueprints" '{"name":"Gauge","inputs":[{"key":"level","name":"Level"}],
  "outputs":[{"key":"double","name":"Double","formula":"level * 2"}]}' | jq -r .id)
gauge=$(api_post "/api/v1/org/$org/proj/$proj/sensors" "{\"name\":\"gauge\",\"blueprint_id\":$blueprint}")
gauge_id=$(jq -r .id <<<"$gauge")
level_id=$(jq -r '.inputs[] | select(.key == "level") | .id' <<<"$gauge")
double_id=$(jq -r '.outputs[] | select(.key == "double") | .id' <<<"$gauge")
[ -n "$gauge_id" ] && [ -n "$level_id" ] && [ -n "$double_id" ] || fail "could not create the gauge: $gauge"
rule='{"target":"double","level":"Alarm","direction":"above","threshold":10000}'
api_post "/api/v1/org/$org/proj/$proj/sensors/$gauge_id/alarm-rules" "$rule" >/dev/null ||
  fail "could not create the gauge's alarm rule: $(curl -s -m 10 -H @"$work/owner.header" -H 'Content-Type: application/json' -d "$rule" "$base/api/v1/org/$org/proj/$proj/sensors/$gauge_id/alarm-rules")"
gauge_writer() {
  while :; do
    curl -s -m 5 -o /dev/null -H @"$work/owner.header" -H 'Content-Type: application/json' \
      -d "[{\"datetime\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)\",\"inputs\":{\"$level_id\":$((RANDOM % 10001))}}]" \
      "$base/api/v1/org/$org/proj/$proj/readings/$gauge_id" || true
    sleep 0.1
  done
}

# 2. The load, with backups taken while it runs.
say "offering $rate req/s (half writes of 100 readings) for the whole drill"
background "$loadgen" load -base "$base" -tokens-file "$work/all.tokens" -org "$org" -proj "$proj" -sensors "$sensors" \
  -rate "$rate" -duration 10m -workers 32 -write-ratio 0.5 -batch 100 -timeout 10s \
  -allow-503=false -require-rate=false -ack-log "$work/drill.acks" >"$work/load.out"
lg=$started
background gauge_writer
writer=$started
nap 8

# backup TYPE: a backup under load, timed; its size is read from the
# repository afterwards.
backup() {
  local t0=${EPOCHREALTIME/./}
  pgbr --type="$1" backup
  printf '%s' "$(millis_since "$t0")" >"$work/$1.ms"
  say "$1 backup taken in $(cat "$work/$1.ms") ms, under load"
}
backup full
nap 8
backup incr
nap 6
# The target: a moment in the middle of the writes, to the millisecond
# (what pgBackRest takes; the ack log and PostgreSQL's commits have
# microseconds), in pgBackRest's form and in RFC 3339 for verify.
at=$(date -u +%Y-%m-%dT%H:%M:%S.%3N)
target="${at/T/ }+00" until="${at}Z"
say "target time $until; the writes go on past it"
nap 6
kill -INT "$lg"
wait "$lg" || fail "the load saw failures: $(tail -n 5 "$work/load.out")"
stop_pid "$writer" || true # wait reports the TERM it stopped with
bg_pids=()
# The WAL past the target is archived before the disk is lost: check
# switches to a new segment and waits for the last one to be archived.
pgbr check
archived=$(psql_drill "SELECT archived_count FROM pg_stat_archiver")
db_size=$(psql_drill "SELECT pg_database_size('readings')")

# The backups' figures, and the metrics an operator's Prometheus reads.
pgbr --output=json info >"$work/info.json"
"$bin" backup-metrics -input "$work/info.json" -output "$work/pgbackrest.prom"
for type in full incr; do
  grep -q "^readings_backup_last_success_timestamp_seconds{stanza=\"$stanza\",type=\"$type\"} " "$work/pgbackrest.prom" ||
    fail "readings backup-metrics shows no successful $type backup: $(cat "$work/pgbackrest.prom")"
done

# 3. The disk is lost.
service_kill9
as_pg "$bindir/pg_ctl" -D "$dir/pg" -m immediate -w stop >/dev/null
rm -rf "$dir/pg"
say "cluster destroyed: PostgreSQL stopped with -m immediate, its data directory deleted"

# 4. Restore to the target into a fresh directory, and serve from it.
t_restore=${EPOCHREALTIME/./}
write_pgbackrest_conf "$dir/restored"
pgbr --type=time --target="$target" --target-action=promote restore
restore_ms=$(millis_since "$t_restore")
as_pg "$bindir/pg_ctl" -D "$dir/restored" -l "$dir/postgresql-restored.log" -w -t 120 start >/dev/null
deadline=$((SECONDS + 120))
until [ "$(psql_drill "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "the restored cluster did not finish recovery within 120 s"
  sleep 0.2
done
recovered_ms=$(millis_since "$t_restore")
service_start
ready_ms=$(millis_since "$t_restore")
say "restored: files in $restore_ms ms, WAL replayed to the target and promoted at $recovered_ms ms, the service ready at $ready_ms ms"

# 5. What the restore holds.
readyz=$(curl -sf -m 5 "$base/readyz") || fail "/readyz did not answer 200 after the restore"
grep -q "\"$mode\"" <<<"$readyz" || fail "/readyz says $readyz, want the storage mode $mode"
"$loadgen" verify -database-url "$db_url" -until "$until" "$work/drill.acks" >"$work/verify.out" ||
  { cat "$work/verify.out"; fail "the restore does not hold what was acknowledged by the target, or holds what came after"; }

# The rollups' queue, restored with the readings it stands for, drains;
# then every hour's rollup is what its readings give.
deadline=$((SECONDS + 60))
until [ "$(curl -s -m 5 "$base/metrics" | awk '/^readings_rollup_queue_hours / { print $2 }')" = 0 ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "the rollups' queue did not drain within 60 s of the restore"
  sleep 0.5
done
# The service answers daily buckets from the hours' rollups (X-Rollups: used);
# with median, which no rollup holds, from the readings alone. Apart from
# the median, the two answers must be the same, inputs and outputs.
range=$(psql_drill "SELECT to_char(date_trunc('day', min(datetime)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
  || ' ' || to_char(date_trunc('day', max(datetime)) AT TIME ZONE 'UTC' + interval '1 day', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM readings")
read -r range_from range_to <<<"$range"
rollup_mismatches=0
for sensor in $(psql_drill "SELECT id FROM sensors WHERE project_id = $proj ORDER BY id"); do
  aggregates="$base/api/v1/org/$org/proj/$proj/readings/$sensor/aggregates?interval=1d&outputs=true&datetime__gte=$range_from&datetime__lt=$range_to"
  used=$(curl -s -m 10 -D - -o "$work/rolled.json" -H @"$work/owner.header" "$aggregates&fn=count,avg,min,max" | tr -d '\r' | awk 'tolower($1) == "x-rollups:" { print $2 }')
  curl -s -m 10 -o "$work/read.json" -H @"$work/owner.header" "$aggregates&fn=count,avg,min,max,median"
  [ "$used" = used ] || fail "sensor $sensor's hours are not all answered from the rollups after the queue drained (X-Rollups: $used): $(head -c 300 "$work/rolled.json")"
  cmp -s <(jq -S . "$work/rolled.json") <(jq -S 'walk(if type == "object" then del(.median) else . end)' "$work/read.json") ||
    rollup_mismatches=$((rollup_mismatches + 1))
done
rollup_hours=$(psql_drill "SELECT count(*) FROM rollup_hours")
[ "$rollup_mismatches" = 0 ] || fail "$rollup_mismatches sensors' rollups differ from their readings"
# Each sensor's newest reading is its readings' newest, and the gauge's
# alarm is raised exactly when its newest reading's double is above the
# threshold.
state_mismatches=$(psql_drill "
SELECT count(*) FROM sensors s
LEFT JOIN sensor_latest sl ON sl.sensor_id = s.id
LEFT JOIN LATERAL (SELECT max(datetime) AS newest FROM readings r WHERE r.sensor_id = s.id) r ON true
WHERE s.project_id = $proj AND sl.datetime IS DISTINCT FROM r.newest")
gauge_alarm=$(psql_drill "SELECT EXISTS (SELECT 1 FROM alarms WHERE sensor_id = $gauge_id AND target_id = $double_id)")
gauge_above=$(psql_drill "SELECT vals[array_position(input_ids, $level_id::bigint)] * 2 > 10000 FROM sensor_latest WHERE sensor_id = $gauge_id")
gauge_events=$(psql_drill "SELECT count(*) FROM alarm_events WHERE sensor_id = $gauge_id")
[ "$gauge_alarm" = "$gauge_above" ] || fail "the gauge's alarm is raised: $gauge_alarm, but its newest reading is above the threshold: $gauge_above"
[ "$state_mismatches" = 0 ] || fail "$state_mismatches sensors' newest readings or alarms disagree with their readings"

# The figures, for docs/deployment.md.
size_of() { # TYPE FIELD: a backup's size, from pgBackRest's info
  jq -r --arg t "$1" "[.[0].backup[] | select(.type == \$t)] | last | .info$2" "$work/info.json"
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
say "database $(mib "$db_size"); $archived WAL segments archived"
say "full backup: $(cat "$work/full.ms") ms, $(mib "$(size_of full .size)") of data, $(mib "$(size_of full .repository.delta)") in the repository"
say "incremental backup: $(cat "$work/incr.ms") ms, $(mib "$(size_of incr .delta)") changed, $(mib "$(size_of incr .repository.delta)") in the repository"
say "the load: $(awk '$1 == "write" || $1 == "read" { printf "%s%s %s (p99 %s)", sep, $2, $1 "s", $5; sep = ", " }' "$work/load.out")"
sed 's/^/  /' "$work/verify.out" >&2
say "rollups: $rollup_hours hours, all equal to their readings (the gauge's outputs too); the gauge: $gauge_events alarm events, its alarm raised=$gauge_alarm as its newest reading says; every sensor's newest reading its readings' newest"
say "OK in $((SECONDS - t_begin)) s: restored to $until in $restore_ms ms (files), $recovered_ms ms (replayed and promoted), $ready_ms ms (service ready); $(tail -n 1 "$work/verify.out")"
