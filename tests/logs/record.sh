#!/usr/bin/env bash
# Writes tests/logs/experiment_data.json with a release build of swarm, and
# the report each run's log entries give (tests/logs/reports/<run>.json, the
# data the report page embeds), so that a test can read a log written by that
# release through the current code.
#
#   cargo build --release && tests/logs/record.sh target/release/swarm
#
# Three runs in one log: `swarm demo` on single_module (delivered) and on
# no_tests (delivered, with generated tests, import checks and behaviour
# checks), then single_module again with the replies in gave_up_replies.json
# (a proposal that edits the tests, one that makes things worse, one that
# proposes nothing) for three rounds: it gives up.
#
# Everything runs in a scratch folder with its own HOME; then the paths of
# that folder and of the Python interpreter are replaced by neutral ones
# (/home/user/..., /usr/bin/python3), and the script fails if anything of
# the machine is left.
set -euo pipefail

swarm=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/cwd" "$work/tmp"
export HOME="$work/home" TMPDIR="$work/tmp" GIT_CONFIG_NOSYSTEM=1
for name in $(env | grep -o '^SWARM_[A-Z_]*' || true); do unset "$name"; done
unset OPENAI_API_KEY GEMINI_API_KEY GOOGLE_API_KEY ANTHROPIC_API_KEY VIRTUAL_ENV || true

cd "$work/cwd"
"$swarm" demo --fixture single_module --json >/dev/null
"$swarm" demo --fixture no_tests --json >/dev/null

project="$work/projects/stats"
mkdir -p "$project"
cp -r "$here/../../fixtures/single_module/project/." "$project"
git -C "$project" init --quiet --initial-branch=main
git -C "$project" add -A
git -C "$project" -c user.name='Repo User' -c user.email=repo@example.com \
    commit --quiet -m "import the project"
code=0
"$swarm" --provider replay --cassette "$here/gave_up_replies.json" \
    --target-dir "$project" --max-iterations 3 --json >/dev/null || code=$?
[ "$code" = 4 ] || { echo "the third run should give up (exit 4), not exit $code" >&2; exit 1; }

python=$(python3 -c 'import sys; print(sys.executable)')
sed -e "s|$python|/usr/bin/python3|g" \
    -e "s|$work/home|/home/user|g" \
    -e "s|$work/tmp|/home/user/tmp|g" \
    -e "s|$work/projects|/home/user/projects|g" \
    logs/experiment_data.json >"$here/experiment_data.json"
if grep -n -e "$work" -e "$(dirname "$python")" -e '"/tmp/' -e ' /tmp/' -e '/root/' \
    "$here/experiment_data.json"; then
    echo "a path of this machine is left in the log (above)" >&2
    exit 1
fi

# The report of each run, as this release builds it from the neutral log.
mkdir -p "$here/reports" "$work/report"
cp "$here/experiment_data.json" "$work/report/"
python3 - "$here/experiment_data.json" <<'PY' >"$work/runs"
import json, sys
for entry in json.load(open(sys.argv[1])):
    if entry["details"].get("kind") == "run_start":
        print(entry["details"]["run_id"])
PY
while read -r run; do
    "$swarm" report "$run" --log-file "$work/report/experiment_data.json" >/dev/null
    python3 - "$work/report/report-$run.html" <<'PY' >"$here/reports/$run.json"
import json, re, sys
page = open(sys.argv[1]).read()
data = re.search(r'<script type="application/json" id="swarm-data">(.*?)</script>', page, re.S)
print(json.dumps(json.loads(data.group(1)), indent=1, sort_keys=True))
PY
done <"$work/runs"
