//! Device code: cudist's listing must equal cuobjdump's, entry for entry, in the same order.
//!
//! Three sources of truth, strongest last:
//! - the cuobjdump output recorded next to each committed fixture (always checked);
//! - cuobjdump itself, run now on every fixture (`CUDIST_CUOBJDUMP`, required in CI);
//! - a fresh fixture set built now by real nvcc (`CUDIST_FRESH_FIXTURES`, required in CI), which
//!   also holds the 790 KB static-cudart executable that is too big to commit.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// Fixture files that have a recorded cuobjdump listing.
fn fixture_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            !n.contains(".cuobjdump") && dir.join(format!("{n}.cuobjdump.txt")).exists()
        })
        .collect();
    v.sort();
    v
}

/// cudist's cuobjdump-format listing, run from `dir` on `name` so the stems match.
fn cudist_listing(dir: &Path, name: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .current_dir(dir)
        .args(["inspect", "--cuobjdump", name])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// cuobjdump's listing (stdout only) and exit code.
fn cuobjdump_listing(cuobjdump: &Path, dir: &Path, name: &str) -> (String, i32) {
    let o = Command::new(cuobjdump)
        .current_dir(dir)
        .args(["--list-elf", "--list-ptx", name])
        .output()
        .expect("run cuobjdump");
    (
        String::from_utf8(o.stdout).unwrap(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn committed_fixtures_match_recorded_cuobjdump() {
    let dir = fixtures();
    let files = fixture_files(&dir);
    let mut checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let want = std::fs::read_to_string(dir.join(format!("{name}.cuobjdump.txt"))).unwrap();
        assert_eq!(cudist_listing(&dir, name), want, "listing of {name}");
        checked += 1;
    }
    assert!(
        checked >= 11,
        "only {checked} fixtures found in {}",
        dir.display()
    );
}

fn compare_with_cuobjdump(dir: &Path) -> usize {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return 0;
    };
    let mut n = 0;
    for f in fixture_files(dir) {
        let name = f.file_name().unwrap().to_str().unwrap();
        let (want, code) = cuobjdump_listing(&cuobjdump, dir, name);
        assert!(
            code == 0 || code == 255,
            "cuobjdump failed on {name}: exit {code}"
        );
        assert_eq!(
            cudist_listing(dir, name),
            want,
            "listing of {} vs cuobjdump",
            f.display()
        );
        n += 1;
    }
    n
}

#[test]
fn committed_fixtures_match_live_cuobjdump() {
    let n = compare_with_cuobjdump(&fixtures());
    if std::env::var_os("CUDIST_CUOBJDUMP").is_some() {
        assert!(n >= 11, "compared only {n} files");
    }
}

#[test]
fn fresh_nvcc_builds_match_live_cuobjdump() {
    let Some(dir) = tool_from_env("CUDIST_FRESH_FIXTURES") else {
        return;
    };
    let n = compare_with_cuobjdump(&dir);
    if std::env::var_os("CUDIST_CUOBJDUMP").is_some() {
        assert!(
            n >= 12,
            "compared only {n} freshly built files in {}",
            dir.display()
        );
    }
}

fn report(path: &Path) -> Value {
    inspect_json(&[path.to_str().unwrap()], 0)
}

fn entries(r: &Value) -> &Vec<Value> {
    r["artifacts"][0]["elf_files"][0]["device_code"]
        .as_array()
        .unwrap()
}

#[test]
fn multi_arch_entries_and_summary() {
    let r = report(&fixtures().join("multi.so"));
    let e = entries(&r);
    let arches: Vec<(&str, &str)> = e
        .iter()
        .map(|x| (x["kind"].as_str().unwrap(), x["arch"].as_str().unwrap()))
        .collect();
    // The device-link container first (sm_80, sm_90), then the TU: sm_80, PTX compute_90, sm_90.
    assert_eq!(
        arches,
        vec![
            ("cubin", "sm_80"),
            ("cubin", "sm_90"),
            ("cubin", "sm_80"),
            ("ptx", "sm_90"),
            ("cubin", "sm_90")
        ]
    );
    let ptx = &e[3];
    assert_eq!(ptx["version"], "9.5", "PTX ISA of nvcc 13.5");
    assert_eq!(ptx["codec"], "zstd");
    assert!(ptx["uncompressed_size"].as_u64().unwrap() > ptx["compressed_size"].as_u64().unwrap());
    let a = &r["artifacts"][0];
    assert_eq!(
        a["device"]["native_sms"],
        serde_json::json!(["sm_80", "sm_90"])
    );
    assert_eq!(a["device"]["newest_ptx"]["isa"], "9.5");
    assert_eq!(a["device"]["min_driver"]["driver"], "580.65.06");
    assert_eq!(
        needed(a, "libcudart.so.13")["library"]["pip"],
        "nvidia-cuda-runtime"
    );
    // Sizes add up: every byte is in exactly one part of the breakdown.
    let b = &a["breakdown"];
    let dev: u64 = b["device_code"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    let parts = b["host_code"].as_u64().unwrap()
        + dev
        + b["ptx"].as_u64().unwrap()
        + b["other"].as_u64().unwrap();
    assert_eq!(parts, b["total"].as_u64().unwrap());
}

#[test]
fn codecs_are_read_from_the_flags() {
    let codecs = |f: &str| -> Vec<String> {
        entries(&report(&fixtures().join(f)))
            .iter()
            .map(|e| e["codec"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(codecs("lz4.so").iter().all(|c| c == "lz4"));
    assert!(codecs("zstd.so").iter().all(|c| c == "zstd"));
    assert!(codecs("nocompress.so").iter().all(|c| c == "none"));
}

#[test]
fn concat_lto_and_relocatable_code() {
    let r = report(&fixtures().join("concat.so"));
    let images: Vec<&Value> = entries(&r)
        .iter()
        .filter(|e| e["concatenated"] == true)
        .collect();
    assert!(!images.is_empty());
    for i in images {
        assert_eq!(i["kind"], "cubin");
        assert_eq!(i["version"], "1.8", "the image's own header version: {i:#}");
        assert_eq!(i["codec"], "zstd");
    }
    let r = report(&fixtures().join("lto.o"));
    let kinds: Vec<&str> = entries(&r)
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"lto-ir") && kinds.contains(&"cubin"),
        "{kinds:?}"
    );
    assert_eq!(r["artifacts"][0]["device"]["lto_ir"], 1);
    let r = report(&fixtures().join("rdc.so"));
    let sections: std::collections::BTreeSet<&str> = entries(&r)
        .iter()
        .map(|e| e["section"].as_str().unwrap())
        .collect();
    assert_eq!(
        sections.len(),
        2,
        "both .nv_fatbin and __nv_relfatbin: {sections:?}"
    );
    // The summary counts what the runtime loads: the device-linked .nv_fatbin (2 cubins, no PTX),
    // not the relocatable copies kept for a later device link.
    let dev = &r["artifacts"][0]["device"];
    assert_eq!(dev["cubins"], 2, "{dev:#}");
    assert_eq!(dev["ptx"], 0);
    assert!(dev["newest_ptx"].is_null());
    // The relocatable copies are counted apart, so the counts add up to every entry read.
    let relocatable = entries(&r)
        .iter()
        .filter(|e| e["section"] == "__nv_relfatbin")
        .count();
    assert!(relocatable > 0);
    assert_eq!(dev["relocatable"], relocatable, "{dev:#}");
    assert_eq!(
        dev["cubins"].as_u64().unwrap() as usize + relocatable,
        entries(&r).len()
    );
    // An object file has only __nv_relfatbin: that is what counts there.
    let r = report(&fixtures().join("rdc.o"));
    assert_eq!(r["artifacts"][0]["device"]["cubins"], 2);
    assert_eq!(r["artifacts"][0]["device"]["relocatable"], 0);
    let r = report(&fixtures().join("arch_specific.so"));
    let arches: Vec<&str> = entries(&r)
        .iter()
        .map(|e| e["arch"].as_str().unwrap())
        .collect();
    assert!(
        arches.contains(&"sm_90a") && arches.contains(&"sm_120f"),
        "{arches:?}"
    );
}

#[test]
fn static_and_shared_cudart() {
    let r = report(&fixtures().join("shared_cudart"));
    let elf = &r["artifacts"][0]["elf_files"][0];
    assert!(elf["static_cuda"].as_array().unwrap().is_empty(), "{elf:#}");
    assert!(elf["needed"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["soname"] == "libcudart.so.13"));

    // The static build is not committed (790 KB); it comes from a fresh nvcc run.
    let dir = match std::env::var_os("CUDIST_FRESH_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None if fixtures().join("static_cudart").exists() => fixtures(),
        None => {
            skip("CUDIST_FRESH_FIXTURES is not set and static_cudart is not built: run tests/fixtures/device/build.sh");
            return;
        }
    };
    let r = report(&dir.join("static_cudart"));
    let s = &r["artifacts"][0]["elf_files"][0]["static_cuda"][0];
    assert_eq!(s["library"], "cudart");
    assert_eq!(s["confidence"], "certain");
    assert!(
        s["evidence"]
            .to_string()
            .contains("CUDA driver version is insufficient"),
        "{s:#}"
    );
}

#[test]
fn host_only_file_lists_nothing() {
    let dir = fixtures();
    assert_eq!(cudist_listing(&dir, "hostonly.so"), "");
    let r = report(&dir.join("hostonly.so"));
    assert!(entries(&r).is_empty());
}

/// The static-cudart file's entry, if cudist reports one.
fn static_cudart_of(path: &Path) -> Option<Value> {
    let r = report(path);
    let statics = r["artifacts"][0]["elf_files"][0]["static_cuda"].clone();
    statics
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["library"] == "cudart")
        .cloned()
}

/// A program that only quotes the runtime's messages has not linked the runtime in: the strings
/// count only with the runtime's table of driver entry-point names (400+ in every libcudart
/// from 11.7 to 13.5, catalog `static_name_table`), and the table's threshold is exact.
#[test]
fn quoted_runtime_strings_are_not_static_cudart() {
    let dir = tempfile::tempdir().unwrap();
    let quoting = r#"#include <stdio.h>
int main(void) {
    puts("CUDA driver version is insufficient for CUDA runtime version");
    puts("/cudart.shm.");
    return 0;
}
"#;
    let p = gcc(dir.path(), "quotes", quoting, &[]);
    assert!(std::fs::read(&p)
        .unwrap()
        .windows(12)
        .any(|w| w == b"/cudart.shm."));
    assert_eq!(
        static_cudart_of(&p),
        None,
        "a program that prints the messages"
    );

    // The same program with a table of `n` distinct driver-like names, kept as C strings.
    let with_table = |n: usize| {
        let names: Vec<String> = (0..n).map(|i| format!("\"cuFake{i}_v2\"")).collect();
        let src = format!(
            "#include <stdio.h>\nconst char *const table[] = {{{}}};\n\
             int main(int argc, char **argv) {{\n{}\n  puts(table[argc]);\n  return 0;\n}}\n",
            names.join(", "),
            &quoting[quoting.find("    puts").unwrap()..quoting.find("    return").unwrap()]
        );
        gcc(dir.path(), &format!("table{n}"), &src, &[])
    };
    assert_eq!(static_cudart_of(&with_table(199)), None, "199 names");
    let s = static_cudart_of(&with_table(200)).expect("200 names: the runtime's pattern");
    assert_eq!(s["confidence"], "certain");
    assert!(
        s["evidence"].to_string().contains("200 entry-point names"),
        "{s:#}"
    );

    // cudist's own binary holds the messages in its catalog, not the runtime.
    let own = Path::new(env!("CARGO_BIN_EXE_cudist"));
    let bytes = std::fs::read(own).unwrap();
    let msg = b"CUDA driver version is insufficient for CUDA runtime version";
    assert!(bytes.windows(msg.len()).any(|w| w == msg));
    assert_eq!(static_cudart_of(own), None, "cudist itself");
}

/// NVRTC linked in (libnvrtc_static.a; vapoursynth-bm3dcuda's `libbm3dcuda_rtc.so`, stripped):
/// its built-in header's name and its unknown-error message, with its table of error names
/// (16 to 18 in libnvrtc 12.9 and 13.2, catalog `static_name_table`); the strings without the
/// table are a program that quotes them.
#[test]
fn nvrtc_linked_in_is_read_from_its_strings_and_error_names() {
    let dir = tempfile::tempdir().unwrap();
    let with_table = |n: usize| {
        let names: Vec<String> = (0..n)
            .map(|i| format!("\"NVRTC_ERROR_FAKE_{i}\""))
            .collect();
        let src = format!(
            "#include <stdio.h>\nconst char *const table[] = {{{}\"\"}};\n\
             int main(int argc, char **argv) {{\n  puts(\"__nv_nvrtc_builtin_header.h\");\n  \
             puts(\"NVRTC_ERROR unknown\");\n  puts(table[argc]);\n  return 0;\n}}\n",
            names.iter().map(|n| format!("{n}, ")).collect::<String>()
        );
        gcc(dir.path(), &format!("nvrtc{n}"), &src, &[])
    };
    let nvrtc_of = |p: &Path| {
        let r = report(p);
        r["artifacts"][0]["elf_files"][0]["static_cuda"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["library"] == "nvrtc")
            .cloned()
    };
    assert_eq!(nvrtc_of(&with_table(9)), None, "9 names");
    let s = nvrtc_of(&with_table(10)).expect("10 names: NVRTC's pattern");
    assert_eq!(s["confidence"], "certain");
    let evidence = s["evidence"].to_string();
    assert!(
        evidence.contains("__nv_nvrtc_builtin_header.h")
            && evidence.contains("a table of 10 error names of its own (NVRTC_ERROR_…)"),
        "{s:#}"
    );
    assert_eq!(nvrtc_of(Path::new(env!("CARGO_BIN_EXE_cudist"))), None);
}

/// `catalog sm --check` against real nvcc 13.5 (beside `CUDIST_CUOBJDUMP`): a list it calls
/// buildable compiles, and the result holds exactly the codes it predicted (read by cudist and by
/// cuobjdump); each entry it calls unbuildable for CUDA 13.5 is refused by nvcc.
#[test]
fn catalog_sm_check_agrees_with_nvcc() {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let bin = cuobjdump.parent().unwrap();
    let nvcc = bin.join("nvcc");
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("k.cu");
    std::fs::write(&src, "__global__ void k(int *p) { *p = 1; }\n").unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        bin.parent().unwrap().join("nvvm/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // nvcc with one -gencode per checked code; Ok(the .so) or Err(nvcc's message).
    let compile = |rows: &[Value], out: &str| -> Result<PathBuf, String> {
        let so = work.path().join(out);
        let mut cmd = Command::new(&nvcc);
        cmd.env("PATH", &path)
            .args(["-shared", "-Xcompiler", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src);
        for r in rows {
            let code = r["code"].as_str().unwrap();
            let virt = code.replace("sm_", "compute_");
            cmd.arg(format!("-gencode=arch={virt},code={code}"));
        }
        let o = cmd.output().expect("run nvcc");
        if o.status.success() {
            Ok(so)
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    };
    let check = |list: &str| -> (i32, Vec<Value>) {
        let o = cudist(&["catalog", "sm", "--json", "--cuda", "13.5", "--check", list]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            o.status.code().unwrap(),
            v["check"].as_array().unwrap().clone(),
        )
    };
    for (i, list) in [
        "7.5;8.6;9.0a;12.0+PTX",
        "75;86-real;100f-virtual",
        "-gencode arch=compute_80,code=[sm_80,compute_80] -gencode arch=compute_120a,code=sm_120a",
    ]
    .into_iter()
    .enumerate()
    {
        let (code, rows) = check(list);
        assert_eq!(code, 0, "{list}: {rows:?}");
        let so =
            compile(&rows, &format!("ok{i}.so")).unwrap_or_else(|e| panic!("{list}: nvcc: {e}"));
        // What the file holds: cudist's reading, which equals cuobjdump's (checked below).
        let v = inspect_json(&[so.to_str().unwrap()], 0);
        let entries = v["artifacts"][0]["elf_files"][0]["device_code"]
            .as_array()
            .unwrap();
        let mut got: Vec<String> = entries
            .iter()
            .map(|e| match e["kind"].as_str().unwrap() {
                "ptx" => e["arch"].as_str().unwrap().replace("sm_", "compute_"),
                _ => e["arch"].as_str().unwrap().to_string(),
            })
            .collect();
        let mut want: Vec<String> = rows
            .iter()
            .map(|r| r["code"].as_str().unwrap().to_string())
            .collect();
        // nvcc -shared embeds each cubin twice (two containers; cuobjdump lists both).
        got.sort();
        got.dedup();
        want.sort();
        assert_eq!(got, want, "{list}");
        let listing = Command::new(&cuobjdump)
            .args(["--list-elf", "--list-ptx"])
            .arg(&so)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&listing.stdout).lines().count(),
            entries.len(),
            "{list}: {}",
            String::from_utf8_lossy(&listing.stdout)
        );
    }
    // Entries cudist says CUDA 13.5 cannot build: nvcc 13.5 refuses each.
    for entry in ["5.0", "8.6a", "7.5f"] {
        let (code, rows) = check(entry);
        assert_eq!(code, 1, "{entry}: {rows:?}");
        assert!(
            !rows[0]["problems"].as_array().unwrap().is_empty(),
            "{entry}"
        );
        let refused = compile(&rows, "bad.so");
        assert!(refused.is_err(), "{entry}: nvcc built it");
    }
}

/// A library with compute_80 and compute_90 PTX and no cubin: a GPU newer than both JITs the
/// compute_90 one (the highest that fits, as slim keeps), and an sm_86 GPU the compute_80 one.
/// Slimmed for sm_120 with `--ptx newest`, only compute_90 is left and doctor's answer is the
/// same.
#[test]
fn the_ptx_a_gpu_compiles_is_the_highest_that_fits() {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let bin = cuobjdump.parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("k.cu");
    std::fs::write(&src, "__global__ void k(int *p) { *p = 1; }\n").unwrap();
    let so = work.path().join("two_ptx.so");
    let o = Command::new(bin.join("nvcc"))
        .env(
            "PATH",
            format!(
                "{}:{}:{}",
                bin.display(),
                bin.parent().unwrap().join("nvvm/bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .args(["-shared", "-Xcompiler", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .args([
            "-gencode=arch=compute_80,code=compute_80",
            "-gencode=arch=compute_90,code=compute_90",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let gpu = |file: &Path, sm: u32| -> (String, String) {
        let host = write_profile(
            &work.path().join(format!("h{sm}.json")),
            &serde_json::json!({"name": "box", "driver": "999.99", "driver_cuda": "13.5",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        );
        let (_, v) = doctor_on_profile(&host, file);
        let g = &v["files"][0]["gpus"][0];
        (
            g["status"].as_str().unwrap().to_string(),
            g["detail"].as_str().unwrap().to_string(),
        )
    };
    let (status, detail) = gpu(&so, 120);
    assert_eq!(status, "jit");
    assert!(detail.contains("the sm_90 PTX"), "{detail}");
    let (status, detail) = gpu(&so, 86);
    assert_eq!(status, "jit");
    assert!(detail.contains("the sm_80 PTX"), "{detail}");
    let slim = work.path().join("slim.so");
    let o = cudist(&[
        "slim",
        so.to_str().unwrap(),
        "--gpu",
        "12.0",
        "-o",
        slim.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(gpu(&slim, 120), gpu(&so, 120));
}
