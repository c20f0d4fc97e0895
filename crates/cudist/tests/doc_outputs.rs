//! The sessions the docs show (```text blocks whose lines start with `$ `), run and compared with
//! what cudist prints, so a sample cannot go stale. Each session the docs show is either run
//! here (its setup built as the page describes it, in a scratch directory that stands for the
//! page's `/tmp/dd`), run by another test named in [`ELSEWHERE`], or listed in [`NOT_RUN`] with
//! the reason; a new session that is none of these fails [`every_session_the_docs_show_is_run`].
//!
//! Comparing: the page's lines must be the real lines, in order, after the scratch directory is
//! written as `/tmp/dd`. A line `…` stands for any number of lines, a line ending in `…` for any
//! line it starts, and the page may stop before the output does. The machine lines of the host
//! section (`OS`, `CPU`) match any value: they describe the machine the page was made on.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pages with sessions.
const PAGES: &[&str] = &[
    "README.md",
    "docs/catalog.md",
    "docs/doctor.md",
    "docs/fatbin.md",
    "docs/relink.md",
    "docs/repair.md",
    "docs/select.md",
    "docs/slim.md",
    "docs/split.md",
    "docs/toolkit.md",
];

/// Sessions run by other tests: (page, command, the test).
const ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "pip install nvidia-cuda-nvcc ",
        "scripts/test.sh: these wheels, pinned, are the venv CUDIST_TK_CU13 the next sessions use",
    ),
    (
        "README.md",
        "cudist inspect cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
        "real_wheels.rs: the_readme_inspect_example_is_what_cudist_prints",
    ),
    (
        "README.md",
        "cudist catalog ",
        "recipes.rs: self_contained_doc_examples_print_what_the_docs_show",
    ),
    (
        "README.md",
        "python3 scripts/demo-wheel.py ",
        "recipes.rs: self_contained_doc_examples_print_what_the_docs_show",
    ),
    (
        "README.md",
        "cudist repair dist/demo_cuda-",
        "recipes.rs: self_contained_doc_examples_print_what_the_docs_show",
    ),
];

/// Sessions not run, and why (none now: a new entry needs a reason a reader accepts).
const NOT_RUN: &[(&str, &str, &str)] = &[];

/// A `$ …` session of a page: the command and the lines shown under it.
#[derive(Debug)]
struct Session {
    page: &'static str,
    command: String,
    shown: Vec<String>,
}

fn sessions() -> Vec<Session> {
    let mut out = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(repo_root().join(page)).unwrap();
        for block in text.split("```text\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let mut here: Vec<Session> = Vec::new();
            for line in block.lines() {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    here.push(Session {
                        page,
                        command: cmd.split("  #").next().unwrap().trim().to_string(),
                        shown: Vec::new(),
                    });
                } else if let Some(s) = here.last_mut() {
                    s.shown.push(line.to_string());
                }
            }
            out.extend(here);
        }
    }
    out
}

fn listed(list: &[(&str, &str, &str)], s: &Session) -> bool {
    list.iter()
        .any(|(page, cmd, _)| *page == s.page && s.command.starts_with(cmd))
}

