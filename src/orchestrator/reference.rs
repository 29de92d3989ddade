//! The reference of each module that does not compile, made once after the
//! plan and before the Tester and the rounds (see [`repair`]): the
//! one-token repair the parser points at, else the model's syntax-only
//! repair (not in a replayed run, where recorded replies are handed out in
//! order, nor offline). The behaviour check of a later change compares with the
//! reference while the best state's module still does not parse
//! ([`original_for`]), and the Tester validates its tests against it. A
//! module no reference can be made for is only checked to compile and
//! import, and the run's status says so.

use super::cancellable;
use super::record::Recorder;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::llm::ProviderKind;
use crate::log::{Action, Agent, Event};
use crate::stage::read_source_text;
use crate::stage::repair::{self, Reference};
use swarm_patch::ReplyContext;

/// Makes the reference of every module of the best state that does not
/// parse.
pub(super) async fn make(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<(), SwarmError> {
    for file in state.progress.best.broken_files() {
        let Some(text) = read_source_text(cx.root, &file) else {
            continue;
        };
        let Err(issue) = crate::lang::check_syntax(&file, &text) else {
            // It parses and fails to import: its original is its reference.
            continue;
        };
        let made = match repair::deterministic(&text) {
            Some(reference) => Ok(reference),
            None if cx.model.kind() == ProviderKind::Replay => Err(
                "no one-token repair makes it parse, and a replayed run does not ask the model"
                    .to_string(),
            ),
            None if !matches!(cx.config.proposals, super::ProposalSource::Model) => Err(
                "no one-token repair makes it parse, and an offline run has no model to ask"
                    .to_string(),
            ),
            None if super::over_budget(cx.config, &state.spend) => {
                Err("no one-token repair makes it parse, and the run's budget is spent".to_string())
            }
            None => ask_model(cx, rec, state, &file, &text, (issue.line, issue.column)).await?,
        };
        rec.syntax_repair(&file, &made, &text)?;
        let message = match &made {
            Ok(reference) => format!(
                "{file} does not compile: its reference for the behaviour check and generated tests is the smallest repair that lets it parse ({})",
                reference.how
            ),
            Err(why) => format!(
                "{file} does not compile and no reference could be made ({why}): a change to it is only checked to compile and import"
            ),
        };
        cx.events.emit(Event::Notice { message });
        match made {
            Ok(reference) => {
                state.progress.references.insert(file, reference);
            }
            Err(_) => {
                state.progress.unreferenced.insert(file);
            }
        }
    }
    Ok(())
}

/// The model's syntax-only repair of `file`, or why it gives none.
async fn ask_model(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
    text: &str,
    at: (usize, usize),
) -> Result<Result<Reference, String>, SwarmError> {
    let (call, reply) = cancellable(
        cx.cancel,
        repair::ask(cx.model.as_ref(), file, text, at, cx.budget.tests),
    )
    .await?;
    rec.model_call(Agent::Judge, Action::Fix, &call, Some(file), None)?;
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            return Ok(Err(format!(
                "the model call failed: {}",
                SwarmError::from(e)
            )))
        }
    };
    state.add_usage(&reply.usage, &cx.config.prices);
    let ctx = ReplyContext {
        target_prefix: state.facts.target.as_str().to_string(),
        requested: vec![file.to_string()],
        language: crate::lang::code_language(&[file.to_string()]),
    };
    Ok(repair::from_reply(
        cx.model.as_ref(),
        file,
        text,
        &reply.text,
        &ctx,
    ))
}

/// The text a change to `file` is compared with: its reference while the
/// best state's text (`best`) does not parse, else `best`.
pub(super) fn original_for(state: &RunState, file: &str, best: String) -> String {
    match state.progress.references.get(file) {
        Some(reference) if crate::lang::check_syntax(file, &best).is_err() => {
            reference.text.clone()
        }
        _ => best,
    }
}
