//! The bundled fixtures as test inputs: a fresh git repository holding a
//! fixture's project, a loopback model that answers like a good model would
//! (the fixture's plan, and diffs from the file's current text to its fixed
//! version), and a hermetic way to run the `swarm` binary.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use regex::Regex;
use serde_json::Value;

use super::llm_server::{LlmServer, RecordedRequest, Reply};
use super::repo::TestRepo;

/// Keys and variables that must not leak in from the developer's shell
/// (besides every `SWARM_*` variable: each sets a flag).
pub const PROVIDER_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "VIRTUAL_ENV",
];

/// `fixtures/<name>` in the source tree.
pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// The fixture's target folder relative to its project (`.` for the root).
pub fn fixture_target(name: &str) -> String {
    let meta = fs::read_to_string(fixture_dir(name).join("fixture.toml")).expect("fixture.toml");
    let table: toml::Table = toml::from_str(&meta).expect("fixture.toml parses");
    table["target"]
        .as_str()
        .expect("target is a string")
        .to_string()
}

/// Copies a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create folder");
    for entry in fs::read_dir(from).expect("read folder") {
        let entry = entry.expect("dir entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).expect("copy file");
        }
    }
}

/// A fixture's project committed in a fresh repository.
pub struct FixtureRepo {
    pub name: String,
    pub repo: TestRepo,
    /// The target folder (absolute).
    pub target: PathBuf,
    /// The target relative to the repository root (`""` at the root).
    pub target_rel: String,
}

impl FixtureRepo {
    pub fn new(name: &str) -> Self {
        let repo = TestRepo::empty();
        copy_tree(&fixture_dir(name).join("project"), &repo.root);
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo.git(&["config", "user.name", "Repo User"]);
        repo.git(&["config", "user.email", "repo@example.com"]);
        repo.commit_all("import the project");
        let rel = fixture_target(name);
        let target_rel = if rel == "." { String::new() } else { rel };
        let target = repo.root.join(&target_rel);
        FixtureRepo {
            name: name.to_string(),
            repo,
            target,
            target_rel,
        }
    }

    /// The fixture with a second, clean source module committed beside
    /// its own, so the model is asked for a plan (a one-module project is
    /// planned from its failing tests and lint alone): for tests of the
    /// plan request itself.
    pub fn planned(name: &str) -> Self {
        let fx = Self::new(name);
        fx.repo.write(
            &Path::new(&fx.target_rel).join("units.py").to_string_lossy(),
            "\"\"\"Units of the project.\"\"\"\n\nSCALE = 1\n",
        );
        fx.repo.commit_all("a second module");
        fx
    }

    /// Every `fixed/` file with its path relative to the repository root.
    pub fn fixed_files(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        collect(
            &fixture_dir(&self.name).join("fixed"),
            Path::new(""),
            &mut out,
        );
        out
    }

    /// Runs `swarm` with `args` in a scratch working directory (so
    /// `logs/experiment_data.json` lands there) and a hermetic environment.
    pub fn swarm(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let cwd = self.repo.tmp().join("cwd");
        fs::create_dir_all(&cwd).expect("create cwd");
        swarm_in(&cwd, &self.repo.home, args, env)
    }

    /// The experiment log written by [`FixtureRepo::swarm`].
    pub fn log(&self) -> Vec<Value> {
        read_log(&self.repo.tmp().join("cwd/logs/experiment_data.json"))
    }
}

