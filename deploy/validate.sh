#!/usr/bin/env bash
# Validates what can be validated without a container engine:
#   nginx -t on deploy/nginx.conf, systemd-analyze verify on the units, compose config.
# Usage: bash deploy/validate.sh [path/to/emotionbench binary]
# Needs: nginx (nginx-light), openssl, systemd-analyze, docker-compose (or docker compose).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../target/release/emotionbench}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== nginx -t"
# The upstream names exist inside the compose network only; point them at loopback and use a
# throwaway certificate so nginx can check everything else.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -keyout "$tmp/privkey.pem" -out "$tmp/fullchain.pem" 2>/dev/null
sed -e "s#serve-1:8080#127.0.0.1:18081#; s#serve-2:8080#127.0.0.1:18082#" \
    -e "s#/etc/nginx/certs/#$tmp/#g" "$here/nginx.conf" > "$tmp/nginx.conf"
nginx -t -q -c "$tmp/nginx.conf" -g "pid $tmp/nginx.pid; error_log $tmp/error.log;"
echo "nginx.conf: ok"

echo "== nginx.conf: HSTS in every location that adds headers"
# A location with an add_header of its own inherits none of the server's (the /assets/ block
# once served without HSTS): each such location must repeat Strict-Transport-Security.
awk '
  /^[[:space:]]*location[[:space:]]/ { inloc = 1; name = $2; adds = 0; hsts = 0; depth = 0 }
  inloc {
    if ($0 ~ /add_header/) adds = 1
    if ($0 ~ /add_header[[:space:]]+Strict-Transport-Security/) hsts = 1
    n = gsub(/{/, "{"); m = gsub(/}/, "}"); depth += n - m
    if (depth == 0 && (n > 0 || m > 0)) {
      if (adds && !hsts) { print "location " name ": add_header without Strict-Transport-Security"; bad = 1 }
      inloc = 0
    }
  }
  END { exit bad }
' "$here/nginx.conf"
echo "HSTS: ok"

echo "== systemd-analyze verify"
for unit in emotionbench-serve.service emotionbench-worker.service; do
  sed -e "s#/usr/local/bin/emotionbench#$(realpath "$bin")#" \
      -e "/^User=/d; /^Group=/d; /^EnvironmentFile=/d" "$here/$unit" > "$tmp/$unit"
  systemd-analyze verify "$tmp/$unit"
  echo "$unit: ok"
done

echo "== compose config"
export POSTGRES_PASSWORD=validate
if docker compose version >/dev/null 2>&1; then
  docker compose -f "$here/compose.yaml" config --quiet
else
  docker-compose -f "$here/compose.yaml" config --quiet
fi
services="$( (docker compose -f "$here/compose.yaml" config --services 2>/dev/null || docker-compose -f "$here/compose.yaml" config --services) | sort | tr '\n' ' ')"
echo "compose services: $services"
[ "$services" = "migrate nginx postgres serve-1 serve-2 worker " ] || { echo "unexpected services"; exit 1; }
echo "compose.yaml: ok"