/// The sessions this file runs (page, command as the page writes it).
const RUN_HERE: &[(&str, &str)] = &[
    ("README.md", "cudist doctor site/pkg"),
    (
        "README.md",
        "cudist toolkit --python .venv/bin/python --out cuda",
    ),
    ("README.md", "eval \"$(cudist toolkit env cuda)\""),
    (
        "README.md",
        "nvcc -arch=sm_80 -cudart shared -shared -Xcompiler -fPIC kern.cu -o libkern.so -lcurand -lcuda",
    ),
    (
        "docs/split.md",
        "cudist split .venv/lib/python3.11/site-packages -o split --format conda",
    ),
    ("docs/split.md", "ls split/linux-64"),
    (
        "docs/repair.md",
        "cudist inspect naive-1.0-cp311-cp311-linux_x86_64.whl",
    ),
    (
        "docs/repair.md",
        "cudist repair naive-1.0-cp311-cp311-linux_x86_64.whl -w out",
    ),
    (
        "docs/repair.md",
        "cudist inspect out/naive-1.0-cp311-cp311-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
    ),
    ("docs/doctor.md", "cudist doctor"),
    ("docs/doctor.md", "cudist doctor site/pkg"),
    ("docs/doctor.md", "cudist doctor --host h100.json multi.so"),
    (
        "docs/doctor.md",
        "cudist doctor ext.so --ld-library-path \"\"",
    ),
    (
        "docs/doctor.md",
        "cudist doctor --host a10.json arch_specific.so",
    ),
    (
        "docs/doctor.md",
        "cudist doctor --host thor570.json thrust.cpython-311-x86_64-linux-gnu.so",
    ),
    (
        "docs/doctor.md",
        "cudist doctor --host thor580.json thrust.cpython-311-x86_64-linux-gnu.so",
    ),
    (
        "docs/repair.md",
        "cudist repair cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl -w out",
    ),
    ("docs/relink.md", "cudist relink out --check"),
    (
        "docs/relink.md",
        "cudist relink out --origin --driver-runpath /run/opengl-driver/lib",
    ),
    (
        "docs/relink.md",
        "cudist relink out --check --allow /run/opengl-driver/lib",
    ),
];

#[test]
fn every_session_the_docs_show_is_run() {
    let all = sessions();
    assert!(all.len() >= 20, "{} sessions found", all.len());
    let mut unaccounted = Vec::new();
    for s in &all {
        let here = RUN_HERE
            .iter()
            .any(|(p, c)| *p == s.page && s.command == *c);
        if !here && !listed(ELSEWHERE, s) && !listed(NOT_RUN, s) {
            unaccounted.push(format!("{}: $ {}", s.page, s.command));
        }
    }
    assert!(
        unaccounted.is_empty(),
        "sessions no test runs (add them to tests/doc_outputs.rs): {unaccounted:#?}"
    );
    // Every entry still names a session of its page.
    for (p, c) in RUN_HERE {
        assert!(
            all.iter().any(|s| s.page == *p && s.command == *c),
            "{p} no longer shows `$ {c}`"
        );
    }
    for (p, c, _) in ELSEWHERE.iter().chain(NOT_RUN) {
        assert!(
            all.iter().any(|s| s.page == *p && s.command.starts_with(c)),
            "{p} no longer shows `$ {c}…`"
        );
    }
}

/// The session of `page` whose command is `command`.
fn session(page: &str, command: &str) -> Session {
    sessions()
        .into_iter()
        .find(|s| s.page == page && s.command == command)
        .unwrap_or_else(|| panic!("{page}: no `$ {command}`"))
}

/// A host section's machine line (`  OS        …`, `  CPU       …`): any value matches.
fn machine_line(line: &str) -> bool {
    line.starts_with("  OS        ") || line.starts_with("  CPU       ")
}

/// A line that ends with a duration (`… in 0.17 s`), with the number taken out: it is the
/// machine's.
fn timeless(line: &str) -> String {
    if let Some((head, tail)) = line.rsplit_once(" in ") {
        if let Some(n) = tail.strip_suffix(" s") {
            if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return format!("{head} in N s");
            }
        }
    }
    line.to_string()
}

/// Whether the page's lines are the real ones (see the module's comment).
fn compare(shown: &[String], real: &[String]) -> Result<(), String> {
    let same = |page: &str, real: &str| {
        let (page, real) = (timeless(page.trim_end()), timeless(real.trim_end()));
        let (page, real) = (page.as_str(), real.as_str());
        if machine_line(page) && machine_line(real) && page[..12] == real[..12] {
            return true;
        }
        match page.strip_suffix('…') {
            Some(prefix) if !prefix.trim().is_empty() => real.starts_with(prefix.trim_end()),
            _ => page == real,
        }
    };
    let mut r = 0;
    let mut i = 0;
    while i < shown.len() {
        let page = &shown[i];
        if page.trim() == "…" {
            // Any number of lines, up to the next one the page shows.
            let Some(next) = shown.get(i + 1) else {
                return Ok(());
            };
            match real[r..].iter().position(|l| same(next, l)) {
                Some(k) => r += k,
                None => return Err(format!("after `…`, the page's line is not printed: {next}")),
            }
            i += 1;
            continue;
        }
        let Some(actual) = real.get(r) else {
            return Err(format!("the page shows more than is printed, from: {page}"));
        };
        if !same(page, actual) {
            return Err(format!("line {}:\n  page: {page}\n  real: {actual}", r + 1));
        }
        r += 1;
        i += 1;
    }
    Ok(())
}

