//! `cudist toolkit` against real tools: a root assembled from real CUDA 13 and CUDA 12 wheels must
//! let nvcc build with `-cudart shared -lcurand -lcuda`, CMake's FindCUDAToolkit find and link
//! `CUDA::cudart CUDA::curand CUDA::cuda_driver`, and pkg-config give flags that link a C program;
//! the result must load, through the RPATH `cudist repair` gives it, from the runtime wheels.
//! Bad environments are refused with nothing written.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// `cudist toolkit ARGS --json`, expected to succeed.
fn toolkit(args: &[&str]) -> Value {
    let mut all = vec!["toolkit"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = cudist(&all);
    ok(&o, "cudist toolkit");
    serde_json::from_slice(&o.stdout).expect("toolkit --json prints JSON")
}

/// The environment `cudist toolkit env ROOT --json` describes, as (name, value) pairs.
fn env_for(root: &Path) -> Vec<(String, String)> {
    let o = cudist(&["toolkit", "env", root.to_str().unwrap(), "--json"]);
    ok(&o, "cudist toolkit env");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "cudist.toolkit.env/1");
    let mut out = Vec::new();
    for (k, val) in v["set"].as_object().unwrap() {
        out.push((k.clone(), val.as_str().unwrap().to_string()));
    }
    for (k, vals) in v["prepend"].as_object().unwrap() {
        let mut parts: Vec<String> = vals
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        if let Ok(old) = std::env::var(k) {
            parts.push(old);
        }
        out.push((k.clone(), parts.join(":")));
    }
    out
}

fn needed(path: &Path) -> Vec<String> {
    let o = run(Command::new("readelf").arg("-dW").arg(path));
    ok(&o, "readelf");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split_once('[')?.1.trim_end_matches(']').to_string()))
        .collect()
}

const HOST_C: &str = "#include <cuda_runtime_api.h>\n#include <curand.h>\n#include <cuda.h>\n\
    int main(void) { int n = 0; curandGenerator_t g; cuInit(0);\n\
    curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);\n\
    return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1; }\n";

const KERNEL_CU: &str = "#include <curand.h>\n\
    __global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n\
    extern \"C\" int run(float *x) {\n\
      curandGenerator_t g;\n\
      if (curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT) != CURAND_STATUS_SUCCESS) return 1;\n\
      scale<<<1, 32>>>(x, 2.0f);\n\
      return cudaGetLastError() == cudaSuccess ? 0 : 2;\n\
    }\n";

/// Builds `host.c` with pkg-config's flags for `modules` and checks what it needs.
fn pkg_config_links(
    pkgconfig: &Path,
    root_pc_dir: &Path,
    modules: &[&str],
    want: &[&str],
    dir: &Path,
) {
    let o = run(Command::new(pkgconfig)
        .args(["--cflags", "--libs"])
        .args(modules)
        .env("PKG_CONFIG_PATH", root_pc_dir));
    ok(&o, "pkg-config");
    let flags = String::from_utf8_lossy(&o.stdout).to_string();
    std::fs::write(dir.join("host.c"), HOST_C).unwrap();
    let prog = dir.join("host-pc");
    let o = run(Command::new("gcc")
        .arg(dir.join("host.c"))
        .arg("-o")
        .arg(&prog)
        .args(flags.split_whitespace()));
    ok(&o, &format!("gcc with `{}`", flags.trim()));
    let got = needed(&prog);
    for w in want {
        assert!(got.iter().any(|n| n == w), "{w} not in NEEDED {got:?}");
    }
}

