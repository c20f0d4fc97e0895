//! cudist's own wheel (`pip wheel .`, built by `.ci/run` into `CUDIST_WHEEL`): tagged
//! manylinux2014, which `cudist inspect` and `auditwheel show` both confirm; small, stripped, with
//! full metadata and no Python dependencies; and, installed into a fresh venv, a working `cudist`
//! and `python -m cudist` (also from a `pip install --target` tree).

mod common;
use common::*;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    cmd.env("NO_COLOR", "1").output().expect("run")
}

fn member(wheel: &Path, name: &str) -> Vec<u8> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let mut m = z.by_name(name).unwrap_or_else(|_| panic!("no {name}"));
    let mut v = Vec::new();
    m.read_to_end(&mut v).unwrap();
    v
}

/// `VENV/bin/pip install WHEEL` from the file alone, with `extra` arguments.
fn pip_install(venv: &Path, wheel: &Path, extra: &[&std::ffi::OsStr]) -> Output {
    run(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .args(extra)
        .arg(wheel))
}

fn own_wheel() -> Option<PathBuf> {
    tool_from_env("CUDIST_WHEEL")
}

/// The version line of the cudist under test (the wheel's must be the same).
fn version_line() -> String {
    let o = cudist(&["--version"]);
    ok(&o, "cudist --version");
    stdout(&o)
}

