//! `cudist select`: the build a careful person would pick, for host profiles of the kinds people
//! have (an old Turing box on driver 535, Ampere on 550, Hopper on 580, a newer driver, no GPU,
//! AMD), among builds of one package that differ in CUDA major, device code and kind; and on the
//! real cupy-cuda12x / cupy-cuda13x 14.2.0 wheels.

mod common;

use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// `cudist select --json --host PROFILE ARGS…`: exit code and report.
/// A run of `select` with this host profile. Without `--cache-dir`, a cache of its own (what a
/// run reads is kept there), so no run sees another's.
fn select(host: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["select", "--json", "--host", host.to_str().unwrap()];
    all.extend_from_slice(args);
    let cache = tempfile::tempdir().unwrap();
    if !args.contains(&"--cache-dir") {
        all.extend(["--cache-dir", cache.path().to_str().unwrap()]);
    }
    let o = cudist(&all);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{all:?}: {e}: {}{}", stdout(&o), stderr(&o)));
    (o.status.code(), v)
}

fn profile(dir: &Path, name: &str, v: Value) -> PathBuf {
    write_profile(&dir.join(format!("{name}.json")), &v)
}

/// The candidates' files in rank order, and each one's outcome.
fn ranking(v: &Value) -> Vec<(String, String)> {
    v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["file"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn reasons_of(v: &Value, file_prefix: &str) -> String {
    v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"].as_str().unwrap().starts_with(file_prefix))
        .map(|c| c["reasons"].to_string())
        .unwrap_or_else(|| panic!("no {file_prefix} in {v:#}"))
}

/// The `--package` arguments naming the family's projects on an index.
const FAMILY: [&str; 6] = [
    "--package",
    "demo-cu12",
    "--package",
    "demo-cu13",
    "--package",
    "demo",
];

/// A small family of builds of one package, made from the nvcc fixtures:
/// - `demo_cu13` 1.0: wide.so (sm_75 … sm_120 cubins, compute_120 PTX), needs libcudart.so.13;
/// - `demo_cu12` 1.0: wide.so slimmed to sm_75, sm_80, sm_86 (no PTX) with its NEEDED runtime
///   renamed to libcudart.so.12 (patchelf), as a CUDA 12 build of the same code would be;
/// - `demo` 1.0+cpu: no device code (hostonly.so);
/// - `demo` 1.0+rocm6.3: a ROCm build (hostonly.so; cudist reads no ROCm device code).
///
/// `None` (the test has nothing to judge) only outside CI, where patchelf may be missing.
fn family(dir: &Path) -> Option<PathBuf> {
    let patchelf = tool_from_env("CUDIST_PATCHELF")?;
    let house = dir.join("wheelhouse");
    std::fs::create_dir_all(&house).unwrap();
    let wide = std::fs::read(fixtures().join("wide.so")).unwrap();
    let host_only = std::fs::read(fixtures().join("hostonly.so")).unwrap();
    let cu12 = dir.join("wide-cu12.so");
    let o = cudist(&[
        "slim",
        fixtures().join("wide.so").to_str().unwrap(),
        "--gpu",
        "7.5;8.0;8.6",
        "--ptx",
        "drop",
        "-o",
        cu12.to_str().unwrap(),
    ]);
    ok(&o, "slim wide.so");
    let o = std::process::Command::new(patchelf)
        .args(["--replace-needed", "libcudart.so.13", "libcudart.so.12"])
        .arg(&cu12)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let tag = "py3-none-manylinux2014_x86_64";
    write_wheel(
        &house.join(format!("demo_cu13-1.0-{tag}.whl")),
        "demo_cu13",
        &["nvidia-cuda-runtime>=13,<14"],
        &[("demo/_k.so", wide)],
    );
    write_wheel(
        &house.join(format!("demo_cu12-1.0-{tag}.whl")),
        "demo_cu12",
        &["nvidia-cuda-runtime-cu12>=12,<13"],
        &[("demo/_k.so", std::fs::read(&cu12).unwrap())],
    );
    write_wheel_version(
        &house.join(format!("demo-1.0+cpu-{tag}.whl")),
        "demo",
        "1.0+cpu",
        &[],
        &[("demo/_k.so", host_only.clone())],
    );
    write_wheel_version(
        &house.join(format!("demo-1.0+rocm6.3-{tag}.whl")),
        "demo",
        "1.0+rocm6.3",
        &[],
        &[("demo/_k.so", host_only)],
    );
    Some(house)
}

#[test]
fn each_machine_gets_the_build_a_careful_person_would_pick() {
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    let h = house.to_str().unwrap();
    let p = |name: &str, v: Value| profile(work.path(), name, v);
    let base = |driver: Option<&str>, gpus: Value| {
        let mut v =
            serde_json::json!({"glibc": "2.35", "python": "3.11", "arch": "x86_64", "gpus": gpus});
        if let Some(d) = driver {
            v["driver"] = d.into();
        }
        v
    };

    // Turing on driver 535: CUDA 13 needs 580, so the CUDA 12 build, which has an sm_75 cubin.
    let (code, v) = select(
        &p(
            "turing",
            base(
                Some("535.183.01"),
                serde_json::json!([{"name": "T4", "sm": 75}]),
            ),
        ),
        &[h],
    );
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["best"], "demo_cu12-1.0-py3-none-manylinux2014_x86_64.whl");
    assert_eq!(v["requirement"], "demo-cu12==1.0");
    assert!(
        reasons_of(&v, "demo_cu13").contains("driver 535.183.01 is too old for CUDA 13"),
        "{v:#}"
    );
    // The CPU and ROCm builds do not use the T4.
    assert!(reasons_of(&v, "demo-1.0+cpu").contains("does not use the host's NVIDIA GPUs"));

    // Ampere on 550: the same, with the sm_86 cubin.
    let (_, v) = select(
        &p(
            "ampere",
            base(
                Some("550.54.14"),
                serde_json::json!([{"name": "A10", "sm": 86}]),
            ),
        ),
        &[h],
    );
    assert_eq!(v["best"], "demo_cu12-1.0-py3-none-manylinux2014_x86_64.whl");
    assert!(reasons_of(&v, "demo_cu12").contains("cubin"), "{v:#}");

    // Hopper on 580: the CUDA 12 build has no sm_90 cubin and no PTX (no kernel image); the
    // CUDA 13 build runs natively.
    let (_, v) = select(
        &p(
            "hopper",
            base(
                Some("580.65.06"),
                serde_json::json!([{"name": "H100", "sm": 90}]),
            ),
        ),
        &[h],
    );
    assert_eq!(v["best"], "demo_cu13-1.0-py3-none-manylinux2014_x86_64.whl");
    let r = ranking(&v);
    let cu12 = r.iter().find(|(f, _)| f.starts_with("demo_cu12")).unwrap();
    assert_eq!(cu12.1, "rejected", "{v:#}");
    assert!(
        reasons_of(&v, "demo_cu12").contains("no-kernel-image"),
        "{v:#}"
    );

    // No GPU: the CPU build.
    let (_, v) = select(&p("nogpu", base(None, serde_json::json!([]))), &[h]);
    assert_eq!(v["best"], "demo-1.0+cpu-py3-none-manylinux2014_x86_64.whl");
    assert_eq!(v["requirement"], "demo==1.0+cpu");

    // AMD MI300 (gfx942): the ROCm build.
    let mut amd = base(None, serde_json::json!([]));
    amd["amd_gpus"] = serde_json::json!([{"gfx": "gfx942"}]);
    let (_, v) = select(&p("amd", amd), &[h]);
    assert_eq!(
        v["best"],
        "demo-1.0+rocm6.3-py3-none-manylinux2014_x86_64.whl"
    );
    assert!(
        reasons_of(&v, "demo_cu13").contains("AMD (gfx942)"),
        "{v:#}"
    );

    // Python 3.10 and a glibc older than manylinux2014's: nothing installs, exit 1, each says why.
    let mut old = base(
        Some("580.65.06"),
        serde_json::json!([{"name": "H100", "sm": 90}]),
    );
    old["glibc"] = "2.12".into();
    let (code, v) = select(&p("old", old), &[h]);
    assert_eq!(code, Some(1), "{v:#}");
    assert!(v["best"].is_null());
    assert!(reasons_of(&v, "demo_cu13").contains("needs glibc 2.17, the host has 2.12"));

    // The one line for pip, and a name that disagrees with the content.
    let turing = work.path().join("turing.json");
    let o = cudist(&[
        "select",
        "--print-requirement",
        "--host",
        turing.to_str().unwrap(),
        h,
    ]);
    assert_eq!(stdout(&o), "demo-cu12==1.0\n");
    let liar = work.path().join("liar");
    std::fs::create_dir_all(&liar).unwrap();
    write_wheel_version(
        &liar.join("demo_cu12-2.0-py3-none-manylinux2014_x86_64.whl"),
        "demo_cu12",
        "2.0",
        &[],
        &[(
            "demo/_k.so",
            std::fs::read(fixtures().join("wide.so")).unwrap(),
        )],
    );
    let (_, v) = select(&turing, &[liar.to_str().unwrap()]);
    let r = reasons_of(&v, "demo_cu12-2.0");
    assert!(
        r.contains("says CUDA 12, but its content needs CUDA 13 (libcudart.so.13)")
            && r.contains("too old for CUDA 13"),
        "{r}"
    );
}

/// Native code beats JIT even when the JIT build is smaller; a driver too old for the PTX's ISA
/// cannot JIT it at all.
#[test]
fn native_code_before_jit_and_ptx_the_driver_cannot_read() {
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    // multi.so slimmed to its sm_80 cubin and compute_90 PTX: an sm_90 GPU JIT-compiles it.
    let jit = work.path().join("jit.so");
    ok(
        &cudist(&[
            "slim",
            fixtures().join("multi.so").to_str().unwrap(),
            "--gpu",
            "8.0",
            "--ptx",
            "keep",
            "-o",
            jit.to_str().unwrap(),
        ]),
        "slim multi.so",
    );
    let tag = "py3-none-manylinux2014_x86_64";
    write_wheel(
        &house.join(format!("small_jit-1.0-{tag}.whl")),
        "small_jit",
        &[],
        &[("k/_k.so", std::fs::read(&jit).unwrap())],
    );
    write_wheel(
        &house.join(format!("big_native-1.0-{tag}.whl")),
        "big_native",
        &[],
        &[
            (
                "k/_k.so",
                std::fs::read(fixtures().join("wide.so")).unwrap(),
            ),
            (
                "k/pad.bin",
                (0..400_000u32).map(|i| (i * 7919 % 251) as u8).collect(),
            ),
        ],
    );
    // A driver 620 runs CUDA 13.5 (catalog): the compute_90 PTX (ISA 9.5, CUDA 13.5) can be
    // JIT-compiled.
    let new = profile(
        work.path(),
        "new",
        serde_json::json!({"driver": "620.42.01", "glibc": "2.39", "python": "3.11",
            "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let (_, v) = select(&new, &[house.to_str().unwrap()]);
    assert_eq!(
        ranking(&v),
        vec![
            (format!("big_native-1.0-{tag}.whl"), "best".to_string()),
            (format!("small_jit-1.0-{tag}.whl"), "jit".to_string()),
        ],
        "{v:#}"
    );
    assert!(
        reasons_of(&v, "small_jit").contains("compiles the sm_90 PTX"),
        "{v:#}"
    );
    // Driver 580 runs CUDA 13.0 builds, but cannot read that PTX.
    let old = profile(
        work.path(),
        "old",
        serde_json::json!({"driver": "580.65.06", "glibc": "2.39", "python": "3.11",
            "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let (_, v) = select(&old, &[house.to_str().unwrap()]);
    assert!(reasons_of(&v, "small_jit").contains("ptx-too-new"), "{v:#}");
}

/// The real cupy family: cupy-cuda12x and cupy-cuda13x 14.2.0, among other wheels (`--package
/// cupy` keeps only its builds).
#[test]
fn the_real_cupy_builds() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    if !wheels
        .join("cupy_cuda13x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl")
        .exists()
    {
        skip("cupy-cuda13x 14.2.0 is not in CUDIST_REAL_WHEELS (scripts/test.sh fetches it)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = wheels.to_str().unwrap();
    let host = |name: &str, driver: &str, sm: u32| {
        profile(
            work.path(),
            name,
            serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        )
    };
    // sm_75 on 535: cupy-cuda12x (CUDA 13 needs 580).
    let (code, v) = select(&host("t4", "535.183.01", 75), &["--package", "cupy", w]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["requirement"], "cupy-cuda12x==14.2.0");
    assert_eq!(v["candidates"].as_array().unwrap().len(), 2, "{v:#}");
    assert!(reasons_of(&v, "cupy_cuda13x").contains("too old for CUDA 13"));
    // sm_90 on 580: both run natively; the newer CUDA (and the smaller wheel) wins.
    let (_, v) = select(&host("h100", "580.65.06", 90), &["--package", "cupy", w]);
    assert_eq!(v["requirement"], "cupy-cuda13x==14.2.0");
    assert!(reasons_of(&v, "cupy_cuda13x").contains("a native cubin in each of its"));
}

/// variantlib's verdict on a wheel with the properties `wheel` for a host with `host`'s:
/// `supported` or `unsupported` (its own property filter).
fn variantlib_verdict(python: &Path, host: &[String], wheel: &[String]) -> String {
    let script = r#"
import json, sys
from variantlib.models.variant import VariantDescription, VariantProperty
from variantlib.resolver.filtering import filter_variants_by_property
host = [VariantProperty.from_str(l) for l in json.loads(sys.argv[1])]
wheel = [VariantProperty.from_str(l) for l in json.loads(sys.argv[2])]
ok = list(filter_variants_by_property([VariantDescription(wheel)], allowed_properties=host))
print("supported" if ok else "unsupported")
"#;
    let o = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(serde_json::to_string(host).unwrap())
        .arg(serde_json::to_string(wheel).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The host's wheel-variant properties (`select --variant-properties`), comments left out.
fn host_variant_properties(host: &str) -> Vec<String> {
    let o = cudist(&["select", "--variant-properties", "--host", host]);
    ok(&o, "select --variant-properties");
    stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Wheel-variant properties, checked by `variantlib` 0.2.2 (the reference library): every line
/// cudist prints parses as a property; the properties a candidate's content needs are supported
/// by the host's (variantlib's own property filter) exactly where select finds that the driver
/// and the GPU run it; a `variant.json` that declares code the wheel does not have is said.
#[test]
fn variant_properties_parse_and_match_as_variantlib_says() {
    let Some(variantlib) = tool_from_env("CUDIST_VARIANTLIB_PYTHON") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    let lines = |o: &std::process::Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let wheels = ["demo_cu12", "demo_cu13"];
    for (name, driver, sm) in [
        ("turing", "535.183.01", 75),
        ("hopper", "580.65.06", 90),
        ("ampere", "550.54.14", 86),
    ] {
        let host = profile(
            work.path(),
            name,
            serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        );
        let host_props = host_variant_properties(host.to_str().unwrap());
        assert!(host_props
            .iter()
            .any(|p| p == &format!("nvidia :: sm_arch :: {sm}_real")));
        let (_, v) = select(&host, &[house.to_str().unwrap()]);
        for w in wheels {
            let file = house.join(format!("{w}-1.0-py3-none-manylinux2014_x86_64.whl"));
            let o = cudist(&["inspect", "--variant-properties", file.to_str().unwrap()]);
            ok(&o, "inspect --variant-properties");
            let content = lines(&o);
            assert!(content.len() >= 2, "{content:?}");
            let says = variantlib_verdict(&variantlib, &host_props, &content);
            let outcome = v["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["file"].as_str().unwrap().starts_with(w))
                .map(|c| c["outcome"].as_str().unwrap().to_string())
                .unwrap();
            let runs = outcome == "best" || outcome == "works";
            assert_eq!(
                says == "supported",
                runs,
                "{name} {w}: variantlib says {says}, select says {outcome}"
            );
        }
    }
    // A variant.json declaring sm_90 code for the CUDA 12 build, which has none, and a CUDA 11
    // lower bound: both said, exit 1.
    let liar = work
        .path()
        .join("demo_cu12-1.0-py3-none-manylinux2014_x86_64.whl");
    let mut members = vec![(
        "demo/_k.so",
        std::fs::read(work.path().join("wide-cu12.so")).unwrap(),
    )];
    let declared = serde_json::json!({"variants": {"cu12sm90": {"nvidia": {
        "cuda_version_lower_bound": ["11"], "sm_arch": ["90_real", "86_real"]}}}});
    members.push((
        "demo_cu12-1.0.dist-info/variant.json",
        serde_json::to_vec(&declared).unwrap(),
    ));
    write_wheel(&liar, "demo_cu12", &[], &members);
    let o = cudist(&["inspect", "--variant-properties", liar.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.contains("# disagrees: declares sm_arch 90_real, but no file has code for it")
            && text
                .contains("# disagrees: has code for sm_arch 75_real, which it does not declare")
            && text.contains("declares cuda_version_lower_bound 11, but its content needs CUDA 12"),
        "{text}"
    );
}

/// A PEP 691 / PEP 503 index served on loopback by the test (Python's http.server, counting the
/// bytes it sends): the newest release of each project is listed; a wheel whose name rules it out
/// (CUDA 13 on driver 535) is never fetched; a second run fetches nothing (the cache, by sha256).
#[test]
fn candidates_from_an_index_are_fetched_only_when_their_name_allows() {
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    // An older release that must not be read: demo_cu12 0.9.
    let tag = "py3-none-manylinux2014_x86_64";
    write_wheel_version(
        &house.join(format!("demo_cu12-0.9-{tag}.whl")),
        "demo_cu12",
        "0.9",
        &[],
        &[("demo/_k.so", b"not even ELF".to_vec())],
    );
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let host = profile(
        work.path(),
        "turing",
        serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let cache = work.path().join("cache");
    let run = || {
        let mut args = vec!["--index", &index];
        args.extend(FAMILY);
        // Whole files, into the cache (front reads are tested below).
        args.extend(["--cache-dir", cache.to_str().unwrap(), "--fetch", "whole"]);
        select(&host, &args)
    };
    let (code, v) = run();
    let (code2, v2) = run();
    let served = std::fs::read_to_string(&log).unwrap_or_default();
    // A page whose sha256 does not match the file: exit 3, nothing left in the cache.
    let bad_cache = work.path().join("bad-cache");
    let o = cudist(&[
        "select",
        "--host",
        host.to_str().unwrap(),
        "--index",
        &index,
        "--package",
        "demo-bad",
        "--cache-dir",
        bad_cache.to_str().unwrap(),
        "--fetch",
        "whole",
    ]);
    child.kill().ok();
    child.wait().ok();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("sha256"), "{}", stderr(&o));
    let left: Vec<_> = walk(&bad_cache);
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["best"], format!("demo_cu12-1.0-{tag}.whl"), "{v:#}");
    let ix = &v["indexes"][0];
    assert_eq!(ix["listed"], 4, "{ix:#}");
    assert_eq!(
        ix["not_fetched"],
        serde_json::json!([format!("demo_cu13-1.0-{tag}.whl")])
    );
    assert!(
        reasons_of(&v, "demo_cu13").contains("the wheel was not fetched"),
        "{v:#}"
    );
    // What the server sent: the three pages and the three wheels read, never the CUDA 13 one or
    // the old release; the second run only the pages.
    let files: Vec<&str> = served
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter(|p| p.contains("/files/"))
        .collect();
    assert_eq!(files.len(), 3, "{served}");
    assert!(
        files
            .iter()
            .all(|f| !f.contains("demo_cu13") && !f.contains("0.9")),
        "{served}"
    );
    let sent: u64 = served
        .lines()
        .filter_map(|l| l.split(' ').nth(1)?.parse::<u64>().ok())
        .sum();
    let first_run_bytes = v["indexes"][0]["bytes_received"].as_u64().unwrap();
    let second_run_bytes = v2["indexes"][0]["bytes_received"].as_u64().unwrap();
    assert_eq!(first_run_bytes + second_run_bytes, sent, "{served}");
    assert_eq!(code2, Some(0));
    assert_eq!(v2["indexes"][0]["fetched"], serde_json::json!([]));
    assert_eq!(v2["best"], v["best"]);
}

/// The regular files under a directory (none when it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The simple-API server on loopback (`scripts/index-server.py`): each `(name, dir)` is an index
/// at `/<name>/simple/<project>/` listing the wheels in `dir` whose name normalises to the
/// project, with their files at `/<name>/files/<file>`, whole or by byte range. JSON pages (PEP
/// 691) when asked for, except for project `demo`, which gets HTML (PEP 503); project `demo-bad`
/// lists `demo_cu12-1.0` with a wrong sha256. Every answer's path, size and range are appended
/// to `log`. Returns the server and its port.
fn serve(indexes: &[(&str, &Path)], log: &Path) -> (Served, String) {
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/index-server.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(server).arg(log);
    for (name, dir) in indexes {
        cmd.arg(name).arg(dir);
    }
    // Its stderr is not the test's: a server left behind must not hold the test's output open.
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut port,
    )
    .unwrap();
    (Served(child), port.trim().to_string())
}

/// The loopback server, stopped when dropped (a failing test does not leave it running).
struct Served(std::process::Child);

impl Served {
    fn kill(&mut self) -> std::io::Result<()> {
        self.0.kill()
    }
    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.0.wait()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// PyTorch's layout: one project, one release, its CUDA builds on separate indexes (`…/cu126`,
/// `…/cu130`) told apart by local labels. Both indexes are read; the build for the machine wins,
/// and the requirement names its index.
#[test]
fn builds_on_per_cuda_indexes_are_compared_and_the_index_is_named() {
    let work = tempfile::tempdir().unwrap();
    // The family's CUDA 12 library (wide-cu12.so) is reused below.
    let Some(_house) = family(work.path()) else {
        return;
    };
    let tag = "py3-none-manylinux2014_x86_64";
    let (cu126, cu130) = (work.path().join("cu126"), work.path().join("cu130"));
    std::fs::create_dir_all(&cu126).unwrap();
    std::fs::create_dir_all(&cu130).unwrap();
    let so = |f: &str| std::fs::read(f).unwrap();
    write_wheel_version(
        &cu126.join(format!("demo-1.0+cu126-{tag}.whl")),
        "demo",
        "1.0+cu126",
        &[],
        &[(
            "demo/_k.so",
            so(work.path().join("wide-cu12.so").to_str().unwrap()),
        )],
    );
    write_wheel_version(
        &cu130.join(format!("demo-1.0+cu130-{tag}.whl")),
        "demo",
        "1.0+cu130",
        &[],
        &[(
            "demo/_k.so",
            so(fixtures().join("wide.so").to_str().unwrap()),
        )],
    );
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("cu126", &cu126), ("cu130", &cu130)], &log);
    let ix126 = format!("http://127.0.0.1:{port}/cu126/simple");
    let ix130 = format!("http://127.0.0.1:{port}/cu130/simple");
    let cache = work.path().join("cache");
    let pick = |name: &str, driver: &str, sm: u32| {
        let host = profile(
            work.path(),
            name,
            serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        );
        let o = cudist(&[
            "select",
            "--print-requirement",
            "--host",
            host.to_str().unwrap(),
            "--index",
            &ix126,
            "--index",
            &ix130,
            "--package",
            "demo",
            "--cache-dir",
            cache.to_str().unwrap(),
        ]);
        (o.status.code(), stdout(&o))
    };
    let turing = pick("turing", "535.183.01", 75);
    let served_turing = std::fs::read_to_string(&log).unwrap_or_default();
    let hopper = pick("hopper", "580.65.06", 90);
    let served = std::fs::read_to_string(&log).unwrap_or_default();
    child.kill().ok();
    child.wait().ok();
    assert_eq!(
        hopper,
        (Some(0), format!("demo==1.0+cu130 --index-url {ix130}\n")),
        "{served}"
    );
    assert_eq!(
        turing,
        (Some(0), format!("demo==1.0+cu126 --index-url {ix126}\n")),
        "{served}"
    );
    // The +cu130 wheel was read (by range requests) for the H100, never for the driver-535
    // machine.
    assert!(!served_turing.contains("/cu130/files/"), "{served_turing}");
    assert!(served.contains("/cu130/files/"), "{served}");
}

/// The outcome and per-GPU statuses of each candidate that was read, by file.
fn verdicts(v: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<_> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["read"] != "none")
        .map(|c| {
            (
                c["file"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
                c["gpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|g| g["status"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Bytes the loopback server sent for wheel files (ranges included), from its log.
fn file_bytes_sent(log: &Path, file_part: &str) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("/files/") && l.contains(file_part))
        .filter_map(|l| l.split(' ').nth(1)?.parse::<u64>().ok())
        .sum()
}

/// Reading wheels on an index by range requests (`--fetch front`, the default) judges every
/// machine as reading them whole does: the same best build, and for every candidate that front
/// reading reads, the same outcome and GPU verdicts; a candidate it leaves unread cannot have been
/// the best. What a front read read is kept in the cache: a second run asks for none of it again.
#[test]
fn front_reads_judge_as_whole_reads_do() {
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let hosts = [
        (
            "turing",
            serde_json::json!({"driver": "535.183.01", "gpus": [{"name": "T4", "sm": 75}]}),
        ),
        (
            "ampere",
            serde_json::json!({"driver": "550.54.14", "gpus": [{"name": "A10", "sm": 86}]}),
        ),
        (
            "hopper",
            serde_json::json!({"driver": "580.65.06", "gpus": [{"name": "H100", "sm": 90}]}),
        ),
        (
            "blackwell",
            serde_json::json!({"driver": "580.65.06", "gpus": [{"name": "B200", "sm": 100}, {"name": "L4", "sm": 89}]}),
        ),
        ("nogpu", serde_json::json!({"gpus": []})),
        (
            "amd",
            serde_json::json!({"gpus": [], "amd_gpus": [{"gfx": "gfx942"}]}),
        ),
    ];
    for (name, mut v) in hosts {
        v["glibc"] = "2.35".into();
        v["python"] = "3.11".into();
        let host = profile(work.path(), name, v);
        let run = |fetch: &str| {
            let cache = work.path().join(format!("cache-{name}-{fetch}"));
            let mut args = vec!["--index", &index];
            args.extend(FAMILY);
            args.extend(["--cache-dir", cache.to_str().unwrap(), "--fetch", fetch]);
            select(&host, &args)
        };
        let (wcode, whole) = run("whole");
        let (fcode, front) = run("front");
        assert_eq!(
            (fcode, &front["best"]),
            (wcode, &whole["best"]),
            "{name}: {front:#}"
        );
        assert_eq!(front["requirement"], whole["requirement"], "{name}");
        let w = verdicts(&whole);
        for f in verdicts(&front) {
            assert!(
                w.contains(&f),
                "{name}: front read {f:?}, whole reads {w:?}"
            );
        }
        for c in front["candidates"].as_array().unwrap() {
            match c["outcome"].as_str().unwrap() {
                "unread" => assert_ne!(c["file"], whole["best"], "{name}: {front:#}"),
                _ if c["read"] == "front" => {
                    assert!(c["bytes_received"].as_u64().unwrap() > 0, "{c:#}")
                }
                _ => {}
            }
        }
        // The front run's cache holds what it read, not wheels; a second run asks for none of
        // those bytes again and judges the same.
        let kept = walk(&work.path().join(format!("cache-{name}-front")));
        assert!(
            kept.iter()
                .all(|p| p.extension().is_some_and(|e| e == "ranges")),
            "{name}: {kept:?}"
        );
        let before = file_bytes_sent(&log, "demo");
        let (again_code, again) = run("front");
        assert_eq!(
            (again_code, &again["best"]),
            (fcode, &front["best"]),
            "{name}: {again:#}"
        );
        for c in again["candidates"].as_array().unwrap() {
            if c["read"] == "front" {
                assert_eq!(c["bytes_received"], 0, "{name}: {c:#}");
                assert!(
                    c["reasons"]
                        .to_string()
                        .contains("kept from an earlier run"),
                    "{c:#}"
                );
            }
        }
        assert_eq!(file_bytes_sent(&log, "demo"), before, "{name}");
    }
    child.kill().ok();
    child.wait().ok();
    // On the H100 the CUDA 13 build, read first, runs natively: the CUDA 12 build cannot rank
    // above it and is not read at all.
    let _ = std::fs::remove_file(&log);
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let hopper = work.path().join("hopper.json");
    let (_, v) = select(
        &hopper,
        &[
            "--index",
            &index,
            "--package",
            "demo-cu12",
            "--package",
            "demo-cu13",
            "--cache-dir",
            work.path().join("c2").to_str().unwrap(),
        ],
    );
    child.kill().ok();
    child.wait().ok();
    assert_eq!(
        v["indexes"][0]["unread"],
        serde_json::json!(["demo_cu12-1.0-py3-none-manylinux2014_x86_64.whl"]),
        "{v:#}"
    );
    assert_eq!(file_bytes_sent(&log, "demo_cu12"), 0);
    assert!(reasons_of(&v, "demo_cu12").contains("not read"), "{v:#}");
    let sent = file_bytes_sent(&log, "demo_cu13");
    assert_eq!(
        v["indexes"][0]["bytes_received"].as_u64().unwrap(),
        sent + page_bytes(&log),
        "{v:#}"
    );
}

/// Bytes the loopback server sent for index pages.
fn page_bytes(log: &Path) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("/simple/"))
        .filter_map(|l| l.split(' ').nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The real cupy-cuda12x and cupy-cuda13x 14.2.0 wheels on a loopback index, read by range
/// requests of 16 KiB (`--range-size`, the fewest bytes): for an H100 on driver 580 the bytes the
/// server sends are under 10% of the two wheels, and the judgement is the one reading them whole
/// gives (`the_real_cupy_builds`). Requests sized by the link (the default) are far fewer, for a
/// few more bytes, and judge the same.
#[test]
fn selecting_among_remote_cupy_wheels_reads_a_tenth_of_them() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let files = [
        "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
        "cupy_cuda13x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
    ];
    if files.iter().any(|f| !wheels.join(f).exists()) {
        skip("the cupy-cuda12x and cupy-cuda13x 14.2.0 wheels are not in CUDIST_REAL_WHEELS (scripts/test.sh fetches them)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    let mut total = 0;
    for f in files {
        std::os::unix::fs::symlink(wheels.join(f), house.join(f)).unwrap();
        total += std::fs::metadata(wheels.join(f)).unwrap().len();
    }
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let host = |name: &str, driver: &str, sm: u32| {
        profile(
            work.path(),
            name,
            serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        )
    };
    let mut args = vec![
        "--index",
        &index,
        "--package",
        "cupy-cuda12x",
        "--package",
        "cupy-cuda13x",
    ];
    // Requests sized by the link: the H100's answer, the requests made and the bytes sent.
    let (auto_code, auto) = select(&host("h100", "580.65.06", 90), &args);
    let requests = |log: &Path| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("/files/"))
            .count()
    };
    let (auto_requests, auto_sent) = (requests(&log), file_bytes_sent(&log, "cupy"));
    let _ = std::fs::remove_file(&log);
    args.extend(["--range-size", "16K"]);
    let (code, h100) = select(&host("h100", "580.65.06", 90), &args);
    let sent_h100 = file_bytes_sent(&log, "cupy");
    let requests_h100 = requests(&log);
    let _ = std::fs::remove_file(&log);
    let (_, t4) = select(&host("t4", "535.183.01", 75), &args);
    let sent_t4 = file_bytes_sent(&log, "cupy");
    child.kill().ok();
    child.wait().ok();
    eprintln!(
        "H100, requests sized by the link: {auto_requests} requests, {auto_sent} bytes; \
         of 16 KiB: {requests_h100} requests, {sent_h100} bytes"
    );
    assert_eq!(
        (auto_code, &auto["requirement"]),
        (Some(0), &serde_json::json!("cupy-cuda13x==14.2.0")),
        "{auto:#}"
    );
    assert!(
        auto_requests * 3 < requests_h100 && auto_sent * 4 < total,
        "{auto_requests} requests, {auto_sent} bytes"
    );
    assert_eq!(code, Some(0), "{h100:#}");
    assert_eq!(h100["requirement"], "cupy-cuda13x==14.2.0");
    assert!(
        reasons_of(&h100, "cupy_cuda13x").contains("a native cubin in each of its 3"),
        "{h100:#}"
    );
    assert_eq!(h100["indexes"][0]["unread"][0], files[0], "{h100:#}");
    assert!(
        sent_h100 * 10 < total,
        "H100: {sent_h100} of {total} bytes ({:.1}%)",
        100.0 * sent_h100 as f64 / total as f64
    );
    eprintln!(
        "H100: {sent_h100} of {total} bytes ({:.2}%); T4: {sent_t4} ({:.2}%)",
        100.0 * sent_h100 as f64 / total as f64,
        100.0 * sent_t4 as f64 / total as f64
    );
    // The T4 on 535: CUDA 13 is ruled out by name, cupy-cuda12x is read up to its sm_75 cubins
    // (its sixth architecture): less than its own size, but not a tenth of the pair.
    assert_eq!(t4["requirement"], "cupy-cuda12x==14.2.0");
    assert!(
        reasons_of(&t4, "cupy_cuda12x").contains("runs the sm_75 cubin"),
        "{t4:#}"
    );
    assert!(
        sent_t4 < std::fs::metadata(wheels.join(files[0])).unwrap().len() / 2,
        "{sent_t4}"
    );
}

/// The files `pip download --no-deps ARGS` saves into `out`; None where pip cannot run (never
/// in CI).
fn pip_download(out: &Path, args: &[&str]) -> Option<Vec<String>> {
    let pip = std::process::Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-cache-dir",
        ])
        .args(["--disable-pip-version-check", "-d"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    if !pip.status.success() {
        skip(&format!(
            "pip could not download: {}",
            String::from_utf8_lossy(&pip.stderr).trim()
        ));
        return None;
    }
    Some(
        std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect(),
    )
}

/// The release judged is the one pip takes, with pip as the oracle (`pip download` from the same
/// loopback index): a post release after its final, no pre-release while a final is there, no
/// yanked file (PEP 592), in JSON and HTML pages alike; and only pre-releases, as pip does then.
#[test]
fn the_release_judged_is_the_one_pip_takes() {
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    // `rel` gets JSON pages, `demo` HTML (scripts/index-server.py); `only` has pre-releases only.
    let mut files = Vec::new();
    for project in ["rel", "demo"] {
        for v in ["1.9", "1.9.post1", "2.0.dev3", "2.1"] {
            files.push((project, v));
        }
    }
    files.extend([("only", "3.0a1"), ("only", "3.0a2")]);
    for (project, v) in &files {
        let path = house.join(format!("{project}-{v}-py3-none-any.whl"));
        write_wheel_version(
            &path,
            project,
            v,
            &[],
            &[(&format!("{project}/__init__.py"), b"".to_vec())],
        );
        if *v == "2.1" {
            std::fs::write(format!("{}.yanked", path.display()), "broken build").unwrap();
        }
    }
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let host = profile(
        work.path(),
        "host",
        serde_json::json!({"glibc": "2.35", "python": "3.11", "arch": "x86_64", "gpus": []}),
    );
    for project in ["rel", "demo", "only"] {
        let out = work.path().join(format!("pip-{project}"));
        let Some(got) = pip_download(&out, &["--index-url", &index, project]) else {
            child.kill().ok();
            return;
        };
        let (_, v) = select(&host, &["--index", &index, "--package", project]);
        assert_eq!(
            got,
            [v["best"].as_str().unwrap().to_string()],
            "{project}: pip took {got:?}; select judged {:#}",
            v["candidates"]
        );
    }
    // `--package` takes a version specifier, as pip does; a project the index lacks is said
    // with a hint (a family's builds are projects of their own there).
    let (_, v) = select(&host, &["--index", &index, "--package", "rel<1.9.post1"]);
    assert_eq!(v["best"], "rel-1.9-py3-none-any.whl", "{v:#}");
    let o = cudist(&[
        "select",
        "--host",
        host.to_str().unwrap(),
        "--index",
        &index,
        "--package",
        "nosuch",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing of nosuch there") && stderr(&o).contains("name each"),
        "{}",
        stderr(&o)
    );
    // A plain build and one with a local label in one release: `==1.0` would let pip take
    // `1.0+cu126`; the requirement printed pins the plain one, and pip takes it.
    for v in ["1.0", "1.0+cu126"] {
        write_wheel_version(
            &house.join(format!("lbl-{v}-py3-none-any.whl")),
            "lbl",
            v,
            &[],
            &[("lbl/__init__.py", b"".to_vec())],
        );
    }
    let o = cudist(&[
        "select",
        "--print-requirement",
        "--host",
        host.to_str().unwrap(),
        "--index",
        &index,
        "--package",
        "lbl",
    ]);
    ok(&o, "select --print-requirement");
    let requirement = stdout(&o);
    assert_eq!(requirement, format!("lbl===1.0 --index-url {index}\n"));
    let args: Vec<&str> = requirement.split_whitespace().collect();
    let got = pip_download(&work.path().join("pip-lbl"), &args).expect("pip downloaded before");
    assert_eq!(got, ["lbl-1.0-py3-none-any.whl"]);
    child.kill().ok();
    child.wait().ok();
}

/// A package that carries one library per CUDA release and loads one of them (the real
/// bitsandbytes 0.50.2: libbitsandbytes_cuda118.so … cuda132.so) runs where one of them does, and
/// is judged by that one, read whole or by range requests alike: CUDA 12 on a T4 on 535 (its CUDA
/// 13 libraries need 580), CUDA 13 on an H100 on 580, and on a P100 (sm_60) a library up to CUDA
/// 12.6, the last with sm_60 code.
#[test]
fn a_package_with_per_cuda_libraries_runs_where_one_of_them_does() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let file = "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl";
    if !wheels.join(file).exists() {
        skip("bitsandbytes 0.50.2 is not in CUDIST_REAL_WHEELS (scripts/test.sh fetches it)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    std::os::unix::fs::symlink(wheels.join(file), house.join(file)).unwrap();
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    for (name, driver, sm, cuda) in [
        ("t4", "535.183.01", 75, "12."),
        ("h100", "580.65.06", 90, "13."),
        ("p100", "535.183.01", 60, "12."),
    ] {
        let host = profile(
            work.path(),
            name,
            serde_json::json!({"driver": driver, "glibc": "2.35", "python": "3.11",
                "gpus": [{"name": "GPU", "sm": sm}]}),
        );
        let (dir_code, dir) = select(&host, &[house.to_str().unwrap()]);
        let (front_code, front) = select(&host, &["--index", &index, "--package", "bitsandbytes"]);
        for (code, v) in [(dir_code, &dir), (front_code, &front)] {
            assert_eq!(code, Some(0), "{name}: {v:#}");
            let best = &v["candidates"][0];
            assert_eq!(best["outcome"], "best", "{name}: {v:#}");
            assert_eq!(best["gpus"][0]["status"], "cubin", "{name}: {best:#}");
            assert!(
                best["build"]["version"].as_str().unwrap().starts_with(cuda),
                "{name}: {best:#}"
            );
        }
        assert_eq!(
            dir["candidates"][0]["build"], front["candidates"][0]["build"],
            "{name}"
        );
        if name == "p100" {
            let v = dir["candidates"][0]["build"]["version"].as_str().unwrap();
            assert!(["11.8", "12.1", "12.4", "12.6"].contains(&v), "{v}");
        }
    }
    child.kill().ok();
    child.wait().ok();
}

/// A GPU build with no kernel image for the machine's GPU ranks below the CPU build, which is
/// chosen (faiss-gpu-cu12, built for sm_70 and sm_80 only, against faiss-cpu on an H100). With
/// no CPU build nothing works: `--print-requirement` prints nothing on stdout, exit 1.
#[test]
fn a_gpu_build_that_cannot_run_ranks_below_the_cpu_build() {
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    let two = work.path().join("two");
    std::fs::create_dir_all(&two).unwrap();
    for e in std::fs::read_dir(&house).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if name.starts_with("demo_cu12-") || name.starts_with("demo-1.0+cpu-") {
            std::fs::copy(house.join(&name), two.join(&name)).unwrap();
        }
    }
    let hopper = profile(
        work.path(),
        "hopper",
        serde_json::json!({"driver": "580.65.06", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let (code, v) = select(&hopper, &[two.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{v:#}");
    assert!(
        v["best"].as_str().unwrap().starts_with("demo-1.0+cpu-"),
        "{v:#}"
    );
    let gpu = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"].as_str().unwrap().starts_with("demo_cu12-"))
        .unwrap();
    assert_eq!(gpu["outcome"], "rejected", "{gpu:#}");
    assert!(
        gpu["reasons"].to_string().contains("no-kernel-image"),
        "{gpu:#}"
    );
    for e in std::fs::read_dir(&two).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().contains("+cpu") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let o = cudist(&[
        "select",
        "--print-requirement",
        "--host",
        hopper.to_str().unwrap(),
        two.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("no-kernel-image"), "{}", stderr(&o));
}

/// A build compiled for x86-64-v3 (its GNU property note, `ld -z x86-64-v3`) is rejected on a
/// CPU that is only v2, where ld.so refuses to load it, and chosen on a v3 CPU; read from a
/// directory or by range requests from an index (the note is then read from the program
/// headers, as ld.so reads it).
#[test]
fn a_build_for_a_higher_x86_64_level_than_the_cpu_is_rejected() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let plain = gcc_shared(d, "plain.so", None, "int g(void) { return 1; }\n", &[]);
    let v3 = gcc_shared(
        d,
        "v3.so",
        None,
        "int g(void) { return 3; }\n",
        &["-Wl,-z,x86-64-v3"],
    );
    let house = d.join("house");
    std::fs::create_dir_all(&house).unwrap();
    let tag = "py3-none-manylinux2014_x86_64";
    // The v3 build is the smaller download, so only the CPU check can put the plain one first.
    write_wheel_version(
        &house.join(format!("demo-1.0+cpu-{tag}.whl")),
        "demo",
        "1.0+cpu",
        &[],
        &[
            ("demo/_k.so", std::fs::read(&plain).unwrap()),
            // Incompressible padding.
            (
                "demo/data.bin",
                (0..8192u32)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect(),
            ),
        ],
    );
    write_wheel_version(
        &house.join(format!("demo_v3-1.0+cpu-{tag}.whl")),
        "demo_v3",
        "1.0+cpu",
        &[],
        &[("demo/_k.so", std::fs::read(&v3).unwrap())],
    );
    let host = |level: u8| {
        profile(
            d,
            &format!("v{level}"),
            serde_json::json!({"glibc": "2.35", "python": "3.11", "arch": "x86_64",
                "cpu": {"x86_64_level": level}, "gpus": []}),
        )
    };
    let log = d.join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let from_index = [
        "--index",
        &index,
        "--package",
        "demo",
        "--package",
        "demo-v3",
    ];
    let (_, v2_dir) = select(&host(2), &[house.to_str().unwrap()]);
    let (_, v2_index) = select(&host(2), &from_index);
    let (_, v3_index) = select(&host(3), &from_index);
    child.kill().ok();
    child.wait().ok();
    for v in [&v2_dir, &v2_index] {
        assert_eq!(v["best"], format!("demo-1.0+cpu-{tag}.whl"), "{v:#}");
        let r = reasons_of(v, "demo_v3");
        assert!(
            r.contains("need x86-64-v3 instructions") && r.contains("this CPU is x86-64-v2"),
            "{r}"
        );
    }
    assert_eq!(
        v3_index["best"],
        format!("demo_v3-1.0+cpu-{tag}.whl"),
        "{v3_index:#}"
    );
    // As wheel-variant properties: the v3 build's content needs `x86_64 :: level :: v3`, and
    // variantlib's filter, given each host's levels, agrees with select.
    let o = cudist(&[
        "inspect",
        "--variant-properties",
        house
            .join(format!("demo_v3-1.0+cpu-{tag}.whl"))
            .to_str()
            .unwrap(),
    ]);
    ok(&o, "inspect --variant-properties");
    let content: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert!(
        content.contains(&"x86_64 :: level :: v3".to_string()),
        "{content:?}"
    );
    let Some(variantlib) = tool_from_env("CUDIST_VARIANTLIB_PYTHON") else {
        return;
    };
    for (level, verdict) in [(2, "unsupported"), (3, "supported"), (4, "supported")] {
        let props = host_variant_properties(host(level).to_str().unwrap());
        assert_eq!(
            variantlib_verdict(&variantlib, &props, &content),
            verdict,
            "v{level}: {props:?}"
        );
    }
    // A variant.json declaring level v2 for files that need v3 is said, exit 1.
    let liar = d.join(format!("demo_v3-1.0+cpu-{tag}.whl"));
    let declared = serde_json::json!({"variants": {"v2": {"x86_64": {"level": ["v2"]}}}});
    write_wheel_version(
        &liar,
        "demo_v3",
        "1.0+cpu",
        &[],
        &[
            ("demo/_k.so", std::fs::read(&v3).unwrap()),
            (
                "demo_v3-1.0+cpu.dist-info/variant.json",
                serde_json::to_vec(&declared).unwrap(),
            ),
        ],
    );
    let o = cudist(&["inspect", "--variant-properties", liar.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o)
            .contains("# disagrees: declares x86_64 level v2, but its files require x86-64-v3"),
        "{}",
        stdout(&o)
    );
}

/// This machine's x86-64 level properties are the ones the x86-64 provider plugin
/// (`provider-variant-x86-64`, which reads the CPU through archspec) reports here.
#[test]
fn this_machines_x86_64_level_is_the_providers() {
    let Some(variantlib) = tool_from_env("CUDIST_VARIANTLIB_PYTHON") else {
        return;
    };
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    let script = r#"
from provider_variant_x86_64.plugin import X8664Plugin
for c in X8664Plugin().get_supported_configs(None):
    if c.name == "level":
        for v in c.values:
            print("x86_64 :: level ::", v)
"#;
    let o = std::process::Command::new(&variantlib)
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let got: Vec<String> = host_variant_properties("this")
        .into_iter()
        .filter(|p| p.starts_with("x86_64 ::"))
        .collect();
    assert_eq!(got, want);
}

/// `--find-links`: a page of links (relative ones, as pip reads them) holding every build of the
/// family is read like an index (the newest release of each `--package`, the family name
/// covering its builds), and the requirement names the page; a directory works as a candidate
/// directory does.
#[test]
fn find_links_pages_and_directories() {
    let work = tempfile::tempdir().unwrap();
    let Some(house) = family(work.path()) else {
        return;
    };
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let page = format!("http://127.0.0.1:{port}/main/links.html");
    let turing = profile(
        work.path(),
        "turing",
        serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let o = cudist(&[
        "select",
        "--print-requirement",
        "--host",
        turing.to_str().unwrap(),
        "--find-links",
        &page,
        "--package",
        "demo",
    ]);
    let (_, v) = select(&turing, &["--find-links", &page, "--package", "demo"]);
    child.kill().ok();
    child.wait().ok();
    assert_eq!(
        stdout(&o),
        format!("demo-cu12==1.0 --find-links {page}\n"),
        "{}",
        stderr(&o)
    );
    assert_eq!(v["find_links"], page.as_str());
    assert_eq!(v["indexes"][0]["kind"], "find-links");
    assert_eq!(v["indexes"][0]["listed"], 4, "{v:#}");
    let (_, d) = select(
        &turing,
        &["--find-links", house.to_str().unwrap(), "--package", "demo"],
    );
    assert_eq!(d["best"], v["best"]);
    assert!(d["find_links"].is_null());
}

/// JAX's layout: one pure package whose extras are its builds (`demo[cuda12]` pulls in
/// `demo-cuda12-plugin`, which pulls in `demo-cuda12-pjrt`, where the device code is;
/// `demo[cuda13]` pulls in `demo-cuda13-plugin`). Each extra is judged as one candidate over the
/// packages it pulls in, read from the same index; the package alone is the CPU build.
#[test]
fn builds_offered_as_extras_are_judged_with_what_they_pull_in() {
    let work = tempfile::tempdir().unwrap();
    // The family's CUDA 12 library (wide-cu12.so) is reused.
    let Some(_house) = family(work.path()) else {
        return;
    };
    let house = work.path().join("extras");
    std::fs::create_dir_all(&house).unwrap();
    let tag = "py3-none-manylinux2014_x86_64";
    write_wheel_version(
        &house.join("demo-2.0-py3-none-any.whl"),
        "demo",
        "2.0",
        &[
            "numpy",
            "demo-cuda12-plugin==2.0; extra == \"cuda12\"",
            "demo-cuda12-plugin==2.0; extra == \"cuda12-local\"",
            "demo-cuda13-plugin==2.0; extra == \"cuda13\"",
            "nvidia-cublas-cu12; extra == \"cuda12\"",
            "pytest; extra == \"test\"",
        ],
        &[("demo/__init__.py", b"".to_vec())],
    );
    write_wheel_version(
        &house.join(format!("demo_cuda12_plugin-2.0-{tag}.whl")),
        "demo_cuda12_plugin",
        "2.0",
        &["demo-cuda12-pjrt==2.0"],
        &[("demo_cuda12_plugin/__init__.py", b"".to_vec())],
    );
    write_wheel_version(
        &house.join(format!("demo_cuda12_pjrt-2.0-{tag}.whl")),
        "demo_cuda12_pjrt",
        "2.0",
        &[],
        &[(
            "demo_cuda12_pjrt/_k.so",
            std::fs::read(work.path().join("wide-cu12.so")).unwrap(),
        )],
    );
    write_wheel_version(
        &house.join(format!("demo_cuda13_plugin-2.0-{tag}.whl")),
        "demo_cuda13_plugin",
        "2.0",
        &[],
        &[(
            "demo_cuda13_plugin/_k.so",
            std::fs::read(fixtures().join("wide.so")).unwrap(),
        )],
    );
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let pick = |name: &str, v: Value| {
        let mut v = v;
        v["glibc"] = "2.35".into();
        v["python"] = "3.11".into();
        let host = profile(work.path(), name, v);
        let o = cudist(&[
            "select",
            "--print-requirement",
            "--host",
            host.to_str().unwrap(),
            "--index",
            &index,
            "--package",
            "demo",
        ]);
        let (_, j) = select(&host, &["--index", &index, "--package", "demo"]);
        (stdout(&o), j)
    };
    let (turing, tj) = pick(
        "turing",
        serde_json::json!({"driver": "535.183.01", "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let (hopper, hj) = pick(
        "hopper",
        serde_json::json!({"driver": "580.65.06", "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let (nogpu, _) = pick("nogpu", serde_json::json!({"gpus": []}));
    child.kill().ok();
    child.wait().ok();
    let ix = format!(" --index-url {index}\n");
    assert_eq!(turing, format!("demo[cuda12]==2.0{ix}"), "{tj:#}");
    assert_eq!(hopper, format!("demo[cuda13]==2.0{ix}"), "{hj:#}");
    assert_eq!(nogpu, format!("demo==2.0{ix}"));
    // The CUDA 12 build was judged by its pjrt package's device code (two levels down), and
    // `cuda12-local`, which pulls in the same, is not a second candidate.
    let c12 = reasons_of(&tj, "demo-2.0-py3-none-any.whl[cuda12]");
    assert!(
        c12.contains("demo_cuda12_pjrt-2.0") && c12.contains("sm_75"),
        "{c12}"
    );
    let extras: Vec<&str> = tj["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["extra"].as_str())
        .collect();
    assert_eq!(extras.len(), 2, "{extras:?}");
    // On the H100 the CUDA 13 build, read first, runs natively: the CUDA 12 build cannot rank
    // above it, and its packages are not read. On the T4 the CUDA 13 build needs a newer driver,
    // said from the plugin's name.
    let c12 = hj["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"] == "demo-2.0-py3-none-any.whl[cuda12]")
        .unwrap();
    assert_eq!(c12["outcome"], "unread", "{c12:#}");
    assert!(
        c12["reasons"].to_string().contains("were not read"),
        "{c12:#}"
    );
    let c13 = reasons_of(&tj, "demo-2.0-py3-none-any.whl[cuda13]");
    assert!(
        c13.contains("too old for CUDA 13") && c13.contains("were not read"),
        "{c13}"
    );
    // nvidia-cublas-cu12 is a CUDA library, not a build of demo: never listed.
    let served = std::fs::read_to_string(&log).unwrap();
    assert!(!served.contains("nvidia"), "{served}");
    // The same wheels in a directory: the extras' packages are found among them, and each
    // machine gets the same build.
    let dir = house.to_str().unwrap();
    for (name, want) in [
        ("turing", "demo[cuda12]==2.0"),
        ("hopper", "demo[cuda13]==2.0"),
        ("nogpu", "demo==2.0"),
    ] {
        let host = work.path().join(format!("{name}.json"));
        let (code, v) = select(&host, &[dir, "--package", "demo"]);
        assert_eq!(code, Some(0), "{name}: {v:#}");
        assert!(
            v["requirement"].as_str().unwrap().starts_with(want),
            "{name}: {v:#}"
        );
        if name == "turing" {
            let c12 = reasons_of(&v, "demo-2.0-py3-none-any.whl[cuda12]");
            assert!(
                c12.contains("demo_cuda12_pjrt-2.0") && c12.contains("sm_75"),
                "{c12}"
            );
        }
    }
}

/// `Requires-Python`, as pip reads it: on an index the newest release whose files admit the
/// host's Python is the one judged (JSON pages give `requires-python` per file); a wheel whose
/// METADATA excludes it does not install.
#[test]
fn releases_for_another_python_are_passed_over() {
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    let tag = "py3-none-any";
    // The METADATA line rides on a requirement (the helper writes only Requires-Dist lines).
    write_wheel_version(
        &house.join(format!("demo_py-3.0-{tag}.whl")),
        "demo_py",
        "3.0",
        &["numpy\nRequires-Python: >=3.12"],
        &[("demo_py/__init__.py", b"".to_vec())],
    );
    write_wheel_version(
        &house.join(format!("demo_py-2.0-{tag}.whl")),
        "demo_py",
        "2.0",
        &["numpy\nRequires-Python: >=3.9"],
        &[("demo_py/__init__.py", b"".to_vec())],
    );
    let host = profile(
        work.path(),
        "py311",
        serde_json::json!({"glibc": "2.35", "python": "3.11", "gpus": []}),
    );
    let log = work.path().join("served.log");
    let (mut child, port) = serve(&[("main", &house)], &log);
    let index = format!("http://127.0.0.1:{port}/main/simple");
    let (code, v) = select(&host, &["--index", &index, "--package", "demo-py"]);
    child.kill().ok();
    child.wait().ok();
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["requirement"], "demo-py==2.0", "{v:#}");
    // From a directory both are candidates; 3.0 says why it does not install.
    let (_, d) = select(&host, &[house.to_str().unwrap()]);
    assert_eq!(d["requirement"], "demo-py==2.0", "{d:#}");
    assert!(
        reasons_of(&d, "demo_py-3.0").contains("requires Python >=3.12, the host has 3.11"),
        "{d:#}"
    );
}

/// The report fits a screen: wheels their names rule out (other Pythons, other platforms) are
/// counted in one line, whatever their size, and listed with `--all`; the host is the profile's,
/// never "this machine".
#[test]
fn wheels_for_other_platforms_are_counted_not_listed_unless_all() {
    let work = tempfile::tempdir().unwrap();
    let house = work.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    let members = [("demo/__init__.py", b"x = 1\n".to_vec())];
    write_wheel_version(
        &house.join("demo-1.0-py3-none-any.whl"),
        "demo",
        "1.0",
        &[],
        &members,
    );
    let elsewhere = [
        "demo-1.0-cp310-cp310-win_amd64.whl",
        "demo-1.0-cp311-cp311-manylinux2014_aarch64.whl",
    ];
    for f in elsewhere {
        write_wheel_version(&house.join(f), "demo", "1.0", &[], &members);
    }
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"name": "node-7", "driver": "580.65.06", "glibc": "2.35",
            "python": "3.11", "arch": "x86_64", "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let run = |all: bool| {
        let mut args = vec![
            "select",
            "--host",
            host.to_str().unwrap(),
            house.to_str().unwrap(),
        ];
        if all {
            args.push("--all");
        }
        let o = cudist(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let short = run(false);
    assert!(short.starts_with("for node-7:"), "{short}");
    assert!(
        short.contains("and 2 wheel(s) for other Pythons or platforms"),
        "{short}"
    );
    assert!(elsewhere.iter().all(|f| !short.contains(f)), "{short}");
    let long = run(true);
    assert!(elsewhere.iter().all(|f| long.contains(f)), "{long}");
    assert!(
        long.contains("is for aarch64, the host is x86_64"),
        "{long}"
    );
    assert!(!long.contains("this machine"), "{long}");
}

/// A wheel one of whose shared libraries cannot be read is refused (exit 3, the wheel and the
/// file named once), read whole as by range requests and as inspect refuses it: judged without
/// the file, a GPU build would pass for "a CPU build".
#[test]
fn a_wheel_with_an_unreadable_library_is_refused_not_judged() {
    let work = tempfile::tempdir().unwrap();
    let wheel = work
        .path()
        .join("bad-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    let mut so = b"\x7fELF\x02\x01\x01".to_vec();
    so.resize(256, 0xff);
    write_wheel(&wheel, "bad", &[], &[("bad/libx.so", so)]);
    let host = profile(
        work.path(),
        "host",
        serde_json::json!({"driver": "580.65.06", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "H100", "sm": 90}]}),
    );
    let o = cudist(&[
        "select",
        "--host",
        host.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{}{err}", stdout(&o));
    assert!(!stdout(&o).contains("best:"), "{}", stdout(&o));
    assert!(err.contains(wheel.to_str().unwrap()), "{err}");
    assert_eq!(err.matches("bad/libx.so").count(), 1, "{err}");
}