/// Runs a page's session in `dir` (its `/tmp/dd`), with `cudist` from this build first on PATH
/// and no `LD_LIBRARY_PATH`, and compares its standard output with the page.
fn check(page: &str, command: &str, dir: &Path) {
    check_in(page, command, dir, dir, "/tmp/dd");
}

/// [`check`], run in `cwd`, with the scratch directory `root` written as `as_` in the output (a
/// page that shortens paths to the tree's name writes it as "").
fn check_in(page: &str, command: &str, cwd: &Path, root: &Path, as_: &str) {
    check_with(
        page,
        command,
        cwd,
        &[(root.display().to_string(), as_)],
        &[],
        None,
    );
}

/// [`check`] with each (path, as written) replaced in the output, `env` set, and `path_first`
/// put on PATH before this build's directory.
fn check_with(
    page: &str,
    command: &str,
    cwd: &Path,
    replace: &[(String, &str)],
    env: &[(&str, String)],
    path_first: Option<&Path>,
) {
    let dir = cwd;
    let s = session(page, command);
    let bin = Path::new(env!("CARGO_BIN_EXE_cudist")).parent().unwrap();
    let path = format!(
        "{}{}:{}",
        path_first
            .map(|p| format!("{}:", p.display()))
            .unwrap_or_default(),
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &s.command])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("VIRTUAL_ENV")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let mut out = String::from_utf8_lossy(&o.stdout).into_owned();
    for (from, to) in replace {
        out = out.replace(from.as_str(), to);
    }
    let real: Vec<String> = out.lines().map(str::to_string).collect();
    if let Err(e) = compare(&s.shown, &real) {
        panic!(
            "{page}: `$ {command}` (exit {:?}) does not print what the page shows: {e}\nthe whole output:\n{out}\nstandard error:\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A scratch directory standing for the page's `/tmp/dd` (canonical: the loader's paths are).
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = std::fs::canonicalize(t.path()).unwrap();
    (t, p)
}

#[test]
fn the_comparison_reads_the_pages_marks() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let real = v(&[
        "a",
        "b",
        "c long line",
        "d",
        "  CPU       Other (x86-64-v2)",
    ]);
    assert!(compare(&v(&["a", "…", "d"]), &real).is_ok());
    assert!(compare(&v(&["a", "b", "c long…"]), &real).is_ok());
    assert!(compare(&v(&["…", "  CPU       Mine (x86-64-v4)"]), &real).is_ok());
    assert!(compare(&v(&["a", "c long line"]), &real).is_err());
    assert!(compare(&v(&["a", "…", "e"]), &real).is_err());
    assert!(compare(&v(&["a", "b", "c", "d", "  CPU       x", "f"]), &real).is_err());
    assert!(compare(&v(&["done in 0.17 s"]), &v(&["done in 12.5 s"])).is_ok());
    assert!(compare(&v(&["done in 0.17 s"]), &v(&["gone in 12.5 s"])).is_err());
}

