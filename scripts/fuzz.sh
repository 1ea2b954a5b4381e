#!/usr/bin/env bash
# `make fuzz`: runs every fuzz target of the module for FUZZTIME each
# (default 30s). `make test` runs their seed corpora as ordinary tests; this
# looks for new inputs. A failure leaves the input under testdata/fuzz/,
# where it becomes part of the seed corpus once committed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${FUZZTIME:-30s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $target for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
