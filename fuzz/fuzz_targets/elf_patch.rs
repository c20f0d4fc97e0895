//! Fuzz target: the ELF rewriter (`cudist relink`, `cudist repair`).
//!
//! Each input is patched twice: with a search path longer than any string slack (the layout
//! change, through object-rewrite) and with an empty one (in place). A result must read again as
//! ELF, hold the edit, and be no larger than the input plus what the edit can need; a panic,
//! abort, timeout or out-of-memory is a bug.
#![no_main]

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
});
