#!/usr/bin/env bash
# Soak benchmark (issue #23): one server, one study, a long run between two short ones.
#   1. FRESH participants on a fresh study (the baseline),
#   2. SOAK more through the same server and study,
#   3. FRESH again: the cost per participant after the study has grown.
# All three at concurrency C with a mean think time of THINK_MS per page; --verify on each.
# Every 5 s a sampler records the WAL and database size (SQLite: the -wal and database files;
# Postgres: pg_ls_waldir() and pg_database_size()). At the end: the assignment's balance
# (completed per situation, max - min) and the ratios last/first of server CPU per participant
# and of p99.
# Usage: bash scripts/bench_soak.sh [sqlite|postgres] [FRESH] [SOAK]
# Environment: C (default 50), THINK_MS (20), BIN (target/release/emotionbench),
#   OUT (a directory to keep the JSON reports, samples and the server's log in; default a
#   temporary one), LOG (the server's log filter, default warn; `warn,emotionbench::wal=info`
#   logs each WAL reset with the time it held the write lock).
set -euo pipefail
cd "$(dirname "$0")/.."
backend="${1:-sqlite}"; fresh="${2:-2000}"; soak="${3:-60000}"
c="${C:-50}"; think="${THINK_MS:-20}"
bin="${BIN:-target/release/emotionbench}"
[ -x "$bin" ] || cargo build --release
pg_admin="${EMOTIONBENCH_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}"
tmp="$(mktemp -d)"
out="${OUT:-$tmp}"; mkdir -p "$out"
db=""
cleanup() {
  [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$db" ] && psql "$pg_admin" -q -c "DROP DATABASE IF EXISTS $db" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$backend" = sqlite ]; then
  file="$tmp/soak.db"; url="sqlite://$file"
else
  db="eb_soak_$$"; psql "$pg_admin" -q -c "CREATE DATABASE $db"; url="${pg_admin%/*}/$db"
fi
DATABASE_URL="$url" "$bin" bench prepare-study --slug soak >/dev/null
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
DATABASE_URL="$url" EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS=0 EMOTIONBENCH_LOG="${LOG:-warn}" "$bin" serve --bind "127.0.0.1:$port" \
  2>"$out/server.log" & pid=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

sample() {
  local t0; t0="$(date +%s)"
  while :; do
    local now wal size; now=$(( $(date +%s) - t0 ))
    if [ "$backend" = sqlite ]; then
      wal="$(stat -c %s "$file-wal" 2>/dev/null || echo 0)"; size="$(stat -c %s "$file")"
    else
      read -r wal size < <(psql "$url" -tAF' ' -c \
        "SELECT (SELECT COALESCE(sum(size), 0) FROM pg_ls_waldir()), pg_database_size(current_database())")
    fi
    echo "$now $wal $size"
    sleep 5
  done
}
sample >"$out/samples.txt" & sampler=$!

phase() {
  local name="$1" n="$2"
  "$bin" bench survey --url "http://127.0.0.1:$port" --study soak --concurrency "$c" \
    --participants "$n" --think-ms "$think" --server-pid "$pid" --verify "$url" --json \
    >"$out/$name.json"
  python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); r = d["report"]; v = d["verify"]; o = r["overall"]
print("%-6s completed/s=%.1f p50=%.1f p99=%.1f server_cpu_ms/participant=%.2f errors=%d verified=%d/%d duplicates=%d" % (
    sys.argv[2], r["completed_per_second"], o["p50_ms"], o["p99_ms"],
    r["server_cpu_ms_per_participant"], r["errors"], v["complete"], v["checked"], v["duplicates"]))
PY
}
echo "soak on $backend: $fresh, then $soak, then $fresh participants; concurrency $c, think ${think} ms"
phase first "$fresh"
phase soak "$soak"
phase last "$fresh"
kill "$sampler"; sampler=""

# Balance: completed participants per situation of the study.
balance_sql="SELECT p.situation_id, COUNT(*) FROM participants p JOIN studies s ON s.id = p.study_id
  WHERE s.slug = 'soak' AND p.status = 'completed' GROUP BY p.situation_id"
if [ "$backend" = sqlite ]; then
  python3 -c "import sqlite3,sys; print('\n'.join('%s %s' % r for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))" \
    "$file" "$balance_sql" >"$out/balance.txt"
else
  psql "$url" -tAF' ' -c "$balance_sql" >"$out/balance.txt"
fi
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rep = {p: json.load(open(os.path.join(out, p + ".json")))["report"] for p in ("first", "soak", "last")}
cpu = lambda p: rep[p]["server_cpu_ms_per_participant"]
p99 = lambda p: rep[p]["overall"]["p99_ms"]
samples = [tuple(map(int, l.split())) for l in open(os.path.join(out, "samples.txt")) if l.strip()]
counts = [int(l.split()[1]) for l in open(os.path.join(out, "balance.txt")) if l.strip()]
mib = 1024 * 1024
print("last/first: server CPU per participant %.2fx (%.2f -> %.2f ms), p99 %.2fx (%.1f -> %.1f ms)" % (
    cpu("last") / cpu("first"), cpu("first"), cpu("last"), p99("last") / p99("first"), p99("first"), p99("last")))
print("WAL: max %.1f MiB over %d samples every 5 s; at the end %.1f MiB; database %.1f MiB" % (
    max(s[1] for s in samples) / mib, len(samples), samples[-1][1] / mib, samples[-1][2] / mib))
print("balance: %d situations, completed per situation %d..%d (max - min = %d), %d in all" % (
    len(counts), min(counts), max(counts), max(counts) - min(counts), sum(counts)))
print("samples (seconds, WAL MiB, database MiB): " + ", ".join(
    "%d:%.0f/%.0f" % (t, w / mib, s / mib) for t, w, s in samples[:: max(1, len(samples) // 12)]))
PY
