//! The exit-code contract of README.md's table, as a matrix: every command × {usage error,
//! missing input, bad input, machine fault, negative answer, success}. A cell a command has no
//! case for (schema reads no input; repair, slim, split and toolkit have no "no" answer) is
//! left out and said so below. The machine fault made for every command is its report written
//! to a full device (`/dev/full`); `faults.rs` makes the others (a full and a read-only file
//! system, the network, a truncated mapping).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

const USAGE: i32 = 2;
const MISSING: i32 = 3;
const BAD: i32 = 3;
const MACHINE: i32 = 4;
const NO: i32 = 1;
const OK: i32 = 0;

/// Runs cudist in `cwd`; with `full`, its standard output is `/dev/full`.
fn run(cwd: &Path, args: &[String], full: bool) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cudist"));
    c.args(args).current_dir(cwd).stderr(Stdio::piped());
    c.stdout(if full {
        Stdio::from(std::fs::File::create("/dev/full").unwrap())
    } else {
        Stdio::null()
    });
    let o = c.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_command_keeps_the_exit_code_contract() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (tree, wheel) = tree_and_wheel(w);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (tree, wheel) = (s(&tree), s(&wheel));
    let missing = s(&w.join("missing"));
    let junk = w.join("junk-1.0-py3-none-any.whl");
    std::fs::write(&junk, b"not a zip").unwrap();
    let junk = s(&junk);
    let empty = w.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let empty = s(&empty);
    let out = |n: &str| s(&w.join("out").join(n));
    // An extension needing a library nobody provides: doctor's "no".
    let needs = w.join("needs");
    std::fs::create_dir(&needs).unwrap();
    fake_lib(&w.join("build"), "libdep.so.1", "libdep.so.1", "dep");
    gcc_shared(
        &needs,
        "libuser.so",
        Some("libuser.so"),
        "int dep(void *); int user(void) { return dep(0); }\n",
        &["-L", &s(&w.join("build")), "-l:libdep.so.1"],
    );
    let needs = s(&needs);
    // A tree whose library searches outside it: relink --check's "no".
    let outside = w.join("outside");
    gcc_shared(
        &outside,
        "libout.so",
        Some("libout.so"),
        "int f(void) { return 1; }\n",
        &["-Wl,-rpath,/opt/elsewhere/lib"],
    );
    let outside = s(&outside);
    let profile = |driver: &str| {
        s(&write_profile(
            &w.join(format!("host-{driver}.json")),
            &serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "H100", "sm": 90}]}),
        ))
    };
    let (new_driver, old_driver) = (profile("580.65.06"), profile("535.183.01"));
    let bad_profile = w.join("bad-host.json");
    std::fs::write(&bad_profile, "{not json").unwrap();
    let bad_profile = s(&bad_profile);

    // (command, cell, arguments, expected code, stdout to /dev/full)
    type Case = (&'static str, &'static str, Vec<String>, i32, bool);
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cases: Vec<Case> = vec![
        ("inspect", "usage", v(&["inspect", "--bogus"]), USAGE, false),
        (
            "inspect",
            "missing",
            v(&["inspect", &missing]),
            MISSING,
            false,
        ),
        ("inspect", "bad", v(&["inspect", &junk]), BAD, false),
        ("inspect", "machine", v(&["inspect", &wheel]), MACHINE, true),
        (
            "inspect",
            "no",
            v(&["inspect", "--strict", &wheel]),
            NO,
            false,
        ),
        ("inspect", "ok", v(&["inspect", &wheel]), OK, false),
        (
            "repair",
            "usage",
            v(&["repair", &wheel, "--bogus"]),
            USAGE,
            false,
        ),
        (
            "repair",
            "missing",
            v(&["repair", &missing, "-w", &out("r1")]),
            MISSING,
            false,
        ),
        (
            "repair",
            "bad",
            v(&["repair", &junk, "-w", &out("r2")]),
            BAD,
            false,
        ),
        (
            "repair",
            "machine",
            v(&["repair", &wheel, "-w", &out("r3")]),
            MACHINE,
            true,
        ),
        (
            "repair",
            "ok",
            v(&["repair", &wheel, "-w", &out("r4")]),
            OK,
            false,
        ),
        ("doctor", "usage", v(&["doctor", "--bogus"]), USAGE, false),
        (
            "doctor",
            "missing",
            v(&["doctor", &missing]),
            MISSING,
            false,
        ),
        ("doctor", "bad", v(&["doctor", &wheel]), BAD, false),
        ("doctor", "machine", v(&["doctor", &tree]), MACHINE, true),
        ("doctor", "no", v(&["doctor", &needs]), NO, false),
        ("doctor", "ok", v(&["doctor", &tree]), OK, false),
        (
            "relink",
            "usage",
            v(&["relink", "--bogus", &tree]),
            USAGE,
            false,
        ),
        (
            "relink",
            "missing",
            v(&["relink", "--check", &missing]),
            MISSING,
            false,
        ),
        (
            "relink",
            "bad",
            v(&["relink", "--check", &junk]),
            BAD,
            false,
        ),
        (
            "relink",
            "machine",
            v(&["relink", "--check", &tree]),
            MACHINE,
            true,
        ),
        (
            "relink",
            "no",
            v(&["relink", "--check", &outside]),
            NO,
            false,
        ),
        ("relink", "ok", v(&["relink", "--check", &tree]), OK, false),
        (
            "slim",
            "usage",
            v(&["slim", &wheel, "-w", &out("s0")]),
            USAGE,
            false,
        ),
        (
            "slim",
            "missing",
            v(&["slim", "--gpu", "sm_90", &missing, "-w", &out("s1")]),
            MISSING,
            false,
        ),
        (
            "slim",
            "bad",
            v(&["slim", "--gpu", "sm_90", &junk, "-w", &out("s2")]),
            BAD,
            false,
        ),
        (
            "slim",
            "machine",
            v(&["slim", "--gpu", "sm_90", &wheel, "-w", &out("s3")]),
            MACHINE,
            true,
        ),
        (
            "slim",
            "ok",
            v(&["slim", "--gpu", "sm_90", &wheel, "-w", &out("s4")]),
            OK,
            false,
        ),
        ("select", "usage", v(&["select", "--bogus"]), USAGE, false),
        (
            "select",
            "missing",
            v(&["select", "--host", &new_driver, &missing]),
            MISSING,
            false,
        ),
        (
            "select",
            "bad",
            v(&["select", "--host", &bad_profile, &wheel]),
            BAD,
            false,
        ),
        (
            "select",
            "machine",
            v(&["select", "--host", &new_driver, &wheel]),
            MACHINE,
            true,
        ),
        (
            "select",
            "no",
            v(&["select", "--host", &old_driver, &wheel]),
            NO,
            false,
        ),
        (
            "select",
            "ok",
            v(&["select", "--host", &new_driver, &wheel]),
            OK,
            false,
        ),
        (
            "split",
            "usage",
            v(&["split", &tree, "--bogus"]),
            USAGE,
            false,
        ),
        (
            "split",
            "missing",
            v(&["split", &missing, "-o", &out("p1")]),
            MISSING,
            false,
        ),
        (
            "split",
            "bad",
            v(&["split", &empty, "-o", &out("p2")]),
            BAD,
            false,
        ),
        (
            "split",
            "machine",
            v(&["split", &tree, "-o", &out("p3")]),
            MACHINE,
            true,
        ),
        (
            "split",
            "ok",
            v(&["split", &tree, "-o", &out("p4")]),
            OK,
            false,
        ),
        (
            "toolkit",
            "usage",
            v(&["toolkit", "env", "--bogus"]),
            USAGE,
            false,
        ),
        (
            "toolkit",
            "missing",
            v(&["toolkit", "env", &missing]),
            MISSING,
            false,
        ),
        ("toolkit", "bad", v(&["toolkit", "env", &empty]), BAD, false),
        (
            "toolkit",
            "machine",
            v(&["toolkit", "env", &tree]),
            MACHINE,
            true,
        ),
        ("toolkit", "ok", v(&["toolkit", "env", &tree]), OK, false),
        ("catalog", "usage", v(&["catalog", "--bogus"]), USAGE, false),
        (
            "catalog",
            "missing",
            v(&["catalog", "--catalog", &missing, "lib", "libcublas.so.12"]),
            MISSING,
            false,
        ),
        (
            "catalog",
            "bad",
            v(&["catalog", "--catalog", &junk, "lib", "libcublas.so.12"]),
            BAD,
            false,
        ),
        (
            "catalog",
            "machine",
            v(&["catalog", "lib", "libcublas.so.12"]),
            MACHINE,
            true,
        ),
        (
            "catalog",
            "no",
            v(&["catalog", "lib", "libnothing.so.1"]),
            NO,
            false,
        ),
        (
            "catalog",
            "ok",
            v(&["catalog", "lib", "libcublas.so.12"]),
            OK,
            false,
        ),
        (
            "schema",
            "usage",
            v(&["schema", "nothing-of-that-name"]),
            USAGE,
            false,
        ),
        (
            "schema",
            "machine",
            v(&["schema", "inspect"]),
            MACHINE,
            true,
        ),
        ("schema", "ok", v(&["schema", "inspect"]), OK, false),
        (
            "self-check",
            "usage",
            v(&["self-check", "--bogus"]),
            USAGE,
            false,
        ),
        (
            "self-check",
            "machine",
            v(&["self-check", "--json"]),
            MACHINE,
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for (cmd, cell, args, want, full) in &cases {
        let (got, err) = run(w, args, *full);
        if got != Some(*want) {
            wrong.push(format!(
                "{cmd} × {cell}: exit {got:?}, the contract says {want} ({args:?}): {}",
                err.lines().next().unwrap_or("")
            ));
        }
        // No code but 0 is silent: an error names what went wrong.
        if *want != OK && *want != NO && err.trim().is_empty() {
            wrong.push(format!("{cmd} × {cell}: exit {want} without a word"));
        }
        // A missing or bad input is named in the error (by its file name: some commands say the
        // path as given, some as resolved).
        let inputs: Vec<String> = args
            .iter()
            .map(Path::new)
            .filter(|a| a.starts_with(w) && a.exists() == (*cell == "bad"))
            .filter_map(|a| Some(a.file_name()?.to_string_lossy().into_owned()))
            .collect();
        if ["missing", "bad"].contains(cell)
            && !inputs.is_empty()
            && !inputs.iter().any(|n| err.contains(n.as_str()))
        {
            wrong.push(format!(
                "{cmd} × {cell}: the error names none of {inputs:?}: {err}"
            ));
        }
    }
    // Every command has its usage, machine and success cells (self-check's success depends on
    // the tools this machine has: its own test covers it); every command that reads an input,
    // its missing and bad cells.
    for cmd in [
        "inspect",
        "repair",
        "doctor",
        "relink",
        "slim",
        "select",
        "split",
        "toolkit",
        "catalog",
        "schema",
        "self-check",
    ] {
        let cells: Vec<&str> = cases.iter().filter(|c| c.0 == cmd).map(|c| c.1).collect();
        let mut need = vec!["usage", "machine"];
        if cmd != "self-check" {
            need.push("ok");
        }
        if !["schema", "self-check"].contains(&cmd) {
            need.extend(["missing", "bad"]);
        }
        for n in need {
            assert!(cells.contains(&n), "{cmd} has no {n} case");
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
