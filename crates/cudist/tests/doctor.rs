//! `cudist doctor PATH` on extensions built here: the verdict, the exit code, the paths tried and
//! the fix for a missing CUDA library, and the rule that found each library.

mod common;
use common::*;

use serde_json::Value;

/// The `tier` doctor gives the file whose path ends with `name`.
fn tier_of(report: &Value, name: &str) -> Value {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(name))
        .map(|f| f["tier"].clone())
        .unwrap_or_else(|| panic!("no file ending in {name}"))
}

/// The verdict's reasons of a `doctor --json` report.
fn reasons_of(v: &Value) -> Vec<&str> {
    v["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

#[test]
fn a_missing_cuda_library_is_named_with_the_paths_tried_and_the_package_that_ships_it() {
    let work = tempfile::tempdir().unwrap();
    let pkg = work.path().join("site/pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let wheel_dir = work.path().join("site/nvidia/cublas/lib");
    std::fs::create_dir_all(&wheel_dir).unwrap();
    fake_lib(
        &wheel_dir,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    std::os::unix::fs::symlink("libcublas.so.12", wheel_dir.join("libcublas.so")).unwrap();
    let link = format!("-L{}", wheel_dir.display());
    // Without a search path: not found.
    gcc_shared(
        &pkg,
        "_plain.so",
        None,
        "int cublasCreate_v2(void *); int f(void) { return cublasCreate_v2(0); }\n",
        &[&link, "-lcublas"],
    );
    let r = doctor_json(
        &[
            pkg.join("_plain.so").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        1,
    );
    assert_eq!(r["schema"], "cudist.doctor/1");
    assert_eq!(r["verdict"]["status"], "will-fail-to-load");
    let m = &r["files"][0]["missing"][0];
    assert_eq!(m["name"], "libcublas.so.12");
    // The wheel is installed beside the package: the fix names the missing RPATH entry.
    let fix = m["fix"].as_str().unwrap();
    assert!(fix.contains("nvidia-cublas-cu12 is installed"), "{fix}");
    assert!(fix.contains("$ORIGIN/../nvidia/cublas/lib"), "{fix}");
    assert!(!m["tried"].as_array().unwrap().is_empty());
    // A library whose releases install into two directories (cuSPARSELt 0.8 into
    // nvidia/cusparselt/lib, 0.9 on into nvidia/cu13/lib), with an RPATH that reaches one (as
    // torch's does): the fix names both lines and says the search path needs nothing.
    let lt = work.path().join("lt");
    fake_lib(
        &lt,
        "libcusparseLt.so.0",
        "libcusparseLt.so.0",
        "cusparseLtInit",
    );
    gcc_shared(
        &pkg,
        "_lt.so",
        None,
        "int cusparseLtInit(void *); int f(void) { return cusparseLtInit(0); }\n",
        &[
            &format!("-L{}", lt.display()),
            "-l:libcusparseLt.so.0",
            "-Wl,-rpath,$ORIGIN/../nvidia/cusparselt/lib",
        ],
    );
    let r = doctor_json(
        &[
            pkg.join("_lt.so").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        1,
    );
    let fix = r["files"][0]["missing"][0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("site-packages/nvidia/cusparselt/lib for releases >=0.8,<0.9")
            && fix.ends_with("already reaches nvidia/cusparselt/lib"),
        "{fix}"
    );
    // LD_LIBRARY_PATH reaches it, and the rule says so.
    let r = doctor_json(
        &[
            pkg.join("_plain.so").to_str().unwrap(),
            "--ld-library-path",
            wheel_dir.to_str().unwrap(),
        ],
        0,
    );
    let res = r["files"][0]["resolutions"].as_array().unwrap();
    let cublas = res.iter().find(|x| x["name"] == "libcublas.so.12").unwrap();
    assert_eq!(cublas["rule"]["rule"], "ld_library_path");
    // With the RPATH `cudist repair` would write: found through it, whatever LD_LIBRARY_PATH says.
    gcc_shared(
        &pkg,
        "_rpath.so",
        None,
        "int cublasCreate_v2(void *); int f(void) { return cublasCreate_v2(0); }\n",
        &[
            &link,
            "-lcublas",
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../nvidia/cublas/lib",
        ],
    );
    let r = doctor_json(
        &[
            pkg.join("_rpath.so").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        0,
    );
    assert_eq!(r["verdict"]["status"], "ok");
    let cublas = r["files"][0]["resolutions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "libcublas.so.12")
        .unwrap()
        .clone();
    assert_eq!(cublas["rule"]["rule"], "rpath");
    assert!(
        cublas["path"]
            .as_str()
            .unwrap()
            .ends_with("pkg/../nvidia/cublas/lib/libcublas.so.12"),
        "{cublas:#}"
    );
    // A directory: every ELF in it, object files skipped; the human report shows the fix.
    std::fs::write(pkg.join("notes.txt"), "not ELF").unwrap();
    let o = cudist(&["doctor", pkg.to_str().unwrap(), "--ld-library-path", ""]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("will fail to load") && text.contains("fix: nvidia-cublas-cu12 is installed"),
        "{text}"
    );
    // The file that loads is counted, and listed with --verbose.
    assert!(
        !text.contains("_rpath.so")
            && text.contains("1 other file(s) load with every library found"),
        "{text}"
    );
    let o = cudist(&[
        "doctor",
        "--verbose",
        pkg.to_str().unwrap(),
        "--ld-library-path",
        "",
    ]);
    let text = stdout(&o);
    assert!(
        text.contains("_rpath.so") && text.contains("(RPATH)"),
        "{text}"
    );
    // Not installed at all: the fix says what to install.
    std::fs::remove_dir_all(work.path().join("site/nvidia")).unwrap();
    let r = doctor_json(
        &[
            pkg.join("_plain.so").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        1,
    );
    let fix = r["files"][0]["missing"][0]["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fix.starts_with("install nvidia-cublas-cu12"), "{fix}");
}

#[test]
fn bad_input_is_refused() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "x").unwrap();
    let o = cudist(&["doctor", work.path().to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("no ELF files"), "{}", stderr(&o));
    let o = cudist(&["doctor", "/nonexistent/x.so"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("/nonexistent/x.so"), "{}", stderr(&o));
}

/// glibc's answer: whether `ctypes.CDLL` (RTLD_NOW) loads `lib` without `LD_LIBRARY_PATH`, and
/// what it printed.
fn ctypes_load(lib: &std::path::Path) -> (bool, String) {
    let o = std::process::Command::new("python3")
        .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])"])
        .arg(lib)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Built against a newer libcusparse than the one it loads: doctor names the missing symbol, and
/// glibc agrees (ctypes loads with RTLD_NOW and fails on that symbol).
#[test]
fn a_symbol_missing_from_an_older_cuda_library_is_named() {
    for versioned in [false, true] {
        let work = tempfile::tempdir().unwrap();
        let (new, old) = (work.path().join("new"), work.path().join("old"));
        std::fs::create_dir_all(&new).unwrap();
        std::fs::create_dir_all(&old).unwrap();
        let map = work.path().join("cusparse.map");
        std::fs::write(
            &map,
            "libcusparse.so.12 { global: cusparse*; local: *; };\n",
        )
        .unwrap();
        let vs = format!("-Wl,--version-script={}", map.display());
        let extra: Vec<&str> = if versioned { vec![vs.as_str()] } else { vec![] };
        gcc_shared(
            &new,
            "libcusparse.so.12",
            Some("libcusparse.so.12"),
            "int cusparseCreate(void **h) { return 0; }\nint cusparseSpSV_updateMatrix(void *h, void *m, int k) { return 0; }\n",
            &extra,
        );
        gcc_shared(
            &old,
            "libcusparse.so.12",
            Some("libcusparse.so.12"),
            "int cusparseCreate(void **h) { return 0; }\n",
            &extra,
        );
        std::os::unix::fs::symlink("libcusparse.so.12", new.join("libcusparse.so")).unwrap();
        let ext = gcc_shared(
            work.path(),
            "ext.so",
            None,
            "int cusparseCreate(void **h); int cusparseSpSV_updateMatrix(void *h, void *m, int k);\n\
             int f(void) { void *h; cusparseCreate(&h); return cusparseSpSV_updateMatrix(h, 0, 0); }\n",
            &[&format!("-L{}", new.display()), "-lcusparse", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/old"],
        );
        let r = doctor_json(&[ext.to_str().unwrap(), "--ld-library-path", ""], 1);
        let ms = r["files"][0]["missing_symbols"].as_array().unwrap();
        assert_eq!(ms.len(), 1, "{ms:#?}");
        assert_eq!(ms[0]["symbol"], "cusparseSpSV_updateMatrix");
        assert_eq!(ms[0]["library"], "libcusparse.so.12");
        assert!(ms[0]["resolved"]
            .as_str()
            .unwrap()
            .ends_with("old/libcusparse.so.12"));
        assert_eq!(
            ms[0]["version"].as_str(),
            versioned.then_some("libcusparse.so.12")
        );
        let reason = r["verdict"]["reasons"][0].as_str().unwrap();
        assert!(
            reason.contains("built against a newer libcusparse"),
            "{reason}"
        );
        // glibc agrees.
        let (loaded, err) = ctypes_load(&ext);
        assert!(!loaded);
        assert!(err.contains("undefined symbol: cusparseSpSV_updateMatrix"));
        // Against the new library, nothing is missing (and ctypes loads it).
        let r = doctor_json(
            &[
                ext.to_str().unwrap(),
                "--ld-library-path",
                new.to_str().unwrap(),
            ],
            1,
        );
        // (still RPATH to old/ first: RPATH wins over LD_LIBRARY_PATH)
        assert_eq!(
            r["files"][0]["missing_symbols"].as_array().unwrap().len(),
            1
        );
        std::fs::remove_file(old.join("libcusparse.so.12")).unwrap();
        let r = doctor_json(
            &[
                ext.to_str().unwrap(),
                "--ld-library-path",
                new.to_str().unwrap(),
            ],
            0,
        );
        assert!(r["files"][0]["missing_symbols"]
            .as_array()
            .unwrap()
            .is_empty());
    }
}

/// RAPIDS' case (NVIDIA/cuvs#1862): a file built with nvJitLink 13.1 imports
/// `__nvJitLinkGetErrorLog_13_1`, and nvJitLink 13.0 lacks it. doctor names the symbol, and the
/// fix names the first release that exports it (the catalog's table, read from the wheels).
#[test]
fn an_nvjitlink_too_old_for_its_caller_gets_the_release_that_has_the_symbol() {
    let work = tempfile::tempdir().unwrap();
    let (new, old) = (work.path().join("new"), work.path().join("old"));
    let map = work.path().join("nvjitlink.map");
    std::fs::write(
        &map,
        "libnvJitLink.so.13 { global: *nvJitLink*; local: *; };\n",
    )
    .unwrap();
    let vs = format!("-Wl,--version-script={}", map.display());
    gcc_shared(
        &new,
        "libnvJitLink.so.13",
        Some("libnvJitLink.so.13"),
        "int __nvJitLinkGetErrorLog_13_0(void *h) { return 0; }\nint __nvJitLinkGetErrorLog_13_1(void *h) { return 0; }\n",
        &[vs.as_str()],
    );
    gcc_shared(
        &old,
        "libnvJitLink.so.13",
        Some("libnvJitLink.so.13"),
        "int __nvJitLinkGetErrorLog_13_0(void *h) { return 0; }\n",
        &[vs.as_str()],
    );
    std::os::unix::fs::symlink("libnvJitLink.so.13", new.join("libnvJitLink.so")).unwrap();
    let ext = gcc_shared(
        work.path(),
        "jit.so",
        None,
        "int __nvJitLinkGetErrorLog_13_1(void *h);\nint f(void) { return __nvJitLinkGetErrorLog_13_1(0); }\n",
        &[&format!("-L{}", new.display()), "-lnvJitLink", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/old"],
    );
    let r = doctor_json(&[ext.to_str().unwrap(), "--ld-library-path", ""], 1);
    let ms = r["files"][0]["missing_symbols"].as_array().unwrap();
    assert_eq!(ms[0]["symbol"], "__nvJitLinkGetErrorLog_13_1", "{ms:#?}");
    let reason = r["verdict"]["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("pip install \"nvidia-nvjitlink>=13.1."),
        "{reason}"
    );
    // glibc agrees.
    let (loaded, err) = ctypes_load(&ext);
    assert!(!loaded);
    assert!(err.contains("undefined symbol: __nvJitLinkGetErrorLog_13_1"));
}

/// Writes a host profile and returns its path.
fn profile(
    dir: &std::path::Path,
    sm: u32,
    driver: &str,
    driver_cuda: Option<&str>,
) -> std::path::PathBuf {
    let p = dir.join(format!("host-{sm}-{driver}.json"));
    let mut v = serde_json::json!({"name": format!("sm_{sm} box"), "driver": driver, "gpus": [{"name": "GPU", "sm": sm}]});
    if let Some(c) = driver_cuda {
        v["driver_cuda"] = c.into();
    }
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

/// The status of the single GPU for the single file.
fn gpu_status(file: &std::path::Path, host: &std::path::Path) -> (String, Value) {
    let o = cudist(&[
        "doctor",
        "--json",
        "--host",
        host.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    let f = &v["files"][0];
    (f["gpus"][0]["status"].as_str().unwrap().to_string(), v)
}

#[test]
fn device_code_and_driver_are_judged_per_host_profile() {
    let work = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let multi = fx.join("multi.so"); // sm_80 + sm_90 cubins, sm_90 PTX (ISA 9.5, CUDA 13.5)
    let arch = fx.join("arch_specific.so"); // sm_90a sm_100 sm_100a sm_103 sm_120 cubins; sm_100a and sm_120f PTX
    let d580 = "580.65.06";
    for (file, sm, driver, cuda, want) in [
        (&multi, 75, d580, None, "no-kernel-image"),
        (&multi, 80, d580, None, "cubin"),
        (&multi, 86, d580, None, "cubin"),
        (&multi, 90, d580, None, "cubin"),
        (&multi, 100, d580, None, "ptx-too-new"),
        // A 13.5 driver (R620, the branch whose manifest carries CUDA 13.5) JITs ISA 9.5; a
        // 13.3 one (610.43.02, its own minimum) cannot.
        (&multi, 100, "620.70.06", Some("13.5"), "jit"),
        (&multi, 120, "620.70.06", None, "jit"),
        (&multi, 100, "610.43.02", None, "ptx-too-new"),
        (&arch, 86, d580, None, "no-kernel-image"),
        (&arch, 90, d580, None, "cubin"),
        (&arch, 100, d580, None, "cubin"),
        (&arch, 103, d580, None, "cubin"),
        (&arch, 110, "620.70.06", Some("13.5"), "no-kernel-image"),
        (&arch, 121, d580, None, "cubin"),
    ] {
        let (got, v) = gpu_status(file, &profile(work.path(), sm, driver, cuda));
        assert_eq!(
            got,
            want,
            "{} on sm_{sm} driver {driver}: {:#}",
            file.display(),
            v["files"][0]["gpus"]
        );
    }
    // The verdict ranks a GPU failure above a JIT warning; load failures (libcudart.so.13 is not
    // installed here) above both.
    let (_, v) = gpu_status(
        &multi,
        &profile(work.path(), 120, "620.70.06", Some("13.5")),
    );
    assert_eq!(v["verdict"]["status"], "will-fail-to-load");
    assert!(v["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str().unwrap().contains("first use")));
    // Driver floor: a CUDA 13 runtime needs 580.65.06 at least.
    let (_, v) = gpu_status(&multi, &profile(work.path(), 86, "570.26", None));
    let dp = v["files"][0]["driver_problems"].as_array().unwrap();
    assert!(
        dp[0].as_str().unwrap().contains("too old for CUDA 13"),
        "{dp:?}"
    );
    let (_, v) = gpu_status(&multi, &profile(work.path(), 86, d580, None));
    assert!(v["files"][0]["driver_problems"]
        .as_array()
        .unwrap()
        .is_empty());
    // The derived driver CUDA version is reported.
    assert_eq!(v["host"]["driver_cuda"], "13.0");
    // Bad profiles are refused with the file named.
    let bad = work.path().join("bad.json");
    std::fs::write(&bad, "{\"gpus\": [{\"sm\": \"eighty\"}]}").unwrap();
    let o = cudist(&[
        "doctor",
        "--host",
        bad.to_str().unwrap(),
        multi.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("bad.json") && stderr(&o).contains("not a host profile"),
        "{}",
        stderr(&o)
    );
}

/// A real module: cupy's thrust.so (cubins sm_50 … sm_120, PTX sm_100 at ISA 8.8 / CUDA 12.9).
#[test]
fn device_code_of_a_real_module() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let work = tempfile::tempdir().unwrap();
    let m = "cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so";
    extract(&w, &[m], work.path());
    let thrust = work.path().join(m);
    for (sm, driver, want, detail) in [
        (86, "575.51.03", "cubin", "sm_86"),
        (87, "575.51.03", "cubin", "sm_86"),
        (103, "575.51.03", "cubin", "sm_100"),
        (121, "575.51.03", "cubin", "sm_120"),
        (110, "580.65.06", "jit", "sm_100"),
        (110, "570.26", "ptx-too-new", "CUDA 12.9"),
        (37, "575.51.03", "no-kernel-image", "3.7"),
    ] {
        let (got, v) = gpu_status(&thrust, &profile(work.path(), sm, driver, None));
        let g = &v["files"][0]["gpus"][0];
        assert_eq!(got, want, "sm_{sm} driver {driver}: {g:#}");
        assert!(g["detail"].as_str().unwrap().contains(detail), "{g:#}");
    }
}

#[test]
fn write_host_records_this_machine_and_without_paths_doctor_reports_it() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("me.json");
    let o = cudist(&["doctor", "--write-host", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let h: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    // The profile reads back, and carries what /proc says.
    assert!(h["glibc"].as_str().unwrap().starts_with("2."), "{h:#}");
    // And the Python that select --host checks wheel tags against: python3's, as it says.
    let py = std::process::Command::new("python3")
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    assert_eq!(
        h["python"].as_str(),
        Some(String::from_utf8_lossy(&py.stdout).trim()),
        "{h:#}"
    );
    // --python names another interpreter; one that does not run is said, not recorded.
    let o = cudist(&[
        "doctor",
        "--write-host",
        out.to_str().unwrap(),
        "--python",
        "/nonexistent/python",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let other: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(other["python"].is_null(), "{other:#}");
    assert!(other["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("python not recorded")));
    let o = cudist(&["doctor", "--write-host", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    if std::path::Path::new("/sys/module/nvidia/version").exists() {
        assert!(h["driver"].is_string());
    } else {
        assert!(h["driver"].is_null());
        assert!(h["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("no NVIDIA driver")));
    }
    let o = cudist(&["doctor", "--json", "--host", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["host"]["glibc"], h["glibc"]);
    // A CUDA library visible in two majors (LD_LIBRARY_PATH) is a conflict.
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    fake_lib(&a, "libcublas.so.12", "libcublas.so.12", "cublasCreate_v2");
    fake_lib(&b, "libcublas.so.13", "libcublas.so.13", "cublasCreate_v2");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["doctor", "--json"])
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{}", a.display(), b.display()),
        )
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"]["status"], "risky", "{:#}", v["verdict"]);
    assert_eq!(v["conflicts"][0]["library"], "cublas");
    let kinds: Vec<&str> = v["installations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"LD_LIBRARY_PATH"), "{kinds:?}");
    // Headers of CUDA 12 (CUDA_HOME) with only a CUDA 13 runtime visible.
    fake_lib(&b, "libcudart.so.13", "libcudart.so.13", "cudaMalloc");
    let home = work.path().join("cuda-12.9");
    std::fs::create_dir_all(home.join("include")).unwrap();
    std::fs::write(
        home.join("version.json"),
        r#"{"cuda": {"name": "CUDA SDK", "version": "12.9.1"}}"#,
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["doctor", "--json"])
        .env("LD_LIBRARY_PATH", b.display().to_string())
        .env("CUDA_HOME", &home)
        .env_remove("CUDA_PATH")
        .output()
        .unwrap();
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = h["conflicts"].as_array().unwrap();
    assert!(
        c.iter()
            .any(|c| c["library"] == "toolkit headers vs runtime"
                && c["seen"][0].as_str().unwrap().contains("CUDA 12.9.1")),
        "{c:#?}"
    );
}

/// `--dlopen`: where dlopen(NAME) from the file finds the library, against a program that
/// really dlopens it and prints the path glibc chose.
#[test]
fn dlopen_resolution_matches_glibc() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let (a, b) = (d.join("a"), d.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    fake_lib(&a, "libcublas.so.12", "libcublas.so.12", "cublasCreate_v2");
    fake_lib(&b, "libcublas.so.12", "libcublas.so.12", "cublasCreate_v2");
    let src = d.join("dl.c");
    std::fs::write(
        &src,
        "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <link.h>\n#include <stdio.h>\n\
         int main(int c, char **v) { void *h = dlopen(v[1], RTLD_NOW); if (!h) { puts(\"not found\"); return 1; }\n\
         struct link_map *m; dlinfo(h, RTLD_DI_LINKMAP, &m); puts(m->l_name); return 0; }\n",
    )
    .unwrap();
    let exe = d.join("dl");
    let o = std::process::Command::new("gcc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(["-ldl", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/a"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (lp, name) in [
        ("", "libcublas.so.12"),
        (b.to_str().unwrap(), "libcublas.so.12"),
        ("", "libcusparse.so.12"),
    ] {
        let real = std::process::Command::new(&exe)
            .arg(name)
            .env("LD_LIBRARY_PATH", lp)
            .output()
            .unwrap();
        let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
        let o = cudist(&[
            "doctor",
            "--json",
            "--ld-library-path",
            lp,
            "--dlopen",
            name,
            exe.to_str().unwrap(),
        ]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &v["files"][0]["dlopen"][0];
        assert_eq!(r["name"], name);
        match r["path"].as_str() {
            Some(p) => assert_eq!(
                std::fs::canonicalize(p).unwrap(),
                std::fs::canonicalize(&real).unwrap(),
                "{name} LD_LIBRARY_PATH={lp:?}"
            ),
            None => {
                assert_eq!(real, "not found");
                // A library opened at run time fails the feature that opens it, not the load.
                assert_eq!(v["verdict"]["status"], "will-fail-when-loaded");
                assert_eq!(o.status.code(), Some(0), "{v:#}");
            }
        }
    }
}

/// `--import` finds a venv's package without starting Python where PEP 405 says where it is, and
/// asks the interpreter otherwise: both answers equal `importlib.util.find_spec`'s.
#[test]
fn import_locates_packages_like_find_spec() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let python = venv.join("bin/python");
    let o = std::process::Command::new(&python)
        .args(["-c", "import importlib.util; print(list(importlib.util.find_spec('scikit_build_core').submodule_search_locations)[0])"])
        .output()
        .unwrap();
    let want = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(want.ends_with("site-packages/scikit_build_core"), "{want}");
    for pythonpath in ["", "/nonexistent"] {
        // scikit-build-core holds no ELF file: the error names the directory doctor located.
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
            .args([
                "doctor",
                "--static",
                "--import",
                "scikit_build_core",
                "--python",
                python.to_str().unwrap(),
            ])
            .env("PYTHONPATH", pythonpath)
            .output()
            .unwrap();
        let err = stderr(&o);
        let got = err
            .trim()
            .trim_start_matches("error: no ELF files in ")
            .to_string();
        assert_eq!(
            std::fs::canonicalize(&got).unwrap(),
            std::fs::canonicalize(&want).unwrap(),
            "PYTHONPATH={pythonpath:?}: {err}"
        );
    }
    let o = cudist(&[
        "doctor",
        "--import",
        "no_such_package_here",
        "--python",
        python.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("no_such_package_here is not installed"),
        "{}",
        stderr(&o)
    );
}

/// A venv made from each Python of this machine (the `python3` on `PATH`, and the distribution's
/// `/usr/bin/python3`, whose `site` on Debian and Ubuntu lists `dist-packages` and a prefix's
/// `site-packages` only inside a started venv): where doctor must ask the interpreter (a name
/// found on `PATH`, a dotted name), it finds the package where `find_spec` does. Found on an
/// Ubuntu venv, 2026-11-27: `--python python3` said "torch is not installed".
#[test]
fn import_locates_packages_in_venvs_of_every_python_here() {
    let work = tempfile::tempdir().unwrap();
    use std::path::PathBuf;
    let mut pythons: Vec<PathBuf> = Vec::new();
    for p in ["python3", "/usr/bin/python3"] {
        let o = std::process::Command::new(p)
            .args([
                "-c",
                "import os, sys; print(os.path.realpath(sys.executable))",
            ])
            .output();
        if let Some(o) = o.ok().filter(|o| o.status.success()) {
            let real = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            if !pythons.contains(&real) {
                pythons.push(real);
            }
        }
    }
    assert!(!pythons.is_empty(), "no python3 on this machine");
    for (i, base) in pythons.iter().enumerate() {
        let venv = work.path().join(format!("venv{i}"));
        let o = std::process::Command::new(base)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", base.display(), stderr(&o));
        let bin = venv.join("bin");
        let o = std::process::Command::new(bin.join("python3"))
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ])
            .output()
            .unwrap();
        let site = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        std::fs::create_dir_all(site.join("fakepkg/sub")).unwrap();
        std::fs::write(site.join("fakepkg/__init__.py"), "").unwrap();
        std::fs::write(site.join("fakepkg/sub/__init__.py"), "").unwrap();
        for name in ["fakepkg", "fakepkg.sub"] {
            let want = std::process::Command::new(bin.join("python3"))
                .args([
                    "-c",
                    &format!("import importlib.util; print(list(importlib.util.find_spec('{name}').submodule_search_locations)[0])"),
                ])
                .output()
                .unwrap();
            let want = String::from_utf8_lossy(&want.stdout).trim().to_string();
            assert!(
                !want.is_empty(),
                "{}: find_spec found no {name}",
                base.display()
            );
            let path = format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
                .args([
                    "doctor", "--static", "--import", name, "--python", "python3",
                ])
                .env("PATH", path)
                .env_remove("PYTHONPATH")
                .output()
                .unwrap();
            let err = stderr(&o);
            let got = err.trim().trim_start_matches("error: no ELF files in ");
            assert_eq!(
                std::fs::canonicalize(got).ok(),
                std::fs::canonicalize(&want).ok(),
                "venv of {}, {name}: {err}",
                base.display()
            );
        }
    }
}

/// A profile is judged as the machine it describes: the driver's libraries are there exactly when
/// it has a driver (whatever this machine has), and files must run with its glibc.
#[test]
fn a_host_profile_decides_the_driver_libraries_and_the_glibc() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // An extension linked against the driver API (libcuda.so.1, never in a wheel), and a library
    // that needs glibc 2.26 (reallocarray).
    let ext = dir.join("ext.so");
    std::fs::write(&ext, ext_needing(dir, "cuda", "libcuda.so.1", "cuInit")).unwrap();
    std::fs::remove_file(dir.join("libcuda.so")).unwrap();
    let new_glibc = gcc_shared(
        dir,
        "newglibc.so",
        None,
        "#include <stdlib.h>\nvoid *g(void *p) { return reallocarray(p, 4, 4); }\n",
        &[],
    );
    let profile = |name: &str, driver: Option<&str>, glibc: &str| {
        write_profile(
            &dir.join(name),
            &serde_json::json!({"name": name, "glibc": glibc, "driver": driver, "gpus": []}),
        )
    };
    let with_driver = profile("driver.json", Some("580.65.06"), "2.28");
    let without = profile("nodriver.json", None, "2.28");
    let old = profile("old.json", Some("580.65.06"), "2.17");

    // The profile's driver provides libcuda.so.1, though this machine has none.
    let (code, v) = doctor_on_profile(&with_driver, &ext);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["profile"], true);
    assert_eq!(v["files"][0]["from_profile_driver"][0], "libcuda.so.1");
    assert_eq!(
        v["files"][0]["missing"].as_array().unwrap().len(),
        0,
        "{v:#}"
    );
    // Without a driver in the profile, it is missing.
    let (code, v) = doctor_on_profile(&without, &ext);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-to-load");
    assert_eq!(v["files"][0]["missing"][0]["name"], "libcuda.so.1");
    assert!(v["files"][0]["missing"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("the profile has none"));

    // What a CUDA library dlopens from the driver (nvJitLink 13: libcuda.so.1 and
    // libnvidia-tileiras.so.1) is the profile's driver's too: never looked for on this machine,
    // which has none.
    let jl = dir.join("jitlink");
    std::fs::create_dir_all(&jl).unwrap();
    let user = jl.join("user.so");
    std::fs::write(
        &user,
        ext_needing(&jl, "nvJitLink", "libnvJitLink.so.13", "nvJitLinkCreate"),
    )
    .unwrap();
    std::os::unix::fs::symlink("libnvJitLink.so", jl.join("libnvJitLink.so.13")).unwrap();
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        jl.to_str().unwrap(),
        "--host",
        with_driver.to_str().unwrap(),
        user.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v:#}");
    let said = v["verdict"]["reasons"].to_string();
    assert!(
        !said.contains("libcuda.so.1") && !said.contains("libnvidia-tileiras.so.1"),
        "{v:#}"
    );

    // glibc: 2.26 needed, 2.28 in the profile is enough, 2.17 is not.
    let (code, v) = doctor_on_profile(&with_driver, &new_glibc);
    assert_eq!(code, Some(0), "{v:#}");
    let (code, v) = doctor_on_profile(&old, &new_glibc);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains("GLIBC_2.26") && reasons.contains("2.17"),
        "{reasons}"
    );
    // The human headline says whose machine it is.
    let o = cudist(&[
        "doctor",
        "--ld-library-path",
        "",
        "--host",
        old.to_str().unwrap(),
        new_glibc.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("cudist doctor (for the profile old.json): will fail to load"),
        "{}",
        stdout(&o)
    );
}

/// A glibc symbol imported without a symbol version (uni-db-cuda and uniko-cuda: C23's
/// `__isoc23_strtoll`, glibc 2.38, linked against a C library that lacks it) leaves no
/// `GLIBC_2.38` in the file's version requirements, so the tag auditwheel reads is older than
/// the glibc it needs. cudist reads the symbol's glibc from glibc's own ABI lists: inspect tags it
/// for that glibc, and doctor judges a profile, and this machine, by it — as glibc's loader does.
#[test]
fn a_glibc_symbol_imported_without_a_version_needs_the_glibc_that_added_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // A stand-in C library with glibc's SONAME and no version definitions: linked against it, the
    // reference to the symbol carries no version, whatever this machine's glibc is.
    let stub = dir.join("stub");
    gcc_shared(
        &stub,
        "libc.so.6",
        Some("libc.so.6"),
        "int stub_only;\n",
        &["-nostdlib"],
    );
    let ext = gcc_shared(
        dir,
        "_c23.so",
        None,
        "long long __isoc23_strtoll(const char *, char **, int);\n\
         long long parse(const char *s) { return __isoc23_strtoll(s, 0, 10); }\n",
        &[
            "-nostdlib",
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.display()),
            "-l:libc.so.6",
        ],
    );
    remove_c_sources(dir);
    // readelf's reading: NEEDED libc.so.6, the symbol undefined and without a version.
    assert!(readelf_d(&ext).contains("[libc.so.6]"));
    let syms = std::process::Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(&ext)
        .output()
        .unwrap();
    let syms = String::from_utf8_lossy(&syms.stdout);
    let line = syms
        .lines()
        .find(|l| l.contains("__isoc23_strtoll"))
        .unwrap_or_else(|| panic!("{syms}"));
    assert!(line.contains("UND") && !line.contains('@'), "{line}");

    // inspect: a wheel tagged manylinux_2_34 is misbuilt; its tag should be manylinux_2_38.
    let w = dir.join("c23-1.0-cp311-cp311-manylinux_2_34_x86_64.whl");
    write_wheel(
        &w,
        "c23",
        &[],
        &[("c23/_c23.so", std::fs::read(&ext).unwrap())],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "misbuilt", "{:#}", a["verdict"]);
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with("is tagged manylinux_2_34_x86_64 (manylinux_2_34) but c23/_c23.so imports __isoc23_strtoll without a symbol version, a symbol glibc has only from 2.38")
            && l.contains("its tag should be manylinux_2_38_x86_64")),
        "{lines:#?}"
    );
    let elf = &a["elf_files"][0];
    assert_eq!(elf["unversioned_glibc"][0]["symbol"], "__isoc23_strtoll");
    assert_eq!(elf["unversioned_glibc"][0]["since"], "2.38");

    // doctor on a profile: glibc 2.36 refuses it, 2.39 loads it.
    let profile = |name: &str, glibc: &str| {
        write_profile(
            &dir.join(name),
            &serde_json::json!({"name": name, "glibc": glibc, "driver": null, "gpus": []}),
        )
    };
    let (code, v) = doctor_on_profile(&profile("old.json", "2.36"), &ext);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains("imports __isoc23_strtoll without a symbol version, a symbol glibc has only from 2.38, and the glibc here is 2.36"),
        "{reasons}"
    );
    let (code, v) = doctor_on_profile(&profile("new.json", "2.39"), &ext);
    assert_eq!(code, Some(0), "{v:#}");

    // doctor on this machine agrees with glibc's loader (ctypes, RTLD_NOW): the real libc.so.6
    // defines the symbol from 2.38 on, or the load fails on it.
    let (loads, err) = ctypes_load(&ext);
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        ext.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    let reasons = v["verdict"]["reasons"].to_string();
    if loads {
        assert_eq!(o.status.code(), Some(0), "glibc loads it: {v:#}");
        assert!(!reasons.contains("__isoc23_strtoll"), "{reasons}");
    } else {
        assert!(err.contains("undefined symbol: __isoc23_strtoll"), "{err}");
        assert_eq!(o.status.code(), Some(1), "glibc refuses it ({err}): {v:#}");
        assert!(
            reasons.contains("imports __isoc23_strtoll without a symbol version")
                && reasons.contains("it needs a system with glibc 2.38 or newer"),
            "{reasons}"
        );
    }
}

/// faiss' pattern, installed: the package's Python preloads the CUDA library at import from the
/// NVIDIA wheel's directory, and its extension (no RPATH) then loads. doctor's verdict is checked
/// against a real `import` in a real venv, with the NVIDIA wheel present and moved away; a
/// provider library no extension needs fails only when loaded.
#[test]
fn preloads_and_tiers_agree_with_a_real_import() {
    let work = tempfile::tempdir().unwrap();
    let venv = work.path().join("venv");
    venv_without_pip(&venv);
    let site = site_of(&venv);
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let nv = site.join("nvidia/cublas/lib");
    std::fs::create_dir_all(&nv).unwrap();
    fake_lib(&nv, "libcublas.so.12", "libcublas.so.12", "cublasCreate_v2");
    // The extension: a working module whose init calls cuBLAS; a real import the loader stops
    // ends in an OSError/ImportError naming the library.
    let ext = install_extension(
        work.path(),
        &venv.join("bin/python"),
        &pkg,
        "_ext",
        "int cublasCreate_v2(void *);",
        "cublasCreate_v2(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", nv.display()),
            "-l:libcublas.so.12",
        ],
    );
    std::fs::write(
        pkg.join("__init__.py"),
        "from . import loader\nfrom ._ext import *\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("loader.py"),
        "import ctypes, json, os, sysconfig\n\ndef _load(name):\n    path = os.path.join(sysconfig.get_paths()['purelib'], 'nvidia', 'cublas', 'lib', name)\n    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)\n\nfor n in json.load(open(os.path.join(os.path.dirname(__file__), '_preload.json'))):\n    _load(n)\n",
    )
    .unwrap();
    std::fs::write(pkg.join("_preload.json"), "[\"libcublas.so.12\"]\n").unwrap();
    // A provider no extension module needs, which needs a library nobody installs.
    fake_lib(
        work.path(),
        "libcurand.so.10",
        "libcurand.so.10",
        "curandCreateGenerator",
    );
    gcc_shared(
        &pkg,
        "libprovider.so",
        Some("libprovider.so"),
        "int f(void) { return 0; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", work.path().display()),
            "-l:libcurand.so.10",
        ],
    );
    // A build for AMD GPUs beside the CUDA one (bitsandbytes' libbitsandbytes_rocm*.so): it
    // needs ROCm's hipBLAS, which this machine lacks, and the package loads it only on AMD GPUs.
    fake_lib(
        work.path(),
        "libhipblas.so.3",
        "libhipblas.so.3",
        "hipblasCreate",
    );
    gcc_shared(
        &pkg,
        "libpkg_rocm.so",
        Some("libpkg_rocm.so"),
        "int hipblasCreate(void *); int g(void) { return hipblasCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", work.path().display()),
            "-l:libhipblas.so.3",
        ],
    );
    let python = venv.join("bin/python");
    // A package whose import imports pkg: doctor follows the import into pkg.
    std::fs::create_dir_all(site.join("user")).unwrap();
    std::fs::write(site.join("user/__init__.py"), "import pkg\n").unwrap();
    // pkg's metadata names its CUDA wheel: the fix doctor suggests.
    let dist = site.join("pkg_cu12-1.0.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: pkg-cu12\nVersion: 1.0\nRequires-Dist: nvidia-cublas-cu12 ; platform_system == \"Linux\"\n",
    )
    .unwrap();
    let real_import_of = |module: &str| {
        let o = std::process::Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let real_import = || real_import_of("pkg");
    let doctor_of = |module: &str| doctor_import(module, &python);
    let doctor = || doctor_of("pkg");
    let (loaded, err) = real_import();
    assert!(loaded, "{err}");
    let (code, v) = doctor();
    // It imports; the provider fails when loaded (curand nowhere): said, and exit 0.
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
    // The real import ran, and agrees with the model.
    let run = &v["imports_run"][0];
    assert_eq!(run["ok"], true, "{v:#}");
    assert!(
        run["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["soname"] == "libcublas.so.12"
                && l["by"]
                    == "ctypes.CDLL at ".to_string() + pkg.join("loader.py:5").to_str().unwrap()),
        "{run:#}"
    );
    assert_eq!(v["disagreements"], serde_json::json!([]), "{v:#}");
    let reasons = reasons_of(&v);
    // The provider's failure decides; the ROCm build is said, and counts for nothing.
    assert!(reasons[0].contains("libprovider.so"), "{reasons:?}");
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[1].contains("libpkg_rocm.so: a build for another GPU vendor (AMD ROCm): libhipblas.so.3 is not here"),
        "{reasons:?}"
    );
    // Without the provider, nothing fails: the verdict is OK though the ROCm build cannot load.
    std::fs::rename(
        pkg.join("libprovider.so"),
        work.path().join("libprovider.so.off"),
    )
    .unwrap();
    let (code, v2) = doctor();
    assert_eq!(code, Some(0), "{v2:#}");
    assert_eq!(v2["verdict"]["status"], "ok", "{v2:#}");
    std::fs::rename(
        work.path().join("libprovider.so.off"),
        pkg.join("libprovider.so"),
    )
    .unwrap();
    let load = v["runtime_loads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcublas.so.12")
        .expect("the preload");
    assert_eq!(
        load["loader"],
        "ctypes at pkg/loader.py:5 (named at pkg/_preload.json:1)"
    );
    assert_eq!(load["found_by"], "site-packages");
    let tier = |name: &str| tier_of(&v, name);
    let ext_name = ext.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(tier(&ext_name), "import");
    assert_eq!(tier("libprovider.so"), "on-demand");
    assert_eq!(tier("libpkg_rocm.so"), "on-demand");

    // The NVIDIA wheel moved away: the real import fails in the preload, and doctor says it will.
    std::fs::rename(site.join("nvidia"), site.join("nvidia.off")).unwrap();
    let (loaded, err) = real_import();
    assert!(!loaded && err.contains("libcublas.so.12"), "{err}");
    let (code, v) = doctor();
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"]["status"], "will-fail-to-load", "{v:#}");
    // One line for the missing wheel: the file that needs its library, the package that loads
    // it first, the distribution that requires it, and the fix.
    let cublas: Vec<&str> = reasons_of(&v)
        .into_iter()
        .filter(|r| r.contains("nvidia-cublas-cu12"))
        .collect();
    assert_eq!(cublas.len(), 1, "{cublas:#?}");
    assert!(
        cublas[0].contains("libcublas.so.12 not found")
            && cublas[0].contains("(fix: install nvidia-cublas-cu12)")
            && cublas[0].contains("pkg loads libcublas.so.12 first at import (pkg/loader.py:5")
            && cublas[0].contains("pkg-cu12 requires it"),
        "{v:#}"
    );
    // Imported through another package, the same: the real import fails, and doctor follows
    // `import pkg` and names the wheel pkg declares.
    let (loaded, err) = real_import_of("user");
    assert!(!loaded && err.contains("libcublas.so.12"), "{err}");
    let (code, v) = doctor_of("user");
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"]["status"], "will-fail-to-load", "{v:#}");
    // The real import's failure leads; the model's reason explains it.
    let lead = v["verdict"]["reasons"][0].as_str().unwrap();
    assert!(
        lead.starts_with("import user fails: OSError: ") && lead.contains("libcublas.so.12"),
        "{v:#}"
    );
    let first = v["verdict"]["reasons"][1].as_str().unwrap();
    assert!(
        first.contains(
            "pkg (imported by user at user/__init__.py:1) loads libcublas.so.12 first at import"
        ) && first.contains("install nvidia-cublas-cu12"),
        "{v:#}"
    );
    assert_eq!(v["imported_with"][0]["package"], "pkg");
}

/// cupy-cuda12x 14.2.0, installed from PyPI's wheel without any NVIDIA wheel: `import cupy`
/// succeeds (cupy loads cuBLAS, cuFFT, NCCL, … through cuda-pathfinder in module `__getattr__`
/// functions, on first use). doctor must agree: the import works, and each extension module
/// that misses a CUDA library is one the real import does not load.
#[test]
fn cupy_without_its_cuda_wheels_imports_as_doctor_says() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let Some(deps) = tool_from_env("CUDIST_CUPY_DEPS") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let python = cupy_venv(
        &work.path().join("venv"),
        &find_wheel(&dir, "cupy_cuda12x-14.2.0"),
        &deps,
    );
    // What the real import loads: the package's extension modules in the process's maps.
    let loaded: std::collections::BTreeSet<String> = mapped_by_import(&python, "cupy", "cupy")
        .into_iter()
        .collect();
    assert!(loaded.len() > 40, "{loaded:?}");
    let (code, v) = doctor_import("cupy", &python);
    // It imports; what needs a missing CUDA library fails when that module is used: exit 0.
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0));
    assert_eq!(v["imports_run"][0]["ok"], true, "{:#}", v["imports_run"]);
    let reasons = reasons_of(&v);
    // cupy loads each library just before the module that links it, from its modules'
    // `__getattr__` (read from its Python, no rule of cupy's own): the module fails when it is
    // imported, and the fix is the wheel of cupy's CUDA major.
    assert!(
        reasons.iter().any(|r| r.contains(
            "cupy_backends/cuda/libs/cublas.cpython-311-x86_64-linux-gnu.so: libcublas.so.12 not found"
        ) && r.contains("fails when it is imported")),
        "{reasons:#?}"
    );
    let cublas = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .ends_with("cupy_backends/cuda/libs/cublas.cpython-311-x86_64-linux-gnu.so")
        })
        .unwrap();
    assert!(
        cublas["missing"][0]["fix"]
            .as_str()
            .is_some_and(|f| f.contains("nvidia-cublas-cu12")),
        "{cublas:#}"
    );
    // Per file: one that misses a library is on demand, and the real import did not load it;
    // every file the real import loaded that doctor calls on demand misses nothing.
    let mut missing_files = 0;
    for f in v["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        if !path.contains("/site-packages/cupy") {
            continue;
        }
        let missing = !f["missing"].as_array().unwrap().is_empty();
        let real = loaded.contains(path);
        if missing {
            missing_files += 1;
            assert_eq!(f["tier"], "on-demand", "{path}");
            assert!(
                !real,
                "{path} misses a library, yet the real import loaded it"
            );
            assert!(
                f["tier_reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("imported only")),
                "{f:#}"
            );
        }
        if real {
            assert!(!missing, "{path}");
        }
        if f["tier"] == "import" {
            // Files doctor calls loaded at import that the real one did not load: only those
            // no Python of the package names (it cannot tell what a compiled module imports).
            assert!(real || f["tier_reason"].is_null(), "{path}: {f:#}");
        }
    }
    // cublas, cusolver, cusparse, curand, cufft, nccl, cutensor, jitify (cupyx's files are
    // another import's).
    assert_eq!(missing_files, 8);
}

/// triton's shape: plugins (`triton/plugins/*.so`, loaded on demand) need `libtriton.so`, which is
/// the SONAME of the package's own extension module `_C/libtriton.so`, with no search path that
/// finds it. Loaded after the import, they get the loaded module (glibc matches a loaded
/// library's SONAME): the real load works after `import pkg` and fails without it, and doctor
/// says the plugin loads after the import instead of calling it broken.
#[test]
fn a_plugin_that_needs_its_packages_extension_loads_after_the_import() {
    let work = tempfile::tempdir().unwrap();
    let venv = work.path().join("venv");
    let python = venv_without_pip(&venv);
    let includes = String::from_utf8(
        std::process::Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['include'])",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let site = site_of(&venv);
    let c = site.join("pkg/_C");
    std::fs::create_dir_all(&c).unwrap();
    std::fs::create_dir_all(site.join("pkg/plugins")).unwrap();
    gcc_shared(
        &c,
        "libhost.so",
        Some("libhost.so"),
        "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"libhost\", NULL, -1, NULL};\nint host_fn(void) { return 42; }\nPyMODINIT_FUNC PyInit_libhost(void) { return PyModule_Create(&m); }\n",
        &[&format!("-I{}", includes.trim())],
    );
    let plugin = gcc_shared(
        &site.join("pkg/plugins"),
        "libplug.so",
        Some("libplug.so"),
        "int host_fn(void); int plug(void) { return host_fn(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", c.display()),
            "-l:libhost.so",
        ],
    );
    std::fs::write(site.join("pkg/__init__.py"), "from pkg._C import libhost\n").unwrap();
    std::fs::write(site.join("pkg/_C/__init__.py"), "").unwrap();
    let load = |first: &str| {
        std::process::Command::new(&python)
            .args([
                "-c",
                &format!(
                    "{first}import ctypes; ctypes.CDLL({:?})",
                    plugin.display().to_string()
                ),
            ])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    ok(&load("import pkg; "), "the plugin after import pkg");
    let alone = load("");
    assert!(
        !alone.status.success() && stderr(&alone).contains("libhost.so"),
        "{}",
        stderr(&alone)
    );
    let (code, v) = doctor_import("pkg", &python);
    assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
    assert_eq!(code, Some(0));
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains("libplug.so: needs libhost.so, which its package loads at import"),
        "{reasons}"
    );
    let tier = |name: &str| tier_of(&v, name);
    assert_eq!(tier("_C/libhost.so"), "import");
    assert_eq!(tier("plugins/libplug.so"), "on-demand");
}

/// Reality for a package whose import works and whose first use fails on a missing library:
/// `import module` succeeds in `python` (no `LD_LIBRARY_PATH`), and `use_code` fails naming
/// `lib`.
fn imports_then_fails_on_use(python: &std::path::Path, module: &str, use_code: &str, lib: &str) {
    let run = |code: &str| {
        std::process::Command::new(python)
            .args(["-c", code])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    let imported = run(&format!("import {module}"));
    assert!(imported.status.success(), "{}", stderr(&imported));
    let used = run(use_code);
    assert!(!used.status.success());
    assert!(stderr(&used).contains(lib), "{}", stderr(&used));
}

/// A venv (without pip) at `dir` with packages given as (relative path, text) files in its
/// site-packages. Returns (python, site-packages).
fn venv_with(
    dir: &std::path::Path,
    files: &[(&str, &str)],
) -> (std::path::PathBuf, std::path::PathBuf) {
    let python = venv_without_pip(dir);
    let site = site_of(dir);
    for (rel, text) in files {
        let p = site.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    (python, site)
}

/// The real import is bounded and reports on a channel of its own: a package that prints on
/// standard output, hangs, crashes, or leaves a process holding the pipes cannot make doctor lie
/// or wait.
#[test]
fn the_real_import_is_bounded_and_its_output_is_its_own() {
    let work = tempfile::tempdir().unwrap();
    let (python, _) = venv_with(
        &work.path().join("venv"),
        &[
            // Prints what looks like a report, on standard output.
            (
                "chatty/__init__.py",
                "print('{\"error\": {\"type\": \"Fake\", \"message\": \"x\"}}')\n",
            ),
            ("hangs/__init__.py", "import time\ntime.sleep(600)\n"),
            (
                "crashes/__init__.py",
                "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
            ),
            // A child that outlives the import and holds its standard output and error.
            (
                "forks/__init__.py",
                "import subprocess\nsubprocess.Popen(['sleep', '600'])\n",
            ),
            (
                "raises/__init__.py",
                "raise RuntimeError('no GPU support compiled in')\n",
            ),
        ],
    );
    let run = |module: &str, extra: &[&str]| {
        let started = std::time::Instant::now();
        let mut args = vec![
            "doctor",
            "--json",
            "--import",
            module,
            "--python",
            python.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = cudist(&args);
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
        (o.status.code(), v, started.elapsed())
    };
    let (code, v, _) = run("chatty", &[]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    assert_eq!(v["verdict"]["status"], "ok");

    let (code, v, took) = run("hangs", &["--import-timeout", "2"]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(
        v["verdict"]["reasons"][0],
        "import hangs fails: the import did not finish within 2 s (killed)"
    );
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");

    let (code, v, _) = run("crashes", &[]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(
        v["verdict"]["reasons"][0],
        "import crashes fails: the interpreter died of signal 11 during the import"
    );
    // A crash no missing library explains is the package's own failure, not a failed load.
    assert_eq!(v["verdict"]["status"], "import-fails", "{v:#}");

    let (code, v, took) = run("forks", &[]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");

    // A failure that is the package's own: it leads, and the model says it has no reason for it.
    let (code, v, _) = run("raises", &[]);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(
        v["verdict"]["reasons"][0],
        "import raises fails: RuntimeError: no GPU support compiled in"
    );
    assert_eq!(v["verdict"]["status"], "import-fails", "{v:#}");
    assert!(
        v["disagreements"][0]
            .as_str()
            .unwrap()
            .contains("found no reason for it"),
        "{v:#}"
    );
    // --static does not run it, and judges from the files alone: a package without ELF files
    // has nothing to judge.
    let o = cudist(&[
        "doctor",
        "--static",
        "--import",
        "raises",
        "--python",
        python.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("no ELF files in"), "{}", stderr(&o));
}

/// Another package's extension module that the import tries and fails to load, going on
/// without it (osqp's `try: import osqp_cuda`), is judged whole: every library it lacks is said
/// with its fix, on first use, not only the one the loader's error names.
#[test]
fn a_failed_optional_extension_of_another_package_is_judged_whole() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "solver/__init__.py",
            "try:\n    import solver_gpu\nexcept ImportError:\n    solver_gpu = None\n",
        )],
    );
    let libs = work.path().join("hidden");
    fake_lib(
        &libs,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    fake_lib(
        &libs,
        "libcusparse.so.12",
        "libcusparse.so.12",
        "cusparseCreate",
    );
    install_extension(
        work.path(),
        &python,
        &site,
        "solver_gpu",
        "int cublasCreate_v2(void *); int cusparseCreate(void *);",
        "cublasCreate_v2(0); cusparseCreate(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcublas.so.12",
            "-l:libcusparse.so.12",
        ],
    );
    let (code, v) = doctor_import("solver", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    let reasons = reasons_of(&v);
    for lib in ["libcublas.so.12", "libcusparse.so.12"] {
        assert!(
            reasons.iter().any(|r| r.contains(lib)
                && r.contains("solver_gpu")
                && r.contains("the real import of solver tried to load it")),
            "{lib}: {reasons:#?}"
        );
    }
}

/// A package whose function imports another package's module (lisatools'
/// `cuda12x_module_loader()` imports `lisatools_backend_cuda12x.pycppdetector`, a namespace
/// package) gets that module judged on first use: what it lacks fails then. What that other
/// package's own functions import later is not followed.
#[test]
fn a_module_another_package_imports_in_a_function_is_judged_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "front/__init__.py",
            "class Backend:\n    @staticmethod\n    def gpu_loader():\n        try:\n            import front_gpu.kernels\n        except ImportError as e:\n            raise RuntimeError('no gpu backend') from e\n",
        )],
    );
    let libs = work.path().join("hidden");
    fake_lib(&libs, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    install_extension(
        work.path(),
        &python,
        &site.join("front_gpu"),
        "kernels",
        "int cudaMalloc(void *);",
        "cudaMalloc(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcudart.so.12",
        ],
    );
    let (code, v) = doctor_import("front", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    let w = &v["imported_with"][0];
    assert_eq!(w["package"], "front_gpu", "{v:#}");
    assert_eq!(w["on_call"], "gpu_loader()", "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains("front_gpu/kernels")
            && r.contains("libcudart.so.12 not found")
            && r.contains("only when gpu_loader() runs")),
        "{reasons:#?}"
    );
}

/// A shared object its distribution installed (its RECORD lists it) that is gone breaks what
/// loads it, whether or not any model knows the load (wgpu opens its library through cffi on
/// first use): doctor says so, with the reinstall that restores it; a risk where nothing it
/// reads loads the file.
#[test]
fn a_shared_object_its_distribution_installed_that_is_gone_is_said() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("lazyffi/__init__.py", "def lib():\n    import cffi\n"),
            (
                "lazyffi-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: lazyffi\nVersion: 1.0\n",
            ),
            (
                "lazyffi-1.0.dist-info/RECORD",
                "lazyffi/__init__.py,,\nlazyffi/resources/libnative.so,,\nlazyffi-1.0.dist-info/RECORD,,\n",
            ),
        ],
    );
    let (code, v) = doctor_import("lazyffi", &python);
    assert_eq!(code, Some(0), "{v:#}");
    // No file links it and no load names it: a risk, not a known failure.
    assert_eq!(v["verdict"]["status"], "risky", "{v:#}");
    assert!(
        reasons_of(&v).iter().any(|r| r.contains(
            "lazyffi installed 1 shared object(s) that are gone (lazyffi/resources/libnative.so)"
        ) && r
            .contains("pip install --force-reinstall --no-deps lazyffi")),
        "{v:#}"
    );
    // Present again: nothing to say.
    gcc_shared(
        &site.join("lazyffi/resources"),
        "libnative.so",
        Some("libnative.so"),
        "int f(void) { return 0; }\n",
        &[],
    );
    let (code, v) = doctor_import("lazyffi", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
}

/// A wheel's loader that loads a library of several SONAMEs (nvidia-libnvcomp 5 installs
/// `libnvcomp.so.5`, 6 `.so.6`) where none is installed: the missing one is the SONAME the
/// libraries the same call loads link (libcudf.so links `libnvcomp.so.5`), so the fix for what
/// needs it is that wheel, loaded first, not a search path.
#[test]
fn a_missing_library_of_several_sonames_is_the_one_its_loaders_libraries_link() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("thing/__init__.py", "import libthing\nlibthing.load_library()\n"),
            ("libthing/__init__.py", "from libthing.load import load_library\n"),
            (
                "libthing/load.py",
                "import ctypes, os\nimport libdep\n\ndef load_library():\n    libdep.load_library()\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib64', 'libthing.so'))\n",
            ),
        ],
    );
    let catalog = work.path().join("thing.toml");
    std::fs::write(
        &catalog,
        "schema = 1\n[[library]]\nid = \"thing\"\nstem = \"libthing\"\nkind = \"external\"\n\
         description = \"a wheel's library with a loader\"\npython_loader = \"libthing.load_library\"\n\
         python_loader_calls = [\"libdep.load_library\"]\n[[library.cuda]]\nmajor = 12\nsonames = [\"libthing.so\"]\n\
         policy = \"none\"\npip = \"libthing-cu12\"\npip_dir = \"libthing/lib64\"\n\
         [[library]]\nid = \"dep\"\nstem = \"libdep\"\nkind = \"external\"\n\
         description = \"a library with two SONAMEs\"\npython_loader = \"libdep.load_library\"\n\
         [[library.cuda]]\nmajor = 12\nsonames = [\"libdep.so.5\", \"libdep.so.6\"]\n\
         policy = \"major\"\npip = \"libdep-cu12\"\npip_dir = \"libdep/lib64\"\n",
    )
    .unwrap();
    let hidden = work.path().join("hidden");
    fake_lib(&hidden, "libdep.so.5", "libdep.so.5", "dep_init");
    gcc_shared(
        &site.join("libthing/lib64"),
        "libthing.so",
        Some("libthing.so"),
        "int dep_init(void);\nint thing_init(void) { return dep_init(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", hidden.display()),
            "-l:libdep.so.5",
        ],
    );
    let (code, v) = doctor_import_with(
        "thing",
        &python,
        &["--static", "--catalog", catalog.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{v:#}");
    let loads = v["runtime_loads"].as_array().unwrap();
    assert!(
        loads
            .iter()
            .any(|l| l["soname"] == "libdep.so.5" && l["path"].is_null()),
        "{v:#}"
    );
    assert!(!loads.iter().any(|l| l["soname"] == "libdep.so.6"), "{v:#}");
    let text = v.to_string();
    assert!(
        text.contains("install libdep-cu12: thing (libthing.load_library() at thing/__init__.py:2) loads libdep.so.5 first"),
        "{v:#}"
    );
    assert!(!text.contains("an RPATH entry"), "{v:#}");
}

/// A library a wheel's loader is said to load (the catalog's description) that the real import,
/// which ran to its end, did not load is listed as found but not loaded, and the model goes on
/// without it (nvidia-libnvcomp's wheel holds libnvcomp_cpu, which its loader never opens).
#[test]
fn a_loaders_library_the_real_import_did_not_load_is_listed_so() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("user/__init__.py", "import libdep\nlibdep.load_library()\n"),
            (
                "libdep/__init__.py",
                "import ctypes, os\n\ndef load_library():\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib64', 'libdep.so.5'))\n",
            ),
        ],
    );
    let catalog = work.path().join("dep.toml");
    let entry = |id: &str, so: &str| {
        format!(
            "[[library]]\nid = \"{id}\"\nstem = \"lib{id}\"\nkind = \"external\"\n\
             description = \"x\"\npython_loader = \"libdep.load_library\"\n[[library.cuda]]\n\
             major = 12\nsonames = [\"{so}\"]\npolicy = \"major\"\npip = \"libdep-cu12\"\n\
             pip_dir = \"libdep/lib64\"\n"
        )
    };
    std::fs::write(
        &catalog,
        format!(
            "schema = 1\n{}{}",
            entry("dep", "libdep.so.5"),
            entry("dep_cpu", "libdep_cpu.so.5")
        ),
    )
    .unwrap();
    let lib64 = site.join("libdep/lib64");
    fake_lib(&lib64, "libdep.so.5", "libdep.so.5", "dep_init");
    fake_lib(&lib64, "libdep_cpu.so.5", "libdep_cpu.so.5", "dep_cpu_init");
    let (code, v) = doctor_import_with("user", &python, &["--catalog", catalog.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{v:#}");
    let loads = v["runtime_loads"].as_array().unwrap();
    let of = |so: &str| {
        loads
            .iter()
            .find(|l| l["soname"] == so)
            .unwrap_or_else(|| panic!("{so}: {v:#}"))
    };
    assert!(of("libdep.so.5").get("not_loaded").is_none(), "{v:#}");
    assert_eq!(of("libdep_cpu.so.5")["not_loaded"], true, "{v:#}");
    let o = cudist(&[
        "doctor",
        "--import",
        "user",
        "--python",
        python.to_str().unwrap(),
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("; found, but the real import did not load it"),
        "{}",
        stdout(&o)
    );
}

/// A library the code loads by a path relative to itself, one of several it picks by platform
/// (pyqrack's `os.path.join(os.path.dirname(__file__), "qrack_lib/Linux/x86_64/libqrack.so")`)
/// is found where that path leads, not looked for in the package's top directory. Without it,
/// the caught load fails and the import fails after it (the code uses what it did not load):
/// the lead says the caught load is the cause, not that the error is the package's own.
#[test]
fn a_library_loaded_by_a_path_relative_to_the_code_is_found_there() {
    let work = tempfile::tempdir().unwrap();
    let code = "import os, platform\nfrom ctypes import CDLL\n\
                class S:\n    def __init__(self):\n        p = '/usr/local/lib/rel/librelx.so'\n\
                \x20       if platform.machine() == 'aarch64':\n            p = 'bin/Linux/ARM64/librelx.so'\n\
                \x20       else:\n            p = 'bin/Linux/x86_64/librelx.so'\n\
                \x20       base = os.path.abspath(os.path.dirname(__file__))\n\
                \x20       try:\n            self.lib = CDLL(os.path.join(base, p))\n\
                \x20       except Exception as e:\n            print(e)\n\
                \x20       self.lib.f\n\
                s = S()\n";
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("relpkg/__init__.py", "from .sys import loader\n"),
            ("relpkg/sys/loader.py", code),
        ],
    );
    let dir = site.join("relpkg/sys/bin/Linux/x86_64");
    gcc_shared(
        &dir,
        "librelx.so",
        Some("librelx.so"),
        "int f(void) { return 0; }\n",
        &[],
    );
    for extra in [&[][..], &["--static"][..]] {
        let (code, v) = doctor_import_with("relpkg", &python, extra);
        assert_eq!(code, Some(0), "{extra:?} {v:#}");
        assert_eq!(v["verdict"]["status"], "ok", "{extra:?} {v:#}");
        let said = v.to_string();
        assert!(!said.contains("not found"), "{extra:?} {v:#}");
    }
    std::fs::remove_file(dir.join("librelx.so")).unwrap();
    let (code, v) = doctor_import("relpkg", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let lead = v["verdict"]["reasons"][0].as_str().unwrap();
    assert!(
        lead.starts_with("import relpkg fails: AttributeError")
            && lead.contains(
                "after the load of librelx.so it caught failed: that library is the cause"
            ),
        "{v:#}"
    );
    // What was tried is where the code looks, and no print message is read as a path.
    let reasons = reasons_of(&v);
    let load = reasons
        .iter()
        .find(|r| r.contains("loads librelx.so"))
        .unwrap();
    assert!(
        load.contains("relpkg/sys/bin/Linux/x86_64/librelx.so")
            && load.contains("then failed for want of it"),
        "{load}"
    );
    assert!(
        !v["disagreements"]
            .to_string()
            .contains("the error is the package's own"),
        "{v:#}"
    );
}

/// A load the package guards (`try: ctypes.CDLL(...) except OSError: pass`) that fails does not
/// fail the import: the real import goes on, and doctor says what fails later instead of "will
/// fail to load", with or without running it; --strict makes that exit 1. A library the model cannot find but the process
/// loaded is said as a disagreement, and the process wins.
#[test]
fn guarded_loads_and_the_models_misses_are_judged_by_the_real_import() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "guarded/__init__.py",
            "import ctypes\ntry:\n    ctypes.CDLL('libcublas.so.12')\nexcept OSError:\n    pass\n",
        )],
    );
    let doctor = |extra: &[&str]| doctor_import_with("guarded", &python, extra);
    // The real import works without cuBLAS.
    let o = std::process::Command::new(&python)
        .args(["-c", "import guarded"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, v) = doctor(&[]);
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    // ctypes' own `PyDLL(None)` comes first: find the package's call.
    let call = v["imports_run"][0]["dlopens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "libcublas.so.12")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(call["loaded"].is_null(), "{v:#}");
    assert_eq!(
        call["frames"][0],
        format!("{}:3", site.join("guarded/__init__.py").display())
    );
    // The static model sees the load at import; reality says the import survives it.
    let reasons = reasons_of(&v);
    if v["verdict"]["status"] != "ok" {
        assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
        assert_eq!(code, Some(0), "{v:#}");
        // The model reads the guard itself; reality agrees.
        assert!(
            reasons[0].contains("libcublas.so.12")
                && reasons[0].contains("the import goes on without it"),
            "{reasons:#?}"
        );
        assert_eq!(doctor(&["--strict"]).0, Some(1));
    }
    // --static: the model alone reads the guard too: the import goes on, cuBLAS fails when used.
    let (code, v) = doctor(&["--static"]);
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0));
    assert!(
        v["verdict"]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("inside `try … except`: the import goes on without it"),
        "{v:#}"
    );

    // The model cannot see a library loaded by a path the package computes at run time; the
    // process loads it, and an extension module that needs it then loads.
    let lib = work.path().join("hidden");
    fake_lib(
        &lib,
        "libcurand.so.10",
        "libcurand.so.10",
        "curandCreateGenerator",
    );
    let pkg = site.join("computed");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("__init__.py"),
        format!(
            "import ctypes, os\nctypes.CDLL(os.path.join({:?}, 'libcur' + 'and.so.10'), mode=ctypes.RTLD_GLOBAL)\nfrom . import _ext, _ext2\n",
            lib.display().to_string()
        ),
    )
    .unwrap();
    for name in ["_ext", "_ext2"] {
        install_extension(
            work.path(),
            &python,
            &pkg,
            name,
            "int curandCreateGenerator(void *);",
            "curandCreateGenerator(0);",
            &[
                "-Wl,--no-as-needed",
                &format!("-L{}", lib.display()),
                "-l:libcurand.so.10",
            ],
        );
    }
    let (code, v) = doctor_import("computed", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
    // One line for the library, however many files need it.
    let said: Vec<&str> = v["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d.as_str())
        .filter(|d| d.contains("libcurand.so.10"))
        .collect();
    assert_eq!(said.len(), 1, "{v:#}");
    assert!(
        said[0].contains("the model finds no libcurand.so.10 for 2 file(s)")
            && said[0].contains("_ext2")
            && said[0].contains("hidden/libcurand.so.10"),
        "{said:#?}"
    );
    // Without running it, the model says what it sees.
    let (code, v) = doctor_import_with("computed", &python, &["--static"]);
    assert_eq!(code, Some(1), "{v:#}");
}

/// A package that finds its GPU support through entry points (JAX's `jax_plugins` group) loads
/// each registered plugin on first use: `import hostpkg` works without the plugin's library, the
/// first use fails on it, and doctor says so (will-fail-when-loaded, the plugin's file on
/// demand), from the files alone and after the real import.
#[test]
fn plugins_registered_by_entry_points_load_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "hostpkg/__init__.py",
                "def backends():\n    from importlib.metadata import entry_points\n    return [ep.load() for ep in entry_points(group=\"hostpkg_plugins\")]\n",
            ),
            (
                "hostplug-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: hostplug\nVersion: 1.0\n",
            ),
            (
                "hostplug-1.0.dist-info/entry_points.txt",
                "[hostpkg_plugins]\ngpu = hostpkg_plugins.gpu:init\n",
            ),
            // Entries nobody vetted: a path, a module without files, a name past any bound.
            (
                "odd-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: odd\nVersion: 1.0\n",
            ),
            (
                "odd-1.0.dist-info/entry_points.txt",
                "[hostpkg_plugins]\nup = ../../../etc:x\nstd = os.path\nnone = no_such_module_here\n",
            ),
            (
                "hostpkg_plugins/gpu/__init__.py",
                "import ctypes, os\n_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libgpu_backend.so'))\ndef init():\n    return _lib\n",
            ),
        ],
    );
    let backend = ext_needing(work.path(), "cublas", "libcublas.so.12", "cublasCreate_v2");
    std::fs::write(site.join("hostpkg_plugins/gpu/libgpu_backend.so"), backend).unwrap();
    // Reality: the import works; the first use fails on the plugin's library.
    imports_then_fails_on_use(
        &python,
        "hostpkg",
        "import hostpkg; from importlib.metadata import entry_points as e; [p.load() for p in e(group='hostpkg_plugins') if p.name == 'gpu']",
        "libcublas.so.12",
    );
    for extra in [&["--static"][..], &[]] {
        let (code, v) = doctor_import_with("hostpkg", &python, extra);
        assert_eq!(
            v["verdict"]["status"], "will-fail-when-loaded",
            "{extra:?}: {v:#}"
        );
        assert_eq!(code, Some(0), "{v:#}");
        assert_eq!(
            v["imported_with"].as_array().map(Vec::len),
            Some(1),
            "{v:#}"
        );
        let w = &v["imported_with"][0];
        assert_eq!(w["package"], "hostpkg_plugins.gpu", "{v:#}");
        assert_eq!(
            w["plugin"],
            "entry point gpu of hostplug, group hostpkg_plugins"
        );
        assert_eq!(w["at"], "hostpkg/__init__.py:3");
        let reasons = v["verdict"]["reasons"].to_string();
        assert!(reasons.contains("libcublas.so.12"), "{reasons}");
        let file = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with("libgpu_backend.so"))
            .unwrap_or_else(|| panic!("{v:#}"));
        assert_eq!(file["tier"], "on-demand", "{v:#}");
    }
}