#[test]
fn cuda13_root_builds_with_nvcc_cmake_and_pkg_config_and_the_result_loads() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let wheels = tool_from_env("CUDIST_TK_WHEELS13").unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("cuda");
    let python = venv.join("bin/python");
    let r = toolkit(&[
        "--python",
        python.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
    ]);
    assert_eq!(r["schema"], "cudist.toolkit/1");
    assert_eq!(r["cuda"]["major"], 13);
    assert_eq!(r["cuda"]["version"], "13.5.37");
    assert_eq!(r["nvcc"], true);
    assert!(
        r["conflicts"].as_array().unwrap().is_empty(),
        "{:#}",
        r["conflicts"]
    );
    let stub = &r["stub"];
    assert!(stub["symbols"].as_u64().unwrap() > 500, "{stub:#}");
    for (link, target) in [
        ("libcudart.so", "libcudart.so.13"),
        ("libcurand.so", "libcurand.so.10"),
    ] {
        let p = root.join("lib64").join(link);
        assert_eq!(
            std::fs::read_link(&p).unwrap(),
            Path::new(target),
            "{}",
            p.display()
        );
    }
    assert_eq!(
        std::fs::read_link(root.join("lib")).unwrap(),
        Path::new("lib64")
    );
    // version.json in NVIDIA's form, from the wheels' METADATA.
    let vj: Value =
        serde_json::from_slice(&std::fs::read(root.join("version.json")).unwrap()).unwrap();
    assert_eq!(vj["cuda"]["version"], "13.5.37");
    assert_eq!(vj["cuda_cudart"]["version"], "13.5.37");
    assert_eq!(vj["libcurand"]["version"], "10.4.5.25");
    assert_eq!(vj["cuda_cccl"]["version"], "13.3.5.0.6");

    // (a) nvcc -cudart shared … -lcurand: NEEDED holds libcudart.so.13 and libcurand.so.10; -lcuda
    // links against the generated stub and names libcuda.so.1.
    let nvcc = root.join("bin/nvcc");
    std::fs::write(work.path().join("kern.cu"), KERNEL_CU).unwrap();
    let lib = work.path().join("libkern.so");
    let o = run(Command::new(&nvcc)
        .current_dir(work.path())
        .args([
            "-arch=sm_80",
            "-cudart",
            "shared",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "kern.cu",
            "-o",
        ])
        .arg(&lib)
        .arg("-lcurand"));
    ok(&o, "nvcc -cudart shared -lcurand");
    let n = needed(&lib);
    assert!(
        n.contains(&"libcudart.so.13".to_string()) && n.contains(&"libcurand.so.10".to_string()),
        "{n:?}"
    );
    let with_driver = work.path().join("libkern-drv.so");
    let o = run(Command::new(&nvcc)
        .current_dir(work.path())
        .args([
            "-arch=sm_80",
            "-cudart",
            "shared",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "kern.cu",
            "-o",
        ])
        .arg(&with_driver)
        .args(["-lcurand", "-lcuda", "-Xlinker", "--no-as-needed"]));
    ok(&o, "nvcc … -lcuda");
    assert!(needed(&with_driver).contains(&"libcuda.so.1".to_string()));

    // The library loads with ctypes from an environment with the runtime wheels, through the RPATH
    // `cudist repair` gives it (the wheel's Requires-Dist pulls the CUDA wheels in).
    let whl = work.path().join("kernpkg-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &whl,
        "kernpkg",
        &[],
        &[("kernpkg/libkern.so", std::fs::read(&lib).unwrap())],
    );
    let o = cudist(&[
        "repair",
        whl.to_str().unwrap(),
        "-w",
        work.path().join("out").to_str().unwrap(),
        "--json",
    ]);
    ok(&o, "cudist repair");
    let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
    let repaired = rep["wheels"][0]["output"].as_str().unwrap().to_string();
    let site = work.path().join("site");
    let o = run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-index",
            "--find-links",
        ])
        .arg(&wheels)
        .arg("--target")
        .arg(&site)
        .arg(&repaired));
    ok(&o, "pip install the repaired wheel and its CUDA wheels");
    let o = run(Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys\nctypes.CDLL(sys.argv[1])\n\
             maps = open('/proc/self/maps').read()\n\
             for so in ('libcudart.so.13', 'libcurand.so.10'):\n\
             \x20   hits = [l.split()[-1] for l in maps.splitlines() if l.endswith(so)]\n\
             \x20   assert hits and hits[0].startswith(sys.argv[2]), (so, hits)\n\
             print('loaded')",
        ])
        .arg(site.join("kernpkg/libkern.so"))
        .arg(site.join("nvidia/cu13/lib"))
        .env_remove("LD_LIBRARY_PATH"));
    ok(&o, "ctypes load of the repaired library");

    // (b) CMake: find_package(CUDAToolkit), enable_language(CUDA), CUDA::cudart/curand/cuda_driver.
    if let Some(cmake) = tool_from_env("CUDIST_CMAKE") {
        let proj = work.path().join("cmake-proj");
        std::fs::create_dir(&proj).unwrap();
        std::fs::write(proj.join("kern.cu"), KERNEL_CU).unwrap();
        std::fs::write(proj.join("host.c"), HOST_C).unwrap();
        std::fs::write(
            proj.join("CMakeLists.txt"),
            "cmake_minimum_required(VERSION 3.24)\nproject(tk LANGUAGES C CXX)\n\
             find_package(CUDAToolkit REQUIRED)\nenable_language(CUDA)\n\
             add_library(kern SHARED kern.cu)\n\
             target_link_libraries(kern PRIVATE CUDA::cudart CUDA::curand CUDA::cuda_driver)\n\
             add_executable(host host.c)\n\
             target_link_libraries(host PRIVATE CUDA::cudart CUDA::curand CUDA::cuda_driver)\n\
             message(STATUS \"cudist-check ${CUDAToolkit_VERSION} ${CUDAToolkit_BIN_DIR}\")\n",
        )
        .unwrap();
        let build = proj.join("build");
        let mut cfg = Command::new(&cmake);
        cfg.arg("-S")
            .arg(&proj)
            .arg("-B")
            .arg(&build)
            .arg("-DCMAKE_CUDA_ARCHITECTURES=80");
        for (k, v) in env_for(&root) {
            cfg.env(k, v);
        }
        let o = run(&mut cfg);
        ok(&o, "cmake configure");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("cudist-check 13.5.37 {}/bin", root.display())),
            "FindCUDAToolkit did not find the root:\n{out}"
        );
        ok(
            &run(Command::new(&cmake).arg("--build").arg(&build)),
            "cmake --build",
        );
        let n = needed(&build.join("host"));
        for w in ["libcudart.so.13", "libcurand.so.10", "libcuda.so.1"] {
            assert!(n.iter().any(|x| x == w), "host: {w} not in {n:?}");
        }
        let n = needed(&build.join("libkern.so"));
        assert!(n.iter().any(|x| x == "libcurand.so.10"), "libkern: {n:?}");
    }

    // (c) pkg-config --cflags --libs cudart-13.5 (NVIDIA's name) links a C program.
    if let Some(pc) = tool_from_env("CUDIST_PKG_CONFIG") {
        pkg_config_links(
            &pc,
            &root.join("lib64/pkgconfig"),
            &["cudart-13.5", "curand-13.5", "cuda-13.5"],
            &["libcudart.so.13", "libcurand.so.10", "libcuda.so.1"],
            work.path(),
        );
    }
}

