//! Secrets in the code under work never leave the machine: every secret
//! value (see [`shapes`] for what counts) is replaced by a stable
//! placeholder before a prompt is sent or a log entry is written, and a
//! reply that mentions a placeholder is mapped back to the value.
//!
//! [`Withheld`] is the run's table of secrets: the files are scanned once
//! at the start ([`Withheld::scan`], which records where each secret is),
//! and every text on its way out ([`Withheld::redact`]) is scanned again,
//! so a secret that only shows up in a tool's output (a failing test's
//! message) is withheld as well. A value keeps its placeholder for the
//! whole run: `[SECRET_2_AWS_SECRET_KEY]` in one prompt is the same value
//! in the next. The lines of a private key block's body are values of
//! their own (`[SECRET_3_PRIVATE_KEY_PART_1]`, `…_PART_2`, …), so replacing
//! never changes a text's lines and a diff written against the redacted
//! text applies to the real one once mapped back ([`Withheld::restore`]).
//!
//! This module neither sends nor writes anything; the chat model wrapper
//! (`llm::withhold`), the Fixer and the experiment log call it. A leaf: it
//! knows no other module of the crate.

pub mod shapes;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// Where a secret was found: a file of the target and its line, or (when
/// `file` is `None`) a text on its way out, such as a tool's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub file: Option<String>,
    pub line: usize,
}

/// One withheld value.
#[derive(Clone, Debug)]
struct Entry {
    value: String,
    placeholder: String,
    kind: &'static str,
    places: Vec<Place>,
}

/// The table behind [`Withheld`].
#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    /// Value → index in `entries`.
    index: HashMap<String, usize>,
    /// Secrets so far (a key block counts once).
    groups: usize,
    /// Every known value, longest first, as one pattern; rebuilt when a
    /// value is added.
    known: Option<Regex>,
}

/// The run's secrets and their placeholders. `Debug` shows counts only.
#[derive(Default)]
pub struct Withheld {
    table: Mutex<Table>,
}

impl std::fmt::Debug for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = self.lock();
        f.debug_struct("Withheld")
            .field("secrets", &table.groups)
            .field("values", &table.entries.len())
            .finish()
    }
}

/// How many secrets a run withheld from the model, and where they were.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Secrets withheld (a private key block counts once).
    pub withheld: usize,
    /// `settings.py:4 (AWS access key id)`, or `a tool's output (…)` for
    /// one that no file of the target showed; each secret once.
    pub places: Vec<String>,
    /// `--allow-secrets`: nothing was withheld, secrets were sent as they are.
    pub allowed: bool,
}

impl Report {
    /// The report of a run with `--allow-secrets`.
    pub fn allowed() -> Self {
        Self {
            allowed: true,
            ..Self::default()
        }
    }

    /// One line for the summary: `2 withheld from the model (…)`.
    pub fn describe(&self) -> String {
        if self.allowed {
            return "sent to the model as they are (--allow-secrets)".to_string();
        }
        format!(
            "{} withheld from the model and the log ({})",
            self.withheld,
            self.places.join(", ")
        )
    }
}

/// Matches any placeholder, known or not.
fn placeholder_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"\[SECRET_[0-9]+_[A-Z0-9_]+\]").expect("the placeholder pattern is valid")
    })
}

/// The placeholders in `text`, in order (known or not).
pub fn placeholders_in(text: &str) -> Vec<&str> {
    placeholder_pattern()
        .find_iter(text)
        .map(|m| m.as_str())
        .collect()
}

/// The placeholder of secret number `group` of shape `kind` (and `part`
/// of a key block's body).
fn placeholder_of(group: usize, kind: &str, part: Option<usize>) -> String {
    let name = kind.replace('-', "_").to_ascii_uppercase();
    match part {
        Some(part) => format!("[SECRET_{group}_{name}_PART_{part}]"),
        None => format!("[SECRET_{group}_{name}]"),
    }
}

impl Withheld {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the secrets of one file of the target (`file`, as the
    /// summary names it), with their lines.
    pub fn scan(&self, file: &str, text: &str) {
        let mut table = self.lock();
        table.add_found(text, Some(file));
    }

    /// `text` with every secret replaced by its placeholder; secrets not
    /// seen before are added to the table.
    pub fn redact(&self, text: &str) -> String {
        let mut table = self.lock();
        table.add_found(text, None);
        let Some(known) = table.known_pattern() else {
            return text.to_string();
        };
        if !known.is_match(text) {
            return text.to_string();
        }
        let known = known.clone();
        known
            .replace_all(text, |caps: &regex::Captures<'_>| {
                table
                    .index
                    .get(&caps[0])
                    .map(|&i| table.entries[i].placeholder.clone())
                    .unwrap_or_else(|| caps[0].to_string())
            })
            .into_owned()
    }

    /// `text` with every known placeholder replaced by its secret; an
    /// unknown placeholder stays as it is.
    pub fn restore(&self, text: &str) -> String {
        if !text.contains("[SECRET_") {
            return text.to_string();
        }
        let table = self.lock();
        placeholder_pattern()
            .replace_all(text, |caps: &regex::Captures<'_>| {
                table
                    .entries
                    .iter()
                    .find(|e| e.placeholder == caps[0])
                    .map(|e| e.value.clone())
                    .unwrap_or_else(|| caps[0].to_string())
            })
            .into_owned()
    }

    /// Whether no secret was found so far.
    pub fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// How many secrets were withheld, and where.
    pub fn report(&self) -> Report {
        let table = self.lock();
        let mut places = Vec::new();
        let mut seen_groups = std::collections::BTreeSet::new();
        for entry in &table.entries {
            let group = group_of(&entry.placeholder);
            if !seen_groups.insert(group) {
                continue;
            }
            let label = shapes::label(entry.kind);
            let files: Vec<String> = entry
                .places
                .iter()
                .filter_map(|p| p.file.as_ref().map(|f| format!("{f}:{}", p.line)))
                .collect();
            if files.is_empty() {
                places.push(format!("a tool's output ({label})"));
            } else {
                places.push(format!("{} ({label})", files.join(", ")));
            }
        }
        Report {
            withheld: table.groups,
            places,
            allowed: false,
        }
    }
}