/// A function that loads a CUDA library by its linker name (`ctypes.CDLL("libcudart.so")`, as
/// tilelang and hidet do) fails where only CUDA wheels are installed: they install the SONAME,
/// never the development link. The import works; the call fails; doctor says so.
#[test]
fn a_load_by_linker_name_fails_when_used() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "bylinker/__init__.py",
            "import ctypes\ndef _load_cudart():\n    return ctypes.CDLL('libcudart.so')\n",
        )],
    );
    gcc_shared(
        &site.join("bylinker"),
        "_ext.so",
        None,
        "int f(void) { return 0; }\n",
        &[],
    );
    imports_then_fails_on_use(
        &python,
        "bylinker",
        "import bylinker; bylinker._load_cudart()",
        "libcudart.so",
    );
    for extra in [&["--static"][..], &[]] {
        let (code, v) = doctor_import_with("bylinker", &python, extra);
        assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
        assert_eq!(code, Some(0));
        let reasons = v["verdict"]["reasons"].to_string();
        assert!(
            reasons.contains("loads libcudart.so by its linker name when _load_cudart() runs")
                && reasons.contains("nvidia-cuda-runtime installs libcudart.so.13"),
            "{reasons}"
        );
    }
}

/// A file whose libraries span CUDA majors (libcusolver.so.11 is CUDA 11's and 12's) gets its fix
/// in the major of its package, and a package whose files do not tell takes the major of the one
/// that imports it (cupy-cuda11x's cupyx was told to install nvidia-cusolver-cu12).
#[test]
fn the_fix_is_in_the_major_of_the_package_that_imports_it() {
    let work = tempfile::tempdir().unwrap();
    let libs = work.path().join("libs");
    fake_lib(&libs, "libcublas.so", "libcublas.so.11", "cublasCreate_v2");
    fake_lib(
        &libs,
        "libcusolver.so",
        "libcusolver.so.11",
        "cusolverDnCreate",
    );
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("pkga/__init__.py", "from . import _a\nimport pkgb\n"),
            ("pkgb/__init__.py", "from . import _b\n"),
        ],
    );
    for (pkg, module, lib, sym) in [
        ("pkga", "_a", "cublas", "cublasCreate_v2"),
        ("pkgb", "_b", "cusolver", "cusolverDnCreate"),
    ] {
        install_extension(
            work.path(),
            &python,
            &site.join(pkg),
            module,
            &format!("int {sym}(void *);"),
            &format!("{sym}(0);"),
            &[
                "-Wl,--no-as-needed",
                &format!("-L{}", libs.display()),
                &format!("-l{lib}"),
            ],
        );
    }
    let (_, v) = doctor_import_with("pkga", &python, &["--static"]);
    let text: String = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["missing"].as_array().cloned().unwrap_or_default())
        .map(|m| m["fix"].to_string())
        .collect();
    assert!(text.contains("install nvidia-cublas-cu11"), "{text}");
    assert!(text.contains("install nvidia-cusolver-cu11"), "{text}");
    assert!(!text.contains("cusolver-cu12"), "{text}");
}

