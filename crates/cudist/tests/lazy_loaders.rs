//! Lazy loaders are loaders: a file that defines a CUDA library's entry points as stubs that
//! dlopen the library on the first call (hand-written dlsym stubs naming its SONAME, as
//! ctranslate2 does; a generated trampoline table, as JAX's plugins have) loads that library, and
//! does not link it statically. Checked against a real first call through such a stub, and
//! doctor's answer for it.

mod common;
use common::*;

use serde_json::Value;

/// dlsym stubs: `cublasCreate_v2` opens libcublas.so.12 on the first call and forwards to it;
/// -1 when the library cannot be opened.
const STUB: &str = "#include <dlfcn.h>\n\
static void *h;\n\
int cublasCreate_v2(void *p) {\n\
  if (!h) h = dlopen(\"libcublas.so.12\", RTLD_NOW | RTLD_LOCAL);\n\
  if (!h) return -1;\n\
  int (*f)(void *) = (int (*)(void *))dlsym(h, \"cublasCreate_v2\");\n\
  return f ? 100 + f(p) : -2;\n\
}\n";

/// A trampoline table as Implib.so generates it (TSL/XLA name theirs `_X_tramp_table`), beside a
/// cuSPARSE entry point that jumps through it: `dir/libtramp.so`. A second table is named for
/// the library, not its file (XLA's `_nvshmem_tramp_table` for `libnvshmem_host.so.3`).
fn tramp_lib(dir: &std::path::Path) -> std::path::PathBuf {
    gcc_shared(
        dir,
        "libtramp.so",
        Some("libtramp.so"),
        "void *_cusparse_tramp_table[2];\n\
         void *_nvshmem_tramp_table[2];\n\
         int cusparseCreate(void *p) { return ((int (*)(void *))_cusparse_tramp_table[0])(p); }\n\
         int nvshmem_init(void) { return ((int (*)(void))_nvshmem_tramp_table[0])(); }\n",
        &[],
    )
}

