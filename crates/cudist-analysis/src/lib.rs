//! cudist's analysis layer: the artifact model every command reads and writes, and the analyses
//! on it that do not depend on how the artifact was opened.
//!
//! - [`model`]: what `cudist inspect` reports about an artifact (a wheel, a conda package, a
//!   directory, an ELF file) and its ELF files: the CUDA libraries they need and carry, their
//!   search paths, their device code, their sizes, the platform tag they can have, and a verdict.
//!   Its JSON form is the stable schema `cudist.inspect/1` (docs/json-schema.md); `repair`,
//!   `doctor`, `slim` and `select` read the same structures.
//! - [`device`]: an ELF file's fatbin entries as the model lists them, and cuobjdump's listing.
//! - [`platform`]: which manylinux or musllinux policy an artifact satisfies, by auditwheel's
//!   rules, with the CUDA libraries of NVIDIA's wheels not counted as system libraries.
//!
//! The command-line tool (crate `cudist`) renders these; a build tool written in Rust can call them
//! without it.
//!
//! ```
//! use cudist_analysis::platform::is_loader;
//!
//! // The dynamic loader is never a library to graft or to look for.
//! assert!(is_loader("ld-linux-x86-64.so.2"));
//! assert!(!is_loader("libcudart.so.13"));
//! ```

#![deny(missing_docs)]

pub mod device;
pub mod model;
pub mod platform;
