//! The command line: clap definitions and glue. The only place (with
//! `printer`) that writes to the terminal.

mod config_cmd;
mod demo;
mod doctor;
mod hook;
mod printer;
mod progress;
mod pull_request;
mod report;
mod run;
mod runs;
mod settings;
mod targets;
mod undo;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::error::{ExitKind, SwarmError};

/// swarm: hands back a clean version of a Python or JavaScript/TypeScript
/// project whose tests pass, as commits you can inspect with `git log`.
#[derive(Debug, Parser)]
#[command(name = "swarm", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
    /// More detail on stderr (-v, -vv).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors and the final summary.
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Refactor the code under --target_dir (Python, JavaScript/TypeScript): repair what the
    /// tests and linters point at, or carry out --task (the default command).
    Run(RunArgs),
    /// Run the whole pipeline on a bundled fixture with its recorded model replies (no key needed).
    Demo(demo::DemoArgs),
    /// Print the effective settings and where each came from (keys masked).
    Config(RunArgs),
    /// Tell, without a model and without changing the repository, whether swarm judges this
    /// project as your own test runner does: tools found, tests in swarm's view beside a copy of
    /// your checkout, every test that differs and why, what a run never shows the model.
    Doctor(RunArgs),
    /// Run from a git hook: a dry run (result left on swarm/<run>/best), 3 rounds, no lock wait,
    /// log under the git directory; exits 0 unless SWARM_HOOK_BLOCK=1.
    Hook(RunArgs),
    /// Print a shell completion script (e.g. `swarm completions bash > ~/.local/share/bash-completion/completions/swarm`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from these definitions (`swarm man > swarm.1`).
    Man,
    /// List past runs, newest first: status, tests and pylint before and after, attempts.
    Log(runs::RepoArgs),
    /// Show a run's attempts: verdict, tests, pylint, files changed, commit.
    Show(runs::ShowArgs),
    /// Take back a run's fast-forward of your branch (default: the newest delivered run).
    Undo(undo::UndoArgs),
    /// Remove a run's branches, refs and leftover worktree (or every run's with --all).
    Clean(undo::CleanArgs),
    /// Write a run's HTML report again from the experiment log and print its path (`--open` opens it).
    Report(report::ReportArgs),
    /// List the repository's independent targets (each package with its own tests and runner:
    /// Python, JavaScript/TypeScript); `--json` prints a CI matrix to fan a run out over them.
    Targets(runs::RepoArgs),
    /// Propose a delivered run for review: push its result to the target's own branch and open
    /// a GitHub pull request with the run's summary, or update the one an earlier run opened.
    PullRequest(pull_request::PullRequestArgs),
}

