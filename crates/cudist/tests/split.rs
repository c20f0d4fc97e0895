//! `cudist split` on real CUDA wheels: every file is placed where conda-forge and Nixpkgs put it
//! (per-file assertions for cudart, nvrtc and its builtins, curand, nvcc, cccl), pins follow the
//! SONAMEs, licenses go with every output, and the `dirs` outputs of one component, merged into a
//! prefix, link a C program (`-lcudart`) that `ldd` resolves.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn placed<'a>(m: &'a Value, path: &str) -> Vec<(&'a str, &'a str)> {
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == path)
        .map(|f| {
            (
                f["component"].as_str().unwrap(),
                f["output"].as_str().unwrap(),
            )
        })
        .collect()
}

/// A component's run_exports, conda-forge style.
fn conda_pins(c: &Value) -> Vec<&str> {
    c["run_exports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["conda"].as_str().unwrap())
        .collect()
}

fn component<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == name)
        .unwrap_or_else(|| panic!("no component {name}"))
}

/// Runs `cudist split INPUT -o OUT ARGS… --json`, requires success, and returns the manifest.
fn split_json(input: &Path, out: &Path, args: &[&str]) -> Value {
    let mut all = vec![
        "split",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    all.push("--json");
    let o = cudist(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_unique_destinations(&m);
    m
}

/// The property every split holds, whatever its input: no two rows install the same path. A
/// license goes with every output of its component (once per output); every other path is placed
/// once in the whole split.
fn assert_unique_destinations(m: &Value) {
    let mut seen = std::collections::BTreeSet::new();
    for f in m["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        let key = if path.starts_with("share/licenses/") {
            format!("{path} in {}-{}", f["component"], f["output"])
        } else {
            path.to_string()
        };
        assert!(seen.insert(key.clone()), "{key} is placed twice");
    }
    assert!(!seen.is_empty());
}

/// Copies the given component-output directories of a `dirs` split into one prefix, as a package
/// manager merges the outputs a build needs.
fn merge(out: &Path, outputs: &[&str], prefix: &Path) {
    std::fs::create_dir_all(prefix).unwrap();
    for o in outputs {
        let st = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", out.join(o).display()))
            .arg(prefix)
            .status()
            .unwrap();
        assert!(st.success(), "cp {o}");
    }
}

/// Compiles `source` against `prefix` (`include/`, `-lcudart` from `prefix/libdir`, RPATH there)
/// and checks that `ldd` resolves `soname` to that directory and finds everything.
fn link_cudart(dir: &Path, prefix: &Path, libdir: &str, soname: &str, source: &str) -> PathBuf {
    link_in_prefix(dir, prefix, libdir, &[("cudart", soname)], source)
}

/// Compiles `source` against `prefix` (`include/`, each `-lNAME` from `prefix/libdir`, RPATH
/// there) and checks that `ldd` resolves each SONAME to that directory and finds everything.
fn link_in_prefix(
    dir: &Path,
    prefix: &Path,
    libdir: &str,
    libs: &[(&str, &str)],
    source: &str,
) -> PathBuf {
    let lib = prefix.join(libdir);
    let mut args = vec![
        format!("-I{}", prefix.join("include").display()),
        format!("-L{}", lib.display()),
    ];
    args.extend(libs.iter().map(|(name, _)| format!("-l{name}")));
    args.push(format!("-Wl,-rpath,{}", lib.display()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let exe = gcc(dir, "rt", source, &args);
    let ldd = Command::new("ldd").arg(&exe).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    for (_, soname) in libs {
        assert!(
            ldd.contains(&format!("{soname} => {}", lib.join(soname).display())),
            "{ldd}"
        );
    }
    assert!(!ldd.contains("not found"), "{ldd}");
    exe
}

#[test]
fn cuda13_wheels_split_like_conda_forge() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("split");
    let site = site_of(&venv);
    let m = split_json(&site, &out, &[]);
    assert_eq!(m["schema"], "cudist.split/1");
    assert_eq!(m["cuda_major"], 13);
    assert_eq!(m["unassigned"], serde_json::json!([]));
    // What was printed is what was written.
    let written: Value =
        serde_json::from_slice(&std::fs::read(out.join("split.json")).unwrap()).unwrap();
    assert_eq!(written, m);
    for (path, want) in [
        ("lib64/libcudart.so.13", ("cuda_cudart", "lib")),
        ("lib64/libcudart.so", ("cuda_cudart", "dev")),
        ("include/cuda_runtime.h", ("cuda_cudart", "dev")),
        ("lib64/libcudart_static.a", ("cuda_cudart", "static")),
        ("lib64/libnvrtc.so.13", ("cuda_nvrtc", "lib")),
        ("lib64/libnvrtc-builtins.so.13.5", ("cuda_nvrtc", "lib")),
        ("lib64/libnvrtc.so", ("cuda_nvrtc", "dev")),
        ("include/nvrtc.h", ("cuda_nvrtc", "dev")),
        ("lib64/libcurand.so.10", ("libcurand", "lib")),
        ("include/curand.h", ("libcurand", "dev")),
        ("bin/nvcc", ("cuda_nvcc", "bin")),
        ("bin/ptxas", ("cuda_nvcc", "bin")),
        ("nvvm/bin/cicc", ("libnvvm", "bin")),
        ("include/cccl/cub/cub.cuh", ("cuda_cccl", "dev")),
    ] {
        assert_eq!(placed(&m, path), vec![want], "{path}");
    }
    // The builtins library (dlopened by NVRTC) gets its linker name in dev, as in NVIDIA's toolkit.
    assert_eq!(
        placed(&m, "lib64/libnvrtc-builtins.so"),
        vec![("cuda_nvrtc", "dev")]
    );
    // Pins from the SONAMEs: the major for all of these.
    let cudart = component(&m, "cuda_cudart");
    assert_eq!(
        cudart["run_exports"][0]["conda"],
        "cuda-cudart >=13.5.37,<14.0a0"
    );
    assert_eq!(
        cudart["run_exports"][0]["pep508"],
        "nvidia-cuda-runtime>=13.5.37,<14"
    );
    assert_eq!(cudart["depends"]["dev"][0], "cuda-cudart ==13.5.37");
    assert_eq!(cudart["depends"]["static"][0], "cuda-cudart-dev ==13.5.37");
    assert_eq!(cudart["packages"]["static"], "cuda-cudart-static");
    let curand = component(&m, "libcurand");
    assert_eq!(
        curand["run_exports"][0]["conda"],
        "libcurand >=10.4.5.25,<11.0a0"
    );
    // NVRTC pins its major; its builtins (major.minor SONAME, dlopened by NVRTC itself) set no
    // pin of their own.
    let nvrtc = component(&m, "cuda_nvrtc");
    let pins = conda_pins(nvrtc);
    assert_eq!(pins, vec!["cuda-nvrtc >=13.5.37,<14.0a0"]);
    // Licenses go with every output of a component.
    for o in ["lib", "dev", "static"] {
        assert!(
            m["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["component"] == "cuda_cudart"
                    && f["output"] == o
                    && f["path"].as_str().unwrap().starts_with("share/licenses/")),
            "no license in cuda_cudart {o}"
        );
    }
    // Every file row has its digest, checked against the file (sha256sum).
    let f = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "lib64/libcudart.so.13")
        .unwrap();
    let sum = Command::new("sha256sum")
        .arg(site.join("nvidia/cu13/lib/libcudart.so.13"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sum.stdout).starts_with(f["sha256"].as_str().unwrap()));
    assert_eq!(f["soname"], "libcudart.so.13");
    // The Nixpkgs-style features file.
    let feat: Value =
        serde_json::from_slice(&std::fs::read(out.join("features.json")).unwrap()).unwrap();
    let cu = &feat["cuda_cudart"]["linux-x86_64"]["outputs"];
    assert_eq!(
        (
            cu["lib"].as_bool(),
            cu["static"].as_bool(),
            cu["bin"].as_bool()
        ),
        (Some(true), Some(true), Some(false))
    );
}

#[test]
fn dirs_outputs_merge_into_a_prefix_that_links() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU12") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("dirs");
    let site = site_of(&venv);
    let o = cudist(&[
        "split",
        site.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "dirs",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("cuda_cudart"), "{}", stdout(&o));
    assert_unique_destinations(
        &serde_json::from_slice(&std::fs::read(out.join("split.json")).unwrap()).unwrap(),
    );
    // lib holds the SONAME file only; dev the linker-name link and headers.
    assert!(out.join("cuda_cudart-lib/lib64/libcudart.so.12").is_file());
    assert!(!out.join("cuda_cudart-lib/lib64/libcudart.so").exists());
    assert_eq!(
        std::fs::read_link(out.join("cuda_cudart-dev/lib64/libcudart.so")).unwrap(),
        Path::new("libcudart.so.12")
    );
    assert!(out
        .join("cuda_cudart-dev/include/cuda_runtime_api.h")
        .is_file());
    assert!(out
        .join("cuda_cudart-static/lib64/libcudart_static.a")
        .is_file());
    // Installed together (as a package manager merges the outputs a build needs into one prefix),
    // they link. CUDA 12's runtime headers include crt/ headers that ship with nvcc.
    let prefix = work.path().join("prefix");
    merge(
        &out,
        &["cuda_cudart-lib", "cuda_cudart-dev", "cuda_nvcc-dev"],
        &prefix,
    );
    link_cudart(
        work.path(),
        &prefix,
        "lib64",
        "libcudart.so.12",
        "#include <cuda_runtime_api.h>\nint main(void) { int n; return cudaGetDeviceCount(&n) == cudaSuccess; }\n",
    );
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("o");
    let o = cudist(&[
        "split",
        work.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    // Not what split reads: the input's fault.
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("neither a site-packages"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    std::fs::create_dir(&out).unwrap();
    let o = cudist(&[
        "split",
        work.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
}

/// Installs conda packages into a fresh prefix with py-rattler (scripts/conda-install-local.py).
fn conda_install(py: &Path, prefix: &Path, pkgs: &[&Path]) -> std::process::Output {
    Command::new(py)
        .arg(repo_root().join("scripts/conda-install-local.py"))
        .arg(prefix)
        .args(pkgs)
        .output()
        .unwrap()
}

/// The package file of `name` in a channel directory.
fn package_file(channel: &Path, name: &str) -> std::path::PathBuf {
    std::fs::read_dir(channel)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let f = p.file_name().unwrap().to_string_lossy().into_owned();
            f.strip_prefix(&format!("{name}-"))
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or_else(|| panic!("no package {name} in {}", channel.display()))
}

#[test]
fn conda_packages_read_back_install_and_link() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let Some(py) = tool_from_env("CUDIST_RATTLER_PYTHON") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("conda");
    let site = site_of(&venv);
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["split", site.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--format", "conda", "--zstd-level", "1", "--json"])
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_unique_destinations(&m);
    let channel = out.join(cudist_conda::host_subdir().0);

    // Every package reads back (cudist_conda's reader; py-rattler installs them below), and holds
    // exactly the manifest's files
    // of its component-output (lib64/ -> lib/), links as links, files with their sha256.
    let mut names = Vec::new();
    for c in m["components"].as_array().unwrap() {
        for (output, name) in c["packages"].as_object().unwrap() {
            let name = name.as_str().unwrap();
            names.push(name.to_string());
            let pkg = cudist_conda::read(&package_file(&channel, name)).unwrap();
            assert_eq!(pkg.name(), name);
            assert_eq!(pkg.version(), c["version"].as_str().unwrap());
            assert_eq!(
                pkg.index.subdir.as_deref(),
                Some(cudist_conda::host_subdir().0)
            );
            assert_eq!(pkg.index.timestamp, Some(1_700_000_000_000));
            let want_deps: Vec<String> = c["depends"][output]
                .as_array()
                .map(|a| a.iter().map(|d| d.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            assert_eq!(pkg.index.depends, want_deps, "{name}");
            let mut want: Vec<(String, String)> = m["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["component"] == c["component"] && f["output"] == output.as_str())
                .filter(|f| !f["path"].as_str().unwrap().starts_with("share/licenses/"))
                .map(|f| {
                    let p = f["path"].as_str().unwrap();
                    let p = p
                        .strip_prefix("lib64/")
                        .map_or(p.to_string(), |r| format!("lib/{r}"));
                    let what = f["sha256"]
                        .as_str()
                        .map_or("link".to_string(), str::to_string);
                    (p, what)
                })
                .collect();
            let mut got: Vec<(String, String)> = pkg
                .paths
                .as_ref()
                .unwrap()
                .paths
                .iter()
                .map(|e| {
                    let what = e.sha256.clone().unwrap_or_else(|| "link".to_string());
                    (e.path.clone(), what)
                })
                .collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "{name}");
            // The pins sit on `-dev` (conda-forge's place), or on the runtime package of a
            // component without one; no other package exports any.
            let exports_on = if c["outputs"].get("dev").is_some() {
                "dev"
            } else {
                "lib"
            };
            let pins = conda_pins(c);
            if output == exports_on && !pins.is_empty() {
                assert_eq!(pkg.run_exports.as_ref().unwrap().weak, pins, "{name}");
            } else {
                assert!(
                    pkg.run_exports.as_ref().is_none_or(|r| r.weak.is_empty()),
                    "{name} exports pins"
                );
            }
        }
    }
    // Per-file placement in the packages, as conda-forge names and fills them.
    for (name, path) in [
        ("cuda-cudart", "lib/libcudart.so.13"),
        ("cuda-cudart-dev", "lib/libcudart.so"),
        ("cuda-cudart-dev", "include/cuda_runtime.h"),
        ("cuda-cudart-static", "lib/libcudart_static.a"),
        ("cuda-nvrtc", "lib/libnvrtc.so.13"),
        ("cuda-nvrtc", "lib/libnvrtc-builtins.so.13.5"),
        ("cuda-nvrtc-dev", "include/nvrtc.h"),
        ("libcurand", "lib/libcurand.so.10"),
        ("cuda-nvcc", "bin/nvcc"),
        ("cuda-nvvm-impl-bin", "nvvm/bin/cicc"),
    ] {
        let pkg = cudist_conda::read(&package_file(&channel, name)).unwrap();
        assert!(
            pkg.paths.unwrap().paths.iter().any(|e| e.path == path),
            "{path} not in {name}"
        );
    }
    // The runtime headers include crt/ and cccl headers: cuda-cudart-dev depends on their dev
    // packages (found in the #include lines).
    let dev = cudist_conda::read(&package_file(&channel, "cuda-cudart-dev")).unwrap();
    for d in ["cuda-cudart ==13.5.37", "cuda-crt-dev >=13.5.37,<14.0a0"] {
        assert!(
            dev.index.depends.iter().any(|x| x == d),
            "{d}: {:?}",
            dev.index.depends
        );
    }
    // cuRAND's library links the runtime: its package depends on it, pinned to the major.
    let curand = cudist_conda::read(&package_file(&channel, "libcurand")).unwrap();
    assert_eq!(curand.index.depends, vec!["cuda-cudart >=13.5.37,<14.0a0"]);
    // cudist inspect reads the packages back and finds no overlinking in any of them.
    let o = cudist(&["inspect", channel.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let arts = report["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), names.len() + 1);
    for a in arts {
        assert_eq!(a["kind"], "conda");
        assert_eq!(
            a["verdict"]["status"], "ok",
            "{}: {}",
            a["path"], a["verdict"]
        );
    }
    // The metapackage depends on every package, exactly.
    let meta = cudist_conda::read(&package_file(&channel, "cuda-toolkit")).unwrap();
    assert_eq!(meta.version(), "13.5.37");
    assert_eq!(meta.index.depends.len(), names.len());
    assert!(meta.paths.unwrap().paths.is_empty());

    // A package whose dependencies are not given is refused by the installer.
    let o = conda_install(
        &py,
        &work.path().join("alone"),
        &[&package_file(&channel, "cuda-cudart-dev")],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("depends on 'cuda-cudart ==13.5.37'"));

    // Everything, metapackage included, installs into one prefix (no clashing paths) ...
    let all: Vec<std::path::PathBuf> = std::fs::read_dir(&channel)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let prefix = work.path().join("prefix");
    let refs: Vec<&Path> = all.iter().map(|p| p.as_path()).collect();
    let o = conda_install(&py, &prefix, &refs);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(prefix.join("conda-meta").read_dir().unwrap().count() > names.len());
    // ... where a C program links -lcudart and ldd resolves it to the prefix ...
    let exe = link_cudart(
        work.path(),
        &prefix,
        "lib",
        "libcudart.so.13",
        "#include <cuda_runtime.h>\n#include <stdio.h>\nint main(void) { int v = 0; cudaRuntimeGetVersion(&v); printf(\"%d\\n\", v); return 0; }\n",
    );
    let run = Command::new(&exe).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "13050");
    // ... and the installed nvcc compiles CUDA against it, linking the shared runtime.
    std::fs::write(
        work.path().join("k.cu"),
        "__global__ void k(int *p) { *p = 1; }\nint main() { int *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n",
    )
    .unwrap();
    let kexe = work.path().join("k");
    let o = Command::new(prefix.join("bin/nvcc"))
        .current_dir(work.path())
        .args(["-arch=sm_90", "-cudart", "shared", "k.cu", "-o"])
        .arg(&kexe)
        .arg(format!("-Xlinker=-rpath,{}", prefix.join("lib").display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ldd = Command::new("ldd").arg(&kexe).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&format!("{}", prefix.join("lib/libcudart.so.13").display())),
        "{ldd}"
    );
}

#[test]
fn a_cublas_wheel_splits_into_libcublas_and_its_dev() {
    // NVIDIA's cuBLAS wheel is 444 MB; its layout is rebuilt here with gcc stand-ins under the
    // real names, in the CUDA 13 merged layout.
    let work = tempfile::tempdir().unwrap();
    let libs = work.path().join("libs");
    let mut members: Vec<(&str, Vec<u8>)> = Vec::new();
    for (file, soname, sym) in [
        ("libcublas.so.13", "libcublas.so.13", "cublasCreate_v2"),
        ("libcublasLt.so.13", "libcublasLt.so.13", "cublasLtCreate"),
        ("libnvblas.so.13", "libnvblas.so.13", "dgemm_"),
    ] {
        let p = fake_lib(&libs, file, soname, sym);
        let name: &'static str = Box::leak(format!("nvidia/cu13/lib/{file}").into_boxed_str());
        members.push((name, std::fs::read(p).unwrap()));
    }
    members.push((
        "nvidia/cu13/include/cublas_v2.h",
        b"#include \"cublas_api.h\"\n".to_vec(),
    ));
    members.push((
        "nvidia/cu13/include/cublas_api.h",
        b"#include <cuda_runtime_api.h>\n".to_vec(),
    ));
    members.push(("nvidia/cu13/include/cublasLt.h", b"#pragma once\n".to_vec()));
    members.push(("nvidia/cublas/__init__.py", Vec::new()));
    let wheel = work
        .path()
        .join("nvidia_cublas-13.10.0.20-py3-none-manylinux_2_27_x86_64.whl");
    write_wheel_version(&wheel, "nvidia-cublas", "13.10.0.20", &[], &members);
    let site = work.path().join("site");
    python(
        "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
        &[wheel.to_str().unwrap(), site.to_str().unwrap()],
    );
    let m = split_json(&site, &work.path().join("out"), &[]);
    for (path, want) in [
        ("lib64/libcublas.so.13", ("libcublas", "lib")),
        ("lib64/libcublasLt.so.13", ("libcublas", "lib")),
        ("lib64/libnvblas.so.13", ("libcublas", "lib")),
        ("lib64/libcublas.so", ("libcublas", "dev")),
        ("lib64/libcublasLt.so", ("libcublas", "dev")),
        ("include/cublas_v2.h", ("libcublas", "dev")),
        ("include/cublasLt.h", ("libcublas", "dev")),
    ] {
        assert_eq!(placed(&m, path), vec![want], "{path}");
    }
    let c = component(&m, "libcublas");
    assert_eq!(c["packages"]["lib"], "libcublas");
    assert_eq!(c["packages"]["dev"], "libcublas-dev");
    assert_eq!(c["license"], "NVIDIA Proprietary Software");
    // Three SONAMEs, one major each: one pin.
    let pins = conda_pins(c);
    assert_eq!(pins, vec!["libcublas >=13.10.0.20,<14.0a0"]);
    assert_eq!(
        c["run_exports"][0]["pep508"],
        "nvidia-cublas>=13.10.0.20,<14"
    );
    // cuda_runtime_api.h is not in this site-packages: no dev dependency is invented for it.
    assert_eq!(
        c["depends"]["dev"],
        serde_json::json!(["libcublas ==13.10.0.20"])
    );
}

/// NVIDIA's redistributable layout, rebuilt from the real CUDA 13 runtime wheel: an archive
/// directory with `lib/` (the library under its full version, with a broken chain), `include/`,
/// `pkg-config/` and `LICENSE`, packed by GNU tar as `.tar.xz`. Returns the archive's path.
fn cudart_archive(site: &Path, dir: &Path) -> std::path::PathBuf {
    let plat = if cfg!(target_arch = "aarch64") {
        "linux-sbsa"
    } else {
        "linux-x86_64"
    };
    let name = format!("cuda_cudart-{plat}-13.5.37-archive");
    let a = dir.join("src").join(&name);
    let wheel = site.join("nvidia/cu13");
    for d in ["lib", "include", "pkg-config"] {
        std::fs::create_dir_all(a.join(d)).unwrap();
    }
    std::fs::copy(
        wheel.join("lib/libcudart.so.13"),
        a.join("lib/libcudart.so.13.5.37"),
    )
    .unwrap();
    std::fs::copy(
        wheel.join("lib/libcudart_static.a"),
        a.join("lib/libcudart_static.a"),
    )
    .unwrap();
    // The chain is broken: no SONAME link, and the linker name points nowhere.
    std::os::unix::fs::symlink("libcudart.so.13.0.0", a.join("lib/libcudart.so")).unwrap();
    for h in ["cuda_runtime_api.h", "driver_types.h", "cuda.h"] {
        std::fs::copy(wheel.join("include").join(h), a.join("include").join(h)).unwrap();
    }
    std::fs::write(a.join("LICENSE"), "CUDA Toolkit license\n").unwrap();
    std::fs::write(
        a.join("pkg-config/cudart-13.5.pc"),
        "Name: cudart\nVersion: 13.5\nLibs: -lcudart\n",
    )
    .unwrap();
    let tarball = dir.join(format!("{name}.tar.xz"));
    let st = Command::new("tar")
        .arg("-cJf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.join("src"))
        .arg(&name)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_dir_all(dir.join("src")).unwrap();
    tarball
}

/// A redistrib manifest in NVIDIA's format listing `archive` (its sha256 by `sha256sum`) and a
/// cuBLAS archive that is not there.
fn redistrib_manifest(archive: &Path, sha256: &str) -> String {
    let plat = if cfg!(target_arch = "aarch64") {
        "linux-sbsa"
    } else {
        "linux-x86_64"
    };
    let size = std::fs::metadata(archive).unwrap().len();
    let file = archive.file_name().unwrap().to_string_lossy();
    serde_json::json!({
        "release_date": "2026-10-01",
        "release_label": "13.5.0",
        "release_product": "cuda",
        "cuda_cudart": {
            "name": "CUDA Runtime (cudart)",
            "license": "CUDA Toolkit",
            "license_path": "cuda_cudart/LICENSE.txt",
            "version": "13.5.37",
            plat: {
                "relative_path": format!("cuda_cudart/{plat}/{file}"),
                "sha256": sha256,
                "md5": "0",
                "size": size.to_string()
            },
            "windows-x86_64": {
                "relative_path": "cuda_cudart/windows-x86_64/cuda_cudart-windows-x86_64-13.5.37-archive.zip",
                "sha256": "0", "md5": "0", "size": "1"
            }
        },
        "libcublas": {
            "name": "CUDA cuBLAS",
            "license": "CUDA Toolkit",
            "version": "13.10.0.20",
            plat: {
                "relative_path": format!("libcublas/{plat}/libcublas-{plat}-13.10.0.20-archive.tar.xz"),
                "sha256": "0", "md5": "0", "size": "1"
            }
        }
    })
    .to_string()
}

#[test]
fn redistributable_archives_are_verified_split_and_their_chains_repaired() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let archives = work.path().join("archives");
    std::fs::create_dir_all(&archives).unwrap();
    let tarball = cudart_archive(&site_of(&venv), &archives);
    let sum = Command::new("sha256sum").arg(&tarball).output().unwrap();
    let sha = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let manifest = work.path().join("redistrib_13.5.0.json");
    std::fs::write(&manifest, redistrib_manifest(&tarball, &sha)).unwrap();

    let out = work.path().join("dirs");
    let m = split_json(
        &archives,
        &out,
        &["--manifest", manifest.to_str().unwrap(), "--format", "dirs"],
    );
    assert_eq!(m["input_kind"], "redist");
    assert_eq!(m["cuda_major"], 13);
    assert_eq!(m["missing"], serde_json::json!(["libcublas"]));
    let c = component(&m, "cuda_cudart");
    assert_eq!(c["version"], "13.5.37");
    assert_eq!(c["license"], "CUDA Toolkit");
    for (path, want) in [
        ("lib64/libcudart.so.13.5.37", ("cuda_cudart", "lib")),
        ("lib64/libcudart.so.13", ("cuda_cudart", "lib")),
        ("lib64/libcudart.so", ("cuda_cudart", "dev")),
        ("lib64/libcudart_static.a", ("cuda_cudart", "static")),
        ("lib64/pkgconfig/cudart-13.5.pc", ("cuda_cudart", "dev")),
        ("include/cuda_runtime_api.h", ("cuda_cudart", "dev")),
    ] {
        assert_eq!(placed(&m, path), vec![want], "{path}");
    }
    // The chain is made again from the SONAME: libcudart.so -> libcudart.so.13 ->
    // libcudart.so.13.5.37, relative, the broken input link gone.
    assert_eq!(
        std::fs::read_link(out.join("cuda_cudart-lib/lib64/libcudart.so.13")).unwrap(),
        Path::new("libcudart.so.13.5.37")
    );
    assert_eq!(
        std::fs::read_link(out.join("cuda_cudart-dev/lib64/libcudart.so")).unwrap(),
        Path::new("libcudart.so.13")
    );
    assert!(out
        .join("cuda_cudart-dev/share/licenses/cuda_cudart/LICENSE")
        .is_file());
    // lib + dev merged into a prefix: a program links -lcudart and ld.so finds it there.
    let prefix = work.path().join("prefix");
    merge(&out, &["cuda_cudart-lib", "cuda_cudart-dev"], &prefix);
    let exe = link_cudart(
        work.path(),
        &prefix,
        "lib64",
        "libcudart.so.13",
        // The prototype (cuda_runtime_api.h needs crt/ headers from another archive).
        "int cudaRuntimeGetVersion(int *);\nint main(void) { int v = 0; cudaRuntimeGetVersion(&v); return v != 13050; }\n",
    );
    assert!(Command::new(&exe).status().unwrap().success());
    // Nothing is left beside the output (the unpacked archives are removed).
    let left: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A damaged archive (one byte changed) fails the sha256 check: named, nothing written.
    let mut bytes = std::fs::read(&tarball).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&tarball, &bytes).unwrap();
    let bad = work.path().join("bad");
    let o = cudist(&[
        "split",
        archives.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains("cuda_cudart-") && err.contains("sha256"),
        "{err}"
    );
    assert!(err.contains(&sha), "{err}");
    assert!(!bad.exists());
    // Without the manifest the archive is still read by its name, and a damaged xz stream is
    // reported with the archive's name.
    let o = cudist(&[
        "split",
        archives.to_str().unwrap(),
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains(".tar.xz"), "{}", stderr(&o));
    assert!(!bad.exists());
}

/// The (path, component, output) rows of a split.
fn rows(m: &Value) -> std::collections::BTreeSet<(String, String, String)> {
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["component"].as_str().unwrap().to_string(),
                f["output"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_toolkit_tree_is_placed_by_the_catalog_as_its_wheels_place_it() {
    // A root `cudist toolkit` makes has no RECORD: its files are placed by the catalog's header,
    // file and SONAME rules. Every file the wheels' own split places must land in the same
    // component and output.
    for var in ["CUDIST_TK_CU13", "CUDIST_TK_CU12"] {
        let Some(venv) = tool_from_env(var) else {
            return;
        };
        let work = tempfile::tempdir().unwrap();
        let root = work.path().join("root");
        let o = cudist(&[
            "toolkit",
            "--python",
            venv.join("bin/python").to_str().unwrap(),
            "--out",
            root.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let tree = split_json(&root, &work.path().join("tree"), &[]);
        let wheels = split_json(&site_of(&venv), &work.path().join("wheels"), &[]);
        assert_eq!(tree["input_kind"], "tree");
        assert_eq!(tree["cuda_major"], wheels["cuda_major"]);
        let (t, w) = (rows(&tree), rows(&wheels));
        let lost: Vec<_> = w.difference(&t).collect();
        assert!(
            lost.is_empty(),
            "{var}: placed differently in the tree: {lost:?}"
        );
        // What the tree has beyond the wheels is what `cudist toolkit` generates: pkg-config
        // files (placed by their library), the driver stub, version files (reported).
        for extra in t.difference(&w) {
            let (path, component, _) = extra;
            let ok = (path.starts_with("lib64/pkgconfig/") && component != "cuda_other")
                || (path.as_str() == "lib64/stubs/libcuda.so" && component == "cuda_cudart")
                || path.starts_with("share/licenses/")
                || (["version.json", "version.txt"].contains(&path.as_str())
                    && component == "cuda_other");
            assert!(ok, "{var}: unexpected {extra:?}");
        }
        assert_eq!(
            tree["unassigned"],
            serde_json::json!(["version.json", "version.txt"])
        );
        // Versions come from the root's version.json.
        assert_eq!(
            component(&tree, "cuda_cudart")["version"],
            component(&wheels, "cuda_cudart")["version"]
        );
    }
}

/// Makes a CUDA root with `cudist toolkit` from the CUDA 13 test venv (`--copy` when `copy`).
fn toolkit_root(venv: &Path, root: &Path, copy: bool) {
    let python = venv.join("bin/python");
    let mut args = vec![
        "toolkit",
        "--python",
        python.to_str().unwrap(),
        "--out",
        root.to_str().unwrap(),
        "-q",
    ];
    if copy {
        args.push("--copy");
    }
    let o = cudist(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A copy of `root` (links kept as links) where `lib` is the real directory and `lib64` the link
/// to it, as some distributions lay CUDA out.
fn flipped_root(root: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(root)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(to.join("lib")).unwrap();
    std::fs::rename(to.join("lib64"), to.join("lib")).unwrap();
    std::os::unix::fs::symlink("lib", to.join("lib64")).unwrap();
}

#[test]
fn toolkit_roots_of_every_shape_split_in_every_format_and_link() {
    // Issue 11: a root `cudist toolkit` makes by default is a tree of links into the environment,
    // whose linker-name links were read as files and made again from the SONAMEs: one path given
    // twice. Every shape of root must split in every format, the same way, and its conda packages
    // must install together and link.
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let Some(py) = tool_from_env("CUDIST_RATTLER_PYTHON") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    // Disk: a copied root, its dirs, its conda packages and the prefix they install into are
    // 0.6 GB each; all four shapes at once came to 6.9 GB and a CI machine ran out. Each shape's
    // root is made when its turn comes and everything it made is removed once it is checked
    // (the copied root is kept for the checks after the loop).
    let mut first: Option<std::collections::BTreeSet<(String, String, String)>> = None;
    for shape in ["linked", "linked-flipped", "copied", "copied-flipped"] {
        let root = w.join(shape);
        match shape {
            "linked" => {
                toolkit_root(&venv, &root, false);
                assert!(
                    std::fs::symlink_metadata(root.join("lib64/libcudart.so.13"))
                        .unwrap()
                        .file_type()
                        .is_symlink()
                );
            }
            "copied" => toolkit_root(&venv, &root, true),
            flipped => flipped_root(&w.join(flipped.trim_end_matches("-flipped")), &root),
        }
        let program = "#include <cuda_runtime.h>\n#include <curand.h>\n#include <stdio.h>\n\
        int main(void) { int v = 0, r = 0; cudaRuntimeGetVersion(&v); curandGetVersion(&r); \
        printf(\"%d %d\\n\", v, r); return 0; }\n";
        // manifest: every path once (split_json checks), nothing given twice, and the same rows
        // whatever the shape.
        let m = split_json(&root, &w.join(format!("{shape}-manifest")), &[]);
        assert_eq!(m["collisions"], serde_json::json!([]), "{shape}");
        let r = rows(&m);
        assert!(r.contains(&(
            "lib64/libcudart.so".into(),
            "cuda_cudart".into(),
            "dev".into()
        )));
        match &first {
            None => first = Some(r),
            Some(f) => assert_eq!(&r, f, "{shape} splits unlike the linked root"),
        }
        // dirs: the linker name is a link to the SONAME; the library a real copy.
        let dirs = w.join(format!("{shape}-dirs"));
        split_json(&root, &dirs, &["--format", "dirs"]);
        assert_eq!(
            std::fs::read_link(dirs.join("cuda_cudart-dev/lib64/libcudart.so")).unwrap(),
            Path::new("libcudart.so.13")
        );
        let lib = dirs.join("cuda_cudart-lib/lib64/libcudart.so.13");
        assert!(std::fs::symlink_metadata(&lib)
            .unwrap()
            .file_type()
            .is_file());
        // conda: every package installs into one prefix with py-rattler, where a program links
        // -lcudart -lcurand and runs.
        let out = w.join(format!("{shape}-conda"));
        let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
            .args(["split", root.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .args(["--format", "conda", "--zstd-level", "1", "--json"])
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{shape}: {}", stderr(&o));
        assert_unique_destinations(&serde_json::from_slice(&o.stdout).unwrap());
        let channel = out.join(cudist_conda::host_subdir().0);
        let pkgs: Vec<PathBuf> = std::fs::read_dir(&channel)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        let refs: Vec<&Path> = pkgs.iter().map(|p| p.as_path()).collect();
        let prefix = w.join(format!("{shape}-prefix"));
        let o = conda_install(&py, &prefix, &refs);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{shape}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let exe = link_in_prefix(
            &w.join(format!("{shape}-build")),
            &prefix,
            "lib",
            &[("cudart", "libcudart.so.13"), ("curand", "libcurand.so.10")],
            program,
        );
        let run = Command::new(&exe).output().unwrap();
        let printed = String::from_utf8_lossy(&run.stdout).into_owned();
        let mut v = printed.split_whitespace();
        assert_eq!(v.next(), Some("13050"), "{shape}: {printed}");
        assert!(
            v.next()
                .and_then(|r| r.parse::<u32>().ok())
                .is_some_and(|r| r >= 10000),
            "{shape}: {printed}"
        );
        let mut made = vec![dirs, out, prefix, w.join(format!("{shape}-build"))];
        if shape.ends_with("-flipped") {
            made.push(root);
        }
        if shape == "linked-flipped" {
            made.push(w.join("linked"));
        }
        for p in made {
            std::fs::remove_dir_all(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
    // A root whose linker name is a copy of the library (not a link): the split places the link
    // made from the SONAME, once, and says which one it placed and why.
    let root = w.join("copied");
    let so = root.join("lib64/libcudart.so");
    std::fs::remove_file(&so).unwrap();
    std::fs::copy(root.join("lib64/libcudart.so.13"), &so).unwrap();
    let m = split_json(&root, &w.join("copy-of-linker-name"), &[]);
    let c = m["collisions"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["path"], "lib64/libcudart.so");
    assert_eq!(c[0]["kept"], "link -> libcudart.so.13 (cuda_cudart)");
    assert!(c[0]["dropped"][0]
        .as_str()
        .unwrap()
        .ends_with("lib64/libcudart.so (cuda_cudart)"));
    assert_eq!(rows(&m), first.unwrap());
    // The human report says it too.
    let o = cudist(&[
        "split",
        root.to_str().unwrap(),
        "-o",
        w.join("human").to_str().unwrap(),
    ]);
    assert!(
        stdout(&o).contains("lib64/libcudart.so given more than once: placed the link"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_installer_layout_tree_reads_targets_and_skips_directory_links() {
    // NVIDIA's runfile layout: files under targets/x86_64-linux/{lib,include}, lib64 and include
    // as links to them, library chains as links (here with the SONAME link missing).
    let Some(venv) = tool_from_env("CUDIST_TK_CU12") else {
        return;
    };
    let site = site_of(&venv);
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("cuda-12.9");
    let t = root.join("targets/x86_64-linux");
    std::fs::create_dir_all(t.join("lib")).unwrap();
    std::fs::create_dir_all(t.join("include")).unwrap();
    std::fs::copy(
        site.join("nvidia/cuda_runtime/lib/libcudart.so.12"),
        t.join("lib/libcudart.so.12.9.79"),
    )
    .unwrap();
    std::os::unix::fs::symlink("libcudart.so.12.9.79", t.join("lib/libcudart.so")).unwrap();
    std::fs::copy(
        site.join("nvidia/cuda_runtime/include/cuda_runtime_api.h"),
        t.join("include/cuda_runtime_api.h"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(
        site.join("nvidia/cuda_nvcc/bin/ptxas"),
        root.join("bin/ptxas"),
    )
    .unwrap();
    std::fs::write(root.join("bin/my-script"), "#!/bin/sh\n").unwrap();
    std::os::unix::fs::symlink("targets/x86_64-linux/lib", root.join("lib64")).unwrap();
    std::os::unix::fs::symlink("targets/x86_64-linux/include", root.join("include")).unwrap();
    let out = work.path().join("out");
    let m = split_json(&root, &out, &["--format", "dirs"]);
    assert_eq!(m["cuda_major"], 12);
    for (path, want) in [
        ("lib64/libcudart.so.12.9.79", ("cuda_cudart", "lib")),
        ("lib64/libcudart.so.12", ("cuda_cudart", "lib")),
        ("lib64/libcudart.so", ("cuda_cudart", "dev")),
        ("include/cuda_runtime_api.h", ("cuda_cudart", "dev")),
        ("bin/ptxas", ("cuda_nvcc", "bin")),
        ("bin/my-script", ("cuda_other", "bin")),
    ] {
        assert_eq!(placed(&m, path), vec![want], "{path}");
    }
    // Read once, through targets/ (not again through the lib64 and include links).
    assert_eq!(m["files"].as_array().unwrap().len(), 6);
    assert_eq!(m["unassigned"], serde_json::json!(["bin/my-script"]));
    assert_eq!(
        std::fs::read_link(out.join("cuda_cudart-lib/lib64/libcudart.so.12")).unwrap(),
        Path::new("libcudart.so.12.9.79")
    );
}

#[test]
fn inspect_finds_overlinking_in_a_conda_package() {
    // A package whose library links cuBLAS and the runtime but whose depends name only the
    // runtime (and cuRAND, which nothing links).
    let work = tempfile::tempdir().unwrap();
    let path = conda_package_linking_cublas(
        work.path(),
        work.path(),
        &[
            "cuda-cudart >=13.0,<14.0a0",
            "libcurand >=10.4,<11.0a0",
            "python >=3.11",
        ],
    );
    let o = cudist(&["inspect", path.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = &report["artifacts"][0];
    assert_eq!(a["kind"], "conda");
    assert_eq!(a["conda"]["name"], "myext");
    assert_eq!(a["verdict"]["status"], "unresolved", "{}", a["verdict"]);
    let links = a["conda"]["cuda_links"].as_array().unwrap();
    let by = |so: &str| {
        links
            .iter()
            .find(|l| l["soname"] == so)
            .unwrap_or_else(|| panic!("{so} not in {links:?}"))
    };
    assert_eq!(
        by("libcudart.so.13")["declared_by"],
        "cuda-cudart >=13.0,<14.0a0"
    );
    assert_eq!(by("libcublas.so.13")["package"], "libcublas");
    assert_eq!(by("libcublas.so.13")["declared_by"], Value::Null);
    assert_eq!(
        a["conda"]["unlinked_depends"],
        serde_json::json!(["libcurand >=10.4,<11.0a0"])
    );
    let lines = a["verdict"]["lines"].to_string();
    assert!(
        lines.contains("links libcublas.so.13 but its depends name no libcublas"),
        "{lines}"
    );
    // The human report says the same.
    let o = cudist(&["inspect", path.to_str().unwrap()]);
    assert!(stdout(&o).contains("overlinking"), "{}", stdout(&o));
    // The same package in the older .tar.bz2 format (packed by GNU tar from the unpacked
    // .conda) gives the same answer.
    let unpacked = work.path().join("unpacked");
    cudist_conda::extract(&path, &unpacked).unwrap();
    let bz2 = work.path().join("myext-1.0-h0_0.tar.bz2");
    let st = Command::new("tar")
        .arg("-cjf")
        .arg(&bz2)
        .arg("-C")
        .arg(&unpacked)
        .args(["info", "lib"])
        .status()
        .unwrap();
    assert!(st.success());
    let o = cudist(&["inspect", bz2.to_str().unwrap(), "--json"]);
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["artifacts"][0]["kind"], "conda");
    assert_eq!(
        again["artifacts"][0]["conda"]["cuda_links"],
        a["conda"]["cuda_links"]
    );
    assert_eq!(again["artifacts"][0]["verdict"]["status"], "unresolved");
    // A damaged package is reported with its name.
    let bad = work.path().join("broken-1.0-h0_0.conda");
    std::fs::write(&bad, b"PK\x03\x04 not really").unwrap();
    let o = cudist(&["inspect", bad.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("broken-1.0-h0_0.conda")
            || stderr(&o).contains("broken-1.0-h0_0.conda")
    );
}
