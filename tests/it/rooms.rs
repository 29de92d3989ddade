//! Rooms of a size to live in, checked from the code: no file of the crate
//! or its leaf crates holds more than [`MAX_FILE_LINES`] lines of non-test
//! code, and no function is longer than [`MAX_FUNCTION_LINES`]. A file past
//! the first is asking to be split along what it does; a function past the
//! second, along the steps it takes.
//!
//! Test code is not counted: files named `tests.rs` or `*_tests.rs`, and
//! everything from a `#[cfg(test)]` module on.

use std::path::{Path, PathBuf};

/// The most lines of non-test code one file may hold.
const MAX_FILE_LINES: usize = 600;
/// The most lines one function may span, from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// Every `.rs` file of the crate and of its leaf crates.
fn sources() -> Vec<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&manifest.join("src"), &mut files);
    for entry in std::fs::read_dir(manifest.join("crates")).expect("read crates") {
        rust_files(&entry.expect("entry").path().join("src"), &mut files);
    }
    files.sort();
    files
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of a file that are not test code (empty for a test file).
fn code_lines(path: &Path, text: &str) -> Vec<String> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs")) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut previous = "";
    for line in text.lines() {
        if previous.trim() == "#[cfg(test)]" && line.trim_start().starts_with("mod ") {
            lines.pop();
            break;
        }
        lines.push(line.to_string());
        previous = line;
    }
    lines
}

/// Each function in `lines` with its first line (1-based) and length: from
/// its `fn` line to the first line that closes it at the same indentation.
fn functions(lines: &[String]) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue; // a declaration without a body (a trait's)
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let close = format!("{indent}}}");
        if let Some(end) = lines[i..].iter().position(|l| l.trim_end() == close) {
            found.push((name, i + 1, end + 1));
        }
    }
    found
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return None;
    }
    let mut words = trimmed.split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "pub" | "async" | "const" | "unsafe" | "extern" => continue,
            w if w.starts_with("pub(") => continue,
            "fn" => {
                let name = words.next()?;
                let end = name.find(['(', '<']).unwrap_or(name.len());
                return Some(name[..end].to_string());
            }
            _ => return None,
        }
    }
    None
}

#[test]
fn no_file_and_no_function_is_past_its_size() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).expect("read source");
        let rel = path.strip_prefix(manifest).unwrap_or(&path).display();
        let lines = code_lines(&path, &text);
        if lines.len() > MAX_FILE_LINES {
            found.push(format!(
                "{rel}: {} lines of non-test code (at most {MAX_FILE_LINES})",
                lines.len()
            ));
        }
        for (name, at, length) in functions(&lines) {
            if length > MAX_FUNCTION_LINES {
                found.push(format!(
                    "{rel}:{at}: fn {name} is {length} lines (at most {MAX_FUNCTION_LINES})"
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "rooms past their size; split them along what they do:\n{}",
        found.join("\n")
    );
}

/// The check above sees what it looks for: a long function, a test module
/// left out, a declaration without a body skipped.
#[test]
fn the_size_check_measures_functions_and_leaves_tests_out() {
    let mut text = String::from("pub(crate) async fn long(x: u32) -> u32 {\n");
    text.push_str(&"    let _ = x;\n".repeat(90));
    text.push_str("}\n\ntrait T {\n    fn declared(&self);\n}\n");
    text.push_str("#[cfg(test)]\nmod tests {\n    fn hidden() {\n    }\n}\n");
    let lines = code_lines(Path::new("src/x.rs"), &text);
    assert!(!lines.iter().any(|l| l.contains("hidden")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("cfg(test)")));
    let found = functions(&lines);
    assert_eq!(found, [("long".to_string(), 1, 92)]);
    assert!(code_lines(Path::new("src/stage/tests.rs"), &text).is_empty());
}
