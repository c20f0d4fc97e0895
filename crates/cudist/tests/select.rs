//! `cudist select`: the build a careful person would pick, for host profiles of the kinds people
//! have (an old Turing box on driver 535, Ampere on 550, Hopper on 580, a newer driver, no GPU,
//! AMD), among builds of one package that differ in CUDA major, device code and kind; and on the
//! real cupy-cuda12x / cupy-cuda13x 14.2.0 wheels.

mod common;

use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// `cudist select --json --host PROFILE ARGS…`: exit code and report.
fn select(host: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["select", "--json", "--host", host.to_str().unwrap()];
    all.extend_from_slice(args);
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

/// A small family of builds of one package, made from the nvcc fixtures:
/// - `demo_cu13` 1.0: wide.so (sm_75 … sm_120 cubins, compute_120 PTX), needs libcudart.so.13;
/// - `demo_cu12` 1.0: wide.so slimmed to sm_75, sm_80, sm_86 (no PTX) with its NEEDED runtime
///   renamed to libcudart.so.12 (patchelf), as a CUDA 12 build of the same code would be;
/// - `demo` 1.0+cpu: no device code (hostonly.so);
/// - `demo` 1.0+rocm6.3: a ROCm build (hostonly.so; cudist reads no ROCm device code).
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
        assert!(!in_ci(), "CI provides patchelf");
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
    assert!(reasons_of(&v, "demo-1.0+cpu").contains("does not use this machine's NVIDIA GPUs"));

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
        assert!(!in_ci(), "scripts/test.sh fetches cupy-cuda13x");
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
        assert!(!in_ci(), "CI provides patchelf");
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
        let o = cudist(&[
            "select",
            "--variant-properties",
            "--host",
            host.to_str().unwrap(),
        ]);
        ok(&o, "select --variant-properties");
        let host_props = lines(&o);
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
            // variantlib's verdict.
            let script = r#"
import json, sys
from variantlib.models.variant import VariantDescription, VariantProperty
from variantlib.resolver.filtering import filter_variants_by_property
host = [VariantProperty.from_str(l) for l in json.loads(sys.argv[1])]
wheel = [VariantProperty.from_str(l) for l in json.loads(sys.argv[2])]
ok = list(filter_variants_by_property([VariantDescription(wheel)], allowed_properties=host))
print("supported" if ok else "unsupported")
"#;
            let o = std::process::Command::new(&variantlib)
                .arg("-c")
                .arg(script)
                .arg(serde_json::to_string(&host_props).unwrap())
                .arg(serde_json::to_string(&content).unwrap())
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let says = String::from_utf8_lossy(&o.stdout).trim().to_string();
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
        assert!(!in_ci(), "CI provides patchelf");
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
        select(
            &host,
            &[
                "--index",
                &index,
                "--package",
                "demo-cu12",
                "--package",
                "demo-cu13",
                "--package",
                "demo",
                "--cache-dir",
                cache.to_str().unwrap(),
            ],
        )
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

/// A simple-API server on loopback for the tests: each `(name, dir)` is an index at
/// `/<name>/simple/<project>/` listing the wheels in `dir` whose name normalises to the project,
/// with their files at `/<name>/files/<file>`. JSON pages (PEP 691) when asked for, except for
/// project `demo`, which gets HTML (PEP 503); project `demo-bad` lists `demo_cu12-1.0` with a
/// wrong sha256. Every answer's path and size are appended to `log`. Returns the server and its
/// port.
fn serve(indexes: &[(&str, &Path)], log: &Path) -> (std::process::Child, String) {
    let server = r#"
import hashlib, http.server, json, os, sys
log, pairs = sys.argv[1], sys.argv[2:]
houses = dict(zip(pairs[::2], pairs[1::2]))
def norm(n): return n.lower().replace("_", "-").replace(".", "-")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def send(self, body, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with open(log, "a") as f: f.write("%s %d\n" % (self.path, len(body)))
    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if len(parts) < 3 or parts[0] not in houses:
            return self.send_error(404)
        ix, house = parts[0], houses[parts[0]]
        if parts[1] == "simple" and len(parts) == 3:
            project = parts[2]
            files = [n for n in sorted(os.listdir(house)) if norm(n.split("-")[0]) == project]
            entries = [(n, "/%s/files/%s" % (ix, n), hashlib.sha256(open(os.path.join(house, n), "rb").read()).hexdigest()) for n in files]
            if project == "demo-bad":
                entries = [(n, "/%s/files/%s" % (ix, n), "0" * 64) for n in sorted(os.listdir(house)) if n.startswith("demo_cu12-1.0")]
            if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "") and project != "demo":
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": [
                    {"filename": n, "url": u, "hashes": {"sha256": h}} for n, u, h in entries]}).encode()
                return self.send(body, "application/vnd.pypi.simple.v1+json")
            links = "".join('<a href="%s#sha256=%s">%s</a><br/>' % (u, h, n) for n, u, h in entries)
            return self.send(("<html><body>%s</body></html>" % links).encode(), "text/html")
        if parts[1] == "files" and len(parts) == 3 and parts[2] in os.listdir(house):
            return self.send(open(os.path.join(house, parts[2]), "rb").read(), "application/octet-stream")
        self.send_error(404)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut cmd = std::process::Command::new("python3");
    cmd.arg("-c").arg(server).arg(log);
    for (name, dir) in indexes {
        cmd.arg(name).arg(dir);
    }
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut port,
    )
    .unwrap();
    (child, port.trim().to_string())
}

/// PyTorch's layout: one project, one release, its CUDA builds on separate indexes (`…/cu126`,
/// `…/cu130`) told apart by local labels. Both indexes are read; the build for the machine wins,
/// and the requirement names its index.
#[test]
fn builds_on_per_cuda_indexes_are_compared_and_the_index_is_named() {
    let work = tempfile::tempdir().unwrap();
    // The family's CUDA 12 library (wide-cu12.so) is reused below.
    let Some(_house) = family(work.path()) else {
        assert!(!in_ci(), "CI provides patchelf");
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
    let hopper = pick("hopper", "580.65.06", 90);
    let turing = pick("turing", "535.183.01", 75);
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
    // The +cu130 wheel was fetched once (for the H100), never for the driver-535 machine.
    let cu130_gets = served
        .lines()
        .filter(|l| l.contains("/cu130/files/"))
        .count();
    assert_eq!(cu130_gets, 1, "{served}");
}
