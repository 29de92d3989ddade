//! What an instruction states in words that the checks can hold a task to:
//! the names it renames (`rename the class StockItem to InventoryItem`,
//! `rename calc_total() to compute_total()`), the definitions it moves to
//! another module (`move slugify() out of text_utils.py into a new module
//! slug.py`: `slugify` → `slug.slugify`), and the old names it asks to keep
//! (`keep StockItem as an alias`, ``keep `from text_utils import slugify`
//! working``, `keep the old name working`). And when a task is done: what
//! it names holds ([`unmet`]). Pure: words in, values out; what a file
//! defines is the caller's to say.

use std::sync::LazyLock;

use regex::Regex;

use super::{Rename, Task};

/// A name: identifier, maybe dotted, maybe quoted in backticks, maybe
/// written as a call (`calc_total()`).
const NAME: &str = r"`?([A-Za-z_][A-Za-z0-9_.]*?)(?:\(\))?`?";

/// What kind of name an instruction may say it is (`the class X`, `the X
/// function`).
const KIND: &str = "(?:class|function|method|constant|interface|type|variable|helper)";

static RENAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\brename\s+(?:the\s+)?(?:{KIND}\s+)?{NAME}(?:\s+{KIND})?\s+(?:to|as|into)\s+(?:the\s+)?(?:{KIND}\s+)?{NAME}(?:[\s,;:.]|$)"
    ))
    .expect("the rename pattern compiles")
});

static MOVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:move|extract)\s+(?:the\s+)?(?:{KIND}\s+)?{NAME}(?:\s+{KIND})?\s+(?:(?:out\s+of|from)\s+`?[A-Za-z0-9_./-]+`?\s+)?(?:in)?to\s+(?:a\s+|the\s+)?(?:new\s+)?(?:module\s+|file\s+)?`?(?:\./)?([A-Za-z0-9_/-]+)\.({MODULE_EXTENSIONS})`?"
    ))
    .expect("the move pattern compiles")
});

/// The file extensions a move's new module may be named with.
const MODULE_EXTENSIONS: &str = "py|tsx|ts|mts|cts|jsx|js|mjs|cjs";

static MODULE_RENAME: LazyLock<Regex> = LazyLock::new(|| {
    let file = format!(r"`?(?:\./)?([A-Za-z0-9_][A-Za-z0-9_/.-]*?\.(?:{MODULE_EXTENSIONS}))`?");
    Regex::new(&format!(
        r"(?i)\b(?:rename|move)\s+(?:the\s+)?(?:module\s+|file\s+)?{file}\s+(?:to|as|into)\s+(?:a\s+|the\s+)?(?:new\s+)?(?:module\s+|file\s+)?{file}(?:[\s,;:.)]|$)"
    ))
    .expect("the module-rename pattern compiles")
});

static KEEP_ALIAS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\bkeep(?:ing)?\s+(?:the\s+old\s+(?:name\s+)?)?{NAME}\s+(?:as\s+an?\s+(?:\w+\s+)?(?:alias|re-?export|name)|working|importable|available|exported)"
    ))
    .expect("the keep pattern compiles")
});

static KEEP_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\bkeep(?:ing)?\s+`?from\s+[A-Za-z0-9_.]+\s+import\s+([A-Za-z_][A-Za-z0-9_]*)`?",
    )
    .expect("the keep-import pattern compiles")
});

