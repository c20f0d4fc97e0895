//! Fuzz target: raw bytes of a fatbin section (`.nv_fatbin` / `__nv_relfatbin`).
//!
//! `fuzz_one` walks the bytes as both section kinds, decompresses every entry it finds and formats
//! the cuobjdump-style listing; it must never panic, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudist_fatbin::fuzz_one(data);
});
