//! `swarm pull-request`: proposes a delivered run for review. Reads the
//! run's summary (`swarm --json`'s last line, which the Action keeps in
//! `swarm-summary.json`), pushes its result to the target's own branch
//! (`swarm/pr/<target>-<instruction>-<key>`, replaced on every run) and
//! opens a pull request on GitHub, or updates the open one of an earlier
//! run for the same target and instruction. A run that delivered nothing
//! opens nothing and says why. The token is the CI job's (`GITHUB_TOKEN`).

mod body;

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{ExitKind, SwarmError};
use crate::llm::forge::{GitHub, Outcome, PullRequestDraft};
use crate::llm::Secret;

/// `swarm pull-request`'s flags.
#[derive(Debug, Clone, Args)]
pub struct PullRequestArgs {
    /// The run's summary: the last line `swarm --json` printed.
    #[arg(long, value_name = "FILE", default_value = "swarm-summary.json")]
    pub summary: PathBuf,
    /// The folder the run refactored (its --target-dir) [default: .].
    #[arg(long = "target-dir", visible_alias = "target_dir", value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// The repository on GitHub, `owner/name`.
    #[arg(long, value_name = "OWNER/NAME", env = "GITHUB_REPOSITORY")]
    pub repo: Option<String>,
    /// GitHub's REST API [default: https://api.github.com].
    #[arg(long, value_name = "URL", env = "GITHUB_API_URL")]
    pub api_url: Option<String>,
    /// The branch to merge into [default: the branch checked out].
    #[arg(long, value_name = "BRANCH", env = "SWARM_PR_BASE")]
    pub base: Option<String>,
    /// Open the pull request as a draft.
    #[arg(long, env = "SWARM_PR_DRAFT", value_parser = clap::builder::FalseyValueParser::new())]
    pub draft: bool,
    /// A label to add (repeat, or separate with commas).
    #[arg(
        long = "label",
        value_name = "LABEL",
        env = "SWARM_PR_LABELS",
        value_delimiter = ','
    )]
    pub labels: Vec<String>,
    /// The remote to push the branch to.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// The CI run's page, where the log and report are artifacts [default:
    /// from GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_RUN_ID].
    #[arg(long, value_name = "URL")]
    pub run_url: Option<String>,
    /// Print what was done as JSON (`{"action": "opened", "number": …}`).
    #[arg(long)]
    pub json: bool,
}

/// What the command did, as `--json` prints it.
#[derive(Debug, serde::Serialize)]
struct Done {
    /// `opened`, `updated` or `nothing`.
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// Opens or updates the pull request of the run in `--summary`.
pub async fn execute(args: &PullRequestArgs) -> Result<ExitKind, SwarmError> {
    let summary = read_summary(&args.summary)?;
    if let Some(reason) = nothing_to_propose(&summary) {
        report(
            args,
            &Done {
                action: "nothing",
                number: None,
                url: None,
                branch: None,
                reason: Some(reason),
            },
        );
        return Ok(ExitKind::Success);
    }
    let (repo_name, token) = credentials(args)?;
    let repo = super::runs::open_repo(args.target_dir.as_deref())?;
    let target = match repo.info().target_rel.as_str() {
        "" => ".".to_string(),
        rel => rel.to_string(),
    };
    let base = base_of(args, &repo)?;
    let key = key_of(&target, body::instruction(&summary));
    let head = head_branch(&target, body::instruction(&summary), &key);
    let run_branch = summary["branch"].as_str().unwrap_or_default();
    tokio::task::block_in_place(|| repo.push_branch(&args.remote, run_branch, &head))?;
    let run_url = args.run_url.clone().or_else(ci_run_url);
    let cx = body::Context {
        target: &target,
        key: &key,
        run_url: run_url.as_deref(),
        base: &base,
    };
    let draft = PullRequestDraft {
        title: body::title(&summary, &target),
        body: body::body(&summary, &cx),
        head: head.clone(),
        base,
        draft: args.draft,
        labels: args
            .labels
            .iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
    };
    let api = args
        .api_url
        .clone()
        .unwrap_or_else(|| "https://api.github.com".into());
    let github = GitHub::new(&api, &repo_name, Secret::new(token))
        .map_err(|e| SwarmError::internal(e.to_string()))?;
    let (pull, outcome) = github
        .open_or_update(&draft)
        .await
        .map_err(|e| SwarmError::git(e.to_string()))?;
    report(
        args,
        &Done {
            action: match outcome {
                Outcome::Opened => "opened",
                Outcome::Updated => "updated",
            },
            number: Some(pull.number),
            url: Some(pull.url),
            branch: Some(head),
            reason: None,
        },
    );
    Ok(ExitKind::Success)
}

/// The repository on GitHub and the token, or what to set.
fn credentials(args: &PullRequestArgs) -> Result<(String, String), SwarmError> {
    let repo_name = args
        .repo
        .clone()
        .filter(|r| r.contains('/'))
        .ok_or_else(|| {
            SwarmError::invalid("no repository to open the pull request on")
                .hint("pass --repo OWNER/NAME (GitHub Actions sets GITHUB_REPOSITORY)")
        })?;
    let token = std::env::var("GITHUB_TOKEN")
        .or_else(|_| std::env::var("GH_TOKEN"))
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            SwarmError::invalid("no token for GitHub").hint(
                "set GITHUB_TOKEN (in a workflow: `env: { GITHUB_TOKEN: ${{ github.token }} }`)",
            )
        })?;
    Ok((repo_name, token))
}