/// README and docs/doctor.md: an extension built against libcublas.so.12 with nvidia-cublas-cu12
/// installed beside it but no RPATH to it.
#[test]
fn doctor_of_an_extension_without_rpath_prints_what_the_pages_show() {
    let (_t, dd) = scratch();
    let lib = dd.join("site/nvidia/cublas/lib");
    fake_lib(
        &lib,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let dist = dd.join("site/nvidia_cublas_cu12-12.9.1.4.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.9.1.4\n",
    )
    .unwrap();
    gcc_shared(
        &dd.join("site/pkg"),
        "_ext.cpython-311-x86_64-linux-gnu.so",
        None,
        "int cublasCreate_v2(void *);\nint f(void) { return cublasCreate_v2(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libcublas.so.12",
        ],
    );
    // Only the extension is the package's: the build's other files go.
    remove_c_sources(&dd.join("site/pkg"));
    remove_c_sources(&lib);
    check("README.md", "cudist doctor site/pkg", &dd);
    check("docs/doctor.md", "cudist doctor site/pkg", &dd);
}

/// docs/doctor.md: the nvcc 13.5 fixture `multi.so` for the profile the page shows.
#[test]
fn doctor_for_the_pages_h100_profile_prints_what_the_page_shows() {
    let (_t, dd) = scratch();
    let text = std::fs::read_to_string(repo_root().join("docs/doctor.md")).unwrap();
    let profile = text
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the page's profile");
    assert!(profile.contains("cluster node (H100, driver 575)"));
    std::fs::write(dd.join("h100.json"), profile).unwrap();
    std::fs::copy(
        repo_root().join("tests/fixtures/device/multi.so"),
        dd.join("multi.so"),
    )
    .unwrap();
    check(
        "docs/doctor.md",
        "cudist doctor --host h100.json multi.so",
        &dd,
    );
}

/// docs/doctor.md: `ext.so` built against a libcusparse that exports `cusparseSpSV_updateMatrix`,
/// its RPATH finding an older one that does not.
#[test]
fn doctor_of_a_symbol_an_older_library_lacks_prints_what_the_page_shows() {
    let (_t, dd) = scratch();
    let sym = dd.join("sym");
    let new = sym.join("new");
    let old = sym.join("old");
    gcc_shared(
        &new,
        "libcusparse.so.12",
        Some("libcusparse.so.12"),
        "int cusparseCreate(void *p) { return 0; }\nint cusparseSpSV_updateMatrix(void *p) { return 0; }\n",
        &[],
    );
    gcc_shared(
        &old,
        "libcusparse.so.12",
        Some("libcusparse.so.12"),
        "int cusparseCreate(void *p) { return 0; }\n",
        &[],
    );
    gcc_shared(
        &sym,
        "ext.so",
        None,
        "int cusparseSpSV_updateMatrix(void *);\nint f(void) { return cusparseSpSV_updateMatrix(0); }\n",
        &[
            &format!("-L{}", new.display()),
            "-l:libcusparse.so.12",
            "-Wl,-rpath,$ORIGIN/old",
        ],
    );
    check_in(
        "docs/doctor.md",
        "cudist doctor ext.so --ld-library-path \"\"",
        &sym,
        &dd,
        "/tmp/dd",
    );
}

