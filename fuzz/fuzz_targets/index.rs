//! Fuzz target: what an index or a server sends, as `cudist select --index` reads it.
//!
//! The first byte picks the reader:
//! - even: a project page through `parse_page` (PEP 691 JSON or PEP 503 HTML, chosen by the
//!   page's own first byte, as the client does from the `Content-Type`);
//! - odd: a wheel read by range requests whose answers are the input
//!   (`RemoteFile::scripted`): records of a `Content-Range` (a length byte, then the header's
//!   value; length 255: no header) and a body (a 3-byte little-endian length, then the bytes),
//!   taken in order by the opening request and each read that misses; the wheel is then opened
//!   and its members read as `inspect` reads them, under a small byte budget.
//!
//! A panic, abort, hang or out-of-memory is a bug; errors are the expected answer.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fn answers(mut data: &[u8]) -> Vec<(Option<String>, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((&n, rest)) = data.split_first() {
        let n = n as usize;
        let (header, rest) = if n == 255 {
            (None, rest)
        } else {
            let take = n.min(rest.len());
            (
                Some(String::from_utf8_lossy(&rest[..take]).into_owned()),
                &rest[take..],
            )
        };
        if rest.len() < 3 {
            break;
        }
        let len = (rest[0] as usize | (rest[1] as usize) << 8 | (rest[2] as usize) << 16)
            .min(rest.len() - 3);
        out.push((header, rest[3..3 + len].to_vec()));
        data = &rest[3 + len..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let _ = cudist_index::parse_page("https://fuzz.invalid/simple/demo/", rest);
        return;
    }
    cudist_fs::set_limits(cudist_fs::Limits {
        unpacked: 64 << 20,
        memory: 16 << 20,
    });
    let Ok(remote) = cudist_index::RemoteFile::scripted(
        "https://fuzz.invalid/files/demo-1.0-py3-none-any.whl",
        answers(rest),
    ) else {
        return;
    };
    let remote = remote.with_budget(4 << 20);
    let len = remote.len();
    let Ok(w) = cudist_wheel::Wheel::open_source(
        Path::new("demo-1.0-py3-none-any.whl"),
        Arc::new(remote),
        len,
    ) else {
        return;
    };
    let _ = w.metadata();
    for m in w.members().iter().take(64) {
        let _ = w.read_prefix(m.index, 64);
        let _ = w.stream_member(m.index, |_, _| true);
    }
});
