//! `cudist slim` on the nvcc fixtures, checked against cuobjdump (what is listed, and every kept
//! entry extracted byte for byte as from the original), eu-elflint, and doctor's judgement of the
//! original for every SM in the catalog.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// The fixtures with a `.nv_fatbin`: plain, LZ4, zstd, uncompressed, arch-specific, concatenated,
/// `-rdc` (whose `__nv_relfatbin` slim leaves alone), and one cubin per SM from sm_75 to sm_120
/// with compute_120 PTX, all LZ4 (`wide.so`).
const FIXTURES: &[&str] = &[
    "multi.so",
    "lz4.so",
    "zstd.so",
    "nocompress.so",
    "arch_specific.so",
    "concat.so",
    "rdc.so",
    "wide.so",
];

fn catalog_sms() -> Vec<u32> {
    let o = cudist(&["catalog", "sm", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sm"].as_u64().unwrap() as u32)
        .collect()
}

fn slim(args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["slim", "--json"];
    all.extend_from_slice(args);
    let o = cudist(&all);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), v)
}

/// Every file `cuobjdump -xelf all -xptx all` extracts, by content: content → count.
fn extracted(cuobjdump: &Path, file: &Path, work: &Path) -> BTreeMap<Vec<u8>, usize> {
    let dir = tempfile::tempdir_in(work).unwrap();
    let o = std::process::Command::new(cuobjdump)
        .args(["-xelf", "all", "-xptx", "all"])
        .arg(file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        *out.entry(std::fs::read(e.unwrap().path()).unwrap())
            .or_insert(0) += 1;
    }
    out
}

fn listing(cuobjdump: &Path, file: &Path) -> Vec<String> {
    let o = std::process::Command::new(cuobjdump)
        .args(["--list-elf", "--list-ptx"])
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("ELF file") || l.starts_with("PTX file"))
        .map(|l| l.rsplit('.').nth(1).unwrap_or("").to_string())
        .collect()
}

