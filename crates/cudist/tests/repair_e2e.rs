//! `cudist repair` end to end, with pip: a real extension module linked against NVIDIA's real
//! libcudart is packed, repaired, and installed into a fresh venv. Without the CUDA wheel, import
//! fails naming the library; with it, import succeeds with no LD_LIBRARY_PATH, and `pip check` is
//! clean. Needs `CUDIST_REAL_WHEELS` (scripts/test.sh); the auditwheel case also `CUDIST_AUDITWHEEL`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const EXT_C: &str = r#"
#include <Python.h>
extern int cudaRuntimeGetVersion(int *);
static PyObject *version(PyObject *self, PyObject *args) {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return PyLong_FromLong(v);
}
static PyMethodDef methods[] = {{"runtime_version", version, METH_NOARGS, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_ext", 0, -1, methods};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&def); }
"#;

fn py(code: &str) -> String {
    let o = Command::new("python3").args(["-c", code]).output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn run(cmd: &mut Command) -> Output {
    cmd.env_remove("LD_LIBRARY_PATH")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap()
}

/// Extracts one member of `wheel` into `dir` and returns its path.
fn extract_one(wheel: &Path, member: &str, dir: &Path) -> PathBuf {
    extract(wheel, &[member], dir);
    dir.join(member)
}

/// Builds the `demo` extension against `libcudart` (real SONAME `soname`) and packs a wheel.
fn demo_wheel(work: &Path, cudart: &Path, soname: &str) -> PathBuf {
    demo_wheel_with(work, cudart, soname, "from ._ext import runtime_version\n")
}

/// [`demo_wheel`] with a chosen `demo/__init__.py`.
fn demo_wheel_with(work: &Path, cudart: &Path, soname: &str, init: &str) -> PathBuf {
    let link = work.join("link");
    std::fs::create_dir_all(&link).unwrap();
    std::fs::copy(cudart, link.join(soname)).unwrap();
    std::os::unix::fs::symlink(soname, link.join("libcudart.so")).unwrap();
    let include = py("import sysconfig; print(sysconfig.get_paths()['include'])");
    let suffix = py("import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))");
    let tag = py("import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')");
    std::fs::write(work.join("ext.c"), EXT_C).unwrap();
    let so = work.join(format!("_ext{suffix}"));
    let o = run(Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(work.join("ext.c"))
        .arg(format!("-I{include}"))
        .arg(format!("-L{}", link.display()))
        .arg("-lcudart"));
    ok(&o, "gcc");
    let w = work.join(format!("demo-1.0-{tag}-{tag}-linux_x86_64.whl"));
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            ("demo/__init__.py", init.as_bytes().to_vec()),
            (&format!("demo/_ext{suffix}"), std::fs::read(&so).unwrap()),
        ],
    );
    w
}

struct Venv {
    dir: PathBuf,
}

impl Venv {
    fn new(at: &Path) -> Venv {
        ok(
            &run(Command::new("python3").args(["-m", "venv"]).arg(at)),
            "venv",
        );
        Venv {
            dir: at.to_path_buf(),
        }
    }
    fn pip(&self, args: &[&str]) -> Output {
        run(Command::new(self.dir.join("bin/python"))
            .args(["-m", "pip"])
            .args(args))
    }
    fn import_demo(&self) -> Output {
        run(Command::new(self.dir.join("bin/python"))
            .args(["-c", "import demo; print(demo.runtime_version())"]))
    }
}

/// Installs the repaired wheel, checks the import failure, adds the CUDA wheel, checks success.
fn install_and_import(
    work: &Path,
    repaired: &Path,
    runtime_wheel: &Path,
    soname: &str,
    version_prefix: &str,
) {
    let venv = Venv::new(&work.join("venv"));
    ok(
        &venv.pip(&[
            "install",
            "--no-index",
            "--no-deps",
            repaired.to_str().unwrap(),
        ]),
        "pip install",
    );
    let o = venv.import_demo();
    assert!(
        !o.status.success(),
        "import must fail without the CUDA wheel"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ImportError") && err.contains(soname), "{err}");
    ok(
        &venv.pip(&[
            "install",
            "--no-index",
            "--no-deps",
            runtime_wheel.to_str().unwrap(),
        ]),
        "pip install cuda",
    );
    let o = venv.import_demo();
    ok(&o, "import with the CUDA wheel");
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(
        v.trim().starts_with(version_prefix),
        "cudaRuntimeGetVersion gave {v}"
    );
    ok(&venv.pip(&["check"]), "pip check");
}

/// Builds the demo extension against the runtime wheel's libcudart (`member`), repairs it, checks
/// the requirement and RPATH repair adds, and the pip import test; returns the repaired wheel.
fn repair_and_import(
    runtime: &str,
    member: &str,
    soname: &str,
    requirement: &str,
    rpath: &str,
    version: &str,
) -> Option<(PathBuf, PathBuf, tempfile::TempDir)> {
    let wheels = tool_from_env("CUDIST_REAL_WHEELS")?;
    let rt = find_wheel(&wheels, runtime);
    let work = tempfile::tempdir().unwrap();
    let cudart = extract_one(&rt, member, work.path());
    let w = demo_wheel(work.path(), &cudart, soname);
    let r = repair_json(&w, &work.path().join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(wr["requires_added"][0], requirement);
    assert_eq!(wr["patched"][0]["rpath_added"][0], rpath);
    let repaired = PathBuf::from(wr["output"].as_str().unwrap());
    install_and_import(work.path(), &repaired, &rt, soname, version);
    Some((w, repaired, work))
}

/// A user catalog that names librmm.so (no version in its SONAME) as librmm-cu12's.
const RMM_CATALOG: &str = "schema = 1\n[[library]]\nid = \"rmm\"\nstem = \"librmm\"\nkind = \"external\"\n[[library.cuda]]\nmajor = 12\nsonames = [\"librmm.so\"]\npolicy = \"none\"\npip = \"librmm-cu12\"\npip_dir = \"librmm/lib64\"\n";

#[test]
fn cuda12_extension_loads_from_the_runtime_wheel() {
    let Some((input, repaired, _work)) = repair_and_import(
        "nvidia_cuda_runtime_cu12-12.9.79",
        "nvidia/cuda_runtime/lib/libcudart.so.12",
        "libcudart.so.12",
        "nvidia-cuda-runtime-cu12>=12,<13",
        "$ORIGIN/../nvidia/cuda_runtime/lib",
        "12",
    ) else {
        return;
    };
    // The input was not touched, and inspect now calls the result OK.
    let v = inspect_json(&[repaired.to_str().unwrap()], 0);
    assert_eq!(
        v["artifacts"][0]["verdict"]["status"], "ok",
        "{:#}",
        v["artifacts"][0]["verdict"]
    );
    let before = inspect_json(&[input.to_str().unwrap()], 0);
    assert_eq!(before["artifacts"][0]["verdict"]["status"], "unresolved");
}

#[test]
fn cuda13_extension_loads_from_the_merged_layout() {
    let _ = repair_and_import(
        "nvidia_cuda_runtime-13.5.37",
        "nvidia/cu13/lib/libcudart.so.13",
        "libcudart.so.13",
        "nvidia-cuda-runtime>=13,<14",
        "$ORIGIN/../nvidia/cu13/lib",
        "13",
    );
}

#[test]
fn auditwheel_graft_is_unvendored() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let rt = find_wheel(&wheels, "nvidia_cuda_runtime_cu12-12.9.79");
    let work = tempfile::tempdir().unwrap();
    let cudart = extract_one(&rt, "nvidia/cuda_runtime/lib/libcudart.so.12", work.path());
    let w = demo_wheel(work.path(), &cudart, "libcudart.so.12");
    // What a CUDA-unaware repair does: graft libcudart under a hashed name.
    let naive_dir = work.path().join("naive");
    // auditwheel finds the library through LD_LIBRARY_PATH and runs patchelf from beside itself.
    let tools_bin = auditwheel.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        tools_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(&auditwheel)
        .args(["repair", "-w"])
        .arg(&naive_dir)
        .arg(&w)
        .env("LD_LIBRARY_PATH", work.path().join("link"))
        .env("PATH", path)
        .output()
        .unwrap();
    ok(&o, "auditwheel repair");
    let naive = find_wheel(&naive_dir, "demo-1.0");
    let before = inspect_json(&[naive.to_str().unwrap()], 0);
    let a = &before["artifacts"][0];
    assert_eq!(a["verdict"]["status"], "bloated", "{:#}", a["verdict"]);
    let grafted_bytes = a["vendored"][0]["bytes"].as_u64().unwrap();
    assert!(
        a["vendored"][0]["path"]
            .as_str()
            .unwrap()
            .contains("libcudart-"),
        "{:#}",
        a["vendored"]
    );

    let out = work.path().join("out");
    let r = repair_json(&naive, &out);
    let wr = &r["wheels"][0];
    assert_eq!(wr["removed"][0]["library"], "cudart");
    assert_eq!(wr["removed"][0]["bytes"].as_u64().unwrap(), grafted_bytes);
    let replaced = &wr["patched"][0]["needed_replaced"][0];
    assert!(
        replaced[0].as_str().unwrap().starts_with("libcudart-") && replaced[1] == "libcudart.so.12",
        "{replaced}"
    );
    let repaired = PathBuf::from(wr["output"].as_str().unwrap());
    // Smaller by (about) the compressed size of the library.
    let (n, r_) = (
        std::fs::metadata(&naive).unwrap().len(),
        std::fs::metadata(&repaired).unwrap().len(),
    );
    assert!(n - r_ > 100_000, "naive {n} bytes, repaired {r_} bytes");
    install_and_import(work.path(), &repaired, &rt, "libcudart.so.12", "12");

    // With --exclude (as auditwheel's), the matching library is left alone: the grafted copy
    // stays, nothing is required for it, and no file is patched.
    let kept_dir = work.path().join("kept");
    let o = cudist(&[
        "repair",
        "--json",
        "--exclude",
        "libcudart*",
        "-w",
        kept_dir.to_str().unwrap(),
        naive.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kept: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &kept["wheels"][0];
    assert_eq!(wr["removed"], serde_json::json!([]), "{wr:#}");
    assert_eq!(wr["requires_added"], serde_json::json!([]), "{wr:#}");
    assert_eq!(wr["patched"], serde_json::json!([]), "{wr:#}");
    // A pattern that is not a glob is a usage error.
    let o = cudist(&["repair", "--exclude", "lib[", naive.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A vendored copy named past its SONAME (`libcudart-5a077122.so.12.0.107`, a graft of cudart
/// 12.0.107) is replaced by a requirement that admits no older release than the copy.
#[test]
fn the_requirement_for_a_vendored_copy_admits_no_older_release() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("user.libs");
    let name = "libcudart-5a077122.so.12.0.107";
    fake_lib(&libs, name, name, "cudaMalloc");
    let user = user_of_copy(d, &libs, name, "cudaMalloc", "user.libs");
    let wheel = d.join("user-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "user",
        &[],
        &[
            ("user/libuser.so", user),
            (
                &format!("user.libs/{name}"),
                std::fs::read(libs.join(name)).unwrap(),
            ),
        ],
    );
    let r = repair_json(&wheel, &d.join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(wr["removed"][0]["library"], "cudart", "{wr:#}");
    assert_eq!(
        wr["requires_added"],
        serde_json::json!(["nvidia-cuda-runtime-cu12>=12.0.107,<13"]),
        "{wr:#}"
    );
}

#[test]
fn hostile_and_lying_wheels_are_refused_and_nothing_is_written() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    // A RECORD that lies.
    let w = work.path().join("liar-1.0-py3-none-any.whl");
    python(
        "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z:\n z.writestr('liar/a.py', b'print(1)')\n z.writestr('liar-1.0.dist-info/METADATA', 'Name: liar\\nVersion: 1.0\\n')\n z.writestr('liar-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\n')\n z.writestr('liar-1.0.dist-info/RECORD', 'liar/a.py,sha256=AAAA,8\\n')",
        &[w.to_str().unwrap()],
    );
    let o = cudist(&[
        "repair",
        "--verify",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("RECORD does not match"),
        "{}",
        stderr(&o)
    );
    // An entry that escapes.
    let w2 = work.path().join("evil-1.0-py3-none-any.whl");
    python("import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w'); z.writestr('../x', b'x'); z.close()", &[w2.to_str().unwrap()]);
    let o = cudist(&["repair", "-w", out.to_str().unwrap(), w2.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("member \"../x\" has a `..` component"),
        "{}",
        stderr(&o)
    );
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "nothing written"
    );
    // Without --verify the wheel needs no change: it is copied as it is, byte for byte.
    let o = cudist(&["repair", "-w", out.to_str().unwrap(), w.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("unchanged, copied to"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(
        std::fs::read(out.join("liar-1.0-py3-none-any.whl")).unwrap(),
        std::fs::read(&w).unwrap()
    );
    // A member whose bytes do not match its CRC (pip refuses it) is not copied on.
    let bad = work.path().join("bad-1.0-py3-none-any.whl");
    python(
        "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z:\n z.writestr('bad/a.py', b'print(1)\\n' * 64)\n z.writestr('bad-1.0.dist-info/METADATA', 'Name: bad\\nVersion: 1.0\\n')\n z.writestr('bad-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\n')\n z.writestr('bad-1.0.dist-info/RECORD', '')\ndata = bytearray(open(sys.argv[1], 'rb').read())\nat = 30 + len('bad/a.py') + 5\ndata[at] ^= 0xff\nopen(sys.argv[1], 'wb').write(data)",
        &[bad.to_str().unwrap()],
    );
    let out2 = work.path().join("out2");
    let o = cudist(&[
        "repair",
        "-w",
        out2.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad/a.py"), "{}", stderr(&o));
    assert!(
        !out2.exists() || std::fs::read_dir(&out2).unwrap().next().is_none(),
        "nothing written"
    );
}

#[test]
fn dry_run_writes_nothing_and_toolkit_style() {
    let work = tempfile::tempdir().unwrap();
    let lib = fake_lib(
        work.path(),
        "libcublas.so",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let ext = gcc_shared(
        work.path(),
        "ext.so",
        None,
        "int f(void) { return 0; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", work.path().display()),
            "-lcublas",
        ],
    );
    let _ = lib;
    let w = work.path().join("tk-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "tk",
        &["numpy"],
        &[("tk/deep/er/_ext.so", std::fs::read(ext).unwrap())],
    );
    let out = work.path().join("out");
    let o = cudist(&[
        "repair",
        "--dry-run",
        "--json",
        "--cuda-deps",
        "toolkit",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!out.exists(), "dry run must not write");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        r["wheels"][0]["requires_added"][0],
        "cuda-toolkit[cublas]==12.*"
    );
    assert_eq!(
        r["wheels"][0]["patched"][0]["rpath_added"][0],
        "$ORIGIN/../../../nvidia/cublas/lib"
    );
    let o = cudist(&[
        "repair",
        "--json",
        "--cuda-deps",
        "extra:cuda",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        r["wheels"][0]["requires_added"][0],
        "nvidia-cublas-cu12>=12,<13; extra == \"cuda\""
    );
    let md = Command::new("python3")
        .args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(z.read('tk-1.0.dist-info/METADATA').decode())"])
        .arg(r["wheels"][0]["output"].as_str().unwrap())
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("Provides-Extra: cuda") && md.contains("Requires-Dist: numpy"),
        "{md}"
    );
}

#[test]
fn loader_finds_cuda_wheels_outside_the_package_tree() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let rt = find_wheel(&wheels, "nvidia_cuda_runtime_cu12-12.9.79");
    let work = tempfile::tempdir().unwrap();
    let cudart = extract_one(&rt, "nvidia/cuda_runtime/lib/libcudart.so.12", work.path());
    // The layout most packages have: __init__ imports the extension.
    let w = demo_wheel_with(
        work.path(),
        &cudart,
        "libcudart.so.12",
        "\"\"\"Demo.\"\"\"\nfrom __future__ import annotations\nfrom . import _ext\n",
    );
    let out = work.path().join("out");
    let o = cudist(&[
        "repair",
        "--json",
        "--loader",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &r["wheels"][0];
    assert_eq!(wr["loader"]["module"], "demo._cudist_cuda");
    assert_eq!(wr["loader"]["prefer_system_env"], "DEMO_CUDA_PREFER_SYSTEM");
    assert_eq!(wr["loader"]["imported_by"], "demo/__init__.py");
    // Repaired again: the module is replaced and __init__ keeps one import.
    let again = work.path().join("again");
    let o = cudist(&[
        "repair",
        "--json",
        "--loader",
        "-w",
        again.to_str().unwrap(),
        wr["output"].as_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r2: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let init = {
        let f = std::fs::File::open(r2["wheels"][0]["output"].as_str().unwrap()).unwrap();
        let mut z = zip::ZipArchive::new(f).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut z.by_name("demo/__init__.py").unwrap(), &mut text)
            .unwrap();
        text
    };
    assert_eq!(
        init.matches("from . import _cudist_cuda").count(),
        1,
        "{init}"
    );
    assert!(
        init.starts_with(
            "\"\"\"Demo.\"\"\"\nfrom __future__ import annotations\nfrom . import _cudist_cuda"
        ),
        "{init}"
    );
    let venv = Venv::new(&work.path().join("venv"));
    ok(
        &venv.pip(&[
            "install",
            "--no-index",
            "--no-deps",
            wr["output"].as_str().unwrap(),
        ]),
        "pip install",
    );
    // A wheel installed into a tree of its own (`pip install --target`), and Python with trees
    // on its path.
    let install_into = |tree: &Path, wheel: &Path| {
        ok(
            &venv.pip(&[
                "install",
                "--no-index",
                "--no-deps",
                "--target",
                tree.to_str().unwrap(),
                wheel.to_str().unwrap(),
            ]),
            &format!("pip install --target {}", tree.display()),
        );
    };
    let python_with = |path: String, code: &str| {
        run(Command::new(venv.dir.join("bin/python"))
            .args(["-c", code])
            .env("PYTHONPATH", path))
    };
    // The CUDA wheel lives in another tree on sys.path, where $ORIGIN/.. does not reach.
    let other = work.path().join("other");
    install_into(&other, &rt);
    let python = |code: &str| python_with(other.display().to_string(), code);
    // The original wheel: importing the package fails, as the RPATH misses the other tree.
    let orig = work.path().join("orig");
    install_into(&orig, &w);
    let o = python_with(
        format!("{}:{}", orig.display(), other.display()),
        "import demo",
    );
    assert!(!o.status.success(), "the original must fail here");
    assert!(String::from_utf8_lossy(&o.stderr).contains("libcudart.so.12"));
    // The repaired one: `import demo` runs the loader first, from its __init__.
    let o = python(
        "import demo, demo._cudist_cuda as l; print(demo._ext.runtime_version(), l.missing)",
    );
    ok(&o, "import through the loader");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("12") && text.trim().ends_with("[]"),
        "{text}"
    );
}

#[test]
fn non_cuda_libraries_are_grafted_like_auditwheel_does() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let rt = find_wheel(&wheels, "nvidia_cuda_runtime_cu12-12.9.79");
    let work = tempfile::tempdir().unwrap();
    // libfoo.so.1 needs libbar.so.2: both must be grafted, bar through foo.
    let libs = work.path().join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    gcc_shared(
        &libs,
        "libbar.so",
        Some("libbar.so.2"),
        "int bar(int x) { return x * 2; }\n",
        &[],
    );
    std::fs::rename(libs.join("libbar.so"), libs.join("libbar.so.2")).unwrap();
    std::os::unix::fs::symlink("libbar.so.2", libs.join("libbar.so")).unwrap();
    gcc_shared(
        &libs,
        "libfoo.so",
        Some("libfoo.so.1"),
        "int bar(int); int foo(int x) { return bar(x) + 1; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lbar",
        ],
    );
    std::fs::rename(libs.join("libfoo.so"), libs.join("libfoo.so.1")).unwrap();
    std::os::unix::fs::symlink("libfoo.so.1", libs.join("libfoo.so")).unwrap();
    // The extension uses libfoo and the CUDA runtime.
    let cudart = extract_one(&rt, "nvidia/cuda_runtime/lib/libcudart.so.12", work.path());
    let link = work.path().join("link");
    std::fs::create_dir_all(&link).unwrap();
    std::fs::copy(&cudart, link.join("libcudart.so.12")).unwrap();
    std::os::unix::fs::symlink("libcudart.so.12", link.join("libcudart.so")).unwrap();
    let include = py("import sysconfig; print(sysconfig.get_paths()['include'])");
    let suffix = py("import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))");
    let tag = py("import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')");
    let src = EXT_C.replace(
        "return PyLong_FromLong(v);",
        "extern int foo(int); return PyLong_FromLong(v + foo(0));",
    );
    std::fs::write(work.path().join("ext.c"), src).unwrap();
    let so = work.path().join(format!("_ext{suffix}"));
    ok(
        &run(Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(work.path().join("ext.c"))
            .arg(format!("-I{include}"))
            .arg(format!("-L{}", link.display()))
            .arg(format!("-L{}", libs.display()))
            .args(["-lcudart", "-lfoo"])),
        "gcc",
    );
    let w = work
        .path()
        .join(format!("demo-1.0-{tag}-{tag}-linux_x86_64.whl"));
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            (
                "demo/__init__.py",
                b"from ._ext import runtime_version\n".to_vec(),
            ),
            (&format!("demo/_ext{suffix}"), std::fs::read(&so).unwrap()),
        ],
    );
    let out = work.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["repair", "--json", "-w"])
        .arg(&out)
        .arg(&w)
        .env("LD_LIBRARY_PATH", &libs)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &r["wheels"][0];
    let mut ours: Vec<String> = wr["grafted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["soname"].as_str().unwrap().to_string())
        .collect();
    ours.sort();
    assert_eq!(ours, vec!["libbar.so.2", "libfoo.so.1"], "{wr:#}");
    assert!(wr["unhandled"].as_array().unwrap().is_empty(), "{wr:#}");
    assert_eq!(wr["requires_added"][0], "nvidia-cuda-runtime-cu12>=12,<13");
    let our_tag = wr["platform"]["tags"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();

    // auditwheel on the same wheel (CUDA excluded, as it needs to be told): same grafts, same tag.
    let aw_out = work.path().join("aw");
    let tools_bin = auditwheel.parent().unwrap().to_path_buf();
    let o = Command::new(&auditwheel)
        .args(["repair", "--exclude", "libcudart.so.12", "-w"])
        .arg(&aw_out)
        .arg(&w)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{}", libs.display(), link.display()),
        )
        .env(
            "PATH",
            format!(
                "{}:{}",
                tools_bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    ok(&o, "auditwheel repair");
    let aw_wheel = find_wheel(&aw_out, "demo-1.0");
    let aw_name = aw_wheel.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        aw_name.contains(&our_tag),
        "auditwheel tagged {aw_name}, cudist {our_tag}"
    );
    let listing = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(&aw_wheel)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listing.stdout);
    for lib in ["libfoo-", "libbar-"] {
        assert!(
            names
                .lines()
                .any(|l| l.contains(".libs/") && l.contains(lib)),
            "auditwheel grafted {names}"
        );
    }

    // The repaired wheel imports with no LD_LIBRARY_PATH once the CUDA wheel is installed.
    install_and_import(
        work.path(),
        Path::new(wr["output"].as_str().unwrap()),
        &rt,
        "libcudart.so.12",
        "12",
    );

    // The same wheel tagged manylinux by its author (libfoo left to a dependency or the system,
    // as auditwheel's --exclude does): repair does its CUDA work and grafts nothing from this
    // machine, though it finds libfoo here, and the tag stays manylinux (the one its symbol
    // versions allow).
    let tagged = work
        .path()
        .join(format!("demo-1.0-{tag}-{tag}-manylinux_2_17_x86_64.whl"));
    std::fs::copy(&w, &tagged).unwrap();
    let out2 = work.path().join("out-tagged");
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["repair", "--json", "-w"])
        .arg(&out2)
        .arg(&tagged)
        .env("LD_LIBRARY_PATH", &libs)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &r["wheels"][0];
    assert!(wr["grafted"].as_array().unwrap().is_empty(), "{wr:#}");
    assert_eq!(wr["unhandled"][0], "libfoo.so.1", "{wr:#}");
    assert_eq!(wr["requires_added"][0], "nvidia-cuda-runtime-cu12>=12,<13");
    let name = wr["output"].as_str().unwrap();
    assert!(name.contains("-manylinux"), "{wr:#}");
    assert!(
        wr["platform"]["tags"][0]
            .as_str()
            .unwrap()
            .starts_with("manylinux"),
        "{wr:#}"
    );
}

#[test]
fn build_environment_sets_the_lower_bound() {
    let Some(wheels) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let rt = find_wheel(&wheels, "nvidia_cuda_runtime_cu12-12.9.79");
    let work = tempfile::tempdir().unwrap();
    let cudart = extract_one(&rt, "nvidia/cuda_runtime/lib/libcudart.so.12", work.path());
    let w = demo_wheel(work.path(), &cudart, "libcudart.so.12");
    // The build environment: the runtime wheel as pip installs it.
    let site = work.path().join("site");
    ok(
        &run(Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-index",
                "--no-deps",
                "--target",
            ])
            .arg(&site)
            .arg(&rt)),
        "pip install --target",
    );
    let out = work.path().join("out");
    let o = cudist(&[
        "repair",
        "--json",
        "--dry-run",
        "--build-env",
        site.to_str().unwrap(),
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        r["wheels"][0]["requires_added"][0],
        "nvidia-cuda-runtime-cu12>=12.9.79,<13"
    );
    let o = cudist(&[
        "repair",
        "--build-env",
        "/nonexistent/site",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("--build-env /nonexistent/site"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn user_catalog_libraries_are_repaired_like_cuda() {
    let work = tempfile::tempdir().unwrap();
    let ext = ext_needing(work.path(), "rmm", "librmm.so", "rmm_alloc");
    let w = work.path().join("usesrmm-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(&w, "usesrmm", &[], &[("usesrmm/_ext.so", ext)]);
    let cat = work.path().join("rmm.toml");
    std::fs::write(&cat, RMM_CATALOG).unwrap();
    let out = work.path().join("out");
    let o = cudist(&[
        "repair",
        "--json",
        "--catalog",
        cat.to_str().unwrap(),
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &r["wheels"][0];
    assert_eq!(
        wr["patched"][0]["rpath_added"][0],
        "$ORIGIN/../librmm/lib64"
    );
    assert_eq!(wr["requires_added"][0], "librmm-cu12");
    assert!(wr["unhandled"].as_array().unwrap().is_empty(), "{wr:#}");
    assert!(
        wr["grafted"].as_array().unwrap().is_empty(),
        "catalog libraries are never grafted"
    );
}

#[test]
fn output_is_deterministic() {
    let work = tempfile::tempdir().unwrap();
    let ext = ext_needing(work.path(), "cublas", "libcublas.so.12", "cublasCreate_v2");
    let w = work.path().join("det-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "det",
        &[],
        &[
            ("det/_ext.so", ext),
            ("det/__init__.py", b"x = 1\n".to_vec()),
        ],
    );
    let run_once = |dir: &str| {
        let out = work.path().join(dir);
        let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
            .args(["repair", "--json", "--loader", "-w"])
            .arg(&out)
            .arg(&w)
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        std::fs::read(r["wheels"][0]["output"].as_str().unwrap()).unwrap()
    };
    let (a, b) = (run_once("one"), run_once("two"));
    assert_eq!(a, b, "two runs must give the same bytes");
    assert_eq!(std::fs::read(&w).unwrap(), std::fs::read(&w).unwrap());
}

#[test]
fn every_hostile_wheel_is_refused_by_repair() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let cases = [
        ("link", "i = zipfile.ZipInfo('p/link'); i.create_system = 3; i.external_attr = (0o120777 << 16); z.writestr(i, 'target')", "symbolic link"),
        ("dup", "z.writestr('p/a.py', b'1'); z.writestr('p/a.py', b'2')", "more than once"),
        ("abs", "z.writestr('/etc/x', b'x')", "is an absolute path"),
    ];
    for (name, body, want) in cases {
        let p = work.path().join(format!("{name}-1.0-py3-none-any.whl"));
        python(
            &format!("import sys, zipfile, warnings\nwarnings.simplefilter('ignore')\nz = zipfile.ZipFile(sys.argv[1], 'w')\nz.writestr('{name}-1.0.dist-info/METADATA', 'Name: {name}\\nVersion: 1.0\\n')\nz.writestr('{name}-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\n')\n{body}\nz.close()"),
            &[p.to_str().unwrap()],
        );
        let o = cudist(&["repair", "-w", out.to_str().unwrap(), p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3), "{name}");
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
    }
    // A member that inflates beyond its declared size, and one cut short.
    for (name, patch) in [
        ("bomb", "struct.pack('<I', 100)"),
        ("short", "struct.pack('<I', (1 << 20) + 4096)"),
    ] {
        let p = work
            .path()
            .join(format!("{name}-1.0-cp311-cp311-linux_x86_64.whl"));
        python(
            &format!(
                r#"
import sys, zipfile, struct
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('{name}-1.0.dist-info/METADATA', 'Name: {name}\nVersion: 1.0\n')
    z.writestr('{name}-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\n')
    z.writestr('{name}-1.0.dist-info/RECORD', '')
    z.writestr('{name}/libx.so', b'\x7fELF' + b'\0' * (1 << 20))
raw = bytearray(open(sys.argv[1], 'rb').read())
n = b'{name}/libx.so'
local = raw.find(n) - 30           # the local header precedes the name by 30 bytes
central = raw.find(n, local + 31) - 46  # the central entry by 46
raw[local + 22:local + 26] = {patch}
raw[central + 24:central + 28] = {patch}
open(sys.argv[1], 'wb').write(raw)
"#
            ),
            &[p.to_str().unwrap()],
        );
        let o = cudist(&["repair", "-w", out.to_str().unwrap(), p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("libx.so"), "{name}: {}", stderr(&o));
    }
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "nothing written"
    );
}

#[test]
fn other_vendors_runtimes_and_unknown_wheels_are_never_grafted() {
    // bitsandbytes ships a ROCm and an XPU build beside its CUDA ones. Their libraries come
    // with ROCm and oneAPI: never grafted, no requirement, no warning, and no reason for the
    // linux tag.
    let work = tempfile::tempdir().unwrap();
    let rocm = ext_needing(work.path(), "hipblas", "libhipblas.so.3", "hipblasCreate");
    let xpu = ext_needing(work.path(), "sycl", "libsycl.so.9", "syclInit");
    // And a TensorRT provider (onnxruntime's), a plain library the package loads on demand:
    // TensorRT (about 1 GB) is never grafted, and the provider's need is offered under an
    // extra named after it, not required of everyone; no reason for the linux tag either.
    let trt = ext_needing(
        work.path(),
        "nvinfer",
        "libnvinfer.so.10",
        "createInferRuntime",
    );
    let w = work.path().join("demo-1.0-py3-none-linux_x86_64.whl");
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            ("demo/__init__.py", Vec::new()),
            ("demo/libdemo_rocm.so", rocm),
            ("demo/libdemo_xpu.so", xpu),
            ("demo/libdemo_trt.so", trt),
        ],
    );
    let inspect = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&inspect, "linux_x86_64.whl");
    let class_of = |soname: &str| {
        a["elf_files"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|e| e["needed"].as_array().unwrap())
            .find(|n| n["soname"] == soname)
            .map(|n| n["class"].clone())
    };
    assert_eq!(class_of("libhipblas.so.3"), Some("vendor".into()));
    assert_eq!(class_of("libsycl.so.9"), Some("vendor".into()));
    let lines = verdict_lines(a);
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("demo/libdemo_rocm.so needs AMD ROCm's runtime (libhipblas.so.3)")),
        "{lines:?}"
    );
    let out = work.path().join("out");
    let r = repair_json(&w, &out);
    let wr = &r["wheels"][0];
    assert!(wr["grafted"].as_array().unwrap().is_empty(), "{wr:#}");
    assert!(wr["unhandled"].as_array().unwrap().is_empty(), "{wr:#}");
    assert_eq!(
        wr["optional_parts"][0]["path"], "demo/libdemo_trt.so",
        "{wr:#}"
    );
    assert_eq!(
        wr["requires_added"],
        serde_json::json!(["tensorrt-cu13-libs>=10,<11; extra == \"tensorrt\""]),
        "{wr:#}"
    );
    let vendors: Vec<(&str, &str)> = wr["vendor_runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| {
            v["sonames"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |s| (v["vendor"].as_str().unwrap(), s.as_str().unwrap()))
        })
        .collect();
    assert_eq!(
        vendors,
        vec![
            ("AMD ROCm", "libhipblas.so.3"),
            ("Intel oneAPI", "libsycl.so.9")
        ]
    );
    assert_eq!(wr["vendor_runtimes"][1]["pip"][0], "intel-sycl-rt");
    let tag = wr["platform"]["tags"][0].as_str().unwrap();
    assert!(tag.starts_with("manylinux"), "{tag}");
    // The human output says it once per vendor.
    let text = dry_run_text(&w, &out);
    assert!(
        text.contains("vendor    libhipblas.so.3 (AMD ROCm): not grafted, no requirement")
            && text.contains("requires  tensorrt-cu13-libs>=10,<11; extra == \"tensorrt\"")
            && text.contains("optional  demo/libdemo_trt.so loads on demand: tensorrt-cu13-libs offered under the extra [tensorrt], not required")
            && !text.contains("warning"),
        "{text}"
    );
}

/// `cudist repair --dry-run` of `wheel` into `out`, which must succeed: its human report.
fn dry_run_text(wheel: &Path, out: &Path) -> String {
    let o = cudist(&[
        "repair",
        "--dry-run",
        "-w",
        out.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o) + &stderr(&o)
}

/// A library at `dir/file` (SONAME `soname` when given) that calls `symbol` from `needs` (a
/// library in `dir` linked by its file name), with `PyInit_<module>` when `module` is given (a
/// Python extension), and the RPATH `rpath` when given.
fn linked(
    dir: &Path,
    file: &str,
    module: Option<&str>,
    needs: &str,
    symbol: &str,
    rpath: Option<&str>,
) -> Vec<u8> {
    let init = module
        .map(|m| format!("void *PyInit_{m}(void) {{ return 0; }}\n"))
        .unwrap_or_default();
    let source = format!("int {symbol}(void *); int f(void) {{ return {symbol}(0); }}\n{init}");
    let rpath = rpath.map(|r| format!("-Wl,-rpath,{r}"));
    let mut args = vec![
        "-Wl,--no-as-needed".to_string(),
        format!("-L{}", dir.display()),
        format!("-l:{needs}"),
    ];
    args.extend(rpath);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    std::fs::read(gcc_shared(dir, file, None, &source, &args)).unwrap()
}

#[test]
fn repair_never_ships_less_than_the_original_nor_demands_more() {
    // The shapes found in real wheels: an extension the import loads (its cuBLAS is required);
    // one the package imports only inside a function (cupy's cuTENSOR module: offered under an
    // extra, as the original never required it); a plugin loaded on demand that links a CUDA
    // library the wheel carries as a renamed copy (torchvision's image.so and nvjpeg: the copy
    // leaves, so the requirement that replaces it is hard, not an extra); and a vendored CUDA
    // library no file names, which the package opens by path (triton's CUPTI): it stays.
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(d, "libcublas.so.12", "libcublas.so.12", "cublasCreate_v2");
    fake_lib(d, "libcutensor.so.2", "libcutensor.so.2", "cutensorCreate");
    let nvjpeg = std::fs::read(fake_lib(
        d,
        "libnvjpeg-1a2b3c4d.so.12",
        "libnvjpeg-1a2b3c4d.so.12",
        "nvjpegCreateSimple",
    ))
    .unwrap();
    let cupti = std::fs::read(fake_lib(
        d,
        "libcupti.so.12",
        "libcupti.so.12",
        "cuptiActivityEnable",
    ))
    .unwrap();
    let ext = "cpython-311-x86_64-linux-gnu.so";
    let core = linked(
        d,
        "core.so",
        Some("_core"),
        "libcublas.so.12",
        "cublasCreate_v2",
        None,
    );
    let tensor = linked(
        d,
        "tensor.so",
        Some("_tensor"),
        "libcutensor.so.2",
        "cutensorCreate",
        None,
    );
    let image = linked(
        d,
        "image.so",
        None,
        "libnvjpeg-1a2b3c4d.so.12",
        "nvjpegCreateSimple",
        Some("$ORIGIN/../demo.libs"),
    );
    // A profiler plugin that opens CUPTI itself (dlopen, the SONAME in its strings): by joining a
    // directory to the name, as triton's proton does; no search path of it lists the directory,
    // so the loader does not reach the vendored copy by name.
    let prof = std::fs::read(gcc_shared(
        d,
        "libprof.so",
        None,
        "#include <dlfcn.h>\nvoid *open_cupti(void) { return dlopen(\"libcupti.so.12\", RTLD_NOW); }\n",
        &["-ldl"],
    ))
    .unwrap();
    let init = "from . import _core\n\n\ndef contract():\n    from . import _tensor\n\n    return _tensor\n";
    let w = d.join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            ("demo/__init__.py", init.as_bytes().to_vec()),
            (&format!("demo/_core.{ext}"), core),
            (&format!("demo/_tensor.{ext}"), tensor),
            ("demo/image.so", image),
            ("demo.libs/libnvjpeg-1a2b3c4d.so.12", nvjpeg),
            ("demo/lib/cupti/libcupti.so.12", cupti),
            ("demo/libprof.so", prof),
        ],
    );
    let inspect = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&inspect, "linux_x86_64.whl");
    let prof_report = a["elf_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "demo/libprof.so")
        .unwrap();
    assert_eq!(
        prof_report["lazy_loads"][0]["soname"], "libcupti.so.12",
        "{prof_report:#}"
    );
    let out = d.join("out");
    let r = repair_json(&w, &out);
    let wr = &r["wheels"][0];
    let paths = |key: &str| -> Vec<String> {
        wr[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        paths("removed"),
        vec!["demo.libs/libnvjpeg-1a2b3c4d.so.12"],
        "{wr:#}"
    );
    assert_eq!(
        paths("kept"),
        vec!["demo/lib/cupti/libcupti.so.12"],
        "{wr:#}"
    );
    assert!(
        wr["kept"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("no file in the wheel loads it by name"),
        "{wr:#}"
    );
    let mut requires: Vec<&str> = wr["requires_added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    requires.sort();
    assert_eq!(
        requires,
        vec![
            "cutensor-cu12>=2,<3; extra == \"cutensor\"",
            "nvidia-cublas-cu12>=12,<13",
            // The profiler's own dlopen of the SONAME: offered, with a search path to the wheel.
            "nvidia-cuda-cupti-cu12>=12,<13; extra == \"cupti\"",
            "nvidia-nvjpeg-cu12>=12,<13",
        ],
        "{wr:#}"
    );
    let mut optional = paths("optional_parts");
    optional.sort();
    assert_eq!(
        optional,
        vec![format!("demo/_tensor.{ext}"), "demo/libprof.so".to_string()]
    );
    // The plugin's renamed NEEDED entry names the real library, found in the wheel's directory.
    let image_patch = wr["patched"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "demo/image.so")
        .expect("image.so patched");
    assert_eq!(
        image_patch["needed_replaced"][0],
        serde_json::json!(["libnvjpeg-1a2b3c4d.so.12", "libnvjpeg.so.12"])
    );
    // What the repaired wheel says of itself: the kept CUPTI is still there, nvjpeg is not.
    let repaired = PathBuf::from(wr["output"].as_str().unwrap());
    let names: Vec<String> = {
        let f = std::fs::File::open(&repaired).unwrap();
        let z = zip::ZipArchive::new(f).unwrap();
        z.file_names().map(str::to_string).collect()
    };
    assert!(names.iter().any(|n| n == "demo/lib/cupti/libcupti.so.12"));
    assert!(!names.iter().any(|n| n.contains("libnvjpeg")));
    let text = dry_run_text(&w, &out);
    assert!(
        text.contains("  kept      demo/lib/cupti/libcupti.so.12 (cupti, ")
            && text.contains("--remove-unreached takes it out"),
        "{text}"
    );
    // Asked to, repair takes the unreached copy out too (nothing stands in for it).
    let o = cudist(&[
        "repair",
        "--json",
        "--dry-run",
        "--remove-unreached",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let removed: Vec<&str> = all["wheels"][0]["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        removed,
        vec![
            "demo.libs/libnvjpeg-1a2b3c4d.so.12",
            "demo/lib/cupti/libcupti.so.12"
        ]
    );
    assert_eq!(all["wheels"][0]["kept"], serde_json::json!([]));
}

#[test]
fn imported_symbols_raise_the_lower_bound() {
    // RAPIDS' libraries built with nvJitLink 13.1 import `__nvJitLinkGetErrorLog_13_1`, which
    // nvJitLink 13.0 lacks ("undefined symbol" at load; NVIDIA/cuvs#1862): the requirement repair
    // writes starts at the first release that exports it (read from the wheels on PyPI).
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(
        d,
        "libnvJitLink.so.13",
        "libnvJitLink.so.13",
        "__nvJitLinkGetErrorLog_13_1",
    );
    let ext = linked(
        d,
        "jit.so",
        Some("_jit"),
        "libnvJitLink.so.13",
        "__nvJitLinkGetErrorLog_13_1",
        None,
    );
    let w = d.join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            ("demo/__init__.py", b"from . import _jit\n".to_vec()),
            ("demo/_jit.cpython-311-x86_64-linux-gnu.so", ext),
        ],
    );
    let inspect = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&inspect, "linux_x86_64.whl");
    let floors = &a["elf_files"][0]["symbol_floors"];
    assert_eq!(floors[0]["library"], "nvjitlink", "{floors:#}");
    assert_eq!(floors[0]["symbol"], "__nvJitLinkGetErrorLog_13_1");
    let since = floors[0]["since"].as_str().unwrap();
    assert!(since.starts_with("13.1."), "{since}");
    let r = repair_json(&w, &d.join("out"));
    assert_eq!(
        r["wheels"][0]["requires_added"],
        serde_json::json!([format!("nvidia-nvjitlink>={since},<14")]),
        "{:#}",
        r["wheels"][0]
    );
}

#[test]
fn a_tagged_wheel_keeps_its_taggers_exclusions() {
    // torchvision's wheel needs torch's libc10.so, which its build left out (auditwheel's
    // --exclude) and the torch wheel brings: repair does its CUDA work and keeps the manylinux
    // tag. The same file in a wheel nobody tagged gets linux_x86_64, as auditwheel would say.
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(d, "libc10_demo.so", "libc10_demo.so", "c10_alloc");
    let ext = linked(d, "c.so", Some("_c"), "libc10_demo.so", "c10_alloc", None);
    let members = [
        ("demo/__init__.py", b"from . import _c\n".to_vec()),
        ("demo/_c.cpython-311-x86_64-linux-gnu.so", ext),
    ];
    let tag_of = |name: &str| -> (String, String) {
        let w = d.join(name);
        write_wheel(&w, "demo", &[], &members);
        let text = dry_run_text(&w, &d.join("out"));
        let tag = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("tagged    "))
            .unwrap_or_default()
            .to_string();
        (tag, text)
    };
    let (tagged, text) = tag_of("demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    assert!(tagged.starts_with("manylinux"), "{text}");
    assert!(
        text.contains("note: needs libc10_demo.so")
            && text.contains("the wheel's own manylinux tag already left it out"),
        "{text}"
    );
    let (untagged, text) = tag_of("demo-1.0-cp311-cp311-linux_x86_64.whl");
    assert_eq!(untagged, "linux_x86_64", "{text}");
    assert!(text.contains("warning: needs libc10_demo.so"), "{text}");
}

#[test]
fn a_lazily_loaded_soname_several_majors_share_takes_the_wheels_major_or_none() {
    // `libnccl.so.2` is NCCL's SONAME for CUDA 11, 12 and 13. A file that dlopens it says
    // nothing of the major: alone (paddle's libphi.so) no guess is written; in a wheel whose
    // other libraries are CUDA 12's, the CUDA 12 wheel is offered.
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let comm = std::fs::read(gcc_shared(
        d,
        "libcomm.so",
        None,
        "#include <dlfcn.h>\nvoid *open_nccl(void) { return dlopen(\"libnccl.so.2\", RTLD_NOW); }\n",
        &["-ldl"],
    ))
    .unwrap();
    let alone = d.join("alone-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(&alone, "alone", &[], &[("alone/libcomm.so", comm.clone())]);
    let r = repair_json(&alone, &d.join("out"));
    assert_eq!(
        r["wheels"][0]["requires_added"],
        serde_json::json!([]),
        "{:#}",
        r["wheels"][0]
    );
    fake_lib(d, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    let ext = linked(
        d,
        "rt.so",
        Some("_rt"),
        "libcudart.so.12",
        "cudaMalloc",
        None,
    );
    let w = d.join("both-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "both",
        &[],
        &[
            ("both/__init__.py", b"from . import _rt\n".to_vec()),
            ("both/_rt.cpython-311-x86_64-linux-gnu.so", ext),
            ("both/libcomm.so", comm),
        ],
    );
    let r = repair_json(&w, &d.join("out2"));
    let mut requires: Vec<&str> = r["wheels"][0]["requires_added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    requires.sort();
    assert_eq!(
        requires,
        vec![
            "nvidia-cuda-runtime-cu12>=12,<13",
            "nvidia-nccl-cu12>=2,<3; extra == \"nccl\""
        ],
        "{:#}",
        r["wheels"][0]
    );
}

/// Libraries and programs linked by LLD (their program headers are followed at once by sections,
/// their dynamic sections have no spare entries) are repaired by appending, as patchelf does, and
/// find their CUDA library from the repaired wheel. An LLD-linked program with a 64 MiB `.bss`
/// (appending would pad the file to past it; the rewriter cannot change LLD's layout) is
/// cudist's limit, not a fault of the wheel: exit 1, not 3, a hint that says so and names
/// patchelf, and nothing written. The GNU ld builds of the same sources are repaired.
#[test]
fn an_edit_the_writer_cannot_make_is_not_blamed_on_the_wheel() {
    let Some(lld) = tool_from_env("CUDIST_LLD") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(d, "libcublas.so", "libcublas.so.12", "cublasCreate_v2");
    let source = "int cublasCreate_v2(void *); int f(void) { return cublasCreate_v2(0); }\n";
    let program = "int cublasCreate_v2(void *); int main(void) { return cublasCreate_v2(0); }\n";
    let big = "int cublasCreate_v2(void *); static char big[64 << 20];\nint main(void) { big[5] = 1; return cublasCreate_v2(big); }\n";
    for (linker, kind, expect) in [
        (lld.as_path(), "library", 0),
        (lld.as_path(), "executable", 0),
        (lld.as_path(), "big-bss", 1),
        (Path::new("bfd"), "library", 0),
        (Path::new("bfd"), "executable", 0),
        (Path::new("bfd"), "big-bss", 0),
    ] {
        // gcc finds `ld.lld` in a `-B` directory.
        let mut args: Vec<String> = match linker.to_str() {
            Some("bfd") => vec!["-fuse-ld=bfd".into()],
            _ => vec![
                "-fuse-ld=lld".into(),
                format!("-B{}", linker.parent().unwrap().display()),
            ],
        };
        args.extend([
            "-Wl,--no-as-needed".to_string(),
            format!("-L{}", d.display()),
            "-lcublas".to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (member, bytes) = if kind == "library" {
            let lib = gcc_shared(d, "libuser.so", None, source, &args);
            ("user/libuser.so", std::fs::read(lib).unwrap())
        } else {
            let exe = gcc(
                d,
                "tool",
                if kind == "big-bss" { big } else { program },
                &args,
            );
            ("user/bin/tool", std::fs::read(exe).unwrap())
        };
        let w = d.join("user-1.0-cp311-cp311-linux_x86_64.whl");
        write_wheel(&w, "user", &[], &[(member, bytes)]);
        let out = d.join(format!("out-{}-{kind}", linker.display()).replace('/', "_"));
        let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
            .args(["repair", "--json", "-w"])
            .arg(&out)
            .arg(&w)
            .output()
            .unwrap();
        let what = format!("{linker:?} {kind}");
        assert_eq!(o.status.code(), Some(expect), "{what}: {}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        if expect == 1 {
            let hint = r["errors"][0]["hint"].as_str().unwrap_or_default();
            assert!(
                hint.contains("a limit of cudist, not a fault of the wheel")
                    && hint.contains("patchelf"),
                "{what}: {r:#}"
            );
            assert!(
                !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
                "{what}: something was written"
            );
            continue;
        }
        // The repaired file finds libcublas.so.12 where the NVIDIA wheel puts it, as the loader
        // sees it: `ldd` with the wheel's layout beside the installed package.
        let repaired = r["wheels"][0]["output"].as_str().unwrap().to_string();
        let site = d
            .join(format!("site-{}-{kind}", expect))
            .join(linker.file_name().unwrap());
        extract(Path::new(&repaired), &[member], &site);
        let cublas = site.join("nvidia/cublas/lib");
        std::fs::create_dir_all(&cublas).unwrap();
        std::fs::copy(d.join("libcublas.so"), cublas.join("libcublas.so.12")).unwrap();
        let ldd = Command::new("ldd")
            .arg(site.join(member))
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&ldd.stdout);
        let found = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("libcublas.so.12 => "))
            .and_then(|r| r.split(" (").next())
            .and_then(|p| std::fs::canonicalize(p).ok());
        assert_eq!(
            found,
            Some(std::fs::canonicalize(cublas.join("libcublas.so.12")).unwrap()),
            "{what}: {text}"
        );
    }
}

/// A wheel without ELF files (tritonclient 2.68.0's `py3-none-manylinux1_x86_64`): repair decides
/// no platform, so its `Tag:` lines stay; a WHEEL file without one is no wheel.
#[test]
fn a_wheel_without_elf_files_keeps_its_tags() {
    let work = tempfile::tempdir().unwrap();
    let wheel = work.path().join("pure-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &wheel,
        "pure",
        &[],
        &[("pure/__init__.py", b"x = 1\n".to_vec())],
    );
    let r = repair_json(&wheel, &work.path().join("out"));
    let out = std::path::PathBuf::from(r["wheels"][0]["output"].as_str().unwrap());
    let z = zip::ZipArchive::new(std::fs::File::open(&out).unwrap());
    let mut z = z.unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut z.by_name("pure-1.0.dist-info/WHEEL").unwrap(),
        &mut text,
    )
    .unwrap();
    assert!(
        text.lines().any(|l| l == "Tag: cp311-cp311-linux_x86_64"),
        "{text}"
    );
}

/// A vendored copy of another project's library whose SONAME carries no version (`librmm.so`:
/// RAPIDS puts each release's symbols in a namespace of its own) is kept: no release of its
/// wheel promises the copy's ABI, and a requirement in its place broke holoscan-cu12's import.
#[test]
fn a_vendored_library_without_a_versioned_soname_is_kept() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("libs");
    fake_lib(&libs, "librmm.so", "librmm.so", "rmm_alloc");
    let ext = gcc_shared(
        d,
        "_ext.so",
        None,
        "int rmm_alloc(void *);\nint f(void) { return rmm_alloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lrmm",
            "-Wl,-rpath,$ORIGIN/lib",
        ],
    );
    let w = d.join("usesrmm-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "usesrmm",
        &[],
        &[
            ("usesrmm/_ext.so", std::fs::read(&ext).unwrap()),
            (
                "usesrmm/lib/librmm.so",
                std::fs::read(libs.join("librmm.so")).unwrap(),
            ),
        ],
    );
    let cat = d.join("rmm.toml");
    std::fs::write(&cat, RMM_CATALOG).unwrap();
    let o = cudist(&[
        "repair",
        "--json",
        "--catalog",
        cat.to_str().unwrap(),
        "-w",
        d.join("out").to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wr = &r["wheels"][0];
    assert_eq!(wr["removed"], serde_json::json!([]), "{wr:#}");
    assert_eq!(wr["requires_added"], serde_json::json!([]), "{wr:#}");
    assert!(
        wr["kept"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("its SONAME librmm.so carries no version"),
        "{wr:#}"
    );
}

/// A package that starts a program with its libraries directory on `LD_LIBRARY_PATH`
/// (nvidia-pytriton copies `tritonserver` into a workspace and points `LD_LIBRARY_PATH` at
/// `nvidia_pytriton.libs`): the copy finds its libraries there by name, not by its RPATH, so a
/// requirement cannot stand in for the vendored runtime there. Kept.
#[test]
fn a_libraries_directory_put_on_ld_library_path_keeps_its_libraries() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("user.libs");
    let name = "libcudart-5a077122.so.12.0.107";
    fake_lib(&libs, name, name, "cudaMalloc");
    let user = user_of_copy(d, &libs, name, "cudaMalloc", "user.libs");
    for (server, kept) in [
        (
            "import os, pathlib\ndef env():\n    e = dict(os.environ)\n    e['LD_LIBRARY_PATH'] = str(pathlib.Path(__file__).parent.parent / 'user.libs')\n    return e\n",
            true,
        ),
        ("import os\nLIBS = 'user.libs'\n", false),
    ] {
        let wheel = d.join("user-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
        write_wheel(
            &wheel,
            "user",
            &[],
            &[
                ("user/libuser.so", user.clone()),
                ("user/server.py", server.as_bytes().to_vec()),
                (
                    &format!("user.libs/{name}"),
                    std::fs::read(libs.join(name)).unwrap(),
                ),
            ],
        );
        let out = d.join(format!("out-{kept}"));
        let r = repair_json(&wheel, &out);
        let wr = &r["wheels"][0];
        assert_eq!(
            wr["kept"].as_array().unwrap().len(),
            usize::from(kept),
            "{wr:#}"
        );
        assert_eq!(
            wr["removed"].as_array().unwrap().len(),
            usize::from(!kept),
            "{wr:#}"
        );
    }
}

/// A wheel whose tags are the ones repair would write, in another order (the file name lists
/// `manylinux_2_17` before `manylinux2014`, as faiss-gpu 1.7.2's does), needs no change: it is
/// copied byte for byte, name and `WHEEL` as they are.
#[test]
fn the_same_tags_in_another_order_are_no_change() {
    let work = tempfile::tempdir().unwrap();
    // memcpy's default version is GLIBC_2.14: manylinux_2_17 / manylinux2014.
    let ext = gcc_shared(
        work.path(),
        "ext.so",
        None,
        "#include <string.h>\nvoid *copy(void *a, const void *b, size_t n) { return memcpy(a, b, n); }\n",
        &["-fno-builtin"],
    );
    let name = "ordered-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
    let w = work.path().join(name);
    // Its WHEEL lists the tags in the other order.
    python(
        "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n z.writestr('ordered/_ext.cpython-311-x86_64-linux-gnu.so', open(sys.argv[2], 'rb').read())\n z.writestr('ordered-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: ordered\\nVersion: 1.0\\n')\n z.writestr('ordered-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nRoot-Is-Purelib: false\\nTag: cp311-cp311-manylinux2014_x86_64\\nTag: cp311-cp311-manylinux_2_17_x86_64\\n')\n z.writestr('ordered-1.0.dist-info/RECORD', '')",
        &[w.to_str().unwrap(), ext.to_str().unwrap()],
    );
    let r = repair_json(&w, &work.path().join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(wr["unchanged"], true, "{wr:#}");
    assert_eq!(
        std::fs::read(work.path().join("out").join(name)).unwrap(),
        std::fs::read(&w).unwrap()
    );
}

/// A module the import may load, as far as compiled code can say: a compiled module the import
/// loads names it (cupy-cuda11x's `cupy/fft/_callback` names `cupy.cuda.cufft`, which it imports
/// only in a function). What it needs from outside the wheel is offered under an extra, not
/// required: the original did not declare it, and nothing shows its import fails without it
/// (a hard requirement pulled 307 MB into cupy-cuda11x's installs and a new warning at import).
#[test]
fn what_the_import_may_load_is_offered_not_required() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let core = gcc_shared(
        d,
        "core.so",
        None,
        "__attribute__((used)) static const char name[] = \"pkg.fftmod\";\n\
         const char *PyInit__core(void) { return name; }\n",
        &[],
    );
    fake_lib(d, "libcufft.so", "libcufft.so.11", "cufftCreate");
    let fft = gcc_shared(
        d,
        "fftmod.so",
        None,
        "int cufftCreate(void *);\nint PyInit_fftmod(void) { return cufftCreate(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", d.display()),
            "-lcufft",
        ],
    );
    let fft = std::fs::read(fft).unwrap();
    let w = d.join("pkg-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "pkg",
        &[],
        &[
            ("pkg/__init__.py", b"from pkg import _core\n".to_vec()),
            (
                "pkg/plan.py",
                b"def plan():\n    from pkg import fftmod\n    return fftmod\n".to_vec(),
            ),
            (
                "pkg/_core.cpython-311-x86_64-linux-gnu.so",
                std::fs::read(core).unwrap(),
            ),
            ("pkg/fftmod.cpython-311-x86_64-linux-gnu.so", fft),
        ],
    );
    let inspect = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&inspect, "linux_x86_64.whl");
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with("may fail at import (its name is in the compiled code of pkg/_core.cpython-311-x86_64-linux-gnu.so")
            && l.contains("libcufft.so.11")),
        "{lines:?}"
    );
    // Its LOADS column says as much: `import?`.
    let human = stdout(&cudist(&["inspect", w.to_str().unwrap()]));
    let row = human
        .lines()
        .find(|l| l.trim_start().starts_with("libcufft.so.11 "))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(row.contains(" import? "), "{row}");
    let r = repair_json(&w, &d.join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(
        wr["requires_added"],
        serde_json::json!(["nvidia-cufft-cu12>=11,<12; extra == \"cufft\""]),
        "{wr:#}"
    );
    assert_eq!(
        wr["optional_parts"][0]["path"], "pkg/fftmod.cpython-311-x86_64-linux-gnu.so",
        "{wr:#}"
    );
}

/// What the package's Python loads at import, where a failure fails the import, is required
/// even where no file links it (transformer-engine's `_load_cuda_library("curand")`, which
/// raises where no cuRAND is found); a load the package catches is not, and neither is one a
/// function makes later.
#[test]
fn a_library_the_import_loads_itself_is_required() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(
        d,
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaGetDeviceCount",
    );
    let ext = "cpython-311-x86_64-linux-gnu.so";
    let core = linked(
        d,
        "core.so",
        Some("_core"),
        "libcudart.so.13",
        "cudaGetDeviceCount",
        None,
    );
    let init = "import ctypes\n\n\
                def _load(lib_name):\n    return ctypes.CDLL(f'lib{lib_name}.so.10', mode=ctypes.RTLD_GLOBAL)\n\n\
                _load('curand')\n\
                try:\n    ctypes.CDLL('libcufft.so.12')\nexcept OSError:\n    pass\n\n\
                def later():\n    ctypes.CDLL('libnvjpeg.so.13')\n\n\
                from . import _core\n";
    let w = d.join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "demo",
        &[],
        &[
            ("demo/__init__.py", init.as_bytes().to_vec()),
            (&format!("demo/_core.{ext}"), core),
        ],
    );
    let text = dry_run_text(&w, &d.join("out"));
    assert!(text.contains("requires  nvidia-curand>=10,<11"), "{text}");
    assert!(
        text.contains("requires  nvidia-cuda-runtime>=13,<14"),
        "{text}"
    );
    assert!(!text.contains("nvidia-cufft"), "{text}");
    assert!(!text.contains("nvidia-nvjpeg"), "{text}");
}

/// A wheel none of whose files the import loads, only its code when called (kiwi-array-cuda12's
/// libmlx.so, itk-cudacommon's module): the wheel is its on-demand part, and what its files link
/// is required, or a plain `pip install` of the repair gives a wheel that cannot do anything.
#[test]
fn a_wheel_that_is_all_on_demand_requires_what_its_files_link() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let stub = fake_lib(
        &d.join("stub"),
        "libcudart.so.12",
        "libcudart.so.12",
        "cudaMalloc",
    );
    let lib = gcc_shared(
        d,
        "libgpu.so",
        Some("libgpu.so"),
        "int cudaMalloc(void *);\nint gpu(void) { return cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.parent().unwrap().display()),
            "-l:libcudart.so.12",
        ],
    );
    let w = d.join("gpuonly_cuda12-1.0-py3-none-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "gpuonly-cuda12",
        &[],
        &[
            (
                "gpuonly/__init__.py",
                b"import ctypes, os\ndef run():\n    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libgpu.so'))\n".to_vec(),
            ),
            ("gpuonly/libgpu.so", std::fs::read(&lib).unwrap()),
        ],
    );
    let o = cudist(&["inspect", "--json", w.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = artifact(&v, ".whl");
    assert_eq!(a["elf_files"][0]["tier"], "on-demand", "{a:#}");
    let r = repair_json(&w, &d.join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(
        wr["requires_added"],
        serde_json::json!(["nvidia-cuda-runtime-cu12>=12,<13"]),
        "{wr:#}"
    );
    assert_eq!(wr["optional_parts"], serde_json::json!([]), "{wr:#}");
}

/// A vendored copy of a CUDA release before any NVIDIA ships as wheels (CudaVox carries CUDA
/// 10.2's runtime as `libcudart-80664282.so.10.2.89`): no wheel can stand in for it, so repair
/// keeps it and requires nothing, and inspect says so rather than "would remove them".
#[test]
fn a_copy_of_a_release_before_any_wheel_is_kept() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let copy = "libcudart-80664282.so.10.2.89";
    // The runtime's own entry points, by which a copy is known whatever its name.
    let lib = gcc_shared(
        &d.join("libs"),
        copy,
        Some(copy),
        "int cudaSetDevice(void *p) { return p == 0; }
int cudaMalloc(void) { return 0; }
         int cudaLaunchKernel(void) { return 0; }
int cudaGetDeviceCount(void) { return 0; }
",
        &[],
    );
    let module = gcc_shared(
        d,
        "ext.so",
        Some("ext.so"),
        "int cudaSetDevice(void *);\nint f(void) { return cudaSetDevice(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.parent().unwrap().display()),
            &format!("-l:{copy}"),
            "-Wl,-rpath,$ORIGIN/../old.libs",
        ],
    );
    let w = d.join("old-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "old",
        &[],
        &[
            ("old/__init__.py", b"from . import ext\n".to_vec()),
            ("old/ext.so", std::fs::read(&module).unwrap()),
            (&format!("old.libs/{copy}"), std::fs::read(&lib).unwrap()),
        ],
    );
    let o = cudist(&["inspect", "--json", w.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines = verdict_lines(artifact(&v, ".whl"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("of a release before any NVIDIA ships as wheels")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("would remove them")),
        "{lines:?}"
    );
    let r = repair_json(&w, &d.join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(wr["removed"], serde_json::json!([]), "{wr:#}");
    assert_eq!(wr["requires_added"], serde_json::json!([]), "{wr:#}");
    assert_eq!(wr["kept"][0]["path"], format!("old.libs/{copy}"), "{wr:#}");
    assert!(
        wr["kept"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("a release before any NVIDIA ships as wheels"),
        "{wr:#}"
    );
}

/// A wheel its tagger tagged manylinux, with a plugin linking the OpenCL ICD loader (an
/// interface every vendor's stack provides) and a program linking the package's own library
/// where no search path of the program reaches it (BabitMF's `hmp_perf_main` and `libhmp.so.1`,
/// openmm's plugins): repair keeps the tag it can keep (inspect says the same tag), requires no
/// CUDA wheel for OpenCL, and moves neither.
#[test]
fn a_tagged_wheels_carried_and_interface_libraries_keep_its_tag() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let stub = d.join("stub");
    fake_lib(
        &stub,
        "libOpenCL.so.1",
        "libOpenCL.so.1",
        "clGetPlatformIDs",
    );
    let core = fake_lib(&d.join("core"), "libcore.so.1", "libcore.so.1", "core");
    let plugin = gcc_shared(
        d,
        "libplatcl.so",
        Some("libplatcl.so"),
        "int clGetPlatformIDs(void *);\nint plat(void) { return clGetPlatformIDs(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", stub.display()),
            "-l:libOpenCL.so.1",
        ],
    );
    let program = gcc(
        d,
        "prog",
        "int core(void *);\nint main(void) { return core(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", core.parent().unwrap().display()),
            "-l:libcore.so.1",
        ],
    );
    let w = d.join("kept-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "kept",
        &[],
        &[
            ("kept/__init__.py", b"".to_vec()),
            ("kept/lib/libcore.so.1", std::fs::read(&core).unwrap()),
            ("kept/plugins/libplatcl.so", std::fs::read(&plugin).unwrap()),
            ("kept/bin/prog", std::fs::read(&program).unwrap()),
        ],
    );
    let o = cudist(&["inspect", "--json", w.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines = verdict_lines(artifact(&v, ".whl"));
    let rests = lines
        .iter()
        .find(|l| l.contains("rests on its tagger having left out"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        rests.contains("libOpenCL.so.1") && rests.contains("libcore.so.1"),
        "{rests}"
    );
    let r = repair_json(&w, &d.join("out"));
    let wr = &r["wheels"][0];
    let tag = wr["platform"]["tags"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(tag.starts_with("manylinux"), "{wr:#}");
    assert!(
        rests.contains(&format!("`cudist repair` tags it {tag}")),
        "{rests}"
    );
    assert!(
        !wr["requires_added"].to_string().contains("opencl"),
        "{wr:#}"
    );
}
