#!/usr/bin/env bash
# The GitHub Action's run step (action.yml): run swarm with --json, write the
# summary to $GITHUB_STEP_SUMMARY, the outputs to $GITHUB_OUTPUT, and propose
# a delivered result as a pull request (`swarm pull-request`: opened once,
# updated by later runs for the same target and instruction), or push the
# run branch. Usable in any CI that sets those two files (or none: then the
# summary is printed only). Exit code is swarm's (or the pull request's when
# that failed).
#
# Environment: SWARM_ACTION_TARGET (default .), SWARM_ACTION_ARGS (more flags,
# split on spaces), SWARM_ACTION_TASK / SWARM_ACTION_TASK_FILE (an instruction,
# or a file holding one: swarm --task / --task-file, passed whole),
# SWARM_ACTION_PULL_REQUEST (true: open or update the pull request; needs
# GITHUB_TOKEN and GITHUB_REPOSITORY), SWARM_PR_DRAFT, SWARM_PR_LABELS,
# SWARM_PR_BASE (its options), SWARM_ACTION_PUSH (true: also push the run
# branch swarm/<run>/best to origin), SWARM_BIN (default swarm), plus the
# provider variables.
set -u
target="${SWARM_ACTION_TARGET:-.}"
read -r -a extra <<< "${SWARM_ACTION_ARGS:-}"
if [ -n "${SWARM_ACTION_TASK:-}" ]; then
    extra+=(--task "$SWARM_ACTION_TASK")
elif [ -n "${SWARM_ACTION_TASK_FILE:-}" ]; then
    extra+=(--task-file "$SWARM_ACTION_TASK_FILE")
fi
# A CI checkout's branch is the one under test: swarm leaves its result on the
# run branch (--dry-run) for a pull request instead of moving it.
"${SWARM_BIN:-swarm}" --target_dir "$target" --dry-run --json "${extra[@]}" > swarm-stdout.txt
code=$?
tail -n 1 swarm-stdout.txt > swarm-summary.json
rm -f swarm-stdout.txt
python3 - "$code" <<'PY'
import json, os, sys

code = sys.argv[1]
try:
    summary = json.load(open("swarm-summary.json"))
except (OSError, ValueError):
    summary = {"status": "error", "error": "swarm printed no summary (see the step's log)"}
status = summary.get("status", "error")
branch = summary.get("branch", "") or ""
log = summary.get("log_file", "") or ""
report = os.path.join(os.path.dirname(log), "report.html") if log else ""
if report and not os.path.exists(report):
    report = ""
before, after = summary.get("tests_before") or {}, summary.get("tests_after") or {}
lines = [f"## swarm: {status.replace('_', ' ')} (exit {code})", ""]
if "error" in summary:
    lines += [f"**Error:** {summary['error']}", ""]
    lines += [f"- hint: {h}" for h in summary.get("hints", [])]
else:
    score = lambda v: "n/a" if v is None else f"{v:.2f}"
    lines += [
        "| | before | after |",
        "|---|---|---|",
        f"| tests passing | {before.get('passed', 0)}/{before.get('total', 0)} | {after.get('passed', 0)}/{after.get('total', 0)} |",
        f"| pylint | {score(summary.get('pylint_before'))} | {score(summary.get('pylint_after'))} |",
        "",
        f"Attempts: {summary.get('attempts', 0)} committed, {summary.get('accepted', 0)} accepted, "
        f"{summary.get('iterations', 0)} round(s). Run `{summary.get('run_id', '')}`.",
    ]
    tasks = (summary.get("tasks") or {}).get("tasks") or []
    if tasks:
        lines += ["", "| task | status |", "|---|---|"]
        for t in tasks:
            why = f": {t['reason']}" if t.get("reason") else ""
            lines.append(f"| {t.get('number')}. {t.get('title', '')} | {t.get('status', '')}{why} |")
        lines.append("")
    if branch:
        lines.append(f"Result on branch `{branch}`: `git merge --ff-only {branch}`.")
text = "\n".join(lines) + "\n"
print(text)
if os.environ.get("GITHUB_STEP_SUMMARY"):
    with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
        f.write(text)
if os.environ.get("GITHUB_OUTPUT"):
    with open(os.environ["GITHUB_OUTPUT"], "a") as f:
        for key, value in [("status", status), ("exit-code", code), ("branch", branch),
                           ("log", log), ("report", report)]:
            f.write(f"{key}={value}\n")
PY
branch=$(python3 -c 'import json; print(json.load(open("swarm-summary.json")).get("branch") or "")' 2>/dev/null)
if [ "${SWARM_ACTION_PUSH:-false}" = "true" ] && [ -n "$branch" ]; then
    git push --quiet origin "refs/heads/$branch:refs/heads/$branch" || {
        echo "swarm action: could not push $branch (does the job have contents: write?)" >&2
        [ "$code" = 0 ] && code=1
    }
fi
if [ "${SWARM_ACTION_PULL_REQUEST:-false}" = "true" ]; then
    if "${SWARM_BIN:-swarm}" pull-request --json --target-dir "$target" \
        --summary swarm-summary.json > swarm-pull-request.json; then
        python3 - <<'PY'
import json, os

done = json.load(open("swarm-pull-request.json"))
if done.get("action") == "nothing":
    text = f"No pull request: {done.get('reason', '')}\n"
else:
    text = f"Pull request #{done['number']} {done['action']}: {done['url']}\n"
print(text, end="")
if os.environ.get("GITHUB_STEP_SUMMARY"):
    with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
        f.write("\n" + text)
if os.environ.get("GITHUB_OUTPUT"):
    with open(os.environ["GITHUB_OUTPUT"], "a") as f:
        f.write(f"pull-request-number={done.get('number', '')}\n")
        f.write(f"pull-request-url={done.get('url', '')}\n")
PY
    else
        pr_code=$?
        echo "swarm action: the pull request could not be opened (see above)" >&2
        [ "$code" = 0 ] && code=$pr_code
    fi
    rm -f swarm-pull-request.json
fi
exit "$code"
