//! The looping model's run: a generated repository of the smallest size,
//! and a loopback model whose first fix reply starts well and falls into a
//! loop at a small local model's pace ([`TOKENS_PER_SECOND`]); every other
//! reply is a good one. It reports the seconds from the loop's first token
//! to swarm's cut (the server sees the client hang up), the loop's tokens
//! read, and whether the run still ended green.

use super::model::ModelServer;
use super::{Bench, Measured};

/// The pace of the looping reply: a 270M-parameter model on a laptop CPU.
const TOKENS_PER_SECOND: f64 = 26.0;

/// Whether the looping run is wanted (`SWARM_SCALE_LOOP=0` skips it).
pub fn wanted() -> bool {
    std::env::var("SWARM_SCALE_LOOP").map_or(true, |v| v != "0")
}

/// One run of `size` files against the looping model, printed; a run that
/// is not green, or a loop that was not cut, is added to `failures`.
pub fn measure(size: usize, failures: &mut Vec<String>) {
    let cache = tempfile::tempdir().expect("temp dir for the cache");
    let home = tempfile::tempdir().expect("temp dir for the home");
    let bench = Bench::generate(size, home.path());
    let model = ModelServer::looping(bench.project.clone(), TOKENS_PER_SECOND);
    let measured: Measured = super::run_with(&bench, cache.path(), &model);
    let cut = model.loop_cut();
    drop(model);
    println!(
        "\nlooping model ({size} files; the first fix reply loops at {TOKENS_PER_SECOND:.0} tokens/s):"
    );
    match cut {
        Some(cut) => match cut.hung_up {
            Some(at) => println!(
                "  cut {:.1} s after the loop began ({} tokens of loop read); the run: exit {}, {:.1} s, {} requests",
                at.saturating_duration_since(cut.began).as_secs_f64(),
                cut.tokens,
                measured.exit.map_or("sig".to_string(), |c| c.to_string()),
                measured.wall.as_secs_f64(),
                measured.requests.len()
            ),
            None => failures.push(format!(
                "{size} files, looping: the loop was read to its end ({} tokens), never cut",
                cut.tokens
            )),
        },
        None => failures.push(format!("{size} files, looping: no fix request looped")),
    }
    if let Some(why) = &measured.failure {
        println!("       not green: {why}");
        failures.push(format!("{size} files, looping: {why}"));
    }
    bench.finish();
}
