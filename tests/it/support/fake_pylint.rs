//! One fake pylint for the edge cases real pylint cannot be made to show on
//! demand (a file that takes forever, a set too slow together, ten thousand
//! files at once): an interpreter standing for swarm's pylint driver.

#![allow(dead_code)]

use std::path::Path;

use swarm::tools::PythonEnv;

use super::python::{script, system_env};

/// Reports at once one `missing-module-docstring` convention and 4
/// statements per file (so `n` files score 7.5), after waiting 30 s for
/// every file named `*slow*.py`, and, when its own name holds
/// `SLOW_TOGETHER`, 30 s more over 3 or more files at once. It prints a
/// line of plugin chatter before the report and exits 16 (a convention was
/// found), as pylint does.
pub const FAKE_PYLINT: &str = r#"#!/bin/sh
count=0
for a in "$@"; do
  case "$a" in
    *slow*.py) sleep 30 ;;
    -*) ;;
    *.py) count=$((count + 1)) ;;
  esac
done
case "$0" in
  *SLOW_TOGETHER*) [ "$count" -ge 3 ] && sleep 30 ;;
esac
printf 'some plugin output\n@@swarm-pylint-report@@\n{"messages": ['
sep=''
for a in "$@"; do
  case "$a" in
    -*) ;;
    *.py) printf '%s{"type": "convention", "symbol": "missing-module-docstring", "message": "Missing module docstring", "messageId": "C0114", "line": 1, "column": 0, "path": "%s"}' "$sep" "$a"; sep=', ' ;;
  esac
done
printf '], "statements": {'
sep=''
for a in "$@"; do
  case "$a" in
    -*) ;;
    *.py) printf '%s"%s": 4' "$sep" "$a"; sep=', ' ;;
  esac
done
printf '}, "evaluation": null}\n'
exit 16
"#;

/// The machine's Python environment with [`FAKE_PYLINT`] as its
/// interpreter, written to `dir/name` (put `SLOW_TOGETHER` in `name` for
/// that behaviour).
pub fn fake_pylint_env(dir: &Path, name: &str) -> PythonEnv {
    PythonEnv {
        python: script(dir, name, FAKE_PYLINT),
        ..system_env()
    }
}
