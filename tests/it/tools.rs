//! The tools module against real processes: the runner with fake scripts,
//! and real python, pytest and pylint on small projects in temp dirs.

mod api;
mod behaviour;
mod hanging;
mod imports;
mod process;
mod pylint;
mod pylint_recombined;
mod pylint_scale;
mod pytest;
mod python_env;
mod sandbox;
