//! `swarm run`: resolve settings, build the model, run, report.

use std::sync::Arc;

use super::printer::Printer;
use super::{settings, RunArgs};
use crate::cancel::Cancel;
use crate::config::ProcessEnv;
use crate::error::{ExitKind, SwarmError};
use crate::llm::{self, ChatModel};
use crate::orchestrator::summary::Summary;
use crate::orchestrator::{self, ProposalSource, RunConfig};
use crate::stage::ruff_fixer::OfflineModel;
use crate::tools::ruff::Ruff;

/// Runs the pipeline with the resolved settings.
pub async fn execute(args: RunArgs, printer: &Printer) -> Result<ExitKind, SwarmError> {
    let json = args.json;
    let result = async {
        let mut resolved = settings::resolve(&args, &ProcessEnv)?;
        let Some(provider) = &resolved.provider else {
            let model = go_offline(&mut resolved.run)?;
            return run_with(&resolved.run, model, printer, json).await;
        };
        let progress = Arc::new(printer.clone());
        let model = llm::build_reporting(provider, llm::RetryPolicy::default(), progress)?;
        let model = match &resolved.record {
            Some(path) => llm::record_to(model, path)?,
            None => model,
        };
        run_with(&resolved.run, model, printer, json).await
    }
    .await;
    if let (true, Err(e)) = (json, &result) {
        let line = serde_json::json!({
            "status": "error",
            "exit_code": e.kind.code(),
            "error": e.to_string(),
            "hints": e.hints,
        });
        super::print_line(&line.to_string());
    }
    result
}

/// Makes `config` an offline run: ruff found (or the error saying to
/// install it), its fixes the proposals, and the model that stands for it.
fn go_offline(config: &mut RunConfig) -> Result<Arc<dyn ChatModel>, SwarmError> {
    let ruff = Ruff::find(&Cancel::new())?;
    let model: Arc<dyn ChatModel> = Arc::new(OfflineModel::new(&ruff));
    config.proposals = ProposalSource::Ruff(ruff);
    Ok(model)
}

/// Runs with a built model, printing the summary (and with `json` the
/// summary as JSON on the last line of stdout).
pub async fn run_with(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    printer: &Printer,
    json: bool,
) -> Result<ExitKind, SwarmError> {
    let summary = run_to_summary(config, model, printer).await?;
    if json {
        super::print_line(&serde_json::to_string(&summary).unwrap_or_default());
    }
    Ok(summary.exit)
}

/// Runs with a built model, cancelled by Ctrl-C and friends, and prints the
/// summary on stderr; shared with `demo`.
pub async fn run_to_summary(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    printer: &Printer,
) -> Result<Summary, SwarmError> {
    let cancel = Cancel::new();
    let listener = tokio::spawn(cancel_on_signals(cancel.clone()));
    let result = orchestrator::run(config, model, printer, &cancel).await;
    listener.abort();
    let summary = result?;
    printer.summary(&summary);
    Ok(summary)
}

/// Cancels the run on Ctrl-C (SIGINT), SIGTERM or SIGHUP: each ends the run
/// the same way, with the worktree removed and every tool process killed.
async fn cancel_on_signals(cancel: Cancel) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut streams = Vec::new();
    for kind in [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ] {
        match signal(kind) {
            Ok(stream) => streams.push(stream),
            Err(e) => tracing::warn!("cannot listen for signal {kind:?}: {e}"),
        }
    }
    if streams.is_empty() {
        return;
    }
    any_signal(&mut streams).await;
    cancel.cancel();
}

/// Resolves when any of the signal streams receives a signal.
async fn any_signal(streams: &mut [tokio::signal::unix::Signal]) {
    std::future::poll_fn(|cx| {
        for stream in streams.iter_mut() {
            if stream.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}
