//! The Judge's export check, for a behaviour-preserving task in a language
//! whose modules' API is their export list (JavaScript/TypeScript; see
//! [`crate::lang::names`]): every name a changed or deleted module
//! exported at the best state — its own exports and what it passes on
//! through `export * from` — must still be exported by the same module in
//! the changed tree, and so must every name of a module that re-exports
//! one of them (a package's `index.ts` barrel). The instruction's renames
//! apply: a renamed name must be exported under its new name, a moved one
//! may leave its old module unless the instruction keeps it there, and a
//! name the instruction keeps must stay. Types and signatures are not
//! compared here: `tsc` over the importers is (a type error a change adds
//! is a regression of the task's verdict).

use std::collections::BTreeSet;
use std::time::Instant;

use super::api::{ApiCheck, ModuleNames, Renamed};
use crate::lang::names::{self, Read};

/// Rounds of following re-exporting modules (barrels of barrels).
const MAX_ROUNDS: usize = 4;

/// The export check of a change to `changed` (target-relative, deleted
/// files included), in a target whose sources after the change are
/// `sources`; `best` reads the best state's tree, `now` the changed one.
pub fn check_exports(
    changed: &[String],
    sources: &[String],
    (best, now): (Read<'_>, Read<'_>),
    renamed: &Renamed,
) -> ApiCheck {
    let started = Instant::now();
    let mut modules: Vec<String> = changed
        .iter()
        .filter(|f| is_api_module(f))
        .filter(|f| best(f).is_some())
        .cloned()
        .collect();
    add_reexporters(&mut modules, sources, now);
    let mut checked = Vec::new();
    let mut problems = Vec::new();
    for file in &modules {
        let Some(before) = names::exports(file, best) else {
            continue;
        };
        let after = names::exports(file, now);
        problems.extend(lost(file, &before, (after.as_ref(), now), renamed));
        checked.push(ModuleNames {
            file: file.clone(),
            names: before.len(),
            calls: 0,
            not_checked: None,
        });
    }
    ApiCheck::of(problems, checked, started)
}

/// Whether `rel` is a module whose export list is compared: of a
/// language read for exports, not a test.
fn is_api_module(rel: &str) -> bool {
    names::has_exports(rel) && !crate::lang::is_test(rel)
}

/// Adds to `modules` the unchanged sources that re-export from one of
/// them, and from those in turn.
fn add_reexporters(modules: &mut Vec<String>, sources: &[String], now: Read<'_>) {
    let candidates: Vec<(String, String)> = sources
        .iter()
        .filter(|f| is_api_module(f))
        .filter(|f| !modules.contains(f))
        .filter_map(|f| now(f).map(|text| (f.clone(), text)))
        .filter(|(_, text)| text.contains("export"))
        .collect();
    let mut pending: Vec<(String, Vec<String>)> = candidates
        .into_iter()
        .map(|(f, text)| {
            let from = names::reexports_from(&f, &text, now);
            (f, from)
        })
        .filter(|(_, from)| !from.is_empty())
        .collect();
    for _ in 0..MAX_ROUNDS {
        let (reached, rest): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|(_, from)| from.iter().any(|m| modules.contains(m)));
        pending = rest;
        if reached.is_empty() {
            return;
        }
        modules.extend(reached.into_iter().map(|(f, _)| f));
    }
}

