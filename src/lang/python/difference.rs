//! What the checkout has and the run's worktree lacks, named before any
//! model call: a module of the project's own that the baseline's tests
//! could not import in the worktree, while its file is there in the
//! user's checkout. The worktree holds the committed files and the ignored
//! ones laid in ([`super::laid`]); what is left is a file swarm does not
//! lay (not committed, over the size budget, in a folder it never copies
//! from). No model can fix that, so the run stops and says which file it is
//! and what to do.

use std::path::{Path, PathBuf};

use crate::pipeline::{ImportCheck, TestRun};
use crate::tools::suite::MissingPiece;
use crate::tools::Symptom;

/// Where the checkout and the worktree are, and what was laid.
pub struct Sides<'a> {
    /// The user's checkout (its root).
    pub checkout: &'a Path,
    /// The run's worktree (its root).
    pub worktree: &'a Path,
    /// The folders of the worktree a module may be found from (the target,
    /// `src/`, the project's declared package folders).
    pub bases: Vec<PathBuf>,
    /// The checkout's ignored files and folders (see `SuiteSetup::ignored`).
    pub ignored: &'a [String],
}

/// The modules the baseline's tests (`run`) or, without tests, its import
/// checks (`check`) could not import in the worktree whose file the
/// checkout has, each as a [`MissingPiece::NotInWorktree`].
pub fn differences(
    run: Option<&TestRun>,
    check: Option<&ImportCheck>,
    sides: &Sides<'_>,
) -> Vec<MissingPiece> {
    let mut modules: Vec<String> = run
        .map(crate::tools::pytest_symptoms)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|symptom| match symptom {
            Symptom::MissingModule { module, .. } => Some(module),
            _ => None,
        })
        .collect();
    let named = regex::Regex::new(r"No module named '([^']+)'").expect("a valid pattern");
    for (_, problem) in check.map_or(&[][..], |c| c.import_errors.as_slice()) {
        modules.extend(named.captures(problem).map(|found| found[1].to_string()));
    }
    let mut found: Vec<MissingPiece> = Vec::new();
    for module in modules {
        if let Some(piece) = difference(&module, sides) {
            if !found.contains(&piece) {
                found.push(piece);
            }
        }
    }
    found
}

/// `module` as a file of the checkout the worktree lacks, if it is one.
fn difference(module: &str, sides: &Sides<'_>) -> Option<MissingPiece> {
    let parts: Vec<&str> = module.split('.').collect();
    let (last, package) = parts.split_last()?;
    for base in &sides.bases {
        let Ok(rel_base) = base.strip_prefix(sides.worktree) else {
            continue;
        };
        let folder = package
            .iter()
            .fold(rel_base.to_path_buf(), |p, s| p.join(s));
        let Some(rel) = module_file(&sides.checkout.join(&folder), last) else {
            continue;
        };
        let rel = folder.join(rel);
        if sides.worktree.join(&rel).exists() {
            continue;
        }
        let file = rel.to_string_lossy().replace('\\', "/");
        let (why, remedy) = reason(&file, sides);
        return Some(MissingPiece::NotInWorktree {
            module: module.to_string(),
            file,
            why,
            remedy,
        });
    }
    None
}

/// The file (relative to `folder`) of module `name` in `folder`: `name.py`,
/// `name/__init__.py`, or an extension module `name.*.so` / `.pyd`.
fn module_file(folder: &Path, name: &str) -> Option<PathBuf> {
    for rel in [format!("{name}.py"), format!("{name}/__init__.py")] {
        if folder.join(&rel).is_file() {
            return Some(PathBuf::from(rel));
        }
    }
    let entries = std::fs::read_dir(folder).ok()?;
    entries.flatten().find_map(|e| {
        let file = e.file_name().to_string_lossy().into_owned();
        let extension = file.ends_with(".so") || file.ends_with(".pyd");
        (extension && file.split('.').next() == Some(name)).then(|| PathBuf::from(file))
    })
}

/// Why swarm did not lay `file` (repo-relative) in its worktree, and what
/// the user can do.
fn reason(file: &str, sides: &Sides<'_>) -> (String, String) {
    let ignored = sides
        .ignored
        .iter()
        .any(|i| i == file || (i.ends_with('/') && file.starts_with(i.as_str())));
    if !ignored {
        return (
            "it is not committed, and swarm judges the committed files".to_string(),
            "commit it (or add it to .gitignore if it is generated) and run again".to_string(),
        );
    }
    let size = std::fs::metadata(sides.checkout.join(file)).map_or(0, |m| m.len());
    if size > super::laid::FILE_BUDGET {
        return (
            format!(
                "it is git-ignored and {} MiB, over the {} MiB swarm copies into its worktree",
                size >> 20,
                super::laid::FILE_BUDGET >> 20
            ),
            "build it smaller (without debug symbols), or install the project so that it is \
             found outside the checkout, and run again"
                .to_string(),
        );
    }
    (
        "it is git-ignored where swarm does not copy from (outside the project's packages, \
         or in build output, caches or virtualenvs)"
            .to_string(),
        "generate it inside the package that imports it, or commit it, and run again".to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, size: u64) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
    }

    #[test]
    fn names_the_checkout_file_the_worktree_lacks_and_why() {
        let checkout = tempfile::tempdir().unwrap();
        let worktree = tempfile::tempdir().unwrap();
        let (c, w) = (checkout.path(), worktree.path());
        for root in [c, w] {
            write(root, "src/pkg/__init__.py", 1);
        }
        write(
            c,
            "src/pkg/_fast.cpython-311-x86_64-linux-gnu.so",
            super::super::laid::FILE_BUDGET + 1,
        );
        write(c, "src/pkg/draft.py", 1);
        let ignored = vec!["src/pkg/_fast.cpython-311-x86_64-linux-gnu.so".to_string()];
        let sides = Sides {
            checkout: c,
            worktree: w,
            bases: vec![w.to_path_buf(), w.join("src")],
            ignored: &ignored,
        };
        let Some(MissingPiece::NotInWorktree { file, why, .. }) = difference("pkg._fast", &sides)
        else {
            panic!("a difference");
        };
        assert_eq!(file, "src/pkg/_fast.cpython-311-x86_64-linux-gnu.so");
        assert!(why.contains("over the 32 MiB"), "{why}");
        let Some(MissingPiece::NotInWorktree { why, .. }) = difference("pkg.draft", &sides) else {
            panic!("a difference");
        };
        assert!(why.contains("not committed"), "{why}");
        // Without tests, the import checks say it the same way.
        let check = ImportCheck {
            import_errors: vec![(
                "src/pkg/__init__.py".to_string(),
                "ModuleNotFoundError: No module named 'pkg.draft'".to_string(),
            )],
            ..ImportCheck::default()
        };
        let found = differences(None, Some(&check), &sides);
        assert!(
            matches!(found.as_slice(), [MissingPiece::NotInWorktree { file, .. }] if file == "src/pkg/draft.py"),
            "{found:?}"
        );
        // A module neither side has is the code's to fix.
        assert_eq!(difference("pkg.typo", &sides), None);
        assert_eq!(difference("pkg", &sides), None);
    }
}
