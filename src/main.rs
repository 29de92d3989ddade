//! The `swarm` binary: everything happens in the library's `cli` module.

fn main() -> std::process::ExitCode {
    swarm::main()
}