/// What `file` no longer exports of `before` (`after`: `None` when the
/// change deleted it), with the instruction's renames applied.
fn lost(
    file: &str,
    before: &BTreeSet<String>,
    (after, now): (Option<&BTreeSet<String>>, Read<'_>),
    renamed: &Renamed,
) -> Vec<String> {
    let exported = |n: &str| after.is_some_and(|a| a.contains(n));
    let gone = if after.is_none() {
        format!(" ({file} was deleted)")
    } else {
        String::new()
    };
    let mut problems = Vec::new();
    for name in before.iter().filter(|n| !exported(n)) {
        let kept = renamed.keep.iter().any(|k| k == name);
        let keeps =
            format!("{file}: {name}: no longer exported, which the instruction keeps{gone}");
        let problem = match renamed.renames.get(name) {
            Some(to) if !to.contains('.') && !exported(to) => {
                format!("{file}: {name}: renamed to {to}, which it does not export{gone}")
            }
            Some(to) => match moved_away(to, now) {
                Some(problem) => format!("{file}: {name}: {problem}"),
                None if !kept => continue,
                None => keeps,
            },
            None => format!("{file}: {name}: no longer exported{gone}"),
        };
        problems.push(problem);
    }
    problems
}

/// What is wrong with a name moved to `to` (`module.name`): its new
/// module does not exist or does not export it. `None` when it does, or
/// when the new module is of a language not read for exports.
fn moved_away(to: &str, now: Read<'_>) -> Option<String> {
    let (module, name) = to.rsplit_once('.')?;
    let file = names::file_of(module, &|p| now(p).is_some());
    if !names::has_exports(&file) {
        return None;
    }
    match names::exports(&file, now) {
        None => Some(format!("moved to {module}, which does not exist")),
        Some(found) if !found.contains(name) => {
            Some(format!("moved to {file}, which does not export {name}"))
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::pipeline::BehaviourOutcome;

    fn files(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    fn renamed(renames: &[(&str, &str)], keep: &[&str]) -> Renamed {
        Renamed {
            renames: renames
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            keep: keep.iter().map(|k| k.to_string()).collect(),
        }
    }

    fn check(
        best: &BTreeMap<String, String>,
        now: &BTreeMap<String, String>,
        changed: &[&str],
        renamed: &Renamed,
    ) -> ApiCheck {
        let changed: Vec<String> = changed.iter().map(|c| c.to_string()).collect();
        let sources: Vec<String> = now.keys().cloned().collect();
        let read_best = |p: &str| best.get(p).cloned();
        let read_now = |p: &str| now.get(p).cloned();
        check_exports(&changed, &sources, (&read_best, &read_now), renamed)
    }

    const MONEY: &str = "export function parseMoney() {}\nexport function addMoney() {}\n";
    const INDEX: &str = "export * from './money';\n";

    #[test]
    fn a_move_with_a_re_export_keeps_every_name_and_the_barrel_is_checked_too() {
        let best = files(&[("src/money.ts", MONEY), ("src/index.ts", INDEX)]);
        let now = files(&[
            (
                "src/money.ts",
                "export { parseMoney } from './parse';\nexport function addMoney() {}\n",
            ),
            ("src/parse.ts", "export function parseMoney() {}\n"),
            ("src/index.ts", INDEX),
            (
                "tests/money.test.ts",
                "import { parseMoney } from '../src/money';\n",
            ),
        ]);
        let moved = renamed(&[("parseMoney", "src/parse.parseMoney")], &["parseMoney"]);
        let found = check(&best, &now, &["src/money.ts", "src/parse.ts"], &moved);
        assert_eq!(found.outcome, BehaviourOutcome::Same, "{found:?}");
        let files: Vec<&str> = found.modules.iter().map(|m| m.file.as_str()).collect();
        assert_eq!(files, ["src/money.ts", "src/index.ts"]);
        assert_eq!(found.modules[0].names, 2);
    }

    #[test]
    fn a_name_moved_away_must_be_exported_at_its_new_module() {
        let best = files(&[("src/money.ts", MONEY)]);
        let moved = renamed(&[("parseMoney", "src/parse.parseMoney")], &[]);
        let now = files(&[
            ("src/money.ts", "export function addMoney() {}\n"),
            ("src/parse.ts", "export function parse() {}\n"),
        ]);
        let found = check(&best, &now, &["src/money.ts", "src/parse.ts"], &moved);
        assert_eq!(
            found.problems,
            ["src/money.ts: parseMoney: moved to src/parse.ts, which does not export parseMoney"]
        );
        let nowhere = files(&[("src/money.ts", "export function addMoney() {}\n")]);
        let found = check(&best, &nowhere, &["src/money.ts"], &moved);
        assert_eq!(
            found.problems,
            ["src/money.ts: parseMoney: moved to src/parse, which does not exist"]
        );
    }

    #[test]
    fn a_dropped_export_is_named_in_its_module_and_in_the_barrel() {
        let best = files(&[("src/money.ts", MONEY), ("src/index.ts", INDEX)]);
        let now = files(&[
            (
                "src/money.ts",
                "export function parseMoney() {}\nfunction addMoney() {}\n",
            ),
            ("src/index.ts", INDEX),
        ]);
        let found = check(&best, &now, &["src/money.ts"], &Renamed::default());
        assert_eq!(found.outcome, BehaviourOutcome::Regressed);
        assert_eq!(
            found.problems,
            [
                "src/money.ts: addMoney: no longer exported",
                "src/index.ts: addMoney: no longer exported"
            ]
        );
        assert!(found
            .describe()
            .starts_with("public names lost or changed: "));
    }

    #[test]
    fn renames_count_under_their_new_name_and_kept_names_must_stay() {
        let best = files(&[("src/money.ts", MONEY)]);
        let renamed_only = files(&[(
            "src/money.ts",
            "export function readMoney() {}\nexport function addMoney() {}\n",
        )]);
        let rename = renamed(&[("parseMoney", "readMoney")], &[]);
        let found = check(&best, &renamed_only, &["src/money.ts"], &rename);
        assert_eq!(found.outcome, BehaviourOutcome::Same, "{found:?}");
        let keep = renamed(&[("parseMoney", "readMoney")], &["parseMoney"]);
        let found = check(&best, &renamed_only, &["src/money.ts"], &keep);
        assert_eq!(
            found.problems,
            ["src/money.ts: parseMoney: no longer exported, which the instruction keeps"]
        );
        let wrong = renamed(&[("parseMoney", "loadMoney")], &[]);
        let found = check(&best, &renamed_only, &["src/money.ts"], &wrong);
        assert_eq!(
            found.problems,
            ["src/money.ts: parseMoney: renamed to loadMoney, which it does not export"]
        );
    }

    #[test]
    fn a_deleted_module_loses_its_names_and_python_or_new_files_are_not_read() {
        let best = files(&[("src/money.ts", MONEY), ("app.py", "def f(): pass\n")]);
        let now = files(&[
            ("app.py", "def g(): pass\n"),
            ("src/new.ts", "export const a = 1;\n"),
        ]);
        let found = check(
            &best,
            &now,
            &["src/money.ts", "app.py", "src/new.ts"],
            &Renamed::default(),
        );
        assert_eq!(found.modules.len(), 1);
        assert_eq!(
            found.problems[0],
            "src/money.ts: addMoney: no longer exported (src/money.ts was deleted)"
        );
        let nothing = check(&best, &now, &["app.py"], &Renamed::default());
        assert_eq!(nothing.outcome, BehaviourOutcome::NotChecked);
    }
}