/// A library a CUDA library treats as optional (cuFile's RDMA support, catalog
/// `optional_dlopens`) is said, never a failure; another library opened at run time that is
/// missing fails on first use (exit 0, 1 with --strict).
#[test]
fn optional_capabilities_are_not_failures() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let lib = d.join("lib");
    fake_lib_opening(
        &lib,
        "libcufile.so.0",
        "libcufile.so.0",
        "cuFileDriverOpen",
        &["libcufile_rdma.so.1"],
    );
    let exe = exe_calling(d, "reader", &lib, "libcufile.so.0", "cuFileDriverOpen");
    let (code, v) = doctor_file(&exe);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains(
            "libcufile_rdma.so.1 is not here; libcufile.so.0 works without it (an optional capability"
        )),
        "{v:#}"
    );
    assert!(
        !reasons.iter().any(|r| r.contains("will fail")),
        "{reasons:#?}"
    );
    // A copy renamed with a repair tool's hash and its file's version (legate's
    // `libcufile-1ecaf17d.so.1.15.1`, its SONAME too) that names the RDMA library to open: the
    // same optional capability.
    let copies = d.join("copies");
    gcc_shared(
        &copies,
        "libcufile-1ecaf17d.so.1.15.1",
        Some("libcufile-1ecaf17d.so.1.15.1"),
        "#include <dlfcn.h>\nint cuFileDriverOpen(void *p) { return dlopen(\"libcufile_rdma.so.1\", RTLD_NOW) == 0; }\n",
        &["-ldl"],
    );
    let exe2 = gcc(
        d,
        "reader2",
        "int cuFileDriverOpen(void *); int main(void) { return cuFileDriverOpen(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", copies.display()),
            "-l:libcufile-1ecaf17d.so.1.15.1",
            &format!("-Wl,-rpath,{}", copies.display()),
        ],
    );
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        exe2.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains(
            "libcufile_rdma.so.1 is not here; libcufile-1ecaf17d.so.1.15.1 works without it (an optional capability"
        )),
        "{reasons:#?}"
    );
    // A library dlopened at run time that is not optional: first use fails, exit 0 / --strict 1.
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        "--dlopen",
        "libnvrtc.so.13",
        exe.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(o.status.code(), Some(0));
    let o = cudist(&[
        "doctor",
        "--strict",
        "--ld-library-path",
        "",
        "--dlopen",
        "libnvrtc.so.13",
        exe.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

/// What a library the package preloads opens at run time is said of that library, once, not of
/// every file checked after it (torch's libcufile and its optional RDMA library were listed under
/// numpy's and scipy's modules).
#[test]
fn a_preloaded_librarys_own_dlopens_are_said_of_it_once() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "usesfile/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libcufile.so.0'))\n",
        )],
    );
    let lib = site.join("usesfile/lib");
    fake_lib_opening(
        &lib,
        "libcufile.so.0",
        "libcufile.so.0",
        "cuFileDriverOpen",
        &["libcufile_rdma.so.1"],
    );
    for m in ["a", "b", "c"] {
        gcc_shared(
            &site.join("usesfile"),
            &format!("{m}.so"),
            None,
            "int f(void) { return 0; }\n",
            &[],
        );
    }
    let (code, v) = doctor_import_with("usesfile", &python, &["--static"]);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let rdma: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcufile_rdma.so.1"))
        .collect();
    assert_eq!(rdma.len(), 1, "{reasons:#?}");
    assert!(
        rdma[0].starts_with(&format!("{}:", lib.join("libcufile.so.0").display())),
        "{reasons:#?}"
    );
    // Nor is it listed under each module in the human report: a.so, b.so and c.so have nothing
    // to say (the JSON keeps the resolution, marked as said elsewhere).
    let a = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("usesfile/a.so"))
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(
        a["dlopen_said_elsewhere"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("libcufile_rdma.so.1")),
        "{a:#}"
    );
    let o = cudist(&[
        "doctor",
        "--static",
        "--ld-library-path",
        "",
        "--python",
        python.to_str().unwrap(),
        "--import",
        "usesfile",
    ]);
    let text = stdout(&o);
    assert_eq!(
        text.matches("libcufile_rdma.so.1").count(),
        1,
        "said once, in the verdict: {text}"
    );
    assert!(!text.contains("usesfile/a.so\n"), "{text}");
}

