//! `swarm config`: the effective settings and where each came from.

use super::settings;
use super::RunArgs;
use crate::config::ProcessEnv;
use crate::error::{ExitKind, SwarmError};

/// Prints one line per setting to stdout; keys are masked.
pub fn execute(args: &RunArgs) -> Result<ExitKind, SwarmError> {
    let mut args = args.clone();
    if args.target_dir.is_none() {
        args.target_dir = Some(".".into());
    }
    let (target, rows) = settings::show(&args, &ProcessEnv)?;
    let width = rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    super::print_line(&format!("{:width$}  {}", "target", target.display()));
    for (name, value, source) in &rows {
        super::print_line(&format!("{name:width$}  {value}  ({source})"));
    }
    Ok(ExitKind::Success)
}