#[test]
fn cuda12_root_links_host_code_through_cmake_and_pkg_config_and_says_nvcc_is_missing() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU12") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("cuda12");
    // Read through --site-packages this time.
    let site = site_of(&venv);
    let r = toolkit(&[
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
    ]);
    assert_eq!(r["cuda"]["major"], 12);
    assert_eq!(r["cuda"]["version"], "12.9.79");
    assert_eq!(r["nvcc"], false);
    assert!(r["tools"].as_array().unwrap().iter().any(|t| t == "ptxas"));
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("no nvcc")),
        "{:#}",
        r["notes"]
    );
    // CUDA 12's nvvm lives inside cuda_nvcc and lands in nvvm/lib64, as in NVIDIA's toolkit.
    assert!(root.join("nvvm/lib64/libnvvm.so").exists());
    assert!(root.join("version.txt").is_file());
    // The human report says so too.
    let o = cudist(&[
        "toolkit",
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
        "--force",
    ]);
    ok(&o, "cudist toolkit --force");
    assert!(stdout(&o).contains("no nvcc"), "{}", stdout(&o));

    if let Some(cmake) = tool_from_env("CUDIST_CMAKE") {
        let proj = work.path().join("proj");
        std::fs::create_dir(&proj).unwrap();
        std::fs::write(proj.join("host.c"), HOST_C).unwrap();
        std::fs::write(
            proj.join("CMakeLists.txt"),
            "cmake_minimum_required(VERSION 3.24)\nproject(tk LANGUAGES C)\n\
             find_package(CUDAToolkit REQUIRED)\nadd_executable(host host.c)\n\
             target_link_libraries(host PRIVATE CUDA::cudart CUDA::curand CUDA::cuda_driver)\n\
             message(STATUS \"cudist-check ${CUDAToolkit_VERSION}\")\n",
        )
        .unwrap();
        let build = proj.join("build");
        let o = run(Command::new(&cmake)
            .arg("-S")
            .arg(&proj)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCUDAToolkit_ROOT={}", root.display()))
            .env_remove("CUDA_PATH")
            .env_remove("CUDA_HOME"));
        ok(&o, "cmake configure (CUDA 12, no nvcc)");
        assert!(String::from_utf8_lossy(&o.stdout).contains("cudist-check 12.9.79"));
        ok(
            &run(Command::new(&cmake).arg("--build").arg(&build)),
            "cmake --build",
        );
        let n = needed(&build.join("host"));
        for w in ["libcudart.so.12", "libcurand.so.10", "libcuda.so.1"] {
            assert!(n.iter().any(|x| x == w), "{w} not in {n:?}");
        }
    }
    // How each CMake finds a root without nvcc, as the note says: the variable always, the
    // environment variable from 4.2 on, CUDA_PATH never.
    let cmakes: Vec<(PathBuf, bool)> = [("CUDIST_CMAKE", false), ("CUDIST_CMAKE43", true)]
        .into_iter()
        .filter_map(|(var, env_works)| tool_from_env(var).map(|c| (c, env_works)))
        .collect();
    let proj = work.path().join("find-only");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.24)\nproject(tk LANGUAGES C)\n\
         find_package(CUDAToolkit REQUIRED)\nmessage(STATUS \"cudist-check ${CUDAToolkit_VERSION}\")\n",
    )
    .unwrap();
    for (cmake, env_works) in &cmakes {
        let configure = |how: &str| {
            let build = work.path().join(format!("b-{how}"));
            let _ = std::fs::remove_dir_all(&build);
            let mut c = Command::new(cmake);
            c.arg("-S")
                .arg(&proj)
                .arg("-B")
                .arg(&build)
                .env_remove("CUDA_PATH")
                .env_remove("CUDA_HOME")
                .env_remove("CUDAToolkit_ROOT");
            match how {
                "variable" => {
                    c.arg(format!("-DCUDAToolkit_ROOT={}", root.display()));
                }
                "environment" => {
                    c.env("CUDAToolkit_ROOT", &root);
                }
                _ => {
                    c.env("CUDA_PATH", &root);
                }
            }
            let o = run(&mut c);
            o.status.success()
                && String::from_utf8_lossy(&o.stdout).contains("cudist-check 12.9.79")
        };
        assert!(configure("variable"), "{}", cmake.display());
        assert_eq!(configure("environment"), *env_works, "{}", cmake.display());
        assert!(!configure("cuda_path"), "{}", cmake.display());
    }
    let env_text = stdout(&cudist(&["toolkit", "env", root.to_str().unwrap()]));
    assert!(
        env_text
            .contains("from CMake 4.2 on also through the CUDAToolkit_ROOT environment variable"),
        "{env_text}"
    );
    if let Some(pc) = tool_from_env("CUDIST_PKG_CONFIG") {
        pkg_config_links(
            &pc,
            &root.join("lib64/pkgconfig"),
            &["cudart-12.9", "curand", "cuda"],
            &["libcudart.so.12", "libcurand.so.10", "libcuda.so.1"],
            work.path(),
        );
    }
}