/// A library the package loads at import inside `try … except OSError`, whose own dependency is
/// missing (cupy's cuTENSOR without cuBLASLt): the real import goes on without it, so the files
/// are judged without it loaded, and only what needs it fails, on first use. The model alone
/// (`--static`) agrees: a preload that cannot load itself is not taken as loaded.
#[test]
fn a_guarded_preload_that_fails_is_judged_as_the_import_leaves_it() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "gp/__init__.py",
            "import ctypes, os\ntry:\n    ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libhelper.so'), mode=ctypes.RTLD_GLOBAL)\nexcept OSError:\n    pass\nfrom . import _ext\n",
        )],
    );
    let pkg = site.join("gp");
    let dep = work.path().join("dep");
    fake_lib(
        &dep,
        "libcublasLt.so.12",
        "libcublasLt.so.12",
        "cublasLtCreate",
    );
    gcc_shared(
        &pkg,
        "libhelper.so",
        Some("libhelper.so"),
        "int cublasLtCreate(void *); int helper(void) { return cublasLtCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", dep.display()),
            "-l:libcublasLt.so.12",
        ],
    );
    std::fs::remove_dir_all(&dep).unwrap();
    // An extension that needs nothing CUDA: the preload is loaded before it, in the model.
    install_extension(work.path(), &python, &pkg, "_ext", "", "", &[]);
    let o = std::process::Command::new(&python)
        .args(["-c", "import gp"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let run = |extra: &[&str]| doctor_import_with("gp", &python, extra);
    let (code, v) = run(&[]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    // The helper's missing dependency is the one reason, and it is a first-use failure.
    let reasons = v["verdict"]["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{v:#}");
    assert!(
        reasons[0]
            .as_str()
            .unwrap()
            .contains("libcublasLt.so.12 not found"),
        "{v:#}"
    );
    assert_eq!(tier_of(&v, "libhelper.so"), "on-demand");
    assert!(
        v["disagreements"].as_array().unwrap().iter().any(|d| d
            .as_str()
            .unwrap()
            .contains("the model has libhelper.so loaded at import")),
        "{v:#}"
    );
    let call = v["imports_run"][0]["dlopens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("libhelper.so"))
        })
        .unwrap_or_else(|| panic!("{v:#}"))
        .clone();
    assert!(call["loaded"].is_null());
    // The files alone come to the same answer: a preload that cannot load itself (its own
    // dependency is missing) is not taken as loaded, so the extension is judged without it.
    let (code, v) = run(&["--static"]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert!(
        v["disagreements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains(
                "libhelper.so would be loaded first by its package, but cannot load itself here"
            )),
        "{v:#}"
    );
}

/// One root cause, one line: a library missing for many files is one reason that counts and
/// names a few of them, and the human report stays short.
#[test]
fn one_missing_library_is_one_line_however_many_files_need_it() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let gone = d.join("gone");
    fake_lib(
        &gone,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let pkg = d.join("pkg");
    for i in 0..6 {
        gcc_shared(
            &pkg,
            &format!("libuser{i}.so"),
            Some(&format!("libuser{i}.so")),
            "int cublasCreate_v2(void *); int f(void) { return cublasCreate_v2(0); }\n",
            &[
                "-Wl,--no-as-needed",
                &format!("-L{}", gone.display()),
                "-l:libcublas.so.12",
            ],
        );
    }
    std::fs::remove_dir_all(&gone).unwrap();
    let v = doctor_json(&[pkg.to_str().unwrap(), "--ld-library-path", ""], 1);
    let reasons = reasons_of(&v);
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
    assert!(
        reasons[0].starts_with("libcublas.so.12 not found (fix: install nvidia-cublas-cu12")
            && reasons[0].contains(": in 6 files (")
            && reasons[0].ends_with(" and 3 more)"),
        "{reasons:#?}"
    );
    // Each file still has its own report.
    assert_eq!(v["files"].as_array().unwrap().len(), 6);
    let o = cudist(&["doctor", pkg.to_str().unwrap(), "--ld-library-path", ""]);
    let text = stdout(&o);
    assert!(text.lines().count() < 30, "{text}");
    assert!(
        text.contains("libcublas.so.12 not found, needed by 6 file(s): ")
            && text.contains(" and 3 more"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("libcublas.so.12") && l.contains("not found"))
            .count(),
        // The verdict line, and the one list of the files that need it.
        2,
        "{text}"
    );
    // A file whose closure needs it twice (itself and a library it loads) counts once.
    let lib = d.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    fake_lib(
        &gone,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    gcc_shared(
        &lib,
        "libmid.so",
        Some("libmid.so"),
        "int cublasCreate_v2(void *); int mid(void) { return cublasCreate_v2(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", gone.display()),
            "-l:libcublas.so.12",
        ],
    );
    let top = gcc_shared(
        d,
        "top.so",
        None,
        "int cublasCreate_v2(void *); int mid(void);\nint top(void) { return mid() + cublasCreate_v2(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", gone.display()),
            &format!("-L{}", lib.display()),
            "-l:libcublas.so.12",
            "-l:libmid.so",
            &format!("-Wl,-rpath,{}", lib.display()),
        ],
    );
    std::fs::remove_dir_all(&gone).unwrap();
    let o = cudist(&["doctor", top.to_str().unwrap(), "--ld-library-path", ""]);
    let text = stdout(&o);
    assert!(
        text.contains("libcublas.so.12 not found, needed by 1 file(s): "),
        "{text}"
    );
}

/// The fix names the package's own extra when one brings the missing library (cupy's `[ctk]`,
/// which requires `cuda-toolkit[cublas,…]`): what the package's users are told to install.
#[test]
fn the_fix_is_the_packages_own_extra_when_it_has_one() {
    let work = tempfile::tempdir().unwrap();
    let (python, _) = venv_with(
        &work.path().join("venv"),
        &[
            ("xt/__init__.py", "import ctypes\nctypes.CDLL('libcublas.so.12')\n"),
            (
                "xt_cu12-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: xt-cu12\nVersion: 1.0\nProvides-Extra: ctk\nRequires-Dist: numpy\nRequires-Dist: cuda-toolkit[cublas,cufft]==12.*; extra == \"ctk\"\n",
            ),
        ],
    );
    let (code, v) = doctor_import("xt", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons[0].starts_with("import xt fails: OSError: libcublas.so.12"),
        "{reasons:#?}"
    );
    assert!(
        reasons[1]
            .ends_with("install nvidia-cublas-cu12 (`pip install \"xt-cu12[ctk]\"` brings it)"),
        "{reasons:#?}"
    );
}

/// zstd-compressed device code (nvcc `--compress-mode=size`) needs a driver that decompresses it:
/// with CUDA 12, 550.54.14 (rapids-cmake's rule), above the major's 525.60.13 floor. The nvcc
/// fixture `zstd.so` (every entry zstd) made to need CUDA 12's runtime with patchelf: inspect
/// raises the floor, doctor fails it on a 535 driver and not on a 560 one.
#[test]
fn zstd_compressed_device_code_sets_a_driver_floor() {
    let Some(patchelf) = tool_from_env("CUDIST_PATCHELF") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let z12 = work.path().join("z12.so");
    std::fs::copy(fixtures().join("zstd.so"), &z12).unwrap();
    ok(
        &std::process::Command::new(patchelf)
            .args(["--replace-needed", "libcudart.so.13", "libcudart.so.12"])
            .arg(&z12)
            .output()
            .unwrap(),
        "patchelf",
    );
    let v = inspect_json(&[z12.to_str().unwrap()], 0);
    let floor = &v["artifacts"][0]["device"]["min_driver"];
    assert_eq!(floor["driver"], "550.54.14", "{floor:#}");
    assert!(
        floor["reason"].as_str().unwrap().contains("zstd"),
        "{floor:#}"
    );
    // The same code with LZ4 (the default): the major's floor.
    let v = inspect_json(&[fixtures().join("lz4.so").to_str().unwrap()], 0);
    assert!(!v["artifacts"][0]["device"]["min_driver"]["reason"]
        .as_str()
        .unwrap()
        .contains("zstd"));
    let host = |name: &str, driver: &str| {
        write_profile(
            &work.path().join(name),
            &serde_json::json!({"name": name, "driver": driver, "gpus": [{"name": "NVIDIA H100", "sm": 90}]}),
        )
    };
    let said = |profile: &std::path::Path| {
        let (_, v) = doctor_on_profile(profile, &z12);
        v["verdict"]["reasons"].as_array().unwrap().iter().any(|r| {
            r.as_str()
                .unwrap()
                .contains("cannot decompress its zstd-compressed device code")
        })
    };
    assert!(said(&host("old.json", "535.104.05")));
    assert!(!said(&host("new.json", "560.35.03")));
}

/// A package whose import calls a function of another package that loads a library (cuopt's
/// `libcuopt.load_library()`, which no catalog names): the library is loaded at import, so the
/// extension that needs it without a search path loads too, as the real import shows. The
/// static model agrees: it reads the called function in the other package. Without the call,
/// both say the extension fails.
#[test]
fn a_loader_in_another_package_called_at_import_loads_at_import() {
    for called in [true, false] {
        let work = tempfile::tempdir().unwrap();
        let init = if called {
            "import libthing\nlibthing.load_library()\nfrom . import _ext\n"
        } else {
            "import libthing\nfrom . import _ext\n"
        };
        let (python, site) = venv_with(
            &work.path().join("venv"),
            &[
                ("thing/__init__.py", init),
                ("libthing/__init__.py", "from libthing.load import load_library\n"),
                (
                    "libthing/load.py",
                    "import ctypes, os\ndef load_library():\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib64', 'libthing.so'), mode=ctypes.RTLD_GLOBAL)\n",
                ),
            ],
        );
        let lib64 = site.join("libthing/lib64");
        fake_lib(&lib64, "libthing.so", "libthing.so", "thing_init");
        install_extension(
            work.path(),
            &python,
            &site.join("thing"),
            "_ext",
            "",
            "",
            &[
                "-Wl,--no-as-needed",
                &format!("-L{}", lib64.display()),
                "-lthing",
            ],
        );
        let real = std::process::Command::new(&python)
            .args(["-c", "import thing"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(real.status.success(), called, "{}", stderr(&real));
        for extra in [&[][..], &["--static"][..]] {
            let (code, v) = doctor_import_with("thing", &python, extra);
            let status = v["verdict"]["status"].as_str().unwrap();
            if called {
                assert_eq!((code, status), (Some(0), "ok"), "{extra:?}: {v:#}");
                let load = v["runtime_loads"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|l| l["soname"] == "libthing.so")
                    .unwrap_or_else(|| panic!("{extra:?}: {v:#}"));
                assert!(
                    load["loader"]
                        .as_str()
                        .unwrap()
                        .contains("called at thing/__init__.py:2")
                        && load["path"]
                            .as_str()
                            .unwrap()
                            .ends_with("libthing/lib64/libthing.so"),
                    "{load:#}"
                );
            } else {
                assert_eq!(
                    (code, status),
                    (Some(1), "will-fail-to-load"),
                    "{extra:?}: {v:#}"
                );
            }
        }
    }
}

/// A library built against a newer release of a library it needs requires a symbol version the
/// installed one does not define (`GLIBCXX_3.4.32` of an older libstdc++, as
/// nvidia-resiliency-ext on Debian 12): ld.so refuses the load ("version `V2' not found"), and
/// doctor says so, as a real run of the program does.
#[test]
fn a_symbol_version_the_found_library_lacks_fails_the_load() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let (old, new) = (d.join("old"), d.join("new"));
    for (dir, script, body) in [
        (
            &old,
            "V1 { global: f; local: *; };\n",
            "int f(void) { return 1; }\n",
        ),
        (
            &new,
            "V1 { global: f; local: *; };\nV2 { global: g; } V1;\n",
            "int f(void) { return 1; }\nint g(void) { return 2; }\n",
        ),
    ] {
        std::fs::create_dir_all(dir).unwrap();
        let map = dir.join("v.map");
        std::fs::write(&map, script).unwrap();
        gcc_shared(
            dir,
            "libv.so.1",
            Some("libv.so.1"),
            body,
            &[&format!("-Wl,--version-script={}", map.display())],
        );
    }
    std::os::unix::fs::symlink("libv.so.1", new.join("libv.so")).unwrap();
    let exe = gcc(
        d,
        "uses_g",
        "int g(void);\nint main(void) { return g() == 2 ? 0 : 7; }\n",
        &[&format!("-L{}", new.display()), "-lv"],
    );
    for (dir, works) in [(&new, true), (&old, false)] {
        let dir = dir.to_str().unwrap();
        let real = std::process::Command::new(&exe)
            .env("LD_LIBRARY_PATH", dir)
            .output()
            .unwrap();
        assert_eq!(real.status.success(), works, "{real:?}");
        if !works {
            assert!(
                String::from_utf8_lossy(&real.stderr).contains("version `V2' not found"),
                "{real:?}"
            );
        }
        let v = doctor_json(
            &["--ld-library-path", dir, exe.to_str().unwrap()],
            if works { 0 } else { 1 },
        );
        let mv = &v["files"][0]["missing_versions"];
        if works {
            assert_eq!(mv, &serde_json::json!([]), "{v:#}");
        } else {
            assert_eq!(mv[0]["version"], "V2", "{v:#}");
            assert_eq!(mv[0]["library"], "libv.so.1", "{v:#}");
            assert_eq!(v["verdict"]["status"], "will-fail-to-load", "{v:#}");
        }
    }
}

/// Where the files do not pin a CUDA major (libcudnn.so.9 is in both the -cu12 and the -cu13
/// wheels; a static runtime links nothing), the fix takes the one the name of the distribution
/// that installed the package says (`nvpy-cu12`, found by its RECORD), not the newest (nvidia-nvcomp-cu12 and nvshmem4py-cu12 were told `-cu13`).
#[test]
fn the_fix_takes_the_major_the_distribution_says() {
    let work = tempfile::tempdir().unwrap();
    let libs = work.path().join("libs");
    fake_lib(&libs, "libcudnn.so", "libcudnn.so.9", "cudnnCreate");
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("nv/__init__.py", "from . import _n\n"),
            // Named unlike its package (nvshmem4py-cu12 installs `nvshmem/`): its RECORD says.
            (
                "nvpy_cu12-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvpy-cu12\nVersion: 1.0\n",
            ),
            (
                "nvpy_cu12-1.0.dist-info/RECORD",
                "nv/__init__.py,,\nnvpy_cu12-1.0.dist-info/RECORD,,\n",
            ),
        ],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("nv"),
        "_n",
        "int cudnnCreate(void *);",
        "cudnnCreate(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcudnn",
        ],
    );
    let (code, v) = doctor_import_with("nv", &python, &["--static"]);
    assert_eq!(code, Some(1), "{v:#}");
    let text = v.to_string();
    assert!(text.contains("install nvidia-cudnn-cu12"), "{v:#}");
    assert!(!text.contains("nvidia-cudnn-cu13"), "{v:#}");
}

/// A library the package's extension opens with dlopen on first use, which the package's own
/// API loads first by path (nvshmem4py's `init()` loads nvshmem_host through cuda-pathfinder
/// before its bindings dlopen it): found there, the dlopen gets the loaded one, and a real call
/// of the API then of the extension works; doctor says OK, not that the dlopen will fail.
#[test]
fn a_library_the_packages_api_loads_first_is_there_for_a_later_dlopen() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("oc/__init__.py", "from . import _ext\nfrom .api import init\n"),
            (
                "oc/api.py",
                "import ctypes, os\ndef init():\n    here = os.path.dirname(__file__)\n    return ctypes.CDLL(os.path.join(here, 'lib', 'libfoo.so.1'), mode=ctypes.RTLD_GLOBAL)\n",
            ),
        ],
    );
    fake_lib(
        &site.join("oc/lib"),
        "libfoo.so.1",
        "libfoo.so.1",
        "foo_init",
    );
    install_extension(
        work.path(),
        &python,
        &site.join("oc"),
        "_ext",
        "#include <dlfcn.h>\nint use_foo(void) { void *h = dlopen(\"libfoo.so.1\", RTLD_NOW); return h != 0; }",
        "",
        &["-ldl"],
    );
    // Real: the dlopen after init() finds the loaded library, and before it does not.
    let probe = |first: &str| {
        let code = format!(
            "import ctypes, oc\n{first}\nimport oc._ext as e\nprint(ctypes.CDLL(e.__file__).use_foo())\n"
        );
        let o = std::process::Command::new(&python)
            .args(["-c", &code])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(probe("oc.init()"), "1");
    assert_eq!(probe(""), "0");
    let (code, v) = doctor_import_with("oc", &python, &["--dlopen", "libfoo.so.1"]);
    assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
    assert_eq!(code, Some(0));
}

/// A distribution that installs an extension module beside its package (nvidia-resiliency-ext's
/// top-level `nvrx_cupti_module`), which the package's code imports on first use: doctor judges
/// it with the package, placed as the code imports it (on demand). A module beside it that the
/// package's distribution does not install is not judged with it.
#[test]
fn an_extension_module_installed_beside_the_package_is_judged_with_it() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "besidepkg/__init__.py",
                "def profile():\n    import besideext\n    return besideext\n",
            ),
            (
                "besidepkg-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: besidepkg\nVersion: 1.0\n",
            ),
        ],
    );
    let libs = work.path().join("libs");
    fake_lib(&libs, "libcupti.so.13", "libcupti.so.13", "cuptiGetVersion");
    let installed = install_extension(
        &libs,
        &python,
        &site,
        "besideext",
        "int cuptiGetVersion(void *);",
        "cuptiGetVersion(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcupti.so.13",
        ],
    );
    let name = installed
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let record = |with_ext: bool| {
        let ext_row = if with_ext {
            format!("{name},,\n")
        } else {
            String::new()
        };
        std::fs::write(
            site.join("besidepkg-1.0.dist-info/RECORD"),
            format!("besidepkg/__init__.py,,\n{ext_row}besidepkg-1.0.dist-info/METADATA,,\nbesidepkg-1.0.dist-info/RECORD,,\n"),
        )
        .unwrap();
    };
    record(true);
    // Reality: the import works; the first use fails on CUPTI.
    imports_then_fails_on_use(
        &python,
        "besidepkg",
        "import besidepkg; besidepkg.profile()",
        "libcupti.so.13",
    );
    for extra in [&["--static"][..], &[]] {
        let (code, v) = doctor_import_with("besidepkg", &python, extra);
        assert_eq!(
            v["verdict"]["status"], "will-fail-when-loaded",
            "{extra:?}: {v:#}"
        );
        assert_eq!(code, Some(0), "{v:#}");
        let f = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(&name))
            .unwrap_or_else(|| panic!("{extra:?}: {v:#}"));
        assert_eq!(f["tier"], "on-demand", "{f:#}");
    }
    record(false);
    let (code, v) = doctor_import_with("besidepkg", &python, &[]);
    assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
}

/// The RPATH entry a fix names counts the levels from the file's real directory: a library found
/// through another file's `$ORIGIN/../lib` (holoscan's `gxf_extensions/../lib`) sits one level
/// below its package, not three.
#[test]
fn a_fixs_rpath_entry_counts_from_the_files_real_directory() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("deep/__init__.py", "from .ext import _ext\n"),
            ("deep/ext/__init__.py", ""),
        ],
    );
    let rt = site.join("nvidia/cuda_runtime/lib");
    fake_lib(&rt, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    let lib = site.join("deep/lib");
    std::fs::create_dir_all(&lib).unwrap();
    gcc_shared(
        &lib,
        "libdeepcore.so",
        Some("libdeepcore.so"),
        "int cudaMalloc(void *);\nint core(void) { return cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", rt.display()),
            "-l:libcudart.so.12",
        ],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("deep/ext"),
        "_ext",
        "int core(void);",
        "core();",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-ldeepcore",
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../lib",
        ],
    );
    let (_, v) = doctor_import_with("deep", &python, &["--static"]);
    // The extension's own check finds libdeepcore.so as `deep/ext/../lib/libdeepcore.so`.
    let fixes: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().contains("/deep/ext/_ext"))
        .flat_map(|f| f["missing"].as_array().unwrap())
        .filter_map(|m| m["fix"].as_str())
        .collect();
    assert!(
        fixes
            .iter()
            .any(|f| f.contains("add the RPATH entry $ORIGIN/../../nvidia/cuda_runtime/lib ")),
        "{fixes:#?}\n{v:#}"
    );
}

/// A CUDA wheel the package requires outright that is missing (cupti-python requires
/// nvidia-cuda-cupti and loads libcupti itself through cuda-pathfinder, from compiled code whose
/// strings do not show it): its import works, what uses the library fails, and doctor says so;
/// installed, nothing is said. A requirement under an extra, or for Windows, says nothing.
#[test]
fn a_required_cuda_wheel_that_is_missing_fails_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("cuptilike/__init__.py", "x = 1\n"),
            (
                "cuptilike-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: cuptilike\nVersion: 1.0\nRequires-Dist: nvidia-cuda-cupti~=13.4\nRequires-Dist: nvidia-nccl-cu13; extra == \"nccl\"\nRequires-Dist: nvidia-cublas; sys_platform == \"win32\"\n\nbody\n",
            ),
        ],
    );
    let (code, v) = doctor_import_with("cuptilike", &python, &[]);
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    assert_eq!(
        reasons,
        vec!["cuptilike requires nvidia-cuda-cupti, which is not installed here: what loads its libraries fails on first use; install nvidia-cuda-cupti"],
        "{v:#}"
    );
    std::fs::create_dir_all(site.join("nvidia_cuda_cupti-13.4.0.dist-info")).unwrap();
    std::fs::write(
        site.join("nvidia_cuda_cupti-13.4.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: nvidia-cuda-cupti\nVersion: 13.4.0\n",
    )
    .unwrap();
    let (code, v) = doctor_import_with("cuptilike", &python, &[]);
    assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
}

/// One root cause, one line: a file missing two libraries of one wheel (cupy's cuTENSOR module:
/// libcutensor.so.2 and libcutensorMg.so.2, both from cutensor-cu13) is said once.
#[test]
fn the_libraries_of_one_missing_wheel_are_one_line() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[("tens/__init__.py", "from . import _ext\n")],
    );
    let libs = work.path().join("libs");
    fake_lib(
        &libs,
        "libcutensor.so.2",
        "libcutensor.so.2",
        "cutensorCreate",
    );
    fake_lib(
        &libs,
        "libcutensorMg.so.2",
        "libcutensorMg.so.2",
        "cutensorMgCreate",
    );
    install_extension(
        work.path(),
        &python,
        &site.join("tens"),
        "_ext",
        "int cutensorCreate(void *); int cutensorMgCreate(void *);",
        "cutensorCreate(0); cutensorMgCreate(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcutensor.so.2",
            "-l:libcutensorMg.so.2",
        ],
    );
    let (code, v) = doctor_import_with("tens", &python, &["--static"]);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
    assert!(
        reasons[0].contains("libcutensor.so.2, libcutensorMg.so.2 not found"),
        "{reasons:#?}"
    );
}

/// A load the real import makes and that fails while the import goes on (the package catches
/// the error, as a torch extension loader does for a `_C.so` built for another CUDA major) is a
/// failure on first use, named once with its error and the fix, whatever the model read of the
/// code; a candidate that fails before another name of the same library loads (`.13`, then
/// `.12`) is no failure. Checked against the real import and a real use.
#[test]
fn a_load_that_fails_while_the_import_goes_on_fails_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    // `_C.so` needs a libcudart.so.12 that is not installed.
    fake_lib(&build, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    let ext = gcc_shared(
        &build,
        "_C.so",
        None,
        "int cudaMalloc(void *);\nint ext_alloc(void) { return cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libcudart.so.12",
        ],
    );
    // A library found among candidates: only the second name exists.
    let hidden = work.path().join("hidden");
    fake_lib(&hidden, "libnvrtc.so.12", "libnvrtc.so.12", "nvrtcVersion");
    let init = format!(
        "import ctypes, os, warnings\n\
         _here = os.path.dirname(__file__)\n\
         def _load(path):\n    return ctypes.CDLL(path)\n\
         try:\n    _load(os.path.join(_here, '_C.so'))\n\
         except OSError as e:\n    warnings.warn(f'extension not loaded: {{e}}')\n\
         for _n in ('libnvrtc.so.13', 'libnvrtc.so.12'):\n    \
         try:\n        ctypes.CDLL(os.path.join({hidden:?}, _n))\n        break\n    \
         except OSError:\n        pass\n\
         try:\n    ctypes.CDLL('libcuf' + 'ft.so.11')\n\
         except OSError:\n    pass\n\
         try:\n    ctypes.CDLL('libcuda' + 'rt.so.12.8.90')\n\
         except OSError:\n    pass\n\
         def alloc():\n    return _load(os.path.join(_here, '_C.so')).ext_alloc()\n",
        hidden = hidden.display().to_string()
    );
    let (python, site) = venv_with(&work.path().join("venv"), &[("lazyext/__init__.py", &init)]);
    std::fs::copy(&ext, site.join("lazyext/_C.so")).unwrap();
    // Reality: the import works, the use fails on the missing library.
    imports_then_fails_on_use(
        &python,
        "lazyext",
        "import lazyext; lazyext.alloc()",
        "libcudart.so.12",
    );
    let (code, v) = doctor_import("lazyext", &python);
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    let calls = v["imports_run"][0]["dlopens"].as_array().unwrap();
    let failed: Vec<&Value> = calls.iter().filter(|c| !c["error"].is_null()).collect();
    assert_eq!(failed.len(), 4, "{v:#}");
    assert!(
        failed[0]["name"]
            .as_str()
            .unwrap()
            .ends_with("lazyext/_C.so")
            && failed[0]["error"]
                .as_str()
                .unwrap()
                .starts_with("libcudart.so.12: cannot open shared object file"),
        "{v:#}"
    );
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let cudart: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcudart.so.12"))
        .collect();
    // The failed load of the runtime's file by its full version (`libcudart.so.12.8.90`) is
    // the same root cause as the module that needs `libcudart.so.12`.
    assert_eq!(cudart.len(), 1, "one root cause, one line: {reasons:#?}");
    assert!(
        !reasons.iter().any(|r| r.contains("libcudart.so.12.8.90")),
        "{reasons:#?}"
    );
    assert!(cudart[0].contains("went on without it"), "{reasons:#?}");
    assert!(
        v["files"]
            .to_string()
            .contains("install nvidia-cuda-runtime-cu12"),
        "{v:#}"
    );
    // A load the model cannot read (a name built at run time) is judged by what happened.
    let cufft: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcufft.so.11"))
        .collect();
    assert_eq!(cufft.len(), 1, "{reasons:#?}");
    assert!(
        cufft[0].contains("failed during import lazyext")
            && cufft[0].contains("went on without it")
            && cufft[0].contains("install nvidia-cufft-cu12"),
        "{reasons:#?}"
    );
    assert!(
        v["disagreements"].as_array().unwrap().iter().any(|d| d
            .as_str()
            .unwrap()
            .contains("load of libcufft.so.11 failed")),
        "{v:#}"
    );
    // The failed candidate before the loaded one is not a failure.
    assert!(
        !reasons.iter().any(|r| r.contains("libnvrtc.so.13")),
        "{reasons:#?}"
    );
    assert_eq!(
        doctor_import_with("lazyext", &python, &["--strict"]).0,
        Some(1)
    );
}

