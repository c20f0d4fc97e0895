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
fn a_file_patchelf_changed_before_is_patched_again() {
    // auditwheel's grafts (cumm-cu120 0.6.3, spconv-cu120 2.3.6) went through patchelf, which
    // appends its segments after the file's symbol table: the rewriter writes that table again
    // after the segment it adds, and the size bound must allow it (it refused such files).
    let Some(patchelf) = tool("CUDIST_PATCHELF", "patchelf") else {
        return;
    };
    // Local symbols with long names: a symbol table of a few hundred KB that no process maps.
    let mut src = String::from("int dep(void); int call(void) { return dep(); }\n");
    for i in 0..3000 {
        src.push_str(&format!(
            "__attribute__((used)) static int a_rather_long_local_function_name_{i:05}(void) {{ return {i}; }}\n"
        ));
    }
    let t = Tree::new(&[]);
    let lib = t.dir.path().join("lib");
    let big = cc(
        t.dir.path(),
        "big.so",
        &src,
        &[
            "-shared",
            "-fPIC",
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-ldep",
        ],
    );
    let o = Command::new(&patchelf)
        .args([
            "--set-rpath",
            "$ORIGIN/../a_graft_directory_as_auditwheel_names_it.libs",
        ])
        .arg(&big)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = std::fs::read(&big).unwrap();
    let long =
        "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cuda_nvrtc/lib:$ORIGIN/lib";
    let edits = Edits {
        search_path: Some((
            long.split(':').map(str::to_string).collect(),
            SearchPathTag::Rpath,
        )),
        replace_needed: vec![("libdep.so.1".into(), "libdep.so.1".into())],
        ..Edits::default()
    };
    let p = apply(&data, &edits).expect("a patchelf-laid-out file is patched");
    assert!(!p.in_place);
    // Larger by what was written again, and no more than the input twice over.
    assert!(p.data.len() > data.len() && p.data.len() < 2 * data.len());
    let out = t.dir.path().join("big-patched.so");
    std::fs::write(&out, &p.data).unwrap();
    dlopen(&out).expect("loads through the new RPATH");
    let f = ElfFile::parse(&p.data).unwrap();
    assert_eq!(f.rpath, long.split(':').collect::<Vec<_>>());
    if let (Some(before), Some(after)) = (elflint_clean(&big), elflint_clean(&out)) {
        assert!(
            !before || after,
            "eu-elflint accepted the input but not the output"
        );
    }
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

/// The offset in the file of the program header of type `p_type` (64-bit little-endian files).
fn phdr_of(data: &[u8], p_type: u32) -> usize {
    let phoff = u64::from_le_bytes(data[0x20..0x28].try_into().unwrap()) as usize;
    let size = u16::from_le_bytes([data[0x36], data[0x37]]) as usize;
    let n = u16::from_le_bytes([data[0x38], data[0x39]]) as usize;
    (0..n)
        .map(|i| phoff + i * size)
        .find(|&at| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) == p_type)
        .expect("program header")
}

fn add_u64(data: &mut [u8], at: usize, add: u64) {
    let v = u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    data[at..at + 8].copy_from_slice(&v.wrapping_add(add).to_le_bytes());
}