/// Every function cuda.h declares, as gcc sees it after the header's own macros (`-aux-info`),
/// must be exported by the generated stub: a program referencing all of them links with
/// `--no-undefined`, with and without per-thread default streams.
#[test]
fn the_driver_stub_exports_everything_cuda_h_declares() {
    for var in ["CUDIST_TK_CU13", "CUDIST_TK_CU12"] {
        let Some(venv) = tool_from_env(var) else {
            return;
        };
        let work = tempfile::tempdir().unwrap();
        let root = work.path().join("cuda");
        toolkit(&[
            "--python",
            venv.join("bin/python").to_str().unwrap(),
            "--out",
            root.to_str().unwrap(),
        ]);
        for flags in [&[][..], &["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"][..]] {
            let src = work.path().join("decl.c");
            std::fs::write(&src, "#include <cuda.h>\n").unwrap();
            let aux = work.path().join("aux.txt");
            let o = run(Command::new("gcc")
                .arg(format!("-I{}", root.join("include").display()))
                .args(flags)
                .args(["-fsyntax-only", "-aux-info"])
                .arg(&aux)
                .arg(&src));
            ok(&o, "gcc -aux-info cuda.h");
            let text = std::fs::read_to_string(&aux).unwrap();
            let names: Vec<String> = text
                .lines()
                .filter(|l| l.contains("/cuda.h:"))
                .filter_map(|l| {
                    let decl = l.split("*/").nth(1)?;
                    let before = decl.split('(').next()?;
                    let name = before.split_whitespace().last()?.trim_start_matches('*');
                    name.starts_with("cu").then(|| name.to_string())
                })
                .collect();
            assert!(
                names.len() > 400,
                "{var}: only {} declarations read from gcc",
                names.len()
            );
            let mut prog = String::from("#include <cuda.h>\nvoid *refs[] = {\n");
            for n in &names {
                prog.push_str(&format!("  (void *)&{n},\n"));
            }
            prog.push_str("};\nint main(void) { return refs[0] == 0; }\n");
            std::fs::write(work.path().join("all.c"), prog).unwrap();
            let o = run(Command::new("gcc")
                .arg(format!("-I{}", root.join("include").display()))
                .args(flags)
                .arg(work.path().join("all.c"))
                .arg("-o")
                .arg(work.path().join("all"))
                .arg(format!("-L{}", root.join("lib64/stubs").display()))
                .args(["-lcuda", "-Wl,--no-undefined"]));
            ok(
                &o,
                &format!("{var}: linking every cuda.h function {flags:?} against the stub"),
            );
        }
    }
}

#[test]
fn in_place_adds_links_and_stub_inside_the_environment_and_pip_uninstall_removes_them() {
    let Some(wheels) = tool_from_env("CUDIST_TK_WHEELS13") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // A venv of the test's own, with pip: its pip installs and uninstalls there whether or not
    // the python3 on PATH is itself a venv's (a venv's pip refuses to uninstall what lies outside
    // it).
    let venv = work.path().join("venv");
    ok(
        &run(Command::new("python3").args(["-m", "venv"]).arg(&venv)),
        "python3 -m venv",
    );
    let python = venv.join("bin/python");
    let site = site_of(&venv);
    let o = run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-index",
            "--no-deps",
        ])
        .args(
            std::fs::read_dir(&wheels)
                .unwrap()
                .flatten()
                .map(|e| e.path()),
        ));
    ok(&o, "pip install into the test's venv");
    let lib = site.join("nvidia/cu13/lib");
    assert!(!lib.join("libcudart.so").exists());
    let r = toolkit(&["--in-place", "--site-packages", site.to_str().unwrap()]);
    assert_eq!(r["mode"], "in-place");
    let added: Vec<String> = r["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap().to_string())
        .collect();
    for want in ["libcudart.so", "libcurand.so", "stubs/libcuda.so"] {
        assert!(
            added
                .iter()
                .any(|a| a.ends_with(&format!("nvidia/cu13/lib/{want}"))),
            "{want} not in {added:?}"
        );
    }
    assert_eq!(
        std::fs::read_link(lib.join("libcudart.so")).unwrap(),
        Path::new("libcudart.so.13")
    );
    // Again: nothing more to add.
    let again = toolkit(&["--in-place", "--site-packages", site.to_str().unwrap()]);
    assert!(
        again["added"].as_array().unwrap().is_empty(),
        "{:#}",
        again["added"]
    );

    // The environment's own nvcc now builds with -cudart shared -lcurand -lcuda.
    std::fs::write(work.path().join("kern.cu"), KERNEL_CU).unwrap();
    let out = work.path().join("libkern.so");
    let o = run(Command::new(site.join("nvidia/cu13/bin/nvcc"))
        .current_dir(work.path())
        .args([
            "-arch=sm_80",
            "-cudart",
            "shared",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "kern.cu",
            "-o",
        ])
        .arg(&out)
        .args(["-lcurand", "-lcuda", "-Xlinker", "--no-as-needed"]));
    ok(&o, "the environment's nvcc after --in-place");
    let n = needed(&out);
    for w in ["libcudart.so.13", "libcurand.so.10", "libcuda.so.1"] {
        assert!(n.iter().any(|x| x == w), "{w} not in {n:?}");
    }

    // The additions are in RECORD, so pip uninstall takes them away with the package.
    let o = run(Command::new(&python).args([
        "-m",
        "pip",
        "uninstall",
        "--yes",
        "--quiet",
        "--disable-pip-version-check",
        "nvidia-cuda-runtime",
    ]));
    ok(&o, "pip uninstall nvidia-cuda-runtime");
    assert!(std::fs::symlink_metadata(lib.join("libcudart.so")).is_err());
    assert!(!lib.join("stubs/libcuda.so").exists());
    assert!(
        std::fs::symlink_metadata(lib.join("libcurand.so")).is_ok(),
        "curand's link belongs to nvidia-curand"
    );
}

