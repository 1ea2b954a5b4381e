#!/usr/bin/env bash
# The private PostgreSQL cluster that `make run` and `make test` use when no
# database is given: the machine's PostgreSQL binaries (installed with apt-get
# when missing and running as root, or Homebrew on a Mac), a cluster of its
# own on a free loopback port, kept between runs.
#
#   scripts/devdb.sh start     start it (creating it first) and print its URL
#   scripts/devdb.sh url       print the URL of the running cluster
#   scripts/devdb.sh stop      stop it
#   scripts/devdb.sh restart   restart it (the chaos scripts use this)
#   scripts/devdb.sh destroy   stop it and delete its data
#   scripts/devdb.sh modes     print the storage modes this machine offers
#
# Only the URL goes to stdout; everything else goes to stderr.
#
# DEVDB_STORAGE chooses the cluster: timescaledb (the default where the
# extension is installed) preloads TimescaleDB, so readings become a
# hypertable; postgresql is a cluster of its own without the preload, so
# readings stay a plain table (and, where TimescaleDB is installed, it is
# the "installed but not preloaded" state the migrations must survive).
# `make test` runs the suite once on each.
#
# PostgreSQL refuses to run as root, so as root the cluster runs as the
# postgres user, in a directory that user can reach: a checkout under /root is
# not, so the cluster lives under /var/tmp, keyed by the checkout's path, and
# .data/pg links to it. As any other user it lives in .data/pg itself.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
mkdir -p "$root/.data"

say() { printf 'devdb: %s\n' "$*" >&2; }

timescaledb_installed() {
  local libdir
  libdir=$("$bindir/pg_config" --pkglibdir 2>/dev/null) || return 1
  ls "$libdir"/timescaledb-[0-9]*.so >/dev/null 2>&1
}

# Concurrent test packages all ask for the cluster at once; they take turns.
lock() {
  if command -v flock >/dev/null; then
    exec 9>"$lockfile"
    flock 9
  fi
}

find_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) \
    $(ls -d /opt/homebrew/opt/postgresql@*/bin /usr/local/opt/postgresql@*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
      echo "$dir"
      return
    fi
  done
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  fi
}

install_postgres() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "PostgreSQL is not installed; installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q postgresql >&2; then
      apt-get update -q >&2
      apt-get install -y -q postgresql >&2
    fi
  elif command -v brew >/dev/null; then
    say "PostgreSQL is not installed; installing it with Homebrew"
    brew install postgresql@16 >&2
  else
    say "PostgreSQL server binaries (initdb, pg_ctl) are not installed."
    say "Install your system's postgresql package, or set DATABASE_URL."
    exit 1
  fi
}

bindir=$(find_bindir)
if [ -z "$bindir" ]; then
  install_postgres
  bindir=$(find_bindir)
  [ -n "$bindir" ] || { say "PostgreSQL was installed but initdb cannot be found"; exit 1; }
fi

storage=${DEVDB_STORAGE:-}
if [ -z "$storage" ]; then
  if timescaledb_installed; then storage=timescaledb; else storage=postgresql; fi
fi
case "$storage" in
  timescaledb)
    timescaledb_installed || { say "DEVDB_STORAGE=timescaledb, but TimescaleDB is not installed for $bindir"; exit 1; }
    suffix="" ;;
  postgresql) suffix="-plain" ;;
  *) say "DEVDB_STORAGE=$storage is neither timescaledb nor postgresql"; exit 2 ;;
esac

if [ "$(id -u)" = 0 ]; then
  key=$(printf '%s' "$root" | sha256sum | cut -c1-12)
  cluster="/var/tmp/readings-pg-$key$suffix"
  lockfile="/var/tmp/readings-pg-$key$suffix.lock"
  link="$root/.data/pg$suffix"
  as_postgres() { (cd / && runuser -u postgres -- "$@"); }
else
  cluster="$root/.data/pg$suffix"
  lockfile="$root/.data/pg$suffix.lock"
  link=""
  as_postgres() { "$@"; }
