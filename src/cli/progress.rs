//! Where the printer's lines go, and the progress shown between them.
//!
//! On a terminal (stderr is a tty and `TERM` is not `dumb`) every step under
//! way is an `indicatif` spinner with its elapsed time, ticking steadily,
//! and a streaming reply's tokens/s is a spinner of its own; lines are
//! printed above them. Anywhere else a step is a plain line when it starts
//! and one when it ends, with its time, and nothing is ever redrawn. No
//! colour with `NO_COLOR` (any non-empty value) or off a terminal.
//!
//! It owns the terminal; it does not decide what is said (see `printer`).

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often a spinner moves, whether or not anything happened.
const TICK: Duration = Duration::from_millis(100);

/// What one progress line stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// A step ([`crate::log::Event::StepStarted`]).
    Step(u64),
    /// A streaming model reply, by call number.
    Stream(u64),
}

/// How stderr is written to, decided once from the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// Spinners are drawn (a terminal that is not `dumb`).
    pub live: bool,
    /// Colour is allowed (a live terminal and no `NO_COLOR`).
    pub colour: bool,
}

impl Mode {
    /// The mode for a stderr that is (or is not) a terminal, given the
    /// `TERM` and `NO_COLOR` variables.
    pub fn detect(terminal: bool, term: Option<&str>, no_color: Option<&str>) -> Self {
        let live = terminal && term != Some("dumb");
        let colour = live && no_color.is_none_or(str::is_empty);
        Self { live, colour }
    }

    /// The mode of this process's stderr.
    pub fn of_stderr() -> Self {
        use std::io::IsTerminal;
        let var = |name: &str| std::env::var(name).ok();
        Self::detect(
            std::io::stderr().is_terminal(),
            var("TERM").as_deref(),
            var("NO_COLOR").as_deref(),
        )
    }
}

/// stderr, with the progress lines under way.
pub struct Display {
    mode: Mode,
    /// The spinners (only drawn when `mode.live`).
    multi: MultiProgress,
    bars: Mutex<HashMap<Key, ProgressBar>>,
}

impl Display {
    pub fn new(mode: Mode) -> Arc<Self> {
        let target = if mode.live {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Arc::new(Self {
            mode,
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Writes `text` (and a newline) above the spinners.
    pub fn line(&self, text: &str) {
        self.write(format!("{text}\n").as_bytes());
    }

    /// Writes raw bytes above the spinners (the tracing writer's way in).
    pub fn write(&self, bytes: &[u8]) {
        self.multi.suspend(|| {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(bytes);
            let _ = err.flush();
        });
    }

    /// Shows `text` as the progress line `key` (made when new). Off a
    /// terminal nothing is drawn.
    pub fn show(&self, key: Key, text: &str) {
        if !self.mode.live {
            return;
        }
        let mut bars = self
            .bars
            .lock()
            .expect("the progress map is never poisoned");
        match bars.get(&key) {
            Some(bar) => bar.set_message(text.to_string()),
            None => {
                // Styled and worded before it is first drawn.
                let bar = ProgressBar::new_spinner()
                    .with_style(self.style())
                    .with_message(text.to_string());
                let bar = self.multi.add(bar);
                bar.enable_steady_tick(TICK);
                bars.insert(key, bar);
            }
        }
    }

    /// Takes the progress line `key` away (nothing when there is none).
    pub fn clear(&self, key: Key) {
        let bar = self
            .bars
            .lock()
            .expect("the progress map is never poisoned")
            .remove(&key);
        if let Some(bar) = bar {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }

    /// `⠋ judging attempt 3 (stats.py): pytest  12.4 s`.
    fn style(&self) -> ProgressStyle {
        let template = if self.mode.colour {
            "{spinner:.cyan} {msg}  {seconds:.dim}"
        } else {
            "{spinner} {msg}  {seconds}"
        };
        ProgressStyle::with_template(template)
            .expect("the template is valid")
            .with_key(
                "seconds",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.1} s", state.elapsed().as_secs_f64());
                },
            )
    }
}

/// Seconds as the display says them: `12.4 s`.
pub fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A `tracing` writer that prints above the spinners.
#[derive(Clone)]
pub struct TraceWriter(pub Arc<Display>);

impl Write for TraceWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for TraceWriter {
    type Writer = TraceWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinners_only_on_a_real_terminal_and_colour_only_without_no_color() {
        let live = |t, term, nc| Mode::detect(t, term, nc);
        assert_eq!(
            live(true, Some("xterm-256color"), None),
            Mode {
                live: true,
                colour: true
            }
        );
        assert_eq!(
            live(true, Some("xterm"), Some("1")),
            Mode {
                live: true,
                colour: false
            }
        );
        assert!(live(true, Some("xterm"), Some("")).colour, "empty is unset");
        assert_eq!(
            live(true, Some("dumb"), None),
            Mode {
                live: false,
                colour: false
            }
        );
        assert!(!live(false, Some("xterm"), None).live);
        assert!(!live(false, None, None).colour);
    }

    #[test]
    fn seconds_read_with_one_decimal() {
        assert_eq!(seconds(12_449), "12.4 s");
        assert_eq!(seconds(0), "0.0 s");
    }
}
