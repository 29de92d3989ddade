//! What the Tester asks the model for: the modules that want tests, where
//! their tests go, the lines that call them (shown as examples), the
//! request, and the test file read back from the reply.

use crate::llm::{ChatModel, ChatResponse, LlmError};
use crate::stage::judge::behaviour::untested_modules;
use crate::stage::prompt::tester::{test_request, TestInput};
use crate::stage::{call_model, ModelCall};
use swarm_analysis::check_syntax;

use super::{MAX_CALL_SITES, MAX_FILES};

/// The modules of the plan's files (`planned`, target-relative) that want
/// generated tests: importable modules that no test reaches (all of them
/// when the target has no tests), at most [`MAX_FILES`].
pub fn subjects(
    planned: &[String],
    files: &[String],
    tests: &crate::tools::TestFiles,
    has_tests: bool,
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut wanted = untested_modules(planned, files, tests, has_tests, read);
    wanted.truncate(MAX_FILES);
    wanted
}

/// The dotted import name of `file` (target-relative): `pkg/money.py` is
/// `pkg.money`, `pkg/__init__.py` is `pkg`.
pub fn module_of(file: &str) -> String {
    let stem = file.strip_suffix(".py").unwrap_or(file);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

/// Where the tests of `file` go: `tests/test_<module>_swarm.py`, dots of a
/// package path as underscores.
pub fn test_path(file: &str) -> String {
    format!("tests/test_{}_swarm.py", module_of(file).replace('.', "_"))
}

/// Lines of `sources` (path, text) other than `file` itself that call one
/// of `file`'s top-level functions: `report.py:7: print(mean([1, 2, 3]))`.
pub fn call_sites(file: &str, text: &str, sources: &[(String, String)]) -> Vec<String> {
    let names: Vec<String> = swarm_analysis::outline(text)
        .top_level()
        .map(|d| d.name.clone())
        .filter(|n| !n.starts_with('_'))
        .collect();
    let mut out = Vec::new();
    for (path, source) in sources.iter().filter(|(p, _)| p != file) {
        for (i, line) in source.lines().enumerate() {
            let code = line.trim();
            let calls = names.iter().any(|n| {
                code.match_indices(&format!("{n}(")).any(|(at, _)| {
                    !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                        && !code.starts_with("def ")
                })
            });
            if calls && out.len() < MAX_CALL_SITES {
                out.push(format!(
                    "{path}:{}: {}",
                    i + 1,
                    crate::stage::prompt::clip(code, 200)
                ));
            }
        }
    }
    out
}

/// What the model was asked for one module.
pub struct Ask<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub plan_item: Option<&'a str>,
    pub call_sites: &'a [String],
    pub allowance: crate::stage::budget::Allowance,
}

/// Asks the model for tests of one module.
pub async fn ask(
    model: &dyn ChatModel,
    ask: &Ask<'_>,
) -> (ModelCall, Result<ChatResponse, LlmError>) {
    let module = module_of(ask.file);
    let test_file = test_path(ask.file);
    let request = test_request(&TestInput {
        path: ask.file,
        module: &module,
        text: ask.text,
        plan_item: ask.plan_item,
        call_sites: ask.call_sites,
        test_path: &test_file,
        allowance: ask.allowance,
    });
    call_model(model, request).await
}

/// The Python of a reply: its first ```python (or bare ```) fenced block,
/// else the whole reply when it parses and defines a test.
pub fn extract_python(reply: &str) -> Option<String> {
    let mut inside: Option<String> = None;
    for line in reply.lines() {
        let fence = line.trim_start();
        match &mut inside {
            None if fence.starts_with("```") => {
                let tag = fence.trim_start_matches('`').trim().to_ascii_lowercase();
                if tag.is_empty() || tag == "python" || tag == "py" {
                    inside = Some(String::new());
                }
            }
            Some(block) if fence.starts_with("```") => {
                return Some(std::mem::take(block));
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    if let Some(block) = inside.filter(|b| !b.trim().is_empty()) {
        return Some(block);
    }
    let whole = reply.trim();
    (whole.contains("def test") && check_syntax(whole).is_ok()).then(|| format!("{whole}\n"))
}
