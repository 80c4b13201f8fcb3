#!/usr/bin/env bash
# Survey load benchmark: the release binary serves on SQLite and on Postgres; `bench survey`
# drives participants at concurrency 10, 50 and 200, several runs each, with --verify.
# Usage: bash scripts/bench_survey.sh [participants per run] [runs per setting]
# Prints one line per run; BENCHMARKS.md reports the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000}"
runs="${2:-3}"
bin=target/release/emotionbench
[ -x "$bin" ] || cargo build --release
pg_admin="${EMOTIONBENCH_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}"

run_backend() {
  local backend="$1" url="$2"
  DATABASE_URL="$url" "$bin" bench prepare-study --slug bench >/dev/null
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  DATABASE_URL="$url" EMOTIONBENCH_LOG=warn "$bin" serve --bind "127.0.0.1:$port" &
  local pid=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  for c in 10 50 200; do
    for r in $(seq 1 "$runs"); do
      out="$("$bin" bench survey --url "http://127.0.0.1:$port" --study bench --concurrency "$c" \
        --participants "$n" --server-pid "$pid" --verify "$url" --json)"
      python3 - "$backend" "$c" "$r" <<PY
import json, sys
d = json.loads('''$out''')
rep, ver = d["report"], d["verify"]
o = rep["overall"]
print(f"{sys.argv[1]:<8} c={sys.argv[2]:<4} run={sys.argv[3]} completed/s={rep['completed_per_second']:.1f} "
      f"p50={o['p50_ms']:.1f}ms p95={o['p95_ms']:.1f}ms p99={o['p99_ms']:.1f}ms errors={rep['errors']} "
      f"server_cpu_ms/participant={rep['server_cpu_ms_per_participant']:.2f} loadgen_cpu={100*rep['own_cpu_share']:.0f}% "
      f"verified={ver['complete']}/{ver['checked']} incomplete={len(ver['incomplete'])} duplicates={ver['duplicates']}")
PY
    done
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

tmp="$(mktemp -d)"
run_backend sqlite "sqlite://$tmp/bench.db"
db="eb_bench_$$"
psql "$pg_admin" -q -c "CREATE DATABASE $db"
run_backend postgres "${pg_admin%/*}/$db"
psql "$pg_admin" -q -c "DROP DATABASE $db WITH (FORCE)"
rm -rf "$tmp"
