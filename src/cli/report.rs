//! `swarm report [RUN]`: writes the run's page again from the experiment
//! log and prints its path; with `--open`, opens it in the browser.

use std::path::PathBuf;

use clap::Args;

use crate::error::{ExitKind, SwarmError};
use crate::llm::PriceTable;
use crate::report::{self, ReportError, Which};

/// Flags of `swarm report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The run (its id, or a unique start of it) [default: the newest run in the log].
    pub run: Option<String>,
    /// Open the report in the browser (`$BROWSER`, else `xdg-open`).
    #[arg(long)]
    pub open: bool,
    /// The experiment log the runs wrote [default: logs/experiment_data.json].
    #[arg(long, value_name = "FILE", env = "SWARM_LOG_FILE")]
    pub log_file: Option<PathBuf>,
}

/// Writes the report and prints its path on stdout.
pub fn execute(args: &ReportArgs) -> Result<ExitKind, SwarmError> {
    let log_file = args
        .log_file
        .clone()
        .unwrap_or_else(|| PathBuf::from("logs/experiment_data.json"));
    let which = match &args.run {
        Some(run) => Which::Named(run),
        None => Which::Newest,
    };
    let written = report::write(&log_file, which, &PriceTable::new()).map_err(error_of)?;
    super::print_line(&written.path.display().to_string());
    if args.open {
        // The browser may start elsewhere: it gets the full path.
        let path = std::fs::canonicalize(&written.path).unwrap_or(written.path);
        crate::tools::opener::open_in_browser(&path)?;
    }
    Ok(ExitKind::Success)
}

/// A run that is not in the log, a log that cannot be read or a page that
/// cannot be written: bad input (exit 1), as for `swarm show`.
fn error_of(e: ReportError) -> SwarmError {
    SwarmError::wrapping(ExitKind::InvalidInput, e)
}
