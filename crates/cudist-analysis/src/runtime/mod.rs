//! Will it load and run here: the machine (its driver, GPUs and CUDA installations), glibc's
//! loader applied to each file, the packages a Python interpreter would import, and one verdict
//! (what `cudist doctor` reports; `select` judges builds against the same machine description).
//!
//! - [`host`]: the machine judged for — this one, detected without loading what is checked, or a
//!   JSON profile of another;
//! - [`installations`]: every CUDA installation this machine's programs could see, and conflicts;
//! - [`gpu`]: whether device code runs on each GPU, and whether the driver is new enough;
//! - [`preload`]: what an installed package's own Python loads at import, and its files' tiers;
//! - [`python`]: where `import NAME` would find a package, without running its code;
//! - [`trace`]: what `import NAME` really loads, run in the target interpreter;
//! - [`check`]: every check of a set of files, and the verdict ([`check::diagnose`]).

pub mod check;
pub mod gpu;
pub mod host;
pub mod installations;
pub mod preload;
pub mod python;
pub mod trace;