static KEEP_ES_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bkeep(?:ing)?\s+`?import\s+(?:type\s+)?\{([^}]*)\}\s*from\b")
        .expect("the keep-ES-import pattern compiles")
});

static KEEP_OLD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bkeep(?:ing)?\s+the\s+old\s+(?:name|names|import|imports|alias|aliases|path|paths)\b")
        .expect("the keep-old pattern compiles")
});

/// What an instruction states about names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stated {
    /// Old name → new name, or → `module.name` for a move.
    pub renames: Vec<Rename>,
    /// Old names the instruction asks to keep working at their old place.
    pub keep: Vec<String>,
    /// Modules renamed or moved whole, old file → new file
    /// (target-relative as written).
    pub modules: Vec<Rename>,
    /// Whether the instruction keeps the old names and paths working
    /// (`keep the old imports working`): a renamed module's names too.
    pub keep_old: bool,
}

/// What `instruction` states: its renames and moves, and the old names it
/// asks to keep.
pub fn stated(instruction: &str) -> Stated {
    let mut found = Stated::default();
    for c in RENAME.captures_iter(instruction) {
        let (from, to) = (&c[1], &c[2]);
        if from != to && !from.ends_with(".py") && !to.ends_with(".py") {
            push_rename(&mut found.renames, from, to);
        }
    }
    for c in MODULE_RENAME.captures_iter(instruction) {
        if c[1] != c[2] {
            push_rename(&mut found.modules, &c[1], &c[2]);
        }
    }
    for c in MOVE.captures_iter(instruction) {
        if c[1].contains('.') {
            // `move utils.py to helpers.py` renames a module.
            continue;
        }
        // A Python module is named with dots, a JavaScript one by its path
        // without the extension (as `lang::module_name` names them).
        let path = c[2].trim_matches('/');
        let module = if &c[3] == "py" {
            path.replace('/', ".")
        } else {
            path.to_string()
        };
        let to = format!("{module}.{}", &c[1]);
        push_rename(&mut found.renames, &c[1], &to);
    }
    let listed = KEEP_ES_IMPORT.captures_iter(instruction).flat_map(|c| {
        c[1].split(',')
            .filter_map(|n| {
                let n = n.trim().trim_start_matches("type ").trim();
                let n = n.split_whitespace().next()?;
                Some(n.to_string())
            })
            .collect::<Vec<String>>()
    });
    let mut keep: Vec<String> = KEEP_ALIAS
        .captures_iter(instruction)
        .chain(KEEP_IMPORT.captures_iter(instruction))
        .map(|c| c[1].to_string())
        .chain(listed)
        .filter(|n| {
            ![
                "from", "import", "imports", "name", "names", "alias", "path", "it", "them",
            ]
            .contains(&n.to_lowercase().as_str())
        })
        .collect();
    found.keep_old = KEEP_OLD.is_match(instruction);
    if found.keep_old {
        keep.extend(found.renames.iter().map(|r| r.from.clone()));
    }
    keep.sort();
    keep.dedup();
    found.keep = keep;
    found
}

/// Words an instruction's grammar may put where a name goes (`rename the
/// variable to something clearer`): never a name it renames.
const NOT_NAMES: &[&str] = &[
    "it",
    "them",
    "this",
    "that",
    "these",
    "those",
    "variable",
    "variables",
    "function",
    "functions",
    "class",
    "classes",
    "method",
    "methods",
    "name",
    "names",
    "file",
    "files",
    "module",
    "modules",
    "something",
    "everything",
    "one",
    "ones",
];