/// A module another package's import loads by a name built at run time
/// (`import_module(f'{pkg}._versions')`, as JAX imports its CUDA plugins) is not in the model's
/// graph; the real import maps it, and doctor judges it with the package: what it opens on
/// first use (here a `dlopen` of a missing cuBLAS) is a failure on first use. Checked against a
/// real use.
#[test]
fn a_file_the_real_import_loads_from_a_package_the_model_did_not_follow_is_judged() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "hostpkg/__init__.py",
                "import importlib\n_versions = importlib.import_module(''.join(reversed('deggulp')) + '._versions')\n",
            ),
            ("plugged/__init__.py", ""),
        ],
    );
    let module = install_extension(
        work.path(),
        &python,
        &site.join("plugged"),
        "_versions",
        "void *dlopen(const char *, int);\nchar *dlerror(void);\n\
         const char *load_blas(void) { return dlopen(\"libcublas.so.12\", 2) ? 0 : dlerror(); }",
        "",
        &[],
    );
    imports_then_fails_on_use(
        &python,
        "hostpkg",
        "import ctypes, hostpkg\nl = ctypes.CDLL(hostpkg._versions.__file__)\nl.load_blas.restype = ctypes.c_char_p\ne = l.load_blas()\nassert e is None, e",
        "libcublas.so.12",
    );
    let (code, v) = doctor_import("hostpkg", &python);
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    let judged: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        judged.iter().any(
            |p| p.ends_with("plugged/_versions.cpython-311-x86_64-linux-gnu.so")
                || std::path::Path::new(p) == module
        ),
        "{judged:#?}"
    );
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0));
    assert!(
        reasons_of(&v)
            .iter()
            .any(|r| r.contains("libcublas.so.12") && r.contains("first use")),
        "{v:#}"
    );
    assert!(
        v["disagreements"].as_array().unwrap().iter().any(|d| d
            .as_str()
            .unwrap()
            .contains("of packages the model did not follow")),
        "{v:#}"
    );
}

/// A native `dlopen` of a CUDA library's linker name (`dlopen("libnvrtc.so")`, slangpy's shape)
/// asks for that name, which CUDA wheels never install: doctor checks that name, not the
/// SONAME of a major, fails its first use where it is not found and says why; where the file's
/// search path reaches a development link, it loads. Checked against the real call.
#[test]
fn a_native_dlopen_of_a_linker_name_is_checked_by_that_name() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, os\n_l = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libslang_like.so'))\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("lnpkg/__init__.py", init)]);
    let pkg = site.join("lnpkg");
    gcc_shared(
        &pkg,
        "libslang_like.so",
        None,
        "#include <dlfcn.h>\nconst char *load_nvrtc(void) { return dlopen(\"libnvrtc.so\", RTLD_NOW) ? 0 : dlerror(); }\n",
        &["-Wl,-rpath,$ORIGIN"],
    );
    let use_code = "import lnpkg, ctypes\nf = lnpkg._l.load_nvrtc\nf.restype = ctypes.c_char_p\ne = f()\nassert e is None, e";
    imports_then_fails_on_use(&python, "lnpkg", use_code, "libnvrtc.so");
    let (code, v) = doctor_import("lnpkg", &python);
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0));
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains("dlopen(libnvrtc.so)")
            && r.contains("first use")
            && r.contains("only a CUDA toolkit's development files have it")),
        "{reasons:#?}"
    );
    // A development link where the file's RUNPATH looks: the call loads, and doctor agrees.
    fake_lib(&pkg, "libnvrtc.so", "libnvrtc.so.12", "nvrtcVersion");
    let o = std::process::Command::new(&python)
        .args(["-c", use_code])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, v) = doctor_import("lnpkg", &python);
    assert_eq!(code, Some(0));
    assert!(
        !reasons_of(&v)
            .iter()
            .any(|r| r.contains("dlopen(libnvrtc.so)")),
        "{v:#}"
    );
}

/// A plugin directory native code scans at import (OpenMM's `OpenMM.libs/lib/plugins`, which
/// other distributions install their CUDA plugins into) is judged whole: the real import maps
/// the plugins that load; the others sit beside them and are judged as loaded on demand, each
/// with the sibling the directory's loader loads first (a plugin without a search path to
/// `libPlugCUDA.so` gets it, and the cuFFT it brings). With cuFFT taken away, the CUDA plugins
/// do not load while the import works, and doctor names cuFFT. Checked against the process's
/// own list of mapped objects.
#[test]
fn a_plugin_directory_the_import_scans_is_judged_whole() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "plugmgr/__init__.py",
            "import os\nos.environ['PLUGDIR'] = os.path.join(os.path.dirname(__file__), '..', 'plug.libs', 'plugins')\nfrom . import _core\n",
        )],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("plugmgr"),
        "_core",
        "#include <dlfcn.h>\n#include <dirent.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         static void load_dir(const char *d) {\n\
           for (int pass = 0; pass < 3; pass++) {\n\
             DIR *dir = opendir(d); struct dirent *e; char p[4096];\n\
             while (dir && (e = readdir(dir))) {\n\
               if (!strstr(e->d_name, \".so\")) continue;\n\
               snprintf(p, sizeof p, \"%s/%s\", d, e->d_name);\n\
               dlopen(p, RTLD_NOW | RTLD_GLOBAL);\n\
             }\n\
             if (dir) closedir(dir);\n\
           }\n\
         }",
        "if (getenv(\"PLUGDIR\")) load_dir(getenv(\"PLUGDIR\"));",
        &["-ldl"],
    );
    let cufft_dir = site.join("nvidia/cufft/lib");
    let cufft = fake_lib(
        &cufft_dir,
        "libcufft.so.11",
        "libcufft.so.11",
        "cufftCreate",
    );
    let plugins = site.join("plug.libs/plugins");
    gcc_shared(
        &plugins,
        "libPlugRef.so",
        Some("libPlugRef.so"),
        "int ref(void) { return 1; }\n",
        &[],
    );
    gcc_shared(
        &plugins,
        "libPlugCUDA.so",
        Some("libPlugCUDA.so"),
        "int cufftCreate(void *);\nint plug_cuda(void) { return cufftCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", cufft_dir.display()),
            "-l:libcufft.so.11",
            "-Wl,-rpath,$ORIGIN/../../nvidia/cufft/lib",
        ],
    );
    gcc_shared(
        &plugins,
        "libPlugAmoebaCUDA.so",
        Some("libPlugAmoebaCUDA.so"),
        "int plug_cuda(void);\nint cufftCreate(void *);\nint amoeba(void) { return plug_cuda() + cufftCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", plugins.display()),
            "-l:libPlugCUDA.so",
            &format!("-L{}", cufft_dir.display()),
            "-l:libcufft.so.11",
        ],
    );
    // What the process maps after the import: the oracle.
    let mapped = || {
        let o = std::process::Command::new(&python)
            .args([
                "-c",
                "import plugmgr\nprint(open('/proc/self/maps').read())",
            ])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let maps = mapped();
    assert!(
        ["libPlugRef.so", "libPlugCUDA.so", "libPlugAmoebaCUDA.so"]
            .iter()
            .all(|p| maps.contains(p)),
        "{maps}"
    );
    let (code, v) = doctor_import("plugmgr", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    assert!(
        reasons_of(&v)
            .iter()
            .any(|r| r.contains("libPlugAmoebaCUDA.so")),
        "the plugins are judged: {v:#}"
    );
    // Without cuFFT: the CUDA plugins do not load, the import works, and doctor names cuFFT.
    std::fs::remove_file(&cufft).unwrap();
    let maps = mapped();
    assert!(
        maps.contains("libPlugRef.so") && !maps.contains("libPlugCUDA.so"),
        "{maps}"
    );
    let (code, v) = doctor_import("plugmgr", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("libcufft.so.11 not found")),
        "{reasons:#?}"
    );
    assert!(
        !reasons
            .iter()
            .any(|r| r.contains("libPlugCUDA.so not found")),
        "{reasons:#?}"
    );
    let tier = tier_of(&v, "libPlugCUDA.so");
    assert_eq!(tier, "on-demand", "{v:#}");
}

/// `ctypes.util.find_library("cusolverMg")` searches the system's library cache,
/// LD_LIBRARY_PATH and the compiler's paths, never a CUDA wheel: a package that finds nothing
/// and goes on without the library (keopscore switches to the CPU) imports, and what uses the
/// library fails. doctor sees the call in the real import and says so. Checked against the real
/// use.
#[test]
fn a_library_find_library_does_not_find_fails_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, ctypes.util\n_p = ctypes.util.find_library('cusolverMg')\n_lib = ctypes.CDLL(_p) if _p else None\n\
             def solve():\n    if _lib is None:\n        raise RuntimeError('libcusolverMg not found')\n";
    let (python, _site) = venv_with(&work.path().join("venv"), &[("finder/__init__.py", init)]);
    // inspect reads the same from the wheel: not "needs none".
    let wheel = work.path().join("finder-1.0-py3-none-any.whl");
    write_wheel(
        &wheel,
        "finder",
        &[],
        &[("finder/__init__.py", init.as_bytes().to_vec())],
    );
    let lines = verdict_lines(artifact(
        &inspect_json(&[wheel.to_str().unwrap()], 0),
        ".whl",
    ));
    assert_eq!(
        lines[0], "OK: carries no CUDA libraries; looks for them on the system itself (below)",
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "looks for libcusolverMg with ctypes.util.find_library(\"cusolverMg\") at import (finder/__init__.py:2): that searches where the system keeps libraries, never a CUDA wheel"
        )),
        "{lines:#?}"
    );
    // The premise: this machine's system has no cuSOLVERMg.
    let o = std::process::Command::new(&python)
        .args([
            "-c",
            "import ctypes.util; print(ctypes.util.find_library('cusolverMg'))",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "None");
    imports_then_fails_on_use(
        &python,
        "finder",
        "import finder; finder.solve()",
        "libcusolverMg",
    );
    let (code, v) = doctor_import("finder", &python);
    assert_eq!(
        v["imports_run"][0]["finds"][0]["name"], "cusolverMg",
        "{v:#}"
    );
    assert!(v["imports_run"][0]["finds"][0]["found"].is_null(), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert_eq!(code, Some(0));
    assert!(
        reasons_of(&v).iter().any(|r| r
            .contains("find_library(\"cusolverMg\") found no libcusolverMg")
            && r.contains("never a CUDA wheel")
            && r.contains("finder/__init__.py:2")),
        "{v:#}"
    );
    // From the files alone: the same search, on this machine's library cache and
    // LD_LIBRARY_PATH, finds nothing either.
    let (code, v) = doctor_import_with("finder", &python, &["--static"]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    assert!(
        reasons_of(&v).iter().any(|r| r.starts_with(
            "finder looks for libcusolverMg with ctypes.util.find_library(\"cusolverMg\") at import (finder/__init__.py:2): not in this machine's library cache or LD_LIBRARY_PATH"
        )),
        "{v:#}"
    );
}

/// A library the package loads first (pylibcudf's `libcudf.so`, preloaded by its loader) that
/// cannot load here, for want of a CUDA library it needs, is the cause for every file that needs
/// it: said so, with what it lacks, not as a missing search path to it.
#[test]
fn files_needing_a_preload_that_cannot_load_name_what_it_lacks() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "core_user/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libcore.so'), mode=ctypes.RTLD_GLOBAL)\nfrom . import _ext\n",
        )],
    );
    let jit = site.join("nvidia/nvjitlink/lib");
    let jitlib = fake_lib(
        &jit,
        "libnvJitLink.so.12",
        "libnvJitLink.so.12",
        "nvJitLinkCreate",
    );
    let lib = site.join("core_user/lib");
    gcc_shared(
        &lib,
        "libcore.so",
        Some("libcore.so"),
        "int nvJitLinkCreate(void *);\nint core(void) { return nvJitLinkCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", jit.display()),
            "-l:libnvJitLink.so.12",
            "-Wl,-rpath,$ORIGIN/../../nvidia/nvjitlink/lib",
        ],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("core_user"),
        "_ext",
        "int core(void);",
        "core();",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libcore.so",
        ],
    );
    let (code, v) = doctor_import("core_user", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    // Without nvJitLink the preload fails, and the import with it.
    std::fs::remove_file(&jitlib).unwrap();
    let o = std::process::Command::new(&python)
        .args(["-c", "import core_user"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        !o.status.success() && stderr(&o).contains("libnvJitLink.so.12"),
        "{}",
        stderr(&o)
    );
    let (code, v) = doctor_import_with("core_user", &python, &["--static"]);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("libnvJitLink.so.12 not found")
                && r.contains("install nvidia-nvjitlink-cu12")
                && r.contains("so libcore.so, which its package loads first, cannot load")),
        "{reasons:#?}"
    );
    // One root cause, one line.
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
    assert!(
        !v["files"].to_string().contains("add the RPATH entry"),
        "no search path is the fix: {v:#}"
    );
}

/// A library of the package the model places on demand (loaded by a path built at run time,
/// which the model cannot read) whose own library is missing: the real import fails on it, and
/// the reasons say so, not that nothing the import reaches needs it.
#[test]
fn a_file_the_failed_import_needed_is_not_said_to_be_needed_by_nothing() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "hidden_core/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), ''.join(reversed('os.eroc'))))\n",
        )],
    );
    let libs = work.path().join("libs");
    fake_lib(
        &libs,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    gcc_shared(
        &site.join("hidden_core"),
        "core.so",
        Some("core.so"),
        "int cublasCreate_v2(void *);\nint core(void) { return cublasCreate_v2(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcublas.so.12",
        ],
    );
    remove_c_sources(&site.join("hidden_core"));
    let (code, v) = doctor_import("hidden_core", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons[0].starts_with("import hidden_core fails: OSError: libcublas.so.12"),
        "{reasons:#?}"
    );
    assert!(
        !reasons
            .iter()
            .any(|r| r.contains("nothing the import reaches needs it")),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("libcublas.so.12 not found")
                && r.contains("the real import of hidden_core failed on it")),
        "{reasons:#?}"
    );
}

/// A library the package loads first (here when a function runs) that cannot load itself here
/// gives nothing that needs it a loaded copy: a plugin that needs it fails for what it lacks,
/// one root cause, not "gets the loaded one" (cuvs' files, where libcuvs_c.so lacks cuBLAS).
/// Checked against a real use.
#[test]
fn a_library_loaded_first_that_cannot_load_gives_no_loaded_copy() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    fake_lib(&build, "libgone.so.1", "libgone.so.1", "gone");
    let dep = gcc_shared(
        &build,
        "libdep.so",
        Some("libdep.so"),
        "int gone(void);\nint dep(void) { return gone(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libgone.so.1",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    let plugin = gcc_shared(
        &build,
        "plugin.so",
        None,
        "int dep(void);\nint use(void) { return dep(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libdep.so",
        ],
    );
    let init = "import ctypes, os\n\
                _here = os.path.dirname(__file__)\n\
                def init():\n    return ctypes.CDLL(os.path.join(_here, 'lib', 'libdep.so'))\n\
                def plugin():\n    init()\n    return ctypes.CDLL(os.path.join(_here, 'plugin.so'))\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("firstpkg/__init__.py", init)]);
    std::fs::create_dir_all(site.join("firstpkg/lib")).unwrap();
    std::fs::copy(&dep, site.join("firstpkg/lib/libdep.so")).unwrap();
    std::fs::copy(&plugin, site.join("firstpkg/plugin.so")).unwrap();
    // Reality: the import works; the use fails on what libdep.so lacks.
    imports_then_fails_on_use(
        &python,
        "firstpkg",
        "import firstpkg; firstpkg.plugin()",
        "libgone.so.1",
    );
    let (_, v) = doctor_import("firstpkg", &python);
    assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        !reasons.iter().any(|r| r.contains("loaded one")),
        "{reasons:#?}"
    );
    let plugin_lines: Vec<&&str> = reasons.iter().filter(|r| r.contains("plugin.so")).collect();
    assert_eq!(plugin_lines.len(), 1, "{reasons:#?}");
    assert!(
        plugin_lines[0].contains("libgone.so.1 not found")
            && plugin_lines[0].contains("so libdep.so, which its package loads first, cannot load"),
        "{reasons:#?}"
    );
}

/// A file that links a Python package's libraries (torch's libc10.so, libtorch.so) where that
/// package is not installed: one root cause, one line, with the CUDA library its import would
/// load first (libcudart.so.12) in it, not a line per library (open3d's torch ops). Checked
/// against a real load of the file.
#[test]
fn a_python_packages_missing_libraries_are_one_line() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    fake_lib(&build, "libc10.so", "libc10.so", "c10");
    fake_lib(&build, "libtorch.so", "libtorch.so", "torch");
    fake_lib(&build, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    let ops = gcc_shared(
        &build,
        "torch_ops.so",
        None,
        "int c10(void *);\nint torch(void *);\nint cudaMalloc(void *);\n\
         int ops(void) { return c10(0) + torch(0) + cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libc10.so",
            "-l:libtorch.so",
            "-l:libcudart.so.12",
        ],
    );
    let init = "import ctypes, os\n\
                def torch_ops():\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'torch_ops.so'))\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("opsuser/__init__.py", init)]);
    std::fs::copy(&ops, site.join("opsuser/torch_ops.so")).unwrap();
    imports_then_fails_on_use(
        &python,
        "opsuser",
        "import opsuser; opsuser.torch_ops()",
        "libc10.so",
    );
    let (code, v) = doctor_import("opsuser", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let lines: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("torch_ops.so"))
        .collect();
    assert_eq!(lines.len(), 1, "{reasons:#?}");
    assert!(
        lines[0].contains("libc10.so, libtorch.so, libcudart.so.12 not found")
            && lines[0].contains("they come with torch, whose import loads them"),
        "{reasons:#?}"
    );
    // Where torch is installed, the CUDA library its import loads is missing for that import
    // too: its own wheel is the fix, not torch.
    let torch = site.join("torch-2.4.0.dist-info");
    std::fs::create_dir_all(&torch).unwrap();
    std::fs::write(
        torch.join("METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n",
    )
    .unwrap();
    std::fs::write(torch.join("RECORD"), "").unwrap();
    let (_, v) = doctor_import("opsuser", &python);
    let reasons = reasons_of(&v);
    let cudart: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcudart.so.12 not found"))
        .collect();
    assert_eq!(cudart.len(), 1, "{reasons:#?}");
    assert!(!cudart[0].contains("come with torch"), "{reasons:#?}");
    let fix = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["missing"].as_array().cloned().unwrap_or_default())
        .find(|m| m["name"] == "libcudart.so.12")
        .map(|m| m["fix"].to_string())
        .unwrap_or_default();
    assert!(
        fix.contains("install nvidia-cuda-runtime-cu12") && !fix.contains("install torch"),
        "{fix}: {v:#}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("libc10.so, libtorch.so not found")
                && r.contains("they come with torch")),
        "{reasons:#?}"
    );
}

/// cuda-cccl's shape: one build per CUDA release, in directories named for it, and the package
/// loads the one for the CUDA installed. Where the CUDA 12 build loads (glibc's loader agrees),
/// the CUDA 13 build lacking libnvrtc.so.13 is one line saying it is not this environment's
/// build, not a failure, and no "not found" section; where neither loads, each says what it
/// lacks.
#[test]
fn a_build_for_another_cuda_release_is_not_a_failure() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    fake_lib(&build, "libnvrtc.so.12", "libnvrtc.so.12", "nvrtcVersion");
    fake_lib(&build, "libnvrtc.so.13", "libnvrtc.so.13", "nvrtcVersion");
    let par = |major: u32| {
        gcc_shared(
            &build,
            &format!("libpar{major}.so"),
            Some("libpar.so"),
            "int nvrtcVersion(void *);\nint par(void) { return nvrtcVersion(0); }\n",
            &[
                "-Wl,--no-as-needed",
                &format!("-L{}", build.display()),
                &format!("-l:libnvrtc.so.{major}"),
                &format!("-Wl,-rpath,$ORIGIN/../../nvidia/cu{major}/lib"),
            ],
        )
    };
    let init = "import ctypes, os\n\
                def _major():\n    return int(os.environ.get('TWOBUILDS_CUDA', '12'))\n\
                def par():\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'cu%d' % _major(), 'libpar.so'))\n";
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[("twobuilds/__init__.py", init)],
    );
    for major in [12, 13] {
        let dir = site.join(format!("twobuilds/cu{major}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(par(major), dir.join("libpar.so")).unwrap();
    }
    let wheel_dir = site.join("nvidia/cu12/lib");
    std::fs::create_dir_all(&wheel_dir).unwrap();
    std::fs::copy(
        build.join("libnvrtc.so.12"),
        wheel_dir.join("libnvrtc.so.12"),
    )
    .unwrap();
    // Reality: the CUDA 12 build loads, the CUDA 13 one does not.
    assert!(ctypes_load(&site.join("twobuilds/cu12/libpar.so")).0);
    let (ok13, err13) = ctypes_load(&site.join("twobuilds/cu13/libpar.so"));
    assert!(!ok13 && err13.contains("libnvrtc.so.13"), "{err13}");

    let (code, v) = doctor_import("twobuilds", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    assert_eq!(v["verdict"]["status"], "ok", "{reasons:#?}");
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
    assert!(
        reasons[0].contains("twobuilds/cu13/libpar.so: the CUDA 13 build of")
            && reasons[0].contains(
                "not this environment's: libnvrtc.so.13 not installed, and the CUDA 12 build loads"
            ),
        "{reasons:#?}"
    );
    let unused: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["unused_variant"] == "12")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(unused.len(), 1, "{v:#}");
    assert!(unused[0].ends_with("twobuilds/cu13/libpar.so"));
    let human = cudist(&[
        "doctor",
        "--ld-library-path",
        "",
        "--import",
        "twobuilds",
        "--python",
        python.to_str().unwrap(),
    ]);
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(!human.contains("libnvrtc.so.13 not found"), "{human}");

    // Neither build loads: each says what it lacks.
    std::fs::remove_file(wheel_dir.join("libnvrtc.so.12")).unwrap();
    let (_, v) = doctor_import("twobuilds", &python);
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains("libnvrtc.so.12"))
            && reasons.iter().any(|r| r.contains("libnvrtc.so.13"))
            && !reasons.iter().any(|r| r.contains("not this environment's")),
        "{reasons:#?}"
    );
}

