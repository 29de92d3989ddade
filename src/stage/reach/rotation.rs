//! Rotation: which of the implicated files are asked this round. A file
//! asked in [`FRUITLESS_ROUNDS`] rounds in a row without an accepted attempt
//! rests while another candidate remains; a file whose accepted change is
//! followed by a failure in a definition it holds is asked first, rested or
//! not.

use std::collections::BTreeMap;

/// Rounds in a row without an accepted attempt after which a file rests.
pub const FRUITLESS_ROUNDS: u32 = 2;

/// `files` (most urgent first) rotated: the files to `revisit` first, in
/// `files`' order, then the others that have not been fruitless for
/// [`FRUITLESS_ROUNDS`] (`fruitless`: rounds in a row each file was asked
/// without an accepted attempt). When every candidate is resting, all of
/// them are asked again.
pub fn rotate(
    files: Vec<String>,
    fruitless: &BTreeMap<String, u32>,
    revisit: &[String],
) -> Vec<String> {
    let rests = |f: &String| fruitless.get(f).copied().unwrap_or(0) >= FRUITLESS_ROUNDS;
    let (first, rest): (Vec<String>, Vec<String>) =
        files.into_iter().partition(|f| revisit.contains(f));
    let fresh: Vec<String> = rest.iter().filter(|f| !rests(f)).cloned().collect();
    let mut out = first;
    if out.is_empty() && fresh.is_empty() {
        out = rest;
    } else {
        out.extend(fresh);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_file_fruitless_for_two_rounds_rests_while_another_candidate_remains() {
        let files = names(&["a.py", "b.py", "c.py"]);
        let mut fruitless = BTreeMap::new();
        fruitless.insert("a.py".to_string(), 1);
        assert_eq!(rotate(files.clone(), &fruitless, &[]), files);
        fruitless.insert("a.py".to_string(), 2);
        assert_eq!(
            rotate(files.clone(), &fruitless, &[]),
            names(&["b.py", "c.py"])
        );
        // Everything resting: everything is asked again.
        fruitless.insert("b.py".to_string(), 3);
        fruitless.insert("c.py".to_string(), 2);
        assert_eq!(rotate(files.clone(), &fruitless, &[]), files);
    }

    #[test]
    fn a_file_whose_change_is_followed_by_a_failure_in_it_is_asked_first() {
        let files = names(&["a.py", "b.py", "c.py"]);
        let mut fruitless = BTreeMap::new();
        fruitless.insert("c.py".to_string(), 2);
        assert_eq!(
            rotate(files, &fruitless, &names(&["c.py"])),
            names(&["c.py", "a.py", "b.py"])
        );
    }
}
