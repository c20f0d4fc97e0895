//! Fuzz target: conda packages (`.conda`: a zip of zstd tars; `.tar.bz2`), as `cudist inspect`
//! reads them: the metadata reader and the member stream, both bounded.
//!
//! The first byte picks the format; the rest is the package. A panic, abort, timeout or
//! out-of-memory is a bug; errors are the expected answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    cudist_fs::set_limits(cudist_fs::Limits {
        unpacked: 64 << 20,
        memory: 16 << 20,
    });
    let ext = if kind & 1 == 0 { "conda" } else { "tar.bz2" };
    let path = std::env::temp_dir().join(format!(
        "cudist-fuzz-{}-1.0-h0_0.{ext}",
        std::process::id()
    ));
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let _ = cudist_conda::read(&path);
    let _ = cudist_conda::scan(&path, cudist_conda::Parts::All, |m| {
        let mut head = [0u8; 4];
        let _ = std::io::Read::read(m.reader, &mut head);
        Ok(cudist_conda::Next::Continue)
    });
    let _ = std::fs::remove_file(&path);
});