#[test]
fn headers_that_lie_about_the_file_are_refused_before_anything_is_written() {
    // Issue 18: PT_NOTE's p_offset moved 2 GiB out made a 15 KB library a 2 GiB output; one
    // byte of PT_DYNAMIC's p_filesz drove the rewriter to 23 GB of memory.
    let t = Tree::new(&[]);
    let data = std::fs::read(t.main()).unwrap();
    let grow = rpath(
        &["$ORIGIN/lib", "$ORIGIN/../../nvidia/cu13/lib"],
        SearchPathTag::Rpath,
    );
    let shrink = rpath(&[], SearchPathTag::Runpath);
    const PT_NOTE: u32 = 4;
    const PT_DYNAMIC: u32 = 2;
    const PT_LOAD: u32 = 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "PT_NOTE offset + 2 GiB",
            {
                let mut d = data.clone();
                let at = phdr_of(&d, PT_NOTE) + 8;
                add_u64(&mut d, at, 2 << 30);
                d
            },
            "(PT_NOTE) lies outside the file",
        ),
        (
            "PT_DYNAMIC p_filesz + 4 GiB",
            {
                let mut d = data.clone();
                let at = phdr_of(&d, PT_DYNAMIC) + 0x20;
                add_u64(&mut d, at, 1 << 32);
                d
            },
            "(PT_DYNAMIC) lies outside the file",
        ),
        (
            "PT_LOAD aligned to 1 TiB",
            {
                let mut d = data.clone();
                let at = phdr_of(&d, PT_LOAD) + 0x30;
                d[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                d
            },
            "(PT_LOAD) asks for 0x10000000000-byte alignment",
        ),
        (
            "a section past the end",
            {
                let mut d = data.clone();
                let shoff = u64::from_le_bytes(d[0x28..0x30].try_into().unwrap()) as usize;
                // Section 1's sh_offset (at 0x18 of its 64-byte header).
                add_u64(&mut d, shoff + 64 + 0x18, 1 << 31);
                d
            },
            "lies outside the file",
        ),
    ];
    // Found by the elf_patch fuzz target: a GNU hash table whose header sizes a 32 GiB bloom
    // filter with a shift past 31, and section alignments of 3 and 2^40, made object's writer
    // overflow or allocate without bound.
    let sh = |d: &[u8], name: &str| -> usize {
        let shoff = u64::from_le_bytes(d[0x28..0x30].try_into().unwrap()) as usize;
        let n = u16::from_le_bytes([d[0x3c], d[0x3d]]) as usize;
        let strndx = u16::from_le_bytes([d[0x3e], d[0x3f]]) as usize;
        let str_off = u64::from_le_bytes(
            d[shoff + strndx * 64 + 0x18..shoff + strndx * 64 + 0x20]
                .try_into()
                .unwrap(),
        ) as usize;
        (0..n)
            .map(|i| shoff + i * 64)
            .find(|&h| {
                let at = str_off + u32::from_le_bytes(d[h..h + 4].try_into().unwrap()) as usize;
                d[at..].starts_with(name.as_bytes()) && d[at + name.len()] == 0
            })
            .unwrap()
    };
    let mut cases = cases;
    for (what, patch, want) in [
        (
            "GNU hash bloom shift 40",
            0usize,
            "GNU hash header describes tables larger",
        ),
        ("alignment 3", 1, "asks for 0x3-byte alignment"),
        ("alignment 2^40", 2, "asks for 0x10000000000-byte alignment"),
    ] {
        let mut d = data.clone();
        let h = sh(&d, if patch == 0 { ".gnu.hash" } else { ".dynstr" });
        if patch == 0 {
            let off = u64::from_le_bytes(d[h + 0x18..h + 0x20].try_into().unwrap()) as usize;
            d[off + 12..off + 16].copy_from_slice(&40u32.to_le_bytes());
            d[off + 8..off + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        } else {
            let a: u64 = if patch == 1 { 3 } else { 1 << 40 };
            d[h + 0x30..h + 0x38].copy_from_slice(&a.to_le_bytes());
        }
        cases.push((what, d, want));
    }
    // An alignment of 0 (none) is read as 1 and patches.
    let mut d = data.clone();
    let h = sh(&d, ".dynstr");
    d[h + 0x30..h + 0x38].copy_from_slice(&0u64.to_le_bytes());
    apply(&d, &grow).expect("alignment 0 patches");
    for (what, d, want) in cases {
        for edits in [&grow, &shrink] {
            match apply(&d, edits) {
                Err(PatchError::Layout(m)) => assert!(m.contains(want), "{what}: {m}"),
                Err(e) => panic!("{what}: another error: {e}"),
                Ok(p) => panic!("{what}: patched into {} bytes", p.data.len()),
            }
        }
    }
    // The untouched file still patches.
    assert!(apply(&data, &grow).is_ok());
}