/// A package of a fake site-packages: name, version, files (path, content).
type FakePackage<'a> = (&'a str, &'a str, &'a [(&'a str, &'a [u8])]);

/// A fake site-packages: each package with METADATA and a true RECORD.
fn fake_site(dir: &Path, packages: &[FakePackage]) -> PathBuf {
    let site = dir.join("site");
    for (name, version, files) in packages {
        let di = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        std::fs::create_dir_all(&di).unwrap();
        std::fs::write(
            di.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        )
        .unwrap();
        let mut record = String::new();
        for (rel, data) in *files {
            let p = site.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, data).unwrap();
            record.push_str(&format!(
                "{rel},{},{}\n",
                cudist_wheel::write::record_hash(data),
                data.len()
            ));
        }
        std::fs::write(di.join("RECORD"), record).unwrap();
    }
    site
}

fn refused(args: &[&str], want: &[&str]) -> String {
    let mut all = vec!["toolkit"];
    all.extend_from_slice(args);
    let o = cudist(&all);
    assert!(!o.status.success(), "expected a refusal: {}", stdout(&o));
    let err = stderr(&o);
    for w in want {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
    err
}

#[test]
fn bad_environments_are_refused_and_nothing_is_written() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let out_s = out.to_str().unwrap();

    // No CUDA wheels: the message lists where it looked.
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    refused(
        &["--site-packages", empty.to_str().unwrap(), "--out", out_s],
        &["no CUDA packages", empty.to_str().unwrap(), "pip install"],
    );
    refused(
        &["--python", "/nonexistent/python3", "--out", out_s],
        &["/nonexistent/python3"],
    );
    refused(
        &["--site-packages", "/nonexistent/site", "--out", out_s],
        &["/nonexistent/site", "not a directory"],
    );

    // Two CUDA majors.
    let d = work.path().join("mixed");
    let lib12 = fake_lib(
        work.path(),
        "libcudart.so.12",
        "libcudart.so.12",
        "cudaMalloc",
    );
    let lib12 = std::fs::read(lib12).unwrap();
    let site = fake_site(
        &d,
        &[
            (
                "nvidia-cuda-runtime-cu12",
                "12.9.79",
                &[("nvidia/cuda_runtime/lib/libcudart.so.12", &lib12)],
            ),
            (
                "nvidia-curand",
                "10.4.5.25",
                &[("nvidia/cu13/lib/libcurand.so.10", b"x")],
            ),
        ],
    );
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &[
            "mixes CUDA majors",
            "CUDA 12: nvidia-cuda-runtime-cu12 12.9.79",
            "CUDA 13: nvidia-curand 10.4.5.25",
        ],
    );

    // Compiler and runtime from different releases.
    let d = work.path().join("skew");
    let site = fake_site(
        &d,
        &[
            (
                "nvidia-cuda-nvcc",
                "13.5.37",
                &[("nvidia/cu13/bin/ptxas", b"#!/bin/sh\n")],
            ),
            (
                "nvidia-cuda-runtime",
                "13.0.96",
                &[("nvidia/cu13/include/cuda_runtime.h", b"/* 13.0 */")],
            ),
        ],
    );
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &[
            "disagree on the CUDA release",
            "13.0: nvidia-cuda-runtime 13.0.96",
            "13.5: nvidia-cuda-nvcc 13.5.37",
        ],
    );

    // nvJitLink older than the toolkit.
    let d = work.path().join("jit");
    let site = fake_site(
        &d,
        &[
            (
                "nvidia-cuda-runtime",
                "13.5.37",
                &[("nvidia/cu13/include/cuda_runtime.h", b"/* 13.5 */")],
            ),
            (
                "nvidia-nvjitlink",
                "13.0.88",
                &[("nvidia/cu13/lib/libnvJitLink.so.13", b"x")],
            ),
        ],
    );
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &["nvidia-nvjitlink 13.0.88 is older than the toolkit"],
    );

    // A file the RECORD lists is gone (a broken install).
    let d = work.path().join("dangling");
    let site = fake_site(
        &d,
        &[(
            "nvidia-cuda-runtime",
            "13.5.37",
            &[
                ("nvidia/cu13/include/cuda_runtime.h", b"/* */"),
                ("nvidia/cu13/lib/libcudart.so.13", &lib12),
            ],
        )],
    );
    std::fs::remove_file(site.join("nvidia/cu13/lib/libcudart.so.13")).unwrap();
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &[
            "missing or dangling",
            "libcudart.so.13",
            "nvidia-cuda-runtime 13.5.37",
            "--force-reinstall",
        ],
    );

    // Two packages give one library different content.
    let d = work.path().join("libclash");
    let site = fake_site(
        &d,
        &[
            (
                "nvidia-cuda-runtime-cu12",
                "12.9.79",
                &[("nvidia/cuda_runtime/lib/libcudart.so.12", &lib12)],
            ),
            (
                "nvidia-cuda-nvrtc-cu12",
                "12.9.86",
                &[("nvidia/cuda_nvrtc/lib/libcudart.so.12", b"other")],
            ),
        ],
    );
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &[
            "lib64/libcudart.so.12",
            "nvidia-cuda-nvrtc-cu12",
            "nvidia-cuda-runtime-cu12",
        ],
    );
    assert!(!out.exists(), "a refused run wrote {out_s}");

    // A header in two packages with different content is reported, and the root is written.
    let d = work.path().join("hdrclash");
    let site = fake_site(
        &d,
        &[
            (
                "nvidia-cuda-runtime-cu12",
                "12.9.79",
                &[
                    ("nvidia/cuda_runtime/lib/libcudart.so.12", &lib12),
                    ("nvidia/cuda_runtime/include/common.h", b"/* a */"),
                ],
            ),
            (
                "nvidia-curand-cu12",
                "10.3.10.19",
                &[("nvidia/curand/include/common.h", b"/* b */")],
            ),
        ],
    );
    let r = toolkit(&["--site-packages", site.to_str().unwrap(), "--out", out_s]);
    assert_eq!(
        r["conflicts"][0]["path"], "include/common.h",
        "{:#}",
        r["conflicts"]
    );
    assert_eq!(r["conflicts"][0]["packages"].as_array().unwrap().len(), 2);
    assert!(out.join("lib64/libcudart.so").exists());

    // The output exists: refused without --force; --force replaces a root cudist wrote, but
    // never a directory it did not write.
    refused(
        &["--site-packages", site.to_str().unwrap(), "--out", out_s],
        &["exists", "--force"],
    );
    toolkit(&[
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        out_s,
        "--force",
    ]);
    let mine = work.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("precious.txt"), "keep").unwrap();
    refused(
        &[
            "--site-packages",
            site.to_str().unwrap(),
            "--out",
            mine.to_str().unwrap(),
            "--force",
        ],
        &["not a CUDA root cudist wrote"],
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("precious.txt")).unwrap(),
        "keep"
    );
    // No temporary directories are left beside the outputs.
    let leftovers: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("cudist-tmp") || n.contains("cudist-old"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn copy_mode_makes_a_relocatable_root() {
    let work = tempfile::tempdir().unwrap();
    let lib = fake_lib(
        work.path(),
        "libcurand.so.10",
        "libcurand.so.10",
        "curandCreateGenerator",
    );
    let lib = std::fs::read(lib).unwrap();
    let site = fake_site(
        work.path(),
        &[(
            "nvidia-curand-cu12",
            "10.3.10.19",
            &[
                ("nvidia/curand/lib/libcurand.so.10", &lib),
                (
                    "nvidia/curand/include/curand.h",
                    b"int curandCreateGenerator(void *p);\n",
                ),
            ],
        )],
    );
    let first = work.path().join("first");
    // --dry-run: the same report, nothing written.
    let dry = toolkit(&[
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
        "--copy",
        "--dry-run",
    ]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["libraries"][0]["links"][0], "lib64/libcurand.so");
    assert!(!first.exists());
    let r = toolkit(&[
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
        "--copy",
    ]);
    assert_eq!(r["mode"], "copy");
    assert!(r["stats"]["bytes_copied"].as_u64().unwrap() > 0);
    assert!(
        !std::fs::symlink_metadata(first.join("lib64/libcurand.so.10"))
            .unwrap()
            .is_symlink()
    );
    // Move it, and remove the environment: pkg-config and the linker still work.
    let moved = work.path().join("moved");
    std::fs::rename(&first, &moved).unwrap();
    std::fs::remove_dir_all(&site).unwrap();
    let Some(pc) = tool_from_env("CUDIST_PKG_CONFIG") else {
        return;
    };
    let list = run(Command::new(&pc)
        .arg("--list-all")
        .env("PKG_CONFIG_PATH", moved.join("lib64/pkgconfig")));
    let names = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(names.lines().any(|l| l.starts_with("curand ")), "{names}");
    let o = run(Command::new(&pc)
        .args(["--cflags", "--libs", "curand"])
        .env("PKG_CONFIG_PATH", moved.join("lib64/pkgconfig")));
    ok(&o, "pkg-config curand");
    let flags = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(flags.contains(moved.to_str().unwrap()), "{flags}");
    std::fs::write(
        work.path().join("use.c"),
        "#include <curand.h>\nint main(void) { return curandCreateGenerator(0); }\n",
    )
    .unwrap();
    let o = run(Command::new("gcc")
        .arg(work.path().join("use.c"))
        .arg("-o")
        .arg(work.path().join("use"))
        .args(flags.split_whitespace()));
    ok(&o, "gcc with the moved root's flags");
    assert!(needed(&work.path().join("use")).contains(&"libcurand.so.10".to_string()));
}

#[test]
fn conda_prefix_is_read_from_conda_meta() {
    let work = tempfile::tempdir().unwrap();
    let prefix = work.path().join("env");
    let t = prefix.join("targets/x86_64-linux");
    std::fs::create_dir_all(t.join("lib")).unwrap();
    std::fs::create_dir_all(t.join("include")).unwrap();
    std::fs::create_dir_all(prefix.join("lib")).unwrap();
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    gcc_shared(
        &t.join("lib"),
        "libcudart.so.12.9.79",
        Some("libcudart.so.12"),
        "int cudaMalloc(void **p, unsigned long n) { return 0; }\n",
        &[],
    );
    std::os::unix::fs::symlink(
        "../targets/x86_64-linux/lib/libcudart.so.12.9.79",
        prefix.join("lib/libcudart.so.12"),
    )
    .unwrap();
    std::fs::write(
        t.join("include/cuda_runtime_api.h"),
        "int cudaMalloc(void **p, unsigned long n);\n",
    )
    .unwrap();
    let meta = |name: &str, version: &str, files: &[&str]| {
        let v = serde_json::json!({"name": name, "version": version, "files": files});
        std::fs::write(
            prefix.join(format!("conda-meta/{name}-{version}-0.json")),
            v.to_string(),
        )
        .unwrap();
    };
    meta("cuda-version", "12.9", &[]);
    meta(
        "cuda-cudart",
        "12.9.79",
        &[
            "targets/x86_64-linux/lib/libcudart.so.12.9.79",
            "lib/libcudart.so.12",
            "targets/x86_64-linux/include/cuda_runtime_api.h",
        ],
    );
    meta("zlib", "1.3", &["lib/libz.so.1"]);
    let root = work.path().join("root");
    let r = toolkit(&[
        "--conda-prefix",
        prefix.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
    ]);
    assert_eq!(r["source"]["kind"], "conda");
    assert_eq!(r["cuda"]["major"], 12);
    assert_eq!(r["cuda"]["release"], "12.9");
    assert_eq!(
        r["components"].as_array().unwrap().len(),
        1,
        "zlib is not a CUDA package"
    );
    assert_eq!(
        std::fs::read_link(root.join("lib64/libcudart.so.12")).unwrap(),
        Path::new("libcudart.so.12.9.79")
    );
    assert_eq!(
        std::fs::read_link(root.join("lib64/libcudart.so")).unwrap(),
        Path::new("libcudart.so.12")
    );
    std::fs::write(
        work.path().join("m.c"),
        "#include <cuda_runtime_api.h>\nint main(void) { void *p; return cudaMalloc(&p, 1); }\n",
    )
    .unwrap();
    let o = run(Command::new("gcc")
        .arg(work.path().join("m.c"))
        .arg(format!("-I{}", root.join("include").display()))
        .arg(format!("-L{}", root.join("lib64").display()))
        .arg("-lcudart")
        .arg("-o")
        .arg(work.path().join("m")));
    ok(&o, "gcc -lcudart against the conda-made root");
    assert_eq!(needed(&work.path().join("m"))[0], "libcudart.so.12");
    // Without cuda-version, the cuda-* package versions give the major.
    std::fs::remove_file(prefix.join("conda-meta/cuda-version-12.9-0.json")).unwrap();
    let r = toolkit(&[
        "--conda-prefix",
        prefix.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(r["cuda"]["major"], 12);
    assert_eq!(r["cuda"]["release"], Value::Null);
    // --in-place is for pip environments only.
    refused(
        &["--conda-prefix", prefix.to_str().unwrap(), "--in-place"],
        &["--in-place works on pip environments"],
    );
    refused(
        &[
            "--conda-prefix",
            work.path().to_str().unwrap(),
            "--out",
            work.path().join("x").to_str().unwrap(),
        ],
        &["not a conda prefix"],
    );
}

#[test]
fn env_prints_sh_fish_and_json_for_a_root_and_for_wheel_directories() {
    let work = tempfile::tempdir().unwrap();
    let lib = fake_lib(
        work.path(),
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaMalloc",
    );
    let lib = std::fs::read(lib).unwrap();
    let site = fake_site(
        work.path(),
        &[(
            "nvidia-cuda-runtime",
            "13.5.37",
            &[
                ("nvidia/cu13/lib/libcudart.so.13", &lib),
                ("nvidia/cu13/include/cuda_runtime.h", b"/* */"),
            ],
        )],
    );
    let root = work.path().join("r o o t");
    toolkit(&[
        "--site-packages",
        site.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
    ]);
    let o = cudist(&["toolkit", "env", root.to_str().unwrap()]);
    ok(&o, "toolkit env");
    let sh = stdout(&o);
    // The output is valid sh that sets the variables (paths with spaces are quoted).
    let check = run(Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{sh}\nprintf '%s|%s|%s' \"$CUDA_HOME\" \"$LIBRARY_PATH\" \"$CPATH\""
        ))
        .env_remove("LIBRARY_PATH")
        .env_remove("CPATH"));
    ok(&check, "sh evaluating toolkit env");
    let r = root.display();
    assert_eq!(
        String::from_utf8_lossy(&check.stdout),
        format!("{r}|{r}/lib64|{r}/include")
    );
    let o = cudist(&["toolkit", "env", root.to_str().unwrap(), "--shell", "fish"]);
    assert!(
        stdout(&o).contains(&format!("set -gx CUDA_HOME '{r}'")),
        "{}",
        stdout(&o)
    );
    // The wheel directories themselves: CUDA 13's nvidia/cu13 is a root.
    let o = cudist(&[
        "toolkit",
        "env",
        "--site-packages",
        site.to_str().unwrap(),
        "--json",
    ]);
    ok(&o, "toolkit env (wheel dirs)");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["set"]["CUDA_HOME"],
        site.join("nvidia/cu13").to_str().unwrap()
    );
    refused(
        &["env", work.path().to_str().unwrap()],
        &["not a CUDA root"],
    );
}

