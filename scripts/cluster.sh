#!/usr/bin/env bash
# `make cluster` and `make cluster-stop`: the deployment of
# docs/deployment.md ("Several replicas") on one machine, loopback only.
#
#   scripts/cluster.sh start   a fresh primary PostgreSQL (TimescaleDB preloaded
#                              where installed), a streaming hot standby made
#                              with pg_basebackup, CLUSTER_REPLICAS (3) replicas
#                              of the service, and HAProxy in front on
#                              CLUSTER_ADDR (127.0.0.1:8090), checking /readyz;
#                              the replicas read from the standby (READ_DATABASE_URL)
#   scripts/cluster.sh stop    stop all of it and delete its data
#   scripts/cluster.sh env     print the shell variables of the running cluster
#
# start always begins from nothing: it stops and deletes what an earlier
# start left. It is bounded (each wait has a limit) and, when it fails,
# stops what it started. The replicas' logs, HAProxy's configuration, the
# certificates and the clusters' data live in one directory, which `env`
# names (CLUSTER_DIR); its CA_FILE is the CA that clients trust (curl
# --cacert, or CURL_CA_BUNDLE and SSL_CERT_FILE as the chaos scripts set).
# HAProxy is Debian's package, installed with apt-get when missing (as root).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
bin=$root/bin/readings
replicas=${CLUSTER_REPLICAS:-3}
addr=${CLUSTER_ADDR:-127.0.0.1:8090}
say() { printf 'cluster: %s\n' "$*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}

# PostgreSQL refuses to run as root: as root its directories belong to the
# postgres user, under /var/tmp where that user can reach them (see
# scripts/devdb.sh).
if [ "$(id -u)" = 0 ]; then
  dir=/var/tmp/readings-cluster-$(printf '%s' "$root" | sha256sum | cut -c1-12)
  as_postgres() { (cd / && runuser -u postgres -- "$@"); }
else
  dir=$root/.data/cluster
  as_postgres() { "$@"; }
fi

find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/pg_basebackup" ] && { echo "$d"; return; }
  done
  command -v pg_basebackup >/dev/null && dirname "$(command -v pg_basebackup)"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# free_port N: the first free port from N up.
free_port() {
  local p=$1
  while port_in_use "$p"; do p=$((p + 1)); done
  echo "$p"
}

pg_stop() {
  [ -f "$1/PG_VERSION" ] || return 0
  as_postgres "$bindir/pg_ctl" -D "$1" -m fast -w -t 30 stop >/dev/null 2>&1 || true
}

stop() {
  local f pid
  for f in "$dir"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -TERM "$pid" 2>/dev/null; then
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
  pg_stop "$dir/standby"
  pg_stop "$dir/primary"
  rm -rf "$dir"
}

ensure_haproxy() {
  command -v haproxy >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "HAProxy is not installed; installing Debian's haproxy package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q haproxy >&2 || { apt-get update -q >&2 && apt-get install -y -q haproxy >&2; }
    # The package starts a system-wide HAProxy; this one runs its own.
    systemctl disable --now haproxy >/dev/null 2>&1 || true
  else
    fail "HAProxy is not installed; install your system's haproxy package"
  fi
}

# make_certificates: a CA of the cluster's own, and HAProxy's certificate
# for 127.0.0.1 and localhost signed by it, valid for a week. Clients trust
# the CA (ca.pem), never a certificate they were shown.
make_certificates() {
  local tls=$dir/tls
  mkdir -p "$tls"
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
      -subj "/CN=readings make cluster CA" -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=127.0.0.1" -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
    printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n' >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 7 \
      -extfile "$tls/server.ext" -out "$tls/server.pem" 2>/dev/null
    # HAProxy takes the certificate and its key in one file.
    cat "$tls/server.pem" "$tls/server.key" >"$tls/haproxy.pem"
  )
  openssl verify -CAfile "$tls/ca.pem" "$tls/server.pem" >/dev/null || fail "the certificate made for HAProxy does not verify"
}

