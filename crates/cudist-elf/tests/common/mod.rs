//! Helpers shared by the integration tests: real tools, found from the environment.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

pub fn tool(var: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {fallback}"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string()));
    if found.is_none() {
        let reason = format!("{var} is not set and {fallback} is not on PATH");
        assert!(!in_ci(), "{reason}; CI promises it");
        eprintln!("skipping: {reason}");
        // Listed by scripts/test.sh after the run (as cudist's tests' `skip` does).
        if let Some(log) = std::env::var_os("CUDIST_SKIP_LOG").filter(|l| !l.is_empty()) {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(log)
            {
                let test = std::thread::current()
                    .name()
                    .unwrap_or("a test")
                    .to_string();
                let _ = writeln!(f, "{test} (cudist-elf): {reason}");
            }
        }
    }
    found
}

/// Compiles C source with gcc into `dir/out` (any gcc arguments: `-shared`, link flags, …).
pub fn cc(dir: &Path, out: &str, src: &str, args: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let c = dir.join(format!("{}.c", out.replace('/', "_")));
    std::fs::write(&c, src).unwrap();
    let p = dir.join(out);
    let o = Command::new("gcc")
        .arg("-o")
        .arg(&p)
        .arg(&c)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    p
}

/// A shared library built with gcc.
pub fn gcc(dir: &Path, out: &str, src: &str, args: &[&str]) -> PathBuf {
    let mut all = vec!["-shared", "-fPIC"];
    all.extend_from_slice(args);
    cc(dir, out, src, &all)
}

/// dlopen through Python's ctypes: Ok, or the loader's message.
pub fn dlopen(p: &Path) -> Result<(), String> {
    let o = Command::new("python3")
        .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])"])
        .arg(p)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

pub fn readelf_dynamic(p: &Path) -> Vec<String> {
    let o = Command::new("readelf").arg("-dW").arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| {
            l.contains("(NEEDED)")
                || l.contains("(RPATH)")
                || l.contains("(RUNPATH)")
                || l.contains("(SONAME)")
        })
        .map(|l| {
            l.split_once(')')
                .map(|(_, r)| r.trim().to_string())
                .unwrap_or_default()
        })
        .collect()
}

pub fn elflint_clean(p: &Path) -> Option<bool> {
    let lint = tool("CUDIST_ELFLINT", "eu-elflint")?;
    let o = Command::new(lint).arg("--gnu-ld").arg(p).output().unwrap();
    Some(o.status.success())
}
