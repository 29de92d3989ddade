//! How any tool process runs, whichever tool it is: started with a kept
//! command line in its own process group ([`process`]), confined by the
//! run's [`sandbox`], its output captured with head and tail kept
//! (`capture`), and killed whole on timeout, cancel or the parent's exit
//! (`exit_watch`). What a tool's output means is read by that tool's own
//! module beside this folder (`pytest`, `pylint`, `node`, `ruff`...), never
//! here.

mod capture;
mod exit_watch;
pub mod process;
pub mod sandbox;
