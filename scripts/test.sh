#!/usr/bin/env bash
# `make test`: every Go test against a real PostgreSQL, once per storage
# mode. With TEST_DATABASE_URL the suite runs once, on that server (set
# TEST_STORAGE to the mode it is expected to give). Otherwise it runs on each
# mode the machine offers (scripts/devdb.sh modes): the private cluster with
# TimescaleDB preloaded, where it is installed, and plain PostgreSQL.
# Arguments go to go test; packages named among them (./store, ./...)
# take the place of ./..., so `scripts/test.sh ./store -run TestX` runs
# one package on each mode.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
go=${GO:-go}
pkgs=(./...)
for arg in "$@"; do
  case $arg in ./* | ../*) pkgs=() ;; esac
done

if [ -n "${TEST_DATABASE_URL:-}" ]; then
  exec "$go" test "$@" ${pkgs[@]+"${pkgs[@]}"}
fi
modes=${TEST_STORAGE:-$(scripts/devdb.sh modes)}
for mode in $modes; do
  printf '\n=== go test on storage mode %s\n' "$mode"
  TEST_STORAGE=$mode "$go" test "$@" ${pkgs[@]+"${pkgs[@]}"}
done