#[test]
fn the_wheel_is_manylinux_2_17_for_cudist_and_for_auditwheel() {
    let Some(wheel) = own_wheel() else {
        return;
    };
    let name = wheel.file_name().unwrap().to_str().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let rest = name
        .strip_prefix(&format!("cudist-{version}-py3-none-"))
        .and_then(|r| r.strip_suffix(".whl"))
        .unwrap_or_else(|| panic!("{name}"));
    let mut platforms: Vec<&str> = rest.split('.').collect();
    platforms.sort();
    assert_eq!(
        platforms,
        ["manylinux2014_x86_64", "manylinux_2_17_x86_64"],
        "{name}"
    );

    let report = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = &report["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "ok", "{}", a["verdict"]);
    assert_eq!(
        a["platform"]["tags"],
        serde_json::json!(["manylinux2014_x86_64", "manylinux_2_17_x86_64"]),
        "{}",
        a["platform"]
    );
    let elfs = a["elf_files"].as_array().unwrap();
    assert_eq!(elfs.len(), 1);
    let bin = &elfs[0];
    assert_eq!(
        bin["path"],
        format!("cudist-{version}.data/scripts/cudist").as_str()
    );
    // Not statically linked CUDA (its catalog's strings are not the runtime), no forbidden
    // imports (the weak __cxa_thread_atexit_impl reference of Rust's std does not count).
    assert_eq!(bin["static_cuda"], serde_json::json!([]), "{bin}");
    assert_eq!(bin["blacklisted_imports"], serde_json::json!([]), "{bin}");

    let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let (consistent, constrained) = auditwheel_tag(&auditwheel, &wheel);
    assert_eq!(consistent, "manylinux_2_17_x86_64");
    assert_eq!(constrained.as_deref(), Some("manylinux_2_17_x86_64"));
}

#[test]
fn the_wheel_is_small_stripped_and_fully_described() {
    let Some(wheel) = own_wheel() else {
        return;
    };
    // One stripped binary: 5.1 MiB since the Python reading uses ruff's parser (+0.7 MiB);
    // 6.3 MiB since select speaks through one HTTP client (ureq, rustls with ring, the
    // platform's certificate verifier: +1.2 MiB, issue 35).
    let size = std::fs::metadata(&wheel).unwrap().len();
    assert!(size < 7 << 20, "{size} bytes");
    // README.md names this wheel, and its size to the tenth of a MiB it quotes: within 0.1 MiB of
    // this build's (an exact rounding would flip on a few bytes at x.x5).
    let name = format!("`{}`, ", wheel.file_name().unwrap().to_string_lossy());
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let at = readme
        .find(&name)
        .unwrap_or_else(|| panic!("README.md should name {name}"));
    let quoted: f64 = readme[at + name.len()..]
        .split(" MiB")
        .next()
        .and_then(|n| n.parse().ok())
        .expect("README.md quotes the wheel's size in MiB");
    let real = size as f64 / (1 << 20) as f64;
    assert!(
        (quoted - real).abs() <= 0.1,
        "README.md says {quoted} MiB, the wheel is {real:.2} MiB"
    );
    let dist_info = format!("cudist-{}.dist-info", env!("CARGO_PKG_VERSION"));
    let meta = String::from_utf8(member(&wheel, &format!("{dist_info}/METADATA"))).unwrap();
    let (head, body) = meta.split_once("\n\n").unwrap();
    for line in [
        "Name: cudist",
        &format!("Version: {}", env!("CARGO_PKG_VERSION")),
        "License-Expression: Apache-2.0",
        "License-File: LICENSE",
        "Classifier: Environment :: GPU :: NVIDIA CUDA",
        "Classifier: Operating System :: POSIX :: Linux",
        "Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM",
    ] {
        assert!(head.lines().any(|l| l == line), "{line:?} not in\n{head}");
    }
    assert!(head
        .lines()
        .any(|l| l.starts_with("Project-URL: Repository, ")));
    assert!(
        !head.contains("Requires-Dist"),
        "cudist's wheel has no dependencies:\n{head}"
    );
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert_eq!(body.trim_end(), readme.trim_end());
    let license = member(&wheel, &format!("{dist_info}/licenses/LICENSE"));
    assert_eq!(license, std::fs::read(repo_root().join("LICENSE")).unwrap());

    // The binary is stripped: no symbol table, no DWARF.
    let work = tempfile::tempdir().unwrap();
    let bin = work.path().join("cudist");
    std::fs::write(
        &bin,
        member(
            &wheel,
            &format!("cudist-{}.data/scripts/cudist", env!("CARGO_PKG_VERSION")),
        ),
    )
    .unwrap();
    let o = run(Command::new("readelf").arg("-SW").arg(&bin));
    ok(&o, "readelf -S");
    let sections = stdout(&o);
    assert!(!sections.contains(" .symtab "), "{sections}");
    for dwarf in [" .debug_info ", " .debug_line ", " .debug_str "] {
        assert!(!sections.contains(dwarf), "{sections}");
    }
}

#[test]
fn the_installed_wheel_runs_as_cudist_and_as_python_m_cudist() {
    let Some(wheel) = own_wheel() else {
        return;
    };
    let want = version_line();
    let work = tempfile::tempdir().unwrap();
    let venv = work.path().join("venv");
    ok(
        &run(Command::new("python3").args(["-m", "venv"]).arg(&venv)),
        "python3 -m venv",
    );
    ok(&pip_install(&venv, &wheel, &[]), "pip install the wheel");
    // The console binary, in the venv's bin.
    let o = run(Command::new(venv.join("bin/cudist"))
        .arg("--version")
        .env_remove("PATH"));
    ok(&o, "venv/bin/cudist --version");
    assert_eq!(stdout(&o), want);
    assert!(want.starts_with(&format!(
        "cudist {} (catalog: CUDA through ",
        env!("CARGO_PKG_VERSION")
    )));
    // python -m cudist: the same binary, found without PATH; arguments, output and the exit
    // code pass through.
    let py = venv.join("bin/python");
    let o = run(Command::new(&py)
        .args(["-m", "cudist", "--version"])
        .env_remove("PATH"));
    ok(&o, "python -m cudist --version");
    assert_eq!(stdout(&o), want);
    let missing = work.path().join("no-such.whl");
    let o = run(Command::new(&py)
        .args(["-m", "cudist", "inspect"])
        .arg(&missing)
        .env_remove("PATH"));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such.whl"), "{}", stderr(&o));
    let o = run(Command::new(&py).args([
        "-c",
        "import cudist, sys; sys.stdout.write(cudist.find_cudist_bin())",
    ]));
    ok(&o, "cudist.find_cudist_bin()");
    assert_eq!(stdout(&o), venv.join("bin/cudist").to_str().unwrap());
    // Nothing but cudist came with it.
    let o = run(Command::new(venv.join("bin/pip")).args([
        "list",
        "--format=freeze",
        "--disable-pip-version-check",
    ]));
    let mut listed: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.split("==").next().unwrap().to_string())
        .filter(|n| n != "pip" && n != "setuptools")
        .collect();
    listed.sort();
    assert_eq!(listed, ["cudist"]);

    // `pip install --target DIR`: the binary is DIR/bin/cudist, and python -m cudist finds it.
    let target = work.path().join("target");
    let o = pip_install(&venv, &wheel, &["--target".as_ref(), target.as_os_str()]);
    ok(&o, "pip install --target");
    let o = run(Command::new("python3")
        .args(["-m", "cudist", "--version"])
        .env("PYTHONPATH", &target)
        .env("PYTHONNOUSERSITE", "1"));
    ok(&o, "python -m cudist from a --target tree");
    assert_eq!(stdout(&o), want);
    // Without the binary, python -m cudist says where it looked.
    std::fs::remove_file(target.join("bin/cudist")).unwrap();
    let o = run(Command::new("python3")
        .args(["-m", "cudist", "--version"])
        .env("PYTHONPATH", &target)
        .env("PYTHONNOUSERSITE", "1"));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("the cudist binary is not installed next to this package")
            && stderr(&o).contains(target.join("bin/cudist").to_str().unwrap()),
        "{}",
        stderr(&o)
    );
}