fn reasons(v: &Value) -> Vec<String> {
    v["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn stubs_and_trampolines_are_lazy_loads_not_static_linking() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let stub = gcc_shared(d, "libstub.so", Some("libstub.so"), STUB, &["-ldl"]);
    let tramp = tramp_lib(d);
    // cuFFT's entry point with no loader in sight: linked in, as before.
    let linked = gcc_shared(
        d,
        "liblinked.so",
        Some("liblinked.so"),
        "int cufftCreate(void *p) { return p == 0; }\nint cufftPlanMany(void) { return 0; }\n",
        &[],
    );
    let wheel = d.join("lazy-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "lazy",
        &[],
        &[
            ("lazy/libstub.so", std::fs::read(&stub).unwrap()),
            ("lazy/libtramp.so", std::fs::read(&tramp).unwrap()),
            ("lazy/liblinked.so", std::fs::read(&linked).unwrap()),
        ],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let file = |name: &str| {
        a["elf_files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(name))
            .unwrap()
            .clone()
    };
    let stub_f = file("libstub.so");
    assert_eq!(stub_f["static_cuda"], serde_json::json!([]), "{stub_f:#}");
    assert_eq!(stub_f["lazy_loads"][0]["library"], "cublas");
    assert_eq!(stub_f["lazy_loads"][0]["soname"], "libcublas.so.12");
    let tramp_f = file("libtramp.so");
    assert_eq!(tramp_f["static_cuda"], serde_json::json!([]), "{tramp_f:#}");
    let lazy: Vec<&str> = tramp_f["lazy_loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["library"].as_str().unwrap())
        .collect();
    assert_eq!(lazy, ["cusparse", "nvshmem"], "{tramp_f:#}");
    assert!(tramp_f["lazy_loads"][0]["evidence"]
        .as_str()
        .unwrap()
        .contains("_cusparse_tramp_table"));
    let linked_f = file("liblinked.so");
    assert_eq!(
        linked_f["static_cuda"][0]["library"], "cufft",
        "{linked_f:#}"
    );
    assert_eq!(linked_f["lazy_loads"], serde_json::json!([]));
    // The package needs cuBLAS, on the first call: a row of its needs, marked as such.
    let row = needed(a, "libcublas.so.12");
    assert!(row["lazy"].as_str().unwrap().contains("dlopen"), "{row:#}");
    assert_eq!(row["tier"], "on-demand");
    assert_eq!(row["declared"], false);
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with("the first call into cublas fails (lazy/libstub.so loads it itself on the first call")
            && l.ends_with("needs libcublas.so.12 but has no RPATH to nvidia/cublas/lib and no dependency on nvidia-cublas-cu12")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "links CUDA statically: cufft in 1 file(s)"),
        "{lines:#?}"
    );
    // repair treats the lazy load as a need: the stub's dlopen searches the stub's RPATH, so the
    // wheel's directory goes there, and the wheel is offered under an extra (no import waits
    // for it; the original never required it).
    let r = repair_json(&wheel, &d.join("out"));
    let wr = &r["wheels"][0];
    assert_eq!(
        wr["requires_added"],
        serde_json::json!(["nvidia-cublas-cu12>=12,<13; extra == \"cublas\""]),
        "{wr:#}"
    );
    let patched = wr["patched"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "lazy/libstub.so")
        .expect("the stub patched");
    assert_eq!(
        patched["rpath_added"],
        serde_json::json!(["$ORIGIN/../nvidia/cublas/lib"])
    );
    let after = inspect_json(&[wr["output"].as_str().unwrap()], 0);
    let row = needed(artifact(&after, ".whl"), "libcublas.so.12");
    assert_eq!(row["rpath_covers"], true, "{row:#}");
    assert_eq!(row["declared"], true, "{row:#}");
}

/// doctor checks the library a stub opens as a load on first use, with the stub's search path,
/// and agrees with a real first call: found → the call reaches the library; not found → the call
/// fails, the program still loads (exit 0, `will-fail-when-loaded`).
#[test]
fn doctor_judges_a_lazy_load_as_the_first_call_does() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let lib = d.join("lib");
    let cublas = d.join("cublas");
    gcc_shared(&lib, "libstub.so", Some("libstub.so"), STUB, &["-ldl"]);
    fake_lib(
        &cublas,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    let exe = gcc(
        d,
        "caller",
        "int cublasCreate_v2(void *);\nint main(void) { return cublasCreate_v2(0) == 101 ? 0 : 7; }\n",
        &[
            &format!("-L{}", lib.display()),
            "-l:libstub.so",
            &format!("-Wl,-rpath,{}", lib.display()),
        ],
    );
    for (ld_path, works) in [("", false), (cublas.to_str().unwrap(), true)] {
        let real = std::process::Command::new(&exe)
            .env("LD_LIBRARY_PATH", ld_path)
            .status()
            .unwrap();
        // The program loads either way; only the first call tells.
        assert_eq!(real.code(), Some(if works { 0 } else { 7 }));
        // The program loads either way: exit 0.
        let v = doctor_json(&["--ld-library-path", ld_path, exe.to_str().unwrap()], 0);
        let dl = v["files"][0]["dlopen"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "libcublas.so.12")
            .unwrap_or_else(|| panic!("{v:#}"))
            .clone();
        if works {
            assert_eq!(
                std::fs::canonicalize(dl["path"].as_str().unwrap()).unwrap(),
                std::fs::canonicalize(cublas.join("libcublas.so.12")).unwrap()
            );
            assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
        } else {
            assert!(dl["path"].is_null(), "{dl:#}");
            assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
            assert!(
                reasons(&v)
                    .iter()
                    .any(|r| r.contains("dlopen(libcublas.so.12) from")
                        && r.contains("will fail on first use")),
                "{v:#}"
            );
        }
    }
}

/// A package whose files load every CUDA library lazily (trampoline tables, no CUDA NEEDED: the
/// shape of tensorflow 2.21's `libtensorflow_framework.so.2`) takes the CUDA major of the CUDA
/// wheels it declares, in any extra: the library is `libcusparse.so.12` of
/// `nvidia-cusparse-cu12`, declared, not an unversioned name with no wheel.
#[test]
fn lazily_loaded_libraries_take_the_major_the_package_declares() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let tramp = tramp_lib(d);
    let wheel = d.join("lazyonly-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "lazyonly",
        &["nvidia-cusparse-cu12>=12.1; extra == \"and-cuda\""],
        &[("lazyonly/libtramp.so", std::fs::read(&tramp).unwrap())],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let row = needed(a, "libcusparse.so.12");
    assert_eq!(row["library"]["pip"], "nvidia-cusparse-cu12", "{row:#}");
    assert_eq!(row["declared"], true, "{row:#}");
    assert_eq!(row["declared_extra"], "and-cuda", "{row:#}");
}

/// A fallback chain (cudnn-frontend in transformer-engine tries `libnvrtc.so.13`, then
/// `libnvrtc.so.12`): the file loads the one of its own CUDA major, which its NEEDED entries
/// say (here CUDA 12's cuBLAS), and the package needs that one, from that major's wheel.
#[test]
fn a_fallback_chain_loads_the_soname_of_the_files_major() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    fake_lib(d, "libcublas.so", "libcublas.so.12", "cublasCreate_v2");
    let chain = gcc_shared(
        d,
        "libchain.so",
        Some("libchain.so"),
        "#include <dlfcn.h>\n\
         int cublasCreate_v2(void *);\n\
         static const char *names[] = {\"libnvrtc.so\", \"libnvrtc.so.13\", \"libnvrtc.so.12\"};\n\
         void *open_nvrtc(void) {\n\
           for (int i = 0; i < 3; i++) { void *h = dlopen(names[i], RTLD_NOW); if (h) return h; }\n\
           return (void *)(long)cublasCreate_v2(0);\n\
         }\n",
        &[
            "-ldl",
            "-Wl,--no-as-needed",
            &format!("-L{}", d.display()),
            "-lcublas",
        ],
    );
    let wheel = d.join("chain-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "chain",
        &[],
        &[("chain/libchain.so", std::fs::read(&chain).unwrap())],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let f = &a["elf_files"][0];
    let lazy = &f["lazy_loads"][0];
    assert_eq!(lazy["soname"], "libnvrtc.so.12", "{f:#}");
    assert_eq!(
        lazy["alternatives"],
        serde_json::json!(["libnvrtc.so.13", "libnvrtc.so.12"]),
        "{f:#}"
    );
    let row = needed(a, "libnvrtc.so.12");
    assert_eq!(row["library"]["pip"], "nvidia-cuda-nvrtc-cu12", "{row:#}");
    assert!(
        !a["cuda_needed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["soname"] == "libnvrtc.so.13"),
        "{a:#}"
    );
}

/// A file that names both majors of a library (cudnn-frontend's module tries `libcudart.so.12`
/// and `libcudart.so.13`) and links no CUDA library that would say its major: the distribution's
/// hard requirements say it (a `[cu13]` extra of a dependency), and the evidence names the chain.
#[test]
fn a_chain_of_both_majors_loads_the_one_the_distribution_asks_for() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let chain = gcc_shared(
        d,
        "libchain.so",
        Some("libchain.so"),
        "#include <dlfcn.h>\n\
         static const char *names[] = {\"libcudart.so.12\", \"libcudart.so.13\"};\n\
         void *open_cudart(void) {\n\
           for (int i = 0; i < 2; i++) { void *h = dlopen(names[i], RTLD_NOW); if (h) return h; }\n\
           return 0;\n\
         }\n",
        &["-ldl"],
    );
    let wheel = d.join("chain-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    for (requires, soname, pip) in [
        (
            "some-kernels[cu13]>=1",
            "libcudart.so.13",
            "nvidia-cuda-runtime",
        ),
        (
            "some-kernels-cu12>=1",
            "libcudart.so.12",
            "nvidia-cuda-runtime-cu12",
        ),
    ] {
        write_wheel(
            &wheel,
            "chain",
            &[requires, "other-cu13; extra == \"cu13\""],
            &[("chain/libchain.so", std::fs::read(&chain).unwrap())],
        );
        // Unresolved, which inspect's exit code does not fail on (no `--strict`).
        let v = inspect_json(&[wheel.to_str().unwrap()], 0);
        let a = artifact(&v, ".whl");
        let lazy = &a["elf_files"][0]["lazy_loads"][0];
        assert_eq!(lazy["soname"], soname, "{requires}: {lazy:#}");
        assert_eq!(
            lazy["evidence"],
            "imports dlopen and names \"libcudart.so.12\", \"libcudart.so.13\" to open, whichever it finds",
            "{lazy:#}"
        );
        assert_eq!(needed(a, soname)["library"]["pip"], pip, "{a:#}");
    }
}

/// doctor follows a fallback chain as the file's own loop does: with only `libnvrtc.so.12` to be
/// found, the chain loads it (a real call of the loop opens it), and doctor says OK rather than
/// that `libnvrtc.so.13` will fail; with none of the chain found, the lead (the file's major)
/// will fail on first use, as the real call does.
#[test]
fn doctor_follows_a_fallback_chain_as_the_file_does() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let libs = d.join("libs");
    let nvrtc = d.join("nvrtc");
    fake_lib(
        &libs,
        "libcublas.so.12",
        "libcublas.so.12",
        "cublasCreate_v2",
    );
    fake_lib(&nvrtc, "libnvrtc.so.12", "libnvrtc.so.12", "nvrtcVersion");
    gcc_shared(
        &libs,
        "libchain.so",
        Some("libchain.so"),
        "#include <dlfcn.h>\n\
         static const char *names[] = {\"libnvrtc.so.13\", \"libnvrtc.so.12\"};\n\
         void *open_nvrtc(void) {\n\
           for (int i = 0; i < 2; i++) { void *h = dlopen(names[i], RTLD_NOW); if (h) return h; }\n\
           return 0;\n\
         }\n",
        &[
            "-ldl",
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libcublas.so.12",
            &format!("-Wl,-rpath,{}", libs.display()),
        ],
    );
    let exe = gcc(
        d,
        "caller",
        "#include <dlfcn.h>\nvoid *open_nvrtc(void);\nint main(void) { void *h = open_nvrtc(); return h && dlsym(h, \"nvrtcVersion\") ? 0 : 7; }\n",
        &[
            &format!("-L{}", libs.display()),
            "-l:libchain.so",
            &format!("-Wl,-rpath,{}", libs.display()),
            "-ldl",
        ],
    );
    for (ld_path, works) in [("", false), (nvrtc.to_str().unwrap(), true)] {
        let real = std::process::Command::new(&exe)
            .env("LD_LIBRARY_PATH", ld_path)
            .status()
            .unwrap();
        assert_eq!(real.code(), Some(if works { 0 } else { 7 }), "{ld_path}");
        // The program loads either way: exit 0.
        let v = doctor_json(&["--ld-library-path", ld_path, exe.to_str().unwrap()], 0);
        let all = v.to_string();
        if works {
            assert_eq!(v["verdict"]["status"], "ok", "{v:#}");
            assert!(!all.contains("libnvrtc.so.13) from"), "{v:#}");
        } else {
            assert_eq!(v["verdict"]["status"], "will-fail-when-loaded", "{v:#}");
            assert!(
                reasons(&v)
                    .iter()
                    .any(|r| r.contains("dlopen(libnvrtc.so.12) from")),
                "{v:#}"
            );
        }
    }
}

/// A file that gives `dlopen` a linker name (mindspore's GPU plugins: `libcudart.so`,
/// `libcupti.so`) needs a name no CUDA wheel installs: said as such, never as a SONAME the file
/// "needs at load", and repair adds nothing for it.
#[test]
fn a_dlopen_by_linker_name_is_said_as_one() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let lib = gcc_shared(
        d,
        "libplugin.so",
        Some("libplugin.so"),
        "#include <dlfcn.h>\nvoid *open_rt(void) { return dlopen(\"libcudart.so\", RTLD_NOW); }\n",
        &["-ldl"],
    );
    let wheel = d.join("plug-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "plug",
        &["nvidia-cuda-runtime-cu12"],
        &[("plug/libplugin.so", std::fs::read(&lib).unwrap())],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    assert!(a["cuda_needed"].as_array().unwrap().is_empty(), "{a:#}");
    assert!(
        verdict_lines(a).iter().any(|l| l.starts_with(
            "plug/libplugin.so dlopens libcudart.so by its linker name on the first call into it: no CUDA wheel installs that name"
        )),
        "{a:#}"
    );
}

/// The `.nv_fatbin` section of a device-code fixture, copied out with objcopy into `dir`.
fn fixture_fatbin(dir: &std::path::Path) -> std::path::PathBuf {
    let fatbin = dir.join("fat.bin");
    let o = std::process::Command::new("objcopy")
        .args(["-O", "binary", "--only-section=.nv_fatbin"])
        .arg(repo_root().join("tests/fixtures/device/arch_specific.so"))
        .arg(&fatbin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    fatbin
}

/// Device code with no runtime in NEEDED reads as a linked-in runtime ("likely"), unless the file
/// imports the runtime's registration entry point: then an object it loads provides the runtime
/// (deepmd-kit's `libdeepmd_dyn_cudart.so` forwards it to a libcudart it opens), and nothing is
/// linked in. `nm -D` is the oracle for the import.
#[test]
fn a_file_that_imports_the_runtime_does_not_link_it() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let fatbin = fixture_fatbin(d);
    let plain = gcc_shared(
        d,
        "plain.so",
        Some("libplain.so"),
        "int f(void) { return 0; }\n",
        &[],
    );
    let imports = gcc_shared(
        d,
        "imports.so",
        Some("libimports.so"),
        "void **__cudaRegisterFatBinary(void *);\nvoid *reg(void *f) { return __cudaRegisterFatBinary(f); }\n",
        &[],
    );
    let nm = std::process::Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(&imports)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&nm.stdout).contains("U __cudaRegisterFatBinary"));
    let (plain_fat, imports_fat) = (d.join("libplain.so"), d.join("libimports.so"));
    with_fatbin_section(&plain, &fatbin, &plain_fat);
    with_fatbin_section(&imports, &fatbin, &imports_fat);
    let v = inspect_json(
        &[plain_fat.to_str().unwrap(), imports_fat.to_str().unwrap()],
        0,
    );
    let static_of = |suffix: &str| {
        artifact(&v, suffix)["elf_files"][0]["static_cuda"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["library"].as_str().unwrap().to_string(),
                    s["confidence"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        static_of("libplain.so"),
        [("cudart".to_string(), "likely".to_string())]
    );
    assert_eq!(static_of("libimports.so"), []);
}

/// A file that links cudart statically and also opens `libcudart.so.12` by name (cupy's runtime
/// module asks the installed runtime's version that way): its own calls into cudart work
/// without the shared library, so the missing library fails only what opens it, not "the first
/// call into cudart".
#[test]
fn a_file_linking_the_runtime_statically_that_also_opens_it() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // cudart's own code: its entry points, its messages and the table of driver entry points
    // it resolves at run time (the evidence static linking needs beside stubs' names).
    let table: Vec<String> = (0..220).map(|i| format!("\"cuEntryPoint{i}\"")).collect();
    let source = format!(
        "#include <dlfcn.h>\n\
         __attribute__((used)) static const char *names[] = {{{}}};\n\
         __attribute__((used)) static const char msg[] = \"CUDA driver version is insufficient for CUDA runtime version\";\n\
         __attribute__((used)) static const char shm[] = \"/cudart.shm.%x\";\n\
         int cudaLaunchKernel(void) {{ return 0; }}\n\
         int cudaGetDeviceCount(int *n) {{ *n = 0; return 0; }}\n\
         int cudaMalloc(void **p) {{ *p = 0; return 0; }}\n\
         int local_runtime_version(void) {{ return dlopen(\"libcudart.so.12\", RTLD_NOW) != 0; }}\n",
        table.join(", ")
    );
    let ext = gcc_shared(d, "runtime.so", None, &source, &["-ldl"]);
    let w = d.join("rt-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &w,
        "rt",
        &[],
        &[
            ("rt/__init__.py", b"from rt import runtime\n".to_vec()),
            (
                "rt/runtime.cpython-311-x86_64-linux-gnu.so",
                std::fs::read(ext).unwrap(),
            ),
        ],
    );
    let v = inspect_json(&[w.to_str().unwrap()], 0);
    let a = artifact(&v, "linux_x86_64.whl");
    let lines = verdict_lines(a);
    assert!(
        lines.iter().any(|l| l.starts_with("what opens libcudart.so.12 fails where it is used (rt/runtime.cpython-311-x86_64-linux-gnu.so links cudart statically, so its own calls into it work")),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("the first call into cudart")),
        "{lines:?}"
    );
}

