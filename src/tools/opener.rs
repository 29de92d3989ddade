//! Opens a file in the user's browser: `$BROWSER` when set (its first
//! entry, `%s` replaced by the file, else the file appended), else
//! `xdg-open`. The browser is started and left running on its own; it is
//! not waited for, sandboxed or killed.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{MissingTool, ToolError};

/// The program and arguments that open `file`, from `browser` (the value
/// of `$BROWSER`, if any).
pub fn browser_command(browser: Option<&str>, file: &Path) -> (OsString, Vec<OsString>) {
    let chosen = browser
        .and_then(|b| b.split(':').map(str::trim).find(|b| !b.is_empty()))
        .unwrap_or("xdg-open");
    let mut words = chosen.split_whitespace();
    let program = OsString::from(words.next().unwrap_or("xdg-open"));
    let mut args: Vec<OsString> = Vec::new();
    let mut placed = false;
    for word in words {
        if word.contains("%s") {
            // The file replaces `%s` as is, whatever bytes its path holds.
            let mut filled = OsString::new();
            for (i, part) in word.split("%s").enumerate() {
                if i > 0 {
                    filled.push(file.as_os_str());
                }
                filled.push(part);
            }
            args.push(filled);
            placed = true;
        } else {
            args.push(word.into());
        }
    }
    if !placed {
        args.push(file.as_os_str().to_owned());
    }
    (program, args)
}

/// Starts the browser on `file`; returns its command line, or
/// [`MissingTool::Browser`] when it cannot be started.
pub fn open_in_browser(file: &Path) -> Result<String, ToolError> {
    let browser = std::env::var("BROWSER").ok();
    let (program, args) = browser_command(browser.as_deref(), file);
    let line = std::iter::once(&program)
        .chain(&args)
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| MissingTool::Browser {
            command: line.clone(),
            source,
        })?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(browser: Option<&str>) -> Vec<String> {
        let (program, args) = browser_command(browser, Path::new("/r/report.html"));
        std::iter::once(program)
            .chain(args)
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn picks_browser_then_xdg_open() {
        assert_eq!(words(None), ["xdg-open", "/r/report.html"]);
        assert_eq!(words(Some("")), ["xdg-open", "/r/report.html"]);
        assert_eq!(
            words(Some("firefox --new-tab:chromium")),
            ["firefox", "--new-tab", "/r/report.html"]
        );
        assert_eq!(
            words(Some("open-it --url=%s")),
            ["open-it", "--url=/r/report.html"]
        );
    }
}