# wait_for SECONDS WHAT CMD...: run CMD until it succeeds, at most SECONDS.
wait_for() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$what was not ready within $limit s"
    sleep 0.1
  done
}

start_replica() {
  local i=$1 port=$2
  DATABASE_URL=$primary_url READ_DATABASE_URL=$standby_url LISTEN_ADDR=127.0.0.1:$port LOG_FORMAT=json \
    setsid "$bin" serve >>"$dir/replica$i.log" 2>&1 </dev/null &
  echo $! >"$dir/replica$i.pid"
}

start() {
  ensure_haproxy
  (cd "$root" && go build -o bin/readings .)
  stop
  mkdir -p "$dir"
  [ "$(id -u)" != 0 ] || chown postgres: "$dir"
  trap 'rc=$?; [ $rc -eq 0 ] || { say "stopping what was started"; stop; }' EXIT

  local pport sport
  pport=$(free_port 25432)
  as_postgres "$bindir/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
  # initdb's pg_hba.conf already lets 127.0.0.1 replicate (trust).
  cat >>"$dir/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pport
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 256MB
max_wal_size = 4GB
wal_level = replica
max_wal_senders = 5
hot_standby = on
max_slot_wal_keep_size = 4GB
EOF
  if ls "$("$bindir/pg_config" --pkglibdir)"/timescaledb-[0-9]*.so >/dev/null 2>&1; then
    cat >>"$dir/primary/postgresql.conf" <<EOF
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
EOF
  fi
  as_postgres "$bindir/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w -t 60 start >/dev/null
  as_postgres "$bindir/createdb" -h 127.0.0.1 -p "$pport" -U postgres readings
  primary_url="postgres://postgres@127.0.0.1:$pport/readings?sslmode=disable"
  say "primary PostgreSQL on 127.0.0.1:$pport"

  sport=$(free_port $((pport + 1)))
  # -R writes standby.signal and primary_conninfo: the copy starts as a hot
  # standby streaming from the primary.
  # -C -S: a replication slot, so that the primary keeps the WAL the
  # standby has not received (up to max_slot_wal_keep_size) while it is
  # away, and it catches up instead of being rebuilt.
  as_postgres "$bindir/pg_basebackup" -h 127.0.0.1 -p "$pport" -U postgres -D "$dir/standby" -R -X stream -c fast -C -S standby
  as_postgres sed -i "s/^port = .*/port = $sport/" "$dir/standby/postgresql.conf"
  # Feedback keeps the primary's vacuum from removing rows a standby query
  # still reads, so that replay need not cancel it.
  # Its name in pg_stat_replication, and so in the metrics' standby label.
  printf "hot_standby_feedback = on\ncluster_name = 'standby'\n" | as_postgres tee -a "$dir/standby/postgresql.conf" >/dev/null
  as_postgres "$bindir/pg_ctl" -D "$dir/standby" -l "$dir/standby.log" -w -t 60 start >/dev/null
  standby_url="postgres://postgres@127.0.0.1:$sport/readings?sslmode=disable"
  say "hot standby on 127.0.0.1:$sport, streaming from the primary"

  # Every replica migrates at start; goose's lock makes them take turns.
  local i port servers='' ports=()
  port=$(free_port 28081)
  for i in $(seq "$replicas"); do
    port=$(free_port "$port")
    ports+=("$port")
    start_replica "$i" "$port"
    servers+="    server replica$i 127.0.0.1:$port check"$'\n'
    port=$((port + 1))
  done
  for i in $(seq "$replicas"); do
    wait_for 60 "replica $i" curl -sf -m 1 "http://127.0.0.1:${ports[$((i - 1))]}/readyz"
  done
  say "$replicas replicas of the service on ports ${ports[*]}"

  local stats_port
  stats_port=$(free_port 28404)
  make_certificates
  write_haproxy_cfg "$servers" "$stats_port"
  haproxy -c -q -f "$dir/haproxy.cfg"
  # In the foreground of its own session, so that its log (requests that
  # failed, servers going up and down) goes to a file.
  setsid haproxy -db -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 </dev/null &
  echo $! >"$dir/haproxy.pid"
  wait_for 30 "HAProxy" curl -sf -m 1 --cacert "$dir/tls/ca.pem" "https://$addr/readyz"
  say "HAProxy on https://$addr, TLS with a certificate of the cluster's CA, $dir/tls/ca.pem (statistics: http://127.0.0.1:$stats_port/stats)"

  cat >"$dir/cluster.env" <<EOF
CLUSTER_DIR=$dir
BASE=https://$addr
CA_FILE=$dir/tls/ca.pem
PRIMARY_URL='$primary_url'
STANDBY_URL='$standby_url'
REPLICA_PORTS='${ports[*]}'
STATS_URL=http://127.0.0.1:$stats_port/stats
EOF
  local demo token
  demo=$(DATABASE_URL=$primary_url "$bin" admin demo)
  token=$(sed -E 's/.*"token":"([^"]*)".*/\1/' <<<"$demo")
  cat <<MSG

  The cluster answers on https://$addr ($replicas replicas behind HAProxy),
  with a certificate of a CA made for it. Paste into another terminal:

    export BASE=https://$addr TOKEN=$token CURL_CA_BUNDLE=$dir/tls/ca.pem

  Stop it with: make cluster-stop

MSG
}

