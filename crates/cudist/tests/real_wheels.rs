//! Real wheels from PyPI (downloaded by scripts/test.sh into `CUDIST_REAL_WHEELS`):
//! `cupy-cuda12x==14.2.0` and `nvidia-cuda-runtime-cu12==12.9.79`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

#[test]
fn cupy_modules_list_like_cuobjdump() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let o = cudist(&["inspect", "--cuobjdump", w.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // Split into per-module listings: "== path" then lines.
    let mut modules: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("== ") {
            modules.push((p.to_string(), String::new()));
        } else {
            let last = modules.last_mut().expect("listing starts with a module");
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    let names: Vec<&str> = modules.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names.len(),
        3,
        "cub, thrust and _generator_api carry device code: {names:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    extract(&w, &names, tmp.path());
    let mut cubins = 0;
    for (path, ours) in &modules {
        let file = tmp.path().join(path);
        let o = Command::new(&cuobjdump)
            .current_dir(file.parent().unwrap())
            .args([
                "--list-elf",
                "--list-ptx",
                file.file_name().unwrap().to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{path}");
        let theirs = String::from_utf8(o.stdout).unwrap();
        assert_eq!(ours, &theirs, "{path}");
        cubins += theirs.lines().filter(|l| l.starts_with("ELF file")).count();
    }
    assert_eq!(cubins, 36);

    // The same on the extracted files directly (mmap path rather than zip path).
    for (path, ours) in &modules {
        let file = tmp.path().join(path);
        let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
            .current_dir(file.parent().unwrap())
            .args([
                "inspect",
                "--cuobjdump",
                file.file_name().unwrap().to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(
            &String::from_utf8(o.stdout).unwrap(),
            ours,
            "{path} on disk"
        );
    }
}

#[test]
fn cupy_report() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    assert_eq!(a["elf_files"].as_array().unwrap().len(), 65);
    for (soname, pip) in [
        ("libcublas.so.12", "nvidia-cublas-cu12"),
        ("libcusolver.so.11", "nvidia-cusolver-cu12"),
        ("libcurand.so.10", "nvidia-curand-cu12"),
        ("libnvrtc.so.12", "nvidia-cuda-nvrtc-cu12"),
    ] {
        let n = needed(a, soname);
        assert_eq!(n["library"]["pip"], pip, "{soname}");
        assert_eq!(
            n["rpath_covers"], false,
            "cupy has no RPATH into the wheels"
        );
        assert_eq!(n["declared_extra"], "ctk", "{soname}");
    }
    assert_eq!(a["verdict"]["status"], "unresolved");
    let statics: Vec<&str> = a["elf_files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["static_cuda"].as_array().unwrap().is_empty())
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(statics.len(), 5, "{statics:?}");
    assert!(statics.contains(&"cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so"));
    assert_eq!(a["device"]["cubins"], 36);
    assert_eq!(a["device"]["ptx"], 3);
    assert_eq!(a["device"]["newest_ptx"]["isa"], "8.8");
    assert!(a["vendored"].as_array().unwrap().is_empty());
}

#[test]
fn real_libcudart_grafted_under_a_hashed_name_is_found() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let rt = find_wheel(&dir, "nvidia_cuda_runtime_cu12-12.9.79");
    let tmp = tempfile::tempdir().unwrap();
    extract(
        &rt,
        &["nvidia/cuda_runtime/lib/libcudart.so.12"],
        tmp.path(),
    );
    let real = tmp.path().join("nvidia/cuda_runtime/lib/libcudart.so.12");
    let hashed = tmp.path().join("libcudart-5ab1c2d3.so.12");
    std::fs::copy(&real, &hashed).unwrap();
    // Rename its SONAME as auditwheel does, with a real patchelf when CI provides one.
    let renamed = match tool_from_env("CUDIST_PATCHELF") {
        Some(patchelf) => {
            let o = Command::new(patchelf)
                .args(["--set-soname", "libcudart-5ab1c2d3.so.12"])
                .arg(&hashed)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            true
        }
        None => false,
    };
    let ext = gcc_shared(
        tmp.path(),
        "ext.so",
        None,
        "int PyInit__ext(void) { return 0; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", tmp.path().display()),
            "-l:libcudart-5ab1c2d3.so.12",
            "-Wl,-rpath,$ORIGIN/../naive.libs",
            "-Wl,--disable-new-dtags",
        ],
    );
    let bytes = std::fs::read(&hashed).unwrap();
    let size = bytes.len() as u64;
    let w = tmp.path().join("naive-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "naive",
        &[],
        &[
            (
                "naive/_ext.cpython-311-x86_64-linux-gnu.so",
                std::fs::read(ext).unwrap(),
            ),
            ("naive.libs/libcudart-5ab1c2d3.so.12", bytes),
        ],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    let v = &a["vendored"][0];
    assert_eq!(v["path"], "naive.libs/libcudart-5ab1c2d3.so.12");
    assert_eq!(v["library"]["id"], "cudart");
    assert_eq!(v["library"]["pip"], "nvidia-cuda-runtime-cu12");
    assert_eq!(v["bytes"], size);
    let ev = v["evidence"].to_string();
    assert!(ev.contains("cudaMalloc"), "content evidence: {ev}");
    if renamed {
        assert!(ev.contains("renamed copy of libcudart.so.12"), "{ev}");
    }
    assert_eq!(a["verdict"]["status"], "bloated");
    assert_eq!(a["breakdown"]["vendored_cuda"], size);
}

#[test]
fn cupy_repair_gives_every_cuda_library_an_rpath_and_a_dependency() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let out = tempfile::tempdir().unwrap();
    let r = repair_json(&w, out.path());
    let wr = &r["wheels"][0];
    assert_eq!(
        wr["patched"].as_array().unwrap().len(),
        9,
        "{:#}",
        wr["patched"]
    );
    assert!(wr["removed"].as_array().unwrap().is_empty());
    let requires: Vec<&str> = wr["requires_added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // cupy declares cuBLAS, cuFFT, … in its optional extra [ctk]: they stay optional. cuTENSOR and
    // NCCL it does not declare at all, and imports their modules only on first use: repair
    // offers them under extras, never demanding more than the original needed (658 MB).
    assert_eq!(
        requires,
        vec![
            "cutensor-cu12>=2,<3; extra == \"cutensor\"",
            "nvidia-nccl-cu12>=2,<3; extra == \"nccl\""
        ],
        "{requires:?}"
    );
    let after = inspect_json(&[wr["output"].as_str().unwrap()], 0);
    let a = &after["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    for n in a["cuda_needed"].as_array().unwrap() {
        assert_eq!(n["rpath_covers"], true, "{n:#}");
        assert_eq!(n["declared"], true, "{n:#}");
    }
    // Untouched members were copied raw: same count, and thrust (no CUDA NEEDED) byte-identical.
    assert_eq!(a["elf_files"].as_array().unwrap().len(), 65);
    let thrust = "cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so";
    let tmp = tempfile::tempdir().unwrap();
    let before_dir = tmp.path().join("before");
    let after_dir = tmp.path().join("after");
    extract(&w, &[thrust], &before_dir);
    extract(
        Path::new(wr["output"].as_str().unwrap()),
        &[thrust],
        &after_dir,
    );
    assert_eq!(
        std::fs::read(before_dir.join(thrust)).unwrap(),
        std::fs::read(after_dir.join(thrust)).unwrap()
    );
}

#[test]
fn repaired_cupy_resolves_every_cuda_library_once_its_dependencies_are_installed() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let Some(deps) = tool_from_env("CUDIST_CUPY_DEPS") else {
        return;
    };
    let Some(venv) = tool_from_env("CUDIST_CUPY_CUDA_VENV") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let work = tempfile::tempdir().unwrap();
    let r = repair_json(&w, &work.path().join("out"));
    let repaired = r["wheels"][0]["output"].as_str().unwrap().to_string();
    // The venv scripts/test.sh made holds the pinned CUDA wheels (tests/data): cuTENSOR and NCCL,
    // which the repaired wheel offers under its extras [cutensor] and [nccl], and the rest, which
    // cupy's optional `[ctk]` extra names (through the cuda-toolkit metapackage, whose exact pins
    // this set does not hold; the wheels are named directly, as a user who installs CUDA
    // separately would). pip installs the repaired wheel with both extras into it, offline, so
    // every requirement it declares must be met by what is there; the wheel is uninstalled after,
    // pass or fail, so the venv serves the next run as it was.
    let python = venv.join("bin/python");
    let pip = |args: &[&str]| {
        Command::new("python3")
            .args(["-m", "pip", "--python"])
            .arg(&python)
            .args(args)
            .args(["--disable-pip-version-check"])
            .output()
            .unwrap()
    };
    let site = String::from_utf8(
        Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['platlib'])",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    struct Uninstall<F: Fn()>(F);
    impl<F: Fn()> Drop for Uninstall<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let clean = || {
        pip(&["uninstall", "--yes", "--quiet", "cupy-cuda12x"]);
        for top in ["cupy", "cupy_backends", "cupyx"] {
            let _ = std::fs::remove_dir_all(Path::new(&site).join(top));
        }
    };
    clean();
    let _uninstall = Uninstall(clean);
    let o = pip(&[
        "install",
        "--quiet",
        "--no-index",
        "--find-links",
        deps.to_str().unwrap(),
        &format!("{repaired}[cutensor,nccl]"),
    ]);
    assert!(
        o.status.success(),
        "pip install: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = pip(&["check"]);
    assert!(
        o.status.success(),
        "pip check: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let ldd = |p: &Path| -> String {
        let o = Command::new("ldd")
            .arg(p)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Every CUDA library of every module resolves into the CUDA wheels (the driver's libcuda.so.1
    // is not on a machine without a GPU driver).
    let mut modules = 0;
    let mut cuda_resolved = 0;
    for top in ["cupy", "cupy_backends", "cupyx"] {
        let find = Command::new("find")
            .arg(Path::new(&site).join(top))
            .args(["-name", "*.so"])
            .output()
            .unwrap();
        for f in String::from_utf8_lossy(&find.stdout).lines() {
            modules += 1;
            let text = ldd(Path::new(f));
            for line in text.lines().filter(|l| l.contains("not found")) {
                assert!(line.contains("libcuda.so.1"), "{f}: {line}");
            }
            cuda_resolved += text
                .lines()
                .filter(|l| {
                    (l.contains("/nvidia/") || l.contains("/cutensor/")) && l.contains("=> ")
                })
                .count();
        }
    }
    assert_eq!(modules, 65);
    assert!(
        cuda_resolved >= 9,
        "{cuda_resolved} CUDA libraries resolved"
    );
    // Control: the unrepaired module, in the same directory, does not find its CUDA library.
    let original = tempfile::tempdir().unwrap();
    let m = "cupy_backends/cuda/libs/cublas.cpython-311-x86_64-linux-gnu.so";
    extract(&w, &[m], original.path());
    let control = Path::new(&site).join("cupy_backends/cuda/libs/control_unrepaired.so");
    std::fs::copy(original.path().join(m), &control).unwrap();
    assert!(
        ldd(&control).contains("libcublas.so.12 => not found"),
        "{}",
        ldd(&control)
    );

    // `cudist doctor` simulates what ldd does: for every module (the control included), every
    // library resolves to the same file, or is "not found" in the same cases, without and with
    // LD_LIBRARY_PATH pointing at the CUDA wheel directories.
    let wheel_dirs: Vec<String> = std::fs::read_dir(Path::new(&site).join("nvidia"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("lib"))
        .filter(|p| p.is_dir())
        .map(|p| p.display().to_string())
        .collect();
    assert!(wheel_dirs.len() >= 5, "{wheel_dirs:?}");
    let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    for lp in [String::new(), wheel_dirs.join(":")] {
        let tops: Vec<String> = ["cupy", "cupy_backends", "cupyx"]
            .iter()
            .map(|t| Path::new(&site).join(t).display().to_string())
            .collect();
        let mut args = vec!["doctor", "--json", "--ld-library-path", lp.as_str()];
        args.extend(tops.iter().map(String::as_str));
        let o = cudist(&args);
        // Without LD_LIBRARY_PATH the unrepaired control cannot find libcublas.so.12 (exit code 1,
        // "will-fail-to-load"); with the wheel directories on it, everything loads.
        let want_code = if lp.is_empty() { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(want_code), "{}", stderr(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let files = report["files"].as_array().unwrap();
        assert_eq!(files.len(), 66, "65 modules and the control");
        let mut compared = 0;
        for f in files {
            let path = f["path"].as_str().unwrap();
            // Every CUDA symbol cupy imports is defined by the CUDA wheel library it loads.
            assert_eq!(f["missing_symbols"], serde_json::json!([]), "{path}");
            let mut sim = std::collections::BTreeMap::new();
            for r in f["resolutions"].as_array().unwrap() {
                sim.entry(r["name"].as_str().unwrap().to_string())
                    .or_insert_with(|| r["path"].as_str().map(canon));
            }
            let mut cmd = Command::new("ldd");
            cmd.arg(path).env_remove("LD_LIBRARY_PATH");
            if !lp.is_empty() {
                cmd.env("LD_LIBRARY_PATH", &lp);
            }
            let text = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
            for line in text.lines() {
                let Some((name, rest)) = line.trim().split_once(" => ") else {
                    continue;
                };
                let want = if rest.starts_with("not found") {
                    None
                } else {
                    Some(canon(
                        rest.rsplit_once(" (").map(|(p, _)| p).unwrap_or(rest),
                    ))
                };
                assert_eq!(
                    sim.get(name),
                    Some(&want),
                    "{path}: {name} with LD_LIBRARY_PATH={lp:?}: ldd says {want:?}"
                );
                compared += 1;
            }
        }
        assert!(compared >= 200, "only {compared} resolutions compared");
    }

    // cupy's own loader: its library modules carry no RPATH of their own (here: the unrepaired
    // originals put back), and cupy loads each CUDA library with cuda-pathfinder before importing
    // the module that links it. Doctor models that from the catalog; the real import is the oracle:
    // a module imports exactly when doctor finds all it needs, and loads the files doctor names.
    let libs = [
        "cublas", "cusolver", "cusparse", "curand", "nccl", "cutensor",
    ];
    let members: Vec<String> = libs
        .iter()
        .map(|l| format!("cupy_backends/cuda/libs/{l}.cpython-311-x86_64-linux-gnu.so"))
        .collect();
    let refs: Vec<&str> = members.iter().map(String::as_str).collect();
    let originals = tempfile::tempdir().unwrap();
    extract(&w, &refs, originals.path());
    for m in &members {
        std::fs::copy(originals.path().join(m), Path::new(&site).join(m)).unwrap();
    }
    let (_, report) = doctor_import("cupy_backends", &python);
    let loads = report["runtime_loads"].as_array().unwrap();
    assert!(
        loads
            .iter()
            .all(|l| l["package"] == "cupy-cuda12x" && l["found_by"] == "site-packages"),
        "{loads:#?}"
    );
    let mut agreed = 0;
    for (lib, member) in libs.iter().zip(&members) {
        let path = Path::new(&site).join(member);
        let f = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| Path::new(f["path"].as_str().unwrap()) == path)
            .unwrap_or_else(|| panic!("{member} not in the report"));
        let doctor_ok = f["missing"].as_array().unwrap().is_empty();
        let real = Command::new(&python)
            .args([
                "-c",
                &format!(
                    "from cupy_backends.cuda.libs import {lib}\n\
                     import re\n\
                     print('\\n'.join(sorted(set(re.findall(r'/\\S+\\.so[.0-9]*', open('/proc/self/maps').read())))))"
                ),
            ])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_eq!(
            real.status.success(),
            doctor_ok,
            "{lib}: python says {}, doctor says {:#}",
            String::from_utf8_lossy(&real.stderr),
            f["missing"]
        );
        if doctor_ok {
            let mapped: Vec<PathBuf> = String::from_utf8_lossy(&real.stdout)
                .lines()
                .filter_map(|l| std::fs::canonicalize(l).ok())
                .collect();
            // The module's own libraries (doctor preloads all that cupy loads, for every module;
            // python here imported just this one).
            for r in f["resolutions"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| Path::new(r["needed_by"].as_str().unwrap()) == path)
            {
                let Some(p) = r["path"].as_str() else {
                    continue;
                };
                let p = std::fs::canonicalize(p).unwrap();
                if p.to_string_lossy().contains("site-packages") {
                    assert!(
                        mapped.contains(&p),
                        "{lib}: doctor says {} is loaded, python did not map it",
                        p.display()
                    );
                }
            }
        }
        agreed += 1;
    }
    assert_eq!(agreed, libs.len());
}

/// cupy's thrust module links the CUDA 12 runtime statically (nvcc's default): no libcudart loads,
/// yet the driver must still be at CUDA 12's floor. doctor finds the runtime in the file and the
/// release in its PTX (ISA 8.8: CUDA 12.9), and judges a profile's driver against it.
#[test]
fn a_statically_linked_runtime_still_needs_its_driver() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let tmp = tempfile::tempdir().unwrap();
    let thrust = "cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so";
    extract(&w, &[thrust], tmp.path());
    let file = tmp.path().join(thrust);
    for (driver, fails) in [
        ("520.61.05", true),
        ("525.60.13", false),
        ("580.65.06", false),
    ] {
        let host = write_profile(
            &tmp.path().join(format!("{driver}.json")),
            &serde_json::json!({"name": driver, "driver": driver, "gpus": []}),
        );
        let (code, v) = doctor_on_profile(&host, &file);
        let problems = v["files"][0]["driver_problems"].as_array().unwrap();
        assert_eq!(!problems.is_empty(), fails, "{driver}: {problems:?}");
        if fails {
            let p = problems[0].as_str().unwrap();
            assert!(
                p.contains("525.60.13") && p.contains("linked into the file"),
                "{p}"
            );
            assert!(p.contains("ISA 8.8, is CUDA 12.9"), "{p}");
            assert_eq!(code, Some(1));
        }
    }
}

/// Packages that load their libraries themselves (issue 20), read from their real wheels: what
/// the import really does was checked in venvs by scripts/real-packages.sh (docs/real-packages.md).
#[test]
fn packages_that_load_their_own_libraries() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    // rmm: its extensions need librmm.so and librapids_logger.so, from RAPIDS' C++ wheels; its
    // __init__ calls librmm.load_library(), which loads rapids-logger's library first. rmm
    // declares librmm-cu12, which requires rapids-logger.
    let w = find_wheel(&dir, "rmm_cu12-26.10.0");
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    let rmm = needed(a, "librmm.so");
    assert_eq!(rmm["library"]["pip"], "librmm-cu12");
    assert_eq!(rmm["preload"]["name"], "librmm.load_library()");
    assert_eq!(rmm["preload"]["mechanism"], "package-loader");
    assert_eq!(rmm["preload"]["loaded_at"], "rmm/__init__.py:12");
    assert_eq!(rmm["preload"]["at_import"], true);
    let logger = needed(a, "librapids_logger.so");
    assert_eq!(logger["declared_by"], "librmm-cu12 → rapids-logger");
    assert_eq!(logger["preload"]["name"], "librmm.load_library()");
    // The platform as the wheel's own tag has it (built by auditwheel with those excluded).
    assert_eq!(a["platform"]["policy"], "manylinux_2_24");

    // librmm itself: librmm.so is loaded on demand, by its load_library(), which loads
    // librapids_logger.so first.
    let w = find_wheel(&dir, "librmm_cu12-26.10.0");
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    assert!(
        verdict_lines(a).iter().any(|l| l.starts_with(
            "loads: librapids_logger.so is loaded by rapids_logger.load_library() at librmm/load.py:43 when load_library() runs, with librmm.so"
        )),
        "{:#?}",
        verdict_lines(a)
    );

    // faiss: preloads cudart and cuBLAS from NVIDIA's wheels at import, by the names in its JSON.
    let w = find_wheel(&dir, "faiss_gpu_cu12-1.14.1.post1");
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    let cudart = needed(a, "libcudart.so.12");
    assert_eq!(
        cudart["preload"]["named_at"],
        "faiss/_preload_library.json:6"
    );
    assert_eq!(cudart["preload"]["loaded_at"], "faiss/loader.py:47");
    assert_eq!(cudart["declared_by"], "nvidia-cuda-runtime-cu12");
    // Repaired: its 64 MB libfaiss (already rewritten once by auditwheel's patchelf) needs a
    // layout change for the new search path: its 600 KB dynamic string table, with the new path,
    // goes to a segment appended at the end (the rewriter, before, moved every dynamic table:
    // 1.7 MB); the growth is reported.
    let out = tempfile::tempdir().unwrap();
    let r = repair_json(&w, out.path());
    let lib = r["wheels"][0]["patched"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str().unwrap().contains("libfaiss-"))
        .expect("libfaiss patched")
        .clone();
    let grew = lib["size_after"].as_u64().unwrap() - lib["size_before"].as_u64().unwrap();
    assert!(
        lib["in_place"] == false && grew > 600 << 10 && grew < 700 << 10,
        "{lib:#}"
    );

    // bitsandbytes: one library per CUDA release, each judged alone; repair requires none.
    let w = find_wheel(&dir, "bitsandbytes-0.50.2");
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    let cudas: Vec<&str> = a["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["cuda"].as_str().unwrap())
        .collect();
    assert_eq!(
        cudas,
        ["11.8", "12.1", "12.4", "12.6", "12.8", "13.0", "13.2"]
    );
    let out = tempfile::tempdir().unwrap();
    let r = repair_json(&w, out.path());
    let wr = &r["wheels"][0];
    assert_eq!(wr["variants"].as_array().map(Vec::len), Some(7), "{wr:#}");
    assert!(
        wr["requires_added"].as_array().is_none_or(|a| a.is_empty()),
        "{:#}",
        wr["requires_added"]
    );
    // Its ROCm and XPU builds need ROCm's and oneAPI's libraries: left to those stacks, not
    // grafted and not "unhandled", so the tag is the one the symbol versions allow, which is
    // auditwheel's "constrains the platform tag to" for the original. Its tagger left libgomp
    // to the system (the wheel is manylinux already): it stays out, nothing is grafted.
    assert_eq!(
        wr["unhandled"],
        serde_json::json!(["libgomp.so.1"]),
        "{:#}",
        wr["unhandled"]
    );
    assert!(wr["grafted"].as_array().unwrap().is_empty(), "{wr:#}");
    let vendors: Vec<&str> = wr["vendor_runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vendor"].as_str().unwrap())
        .collect();
    assert_eq!(vendors, ["AMD ROCm", "Intel oneAPI"]);
    let tag = wr["platform"]["tags"].as_array().unwrap().last().unwrap();
    if let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") {
        let (_, constrained) = auditwheel_tag(&auditwheel, &w);
        assert_eq!(tag.as_str(), constrained.as_deref(), "{wr:#}");
    }
}

/// README.md's inspect example is cudist's real output on cupy-cuda12x 14.2.0: every line it
/// shows (`…` marks lines left out) is a line of the real report, in the same order.
#[test]
fn the_readme_example_is_real_output() {
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let start = "$ cudist inspect cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl\n";
    let at = readme.find(start).expect("the example in README.md") + start.len();
    let block = &readme[at..at + readme[at..].find("```").unwrap()];
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .arg("inspect")
        .arg(w.file_name().unwrap())
        .current_dir(w.parent().unwrap())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let real = String::from_utf8(o.stdout).unwrap();
    let mut lines = real.lines();
    let mut shown = 0;
    for want in block.lines().filter(|l| l.trim() != "…") {
        assert!(
            lines.any(|l| l.trim_end() == want.trim_end()),
            "README.md shows a line cudist does not print (in this order):\n{want}\n\nreal output:\n{real}"
        );
        shown += 1;
    }
    assert!(shown > 20, "{shown} lines");
}
