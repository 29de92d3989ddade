//! `.env` in the repository root: provider keys and base URLs kept there
//! (as course students keep `GOOGLE_API_KEY`) are read when the process
//! environment does not set them. Nothing else is taken from the file, and
//! nothing from it enters the process environment, so no child — git,
//! Python, the code under test — ever sees it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Environment;

/// The provider variables of one `.env` file.
#[derive(Debug, Default)]
pub struct DotEnv {
    path: PathBuf,
    vars: BTreeMap<String, String>,
}

impl DotEnv {
    /// Reads `<dir>/.env`; a missing or unreadable file holds nothing.
    pub fn load(dir: &Path) -> Self {
        let path = dir.join(".env");
        let vars = std::fs::read_to_string(&path)
            .map(|text| parse(&text))
            .unwrap_or_default();
        Self { path, vars }
    }

    /// The file, for the sources `swarm config` shows.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `name` comes from this file rather than from `process`.
    pub fn provides(&self, name: &str, process: &dyn Environment) -> bool {
        process.var(name).is_none() && self.vars.contains_key(name)
    }

    /// `process`, with this file's provider variables where it has none.
    pub fn over<'a>(&'a self, process: &'a dyn Environment) -> Layered<'a> {
        Layered {
            process,
            dotenv: self,
        }
    }
}

/// The process environment first, then the `.env` file.
pub struct Layered<'a> {
    process: &'a dyn Environment,
    dotenv: &'a DotEnv,
}

impl Environment for Layered<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.process.var(name).or_else(|| {
            self.dotenv
                .vars
                .get(name)
                .filter(|v| !v.trim().is_empty())
                .cloned()
        })
    }
}

/// `KEY=value` lines (optionally `export KEY=value`, values optionally in
/// single or double quotes, `#` comments); only provider variables are kept.
fn parse(text: &str) -> BTreeMap<String, String> {
    let wanted: Vec<&str> = crate::llm::provider_env_vars().collect();
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if !wanted.contains(&name) {
            continue;
        }
        vars.insert(name.to_string(), unquote(value.trim()));
    }
    vars
}

/// A value without its quotes, or without a trailing ` # comment`.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(rest) = value.strip_prefix(quote) {
            if let Some(end) = rest.find(quote) {
                return rest[..end].to_string();
            }
        }
    }
    match value.find(" #") {
        Some(at) => value[..at].trim_end().to_string(),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FakeEnv as Vars;

    #[test]
    fn keys_are_read_in_the_usual_shapes_and_nothing_else_is() {
        let vars = parse(
            "# keys\nexport GOOGLE_API_KEY=\"g-123\"\nOPENAI_API_KEY='sk-1' \n\
             ANTHROPIC_API_KEY=a-1 # mine\nOPENAI_BASE_URL=http://127.0.0.1:8080/v1\n\
             PATH=/evil\nDEBUG=1\nnot a line\n",
        );
        assert_eq!(
            vars.get("GOOGLE_API_KEY").map(String::as_str),
            Some("g-123")
        );
        assert_eq!(vars.get("OPENAI_API_KEY").map(String::as_str), Some("sk-1"));
        assert_eq!(
            vars.get("ANTHROPIC_API_KEY").map(String::as_str),
            Some("a-1")
        );
        assert_eq!(
            vars.get("OPENAI_BASE_URL").map(String::as_str),
            Some("http://127.0.0.1:8080/v1")
        );
        assert!(!vars.contains_key("PATH") && !vars.contains_key("DEBUG"));
    }

    #[test]
    fn the_process_environment_wins_over_the_file() {
        let dotenv = DotEnv {
            path: PathBuf::from(".env"),
            vars: parse("GEMINI_API_KEY=from-file\nOPENAI_API_KEY=file-openai\n"),
        };
        let process = Vars(vec![("GEMINI_API_KEY", "from-shell")]);
        let env = dotenv.over(&process);
        assert_eq!(env.var("GEMINI_API_KEY").as_deref(), Some("from-shell"));
        assert_eq!(env.var("OPENAI_API_KEY").as_deref(), Some("file-openai"));
        assert!(dotenv.provides("OPENAI_API_KEY", &process));
        assert!(!dotenv.provides("GEMINI_API_KEY", &process));
        assert_eq!(env.var("PATH"), None);
    }
}
