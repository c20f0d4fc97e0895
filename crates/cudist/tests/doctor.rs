//! `cudist doctor PATH` on extensions built here: the verdict, the exit code, the paths tried and
//! the fix for a missing CUDA library, and the rule that found each library.

mod common;
use common::*;

use serde_json::Value;

fn doctor(args: &[&str], code: i32) -> Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let o = cudist(&all);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
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
    let r = doctor(
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
    // LD_LIBRARY_PATH reaches it, and the rule says so.
    let r = doctor(
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
    let r = doctor(
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
    assert!(
        text.contains("_rpath.so") && text.contains("(RPATH)"),
        "{text}"
    );
    // Not installed at all: the fix says what to install.
    std::fs::remove_dir_all(work.path().join("site/nvidia")).unwrap();
    let r = doctor(
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
        let r = doctor(&[ext.to_str().unwrap(), "--ld-library-path", ""], 1);
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
        let o = std::process::Command::new("python3")
            .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])"])
            .arg(&ext)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr)
            .contains("undefined symbol: cusparseSpSV_updateMatrix"));
        // Against the new library, nothing is missing (and ctypes loads it).
        let r = doctor(
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
        let r = doctor(
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
