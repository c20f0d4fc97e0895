//! Fuzz target: the ELF rewriter (`cudist relink`, `cudist repair`).
//!
//! Each input is patched twice: with a search path longer than any string slack (the layout
//! change, through object-rewrite) and with an empty one (in place). A result must read again as
//! ELF, hold the edit, and be no larger than the input plus what the edit can need; a panic,
//! abort, timeout or out-of-memory is a bug. The layout edits of `cudist slim` (packing a
//! section's pieces, cutting its tail out of the file) run on each input too: a cut file is
//! smaller and reads again wherever the input did.
#![no_main]

use cudist_elf::cut::{cut_section_tail, pack_section, Cut};
use cudist_elf::patch::{apply, Edits, SearchPathTag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let long: Vec<String> = vec![
        "$ORIGIN/../../nvidia/cu13/lib".into(),
        "$ORIGIN/../../nvidia/cublas/lib".into(),
    ];
    for (paths, tag) in [
        (long.clone(), SearchPathTag::Rpath),
        (Vec::new(), SearchPathTag::Runpath),
    ] {
        let edits = Edits {
            search_path: Some((paths.clone(), tag)),
            ..Edits::default()
        };
        if let Ok(p) = apply(data, &edits) {
            // The bound the writer promises: the input, the segments it may move (at most the
            // input again), twice the new strings, four times the largest accepted alignment
            // (2 MiB), and 64 KiB of tables.
            assert!(p.data.len() <= 2 * data.len() + 4 * (2 << 20) + (64 << 10) + 256);
            let again = cudist_elf::ElfFile::parse(&p.data).expect("a patched file reads again");
            let got = match tag {
                SearchPathTag::Rpath => &again.rpath,
                SearchPathTag::Runpath => &again.runpath,
            };
            assert_eq!(got, &paths);
        }
    }
    let reads = cudist_elf::ElfFile::parse(data).is_ok();
    for name in [".nv_fatbin", ".rodata", ".text"] {
        for keep in [0u64, 16, 4096] {
            if let Ok(Cut::Done { data: out, bytes }) = cut_section_tail(data, name, keep) {
                assert_eq!(out.len() as u64 + bytes, data.len() as u64);
                if reads {
                    cudist_elf::ElfFile::parse(&out).expect("a cut file reads again");
                }
            }
        }
        let mut copy = data.to_vec();
        let _ = pack_section(&mut copy, name, &[(0, 16), (64, 16)]);
        assert_eq!(copy.len(), data.len());
    }
});