# write_haproxy_cfg SERVERS STATS_PORT
write_haproxy_cfg() {
  cat >"$dir/haproxy.cfg" <<EOF
# Written by scripts/cluster.sh; docs/deployment.md explains each choice.
global
    maxconn 4096
    log stdout format raw local0
    ssl-default-bind-options ssl-min-ver TLSv1.2

defaults
    mode http
    log global
    option httplog
    # Only what went wrong: errors, retries, redispatches, aborts.
    option dontlog-normal
    timeout connect 2s
    timeout client 2m
    timeout server 2m
    timeout http-request 10s
    # A replica that dies mid-request answers nothing: HAProxy sends the
    # request again to another one. Safe here: a batch of readings is
    # idempotent (a reading at a stored instant replaces it).
    retries 3
    option redispatch
    retry-on conn-failure empty-response response-timeout
    # While no replica is ready (the primary restarting), HAProxy answers
    # like the service would: 503, JSON, Retry-After.
    http-error status 503 content-type application/json hdr Retry-After 1 string '{"code":"unavailable","message":"no replica of the service is ready; retry later"}'

# TLS ends here; HAProxy reaches the replicas over plain HTTP on loopback
# (docs/deployment.md says where TLS belongs in each deployment).
frontend api
    bind $addr ssl crt $dir/tls/haproxy.pem alpn h2,http/1.1
    default_backend replicas

backend replicas
    # A token always reaches the same replica while it is up, so its rate
    # limit, kept in the replica's memory, is the limit across replicas.
    balance hdr(Authorization)
    hash-type consistent
    option httpchk GET /readyz
    http-check expect status 200
    # A killed replica refuses the check at once, so it leaves rotation
    # within 2 s; a busy one may take a while to answer, and must not.
    timeout check 5s
    default-server inter 1s fall 2 rise 2 maxconn 64
    # Past maxconn a request waits in HAProxy's queue, not in the replica.
    timeout queue 30s
$1
frontend stats
    bind 127.0.0.1:$2
    stats enable
    stats uri /stats
EOF
}

bindir=$(find_bindir)
[ -n "$bindir" ] || fail "PostgreSQL's server binaries are not installed; run scripts/devdb.sh start once, which installs them"

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  env) [ -f "$dir/cluster.env" ] && cat "$dir/cluster.env" || fail "no cluster is running; make cluster" ;;
  *) say "usage: $0 start|stop|env"; exit 2 ;;
esac