/// The secret number of a placeholder (`2` of `[SECRET_2_JWT]`).
fn group_of(placeholder: &str) -> usize {
    placeholder
        .trim_start_matches("[SECRET_")
        .split('_')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Table {
    /// Adds the secrets [`shapes::find`] sees in `text`; with a `file`,
    /// records their lines there.
    fn add_found(&mut self, text: &str, file: Option<&str>) {
        let found = shapes::find(text);
        if found.is_empty() {
            return;
        }
        let mut block_group = 0;
        for f in found {
            let value = &text[f.start..f.end];
            let place = Place {
                file: file.map(str::to_string),
                line: text[..f.start].matches('\n').count() + 1,
            };
            if let Some(&i) = self.index.get(value) {
                let entry = &mut self.entries[i];
                if file.is_some() && !entry.places.contains(&place) {
                    entry.places.retain(|p| p.file.is_some());
                    entry.places.push(place);
                }
                block_group = group_of(&entry.placeholder);
                continue;
            }
            let group = if f.kind == "private-key" && f.part > 1 && block_group > 0 {
                block_group
            } else {
                self.groups += 1;
                self.groups
            };
            block_group = group;
            let part = (f.kind == "private-key").then_some(f.part);
            self.index.insert(value.to_string(), self.entries.len());
            self.entries.push(Entry {
                value: value.to_string(),
                placeholder: placeholder_of(group, f.kind, part),
                kind: f.kind,
                places: vec![place],
            });
            self.known = None;
        }
    }

    /// Every known value as one pattern, longest first.
    fn known_pattern(&mut self) -> Option<&Regex> {
        if self.entries.is_empty() {
            return None;
        }
        if self.known.is_none() {
            let mut values: Vec<&str> = self.entries.iter().map(|e| e.value.as_str()).collect();
            values.sort_by_key(|v| std::cmp::Reverse(v.len()));
            let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
            self.known = Regex::new(&alternation.join("|")).ok();
        }
        self.known.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &str = "\"\"\"Settings.\"\"\"\n\nAWS_ACCESS_KEY_ID = \"AKIAIOSFODNN7EXAMPLE\"\nAWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n";

    #[test]
    fn placeholders_are_stable_and_map_back_byte_for_byte() {
        let withheld = Withheld::new();
        withheld.scan("pkg/settings.py", SETTINGS);
        let redacted = withheld.redact(SETTINGS);
        assert!(!redacted.contains("AKIAIOSFODNN7EXAMPLE"), "{redacted}");
        assert!(!redacted.contains("wJalrXUtnFEMI"), "{redacted}");
        assert!(redacted.contains("AWS_ACCESS_KEY_ID = \"[SECRET_1_AWS_ACCESS_KEY]\""));
        assert!(
            redacted.contains("\"[SECRET_2_AWS_SECRET_KEY]\""),
            "{redacted}"
        );
        assert_eq!(redacted.lines().count(), SETTINGS.lines().count());
        // The same value has the same placeholder in any text.
        assert_eq!(
            withheld.redact("print('AKIAIOSFODNN7EXAMPLE')"),
            "print('[SECRET_1_AWS_ACCESS_KEY]')"
        );
        assert_eq!(withheld.restore(&redacted), SETTINGS);
        // Redacting twice changes nothing more.
        assert_eq!(withheld.redact(&redacted), redacted);
        // An unknown placeholder is left for the Reviewer to refuse.
        assert_eq!(
            withheld.restore("x = '[SECRET_9_JWT]'"),
            "x = '[SECRET_9_JWT]'"
        );
    }

    #[test]
    fn the_report_counts_secrets_and_says_where() {
        let withheld = Withheld::new();
        withheld.scan("pkg/settings.py", SETTINGS);
        let key = "K = '''-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBWk5Xg7hT0\n-----END OPENSSH PRIVATE KEY-----'''\n";
        withheld.scan("deploy.py", key);
        // A secret seen only in a tool's output.
        let out = withheld.redact("E   assert token == 'ghp_1234567890abcdefghijABCDEFGHIJ123456'");
        assert!(out.contains("[SECRET_4_GITHUB_TOKEN]"), "{out}");
        let report = withheld.report();
        assert_eq!(report.withheld, 4);
        assert_eq!(
            report.places,
            vec![
                "pkg/settings.py:3 (AWS access key id)",
                "pkg/settings.py:4 (AWS secret access key)",
                "deploy.py:2 (private key)",
                "a tool's output (GitHub token)",
            ]
        );
        let redacted = withheld.redact(key);
        assert!(
            redacted.contains("[SECRET_3_PRIVATE_KEY_PART_1]"),
            "{redacted}"
        );
        assert!(
            redacted.contains("[SECRET_3_PRIVATE_KEY_PART_2]"),
            "{redacted}"
        );
        assert_eq!(withheld.restore(&redacted), key);
        assert!(format!("{withheld:?}").contains("secrets: 4"));
    }
}
