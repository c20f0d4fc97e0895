//! The CUDA toolkit as files, in both directions:
//!
//! - **assemble**: one CUDA root (a `CUDA_HOME`) from the CUDA packages of an environment, so
//!   nvcc, CMake's FindCUDAToolkit and pkg-config work against the same files the program loads
//!   at run time. cudist-analysis's [`environment`](cudist_analysis::environment) reads the
//!   environment, [`plan`] places every file and refuses environments that cannot make one
//!   toolkit, [`generate`] adds what the wheels lack (links, the driver stub, nvcc.profile, version
//!   files, pkg-config), [`write`] writes the root or only the missing links inside the
//!   environment, and [`env`] says which variables point build tools at a root or at the wheels'
//!   own directories. (`cudist toolkit`, `cudist toolkit env`.)
//! - **split**: a toolkit (CUDA wheels, NVIDIA's redistributable archives, or a toolkit tree such
//!   as a root assembled here) as components × outputs with pins derived from SONAMEs, written as a
//!   manifest, directories or `.conda` packages ([`split`]; `cudist split`).
//!
//! A root written here carries the marker
//! [`environment::MARKER`](cudist_analysis::environment::MARKER) naming the environment it came
//! from; the split of such a root reads the marker through the same module, so both directions
//! take the toolkit-root reading from one place.
//!
//! Errors are cudist-analysis's [`Error`](cudist_analysis::error::Error): a bad input is told
//! apart from a failure of the machine by
//! [`is_bad_input`](cudist_analysis::error::is_bad_input).
//!
//! Planning a root from a hand-made site-packages directory holding NVIDIA's CUDA 13 runtime wheel
//! (only its RECORD and files matter):
//!
//! ```
//! use cudist_analysis::environment::{Source, Spec};
//!
//! let site = tempfile::tempdir().unwrap();
//! let lib = site.path().join("nvidia/cu13/lib");
//! std::fs::create_dir_all(&lib).unwrap();
//! std::fs::write(lib.join("libcudart.so.13"), b"not a real library").unwrap();
//! let info = site.path().join("nvidia_cuda_runtime-13.0.96.dist-info");
//! std::fs::create_dir_all(&info).unwrap();
//! std::fs::write(info.join("METADATA"), "Name: nvidia-cuda-runtime\nVersion: 13.0.96\n").unwrap();
//! std::fs::write(info.join("RECORD"), "nvidia/cu13/lib/libcudart.so.13,,18\n").unwrap();
//!
//! let catalog = cudist_catalog::Catalog::builtin();
//! let spec = Spec { site_packages: vec![site.path().to_path_buf()], ..Spec::default() };
//! let source = cudist_toolkit::read_source(&spec, &catalog).unwrap();
//! let major = cudist_analysis::environment::check_versions(&source, &catalog).unwrap();
//! assert_eq!(major, 13);
//! let plan = cudist_toolkit::plan::plan(&source, &catalog, major).unwrap();
//! assert!(plan.entries.contains_key("lib64/libcudart.so.13"));
//! ```

#![deny(missing_docs)]

pub mod env;
pub mod generate;
pub mod plan;
pub mod split;
pub mod write;

use cudist_analysis::bail;
use cudist_analysis::environment::{Source, Spec};
use cudist_analysis::error::Result;
use cudist_catalog::Catalog;

/// The CUDA packages of the environment `spec` names; an error that says how to install them
/// when it has none.
pub fn read_source(spec: &Spec, catalog: &Catalog) -> Result<Source> {
    let source = Source::read(spec, catalog)?;
    if source.packages.is_empty() {
        let looked: Vec<String> = source
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        bail!(
            "no CUDA packages in {} (looked in: {}). Install the CUDA wheels first, e.g. \
             `pip install nvidia-cuda-runtime nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-cccl` (CUDA 13) \
             or `pip install nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12` (CUDA 12), or point --python / --site-packages / \
             --conda-prefix at the environment that has them",
            source.description,
            if looked.is_empty() { "no site-packages found".to_string() } else { looked.join(", ") }
        );
    }
    Ok(source)
}
