//! `swarm run`: resolve settings, build the model, run, report.

use std::sync::Arc;

use super::printer::Printer;
use super::{settings, RunArgs};
use crate::cancel::Cancel;
use crate::config::ProcessEnv;
use crate::error::{ExitKind, SwarmError};
use crate::llm::{self, ChatModel};
use crate::orchestrator::{self, RunConfig};

/// Runs the pipeline with the resolved settings.
pub async fn execute(args: RunArgs, printer: &Printer) -> Result<ExitKind, SwarmError> {
    let json = args.json;
    let result = async {
        let resolved = settings::resolve(&args, &ProcessEnv)?;
        let model = llm::build(&resolved.provider)?;
        let model = match &resolved.record {
            Some(path) => llm::record_to(model, path)?,
            None => model,
        };
        run_with(&resolved.run, model, printer, json).await
    }
    .await;
    if let (true, Err(e)) = (json, &result) {
        println!(
            "{}",
            serde_json::json!({"status": "error", "exit_code": e.kind.code(), "error": e.message})
        );
    }
    result
}

/// Runs with a built model, printing the summary; shared with `demo`.
pub async fn run_with(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    printer: &Printer,
    json: bool,
) -> Result<ExitKind, SwarmError> {
    let cancel = Cancel::new();
    let on_signal = cancel.clone();
    let listener = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    let result = orchestrator::run(config, model, printer, &cancel).await;
    listener.abort();
    let summary = result?;
    printer.summary(&summary);
    if json {
        println!("{}", serde_json::to_string(&summary).unwrap_or_default());
    }
    Ok(summary.exit)
}