/// Plugins with no search path that need several libraries their package's extension module
/// loads at import (mitsuba's 100 plugins and its 15 libraries): one line for the libraries and
/// the files, in whatever order each file names them, checked against a real load after the
/// import.
#[test]
fn libraries_loaded_first_for_many_files_are_one_line() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    fake_lib(&build, "libcore.so", "libcore.so", "core");
    fake_lib(&build, "libextra.so", "libextra.so", "extra");
    let links = |order: [&str; 2]| -> Vec<String> {
        vec![
            "-Wl,--no-as-needed".into(),
            format!("-L{}", build.display()),
            format!("-l:{}", order[0]),
            format!("-l:{}", order[1]),
        ]
    };
    let plugin = |name: &str, order: [&str; 2]| {
        let args = links(order);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        gcc_shared(
            &build,
            name,
            None,
            "int core(void *);\nint extra(void *);\nint use(void) { return core(0) + extra(0); }\n",
            &args,
        )
    };
    let init = "import ctypes, os\n\
                from . import _ext\n\
                _here = os.path.dirname(__file__)\n\
                def plugin(name):\n    return ctypes.CDLL(os.path.join(_here, 'plugins', name))\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("plugpkg/__init__.py", init)]);
    let ext_name = format!("_ext{}", ext_suffix(&python));
    let mut ext_args = links(["libcore.so", "libextra.so"]);
    ext_args.push("-Wl,-rpath,$ORIGIN".into());
    let ext_args: Vec<&str> = ext_args.iter().map(String::as_str).collect();
    let ext = gcc_shared(
        &build,
        &ext_name,
        None,
        &py_extension_source(
            "_ext",
            "int core(void *);\nint extra(void *);",
            "core(0); extra(0);",
        ),
        &ext_args,
    );
    std::fs::create_dir_all(site.join("plugpkg/plugins")).unwrap();
    for lib in ["libcore.so", "libextra.so"] {
        std::fs::copy(build.join(lib), site.join("plugpkg").join(lib)).unwrap();
    }
    std::fs::copy(&ext, site.join("plugpkg").join(&ext_name)).unwrap();
    for (name, order) in [
        ("a.so", ["libcore.so", "libextra.so"]),
        ("b.so", ["libextra.so", "libcore.so"]),
        ("c.so", ["libcore.so", "libextra.so"]),
    ] {
        std::fs::copy(plugin(name, order), site.join("plugpkg/plugins").join(name)).unwrap();
    }
    // Reality: after the import each plugin loads (the loader finds the loaded libraries by
    // SONAME); alone it does not.
    let o = std::process::Command::new(&python)
        .args([
            "-c",
            "import plugpkg; [plugpkg.plugin(n) for n in ('a.so', 'b.so', 'c.so')]",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!ctypes_load(&site.join("plugpkg/plugins/a.so")).0);
    let (code, v) = doctor_import("plugpkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let lines: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("loaded one"))
        .collect();
    assert_eq!(lines.len(), 1, "{reasons:#?}");
    assert!(
        lines[0].contains("needs 2 libraries its packages load at import: libcore.so, libextra.so")
            && lines[0].contains("get the loaded ones: in 3 files"),
        "{reasons:#?}"
    );
}

/// A wheel's loader that the catalog describes, which hands cuda-pathfinder a library before it
/// loads its own (libcuvs' `load_library()` loads NVRTC, then libcuvs.so, which links it without
/// a search path): the library is loaded at import by that call, so the wheel's own library
/// loads; where the CUDA wheel is missing, the import fails on that library, and doctor names
/// it, its loader and the wheel to install, not the wheel's own library as "not found". The real
/// import (with the real cuda-pathfinder) is the oracle in both cases, static model alike.
#[test]
fn what_a_wheels_loader_hands_cuda_pathfinder_loads_with_it() {
    let Some(deps) = tool_from_env("CUDIST_CUPY_DEPS") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("thing/__init__.py", "import libthing\nlibthing.load_library()\nfrom . import _ext\n"),
            ("libthing/__init__.py", "from libthing.load import load_library\n"),
            (
                "libthing/load.py",
                "import ctypes, os\nfrom cuda.pathfinder import load_nvidia_dynamic_lib\n\ndef load_library():\n    load_nvidia_dynamic_lib('nvrtc')\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib64', 'libthing.so'), ctypes.RTLD_LOCAL)\n",
            ),
        ],
    );
    pip_install_offline(&python, &deps, &["cuda-pathfinder".as_ref()]);
    let catalog = work.path().join("thing.toml");
    std::fs::write(
        &catalog,
        "schema = 1\n[[library]]\nid = \"thing\"\nstem = \"libthing\"\nkind = \"external\"\n\
         description = \"a wheel's library with a loader\"\npython_loader = \"libthing.load_library\"\n\
         python_loader_pathfinder = [\"nvrtc\"]\n[[library.cuda]]\nmajor = 12\nsonames = [\"libthing.so\"]\n\
         policy = \"none\"\npip = \"libthing-cu12\"\npip_dir = \"libthing/lib64\"\n",
    )
    .unwrap();
    let nvrtc_dir = site.join("nvidia/cuda_nvrtc/lib");
    fake_lib(
        &nvrtc_dir,
        "libnvrtc.so.12",
        "libnvrtc.so.12",
        "nvrtcVersion",
    );
    let lib64 = site.join("libthing/lib64");
    gcc_shared(
        &lib64,
        "libthing.so",
        Some("libthing.so"),
        "int nvrtcVersion(void *);\nint thing_init(void) { return nvrtcVersion(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", nvrtc_dir.display()),
            "-l:libnvrtc.so.12",
        ],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("thing"),
        "_ext",
        "",
        "",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib64.display()),
            "-l:libthing.so",
        ],
    );
    let args = ["--catalog", catalog.to_str().unwrap()];
    for present in [true, false] {
        if !present {
            // Moved aside, not deleted: cuda-pathfinder does not look in a renamed directory,
            // and neither does the model of it.
            std::fs::rename(
                site.join("nvidia/cuda_nvrtc"),
                site.join("nvidia/cuda_nvrtc.moved"),
            )
            .unwrap();
        }
        let real = std::process::Command::new(&python)
            .args(["-c", "import thing"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(real.status.success(), present, "{}", stderr(&real));
        if !present {
            assert!(
                stderr(&real).contains("libnvrtc.so.12"),
                "{}",
                stderr(&real)
            );
        }
        for extra in [&[][..], &["--static"][..]] {
            let all: Vec<&str> = args.iter().chain(extra).copied().collect();
            let (code, v) = doctor_import_with("thing", &python, &all);
            let loads = v["runtime_loads"].as_array().unwrap();
            let nvrtc = loads
                .iter()
                .find(|l| l["soname"] == "libnvrtc.so.12")
                .unwrap_or_else(|| panic!("{extra:?}: {v:#}"));
            assert!(
                nvrtc["loader"]
                    .as_str()
                    .unwrap()
                    .starts_with("cuda-pathfinder at thing/__init__.py:2"),
                "{nvrtc:#}"
            );
            // Only the one major's name: the other is no load of its own.
            assert!(
                !loads.iter().any(|l| l["soname"] == "libnvrtc.so.13"),
                "{v:#}"
            );
            let reasons = reasons_of(&v);
            if present {
                assert_eq!(
                    (code, v["verdict"]["status"].as_str()),
                    (Some(0), Some("ok")),
                    "{extra:?}: {v:#}"
                );
                assert!(nvrtc["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
            } else {
                assert_eq!(
                    (code, v["verdict"]["status"].as_str()),
                    (Some(1), Some("will-fail-to-load")),
                    "{extra:?}: {v:#}"
                );
                assert!(
                    reasons.iter().any(|r| r.contains("libnvrtc.so.12")
                        && r.contains("libthing.load_library()")
                        && r.contains("nvidia-cuda-nvrtc-cu12")),
                    "{extra:?}: {reasons:#?}"
                );
                // The wheel's own library is there: never "not found".
                assert!(
                    !reasons.iter().any(|r| r.contains("libthing.so not found")),
                    "{extra:?}: {reasons:#?}"
                );
            }
        }
    }
}

/// A file that needs a library its package loads first, and a CUDA library installed beside it
/// that it finds only because that library's load brought it (its own search path does not
/// reach it): where the first is missing, the import fails on it alone, and doctor says one
/// line, on it; the CUDA library is no cause of its own (installing the first mends both), and
/// the file's record says so.
#[test]
fn what_a_library_loaded_first_brings_is_no_cause_of_its_own() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "brings/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libcore.so'), mode=ctypes.RTLD_GLOBAL)\nfrom . import _ext\n",
        )],
    );
    let jit = site.join("nvidia/nvjitlink/lib");
    fake_lib(
        &jit,
        "libnvJitLink.so.12",
        "libnvJitLink.so.12",
        "nvJitLinkCreate",
    );
    let lib = site.join("brings/lib");
    let core = gcc_shared(
        &lib,
        "libcore.so",
        Some("libcore.so"),
        "int nvJitLinkCreate(void *);\nint core(void) { return nvJitLinkCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", jit.display()),
            "-l:libnvJitLink.so.12",
            "-Wl,-rpath,$ORIGIN/../../nvidia/nvjitlink/lib",
        ],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("brings"),
        "_ext",
        "int core(void);\nint nvJitLinkCreate(void *);",
        "core(); nvJitLinkCreate(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            &format!("-L{}", jit.display()),
            "-l:libcore.so",
            "-l:libnvJitLink.so.12",
        ],
    );
    let real = |python: &std::path::Path| {
        std::process::Command::new(python)
            .args(["-c", "import brings"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    assert!(real(&python).status.success(), "{}", stderr(&real(&python)));
    let (code, v) = doctor_import("brings", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    std::fs::remove_file(&core).unwrap();
    let o = real(&python);
    assert!(
        !o.status.success() && stderr(&o).contains("libcore.so"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("libnvJitLink"), "{}", stderr(&o));
    for extra in [&[][..], &["--static"][..]] {
        let (code, v) = doctor_import_with("brings", &python, extra);
        assert_eq!(code, Some(1), "{extra:?}: {v:#}");
        let reasons = reasons_of(&v);
        let model: Vec<&&str> = reasons
            .iter()
            .filter(|r| !r.starts_with("import brings fails"))
            .collect();
        assert_eq!(model.len(), 1, "{extra:?}: {reasons:#?}");
        assert!(model[0].contains("libcore.so"), "{reasons:#?}");
        assert!(
            !reasons.iter().any(|r| r.contains("libnvJitLink")),
            "{extra:?}: {reasons:#?}"
        );
        let ext = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().contains("brings/_ext"))
            .unwrap();
        let jit_missing = ext["missing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "libnvJitLink.so.12")
            .unwrap_or_else(|| panic!("{ext:#}"));
        assert!(
            jit_missing["fix"]
                .as_str()
                .unwrap()
                .contains("found only with libcore.so"),
            "{jit_missing:#}"
        );
    }
}

/// A library the package loads first whose load it guards (a loader that catches the failure,
/// as RAPIDS' do) and which cannot load here: the import works, and the modules that need it
/// fail when loaded. One line, on the library the preload lacks; installing its wheel is the
/// whole fix where the preload's own search path reaches it (the modules then get the loaded
/// one: no RPATH to add), and what the preload would bring with it is no cause of its own.
/// Checked against a real use.
#[test]
fn a_guarded_preload_that_cannot_load_is_one_cause_and_installing_mends_it() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "guarded/__init__.py",
            "import ctypes, os\ntry:\n    ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libcore.so'), mode=ctypes.RTLD_GLOBAL)\nexcept OSError:\n    pass\n",
        )],
    );
    let jit = site.join("nvidia/nvjitlink/lib");
    let jitlib = fake_lib(
        &jit,
        "libnvJitLink.so.12",
        "libnvJitLink.so.12",
        "nvJitLinkCreate",
    );
    let sparse = site.join("nvidia/cusparse/lib");
    fake_lib(
        &sparse,
        "libcusparse.so.12",
        "libcusparse.so.12",
        "cusparseCreate",
    );
    let lib = site.join("guarded/lib");
    gcc_shared(
        &lib,
        "libcore.so",
        Some("libcore.so"),
        "int nvJitLinkCreate(void *);\nint cusparseCreate(void *);\nint core(void) { return nvJitLinkCreate(0) + cusparseCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", jit.display()),
            &format!("-L{}", sparse.display()),
            "-l:libnvJitLink.so.12",
            "-l:libcusparse.so.12",
            "-Wl,-rpath,$ORIGIN/../../nvidia/nvjitlink/lib:$ORIGIN/../../nvidia/cusparse/lib",
        ],
    );
    // The module needs the preload and the CUDA libraries by name, with no search path to any:
    // it gets the loaded ones.
    install_extension(
        work.path(),
        &python,
        &site.join("guarded"),
        "_ext",
        "int core(void);\nint nvJitLinkCreate(void *);\nint cusparseCreate(void *);",
        "core(); nvJitLinkCreate(0); cusparseCreate(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            &format!("-L{}", jit.display()),
            &format!("-L{}", sparse.display()),
            "-l:libcore.so",
            "-l:libnvJitLink.so.12",
            "-l:libcusparse.so.12",
        ],
    );
    let real = |code: &str| {
        std::process::Command::new(&python)
            .args(["-c", code])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    let used = "import guarded\nfrom guarded import _ext";
    assert!(real(used).status.success(), "{}", stderr(&real(used)));
    let (code, v) = doctor_import("guarded", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    // Without nvJitLink the import still works (the loader catches the failure); the use fails.
    std::fs::remove_file(&jitlib).unwrap();
    assert!(
        real("import guarded").status.success(),
        "{}",
        stderr(&real("import guarded"))
    );
    let o = real(used);
    assert!(
        !o.status.success() && stderr(&o).contains("libcore.so"),
        "{}",
        stderr(&o)
    );
    let (code, v) = doctor_import("guarded", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("will-fail-when-loaded")),
        "{v:#}"
    );
    let reasons = reasons_of(&v);
    assert_eq!(reasons.len(), 1, "one root cause, one line: {reasons:#?}");
    let line = reasons[0];
    assert!(
        line.contains("libnvJitLink.so.12 not found")
            && line.contains("install nvidia-nvjitlink-cu12")
            && line.contains("libcore.so, which its package loads first, looks there"),
        "{line}"
    );
    assert!(
        !line.contains("RPATH"),
        "installing is the whole fix: {line}"
    );
    assert!(!line.contains("libcusparse"), "{line}");
    // Installing it back (the fix said) mends the use.
    fake_lib(
        &jit,
        "libnvJitLink.so.12",
        "libnvJitLink.so.12",
        "nvJitLinkCreate",
    );
    assert!(real(used).status.success(), "{}", stderr(&real(used)));
}

/// What a CUDA library opens at run time is read off the releases the catalog cites; a build
/// whose file does not hold the name opens nothing by it (torch 2.4 vendors a cuSPARSELt that
/// names no NVRTC; cuSPARSELt 0.8 opens `libnvrtc.so.13`). Said where the file holds it, not
/// where it does not.
#[test]
fn a_library_opens_at_run_time_only_the_names_its_file_holds() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    for (case, opens) in [("holds", &["libnvrtc.so.13"][..]), ("lacks", &[][..])] {
        let lib = d.join(case).join("lib");
        fake_lib_opening(
            &lib,
            "libcusparseLt.so.0",
            "libcusparseLt.so.0",
            "cusparseLtInit",
            opens,
        );
        let exe = exe_calling(
            &d.join(case),
            "sparse",
            &lib,
            "libcusparseLt.so.0",
            "cusparseLtInit",
        );
        let (_, v) = doctor_file(&exe);
        let nvrtc = reasons_of(&v).iter().any(|r| {
            r.contains("dlopen(libnvrtc.so.13) from libcusparseLt.so.0 will fail on first use")
        });
        assert_eq!(nvrtc, case == "holds", "{case}: {v:#}");
    }
}

/// A load the Python makes at import only where a condition holds (onnxruntime's build-info
/// module loads `libcudart.so` only where torch imports): where the real import worked and never
/// attempted it, it is no failure of the import, and the model's reading is said corrected;
/// where the condition holds and the load fails, what uses it fails on first use.
#[test]
fn a_load_a_condition_guards_is_judged_by_whether_the_real_import_made_it() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "guarded_load/__init__.py",
            "import ctypes\ntry:\n    import guarded_load_helper\n    ctypes.CDLL('libcudart.so')\nexcept Exception:\n    pass\n",
        )],
    );
    let cudart = |v: &Value| {
        reasons_of(v)
            .iter()
            .any(|r| r.contains("libcudart.so") && r.contains("guarded_load"))
    };
    let (code, v) = doctor_import("guarded_load", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str(), cudart(&v)),
        (Some(0), Some("ok"), false),
        "{v:#}"
    );
    assert!(
        v["disagreements"].as_array().unwrap().iter().any(|d| d
            .as_str()
            .unwrap()
            .contains("the model reads a load of libcudart.so at import, but the real import made no such load")),
        "{v:#}"
    );
    // The condition holds: the import attempts the load, which fails, and goes on.
    std::fs::write(site.join("guarded_load_helper.py"), "").unwrap();
    let (code, v) = doctor_import("guarded_load", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str(), cudart(&v)),
        (Some(0), Some("will-fail-when-loaded"), true),
        "{v:#}"
    );
}

/// An extension module that fails to load during the import while the package catches the error
/// and goes on (implicit's GPU module, whose librmm is another release than it was built against:
/// "undefined symbol"): the real import shows it, and doctor says so, on the module, instead of
/// OK.
#[test]
fn a_module_that_failed_to_load_inside_a_caught_import_is_said() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "skewed/__init__.py",
            "try:\n    from . import _ext\n    HAS_EXT = True\nexcept ImportError:\n    HAS_EXT = False\n",
        )],
    );
    let lib = site.join("skewed/lib");
    let build = work.path().join("build");
    gcc_shared(
        &build,
        "libdep.so",
        Some("libdep.so"),
        "int dep_v2(void) { return 2; }\n",
        &[],
    );
    install_extension(
        work.path(),
        &python,
        &site.join("skewed"),
        "_ext",
        "int dep_v2(void);",
        "dep_v2();",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libdep.so",
            "-Wl,-rpath,$ORIGIN/lib",
        ],
    );
    // The release installed beside it lacks the symbol it was built against.
    gcc_shared(
        &lib,
        "libdep.so",
        Some("libdep.so"),
        "int dep_v1(void) { return 1; }\n",
        &[],
    );
    let o = std::process::Command::new(&python)
        .args(["-c", "import skewed; print(skewed.HAS_EXT)"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(stdout(&o).trim(), "False", "{}", stderr(&o));
    let (code, v) = doctor_import("skewed", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("will-fail-when-loaded")),
        "{v:#}"
    );
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains("skewed/_ext")
            && r.contains("undefined symbol: dep_v2")
            && r.contains("the package caught it")),
        "{reasons:#?}"
    );
    assert_eq!(
        v["imports_run"][0]["extension_failures"][0]["error"]
            .as_str()
            .map(|e| e.contains("undefined symbol: dep_v2")),
        Some(true),
        "{v:#}"
    );
}

/// An executable in `dir` whose `main` calls `symbol` of the library `soname` in `lib`, found
/// through an RPATH to `lib`.
fn exe_calling(
    dir: &std::path::Path,
    name: &str,
    lib: &std::path::Path,
    soname: &str,
    symbol: &str,
) -> std::path::PathBuf {
    gcc(
        dir,
        name,
        &format!("int {symbol}(void *); int main(void) {{ return {symbol}(0); }}\n"),
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            &format!("-l:{soname}"),
            &format!("-Wl,-rpath,{}", lib.display()),
        ],
    )
}

/// `doctor --json` of one file, with no `LD_LIBRARY_PATH`: its exit code and report.
fn doctor_file(file: &std::path::Path) -> (Option<i32>, Value) {
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        file.to_str().unwrap(),
    ]);
    (
        o.status.code(),
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o))),
    )
}

/// An ELF file doctor cannot judge is said for what it is, exit 3: one for another byte order or
/// machine (`inspect` reads it), one cut short; not "no ELF files".
#[test]
fn an_elf_file_for_another_machine_or_cut_short_is_said_as_such() {
    let d = tempfile::tempdir().unwrap();
    let mut big = b"\x7fELF\x02\x02\x01".to_vec();
    big.resize(64, 0);
    big[18..20].copy_from_slice(&21u16.to_be_bytes()); // EM_PPC64, big-endian
    let cut = std::fs::read(fixtures().join("multi.so")).unwrap()[..3000].to_vec();
    for (name, bytes, says) in [
        (
            "big.so",
            big,
            "an ELF file for another machine or byte order",
        ),
        ("cut.so", cut, "cut short, damaged"),
    ] {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = cudist(&["doctor", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.contains(says) && err.contains(name), "{err}");
    }
}

/// A loader that tries each CUDA major's name of a library in turn (cuda-pathfinder: `.so.13`,
/// then `.so.12`) failed once, for the name of the environment's major: one line, naming the
/// wheel of that major (a -cu12 package's loads in a CUDA 12 environment; bbhx-cuda12x through
/// cupy-cuda12x said `nvidia-cublas` for CUDA 13).
#[test]
fn the_names_a_loader_tries_in_turn_are_one_failure_of_the_environment_s_major() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes\n\
                for _v in ('13', '12'):\n    \
                try:\n        ctypes.CDLL('libcublasLt.so.' + _v)\n        break\n    \
                except OSError:\n        pass\n";
    let (python, _) = venv_with(
        &work.path().join("venv"),
        &[
            ("trier/__init__.py", init),
            (
                "trier_cu12-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: trier-cu12\nVersion: 1.0\n",
            ),
            ("trier_cu12-1.0.dist-info/RECORD", "trier/__init__.py,,\n"),
        ],
    );
    let (code, v) = doctor_import("trier", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let lt: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcublasLt"))
        .collect();
    assert_eq!(lt.len(), 1, "one root cause, one line: {reasons:#?}");
    assert!(
        lt[0].contains("the loads of libcublasLt.so.12 and libcublasLt.so.13 failed")
            && lt[0].contains("install nvidia-cublas-cu12"),
        "{reasons:#?}"
    );
}

/// `import a.b` runs `a` first, and `a.b` may import `a`'s own extension modules: a module of
/// the package above that fails for a missing library is judged by the model, with the fix its
/// search path calls for (pennylane_lightning.lightning_tensor imports
/// `pennylane_lightning.lightning_tensor_ops`, whose RPATH already reaches the wheel).
#[test]
fn a_submodule_s_import_of_its_parent_s_extension_is_modelled() {
    let work = tempfile::tempdir().unwrap();
    let sub = "try:\n    from upper._ops import f\nexcept ImportError:\n    f = None\n";
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[("upper/__init__.py", ""), ("upper/sub/__init__.py", sub)],
    );
    let libs = work.path().join("libs");
    fake_lib(
        &libs,
        "libcusparse.so",
        "libcusparse.so.12",
        "cusparseCreate",
    );
    let ext = gcc_shared(
        &libs,
        "ops.so",
        None,
        "int cusparseCreate(void *); int f(void) { return cusparseCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcusparse",
            "-Wl,-rpath,$ORIGIN/../nvidia/cusparse/lib",
            "-Wl,--disable-new-dtags",
        ],
    );
    let name = format!("upper/_ops{}", ext_suffix(&python));
    std::fs::copy(&ext, site.join(name)).unwrap();
    let (code, v) = doctor_import("upper.sub", &python);
    assert_eq!(v["imports_run"][0]["ok"], true, "{v:#}");
    assert_eq!(code, Some(0), "{v:#}");
    let text = v.to_string();
    assert!(
        text.contains("the search path of _ops")
            && text.contains("already reaches nvidia/cusparse/lib"),
        "{v:#}"
    );
    assert!(
        !text.contains("the model of its files had no failure"),
        "the model sees the module: {v:#}"
    );
}

/// A library installed beside the file that needs it, that cannot load here itself: what it
/// lacks is the cause (cudaq's cuQuantum libraries with nvidia-nvjitlink-cu12 removed were
/// "installed, but no search path reaches it"), and where no search of the load tries it, the
/// search path is a fix as well (pyscfad's `_solver` and cuSOLVER).
#[test]
fn an_installed_library_that_cannot_load_names_what_it_lacks() {
    let work = tempfile::tempdir().unwrap();
    let (_, site) = venv_with(&work.path().join("venv"), &[("beside/__init__.py", "")]);
    let libs = work.path().join("libs");
    fake_lib(
        &libs,
        "libnvJitLink.so",
        "libnvJitLink.so.12",
        "nvJitLinkCreate",
    );
    fake_lib(&libs, "libcudart.so", "libcudart.so.12", "cudaMalloc");
    let net = gcc_shared(
        &libs,
        "libcutensornet.so",
        Some("libcutensornet.so.2"),
        "int nvJitLinkCreate(void *); int cutensornetCreate(void *p) { return nvJitLinkCreate(p); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lnvJitLink",
            "-Wl,-rpath,$ORIGIN/../../nvidia/nvjitlink/lib",
        ],
    );
    let lib_dir = site.join("cuquantum/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    std::fs::copy(&net, lib_dir.join("libcutensornet.so.2")).unwrap();
    let rt = site.join("nvidia/cuda_runtime/lib");
    std::fs::create_dir_all(&rt).unwrap();
    std::fs::copy(libs.join("libcudart.so"), rt.join("libcudart.so.12")).unwrap();
    // The extension links cuTensorNet with no search path to it, and the runtime through one.
    let ext = gcc_shared(
        &libs,
        "ext.so",
        None,
        "int cutensornetCreate(void *); int f(void) { return cutensornetCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcutensornet",
            "-lcudart",
            "-Wl,-rpath,$ORIGIN/../nvidia/cuda_runtime/lib",
            "-Wl,--disable-new-dtags",
        ],
    );
    std::fs::copy(&ext, site.join("beside/_ext.so")).unwrap();
    let v = doctor_json(
        &[
            site.join("beside").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        1,
    );
    let text = v.to_string();
    // No search of this load tries that copy: the search path is a fix too, then what it lacks
    // (with nvJitLink installed, the extension would still not find cuTensorNet).
    assert!(
        text.contains(
            "but no search path of _ext.so reaches it (add the RPATH entry $ORIGIN/../cuquantum/lib, which `cudist repair` writes into the wheel), and cannot load here: it lacks libnvJitLink.so.12: install nvidia-nvjitlink-cu12"
        ),
        "{v:#}"
    );
    // Where the file's search reaches it, what it lacks is the whole cause: found, it fails
    // for its own missing library.
    let reaching = gcc_shared(
        &libs,
        "ext2.so",
        None,
        "int cutensornetCreate(void *); int f(void) { return cutensornetCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcutensornet",
            "-Wl,-rpath,$ORIGIN/../cuquantum/lib",
            "-Wl,--disable-new-dtags",
        ],
    );
    std::fs::copy(&reaching, site.join("beside/_ext.so")).unwrap();
    let v = doctor_json(
        &[
            site.join("beside").to_str().unwrap(),
            "--ld-library-path",
            "",
        ],
        1,
    );
    let text = v.to_string();
    assert!(
        text.contains("libnvJitLink.so.12 not found (needed by ")
            && text.contains("install nvidia-nvjitlink-cu12"),
        "{v:#}"
    );
    assert!(
        !text.contains("no search path of _ext.so reaches it"),
        "{v:#}"
    );
}

/// A file its distribution's RECORD lists, missing from the installation (a vendored copy moved
/// aside: brainpylib-cu12x's `libcudart-960a404b.so.12.0.146`): reinstall that distribution.
#[test]
fn a_missing_file_its_distribution_installs_is_reinstalled() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("vend/__init__.py", "from vend import _ext\n"),
            (
                "vend-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: vend\nVersion: 1.0\n",
            ),
            (
                "vend-1.0.dist-info/RECORD",
                "vend/__init__.py,,\nvend.libs/libfoo-1a2b3c4d.so.1,,\n",
            ),
        ],
    );
    let libs = work.path().join("libs");
    fake_lib(&libs, "libfoo-1a2b3c4d.so", "libfoo-1a2b3c4d.so.1", "foo");
    let ext = gcc_shared(
        &libs,
        "ext.so",
        None,
        "int foo(void *); int f(void) { return foo(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libfoo-1a2b3c4d.so",
            "-Wl,-rpath,$ORIGIN/../vend.libs",
            "-Wl,--disable-new-dtags",
        ],
    );
    let name = format!("vend/_ext{}", ext_suffix(&python));
    std::fs::copy(&ext, site.join(name)).unwrap();
    let (code, v) = doctor_import("vend", &python);
    assert_eq!(v["imports_run"][0]["ok"], false, "{v:#}");
    assert_eq!(code, Some(1), "{v:#}");
    assert!(
        v.to_string().contains(
            "vend.libs/libfoo-1a2b3c4d.so.1 is a file vend installs (its RECORD lists it), missing here: reinstall it"
        ),
        "{v:#}"
    );
}

/// A CUDA library of a release before any with wheels is fixed by that CUDA, never by a wheel
/// of a later one that shares its name (`libcufft.so.10` is CUDA 11's too).
#[test]
fn a_cuda_10_library_is_fixed_by_cuda_10() {
    let work = tempfile::tempdir().unwrap();
    let libs = work.path().join("libs");
    fake_lib(&libs, "libcudart.so", "libcudart.so.10.2", "cudaMalloc");
    fake_lib(&libs, "libcufft.so", "libcufft.so.10", "cufftPlan1d");
    let pkg = work.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let ext = gcc_shared(
        &libs,
        "ext.so",
        None,
        "int cufftPlan1d(void *); int f(void) { return cufftPlan1d(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcudart",
            "-lcufft",
        ],
    );
    std::fs::copy(&ext, pkg.join("ext.so")).unwrap();
    let v = doctor_json(&[pkg.to_str().unwrap(), "--ld-library-path", ""], 1);
    let text = v.to_string();
    for so in ["libcudart.so.10.2", "libcufft.so.10"] {
        assert!(
            text.contains(&format!(
                "{so} is {}'s of CUDA 10, older than any release NVIDIA ships as wheels",
                if so.starts_with("libcudart") {
                    "cudart"
                } else {
                    "cufft"
                }
            )),
            "{v:#}"
        );
    }
    assert!(!text.contains("nvidia-cufft-cu11"), "{v:#}");
}

