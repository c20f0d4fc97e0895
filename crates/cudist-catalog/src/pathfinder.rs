//! cuda-pathfinder's own table of what `cuda.pathfinder.load_nvidia_dynamic_lib(name)` loads on
//! Linux (data/pathfinder-libs.json, written by data/gen-pathfinder-libs.py from the
//! `DescriptorSpec` entries of cuda-pathfinder's `descriptor_catalog.py` on PyPI): for each name,
//! the SONAMEs it tries, most preferred first, and the names it loads first. Its names are
//! cuda-pathfinder's (`nvJitLink`, `cublasLt`, `cufftMp`), not the catalog's ids.
//!
//! The same table is read from an installed cuda-pathfinder where there is one
//! ([`PathfinderTable::from_entries`], filled by the analysis from the installed file), since a
//! newer release knows names this copy does not.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// One name of cuda-pathfinder's table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PathfinderLib {
    /// The SONAMEs it tries, most preferred first (`libcublas.so.13`, `libcublas.so.12`).
    pub linux_sonames: Vec<String>,
    /// Names it loads first, and fails without (`cublas` → `cublasLt`).
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Names it tries to load first, and goes on without.
    #[serde(default)]
    pub optional_dependencies: Vec<String>,
    /// Directories below site-packages it looks in (`nvidia/cu13/lib`).
    #[serde(default)]
    pub site_packages_linux: Vec<String>,
}

/// cuda-pathfinder's table, and where it was read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PathfinderTable {
    /// Where the table comes from.
    pub source: String,
    /// The names, each with what it loads.
    pub libs: BTreeMap<String, PathfinderLib>,
}

impl PathfinderTable {
    /// The table shipped with cudist (data/pathfinder-libs.json).
    pub fn builtin() -> &'static PathfinderTable {
        static TABLE: OnceLock<PathfinderTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            serde_json::from_str(include_str!("../data/pathfinder-libs.json"))
                .expect("data/pathfinder-libs.json is valid (checked by the catalog's tests)")
        })
    }

    /// A table from entries read elsewhere (an installed cuda-pathfinder).
    pub fn from_entries(source: String, libs: BTreeMap<String, PathfinderLib>) -> PathfinderTable {
        PathfinderTable { source, libs }
    }

    /// The SONAMEs one call loads when it succeeds: those the name tries, and before them those of
    /// the names it depends on, transitively (`cublas` loads `cublasLt` first). Each SONAME once,
    /// in the order the table gives; empty for a name the table does not have.
    pub fn sonames(&self, name: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        let mut todo = vec![name];
        while let Some(n) = todo.pop() {
            if seen.contains(&n) || seen.len() > 64 {
                continue;
            }
            seen.push(n);
            let Some(lib) = self.libs.get(n) else {
                continue;
            };
            for s in &lib.linux_sonames {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
            todo.extend(lib.dependencies.iter().map(String::as_str));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_names_what_each_call_loads() {
        let t = PathfinderTable::builtin();
        assert!(t.source.contains("descriptor_catalog.py"), "{}", t.source);
        assert!(t.libs.len() >= 40, "{}", t.libs.len());
        // cuda-pathfinder's names are its own: `nvJitLink`, and the driver's `cuda`.
        assert_eq!(
            t.sonames("nvJitLink"),
            vec!["libnvJitLink.so.13", "libnvJitLink.so.12"]
        );
        assert_eq!(t.sonames("cuda"), vec!["libcuda.so.1"]);
        // cublas loads cublasLt first, and fails without it.
        let cublas = t.sonames("cublas");
        assert!(cublas.contains(&"libcublas.so.12".to_string()));
        assert!(
            cublas.contains(&"libcublasLt.so.13".to_string()),
            "{cublas:?}"
        );
        assert!(t.sonames("no-such-name").is_empty());
    }
}
