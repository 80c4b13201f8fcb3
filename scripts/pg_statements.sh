#!/usr/bin/env bash
# What one participant costs Postgres in statements (issue #19: profile first): a fresh
# database logs every statement (`log_min_duration_statement = 0`, set for that database only,
# so nothing else on the server is logged), N participants walk the survey at concurrency C,
# and the statements of that database in the server's log are counted per participant, with
# literals and parameters folded. Needs to read the Postgres log (LOG, default Debian's).
# Usage: bash scripts/pg_statements.sh [N] [C]; BIN (default target/release/emotionbench).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-100}"; c="${2:-10}"
bin="${BIN:-target/release/emotionbench}"
log="${LOG:-/var/log/postgresql/postgresql-$(ls /etc/postgresql)-main.log}"
[ -x "$bin" ] || cargo build --release
admin="${EMOTIONBENCH_TEST_PG:-postgres://postgres@127.0.0.1:5432/test}"
db="eb_statements_$$"; url="${admin%/*}/$db"
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  psql "$admin" -q -c "DROP DATABASE IF EXISTS $db" 2>/dev/null
}
trap cleanup EXIT
psql "$admin" -q -c "CREATE DATABASE $db" -c "ALTER DATABASE $db SET log_min_duration_statement = 0"
DATABASE_URL="$url" "$bin" bench prepare-study --slug statements >/dev/null
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
DATABASE_URL="$url" EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS=0 "$bin" serve --bind "127.0.0.1:$port" 2>/dev/null & pid=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
from="$(($(wc -l <"$log") + 1))"
"$bin" bench survey --url "http://127.0.0.1:$port" --study statements --concurrency "$c" \
  --participants "$n" --think-ms 20 >/dev/null
sleep 1
tail -n "+$from" "$log" | grep "@$db " | grep -oE '(statement|execute [^:]*): .*' \
  | sed -E 's/^execute [^:]*: /execute: /; s/\$[0-9]+/?/g; s/[0-9]+/N/g' | cut -c1-110 \
  | sort | uniq -c | sort -rn \
  | awk -v n="$n" '{c=$1; $1=""; t+=c; printf "%6.2f %s\n", c/n, $0} END {printf "%6.2f statements per participant\n", t/n}'