/// docs/doctor.md: the fixtures judged for an A10, and cupy's `thrust` module for Jetson Thor
/// with a 570 and a 580 driver.
#[test]
fn doctor_for_gpu_profiles_prints_what_the_page_shows() {
    let (_t, dd) = scratch();
    std::fs::copy(
        repo_root().join("tests/fixtures/device/arch_specific.so"),
        dd.join("arch_specific.so"),
    )
    .unwrap();
    let profile = |name: &str, driver: &str, gpu: &str, sm: u32| {
        std::fs::write(
            dd.join(format!("{name}.json")),
            format!(
                "{{\"name\": \"{name}\", \"driver\": \"{driver}\", \"gpus\": [{{\"name\": \"{gpu}\", \"sm\": {sm}}}]}}"
            ),
        )
        .unwrap();
    };
    profile("a10", "580.65.06", "NVIDIA A10", 86);
    profile("thor570", "570.172.08", "Jetson Thor", 110);
    profile("thor580", "580.65.06", "Jetson Thor", 110);
    check(
        "docs/doctor.md",
        "cudist doctor --host a10.json arch_specific.so",
        &dd,
    );
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let cupy = wheels.join("cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl");
    let o = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[2], 'wb').write(z.read('cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so'))",
        ])
        .arg(&cupy)
        .arg(dd.join("thrust.cpython-311-x86_64-linux-gnu.so"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    check(
        "docs/doctor.md",
        "cudist doctor --host thor570.json thrust.cpython-311-x86_64-linux-gnu.so",
        &dd,
    );
    check(
        "docs/doctor.md",
        "cudist doctor --host thor580.json thrust.cpython-311-x86_64-linux-gnu.so",
        &dd,
    );
}

/// docs/relink.md: a tree whose program has a build machine's RUNPATH and needs the driver, and
/// a CUDA runtime that dlopens it; checked, relinked, checked again.
#[test]
fn relink_prints_what_the_page_shows() {
    let (_t, dd) = scratch();
    let out = dd.join("out");
    let lib = out.join("lib");
    let drv = dd.join("drv");
    fake_lib(&drv, "libcuda.so.1", "libcuda.so.1", "cuInit");
    fake_lib(&lib, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    let bin = out.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let app = gcc(
        &dd.join("build"),
        "app",
        "int cuInit(int);\nint main(void) { return cuInit(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", drv.display()),
            "-l:libcuda.so.1",
            "-Wl,--enable-new-dtags,-rpath,/build/sandbox/lib",
        ],
    );
    std::fs::copy(&app, bin.join("app")).unwrap();
    remove_c_sources(&lib);
    // The page shortens paths to the tree's name.
    let root = format!("{}/", dd.display());
    for command in [
        "cudist relink out --check",
        "cudist relink out --origin --driver-runpath /run/opengl-driver/lib",
        "cudist relink out --check --allow /run/opengl-driver/lib",
    ] {
        check_in("docs/relink.md", command, &dd, Path::new(&root), "");
    }
}

