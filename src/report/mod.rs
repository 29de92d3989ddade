//! `report-<run>.html`: one self-contained page per run, next to the
//! experiment log, and `report.html` beside it as the latest run's.
//!
//! Built from the run's own log entries (`entries` reads them back, `model`
//! gathers what the page shows, `render` writes the HTML), so a report can
//! be written again for any run the log holds (`swarm report RUN`). Writing
//! a report never fails a run: at the run's end [`OnRunEnd`] tells the user
//! where it is, or why there is none. This module reads the log and writes
//! the report files; it never prints and never touches git or the network.

mod entries;
pub mod model;
pub mod render;

use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use entries::ReportError;
pub use model::RunReport;

use crate::llm::PriceTable;
use crate::log::{Event, EventSink};

/// The page of the latest run, beside the log.
pub const LATEST: &str = "report.html";

/// Where the report of `run_id` goes: `report-<run id>.html` in the log's
/// folder.
pub fn report_path(log_file: &Path, run_id: &str) -> PathBuf {
    let safe: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    log_dir(log_file).join(format!("report-{safe}.html"))
}

/// Where [`LATEST`] goes.
pub fn latest_path(log_file: &Path) -> PathBuf {
    log_dir(log_file).join(LATEST)
}

fn log_dir(log_file: &Path) -> &Path {
    log_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Which run to report on, and whether its page also becomes [`LATEST`].
#[derive(Clone, Copy, Debug)]
pub enum Which<'a> {
    /// The run that just ended: its page is the latest.
    Ended(&'a str),
    /// A run id or a unique prefix of one; the latest page is rewritten
    /// when it names the newest run in the log.
    Named(&'a str),
    /// The newest run in the log.
    Newest,
}

/// The report written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub run_id: String,
    /// `report-<run id>.html`.
    pub path: PathBuf,
    /// [`LATEST`], when it was rewritten too.
    pub latest: Option<PathBuf>,
}

/// Reads the run's entries from `log_file`, renders its page and writes it
/// (atomically: a reader sees the old page or the new one).
pub fn write(
    log_file: &Path,
    which: Which<'_>,
    prices: &PriceTable,
) -> Result<Written, ReportError> {
    let wanted = match which {
        Which::Named(run) => Some(run),
        _ => None,
    };
    // The ending run's entries are read from the log's end back to its
    // start; they are in the log even if its start is not (a log moved
    // aside by a repair during the run), and then the whole log is read.
    let (run_id, newest, back) = match which {
        Which::Ended(run) => (run.to_string(), true, entries::scan_back(log_file, run)?),
        _ => {
            let listing = entries::scan(log_file, None)?;
            let run_id = entries::pick_run(log_file, &listing.runs, wanted)?;
            let newest = listing.runs.last() == Some(&run_id);
            (run_id, newest, None)
        }
    };
    let entries = match back {
        Some(entries) => entries,
        None => entries::scan(log_file, Some(&run_id))?.entries,
    };
    let report = model::gather(&run_id, &entries, prices);
    let page = render::render(&report);
    let path = report_path(log_file, &run_id);
    write_atomically(&path, &page)?;
    let latest = if newest {
        let latest = latest_path(log_file);
        write_atomically(&latest, &page)?;
        Some(latest)
    } else {
        None
    };
    Ok(Written {
        run_id,
        path,
        latest,
    })
}

fn write_atomically(path: &Path, text: &str) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".report-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    temp.write_all(text.as_bytes()).map_err(err)?;
    temp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Writes the run's report when dropped: at the end of the run whichever
/// way it ends (summary, error, interrupt) once it got past setup. A
/// failure is told as a notice and never changes the run's result; during
/// a panic nothing is written.
pub struct OnRunEnd<'a> {
    log_file: PathBuf,
    run_id: String,
    prices: PriceTable,
    events: &'a dyn EventSink,
}

impl<'a> OnRunEnd<'a> {
    /// Arms the report of run `run_id`, whose entries go to `log_file`.
    pub fn new(
        log_file: &Path,
        run_id: &str,
        prices: &PriceTable,
        events: &'a dyn EventSink,
    ) -> Self {
        Self {
            log_file: log_file.to_path_buf(),
            run_id: run_id.to_string(),
            prices: prices.clone(),
            events,
        }
    }
}

impl Drop for OnRunEnd<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let message = match write(&self.log_file, Which::Ended(&self.run_id), &self.prices) {
            Ok(written) => format!("report: {}", written.path.display()),
            Err(e) => format!("warning: no report for this run: {e}"),
        };
        self.events.emit(Event::Notice { message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::events::Collect;
    use crate::log::{Action, Agent, Entry, ExperimentLog, Kind, RunStart, Status};

    fn start(log: &mut ExperimentLog, run: &str) {
        log.record(
            Entry::new(
                Agent::System,
                "m",
                Action::CodeAnalysis,
                "swarm run on /t",
                "",
                Kind::RunStart(RunStart {
                    target: Some("/t".into()),
                    ..RunStart::default()
                }),
            )
            .status(Status::Info)
            .in_run(run),
        )
        .unwrap();
    }

    #[test]
    fn writes_the_runs_page_and_the_latest_and_tells_where() {
        let dir = tempfile::tempdir().unwrap();
        let log_file = dir.path().join("logs/experiment_data.json");
        let mut log = ExperimentLog::open(&log_file).unwrap();
        start(&mut log, "run-a");
        start(&mut log, "run-b");
        let notices = Collect::default();
        drop(OnRunEnd::new(
            &log_file,
            "run-a",
            &PriceTable::new(),
            &notices,
        ));
        let page = dir.path().join("logs/report-run-a.html");
        let latest = dir.path().join("logs/report.html");
        assert!(std::fs::read_to_string(&page).unwrap().contains("run-a"));
        assert_eq!(
            std::fs::read_to_string(&latest).unwrap(),
            std::fs::read_to_string(&page).unwrap(),
            "the run that just ended is the latest"
        );
        assert_eq!(notices.notices(), [format!("report: {}", page.display())]);
        // Regenerating an older run leaves the latest page alone; the newest
        // run's page becomes it.
        let again = write(&log_file, Which::Named("run-a"), &PriceTable::new()).unwrap();
        assert_eq!(again.latest, None);
        let newest = write(&log_file, Which::Newest, &PriceTable::new()).unwrap();
        assert_eq!(newest.run_id, "run-b");
        assert_eq!(newest.latest, Some(latest.clone()));
        assert!(std::fs::read_to_string(&latest).unwrap().contains("run-b"));
    }

    #[test]
    fn a_report_that_cannot_be_written_is_a_notice_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let log_file = dir.path().join("experiment_data.json");
        let mut log = ExperimentLog::open(&log_file).unwrap();
        start(&mut log, "run-a");
        // A folder where the page should go.
        std::fs::create_dir(dir.path().join("report-run-a.html")).unwrap();
        let notices = Collect::default();
        drop(OnRunEnd::new(
            &log_file,
            "run-a",
            &PriceTable::new(),
            &notices,
        ));
        let said = notices.notices();
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("warning: no report for this run: cannot write the report"));
        assert!(!said[0].contains('\n'));
    }

    #[test]
    fn run_ids_cannot_leave_the_log_folder() {
        assert_eq!(
            report_path(Path::new("logs/x.json"), "../../etc/passwd"),
            Path::new("logs/report-.._.._etc_passwd.html")
        );
        assert_eq!(
            report_path(Path::new("x.json"), "r"),
            Path::new("./report-r.html")
        );
    }
}