#[test]
fn mutated_files_never_patch_into_more_than_the_edit_needs() {
    // Random changes to the headers (ELF, program and section headers): every result is an error
    // or a file no larger than the input, the new strings and one new segment's padding.
    let t = Tree::new(&[]);
    let data = std::fs::read(t.main()).unwrap();
    let edits = rpath(
        &["$ORIGIN/lib", "$ORIGIN/../../nvidia/cu13/lib"],
        SearchPathTag::Rpath,
    );
    let phoff = u64::from_le_bytes(data[0x20..0x28].try_into().unwrap()) as usize;
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    let regions = [(0, 64), (phoff, phoff + 13 * 56), (shoff, data.len())];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..1500 {
        let mut d = data.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = regions[(x % 3) as usize];
            let b = b.min(d.len());
            let i = a + (x >> 8) as usize % (b - a).max(1);
            d[i] = (x >> 40) as u8;
        }
        match apply(&d, &edits) {
            Ok(p) => {
                ok += 1;
                assert!(
                    p.data.len() <= 2 * d.len() + 4 * (2 << 20) + (64 << 10) + 128,
                    "{} bytes from {}",
                    p.data.len(),
                    d.len()
                );
                ElfFile::parse(&p.data).expect("the result reads again");
            }
            Err(_) => refused += 1,
        }
    }
    assert!(ok > 0 && refused > 0, "ok {ok}, refused {refused}");
}

#[test]
fn sections_of_types_the_rewriter_does_not_know_are_carried_byte_for_byte() {
    // LLVM's .deplibs (SHT_LLVM_DEPENDENT_LIBRARIES, 0x6fff4c04), assembled by gas.
    let t = Tree::new(&[]);
    let dir = t.dir.path();
    let so = gcc(
        dir,
        "deplibs.so",
        "__asm__(\".section .deplibs,\\\"\\\",@0x6fff4c04\\n.asciz \\\"libm.so\\\"\\n.previous\\n\");\nint f(void) { return 1; }\n",
        &["-shared", "-fPIC"],
    );
    let data = std::fs::read(&so).unwrap();
    let p = apply(
        &data,
        &rpath(
            &["$ORIGIN/a/long/enough/path/to/move/the/strings"],
            SearchPathTag::Runpath,
        ),
    )
    .expect("a file with .deplibs patches");
    assert!(!p.in_place);
    let out = dir.join("deplibs-patched.so");
    std::fs::write(&out, &p.data).unwrap();
    let o = Command::new("readelf")
        .arg("-SW")
        .arg(&out)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&o.stdout);
    let line = sections
        .lines()
        .find(|l| l.contains(".deplibs"))
        .unwrap_or_else(|| panic!("{sections}"));
    assert!(line.contains("LOOS+0xfff4c04"), "{line}");
    let o = Command::new("readelf")
        .args(["-p", ".deplibs"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("libm.so"));
    dlopen(&out).expect("loads");
}

#[test]
fn real_files_pass_the_layout_checks() {
    // The checks that refuse hostile headers must never refuse a real file: every shared library
    // of this machine's /usr/lib and of the CUDA test wheels (CUDIST_TK_CU13) is patched with a
    // layout change. The rewriter may still decline a layout it cannot rewrite (object-rewrite's
    // "Unaligned sh_offset" on a few large libraries), but never a Layout or TooLarge refusal.
    let mut dirs = vec![
        PathBuf::from("/usr/lib/x86_64-linux-gnu"),
        PathBuf::from("/usr/lib64"),
    ];
    if let Some(v) = std::env::var_os("CUDIST_TK_CU13") {
        dirs.push(PathBuf::from(v));
    }
    let mut files = Vec::new();
    let mut stack = dirs;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && p.to_string_lossy().contains(".so") {
                files.push(p);
            }
        }
    }
    files.sort();
    let edits = rpath(
        &[
            "$ORIGIN/../../nvidia/cu13/lib",
            "$ORIGIN/a/path/long/enough/to/move/the/strings",
        ],
        SearchPathTag::Rpath,
    );
    let mut patched = 0;
    for f in files.iter().take(600) {
        let Ok(data) = std::fs::read(f) else { continue };
        if !data.starts_with(b"\x7fELF") {
            continue;
        }
        match apply(&data, &edits) {
            Ok(_) => patched += 1,
            Err(e @ (PatchError::Layout(_) | PatchError::TooLarge { .. })) => {
                panic!("{}: {e}", f.display())
            }
            Err(_) => {}
        }
    }
    assert!(patched > 20, "only {patched} real libraries patched");
}