/// docs/repair.md: PyPI's cupy-cuda12x 14.2.0 repaired.
#[test]
fn repair_of_cupy_prints_what_the_page_shows() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let (_t, dd) = scratch();
    let name = "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl";
    std::os::unix::fs::symlink(wheels.join(name), dd.join(name)).unwrap();
    check(
        "docs/repair.md",
        "cudist repair cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl -w out",
        &dd,
    );
    // The page's Platform block: inspect of the original, the lines it shows together.
    let text = std::fs::read_to_string(repo_root().join("docs/repair.md")).unwrap();
    let platform: Vec<String> = text
        .split("```text\nPlatform: ")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .map(|b| format!("Platform: {b}"))
        .expect("the page's Platform block")
        .lines()
        .map(str::to_string)
        .collect();
    let o = cudist(&["inspect", dd.join(name).to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let real: Vec<String> = out
        .lines()
        .skip_while(|l| !l.starts_with("Platform: "))
        .map(str::to_string)
        .collect();
    if let Err(e) = compare(&platform, &real) {
        panic!("docs/repair.md, the Platform block: {e}\nthe whole output:\n{out}");
    }
    // The page's "After" block: inspect of the repaired wheel, without its command line.
    let text = std::fs::read_to_string(repo_root().join("docs/repair.md")).unwrap();
    let after = text
        .split("After, `cudist inspect` on the result:\n\n```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the page's After block");
    let shown: Vec<String> = after.lines().map(str::to_string).collect();
    let o = cudist(&[
        "inspect",
        dd.join("out/cupy_cuda12x-14.2.0-cp311-cp311-manylinux_2_24_x86_64.whl")
            .to_str()
            .unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    // The block starts at the verdict.
    let real: Vec<String> = out.lines().skip(1).map(str::to_string).collect();
    if let Err(e) = compare(&shown, &real) {
        panic!("docs/repair.md, the After block: {e}\nthe whole output:\n{out}");
    }
}

/// docs/doctor.md: the machine report, with a CUDA 12 venv's python3 first on PATH and both a
/// CUDA 13 and a CUDA 12 runtime on LD_LIBRARY_PATH (scripts/test.sh's two toolkit venvs, written
/// as the page's `/opt/envs/cu12` and `/opt/envs/cu13`).
#[test]
fn the_machine_report_prints_what_the_page_shows() {
    let (Some(cu12), Some(cu13)) = (
        tool_from_env("CUDIST_TK_CU12"),
        tool_from_env("CUDIST_TK_CU13"),
    ) else {
        return;
    };
    let site = |venv: &Path| site_of(venv);
    let (t, _) = scratch();
    let ld = format!(
        "{}:{}",
        site(&cu13).join("nvidia/cu13/lib").display(),
        site(&cu12).join("nvidia/cuda_runtime/lib").display()
    );
    check_with(
        "docs/doctor.md",
        "cudist doctor",
        t.path(),
        &[
            (cu12.display().to_string(), "/opt/envs/cu12"),
            (cu13.display().to_string(), "/opt/envs/cu13"),
        ],
        &[("LD_LIBRARY_PATH", ld)],
        Some(&cu12.join("bin")),
    );
}

/// README.md: a CUDA root assembled from the CUDA 13 wheels of a venv (scripts/test.sh's,
/// standing for the page's `.venv`), then nvcc from that root building and linking a kernel
/// library with `-cudart shared -lcurand -lcuda`, as the page's comment says it does.
#[test]
fn the_readme_toolkit_session_prints_what_it_shows_and_links() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let (_t, demo) = scratch();
    std::os::unix::fs::symlink(&venv, demo.join(".venv")).unwrap();
    check_in(
        "README.md",
        "cudist toolkit --python .venv/bin/python --out cuda",
        &demo,
        &demo,
        "/tmp/demo",
    );
    std::fs::write(
        demo.join("kern.cu"),
        "#include <curand.h>\n__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }\n\
         extern \"C\" int run(float *x) { curandGenerator_t g;\n\
           if (curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT) != CURAND_STATUS_SUCCESS) return 1;\n\
           scale<<<1, 32>>>(x); return cudaGetLastError() == cudaSuccess ? 0 : 2; }\n",
    )
    .unwrap();
    let eval = session("README.md", "eval \"$(cudist toolkit env cuda)\"");
    let nvcc = session(
        "README.md",
        "nvcc -arch=sm_80 -cudart shared -shared -Xcompiler -fPIC kern.cu -o libkern.so -lcurand -lcuda",
    );
    assert!(eval.shown.is_empty() && nvcc.shown.is_empty());
    // Both in one shell, as the page's reader types them.
    let bin = Path::new(env!("CARGO_BIN_EXE_cudist")).parent().unwrap();
    let o = Command::new("sh")
        .args(["-c", &format!("{}\n{}", eval.command, nvcc.command)])
        .current_dir(&demo)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let readelf = Command::new("readelf")
        .args(["-d"])
        .arg(demo.join("libkern.so"))
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&readelf.stdout);
    for lib in ["libcudart.so.13", "libcurand.so.10"] {
        assert!(dynamic.contains(&format!("[{lib}]")), "{lib}: {dynamic}");
    }
}

/// docs/split.md: scripts/test.sh's CUDA 13.5 venv (the page's `.venv`) split into conda
/// packages, and the packages written (the page lays `ls`'s names out in columns, as a terminal
/// shows them).
#[test]
fn the_split_session_prints_what_the_page_shows() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let (_t, dd) = scratch();
    std::os::unix::fs::symlink(&venv, dd.join(".venv")).unwrap();
    check_with(
        "docs/split.md",
        "cudist split .venv/lib/python3.11/site-packages -o split --format conda",
        &dd,
        &[(dd.join("split").display().to_string(), "/tmp/doc-split")],
        &[],
        None,
    );
    let ls = session("docs/split.md", "ls split/linux-64");
    let mut shown: Vec<&str> = ls.shown.iter().flat_map(|l| l.split_whitespace()).collect();
    shown.sort_unstable();
    let mut real: Vec<String> = std::fs::read_dir(dd.join("split/linux-64"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    real.sort_unstable();
    assert_eq!(shown, real);
    // The page's excerpt of split.json: every value it shows is the file's (a list shows some
    // of the file's elements).
    let text = std::fs::read_to_string(repo_root().join("docs/split.md")).unwrap();
    let at = text
        .find("An excerpt of `split.json`")
        .expect("the excerpt");
    let block = text[at..]
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let excerpt: serde_json::Value = serde_json::from_str(block).unwrap();
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dd.join("split/split.json")).unwrap()).unwrap();
    if let Err(at) = shows_part_of(&excerpt, &file, "") {
        panic!("docs/split.md's excerpt differs from split.json at {at}");
    }
}

