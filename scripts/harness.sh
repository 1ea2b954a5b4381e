# shellcheck shell=bash
# Sourced by load.sh, chaos-kill.sh and chaos-db.sh. It gives a script a
# database of its own on the dev cluster (scripts/devdb.sh), the service on a
# free loopback port, the fixtures a load needs, and a trap that undoes all of
# it on any exit: success, failure, Ctrl-C or the hard timeout.
#
#   harness_begin NAME SECONDS "$@"  re-run the script under a hard timeout; set the traps
#   harness_build                    build bin/readings and bin/loadgen
#   harness_database                 CREATE DATABASE chaos_NAME_<random>; sets $db_url
#   harness_cluster                  make cluster's topology instead (scripts/cluster.sh),
#                                    stopped on exit: sets $db_url, $base and the cluster's env
#   service_start                    start the service on a free port; sets $base, $svc_pid
#   service_kill9 / service_stop     kill -9 it / stop it with SIGTERM
#   harness_fixtures TOKENS SENSORS  an owner, TOKENS editors' tokens in $work/tokens,
#                                    a project and sensors: sets $org, $proj, $sensors
#   background CMD...                start CMD in the background, its pid in $started; stopped on exit
#   nap SECONDS                      sleep, interruptible by the traps
#
# A failed run keeps its logs (the service's JSON log among them) in $work and
# says where; KEEP_LOGS=1 keeps them always.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
bin=$root/bin/readings
# shellcheck disable=SC2034 # used by the scripts that source this file
loadgen=$root/bin/loadgen

say() { printf '%s: %s\n' "$name" "$*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}

harness_begin() {
  name=$1 limit=$2
  shift 2
  # timeout --foreground signals the script only, so the script's own trap
  # stops what it started; --kill-after ends a cleanup that hangs.
  if [ -z "${HARNESS_TIMED:-}" ]; then
    HARNESS_TIMED=1 exec timeout --foreground --kill-after=30 "$limit" "$0" "$@"
  fi
  unset HARNESS_TIMED
  work=$(mktemp -d "${TMPDIR:-/tmp}/readings-$name.XXXXXX")
  svc_pid='' nap_pid='' db='' admin_url='' bg_pids=()
  trap harness_cleanup EXIT
  trap 'say "interrupted"; exit 130' INT
  trap 'say "stopped by SIGTERM: the hard limit of ${limit} s ran out, or someone asked"; exit 143' TERM
}

harness_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  [ -z "$nap_pid" ] || kill "$nap_pid" 2>/dev/null
  local pid
  for pid in "${bg_pids[@]}" $svc_pid; do
    stop_pid "$pid"
  done
  [ -z "$db" ] || drop_database
  if [ "$rc" -ne 0 ] || [ -n "${KEEP_LOGS:-}" ]; then
    say "logs kept in $work"
    rm -f "$work"/*.tokens "$work"/*.header
  else
    rm -rf "$work"
  fi
  exit "$rc"
}

# stop_pid asks a process to stop, and kills it after 10 s.
stop_pid() {
  local pid=$1 i
  if kill -TERM "$pid" 2>/dev/null; then
    for i in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null
  return 0
}

nap() {
  sleep "$1" &
  nap_pid=$!
  wait "$nap_pid"
  nap_pid=''
}

# background CMD... runs CMD in the background and puts its pid in
# $started; the cleanup stops it if it is still running.
background() {
  "$@" &
  started=$!
  bg_pids+=("$started")
}

harness_build() {
  (cd "$root" && go build -o bin/readings . && go build -o bin/loadgen ./scripts/loadgen)
}

harness_cluster() {
  trap harness_cluster_down EXIT
  harness_build
  "$root/scripts/cluster.sh" start >"$work/cluster.out"
  # shellcheck disable=SC1090
  source <("$root/scripts/cluster.sh" env)
  db_url=$PRIMARY_URL base=$BASE
  # HAProxy speaks https with a certificate of the cluster's own CA: curl
  # and the load generator (Go) trust it through these.
  export CURL_CA_BUNDLE=$CA_FILE SSL_CERT_FILE=$CA_FILE
}

harness_cluster_down() {
  local rc=$?
  # The replicas', HAProxy's and PostgreSQL's logs stay with the run's.
  [ -z "${CLUSTER_DIR:-}" ] || cp "$CLUSTER_DIR"/*.log "$work"/ 2>/dev/null || true
  "$root/scripts/cluster.sh" stop >/dev/null 2>&1 || true
  (exit "$rc")
  harness_cleanup
}

psql_admin() {
  PGCONNECT_TIMEOUT=5 timeout 60 psql "$admin_url" -v ON_ERROR_STOP=1 -qAtc "$1"
}

harness_database() {
  local url
  url=$("$root/scripts/devdb.sh" start)
  admin_url=${url/\/readings\?//postgres?}
  db="chaos_${name#chaos-}_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
  psql_admin "CREATE DATABASE $db"
  db_url=${url/\/readings\?//$db?}
  say "database $db on the dev cluster"
}

# drop_database drops the run's database, retrying while PostgreSQL may be
# coming back from a restart.
drop_database() {
  local i
  for i in $(seq 10); do
    psql_admin "DROP DATABASE IF EXISTS $db WITH (FORCE)" 2>/dev/null && return 0
    sleep 1
  done
  say "could not drop database $db; drop it with: psql '$admin_url' -c 'DROP DATABASE $db WITH (FORCE)'"
}

# millis_since T: milliseconds since T, a ${EPOCHREALTIME/./} taken earlier.
millis_since() { echo $(((${EPOCHREALTIME/./} - $1) / 1000)); }

# service_errors prints the service's log lines that show a fault: an error
# that is not an access-log line, or a 5xx answer other than 503 (which is
# the right answer while the database is away). It fails when there are none.
service_errors() {
  awk -v n="${1:-5}" '/"level":"ERROR"/ && !/"msg":"request".*"status":503[,}]/ { print; if (++c >= n) exit }
    END { exit c == 0 }' "$work/service.log"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

service_start() {
  if [ -z "${port:-}" ]; then
    port=$((30000 + RANDOM % 20000))
    while port_in_use "$port"; do
      port=$((port + 1))
    done
    base="http://127.0.0.1:$port"
  fi
  DATABASE_URL=$db_url LISTEN_ADDR=127.0.0.1:$port LOG_FORMAT=json "$bin" serve >>"$work/service.log" 2>&1 &
  svc_pid=$!
  service_wait_ready 30
}

service_wait_ready() {
  local deadline=$((SECONDS + $1))
  until curl -sf -m 1 -o /dev/null "$base/readyz"; do
    if ! kill -0 "$svc_pid" 2>/dev/null; then
      tail -n 20 "$work/service.log" >&2
      fail "the service exited instead of becoming ready"
    fi
    [ "$SECONDS" -lt "$deadline" ] || fail "the service was not ready within $1 s"
    sleep 0.05
  done
}

service_kill9() {
  kill -KILL "$svc_pid"
  wait "$svc_pid" 2>/dev/null || true
  svc_pid=''
}

service_stop() {
  stop_pid "$svc_pid"
  svc_pid=''
}

# json_field KEY prints the value of KEY (a string or a number) in the JSON
# object on stdin: enough for the service's flat answers, without jq.
json_field() {
  sed -nE "s/.*\"$1\":(\"([^\"]*)\"|([0-9]+)).*/\2\3/p" | head -n 1
}

