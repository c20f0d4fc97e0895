//! cudist's analysis layer: the artifact model every command reads and writes, and the analyses
//! on it that do not depend on how the artifact was opened.
//!
//! - [`open`]: opening an input (a wheel, a conda package, a directory, one ELF file) and finding
//!   its ELF files without unpacking the rest; [`analyse`]: one ELF file analysed;
//!   [`artifact`]: the analyses folded into one [`model::Artifact`] with a verdict
//!   ([`artifact::inspect`] does all three).
//! - [`model`]: what `cudist inspect` reports about an artifact (a wheel, a conda package, a
//!   directory, an ELF file) and its ELF files: the CUDA libraries they need and carry, their
//!   search paths, their device code, their sizes, the platform tag they can have, and a verdict.
//!   Its JSON form is the stable schema `cudist.inspect/2` (docs/json-schema.md); `repair`,
//!   `doctor`, `slim` and `select` read the same structures.
//! - [`device`]: an ELF file's fatbin entries as the model lists them, and cuobjdump's listing.
//! - [`environment`]: the CUDA packages of a Python environment or a conda prefix, each file with
//!   its place in a CUDA root (what `toolkit` assembles, `split` packages, `doctor` reports).
//! - [`elf_files`]: the executables and shared objects below a directory, told apart by their
//!   first bytes (what `relink` and `doctor` work on).
//! - [`error`]: why an input could not be read, and whether an error is the input's fault.
//! - [`relink`]: the search-path fix-ups of an installed tree (driver directory, `$ORIGIN`),
//!   applied all or nothing, or checked.
//! - [`runtime`]: will it load and run here — the machine, its GPUs and CUDA installations, the
//!   loader's view of each file, and a verdict (`doctor`).
//! - [`loads`]: what loads when — the load tiers of a package's ELF files and the libraries its
//!   own Python loads; [`pysource`]: its Python read (statements, imports, what runs at import).
//! - [`marker`]: whether a requirement's environment marker can hold on Linux.
//! - [`platform`]: which manylinux or musllinux policy an artifact satisfies, by auditwheel's
//!   rules, with the CUDA libraries of NVIDIA's wheels not counted as system libraries.
//!
//! The command-line tool (crate `cudist`) renders these; a build tool written in Rust can call them
//! without it.
//!
//! Inspecting an artifact as `cudist inspect --json` does, here the device-code fixtures the
//! repository ships:
//!
//! ```
//! use cudist_analysis::model::VerdictStatus;
//!
//! let catalog = cudist_catalog::Catalog::builtin();
//! let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/device");
//! let (inputs, errors) = cudist_analysis::expand_inputs(&[dir]);
//! assert!(errors.is_empty());
//! let report = cudist_analysis::inspect(&inputs, &catalog);
//! let artifact = &report.artifacts[0];
//!
//! // Its files need the CUDA runtime of CUDA 13, which NVIDIA's wheel provides…
//! let cudart = &artifact.cuda_needed[0];
//! assert_eq!(cudart.soname, "libcudart.so.13");
//! let provider = cudart.library.as_ref().unwrap();
//! assert_eq!(provider.pip.as_deref(), Some("nvidia-cuda-runtime"));
//! assert_eq!(provider.pip_dir.as_deref(), Some("nvidia/cu13/lib"));
//! // …and carry device code that runs natively on these GPUs.
//! assert!(artifact.device.native_sms.iter().any(|sm| sm == "sm_90"));
//! assert_eq!(artifact.verdict.status, VerdictStatus::Ok);
//!
//! // The dynamic loader is never a library to graft or to look for.
//! assert!(cudist_analysis::platform::is_loader("ld-linux-x86-64.so.2"));
//! ```

#![deny(missing_docs)]

pub mod analyse;
pub mod artifact;
pub mod device;
pub mod elf_files;
pub mod environment;
pub mod error;
pub mod loads;
pub mod marker;
pub mod model;
pub mod open;
pub mod platform;
pub mod pysource;
pub mod relink;
pub mod requirements;
pub mod runtime;
pub mod select;
pub mod slim;

pub use artifact::{inspect, inspect_one};
pub use error::Error;
pub use open::{expand_inputs, Input};

/// A size for people: `512 B`, `1.5 KiB`, `80.0 MiB` (binary units, one decimal).
///
/// ```
/// assert_eq!(cudist_analysis::human_bytes(80 * 1024 * 1024), "80.0 MiB");
/// ```
pub fn human_bytes(n: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
