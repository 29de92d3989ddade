//! `swarm demo`: copies a bundled fixture into a temporary git repository
//! and runs the whole pipeline on it with the fixture's recorded model
//! replies, so it needs no key and no network.

use std::path::{Path, PathBuf};

use clap::Args;
use include_dir::{include_dir, Dir};

use super::printer::Printer;
use super::{run, settings, RunArgs};
use crate::config::ProcessEnv;
use crate::error::{ExitKind, SwarmError};
use crate::git::Repo;
use crate::llm;

static FIXTURES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/fixtures");

/// Flags of `swarm demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Which bundled fixture to run (see --list).
    #[arg(long, default_value = "single_module")]
    pub fixture: String,
    /// List the bundled fixtures and exit.
    #[arg(long)]
    pub list: bool,
    /// Keep the temporary repository and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// The experiment log [default: logs/experiment_data.json].
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Print the final summary as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// A fixture's `fixture.toml`.
#[derive(Debug, serde::Deserialize)]
struct FixtureMeta {
    description: String,
    target: String,
}

/// Runs the demo.
pub async fn execute(args: DemoArgs, printer: &Printer) -> Result<ExitKind, SwarmError> {
    let names: Vec<&str> = FIXTURES
        .dirs()
        .filter(|d| d.get_file(d.path().join("replay.json")).is_some())
        .filter_map(|d| d.path().file_name().and_then(|n| n.to_str()))
        .collect();
    if args.list {
        print_list(&names);
        return Ok(ExitKind::Success);
    }
    let Some(dir) = FIXTURES
        .get_dir(&args.fixture)
        .filter(|_| names.contains(&args.fixture.as_str()))
    else {
        return Err(SwarmError::invalid(format!(
            "no fixture named `{}`: choose one of {}",
            args.fixture,
            names.join(", ")
        )));
    };
    let demo = lay_out(&args.fixture, dir)?;
    eprintln!("demo: {} — {}", args.fixture, demo.meta.description);
    eprintln!("demo: repository {}", demo.root.display());

    let run_args = RunArgs {
        target_dir: Some(demo.root.join(&demo.meta.target)),
        provider: Some("replay".into()),
        cassette: Some(demo.cassette.clone()),
        log_file: args.log_file.clone(),
        ..RunArgs::default()
    };
    let resolved = settings::resolve(&run_args, &ProcessEnv)?;
    let provider = resolved
        .provider
        .as_ref()
        .ok_or_else(|| SwarmError::internal("the demo's settings name no provider"))?;
    let model = llm::build(provider)?;
    let summary = run::run_to_summary(&resolved.run, model, printer).await?;
    let graph = demo.repo.log_graph()?;
    super::print_line(&format!("$ git log --all --graph --oneline\n{graph}"));
    if args.keep {
        let kept = demo.temp.keep();
        eprintln!("demo: kept {}", kept.display());
    }
    if args.json {
        // The run's summary, as `swarm --json` prints it, naming the fixture.
        let mut json = serde_json::to_value(&summary).unwrap_or_default();
        if let Some(object) = json.as_object_mut() {
            object.insert("fixture".into(), args.fixture.clone().into());
        }
        super::print_line(&json.to_string());
    }
    Ok(summary.exit)
}

/// `swarm demo --list`: each fixture with its description.
fn print_list(names: &[&str]) {
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for name in names {
        let description = FIXTURES
            .get_file(format!("{name}/fixture.toml"))
            .and_then(|f| toml::from_str::<FixtureMeta>(f.contents_utf8()?).ok())
            .map(|meta| meta.description)
            .unwrap_or_default();
        super::print_line(&format!("{name:width$}  {description}"));
    }
}

/// A fixture laid out for its run: the project committed in a repository
/// of its own under a temporary folder, and its recorded replies beside it.
struct LaidOut {
    temp: tempfile::TempDir,
    meta: FixtureMeta,
    root: std::path::PathBuf,
    cassette: std::path::PathBuf,
    repo: Repo,
}

/// Writes the fixture `name` (its folder `dir`) to a temporary folder and
/// commits its project.
fn lay_out(name: &str, dir: &Dir<'_>) -> Result<LaidOut, SwarmError> {
    let file = |file: &str| {
        dir.get_file(dir.path().join(file))
            .ok_or_else(|| SwarmError::internal(format!("fixture {name} has no {file}")))
    };
    let meta: FixtureMeta =
        toml::from_str(file("fixture.toml")?.contents_utf8().unwrap_or_default())
            .map_err(|e| SwarmError::internal(format!("fixture.toml of {name}")).caused_by(e))?;
    let project = dir
        .get_dir(dir.path().join("project"))
        .ok_or_else(|| SwarmError::internal(format!("fixture {name} has no project/")))?;
    let temp = tempfile::Builder::new()
        .prefix("swarm-demo-")
        .tempdir()
        .map_err(|e| SwarmError::internal("cannot create a temporary folder").caused_by(e))?;
    let root = temp.path().join(name);
    extract(project, project.path(), &root)?;
    let cassette = temp.path().join("replay.json");
    std::fs::write(&cassette, file("replay.json")?.contents()).map_err(|e| {
        SwarmError::internal(format!("cannot write {}", cassette.display())).caused_by(e)
    })?;
    let repo = Repo::init_with_baseline(&root, "import the demo project")?;
    Ok(LaidOut {
        temp,
        meta,
        root,
        cassette,
        repo,
    })
}

/// Writes an embedded folder to disk.
fn extract(dir: &Dir<'_>, base: &Path, to: &Path) -> Result<(), SwarmError> {
    let io = |e: std::io::Error| SwarmError::internal("cannot write the demo project").caused_by(e);
    for file in dir.files() {
        let rel = file.path().strip_prefix(base).unwrap_or(file.path());
        let dest = to.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&dest, file.contents()).map_err(io)?;
    }
    for sub in dir.dirs() {
        extract(sub, base, to)?;
    }
    std::fs::create_dir_all(to).map_err(io)
}
