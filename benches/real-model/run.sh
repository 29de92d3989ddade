#!/usr/bin/env bash
# Runs swarm against a real local model on the bundled small fixtures and prints,
# per fixture and in all: solved, requests, prompt tokens, wall seconds.
#
#   benches/real-model/run.sh [SWARM_BINARY] [FIXTURE...]
#
# The model server must answer at $SWARM_BENCH_BASE_URL (default
# http://127.0.0.1:8088/v1, OpenAI-compatible; see docs/performance.md for how
# to serve one); without one the script says so and exits 0 — it is never part
# of .ci/run. SWARM_BENCH_RECORD=DIR keeps each run's cassette there
# (DIR/<fixture>.json), the way the test fixtures of real replies were recorded,
# with the run's log, its --json summary and its stderr beside it
# (DIR/<fixture>.log.json, .out, .err). SWARM_BENCH_RUNS=N runs each fixture N
# times (rows <fixture>-1 … -N): the model samples, so one run is one draw.
set -u
here=$(cd "$(dirname "$0")" && pwd)
swarm=${1:-$here/../../target/release/swarm}
[ $# -gt 0 ] && shift
# The runs happen in a scratch folder: a relative binary is found from here.
case $swarm in */*) swarm=$(cd "$(dirname "$swarm")" && pwd)/$(basename "$swarm") ;; esac
# "Solved" is the checkout's own pytest run afterwards, with a Python that
# has pytest ($SWARM_BENCH_PYTHON, else the first of python3 that does).
python=${SWARM_BENCH_PYTHON:-python3}
if ! "$python" -c 'import pytest' 2>/dev/null; then
  echo "$python has no pytest: set SWARM_BENCH_PYTHON to a Python that has it"; exit 2
fi
base=${SWARM_BENCH_BASE_URL:-http://127.0.0.1:8088/v1}
if ! curl -sf "${base%/v1}/health" >/dev/null && ! curl -sf "$base/models" >/dev/null; then
  echo "no model server answers at $base: skipped"; exit 0
fi
fixtures=("$@")
[ ${#fixtures[@]} -eq 0 ] && fixtures=($(ls "$here/fixtures"))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=${SWARM_BENCH_RUNS:-1}
total_solved=0; total_runs=0; total_req=0; total_tok=0; total_wall=0
printf '%-10s %-7s %8s %13s %7s\n' fixture solved requests prompt_tokens wall_s
for name in "${fixtures[@]}"; do
 for run in $(seq 1 "$runs"); do
  label=$name; [ "$runs" -gt 1 ] && label=$name-$run
  repo=$work/$label
  cp -r "$here/fixtures/$name" "$repo"
  git -C "$repo" init -q -b main && git -C "$repo" add -A &&
    git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm start
  record=()
  if [ -n "${SWARM_BENCH_RECORD:-}" ]; then
    mkdir -p "$SWARM_BENCH_RECORD"; record=(--record "$SWARM_BENCH_RECORD/$label.json")
  fi
  start=$(date +%s)
  (cd "$work" && "$swarm" --target-dir "$repo" --provider openai --base-url "$base" \
    --model local --max-iterations "${SWARM_BENCH_ROUNDS:-6}" --log-file "$work/$label.log.json" \
    "${record[@]}" --json >"$work/$label.out" 2>"$work/$label.err")
  code=$?
  wall=$(( $(date +%s) - start ))
  solved=no
  if (cd "$repo" && "$python" -m pytest -q -p no:cacheprovider >/dev/null 2>&1); then solved=yes; fi
  read -r req tok < <(python3 - "$work/$label.log.json" <<'PY'
import json, sys
try:
    entries = json.load(open(sys.argv[1]))
except Exception:
    entries = []
req = 0; tok = 0
for e in entries:
    d = e.get("details", {})
    if d.get("kind") == "llm_call" and e.get("status") == "SUCCESS":
        req += 1; tok += int(d.get("input_tokens") or 0)
print(req, tok)
PY
)
  if [ -n "${SWARM_BENCH_RECORD:-}" ]; then
    cp "$work/$label.log.json" "$work/$label.out" "$work/$label.err" "$SWARM_BENCH_RECORD/" 2>/dev/null
  fi
  printf '%-10s %-7s %8s %13s %7s  (exit %s)\n' "$label" "$solved" "$req" "$tok" "$wall" "$code"
  [ "$solved" = yes ] && total_solved=$((total_solved + 1))
  total_runs=$((total_runs + 1))
  total_req=$((total_req + req)); total_tok=$((total_tok + tok)); total_wall=$((total_wall + wall))
 done
done
printf '%-10s %-7s %8s %13s %7s\n' all "$total_solved/$total_runs" "$total_req" "$total_tok" "$total_wall"
