//! The forge client: opens, or updates, the one pull request of a run on
//! GitHub through the part of its REST API that needs (list, create and
//! update pull requests, add labels). Shares the chat client's HTTP stack
//! (reqwest with rustls, no proxy for a loopback server) and its key
//! handling: the token goes in a header and never in an error.
//!
//! A pull request is found again by its head branch: swarm pushes each
//! target and instruction to a branch of its own, so a second run for the
//! same target and instruction updates the open pull request of the first
//! instead of opening another.

use std::time::Duration;

use serde_json::{json, Value};

use super::address::is_loopback;
use super::settings::Secret;

/// How long one request to the forge may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What went wrong talking to the forge: one line, never the token.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("cannot make the HTTP client: {0}")]
    Client(String),
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{what} was refused with HTTP {status}: {message}{hint}")]
    Refused {
        what: &'static str,
        status: u16,
        message: String,
        hint: &'static str,
    },
    #[error("{what}: the reply is not what GitHub sends ({reason})")]
    BadReply { what: &'static str, reason: String },
}

/// A pull request as the forge names it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PullRequest {
    pub number: u64,
    /// Its page (`html_url`).
    pub url: String,
}

/// What to open or update.
#[derive(Clone, Debug)]
pub struct PullRequestDraft {
    pub title: String,
    pub body: String,
    /// The branch holding the change (in the same repository).
    pub head: String,
    /// The branch it is to be merged into.
    pub base: String,
    /// Opened as a draft (an update leaves the draft state as it is).
    pub draft: bool,
    pub labels: Vec<String>,
}

/// Whether the pull request was new.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Opened,
    Updated,
}

/// GitHub's REST API for one repository.
pub struct GitHub {
    client: reqwest::Client,
    /// The API's root (`https://api.github.com`, or a GitHub Enterprise
    /// server's `/api/v3`), without a trailing `/`.
    api: String,
    /// `owner/name`.
    repo: String,
    token: Secret,
}

impl GitHub {
    /// A client for `repo` (`owner/name`) at `api`, authenticated by `token`.
    pub fn new(api: &str, repo: &str, token: Secret) -> Result<Self, ForgeError> {
        let api = api.trim_end_matches('/').to_string();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT);
        if is_loopback(&api) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| ForgeError::Client(e.to_string()))?;
        Ok(Self {
            client,
            api,
            repo: repo.to_string(),
            token,
        })
    }

    /// Opens `draft`'s pull request, or updates the open one whose head is
    /// the same branch (its title and body; labels are added to it).
    pub async fn open_or_update(
        &self,
        draft: &PullRequestDraft,
    ) -> Result<(PullRequest, Outcome), ForgeError> {
        let (pull, outcome) = match self.find_open(&draft.head).await? {
            Some(open) => (self.update(open.number, draft).await?, Outcome::Updated),
            None => (self.open(draft).await?, Outcome::Opened),
        };
        if !draft.labels.is_empty() {
            self.add_labels(pull.number, &draft.labels).await?;
        }
        Ok((pull, outcome))
    }

    /// The open pull request whose head is `branch` of this repository.
    async fn find_open(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        let owner = self.repo.split('/').next().unwrap_or_default();
        let url = format!("{}/repos/{}/pulls", self.api, self.repo);
        let head = format!("{owner}:{branch}");
        let request = self.client.get(&url).query(&[
            ("state", "open"),
            ("head", head.as_str()),
            ("per_page", "100"),
        ]);
        let reply = self
            .send(request, &url, "listing the open pull requests")
            .await?;
        let list = reply
            .as_array()
            .ok_or_else(|| bad("listing the open pull requests", "not a list"))?;
        // The filter is the server's; a head of another branch is not ours.
        list.iter()
            .find(|pull| pull["head"]["ref"].as_str().is_none_or(|r| r == branch))
            .map(|pull| pull_request(pull, "listing the open pull requests"))
            .transpose()
    }

    async fn open(&self, draft: &PullRequestDraft) -> Result<PullRequest, ForgeError> {
        let url = format!("{}/repos/{}/pulls", self.api, self.repo);
        let body = json!({
            "title": draft.title,
            "body": draft.body,
            "head": draft.head,
            "base": draft.base,
            "draft": draft.draft,
            "maintainer_can_modify": true,
        });
        let reply = self
            .send(
                self.client.post(&url).json(&body),
                &url,
                "opening the pull request",
            )
            .await?;
        pull_request(&reply, "opening the pull request")
    }

    async fn update(
        &self,
        number: u64,
        draft: &PullRequestDraft,
    ) -> Result<PullRequest, ForgeError> {
        let url = format!("{}/repos/{}/pulls/{number}", self.api, self.repo);
        let body = json!({ "title": draft.title, "body": draft.body, "base": draft.base });
        let reply = self
            .send(
                self.client.patch(&url).json(&body),
                &url,
                "updating the pull request",
            )
            .await?;
        pull_request(&reply, "updating the pull request")
    }

    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError> {
        let url = format!("{}/repos/{}/issues/{number}/labels", self.api, self.repo);
        let body = json!({ "labels": labels });
        self.send(
            self.client.post(&url).json(&body),
            &url,
            "labelling the pull request",
        )
        .await
        .map(|_| ())
    }

    /// Sends one request with GitHub's headers; its JSON reply, or the
    /// refusal with GitHub's own message.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        what: &'static str,
    ) -> Result<Value, ForgeError> {
        let response = request
            .bearer_auth(self.token.expose())
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .send()
            .await
            .map_err(|e| ForgeError::Unreachable {
                url: url.to_string(),
                reason: super::error::chain(&e),
            })?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            let message = refusal_message(&value, &text);
            return Err(ForgeError::Refused {
                what,
                status,
                message: message.replace(self.token.expose(), "***"),
                hint: hint_for(status),
            });
        }
        Ok(value)
    }
}

/// GitHub's message and the first of its errors, or the start of the body.
fn refusal_message(value: &Value, text: &str) -> String {
    let mut message = value["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| text.chars().take(200).collect());
    if let Some(first) = value["errors"].as_array().and_then(|e| e.first()) {
        let detail = first["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| first.to_string());
        message = format!("{message} ({detail})");
    }
    message
}

/// What to do about a refusal, by its status.
fn hint_for(status: u16) -> &'static str {
    match status {
        401 => " (is GITHUB_TOKEN set to the job's token?)",
        403 | 404 => {
            " (the job needs `permissions: contents: write, pull-requests: write`, and the repository must allow Actions to create pull requests)"
        }
        _ => "",
    }
}

fn bad(what: &'static str, reason: &str) -> ForgeError {
    ForgeError::BadReply {
        what,
        reason: reason.to_string(),
    }
}

fn pull_request(value: &Value, what: &'static str) -> Result<PullRequest, ForgeError> {
    let number = value["number"]
        .as_u64()
        .ok_or_else(|| bad(what, "no pull request number"))?;
    let url = value["html_url"].as_str().unwrap_or_default().to_string();
    Ok(PullRequest { number, url })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_gives_githubs_message_and_its_first_error_without_the_token() {
        let value = json!({"message": "Validation Failed",
            "errors": [{"message": "A pull request already exists for acme:x."}]});
        assert_eq!(
            refusal_message(&value, ""),
            "Validation Failed (A pull request already exists for acme:x.)"
        );
        assert_eq!(
            refusal_message(&Value::Null, "<html>bad gateway"),
            "<html>bad gateway"
        );
        assert!(hint_for(403).contains("pull-requests: write"));
    }
}
