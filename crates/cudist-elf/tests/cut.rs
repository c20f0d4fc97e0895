//! `cut_section_tail` on a library g++ builds: a loaded `.nv_fatbin`-named section whose tail is
//! zero, a wrapper in `.nvFatBinSegment` pointing at it through a relocation, C++ exceptions (so
//! `.eh_frame` after the hole and the program headers the unwinder reads must be right) and
//! writable data. The cut file is checked by tools cudist does not share code with: the real
//! loader (Python's ctypes, dlopen), objcopy (every section's bytes), readelf and eu-elflint.

use std::path::{Path, PathBuf};
use std::process::Command;

use cudist_elf::cut::{cut_section_tail, Cut, GRANULE};

const KEPT: usize = 4096 + 40;
const ZERO_TAIL: usize = 640 << 10;

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn build(dir: &Path) -> PathBuf {
    let mut blob: Vec<u8> = (0..KEPT).map(|i| (i % 251) as u8 + 1).collect();
    blob.resize(KEPT + ZERO_TAIL, 0);
    let bin = dir.join("blob.bin");
    std::fs::write(&bin, &blob).unwrap();
    let src = dir.join("cut.cpp");
    std::fs::write(
        &src,
        format!(
            r#"
__asm__(".section .nv_fatbin,\"a\",@progbits\n.balign 8\n.globl blob\nblob:\n.incbin \"{}\"\n.previous\n");
extern "C" const unsigned char blob[];
struct Wrapper {{ int magic; int version; const unsigned char *data; void *rest; }};
__attribute__((section(".nvFatBinSegment"), used)) Wrapper wrapper = {{0x466243b1, 1, blob, 0}};
int counter = 7;
extern "C" unsigned long sum_kept(unsigned long n) {{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) s += wrapper.data[i];
    return s;
}}
extern "C" int thrower(int x) {{
    try {{ if (x > 0) throw x; return -1; }} catch (int v) {{ return v + counter++; }}
}}
"#,
            bin.display()
        ),
    )
    .unwrap();
    let lib = dir.join("libcut.so");
    run(Command::new("g++")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src));
    lib
}

/// What the library answers when the real loader maps it: the sum of the kept bytes, and two
/// calls that throw and catch (each bumps `counter`).
fn answers(lib: &Path) -> String {
    run(Command::new("python3").arg("-c").arg(
        "import ctypes, sys\n\
         l = ctypes.CDLL(sys.argv[1])\n\
         l.sum_kept.restype = ctypes.c_ulong\n\
         print(l.sum_kept(ctypes.c_ulong(int(sys.argv[2]))), l.thrower(5), l.thrower(5), l.thrower(0))",
    )
    .arg(lib)
    .arg(KEPT.to_string()))
}

fn sections(lib: &Path) -> Vec<String> {
    run(Command::new("readelf").args(["-SW"]).arg(lib))
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('[')?.split_once(']')?.1.trim_start();
            let name = rest.split_whitespace().next()?;
            (!name.is_empty() && name != "NULL" && !rest.starts_with("NULL")).then(|| name.into())
        })
        .collect()
}

fn section_bytes(lib: &Path, name: &str, dir: &Path) -> Vec<u8> {
    let out = dir.join(format!(
        "{}{}",
        lib.file_name().unwrap().to_string_lossy(),
        name
    ));
    run(Command::new("objcopy")
        .args(["-O", "binary", "--only-section", name])
        .arg(lib)
        .arg(&out));
    std::fs::read(out).unwrap_or_default()
}

