//! `cudist inspect` on wheels and trees built here with gcc: fake CUDA libraries with the real
//! SONAMEs and entry points, extensions linked against them with the RPATHs real packages use.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

struct Libs {
    dir: tempfile::TempDir,
}

impl Libs {
    /// Fake cublas 12/13, cudart 12, curand 10, the driver, librmm, libacme (a third-party
    /// library no catalog knows), and CUDA 10.2's and 9.0's libraries (releases before any CUDA
    /// wheel), each as `libX.so` (linker name, for -l) with the real SONAME.
    fn new() -> Libs {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (sub, soname, sym) in [
            ("c12", "libcublas.so.12", "cublasCreate_v2"),
            ("c12", "libcudart.so.12", "cudaMalloc"),
            ("c12", "libcurand.so.10", "curandCreateGenerator"),
            ("c13", "libcublas.so.13", "cublasCreate_v2"),
            ("drv", "libcuda.so.1", "cuInit"),
            ("rmm", "librmm.so", "rmm_alloc"),
            ("rmm", "librapids_logger.so", "rapids_log"),
            ("acme", "libacme.so", "acme_alloc"),
            ("torch", "libc10.so", "c10_alloc"),
            ("c10", "libcudart.so.10.2", "cudaMalloc"),
            ("c10", "libcublas.so.10", "cublasCreate_v2"),
            ("c10", "libcufft.so.10", "cufftPlan1d"),
            ("c9", "libcusparse.so.9.0", "cusparseCreate"),
        ] {
            let sd = d.join(sub);
            std::fs::create_dir_all(&sd).unwrap();
            let linker = format!("{}.so", soname.split(".so").next().unwrap());
            fake_lib(&sd, &linker, soname, sym);
        }
        Libs { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// An extension module linking `libs` (each `(subdir, -l name)`), with DT_RPATH `rpath`.
    fn extension(&self, libs: &[(&str, &str)], rpath: Option<&str>) -> Vec<u8> {
        let mut args: Vec<String> = Vec::new();
        for (sub, l) in libs {
            args.push(format!("-L{}", self.path(sub).display()));
            args.push(format!("-l{l}"));
        }
        if let Some(r) = rpath {
            args.push(format!("-Wl,-rpath,{r}"));
            args.push("-Wl,--disable-new-dtags".into());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = gcc_shared(
            self.dir.path(),
            "ext.so",
            None,
            "int PyInit__ext(void) { return 0; }\n",
            &[&["-Wl,--no-as-needed"], refs.as_slice()].concat(),
        );
        std::fs::read(out).unwrap()
    }
}

fn wheel(dir: &Path, name: &str, requires: &[&str], members: &[(&str, Vec<u8>)]) -> String {
    let p = dir.join(format!("{name}-1.0-cp311-cp311-linux_x86_64.whl"));
    write_wheel(&p, name, requires, members);
    p.display().to_string()
}

const EXT: &str = "pkg/_ext.cpython-311-x86_64-linux-gnu.so";

#[test]
fn lean_wheel_with_rpaths_and_dependencies_is_ok() {
    let libs = Libs::new();
    let ext = libs.extension(
        &[("c12", "cublas"), ("c12", "cudart"), ("drv", "cuda")],
        Some("$ORIGIN/../nvidia/cublas/lib:$ORIGIN/../nvidia/cuda_runtime/lib"),
    );
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "lean",
        &["nvidia-cublas-cu12>=12.1,<13", "nvidia_cuda_runtime_cu12"],
        &[("pkg/__init__.py", b"".to_vec()), (EXT, ext)],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["kind"], "wheel");
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    let cublas = needed(a, "libcublas.so.12");
    assert_eq!(cublas["library"]["pip"], "nvidia-cublas-cu12");
    assert_eq!(cublas["library"]["pip_dir"], "nvidia/cublas/lib");
    assert_eq!(cublas["library"]["conda"], "libcublas");
    assert_eq!(cublas["library"]["toolkit_extra"], "cublas");
    assert_eq!(cublas["library"]["soname_policy"], "major");
    assert_eq!(cublas["rpath_covers"], true);
    assert_eq!(cublas["declared"], true);
    assert_eq!(needed(a, "libcudart.so.12")["declared"], true);
    assert_eq!(a["driver_needed"][0]["soname"], "libcuda.so.1");
    let elf = &a["elf_files"][0];
    assert_eq!(elf["path"], EXT);
    let rp = &elf["rpath"][0];
    assert_eq!(rp["raw"], "$ORIGIN/../nvidia/cublas/lib");
    assert_eq!(rp["expanded"], "nvidia/cublas/lib");
    assert_eq!(rp["location"], "cuda-wheel");
    assert_eq!(rp["provided_by"][0], "nvidia-cublas-cu12");
    let classes: Vec<&str> = elf["needed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["class"].as_str().unwrap())
        .collect();
    assert!(
        classes.contains(&"toolkit") && classes.contains(&"driver") && classes.contains(&"system"),
        "{classes:?}"
    );

    // Human output says the same.
    let o = cudist(&["inspect", &w]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(text.contains("Verdict: OK"), "{text}");
    assert!(
        text.contains("CUDA wheel dir (nvidia-cublas-cu12)"),
        "{text}"
    );
}

/// A wheel whose CUDA wheels are declared only under an extra (pyscfad-cuda12-plugin's
/// `[with-cuda]`, kept so by repair): reached by its RPATH where the extra is installed; a plain
/// install relies on the system. The package's choice, said, not failed.
#[test]
fn cuda_declared_only_under_an_extra_is_said() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], Some("$ORIGIN/../nvidia/cublas/lib"));
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "byextra",
        &[
            "numpy",
            "nvidia-cublas-cu12>=12,<13; extra == \"with-cuda\"",
        ],
        &[
            ("pkg/__init__.py", b"from . import _ext\n".to_vec()),
            (EXT, ext),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    assert!(
        verdict_lines(a).contains(&"loads with the extra [with-cuda]: libcublas.so.12 comes from wheels declared only under it; installed without it, the import finds it only where the system provides it".to_string()),
        "{:?}",
        verdict_lines(a)
    );
}

#[test]
fn missing_rpath_and_dependency_is_unresolved() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "bare", &[], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "unresolved");
    let lines = verdict_lines(a);
    assert!(
        lines.contains(&"fails at import: needs libcublas.so.12 but has no RPATH to nvidia/cublas/lib and no dependency on nvidia-cublas-cu12".to_string()),
        "{lines:?}"
    );
}

/// A file that links torch's libc10.so loads only after `import torch`, which has loaded the
/// CUDA libraries of its build by then (the catalog's `python_provider`): what it needs of those
/// is not a missing RPATH, and libc10.so is not an outside library for the platform tag. The same
/// file without libc10.so is unresolved.
#[test]
fn a_torch_extension_gets_its_cuda_libraries_from_torchs_import() {
    let libs = Libs::new();
    let out = tempfile::tempdir().unwrap();
    let ext = libs.extension(&[("c12", "cublas"), ("torch", "c10")], None);
    // Its package imports torch first, as torch extensions do.
    let init = b"import torch\nfrom . import _ext\n".to_vec();
    let w = out
        .path()
        .join("textn-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    write_wheel(
        &w,
        "textn",
        &["torch"],
        &[(EXT, ext.clone()), ("pkg/__init__.py", init)],
    );
    // A wheel whose Python never imports torch (kernelforge-cuda carries none) leaves that to
    // the program, and says so.
    let bare = out
        .path()
        .join("tbare-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    write_wheel(&bare, "tbare", &["torch"], &[(EXT, ext)]);
    // Alone, their import fails: unresolved, with the fix.
    let b = inspect_json(&[bare.to_str().unwrap()], 0);
    assert_eq!(artifact(&b, ".whl")["verdict"]["status"], "unresolved");
    assert!(
        verdict_lines(artifact(&b, ".whl")).iter().any(|l| l.starts_with(
            "fails at import unless torch is imported first: needs libcublas.so.12, which the import of torch"
        ) && l.contains("nothing in this wheel imports torch")
            && l.ends_with("(fix: import torch first in the package's __init__.py, as its extensions do)")),
        "{:?}",
        verdict_lines(artifact(&b, ".whl"))
    );
    // A library of operators (no module to import) loads once torch is imported: what loads it
    // has imported torch.
    let ops = gcc_shared(
        out.path(),
        "libops.so",
        Some("libops.so"),
        "void *cublasCreate_v2(void *); void *c10_alloc(void *);
void *op(void) { return cublasCreate_v2(c10_alloc(0)); }
",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.path("c12").display()),
            &format!("-L{}", libs.path("torch").display()),
            "-lcublas",
            "-lc10",
        ],
    );
    let opsw = out
        .path()
        .join("tops-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    write_wheel(
        &opsw,
        "tops",
        &["torch"],
        &[("tops/libops.so", std::fs::read(&ops).unwrap())],
    );
    let o = inspect_json(&[opsw.to_str().unwrap()], 0);
    assert_ne!(artifact(&o, ".whl")["verdict"]["status"], "unresolved");
    assert!(
        verdict_lines(artifact(&o, ".whl")).iter().any(|l| l
            .starts_with("loads: libcublas.so.12 once torch is imported: its files link the libraries of torch")),
        "{:?}",
        verdict_lines(artifact(&o, ".whl"))
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    let cublas = needed(a, "libcublas.so.12");
    assert_eq!(
        cublas["loaded_first_by"],
        "torch (torch/__init__.py: _load_global_deps)"
    );
    assert!(
        verdict_lines(a).iter().any(|l| l.starts_with(
            "loads: libcublas.so.12 is loaded before the files that need it: they link the libraries of torch"
        )),
        "{:?}",
        verdict_lines(a)
    );
    assert!(
        a["platform"]["policy"]
            .as_str()
            .is_some_and(|p| p.starts_with("manylinux_2_")),
        "{:#}",
        a["platform"]
    );
    // Without torch's library the file can load before torch: its own search must find cuBLAS.
    let ext = libs.extension(&[("c12", "cublas")], None);
    let w = wheel(out.path(), "plain", &["torch"], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "unresolved", "{a:#}");
    assert!(needed(a, "libcublas.so.12")["loaded_first_by"].is_null());
}

#[test]
fn braced_origin_is_expanded() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], Some("${ORIGIN}/../nvidia/cublas/lib"));
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "braced", &["nvidia-cublas-cu12"], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(
        a["elf_files"][0]["rpath"][0]["expanded"],
        "nvidia/cublas/lib"
    );
    assert_eq!(a["elf_files"][0]["rpath"][0]["location"], "cuda-wheel");
    assert_eq!(a["verdict"]["status"], "ok");
}

