//! `cudist --version` and `cudist self-check`: the version line names the catalog's newest CUDA
//! release; self-check finds the tools where a shell would (PATH, CUDA_HOME), reports the version
//! line they print, and `--require` fails on a missing one. Compared with readelf (the loader
//! cudist names) and the real cuobjdump.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn self_check(path_env: &str, cuda_home: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cudist"));
    c.arg("self-check")
        .args(args)
        .env("PATH", path_env)
        .env("NO_COLOR", "1")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH");
    if let Some(h) = cuda_home {
        c.env("CUDA_HOME", h);
    }
    c.output().unwrap()
}

fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {report:#}"))
}

fn script(path: &Path, body: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn version_names_the_newest_cuda_of_the_catalog() {
    // The newest CUDA release in the data files, read here without cudist's parser.
    let data = repo_root().join("crates/cudist-catalog/data/drivers.toml");
    let text = std::fs::read_to_string(data).unwrap();
    let newest = text
        .lines()
        .filter_map(|l| {
            let v = l
                .strip_prefix("cuda = \"")
                .or_else(|| l.strip_prefix("version = \""))?;
            let v = v.strip_suffix('"')?;
            let (a, b) = v.split_once('.')?;
            Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?))
        })
        .max()
        .unwrap();
    let want = format!(
        "cudist {} (catalog: CUDA through {}.{})\n",
        env!("CARGO_PKG_VERSION"),
        newest.0,
        newest.1
    );
    for args in [&["--version"][..], &["-V"], &["inspect", "--version"]] {
        let o = cudist(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(stdout(&o), want, "{args:?}");
    }
}

#[test]
fn finds_tools_on_path_and_cuda_home_and_reads_their_versions() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    script(
        &bin.join("cuobjdump"),
        "echo 'cuobjdump: NVIDIA (R) CUDA Object Utility'\necho 'Copyright (c) 2005-2026 NVIDIA Corporation'\necho\necho 'Cuda compilation tools, release 13.5, V13.5.37'",
        0o755,
    );
    // Not executable: a shell would not run it either.
    script(&bin.join("patchelf"), "echo patchelf 0.19", 0o644);
    script(
        &bin.join("cmake"),
        "printf '\\n  cmake version 3.31.6\\n'",
        0o755,
    );
    let home = dir.path().join("cuda");
    script(
        &home.join("bin/nvcc"),
        "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release 12.9, V12.9.86'",
        0o755,
    );
    let path_env = bin.display().to_string();

    let o = self_check(&path_env, None, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["schema"], "cudist.self-check/1");
    let c = tool(&r, "cuobjdump");
    assert_eq!(c["path"], bin.join("cuobjdump").display().to_string());
    assert_eq!(
        c["version"],
        "Cuda compilation tools, release 13.5, V13.5.37"
    );
    assert_eq!(tool(&r, "cmake")["version"], "cmake version 3.31.6");
    assert!(tool(&r, "patchelf")["path"].is_null(), "{r:#}");
    assert!(tool(&r, "nvcc")["path"].is_null(), "{r:#}");
    assert!(
        tool(&r, "readelf")["path"].is_null(),
        "PATH holds only the fakes"
    );

    // CUDA tools are also looked for in $CUDA_HOME/bin.
    let o = self_check(
        &path_env,
        Some(&home),
        &["--json", "--require", "nvcc,cuobjdump"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        tool(&r, "nvcc")["version"],
        "Cuda compilation tools, release 12.9, V12.9.86"
    );

    // A missing required tool fails the run and is named; an unknown name is a usage error.
    let o = self_check(&path_env, None, &["--require", "cuobjdump,patchelf"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("required tools not found: patchelf"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("not found"), "{}", stdout(&o));
    let o = self_check(&path_env, None, &["--require", "objdump"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// The loader self-check names is the one readelf reads from cudist's own program headers.
#[test]
fn loader_is_the_binarys_interpreter() {
    let readelf = Command::new("readelf")
        .args(["-l", env!("CARGO_BIN_EXE_cudist")])
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&readelf.stdout);
    let interp = text
        .lines()
        .find_map(|l| {
            l.split_once("Requesting program interpreter: ")
                .map(|(_, r)| r.trim_end_matches(']').to_string())
        })
        .expect("readelf shows an interpreter");
    let o = self_check("/usr/bin:/bin", None, &["--json", "--require", "ld.so"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tool(&r, "ld.so")["path"], interp.as_str());
    // glibc's loader answers --version with its release.
    assert!(
        tool(&r, "ld.so")["version"]
            .as_str()
            .is_some_and(|v| v.contains("GLIBC") || v.contains("glibc")),
        "{r:#}"
    );
}

/// The real cuobjdump (CI provides it): found on PATH, with its release line.
#[test]
fn real_cuobjdump_is_found() {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let cuobjdump = std::fs::canonicalize(&cuobjdump).expect("CUDIST_CUOBJDUMP exists");
    let dir = cuobjdump.parent().unwrap().display().to_string();
    let o = self_check(&format!("{dir}:/usr/bin:/bin"), None, &["--json"]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = tool(&r, "cuobjdump");
    assert_eq!(c["path"], cuobjdump.display().to_string());
    assert!(
        c["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("Cuda compilation tools, release 13.5")),
        "{c:#}"
    );
}