/// The scikit-build-core recipe of docs/toolkit.md, as written there: the wheel it builds needs
/// the CUDA wheels' libraries, and after `cudist repair` it loads from them.
#[test]
fn the_scikit_build_core_recipe_in_the_docs_builds_a_wheel_that_loads() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let wheels = tool_from_env("CUDIST_TK_WHEELS13").unwrap();
    let Some(cmake) = tool_from_env("CUDIST_CMAKE") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let proj = work.path().join("mypkg");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(
        proj.join("pyproject.toml"),
        doc_block("docs/toolkit.md", "toml", "# pyproject.toml"),
    )
    .unwrap();
    std::fs::write(
        proj.join("CMakeLists.txt"),
        doc_block("docs/toolkit.md", "cmake", "# CMakeLists.txt"),
    )
    .unwrap();
    std::fs::write(proj.join("kern.cu"), KERNEL_CU).unwrap();
    // cudist, CMake and the venv's Python on PATH, as in a build image.
    let path = format!(
        "{}:{}:{}:/usr/bin:/bin",
        cudist_dir().display(),
        cmake.parent().unwrap().display(),
        venv.join("bin").display()
    );
    let dist = work.path().join("dist");
    let o = run(Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-build-isolation",
            "--no-deps",
            "-w",
        ])
        .arg(&dist)
        .arg(&proj)
        .env("PATH", path)
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH"));
    ok(&o, "pip wheel (scikit-build-core)");
    let whl = std::fs::read_dir(&dist)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    let out = work.path().join("wheelhouse");
    let o = cudist(&[
        "repair",
        whl.to_str().unwrap(),
        "-w",
        out.to_str().unwrap(),
        "--json",
    ]);
    ok(&o, "cudist repair");
    let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &rep["wheels"][0];
    cibuildwheel_recipe(work.path(), &whl, Path::new(w["output"].as_str().unwrap()));
    let requires: Vec<&str> = w["requires_added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        requires
            .iter()
            .any(|r| r.starts_with("nvidia-cuda-runtime>=13")),
        "{requires:?}"
    );
    assert!(
        requires.iter().any(|r| r.starts_with("nvidia-curand>=10")),
        "{requires:?}"
    );
    let site = work.path().join("site");
    let o = run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-index",
            "--find-links",
        ])
        .arg(&wheels)
        .arg("--target")
        .arg(&site)
        .arg(w["output"].as_str().unwrap()));
    ok(&o, "pip install the repaired wheel");
    let lib = std::fs::read_dir(site.join("mypkg"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".so"))
        .expect("the built library");
    let n = needed(&lib);
    assert!(
        n.contains(&"libcudart.so.13".to_string()) && n.contains(&"libcurand.so.10".to_string()),
        "{n:?}"
    );
    let o = run(Command::new("python3")
        .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]).run"])
        .arg(&lib)
        .env_remove("LD_LIBRARY_PATH"));
    ok(&o, "ctypes load of the scikit-build-core library");
}

