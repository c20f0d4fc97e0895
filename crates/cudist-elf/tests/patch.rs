//! The patcher against real tools: glibc's loader (dlopen through Python's ctypes) must find the
//! libraries through the new paths, `readelf` must show the new values, `eu-elflint` must accept
//! every output whose input it accepted, and patchelf 0.19's edits must give the same dynamic
//! entries.

use std::path::PathBuf;
use std::process::Command;

use cudist_elf::patch::{apply, Edits, PatchError, SearchPathTag};
use cudist_elf::ElfFile;

mod common;
use common::*;

/// A tree: `lib/libdep.so.1` and `main.so` that needs it, linked without a search path.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(main_args: &[&str]) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        std::fs::create_dir(&lib).unwrap();
        // A versioned symbol, so that main.so carries a version requirement naming libdep.so.1
        // (.gnu.version_r), as binaries linked against libcudart do.
        std::fs::write(lib.join("dep.map"), "DEP_1.0 { global: dep; local: *; };\n").unwrap();
        let map = format!("-Wl,--version-script={}", lib.join("dep.map").display());
        gcc(
            &lib,
            "libdep.so.1",
            "int dep(void) { return 42; }\n",
            &["-Wl,-soname,libdep.so.1", &map],
        );
        std::os::unix::fs::symlink("libdep.so.1", lib.join("libdep.so")).unwrap();
        let mut args = vec![
            "-Wl,--no-as-needed".to_string(),
            format!("-L{}", lib.display()),
            "-ldep".into(),
        ];
        args.extend(main_args.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        gcc(
            dir.path(),
            "main.so",
            "int dep(void); int call(void) { return dep(); }\n",
            &refs,
        );
        Tree { dir }
    }
    fn main(&self) -> PathBuf {
        self.dir.path().join("main.so")
    }
    fn patch_to(&self, edits: &Edits, name: &str) -> (PathBuf, bool) {
        let data = std::fs::read(self.main()).unwrap();
        let p = apply(&data, edits).unwrap();
        let out = self.dir.path().join(name);
        std::fs::write(&out, &p.data).unwrap();
        (out, p.in_place)
    }
}

fn rpath(paths: &[&str], tag: SearchPathTag) -> Edits {
    Edits {
        search_path: Some((paths.iter().map(|s| s.to_string()).collect(), tag)),
        ..Edits::default()
    }
}

#[test]
fn adding_an_rpath_grows_the_file_and_loads() {
    let t = Tree::new(&[]);
    assert!(dlopen(&t.main()).unwrap_err().contains("libdep.so.1"));
    let (out, in_place) = t.patch_to(&rpath(&["$ORIGIN/lib"], SearchPathTag::Rpath), "grown.so");
    assert!(!in_place, "no string slack: a layout change is needed");
    dlopen(&out).expect("loads through the new RPATH");
    let d = readelf_dynamic(&out);
    assert!(
        d.contains(&"Shared library: [libdep.so.1]".to_string()),
        "{d:?}"
    );
    assert!(
        d.contains(&"Library rpath: [$ORIGIN/lib]".to_string()),
        "{d:?}"
    );
    let f = ElfFile::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(f.rpath, vec!["$ORIGIN/lib"]);
    assert!(f.runpath.is_empty());
    if let (Some(before), Some(after)) = (elflint_clean(&t.main()), elflint_clean(&out)) {
        assert!(
            !before || after,
            "eu-elflint accepted the input but not the output"
        );
    }
}

#[test]
fn a_shorter_path_is_written_in_place() {
    let long = "$ORIGIN/some/placeholder/that/is/long/enough/for/the/real/path";
    let t = Tree::new(&[&format!("-Wl,-rpath,{long}"), "-Wl,--enable-new-dtags"]);
    let size = std::fs::metadata(t.main()).unwrap().len();
    let (out, in_place) = t.patch_to(&rpath(&["$ORIGIN/lib"], SearchPathTag::Rpath), "short.so");
    assert!(in_place);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), size);
    dlopen(&out).expect("loads");
    let d = readelf_dynamic(&out);
    assert!(
        d.contains(&"Library rpath: [$ORIGIN/lib]".to_string()),
        "{d:?}"
    );
    assert!(
        !d.iter().any(|l| l.contains("runpath")),
        "RUNPATH became RPATH: {d:?}"
    );
    if let (Some(before), Some(after)) = (elflint_clean(&t.main()), elflint_clean(&out)) {
        assert!(!before || after);
    }
    // And back to RUNPATH, still in place.
    let data = std::fs::read(&out).unwrap();
    let p = apply(&data, &rpath(&["$ORIGIN/lib"], SearchPathTag::Runpath)).unwrap();
    assert!(p.in_place);
    let f = ElfFile::parse(&p.data).unwrap();
    assert_eq!(f.runpath, vec!["$ORIGIN/lib"]);
    assert!(f.rpath.is_empty());
}

