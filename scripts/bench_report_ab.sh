#!/usr/bin/env bash
# Side by side of two builds' `bench report`: alternated pairs with the report's 1,000 resamples,
# then both without resamples, each line with the load average at its start (the machine is
# shared: read the ratios). Usage: bash scripts/bench_report_ab.sh OLD_BINARY NEW_BINARY [pairs]
set -uo pipefail
old="$1"; new="$2"; pairs="${3:-2}"
run() { # label binary args...
  local label="$1" bin="$2"; shift 2
  echo "== $label load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin" bench report --runs 5 "$@" 2>&1 | grep -v '^generated'
}
for r in $(seq 1 "$pairs"); do
  run "old pair $r" "$old"; run "new pair $r" "$new"
done
run "old resamples 0" "$old" --resamples 0; run "new resamples 0" "$new" --resamples 0
