//! When each dynamic symbol of a CUDA library first shipped in its wheel (data/symbol-floors.json,
//! written by data/gen-symbol-floors.py from every release on PyPI). A file that imports a symbol
//! newer than the release installed fails to load ("undefined symbol:
//! __nvJitLinkGetErrorLog_13_1" with nvJitLink 13.0; NVIDIA/cuvs#1862): the symbols a file imports
//! give the lower bound of the release it needs.
//!
//! JSON rather than TOML: the file is machine-written.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

#[derive(Deserialize)]
struct Floors {
    libraries: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    library: String,
    major: u32,
    pip: String,
    since: std::collections::BTreeMap<String, String>,
}

/// The first release of a library's wheel that exports one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// Catalog library id (`nvjitlink`).
    pub library: &'static str,
    /// The CUDA major of the wheel line.
    pub major: u32,
    /// The wheel (`nvidia-nvjitlink`).
    pub pip: &'static str,
    /// Its first release that exports the symbol (`13.1.80`).
    pub since: &'static str,
}

fn index() -> &'static HashMap<&'static str, Vec<Floor>> {
    // The rows live as long as the program, so the index can borrow from them.
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    static INDEX: OnceLock<HashMap<&'static str, Vec<Floor>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let rows = ROWS.get_or_init(|| {
            serde_json::from_str::<Floors>(include_str!("../data/symbol-floors.json"))
                .expect("data/symbol-floors.json is valid (checked by the catalog's tests)")
                .libraries
        });
        let mut out: HashMap<&'static str, Vec<Floor>> = HashMap::new();
        for r in rows {
            for (symbol, since) in &r.since {
                out.entry(symbol.as_str()).or_default().push(Floor {
                    library: &r.library,
                    major: r.major,
                    pip: &r.pip,
                    since,
                });
            }
        }
        out
    })
}

/// The releases that first exported `symbol`, one per library and CUDA major that has it; empty
/// for a symbol every release exports (or one the data does not cover).
pub fn floors_of(symbol: &str) -> &'static [Floor] {
    index().get(symbol).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvjitlink_symbols_carry_the_release_that_added_them() {
        // Every release exports the suffixed entry points of its own and earlier minors.
        let f = floors_of("__nvJitLinkGetErrorLog_13_1");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].library, f[0].major), ("nvjitlink", 13));
        assert!(f[0].since.starts_with("13.1."), "{f:?}");
        let f = floors_of("__nvJitLinkCreate_12_4");
        assert!(f[0].since.starts_with("12.4."), "{f:?}");
        // The first release's symbols set no floor.
        assert!(floors_of("__nvJitLinkCreate_13_0").is_empty());
        assert!(floors_of("cudaMalloc").is_empty());
    }
}