#[test]
fn inputs_the_fuzzer_found() {
    // fuzz/run.sh elf_patch, 2026-11-23: a section whose alignment is near 2^64 overflowed the
    // size bound's sum before the alignment check refused it. 2026-11-27: a zero-size
    // PT_GNU_STACK whose offset points 2^61 bytes out, accepted for the appending writer (LLD
    // puts a `.tbss`-only PT_TLS past the end), drove object's builder to 24 GB when the
    // rewriter was asked instead: such a file never reaches the rewriter. Every such input is
    // refused or patched, never a panic, and a patch stays within twice the input plus the
    // edit's room.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("fuzz-elf_patch-") {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        for edits in [
            rpath(
                &[
                    "$ORIGIN/../../nvidia/cu13/lib",
                    "$ORIGIN/../../nvidia/cublas/lib",
                ],
                SearchPathTag::Rpath,
            ),
            rpath(&[], SearchPathTag::Runpath),
        ] {
            if let Ok(p) = apply(&data, &edits) {
                assert!(
                    p.data.len() <= 2 * data.len() + 4 * (2 << 20) + (64 << 10) + 256,
                    "{name}"
                );
            }
        }
        n += 1;
    }
    assert!(n >= 1, "no fuzz inputs in {}", dir.display());
}

/// eu-elflint's messages about a file (its name left out), when eu-elflint is here.
fn elflint_messages(p: &std::path::Path) -> Option<std::collections::BTreeSet<String>> {
    let lint = tool("CUDIST_ELFLINT", "eu-elflint")?;
    let o = Command::new(lint).arg("--gnu-ld").arg(p).output().unwrap();
    let name = p.display().to_string();
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.replace(&name, "FILE"))
            .filter(|l| !l.starts_with("No errors"))
            .collect(),
    )
}

/// Calls `call()` of the library through Python's ctypes: the value, or the loader's message.
fn call(p: &std::path::Path) -> Result<String, String> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).call())",
        ])
        .arg(p)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// The byte ranges of a 64-bit little-endian file that the appending writer may change: the ELF
/// header, the dynamic section (through PT_DYNAMIC), the section header table, the version
/// requirements and the symbol table.
fn editable(data: &[u8]) -> Vec<std::ops::Range<usize>> {
    let at = phdr_of(data, 2);
    let u = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap()) as usize;
    let (dyn_off, dyn_size) = (u(at + 8), u(at + 0x20));
    let shoff = u(0x28);
    let shnum = u16::from_le_bytes([data[0x3c], data[0x3d]]) as usize;
    let mut r = vec![
        0..64,
        dyn_off..dyn_off + dyn_size,
        shoff..shoff + 64 * shnum,
    ];
    // The version requirements' library names (`vn_file`), renamed with NEEDED; the symbol
    // table's `_DYNAMIC` and section symbols, which follow the tables that moved.
    for i in 0..shnum {
        let h = shoff + 64 * i;
        if matches!(
            u32::from_le_bytes(data[h + 4..h + 8].try_into().unwrap()),
            0x6fff_fffe | 2
        ) {
            r.push(u(h + 0x18)..u(h + 0x18) + u(h + 0x20));
        }
    }
    r
}

