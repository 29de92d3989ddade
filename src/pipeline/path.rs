//! Paths of the code under work, by what they are relative to.
//!
//! A run works on a target folder inside a repository. git speaks of
//! files relative to the repository's root ([`RepoPath`]: `svc/pkg/a.py`);
//! the tools, prompts and Reviewer rules speak of them relative to the
//! target ([`TargetPath`]: `pkg/a.py`), so a prompt reads the same in
//! every worktree. [`TargetDir`] is the target folder itself, relative to
//! the repository, and the only way from one kind to the other.
//!
//! Both are `/`-separated and never absolute; both read as `&str` where a
//! function only needs the text.

use std::borrow::Borrow;
use std::ops::Deref;

macro_rules! relative_path {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize,
            serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The path as given (`/`-separated, relative).
            pub fn new(path: impl Into<String>) -> Self {
                Self(path.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<std::path::Path> for $name {
            fn as_ref(&self) -> &std::path::Path {
                std::path::Path::new(&self.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl From<&str> for $name {
            fn from(path: &str) -> Self {
                Self(path.to_string())
            }
        }

        impl From<String> for $name {
            fn from(path: String) -> Self {
                Self(path)
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

relative_path!(
    /// A path relative to the repository's root: what git reads and writes.
    RepoPath
);

relative_path!(
    /// A path relative to the target folder: what the tools, the prompts
    /// and the Reviewer's rules see.
    TargetPath
);

/// The target folder, relative to the repository's root (empty when the
/// target is the repository itself).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct TargetDir(String);

impl TargetDir {
    /// The folder `rel` (relative to the repository's root, no trailing `/`).
    pub fn new(rel: impl Into<String>) -> Self {
        Self(rel.into().trim_end_matches('/').to_string())
    }

    /// The folder's path relative to the repository (empty at the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A target-relative path as the repository sees it.
    pub fn repo_path(&self, rel: &str) -> RepoPath {
        if self.0.is_empty() {
            RepoPath::new(rel)
        } else {
            RepoPath::new(format!("{}/{rel}", self.0))
        }
    }

    /// A repository-relative path as the target sees it; `None` when it
    /// lies outside the target.
    pub fn target_path(&self, path: &str) -> Option<TargetPath> {
        self.relative(path).map(TargetPath::new)
    }

    /// [`Self::target_path`], borrowing.
    pub fn relative<'a>(&self, path: &'a str) -> Option<&'a str> {
        if self.0.is_empty() {
            return Some(path);
        }
        path.strip_prefix(self.0.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
    }
}

impl std::fmt::Display for TargetDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_go_between_the_repository_and_the_target() {
        let root = TargetDir::new("");
        assert_eq!(root.target_path("a/b.py"), Some(TargetPath::new("a/b.py")));
        assert_eq!(root.repo_path("a.py"), RepoPath::new("a.py"));
        let svc = TargetDir::new("svc");
        assert_eq!(svc.target_path("svc/a.py"), Some(TargetPath::new("a.py")));
        assert_eq!(svc.target_path("svc2/a.py"), None);
        assert_eq!(svc.target_path("svc"), None);
        assert_eq!(svc.target_path("other/a.py"), None);
        assert_eq!(svc.repo_path("a.py"), RepoPath::new("svc/a.py"));
        assert_eq!(TargetDir::new("svc/"), svc);
    }

    #[test]
    fn a_path_reads_as_its_text_and_finds_itself_by_it() {
        let p = TargetPath::new("pkg/a.py");
        assert_eq!(&*p, "pkg/a.py");
        assert_eq!(p, "pkg/a.py");
        let set: std::collections::BTreeSet<TargetPath> = [p.clone()].into();
        assert!(set.contains("pkg/a.py"));
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"pkg/a.py\"");
    }
}
