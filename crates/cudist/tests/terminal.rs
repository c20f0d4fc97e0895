//! What a user at a terminal, and a CI log, sees: every command accepts `--quiet` (no progress,
//! no report; `--json` documents still printed; the same exit code), and long work shows a sign of
//! life on stderr: a spinner on a terminal (checked under a real pseudo-terminal), plain lines in
//! a log once it runs past 10 s.

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

/// Runs `cudist ARGS` under a pseudo-terminal (Python's `pty`): what the terminal showed
/// (stdout and stderr together), and the exit code.
fn on_a_terminal(args: &[&str]) -> (String, i32) {
    let code = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.environ.pop("NO_COLOR", None)
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(code)
        .arg(env!("CARGO_BIN_EXE_cudist"))
        .args(args)
        .output()
        .expect("python3");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code().unwrap(),
    )
}

#[test]
fn progress_shows_on_a_terminal_and_in_a_log_only_for_long_work() {
    let fx = fixtures();
    let fx = fx.to_str().unwrap();
    // On a terminal: the spinner names the work, then the report.
    let (shown, code) = on_a_terminal(&["inspect", fx]);
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("inspecting "), "{shown}");
    assert!(shown.contains("Verdict"), "{shown}");
    // --quiet on a terminal: nothing at all, the same exit code.
    let (shown, code) = on_a_terminal(&["inspect", "--quiet", fx]);
    assert_eq!(code, 0);
    assert_eq!(shown, "", "--quiet printed something");
    // Not a terminal (a CI log): the report, and no progress for work shorter than 10 s.
    let o = cudist(&["inspect", fx]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Verdict"));
    assert_eq!(stderr(&o), "", "progress written to a log for short work");
    // Longer work (here: a first line due at once) gets plain lines: what, and for how long.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["inspect", fx])
        .env("CUDIST_PROGRESS_AFTER", "0")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.starts_with("cudist: inspecting "), "{err}");
    assert!(err.contains(" s so far)"), "{err}");
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    // --quiet: nothing, however long.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["inspect", "--quiet", fx])
        .env("CUDIST_PROGRESS_AFTER", "0")
        .output()
        .unwrap();
    assert_eq!(stderr(&o), "");
}

#[test]
fn every_command_accepts_quiet() {
    let work = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let fx = fx.to_str().unwrap();
    let (tree, wheel) = tree_and_wheel(work.path());
    let t = tree.to_str().unwrap();
    let w = wheel.to_str().unwrap();
    let out = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    let (wh1, wh2, sp1, sp2, sp3) = (out("wh1"), out("wh2"), out("s1"), out("s2"), out("s3"));
    // (arguments, expected exit code): each run plain, with --quiet, and with --quiet --json.
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["inspect", fx], 0),
        (vec!["inspect", "--strict", w], 1),
        (vec!["doctor", "--ld-library-path", "", fx], 1),
        (vec!["relink", "--check", t], 0),
        (vec!["toolkit", "env", t], 0),
        (vec!["catalog", "lib", "libcublas.so.12"], 0),
        (vec!["catalog", "sm"], 0),
        (vec!["self-check"], 0),
    ];
    for (args, code) in cases {
        let plain = cudist(&args);
        assert_eq!(
            plain.status.code(),
            Some(code),
            "{args:?}: {}",
            stderr(&plain)
        );
        assert!(!stdout(&plain).is_empty(), "{args:?}");
        let mut q = args.clone();
        q.push("--quiet");
        let quiet = cudist(&q);
        assert_eq!(quiet.status.code(), Some(code), "{q:?}");
        assert_eq!(stdout(&quiet), "", "{q:?}");
        q.push("--json");
        let json = cudist(&q);
        assert_eq!(json.status.code(), Some(code), "{q:?}");
        let v: Value =
            serde_json::from_str(&stdout(&json)).unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert!(v["schema"].is_string(), "{q:?}");
    }
    // Commands that write: quiet, they still write.
    for (args, wrote) in [
        (vec!["repair", "-q", "-w", &wh1, w], &wh1),
        (vec!["split", "-q", t, "-o", &sp1], &sp1),
    ] {
        let o = cudist(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert!(
            std::fs::read_dir(wrote).unwrap().next().is_some(),
            "{args:?}"
        );
    }
    for args in [
        vec!["repair", "--quiet", "--json", "-w", &wh2, w],
        vec!["split", "--quiet", "--json", t, "-o", &sp2],
    ] {
        let o = cudist(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert!(v["schema"].is_string(), "{args:?}");
    }
    // The flag is global: before the command too.
    let o = cudist(&["--quiet", "split", t, "-o", &sp3]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    // Errors are still reported.
    let o = cudist(&["inspect", "--quiet", "/nonexistent/cudist-quiet"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("/nonexistent/cudist-quiet"),
        "{}",
        stderr(&o)
    );
}
