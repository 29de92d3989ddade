//! Asking the model for tests, as the Tester does for generated and
//! held-out tests alike: the call logged, its usage counted, withheld
//! secrets put back; and the test file written into the worktree to be
//! validated there.

use super::cancellable;
use super::record::Recorder;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::{FileWrite, RunWorkspace};
use crate::log::{Action, Agent};
use crate::stage::tester::Generated;

/// The Tester's reply to `asked` (a request about `file`): the call logged,
/// its usage counted, withheld secrets put back in the text; `Err` says
/// why there is none (the call failed), for the caller to skip the file.
pub(super) async fn ask_tester(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
    asked: impl std::future::Future<
        Output = (
            crate::stage::ModelCall,
            Result<crate::llm::ChatResponse, crate::llm::LlmError>,
        ),
    >,
) -> Result<Result<String, String>, SwarmError> {
    let (call, reply) = cancellable(cx.cancel, asked).await?;
    rec.model_call(Agent::Judge, Action::CodeGen, &call, Some(file), None)?;
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            return Ok(Err(format!(
                "the model call failed: {}",
                SwarmError::from(e)
            )));
        }
    };
    state.add_usage(&reply.usage, &cx.config.prices);
    Ok(Ok(crate::stage::restore_secrets(
        cx.model.as_ref(),
        &reply.text,
    )))
}

/// Writes the generated test file into the worktree, to be validated there.
pub(super) fn write_candidate(
    ws: &RunWorkspace,
    state: &RunState,
    generated: &Generated,
) -> Result<(), SwarmError> {
    let candidate = FileWrite {
        path: state
            .facts
            .target
            .repo_path(&generated.test_file)
            .into_string(),
        content: Some(generated.source.clone().into_bytes()),
    };
    ws.write_files(&[candidate])?;
    Ok(())
}