/// Flags of a run. Every flag can also be set by its `SWARM_*` variable
/// (`--max-iterations` by `SWARM_MAX_ITERATIONS`; a switch by `1`, `true`,
/// `yes`); a flag on the command line wins over the variable.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The folder to refactor: a git repository or a folder inside one.
    #[arg(
        long = "target-dir",
        visible_alias = "target_dir",
        value_name = "DIR",
        env = "SWARM_TARGET_DIR"
    )]
    pub target_dir: Option<PathBuf>,
    /// Refactor on request: the instruction, planned as tasks (for example
    /// "move parse_money out of shop/cart.py into shop/money.py; keep the
    /// old import working"). Without it swarm repairs what tests and pylint
    /// point at.
    #[arg(
        long,
        value_name = "TEXT",
        env = "SWARM_TASK",
        conflicts_with = "task_file"
    )]
    pub task: Option<String>,
    /// Like --task, with the instruction read from FILE.
    #[arg(long, value_name = "FILE", env = "SWARM_TASK_FILE")]
    pub task_file: Option<PathBuf>,
    /// openai | gemini | anthropic | replay (default: the provider whose key is set).
    #[arg(long, env = "SWARM_PROVIDER")]
    pub provider: Option<String>,
    /// Model id (default per provider).
    #[arg(long, env = "SWARM_MODEL")]
    pub model: Option<String>,
    /// API base URL (OpenAI's ends in /v1; Gemini's and Anthropic's are the host root).
    #[arg(long, env = "SWARM_BASE_URL")]
    pub base_url: Option<String>,
    /// At most this many Fixer→Judge rounds [default: 10].
    #[arg(long, value_name = "N", env = "SWARM_MAX_ITERATIONS")]
    pub max_iterations: Option<u32>,
    /// Seconds pytest may run [default: 60].
    #[arg(long, value_name = "SECS", env = "SWARM_TEST_TIMEOUT")]
    pub test_timeout: Option<u64>,
    /// Seconds one test may run, setup and teardown included; 0 disables [default: 10].
    #[arg(long, value_name = "SECS", env = "SWARM_TEST_CASE_TIMEOUT")]
    pub test_case_timeout: Option<u64>,
    /// Seconds one pylint process (a batch of files) may run [default: 30].
    #[arg(long, value_name = "SECS", env = "SWARM_LINT_TIMEOUT")]
    pub lint_timeout: Option<u64>,
    /// Longest silence from the model, in seconds: the wait for the reply to
    /// start, for its first token and between tokens. A reply that keeps
    /// streaming may take longer (see --llm-max-time) [default: 120; 600 for
    /// a local model server].
    #[arg(long, value_name = "SECS", env = "SWARM_LLM_TIMEOUT")]
    pub llm_timeout: Option<u64>,
    /// Longest one model request may take in all, in seconds, however
    /// steadily it streams; a reply cut there counts as cut off by the
    /// output limit (asked again for a shorter answer, not resent) [default: 900;
    /// 3600 for a local model server].
    #[arg(long, value_name = "SECS", env = "SWARM_LLM_MAX_TIME")]
    pub llm_max_time: Option<u64>,
    /// Whether the model is served locally (slower defaults, short replies):
    /// `true` or `false` [default: true for a loopback or private base URL].
    #[arg(long, value_name = "BOOL", env = "SWARM_LOCAL_MODEL")]
    pub local_model: Option<bool>,
    /// HTTP attempts per model call, retries included [default: 4].
    #[arg(long, value_name = "N", env = "SWARM_RETRIES")]
    pub retries: Option<u32>,
    /// Concurrent model calls [default: 1].
    #[arg(long, value_name = "N", env = "SWARM_JOBS")]
    pub jobs: Option<usize>,
    /// Stop cleanly once this many tokens were used.
    #[arg(long, value_name = "TOKENS", env = "SWARM_MAX_TOKENS_TOTAL")]
    pub max_tokens_total: Option<u64>,
    /// Stop cleanly once the known cost reaches this many USD.
    #[arg(long, value_name = "USD", env = "SWARM_MAX_COST")]
    pub max_cost: Option<f64>,
    /// The experiment log [default: logs/experiment_data.json].
    #[arg(long, value_name = "FILE", env = "SWARM_LOG_FILE")]
    pub log_file: Option<PathBuf>,
    /// Record every model request and reply in this cassette.
    #[arg(long, value_name = "FILE", env = "SWARM_RECORD")]
    pub record: Option<PathBuf>,
    /// For --provider replay: the cassette or experiment log to answer from.
    #[arg(long, value_name = "FILE", env = "SWARM_CASSETTE")]
    pub cassette: Option<PathBuf>,
    /// Print the final summary as one JSON object on the last line of stdout.
    #[arg(long, env = "SWARM_JSON", value_parser = clap::builder::FalseyValueParser::new())]
    pub json: bool,
    /// No model at all: ruff's own safe fixes are the proposals (needs
    /// ruff: `pip install ruff`); no key, no network.
    #[arg(long, env = "SWARM_OFFLINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub offline: bool,
    /// Do everything except the final fast-forward.
    #[arg(long, env = "SWARM_DRY_RUN", value_parser = clap::builder::FalseyValueParser::new())]
    pub dry_run: bool,
    /// Skip the check, before the audit, that the model endpoint answers
    /// (one `GET …/models`; a server that is down fails in seconds).
    #[arg(long, env = "SWARM_NO_PREFLIGHT", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_preflight: bool,
    /// Let the Fixer change test files.
    #[arg(long, env = "SWARM_ALLOW_TEST_EDITS", value_parser = clap::builder::FalseyValueParser::new())]
    pub allow_test_edits: bool,
    /// Send the secrets found in the code (cloud keys, API tokens, private
    /// keys, passwords) to the model as they are, instead of placeholders.
    #[arg(long, env = "SWARM_ALLOW_SECRETS", value_parser = clap::builder::FalseyValueParser::new())]
    pub allow_secrets: bool,
    /// Do not generate tests for untested files before changing them.
    #[arg(long, env = "SWARM_NO_GENERATE_TESTS", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_generate_tests: bool,
    /// Build the project's declared environment (its test extras and
    /// dependency groups, requirements files or lock file) in swarm's cache
    /// and run the tests there; your own environment is left alone. Reused
    /// while the declarations do not change.
    #[arg(long, env = "SWARM_INSTALL_DEPS", value_parser = clap::builder::FalseyValueParser::new())]
    pub install_deps: bool,
    /// Never create a tool environment; fail with an install hint instead.
    #[arg(long, env = "SWARM_NO_BOOTSTRAP", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_bootstrap: bool,
    /// Run pytest and pylint without namespaces, Landlock and resource limits
    /// (the environment allow-list stays). For machines where they break a
    /// suite; the summary says what was off.
    #[arg(long, env = "SWARM_NO_SANDBOX", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_sandbox: bool,
    /// The model's context window in tokens: no request is sent past it
    /// [default: known for common models].
    #[arg(long, value_name = "TOKENS", env = "SWARM_CONTEXT_WINDOW")]
    pub context_window: Option<u64>,
    /// Seconds to wait while another run works on the same repository; 0 stops at once [default: 60].
    #[arg(long, value_name = "SECS", env = "SWARM_LOCK_TIMEOUT")]
    pub lock_timeout: Option<u64>,
    /// The flags whose value came from their `SWARM_*` variable: field id →
    /// variable (for `swarm config`'s sources).
    #[arg(skip)]
    pub from_env: std::collections::BTreeMap<String, String>,
}

