//! A loopback server that plays the part of GitHub's REST API swarm uses
//! for pull requests: list a repository's pull requests filtered by head,
//! open one (refused with 422 when one is already open for that head, as
//! GitHub does), update one, add labels. Every request is recorded; a
//! request without the expected bearer token gets 401.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::llm_server::{LlmServer, RecordedRequest, Reply};

/// A pull request as the fake holds it.
#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    pub labels: Vec<String>,
    pub state: String,
}

/// The fake and its state.
pub struct GitHubServer {
    server: LlmServer,
    pulls: Arc<Mutex<Vec<Pull>>>,
}

impl GitHubServer {
    /// Serves `repo` (`owner/name`) to clients presenting `token`.
    pub fn start(repo: &str, token: &str) -> Self {
        let pulls: Arc<Mutex<Vec<Pull>>> = Arc::default();
        let state = Arc::clone(&pulls);
        let repo = repo.to_string();
        let token = token.to_string();
        let server = LlmServer::start(move |request| {
            if request.header("authorization") != Some(&format!("Bearer {token}")) {
                return Reply::json(401, &json!({"message": "Bad credentials"}));
            }
            let mut pulls = state.lock().unwrap();
            route(&repo, request, &mut pulls)
        });
        Self { server, pulls }
    }

    /// The API's root URL (GITHUB_API_URL).
    pub fn api_url(&self) -> String {
        self.server.base_url()
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.pulls.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

fn pull_json(pull: &Pull) -> Value {
    json!({
        "number": pull.number,
        "html_url": format!("https://github.example/pulls/{}", pull.number),
        "state": pull.state,
        "title": pull.title,
        "body": pull.body,
        "draft": pull.draft,
        "head": {"ref": pull.head},
        "base": {"ref": pull.base},
    })
}

fn query_value(path: &str, key: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.replace("%3A", ":").replace("%2F", "/"))
    })
}

fn route(repo: &str, request: &RecordedRequest, pulls: &mut Vec<Pull>) -> Reply {
    let owner = repo.split('/').next().unwrap_or_default();
    let pulls_path = format!("/repos/{repo}/pulls");
    let path = request.path.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("GET", p) if p == pulls_path => {
            let state = query_value(&request.path, "state").unwrap_or("open".into());
            let head = query_value(&request.path, "head");
            let list: Vec<Value> = pulls
                .iter()
                .filter(|pull| state == "all" || pull.state == state)
                .filter(|pull| {
                    head.as_ref()
                        .is_none_or(|h| *h == format!("{owner}:{}", pull.head))
                })
                .map(pull_json)
                .collect();
            Reply::json(200, &Value::Array(list))
        }
        ("POST", p) if p == pulls_path => {
            let body = request.body_json();
            let head = body["head"].as_str().unwrap_or_default().to_string();
            if pulls.iter().any(|p| p.state == "open" && p.head == head) {
                return Reply::json(
                    422,
                    &json!({"message": "Validation Failed",
                    "errors": [{"message": format!("A pull request already exists for {owner}:{head}.")}]}),
                );
            }
            let pull = Pull {
                number: pulls.len() as u64 + 1,
                head,
                base: body["base"].as_str().unwrap_or_default().to_string(),
                title: body["title"].as_str().unwrap_or_default().to_string(),
                body: body["body"].as_str().unwrap_or_default().to_string(),
                draft: body["draft"].as_bool().unwrap_or(false),
                labels: Vec::new(),
                state: "open".into(),
            };
            let reply = pull_json(&pull);
            pulls.push(pull);
            Reply::json(201, &reply)
        }
        ("PATCH", p) if p.starts_with(&format!("{pulls_path}/")) => {
            let number: u64 = p
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .parse()
                .unwrap_or(0);
            let body = request.body_json();
            let Some(pull) = pulls.iter_mut().find(|p| p.number == number) else {
                return Reply::json(404, &json!({"message": "Not Found"}));
            };
            if let Some(title) = body["title"].as_str() {
                pull.title = title.to_string();
            }
            if let Some(text) = body["body"].as_str() {
                pull.body = text.to_string();
            }
            Reply::json(200, &pull_json(pull))
        }
        ("POST", p)
            if p.starts_with(&format!("/repos/{repo}/issues/")) && p.ends_with("/labels") =>
        {
            let number: u64 = p.split('/').nth(5).unwrap_or_default().parse().unwrap_or(0);
            let body = request.body_json();
            let Some(pull) = pulls.iter_mut().find(|p| p.number == number) else {
                return Reply::json(404, &json!({"message": "Not Found"}));
            };
            for label in body["labels"].as_array().into_iter().flatten() {
                let label = label.as_str().unwrap_or_default().to_string();
                if !pull.labels.contains(&label) {
                    pull.labels.push(label);
                }
            }
            let labels: Vec<Value> = pull.labels.iter().map(|l| json!({"name": l})).collect();
            Reply::json(200, &Value::Array(labels))
        }
        _ => Reply::json(404, &json!({"message": "Not Found"})),
    }
}
