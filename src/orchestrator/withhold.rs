//! The run's secrets: before any prompt, the target's files are scanned
//! for secrets (see [`crate::secrets`]), the model is wrapped so it is
//! never shown them, and the experiment log is told to write their
//! placeholders too. `--allow-secrets` turns this off, with a notice.

use std::path::Path;
use std::sync::Arc;

use super::setup::Opened;
use super::RunConfig;
use crate::llm::{ChatModel, Withholding};
use crate::log::{Event, EventSink, ExperimentLog};
use crate::secrets::{Report, Withheld};

/// Scans the run's files (under `root`, the target in the worktree) and
/// returns the model to use from now on and the run's table of secrets
/// (`None` with `--allow-secrets`, when the model is returned as it is).
pub(super) fn start(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    opened: &mut Opened,
    root: &Path,
    events: &dyn EventSink,
) -> (Arc<dyn ChatModel>, Option<Arc<Withheld>>) {
    let (files, log): (&[String], &mut ExperimentLog) = (&opened.scope.files, &mut opened.log);
    if config.allow_secrets {
        events.emit(Event::Notice {
            message: "secrets: --allow-secrets: keys, tokens and passwords in the code are sent \
                      to the model and written to the log as they are"
                .to_string(),
        });
        return (model, None);
    }
    let secrets = Arc::new(Withheld::new());
    for file in files {
        if let Some(text) = crate::stage::read_source_text(root, file) {
            secrets.scan(file, &text);
        }
    }
    if !secrets.is_empty() {
        events.emit(Event::Notice {
            message: format!(
                "secrets: {}; placeholders stand in for them in every prompt and in the log",
                secrets.report().describe()
            ),
        });
    }
    log.withhold(Arc::clone(&secrets));
    let model: Arc<dyn ChatModel> = Arc::new(Withholding::new(model, Arc::clone(&secrets)));
    (model, Some(secrets))
}

/// What the summary says of the run's secrets.
pub(super) fn report(secrets: Option<&Withheld>) -> Report {
    match secrets {
        Some(secrets) => secrets.report(),
        None => Report::allowed(),
    }
}