#[test]
fn the_cut_library_loads_unwinds_and_holds_every_section() {
    let work = tempfile::tempdir().unwrap();
    let lib = build(work.path());
    let data = std::fs::read(&lib).unwrap();
    let Cut::Done { data: out, bytes } =
        cut_section_tail(&data, ".nv_fatbin", KEPT as u64).expect("the cut works on a g++ layout")
    else {
        panic!("kept the layout of a g++ library");
    };
    // Whole granules, and nearly the whole tail.
    assert_eq!(bytes % GRANULE, 0);
    assert!(bytes >= (ZERO_TAIL as u64) - 3 * GRANULE, "{bytes}");
    assert_eq!(out.len() as u64, data.len() as u64 - bytes);
    let cut = work.path().join("libcut-cut.so");
    std::fs::write(&cut, &out).unwrap();

    // The real loader maps it; the kept bytes, the relocated pointer to them, C++ unwinding
    // through .eh_frame and the writable data all work as before.
    let want = answers(&lib);
    assert_eq!(answers(&cut), want);
    let kept_sum: u64 = (0..KEPT).map(|i| (i % 251) as u64 + 1).sum();
    assert_eq!(want.trim(), format!("{kept_sum} 12 13 -1"));

    // readelf reads it without a complaint; eu-elflint finds nothing it did not find before.
    let readelf = Command::new("readelf")
        .args(["-lSdrW"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(
        readelf.status.success() && readelf.stderr.is_empty(),
        "{readelf:?}"
    );
    let elflint = std::env::var_os("CUDIST_ELFLINT").unwrap_or_else(|| "eu-elflint".into());
    match Command::new(&elflint)
        .args(["--gnu-ld", "-q"])
        .arg(&lib)
        .output()
    {
        Ok(before) => {
            let after = Command::new(&elflint)
                .args(["--gnu-ld", "-q"])
                .arg(&cut)
                .output()
                .unwrap();
            let strip = |o: &[u8], p: &Path| {
                String::from_utf8_lossy(o).replace(&p.display().to_string(), "FILE")
            };
            assert_eq!(strip(&after.stdout, &cut), strip(&before.stdout, &lib));
        }
        Err(_) => assert!(
            std::env::var_os("CI").is_none(),
            "CI installs eu-elflint (elfutils)"
        ),
    }

    // Every section holds what it held; .nv_fatbin its kept bytes.
    let names = sections(&lib);
    assert_eq!(sections(&cut), names);
    assert!(names.iter().any(|n| n == ".eh_frame"), "{names:?}");
    for name in &names {
        let (a, b) = (
            section_bytes(&lib, name, work.path()),
            section_bytes(&cut, name, work.path()),
        );
        if name == ".nv_fatbin" {
            assert_eq!(b, a[..KEPT]);
        } else {
            assert_eq!(a, b, "{name}");
        }
    }
}

#[test]
fn a_tail_too_small_or_not_zero_is_left() {
    let work = tempfile::tempdir().unwrap();
    let lib = build(work.path());
    let data = std::fs::read(&lib).unwrap();
    // Keeping nearly everything leaves less than a granule to take out.
    let most = (KEPT + ZERO_TAIL) as u64 - GRANULE / 2;
    assert!(matches!(
        cut_section_tail(&data, ".nv_fatbin", most),
        Ok(Cut::Kept(why)) if why.contains("KiB")
    ));
    // Bytes after `keep` that are not zero: refused, never cut.
    assert!(cut_section_tail(&data, ".nv_fatbin", 16).is_err());
    // A section that is not there.
    assert!(matches!(
        cut_section_tail(&data, ".nope", 0),
        Ok(Cut::Kept(_))
    ));
}

const PIECE: usize = 4136;
const GAP: usize = 320 << 10;

/// Two pieces (as two fatbin containers), each followed by zeros, each pointed at by its own
/// wrapper through a relocation, the second also by a local symbol; with `stray`, a third pointer
/// into the middle of the first.
fn build_two(dir: &Path, stray: bool) -> PathBuf {
    let piece =
        |seed: usize| -> Vec<u8> { (0..PIECE).map(|i| ((i + seed) % 251) as u8 + 1).collect() };
    let mut blob = piece(0);
    blob.resize(PIECE + GAP, 0);
    blob.extend(piece(7));
    blob.resize(2 * (PIECE + GAP), 0);
    let bin = dir.join("two.bin");
    std::fs::write(&bin, &blob).unwrap();
    let src = dir.join("two.cpp");
    std::fs::write(
        &src,
        format!(
            r#"
__asm__(".section .nv_fatbin,\"a\",@progbits\n.balign 8\n.globl blob\n.hidden blob\nblob:\n.incbin \"{bin}\",0,{second}\npieceb:\n.incbin \"{bin}\",{second}\n.previous\n");
extern "C" __attribute__((visibility("hidden"))) const unsigned char blob[];
struct Wrapper {{ int magic; int version; const unsigned char *data; void *rest; }};
__attribute__((section(".nvFatBinSegment"), used)) Wrapper wrappers[2] = {{
    {{0x466243b1, 1, blob, 0}}, {{0x466243b1, 1, blob + {second}, 0}}}};
{stray}
extern "C" unsigned long sum_piece(int k) {{
    unsigned long s = 0;
    for (unsigned long i = 0; i < {PIECE}; i++) s += wrappers[k].data[i];
    return s;
}}
"#,
            bin = bin.display(),
            second = PIECE + GAP,
            stray = if stray {
                "__attribute__((used)) const unsigned char *stray = blob + 10;"
            } else {
                ""
            },
        ),
    )
    .unwrap();
    let lib = dir.join(if stray { "libstray.so" } else { "libtwo.so" });
    run(Command::new("g++")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src));
    lib
}

fn sums(lib: &Path) -> String {
    run(Command::new("python3")
        .arg("-c")
        .arg(
            "import ctypes, sys\n\
         l = ctypes.CDLL(sys.argv[1])\n\
         l.sum_piece.restype = ctypes.c_ulong\n\
         print(l.sum_piece(0), l.sum_piece(1))",
        )
        .arg(lib))
}

#[test]
fn packed_pieces_keep_their_pointers_and_the_file_shrinks() {
    let work = tempfile::tempdir().unwrap();
    let lib = build_two(work.path(), false);
    let mut data = std::fs::read(&lib).unwrap();
    let second = (PIECE + GAP) as u64;
    let pieces = [(0, PIECE as u64), (second, PIECE as u64)];
    let end = cudist_elf::cut::pack_section(&mut data, ".nv_fatbin", &pieces)
        .unwrap()
        .expect("both pieces are pointed at by relocations only");
    let packed_second = (PIECE as u64).next_multiple_of(8);
    assert_eq!(end, packed_second + PIECE as u64);
    let Cut::Done { data: out, bytes } = cut_section_tail(&data, ".nv_fatbin", end).unwrap() else {
        panic!("not cut");
    };
    assert!(bytes >= 2 * GAP as u64 - 3 * GRANULE, "{bytes}");
    let cut = work.path().join("libtwo-cut.so");
    std::fs::write(&cut, &out).unwrap();
    // The real loader applies the moved relocations: each wrapper reaches its own piece.
    assert_eq!(sums(&cut), sums(&lib));
    // The second wrapper's relocation and the local symbol now name the packed address.
    let relocs = run(Command::new("readelf").args(["-rW"]).arg(&cut));
    let syms = run(Command::new("readelf").args(["-sW"]).arg(&cut));
    let sym = |text: &str, name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    let blob = sym(&syms, "blob");
    assert_eq!(sym(&syms, "pieceb"), blob + packed_second);
    assert!(
        relocs.contains(&format!("{:x}", blob + packed_second)),
        "{relocs}"
    );
    // objcopy: the section holds the two pieces back to back.
    let both = section_bytes(&cut, ".nv_fatbin", work.path());
    let orig = section_bytes(&lib, ".nv_fatbin", work.path());
    assert_eq!(both[..PIECE], orig[..PIECE]);
    assert_eq!(
        both[packed_second as usize..],
        orig[second as usize..second as usize + PIECE]
    );
}

#[test]
fn a_pointer_into_the_middle_of_a_piece_stops_the_packing() {
    let work = tempfile::tempdir().unwrap();
    let lib = build_two(work.path(), true);
    let before = std::fs::read(&lib).unwrap();
    let mut data = before.clone();
    let pieces = [(0, PIECE as u64), ((PIECE + GAP) as u64, PIECE as u64)];
    let why = cudist_elf::cut::pack_section(&mut data, ".nv_fatbin", &pieces)
        .unwrap()
        .expect_err("a pointer to blob + 10 is not to a piece");
    assert!(why.contains("not to a container"), "{why}");
    assert!(data == before, "nothing written");
}

/// Inputs the fuzzer found (fuzz/run.sh elf_patch, 2026-11-24: a section header offset near 2^64
/// overflowed the table's end): refused or cut, never a panic.
#[test]
fn inputs_the_fuzzer_found() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with("fuzz-cut-") {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        for name in [".nv_fatbin", ".rodata", ".text"] {
            for keep in [0u64, 16, 4096] {
                if let Ok(Cut::Done { data: out, bytes }) = cut_section_tail(&data, name, keep) {
                    assert_eq!(out.len() as u64 + bytes, data.len() as u64);
                }
            }
            let mut copy = data.clone();
            let _ = cudist_elf::cut::pack_section(&mut copy, name, &[(0, 16), (64, 16)]);
        }
        n += 1;
    }
    assert!(n >= 1, "no fuzz inputs in {}", dir.display());
}
