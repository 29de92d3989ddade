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
# (DIR/<fixture>.json), the way the test fixtures of real replies were recorded.
set -u
here=$(cd "$(dirname "$0")" && pwd)
swarm=${1:-$here/../../target/release/swarm}
[ $# -gt 0 ] && shift
base=${SWARM_BENCH_BASE_URL:-http://127.0.0.1:8088/v1}
if ! curl -sf "${base%/v1}/health" >/dev/null && ! curl -sf "$base/models" >/dev/null; then
  echo "no model server answers at $base: skipped"; exit 0
fi
fixtures=("$@")
[ ${#fixtures[@]} -eq 0 ] && fixtures=($(ls "$here/fixtures"))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total_solved=0; total_req=0; total_tok=0; total_wall=0
printf '%-10s %-7s %8s %13s %7s\n' fixture solved requests prompt_tokens wall_s
for name in "${fixtures[@]}"; do
  repo=$work/$name
  cp -r "$here/fixtures/$name" "$repo"
  git -C "$repo" init -q -b main && git -C "$repo" add -A &&
    git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm start
  record=()
  if [ -n "${SWARM_BENCH_RECORD:-}" ]; then
    mkdir -p "$SWARM_BENCH_RECORD"; record=(--record "$SWARM_BENCH_RECORD/$name.json")
  fi
  start=$(date +%s)
  (cd "$work" && "$swarm" --target-dir "$repo" --provider openai --base-url "$base" \
    --model local --max-iterations "${SWARM_BENCH_ROUNDS:-6}" --log-file "$work/$name.log.json" \
    "${record[@]}" --json >"$work/$name.out" 2>"$work/$name.err")
  code=$?
  wall=$(( $(date +%s) - start ))
  solved=no
  if (cd "$repo" && python3 -m pytest -q -p no:cacheprovider >/dev/null 2>&1); then solved=yes; fi
  read -r req tok < <(python3 - "$work/$name.log.json" <<'PY'
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
  printf '%-10s %-7s %8s %13s %7s  (exit %s)\n' "$name" "$solved" "$req" "$tok" "$wall" "$code"
  [ "$solved" = yes ] && total_solved=$((total_solved + 1))
  total_req=$((total_req + req)); total_tok=$((total_tok + tok)); total_wall=$((total_wall + wall))
done
printf '%-10s %-7s %8s %13s %7s\n' all "$total_solved/${#fixtures[@]}" "$total_req" "$total_tok" "$total_wall"
