//! What pip installs with a package: the `Requires-Dist` lines of each release's Linux x86_64
//! wheel, for every NVIDIA package the catalog names (data/pip-requires.json) and RAPIDS' C++
//! wheels (data/provider-wheels.json: librmm-cu12 requires rapids-logger), snapshots of PyPI
//! written by scripts/pip-index.py, dated and sourced in the files. cudist reads them to tell a
//! library declared through a declared package (onnxruntime-gpu asks for nvidia-cudnn-cu13, whose
//! every release requires nvidia-cublas) from one nobody declares.
//!
//! JSON rather than TOML: the file is machine-written and compared with PyPI by `--check`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

type Releases = BTreeMap<String, Vec<String>>;

#[derive(Deserialize)]
struct Snapshot {
    packages: BTreeMap<String, Releases>,
}

#[derive(Deserialize)]
struct Providers {
    packages: BTreeMap<String, Provider>,
}

#[derive(Deserialize)]
struct Provider {
    releases: BTreeMap<String, ProviderRelease>,
}

#[derive(Deserialize)]
struct ProviderRelease {
    requires_dist: Vec<String>,
}

fn snapshot() -> &'static BTreeMap<String, Releases> {
    static DATA: OnceLock<BTreeMap<String, Releases>> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut all: BTreeMap<String, Releases> =
            serde_json::from_str::<Snapshot>(include_str!("../data/pip-requires.json"))
                .expect("data/pip-requires.json is valid (checked by the catalog's tests)")
                .packages;
        let providers: Providers =
            serde_json::from_str(include_str!("../data/provider-wheels.json"))
                .expect("data/provider-wheels.json is valid (checked by the catalog's tests)");
        for (name, p) in providers.packages {
            all.entry(name).or_insert_with(|| {
                p.releases
                    .into_iter()
                    .map(|(v, r)| (v, r.requires_dist))
                    .collect()
            });
        }
        all
    })
}

/// The releases of the distribution `dist` (PEP 503-normalised name) recorded in the snapshot,
/// each with its wheel's `Requires-Dist` lines; `None` for a distribution the snapshot lacks.
pub fn requires(dist: &str) -> Option<&'static BTreeMap<String, Vec<String>>> {
    snapshot().get(dist)
}

#[cfg(test)]
mod tests {
    #[test]
    fn snapshot_reads_and_knows_cudnn() {
        let cudnn =
            super::requires("nvidia-cudnn-cu13").expect("nvidia-cudnn-cu13 in the snapshot");
        assert!(!cudnn.is_empty());
        // Every cuDNN 9 release for CUDA 13 requires cuBLAS (its libcudnn links libcublas).
        assert!(cudnn
            .values()
            .all(|reqs| reqs.iter().any(|r| r.starts_with("nvidia-cublas"))));
        // RAPIDS' C++ wheels come from the other snapshot.
        let rmm = super::requires("librmm-cu12").expect("librmm-cu12");
        assert!(rmm
            .values()
            .all(|reqs| reqs.iter().any(|r| r.starts_with("rapids-logger"))));
    }
}
