//! Platform tags: cudist's manylinux answer must equal auditwheel's on the same wheel, and repair
//! must tag with it (or fail saying why `--plat` cannot be had).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn our_policy(wheel: &Path) -> (String, serde_json::Value) {
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let p = v["artifacts"][0]["platform"].clone();
    (
        p["tags"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_str()
            .unwrap()
            .to_string(),
        p,
    )
}

fn ext_wheel(dir: &Path, name: &str, src: &str, lang_cxx: bool) -> std::path::PathBuf {
    let file = if lang_cxx { "e.cc" } else { "e.c" };
    std::fs::write(dir.join(file), src).unwrap();
    let so = dir.join(format!("{name}.so"));
    let o = Command::new(if lang_cxx { "g++" } else { "gcc" })
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(dir.join(file))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = dir.join(format!("{name}-1.0-cp311-cp311-linux_x86_64.whl"));
    write_wheel(
        &w,
        name,
        &[],
        &[(&format!("{name}/_ext.so"), std::fs::read(so).unwrap())],
    );
    w
}

#[test]
fn tags_agree_with_auditwheel() {
    let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("old", "int f(int x) { return x + 1; }\n", false),
        ("realloc", "#define _GNU_SOURCE\n#include <stdlib.h>\nvoid *g(void *p, size_t n) { return reallocarray(p, n, 8); }\n", false),
        ("cxx", "#include <string>\nstd::string h(const char *s) { return std::string(s) + \"!\"; }\n", true),
    ];
    for (name, src, cxx) in cases {
        let w = ext_wheel(d.path(), name, src, cxx);
        let (ours, p) = our_policy(&w);
        let (theirs, _) = auditwheel_tag(&auditwheel, &w);
        assert_eq!(ours, theirs, "{name}: {p:#}");
    }
}

#[test]
fn cupy_symbol_constraint_matches_auditwheel_and_repair_tags_it() {
    let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let Some(dir) = tool_from_env("CUDIST_REAL_WHEELS") else {
        return;
    };
    let w = find_wheel(&dir, "cupy_cuda12x-14.2.0");
    let (ours, p) = our_policy(&w);
    let (consistent, constrained) = auditwheel_tag(&auditwheel, &w);
    // auditwheel cannot find the CUDA libraries on this machine and falls back to linux; its
    // symbol-version constraint is the comparable answer.
    assert_eq!(consistent, "linux_x86_64");
    assert_eq!(Some(ours.clone()), constrained, "{p:#}");
    assert_eq!(ours, "manylinux_2_24_x86_64");
    assert!(
        p["blocked"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("GLIBCXX_3.4.21"),
        "{p:#}"
    );

    let out = tempfile::tempdir().unwrap();
    let o = cudist(&[
        "repair",
        "--plat",
        "manylinux2014",
        "-w",
        out.path().to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains("cannot be tagged manylinux2014_x86_64") && err.contains("GLIBCXX_3.4.21"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "nothing written"
    );

    let o = cudist(&[
        "repair",
        "--json",
        "--dry-run",
        "-w",
        out.path().to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        r["wheels"][0]["output"]
            .as_str()
            .unwrap()
            .ends_with("cp311-cp311-manylinux_2_24_x86_64.whl"),
        "{:#}",
        r["wheels"][0]["output"]
    );
}

#[test]
fn a_library_outside_the_policy_blocks_every_manylinux_tag() {
    let d = tempfile::tempdir().unwrap();
    let ext = ext_needing(d.path(), "foo", "libfoo.so.1", "foo");
    let w = d.path().join("needsfoo-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(&w, "needsfoo", &[], &[("needsfoo/_ext.so", ext)]);
    let (ours, p) = our_policy(&w);
    assert_eq!(ours, "linux_x86_64", "{p:#}");
    assert!(
        p["blocked"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("needs libfoo.so.1"),
        "{p:#}"
    );
    let out = d.path().join("out");
    let o = cudist(&[
        "repair",
        "--plat",
        "manylinux_2_28_x86_64",
        "-w",
        out.to_str().unwrap(),
        w.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("needs libfoo.so.1"), "{}", stderr(&o));
    // Without --plat, repair keeps it linux and says what it does not handle.
    let o = cudist(&["repair", "-w", out.to_str().unwrap(), w.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("needs libfoo.so.1") && stdout(&o).contains("tagged    linux_x86_64"),
        "{}",
        stdout(&o)
    );
}

/// A library the wheel carries counts for the policy only where a search path of the wheel's
/// files reaches it, as auditwheel finds it: one in a directory no RPATH names (sapien's
/// OpenImageDenoise, which its Python preloads) is expected from the system, and the wheel is
/// `linux`; one the search path of a file that loads it reaches is the wheel's own.
#[test]
fn a_carried_library_no_search_path_reaches_is_expected_from_the_system() {
    let d = tempfile::tempdir().unwrap();
    let libs = d.path().join("libs");
    fake_lib(&libs, "libdenoise.so.2", "libdenoise.so.2", "denoise");
    let ext = std::fs::read(gcc_shared(
        d.path(),
        "ext.so",
        None,
        "int denoise(void); int f(void) { return denoise(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libdenoise.so.2",
        ],
    ))
    .unwrap();
    let lib = std::fs::read(libs.join("libdenoise.so.2")).unwrap();
    let far = d.path().join("far-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &far,
        "far",
        &[],
        &[
            ("far/_ext.so", ext),
            ("far/oidn/libdenoise.so.2", lib.clone()),
        ],
    );
    let (ours, p) = our_policy(&far);
    assert_eq!(ours, "linux_x86_64", "{p:#}");
    assert!(
        p["blocked"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("needs libdenoise.so.2"),
        "{p:#}"
    );
    // The extension module's RPATH names the directory of the library it loads, which needs
    // the carried one from the same directory with no search path of its own: found, as the
    // loader finds it (the extension's `DT_RPATH` serves what it loads).
    let mid = std::fs::read(gcc_shared(
        d.path(),
        "libmid.so",
        Some("libmid.so"),
        "int denoise(void); int mid(void) { return denoise(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-l:libdenoise.so.2",
        ],
    ))
    .unwrap();
    let top = std::fs::read(gcc_shared(
        d.path(),
        "top.so",
        None,
        "int mid(void); int f(void) { return mid(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", d.path().display()),
            "-l:libmid.so",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/libs",
        ],
    ))
    .unwrap();
    let near = d.path().join("near-1.0-cp311-cp311-linux_x86_64.whl");
    write_wheel(
        &near,
        "near",
        &[],
        &[
            ("near/_ext.so", top),
            ("near/libs/libmid.so", mid),
            ("near/libs/libdenoise.so.2", lib),
        ],
    );
    let (ours, p) = our_policy(&near);
    assert_ne!(ours, "linux_x86_64", "{p:#}");
    if let Some(auditwheel) = tool_from_env("CUDIST_AUDITWHEEL") {
        for w in [&far, &near] {
            let (theirs, _) = auditwheel_tag(&auditwheel, w);
            assert_eq!(our_policy(w).0, theirs, "{}", w.display());
        }
    }
}