#[test]
fn libraries_of_any_linker_are_patched_by_appending_and_keep_every_other_byte() {
    // What patchelf does for a library: the grown tables go to a new segment at the end, and
    // nothing else moves. Layouts the rewriter refused or grew: LLD's (its program headers are
    // followed at once by sections it cannot move; no spare dynamic entries), a file whose
    // loadable segments have mixed alignments (an older patchelf's work, mxnet's OpenBLAS).
    let lld = std::env::var_os("CUDIST_LLD")
        .map(std::path::PathBuf::from)
        .or_else(|| tool("CUDIST_LLD", "ld.lld"));
    let mut linkers: Vec<(&str, Vec<String>)> = vec![("bfd", vec!["-fuse-ld=bfd".into()])];
    if let Some(lld) = &lld {
        linkers.push((
            "lld",
            vec![
                "-fuse-ld=lld".into(),
                format!("-B{}", lld.parent().unwrap().display()),
            ],
        ));
    }
    for (linker, flags) in &linkers {
        let refs: Vec<&str> = flags.iter().map(String::as_str).collect();
        let t = Tree::new(&refs);
        let lib = t.dir.path().join("lib");
        // The library under a new name, as repair renames a grafted copy.
        std::fs::copy(lib.join("libdep.so.1"), lib.join("libdep-1a2b3c4d.so.1")).unwrap();
        let input = std::fs::read(t.main()).unwrap();
        let mut mixed = input.clone();
        // The first PT_LOAD (address 0, offset 0) aligned to 2 MiB, the others to 4 KiB.
        let first_load = phdr_of(&mixed, 1);
        mixed[first_load + 0x30..first_load + 0x38].copy_from_slice(&(2u64 << 20).to_le_bytes());
        for (what, data) in [("as linked", &input), ("mixed alignments", &mixed)] {
            let what = format!("{linker}, {what}");
            let src = t.dir.path().join("in.so");
            std::fs::write(&src, data).unwrap();
            assert!(call(&src).unwrap_err().contains("libdep.so.1"), "{what}");
            let path = "$ORIGIN/lib:$ORIGIN/../../nvidia/cu13/lib:$ORIGIN/../../nvidia/cudnn/lib";
            let edits = Edits {
                search_path: Some((
                    path.split(':').map(str::to_string).collect(),
                    SearchPathTag::Rpath,
                )),
                replace_needed: vec![("libdep.so.1".into(), "libdep-1a2b3c4d.so.1".into())],
                // The module has no SONAME: one entry more than the dynamic section holds
                // where the linker left no spare ones (LLD), so it moves too.
                soname: Some("libmain.so.1".into()),
            };
            let p = apply(data, &edits).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(!p.in_place, "{what}");
            // Larger by the new strings, the program headers and at most the dynamic section.
            let grown = p.data.len() - data.len();
            assert!(grown < 2048, "{what}: grew by {grown} bytes");
            let changes = editable(data);
            if let Some(k) = (0..data.len())
                .find(|&k| data[k] != p.data[k] && !changes.iter().any(|r| r.contains(&k)))
            {
                panic!("{what}: byte {k:#x} changed outside the headers and dynamic section");
            }
            let out = t.dir.path().join("out.so");
            std::fs::write(&out, &p.data).unwrap();
            assert_eq!(call(&out).as_deref(), Ok("42"), "{what}");
            let d = readelf_dynamic(&out);
            for want in [
                "Shared library: [libdep-1a2b3c4d.so.1]".to_string(),
                format!("Library rpath: [{path}]"),
                "Library soname: [libmain.so.1]".to_string(),
            ] {
                assert!(d.contains(&want), "{what}: {d:?}");
            }
            let f = ElfFile::parse(&p.data).unwrap();
            assert!(
                f.verneed_files
                    .contains(&"libdep-1a2b3c4d.so.1".to_string())
                    && !f.verneed_files.contains(&"libdep.so.1".to_string()),
                "{what}: {:?}",
                f.verneed_files
            );
            // eu-elflint says nothing of the output it did not say of the input.
            if let (Some(before), Some(after)) = (elflint_messages(&src), elflint_messages(&out)) {
                let new: Vec<&String> = after.difference(&before).collect();
                assert!(new.is_empty(), "{what}: eu-elflint, new: {new:#?}");
            }
            // And again over the result: a second edit appends once more and still loads.
            let again = apply(
                &p.data,
                &rpath(&["$ORIGIN/lib", "$ORIGIN/x/y/z/w"], SearchPathTag::Runpath),
            )
            .unwrap_or_else(|e| panic!("{what}, again: {e}"));
            std::fs::write(&out, &again.data).unwrap();
            assert_eq!(call(&out).as_deref(), Ok("42"), "{what}, again");
        }
    }
}

