#!/usr/bin/env bash
# swarm in CI: refactor the checked-out branch and publish the result as a
# branch (never pushes to the branch under test).
#
# Usage in any CI (GitHub Actions, GitLab CI, ...), after checking out with
# full history and installing swarm and Python:
#     bash hooks/ci.sh [TARGET_DIR]
# Needs a provider key in the environment (GEMINI_API_KEY, OPENAI_API_KEY or
# ANTHROPIC_API_KEY). Writes the summary JSON to swarm-summary.json and the
# experiment log to logs/experiment_data.json (upload both as artifacts).
# Exit code is swarm's: 0 green, 4 gave up, 2 model trouble, 1 bad input.
set -u
target="${1:-.}"
swarm --target_dir "$target" --dry-run --json | tail -n 1 > swarm-summary.json
code=${PIPESTATUS[0]}
cat swarm-summary.json
branch=$(python3 -c 'import json,sys; print(json.load(open("swarm-summary.json")).get("branch",""))' 2>/dev/null)
if [ -n "$branch" ] && git rev-parse --verify -q "$branch" >/dev/null; then
    echo "swarm: result on $branch; push it with: git push origin $branch"
fi
exit "$code"