/// A library the package's Python names by putting a word its callers pass into a pattern
/// (transformer-engine's `_load_cuda_library("curand")` globbing `lib{lib_name}*.so.*[0-9]` in
/// the CUDA wheel's directory, raising where nothing matches): loaded at import, every file the
/// pattern matches. Where the wheel that installs it is there but its file is gone, the real
/// import's failure names the library, and the fix is the reinstall (`pip install` of an
/// installed distribution does nothing), for that preload and for a file that links a library
/// of such a wheel.
#[test]
fn a_library_named_from_a_passed_word_is_loaded_and_a_gone_wheel_file_is_reinstalled() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "tepkg/__init__.py",
                "import ctypes, glob, os, sysconfig\n\n\
                 def _from_python(lib_name):\n    \
                     d = os.path.join(sysconfig.get_path('purelib'), 'nvidia', 'cu13')\n    \
                     so_paths = glob.glob(os.path.join(d, f'lib/lib{lib_name}*.so.*[0-9]'))\n    \
                     found = len(so_paths) > 0\n    \
                     handles = []\n    \
                     if found:\n        \
                         for p in so_paths:\n            \
                             handles.append(ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL))\n    \
                     return found, handles\n\n\
                 def _load(lib_name):\n    \
                     found, handles = _from_python(lib_name)\n    \
                     if found:\n        \
                         return handles\n    \
                     raise RuntimeError(f'{lib_name} shared object not found.')\n\n\
                 _load('curand')\n\
                 _core = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libtecore.so'))\n",
            ),
            (
                "tepkg-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: tepkg\nVersion: 1.0\n",
            ),
            (
                "nvidia_curand-10.4.5.25.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvidia-curand\nVersion: 10.4.5.25\n",
            ),
            (
                "nvidia_curand-10.4.5.25.dist-info/RECORD",
                "nvidia/cu13/lib/libcurand.so.10,,\nnvidia_curand-10.4.5.25.dist-info/RECORD,,\n",
            ),
            (
                "nvidia_cuda_runtime-13.0.96.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.0.96\n",
            ),
            (
                "nvidia_cuda_runtime-13.0.96.dist-info/RECORD",
                "nvidia/cu13/lib/libcudart.so.13,,\nnvidia_cuda_runtime-13.0.96.dist-info/RECORD,,\n",
            ),
        ],
    );
    let lib = site.join("nvidia/cu13/lib");
    let curand = fake_lib(
        &lib,
        "libcurand.so.10",
        "libcurand.so.10",
        "curandCreateGenerator",
    );
    let cudart = fake_lib(
        &lib,
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaGetDeviceCount",
    );
    gcc_shared(
        &site.join("tepkg"),
        "libtecore.so",
        Some("libtecore.so"),
        "int cudaGetDeviceCount(void);\nint te_init(void) { return cudaGetDeviceCount(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libcudart.so.13",
            "-Wl,-rpath,$ORIGIN/../nvidia/cu13/lib",
        ],
    );
    let (code, v) = doctor_import("tepkg", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    // The preload is read from the pattern the word makes, and found where the code globs.
    let loads = v["runtime_loads"].as_array().unwrap();
    assert!(
        loads.iter().any(|l| l["soname"] == "libcurand*.so.*[0-9]"
            && l["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("nvidia/cu13/lib/libcurand.so.10"))),
        "{v:#}"
    );

    // Its file gone, the wheel still installed: the import fails on it, and the fix reinstalls.
    std::fs::remove_file(&curand).unwrap();
    let (code, v) = doctor_import("tepkg", &python);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-to-load", "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons[0].contains("RuntimeError: curand shared object not found."),
        "{v:#}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("loads libcurand.so.10 at import")
                && r.contains("pip install --force-reinstall --no-deps nvidia-curand")
                && !r.contains("try … except")),
        "{v:#}"
    );
    fake_lib(
        &lib,
        "libcurand.so.10",
        "libcurand.so.10",
        "curandCreateGenerator",
    );

    // A file that links a library whose wheel's file is gone: the same reinstall, not an
    // install (its search path already reaches the directory).
    std::fs::remove_file(&cudart).unwrap();
    let (code, v) = doctor_import("tepkg", &python);
    assert_eq!(code, Some(1), "{v:#}");
    assert!(
        reasons_of(&v)
            .iter()
            .any(|r| r.contains("libcudart.so.13 not found")),
        "{v:#}"
    );
    let fixes: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["missing"].as_array().into_iter().flatten())
        .filter_map(|m| m["fix"].as_str())
        .collect();
    assert!(
        fixes.iter().any(|f| f
            .contains("nvidia-cuda-runtime is installed, but nvidia/cu13/lib/libcudart.so.13")
            && f.contains("pip install --force-reinstall --no-deps nvidia-cuda-runtime")),
        "{v:#}"
    );
}

/// A package that globs the NVIDIA wheels' directories for the files whose names start with a
/// linker name it lists (moreau-cuda13 0.4.1: `"libcudart.so"` in a list, then
/// `glob.glob(os.path.join(lib_dir, lib_name + "*"))` over `nvidia/*/lib`, each file found loaded
/// by path): it loads `libcudart.so.13` from the wheel, not a linker name no wheel installs. Its
/// extension, with no search path of its own, gets the loaded one; with the wheel's file gone,
/// the reinstall alone is the fix (the glob finds it again). Checked against the real import.
#[test]
fn linker_names_a_package_globs_for_are_the_wheel_files_it_finds() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "globpkg/__init__.py",
                "import ctypes, glob, os, re\n\
                 _SONAME_RE = re.compile(r'^(lib.+?\\.so\\.\\d+)')\n\n\
                 def _preload():\n    \
                     import nvidia\n    \
                     base = os.path.dirname(nvidia.__path__[0])\n    \
                     lib_dirs = glob.glob(os.path.join(base, 'nvidia', '*', 'lib'))\n    \
                     for lib_name in ['libcudart.so']:\n        \
                         by_soname = {}\n        \
                         for lib_dir in lib_dirs:\n            \
                             for so_file in sorted(glob.glob(os.path.join(lib_dir, lib_name + '*'))):\n                \
                                 m = _SONAME_RE.match(os.path.basename(so_file))\n                \
                                 if m:\n                    \
                                     by_soname.setdefault(m.group(1), so_file)\n        \
                         for soname, so_file in by_soname.items():\n            \
                             try:\n                \
                                 ctypes.CDLL(so_file, mode=os.RTLD_GLOBAL)\n            \
                             except OSError:\n                \
                                 pass\n\n\
                 _preload()\n\
                 from ._ext import *\n",
            ),
            (
                "globpkg-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: globpkg\nVersion: 1.0\nRequires-Dist: cuda-toolkit[cudart]==13.*\n",
            ),
            (
                "nvidia_cuda_runtime-13.0.96.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.0.96\n",
            ),
            (
                "nvidia_cuda_runtime-13.0.96.dist-info/RECORD",
                "nvidia/cu13/lib/libcudart.so.13,,\nnvidia_cuda_runtime-13.0.96.dist-info/RECORD,,\n",
            ),
        ],
    );
    let lib = site.join("nvidia/cu13/lib");
    let cudart = fake_lib(
        &lib,
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaGetDeviceCount",
    );
    remove_c_sources(&lib);
    let ext = install_extension(
        work.path(),
        &python,
        &site.join("globpkg"),
        "_ext",
        "int cudaGetDeviceCount(void *);",
        "cudaGetDeviceCount(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libcudart.so.13",
        ],
    );
    assert!(
        !readelf_d(&ext).contains("PATH"),
        "no search path of its own"
    );
    let real_import = || {
        std::process::Command::new(&python)
            .args(["-c", "import globpkg"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    // Healthy: the import works, and doctor agrees, reading the load as the wheel's file.
    let o = real_import();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, v) = doctor_import("globpkg", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    assert_eq!(v["disagreements"], serde_json::json!([]), "{v:#}");
    assert!(
        v["runtime_loads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["soname"] == "libcudart.so*"
                && l["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("nvidia/cu13/lib/libcudart.so.13"))),
        "{v:#}"
    );
    // inspect reads the same of the wheel: preloaded from nvidia-cuda-runtime, declared, OK.
    let w = work
        .path()
        .join("globpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "globpkg",
        &["cuda-toolkit[cudart]==13.*"],
        &[
            (
                "globpkg/__init__.py",
                std::fs::read(site.join("globpkg/__init__.py")).unwrap(),
            ),
            ("globpkg/_ext.so", std::fs::read(&ext).unwrap()),
        ],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    assert!(
        verdict_lines(a).iter().any(|l| l
            == "loads: libcudart.so.13 is preloaded by globpkg/__init__.py:17 from nvidia-cuda-runtime"),
        "{:#?}",
        verdict_lines(a)
    );

    // The wheel's file gone: the import fails on it, and the fix is the reinstall alone.
    std::fs::remove_file(&cudart).unwrap();
    let o = real_import();
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("libcudart.so.13: cannot open shared object file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (code, v) = doctor_import("globpkg", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("libcudart.so.13 not found")
                && r.contains("pip install --force-reinstall --no-deps nvidia-cuda-runtime")),
        "{reasons:#?}"
    );
    assert!(
        !reasons.iter().any(|r| r.contains("RPATH")),
        "the glob finds the reinstalled file: no search path needed: {reasons:#?}"
    );
}

/// A library of a package's own (no extension module) that needs another library of that
/// package by name gets it from the package, which loads that one first: triton's plugins need
/// `libtriton.so`, its extension module. When the real import fails before it reaches that
/// package (fbgemm-gpu-genai with one of torch's CUDA wheels gone), its files stay placed at
/// import, and the plugin's need is still no failure of its own: only the real cause is said.
#[test]
fn a_packages_library_needing_its_module_by_name_is_no_cause_when_the_import_fails_elsewhere() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("front/__init__.py", "from ._ext import *\nimport back\n"),
            (
                "back/__init__.py",
                "import ctypes, os\nfrom ._C import libcore\n\
                 _plugin = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'plugins', 'libplugin.so'))\n",
            ),
        ],
    );
    let libs = work.path().join("libs");
    fake_lib(&libs, "libgone.so.1", "libgone.so.1", "gone_init");
    remove_c_sources(&libs);
    install_extension(
        work.path(),
        &python,
        &site.join("front"),
        "_ext",
        "int gone_init(void *);",
        "gone_init(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libgone.so.1",
        ],
    );
    // back's module, with its SONAME the name its plugin asks for; back loads the plugin by
    // path after importing it.
    let core = install_extension(
        work.path(),
        &python,
        &site.join("back/_C"),
        "libcore",
        "",
        "",
        &["-Wl,-soname,libcore.so"],
    );
    let core_so = site.join("back/_C/libcore.so");
    std::fs::rename(&core, &core_so).unwrap();
    gcc_shared(
        &site.join("back/plugins"),
        "libplugin.so",
        Some("libplugin.so"),
        "void *PyInit_libcore(void);\nvoid *plugin(void) { return PyInit_libcore(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", site.join("back/_C").display()),
            "-l:libcore.so",
        ],
    );
    remove_c_sources(&site.join("back/plugins"));
    // back alone imports: the plugin gets the loaded module.
    let o = std::process::Command::new(&python)
        .args(["-c", "import back"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The real import fails on front's missing library, before back is imported.
    let o = std::process::Command::new(&python)
        .args(["-c", "import front"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("libgone.so.1: cannot open shared object file"),
        "{err}"
    );
    let (code, v) = doctor_import("front", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let plugin = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .ends_with("back/plugins/libplugin.so")
        })
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(plugin["tier"], "import", "{plugin:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r.contains("libgone.so.1 not found")),
        "{reasons:#?}"
    );
    assert!(
        !reasons.iter().any(|r| r.contains("libcore.so not found")),
        "the plugin gets back's loaded module: {reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("needs libcore.so, which its package loads at import")),
        "{reasons:#?}"
    );
}

/// A file loaded on demand that needs a library its package carries, which also loads on
/// demand, and that no search path of its own reaches (triton's plugins need `libtriton.so`,
/// its extension module's SONAME, which the import may leave unloaded): the package loads that
/// one first, and the file gets the loaded one. Checked against a real use.
#[test]
fn a_file_on_demand_that_needs_its_packages_library_on_demand_gets_the_loaded_one() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    let core = fake_lib(&build, "libcore.so", "libcore.so", "core_init");
    let plugin = gcc_shared(
        &build,
        "libplug.so",
        None,
        "int core_init(void);\nint plug(void) { return core_init(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", build.display()),
            "-l:libcore.so",
        ],
    );
    let init = "import ctypes, os\n\
                _here = os.path.dirname(__file__)\n\
                def plugin():\n    ctypes.CDLL(os.path.join(_here, '_C', 'libcore.so'), mode=ctypes.RTLD_GLOBAL)\n    \
                return ctypes.CDLL(os.path.join(_here, 'plugins', 'libplug.so'))\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("plugpkg/__init__.py", init)]);
    for (from, to) in [
        (&core, "plugpkg/_C/libcore.so"),
        (&plugin, "plugpkg/plugins/libplug.so"),
    ] {
        std::fs::create_dir_all(site.join(to).parent().unwrap()).unwrap();
        std::fs::copy(from, site.join(to)).unwrap();
    }
    // Reality: the use works.
    let o = std::process::Command::new(&python)
        .args(["-c", "import plugpkg; plugpkg.plugin(); print('used')"])
        .output()
        .unwrap();
    assert_eq!(stdout(&o).trim(), "used", "{}", stderr(&o));
    let (code, v) = doctor_import("plugpkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        !reasons.iter().any(|r| r.contains("not found")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("libplug.so")
            && r.contains("needs libcore.so, which its package loads on demand, before it")),
        "{reasons:#?}"
    );
}

/// An import that kills the interpreter while a library starts (kedm's Kokkos aborts in its
/// extension module's start-up code without a GPU): the report still says what it was loading
/// and which interpreter ran it, and the verdict is the package's own failure, not a load that
/// failed.
#[test]
fn an_import_that_dies_while_a_library_starts_says_which() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "aborts/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libboom.so'))\n",
        )],
    );
    gcc_shared(
        &site.join("aborts"),
        "libboom.so",
        Some("libboom.so"),
        "#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n",
        &[],
    );
    let (code, v) = doctor_import("aborts", &python);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["verdict"]["status"], "import-fails", "{v:#}");
    let lead = reasons_of(&v)[0].to_string();
    assert!(
        lead.starts_with("import aborts fails: the interpreter died of signal 6 while loading ")
            && lead.contains("aborts/libboom.so (ctypes.dlopen)"),
        "{lead}"
    );
    assert!(v["imports_run"][0]["python_version"].is_string(), "{v:#}");
}

/// An import that fails because a module another distribution installs is gone (a backend
/// wheel's directory moved or deleted: jzfmm imports `jzfmm_cuda`, which jzfmm-cu12 installs):
/// the failure is that broken install, with the reinstall, not an error of the package's own.
#[test]
fn a_module_whose_distributions_files_are_gone_is_reinstalled() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("front/__init__.py", "import front_backend\n"),
            ("front_backend/__init__.py", "VALUE = 1\n"),
            (
                "front_backend_cu12-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: front-backend-cu12\nVersion: 1.0\n",
            ),
            (
                "front_backend_cu12-1.0.dist-info/RECORD",
                "front_backend/__init__.py,,\nfront_backend_cu12-1.0.dist-info/RECORD,,\n",
            ),
        ],
    );
    let (code, v) = doctor_import("front", &python);
    assert_eq!(
        (code, v["verdict"]["status"].as_str()),
        (Some(0), Some("ok")),
        "{v:#}"
    );
    std::fs::rename(site.join("front_backend"), site.join("front_backend.bak")).unwrap();
    let (code, v) = doctor_import("front", &python);
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["verdict"]["status"], "will-fail-to-load", "{v:#}");
    assert!(
        reasons_of(&v).iter().any(|r| r.starts_with(
            "module front_backend, which front-backend-cu12 installs (its RECORD lists 1 file(s) of it), is gone"
        ) && r.contains("pip install --force-reinstall --no-deps front-backend-cu12")),
        "{v:#}"
    );
    assert!(
        !v["disagreements"].to_string().contains("package's own"),
        "{v:#}"
    );
}

/// A package whose Python finds a library in a CUDA wheel and hands its path to a native file
/// through an environment variable the file reads (symmetrix sets `SYMMETRIX_JIT_NVRTC_LIBRARY`
/// for its CUDA backend): the file's own `dlopen` opens what Python found, so it is not a
/// failure where the wheel is installed, and is one where it is not. Checked against a real use.
#[test]
fn a_library_whose_path_python_hands_on_in_a_variable_is_found_where_python_looks() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    let init = "import glob, os, importlib.util\n\
                def _nvrtc():\n    try:\n        spec = importlib.util.find_spec('nvidia.cuda_nvrtc')\n    except ImportError:\n        spec = None\n    \
                for root in (spec.submodule_search_locations if spec else []):\n        \
                found = glob.glob(os.path.join(root, 'lib', 'libnvrtc.so.*'))\n        \
                if found:\n            os.environ['HANDPKG_NVRTC_LIBRARY'] = found[0]\n            return\n\
                def compile():\n    _nvrtc()\n    import ctypes\n    \
                return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libjit.so')).jit()\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("handpkg/__init__.py", init)]);
    gcc_shared(
        &site.join("handpkg"),
        "libjit.so",
        Some("libjit.so"),
        "#include <dlfcn.h>\n#include <stdlib.h>\n\
         int jit(void) { const char *p = getenv(\"HANDPKG_NVRTC_LIBRARY\");\n\
           return dlopen(p ? p : \"libnvrtc.so.12\", RTLD_NOW) ? 0 : 1; }\n",
        &["-ldl"],
    );
    let use_it = |want: &str| {
        let o = std::process::Command::new(&python)
            .args(["-c", "import handpkg; print(handpkg.compile())"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(stdout(&o).trim(), want, "{}", stderr(&o));
    };
    let nvrtc_fails = |v: &serde_json::Value| {
        reasons_of(v)
            .iter()
            .any(|r| r.contains("dlopen(libnvrtc.so.12)") && r.contains("will fail"))
    };
    // Without the wheel, the use fails, and doctor says so.
    use_it("1");
    let (_, v) = doctor_import("handpkg", &python);
    assert!(nvrtc_fails(&v), "{v:#}");
    // The line says the variable the file reads.
    assert!(
        reasons_of(&v).iter().any(|r| r.contains(
            "unless HANDPKG_NVRTC_LIBRARY holds its path: libjit.so reads it, and what it names is what it opens"
        )),
        "{v:#}"
    );
    // With it, Python finds it and the file opens what it found.
    let lib = site.join("nvidia/cuda_nvrtc/lib");
    std::fs::create_dir_all(&lib).unwrap();
    let built = fake_lib(&build, "libnvrtc.so.12", "libnvrtc.so.12", "nvrtcVersion");
    std::fs::copy(built, lib.join("libnvrtc.so.12")).unwrap();
    use_it("0");
    let (code, v) = doctor_import("handpkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert!(!nvrtc_fails(&v), "{v:#}");
    let dlopen = &v["files"][0]["dlopen"][0];
    assert_eq!(dlopen["name"], "libnvrtc.so.12", "{v:#}");
    assert!(
        dlopen["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("nvidia/cuda_nvrtc/lib/libnvrtc.so.12")),
        "{v:#}"
    );
    // inspect reads the variable the file reads, named for the library it opens.
    let i = inspect_json(&[site.join("handpkg/libjit.so").to_str().unwrap()], 0);
    let lazy = &i["artifacts"][0]["elf_files"][0]["lazy_loads"][0];
    assert_eq!(
        lazy["variables"],
        serde_json::json!(["HANDPKG_NVRTC_LIBRARY"]),
        "{i:#}"
    );
    assert!(
        lazy["evidence"]
            .as_str()
            .unwrap()
            .contains("reads HANDPKG_NVRTC_LIBRARY, named for it"),
        "{i:#}"
    );
}

/// A package the import reaches two ways, at module level through a pure-Python package it
/// imports and inside a function of its own (gbgpu imports cupy in a loader function, and
/// gpubackendtools imports it at module level): the real import loads it, so it is said to load
/// at import, not "only when loader() runs".
#[test]
fn a_package_the_real_import_loads_is_not_imported_only_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "front/__init__.py",
                "import middle\ndef loader():\n    import gpulib\n    return gpulib\n",
            ),
            (
                "middle/__init__.py",
                "try:\n    import gpulib\nexcept ImportError:\n    gpulib = None\n",
            ),
            (
                "gpulib/__init__.py",
                "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libgpu.so'))\n",
            ),
        ],
    );
    gcc_shared(
        &site.join("gpulib"),
        "libgpu.so",
        Some("libgpu.so"),
        "int gpu(void) { return 0; }\n",
        &[],
    );
    remove_c_sources(&site.join("gpulib"));
    let (code, v) = doctor_import("front", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let w = v["imported_with"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["package"] == "gpulib")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(w["on_call"].is_null(), "{w:#}");
    assert_eq!(w["at"], "a module its real import ran", "{w:#}");
}

/// A library missing for a library the checked file loads (bipp's extension module loads its
/// carried libcufinufft, which needs cuFFT): the list of missing libraries names the file whose
/// NEEDED entry it is, and the file that loads it.
#[test]
fn a_library_missing_for_a_library_a_file_loads_names_both() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // libinner needs a CUDA library nothing here provides (linked against a stub elsewhere).
    let cufft = fake_lib(
        &d.join("stub"),
        "libcufft.so.11",
        "libcufft.so.11",
        "cufftPlan1d",
    );
    gcc_shared(
        d,
        "libinner.so",
        Some("libinner.so"),
        "int cufftPlan1d(void *);\nint inner(void) { return cufftPlan1d(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", cufft.parent().unwrap().display()),
            "-l:libcufft.so.11",
        ],
    );
    let outer = gcc_shared(
        d,
        "libouter.so",
        Some("libouter.so"),
        "int inner(void);\nint outer(void) { return inner(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", d.display()),
            "-l:libinner.so",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    let o = cudist(&["doctor", "--ld-library-path", "", outer.to_str().unwrap()]);
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("libcufft.so.11 not found, needed by"))
        .unwrap_or_else(|| panic!("{out}\n{}", stderr(&o)));
    assert!(
        line.contains("needed by 1 file(s): ")
            && line.contains("libinner.so, which ")
            && line.ends_with("libouter.so load(s)"),
        "{line}"
    );
}

/// A file that needs only libraries several CUDA majors share (cupy-cuda12x's cuTENSOR module:
/// `libcutensorMg.so.2`), of a package nothing else says the major of: the distribution whose
/// RECORD lists it says it (`…-cuda12x`), and the fix is that major's wheel.
#[test]
fn a_file_of_a_cuda_named_distribution_gets_its_majors_fix() {
    let work = tempfile::tempdir().unwrap();
    let site = work.path().join("lib/python3.11/site-packages");
    let stub = fake_lib(
        &work.path().join("stub"),
        "libcutensorMg.so.2",
        "libcutensorMg.so.2",
        "cutensorMgCreate",
    );
    let module = gcc_shared(
        &site.join("gpuback"),
        "mod.so",
        Some("mod.so"),
        "int cutensorMgCreate(void *);\nint f(void) { return cutensorMgCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcutensorMg.so.2",
        ],
    );
    remove_c_sources(&site.join("gpuback"));
    let dist_info = site.join("gpu_cuda12x-1.0.dist-info");
    std::fs::create_dir_all(&dist_info).unwrap();
    std::fs::write(
        dist_info.join("METADATA"),
        "Metadata-Version: 2.1\nName: gpu-cuda12x\nVersion: 1.0\n",
    )
    .unwrap();
    std::fs::write(
        dist_info.join("RECORD"),
        "gpuback/mod.so,,\ngpu_cuda12x-1.0.dist-info/METADATA,,\ngpu_cuda12x-1.0.dist-info/RECORD,,\n",
    )
    .unwrap();
    let v = doctor_json(&["--ld-library-path", "", module.to_str().unwrap()], 1);
    let fixes = v["files"][0]["missing"].to_string();
    assert!(fixes.contains("install cutensor-cu12"), "{v:#}");
    assert!(!fixes.contains("cutensor-cu13"), "{v:#}");
}

/// An import that fails because a library that something outside the files judged loads cannot
/// be opened, the error naming it (openmmjax: `Error loading library …/libOpenMMJaxCUDA.so:
/// libnvrtc.so.12: cannot open shared object file`, from OpenMM's own plugin loader): the lead
/// carries the fix for the library the error names.
#[test]
fn an_import_failing_on_a_library_the_error_names_gets_its_fix() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[(
            "plugged/__init__.py",
            "import ctypes, glob, os\n\
             _dir = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'plugged_plugins')\n\
             def _load(p):\n    try:\n        return ctypes.CDLL(p)\n    except OSError as e:\n        \
             raise RuntimeError(f'Error loading library {p}: {e}')\n\
             for _p in sorted(glob.glob(os.path.join(_dir, '*'))):\n    _load(_p)\n",
        )],
    );
    let stub = fake_lib(
        &work.path().join("stub"),
        "libcufft.so.11",
        "libcufft.so.11",
        "cufftPlan1d",
    );
    gcc_shared(
        &site.join("plugged_plugins"),
        "libplugin.so",
        Some("libplugin.so"),
        "int cufftPlan1d(void *);\nint plug(void) { return cufftPlan1d(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcufft.so.11",
        ],
    );
    remove_c_sources(&site.join("plugged_plugins"));
    let (code, v) = doctor_import("plugged", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let lead = reasons_of(&v)[0].to_string();
    assert!(
        lead.starts_with("import plugged fails: RuntimeError: Error loading library ")
            && lead.contains("libplugin.so: libcufft.so.11: cannot open shared object file")
            && lead.contains("(fix: install nvidia-cufft-cu12"),
        "{lead}"
    );
}