#[test]
fn needed_and_soname_are_replaced() {
    let t = Tree::new(&[
        "-Wl,-soname,libmain.so.1",
        "-Wl,-rpath,$ORIGIN/lib",
        "-Wl,--disable-new-dtags",
    ]);
    // Rename the dependency as a graft would, and point NEEDED at the new name.
    let lib = t.dir.path().join("lib");
    std::fs::copy(lib.join("libdep.so.1"), lib.join("libdep-1a2b3c4d.so.1")).unwrap();
    let edits = Edits {
        replace_needed: vec![("libdep.so.1".into(), "libdep-1a2b3c4d.so.1".into())],
        soname: Some("libmain-with-a-much-longer-name.so.1".into()),
        ..Edits::default()
    };
    let (out, in_place) = t.patch_to(&edits, "renamed.so");
    assert!(!in_place, "longer strings need a layout change");
    let f = ElfFile::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert!(
        f.verneed_files
            .contains(&"libdep-1a2b3c4d.so.1".to_string()),
        "{:?}",
        f.verneed_files
    );
    std::fs::remove_file(lib.join("libdep.so.1")).unwrap();
    dlopen(&out).expect("NEEDED now names the renamed file");
    let d = readelf_dynamic(&out);
    assert!(
        d.contains(&"Shared library: [libdep-1a2b3c4d.so.1]".to_string()),
        "{d:?}"
    );
    assert!(
        d.contains(&"Library soname: [libmain-with-a-much-longer-name.so.1]".to_string()),
        "{d:?}"
    );
    // The reverse, shorter, edit is in place.
    let back = Edits {
        replace_needed: vec![("libdep-1a2b3c4d.so.1".into(), "libdep.so.1".into())],
        ..Edits::default()
    };
    let p = apply(&std::fs::read(&out).unwrap(), &back).unwrap();
    assert!(p.in_place);
    let f = ElfFile::parse(&p.data).unwrap();
    assert!(
        f.verneed_files.contains(&"libdep.so.1".to_string()),
        "{:?}",
        f.verneed_files
    );
    let back_path = t.dir.path().join("back.so");
    std::fs::write(&back_path, &p.data).unwrap();
    std::fs::copy(lib.join("libdep-1a2b3c4d.so.1"), lib.join("libdep.so.1")).unwrap();
    dlopen(&back_path).expect("ld.so accepts the version requirements");
    assert_eq!(
        ElfFile::parse(&p.data)
            .unwrap()
            .needed
            .iter()
            .filter(|n| *n == "libdep.so.1")
            .count(),
        1
    );
}