fi
data="$cluster/data"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  local port=$((20000 + $(printf '%s' "$root$suffix" | cksum | cut -d' ' -f1) % 20000))
  while port_in_use "$port"; do
    port=$((port + 1))
  done
  echo "$port"
}

port() { cat "$cluster/port"; }

url() { echo "postgres://postgres@127.0.0.1:$(port)/readings?sslmode=disable"; }

running() { [ -f "$data/PG_VERSION" ] && as_postgres "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; }

init_cluster() {
  say "creating a PostgreSQL cluster in $cluster"
  mkdir -p "$cluster"
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$cluster"
    ln -sfn "$cluster" "$link"
  fi
  as_postgres "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >&2
  free_port >"$cluster/port"
  # Loopback only, a socket directory of its own, and room for the test
  # packages that run in parallel, each with a pool of its own. Shared
  # buffers hold the largest set a bench read touches (13e's 1,000,000
  # readings, 275 MB of heap): at 256 MB its pages came from the kernel's
  # cache or not depending on the phases before, and the same query cost
  # PostgreSQL 0.84 s in one full run and 1.12 s in the next. A deployment
  # sized as usual (a quarter of RAM) holds far more.
  cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$cluster'
max_connections = 300
shared_buffers = 1GB
max_wal_size = 4GB
EOF
}

# Every database with the extension gets a scheduler of its own, a
# background worker, and the test packages create a database per test, many
# at once. Telemetry would try to reach the internet. A cluster made before
# TimescaleDB was installed gets this on its next start.
preload_timescaledb() {
  [ "$storage" = timescaledb ] || return 0
  grep -q "^shared_preload_libraries = 'timescaledb'" "$data/postgresql.conf" && return 0
  say "preloading TimescaleDB in $cluster"
  cat >>"$data/postgresql.conf" <<EOF
shared_preload_libraries = 'timescaledb'
max_worker_processes = 128
timescaledb.max_background_workers = 96
timescaledb.telemetry_level = off
EOF
  ! running || run_pg_ctl -m fast -w restart
}

# glibc gives freed heap back to the kernel as soon as 128 KiB are free at
# its top. A backend frees its COPY buffers after every statement, so under
# many small ingest transactions PostgreSQL spent 30 % of its time in brk()
# and the TLB shootdowns that follow (perf, make bench rows 3 and 1c): with
# the threshold at 32 MiB the service ingested 111,000-125,000 readings/s
# instead of 74,000, while raw COPY and reads did not change. The price: a
# backend may keep up to 32 MiB of freed heap, and glibc no longer adapts
# its mmap threshold. musl and macOS ignore the variable.
run_pg_ctl() {
  as_postgres env MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-33554432}" \
    "$bindir/pg_ctl" -D "$data" -l "$cluster/postgresql.log" -o "-p $(port)" "$@" >&2 9>&-
}

start() {
  lock
  [ -f "$data/PG_VERSION" ] || init_cluster
  preload_timescaledb
  if ! running; then
    if port_in_use "$(port)"; then
      say "port $(port) is taken; moving to another"
      free_port >"$cluster/port"
    fi
    say "starting PostgreSQL on 127.0.0.1:$(port)"
    run_pg_ctl -w -t 60 start
  fi
  if [ -z "$(as_postgres "$bindir/psql" -h 127.0.0.1 -p "$(port)" -U postgres -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'readings'")" ]; then
    as_postgres "$bindir/createdb" -h 127.0.0.1 -p "$(port)" -U postgres readings
  fi
  url
}

case "${1:-start}" in
  start) start ;;
  url) running && url || { say "not running; run scripts/devdb.sh start"; exit 1; } ;;
  stop) lock; ! running || as_postgres "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2 ;;
  restart) lock; run_pg_ctl -m fast -w restart ;;
  destroy)
    lock
    ! running || as_postgres "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2
    rm -rf "$cluster"
    [ -z "$link" ] || rm -f "$link"
    ;;
  modes)
    if timescaledb_installed; then echo "timescaledb postgresql"; else echo postgresql; fi
    ;;
  *) say "usage: $0 start|url|stop|restart|destroy|modes"; exit 2 ;;
esac
