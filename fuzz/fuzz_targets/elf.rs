//! Fuzz target: whole ELF files (host libraries, executables, objects).
//!
//! Exercises the header/section/dynamic-section reader and the symbol-table scan used for the
//! static-linking check, and the front reader `cudist select` uses on wheel members read by range
//! requests (program headers, then the file up to its dynamic section read without a section
//! table). Errors are expected on most inputs; panics are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cudist_elf::ElfFile::parse(data);
    let _ = cudist_elf::defined_symbols_among(data, &["cudaMalloc"]);
    if let Ok(Some(front)) = cudist_elf::front(data) {
        let end = front.dynamic_end.unwrap_or(front.loaded_end).min(data.len() as u64);
        let mut prefix = data[..end as usize].to_vec();
        let _ = cudist_elf::parse_front(&mut prefix);
    }
});
