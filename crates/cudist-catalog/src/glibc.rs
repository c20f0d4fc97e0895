//! The first glibc release that defines each C-library symbol a wheel's oldest possible glibc
//! lacks (data/glibc-symbols.json, written by data/gen-glibc-symbols.py from glibc's own ABI
//! lists). A file normally says the glibc it needs in its version requirements (`GLIBC_2.38`);
//! one that imports a symbol without a version (linked against a C library whose version
//! definitions were dropped) says nothing there, and the loader still refuses it on an older
//! glibc ("undefined symbol: __isoc23_strtoll" on glibc 2.36). This table is how cudist tells.
//!
//! JSON rather than TOML: the file is machine-written.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    arches: BTreeMap<String, Arch>,
}

#[derive(Deserialize)]
struct Arch {
    since: HashMap<String, String>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("../data/glibc-symbols.json"))
            .expect("data/glibc-symbols.json is valid (checked by the catalog's tests)")
    })
}

/// The first glibc release (`2.38`) that defines `symbol` on `arch` (`x86_64`, `aarch64`), when
/// that is newer than the glibc of the architecture's first manylinux policy; `None` for an older
/// symbol, one glibc does not define, or an architecture the data does not cover.
pub fn glibc_since(arch: &str, symbol: &str) -> Option<&'static str> {
    table()
        .arches
        .get(arch)?
        .since
        .get(symbol)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c23_conversions_and_old_symbols() {
        // C23's strtol family was added in glibc 2.38 (its NEWS for 2.38).
        assert_eq!(glibc_since("x86_64", "__isoc23_strtoll"), Some("2.38"));
        assert_eq!(glibc_since("aarch64", "__isoc23_strtol"), Some("2.38"));
        assert_eq!(glibc_since("x86_64", "arc4random"), Some("2.36"));
        // In every glibc a wheel can be tagged for: no floor.
        assert_eq!(glibc_since("x86_64", "memcpy"), None);
        assert_eq!(glibc_since("x86_64", "strtol"), None);
        // Moved from libpthread into libc in 2.34, defined in libpthread since the start.
        assert_eq!(glibc_since("x86_64", "pthread_create"), None);
        // Not glibc's, and an architecture the data lacks.
        assert_eq!(glibc_since("x86_64", "cudaMalloc"), None);
        assert_eq!(glibc_since("ppc64le", "__isoc23_strtoll"), None);
    }
}
