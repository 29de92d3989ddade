//! What can go wrong reading the settings: a config file that cannot be
//! read, is not TOML, or is not a swarm config, and a provider name swarm
//! does not know.
//!
//! These errors state facts and keep their sources (the io error, toml's
//! error): the file, the line and column, toml's message and its excerpt of
//! the file. They give no advice; what to do about them (which providers
//! exist) is attached where they reach the user, in the top-level error.

use std::path::{Path, PathBuf};

/// Why the settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file exists but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A config file is not TOML, or its swarm settings are wrong (an
    /// unknown key, a value of the wrong type).
    #[error("{}", invalid_line(*problem, path, *place, message))]
    Invalid {
        path: PathBuf,
        problem: Problem,
        /// Where toml found the problem, when it could tell.
        place: Option<Place>,
        /// toml's message, on one line.
        message: String,
        /// toml's excerpt of the file with a caret under the column (shown
        /// below the one-line message), when it gave one.
        excerpt: Option<String>,
        /// toml's error (boxed: it is large, and errors are rare).
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A provider name that is neither a provider's nor one of its aliases.
    #[error("unknown provider `{name}`")]
    UnknownProvider {
        /// The name as given, trimmed and in lower case.
        name: String,
    },
}

/// What is wrong with a config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A `pyproject.toml` that is not TOML at all.
    NotToml,
    /// A `.swarm.toml` or the user's `config.toml` that is not TOML, or
    /// whose settings are wrong.
    NotSwarmConfig,
    /// The `[tool.swarm]` table of a `pyproject.toml` holds wrong settings.
    InvalidToolTable,
}

/// A line and a column of a file, both from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub line: usize,
    pub column: usize,
}

/// The one line an [`ConfigError::Invalid`] reads as:
/// `x/.swarm.toml is not a valid swarm config: line 1, column 18: invalid type…`.
fn invalid_line(problem: Problem, path: &Path, place: Option<Place>, message: &str) -> String {
    let what = match problem {
        Problem::NotToml => format!("{} is not valid TOML", path.display()),
        Problem::NotSwarmConfig => format!("{} is not a valid swarm config", path.display()),
        Problem::InvalidToolTable => format!("[tool.swarm] in {} is invalid", path.display()),
    };
    match place {
        Some(Place { line, column }) => format!("{what}: line {line}, column {column}: {message}"),
        None => format!("{what}: {message}"),
    }
}

impl ConfigError {
    /// A TOML error of the file at `path`, whose content is `text`: toml's
    /// message on one line, the line and column it points at, and toml's
    /// excerpt of the file.
    pub(crate) fn toml(
        problem: Problem,
        path: &Path,
        text: &str,
        source: toml::de::Error,
    ) -> ConfigError {
        let message = source
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let place = source.span().map(|span| {
            let before = &text[..span.start.min(text.len())];
            Place {
                line: before.matches('\n').count() + 1,
                column: before
                    .rsplit('\n')
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .count()
                    + 1,
            }
        });
        // toml's display: a heading, then the excerpt (`2 | key = `, the
        // caret line `  |     ^`), then the message again.
        let excerpt = place.and_then(|_| excerpt_of(&source.to_string()));
        ConfigError::Invalid {
            path: path.to_path_buf(),
            problem,
            place,
            message,
            excerpt,
            source: Box::new(source),
        }
    }

    /// The `[tool.swarm]` table of the `pyproject.toml` at `path` holds
    /// wrong settings: toml's whole message, joined into one line (a table
    /// read as a value has no place in the file).
    pub(super) fn tool_table(path: &Path, source: toml::de::Error) -> ConfigError {
        ConfigError::Invalid {
            path: path.to_path_buf(),
            problem: Problem::InvalidToolTable,
            place: None,
            message: one_line(&source.to_string()),
            excerpt: None,
            source: Box::new(source),
        }
    }
}

/// The excerpt lines of toml's display (a gutter of digits and spaces,
/// then `|`), or `None` when it has none.
fn excerpt_of(display: &str) -> Option<String> {
    let excerpt: Vec<&str> = display
        .lines()
        .filter(|l| {
            l.split_once('|')
                .is_some_and(|(gutter, _)| gutter.chars().all(|c| c.is_ascii_digit() || c == ' '))
        })
        .collect();
    (!excerpt.is_empty()).then(|| excerpt.join("\n"))
}

/// A multi-line message (a TOML parse error) joined into one line.
fn one_line(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .replace("  ", " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_error_names_the_file_line_and_column_and_keeps_the_excerpt() {
        let text = "model = 'm'\nmax-iterations = 'many'\n";
        let source = toml::from_str::<crate::config::FileConfig>(text).unwrap_err();
        let err = ConfigError::toml(
            Problem::NotSwarmConfig,
            Path::new("x/.swarm.toml"),
            text,
            source,
        );
        assert_eq!(
            err.to_string(),
            "x/.swarm.toml is not a valid swarm config: line 2, column 18: invalid type: string \"many\", expected u32"
        );
        let ConfigError::Invalid { excerpt, place, .. } = &err else {
            panic!("expected Invalid, got {err:?}");
        };
        assert_eq!(
            *place,
            Some(Place {
                line: 2,
                column: 18
            })
        );
        assert_eq!(
            excerpt.as_deref(),
            Some("  |\n2 | max-iterations = 'many'\n  |                  ^^^^^^")
        );
        assert!(std::error::Error::source(&err).is_some());
    }
}
