//! The interpreter a sandbox is built around: the program its layers are
//! probed with, the folders of its installation every tool process may
//! read, and the variables it needs besides the allow-list.
//!
//! Python's comes from the probed [`PythonEnv`]; node's is made in
//! `tools::node`. It only describes; the sandbox applies it.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::tools::PythonEnv;

/// What a sandbox needs to know of the interpreter its tools run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// The interpreter (its folder goes first on `PATH`).
    pub program: PathBuf,
    /// The arguments of a start-up that does nothing and exits 0 (`-c
    /// pass`, `-e ""`): how each layer is probed.
    pub probe: Vec<OsString>,
    /// Folders of its installation that every tool process may read.
    pub read: Vec<PathBuf>,
    /// Variables set in every tool process besides the allow-list.
    pub env: Vec<(OsString, OsString)>,
}

impl Runtime {
    /// Python's: the interpreter, its prefixes, `sys.path` and user base
    /// readable; `VIRTUAL_ENV` when it is a virtualenv and `PYTHONUSERBASE`
    /// when it has a user site.
    pub fn python(env: &PythonEnv) -> Runtime {
        let layout = &env.layout;
        let mut read = vec![env.python.clone()];
        read.extend(layout.prefixes.iter().cloned());
        read.extend(layout.sys_path.iter().cloned());
        read.extend(layout.user_base.iter().cloned());
        let mut vars = Vec::new();
        if let Some(venv) = &layout.virtual_env {
            vars.push((OsString::from("VIRTUAL_ENV"), venv.clone().into_os_string()));
        }
        if let Some(base) = &layout.user_base {
            vars.push((
                OsString::from("PYTHONUSERBASE"),
                base.clone().into_os_string(),
            ));
        }
        Runtime {
            program: env.python.clone(),
            probe: vec![OsString::from("-c"), OsString::from("pass")],
            read,
            env: vars,
        }
    }
}
