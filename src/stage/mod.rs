//! The pipeline's stages. Each takes typed values and returns typed values;
//! none prints and none calls another — the orchestrator wires them.

pub mod auditor;
pub mod executor;
pub mod fixer;
pub mod judge;
pub mod planner;
pub mod prompt;
pub mod reviewer;

/// Joins the target folder (repo-relative) and a target-relative path.
pub fn repo_path(target_rel: &str, rel: &str) -> String {
    if target_rel.is_empty() {
        rel.to_string()
    } else {
        format!("{target_rel}/{rel}")
    }
}

/// Whether a target-relative path is a test file the Fixer must leave alone:
/// `test_*.py`, `*_test.py`, `conftest.py`, or anything under a `tests/` or
/// `test/` folder.
pub fn is_test_path(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts.iter().any(|p| *p == "tests" || *p == "test")
        || name == "conftest.py"
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_test_files() {
        for p in [
            "test_a.py",
            "pkg/a_test.py",
            "conftest.py",
            "tests/helpers.py",
            "src/test/x.py",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["a.py", "testing.py", "pkg/contest.py", "latest_x.py"] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}

/// One model call and what came of it, for the experiment log.
#[derive(Clone, Debug)]
pub struct ModelCall {
    pub request: crate::llm::ChatRequest,
    pub reply: Result<crate::llm::ChatResponse, String>,
    pub elapsed_ms: u128,
}

/// Calls the model once, timing it; errors become values.
pub async fn call_model(
    model: &dyn crate::llm::ChatModel,
    request: crate::llm::ChatRequest,
) -> (
    ModelCall,
    Result<crate::llm::ChatResponse, crate::llm::LlmError>,
) {
    let started = std::time::Instant::now();
    let result = model.complete(&request).await;
    let call = ModelCall {
        request,
        reply: match &result {
            Ok(r) => Ok(r.clone()),
            Err(e) => Err(e.to_string()),
        },
        elapsed_ms: started.elapsed().as_millis(),
    };
    (call, result)
}
