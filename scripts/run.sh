#!/usr/bin/env bash
# `make run`: serve on 127.0.0.1:8080 against DATABASE_URL, or against the
# private cluster of scripts/devdb.sh when none is given. On an empty
# database it creates a demo organization, owner and project, and it always
# prints a working token and what to try with it: the same token as the
# last start while it still works (kept in .data/, one file per database,
# readable by you only), so a console signed in with it survives a restart.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
bin="$root/bin/readings"

mkdir -p "$root/.data"
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL=$("$root/scripts/devdb.sh" start)
  export DATABASE_URL
  token_file="$root/.data/demo-token" # the checkout's own cluster, whichever port it has today
else
  token_file="$root/.data/demo-token-$(printf '%s' "$DATABASE_URL" | sha256sum | cut -c1-12)"
fi
addr=${LISTEN_ADDR:-127.0.0.1:8080}
base="http://$addr"

"$bin" migrate
if demo=$("$bin" admin demo --token-file "$token_file"); then
  field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([0-9]+|true|false)).*/\2\3/" <<<"$demo"; }
  token=$(field token) org=$(field org_id) project=$(field project_id)
  if [ "$(field created)" = false ] && [ "$(field kept)" = false ]; then
    cat <<MSG

  !! The demo token CHANGED: the one kept in $token_file
  !! no longer worked (revoked, or another database). Export TOKEN again
  !! below, and sign consoles in again with it.
MSG
  fi
  cat <<MSG

  Sensor Readings Service: $base
  API reference: $base/docs    Spec: $base/api/v1/openapi.yaml
  Web console: $base/console/ (sign in with the token below)

  Try it: paste this into another terminal (the demo owner's token; keep it secret),
  then follow the README's walk-through.

    export BASE=$base TOKEN=$token

    curl -s -H "Authorization: Bearer \$TOKEN" \$BASE/api/v1/me
    curl -s -H "Authorization: Bearer \$TOKEN" \$BASE/api/v1/org/$org/proj/$project/sensors

MSG
else
  echo "make run: no demo token (see above); create one with: $bin admin token create --email you@example.com" >&2
fi
exec "$bin" serve
