//! The offline Fixer (`--offline`): ruff's own safe fixes to one file (see
//! [`crate::tools::ruff`]) as a [`Proposal`], for the same Reviewer,
//! Executor and Judge a model's proposal goes through. No model is asked:
//! the log keeps ruff's command as the prompt and its diff as the reply,
//! under the model name `ruff <version>` ([`OfflineModel`]).

use std::path::Path;

use super::ModelCall;
use crate::cancel::Cancel;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, Finish, LlmError, ProviderKind, Usage};
use crate::pipeline::{Proposal, ReplyProblem, TargetPath, Unusable};
use crate::tools::ruff::{Ruff, RULES};
use crate::tools::ToolError;
use swarm_patch::{self as patch, ReplyContext};

/// Where a run's proposals come from.
#[derive(Clone, Debug, Default)]
pub enum ProposalSource {
    /// The model, through the Fixer's prompts.
    #[default]
    Model,
    /// ruff's safe fixes; no plan request, no model call.
    Ruff(Ruff),
}

/// ruff's proposal for `file` (target-relative, under `root`), with the
/// call that stands for it in the log. A file ruff has nothing to fix in is
/// a proposal with nothing to change, as a model's "no change needed" is.
pub fn propose(
    ruff: &Ruff,
    root: &Path,
    file: &str,
    ctx: &ReplyContext,
    cancel: &Cancel,
) -> Result<(ModelCall, Proposal), ToolError> {
    let started = std::time::Instant::now();
    let fix = ruff.fix_diff(root, file, cancel)?;
    let reply = if fix.diff.is_empty() {
        format!("ruff has no safe fix for {file} ({RULES}); no change is needed.")
    } else {
        format!("Apply ruff's safe fixes\n\n```diff\n{}```\n", fix.diff)
    };
    let edits = if fix.diff.is_empty() {
        Err(Unusable::from(ReplyProblem::NoChangeNeeded))
    } else {
        match patch::parse_reply(&reply, ctx) {
            Ok(edits) if !edits.is_empty() => Ok(edits),
            Ok(_) => Err(Unusable::from(ReplyProblem::Patch(
                patch::PatchError::NoChange,
            ))),
            Err(e) => Err(Unusable::from(ReplyProblem::Patch(e))),
        }
    };
    let call = ModelCall {
        request: ChatRequest::single("", fix.command, 0),
        reply: Ok(ChatResponse {
            text: reply.clone(),
            finish: Finish::Stop,
            usage: Usage::default(),
            attempts: 1,
        }),
        elapsed_ms: started.elapsed().as_millis(),
    };
    let proposal = Proposal {
        file: TargetPath::new(file),
        reply,
        edits,
        debugging: false,
        excerpts: None,
    };
    Ok((call, proposal))
}

/// The model of an offline run: named `ruff <version>` in the log, the
/// trailers and the summary; it answers no request (none is sent).
#[derive(Debug)]
pub struct OfflineModel {
    name: String,
}

impl OfflineModel {
    pub fn new(ruff: &Ruff) -> Self {
        Self {
            name: ruff.version.clone(),
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for OfflineModel {
    /// No provider: like a replay, it never touches the network.
    fn kind(&self) -> ProviderKind {
        ProviderKind::Replay
    }

    fn model(&self) -> &str {
        &self.name
    }

    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Config {
            provider: "offline".into(),
            message: "no model is asked with --offline".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_offline_model_is_named_after_ruff_and_answers_nothing() {
        let model = OfflineModel {
            name: "ruff 0.17.6".into(),
        };
        assert_eq!(model.model(), "ruff 0.17.6");
        let request = ChatRequest::single("", "hello", 10);
        assert!(model.complete(&request).await.is_err());
    }
}