# api_post PATH JSON posts as the owner and prints the answer.
api_post() {
  curl -sf -m 10 -H @"$work/owner.header" -H 'Content-Type: application/json' -d "$2" "$base$1"
}

harness_fixtures() {
  local ntokens=$1 nsensors=$2 out i id
  out=$(DATABASE_URL=$db_url "$bin" admin bootstrap --org "$name" --email "owner@$name.test")
  org=$(json_field org_id <<<"$out")
  # Tokens go to files, not command lines, where ps would show them.
  (umask 077 && json_field token <<<"$out" | sed 's/^/Authorization: Bearer /' >"$work/owner.header")
  (umask 077 && : >"$work/all.tokens")
  for i in $(seq "$ntokens"); do
    DATABASE_URL=$db_url "$bin" admin user add --org-id "$org" --email "writer$i@$name.test" --role editor |
      json_field token >>"$work/all.tokens"
  done
  [ "$(wc -l <"$work/all.tokens")" -eq "$ntokens" ] || fail "could not create $ntokens tokens"
  proj=$(api_post "/api/v1/org/$org/projects" "{\"name\":\"$name\"}" | json_field id)
  [ -n "$proj" ] || fail "could not create a project"
  sensors=''
  for i in $(seq "$nsensors"); do
    id=$(api_post "/api/v1/org/$org/proj/$proj/sensors" "{\"name\":\"sensor-$i\"}" | json_field id)
    [ -n "$id" ] || fail "could not create a sensor"
    sensors+=${sensors:+,}$id
  done
  say "organization $org, project $proj, sensors $sensors, $ntokens editors' tokens"
}