#[test]
fn programs_are_patched_by_appending_and_run() {
    // A program's program headers are found by the kernel: the new segment keeps the first
    // segment's distance between address and offset, so that kernels before 5.18 (which assume
    // it) and after agree. PIE and fixed-address programs, GNU ld and LLD.
    let lld = std::env::var_os("CUDIST_LLD")
        .map(std::path::PathBuf::from)
        .or_else(|| tool("CUDIST_LLD", "ld.lld"));
    let t = Tree::new(&[]);
    let lib = t.dir.path().join("lib");
    let mut builds: Vec<(String, Vec<String>)> = vec![
        ("bfd pie".into(), vec!["-fuse-ld=bfd".into(), "-pie".into()]),
        (
            "bfd fixed".into(),
            vec!["-fuse-ld=bfd".into(), "-no-pie".into()],
        ),
    ];
    if let Some(lld) = &lld {
        let b = format!("-B{}", lld.parent().unwrap().display());
        builds.push((
            "lld pie".into(),
            vec!["-fuse-ld=lld".into(), b.clone(), "-pie".into()],
        ));
        builds.push((
            "lld fixed".into(),
            vec!["-fuse-ld=lld".into(), b, "-no-pie".into()],
        ));
    }
    for (what, flags) in builds {
        let mut args: Vec<String> = flags;
        args.extend([
            "-Wl,--no-as-needed".to_string(),
            format!("-L{}", lib.display()),
            "-ldep".into(),
        ]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let exe = cc(
            t.dir.path(),
            &format!("prog-{}", what.replace(' ', "-")),
            "int dep(void); int main(void) { return dep() == 42 ? 0 : 1; }\n",
            &refs,
        );
        let run = |p: &std::path::Path| {
            Command::new(p)
                .env_remove("LD_LIBRARY_PATH")
                .output()
                .unwrap()
        };
        assert!(!run(&exe).status.success(), "{what}: runs without its path");
        let data = std::fs::read(&exe).unwrap();
        let p = apply(
            &data,
            &rpath(
                &[
                    "$ORIGIN/lib",
                    "$ORIGIN/../../nvidia/cu13/lib",
                    "$ORIGIN/../../nvidia/cudnn/lib",
                ],
                SearchPathTag::Runpath,
            ),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!p.in_place, "{what}");
        let grown = p.data.len() - data.len();
        assert!(grown < 5 * 4096 + 65536, "{what}: grew by {grown} bytes");
        let changes = editable(&data);
        if let Some(k) = (0..data.len())
            .find(|&k| data[k] != p.data[k] && !changes.iter().any(|r| r.contains(&k)))
        {
            panic!("{what}: byte {k:#x} changed outside the headers and dynamic section");
        }
        let out = t
            .dir
            .path()
            .join(format!("{}-patched", what.replace(' ', "-")));
        std::fs::write(&out, &p.data).unwrap();
        std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let o = run(&out);
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // eu-elflint says nothing of the output it did not say of the input.
        if let (Some(before), Some(after)) = (elflint_messages(&exe), elflint_messages(&out)) {
            let new: Vec<&String> = after.difference(&before).collect();
            assert!(new.is_empty(), "{what}: eu-elflint, new: {new:#?}");
        }
    }
}

#[test]
fn a_segment_without_file_bytes_may_point_past_the_end() {
    // LLD gives a PT_TLS that holds only `.tbss` the offset of its aligned address, which can
    // lie past the end of the file (cuda-quantum's libnvqir-dynamics.so): nothing is read there.
    let t = Tree::new(&[]);
    let lib = t.dir.path().join("lib");
    let tls = gcc(
        t.dir.path(),
        "tls.so",
        "static __thread int counter; int dep(void); int call(void) { counter++; return dep(); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", lib.display()),
            "-ldep",
        ],
    );
    let mut data = std::fs::read(&tls).unwrap();
    const PT_TLS: u32 = 7;
    let at = phdr_of(&data, PT_TLS);
    assert_eq!(
        u64::from_le_bytes(data[at + 0x20..at + 0x28].try_into().unwrap()),
        0,
        "only .tbss"
    );
    let past = data.len() as u64 + 0x1000;
    data[at + 8..at + 16].copy_from_slice(&past.to_le_bytes());
    let p = apply(&data, &rpath(&["$ORIGIN/lib"], SearchPathTag::Rpath)).unwrap();
    let out = t.dir.path().join("tls-patched.so");
    std::fs::write(&out, &p.data).unwrap();
    assert_eq!(call(&out).as_deref(), Ok("42"));
}
