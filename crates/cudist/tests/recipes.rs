//! The recipes of docs/recipes.md, run as written there: the conda-forge / rattler-build overlinking
//! gate and the Nix fixup phase. (The cibuildwheel recipe is run by tests/toolkit.rs, on the wheel
//! its scikit-build-core test builds.) And every self-contained terminal example of the README and
//! docs (`$ cudist …` on the catalog or on files the repo ships or builds): run, its output
//! compared with the page's.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RECIPES: &str = "docs/recipes.md";

/// `PATH` with the cudist under test first, as a build image that installed it has.
fn path_with_cudist() -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", cudist_dir().display())
}

/// Runs `script` as `sh -c` does in a build step, in `cwd`, with `env` added.
fn sh(script: &str, cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("PATH", path_with_cudist())
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run sh")
}

/// The `myext` package of [`conda_package_linking_cublas`], in `out/<subdir>/` as rattler-build
/// writes it.
fn package(work: &Path, out: &Path, depends: &[&str]) -> PathBuf {
    let (subdir, _) = cudist_conda::host_subdir();
    conda_package_linking_cublas(work, &out.join(subdir), depends)
}

#[test]
fn the_rattler_build_gate_fails_on_overlinking_only() {
    let gate = doc_block(
        RECIPES,
        "sh",
        "# after `rattler-build build --recipe recipe --output-dir output` (conda-build: its output folder)",
    );
    // Overlinking: the library links cuBLAS, the depends name only the runtime.
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    let pkg = package(
        work.path(),
        &build.join("output"),
        &["cuda-cudart >=13.0,<14.0a0", "python >=3.11"],
    );
    let o = sh(&gate, &build, &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let (subdir, _) = cudist_conda::host_subdir();
    assert!(
        text.contains(&format!(
            "output/{subdir}/myext-1.0-h0_0.conda: links libcublas.so.13 but depends on no libcublas"
        )),
        "{text}"
    );
    assert!(!text.contains("libcudart.so.13"), "{text}");

    // Declared: the same package with libcublas in its depends passes.
    std::fs::remove_file(&pkg).unwrap();
    package(
        work.path(),
        &build.join("output"),
        &[
            "cuda-cudart >=13.0,<14.0a0",
            "libcublas >=13.0,<14.0a0",
            "python >=3.11",
        ],
    );
    let o = sh(&gate, &build, &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).trim(), "no CUDA overlinking");

    // A package cudist cannot read fails the step too: listed by the script, and with `set -e`
    // (as CI runners' shells have) the step stops at inspect's exit code 3.
    std::fs::write(
        build
            .join("output")
            .join(subdir)
            .join("broken-1.0-h0_0.conda"),
        b"not a zip",
    )
    .unwrap();
    let o = sh(&gate, &build, &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("broken-1.0-h0_0.conda: "),
        "{}",
        stdout(&o)
    );
    let o = sh(&format!("set -e\n{gate}"), &build, &[]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn the_nix_fixup_adds_the_driver_runpath() {
    let block = doc_block(
        RECIPES,
        "nix",
        "# in the derivation (cudist in nativeBuildInputs)",
    );
    // The shell text between `postFixup = ''` and `'';`, as Nix hands it to the builder's bash.
    let script = block
        .split("postFixup = ''\n")
        .nth(1)
        .and_then(|r| r.split("'';").next())
        .expect("a postFixup phase in the Nix recipe")
        .to_string();
    assert!(script.contains("$out"), "{script}");

    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("nix/store/aaaa-myapp-1.0");
    let stubs = work.path().join("stubs");
    fake_lib(&stubs, "libcuda.so.1", "libcuda.so.1", "cuInit");
    std::os::unix::fs::symlink("libcuda.so.1", stubs.join("libcuda.so")).unwrap();
    fake_lib(
        &out.join("lib"),
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaMalloc",
    );
    let other = fake_lib(&out.join("lib"), "libother.so.1", "libother.so.1", "other");
    let app = gcc(
        &out.join("bin"),
        "myapp",
        "int cuInit(void *); int main(void) { return cuInit(0); }\n",
        &[
            &format!("-L{}", stubs.display()),
            "-Wl,--no-as-needed",
            "-lcuda",
        ],
    );
    let other_before = std::fs::read(&other).unwrap();
    let o = sh(&script, work.path(), &[("out", out.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    for elf in [app.clone(), out.join("lib/libcudart.so.13")] {
        let d = readelf_d(&elf);
        assert!(
            d.contains("Library runpath: [/run/opengl-driver/lib]"),
            "{}: {d}",
            elf.display()
        );
    }
    assert_eq!(std::fs::read(&other).unwrap(), other_before);
    // The program's only way to the driver is that directory: ld.so looks there.
    let o = Command::new(&app)
        .env_remove("LD_LIBRARY_PATH")
        .env("LD_DEBUG", "libs")
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&o.stderr);
    assert!(
        trace.contains("trying file=/run/opengl-driver/lib/libcuda.so.1")
            || trace.contains("search path=/run/opengl-driver/lib"),
        "{trace}"
    );
}

/// The `$ …` sessions of ```text blocks in `doc`: each command with the output lines under it.
fn sessions(doc: &str) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
    let mut out = vec![];
    for block in text.split("```text\n").skip(1) {
        let block = block.split("```").next().unwrap();
        for line in block.lines() {
            if let Some(cmd) = line.strip_prefix("$ ") {
                out.push((cmd.to_string(), vec![]));
            } else if let Some((_, lines)) = out.last_mut() {
                lines.push(line.to_string());
            }
        }
        // Output stops at the end of its block.
        out.push((String::new(), vec![]));
    }
    out.retain(|(cmd, _)| !cmd.is_empty());
    out
}

/// A page's output line matches a real one: equal after trimming, or a prefix of it when the page
/// shortens the line with `…`.
fn line_matches(page: &str, real: &str) -> bool {
    let (page, real) = (page.trim_end(), real.trim_end());
    match page.strip_suffix('…') {
        Some(prefix) => real.starts_with(prefix.trim_end()),
        None => page == real,
    }
}

#[test]
fn self_contained_doc_examples_print_what_the_docs_show() {
    let work = tempfile::tempdir().unwrap();
    let root = repo_root();
    let mut ran = 0;
    let python3 = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    let python3 = String::from_utf8(python3.stdout)
        .unwrap()
        .trim()
        .to_string();
    for doc in [
        "README.md",
        "docs/catalog.md",
        "docs/fatbin.md",
        "docs/repair.md",
        "docs/doctor.md",
        "docs/relink.md",
        "docs/split.md",
        "docs/toolkit.md",
    ] {
        for (cmd, shown) in sessions(doc) {
            let cmd = cmd.split("  #").next().unwrap().trim().to_string();
            // Self-contained: the catalog, or the repo's own scripts and files. The demo wheel's
            // session (README) runs in a scratch directory, as a user would in a checkout.
            let self_contained = cmd.starts_with("cudist catalog ")
                || cmd.starts_with("python3 scripts/demo-wheel.py ")
                || cmd.starts_with("cudist repair dist/demo_cuda-");
            if !self_contained {
                continue;
            }
            // The repo's scripts from the checkout, with the python3 of the test's own PATH.
            let script = cmd
                .replacen("scripts/", &format!("{}/scripts/", root.display()), 1)
                .replacen("python3 ", "\"$PYTHON3\" ", 1);
            let o = sh(&script, work.path(), &[("PYTHON3", &python3)]);
            // 1 is an answer ("cannot be built"), not a failure.
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{doc}: `{cmd}` failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let real = String::from_utf8_lossy(&o.stdout).into_owned();
            let real: Vec<&str> = real.lines().collect();
            // The page shows the output from its first line; it may stop early, never differ.
            assert!(
                shown.len() <= real.len(),
                "{doc}: `{cmd}` shows {} lines, prints {}:\n{}",
                shown.len(),
                real.len(),
                real.join("\n")
            );
            for (i, (page, actual)) in shown.iter().zip(&real).enumerate() {
                assert!(
                    line_matches(page, actual),
                    "{doc}: `{cmd}`, output line {}:\n  page: {page}\n  real: {actual}\nthe whole output:\n{}",
                    i + 1,
                    real.join("\n")
                );
            }
            ran += 1;
        }
    }
    // The README's catalog session (lib, driver, sm) and its repair session (demo wheel, repair).
    assert!(ran >= 5, "{ran} examples ran");
}

/// The figures README.md quotes from the catalog are the catalog's.
#[test]
fn the_readme_counts_the_catalog_as_it_is() {
    let o = cudist(&["catalog", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = v["libraries"].as_array().unwrap().len();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("holds {n} libraries")),
        "README.md should say the catalog holds {n} libraries"
    );
}