fn collect(dir: &Path, rel: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read fixed/").flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = rel.join(entry.file_name());
        if entry.path().is_dir() {
            collect(&entry.path(), &rel, out);
        } else {
            let text = fs::read_to_string(entry.path()).expect("read fixed file");
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
}

/// Runs the swarm binary in `cwd` with a private HOME and no provider keys
/// from the surrounding environment.
pub fn swarm_in(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    swarm_command(cwd, home, args, env)
        .output()
        .expect("swarm can be started")
}

/// The command [`swarm_in`] runs, to spawn it instead.
pub fn swarm_command(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_swarm"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SWARM_") {
            command.env_remove(name);
        }
    }
    command
        .current_dir(cwd)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", home.join(".cache/swarm"))
        .env("NO_COLOR", "1");
    for name in PROVIDER_ENV {
        command.env_remove(name);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// Parses an experiment log.
pub fn read_log(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let value: Value = serde_json::from_str(&text).expect("the log is JSON");
    value.as_array().expect("the log is an array").clone()
}

/// The first user message of a request in any provider's wire format.
pub fn prompt_of(request: &RecordedRequest) -> String {
    let body = request.body_json();
    if let Some(messages) = body["messages"].as_array() {
        for m in messages {
            if m["role"] == "user" {
                if let Some(text) = m["content"].as_str() {
                    return text.to_string();
                }
                if let Some(parts) = m["content"].as_array() {
                    return parts.iter().filter_map(|p| p["text"].as_str()).collect();
                }
            }
        }
    }
    if let Some(contents) = body["contents"].as_array() {
        if let Some(first) = contents.first() {
            return first["parts"]
                .as_array()
                .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
                .unwrap_or_default();
        }
    }
    String::new()
}

/// What a good model answers to swarm's prompts for fixture `name`: the
/// fixture's plan for a plan request; for a fix request, a unified diff
/// from the file's current text (as shown in the prompt) to its fixed
/// version, or a short "nothing to change" when there is no fixed version.
pub fn good_model_reply(name: &str, target_rel: &str, prompt: &str) -> String {
    if prompt.starts_with("Write a refactoring plan") {
        return fs::read_to_string(fixture_dir(name).join("plan.md")).expect("plan.md");
    }
    let file_re = Regex::new(r"^Fix and improve `([^`]+)`").expect("regex");
    let Some(file) = file_re.captures(prompt).map(|c| c[1].to_string()) else {
        return "I do not understand the request.".into();
    };
    let marker = format!("## Current text of `{file}`\n```python\n");
    let Some(start) = prompt.rfind(&marker).map(|i| i + marker.len()) else {
        return "The prompt does not show the file.".into();
    };
    let end = prompt[start..]
        .find("\n```\n")
        .map(|i| start + i)
        .unwrap_or(prompt.len());
    let current = format!("{}\n", &prompt[start..end]);
    let fixed_path = if target_rel.is_empty() {
        fixture_dir(name).join("fixed").join(&file)
    } else {
        fixture_dir(name).join("fixed").join(target_rel).join(&file)
    };
    let Ok(fixed) = fs::read_to_string(fixed_path) else {
        return format!("`{file}` looks fine as it is; no change is needed.");
    };
    if fixed == current {
        return format!("`{file}` is already fixed; no change is needed.");
    }
    let diff = similar::TextDiff::from_lines(&current, &fixed)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string();
    format!("Fix the bugs in {file} and tidy it up.\n\n```diff\n{diff}```\n")
}

/// A handler for [`super::llm_server::LlmServer::start`] that plays a good
/// model for fixture `name` in whatever wire format the request uses.
pub fn good_model(
    name: &str,
    target_rel: &str,
) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    let (name, target_rel) = (name.to_string(), target_rel.to_string());
    move |request| {
        Reply::text_for(
            request,
            &good_model_reply(&name, &target_rel, &prompt_of(request)),
        )
    }
}

/// A model that writes single_module's plan, then answers every fix
/// request with `answer` (an attack, a useless reply, a fault).
pub fn plan_then_answer(
    answer: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
) -> LlmServer {
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        if prompt.starts_with("Write a refactoring plan") {
            Reply::text_for(req, &good_model_reply("single_module", "", &prompt))
        } else {
            answer(req)
        }
    })
}

/// A model that writes single_module's plan, then answers every fix
/// request with `reply`.
pub fn plan_then(reply: impl Into<String>) -> LlmServer {
    let reply = reply.into();
    plan_then_answer(move |req| Reply::text_for(req, &reply))
}