#[test]
fn same_dynamic_entries_as_patchelf() {
    let Some(patchelf) = tool("CUDIST_PATCHELF", "patchelf") else {
        return;
    };
    let t = Tree::new(&["-Wl,-soname,libmain.so.1"]);
    let long = "$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/lib";
    let (ours, _) = t.patch_to(
        &rpath(&long.split(':').collect::<Vec<_>>(), SearchPathTag::Rpath),
        "ours.so",
    );
    let theirs = t.dir.path().join("theirs.so");
    std::fs::copy(t.main(), &theirs).unwrap();
    let o = Command::new(&patchelf)
        .args(["--force-rpath", "--set-rpath", long])
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // NEEDED order matters to the loader; the place of the other entries does not (patchelf
    // puts a new RPATH first, cudist last).
    let needed = |v: &[String]| {
        v.iter()
            .filter(|l| l.starts_with("Shared library"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (a, b) = (readelf_dynamic(&ours), readelf_dynamic(&theirs));
    assert_eq!(needed(&a), needed(&b));
    let (mut a, mut b) = (a, b);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    dlopen(&ours).unwrap();
    dlopen(&theirs).unwrap();
}

#[test]
fn stripped_files_and_files_without_dynamic_section() {
    let t = Tree::new(&[]);
    let stripped = t.dir.path().join("stripped.so");
    std::fs::copy(t.main(), &stripped).unwrap();
    assert!(Command::new("strip")
        .arg(&stripped)
        .status()
        .unwrap()
        .success());
    let p = apply(
        &std::fs::read(&stripped).unwrap(),
        &rpath(&["$ORIGIN/lib"], SearchPathTag::Rpath),
    )
    .unwrap();
    let out = t.dir.path().join("stripped-patched.so");
    std::fs::write(&out, &p.data).unwrap();
    dlopen(&out).expect("a stripped file patches and loads");

    // An object file has no dynamic section: a clear error.
    let obj = t.dir.path().join("x.o");
    std::fs::write(t.dir.path().join("x.c"), "int x;\n").unwrap();
    assert!(Command::new("gcc")
        .args(["-c", "-o"])
        .arg(&obj)
        .arg(t.dir.path().join("x.c"))
        .status()
        .unwrap()
        .success());
    let e = apply(
        &std::fs::read(&obj).unwrap(),
        &rpath(&["$ORIGIN"], SearchPathTag::Rpath),
    )
    .unwrap_err();
    assert!(matches!(e, PatchError::NoDynamic), "{e}");
    let e = apply(
        &std::fs::read(t.main()).unwrap(),
        &Edits {
            replace_needed: vec![("libnope.so".into(), "x".into())],
            ..Edits::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, PatchError::NeededNotFound(_)), "{e}");
}

#[test]
fn very_long_rpath() {
    let t = Tree::new(&[]);
    let many: Vec<String> = (0..200)
        .map(|i| format!("$ORIGIN/../../nvidia/component{i}/lib"))
        .chain(["$ORIGIN/lib".into()])
        .collect();
    let edits = Edits {
        search_path: Some((many.clone(), SearchPathTag::Rpath)),
        ..Edits::default()
    };
    let p = apply(&std::fs::read(t.main()).unwrap(), &edits).unwrap();
    let out = t.dir.path().join("long.so");
    std::fs::write(&out, &p.data).unwrap();
    assert_eq!(ElfFile::parse(&p.data).unwrap().rpath, many);
    dlopen(&out).expect("loads with a 7 KB RPATH");
}

#[test]
fn files_over_one_gigabyte() {
    // A library with a 1.1 GB non-loaded section appended (objcopy), patched both ways.
    let t = Tree::new(&[
        "-Wl,-rpath,$ORIGIN/placeholder/long/enough/for/lib",
        "-Wl,--disable-new-dtags",
    ]);
    let pad = t.dir.path().join("pad.bin");
    std::fs::File::create(&pad)
        .unwrap()
        .set_len(1_100 << 20)
        .unwrap(); // sparse
    let big = t.dir.path().join("big.so");
    let o = Command::new("objcopy")
        .arg(format!("--add-section=.cudist_pad={}", pad.display()))
        .arg("--set-section-flags=.cudist_pad=readonly")
        .arg(t.main())
        .arg(&big)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(&pad).unwrap();
    let data = std::fs::read(&big).unwrap();
    assert!(data.len() > 1 << 30, "{} bytes", data.len());
    // In place: a shorter path.
    let p = apply(&data, &rpath(&["$ORIGIN/lib"], SearchPathTag::Rpath)).unwrap();
    assert!(p.in_place);
    assert_eq!(p.data.len(), data.len());
    std::fs::write(&big, &p.data).unwrap();
    dlopen(&big).expect("the patched 1.1 GB library loads");
    // Layout change: a longer path.
    let long = "$ORIGIN/lib:$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cuda_runtime/lib";
    let p = apply(
        &p.data,
        &rpath(&long.split(':').collect::<Vec<_>>(), SearchPathTag::Rpath),
    )
    .unwrap();
    assert!(!p.in_place);
    std::fs::write(&big, &p.data).unwrap();
    drop(p);
    drop(data);
    dlopen(&big).expect("the rewritten 1.1 GB library loads");
    assert_eq!(
        readelf_dynamic(&big)
            .iter()
            .filter(|l| l.contains(long))
            .count(),
        1
    );
}
