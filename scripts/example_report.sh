#!/usr/bin/env bash
# Regenerates docs/example-report/report.md and report.html from the upstream EmotionBench files
# (doc.csv, crowd.xlsx, the seven released PANAS results) in a temporary SQLite database, with
# the fixed seed, resamples, time and build label that the test
# report::the_committed_example_report_regenerates_byte_for_byte compares against.
# Usage: bash scripts/example_report.sh [BINARY] [DATA]
#   BINARY: default target/debug/emotionbench; DATA: default ../shared/emotionbench
#   ($EMOTIONBENCH_UPSTREAM_DATA when set). The files hold aggregates only; the data stay out.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/target/debug/emotionbench}"
data="${2:-${EMOTIONBENCH_UPSTREAM_DATA:-$root/../shared/emotionbench}}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export DATABASE_URL="sqlite://$tmp/example.db" EMOTIONBENCH_LOG=warn
unset EMOTIONBENCH_CONFIG
"$bin" import situations "$data/doc.csv" >/dev/null
"$bin" import humans "$data/results/PANAS Test/crowd.xlsx" --study crowd >/dev/null
for m in davinci-003 gpt-3.5-turbo gpt-4 llama2-13b llama2-7b llama3.1-8b mixtral-8x22b; do
  "$bin" import model-results "$data/results/PANAS Test/$m-PANAS-testing.csv" \
    --study crowd --model "$m" --instrument PANAS >/dev/null
done
for f in md html; do
  "$bin" report --study crowd --format "$f" --seed 16 --resamples 1000 \
    --source-date-epoch 1796083200 --build-label example-report \
    > "$root/docs/example-report/report.$f"
done
echo "wrote $root/docs/example-report/report.md and report.html"
