#!/usr/bin/env bash
# A/B of two server builds under the survey load: SQLite, one concurrency, fresh database and
# server per run, A and B alternated so machine noise falls on both; the load generator is
# build A for both, so only the server differs. Prints one line per run.
# Usage: bash scripts/bench_ab.sh BINARY_A BINARY_B [pairs] [participants] [concurrency]
# Environment: THINK_MS, RAMP_MS (passed to bench survey; default 0); BACKEND (sqlite, the
# default, or postgres: a fresh database on $EMOTIONBENCH_TEST_PG's server per run).
set -uo pipefail
A="$1"; B="$2"; pairs="${3:-4}"; n="${4:-2500}"; c="${5:-200}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$pairs"); do
  for v in A B; do
    bin="$A"; [ "$v" = B ] && bin="$B"
    db=""
    if [ "${BACKEND:-sqlite}" = postgres ]; then
      admin="${EMOTIONBENCH_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}"
      db="eb_ab_$$_${r}_${v,,}"; psql "$admin" -q -c "CREATE DATABASE $db"; url="${admin%/*}/$db"
    else
      rm -f "$tmp"/b.db*; url="sqlite://$tmp/b.db"
    fi
    # Each build makes its own database: a newer schema is not an older build's to write.
    DATABASE_URL="$url" "$bin" bench prepare-study --slug bench >/dev/null
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    DATABASE_URL="$url" EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS=0 EMOTIONBENCH_LOG=warn "$bin" serve --bind "127.0.0.1:$port" & pid=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    load="$(cut -d' ' -f1 /proc/loadavg)"
    out="$("$A" bench survey --url "http://127.0.0.1:$port" --study bench --concurrency "$c" \
      --participants "$n" --think-ms "${THINK_MS:-0}" --ramp-ms "${RAMP_MS:-0}" --server-pid "$pid" --verify "$url" --json)"
    kill "$pid"; wait "$pid" 2>/dev/null
    [ -z "$db" ] || psql "$admin" -q -c "DROP DATABASE $db WITH (FORCE)"
    echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin); r = d['report']; v = d['verify']; o = r['overall']
print('$v run=$r load=$load completed/s=%.1f p50=%.1f p99=%.1f server_cpu_ms/participant=%.2f loadgen=%.0f%% errors=%d verified=%d/%d duplicates=%d' % (
    r['completed_per_second'], o['p50_ms'], o['p99_ms'], r['server_cpu_ms_per_participant'],
    100 * r['own_cpu_share'], r['errors'], v['complete'], v['checked'], v['duplicates']))"
  done
done