/// A package whose function looks up its CUDA build with `find_spec` and loads a library from
/// it (bartorch: `find_spec(f"bartorch_cuda{major}")`, then `libbartorch.so` from there): that
/// build's files load when the function runs, so what they lack fails then and is said.
#[test]
fn a_build_a_function_finds_with_find_spec_is_judged_on_first_use() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "findpkg/__init__.py",
                "import ctypes, importlib.util, os\n\
                 def library(major=12):\n    spec = importlib.util.find_spec(f'findpkg_cuda{major}')\n    \
                 return ctypes.CDLL(os.path.join(os.path.dirname(spec.origin), 'libwork.so'))\n",
            ),
            ("findpkg_cuda12/__init__.py", ""),
        ],
    );
    let stub = fake_lib(
        &work.path().join("stub"),
        "libcudart.so.12",
        "libcudart.so.12",
        "cudaMalloc",
    );
    gcc_shared(
        &site.join("findpkg_cuda12"),
        "libwork.so",
        Some("libwork.so"),
        "int cudaMalloc(void *);\nint work(void) { return cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcudart.so.12",
        ],
    );
    remove_c_sources(&site.join("findpkg_cuda12"));
    // Reality: the import works, the use fails for the runtime.
    let o = std::process::Command::new(&python)
        .args(["-c", "import findpkg; findpkg.library()"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(stderr(&o).contains("libcudart.so.12"), "{}", stderr(&o));
    let (code, v) = doctor_import("findpkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert!(
        reasons_of(&v)
            .iter()
            .any(|r| r.contains("findpkg_cuda12/libwork.so")
                && r.contains("libcudart.so.12 not found")),
        "{v:#}"
    );
    let w = v["imported_with"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["package"] == "findpkg_cuda12")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(w["on_call"], "library()", "{w:#}");
}

/// A package whose library was built against another release of a library it links (mslk built
/// against a later torch: `undefined symbol: _ZN3c1013MessageLogger…`), whose own loader hides
/// the loader's error behind its own: the lead says which library defines the nearest symbol, and
/// the distribution that installed it, read from the load the real import made.
#[test]
fn a_module_built_against_another_release_of_a_library_is_named_with_it() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "basepkg/__init__.py",
                "import ctypes, os\n\
                 _lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libbase.so'), mode=ctypes.RTLD_GLOBAL)\n",
            ),
            ("basepkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: basepkg\nVersion: 1.0\n"),
            (
                "basepkg-1.0.dist-info/RECORD",
                "basepkg/__init__.py,,\nbasepkg/libbase.so,,\nbasepkg-1.0.dist-info/RECORD,,\n",
            ),
            (
                "newext/__init__.py",
                "import ctypes, os\nimport basepkg\n\
                 _p = os.path.join(os.path.dirname(__file__), 'libnewext.so')\n\
                 try:\n    ctypes.CDLL(_p)\nexcept OSError:\n    raise OSError(f'Could not load this library: {_p}') from None\n",
            ),
        ],
    );
    // Installed: the first release. Built against: the second, which renamed the entry point.
    gcc_shared(
        &site.join("basepkg"),
        "libbase.so",
        Some("libbase.so"),
        "int base_logger_create_at_line(int l) { return l; }\n",
        &[],
    );
    let newer = gcc_shared(
        &work.path().join("newer"),
        "libbase.so",
        Some("libbase.so"),
        "int base_logger_create_at_location(void *l) { return l == 0; }\n",
        &[],
    );
    gcc_shared(
        &site.join("newext"),
        "libnewext.so",
        Some("libnewext.so"),
        "int base_logger_create_at_location(void *);\nint run(void) { return base_logger_create_at_location(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", newer.parent().unwrap().display()),
            "-l:libbase.so",
            "-Wl,-z,now",
        ],
    );
    remove_c_sources(&site.join("basepkg"));
    remove_c_sources(&site.join("newext"));
    // Reality: the import fails with the package's own message, the loader's hidden.
    let o = std::process::Command::new(&python)
        .args(["-c", "import newext"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("Could not load this library")
            && !err.contains("undefined symbol"),
        "{err}"
    );
    let (code, v) = doctor_import("newext", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let lead = reasons_of(&v)[0].to_string();
    assert!(
        lead.starts_with("import newext fails: OSError: Could not load this library: ")
            && lead.contains("libnewext.so: undefined symbol base_logger_create_at_location: the libbase.so it links (")
            && lead.contains(", from basepkg 1.0) defines base_logger_create_at_line, not it")
            && lead.contains("install the basepkg release libnewext.so was built against"),
        "{lead}"
    );
}

/// A file that links a Python package's libraries, where that package's own library cannot load
/// (torch's libtorch.so without cuBLAS, as a torch extension sees it with nvidia-cublas moved
/// aside): the import of that package fails before it loads the rest (libc10.so), and what it
/// lacks is the one cause, not "nothing here loads it first" beside it.
#[test]
fn a_python_packages_libraries_behind_its_failed_load_are_not_a_second_cause() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "torch/__init__.py",
                "import ctypes, os\n\
                 _lib = os.path.join(os.path.dirname(__file__), 'lib')\n\
                 ctypes.CDLL(os.path.join(_lib, 'libtorch.so'), mode=ctypes.RTLD_GLOBAL)\n\
                 ctypes.CDLL(os.path.join(_lib, 'libc10.so'), mode=ctypes.RTLD_GLOBAL)\n",
            ),
            (
                "opsuser/__init__.py",
                "import ctypes, os\nimport torch\n\
                 _ops = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'torch_ops.so'))\n",
            ),
        ],
    );
    let stub = fake_lib(
        &work.path().join("stub"),
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let lib = site.join("torch/lib");
    fake_lib(&lib, "libc10.so", "libc10.so", "c10");
    gcc_shared(
        &lib,
        "libtorch.so",
        Some("libtorch.so"),
        "int cublasCreate_v2(void *);\nint torch(void *p) { return cublasCreate_v2(p); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcublas.so.12",
        ],
    );
    gcc_shared(
        &site.join("opsuser"),
        "torch_ops.so",
        None,
        "int c10(void *);\nint torch(void *);\nint ops(void) { return c10(0) + torch(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libc10.so",
            "-l:libtorch.so",
        ],
    );
    remove_c_sources(&lib);
    remove_c_sources(&site.join("opsuser"));
    let (code, v) = doctor_import("opsuser", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons[0].starts_with("import opsuser fails: OSError: libcublas.so.12: cannot open"),
        "{reasons:#?}"
    );
    let cublas: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libcublas.so.12 not found"))
        .collect();
    assert_eq!(cublas.len(), 1, "{reasons:#?}");
    assert!(cublas[0].contains("torch_ops.so"), "{reasons:#?}");
    assert!(
        !reasons.iter().any(|r| r.contains("libc10.so")
            && (r.contains("nothing here loads it first") || r.contains("import it first"))),
        "{reasons:#?}"
    );
}

/// An extension module that links a Python package's libraries and is imported without it
/// (tmol-ops-cu12's `_C`, which needs torch's libraries): the fix is to import that package
/// first, unless that package's own library cannot load here (torch's libtorch_cuda.so with
/// nvidia-cublas's file gone): then its import fails too, and what it lacks is said, with its fix.
/// Checked against the real imports.
#[test]
fn importing_a_provider_first_is_no_fix_where_the_provider_cannot_load() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            (
                "torch/__init__.py",
                "import ctypes, os\n\
                 _lib = os.path.join(os.path.dirname(__file__), 'lib')\n\
                 for _n in ('libtorch_cpu.so', 'libtorch_cuda.so'):\n    \
                     ctypes.CDLL(os.path.join(_lib, _n), mode=ctypes.RTLD_GLOBAL)\n",
            ),
            (
                "torch-2.9.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n",
            ),
            (
                "torch-2.9.0.dist-info/RECORD",
                "torch/__init__.py,,\ntorch/lib/libtorch_cpu.so,,\ntorch/lib/libtorch_cuda.so,,\ntorch-2.9.0.dist-info/RECORD,,\n",
            ),
            ("opsnotorch/__init__.py", ""),
        ],
    );
    let stub = work.path().join("stub");
    fake_lib(
        &stub,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let lib = site.join("torch/lib");
    fake_lib(&lib, "libtorch_cpu.so", "libtorch_cpu.so", "torch_cpu");
    gcc_shared(
        &lib,
        "libtorch_cuda.so",
        Some("libtorch_cuda.so"),
        "int cublasCreate_v2(void *);\nint torch_cuda(void *p) { return cublasCreate_v2(p); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.display()),
            "-l:libcublas.so.12",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    remove_c_sources(&lib);
    install_extension(
        work.path(),
        &python,
        &site.join("opsnotorch"),
        "_C",
        "int torch_cpu(void *); int torch_cuda(void *);",
        "torch_cpu(0); torch_cuda(0);",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-l:libtorch_cpu.so",
            "-l:libtorch_cuda.so",
        ],
    );
    // glibc's answers: the module alone lacks torch's libraries; torch itself lacks cuBLAS.
    let run = |code: &str| {
        let o = std::process::Command::new(&python)
            .args(["-c", code])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert!(run("import opsnotorch._C").contains("libtorch_cpu.so: cannot open"));
    assert!(run("import torch; import opsnotorch._C").contains("libcublas.so.12: cannot open"));
    let (code, v) = doctor_import("opsnotorch._C", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(
            |r| r.contains("libtorch_cpu.so, libtorch_cuda.so not found")
                && r.contains(
                    "they come with torch, whose import fails here: its libtorch_cuda.so ("
                )
                && r.contains(") lacks libcublas.so.12 (fix: ")
                && r.contains("nvidia-cublas-cu12")
                && r.ends_with("; then import torch first)")
        ),
        "{reasons:#?}"
    );
    // With cuBLAS where torch's library finds it, importing torch first is the fix.
    std::os::unix::fs::symlink(stub.join("libcublas.so.12"), lib.join("libcublas.so.12")).unwrap();
    assert!(!run("import torch; import opsnotorch._C").contains("Error"));
    let (code, v) = doctor_import("opsnotorch._C", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let reasons = reasons_of(&v);
    assert!(
        reasons.iter().any(|r| r
            .contains("nothing here loads it first (fix: torch is installed: import it first)")),
        "{reasons:#?}"
    );
}

/// A native file that opens a library by its linker name or what a variable named for it says,
/// where its own distribution carries a file of that name (triton's libproton.so opens
/// `libcupti.so` or `TRITON_CUPTI_LIB_PATH`, and triton carries
/// `backends/nvidia/lib/cupti/libcupti.so`, which its Python points the variable at): the
/// package hands over its copy, no failure. Without the copy, the failure stands. Checked
/// against a real use that sets the variable as the package does.
#[test]
fn a_library_the_distribution_carries_for_a_variable_the_file_reads_is_no_failure() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, os\n\
                def profile():\n    here = os.path.dirname(__file__)\n    \
                os.environ.setdefault('CARRYPKG_CUPTI_LIB_PATH', os.path.join(here, 'backends', 'cupti'))\n    \
                return ctypes.CDLL(os.path.join(here, 'libprof.so')).prof()\n";
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("carrypkg/__init__.py", init),
            (
                "carrypkg-1.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: carrypkg\nVersion: 1.0\n",
            ),
            (
                "carrypkg-1.0.dist-info/RECORD",
                "carrypkg/__init__.py,,\ncarrypkg/libprof.so,,\n",
            ),
        ],
    );
    gcc_shared(
        &site.join("carrypkg"),
        "libprof.so",
        Some("libprof.so"),
        "#include <dlfcn.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n\
         const char *cupti_name = \"libcupti.so\";\n\
         int prof(void) { const char *d = getenv(\"CARRYPKG_CUPTI_LIB_PATH\"); char p[4096];\n\
           const char *x = cupti_name;\n\
           if (d) { snprintf(p, sizeof p, \"%s/%s\", d, cupti_name); x = p; }\n\
           return dlopen(x, RTLD_NOW) ? 0 : 1; }\n",
        &["-ldl"],
    );
    remove_c_sources(&site.join("carrypkg"));
    let cupti_fails = |v: &serde_json::Value| {
        reasons_of(v)
            .iter()
            .any(|r| r.contains("dlopen(libcupti.so)") && r.contains("will fail"))
    };
    // Without the carried copy: the use fails, and so does doctor's line.
    let use_it = |want: &str| {
        let o = std::process::Command::new(&python)
            .args(["-c", "import carrypkg; print(carrypkg.profile())"])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(stdout(&o).trim(), want, "{}", stderr(&o));
    };
    use_it("1");
    let (_, v) = doctor_import("carrypkg", &python);
    assert!(cupti_fails(&v), "{v:#}");
    // With it, the use works and doctor says where the file is found.
    fake_lib(
        &site.join("carrypkg/backends/cupti"),
        "libcupti.so",
        "libcupti.so.12",
        "cuptiGetVersion",
    );
    remove_c_sources(&site.join("carrypkg/backends/cupti"));
    std::fs::write(
        site.join("carrypkg-1.0.dist-info/RECORD"),
        "carrypkg/__init__.py,,\ncarrypkg/libprof.so,,\ncarrypkg/backends/cupti/libcupti.so,,\n",
    )
    .unwrap();
    use_it("0");
    let (code, v) = doctor_import("carrypkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    assert!(!cupti_fails(&v), "{v:#}");
    assert!(
        reasons_of(&v).iter().any(|r| r.contains(
            "libprof.so opens libcupti.so where CARRYPKG_CUPTI_LIB_PATH points, and its distribution carries it ("
        ) && r.contains("carrypkg/backends/cupti/libcupti.so)")),
        "{v:#}"
    );
}

/// A plugin directory a package's import loads whole, each load caught (openmm's
/// `loadPluginsFromDirectory`): a platform plugin that cannot load for a library missing here
/// (libOpenCL.so.1) lacks only that, not the core library the import had already loaded, and
/// what that plugin would bring (cuFFT, through its own RPATH) is no cause of its own for the
/// plugins that need both. The core is loaded by a name the code builds, which only the real
/// import shows. Checked against the real import.
#[test]
fn a_plugin_that_cannot_load_lacks_only_what_the_real_import_had_not_loaded() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, glob, os\n\
                _d = os.path.dirname(__file__)\n\
                _core = 'core'\n\
                ctypes.CDLL(os.path.join(_d, 'lib', 'lib' + _core + '.so'), mode=ctypes.RTLD_GLOBAL)\n\
                for _p in sorted(glob.glob(os.path.join(_d, 'lib', 'plugins', '*.so'))):\n    \
                try:\n        ctypes.CDLL(_p, mode=ctypes.RTLD_GLOBAL)\n    except OSError:\n        pass\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("plugpkg/__init__.py", init)]);
    let stub = work.path().join("stub");
    fake_lib(
        &stub,
        "libOpenCL.so.1",
        "libOpenCL.so.1",
        "clGetPlatformIDs",
    );
    let lib = site.join("plugpkg/lib");
    let plugins = lib.join("plugins");
    fake_lib(&lib, "libcore.so", "libcore.so", "core");
    // The platform plugin: links the core (found loaded) and OpenCL, which is not here.
    gcc_shared(
        &plugins,
        "libPlatCL.so",
        Some("libPlatCL.so"),
        "int core(void *);\nint clGetPlatformIDs(void *);\nint plat(void) { return core(0) + clGetPlatformIDs(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            &format!("-L{}", stub.display()),
            "-l:libcore.so",
            "-l:libOpenCL.so.1",
        ],
    );
    // A feature plugin for that platform: links it and the core.
    gcc_shared(
        &plugins,
        "libFeatCL.so",
        Some("libFeatCL.so"),
        "int plat(void);\nint core(void *);\nint feat(void) { return plat() + core(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            &format!("-L{}", plugins.display()),
            "-l:libcore.so",
            "-l:libPlatCL.so",
        ],
    );
    remove_c_sources(&lib);
    remove_c_sources(&plugins);
    let o = std::process::Command::new(&python)
        .args(["-c", "import plugpkg"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, v) = doctor_import("plugpkg", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let reasons = reasons_of(&v);
    let opencl: Vec<&&str> = reasons
        .iter()
        .filter(|r| r.contains("libOpenCL.so.1 not found"))
        .collect();
    assert_eq!(opencl.len(), 1, "{reasons:#?}");
    // The feature plugin's failed load is that same cause, no line of its own.
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
    assert!(
        !reasons
            .iter()
            .any(|r| r.contains("libcore.so, libOpenCL.so.1") || r.contains("libcore.so not found")),
        "{reasons:#?}"
    );
}

/// A library the package loads first from a CUDA wheel by a path it joins (cyborgdb-core's
/// `_load_from_package("nvidia.cusolver", "lib", "libcusolver.so.11")`), whose wheel is installed
/// and the file gone: the fix is the reinstall (installing an installed distribution does
/// nothing), where the package loads it first.
#[test]
fn a_library_loaded_first_whose_wheels_file_is_gone_gets_the_reinstall() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, importlib, os\n\
                def _load(path):\n    try:\n        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)\n    except OSError:\n        pass\n\
                def _load_from_package(package, *rel):\n    try:\n        mod = importlib.import_module(package)\n        \
                path = os.path.join(mod.__path__[0], *rel)\n        if os.path.exists(path):\n            _load(path)\n    except ImportError:\n        pass\n\
                _load_from_package('nvidia.cusolver', 'lib', 'libcusolver.so.11')\n\
                _work = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libwork.so'))\n";
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("joinpkg/__init__.py", init),
            (
                "nvidia_cusolver_cu12-11.7.5.82.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvidia-cusolver-cu12\nVersion: 11.7.5.82\n",
            ),
            (
                "nvidia_cusolver_cu12-11.7.5.82.dist-info/RECORD",
                "nvidia/cusolver/lib/libcusolver.so.11,,\n",
            ),
        ],
    );
    std::fs::create_dir_all(site.join("nvidia/cusolver/lib")).unwrap();
    let stub = fake_lib(
        &work.path().join("stub"),
        "libcusolver.so.11",
        "libcusolver.so.11",
        "cusolverDnCreate",
    );
    gcc_shared(
        &site.join("joinpkg"),
        "libwork.so",
        Some("libwork.so"),
        "int cusolverDnCreate(void *);\nint work(void) { return cusolverDnCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcusolver.so.11",
        ],
    );
    remove_c_sources(&site.join("joinpkg"));
    let (code, v) = doctor_import("joinpkg", &python);
    assert_eq!(code, Some(1), "{v:#}");
    let text = v.to_string();
    assert!(
        text.contains(
            "reinstall it (`pip install --force-reinstall --no-deps nvidia-cusolver-cu12`)"
        ),
        "{v:#}"
    );
    assert!(!text.contains("install nvidia-cusolver-cu12:"), "{v:#}");
}

/// A library that needs a library beside it that it cannot find itself (no search path of its
/// own) loads only after that one, and gets what that one loads with it: OpenMM's CUDA plugins
/// get cuFFT with libOpenMMCUDA.so, through its RUNPATH. With cuFFT's file gone, the fix for
/// every file is the reinstall, no search path of the plugin's own.
#[test]
fn a_library_that_loads_after_its_neighbour_gets_what_that_one_finds() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[
            ("plugpkg/__init__.py", "\"\"\"Plugins.\"\"\"\n"),
            (
                "nvidia_cufft_cu12-11.3.3.83.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: nvidia-cufft-cu12\nVersion: 11.3.3.83\n",
            ),
            (
                "nvidia_cufft_cu12-11.3.3.83.dist-info/RECORD",
                "nvidia/cufft/lib/libcufft.so.11,,\n",
            ),
        ],
    );
    std::fs::create_dir_all(site.join("nvidia/cufft/lib")).unwrap();
    let stub = work.path().join("stub");
    fake_lib(&stub, "libcufft.so.11", "libcufft.so.11", "cufftPlan1d");
    let plugins = site.join("plugpkg/plugins");
    // The neighbour: cuFFT through its RUNPATH. Named to sort after the plugin, whose line the
    // shared cause would otherwise take.
    let core = gcc_shared(
        &plugins,
        "libzcore.so",
        Some("libzcore.so"),
        "int cufftPlan1d(void *);\nint core(void) { return cufftPlan1d(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.display()),
            "-l:libcufft.so.11",
            "-Wl,-rpath,$ORIGIN/../../nvidia/cufft/lib",
            "-Wl,--enable-new-dtags",
        ],
    );
    gcc_shared(
        &plugins,
        "libaplug.so",
        Some("libaplug.so"),
        "int core(void); int cufftPlan1d(void *);\nint plug(void) { return core() + cufftPlan1d(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.display()),
            &format!("-L{}", plugins.display()),
            "-l:libzcore.so",
            "-l:libcufft.so.11",
        ],
    );
    assert!(core.is_file());
    remove_c_sources(&plugins);
    let (_, v) = doctor_import("plugpkg", &python);
    let text = v.to_string();
    assert!(
        text.contains("reinstall it (`pip install --force-reinstall --no-deps nvidia-cufft-cu12`)"),
        "{v:#}"
    );
    assert!(!text.contains("no search path of libaplug.so"), "{v:#}");
}

/// A library the package carries under a file name no search finds (its full version:
/// onnxruntime-ep-nv-tensorrt-rtx-cu13's `libcudart.so.13.4.36`), which nothing loads, gives the
/// files that need its SONAME nothing: they fail for it, with the fix.
#[test]
fn a_carried_copy_nothing_loads_is_no_loaded_library() {
    let work = tempfile::tempdir().unwrap();
    let (python, site) = venv_with(
        &work.path().join("venv"),
        &[("cpkg/__init__.py", "\"\"\"Provider.\"\"\"\n")],
    );
    let pkg = site.join("cpkg");
    let cudart = fake_lib(
        &pkg,
        "libcudart.so.13.4.36",
        "libcudart.so.13",
        "cudaMalloc",
    );
    gcc_shared(
        &pkg,
        "libprov.so",
        Some("libprov.so"),
        "int cudaMalloc(void *);\nint prov(void) { return cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", pkg.display()),
            "-l:libcudart.so.13.4.36",
        ],
    );
    assert!(cudart.is_file());
    remove_c_sources(&pkg);
    let (_, v) = doctor_import("cpkg", &python);
    let text = v.to_string();
    assert!(text.contains("libcudart.so.13 not found"), "{v:#}");
    assert!(text.contains("install nvidia-cuda-runtime"), "{v:#}");
}

/// A file that lacks a library it links gets no second line for a library it links that opens
/// the same one on first use (openmm's CUDA plugins, without NVRTC: libcufft.so.12's dlopen of
/// libnvrtc.so.13 can never run, the plugins do not load).
#[test]
fn a_dlopen_of_a_library_the_file_lacks_is_no_second_cause() {
    let work = tempfile::tempdir().unwrap();
    let libs = work.path().join("libs");
    let stub = work.path().join("stub");
    fake_lib(&stub, "libnvrtc.so.13", "libnvrtc.so.13", "nvrtcVersion");
    // cuFFT 12 (CUDA 13) names NVRTC for dlopen, as the real one does.
    gcc_shared(
        &libs,
        "libcufft.so.12",
        Some("libcufft.so.12"),
        "#include <dlfcn.h>\nstatic const char name[] = \"libnvrtc.so.13\";\n\
         void *cufftPlan1d(void *p) { return p ? dlopen(name, RTLD_NOW) : 0; }\n",
        &["-ldl"],
    );
    let pkg = work.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let ext = gcc_shared(
        &libs,
        "ext.so",
        None,
        "void *cufftPlan1d(void *); int nvrtcVersion(void *);\n\
         int f(void) { return nvrtcVersion(cufftPlan1d(0)); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            &format!("-L{}", stub.display()),
            "-l:libcufft.so.12",
            "-l:libnvrtc.so.13",
            &format!("-Wl,-rpath,{}", libs.display()),
        ],
    );
    std::fs::copy(&ext, pkg.join("ext.so")).unwrap();
    let v = doctor_json(&[pkg.to_str().unwrap(), "--ld-library-path", ""], 1);
    let text = v.to_string();
    assert!(text.contains("libnvrtc.so.13 not found"), "{v:#}");
    assert!(!text.contains("dlopen(libnvrtc.so.13)"), "{v:#}");
}

/// A library a package's load looks for where it is not, which another load of the package the
/// model cannot read finds (onnxruntime-ep-nv-tensorrt-rtx-cu13 tries its own directory, then
/// globs onnxruntime's): the list of what the package loads shows where the real import mapped
/// it, not "not found".
#[test]
fn a_preload_the_real_import_mapped_elsewhere_is_listed_where_it_was_mapped() {
    let work = tempfile::tempdir().unwrap();
    let init = "import ctypes, os\n\
                _here = os.path.dirname(__file__)\n\
                def _find():\n    return os.path.join(_here, 'deps', ''.join(['lib', 'dep.so.1.2']))\n\
                try:\n    ctypes.CDLL(os.path.join(_here, 'libdep.so.1'), mode=ctypes.RTLD_GLOBAL)\n\
                except OSError:\n    ctypes.CDLL(_find(), mode=ctypes.RTLD_GLOBAL)\n";
    let (python, site) = venv_with(&work.path().join("venv"), &[("twoway/__init__.py", init)]);
    let deps = site.join("twoway/deps");
    fake_lib(&deps, "libdep.so.1.2", "libdep.so.1", "dep_init");
    remove_c_sources(&deps);
    let (code, v) = doctor_import("twoway", &python);
    assert_eq!(code, Some(0), "{v:#}");
    let loads = v["runtime_loads"].as_array().unwrap();
    let dep: Vec<&serde_json::Value> = loads
        .iter()
        .filter(|l| l["soname"] == "libdep.so.1")
        .collect();
    assert!(!dep.is_empty(), "{v:#}");
    assert!(
        dep.iter().all(|l| l["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("deps/libdep.so.1.2"))),
        "{v:#}"
    );
}
