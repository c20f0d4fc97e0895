//! Stub libraries against real tools: readelf sees the SONAME and every symbol, eu-elflint accepts
//! the file, GNU ld links a program against it (and records the SONAME as NEEDED), and glibc's
//! loader opens it and finds its functions.

mod common;
use common::*;

use std::process::Command;

use cudist_elf::stub::write_stub;

#[test]
fn a_stub_links_loads_and_lints_clean() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = [
        "cuInit",
        "cuDeviceGetCount",
        "cuCtxCreate_v2",
        "cuMemcpy_ptds",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain((0..300).map(|i| format!("cuFiller{i}")))
    .collect();
    let data = write_stub("libfake.so.1", &names, object::elf::EM_X86_64).unwrap();
    let lib = dir.path().join("libfake.so");
    std::fs::write(&lib, &data).unwrap();

    assert_eq!(
        readelf_dynamic(&lib),
        vec!["Library soname: [libfake.so.1]"]
    );
    let o = Command::new("readelf")
        .arg("--dyn-syms")
        .arg("-W")
        .arg(&lib)
        .output()
        .unwrap();
    let syms = String::from_utf8_lossy(&o.stdout);
    for n in &names {
        assert!(
            syms.lines().any(|l| l.contains(" FUNC ")
                && l.contains(" GLOBAL ")
                && l.ends_with(&format!(" {n}"))),
            "readelf does not list {n} as a global function"
        );
    }
    if let Some(clean) = elflint_clean(&lib) {
        assert!(clean, "eu-elflint rejects the stub");
    }

    // GNU ld links against it through -l, with every reference resolved.
    let c = dir.path().join("prog.c");
    std::fs::write(
        &c,
        "int cuInit(unsigned); int cuDeviceGetCount(int*); int cuCtxCreate_v2(void*, unsigned, int);\n\
         int cuMemcpy_ptds(unsigned long, unsigned long, unsigned long);\n\
         int main(void) { int n; return cuInit(0) + cuDeviceGetCount(&n) + cuCtxCreate_v2(0, 0, 0) + cuMemcpy_ptds(0, 0, 0); }\n",
    )
    .unwrap();
    let prog = dir.path().join("prog");
    let o = Command::new("gcc")
        .arg("-o")
        .arg(&prog)
        .arg(&c)
        .arg(format!("-L{}", dir.path().display()))
        .args(["-lfake", "-Wl,--no-undefined"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ld: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(readelf_dynamic(&prog).contains(&"Shared library: [libfake.so.1]".to_string()));

    // glibc opens it and resolves a function by name.
    let o = Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.cuCtxCreate_v2; l.cuFiller299",
        ])
        .arg(&lib)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
