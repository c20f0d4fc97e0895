//! `cudist split` on real CUDA wheels: every file is placed where conda-forge and Nixpkgs put it
//! (per-file assertions for cudart, nvrtc and its builtins, curand, nvcc, cccl), pins follow the
//! SONAMEs, licenses go with every output, and the `dirs` outputs of one component, merged into a
//! prefix, link a C program (`-lcudart`) that `ldd` resolves.

mod common;
use common::*;

use std::path::Path;
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

fn component<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == name)
        .unwrap_or_else(|| panic!("no component {name}"))
}

#[test]
fn cuda13_wheels_split_like_conda_forge() {
    let Some(venv) = tool_from_env("CUDIST_TK_CU13") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("split");
    let site = site_of(&venv);
    let o = cudist(&[
        "split",
        site.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
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
    let pins: Vec<&str> = nvrtc["run_exports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["conda"].as_str().unwrap())
        .collect();
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
    std::fs::create_dir_all(&prefix).unwrap();
    for o in ["cuda_cudart-lib", "cuda_cudart-dev", "cuda_nvcc-dev"] {
        let st = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", out.join(o).display()))
            .arg(&prefix)
            .status()
            .unwrap();
        assert!(st.success(), "cp {o}");
    }
    std::fs::write(work.path().join("m.c"), "#include <cuda_runtime_api.h>\nint main(void) { int n; return cudaGetDeviceCount(&n) == cudaSuccess; }\n").unwrap();
    let exe = work.path().join("m");
    let o = Command::new("gcc")
        .arg(work.path().join("m.c"))
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg(format!("-L{}", prefix.join("lib64").display()))
        .arg("-lcudart")
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib64").display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ldd = Command::new("ldd").arg(&exe).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&format!(
            "libcudart.so.12 => {}",
            prefix.join("lib64/libcudart.so.12").display()
        )),
        "{ldd}"
    );
    assert!(!ldd.contains("not found"), "{ldd}");
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
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("no .dist-info"), "{}", stderr(&o));
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
