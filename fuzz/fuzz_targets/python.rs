//! Fuzz target: a package's Python, read for the libraries it loads.
//!
//! The bytes are split at `\0` into up to four files of one package (`pkg/__init__.py`,
//! `pkg/m1.py`, …) and read by `cudist_analysis::loads::scan`: ruff's parser, the bound on how deep
//! a parse may go, what runs at import, and the loads found. It must never panic, overflow its
//! stack, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let sources: Vec<cudist_analysis::loads::Source> = data
        .split(|b| *b == 0)
        .take(4)
        .enumerate()
        .map(|(i, bytes)| cudist_analysis::loads::Source {
            path: if i == 0 {
                "pkg/__init__.py".to_string()
            } else {
                format!("pkg/m{i}.py")
            },
            text: String::from_utf8_lossy(bytes).into_owned(),
        })
        .collect();
    // The catalog is read once: its parse is not under test.
    static CATALOG: std::sync::OnceLock<cudist_catalog::Catalog> = std::sync::OnceLock::new();
    let catalog = CATALOG.get_or_init(cudist_catalog::Catalog::builtin);
    let _ = cudist_analysis::loads::scan(&sources, catalog, Some(12));
});