fn push_rename(renames: &mut Vec<Rename>, from: &str, to: &str) {
    let word =
        |n: &str| NOT_NAMES.contains(&n.rsplit('.').next().unwrap_or(n).to_lowercase().as_str());
    if word(from) || word(to) {
        return;
    }
    if !renames.iter().any(|r| r.from == from) {
        renames.push(Rename {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
}

/// What the done check may ask of the tree the task leaves.
pub trait Tree {
    /// Whether `rel` (target-relative) exists.
    fn exists(&self, rel: &str) -> bool;
    /// Whether `rel` defines `name` at its top level (a function or class
    /// by that name, or an assignment to it); `None` when the file's
    /// language is not read for definitions.
    fn defines(&self, rel: &str, name: &str, assignment_counts: bool) -> Option<bool>;
    /// The module path of `rel` (`inventory/models.py` → `inventory.models`).
    fn module_of(&self, rel: &str) -> String;
    /// The file of module path `module` (`slug` → `slug.py`).
    fn file_of(&self, module: &str) -> String;
}

/// What `task` names that does not hold in `tree`, one reason each: a
/// file it creates that does not exist, one it deletes that does, a name
/// it renames that none of its files defines, a definition it moves that
/// is not at its new module or still defined (not merely re-exported) at
/// its old one. `renames` are the task's own and, for the plan's last
/// task, those the instruction states. Empty when the task is done.
pub fn unmet(task: &Task, renames: &[Rename], tree: &dyn Tree) -> Vec<String> {
    unmet_with_modules(task, renames, (&[], false), tree)
}

/// [`unmet`], with the modules the task renames whole (old file → new
/// file): the new file must exist, and the old one must be gone unless
/// `keep_old` (it may stay to re-export).
pub fn unmet_with_modules(
    task: &Task,
    renames: &[Rename],
    (modules, keep_old): (&[Rename], bool),
    tree: &dyn Tree,
) -> Vec<String> {
    let mut missing = Vec::new();
    for module in modules {
        if !tree.exists(&module.to) {
            missing.push(format!("{} does not exist", module.to));
        }
        if !keep_old && tree.exists(&module.from) {
            missing.push(format!("{} still exists", module.from));
        }
    }
    for f in task.create.iter().filter(|f| !tree.exists(f)) {
        missing.push(format!("{f} does not exist"));
    }
    for f in task.delete.iter().filter(|f| tree.exists(f)) {
        missing.push(format!("{f} still exists"));
    }
    let own: Vec<&str> = task
        .change
        .iter()
        .chain(&task.create)
        .map(String::as_str)
        .collect();
    for rename in renames {
        if let Some((module, name)) = rename.to.rsplit_once('.') {
            missing.extend(moved_unmet(&rename.from, module, name, &own, tree));
            continue;
        }
        let defined = own
            .iter()
            .filter(|f| tree.exists(f))
            .filter_map(|f| tree.defines(f, &rename.to, true))
            .collect::<Vec<bool>>();
        if !defined.is_empty() && !defined.contains(&true) {
            missing.push(format!("no file of the task defines {}", rename.to));
        }
    }
    let mut seen = Vec::new();
    missing.retain(|m| {
        let new = !seen.contains(m);
        seen.push(m.clone());
        new
    });
    missing
}

/// What does not hold of `from` moved to `module.name`.
fn moved_unmet(from: &str, module: &str, name: &str, own: &[&str], tree: &dyn Tree) -> Vec<String> {
    let mut missing = Vec::new();
    let place = own
        .iter()
        .copied()
        .find(|f| tree.module_of(f) == module || tree.module_of(f).ends_with(&format!(".{module}")))
        .map(str::to_string)
        .unwrap_or_else(|| tree.file_of(module));
    let old_name = from.rsplit('.').next().unwrap_or(from);
    if !tree.exists(&place) {
        missing.push(format!("{place} does not exist"));
    } else if tree.defines(&place, name, false) == Some(false) {
        missing.push(format!("{place} does not define {name}"));
    }
    for f in own.iter().filter(|f| **f != place && tree.exists(f)) {
        if tree.defines(f, old_name, false) == Some(true) {
            missing.push(format!(
                "{f} still defines {old_name} (a re-export is an import, not a definition)"
            ));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::TaskKind;
    use std::collections::BTreeMap;

    fn rename(from: &str, to: &str) -> Rename {
        Rename {
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn renames_moves_and_kept_names_are_read_from_the_words() {
        let s = stated("Rename the class StockItem to InventoryItem everywhere in the inventory package; keep StockItem as an alias.");
        assert_eq!(s.renames, vec![rename("StockItem", "InventoryItem")]);
        assert_eq!(s.keep, vec!["StockItem"]);
        let s = stated("Rename calc_total() to compute_total() and update its callers");
        assert_eq!(s.renames, vec![rename("calc_total", "compute_total")]);
        assert!(s.keep.is_empty());
        let s = stated("move slugify() out of text_utils.py into a new module slug.py; keep `from text_utils import slugify` working");
        assert_eq!(s.renames, vec![rename("slugify", "slug.slugify")]);
        assert_eq!(s.keep, vec!["slugify"]);
        let s = stated("Move parse_money into shop/money.py and keep the old import working");
        assert_eq!(
            s.renames,
            vec![rename("parse_money", "shop.money.parse_money")]
        );
        assert_eq!(s.keep, vec!["parse_money"]);
        assert_eq!(
            stated("Make average() return 0.0 for an empty list"),
            Stated::default()
        );
        assert!(stated("rename utils.py to helpers.py").renames.is_empty());
    }

    #[test]
    fn the_kind_of_name_may_come_after_it_and_extract_is_a_move() {
        let s = stated("Rename the parseMoney function to readMoney and update its callers");
        assert_eq!(s.renames, vec![rename("parseMoney", "readMoney")]);
        assert!(stated("Rename the variable to something clearer")
            .renames
            .is_empty());
        assert!(stated("rename it to total").renames.is_empty());
        let s = stated("Rename the `Ledger` class to `Book`.");
        assert_eq!(s.renames, vec![rename("Ledger", "Book")]);
        let s = stated("Extract the validate_order() helper from orders.py into validation.py");
        assert_eq!(
            s.renames,
            vec![rename("validate_order", "validation.validate_order")]
        );
    }

    #[test]
    fn module_renames_are_read_from_the_words() {
        let s = stated("Rename utils.py to helpers.py and update every import");
        assert_eq!(s.modules, vec![rename("utils.py", "helpers.py")]);
        assert!(s.renames.is_empty() && !s.keep_old);
        let s =
            stated("move `src/util/strings.ts` to `src/text.ts`; keep the old imports working.");
        assert_eq!(
            s.modules,
            vec![rename("src/util/strings.ts", "src/text.ts")]
        );
        assert!(s.renames.is_empty() && s.keep_old);
        let s = stated("Rename the module shop/cart.py to shop/basket.py");
        assert_eq!(s.modules, vec![rename("shop/cart.py", "shop/basket.py")]);
    }

    #[test]
    fn a_module_rename_is_done_when_the_new_file_exists_and_the_old_is_gone() {
        let t = task(&["utils.py", "app.py"], &["helpers.py"]);
        let modules = [rename("utils.py", "helpers.py")];
        let before = Files(BTreeMap::from([("utils.py", &["f"][..])]));
        assert_eq!(
            unmet_with_modules(&t, &[], (&modules, false), &before),
            vec!["helpers.py does not exist", "utils.py still exists"]
        );
        assert_eq!(
            unmet_with_modules(&t, &[], (&modules, true), &before),
            vec!["helpers.py does not exist"]
        );
        let after = Files(BTreeMap::from([("helpers.py", &["f"][..])]));
        assert!(unmet_with_modules(&t, &[], (&modules, false), &after).is_empty());
    }

    #[test]
    fn typescript_moves_and_kept_imports_are_read_from_the_words() {
        let s = stated("Move parseMoney() out of src/money.ts into a new module src/parse.ts; keep `import { parseMoney } from './money'` working");
        assert_eq!(
            s.renames,
            vec![rename("parseMoney", "src/parse.parseMoney")]
        );
        assert_eq!(s.keep, vec!["parseMoney"]);
        let s = stated("move the class Ledger to ./lib/ledger-store.js and keep `import { type Entry, Ledger as L } from './books'` working");
        assert_eq!(s.renames, vec![rename("Ledger", "lib/ledger-store.Ledger")]);
        assert_eq!(s.keep, vec!["Entry", "Ledger"]);
        let s = stated(
            "Rename formatMoney to formatAmount everywhere in src; keep formatMoney exported",
        );
        assert_eq!(s.renames, vec![rename("formatMoney", "formatAmount")]);
        assert_eq!(s.keep, vec!["formatMoney"]);
    }

    struct Files(BTreeMap<&'static str, &'static [&'static str]>);

    impl Tree for Files {
        fn exists(&self, rel: &str) -> bool {
            self.0.contains_key(rel)
        }
        fn defines(&self, rel: &str, name: &str, assignment_counts: bool) -> Option<bool> {
            let defs = self.0.get(rel)?;
            Some(defs.iter().any(|d| {
                d.strip_prefix('=')
                    .map_or(*d == name, |a| assignment_counts && a == name)
            }))
        }
        fn module_of(&self, rel: &str) -> String {
            rel.trim_end_matches(".py").replace('/', ".")
        }
        fn file_of(&self, module: &str) -> String {
            format!("{}.py", module.replace('.', "/"))
        }
    }

    fn task(change: &[&str], create: &[&str]) -> Task {
        Task {
            number: 1,
            title: "t".into(),
            change: change.iter().map(|s| s.to_string()).collect(),
            create: create.iter().map(|s| s.to_string()).collect(),
            delete: Vec::new(),
            depends_on: Vec::new(),
            kind: TaskKind::Preserving,
            renames: Vec::new(),
        }
    }

    #[test]
    fn a_move_is_done_at_its_new_place_and_not_at_its_old_one() {
        let t = task(&["text_utils.py", "blog.py"], &["slug.py"]);
        let moved = [rename("slugify", "slug.slugify")];
        let nothing = Files(BTreeMap::from([(
            "text_utils.py",
            &["slugify", "word_count"][..],
        )]));
        assert_eq!(
            unmet(&t, &moved, &nothing),
            vec![
                "slug.py does not exist",
                "text_utils.py still defines slugify (a re-export is an import, not a definition)"
            ]
        );
        let half = Files(BTreeMap::from([
            ("text_utils.py", &["slugify"][..]),
            ("slug.py", &["slugify"][..]),
        ]));
        assert_eq!(
            unmet(&t, &moved, &half),
            vec![
                "text_utils.py still defines slugify (a re-export is an import, not a definition)"
            ]
        );
        let done = Files(BTreeMap::from([
            ("text_utils.py", &["word_count"][..]),
            ("slug.py", &["slugify"][..]),
        ]));
        assert!(unmet(&t, &moved, &done).is_empty());
    }

    #[test]
    fn a_rename_is_done_when_a_file_of_the_task_defines_the_new_name() {
        let t = task(&["inventory/models.py"], &[]);
        let renamed = [rename("StockItem", "InventoryItem")];
        let before = Files(BTreeMap::from([(
            "inventory/models.py",
            &["StockItem"][..],
        )]));
        assert_eq!(
            unmet(&t, &renamed, &before),
            vec!["no file of the task defines InventoryItem"]
        );
        let after = Files(BTreeMap::from([(
            "inventory/models.py",
            &["InventoryItem", "=StockItem"][..],
        )]));
        assert!(unmet(&t, &renamed, &after).is_empty());
    }
}