#[test]
fn a_provider_wheel_is_not_vendoring() {
    // A wheel named like the library's provider carries it by design (NVIDIA's own wheels).
    let libs = Libs::new();
    let cublas = std::fs::read(libs.path("c12").join("libcublas.so")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "nvidia_cublas_cu12",
        &[],
        &[("nvidia/cublas/lib/libcublas.so.12", cublas.clone())],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert!(a["vendored"].as_array().unwrap().is_empty(), "{a:#}");
    assert_eq!(a["verdict"]["status"], "ok");
    // Nor is the library "statically linked" into itself.
    assert!(
        a["elf_files"][0]["static_cuda"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{a:#}"
    );
    let w = wheel(
        out.path(),
        "other",
        &[],
        &[("other.libs/libcublas.so.12", cublas)],
    );
    let r = inspect_json(&[&w], 0);
    assert_eq!(
        artifact(&r, "other-1.0-cp311-cp311-linux_x86_64.whl")["verdict"]["status"],
        "bloated"
    );
}

#[test]
fn cuda13_merged_layout_and_toolkit_extra() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c13", "cublas")], Some("$ORIGIN/../nvidia/cu13/lib"));
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "thirteen",
        &["cuda-toolkit[cublas]==13.*"],
        &[(EXT, ext)],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    let n = needed(a, "libcublas.so.13");
    assert_eq!(n["library"]["cuda_major"], 13);
    assert_eq!(n["library"]["pip"], "nvidia-cublas");
    assert_eq!(n["declared_by"], "cuda-toolkit[cublas]");
    assert_eq!(a["elf_files"][0]["rpath"][0]["location"], "cuda-wheel");
}

#[test]
fn shared_soname_takes_the_major_of_its_neighbours() {
    // libcurand.so.10 is the SONAME in CUDA 11, 12 and 13: libcudart.so.12 beside it says 12.
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "curand"), ("c12", "cudart")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "rand", &[], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let n = needed(artifact(&r, ".whl"), "libcurand.so.10");
    assert_eq!(n["library"]["cuda_major"], 12);
    assert_eq!(n["library"]["cuda_major_ambiguous"], false);
    assert_eq!(n["library"]["pip"], "nvidia-curand-cu12");
}

#[test]
fn cuda_libraries_of_a_release_before_any_wheel_are_that_release_s() {
    // A CUDA 10.2 build (tsnecuda 3.0.1 links these three): CUDA's libraries, of CUDA 10, no
    // wheel provides them, and `libcufft.so.10`, which CUDA 11 shares, is CUDA 10's beside them.
    let libs = Libs::new();
    let ext = libs.extension(
        &[("c10", "cudart"), ("c10", "cublas"), ("c10", "cufft")],
        None,
    );
    let old = libs.extension(&[("c9", "cusparse")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "tsne", &[], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    for (so, id) in [
        ("libcudart.so.10.2", "cudart"),
        ("libcublas.so.10", "cublas"),
        ("libcufft.so.10", "cufft"),
    ] {
        // Listed among the CUDA libraries the wheel needs.
        let n = needed(a, so);
        assert_eq!(n["library"]["id"], id, "{so}");
        assert_eq!(n["library"]["cuda_major"], 10, "{so}: {n}");
        assert_eq!(n["library"]["older_release"], true, "{so}");
        assert_eq!(n["library"]["cuda_major_ambiguous"], false, "{so}");
        assert!(n["library"]["pip"].is_null(), "{so}: no wheel: {n}");
    }
    let lines = verdict_lines(a).join("\n");
    assert!(
        lines.contains("needs CUDA libraries of CUDA 10, older than any release NVIDIA ships as wheels: libcublas.so.10, libcudart.so.10.2, libcufft.so.10; no wheel provides them"),
        "{lines}"
    );
    assert!(!lines.contains("nvidia-cufft-cu11"), "{lines}");
    // No wheel provides them, so they count against every manylinux policy, as auditwheel says.
    assert_eq!(a["platform"]["policy"], "linux", "{}", a["platform"]);
    // cuSPARSE's SONAMEs do not follow CUDA's major (CUDA 13's is `.so.12`): alone, `.so.9.0`
    // (thundersvm 0.3.12) is of CUDA 10 or before, and said so.
    let w = wheel(out.path(), "svm", &[], &[(EXT, old)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, "svm-1.0-cp311-cp311-linux_x86_64.whl");
    let n = needed(a, "libcusparse.so.9.0");
    assert_eq!(n["library"]["id"], "cusparse");
    assert_eq!(n["library"]["cuda_major"], 10);
    assert_eq!(n["library"]["cuda_major_ambiguous"], true);
    let lines = verdict_lines(a).join("\n");
    assert!(lines.contains("of CUDA 10 or before"), "{lines}");
}

/// The same wheel, tagged manylinux by a tagger that left libacme.so out (auditwheel's
/// `--exclude`, for a library a dependency brings): the tag is what it rests on, said, not
/// unportable, as repair keeps that tag; the platform section stays auditwheel's reading.
#[test]
fn a_tag_made_with_a_library_left_out_rests_on_it() {
    let libs = Libs::new();
    let ext = libs.extension(&[("acme", "acme")], None);
    let out = tempfile::tempdir().unwrap();
    let w = out
        .path()
        .join("acmeuser-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(&w, "acmeuser", &[], &[(EXT, ext)]);
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["platform"]["policy"], "linux", "{:#}", a["platform"]);
    assert_ne!(a["verdict"]["status"], "unportable", "{:#}", a["verdict"]);
    let lines = verdict_lines(a);
    let line = lines
        .iter()
        .find(|l| l.contains("rests on its tagger having left out libacme.so"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    // "its tag, manylinux_2_5 for what it carries, rests on …": the policy repair tags the
    // wheel with.
    let policy = line
        .strip_prefix("its tag, ")
        .and_then(|l| l.split(' ').next())
        .unwrap()
        .to_string();
    let o = cudist(&[
        "repair",
        "--json",
        "-w",
        out.path().join("out").to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
    let written = rep["wheels"][0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        written.contains(&format!("{policy}_x86_64")),
        "{policy}: {rep:#}"
    );
    // Carried under another file name (onnxruntime-ep-nv-tensorrt-rtx-cu13's
    // `libtensorrt_rtx.so.1.7.1`, SONAME `libtensorrt_rtx.so.1`): the wheel's own library, which
    // no search finds by its SONAME; never one a dependency or the machine must provide.
    let acme = std::fs::read(libs.path("acme").join("libacme.so")).unwrap();
    let w = out
        .path()
        .join("acmecarry-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "acmecarry",
        &[],
        &[
            (EXT, libs.extension(&[("acme", "acme")], None)),
            ("pkg/libacme.so.7.1", acme),
        ],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let lines = verdict_lines(artifact(&r, ".whl"));
    assert!(
        lines.iter().any(|l| l.contains(
            "rests on libacme.so, which it carries under other file names (pkg/libacme.so.7.1): no search finds them by these names, only a load of those files by path"
        ) && !l.contains("left out")),
        "{lines:#?}"
    );
}

/// A tag older than the glibc its files need is misbuilt also where its tagger left a library
/// out (dgl 2.1.0: tagged manylinux1, needs GLIBCXX_3.4.21, with libtorch left out): the files
/// are judged with that library out, and the line says the tag it has and the one it should.
#[test]
fn a_tag_older_than_its_files_is_misbuilt_with_libraries_left_out() {
    let libs = Libs::new();
    let d = tempfile::tempdir().unwrap();
    // memcpy's default version is GLIBC_2.14: manylinux_2_17 at the oldest.
    let ext = gcc_shared(
        d.path(),
        "ext.so",
        None,
        "#include <string.h>\nvoid *acme_alloc(void *);\nvoid *copy(void *a, const void *b, size_t n) { acme_alloc(a); return memcpy(a, b, n); }\n",
        &[
            &format!("-L{}", libs.path("acme").display()),
            "-lacme",
            "-fno-builtin",
        ],
    );
    let objdump = std::process::Command::new("objdump")
        .arg("-T")
        .arg(&ext)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&objdump.stdout).contains("GLIBC_2.14"));
    let w = d
        .path()
        .join("acmeold-1.0-cp311-cp311-manylinux1_x86_64.whl");
    write_wheel(&w, "acmeold", &[], &[(EXT, std::fs::read(&ext).unwrap())]);
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "misbuilt", "{:#}", a["verdict"]);
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(
            |l| l.starts_with("is tagged manylinux1_x86_64 (manylinux_2_5) but")
                && l.contains("GLIBC_2.14")
                && l.contains("its tag should be manylinux2014_x86_64.manylinux_2_17_x86_64")
        ),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("its tag, manylinux_2_17 for what it carries, rests on its tagger having left out libacme.so")),
        "{lines:#?}"
    );
}

#[test]
fn a_wheel_no_policy_allows_is_unportable_and_says_what_decides_it() {
    // libacme.so is neither a system library of any policy nor a CUDA (or RAPIDS) one: no
    // manylinux tag.
    let libs = Libs::new();
    let ext = libs.extension(&[("acme", "acme")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "acmeuser", &[], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["platform"]["policy"], "linux", "{:#}", a["platform"]);
    assert_eq!(a["verdict"]["status"], "unportable", "{:#}", a["verdict"]);
    let line = a["verdict"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .find(|l| l.contains("PyPI refuses"))
        .unwrap_or_else(|| panic!("{:#}", a["verdict"]));
    assert!(line.contains("libacme.so"), "{line}");
    // The table leads with the blocker of the newest policy, the one that decides the tag.
    let last = a["platform"]["blocked"].as_array().unwrap().last().unwrap();
    let text = stdout(&cudist(&["inspect", &w]));
    let first = text
        .lines()
        .skip_while(|l| !l.starts_with("Platform:"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        first.contains(&format!(
            "not {} (the next more compatible policy)",
            last["policy"].as_str().unwrap()
        )) && first.contains("libacme.so"),
        "{text}"
    );
    assert!(text.contains("Verdict: UNPORTABLE"), "{text}");
}

#[test]
fn build_mistakes_no_installer_catches_are_misbuilt() {
    // A wheel tagged for any platform that carries an ELF file (hidet 0.6's shape), whose RUNPATH
    // names the CI workspace it was built in, beside a system directory (not a mistake).
    let libs = Libs::new();
    let ext = libs.extension(
        &[],
        Some("/github/workspace/build/lib:/usr/local/cuda/lib64"),
    );
    let out = tempfile::tempdir().unwrap();
    let w = out.path().join("anyplat-1.0-py3-none-any.whl");
    write_wheel(&w, "anyplat", &[], &[(EXT, ext.clone())]);
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "misbuilt", "{:#}", a["verdict"]);
    let lines: Vec<&str> = a["verdict"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        lines[0].contains("tagged for any platform")
            && lines[0].contains("1 ELF file(s) for x86_64")
            && lines[0].contains("manylinux"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/github/workspace/build/lib, a directory of the build machine")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("/usr/local/cuda/lib64")),
        "{lines:?}"
    );
    let o = cudist(&["inspect", "--fail-on", "misbuilt", w.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("Verdict: MISBUILT"), "{}", stdout(&o));
    // The same file in a platform wheel, searching only the system: nothing to say.
    let clean = libs.extension(&[], Some("/usr/local/cuda/lib64"));
    let w = wheel(out.path(), "platonly", &[], &[(EXT, clean)]);
    let a = inspect_json(&[&w], 0);
    assert_eq!(artifact(&a, ".whl")["verdict"]["status"], "ok", "{a:#}");
}

#[test]
fn strict_and_fail_on_turn_verdicts_into_exit_code_1() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "unres", &[], &[(EXT, ext)]);
    assert_eq!(
        inspect_json(&[&w], 0)["artifacts"][0]["verdict"]["status"],
        "unresolved"
    );
    let code = |extra: &[&str]| {
        let mut args = vec!["inspect", w.as_str()];
        args.extend_from_slice(extra);
        let o = cudist(&args);
        (o.status.code(), stderr(&o))
    };
    assert_eq!(code(&[]).0, Some(0), "a verdict alone does not fail");
    let (c, err) = code(&["--strict"]);
    assert_eq!(c, Some(1));
    assert!(err.contains("verdict unresolved (--strict)"), "{err}");
    assert_eq!(code(&["--fail-on", "bloated,unresolved"]).0, Some(1));
    assert_eq!(code(&["--fail-on", "bloated"]).0, Some(0));
    assert_eq!(code(&["--fail-on", "sideways"]).0, Some(2));
    // JSON output keeps its shape; the exit code says it.
    assert_eq!(code(&["--json", "--strict"]).0, Some(1));
    // The fixtures are OK: --strict passes.
    let o = cudist(&["inspect", "--strict", fixtures().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_guessed_major_is_said_to_be_a_guess() {
    // libcurand.so.10 alone: CUDA 11, 12 and 13 all ship it, nothing says which.
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "curand")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "alone", &[], &[(EXT, ext)]);
    let r = inspect_json(&[&w], 0);
    let n = needed(artifact(&r, ".whl"), "libcurand.so.10");
    assert_eq!(n["library"]["cuda_major_ambiguous"], true, "{n:#}");
    let major = n["library"]["cuda_major"].as_u64().unwrap();
    let o = cudist(&["inspect", &w]);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("libcurand.so.10  {major}?")),
        "the table marks the major as a guess:\n{text}"
    );
    assert!(
        text.contains("? libcurand.so.10: several CUDA majors ship this SONAME"),
        "{text}"
    );
}

#[test]
fn naive_graft_is_recognised_by_soname_and_content() {
    let libs = Libs::new();
    let d = libs.dir.path().join("graft");
    std::fs::create_dir_all(&d).unwrap();
    // What a CUDA-unaware repair leaves: a hashed copy, its SONAME rewritten to the hashed name.
    let grafted = fake_lib(
        &d,
        "libcublas-1a2b3c4d.so.12",
        "libcublas-1a2b3c4d.so.12",
        "cublasCreate_v2",
    );
    // A decoy: named like cudart but it is not cudart (no SONAME of it, none of its entry points).
    let decoy = gcc_shared(
        &d,
        "libcudart.so.12",
        Some("libdecoy.so.1"),
        "int decoy(void) { return 1; }\n",
        &[],
    );
    let ext = gcc_shared(
        &d,
        "ext.so",
        None,
        "int PyInit__ext(void) { return 0; }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", d.display()),
            "-l:libcublas-1a2b3c4d.so.12",
            "-Wl,-rpath,$ORIGIN/../naive.libs",
            "-Wl,--disable-new-dtags",
        ],
    );
    let out = tempfile::tempdir().unwrap();
    let graft_bytes = std::fs::read(&grafted).unwrap();
    let size = graft_bytes.len() as u64;
    let w = wheel(
        out.path(),
        "naive",
        &[],
        &[
            (EXT, std::fs::read(ext).unwrap()),
            ("naive.libs/libcublas-1a2b3c4d.so.12", graft_bytes),
            ("naive.libs/libcudart.so.12", std::fs::read(decoy).unwrap()),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "bloated", "{a:#}");
    let v = a["vendored"].as_array().unwrap();
    assert_eq!(v.len(), 1, "only the real graft, not the decoy: {v:#?}");
    assert_eq!(v[0]["path"], "naive.libs/libcublas-1a2b3c4d.so.12");
    assert_eq!(v[0]["library"]["id"], "cublas");
    assert_eq!(v[0]["bytes"], size);
    let ev = v[0]["evidence"].to_string();
    assert!(
        ev.contains("renamed copy of libcublas.so.12") && ev.contains("cublasCreate_v2"),
        "{ev}"
    );
    assert_eq!(a["breakdown"]["vendored_cuda"], size);
    assert!(a["verdict"]["lines"][0]
        .as_str()
        .unwrap()
        .contains("nvidia-cublas-cu12"));
    // The extension's NEEDED entry is provided inside the wheel, through an RPATH inside it.
    let rp = &a["elf_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == EXT)
        .unwrap()["rpath"][0];
    assert_eq!(rp["location"], "inside");
}

#[test]
fn bundled_driver_is_flagged() {
    let libs = Libs::new();
    let cuda = std::fs::read(libs.path("drv").join("libcuda.so")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "drv",
        &[],
        &[("drv.libs/libcuda-0badf00d.so.1", cuda)],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "bundles-driver");
    assert_eq!(a["vendored"][0]["class"], "driver");
    assert_eq!(r["summary"]["needs_attention"], 1);
}

#[test]
fn user_catalog_declares_a_third_party_wheel_library() {
    let libs = Libs::new();
    let ext = libs.extension(&[("acme", "acme")], Some("$ORIGIN/../libacme/lib64"));
    let out = tempfile::tempdir().unwrap();
    let cat = out.path().join("acme.toml");
    std::fs::write(
        &cat,
        "schema = 1\n[[library]]\nid = \"acme\"\nstem = \"libacme\"\nkind = \"external\"\n[[library.cuda]]\nmajor = 12\nsonames = [\"libacme.so\"]\npolicy = \"none\"\npip = \"libacme-cu12\"\npip_dir = \"libacme/lib64\"\n",
    )
    .unwrap();
    let w = wheel(
        out.path(),
        "usesacme",
        &["libacme-cu12==25.*"],
        &[(EXT, ext)],
    );
    // Without the catalog, libacme.so is just another library.
    let r = inspect_json(&[&w], 0);
    assert!(artifact(&r, ".whl")["cuda_needed"]
        .as_array()
        .unwrap()
        .is_empty());
    let r = inspect_json(&["--catalog", cat.to_str().unwrap(), &w], 0);
    let a = artifact(&r, ".whl");
    let n = needed(a, "libacme.so");
    assert_eq!(n["library"]["pip"], "libacme-cu12");
    assert_eq!(n["rpath_covers"], true);
    assert_eq!(n["declared"], true);
    assert_eq!(a["verdict"]["status"], "ok");
    // A broken catalog file is refused with its path.
    std::fs::write(&cat, "schema = 1\n[[library]]\nid = 3\n").unwrap();
    let o = cudist(&["inspect", "--catalog", cat.to_str().unwrap(), &w]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("acme.toml"), "{}", stderr(&o));
    // The built-in catalog knows RAPIDS' C++ wheels (data/rapids.toml): librmm.so from librmm-cu12,
    // declared, found through the RPATH into librmm/lib64.
    // rapids-logger is one build for every CUDA major (its library needs no CUDA): no major.
    let ext = libs.extension(
        &[("rmm", "rmm"), ("rmm", "rapids_logger")],
        Some("$ORIGIN/../librmm/lib64:$ORIGIN/../rapids_logger/lib64"),
    );
    let w = wheel(
        out.path(),
        "usesrmm",
        &["librmm-cu12==26.*", "rapids-logger"],
        &[(EXT, ext)],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    let n = needed(a, "librmm.so");
    assert_eq!(n["library"]["pip"], "librmm-cu12");
    assert_eq!(
        (n["declared"].as_bool(), n["rpath_covers"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(
        (
            n["library"]["cuda_major"].as_u64(),
            n["library"]["cuda_agnostic"].as_bool()
        ),
        (Some(12), Some(false))
    );
    let l = needed(a, "librapids_logger.so");
    assert_eq!(l["library"]["cuda_agnostic"], true, "{l:#}");
    assert_eq!(a["verdict"]["status"], "ok", "{:#}", a["verdict"]);
    let o = cudist(&["inspect", &w]);
    let text = stdout(&o);
    let row = |so: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{so} ")))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
    };
    assert_eq!(
        (row("librmm.so"), row("librapids_logger.so")),
        (Some("12".into()), Some("any".into())),
        "{text}"
    );
}

#[test]
fn directories_and_wheelhouses() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], Some("$ORIGIN/../nvidia/cublas/lib"));
    let house = tempfile::tempdir().unwrap();
    wheel(
        house.path(),
        "one",
        &["nvidia-cublas-cu12"],
        &[(EXT, ext.clone())],
    );
    wheel(house.path(), "two", &[], &[(EXT, ext.clone())]);
    let r = inspect_json(&[house.path().to_str().unwrap()], 0);
    assert_eq!(r["summary"]["artifacts"], 2);
    assert_eq!(r["summary"]["needs_attention"], 1);
    assert_eq!(
        artifact(&r, "one-1.0-cp311-cp311-linux_x86_64.whl")["verdict"]["status"],
        "ok"
    );
    let o = cudist(&["inspect", house.path().to_str().unwrap()]);
    assert!(
        stdout(&o).contains("Summary: 2 artifact(s)"),
        "{}",
        stdout(&o)
    );

    // An install tree: the same file on disk.
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("pkg")).unwrap();
    std::fs::write(tree.path().join(EXT), &ext).unwrap();
    std::fs::write(tree.path().join("pkg/__init__.py"), "").unwrap();
    let r = inspect_json(&[tree.path().to_str().unwrap()], 0);
    let a = &r["artifacts"][0];
    assert_eq!(a["kind"], "directory");
    assert_eq!(a["elf_files"][0]["path"], EXT);
    assert_eq!(a["elf_files"][0]["rpath"][0]["location"], "cuda-wheel");

    // A single ELF: $ORIGIN expands to its real directory.
    let r = inspect_json(&[tree.path().join(EXT).to_str().unwrap()], 0);
    let rp = &r["artifacts"][0]["elf_files"][0]["rpath"][0];
    let want = tree
        .path()
        .canonicalize()
        .unwrap()
        .join("nvidia/cublas/lib");
    assert_eq!(rp["expanded"].as_str().unwrap(), want.to_str().unwrap());
}

#[test]
fn catalog_command_answers() {
    let o = cudist(&["catalog", "lib", "libcusparse.so.12"]);
    assert_eq!(o.status.code(), Some(0));
    let t = stdout(&o);
    assert!(
        t.contains("nvidia-cusparse-cu12") && t.contains("nvidia/cu13/lib"),
        "{t}"
    );
    let o = cudist(&["catalog", "lib", "libcudart.so.11.0", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["library"]["id"], "cudart");
    let o = cudist(&["catalog", "sm", "--cuda", "13.0", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let sms: Vec<u64> = v["archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sm"].as_u64().unwrap())
        .collect();
    assert!(
        sms.contains(&75) && sms.contains(&90) && !sms.contains(&70) && !sms.contains(&61),
        "{sms:?}"
    );
    // --check: a malformed entry is a usage error naming it; an unbuildable one is a "no".
    let o = cudist(&["catalog", "sm", "--check", "8.6;8.x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("\"8.x\": not a compute capability"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");
    let o = cudist(&["catalog", "sm", "--check", "7.0", "--cuda", "13.0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("CUDA 13.0 cannot target sm_70"),
        "{}",
        stdout(&o)
    );
    let o = cudist(&["catalog", "driver", "12.8"]);
    assert!(
        stdout(&o).contains("570.26") && stdout(&o).contains("525.60.13"),
        "{}",
        stdout(&o)
    );
    // 11.0's own minimum lies below the 11.x compatibility floor: 11.0 builds need only their own.
    let t = stdout(&cudist(&["catalog", "driver", "11.0"]));
    assert!(
        t.contains("driver >= 450.80.02 runs 11.x builds")
            && t.contains("11.0 builds need only their own 450.51.05"),
        "{t}"
    );
    // The requirement repair writes, per SONAME: the releases that ship it.
    let t = stdout(&cudist(&["catalog", "lib", "libnvToolsExt.so.1"]));
    assert!(
        t.contains("REQUIRES (repair)") && t.contains(">=12,<12.9"),
        "{t}"
    );
    let t = stdout(&cudist(&["catalog", "lib", "libnvrtc.so.11.0"]));
    assert!(t.contains("libnvrtc.so.11.0: in no wheel"), "{t}");
    let o = cudist(&["catalog", "lib", "libnotcuda.so.3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not in the catalog"));
    let o = cudist(&["catalog", "lib", "libcuda.so.1"]);
    assert!(stdout(&o).contains("never bundle"), "{}", stdout(&o));
}

/// A plain library linking `libs` (each `(subdir, -l name)`), with the given SONAME.
fn plain_library(libs: &Libs, out: &str, soname: &str, needs: &[(&str, &str)]) -> Vec<u8> {
    let mut args: Vec<String> = vec!["-Wl,--no-as-needed".into()];
    for (sub, l) in needs {
        args.push(format!("-L{}", libs.path(sub).display()));
        args.push(format!("-l{l}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = gcc_shared(
        libs.dir.path(),
        out,
        Some(soname),
        "int f(void) { return 0; }\n",
        &refs,
    );
    std::fs::read(p).unwrap()
}

/// faiss' pattern: the package declares the CUDA wheel and its Python preloads the library at
/// import (names in a JSON file the loader reads), so the extension with no RPATH loads.
#[test]
fn a_library_preloaded_at_import_is_resolved() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cublas")], None);
    let loader = "import ctypes, json\n\ndef _load(target):\n    ctypes.CDLL(target, mode=ctypes.RTLD_GLOBAL)\n\nfor t in json.load(open(\"_preload.json\")):\n    _load(t)\n";
    let json = "[\n  \"libcublas.so.12\"\n]\n";
    let out = tempfile::tempdir().unwrap();
    let members = [
        (EXT, ext),
        (
            "pkg/__init__.py",
            b"from . import loader\nfrom ._ext import *\n".to_vec(),
        ),
        ("pkg/loader.py", loader.as_bytes().to_vec()),
        ("pkg/_preload.json", json.as_bytes().to_vec()),
    ];
    let w = wheel(out.path(), "pre", &["nvidia-cublas-cu12>=12"], &members);
    let a = artifact(&inspect_json(&[&w], 0), ".whl").clone();
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    assert!(
        verdict_lines(&a).contains(&"loads: libcublas.so.12 is preloaded by pkg/loader.py:4 (named at pkg/_preload.json:2) from nvidia-cublas-cu12".to_string()),
        "{:?}",
        verdict_lines(&a)
    );
    assert_eq!(a["preloads"][0]["at_import"], true);
    assert_eq!(
        a["cuda_needed"][0]["preload"]["loaded_at"],
        "pkg/loader.py:4"
    );
    assert_eq!(a["elf_files"][0]["tier"], "import");

    // The same loader in a function nothing calls at import (onnxruntime's preload_dlls()):
    // still unresolved, and the line says what would load it.
    let loader = "import ctypes\n\ndef preload_dlls():\n    ctypes.CDLL(\"libcublas.so.12\")\n";
    let members = [
        (EXT, libs.extension(&[("c12", "cublas")], None)),
        ("pkg/__init__.py", b"from ._ext import *\n".to_vec()),
        ("pkg/loader.py", loader.as_bytes().to_vec()),
    ];
    let w = wheel(out.path(), "later", &["nvidia-cublas-cu12>=12"], &members);
    let a = artifact(&inspect_json(&[&w], 0), ".whl").clone();
    assert_eq!(a["verdict"]["status"], "unresolved");
    assert!(
        verdict_lines(&a)
            .iter()
            .any(|l| l.starts_with("fails at import: needs libcublas.so.12")
                && l.ends_with("(unless preload_dlls() loads it first: pkg/loader.py:4)")),
        "{:?}",
        verdict_lines(&a)
    );
}

/// cuda-cccl's pattern: a module the import does not reach preloads the library in its own code,
/// in a loop over names (`for libname in ("cublas",): load_nvidia_dynamic_lib(libname)`), then
/// imports the extension module that needs it: when that module is imported, the library is
/// loaded first, so nothing fails; the line says so, and the table says which import runs it.
#[test]
fn a_preload_before_the_import_of_the_module_that_needs_it() {
    let libs = Libs::new();
    let bindings = "from cuda.pathfinder import load_nvidia_dynamic_lib\n\nfor libname in (\"cublas\",):\n    load_nvidia_dynamic_lib(libname)\n\nfrom ._ext import *\n";
    let members = [
        (EXT, libs.extension(&[("c12", "cublas")], None)),
        (
            "pkg/__init__.py",
            b"\"\"\"Nothing imported here.\"\"\"\n".to_vec(),
        ),
        ("pkg/_bindings.py", bindings.as_bytes().to_vec()),
    ];
    let out = tempfile::tempdir().unwrap();
    let w = wheel(out.path(), "cccl", &["nvidia-cublas-cu12>=12"], &members);
    let a = artifact(&inspect_json(&[&w], 0), ".whl").clone();
    assert_eq!(a["verdict"]["status"], "ok", "{a:#}");
    assert!(
        verdict_lines(&a).iter().any(|l| l
            == "loads: libcublas.so.12 is loaded by pkg/_bindings.py:4 when import pkg._bindings runs, before pkg/_bindings.py:6 imports the extension module that needs it"),
        "{:?}",
        verdict_lines(&a)
    );
    let o = cudist(&["inspect", &w]);
    assert!(
        stdout(&o).contains("import pkg._bindings"),
        "{}",
        stdout(&o)
    );
    // The import of the extension before the preload: the preload comes too late.
    let late = "from ._ext import *\nfrom cuda.pathfinder import load_nvidia_dynamic_lib\nload_nvidia_dynamic_lib(\"cublas\")\n";
    let members = [
        (EXT, libs.extension(&[("c12", "cublas")], None)),
        ("pkg/__init__.py", b"\n".to_vec()),
        ("pkg/_bindings.py", late.as_bytes().to_vec()),
    ];
    let w = wheel(out.path(), "late", &["nvidia-cublas-cu12>=12"], &members);
    let a = artifact(&inspect_json(&[&w], 0), ".whl").clone();
    assert_eq!(a["verdict"]["status"], "unresolved", "{a:#}");
}

/// onnxruntime's pattern: a provider library no extension module needs fails only when it is
/// loaded; torch-style variants (one per CUDA release) are judged one by one.
#[test]
fn on_demand_and_variant_libraries() {
    let libs = Libs::new();
    let out = tempfile::tempdir().unwrap();
    let members = [
        (EXT, libs.extension(&[], None)),
        (
            "pkg/libprovider_cuda.so",
            plain_library(
                &libs,
                "prov.so",
                "libprovider_cuda.so",
                &[("c12", "cublas")],
            ),
        ),
        (
            "pkg/libx_cuda121.so",
            plain_library(&libs, "x121.so", "libx_cuda121.so", &[("c12", "cudart")]),
        ),
        (
            "pkg/libx_cuda130.so",
            plain_library(&libs, "x130.so", "libx_cuda130.so", &[("c13", "cublas")]),
        ),
    ];
    let w = wheel(out.path(), "tiers", &[], &members);
    let a = artifact(&inspect_json(&[&w], 0), ".whl").clone();
    let tier = |p: &str| {
        a["elf_files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == p)
            .map(|e| e["tier"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(tier(EXT), "import");
    assert_eq!(tier("pkg/libprovider_cuda.so"), "on-demand");
    assert_eq!(tier("pkg/libx_cuda121.so"), "variant");
    assert_eq!(tier("pkg/libx_cuda130.so"), "variant");
    let lines = verdict_lines(&a);
    assert!(
        lines.contains(&"fails when libprovider_cuda.so is loaded: needs libcublas.so.12 but has no RPATH to nvidia/cublas/lib and no dependency on nvidia-cublas-cu12".to_string()),
        "{lines:?}"
    );
    // The variants' needs raise nothing: each is listed with its own release.
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("needs libcudart.so.12 but")),
        "{lines:?}"
    );
    let v: Vec<(String, String)> = a["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["cuda"].as_str().unwrap().into(),
                v["cuda_needed"][0].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        v,
        vec![
            ("12.1".to_string(), "libcudart.so.12".to_string()),
            ("13.0".to_string(), "libcublas.so.13".to_string())
        ]
    );
    // repair requires nothing for the variants, and the provider's cuBLAS as before.
    let o = cudist(&[
        "repair",
        "--dry-run",
        "--json",
        &w,
        "-w",
        out.path().join("o").to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let added = &r["wheels"][0]["requires_added"];
    assert_eq!(added.as_array().unwrap().len(), 1, "{added}");
    assert!(
        added[0].as_str().unwrap().starts_with("nvidia-cublas-cu12"),
        "{added}"
    );
    assert_eq!(r["wheels"][0]["variants"].as_array().unwrap().len(), 2);
}

/// Renamed copies in NEEDED (a repair tool's graft in another wheel: auditwheel's
/// `libcudart-5a077122.so.12.0.107`, or `libnvjpeg.4a0b5c81.so.13`) are the library they copy:
/// CUDA, of that library's major, never "other" (which repair would try to graft), and said as
/// a copy only that exact file satisfies.
#[test]
fn renamed_copies_in_needed_are_the_library_they_copy() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("other.libs");
    fake_lib(
        &libs,
        "libcudart-5a077122.so.12.0.107",
        "libcudart-5a077122.so.12.0.107",
        "cudaMalloc",
    );
    fake_lib(
        &libs,
        "libnvjpeg.4a0b5c81.so.13",
        "libnvjpeg.4a0b5c81.so.13",
        "nvjpegCreateSimple",
    );
    let user = gcc_shared(
        d,
        "libuser.so",
        Some("libuser.so"),
        "int cudaMalloc(void *); int nvjpegCreateSimple(void *);\n\
         int f(void) { return cudaMalloc(0) + nvjpegCreateSimple(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcudart-5a077122.so.12.0.107",
            "-l:libnvjpeg.4a0b5c81.so.13",
        ],
    );
    let wheel = d.join("user-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "user",
        &[],
        &[("user/libuser.so", std::fs::read(&user).unwrap())],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let f = &a["elf_files"][0];
    let needed = f["needed"].as_array().unwrap();
    let cudart = needed
        .iter()
        .find(|n| n["soname"] == "libcudart-5a077122.so.12.0.107")
        .unwrap();
    assert_eq!(cudart["class"], "toolkit", "{cudart:#}");
    assert_eq!(cudart["library"]["id"], "cudart");
    assert_eq!(cudart["library"]["cuda_major"], 12);
    let nvjpeg = needed
        .iter()
        .find(|n| n["soname"] == "libnvjpeg.4a0b5c81.so.13")
        .unwrap();
    assert_eq!(nvjpeg["class"], "toolkit", "{nvjpeg:#}");
    assert_eq!(nvjpeg["library"]["id"], "nvjpeg");
    assert_eq!(f["static_cuda"], serde_json::json!([]));
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with(
            "needs libcudart-5a077122.so.12.0.107, a renamed copy of cudart (libcudart.so.12.0.107) that a repair tool grafted into another wheel"
        )),
        "{lines:#?}"
    );
    // repair neither grafts it nor requires a wheel for it: it stays, and is said.
    let out = d.join("out");
    let o = cudist(&[
        "repair",
        "-w",
        out.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("needs libcudart-5a077122.so.12.0.107: a renamed copy of cudart (a repair tool's graft, carried by another wheel): kept as it is"),
        "{text}"
    );
    assert!(!text.contains("nvidia-cuda-runtime"), "{text}");
}

/// The OpenCL ICD loader's SONAME (`libOpenCL.so.1`) is a cross-vendor interface's, which
/// ocl-icd, Khronos' loader and NVIDIA's copy all carry: a package that vendors one (pyopencl's
/// auditwheel graft of ocl-icd, `libOpenCL-5519dec5.so.1.0.0`) carries no CUDA library, and
/// repair keeps it rather than swap in nvidia-cuda-opencl (which would not find the ICDs the
/// package's own loader is configured for).
#[test]
fn a_vendored_opencl_loader_is_not_cuda() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("libs");
    let copy = "libOpenCL-5519dec5.so.1.0.0";
    fake_lib(&libs, copy, copy, "clGetPlatformIDs");
    let user = user_of_copy(d, &libs, copy, "clGetPlatformIDs", ".libs");
    let wheel = d.join("oclpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "oclpkg",
        &[],
        &[
            ("oclpkg/sub/libuser.so", user),
            (
                "oclpkg/.libs/libOpenCL-5519dec5.so.1.0.0",
                std::fs::read(libs.join(copy)).unwrap(),
            ),
        ],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    assert_eq!(a["vendored"], serde_json::json!([]), "{a:#}");
    let user = a["elf_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "oclpkg/sub/libuser.so")
        .unwrap();
    let needed = &user["needed"][0];
    assert_eq!(needed["soname"], copy);
    assert_ne!(needed["class"], "toolkit", "{needed:#}");
    assert!(needed["library"].is_null(), "{needed:#}");
    assert_eq!(
        verdict_lines(a),
        ["OK: carries no CUDA libraries and needs none"]
    );
    // The same for a file that needs the loader by its own SONAME, from the system.
    let ext = ext_needing(d, "OpenCL", "libOpenCL.so.1", "clGetPlatformIDs");
    let wheel2 = d.join("oclsys-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(&wheel2, "oclsys", &[], &[("oclsys/ext.so", ext)]);
    let v = inspect_json(&[wheel2.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let needed = &a["elf_files"][0]["needed"][0];
    assert_eq!(needed["soname"], "libOpenCL.so.1");
    assert_ne!(needed["class"], "toolkit", "{needed:#}");
    // repair keeps the vendored loader and requires no CUDA wheel.
    let out = d.join("out");
    let o = cudist(&[
        "repair",
        "-w",
        out.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(!text.contains("nvidia-cuda-opencl"), "{text}");
    assert!(!text.contains("removed"), "{text}");
    let repaired = find_wheel(&out, "oclpkg-1.0");
    let f = std::fs::File::open(&repaired).unwrap();
    let mut z = zip::ZipArchive::new(f).unwrap();
    assert!(z
        .by_name("oclpkg/.libs/libOpenCL-5519dec5.so.1.0.0")
        .is_ok());
}

/// A package that picks its module file by machine (PyNvVideoCodec: `…-aarch64-linux-gnu.so`
/// on aarch64, `…-x86_64-linux-gnu.so` else) loads, in an x86_64 wheel, only the x86_64 name.
#[test]
fn a_file_for_another_machine_is_no_load_of_this_one() {
    let libs = Libs::new();
    let ext = libs.extension(&[], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "bymachine",
        &[],
        &[
            (
                "pkg/__init__.py",
                b"import importlib.util, platform, sys\nv = f'{sys.version_info.major}{sys.version_info.minor}'\nif platform.machine() == 'aarch64':\n    names = [f'_impl.cpython-{v}-aarch64-linux-gnu.so']\nelse:\n    names = [f'_impl.cpython-{v}-x86_64-linux-gnu.so']\nspec = importlib.util.spec_from_file_location('_impl', names[0])\n"
                    .to_vec(),
            ),
            (EXT, ext),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let names: Vec<&str> = artifact(&r, ".whl")["preloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["_impl.cpython-*-x86_64-linux-gnu.so"], "{r:#}");
}

/// A CUDA library loaded by its linker name in the package's Python is said: no CUDA wheel
/// installs that name. The verdict stays the files'.
#[test]
fn a_load_by_linker_name_is_said() {
    let libs = Libs::new();
    let ext = libs.extension(&[], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "bylinker",
        &[],
        &[
            (
                "pkg/__init__.py",
                b"import ctypes\ndef _load_cudart():\n    return ctypes.CDLL('libcudart.so')\n"
                    .to_vec(),
            ),
            (EXT, ext),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with(
            "loads libcudart.so by its linker name when _load_cudart() runs (pkg/__init__.py:3): no CUDA wheel installs that name (nvidia-cuda-runtime installs libcudart.so.13)"
        )),
        "{lines:#?}"
    );
    // A fallback the code goes on from, after the SONAME a wheel installs, is not said.
    let ext = libs.extension(&[], None);
    let w = wheel(
        out.path(),
        "fallback",
        &[],
        &[
            (
                "pkg/__init__.py",
                b"import ctypes\ntry:\n    ctypes.CDLL('libcudart.so.13')\nexcept OSError:\n    try:\n        ctypes.CDLL('libcudart.so')\n    except OSError:\n        pass\n"
                    .to_vec(),
            ),
            (EXT, ext),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let lines = verdict_lines(artifact(&r, ".whl"));
    assert!(
        !lines.iter().any(|l| l.contains("by its linker name")),
        "{lines:#?}"
    );
}

/// A CUDA runtime linked into a file (catboost's `_catboost.so`) opens the driver itself on the
/// first CUDA call: inspect says the file uses the driver, though no NEEDED entry names it.
#[test]
fn a_linked_in_runtime_uses_the_driver() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ext = gcc_shared(
        d,
        "_static.so",
        None,
        "int cudaLaunchKernel(void) { return 0; }\nint cudaGetDeviceCount(int *n) { *n = 0; return 0; }\nint cudaMalloc(void **p) { return 2; }\n",
        &[],
    );
    let w = d.join("static-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "static",
        &[],
        &[("static/_static.so", std::fs::read(&ext).unwrap())],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(
        a["elf_files"][0]["static_cuda"][0]["library"], "cudart",
        "{a:#}"
    );
    let driver = &a["driver_needed"][0];
    assert_eq!(driver["soname"], "libcuda.so.1", "{a:#}");
    assert_eq!(driver["needed_by"][0], "static/_static.so", "{driver:#}");
    assert!(
        verdict_lines(a)
            .iter()
            .any(|l| l.starts_with("uses the driver through libcuda.so.1")),
        "{a:#}"
    );
}

/// A graft whose name keeps only the library's stem and its file version (auditwheel's copy of
/// cuFile in legate, `libcufile-1ecaf17d.so.1.15.1`, SONAME rewritten to that name; cuFile's own
/// SONAME is `libcufile.so.0`) is a vendored cuFile, confirmed by its entry points: never
/// "statically linked". repair takes it out and restores the real SONAME.
#[test]
fn a_graft_named_by_its_stem_and_version_is_the_library() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("pkg.libs");
    let name = "libcufile-1ecaf17d.so.1.15.1";
    std::fs::create_dir_all(&libs).unwrap();
    gcc_shared(
        &libs,
        name,
        Some(name),
        "int cuFileDriverOpen(void) { return 0; }\nint cuFileHandleRegister(void) { return 0; }\n",
        &[],
    );
    let user = user_of_copy(d, &libs, name, "cuFileDriverOpen", "pkg.libs");
    let w = d.join("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "pkg",
        &[],
        &[
            ("pkg/libuser.so", user),
            (
                &format!("pkg.libs/{name}"),
                std::fs::read(libs.join(name)).unwrap(),
            ),
        ],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["vendored"][0]["library"]["id"], "cufile", "{a:#}");
    for f in a["elf_files"].as_array().unwrap() {
        assert_eq!(f["static_cuda"], serde_json::json!([]), "{f:#}");
    }
    let rep = repair_json(&w, &d.join("out"));
    let wr = &rep["wheels"][0];
    assert_eq!(wr["removed"][0]["library"], "cufile", "{wr:#}");
    assert_eq!(
        wr["patched"][0]["needed_replaced"][0],
        serde_json::json!([name, "libcufile.so.0"]),
        "{wr:#}"
    );
}

/// An empty search-path entry (a trailing `:`, as mindspore's `libmindspore_ascend.so.2` has) is
/// read by ld.so as the current directory: whoever controls it chooses the library loaded.
/// MISBUILT, named as such.
#[test]
fn an_empty_search_path_entry_is_misbuilt() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let lib = gcc_shared(
        d,
        "libempty.so",
        Some("libempty.so"),
        "int f(void) { return 0; }\n",
        &["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN:"],
    );
    let w = d.join("empty-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "empty",
        &[],
        &[("empty/libempty.so", std::fs::read(&lib).unwrap())],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["verdict"]["status"], "misbuilt", "{a:#}");
    assert!(
        verdict_lines(a).iter().any(|l| l.starts_with(
            "empty/libempty.so has an empty entry in its search path: the loader reads it from the current directory"
        )),
        "{a:#}"
    );
}

/// ld.so searches an object without DT_RUNPATH with the DT_RPATH of the objects that loaded it
/// too (legate: `liblegate.so` needs libnccl.so.2 and has no entry for `nvidia/nccl/lib`; the
/// extension modules that load it do). The need is reached; with DT_RUNPATH in the loader
/// (which is not inherited) it is not.
#[test]
fn a_loaders_rpath_reaches_what_the_loaded_file_needs() {
    for (flag, reached) in [("--disable-new-dtags", true), ("--enable-new-dtags", false)] {
        let work = tempfile::tempdir().unwrap();
        let d = work.path();
        let nccl = d.join("nccl");
        fake_lib(&nccl, "libnccl.so.2", "libnccl.so.2", "ncclGetVersion");
        let core = gcc_shared(
            d,
            "libcore.so",
            Some("libcore.so"),
            "int ncclGetVersion(int *);\nint core(void) { int v; return ncclGetVersion(&v); }\n",
            &[
                "-Wl,--no-as-needed",
                "-Wl,--disable-new-dtags",
                "-Wl,-rpath,$ORIGIN",
                &format!("-L{}", nccl.display()),
                "-l:libnccl.so.2",
            ],
        );
        let ext = gcc_shared(
            d,
            "_ext.so",
            None,
            "int core(void);\nint f(void) { return core(); }\n",
            &[
                "-Wl,--no-as-needed",
                &format!("-Wl,{flag}"),
                "-Wl,-rpath,$ORIGIN/../nvidia/nccl/lib:$ORIGIN",
                &format!("-L{}", d.display()),
                "-lcore",
            ],
        );
        let w = d.join("chainrp-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
        write_wheel(
            &w,
            "chainrp",
            &["nvidia-nccl-cu12"],
            &[
                ("chainrp/_ext.so", std::fs::read(&ext).unwrap()),
                ("chainrp/libcore.so", std::fs::read(&core).unwrap()),
            ],
        );
        let r = inspect_json(&[w.to_str().unwrap()], 0);
        let a = artifact(&r, ".whl");
        let row = needed(a, "libnccl.so.2");
        assert_eq!(row["rpath_covers"], reached, "{flag}: {row:#}");
        // The oracle: glibc's loader, on the same tree installed.
        let site = d.join("site");
        install_files(
            &site,
            &[
                ("chainrp/_ext.so", &ext),
                ("chainrp/libcore.so", &core),
                ("nvidia/nccl/lib/libnccl.so.2", &nccl.join("libnccl.so.2")),
            ],
        );
        let o = ctypes_load(&[&site.join("chainrp/_ext.so")]);
        assert_eq!(o.status.success(), reached, "{flag}: {}", stderr(&o));
    }
}

/// An extension module imported by a name the code builds from a literal start
/// (`importlib.import_module("pkg.pg" + suffix)` in a module the import does not reach, as
/// mooncake picks its `pg_2_12_0` build by torch's version) loads where that import runs: not at
/// import.
#[test]
fn a_module_imported_by_a_built_name_loads_where_that_import_runs() {
    let libs = Libs::new();
    let ext = libs.extension(&[("c12", "cudart")], None);
    let out = tempfile::tempdir().unwrap();
    let w = wheel(
        out.path(),
        "builtname",
        &[],
        &[
            ("pkg/__init__.py", b"x = 1\n".to_vec()),
            (
                "pkg/pg.py",
                b"import importlib, sys\nsuffix = '_%d_%d' % sys.version_info[:2]\nbackend = importlib.import_module('pkg.pg' + suffix)\n"
                    .to_vec(),
            ),
            ("pkg/pg_3_11.cpython-311-x86_64-linux-gnu.so", ext),
        ],
    );
    let r = inspect_json(&[&w], 0);
    let a = artifact(&r, ".whl");
    let f = &a["elf_files"][0];
    assert_eq!(f["tier"], "on-demand", "{f:#}");
    assert!(
        f["tier_reason"]
            .as_str()
            .is_some_and(|r| r.contains("pkg/pg.py:3, a module the import does not reach")),
        "{f:#}"
    );
}

/// A wheel that ships `libucs.so.0.0.0` and declares the link `libucs.so.0` in
/// `.dist-info/symlinks.txt` (wheel-axle's runtime makes it at Python's first start after the
/// install, as holoscan-cu12's UCX copies are found): the link is a file where the loader looks,
/// and a library a carried copy needs loads when that copy does (here at import, through the
/// extension module), not only when the other files that need it load. Checked against glibc's
/// loader on the tree installed with the links made.
#[test]
fn declared_links_are_files_and_carried_copies_load_what_they_need_with_them() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ucs = fake_lib(d, "libucs.so.0.0.0", "libucs.so.0", "ucs_init");
    std::os::unix::fs::symlink("libucs.so.0.0.0", d.join("libucs.so.0")).unwrap();
    let ucp = gcc_shared(
        d,
        "libucp.so.0.0.0",
        Some("libucp.so.0"),
        "int ucs_init(void *);\nint ucp_init(void *p) { return ucs_init(p); }\n",
        &[
            "-Wl,--no-as-needed",
            "-Wl,-rpath,$ORIGIN",
            &format!("-L{}", d.display()),
            "-l:libucs.so.0",
        ],
    );
    std::os::unix::fs::symlink("libucp.so.0.0.0", d.join("libucp.so.0")).unwrap();
    let ext = gcc_shared(
        d,
        "_ext.so",
        None,
        "int ucp_init(void *);\nint f(void) { return ucp_init(0); }\n",
        &[
            "-Wl,--no-as-needed",
            "-Wl,-rpath,$ORIGIN/lib",
            &format!("-L{}", d.display()),
            "-l:libucp.so.0",
        ],
    );
    // A plugin loaded on demand that needs libucs.so.0 too: the only file outside the carried
    // copies that names it.
    let plugin = gcc_shared(
        d,
        "libplugin.so",
        None,
        "int ucs_init(void *);\nint g(void) { return ucs_init(0); }\n",
        &[
            "-Wl,--no-as-needed",
            "-Wl,-rpath,$ORIGIN/..",
            &format!("-L{}", d.display()),
            "-l:libucs.so.0",
        ],
    );
    let links = "axled-1.0.data/purelib/axled/lib/libucs.so.0,libucs.so.0.0.0,0\n\
                 axled-1.0.data/purelib/axled/lib/libucp.so.0,libucp.so.0.0.0,0\n\
                 axled-1.0.data/purelib/axled/lib/data,../data,1\n";
    let members = [
        ("axled/__init__.py", b"from . import _ext\n".to_vec()),
        (
            "axled/_ext.cpython-311-x86_64-linux-gnu.so",
            std::fs::read(&ext).unwrap(),
        ),
        (
            "axled-1.0.data/purelib/axled/lib/libucp.so.0.0.0",
            std::fs::read(&ucp).unwrap(),
        ),
        (
            "axled-1.0.data/purelib/axled/lib/libucs.so.0.0.0",
            std::fs::read(&ucs).unwrap(),
        ),
        (
            "axled-1.0.data/purelib/axled/lib/ucx/libplugin.so",
            std::fs::read(&plugin).unwrap(),
        ),
    ];
    let read = |with_links: bool| -> Value {
        let w = d.join(format!("axled-{with_links}"));
        std::fs::create_dir_all(&w).unwrap();
        let w = w.join("axled-1.0-cp311-cp311-linux_x86_64.whl");
        let mut m = members.to_vec();
        if with_links {
            m.push((
                "axled-1.0.dist-info/symlinks.txt",
                links.as_bytes().to_vec(),
            ));
        }
        write_wheel(&w, "axled", &[], &m);
        let r = inspect_json(&[w.to_str().unwrap()], 0);
        artifact(&r, ".whl").clone()
    };
    let without = read(false);
    let with = read(true);
    // Without the links, no file named libucp.so.0 lies in axled/lib.
    assert_eq!(needed(&without, "libucp.so.0")["rpath_covers"], false);
    assert_eq!(needed(&with, "libucp.so.0")["rpath_covers"], true);
    // libucs.so.0 loads at import through the carried libucp, with or without the links.
    for a in [&without, &with] {
        let row = needed(a, "libucs.so.0");
        assert_eq!(row["tier"], "import", "{row:#}");
        assert_eq!(
            row["needed_by"],
            serde_json::json!(["axled/lib/ucx/libplugin.so"])
        );
    }
    // The oracle: glibc's loader on the installed tree, with the links made and without.
    for (with_links, loads) in [(true, true), (false, false)] {
        let site = d.join(format!("site-{with_links}"));
        std::fs::create_dir_all(site.join("axled/lib")).unwrap();
        std::fs::copy(&ext, site.join("axled/_ext.so")).unwrap();
        std::fs::copy(&ucp, site.join("axled/lib/libucp.so.0.0.0")).unwrap();
        std::fs::copy(&ucs, site.join("axled/lib/libucs.so.0.0.0")).unwrap();
        if with_links {
            for l in ["libucp.so.0", "libucs.so.0"] {
                std::os::unix::fs::symlink(format!("{l}.0.0"), site.join("axled/lib").join(l))
                    .unwrap();
            }
        }
        let o = std::process::Command::new("python3")
            .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])"])
            .arg(site.join("axled/_ext.so"))
            .env_remove("LD_LIBRARY_PATH")
            .env("LD_DEBUG", "libs")
            .output()
            .unwrap();
        assert_eq!(o.status.success(), loads, "{}", stderr(&o));
        if loads {
            assert!(
                stderr(&o).contains("calling init: ") && stderr(&o).contains("libucs.so.0"),
                "{}",
                stderr(&o)
            );
        }
    }
}

/// A wheel tagged for an older glibc than its files need (cupoch 0.2.11.0: `manylinux1`, needs
/// GLIBC_2.29) is misbuilt: pip installs it where it cannot load. The tag it should have is
/// the one auditwheel's policy reading gives, which the platform section shows.
#[test]
fn a_tag_older_than_the_glibc_the_files_need_is_misbuilt() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // posix_spawn_file_actions_addchdir_np appeared in glibc 2.29.
    let ext = gcc_shared(
        d,
        "_ext.so",
        None,
        "#include <spawn.h>\nint f(posix_spawn_file_actions_t *a) { return posix_spawn_file_actions_addchdir_np(a, \"/\"); }\n",
        &[],
    );
    for (tag, misbuilt) in [
        ("manylinux1_x86_64", true),
        ("manylinux_2_31_x86_64", false),
    ] {
        let w = d.join(format!("old-1.0-cp311-cp311-{tag}.whl"));
        write_wheel(
            &w,
            "old",
            &[],
            &[(
                "old/_ext.cpython-311-x86_64-linux-gnu.so",
                std::fs::read(&ext).unwrap(),
            )],
        );
        let o = cudist(&["inspect", "--json", w.to_str().unwrap()]);
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        let a = artifact(&r, ".whl");
        let policy = a["platform"]["policy"].as_str().unwrap().to_string();
        assert!(policy.starts_with("manylinux_2_"), "{a:#}");
        let lines = verdict_lines(a);
        let said = lines.iter().any(|l| {
            l.contains(&format!("is tagged {tag}"))
                && l.contains("GLIBC_2.29")
                && l.contains("cannot load")
        });
        assert_eq!(said, misbuilt, "{tag}: {lines:#?}");
        if misbuilt {
            assert_eq!(a["verdict"]["status"], "misbuilt", "{a:#}");
        }
    }
}

/// A file that dlopens the driver by its linker name (drjit's `dlopen("libcuda.so")`) uses the
/// driver: said, with the name it asks for, which only the driver's development link provides.
/// glibc's loader agrees: with only `libcuda.so.1` on the search path, the dlopen fails.
#[test]
fn a_dlopen_of_the_drivers_linker_name_uses_the_driver() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ext = gcc_shared(
        d,
        "_drv.so",
        None,
        "#include <dlfcn.h>\nint has_cuda(void) { return dlopen(\"libcuda.so\", RTLD_NOW) != 0; }\n",
        &["-ldl"],
    );
    let w = d.join("drv-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "drv",
        &[],
        &[("drv/_drv.so", std::fs::read(&ext).unwrap())],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    let driver = &a["driver_needed"][0];
    assert_eq!(driver["soname"], "libcuda.so", "{a:#}");
    assert!(
        driver["lazy"]
            .as_str()
            .is_some_and(|l| l.contains("development link")),
        "{driver:#}"
    );
    // Opened on the first call, not by loading the file (docs/json-schema.md: `lazy` set,
    // `tier` is "on-demand").
    assert_eq!(driver["tier"], "on-demand", "{driver:#}");
    assert!(
        verdict_lines(a)
            .iter()
            .any(|l| l.starts_with("uses the driver through libcuda.so")),
        "{a:#}"
    );
    // The oracle: a stand-in driver named only libcuda.so.1 is not what dlopen("libcuda.so")
    // finds; with the development link beside it, it is.
    let drv = d.join("driver");
    fake_lib(&drv, "libcuda.so.1", "libcuda.so.1", "cuInit");
    let probe = |dir: &Path| {
        let o = std::process::Command::new("python3")
            .args([
                "-c",
                "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).has_cuda())",
            ])
            .arg(&ext)
            .env("LD_LIBRARY_PATH", dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(probe(&drv), "0");
    std::os::unix::fs::symlink("libcuda.so.1", drv.join("libcuda.so")).unwrap();
    assert_eq!(probe(&drv), "1");
}

/// A library that needs another of the package's libraries its own search path cannot reach
/// loads only after something has loaded that one by path (OpenMM's plugin loader loads
/// `libOpenMMCUDA.so` first; the other CUDA plugins need it and have no RUNPATH), and by then
/// what that one needs is loaded too: a need it shares with it is met. Checked against glibc's
/// loader: the plugin alone fails, after the core it loads.
#[test]
fn a_need_met_by_a_library_loaded_first_by_path_is_reached() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let cufft = d.join("cufft");
    fake_lib(&cufft, "libcufft.so.11", "libcufft.so.11", "cufftPlanMany");
    let core = gcc_shared(
        d,
        "libcore.so",
        Some("libcore.so"),
        "int cufftPlanMany(void *);\nint core(void) { return cufftPlanMany(0); }\n",
        &[
            "-Wl,--no-as-needed",
            "-Wl,--enable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../../../nvidia/cufft/lib",
            &format!("-L{}", cufft.display()),
            "-l:libcufft.so.11",
        ],
    );
    let plugin = gcc_shared(
        d,
        "libplugin.so",
        None,
        "int core(void); int cufftPlanMany(void *);\nint plug(void) { return core() + cufftPlanMany(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", d.display()),
            &format!("-L{}", cufft.display()),
            "-lcore",
            "-l:libcufft.so.11",
        ],
    );
    let w = d.join("plugged-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &w,
        "plugged",
        &["nvidia-cufft-cu12"],
        &[
            ("plugged/__init__.py", b"".to_vec()),
            (
                "plugged/lib/plugins/libcore.so",
                std::fs::read(&core).unwrap(),
            ),
            (
                "plugged/lib/plugins/libplugin.so",
                std::fs::read(&plugin).unwrap(),
            ),
        ],
    );
    let r = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    let row = needed(a, "libcufft.so.11");
    assert_eq!(row["rpath_covers"], true, "{row:#}");
    assert!(
        !verdict_lines(a)
            .iter()
            .any(|l| l.contains("fails") && l.contains("libcufft.so.11")),
        "{:#?}",
        verdict_lines(a)
    );
    // The oracle: the plugin alone cannot load; after its core, loaded by path, it does.
    let site = d.join("site");
    install_files(
        &site,
        &[
            ("plugged/lib/plugins/libcore.so", &core),
            ("plugged/lib/plugins/libplugin.so", &plugin),
            (
                "nvidia/cufft/lib/libcufft.so.11",
                &cufft.join("libcufft.so.11"),
            ),
        ],
    );
    let plugins = site.join("plugged/lib/plugins");
    let (core_at, plugin_at) = (plugins.join("libcore.so"), plugins.join("libplugin.so"));
    assert!(!ctypes_load(&[&plugin_at]).status.success());
    let o = ctypes_load(&[&core_at, &plugin_at]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A library not declared directly, where the wheel requires packages built for CUDA whose own
/// requirements cudist's snapshot does not record (raft-dask-cu12 gets libucx-cu12 through
/// distributed-ucxx-cu12 → ucxx-cu12 → libucxx-cu12), and a wheel's loader the catalog does not
/// describe, run at import (rapidsmpf's `librapidsmpf.load_library()`): what happens depends on
/// what cudist cannot read, so it is said, not failed. Without such a requirement the same wheel
/// is unresolved.
#[test]
fn what_may_come_through_unrecorded_requirements_is_said_not_failed() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // Never an NVIDIA wheel: a package built for CUDA declares those itself (cucim-cu12 requires
    // cupy-cuda12x, which brings no cuFile), so a gap in the snapshot excuses no missing one.
    let cublas = ext_needing(d, "cublas", "libcublas.so.12", "cublasCreate_v2");
    let w = d.join("nv-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "nv",
        &["cupy-cuda12x>=13"],
        &[
            ("nv/__init__.py", b"from nv import _ext\n".to_vec()),
            ("nv/_ext.cpython-311-x86_64-linux-gnu.so", cublas),
        ],
    );
    let report = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&report, "linux_x86_64.whl");
    assert_eq!(a["verdict"]["status"], "unresolved", "{:#}", a["verdict"]);
    assert!(needed(a, "libcublas.so.12")
        .get("may_come_through")
        .is_none());
    let ext = ext_needing(d, "rmm", "librmm.so", "rmm_alloc");
    let init = b"try:\n    import libwidget\nexcept ModuleNotFoundError:\n    pass\nelse:\n    libwidget.load_library()\n    del libwidget\nfrom pkg import _ext\n";
    for (requires, status) in [
        (vec!["widget-cu12==1.*", "numpy"], "ok"),
        (vec!["numpy"], "unresolved"),
    ] {
        let w = d.join("pkg-1.0-cp311-cp311-linux_x86_64.whl");
        write_wheel(
            &w,
            "pkg",
            &requires,
            &[
                ("pkg/__init__.py", init.to_vec()),
                ("pkg/_ext.cpython-311-x86_64-linux-gnu.so", ext.clone()),
            ],
        );
        let report = inspect_json(&[w.to_str().unwrap()], 0);
        let a = artifact(&report, "linux_x86_64.whl");
        assert_eq!(
            a["verdict"]["status"], status,
            "{requires:?}: {:#}",
            a["verdict"]
        );
        let lines = verdict_lines(a);
        let preload = a["preloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "libwidget.load_library()")
            .unwrap_or_else(|| panic!("{:#}", a["preloads"]));
        assert_eq!(
            (
                &preload["mechanism"],
                &preload["at_import"],
                &preload["optional"]
            ),
            (&"package-loader".into(), &true.into(), &false.into())
        );
        let n = needed(a, "librmm.so");
        // The table's DECLARED column says the same.
        let human = stdout(&cudist(&["inspect", w.to_str().unwrap()]));
        let row = human
            .lines()
            .find(|l| l.trim_start().starts_with("librmm.so "))
            .unwrap_or_else(|| panic!("{human}"));
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words[8],
            if status == "ok" { "maybe" } else { "no" },
            "{row}"
        );
        if status == "ok" {
            assert_eq!(n["may_come_through"], serde_json::json!(["widget-cu12"]));
            assert!(
                lines.contains(&"may load: librmm.so has no RPATH to its wheel's directory: it would load where libwidget.load_library() at pkg/__init__.py:6 (a loader cudist's catalog does not describe) loads it first; not declared directly, but may come through widget-cu12, built for CUDA, whose requirements cudist's snapshot of PyPI does not record".to_string()),
                "{lines:?}"
            );
        } else {
            assert!(n.get("may_come_through").is_none(), "{n:#}");
            assert!(
                lines.iter().any(|l| l.starts_with("fails at import: needs librmm.so but has no RPATH to librmm/lib64 and no dependency on librmm-cu1")),
                "{lines:?}"
            );
        }
    }
}

/// A wheel that is a library's own distribution provides it by being installed: libucx-cu12's
/// files need libucs.so.0, which it installs; no requirement on itself is missing.
#[test]
fn a_wheel_declares_its_own_libraries_by_being_them() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ext = ext_needing(d, "rmm", "librmm.so", "rmm_alloc");
    let w = d.join("librmm_cu12-1.0-py3-none-linux_x86_64.whl");
    write_wheel(&w, "librmm-cu12", &[], &[("librmm/lib64/libuser.so", ext)]);
    let report = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&report, "linux_x86_64.whl");
    let n = needed(a, "librmm.so");
    assert_eq!(n["declared"], true, "{n:#}");
    assert_eq!(n["declared_by"], "librmm-cu12 (this wheel)", "{n:#}");
}

/// What a wheel's loader loads at import brings what that wheel requires: cuvs' modules need
/// libcublas.so.12 with no RPATH to it, and `libcuvs.load_library()` at import loads libcuvs.so,
/// whose wheel requires cuBLAS and whose own search path finds it first. Without that loader the
/// same wheel is unresolved.
#[test]
fn what_a_loaded_wheel_requires_is_loaded_first() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ext = ext_needing(d, "cublas", "libcublas.so.12", "cublasCreate_v2");
    for (init, status) in [
        (
            "import libcuvs\nlibcuvs.load_library()\nfrom pkg import _ext\n",
            "ok",
        ),
        ("from pkg import _ext\n", "unresolved"),
    ] {
        let w = d.join("pkg-1.0-cp311-cp311-linux_x86_64.whl");
        write_wheel(
            &w,
            "pkg",
            &["libcuvs-cu12==26.10.*"],
            &[
                ("pkg/__init__.py", init.as_bytes().to_vec()),
                ("pkg/_ext.cpython-311-x86_64-linux-gnu.so", ext.clone()),
            ],
        );
        let report = inspect_json(&[w.to_str().unwrap()], 0);
        let a = artifact(&report, "linux_x86_64.whl");
        assert_eq!(a["verdict"]["status"], status, "{init}: {:#}", a["verdict"]);
        let n = needed(a, "libcublas.so.12");
        let lines = verdict_lines(a);
        if status == "ok" {
            assert_eq!(
                n["loaded_first_by"], "libcuvs-cu12 (libcuvs.load_library() at pkg/__init__.py:2)",
                "{n:#}"
            );
            assert!(
                lines.contains(&"loads: libcublas.so.12 is loaded first by the libraries libcuvs.load_library() at pkg/__init__.py:2 loads: their wheels require it (libcuvs-cu12 → cuda-toolkit[cublas]), though no RPATH of this wheel's files points at its wheel's directory".to_string()),
                "{lines:?}"
            );
        } else {
            assert!(n.get("loaded_first_by").is_none(), "{n:#}");
            assert!(
                lines.iter().any(|l| l.starts_with(
                    "fails at import: needs libcublas.so.12 and declares libcuvs-cu12 → cuda-toolkit[cublas]"
                )),
                "{lines:?}"
            );
        }
    }
}

/// What auditwheel counts against the policy that cudist counts as provided elsewhere: a CUDA
/// library from NVIDIA's wheels is no system library a policy lists, so auditwheel says
/// `linux_<arch>` unless told `--exclude` (checked against `auditwheel show` on 41 real wheels,
/// docs/real-packages.md). A wheel needing only system libraries has none.
#[test]
fn what_auditwheel_needs_excluded_is_said() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let ext = ext_needing(d, "cublas", "libcublas.so.12", "cublasCreate_v2");
    let w = d.join("pkg-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "pkg",
        &["nvidia-cublas-cu12"],
        &[("pkg/_ext.cpython-311-x86_64-linux-gnu.so", ext)],
    );
    let report = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&report, "linux_x86_64.whl");
    assert_ne!(a["platform"]["policy"], "linux", "{:#}", a["platform"]);
    assert_eq!(
        a["platform"]["auditwheel_excludes"],
        serde_json::json!(["libcublas.so.12"]),
        "{:#}",
        a["platform"]
    );
    let human = stdout(&cudist(&["inspect", w.to_str().unwrap()]));
    assert!(
        human.contains("auditwheel says linux_x86_64 unless each is given to --exclude: libcublas.so.12 (not on "),
        "{human}"
    );
    let plain = gcc_shared(d, "plain.so", None, "int f(void) { return 1; }\n", &[]);
    let w = d.join("plain-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "plain",
        &[],
        &[(
            "plain/_p.cpython-311-x86_64-linux-gnu.so",
            std::fs::read(plain).unwrap(),
        )],
    );
    let report = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&report, "linux_x86_64.whl");
    assert!(
        a["platform"].get("auditwheel_excludes").is_none(),
        "{:#}",
        a["platform"]
    );
}

/// A carried CUDA library opens what it opens itself by name (NVRTC its builtins,
/// `libnvrtc-builtins.so.12.6`, through the search path it was found by): a carried copy of
/// that is loaded by name, not "opened by path or unused" (pyclesperanto-cuda's
/// `pyclesperanto_cuda.libs`). And the builtins' own SONAME of a release the catalog does not
/// list is that release, not a renamed copy of one it lists.
#[test]
fn what_a_carried_cuda_library_opens_itself_is_loaded_by_name() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("libs");
    let copy = "libnvrtc-e0967580.so.12.6.20";
    fake_lib(&libs, copy, copy, "nvrtcCreateProgram");
    let builtins = "libnvrtc-builtins.so.12.6";
    fake_lib(
        &libs,
        builtins,
        builtins,
        "__nvrtc_builtins__12_6_getArchBuiltins",
    );
    let user = user_of_copy(d, &libs, copy, "nvrtcCreateProgram", "rtcpkg.libs");
    let wheel = d.join("rtcpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "rtcpkg",
        &[],
        &[
            ("rtcpkg/libuser.so", user),
            (
                &format!("rtcpkg.libs/{copy}"),
                std::fs::read(libs.join(copy)).unwrap(),
            ),
            (
                &format!("rtcpkg.libs/{builtins}"),
                std::fs::read(libs.join(builtins)).unwrap(),
            ),
        ],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let vendored = a["vendored"].as_array().unwrap();
    let of = |name: &str| {
        vendored
            .iter()
            .find(|x| x["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .unwrap_or_else(|| panic!("{a:#}"))
    };
    assert_eq!(of(copy)["opened_by"], "loader", "{a:#}");
    assert_eq!(of(builtins)["opened_by"], "loader", "{a:#}");
    let evidence = of(builtins)["evidence"].to_string();
    assert!(
        evidence.contains("SONAME libnvrtc-builtins.so.12.6 (a release the catalog does not list)")
            && !evidence.contains("renamed copy"),
        "{evidence}"
    );
}

/// A library packed with UPX (polars-fastembed-cuda 0.1.17 packs its ONNX Runtime libraries):
/// its section headers are gone and UPX's pack header (`UPX!`) ends the file; its symbols and
/// symbol versions are inside the compressed image, so what is read is the stub's. inspect says
/// so (unresolved, not a tag or needs taken from the stub), and repair refuses to patch it,
/// naming the packer, with nothing written. The fixture carries UPX's marks on a gcc-built
/// library (no `upx` here to pack one; the real packed libraries were checked by hand).
#[test]
fn a_library_packed_with_upx_is_said_and_never_patched() {
    let d = tempfile::tempdir().unwrap();
    let libs = d.path().join("libs");
    fake_lib(
        &libs,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let lib = gcc_shared(
        d.path(),
        "libpacked.so",
        Some("libpacked.so"),
        "int cublasCreate_v2(void *);\nint f(void) { return cublasCreate_v2(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcublas.so.12",
        ],
    );
    let plain = std::fs::read(&lib).unwrap();
    // UPX's marks: no section headers (e_shoff, e_shnum, e_shstrndx zero), its pack header last.
    let mut packed = plain.clone();
    packed[0x28..0x30].fill(0);
    packed[0x3c..0x40].fill(0);
    packed.extend_from_slice(b"UPX!");
    packed.extend_from_slice(&[0u8; 32]);
    let wheel = |name: &str, data: &[u8]| {
        let w = d
            .path()
            .join(format!("{name}-1.0-py3-none-manylinux_2_17_x86_64.whl"));
        write_wheel(
            &w,
            name,
            &[],
            &[(&format!("{name}/libpacked.so"), data.to_vec())],
        );
        w
    };
    let packed_wheel = wheel("upxed", &packed);
    let plain_wheel = wheel("plain", &plain);
    let r = inspect_json(&[packed_wheel.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["elf_files"][0]["packed"], "UPX", "{a:#}");
    assert_eq!(a["verdict"]["status"], "unresolved", "{:#}", a["verdict"]);
    assert!(
        verdict_lines(a)
            .iter()
            .any(|l| l.starts_with("packed with UPX: upxed/libpacked.so: ")),
        "{:#?}",
        verdict_lines(a)
    );
    let r = inspect_json(&[plain_wheel.to_str().unwrap()], 0);
    let a = artifact(&r, ".whl");
    assert_eq!(a["elf_files"][0]["packed"], Value::Null, "{a:#}");
    // repair would add an RPATH to it: refused, naming the packer, nothing written (exit 3).
    let out = d.path().join("out");
    let o = cudist(&[
        "repair",
        packed_wheel.to_str().unwrap(),
        "-w",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("upxed/libpacked.so: it is packed with UPX"),
        "{}",
        stderr(&o)
    );
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "nothing written"
    );
}