/// For every fixture and every SM of the catalog: slimmed to that SM, the file's listing holds
/// exactly what the report keeps, each kept entry extracts byte-identical to the original's, the
/// file stays the same size and passes eu-elflint, and doctor gives that GPU the same verdict on
/// the slimmed file as on the original.
#[test]
fn every_target_gets_what_the_original_gave_it() {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let elflint = tool_from_env("CUDIST_ELFLINT");
    let work = tempfile::tempdir().unwrap();
    let sms = catalog_sms();
    assert!(sms.len() > 15, "{sms:?}");
    let mut checked = 0;
    for fx in FIXTURES {
        let orig = fixtures().join(fx);
        let orig_parts = extracted(&cuobjdump, &orig, work.path());
        for &sm in &sms {
            let out = work.path().join(format!("{sm}-{fx}"));
            let (code, v) = slim(&[
                orig.to_str().unwrap(),
                "--gpu",
                &sm.to_string(),
                "--allow-empty",
                "-o",
                out.to_str().unwrap(),
            ]);
            assert_eq!(code, Some(0), "{fx} sm_{sm}: {v:#}");
            let file = &v["inputs"][0]["files"][0];
            // The fixtures are too small to cut (under 64 KiB of device code): the file keeps its
            // size, and the report says why.
            assert_eq!(
                std::fs::metadata(&out).unwrap().len(),
                std::fs::metadata(&orig).unwrap().len()
            );
            assert_eq!(file["file_bytes_cut"], 0);
            if file["bytes_removed"].as_u64().unwrap() > 0 {
                assert!(
                    file["layout_kept"].as_str().unwrap().contains("64 KiB"),
                    "{file:#}"
                );
            }
            // cuobjdump lists the kept cubins and PTX, no more.
            let listed = listing(&cuobjdump, &out);
            let kept_listed: usize = file["kept"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "cubin" || e["kind"] == "ptx")
                .count();
            let concat_images: usize = file["kept"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "concat")
                .map(|e| e["arch"].as_str().unwrap().split('+').count())
                .sum();
            if *fx != "rdc.so" {
                assert_eq!(
                    listed.len(),
                    kept_listed + concat_images,
                    "{fx} sm_{sm}: {listed:?} {file:#}"
                );
            }
            // Every entry extracted from the slimmed file is one of the original's, byte for byte.
            if !listed.is_empty() {
                for (bytes, n) in extracted(&cuobjdump, &out, work.path()) {
                    assert!(
                        orig_parts.get(&bytes).is_some_and(|m| *m >= n),
                        "{fx} sm_{sm}: an extracted entry differs from the original's"
                    );
                }
            }
            if let Some(lint) = &elflint {
                let o = std::process::Command::new(lint)
                    .args(["--gnu-ld", "-q"])
                    .arg(&out)
                    .output()
                    .unwrap();
                assert!(
                    o.status.success(),
                    "{fx} sm_{sm}: {}",
                    String::from_utf8_lossy(&o.stdout)
                );
            }
            // doctor's answer for this GPU: the same on both files.
            let host = write_profile(
                &work.path().join(format!("host-{sm}.json")),
                &serde_json::json!({"name": "box", "driver": "999.99", "driver_cuda": "13.5",
                    "gpus": [{"name": "GPU", "sm": sm}]}),
            );
            let gpu = |f: &Path| {
                let (_, v) = doctor_on_profile(&host, f);
                let g = &v["files"][0]["gpus"][0];
                (g["status"].clone(), g["detail"].clone())
            };
            let (before, after) = (gpu(&orig), gpu(&out));
            // Nothing ran there before; with --allow-empty the slimmed file may keep no device
            // code at all, and then doctor has no GPU line for it.
            if before.0 == "no-kernel-image" && after.0.is_null() {
                assert!(file["kept"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|e| e["kind"] != "cubin" && e["kind"] != "ptx"));
                checked += 1;
                continue;
            }
            assert_eq!(before.0, after.0, "{fx} sm_{sm}");
            if before.0 == "cubin" || before.0 == "jit" {
                assert_eq!(before.1, after.1, "{fx} sm_{sm}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, FIXTURES.len() * sms.len());
}

/// The slimmed library still loads (dlopen through Python's ctypes, with its CUDA runtime on the
/// search path); `__nv_relfatbin` is left alone; a target nothing runs on is an error naming the
/// file, and nothing is written; a file without device code is reported and left as it was.
#[test]
fn loads_leaves_relocatable_code_and_refuses_empty_targets() {
    let work = tempfile::tempdir().unwrap();
    let dev = fixtures();
    // rdc.so: .nv_fatbin slimmed, __nv_relfatbin byte-identical.
    let out = work.path().join("rdc.so");
    let (code, v) = slim(&[
        dev.join("rdc.so").to_str().unwrap(),
        "--gpu",
        "9.0",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    let section = |f: &Path, name: &str| {
        let data = std::fs::read(f).unwrap();
        let o = std::process::Command::new("readelf")
            .args(["-SW"])
            .arg(f)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let line = text.lines().find(|l| l.contains(name)).unwrap().to_string();
        let cols: Vec<&str> = line.split_whitespace().collect();
        let i = cols.iter().position(|c| *c == name).unwrap();
        let off = usize::from_str_radix(cols[i + 3], 16).unwrap();
        let size = usize::from_str_radix(cols[i + 4], 16).unwrap();
        data[off..off + size].to_vec()
    };
    assert_eq!(
        section(&dev.join("rdc.so"), "__nv_relfatbin"),
        section(&out, "__nv_relfatbin")
    );
    assert_ne!(
        section(&dev.join("rdc.so"), ".nv_fatbin"),
        section(&out, ".nv_fatbin")
    );
    // Loads: the slimmed multi.so, with libcudart.so.13 from the CUDA wheels when they are here.
    if let Some(tk) = tool_from_env("CUDIST_TK_CU13") {
        let m = work.path().join("multi.so");
        let (code, _) = slim(&[
            dev.join("multi.so").to_str().unwrap(),
            "--gpu",
            "90",
            "-o",
            m.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0));
        let lib = std::fs::read_dir(tk.join("lib"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("site-packages/nvidia/cu13/lib"))
            .find(|p| p.join("libcudart.so.13").exists())
            .expect("libcudart.so.13 in the CUDA 13 wheels");
        let o = std::process::Command::new("python3")
            .args([
                "-c",
                &format!("import ctypes; ctypes.CDLL({:?})", m.display().to_string()),
            ])
            .env("LD_LIBRARY_PATH", &lib)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // GPU names: an RTX 4090 (sm_89) runs the sm_80 cubins; Hopper (9.0+PTX) keeps sm_90 and
    // compute_90.
    for (name, kept) in [
        ("RTX 4090", vec!["sm_80", "sm_80"]),
        ("hopper", vec!["sm_90", "compute_90", "sm_90"]),
    ] {
        let (code, v) = slim(&[
            dev.join("multi.so").to_str().unwrap(),
            "--gpu",
            name,
            "--dry-run",
        ]);
        assert_eq!(code, Some(0), "{v:#}");
        let got: Vec<&str> = v["inputs"][0]["files"][0]["kept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["arch"].as_str().unwrap())
            .collect();
        assert_eq!(got, kept, "{name}");
    }
    // sm_75: nothing in multi.so runs there: exit 1, the file and target named, nothing written.
    let none = work.path().join("none.so");
    let o = cudist(&[
        "slim",
        dev.join("multi.so").to_str().unwrap(),
        "--gpu",
        "7.5",
        "-o",
        none.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("multi.so: nothing in it runs on sm_75 (it has compute_90, sm_80, sm_90)"),
        "{err}"
    );
    assert!(!none.exists());
    // A host-only library: reported, copied unchanged.
    let host = work.path().join("hostonly.so");
    let (code, v) = slim(&[
        dev.join("hostonly.so").to_str().unwrap(),
        "--gpu",
        "90",
        "-o",
        host.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        v["inputs"][0]["without_device_code"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        std::fs::read(&host).unwrap(),
        std::fs::read(dev.join("hostonly.so")).unwrap()
    );
    // A tree, in place: the file with device code changes, the host-only one does not.
    let tree = work.path().join("tree/lib");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(dev.join("multi.so"), tree.join("libk.so")).unwrap();
    std::fs::copy(dev.join("hostonly.so"), tree.join("libh.so")).unwrap();
    let o = cudist(&[
        "slim",
        work.path().join("tree").to_str().unwrap(),
        "--gpu",
        "90",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a directory needs --in-place (a usage error): {}",
        stderr(&o)
    );
    let (code, v) = slim(&[
        work.path().join("tree").to_str().unwrap(),
        "--gpu",
        "90",
        "--in-place",
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["inputs"][0]["files"][0]["path"], "lib/libk.so");
    assert_eq!(v["inputs"][0]["without_device_code"][0], "lib/libh.so");
    assert_eq!(
        std::fs::read(tree.join("libh.so")).unwrap(),
        std::fs::read(dev.join("hostonly.so")).unwrap()
    );
    assert_eq!(
        std::fs::read(tree.join("libk.so")).unwrap(),
        std::fs::read(work.path().join("multi.so")).unwrap_or_else(|_| {
            // Without the CUDA 13 wheels the slimmed multi.so above was not written: make it.
            let m = work.path().join("multi.so");
            assert_eq!(
                slim(&[
                    dev.join("multi.so").to_str().unwrap(),
                    "--gpu",
                    "90",
                    "-o",
                    m.to_str().unwrap()
                ])
                .0,
                Some(0)
            );
            std::fs::read(m).unwrap()
        })
    );
    // Not an ELF file: exit 3, nothing written.
    let junk = work.path().join("junk.so");
    std::fs::write(&junk, b"not elf").unwrap();
    let o = cudist(&[
        "slim",
        junk.to_str().unwrap(),
        "--gpu",
        "90",
        "-o",
        work.path().join("junk-out.so").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!work.path().join("junk-out.so").exists());
}

/// cupy-cuda12x 14.2.0's wheel slimmed to `8.6;9.0+PTX`: every RECORD row matches its member,
/// the wheel records its targets, inspect sees only sm_86 and sm_90 cubins, and pip installs it
/// into a venv where `import cupy` loads the same extension modules as the original's does.
#[test]
fn the_cupy_wheel_slimmed_installs_and_imports_like_the_original() {
    let (Some(wheels), Some(deps)) = (
        tool_from_env("CUDIST_REAL_WHEELS"),
        tool_from_env("CUDIST_CUPY_DEPS"),
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let orig = find_wheel(&wheels, "cupy_cuda12x-14.2.0");
    let out = work.path().join("slim");
    let (code, v) = slim(&[
        orig.to_str().unwrap(),
        "--gpu",
        "8.6;9.0+PTX",
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    let slimmed = out.join(orig.file_name().unwrap());
    let (before, after) = (
        std::fs::metadata(&orig).unwrap().len(),
        std::fs::metadata(&slimmed).unwrap().len(),
    );
    assert_eq!(v["inputs"][0]["package_bytes"][1], after);
    assert!(after * 2 < before, "{before} -> {after}");
    // The installed files shrink too: by what the report says, as Python's zipfile counts it.
    let cut = v["inputs"][0]["file_bytes_cut"].as_u64().unwrap();
    assert!(cut > 80 << 20, "{v:#}");
    python(
        "import sys, zipfile\n\
         size = lambda w: sum(i.file_size for i in zipfile.ZipFile(w).infolist() if not i.filename.endswith(('RECORD', 'cudist-slim.json')))\n\
         assert size(sys.argv[1]) - size(sys.argv[2]) == int(sys.argv[3]), (size(sys.argv[1]), size(sys.argv[2]))\n",

        &[
            orig.to_str().unwrap(),
            slimmed.to_str().unwrap(),
            &cut.to_string(),
        ],
    );
    // RECORD, checked by Python's zipfile and hashlib; the targets in dist-info.
    python(
        "import base64, csv, hashlib, io, json, sys, zipfile\n\
         z = zipfile.ZipFile(sys.argv[1])\n\
         rec = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')][0]\n\
         rows = list(csv.reader(io.TextIOWrapper(z.open(rec))))\n\
         assert len(rows) == len([n for n in z.namelist() if not n.endswith('/')]), len(rows)\n\
         for path, h, size in rows:\n\
         \x20   if path == rec: continue\n\
         \x20   data = z.read(path)\n\
         \x20   d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()\n\
         \x20   assert h == 'sha256=' + d and int(size) == len(data), path\n\
         info = json.loads(z.read(rec.replace('RECORD', 'cudist-slim.json')))\n\
         assert info['targets'] == ['sm_86', 'sm_90'], info\n",
        &[slimmed.to_str().unwrap()],
    );
    // inspect: only the kept SMs.
    let r = inspect_json(&[slimmed.to_str().unwrap()], 0);
    let native: Vec<&str> = r["artifacts"][0]["device"]["native_sms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        native,
        vec!["sm_86", "sm_90"],
        "{:#}",
        r["artifacts"][0]["device"]
    );
    assert_eq!(
        r["artifacts"][0]["wheel"]["slimmed"]["targets"],
        serde_json::json!(["sm_86", "sm_90"])
    );
    // Installed beside numpy and cuda-pathfinder, the slimmed and the original import alike.
    let modules_loaded = |wheel: &Path, name: &str| -> (Vec<String>, std::path::PathBuf) {
        let python = cupy_venv(&work.path().join(name), wheel, &deps);
        let mapped = mapped_by_import(&python, "cupy", "cupy")
            .into_iter()
            .map(|p| p.split("site-packages/").nth(1).unwrap_or(&p).to_string())
            .collect();
        (mapped, python)
    };
    let (a, _) = modules_loaded(&orig, "orig");
    let (b, python) = modules_loaded(&slimmed, "slim");
    assert!(a.len() > 40, "{a:?}");
    assert_eq!(a, b);
    // doctor, for a machine with a Turing GPU (sm_75): the slimmed cupy has no kernel image for
    // it, and doctor says the package was slimmed.
    let host = write_profile(
        &work.path().join("turing.json"),
        &serde_json::json!({"name": "box", "driver": "575.51.03", "driver_cuda": "12.9",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let o = cudist(&[
        "doctor",
        "--json",
        "--host",
        host.to_str().unwrap(),
        "--import",
        "cupy",
        "--python",
        python.to_str().unwrap(),
    ]);
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    let reasons = v["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains("cupy-cuda12x 14.2.0 was slimmed by cudist"),
        "{reasons}"
    );
    assert!(
        reasons.contains("thrust.cpython-311-x86_64-linux-gnu.so: T4 (sm_75): \\\"no kernel image")
            && reasons.contains(
                "was slimmed by cudist 0.1.0 for sm_86 sm_90; the original wheel has the rest"
            ),
        "{reasons}"
    );
}

/// cupy's thrust module (13 cubins sm_50 … sm_120 and compute_100 PTX, LZ4): slimmed for a host
/// profile with an sm_86 and an sm_90 GPU, and to `9.0+PTX`. cuobjdump lists what the report
/// keeps, and doctor gives each GPU of the profile the same answer as on the original.
#[test]
fn cupy_thrust_for_a_host_profile() {
    let (Some(wheels), Some(cuobjdump)) = (
        tool_from_env("CUDIST_REAL_WHEELS"),
        tool_from_env("CUDIST_CUOBJDUMP"),
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let m = "cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so";
    extract(
        &find_wheel(&wheels, "cupy_cuda12x-14.2.0"),
        &[m],
        work.path(),
    );
    let orig = work.path().join(m);
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"name": "box", "driver": "575.51.03", "driver_cuda": "12.9",
            "gpus": [{"name": "RTX A6000", "sm": 86}, {"name": "H100", "sm": 90}]}),
    );
    let out = work.path().join("thrust-host.so");
    let (code, v) = slim(&[
        orig.to_str().unwrap(),
        "--host",
        host.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["targets"], serde_json::json!(["sm_86", "sm_90"]));
    let kept: Vec<String> = v["inputs"][0]["files"][0]["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["arch"].as_str().unwrap().to_string())
        .collect();
    // compute_100 is newer than both GPUs: no target could JIT it.
    assert_eq!(kept, vec!["sm_86", "sm_90"]);
    let mut listed = listing(&cuobjdump, &out);
    listed.sort();
    assert_eq!(listed, vec!["sm_86", "sm_90"]);
    let (_, before) = doctor_on_profile(&host, &orig);
    let (_, after) = doctor_on_profile(&host, &out);
    assert_eq!(before["files"][0]["gpus"], after["files"][0]["gpus"]);
    // The installed file shrinks too: the zero tail of .nv_fatbin left it, every address kept.
    let cut = v["inputs"][0]["files"][0]["file_bytes_cut"]
        .as_u64()
        .unwrap();
    assert!(cut > 50 << 20, "{v:#}");
    assert_eq!(v["inputs"][0]["file_bytes_cut"], cut);
    assert_eq!(
        std::fs::metadata(&out).unwrap().len() + cut,
        std::fs::metadata(&orig).unwrap().len()
    );
    // The real loader maps it, and its static CUDA runtime's constructor registers the fatbin
    // through the wrapper; cuobjdump extracts both kept cubins byte-identical to the original's;
    // eu-elflint finds nothing.
    python(
        "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
        &[out.to_str().unwrap()],
    );
    let whole = extracted(&cuobjdump, &orig, work.path());
    let kept_parts = extracted(&cuobjdump, &out, work.path());
    assert_eq!(kept_parts.len(), 2);
    assert!(kept_parts.keys().all(|k| whole.contains_key(k)));
    if let Some(lint) = tool_from_env("CUDIST_ELFLINT") {
        let o = std::process::Command::new(lint)
            .args(["--gnu-ld", "-q"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    }
    // --keep-layout: the same entries, the file its size.
    let kept_layout = work.path().join("thrust-layout.so");
    let (code, v) = slim(&[
        orig.to_str().unwrap(),
        "--host",
        host.to_str().unwrap(),
        "--keep-layout",
        "-o",
        kept_layout.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(v["inputs"][0]["files"][0]["layout_kept"], "--keep-layout");
    assert_eq!(
        std::fs::metadata(&kept_layout).unwrap().len(),
        std::fs::metadata(&orig).unwrap().len()
    );
    // 9.0+PTX: sm_90 and no PTX (compute_100 cannot be JIT-compiled for sm_90).
    let out2 = work.path().join("thrust-90ptx.so");
    let (code, v) = slim(&[
        orig.to_str().unwrap(),
        "--gpu",
        "9.0+PTX",
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(listing(&cuobjdump, &out2), vec!["sm_90"]);
    // sm_120 with --ptx keep: the sm_120 cubin and the PTX.
    let out3 = work.path().join("thrust-120.so");
    let (code, _) = slim(&[
        orig.to_str().unwrap(),
        "--gpu",
        "12.0",
        "--ptx",
        "keep",
        "-o",
        out3.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    let mut l3 = listing(&cuobjdump, &out3);
    l3.sort();
    assert_eq!(l3, vec!["sm_100", "sm_120"]);
}

/// `wide.so` (one cubin per SM from sm_75 to sm_120, compute_120 PTX, two containers): what each
/// GPU keeps, as cuobjdump lists it.
#[test]
fn wide_fixture_keeps_per_gpu_what_it_runs() {
    let Some(cuobjdump) = tool_from_env("CUDIST_CUOBJDUMP") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let wide = fixtures().join("wide.so");
    for (gpu, want) in [
        // sm_89 runs its own cubins; compute_120 is newer than any target: no PTX.
        ("8.9", vec!["sm_89", "sm_89"]),
        // sm_87 (Orin) runs sm_86's.
        ("8.7", vec!["sm_86", "sm_86"]),
        // sm_121 runs sm_120's, and JITs compute_120 (kept as the newest a target could use).
        ("12.1", vec!["sm_120", "sm_120", "sm_120"]),
        // Two GPUs.
        ("7.5,10.3", vec!["sm_75", "sm_100", "sm_75", "sm_100"]),
    ] {
        let out = work.path().join(format!("{gpu}.so"));
        let (code, v) = slim(&[
            wide.to_str().unwrap(),
            "--gpu",
            gpu,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{gpu}: {v:#}");
        assert_eq!(listing(&cuobjdump, &out), want, "{gpu}");
    }
    // sm_110 (Thor): no cubin of its major, and compute_120 PTX is newer: nothing runs there.
    let o = cudist(&[
        "slim",
        wide.to_str().unwrap(),
        "--gpu",
        "11.0",
        "-o",
        work.path().join("110.so").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing in it runs on sm_110"),
        "{}",
        stderr(&o)
    );
}

/// A conda package (written by cudist-conda: a library with device code, a link to it, an
/// executable script) slimmed to sm_90: a new `.conda` whose build string says so, whose
/// `info/paths.json` holds the slimmed library's sha256 and size, with every other member as it
/// was (mode, link), `info/cudist-slim.json` added; py-rattler installs it, and the installed
/// library holds only the sm_90 cubins and PTX.
#[test]
fn a_conda_package_slimmed_installs_with_its_new_hashes() {
    let (Some(py), Some(cuobjdump)) = (
        tool_from_env("CUDIST_RATTLER_PYTHON"),
        tool_from_env("CUDIST_CUOBJDUMP"),
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let tool = work.path().join("tool");
    std::fs::write(&tool, "#!/bin/sh\necho hi\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = |path: &str, src: std::path::PathBuf| cudist_conda::Entry {
        path: path.into(),
        content: cudist_conda::Content::File(src),
        known: None,
    };
    let pkg = cudist_conda::NewPackage {
        name: "kern".into(),
        version: "1.0".into(),
        build: "h0_0".into(),
        build_number: 0,
        subdir: cudist_conda::host_subdir().0.into(),
        depends: vec![],
        constrains: vec![],
        license: Some("MIT".into()),
        run_exports: None,
        files: vec![
            file("lib/libk.so", fixtures().join("multi.so")),
            cudist_conda::Entry {
                path: "lib/libk.so.1".into(),
                content: cudist_conda::Content::Link("libk.so".into()),
                known: None,
            },
            file("bin/tool", tool),
        ],
        licenses: vec![],
    };
    let opts = cudist_conda::WriteOptions {
        zstd_level: 1,
        timestamp: 1_700_000_000,
        threads: 1,
    };
    let dir = work.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    let input = cudist_conda::write_conda(&pkg, &dir, &opts).unwrap();
    let out = work.path().join("out");
    let (code, v) = slim(&[
        input.to_str().unwrap(),
        "--gpu",
        "90",
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{v:#}");
    let written = std::path::PathBuf::from(v["inputs"][0]["output"].as_str().unwrap());
    assert_eq!(
        written.file_name().unwrap().to_string_lossy(),
        "kern-1.0-h0_0_slim_sm_90.conda"
    );
    let back = cudist_conda::read(&written).unwrap();
    assert_eq!(back.index.build, "h0_0_slim_sm_90");
    // Modes, links and bytes of every member, read back.
    let mut members = std::collections::BTreeMap::new();
    cudist_conda::scan(&written, cudist_conda::Parts::All, |m| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(m.reader, &mut bytes).unwrap();
        members.insert(m.path.to_string(), (m.kind.clone(), m.mode, bytes));
        Ok(cudist_conda::Next::Continue)
    })
    .unwrap();
    assert_eq!(members["bin/tool"].1, 0o755);
    assert_eq!(
        members["lib/libk.so.1"].0,
        cudist_conda::MemberKind::Link("libk.so".into())
    );
    assert!(members.contains_key("info/cudist-slim.json"));
    let lib = &members["lib/libk.so"].2;
    assert_eq!(
        lib.len() as u64,
        std::fs::metadata(fixtures().join("multi.so"))
            .unwrap()
            .len()
    );
    assert_ne!(lib, &std::fs::read(fixtures().join("multi.so")).unwrap());
    let row = back
        .paths
        .as_ref()
        .unwrap()
        .paths
        .iter()
        .find(|p| p.path == "lib/libk.so")
        .unwrap();
    use sha2_hex::hex_sha256;
    assert_eq!(row.sha256.as_deref(), Some(hex_sha256(lib).as_str()));
    // py-rattler installs it (checking the files against paths.json), and the library holds
    // the sm_90 code only.
    let prefix = work.path().join("prefix");
    let o = std::process::Command::new(&py)
        .arg(repo_root().join("scripts/conda-install-local.py"))
        .arg(&prefix)
        .arg(&written)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        listing(&cuobjdump, &prefix.join("lib/libk.so")),
        vec!["sm_90", "sm_90", "sm_90"]
    );
    assert_eq!(
        std::fs::metadata(prefix.join("bin/tool"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
}

/// The sha256 of bytes as lower-case hex, computed by `sha256sum` (an oracle outside cudist).
mod sha2_hex {
    pub fn hex_sha256(bytes: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let o = child.wait_with_output().unwrap();
        String::from_utf8(o.stdout)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    }
}

/// A command line that cannot be carried out is a usage error (exit 2), named before anything is
/// written: an ELF file without `-o` or `--in-place`, a wheel without `-w`, and a GPU no one
/// makes (`sm_95`: below the newest architecture the catalog knows, and not one of them). An SM
/// above every known one may be a newer GPU: slimmed for by the rules, with a warning.
#[test]
fn what_cannot_be_done_is_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    let lib = fixtures().join("multi.so");
    let wheel = work.path().join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &wheel,
        "demo",
        &[],
        &[("demo/multi.so", std::fs::read(&lib).unwrap())],
    );
    for (args, says) in [
        (
            vec!["slim", "--gpu", "sm_90", lib.to_str().unwrap()],
            "-o FILE, or --in-place",
        ),
        (
            vec!["slim", "--gpu", "sm_90", wheel.to_str().unwrap()],
            "-w DIR",
        ),
        (
            vec![
                "slim",
                "--gpu",
                "sm_95",
                "--dry-run",
                wheel.to_str().unwrap(),
            ],
            "has compute capability 9.5 (sm_95); the nearest are sm_90 and sm_100",
        ),
    ] {
        let o = cudist(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let o = cudist(&[
        "slim",
        "--gpu",
        "sm_130",
        "--dry-run",
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("sm_130 is not an architecture this catalog knows"),
        "{}",
        stderr(&o)
    );
    // A GPU the catalog lacks, taken as it is when asked.
    let o = cudist(&[
        "slim",
        "--gpu",
        "sm_95",
        "--allow-unknown-gpu",
        "--dry-run",
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("sm_95 is not an architecture this catalog knows"),
        "{}",
        stderr(&o)
    );
}

/// `--max-memory` holds for slim as for inspect and repair: a member larger than its share is
/// read, slimmed, cut and deflated through temporary files, never held in the heap. The member
/// here (192 MiB: a loaded `.nv_fatbin` of two 96 MiB cubins, sm_80 and sm_90) is slimmed to
/// sm_90 under a data limit of 160 MiB (RLIMIT_DATA counts the heap and private mappings, not
/// shared mappings of files), which holding the member or its cut copy in memory exceeds; the
/// wheel written is byte for byte the one slim writes with the member in memory.
#[test]
fn a_member_larger_than_the_memory_budget_is_slimmed_through_temporary_files() {
    const PAYLOAD: u64 = 96 << 20;
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n);
    // One fatbin container, two uncompressed cubin entries (64-byte headers, docs/fatbin.md §3).
    let mut fat = std::io::BufWriter::new(std::fs::File::create(p("fat.bin")).unwrap());
    use std::io::Write;
    fat.write_all(&0xBA55_ED50u32.to_le_bytes()).unwrap();
    fat.write_all(&[1, 0, 0x10, 0]).unwrap();
    fat.write_all(&(2 * (0x40 + PAYLOAD)).to_le_bytes())
        .unwrap();
    for sm in [80u32, 90] {
        let mut h = [0u8; 0x40];
        h[0..2].copy_from_slice(&2u16.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        h[8..16].copy_from_slice(&PAYLOAD.to_le_bytes());
        h[0x18..0x1A].copy_from_slice(&7u16.to_le_bytes());
        h[0x1A..0x1C].copy_from_slice(&1u16.to_le_bytes());
        h[0x1C..0x20].copy_from_slice(&sm.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
        fat.write_all(&h).unwrap();
        let chunk = vec![sm as u8; 1 << 20];
        for _ in 0..PAYLOAD >> 20 {
            fat.write_all(&chunk).unwrap();
        }
    }
    fat.into_inner().unwrap().sync_all().unwrap();
    std::fs::write(
        p("big.c"),
        format!(
            "__asm__(\".section .nv_fatbin,\\\"a\\\",@progbits\\n.balign 8\\n.globl blob\\nblob:\\n.incbin \\\"{}\\\"\\n.previous\\n\");\n\
             extern const unsigned char blob[];\n\
             struct W {{ int magic; int version; const unsigned char *data; void *rest; }};\n\
             __attribute__((section(\".nvFatBinSegment\"), used)) struct W wrapper = {{0x466243b1, 1, blob, 0}};\n\
             int first(void) {{ return wrapper.data[0]; }}\n",
            p("fat.bin").display()
        ),
    )
    .unwrap();
    let st = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(p("libbig.so"))
        .arg(p("big.c"))
        .status()
        .unwrap();
    assert!(st.success(), "gcc");
    std::fs::remove_file(p("fat.bin")).unwrap();
    let wheel = p("big-1.0-py3-none-any.whl");
    write_wheel(
        &wheel,
        "big",
        &[],
        &[("big/libbig.so", std::fs::read(p("libbig.so")).unwrap())],
    );
    std::fs::remove_file(p("libbig.so")).unwrap();
    let run = |out: &str, budget: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"));
        c.args(["slim", "--json", "--gpu", "sm_90"])
            .arg(&wheel)
            .arg("-w")
            .arg(p(out));
        if let Some(b) = budget {
            // Worker threads' stacks count against the limit: as many as on a 2-core machine.
            c.args(["--max-memory", b]).env("RAYON_NUM_THREADS", "2");
            // SAFETY: setrlimit in the child before exec; no allocation, no lock.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                    let lim = libc::rlimit {
                        rlim_cur: 160 << 20,
                        rlim_max: 160 << 20,
                    };
                    if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{budget:?}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = &v["inputs"][0]["files"][0];
        assert_eq!(f["bytes_removed"], PAYLOAD + 0x40, "{v}");
        assert!(
            f["file_bytes_cut"].as_u64().unwrap() >= PAYLOAD - (128 << 10),
            "{v}"
        );
        std::fs::read(p(out).join(wheel.file_name().unwrap())).unwrap()
    };
    let bounded = run("bounded", Some("32M"));
    let in_memory = run("in-memory", None);
    assert!(bounded == in_memory, "the two slimmed wheels differ");
}