/// A library NVIDIA ships only as a static archive (libnvptxcompiler_static.a: the PTX
/// compiler, and the nvLinker entry points beside it) is linked in where a file defines its
/// entry points (ptxcompiler-cu11, cubinlinker-cu11), and nm agrees; a file that only calls
/// them links nothing.
#[test]
fn a_library_shipped_only_as_a_static_archive_is_linked_in() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let compiler = gcc_shared(
        d,
        "libptx.so",
        None,
        "int nvPTXCompilerCreate(void *p) { return p == 0; }\nint nvPTXCompilerCompile(void *p) { return p == 0; }\n",
        &[],
    );
    let linker = gcc_shared(
        d,
        "liblink.so",
        None,
        "int nvLinkerCreate(void *p) { return p == 0; }\n",
        &[],
    );
    let caller = gcc_shared(
        d,
        "libcall.so",
        None,
        "int nvPTXCompilerCompile(void *);\nint call(void) { return nvPTXCompilerCompile(0); }\n",
        &["-Wl,--unresolved-symbols=ignore-all"],
    );
    for (f, defined) in [(&compiler, true), (&linker, true), (&caller, false)] {
        let nm = std::process::Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(f)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&nm.stdout);
        assert_eq!(
            text.contains("nvPTXCompilerCompile") || text.contains("nvLinkerCreate"),
            defined,
            "{text}"
        );
    }
    let wheel = d.join("ptx-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "ptx",
        &[],
        &[
            ("ptx/libptx.so", std::fs::read(&compiler).unwrap()),
            ("ptx/liblink.so", std::fs::read(&linker).unwrap()),
            ("ptx/libcall.so", std::fs::read(&caller).unwrap()),
        ],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    let static_of = |name: &str| -> Vec<String> {
        a["elf_files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(name))
            .unwrap()["static_cuda"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["library"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(static_of("libptx.so"), ["nvptxcompiler"]);
    assert_eq!(static_of("liblink.so"), ["nvptxcompiler"]);
    assert!(static_of("libcall.so").is_empty());
    let lines = verdict_lines(a);
    assert!(
        lines
            .iter()
            .any(|l| l == "links CUDA statically: nvptxcompiler in 2 file(s)"),
        "{lines:#?}"
    );
}

/// A file that links no CUDA library and names fallback chains none of which says its major by
/// its first link (qoco's module tries `libcublas.so.11`, then `.12`, and `libcudss.so.1`, which
/// CUDA 12 and 13 share): the newest link of each chain, and the major those give for the
/// SONAME several majors share — one CUDA major's wheels, not CUDA 11's for some and 13's for
/// another.
#[test]
fn chains_whose_first_links_are_older_take_the_newest_and_agree() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    let chain = gcc_shared(
        d,
        "libsolve.so",
        Some("libsolve.so"),
        "#include <dlfcn.h>\n\
         static const char *names[] = {\"libcublas.so\", \"libcublas.so.11\", \"libcublas.so.12\",\n\
           \"libcusparse.so\", \"libcusparse.so.11\", \"libcusparse.so.12\", \"libcudss.so\", \"libcudss.so.1\"};\n\
         void *open_all(int i) { return dlopen(names[i], RTLD_NOW); }\n",
        &["-ldl"],
    );
    let wheel = d.join("solve-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    write_wheel(
        &wheel,
        "solve",
        &[],
        &[("solve/libsolve.so", std::fs::read(&chain).unwrap())],
    );
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let a = artifact(&v, ".whl");
    for (soname, pip) in [
        ("libcublas.so.12", "nvidia-cublas-cu12"),
        ("libcusparse.so.12", "nvidia-cusparse-cu12"),
        ("libcudss.so.1", "nvidia-cudss-cu12"),
    ] {
        let row = needed(a, soname);
        assert_eq!(row["library"]["pip"], pip, "{row:#}");
        assert_eq!(row["library"]["cuda_major"], 12, "{row:#}");
    }
    assert!(
        !a["cuda_needed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["soname"] == "libcublas.so.11"),
        "{a:#}"
    );
    // Every name it writes is said, the linker name it tries first too.
    let evidence = a["elf_files"][0]["lazy_loads"].to_string();
    assert!(
        evidence.contains(r#"names \"libcudss.so\", \"libcudss.so.1\" to open"#),
        "{evidence}"
    );
    // doctor reads the chain as inspect does: where no link is found, the one it names is the
    // newest, not the first.
    let v = doctor_json(&["--ld-library-path", "", chain.to_str().unwrap()], 0);
    let r = reasons(&v);
    assert!(
        r.iter().any(|l| l.contains("dlopen(libcublas.so.12) from")),
        "{v:#}"
    );
    assert!(!v.to_string().contains("libcublas.so.11) from"), "{v:#}");
}

/// A fallback chain in a file with no runtime to say its major, whose first link is of a newer
/// major than its device code was built with (colabfold's CUDA 12 build tries
/// `libcublasLt.so.13`, then `.12`): doctor names the link inspect does, the newest not newer
/// than the build, and the fix in that major.
#[test]
fn a_chains_link_is_not_newer_than_the_build() {
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // The fixture's fatbin, its PTX marked as ISA 8.8 (CUDA 12.9) in each entry's header.
    let fatbin = fixture_fatbin(d);
    let mut bytes = std::fs::read(&fatbin).unwrap();
    let entries =
        cudist_fatbin::parse_section(&bytes, cudist_fatbin::SectionKind::NvFatbin).unwrap();
    let mut ptx = 0;
    for e in entries
        .iter()
        .filter(|e| e.kind == cudist_fatbin::EntryKind::Ptx)
    {
        bytes[e.offset + 0x18..e.offset + 0x1a].copy_from_slice(&8u16.to_le_bytes());
        bytes[e.offset + 0x1a..e.offset + 0x1c].copy_from_slice(&8u16.to_le_bytes());
        ptx += 1;
    }
    assert!(ptx > 0);
    std::fs::write(&fatbin, &bytes).unwrap();
    let plain = gcc_shared(
        d,
        "plain.so",
        Some("libkern.so"),
        "#include <dlfcn.h>\n\
         static const char *names[] = {\"libcublasLt.so.13\", \"libcublasLt.so.12\", \"libcublasLt.so\"};\n\
         void *open_lt(int i) { return dlopen(names[i], RTLD_NOW | RTLD_NOLOAD); }\n",
        &["-ldl"],
    );
    let lib = d.join("libkern.so");
    with_fatbin_section(&plain, &fatbin, &lib);
    let v = inspect_json(&[lib.to_str().unwrap()], 0);
    let lazy = &artifact(&v, "libkern.so")["elf_files"][0]["lazy_loads"][0];
    assert_eq!(lazy["soname"], "libcublasLt.so.12", "{v:#}");
    let v = doctor_json(&["--ld-library-path", "", lib.to_str().unwrap()], 0);
    let r = reasons(&v);
    assert!(
        r.iter()
            .any(|l| l.contains("dlopen(libcublasLt.so.12) from")
                && l.contains("nvidia-cublas-cu12")),
        "{r:#?}"
    );
    assert!(!v.to_string().contains("libcublasLt.so.13) from"), "{v:#}");
}