/// Parses the command line, runs, and returns the exit code.
pub fn main() -> ExitCode {
    // First, while swarm has one thread: no child may inherit a key, and
    // nothing may read swarm's environment through /proc.
    crate::harden::harden(&crate::config::all_key_vars());
    let cli = match parse() {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            let code = match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
                _ => ExitKind::InvalidInput.code(),
            };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let printer = printer::Printer::new(cli.quiet, cli.verbose);
    init_tracing(cli.verbose, cli.quiet, printer.display());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return fail(&SwarmError::internal(format!(
                "cannot start the async runtime: {e}"
            )))
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Some(Command::Run(args)) => run::execute(args, &printer).await,
            Some(Command::Demo(args)) => demo::execute(args, &printer).await,
            Some(Command::Config(args)) => config_cmd::execute(&args),
            Some(Command::Doctor(args)) => doctor::execute(&args, cli.quiet),
            Some(Command::Hook(args)) => hook::execute(args, &printer).await,
            Some(Command::Completions { shell }) => {
                use clap::CommandFactory;
                clap_complete::generate(
                    shell,
                    &mut Cli::command(),
                    "swarm",
                    &mut std::io::stdout(),
                );
                Ok(ExitKind::Success)
            }
            Some(Command::Man) => man_page(),
            Some(Command::Log(args)) => runs::log(&args),
            Some(Command::Show(args)) => runs::show(&args),
            Some(Command::Undo(args)) => undo::undo(&args),
            Some(Command::Clean(args)) => undo::clean(&args),
            Some(Command::Report(args)) => report::execute(&args),
            Some(Command::Targets(args)) => targets::execute(&args),
            Some(Command::PullRequest(args)) => pull_request::execute(&args).await,
            None => run::execute(cli.run, &printer).await,
        }
    });
    match result {
        Ok(kind) => ExitCode::from(kind.code()),
        Err(err) => fail(&err),
    }
}

