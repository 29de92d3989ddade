//! The layer probes a [`Sandbox`] runs once when it is made: the
//! interpreter (or runtime) started under every layer at once, else under
//! each layer alone, so the report says exactly which layers hold.

use super::*;

impl Sandbox {
    /// Probes the interpreter under every layer at once, as tools will run;
    /// when that start-up succeeds, every layer holds and one start-up was
    /// enough. Otherwise (or without `isolate`) the layers are probed one
    /// by one: see [`Sandbox::probe_each`]. What the layer probes found
    /// (`None` without `isolate`), or why the interpreter does not start
    /// even without the layers.
    pub(super) fn probe_all(&self, isolate: bool) -> Result<Option<known::Probed>, String> {
        if isolate {
            if let Ok(abi) = landlock::abi_version() {
                if self.probe_together(abi).is_none() {
                    return Ok(Some(known::Probed {
                        namespaces: None,
                        landlock: Ok(abi),
                        limits: None,
                    }));
                }
            }
        }
        self.probe_each(isolate)
    }

    /// The interpreter under namespaces, Landlock and limits together.
    fn probe_together(&self, abi: u32) -> Option<String> {
        let cell = match self.bare_cell("probe") {
            Ok(cell) => cell,
            Err(e) => return Some(e.to_string()),
        };
        let ruleset = match cell.ruleset(self, abi) {
            Ok(ruleset) => ruleset,
            Err(e) => return Some(e.to_string()),
        };
        self.probe_in(
            &cell,
            Confinement {
                namespaces: Some(NamespacePlan::for_current_user()),
                landlock: Some(ruleset),
                limits: Some(self.limits.clone()),
                ..Confinement::default()
            },
        )
    }

    /// Probes the interpreter with the environment alone and, with
    /// `isolate`, under namespaces, Landlock (with the TCP fallback when
    /// there is no network namespace) and limits, each alone: the four
    /// start-ups run side by side.
    fn probe_each(&self, isolate: bool) -> Result<Option<known::Probed>, String> {
        let (plain, layers) = std::thread::scope(|scope| {
            let layers = isolate.then(|| {
                let namespaces = scope.spawn(|| {
                    self.probe(Confinement {
                        namespaces: Some(NamespacePlan::for_current_user()),
                        ..Confinement::default()
                    })
                });
                let landlock = scope.spawn(|| self.probe_landlock());
                let limits = scope.spawn(|| {
                    self.probe(Confinement {
                        limits: Some(self.limits.clone()),
                        ..Confinement::default()
                    })
                });
                (namespaces, landlock, limits)
            });
            let plain = self.probe(Confinement::default());
            let joined = layers.map(|(namespaces, landlock, limits)| {
                let lost = || Some("the probe's thread panicked".to_string());
                (
                    namespaces.join().unwrap_or_else(|_| lost()),
                    landlock
                        .join()
                        .unwrap_or_else(|_| Err("the probe's thread panicked".to_string())),
                    limits.join().unwrap_or_else(|_| lost()),
                )
            });
            (plain, joined)
        });
        if let Some(problem) = plain {
            return Err(problem);
        }
        Ok(layers.map(|(namespaces, landlock, limits)| known::Probed {
            namespaces,
            landlock,
            limits,
        }))
    }

    /// Records what the layer probes found.
    pub(super) fn take_probes(&mut self, probed: known::Probed) {
        let known::Probed {
            namespaces,
            landlock,
            limits,
        } = probed;
        self.report.namespaces = match namespaces {
            None => {
                self.namespaces = true;
                LayerState::Active {
                    detail: "user, PID, network and IPC namespaces: loopback only, the tool is PID 1 so nothing outlives it".to_string(),
                }
            }
            Some(reason) => LayerState::Unavailable { reason },
        };
        self.report.landlock = match landlock {
            Ok(abi) => {
                self.landlock_abi = Some(abi);
                LayerState::Active {
                    detail: landlock::describe(abi, !self.namespaces),
                }
            }
            Err(reason) => LayerState::Unavailable { reason },
        };
        self.report.limits = match limits {
            None => {
                self.limited = true;
                LayerState::Active {
                    detail: self.limits.describe(self.namespaces),
                }
            }
            Some(reason) => LayerState::Unavailable { reason },
        };
    }

    /// The Landlock ABI when the interpreter runs under a ruleset of it.
    fn probe_landlock(&self) -> Result<u32, String> {
        let abi = landlock::abi_version()?;
        let cell = self.bare_cell("probe").map_err(|e| e.to_string())?;
        let ruleset = cell.ruleset(self, abi).map_err(|e| e.to_string())?;
        let confinement = Confinement {
            landlock: Some(ruleset),
            ..Confinement::default()
        };
        match self.probe_in(&cell, confinement) {
            None => Ok(abi),
            Some(reason) => Err(reason),
        }
    }

    /// Runs the interpreter under `confinement` in a fresh cell; `None` when
    /// it started and exited 0, else why not.
    pub(super) fn probe(&self, confinement: Confinement) -> Option<String> {
        match self.bare_cell("probe") {
            Ok(cell) => self.probe_in(&cell, confinement),
            Err(e) => Some(e.to_string()),
        }
    }

    fn probe_in(&self, cell: &Cell, confinement: Confinement) -> Option<String> {
        let builder = ProcessBuilder::new(&self.runtime.program)
            .args(&self.runtime.probe)
            .base_env(cell.env.iter().cloned())
            .cwd(cell.dir())
            .timeout(PROBE_TIMEOUT)
            .confine(Arc::new(confinement));
        match builder.run(&Cancel::new()) {
            Err(e) => Some(match e.spawn_source() {
                Some(source) => describe_spawn_error(source),
                None => e.to_string(),
            }),
            Ok(out) => match out.ending {
                Ending::Exited(0) => None,
                Ending::Exited(code) => Some(format!(
                    "the interpreter exits with code {code} under it: {}",
                    crate::tools::env::last_line(&out.combined())
                )),
                Ending::Signalled(signal) => Some(format!(
                    "the interpreter is killed by signal {signal} under it"
                )),
                Ending::TimedOut => Some("the interpreter does not finish under it".to_string()),
                Ending::Cancelled => Some("cancelled".to_string()),
            },
        }
    }

    /// A fresh cell (HOME, TMPDIR) for one tool process, with every active
    /// layer. The cell's folder is removed when it is dropped.
    pub(crate) fn cell(&self, tool: &str) -> Result<Cell, ToolError> {
        let mut cell = self.bare_cell(tool)?;
        let confinement = Confinement {
            namespaces: self.namespaces.then(NamespacePlan::for_current_user),
            limits: self.limited.then(|| self.limits.clone()),
            landlock: match self.landlock_abi {
                Some(abi) => Some(cell.ruleset(self, abi)?),
                None => None,
            },
            remembered: self.remembered.clone(),
        };
        cell.confinement = Some(Arc::new(confinement));
        Ok(cell)
    }
}
