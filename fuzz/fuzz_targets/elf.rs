//! Fuzz target: whole ELF files (host libraries, executables, objects).
//!
//! Exercises the header/section/dynamic-section reader and the symbol-table scan used for the
//! static-linking check. Errors are expected on most inputs; panics are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cudist_elf::ElfFile::parse(data);
    let _ = cudist_elf::defined_symbols_among(data, &["cudaMalloc"]);
});
