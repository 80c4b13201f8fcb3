#!/usr/bin/env bash
# Survey load benchmark: the release binary serves on SQLite and on Postgres; `bench survey`
# drives participants at concurrency 10, 50 and 200, several runs each, with --verify.
# Every run gets a fresh database and a fresh server (so runs compare alike); the rounds go
# through all settings in turn, so noise from other work on the machine spreads over them.
# Usage: bash scripts/bench_survey.sh [SQLite participants per run] [Postgres participants per run] [runs]
# Environment: THINK_MS (default 0: no pause on a page), RAMP_MS (default 0: all virtual
# participants start at once), LEVELS (default "10 50 200"), BACKENDS (default "sqlite postgres").
# Prints one line per run (with the load average at its start), then the medians per backend and
# concurrency and, where both backends ran, Postgres's completed/s and server CPU against SQLite's.
set -euo pipefail
cd "$(dirname "$0")/.."
n_sqlite="${1:-2500}"
n_pg="${2:-1000}"
runs="${3:-3}"
think="${THINK_MS:-0}"
ramp="${RAMP_MS:-0}"
levels="${LEVELS:-10 50 200}"
backends="${BACKENDS:-sqlite postgres}"
bin="${BIN:-target/release/emotionbench}"
[ -x "$bin" ] || cargo build --release
pg_admin="${EMOTIONBENCH_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# CPU time (clock ticks, user + system) of every running Postgres process.
pg_cpu_ticks() {
  local t=0 f
  for f in $(pgrep -x postgres 2>/dev/null | sed 's|^|/proc/|; s|$|/stat|'); do
    [ -r "$f" ] && t=$((t + $(awk '{print $14 + $15}' "$f" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

one_run() {
  local backend="$1" c="$2" n="$3" r="$4" url db=""
  if [ "$backend" = sqlite ]; then
    rm -f "$tmp"/bench.db*
    url="sqlite://$tmp/bench.db"
  else
    db="eb_bench_$$_${r}_${c}"
    psql "$pg_admin" -q -c "CREATE DATABASE $db"
    url="${pg_admin%/*}/$db"
  fi
  DATABASE_URL="$url" "$bin" bench prepare-study --slug bench >/dev/null
  [ -z "${PG_SETUP_SQL:-}" ] || [ -z "$db" ] || psql "${pg_admin%/*}/$db" -q -c "$PG_SETUP_SQL"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  DATABASE_URL="$url" EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS=0 EMOTIONBENCH_LOG=warn "$bin" serve --bind "127.0.0.1:$port" &
  local pid=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  local load pg_before pg_after
  load="$(cut -d' ' -f1 /proc/loadavg)"
  pg_before="$(pg_cpu_ticks)"
  out="$("$bin" bench survey --url "http://127.0.0.1:$port" --study bench --concurrency "$c" \
    --participants "$n" --think-ms "$think" --ramp-ms "$ramp" --server-pid "$pid" --verify "$url" --json)"
  pg_after="$(pg_cpu_ticks)"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  [ -z "$db" ] || psql "$pg_admin" -q -c "DROP DATABASE $db WITH (FORCE)"
  python3 - "$backend" "$c" "$r" "$load" "$pg_before" "$pg_after" "$(getconf CLK_TCK)" <<PY
import json, sys
d = json.loads('''$out''')
rep, ver = d["report"], d["verify"]
o = rep["overall"]
# Postgres's own CPU (all its processes), per completed participant: not in the server's.
pg = ""
if sys.argv[1] == "postgres" and rep["completed"]:
    pg = f" pg_cpu_ms/participant={(int(sys.argv[6]) - int(sys.argv[5])) * 1000 / int(sys.argv[7]) / rep['completed']:.2f}"
print(f"{sys.argv[1]:<8} c={sys.argv[2]:<4} think=$think ramp=$ramp run={sys.argv[3]} load={sys.argv[4]} completed/s={rep['completed_per_second']:.1f} "
      f"p50={o['p50_ms']:.1f}ms p95={o['p95_ms']:.1f}ms p99={o['p99_ms']:.1f}ms errors={rep['errors']} "
      f"server_cpu_ms/participant={rep['server_cpu_ms_per_participant']:.2f} loadgen_cpu={100*rep['own_cpu_share']:.0f}% "
      f"verified={ver['complete']}/{ver['checked']} incomplete={len(ver['incomplete'])} duplicates={ver['duplicates']}{pg}")
PY
}

for r in $(seq 1 "$runs"); do
  for c in $levels; do
    for b in $backends; do
      if [ "$b" = sqlite ]; then one_run sqlite "$c" "$n_sqlite" "$r"; else one_run postgres "$c" "$n_pg" "$r"; fi
    done | tee -a "$tmp/lines"
  done
done

# Medians per backend and concurrency, and Postgres against SQLite where both ran: the figures
# BENCHMARKS.md and #19's acceptance quote, computed here so that nobody takes them by hand.
python3 - "$tmp/lines" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    words = line.split()
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if not {"c", "completed/s"} <= fields.keys():
        continue  # not a run's line
    runs.setdefault((words[0], fields["c"]), []).append(fields)
def num(v):
    return float(v.rstrip("ms%"))
def median(rs, key):
    return statistics.median(num(r[key]) for r in rs) if all(key in r for r in rs) else None
summary = {}
for (backend, c), rs in sorted(runs.items(), key=lambda kv: (int(kv[0][1]), kv[0][0])):
    m = {k: median(rs, k) for k in ("completed/s", "p99", "server_cpu_ms/participant", "pg_cpu_ms/participant")}
    bad = sum(int(r["errors"]) + int(r["incomplete"]) + int(r["duplicates"]) for r in rs)
    unverified = sum(1 for r in rs if r["verified"].split("/")[0] != r["verified"].split("/")[1])
    summary[(backend, c)] = m
    pg = "" if m["pg_cpu_ms/participant"] is None else f" pg_cpu_ms/participant={m['pg_cpu_ms/participant']:.2f}"
    print(f"median   {backend:<8} c={c:<4} runs={len(rs)} completed/s={m['completed/s']:.1f} p99={m['p99']:.1f}ms "
          f"server_cpu_ms/participant={m['server_cpu_ms/participant']:.2f}{pg} errors+incomplete+duplicates={bad} runs_not_all_verified={unverified}")
for c in sorted({c for _, c in summary}, key=int):
    s, p = summary.get(("sqlite", c)), summary.get(("postgres", c))
    if s and p:
        print(f"ratio    c={c:<4} postgres/sqlite completed/s={p['completed/s'] / s['completed/s']:.2f}x "
              f"server_cpu={p['server_cpu_ms/participant'] / s['server_cpu_ms/participant']:.2f}x postgres_p99={p['p99']:.1f}ms")
PY