/// Writes the man page for swarm and its subcommands to stdout.
fn man_page() -> Result<ExitKind, SwarmError> {
    use clap::CommandFactory;
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| SwarmError::internal("cannot render the man page").caused_by(e))?;
    // clap_mangen leaves the variables out: an ENVIRONMENT section names
    // each flag's.
    let mut environment = String::from(".SH ENVIRONMENT\n");
    for arg in RunArgs::augment_args(clap::Command::new("run")).get_arguments() {
        if let (Some(var), Some(long)) = (arg.get_env(), arg.get_long()) {
            environment.push_str(&format!(
                ".TP\n\\fB{}\\fR\nsets \\fB\\-\\-{}\\fR\n",
                var.to_string_lossy(),
                long.replace('-', "\\-")
            ));
        }
    }
    page.extend_from_slice(environment.as_bytes());
    print_bytes(&page, "the man page")
}

/// Writes `text` and a newline to stdout, as `println!` would, except that
/// a reader that stops early (`| head`) ends nothing: the rest is dropped
/// instead of panicking.
pub(crate) fn print_line(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    if let Err(e) = print_bytes(line.as_bytes(), "to standard output") {
        eprintln!("swarm: {e}");
    }
}

/// Writes `bytes` to stdout; a reader that stops early (`| head`) is fine.
fn print_bytes(bytes: &[u8], what: &str) -> Result<ExitKind, SwarmError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(SwarmError::internal(format!("cannot write {what}")).caused_by(e))
        }
        _ => Ok(ExitKind::Success),
    }
}

/// Parses the command line, noting which run flags came from their
/// `SWARM_*` variables.
fn parse() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().try_get_matches()?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    match (&mut cli.command, matches.subcommand()) {
        (
            Some(Command::Run(args) | Command::Config(args) | Command::Hook(args)),
            Some((_, sub)),
        ) => note_env_sources(args, sub),
        (None, _) => note_env_sources(&mut cli.run, &matches),
        _ => {}
    }
    Ok(cli)
}

/// Fills `args.from_env` from where clap found each value.
fn note_env_sources(args: &mut RunArgs, matches: &clap::ArgMatches) {
    use clap::parser::ValueSource;
    let command = RunArgs::augment_args(clap::Command::new("run"));
    for arg in command.get_arguments() {
        let (id, Some(var)) = (arg.get_id().as_str(), arg.get_env()) else {
            continue;
        };
        if let Ok(Some(ValueSource::EnvVariable)) =
            matches.try_get_raw(id).map(|_| matches.value_source(id))
        {
            args.from_env
                .insert(id.to_string(), var.to_string_lossy().into_owned());
        }
    }
}

fn fail(err: &SwarmError) -> ExitCode {
    eprintln!("swarm: error: {err}");
    if let Some(detail) = &err.detail {
        eprintln!("{}", detail.trim_end());
    }
    for (depth, cause) in err.chain().iter().enumerate().skip(1) {
        tracing::debug!(depth, "caused by: {cause}");
    }
    ExitCode::from(err.kind.code())
}

/// Diagnostics go to stderr above the progress display, coloured only
/// where the display is.
fn init_tracing(verbose: u8, quiet: bool, display: std::sync::Arc<progress::Display>) {
    let colour = display.mode().colour;
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWARM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("swarm={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(progress::TraceWriter(display))
        .with_ansi(colour)
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_flag_has_a_swarm_variable_named_after_it() {
        let command = RunArgs::augment_args(clap::Command::new("run"));
        let mut flags = 0;
        for arg in command.get_arguments().filter(|a| a.get_long().is_some()) {
            let expected = format!("SWARM_{}", arg.get_id().as_str().to_ascii_uppercase());
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert_eq!(
                env.as_deref(),
                Some(expected.as_str()),
                "--{:?}",
                arg.get_long()
            );
            flags += 1;
        }
        assert!(flags >= 25, "{flags} flags");
    }
}