/// `--base`, else the branch checked out.
fn base_of(args: &PullRequestArgs, repo: &crate::git::Repo) -> Result<String, SwarmError> {
    args.base
        .clone()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| repo.info().branch.clone())
        .ok_or_else(|| {
            SwarmError::invalid("the checkout is on no branch, so the pull request has no base")
                .hint("pass --base BRANCH")
        })
}

fn read_summary(path: &Path) -> Result<Value, SwarmError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        SwarmError::invalid(format!(
            "cannot read the run's summary {}: {e}",
            path.display()
        ))
        .hint("run swarm with --json and keep its last line in that file (hooks/action.sh does)")
    })?;
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    serde_json::from_str(line).map_err(|e| {
        SwarmError::invalid(format!("{} is not a swarm summary ({e})", path.display()))
            .hint("it must hold the last line `swarm --json` printed")
    })
}

/// Why a run's summary proposes nothing, or `None` when it delivered a
/// change that passed its checks.
fn nothing_to_propose(summary: &Value) -> Option<String> {
    if let Some(error) = summary["error"].as_str() {
        return Some(format!("the run failed: {error}"));
    }
    let status = summary["status"].as_str().unwrap_or("unknown");
    let delivery = &summary["delivery"];
    let delivered = matches!(delivery["state"].as_str(), Some("left" | "updated"))
        && status.starts_with("success")
        && summary["branch"].as_str().is_some_and(|b| !b.is_empty());
    if delivered {
        return None;
    }
    let why = delivery["reason"]
        .as_str()
        .map(str::to_string)
        .or_else(|| summary["stop_reason"].as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default();
    Some(match delivery["state"].as_str() {
        Some("unchanged") => "the run changed nothing: the code already passed its checks".into(),
        _ => format!(
            "the run delivered nothing ({}: {why})",
            status.replace('_', " ")
        ),
    })
}

/// The key of a target and instruction: the same for every run that
/// should update one pull request.
fn key_of(target: &str, instruction: Option<&str>) -> String {
    let mut hash = Sha256::new();
    hash.update(target.as_bytes());
    hash.update([0]);
    hash.update(instruction.map(normalised).unwrap_or_default().as_bytes());
    hash.finalize()[..5]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn normalised(instruction: &str) -> String {
    instruction.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `swarm/pr/<target>-<instruction's first words or "repair">-<key>`.
fn head_branch(target: &str, instruction: Option<&str>, key: &str) -> String {
    let words = instruction.map_or("repair".to_string(), |i| {
        normalised(i)
            .split(' ')
            .take(5)
            .collect::<Vec<_>>()
            .join(" ")
    });
    let slug = |text: &str| -> String {
        let mut out = String::new();
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        out.trim_matches('-')
            .chars()
            .take(40)
            .collect::<String>()
            .trim_end_matches('-')
            .to_string()
    };
    let place = if target == "." {
        "root".to_string()
    } else {
        slug(target)
    };
    format!("swarm/pr/{place}-{}-{key}", slug(&words))
}

/// GitHub Actions' page of the current run.
fn ci_run_url() -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Some(format!(
        "{}/{}/actions/runs/{}",
        var("GITHUB_SERVER_URL")?,
        var("GITHUB_REPOSITORY")?,
        var("GITHUB_RUN_ID")?
    ))
}

fn report(args: &PullRequestArgs, done: &Done) {
    if args.json {
        super::print_line(&serde_json::to_string(done).unwrap_or_default());
        return;
    }
    let line = match (done.action, &done.number, &done.url) {
        ("nothing", _, _) => format!(
            "no pull request: {}",
            done.reason.as_deref().unwrap_or_default()
        ),
        (action, Some(number), Some(url)) => format!("{action} pull request #{number}: {url}"),
        (action, _, _) => format!("{action} the pull request"),
    };
    super::print_line(&line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_target_and_instruction_keep_one_branch_and_others_get_their_own() {
        let a = key_of("pkg", Some("rename  foo to bar"));
        assert_eq!(a, key_of("pkg", Some("rename foo\nto bar")));
        assert_ne!(a, key_of(".", Some("rename foo to bar")));
        assert_ne!(a, key_of("pkg", None));
        assert_eq!(
            head_branch(
                "packages/api",
                Some("Rename StockItem to InventoryItem everywhere"),
                &a
            ),
            format!("swarm/pr/packages-api-rename-stockitem-to-inventoryitem-everyw-{a}")
        );
        assert_eq!(head_branch(".", None, "k"), "swarm/pr/root-repair-k");
    }

    #[test]
    fn only_a_delivered_green_run_is_proposed() {
        let delivered = json!({"status": "success", "branch": "swarm/r/best",
            "delivery": {"state": "left", "reason": "dry run: the target was not updated"}});
        assert_eq!(nothing_to_propose(&delivered), None);
        let gave_up = json!({"status": "gave_up", "branch": "swarm/r/best",
            "stop_reason": "no_progress", "delivery": {"state": "not_accepted"}});
        assert_eq!(
            nothing_to_propose(&gave_up).as_deref(),
            Some("the run delivered nothing (gave up: no progress)")
        );
        let failed = json!({"status": "error", "error": "no API key"});
        assert!(nothing_to_propose(&failed).unwrap().contains("no API key"));
    }
}
