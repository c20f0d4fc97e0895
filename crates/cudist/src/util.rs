//! Small helpers shared by the commands: output, sizes, tables, colour.

use std::io::{IsTerminal, Write};

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--quiet` (a global flag): no progress and no human report; `--json` documents, warnings and
/// errors are still printed, and the exit code gives the answer.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes a human report to stdout (nothing with `--quiet`). A closed pipe (`cudist inspect … |
/// head`) ends the program quietly with success instead of panicking, as command-line tools do.
pub fn emit(s: &str) {
    if quiet() {
        return;
    }
    emit_data(s);
}

/// A `--json` document on stdout, with a final newline; printed with `--quiet` too.
pub fn print_json<T: serde::Serialize>(value: &T) -> serde_json::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    emit_data(&text);
    Ok(())
}

/// Writes machine-readable output to stdout, whatever `--quiet` says.
pub fn emit_data(s: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        if let Some(f) = cudist_fs::machine_fault(&e) {
            eprintln!("  hint: {}", f.hint());
            std::process::exit(EXIT_MACHINE.into());
        }
        std::process::exit(1);
    }
}

/// `println!` through [`emit`].
macro_rules! outln {
    ($($t:tt)*) => { $crate::util::emit(&format!("{}\n", format_args!($($t)*))) };
}
pub(crate) use outln;

pub use cudist_analysis::human_bytes;

/// Whether progress is drawn: stderr is a terminal and `--quiet` was not given.
pub fn progress_shown() -> bool {
    !quiet() && std::io::stderr().is_terminal()
}

/// A sign of life on stderr for work that can take more than a couple of seconds. On a terminal:
/// a spinner with a message and the elapsed time, drawn at once and cleared when dropped. In a log
/// (stderr not a terminal): nothing for work that ends within [`LOG_AFTER`] seconds, then a plain
/// line saying what is being done and for how long, repeated every [`LOG_EVERY`] seconds, so a CI
/// job that runs for minutes is seen to be working. None with `--quiet`.
pub struct Spinner(Shown);

enum Shown {
    Bar(indicatif::ProgressBar),
    Log {
        message: std::sync::Arc<std::sync::Mutex<String>>,
        stop: Option<std::sync::mpsc::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// Seconds of work before a log gets its first progress line (`CUDIST_PROGRESS_AFTER` sets it).
pub const LOG_AFTER: u64 = 10;
/// Seconds between a log's progress lines.
pub const LOG_EVERY: u64 = 30;

impl Spinner {
    pub fn start(message: impl Into<std::borrow::Cow<'static, str>>) -> Option<Spinner> {
        if quiet() {
            return None;
        }
        if !std::io::stderr().is_terminal() {
            return Some(Spinner(Self::log(message.into().into_owned())));
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message(message);
        bar.tick();
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Some(Spinner(Shown::Bar(bar)))
    }

    fn log(message: String) -> Shown {
        let after = std::env::var("CUDIST_PROGRESS_AFTER")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(LOG_AFTER);
        let message = std::sync::Arc::new(std::sync::Mutex::new(message));
        let (stop, rx) = std::sync::mpsc::channel::<()>();
        let m = message.clone();
        let started = std::time::Instant::now();
        let thread = std::thread::spawn(move || {
            let mut wait = std::time::Duration::from_secs(after);
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(wait) {
                let what = m.lock().map(|m| m.clone()).unwrap_or_default();
                eprintln!("cudist: {what} ({} s so far)", started.elapsed().as_secs());
                wait = std::time::Duration::from_secs(LOG_EVERY);
            }
        });
        Shown::Log {
            message,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// What is being done now.
    pub fn set_message(&self, message: impl Into<std::borrow::Cow<'static, str>>) {
        match &self.0 {
            Shown::Bar(b) => b.set_message(message),
            Shown::Log { message: m, .. } => {
                if let Ok(mut m) = m.lock() {
                    *m = message.into().into_owned();
                }
            }
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        match &mut self.0 {
            Shown::Bar(b) => b.finish_and_clear(),
            Shown::Log { stop, thread, .. } => {
                drop(stop.take());
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
        }
    }
}

/// Terminal styling: on only when stdout is a terminal and `NO_COLOR` is unset.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub enabled: bool,
}

impl Style {
    pub fn detect() -> Style {
        Style {
            enabled: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.wrap("1;31", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    pub fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

/// A plain text table: columns padded to their widest cell, two spaces apart.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    /// Renders with `indent` spaces before each line.
    pub fn render(&self, indent: usize, style: Style) -> String {
        let n = self.header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = " ".repeat(indent);
            for (i, c) in cells.iter().enumerate().take(n) {
                s.push_str(c);
                if i + 1 < n {
                    s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
                }
            }
            s.trim_end().to_string()
        };
        let mut out = style.dim(&line(&self.header));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}

/// Exit code for unreadable or malformed input.
pub const EXIT_INPUT: u8 = 3;
/// The exit code of a fault of the machine or the network, not of the input: a full disk, a
/// read-only file system, memory, the network, a time-out ([`cudist_fs::fault`]).
pub const EXIT_MACHINE: u8 = 4;

/// Prints unreadable inputs (and, with the artifact's path, unreadable files inside artifacts) to
/// stderr with their hints.
pub fn print_input_errors<'a>(
    errors: impl Iterator<Item = (Option<&'a str>, &'a cudist_analysis::model::InputError)>,
) {
    for (artifact, e) in errors {
        match artifact {
            Some(a) => eprintln!("error: {a}: {}", e.error),
            None => eprintln!(
                "error: {}",
                cudist_analysis::error::located(&e.path, &e.error)
            ),
        }
        if let Some(h) = &e.hint {
            eprintln!("  hint: {h}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(79 * 1024 * 1024), "79.0 MiB");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["A", "LONGER"]);
        t.row(vec!["xxxx".into(), "y".into()]);
        let s = t.render(2, Style { enabled: false });
        assert_eq!(s, "  A     LONGER\n  xxxx  y\n");
    }
}