/// The cibuildwheel recipe of docs/recipes.md, run as cibuildwheel 4.x runs it on Linux
/// (`cibuildwheel/platforms/linux.py`): `before-build` with `sh -c` in the build's virtual
/// environment, then the repair command with `{wheel}` and `{dest_dir}` substituted as they are
/// (cibuildwheel's `prepare_command` does no quoting), with `sh -c` in the same environment. The
/// cudist it installs is the wheel `.ci/run` built (`CUDIST_WHEEL`); the repaired wheel must be
/// the one `cudist repair` made directly (`expected`), byte for byte.
fn cibuildwheel_recipe(work: &Path, built: &Path, expected: &Path) {
    let block = doc_block(
        "docs/recipes.md",
        "sh",
        "# cibuildwheel, as environment variables",
    );
    let var = |name: &str| -> String {
        block
            .lines()
            .find_map(|l| l.strip_prefix(&format!("export {name}=\"")))
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or_else(|| panic!("no {name} in {block}"))
            .to_string()
    };
    let before_build = var("CIBW_BEFORE_BUILD_LINUX");
    let repair = var("CIBW_REPAIR_WHEEL_COMMAND_LINUX");
    // The pyproject.toml form says the same.
    let toml = doc_block("docs/recipes.md", "toml", "[tool.cibuildwheel.linux]");
    assert!(
        toml.contains(&format!("before-build = \"{before_build}\"")),
        "{toml}"
    );
    assert!(
        toml.contains(&format!("repair-wheel-command = \"{repair}\"")),
        "{toml}"
    );

    let venv = work.join("cibw-venv");
    let path = match std::env::var_os("CUDIST_WHEEL").filter(|w| !w.is_empty()) {
        Some(wheel) => {
            let wheel = PathBuf::from(wheel);
            let o = run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
            ok(&o, "python3 -m venv");
            let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
            // `pip install cudist`, with pip pointed at the wheel .ci/run built.
            let o = run(Command::new("sh")
                .args(["-c", &before_build])
                .env("PATH", &path)
                .env("VIRTUAL_ENV", &venv)
                .env("PIP_NO_INDEX", "1")
                .env("PIP_FIND_LINKS", wheel.parent().unwrap())
                .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"));
            ok(&o, "cibuildwheel before-build");
            assert!(
                venv.join("bin/cudist").is_file(),
                "before-build installed no cudist"
            );
            path
        }
        None => {
            // Half a skip: the recipe runs, with the cudist under test instead of the wheel.
            skip("CUDIST_WHEEL is not set (.ci/run sets it): the recipe's repair command runs the cudist under test, not the installed wheel");
            format!("{}:/usr/bin:/bin", cudist_dir().display())
        }
    };
    let dest = work.join("cibw/repaired_wheel");
    std::fs::create_dir_all(&dest).unwrap();
    let command = repair
        .replace("{wheel}", built.to_str().unwrap())
        .replace("{dest_dir}", dest.to_str().unwrap());
    let o = run(Command::new("sh")
        .args(["-c", &command])
        .env("PATH", &path)
        .env("VIRTUAL_ENV", &venv));
    ok(&o, "cibuildwheel repair-wheel-command");
    let out: Vec<PathBuf> = std::fs::read_dir(&dest)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].file_name(), expected.file_name());
    assert!(
        std::fs::read(&out[0]).unwrap() == std::fs::read(expected).unwrap(),
        "the recipe's wheel differs from cudist repair's"
    );
}