/// Whether `part` shows only what `whole` holds: its keys with their values, some elements of
/// each list; else where it differs.
fn shows_part_of(
    part: &serde_json::Value,
    whole: &serde_json::Value,
    at: &str,
) -> Result<(), String> {
    use serde_json::Value;
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => {
            for (k, v) in p {
                let here = format!("{at}.{k}");
                shows_part_of(v, w.get(k).ok_or_else(|| here.clone())?, &here)?;
            }
            Ok(())
        }
        (Value::Array(p), Value::Array(w)) => {
            for (i, v) in p.iter().enumerate() {
                if !w.iter().any(|x| shows_part_of(v, x, "").is_ok()) {
                    return Err(format!("{at}[{i}]"));
                }
            }
            Ok(())
        }
        _ if part == whole => Ok(()),
        _ => Err(format!("{at}: page {part}, file {whole}")),
    }
}

/// docs/repair.md: a wheel whose extension links `libcublas.so.12` and carries NVIDIA's
/// libcudart 12.9.79 renamed as a CUDA-unaware repair leaves it (`libcudart-5ab1c2d3.so.12`,
/// SONAME set by patchelf), inspected, repaired and inspected again.
#[test]
fn the_naive_graft_sessions_print_what_the_page_shows() {
    let (Some(wheels), Some(patchelf)) = (
        tool_from_env("CUDIST_REAL_WHEELS"),
        tool_from_env("CUDIST_PATCHELF"),
    ) else {
        return;
    };
    let (_t, dd) = scratch();
    let build = dd.join("build");
    extract(
        &find_wheel(&wheels, "nvidia_cuda_runtime_cu12-12.9.79"),
        &["nvidia/cuda_runtime/lib/libcudart.so.12"],
        &build,
    );
    let hashed = build.join("libcudart-5ab1c2d3.so.12");
    std::fs::copy(
        build.join("nvidia/cuda_runtime/lib/libcudart.so.12"),
        &hashed,
    )
    .unwrap();
    let o = Command::new(patchelf)
        .args(["--set-soname", "libcudart-5ab1c2d3.so.12"])
        .arg(&hashed)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    fake_lib(
        &build,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let ext = gcc_shared(
        &build,
        "_ext.so",
        None,
        "int cublasCreate_v2(void *);\nint cudaMalloc(void **, unsigned long);\n\
         int PyInit__ext(void) { void *p; return cublasCreate_v2(0) + cudaMalloc(&p, 16); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libcublas.so.12",
            "-l:libcudart-5ab1c2d3.so.12",
            "-Wl,-rpath,$ORIGIN/../naive.libs",
            "-Wl,--disable-new-dtags",
        ],
    );
    write_wheel(
        &dd.join("naive-1.0-cp311-cp311-linux_x86_64.whl"),
        "naive",
        &[],
        &[
            (
                "naive/_ext.cpython-311-x86_64-linux-gnu.so",
                std::fs::read(ext).unwrap(),
            ),
            (
                "naive.libs/libcudart-5ab1c2d3.so.12",
                std::fs::read(&hashed).unwrap(),
            ),
        ],
    );
    for command in [
        "cudist inspect naive-1.0-cp311-cp311-linux_x86_64.whl",
        "cudist repair naive-1.0-cp311-cp311-linux_x86_64.whl -w out",
        "cudist inspect out/naive-1.0-cp311-cp311-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
    ] {
        check("docs/repair.md", command, &dd);
    }
}
