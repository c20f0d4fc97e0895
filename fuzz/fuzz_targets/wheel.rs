//! Fuzz target: wheels (zip + RECORD + METADATA), as `cudist inspect` and `cudist repair` read
//! them.
//!
//! The bytes are written to a file (the wheel reader reads files with positional reads), opened,
//! checked as pip checks a wheel (one `.dist-info`, its files), and every member is read through
//! the bounded reader, with the unpacked limit lowered so that a case stays fast. A panic, abort,
//! timeout or out-of-memory is a bug; errors are the expected answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cudist_fs::set_limits(cudist_fs::Limits {
        unpacked: 64 << 20,
        memory: 16 << 20,
    });
    let path = std::env::temp_dir().join(format!("cudist-fuzz-wheel-{}.whl", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(w) = cudist_wheel::Wheel::open(&path) {
        let _ = w.metadata();
        if let Ok(di) = w.dist_info() {
            if let Ok(Some(rec)) = w.dist_info_file(&di, "RECORD") {
                let _ = cudist_wheel::record::parse(&rec);
            }
        }
        for m in w.members().iter().take(64) {
            let _ = w.read_prefix(m.index, 4);
            let _ = w.read_member_mapped(m.index);
        }
        let _ = cudist_wheel::write::verify_record(&w);
    }
    let _ = std::fs::remove_file(&path);
});
