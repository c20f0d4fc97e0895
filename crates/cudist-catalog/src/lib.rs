//! The CUDA packaging facts cudist reasons with, as data.
//!
//! Every figure lives in a TOML file under `data/` together with the source it was read from; the
//! files are compiled into the binary with `include_str!` and parsed on first use. Users extend or
//! override the built-in catalog with files of the same schema (`--catalog FILE`): an entry with the
//! same `id` (libraries) or `soname` (driver/system libraries) replaces the built-in one.
//!
//! What the catalog answers:
//! - which library a SONAME belongs to, its CUDA major and SONAME policy, and which package provides it
//!   in each packaging world (pip name and install directory per CUDA major, conda-forge name,
//!   `cuda-toolkit` extra);
//! - which SONAMEs belong to the NVIDIA driver (never bundle) or to the base system;
//! - the minimum driver per toolkit version, the PTX ISA version each toolkit introduced, and the
//!   range of toolkits that can target each compute capability.
//!
//! The schema is documented in `docs/catalog.md`.

pub mod glibc;
pub mod manylinux;
pub mod pathfinder;
pub mod pip;
pub mod symbols;
pub mod targets;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The schema version the data files carry (`schema = 1`).
pub const SCHEMA: u32 = 1;

/// Errors raised while loading catalog data.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read catalog file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("catalog file {path} is not valid catalog TOML")]
    Parse {
        path: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("catalog file {path} has schema {found}, this cudist reads schema {SCHEMA}")]
    Schema { path: String, found: u32 },
    #[error("catalog file {path}: {problem}")]
    Invalid { path: String, problem: String },
}

/// What kind of library a catalog entry describes.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    Hash,
    PartialOrd,
    Ord,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LibraryKind {
    /// A CUDA toolkit library (or an NVIDIA library shipped as a wheel: cuDNN, NCCL, …).
    Toolkit,
    /// A library provided by some other wheel, declared by a user catalog (e.g. `librmm.so`).
    External,
}

/// What a SONAME pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash, schemars::JsonSchema)]
pub enum SonamePolicy {
    /// `libcublas.so.12`: ABI-stable across the whole major.
    #[serde(rename = "major")]
    Major,
    /// `libcudart.so.11.0`, `libnvrtc.so.11.2`: the SONAME carries the minor.
    #[serde(rename = "major.minor")]
    MajorMinor,
    /// An unversioned SONAME (`librmm.so`): nothing is pinned by the name.
    #[serde(rename = "none")]
    None,
}

impl fmt::Display for SonamePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SonamePolicy::Major => "major",
            SonamePolicy::MajorMinor => "major.minor",
            SonamePolicy::None => "none",
        })
    }
}

/// One library and everything known about where it comes from.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Library {
    pub id: String,
    pub stem: String,
    #[serde(default)]
    pub component: Option<String>,
    pub kind: LibraryKind,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub conda: Option<String>,
    #[serde(default)]
    pub toolkit_extra: Option<String>,
    #[serde(default)]
    pub dlopens: Vec<String>,
    /// Of `dlopens`, those the library itself treats as optional: it works without them, and
    /// only the capability they add is missing (cuFile without its RDMA library runs in
    /// compatibility mode). Their absence is said, never counted as a failure.
    #[serde(default)]
    pub optional_dlopens: Vec<String>,
    #[serde(default)]
    pub static_archives: Vec<String>,
    #[serde(default)]
    pub static_markers: Vec<String>,
    /// Strings this library's code contains; found in a file that does not need the library,
    /// together with `static_name_table`, they show it was linked in statically (they survive
    /// `strip`, unlike symbols). Alone they prove nothing: any program may quote a message.
    #[serde(default)]
    pub static_strings: Vec<String>,
    /// The table of names the library's code resolves at run time and keeps as C strings in its
    /// read-only data (cudart: the driver API's entry points, `cuInit`, `cuMemAlloc_v2`, …).
    /// `static_strings` count as evidence only in a file that also holds this table.
    #[serde(default)]
    pub static_name_table: Option<NameTable>,
    /// The Python function of the wheel that provides this library which loads it, as RAPIDS'
    /// C++ wheels have one (`librmm.load_library`): a package that calls it when it is imported has
    /// the library loaded before its extension modules need it.
    #[serde(default)]
    pub python_loader: Option<String>,
    /// The other loaders that function calls first (`rapids_logger.load_library`): what they
    /// load is loaded too.
    #[serde(default)]
    pub python_loader_calls: Vec<String>,
    /// The names that function hands to cuda-pathfinder's `load_nvidia_dynamic_lib` (`nvrtc`
    /// in libcuvs' `load_library()`): those CUDA libraries load with it, from the places
    /// cuda-pathfinder searches, and its load fails where they are missing.
    #[serde(default)]
    pub python_loader_pathfinder: Vec<String>,
    /// Libraries of the same wheel directory that the libraries this loader loads need (their
    /// `DT_NEEDED` entries, found through their `$ORIGIN` search path): loaded with them by the
    /// system's loader, though the function never names them (libcugraph.so needs
    /// libcugraph_common.so).
    #[serde(default)]
    pub python_loader_needed: Vec<String>,
    /// The cross-vendor interface this library is one implementation of, where its SONAME is the
    /// interface's and other vendors' implementations carry it too (`libOpenCL.so.1`, the OpenCL
    /// ICD loader: ocl-icd's, Khronos', NVIDIA's copy). A file of that name, or one that needs it,
    /// is not CUDA's: it is never judged as a CUDA library, a copy a package carries is its own
    /// (repair keeps it), and a wheel that needs one requires no CUDA wheel for it.
    #[serde(default)]
    pub interface: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub cuda: Vec<LibraryMajor>,
}

/// A table of C-string names in read-only data: at least `min_names` distinct NUL-terminated
/// strings that are `prefix` followed by an ASCII capital letter and identifier characters.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameTable {
    pub prefix: String,
    pub min_names: usize,
    /// What the names are, as evidence says it (`error names of its own`); by default the
    /// entry points the library resolves at run time.
    #[serde(default)]
    pub names: Option<String>,
}

impl Library {
    /// The `load_library()` of the module that holds the library's wheel directory
    /// (`nvidia/libnvcomp/lib64` → `nvidia.libnvcomp.load_library`): NVIDIA's C++ library wheels
    /// built as RAPIDS' are (librmm, libkvikio, nvidia-libnvcomp 6) put a `load.py` beside the
    /// directory whose `load_library()` opens the library with ctypes, and the packages that
    /// link it call that function before importing their extension modules.
    pub fn wheel_loaders(&self) -> impl Iterator<Item = String> + '_ {
        let mut seen = BTreeSet::new();
        self.cuda.iter().filter_map(move |m| {
            let dir = m.pip_dir.as_deref()?;
            let (module_dir, lib) = dir.rsplit_once('/')?;
            if !lib.starts_with("lib") {
                return None;
            }
            let parts: Vec<&str> = module_dir.split('/').collect();
            let identifiers = parts.iter().all(|p| {
                !p.is_empty()
                    && !p.starts_with(|c: char| c.is_ascii_digit())
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            let f = format!("{}.load_library", parts.join("."));
            (identifiers && seen.insert(f.clone())).then_some(f)
        })
    }
}

/// A library as shipped for one CUDA major.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LibraryMajor {
    pub major: u32,
    pub sonames: Vec<String>,
    pub policy: SonamePolicy,
    #[serde(default)]
    pub pip: Option<String>,
    #[serde(default)]
    pub pip_dir: Option<String>,
    /// The releases of `pip` for this CUDA major (a PEP 440 range, `>=1,<2`), where its version
    /// does not follow the SONAME (nvidia-cufile 1.x ships `libcufile.so.0`; nvidia-nvtx-cu12 12.x
    /// ships `libnvToolsExt.so.1`). Without it, the SONAME gives the range
    /// ([`LibraryMajor::pip_requirement`]).
    #[serde(default)]
    pub pip_versions: Option<String>,
    /// The library file names that releases of `pip` install, where not every one of `sonames`
    /// (CUDA 11.0's `libnvrtc.so.11.0` is in no wheel on the index; nvidia-cuda-nvcc-cu12 names
    /// its NVVM `libnvvm.so`): ld.so finds a NEEDED entry only as a file of that name, so a binary
    /// needing another one cannot load it from the wheel. Empty: all of `sonames`.
    #[serde(default)]
    pub pip_files: Vec<String>,
    /// SONAMEs that releases of `pip` ship only from some version on (SONAME → first version:
    /// `libnvrtc.alt.so.12` from 12.8): the requirement for such a SONAME starts there.
    #[serde(default)]
    pub pip_since: BTreeMap<String, String>,
    /// Directories that releases of `pip` outside `pip_versions` install the library in
    /// (directory → their `>=A,<B` range): nvidia-cusparselt-cu13 0.8.x (torch 2.15's pin) puts
    /// it in `nvidia/cusparselt/lib`, 0.9 on in `nvidia/cu13/lib`. Repair requires `pip_versions`
    /// and writes `pip_dir`, unless the wheel already requires releases of another directory;
    /// doctor looks in every one.
    #[serde(default)]
    pub pip_other_dirs: BTreeMap<String, String>,
    #[serde(default)]
    pub verified: Option<String>,
}

/// What a `Requires-Dist` on a library's wheel says for a binary that needs one of its SONAMEs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipRequirement {
    /// The releases that ship that SONAME (`>=12,<13`).
    Range(String),
    /// Any release: the SONAME pins nothing (`librmm.so`).
    Any,
    /// No release of the wheel ships that SONAME.
    NotShipped,
}

impl Library {
    /// The SONAME a wheel installs and that wheel, of the newest CUDA major (of `major` when
    /// given) that has both: `("libcudart.so.13", "nvidia-cuda-runtime")`.
    pub fn newest_wheel_soname(&self, major: Option<u32>) -> Option<(&str, &str)> {
        self.cuda
            .iter()
            .rev()
            .filter(|m| major.is_none_or(|c| c == m.major))
            .find_map(|m| Some((m.sonames.last()?.as_str(), m.pip.as_deref()?)))
    }
}

impl LibraryMajor {
    /// Every directory releases of `pip` install the library in: `pip_dir` (with `pip_versions`)
    /// first, then `pip_other_dirs`, each with its release range where one is known.
    pub fn pip_dirs(&self) -> Vec<(&str, Option<&str>)> {
        self.pip_dir
            .as_deref()
            .map(|d| (d, self.pip_versions.as_deref()))
            .into_iter()
            .chain(
                self.pip_other_dirs
                    .iter()
                    .map(|(d, r)| (d.as_str(), Some(r.as_str()))),
            )
            .collect()
    }

    /// The older release line a release of `pip` belongs to, where it installs elsewhere than
    /// `pip_dir`: its directory and range (`nvidia/cusparselt/lib`, `>=0.8,<0.9` for 0.8.1).
    pub fn other_line_of(&self, version: &str) -> Option<(&str, &str)> {
        self.pip_other_dirs
            .iter()
            .find(|(_, r)| in_simple_range(version, r))
            .map(|(d, r)| (d.as_str(), r.as_str()))
    }

    /// The requirement on this major's wheel for a binary that needs `soname`; none when no
    /// wheel provides the library.
    ///
    /// ```
    /// use cudist_catalog::{Catalog, PipRequirement};
    ///
    /// let catalog = Catalog::builtin();
    /// let of = |soname: &str| {
    ///     let m = catalog.library_by_soname_hinted(soname, None).unwrap();
    ///     m.major.pip_requirement(soname).unwrap()
    /// };
    /// assert_eq!(of("libcublas.so.12"), PipRequirement::Range(">=12,<13".into()));
    /// // nvidia-cufile's versions do not follow its SONAME.
    /// assert_eq!(of("libcufile.so.0"), PipRequirement::Range(">=1,<2".into()));
    /// ```
    pub fn pip_requirement(&self, soname: &str) -> Option<PipRequirement> {
        self.pip.as_ref()?;
        if !self.pip_files.is_empty() && !self.pip_files.iter().any(|s| s == soname) {
            return Some(PipRequirement::NotShipped);
        }
        let range = match &self.pip_versions {
            Some(v) => Some(v.clone()),
            None => soname_range(soname, self.policy, &self.sonames),
        };
        Some(match (range, self.pip_since.get(soname)) {
            (Some(r), Some(since)) => PipRequirement::Range(raise_lower_bound(&r, since)),
            (Some(r), None) => PipRequirement::Range(r),
            (None, Some(since)) => PipRequirement::Range(format!(">={since}")),
            (None, None) => PipRequirement::Any,
        })
    }
}

/// Raises the lower bound of a `>=L,<U` range to `version` when `version` lies inside it.
///
/// ```
/// assert_eq!(cudist_catalog::raise_lower_bound(">=12,<13", "12.8"), ">=12.8,<13");
/// assert_eq!(cudist_catalog::raise_lower_bound(">=12,<13", "13.0.1"), ">=12,<13");
/// ```
pub fn raise_lower_bound(range: &str, version: &str) -> String {
    match range.strip_prefix(">=").and_then(|r| r.split_once(",<")) {
        Some((_, upper)) if in_simple_range(version, range) => format!(">={version},<{upper}"),
        _ => range.to_string(),
    }
}

/// Whether `range` is `>=A,<B` with dotted numbers A < B: the shape of every range cudist writes.
fn is_simple_range(range: &str) -> bool {
    let Some((lo, hi)) = range.strip_prefix(">=").and_then(|r| r.split_once(",<")) else {
        return false;
    };
    let key = |v: &str| -> Option<Vec<u64>> { v.split('.').map(|p| p.parse().ok()).collect() };
    matches!((key(lo), key(hi)), (Some(a), Some(b)) if a < b)
}

/// The releases both ranges allow: for two `>=A,<B` ranges the higher lower bound and the lower
/// upper bound; otherwise both specifier lists joined (PEP 440 reads a comma as "and").
///
/// ```
/// assert_eq!(cudist_catalog::intersect_ranges(">=12,<13", ">=12.0,<12.1"), ">=12.0,<12.1");
/// assert_eq!(cudist_catalog::intersect_ranges(">=12.9,<13", ">=12,<13"), ">=12.9,<13");
/// assert_eq!(cudist_catalog::intersect_ranges(">=12,<13", ""), ">=12,<13");
/// assert_eq!(cudist_catalog::intersect_ranges(">=12,<13", "~=12.4"), ">=12,<13,~=12.4");
/// ```
pub fn intersect_ranges(a: &str, b: &str) -> String {
    let key = |v: &str| -> Vec<u64> { v.split('.').map_while(|p| p.parse().ok()).collect() };
    fn bounds(r: &str) -> Option<(&str, &str)> {
        r.strip_prefix(">=")
            .and_then(|r| r.split_once(",<"))
            .filter(|_| is_simple_range(r))
    }
    match (bounds(a), bounds(b)) {
        (Some((alo, ahi)), Some((blo, bhi))) => {
            let lo = if key(alo) >= key(blo) { alo } else { blo };
            let hi = if key(ahi) <= key(bhi) { ahi } else { bhi };
            format!(">={lo},<{hi}")
        }
        _ if a == b || b.is_empty() => a.to_string(),
        _ if a.is_empty() => b.to_string(),
        _ => format!("{a},{b}"),
    }
}

/// Whether two `>=A,<B` ranges share a version.
fn ranges_overlap(a: &str, b: &str) -> bool {
    let key = |v: &str| -> Vec<u64> { v.split('.').map_while(|p| p.parse().ok()).collect() };
    let bounds = |r: &str| {
        r.strip_prefix(">=")
            .and_then(|r| r.split_once(",<"))
            .map(|(lo, hi)| (key(lo), key(hi)))
    };
    match (bounds(a), bounds(b)) {
        (Some((alo, ahi)), Some((blo, bhi))) => alo < bhi && blo < ahi,
        _ => true,
    }
}

/// Whether `version` lies in a `>=A,<B` range (numeric parts compared; a part that is not a
/// number, as in a pre-release, ends the comparison key).
pub fn in_simple_range(version: &str, range: &str) -> bool {
    let key = |v: &str| -> Vec<u64> { v.split('.').map_while(|p| p.parse().ok()).collect() };
    match range.strip_prefix(">=").and_then(|r| r.split_once(",<")) {
        Some((lo, hi)) => key(version) >= key(lo) && key(version) < key(hi),
        None => false,
    }
}

/// The range of releases a SONAME implies where the package's version follows it: the version's
/// major follows the SONAME's (`libcublas.so.12` ↔ `12.*`, `libcurand.so.10` ↔ `10.*`); where the
/// SONAME carries a minor, the bound follows it too: a minor that later releases keep (the last
/// one `listed` for that major: `libnvrtc.so.11.2`, `libcudart.so.11.0`) allows the rest of the
/// major, an earlier one only itself.
pub fn soname_range(soname: &str, policy: SonamePolicy, listed: &[String]) -> Option<String> {
    let version = soname.split_once(".so.")?.1;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    match policy {
        SonamePolicy::None => None,
        SonamePolicy::Major => Some(format!(">={major},<{}", major + 1)),
        SonamePolicy::MajorMinor => {
            let minor = parts.next().flatten().unwrap_or(0);
            let last = listed.last().map(String::as_str) == Some(soname);
            Some(if last {
                format!(">={major}.{minor},<{}", major + 1)
            } else {
                format!(">={major}.{minor},<{major}.{}", minor + 1)
            })
        }
    }
}

/// How a component's version number relates to the CUDA release it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Versioning {
    /// Its major.minor is the CUDA release's (`13.5.37` or `13.5.25` in CUDA 13.5).
    Toolkit,
    /// Its own scheme (cuBLAS `13.10.0.20`, cuRAND `10.4.5.25`).
    Own,
}

/// Which versions of a component may be installed together with the rest of a toolkit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VersionCheck {
    /// Compiler and runtime parts: must share CUDA major.minor with each other.
    Core,
    /// May be newer than the core within the major, never older (nvJitLink).
    Newer,
    /// Only the CUDA major must match.
    Major,
}

/// One NVIDIA CUDA wheel distribution (a toolkit component as pip installs it).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// The CUDA 13 name; CUDA 11 and 12 wheels add `-cu11` / `-cu12`.
    pub pip: String,
    /// The key in NVIDIA's `redistrib_<ver>.json` and the toolkit's `version.json`.
    pub redist: String,
    /// The manifest's display name.
    pub title: String,
    pub versioning: Versioning,
    pub check: VersionCheck,
    #[serde(default)]
    pub majors: Vec<u32>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A rule that places files of a CUDA root in a component by their path: `header` rules match
/// paths below `include/`, `file` rules paths below the root.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    /// The component's key (`cuda_cudart`).
    pub component: String,
    /// `/`-separated patterns: `*` matches within one segment; a trailing `/**` matches the
    /// whole tree below a directory.
    #[serde(rename = "match")]
    pub patterns: Vec<String>,
    /// The CUDA majors the rule holds for; empty for all.
    #[serde(default)]
    pub majors: Vec<u32>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Whether `path` matches a [`PathRule`] pattern.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let (pattern, tree) = match pattern.strip_suffix("/**") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut pats = pattern.split('/');
    let mut segs = path.split('/');
    loop {
        match (pats.next(), segs.next()) {
            (Some(p), Some(s)) if segment_matches(p, s) => {}
            (None, None) => return !tree,
            (None, Some(_)) => return tree,
            _ => return false,
        }
    }
}

/// `*` matches any run of characters (within the segment); everything else is literal.
fn segment_matches(pattern: &str, seg: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == seg;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if seg.len() < first.len() + last.len() || !seg.starts_with(first) || !seg.ends_with(last) {
        return false;
    }
    let mut rest = &seg[first.len()..seg.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// A Python package whose shared libraries other packages' files link (`libc10.so` of torch):
/// such a file loads only after that package's import has loaded them, and by then the CUDA
/// libraries that import loads are in the process too.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PythonProvider {
    /// The distribution (`torch`).
    pub pip: String,
    /// The SONAMEs of the libraries it ships for other packages to link.
    pub sonames: Vec<String>,
    /// Catalog library ids its import loads, from its CUDA build's wheels, before any of its
    /// libraries can be linked by another file.
    #[serde(default)]
    pub loads_at_import: Vec<String>,
    /// Where its import loads them (`torch/__init__.py: _load_global_deps`).
    #[serde(default)]
    pub loaded_by: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A Python package that loads CUDA libraries itself (with cuda-pathfinder or its own code)
/// before importing the modules that link them.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Package {
    pub pip: String,
    /// The import names it installs.
    pub imports: Vec<String>,
    pub cuda: u32,
    /// `cuda-pathfinder`: site-packages wheel directories first, then `$CONDA_PREFIX/lib`, the
    /// libraries already loaded, the system search, and `CUDA_HOME`/`CUDA_PATH`.
    pub loader: String,
    /// Catalog library ids it loads.
    pub loads: Vec<String>,
    /// When it loads them: at import (the default), or only on first use of what needs them
    /// (then `on_use` says what that is).
    #[serde(default)]
    pub when: LoadTime,
    /// What triggers the loads when they are on use (`the first use of cupy.cuda.cublas, …`).
    #[serde(default)]
    pub on_use: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// When a package's own loader runs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum LoadTime {
    /// When the package is imported: a library not found fails the import.
    #[default]
    Import,
    /// On first use of the module that needs the library: a library not found fails then.
    OnUse,
}

/// A library that comes with the NVIDIA driver.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DriverLib {
    pub soname: String,
    #[serde(default)]
    pub description: String,
    /// Set for a library that only some drivers provide and that the libraries opening it treat
    /// as an optional capability: what needs it (the rest runs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A library of another GPU vendor's runtime (AMD ROCm, Intel oneAPI): it comes with that
/// vendor's stack, never from a CUDA package, and is never grafted.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VendorLib {
    /// The SONAME without `.so` and what follows: `libhipblas` matches `libhipblas.so.3`.
    pub stem: String,
    /// `AMD ROCm`, `Intel oneAPI`.
    pub vendor: String,
    #[serde(default)]
    pub description: String,
    /// Where a machine gets it.
    pub provided_by: String,
    /// The PyPI distribution that ships it, where one does.
    #[serde(default)]
    pub pip: Option<String>,
    /// SONAMEs of this stem read from real files.
    #[serde(default)]
    pub seen: Vec<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A library every Linux system provides.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemLib {
    pub soname: String,
    pub family: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Minimum Linux driver of one toolkit release.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolkitDriver {
    pub version: String,
    pub min_driver: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Minor-version compatibility floor of one CUDA major.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MinorCompat {
    pub major: u32,
    pub min_driver: String,
    /// The oldest driver of this major that decompresses zstd-compressed fatbin entries (nvcc
    /// `--compress-mode=size` or `balance`), when it is newer than `min_driver`.
    #[serde(default)]
    pub zstd_min_driver: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A PTX ISA version and the toolkit that introduced it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PtxIsa {
    pub isa: String,
    pub cuda: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A compute capability and the toolkits that can target it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    pub sm: u32,
    pub name: String,
    pub first_cuda: String,
    #[serde(default)]
    pub last_cuda: Option<String>,
    #[serde(default)]
    pub arch_specific_from: Option<String>,
    #[serde(default)]
    pub family_from: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A name people write for a GPU or a GPU architecture, and the targets it stands for.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuName {
    /// `H100`, `RTX 4090`, `Ampere` (matched without regard to case, as a whole entry).
    pub name: String,
    /// What it stands for, as a target list (`8.0;8.6+PTX`, `9.0`).
    pub targets: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// One catalog file; every table is optional so that a user file can add just what it needs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    schema: u32,
    #[serde(default)]
    library: Vec<Library>,
    #[serde(default)]
    driver_lib: Vec<DriverLib>,
    #[serde(default)]
    vendor_lib: Vec<VendorLib>,
    #[serde(default)]
    system_lib: Vec<SystemLib>,
    #[serde(default)]
    toolkit: Vec<ToolkitDriver>,
    #[serde(default)]
    minor_compat: Vec<MinorCompat>,
    #[serde(default)]
    ptx_isa: Vec<PtxIsa>,
    #[serde(default)]
    arch: Vec<Arch>,
    #[serde(default)]
    gpu_name: Vec<GpuName>,
    #[serde(default)]
    component: Vec<Component>,
    #[serde(default)]
    package: Vec<Package>,
    #[serde(default)]
    python_provider: Vec<PythonProvider>,
    #[serde(default)]
    header: Vec<PathRule>,
    #[serde(default)]
    file: Vec<PathRule>,
}

const BUILTIN: &[(&str, &str)] = &[
    ("libraries.toml", include_str!("../data/libraries.toml")),
    ("driver.toml", include_str!("../data/driver.toml")),
    ("vendors.toml", include_str!("../data/vendors.toml")),
    ("system.toml", include_str!("../data/system.toml")),
    ("drivers.toml", include_str!("../data/drivers.toml")),
    ("arch.toml", include_str!("../data/arch.toml")),
    ("gpus.toml", include_str!("../data/gpus.toml")),
    ("components.toml", include_str!("../data/components.toml")),
    ("packages.toml", include_str!("../data/packages.toml")),
    ("providers.toml", include_str!("../data/providers.toml")),
    ("headers.toml", include_str!("../data/headers.toml")),
    ("files.toml", include_str!("../data/files.toml")),
    ("rapids.toml", include_str!("../data/rapids.toml")),
];

/// A CUDA version `major.minor` (e.g. `12.8`), ordered numerically.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    /// Parses `12`, `12.8` or `12.8.1` (the patch level is ignored).
    pub fn parse(s: &str) -> Option<CudaVersion> {
        let mut it = s.trim().split('.');
        let major = it.next()?.parse().ok()?;
        let minor = match it.next() {
            Some(m) => m.parse().ok()?,
            None => 0,
        };
        Some(CudaVersion { major, minor })
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A driver version such as `570.26` or `580.65.06`, compared component by component.
pub fn driver_version_key(v: &str) -> Vec<u32> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// How a SONAME was matched to a library.
#[derive(Debug, Clone, Copy)]
pub struct LibraryMatch<'a> {
    pub library: &'a Library,
    pub major: &'a LibraryMajor,
    /// The SONAME exists in several CUDA majors (`libcurand.so.10` is 11, 12 and 13) and no hint
    /// chose among them: `major` is the newest.
    pub ambiguous: bool,
}

/// A CUDA library of a release the catalog does not list ([`Catalog::older_release`]).
#[derive(Debug, Clone, Copy)]
pub struct OlderRelease<'a> {
    pub library: &'a Library,
    /// The CUDA major it is of; where nothing says which (`cuda_major_known` false), the newest
    /// it can be: the one before the oldest the catalog lists.
    pub cuda_major: u32,
    pub cuda_major_known: bool,
}

/// The classification of one SONAME.
#[derive(Debug, Clone)]
pub enum SonameClass<'a> {
    Toolkit(LibraryMatch<'a>),
    External(LibraryMatch<'a>),
    Driver(&'a DriverLib),
    Vendor(&'a VendorLib),
    System(&'a SystemLib),
    Other,
}

/// The loaded catalog: built-in data plus user files.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub libraries: Vec<Library>,
    pub driver_libs: Vec<DriverLib>,
    pub vendor_libs: Vec<VendorLib>,
    pub system_libs: Vec<SystemLib>,
    pub toolkits: Vec<ToolkitDriver>,
    pub minor_compat: Vec<MinorCompat>,
    pub ptx_isa: Vec<PtxIsa>,
    pub archs: Vec<Arch>,
    /// Names people write for GPUs (`H100`, `Ampere`) and the targets they stand for.
    pub gpu_names: Vec<GpuName>,
    pub components: Vec<Component>,
    pub packages: Vec<Package>,
    /// Python packages whose libraries other packages link ([`PythonProvider`]).
    pub python_providers: Vec<PythonProvider>,
    /// Header rules (paths below `include/`), tried in order.
    pub headers: Vec<PathRule>,
    /// File rules (paths below a CUDA root), tried in order.
    pub files: Vec<PathRule>,
    /// SONAME → every (library index, major index) that lists it.
    by_soname: BTreeMap<String, Vec<(usize, usize)>>,
    /// Where the data came from: `builtin:<file>` or the user file's path.
    pub origins: Vec<String>,
}

impl Catalog {
    /// The library whose linker name (`libcudart.so`: its stem and `.so`, the development link
    /// a toolkit installs and no wheel does) is `name`.
    pub fn library_by_linker_name(&self, name: &str) -> Option<&Library> {
        let stem = name.strip_suffix(".so")?;
        self.libraries.iter().find(|l| l.stem == stem)
    }

    /// The Python package that ships a library other packages' files link, by SONAME.
    pub fn python_provider(&self, soname: &str) -> Option<&PythonProvider> {
        self.python_providers
            .iter()
            .find(|p| p.sonames.iter().any(|s| s == soname))
    }

    /// The component of a file of a CUDA root by its path (`include/cublas_v2.h`,
    /// `bin/nvcc`), from the header and file rules; `None` when no rule places it.
    pub fn component_of_path(&self, path: &str, major: Option<u32>) -> Option<&str> {
        let applies =
            |r: &&PathRule| major.is_none_or(|m| r.majors.is_empty() || r.majors.contains(&m));
        let first = |rules: &'_ [PathRule], p: &str| -> Option<usize> {
            rules
                .iter()
                .position(|r| applies(&r) && r.patterns.iter().any(|pat| path_matches(pat, p)))
        };
        if let Some(i) = first(&self.files, path) {
            return Some(&self.files[i].component);
        }
        let rel = path.strip_prefix("include/")?;
        first(&self.headers, rel).map(|i| self.headers[i].component.as_str())
    }

    /// The SONAMEs a wheel's Python loader (`librmm.load_library`) loads: those of the
    /// libraries it is the loader of, and of the loaders it calls first, in every CUDA major;
    /// empty for a function no library names.
    pub fn python_loader_sonames(&self, loader: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in self.python_loader_reach(loader) {
            let needed = l.python_loader_needed.iter();
            for s in l.cuda.iter().flat_map(|m| &m.sonames).chain(needed) {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// The names a wheel's Python loader, and the loaders it calls first, hand to cuda-pathfinder
    /// (`nvrtc`, from libcuvs' `load_library()` that libcugraph's calls), each with the loader
    /// that does (`libcuvs.load_library`), in the order they are reached.
    pub fn python_loader_pathfinder(&self, loader: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for l in self.python_loader_reach(loader) {
            let Some(f) = &l.python_loader else { continue };
            for n in &l.python_loader_pathfinder {
                if !out.iter().any(|(_, o)| o == n) {
                    out.push((f.clone(), n.clone()));
                }
            }
        }
        out
    }

    /// The libraries a wheel's Python loader loads itself or through the loaders it calls, in
    /// the order reached, each once. A loader the catalog describes loads what its description
    /// lists (libcugraph's loads three of the five libraries its wheel installs); the loader a
    /// wheel would have by convention loads its libraries where none is described.
    fn python_loader_reach(&self, loader: &str) -> Vec<&Library> {
        let mut out: Vec<&Library> = Vec::new();
        let mut todo = vec![loader.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(f) = todo.pop() {
            if !seen.insert(f.clone()) {
                continue;
            }
            let described = self
                .libraries
                .iter()
                .any(|l| l.python_loader.as_deref() == Some(f.as_str()));
            for l in self.libraries.iter().filter(|l| {
                l.python_loader.as_deref() == Some(f.as_str())
                    || (!described
                        && l.python_loader.is_none()
                        && l.wheel_loaders().any(|w| w == f))
            }) {
                out.push(l);
                todo.extend(l.python_loader_calls.iter().cloned());
            }
        }
        out
    }

    /// Every Python loader the catalog's libraries name (`librmm.load_library`), and for the
    /// others the loader their wheel would have by the convention of NVIDIA's C++ library wheels
    /// ([`Library::wheel_loaders`]).
    pub fn python_loaders(&self) -> BTreeSet<String> {
        self.libraries
            .iter()
            .flat_map(|l| match &l.python_loader {
                Some(f) => vec![f.clone()],
                None => l.wheel_loaders().collect(),
            })
            .collect()
    }

    /// The catalog compiled into this binary.
    pub fn builtin() -> Catalog {
        let mut cat = Catalog::empty();
        for (name, text) in BUILTIN {
            cat.merge_str(&format!("builtin:{name}"), text)
                .expect("built-in catalog data is valid (checked by tests)");
        }
        cat
    }

    /// The built-in catalog extended by user files, later files winning.
    pub fn with_user_files<P: AsRef<Path>>(files: &[P]) -> Result<Catalog, CatalogError> {
        let mut cat = Catalog::builtin();
        for f in files {
            cat.merge_file(f.as_ref())?;
        }
        Ok(cat)
    }

    fn empty() -> Catalog {
        Catalog {
            libraries: Vec::new(),
            driver_libs: Vec::new(),
            vendor_libs: Vec::new(),
            system_libs: Vec::new(),
            toolkits: Vec::new(),
            minor_compat: Vec::new(),
            ptx_isa: Vec::new(),
            archs: Vec::new(),
            gpu_names: Vec::new(),
            components: Vec::new(),
            packages: Vec::new(),
            python_providers: Vec::new(),
            headers: Vec::new(),
            files: Vec::new(),
            by_soname: BTreeMap::new(),
            origins: Vec::new(),
        }
    }

    /// Merges one catalog file from disk.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), CatalogError> {
        let display = path.display().to_string();
        // A regular file of at most 16 MiB: a FIFO or /dev/zero given as the catalog is refused
        // at once instead of hanging or filling memory.
        let bytes = cudist_fs::read_bounded(path, cudist_fs::SMALL_FILE).map_err(|e| {
            CatalogError::Read {
                path: display.clone(),
                source: e.into_io(),
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|_| CatalogError::Invalid {
            path: display.clone(),
            problem: "not UTF-8 text".into(),
        })?;
        self.merge_str(&display, &text)
    }

    /// Merges catalog TOML text; `origin` names it in errors. Values that end up in wheels
    /// (`pip` in `Requires-Dist`, `pip_dir` in RPATHs) are checked to be what they claim.
    pub fn merge_str(&mut self, origin: &str, text: &str) -> Result<(), CatalogError> {
        let file: CatalogFile = toml::from_str(text).map_err(|e| CatalogError::Parse {
            path: origin.to_string(),
            source: Box::new(e),
        })?;
        if file.schema != SCHEMA {
            return Err(CatalogError::Schema {
                path: origin.to_string(),
                found: file.schema,
            });
        }
        let invalid = |problem: String| CatalogError::Invalid {
            path: origin.to_string(),
            problem,
        };
        for lib in &file.library {
            if lib.id.is_empty() || lib.stem.is_empty() {
                return Err(invalid("a [[library]] has an empty id or stem".into()));
            }
            if let Some(x) = lib
                .toolkit_extra
                .as_deref()
                .filter(|x| !is_distribution_name(x))
            {
                return Err(invalid(format!(
                    "library {}: toolkit_extra {x:?} is not an extra name",
                    lib.id
                )));
            }
            // Strings alone prove nothing (any program may quote them): they need the table.
            if !lib.static_strings.is_empty() && lib.static_name_table.is_none() {
                return Err(invalid(format!(
                    "library {}: static_strings need a static_name_table (strings alone are no \
                     evidence of static linking)",
                    lib.id
                )));
            }
            if let Some(t) = &lib.static_name_table {
                if t.prefix.is_empty() || t.min_names < 2 {
                    return Err(invalid(format!(
                        "library {}: static_name_table needs a prefix and min_names of 2 or more",
                        lib.id
                    )));
                }
            }
            for m in &lib.cuda {
                if m.sonames.is_empty() {
                    return Err(invalid(format!(
                        "library {} CUDA {} lists no sonames",
                        lib.id, m.major
                    )));
                }
                if m.pip.is_some() != m.pip_dir.is_some() {
                    return Err(invalid(format!(
                        "library {} CUDA {}: pip and pip_dir go together",
                        lib.id, m.major
                    )));
                }
                // pip_versions goes into METADATA too, and repair raises its lower bound: the one
                // shape it writes.
                if let Some(v) = &m.pip_versions {
                    if !is_simple_range(v) || m.pip.is_none() {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip_versions {v:?} must be `>=A,<B` (A and B \
                             dotted numbers) beside a pip name",
                            lib.id, m.major
                        )));
                    }
                }
                for (soname, since) in &m.pip_since {
                    if !m.sonames.contains(soname)
                        || !is_simple_range(&format!(">={since},<{since}.1"))
                    {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip_since {soname:?} = {since:?} needs one of its \
                             sonames and a dotted version",
                            lib.id, m.major
                        )));
                    }
                }
                // pip goes into METADATA as a Requires-Dist name: a PEP 508 name, nothing else.
                if let Some(p) = &m.pip {
                    if !is_distribution_name(p) {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip {p:?} is not a distribution name (letters, \
                             digits, `.`, `_`, `-`, starting and ending with a letter or digit)",
                            lib.id, m.major
                        )));
                    }
                }
                for (d, r) in &m.pip_other_dirs {
                    if m.pip_dir.is_none()
                        || !is_simple_range(r)
                        || m.pip_versions
                            .as_deref()
                            .is_some_and(|v| ranges_overlap(v, r))
                    {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip_other_dirs {d:?} = {r:?} needs pip_dir and a                              `>=A,<B` range outside pip_versions",
                            lib.id, m.major
                        )));
                    }
                }
                // pip_dir becomes an RPATH entry ($ORIGIN/../…/pip_dir) and a path the loader
                // module looks in: a plain directory inside site-packages.
                for d in m.pip_dir.iter().chain(m.pip_other_dirs.keys()) {
                    if let Err(e) = cudist_fs::member_name(d) {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip_dir {e}; it names a directory inside \
                             site-packages",
                            lib.id, m.major
                        )));
                    }
                    if d.contains(':') || d.contains('$') {
                        return Err(invalid(format!(
                            "library {} CUDA {}: pip_dir {d:?} holds `:` or `$`, which an RPATH \
                             reads as a separator or a variable",
                            lib.id, m.major
                        )));
                    }
                }
            }
        }
        for a in &file.arch {
            if CudaVersion::parse(&a.first_cuda).is_none() {
                return Err(invalid(format!(
                    "arch sm_{}: first_cuda {:?} is not a version",
                    a.sm, a.first_cuda
                )));
            }
        }
        for v in &file.vendor_lib {
            if !v.stem.starts_with("lib") || v.stem.contains(".so") || v.stem.contains('/') {
                return Err(invalid(format!(
                    "vendor_lib {:?}: a stem is a SONAME without `.so` and what follows (libhipblas)",
                    v.stem
                )));
            }
            if let Some(s) = v.seen.iter().find(|s| {
                s.strip_prefix(v.stem.as_str())
                    .is_none_or(|r| !(r == ".so" || r.starts_with(".so.")))
            }) {
                return Err(invalid(format!(
                    "vendor_lib {:?}: seen SONAME {s:?} is not of that stem",
                    v.stem
                )));
            }
        }
        for t in &file.toolkit {
            if CudaVersion::parse(&t.version).is_none() {
                return Err(invalid(format!("toolkit {:?} is not a version", t.version)));
            }
        }
        replace_by(&mut self.libraries, file.library, |l| l.id.clone());
        replace_by(&mut self.driver_libs, file.driver_lib, |l| l.soname.clone());
        replace_by(&mut self.vendor_libs, file.vendor_lib, |l| l.stem.clone());
        replace_by(&mut self.system_libs, file.system_lib, |l| l.soname.clone());
        replace_by(&mut self.toolkits, file.toolkit, |t| t.version.clone());
        replace_by(&mut self.minor_compat, file.minor_compat, |m| m.major);
        replace_by(&mut self.ptx_isa, file.ptx_isa, |p| p.isa.clone());
        replace_by(&mut self.archs, file.arch, |a| a.sm);
        for g in &file.gpu_name {
            if g.name.trim().is_empty() || g.name.contains([';', ',']) {
                return Err(invalid(format!(
                    "gpu_name {:?}: a name without ; or ,",
                    g.name
                )));
            }
            if let Err(e) = crate::targets::parse_list(&g.targets) {
                return Err(invalid(format!("gpu_name {:?}: {e}", g.name)));
            }
        }
        replace_by(&mut self.gpu_names, file.gpu_name, |g| {
            g.name.to_lowercase()
        });
        replace_by(&mut self.components, file.component, |c| c.pip.clone());
        replace_by(&mut self.packages, file.package, |p| p.pip.clone());
        replace_by(&mut self.python_providers, file.python_provider, |p| {
            p.pip.clone()
        });
        for r in file.header.iter().chain(&file.file) {
            if r.component.is_empty() || r.patterns.is_empty() {
                return Err(invalid("a path rule needs a component and patterns".into()));
            }
            if let Some(p) = r.patterns.iter().find(|p| {
                p.trim_end_matches("/**").contains("**") || p.starts_with('/') || p.is_empty()
            }) {
                return Err(invalid(format!(
                    "rule for {}: pattern {p:?} (`**` only as a trailing `/**`, no leading `/`)",
                    r.component
                )));
            }
        }
        // A user's rules come first, so they win over the built-in ones.
        self.headers.splice(0..0, file.header);
        self.files.splice(0..0, file.file);
        self.origins.push(origin.to_string());
        self.reindex();
        Ok(())
    }

    fn reindex(&mut self) {
        self.by_soname.clear();
        for (li, lib) in self.libraries.iter().enumerate() {
            for (mi, m) in lib.cuda.iter().enumerate() {
                for s in &m.sonames {
                    self.by_soname.entry(s.clone()).or_default().push((li, mi));
                }
            }
        }
    }

    /// Finds the library that owns `soname` exactly; where several CUDA majors share the SONAME,
    /// the newest (see [`Catalog::library_by_soname_hinted`]).
    pub fn library_by_soname(&self, soname: &str) -> Option<LibraryMatch<'_>> {
        self.library_by_soname_hinted(soname, None)
    }

    /// Like [`Catalog::library_by_soname`], preferring the row of CUDA major `hint` when the
    /// SONAME is shared by several majors.
    pub fn library_by_soname_hinted(
        &self,
        soname: &str,
        hint: Option<u32>,
    ) -> Option<LibraryMatch<'_>> {
        let rows = self.by_soname.get(soname)?;
        let pick = |&(li, mi): &(usize, usize)| (li, mi, self.libraries[li].cuda[mi].major);
        let all: Vec<(usize, usize, u32)> = rows.iter().map(pick).collect();
        let chosen = hint
            .and_then(|h| all.iter().find(|r| r.2 == h))
            .or_else(|| all.iter().max_by_key(|r| r.2))?;
        let library = &self.libraries[chosen.0];
        let distinct: BTreeSet<u32> = all.iter().map(|r| r.2).collect();
        Some(LibraryMatch {
            library,
            major: &library.cuda[chosen.1],
            ambiguous: distinct.len() > 1 && !hint.is_some_and(|h| distinct.contains(&h)),
        })
    }

    /// The directories (below site-packages) the wheels that ship a SONAME install it in, in
    /// every CUDA major, without repeats.
    pub fn pip_dirs_of(&self, soname: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for &(li, mi) in self.by_soname.get(soname).into_iter().flatten() {
            for (d, _) in self.libraries[li].cuda[mi].pip_dirs() {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        out
    }

    /// The CUDA majors a SONAME belongs to (empty when unknown).
    pub fn majors_of(&self, soname: &str) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .by_soname
            .get(soname)
            .map(|rows| {
                rows.iter()
                    .map(|&(li, mi)| self.libraries[li].cuda[mi].major)
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The component a pip distribution name belongs to, and the CUDA major its `-cuNN` suffix
    /// names (none for the unsuffixed CUDA 13 names). `name` may be in any PEP 503 spelling.
    pub fn component_by_pip(&self, name: &str) -> Option<(&Component, Option<u32>)> {
        let norm: String = name
            .chars()
            .map(|c| match c {
                '_' | '.' => '-',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        let (base, major) = match norm.rsplit_once("-cu") {
            Some((b, m)) if !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()) => {
                (b.to_string(), m.parse().ok())
            }
            _ => (norm.clone(), None),
        };
        self.components
            .iter()
            .find(|c| c.pip == base)
            .map(|c| (c, major))
    }

    /// Finds a library by its id.
    pub fn library(&self, id: &str) -> Option<&Library> {
        self.libraries.iter().find(|l| l.id == id)
    }

    /// Finds the library a file name or SONAME belongs to, also for names the catalog does not list
    /// verbatim: `libcublas.so.12.9.1.4` (a real file behind the SONAME), `libcudart-1a2b3c4d.so.12`
    /// (auditwheel's hashed copy), `libnvrtc-builtins.so.12.4` (a minor of a `major.minor` library
    /// the catalog does not list). Returns the match and whether it was exact.
    pub fn library_by_name(&self, name: &str) -> Option<(LibraryMatch<'_>, bool)> {
        self.library_by_name_hinted(name, None)
    }

    /// [`Catalog::library_by_name`] with a CUDA major hint for shared SONAMEs.
    pub fn library_by_name_hinted(
        &self,
        name: &str,
        hint: Option<u32>,
    ) -> Option<(LibraryMatch<'_>, bool)> {
        if let Some(m) = self.library_by_soname_hinted(name, hint) {
            return Some((m, true));
        }
        // Strip an auditwheel-style hash: `<stem>-<8 hex>.so...`.
        let unhashed = strip_graft_hash(name);
        if let Some(m) = self.library_by_soname_hinted(&unhashed, hint) {
            return Some((m, false));
        }
        // A full version behind a SONAME: try successively shorter prefixes.
        let mut candidate = unhashed.as_str();
        while let Some(pos) = candidate.rfind('.') {
            candidate = &candidate[..pos];
            if !candidate.contains(".so") {
                break;
            }
            if let Some(m) = self.library_by_soname_hinted(candidate, hint) {
                return Some((m, false));
            }
        }
        // `stem.so.MAJOR.MINOR` of a library whose SONAME carries the minor.
        let (stem, version) = unhashed.split_once(".so.")?;
        let major: u32 = version.split('.').next()?.parse().ok()?;
        self.libraries.iter().find_map(|lib| {
            if lib.stem != stem {
                return None;
            }
            let m = lib.cuda.iter().find(|m| {
                m.policy == SonamePolicy::MajorMinor
                    && m.sonames.iter().any(|s| soname_major(s) == Some(major))
            })?;
            Some((
                LibraryMatch {
                    library: lib,
                    major: m,
                    ambiguous: false,
                },
                false,
            ))
        })
    }

    /// Classifies a NEEDED entry or SONAME.
    pub fn classify(&self, soname: &str) -> SonameClass<'_> {
        self.classify_hinted(soname, None)
    }

    /// [`Catalog::classify`] with a CUDA major hint for SONAMEs shared by several majors.
    pub fn classify_hinted(&self, soname: &str, hint: Option<u32>) -> SonameClass<'_> {
        if let Some((m, _)) = self
            .library_by_name_hinted(soname, hint)
            .filter(|(_, exact)| *exact)
            .or_else(|| self.major_minor_family(soname, hint))
            .filter(|(m, _)| m.library.interface.is_none())
        {
            return match m.library.kind {
                LibraryKind::Toolkit => SonameClass::Toolkit(m),
                LibraryKind::External => SonameClass::External(m),
            };
        }
        if let Some(d) = self.driver_lib(soname) {
            return SonameClass::Driver(d);
        }
        if let Some(v) = self.vendor_lib(soname) {
            return SonameClass::Vendor(v);
        }
        if let Some(s) = self.system_libs.iter().find(|s| s.soname == soname) {
            return SonameClass::System(s);
        }
        SonameClass::Other
    }

    /// A CUDA toolkit library of a release older than every one the catalog lists (CUDA 10 and
    /// before, for which NVIDIA ships no wheels): its file name has a toolkit library's stem and a
    /// version below the oldest SONAME listed for it (`libcudart.so.10.2`, `libcublas.so.10`), or
    /// it is a listed SONAME that several releases share and the file's other libraries say
    /// the older one (`libcufft.so.10` is CUDA 11's and also CUDA 10.1's and 10.2's: beside
    /// `libcudart.so.10.2`, `hint` is 10). Renamed copies (`libcudart-1a2b3c4d.so.10.2`) count.
    pub fn older_release(&self, name: &str, hint: Option<u32>) -> Option<OlderRelease<'_>> {
        let plain = unhashed(name).unwrap_or_else(|| name.to_string());
        let (stem, version) = plain.split_once(".so.")?;
        let version = version_numbers(version)?;
        // The CUDA toolkit's own libraries (those of the `cuda-toolkit` metapackage), whose
        // releases are CUDA's, listed from the oldest CUDA major with wheels: before it NVIDIA
        // shipped none. cuDNN, TensorRT or NCCL releases the catalog does not list may have.
        let oldest_with_wheels = self
            .libraries
            .iter()
            .flat_map(|l| &l.cuda)
            .filter(|m| m.pip.is_some())
            .map(|m| m.major)
            .min()?;
        let library = self.libraries.iter().find(|l| {
            l.kind == LibraryKind::Toolkit && l.toolkit_extra.is_some() && l.stem == stem
        })?;
        let oldest_major = library.cuda.iter().map(|m| m.major).min()?;
        if oldest_major != oldest_with_wheels {
            return None;
        }
        let oldest_soname = library
            .cuda
            .iter()
            .flat_map(|m| &m.sonames)
            .filter_map(|s| s.split_once(".so.").filter(|(st, _)| *st == stem))
            .filter_map(|(_, v)| version_numbers(v))
            .min()?;
        let older_hint = hint.filter(|h| *h < oldest_major);
        // Where every listed SONAME's major is its CUDA major (cudart, cuBLAS, NVRTC, NPP), the
        // name says its release; elsewhere (cuFFT's `.so.10` is CUDA 11's, and CUDA 10's too)
        // the file's other libraries may.
        let names_its_release = library.cuda.iter().all(|m| {
            m.sonames
                .iter()
                .all(|s| soname_major(s).is_none_or(|v| v == m.major))
        });
        if version[0] >= oldest_soname[0] {
            // A SONAME of a listed major (a minor the catalog does not list is that major's):
            // older only where it is listed, its name does not say its release, and the file
            // says the older one.
            let listed = library.cuda.iter().any(|m| m.sonames.contains(&plain));
            return (listed && !names_its_release && version == oldest_soname)
                .then_some(older_hint)
                .flatten()
                .map(|cuda_major| OlderRelease {
                    library,
                    cuda_major,
                    cuda_major_known: true,
                });
        }
        // Else it is at most the release before the oldest listed.
        let (cuda_major, cuda_major_known) = match (older_hint, names_its_release) {
            (Some(h), _) => (h, true),
            (None, true) => (version[0].min(u64::from(oldest_major - 1)) as u32, true),
            (None, false) => (oldest_major - 1, false),
        };
        Some(OlderRelease {
            library,
            cuda_major,
            cuda_major_known,
        })
    }

    /// The CUDA major a name of an older release says outright ([`Catalog::older_release`]
    /// with `cuda_major_known`): 10 for `libcudart.so.10.2`, none for `libcusparse.so.9.0`
    /// or a name later releases share.
    pub fn older_release_major(&self, name: &str) -> Option<u32> {
        self.older_release(name, None)
            .filter(|o| o.cuda_major_known)
            .map(|o| o.cuda_major)
    }

    /// The catalog library a renamed copy is of ([`unhashed`]): `libcudart-5a077122.so.12.0.107`
    /// is cudart's `libcudart.so.12`. None for a name without a repair tool's hash.
    pub fn renamed_copy_of(&self, name: &str, hint: Option<u32>) -> Option<LibraryMatch<'_>> {
        let plain = unhashed(name)?;
        self.library_by_name_hinted(&plain, hint)
            .map(|(m, _)| m)
            .filter(|m| m.library.interface.is_none())
    }

    /// A `major.minor` library's SONAME for a minor the catalog does not list
    /// (`libnvrtc-builtins.so.12.0`, where the catalog lists the 12.9 wheel's `.so.12.9`).
    pub fn major_minor_family(
        &self,
        soname: &str,
        hint: Option<u32>,
    ) -> Option<(LibraryMatch<'_>, bool)> {
        let (m, _) = self.library_by_name_hinted(soname, hint)?;
        let listed_form = m.major.policy == SonamePolicy::MajorMinor
            && strip_graft_hash(soname) == soname
            && soname
                .split_once(".so.")
                .is_some_and(|(_, v)| v.split('.').count() == 2);
        listed_form.then_some((m, false))
    }

    /// The other vendor's runtime library this SONAME belongs to: `<stem>.so` or
    /// `<stem>.so.<anything>`.
    pub fn vendor_lib(&self, soname: &str) -> Option<&VendorLib> {
        let (stem, rest) = soname.split_once(".so")?;
        if !(rest.is_empty() || rest.starts_with('.')) {
            return None;
        }
        self.vendor_libs.iter().find(|v| v.stem == stem)
    }

    /// The driver library with this SONAME. Also matches a hashed graft of it, and, for driver
    /// libraries listed by their bare `.so` name, the SONAME that carries the driver version
    /// (`libnvidia-gpucomp.so.595.45.04`).
    pub fn driver_lib(&self, name: &str) -> Option<&DriverLib> {
        let unhashed = strip_graft_hash(name);
        self.driver_libs.iter().find(|d| {
            d.soname == name
                || d.soname == unhashed
                || (d.soname.ends_with(".so")
                    && unhashed
                        .strip_prefix(d.soname.as_str())
                        .is_some_and(|rest| {
                            rest.starts_with('.')
                                && rest[1..].split('.').all(|p| p.parse::<u32>().is_ok())
                        }))
        })
    }

    /// The newest CUDA release the catalog knows of: over its toolkit driver rows, PTX ISA rows
    /// and the first toolkit of each compute capability.
    pub fn newest_cuda(&self) -> Option<CudaVersion> {
        self.toolkits
            .iter()
            .map(|t| t.version.as_str())
            .chain(self.ptx_isa.iter().map(|p| p.cuda.as_str()))
            .chain(self.archs.iter().map(|a| a.first_cuda.as_str()))
            .filter_map(CudaVersion::parse)
            .max()
    }

    /// Minimum Linux driver of a toolkit version (exact `major.minor`, else the newest older one).
    pub fn min_driver(&self, cuda: CudaVersion) -> Option<&ToolkitDriver> {
        self.toolkits
            .iter()
            .filter_map(|t| CudaVersion::parse(&t.version).map(|v| (v, t)))
            .filter(|(v, _)| *v <= cuda && v.major == cuda.major)
            .max_by_key(|(v, _)| *v)
            .map(|(_, t)| t)
    }

    /// Minor-version compatibility floor of a CUDA major.
    pub fn minor_compat_floor(&self, major: u32) -> Option<&MinorCompat> {
        self.minor_compat.iter().find(|m| m.major == major)
    }

    /// The toolkit that introduced a PTX ISA version (`8.7` → `12.8`).
    pub fn cuda_for_ptx_isa(&self, isa: CudaVersion) -> Option<CudaVersion> {
        self.ptx_isa
            .iter()
            .find(|p| CudaVersion::parse(&p.isa) == Some(isa))
            .and_then(|p| CudaVersion::parse(&p.cuda))
    }

    /// The compute capability entry for `sm` (e.g. 90).
    pub fn arch(&self, sm: u32) -> Option<&Arch> {
        self.archs.iter().find(|a| a.sm == sm)
    }

    /// The compute capabilities a toolkit version can target, sorted.
    pub fn archs_for_cuda(&self, cuda: CudaVersion) -> Vec<&Arch> {
        let mut v: Vec<&Arch> = self
            .archs
            .iter()
            .filter(|a| {
                let first = CudaVersion::parse(&a.first_cuda);
                let last = a.last_cuda.as_deref().and_then(CudaVersion::parse);
                first.is_some_and(|f| f <= cuda) && last.is_none_or(|l| cuda <= l)
            })
            .collect();
        v.sort_by_key(|a| a.sm);
        v
    }
}

/// A SONAME's version as numbers (`10.2` → [10, 2]); none unless every part is a number.
fn version_numbers(v: &str) -> Option<Vec<u64>> {
    v.split('.').map(|p| p.parse().ok()).collect()
}

/// The major of a SONAME's version: `libnvrtc.so.11.2` → 11.
fn soname_major(soname: &str) -> Option<u32> {
    soname.split_once(".so.")?.1.split('.').next()?.parse().ok()
}

fn replace_by<T, K: PartialEq>(into: &mut Vec<T>, new: Vec<T>, key: impl Fn(&T) -> K) {
    for item in new {
        let k = key(&item);
        if let Some(slot) = into.iter_mut().find(|x| key(x) == k) {
            *slot = item;
        } else {
            into.push(item);
        }
    }
}

/// The name the static linker looks for (`-lcudart` → `libcudart.so`) of a library file:
/// `libcudart.so.13` → `libcudart.so`; none for a file that is not a shared library.
///
/// ```
/// assert_eq!(cudist_catalog::linker_name("libnvrtc-builtins.so.13.5").as_deref(), Some("libnvrtc-builtins.so"));
/// ```
pub fn linker_name(file: &str) -> Option<String> {
    if let Some(i) = file.find(".so.") {
        return Some(file[..i + 3].to_string());
    }
    file.ends_with(".so").then(|| file.to_string())
}

/// Which of a library's SONAMEs a copy named `name` is: its name without a repair tool's hash,
/// shortened past full versions (`libucs-14c218c5.so.0.0.0` → `libucs.so.0`, of UCX's
/// `libucp.so.0`, `libucs.so.0`, …). None when no listed SONAME is such a prefix.
pub fn soname_of_copy(sonames: &[String], name: &str) -> Option<String> {
    let plain = strip_graft_hash(name);
    let mut candidate = plain.as_str();
    loop {
        if sonames.iter().any(|s| s == candidate) {
            return Some(candidate.to_string());
        }
        let pos = candidate.rfind('.')?;
        candidate = &candidate[..pos];
        if !candidate.contains(".so") {
            return None;
        }
    }
}

/// Removes the `-<8 hex digits>` that auditwheel (and cudist) insert before `.so` when grafting a
/// library: `libcudart-1a2b3c4d.so.12` → `libcudart.so.12`. Other names come back unchanged.
pub fn strip_graft_hash(name: &str) -> String {
    if let Some(so) = name.find(".so") {
        let (head, tail) = name.split_at(so);
        if let Some(dash) = head.rfind('-') {
            let hash = &head[dash + 1..];
            if hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return format!("{}{}", &head[..dash], tail);
            }
        }
    }
    name.to_string()
}

/// The name without the hash a repair tool put in a renamed copy of a library, when it has one:
/// auditwheel's `<stem>-<8 hex>.so…` (`libcudart-5a077122.so.12.0.107`) or the `<stem>.<8 hex>.so…`
/// form other tools write (`libnvjpeg.4a0b5c81.so.13`). None for a name without such a hash.
pub fn unhashed(name: &str) -> Option<String> {
    let dashed = strip_graft_hash(name);
    if dashed != name {
        return Some(dashed);
    }
    let so = name.find(".so")?;
    let (head, tail) = name.split_at(so);
    let dot = head.rfind('.')?;
    let hash = &head[dot + 1..];
    (hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| format!("{}{}", &head[..dot], tail))
}

/// Whether `s` is a PEP 508 distribution name: ASCII letters and digits, with `.`, `_` or `-`
/// inside.
pub fn is_distribution_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_releases_are_told_by_name_or_by_the_file() {
        let cat = Catalog::builtin();
        let of = |n: &str, hint: Option<u32>| {
            cat.older_release(n, hint)
                .map(|o| (o.library.id.as_str(), o.cuda_major, o.cuda_major_known))
        };
        // The name says the release where every listed SONAME's major is CUDA's.
        assert_eq!(of("libcudart.so.10.2", None), Some(("cudart", 10, true)));
        assert_eq!(of("libcublas.so.10", None), Some(("cublas", 10, true)));
        assert_eq!(
            of("libcudart-1a2b3c4d.so.10.2", None),
            Some(("cudart", 10, true))
        );
        assert_eq!(of("libnvrtc.so.9.2", None), Some(("nvrtc", 9, true)));
        // cuSPARSE's do not (CUDA 13's is `.so.12`): before CUDA 11, which one is not said.
        assert_eq!(
            of("libcusparse.so.9.0", None),
            Some(("cusparse", 10, false))
        );
        assert_eq!(
            of("libcusparse.so.9.0", Some(9)),
            Some(("cusparse", 9, true))
        );
        // A SONAME CUDA 10 shares with CUDA 11: CUDA 10's only where the file says so.
        assert_eq!(of("libcufft.so.10", None), None);
        assert_eq!(of("libcufft.so.10", Some(11)), None);
        assert_eq!(of("libcufft.so.10", Some(10)), Some(("cufft", 10, true)));
        // A minor the catalog does not list is its major's; listed names are not older, and
        // a listed name that says its release is that release's whatever the file says.
        assert_eq!(of("libcupti.so.11.7", None), None);
        assert_eq!(of("libcublas.so.12", Some(10)), None);
        assert_eq!(of("libnvrtc.so.11.0", Some(10)), None);
        assert_eq!(of("libcurand.so.10", Some(10)), Some(("curand", 10, true)));
        // Libraries whose releases are not CUDA's (cuDNN 7, TensorRT 8 had wheels of their
        // own), and names of no toolkit library, are not judged.
        assert_eq!(of("libcudnn.so.7", None), None);
        assert_eq!(of("libnvinfer.so.8", None), None);
        assert_eq!(of("libacme.so.1", None), None);
        assert_eq!(of("libcudart.so", None), None);
    }

    /// Every fact cites its primary source (a vendor's document, a repository file, a package
    /// read off PyPI), never a file of the workplace it was written in, which users do not have.
    #[test]
    fn sources_cite_primary_sources_not_this_workplace() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
        let mut read = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            for (n, line) in text.lines().enumerate() {
                let l = line.to_ascii_lowercase();
                assert!(
                    !(l.contains("shared/")
                        || l.contains("fact sheet")
                        || l.contains("cuda-facts")),
                    "{}:{}: {line}",
                    e.path().display(),
                    n + 1
                );
            }
            read += 1;
        }
        assert!(read >= 3, "read {read} data files");
    }

    /// Every built-in library from a wheel that is not NVIDIA's (RAPIDS' C++ wheels) is where
    /// the real wheels install it (every recorded release), and its `python_loader` loads what
    /// the newest release's load.py names and calls the loaders it calls: checked against
    /// data/provider-wheels.json (scripts/pip-index.py, read off PyPI).
    #[test]
    fn providers_agree_with_the_wheels() {
        #[derive(serde::Deserialize)]
        struct Snapshot {
            packages: BTreeMap<String, Provider>,
        }
        #[derive(serde::Deserialize)]
        struct Provider {
            module: String,
            releases: BTreeMap<String, Release>,
        }
        #[derive(serde::Deserialize)]
        struct Release {
            libraries: Vec<String>,
            load: Option<Load>,
        }
        #[derive(serde::Deserialize)]
        struct Load {
            names: Vec<String>,
            calls: Vec<String>,
            #[serde(default)]
            pathfinder: Vec<String>,
        }
        let snap: Snapshot =
            serde_json::from_str(include_str!("../data/provider-wheels.json")).unwrap();
        let cat = Catalog::builtin();
        let loaders = cat.python_loaders();
        let mut bad = Vec::new();
        let mut checked = 0;
        for l in cat
            .libraries
            .iter()
            .filter(|l| l.kind == LibraryKind::External)
        {
            for m in &l.cuda {
                let (Some(pip), Some(dir)) = (&m.pip, &m.pip_dir) else {
                    bad.push(format!(
                        "{}: CUDA {} names no wheel or directory",
                        l.id, m.major
                    ));
                    continue;
                };
                let Some(p) = snap.packages.get(pip) else {
                    bad.push(format!("{}: {pip} not in data/provider-wheels.json", l.id));
                    continue;
                };
                if let Some(range) = &m.pip_versions {
                    if !p.releases.keys().any(|v| in_simple_range(v, range)) {
                        bad.push(format!("{}: no release of {pip} in {range}", l.id));
                    }
                }
                for (version, r) in &p.releases {
                    checked += 1;
                    for s in &m.sonames {
                        let since = m.pip_since.get(s).map(|v| driver_version_key(v));
                        if since.is_some_and(|since| driver_version_key(version) < since) {
                            continue;
                        }
                        if !r.libraries.contains(&format!("{dir}/{s}")) {
                            bad.push(format!("{}: {pip} {version} installs no {dir}/{s}", l.id));
                        }
                    }
                    // The loader is described as the newest release has it (loaders gain
                    // calls: libkvikio 26.4 did not call rapids_logger's yet).
                    let newest = p
                        .releases
                        .keys()
                        .max_by_key(|v| driver_version_key(v))
                        .is_some_and(|n| n == version);
                    let Some(f) = l.python_loader.as_ref().filter(|_| newest) else {
                        continue;
                    };
                    if f != &format!("{}.load_library", p.module) {
                        bad.push(format!(
                            "{}: loader {f}, but {pip}'s module is {}",
                            l.id, p.module
                        ));
                    }
                    let Some(load) = &r.load else {
                        bad.push(format!("{}: {pip} {version} has no load_library", l.id));
                        continue;
                    };
                    // Each name the loader loads is one of the library's SONAMEs (libucp.so is
                    // the file of SONAME libucp.so.0) ...
                    let of_loader = cat.python_loader_sonames(f);
                    for n in &load.names {
                        let known = of_loader
                            .iter()
                            .any(|s| s == n || s.starts_with(&format!("{n}.")));
                        // (libkvikio also preloads the system's librt.so.1.)
                        if !known && !n.starts_with("librt.") {
                            bad.push(format!(
                                "{}: {pip} {version} loads {n}, not in the catalog",
                                l.id
                            ));
                        }
                    }
                    // ... and a library of this wheel that names no loader (reached through
                    // another's NEEDED entries: libcugraph_mtmg.so) is said to be loaded by it
                    // only where the loader names it ...
                    for m in cat
                        .libraries
                        .iter()
                        .filter(|o| o.python_loader.is_none())
                        .flat_map(|o| &o.cuda)
                        .filter(|m| m.pip.as_deref() == Some(pip.as_str()))
                    {
                        for so in m.sonames.iter().filter(|so| {
                            of_loader.contains(so) && !l.python_loader_needed.contains(so)
                        }) {
                            let named = load
                                .names
                                .iter()
                                .any(|n| so == n || so.starts_with(&format!("{n}.")));
                            if !named {
                                bad.push(format!(
                                    "{}: the catalog says {f} loads {so}; {pip} {version}'s does not",
                                    l.id
                                ));
                            }
                        }
                    }
                    // ... and it calls exactly the catalog's loaders the row says it calls.
                    let calls: BTreeSet<String> = load
                        .calls
                        .iter()
                        .map(|c| format!("{c}.load_library"))
                        .filter(|c| loaders.contains(c.as_str()))
                        .collect();
                    let said: BTreeSet<String> = l.python_loader_calls.iter().cloned().collect();
                    if calls != said {
                        bad.push(format!(
                            "{}: {pip} {version} calls {calls:?}, the catalog says {said:?}",
                            l.id
                        ));
                    }
                    // ... and what the libraries it loads need from their own directory is
                    // installed there (readelf's NEEDED entries are cited in the row) ...
                    for so in &l.python_loader_needed {
                        if !r.libraries.contains(&format!("{dir}/{so}")) {
                            bad.push(format!(
                                "{}: {pip} {version} installs no {dir}/{so}, which its loader's libraries are said to need",
                                l.id
                            ));
                        }
                    }
                    // ... and hands cuda-pathfinder exactly the names the row says.
                    let found: BTreeSet<&String> = load.pathfinder.iter().collect();
                    let said: BTreeSet<&String> = l.python_loader_pathfinder.iter().collect();
                    if found != said {
                        bad.push(format!(
                            "{}: {pip} {version} loads {found:?} through cuda-pathfinder, the catalog says {said:?}",
                            l.id
                        ));
                    }
                }
            }
        }
        assert!(checked > 40, "only {checked} releases checked");
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// Every `Requires-Dist` range repair can write names releases pip can install: checked
    /// against the release lists in data/pip-index.json (scripts/pip-index.py refreshes them).
    #[test]
    fn pip_ranges_have_releases() {
        #[derive(Deserialize)]
        struct Index {
            packages: BTreeMap<String, Vec<String>>,
        }
        let index: Index = serde_json::from_str(include_str!("../data/pip-index.json")).unwrap();
        let catalog = Catalog::builtin();
        let mut bad = Vec::new();
        let mut checked = 0;
        // (RAPIDS' wheels: providers_agree_with_the_wheels.)
        for lib in catalog
            .libraries
            .iter()
            .filter(|l| l.kind == LibraryKind::Toolkit)
        {
            for m in &lib.cuda {
                let Some(pip) = &m.pip else { continue };
                let Some(releases) = index.packages.get(pip) else {
                    bad.push(format!(
                        "{pip}: not in data/pip-index.json (run scripts/pip-index.py)"
                    ));
                    continue;
                };
                for soname in &m.sonames {
                    if let Some(PipRequirement::Range(r)) = m.pip_requirement(soname) {
                        checked += 1;
                        if !releases.iter().any(|v| in_simple_range(v, &r)) {
                            bad.push(format!(
                                "{} CUDA {}: {soname} -> {pip}{r}, but its releases are {}",
                                lib.id,
                                m.major,
                                releases.join(", ")
                            ));
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} ranges checked");
        assert!(
            bad.is_empty(),
            "ranges no release satisfies:\n{}",
            bad.join("\n")
        );
    }

    /// Every release a range admits installs the SONAME in the catalog's wheel directory (so the
    /// RPATH repair writes reaches it whichever release pip picks): checked against the wheel file
    /// lists in data/pip-wheels.json. The only releases allowed to lack it are listed here, each a
    /// gap NVIDIA left in one release.
    #[test]
    fn every_release_in_a_range_installs_the_library_where_the_rpath_points() {
        const GAPS: &[(&str, &str, &str)] = &[
            // cutensor 2.8.0 left libcutensorMg out; 2.8.1 has it again.
            ("cutensor-cu12", "2.8.0", "libcutensorMg.so.2"),
            ("cutensor-cu13", "2.8.0", "libcutensorMg.so.2"),
        ];
        #[derive(Deserialize)]
        struct Index {
            packages: BTreeMap<String, Vec<String>>,
        }
        let index: Index = serde_json::from_str(include_str!("../data/pip-index.json")).unwrap();
        let wheels: BTreeMap<String, BTreeMap<String, Vec<String>>> =
            serde_json::from_str(include_str!("../data/pip-wheels.json")).unwrap();
        let catalog = Catalog::builtin();
        let (mut bad, mut checked) = (Vec::new(), 0);
        for lib in catalog
            .libraries
            .iter()
            .filter(|l| l.kind == LibraryKind::Toolkit)
        {
            for m in &lib.cuda {
                let (Some(pip), Some(dir)) = (&m.pip, &m.pip_dir) else {
                    continue;
                };
                let Some(files) = wheels.get(pip) else {
                    bad.push(format!("{pip}: not in data/pip-wheels.json"));
                    continue;
                };
                for soname in &m.sonames {
                    let Some(PipRequirement::Range(r)) = m.pip_requirement(soname) else {
                        continue;
                    };
                    let path = format!("{dir}/{soname}");
                    for v in index.packages[pip]
                        .iter()
                        .filter(|v| in_simple_range(v, &r))
                    {
                        let Some(f) = files.get(v) else { continue };
                        checked += 1;
                        if !f.contains(&path)
                            && !GAPS.contains(&(pip.as_str(), v.as_str(), soname.as_str()))
                        {
                            bad.push(format!("{pip} {v} (admitted by {r}) has no {path}: {f:?}"));
                        }
                    }
                    // Releases of the other directories install it there.
                    for (other, range) in &m.pip_other_dirs {
                        let path = format!("{other}/{soname}");
                        let releases: Vec<&String> = index.packages[pip]
                            .iter()
                            .filter(|v| in_simple_range(v, range))
                            .collect();
                        if releases.is_empty() {
                            bad.push(format!("{pip}: no release in {range} ({other})"));
                        }
                        for v in releases {
                            let Some(f) = files.get(v) else { continue };
                            checked += 1;
                            if !f.contains(&path)
                                || m.other_line_of(v).map(|(d, _)| d) != Some(other.as_str())
                            {
                                bad.push(format!("{pip} {v} (in {range}) has no {path}: {f:?}"));
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "only {checked} releases checked");
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn simple_ranges() {
        assert!(is_simple_range(">=1,<2") && is_simple_range(">=11.2,<12"));
        assert!(
            !is_simple_range(">=2,<1") && !is_simple_range("==12.*") && !is_simple_range(">=1")
        );
        assert!(in_simple_range("1.14.1.1", ">=1,<2"));
        assert!(in_simple_range("12.0.76", ">=12,<13") && !in_simple_range("13.0.1", ">=12,<13"));
        assert!(!in_simple_range("11.1.9", ">=11.2,<12"));
    }

    #[test]
    fn ranges_follow_the_soname() {
        let one = |s: &str, p, l: &[&str]| {
            soname_range(s, p, &l.iter().map(|x| x.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            one("libcublas.so.12", SonamePolicy::Major, &["libcublas.so.12"]).unwrap(),
            ">=12,<13"
        );
        assert_eq!(
            one("libcurand.so.10", SonamePolicy::Major, &["libcurand.so.10"]).unwrap(),
            ">=10,<11"
        );
        let nvrtc = ["libnvrtc.so.11.0", "libnvrtc.so.11.1", "libnvrtc.so.11.2"];
        assert_eq!(
            one("libnvrtc.so.11.1", SonamePolicy::MajorMinor, &nvrtc).unwrap(),
            ">=11.1,<11.2"
        );
        assert_eq!(
            one("libnvrtc.so.11.2", SonamePolicy::MajorMinor, &nvrtc).unwrap(),
            ">=11.2,<12"
        );
        assert_eq!(
            one(
                "libcudart.so.11.0",
                SonamePolicy::MajorMinor,
                &["libcudart.so.11.0"]
            )
            .unwrap(),
            ">=11.0,<12"
        );
        assert_eq!(one("librmm.so", SonamePolicy::None, &[]), None);
    }

    #[test]
    fn linker_names() {
        assert_eq!(
            linker_name("libcudart.so.13").as_deref(),
            Some("libcudart.so")
        );
        assert_eq!(
            linker_name("libnvrtc-builtins.so.13.5").as_deref(),
            Some("libnvrtc-builtins.so")
        );
        assert_eq!(linker_name("libnvvm.so").as_deref(), Some("libnvvm.so"));
        assert_eq!(linker_name("libcudart_static.a"), None);
    }

    #[test]
    fn path_patterns_and_rules() {
        assert!(path_matches("cublas*.h", "cublas_v2.h"));
        assert!(!path_matches("cublas*.h", "sub/cublas_v2.h"));
        assert!(path_matches("crt/**", "crt/host_config.h"));
        assert!(path_matches("crt/**", "crt/a/b.h"));
        assert!(!path_matches("crt/**", "crt"));
        assert!(path_matches(
            "lib64/libnpp*_static.a",
            "lib64/libnppc_static.a"
        ));
        assert!(!path_matches("lib64/libnpp*_static.a", "lib64/libnppc.so"));
        assert!(path_matches("a*b*c", "axxbyyc") && !path_matches("a*b*c", "axxc"));
        let cat = Catalog::builtin();
        let c = |p: &str, m: u32| cat.component_of_path(p, Some(m));
        assert_eq!(c("include/crt/host_config.h", 13), Some("cuda_crt"));
        assert_eq!(c("include/crt/host_config.h", 12), Some("cuda_nvcc"));
        assert_eq!(c("include/cublas_v2.h", 13), Some("libcublas"));
        assert_eq!(c("include/cuda_runtime.h", 13), Some("cuda_cudart"));
        assert_eq!(c("include/cccl/cub/cub.cuh", 13), Some("cuda_cccl"));
        assert_eq!(c("bin/nvcc", 12), Some("cuda_nvcc"));
        assert_eq!(c("nvvm/bin/cicc", 13), Some("libnvvm"));
        assert_eq!(c("nvvm/bin/cicc", 12), Some("cuda_nvcc"));
        assert_eq!(c("lib64/libcudart_static.a", 13), Some("cuda_cudart"));
        assert_eq!(c("include/my_own.h", 13), None);
        assert_eq!(c("version.json", 13), None);
        // A user's rules win over the built-in ones; a bad pattern is refused.
        let mut cat = Catalog::builtin();
        cat.merge_str(
            "user",
            "schema = 1\n[[header]]\ncomponent = \"mine\"\nmatch = [\"cuda_runtime.h\"]\n",
        )
        .unwrap();
        assert_eq!(
            cat.component_of_path("include/cuda_runtime.h", Some(13)),
            Some("mine")
        );
        let e = cat
            .merge_str(
                "bad",
                "schema = 1\n[[file]]\ncomponent = \"x\"\nmatch = [\"a/**/b\"]\n",
            )
            .unwrap_err();
        assert!(e.to_string().contains("a/**/b"), "{e}");
    }

    #[test]
    fn builtin_loads_and_indexes() {
        let cat = Catalog::builtin();
        assert!(cat.libraries.len() >= 20, "{}", cat.libraries.len());
        let m = cat.library_by_soname("libcudart.so.12").expect("cudart 12");
        assert_eq!(m.library.id, "cudart");
        assert_eq!(m.major.major, 12);
        assert_eq!(m.major.policy, SonamePolicy::Major);
        assert_eq!(m.major.pip.as_deref(), Some("nvidia-cuda-runtime-cu12"));
        let m = cat.library_by_soname("libcublas.so.13").expect("cublas 13");
        assert_eq!(m.major.pip_dir.as_deref(), Some("nvidia/cu13/lib"));
        let m = cat
            .library_by_soname("libcudart.so.11.0")
            .expect("cudart 11");
        assert_eq!(m.major.policy, SonamePolicy::MajorMinor);
        assert!(matches!(
            cat.classify("libcuda.so.1"),
            SonameClass::Driver(_)
        ));
        assert!(matches!(cat.classify("libc.so.6"), SonameClass::System(_)));
        assert!(matches!(cat.classify("libfoo.so.1"), SonameClass::Other));
    }

    #[test]
    fn hashed_and_full_version_names() {
        let cat = Catalog::builtin();
        let (m, exact) = cat.library_by_name("libcudart-1a2b3c4d.so.12").unwrap();
        assert_eq!(m.library.id, "cudart");
        assert!(!exact);
        let (m, _) = cat.library_by_name("libcublas.so.12.9.1.4").unwrap();
        assert_eq!(m.library.id, "cublas");
        assert!(cat.library_by_name("libcublas-xyz.so.12").is_none());
        assert_eq!(strip_graft_hash("libfoo-12345678.so"), "libfoo.so");
        assert_eq!(strip_graft_hash("libfoo-1234567.so"), "libfoo-1234567.so");
        // A copy of one of a library's several SONAMEs is that one (nixl-cu12's UCX: libucs,
        // not the first listed, libucp).
        let ucx: Vec<String> = ["libucp.so.0", "libucs.so.0", "libuct.so.0", "libucm.so.0"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            soname_of_copy(&ucx, "libucs-14c218c5.so.0.0.0").as_deref(),
            Some("libucs.so.0")
        );
        assert_eq!(
            soname_of_copy(&ucx, "libucm.so.0").as_deref(),
            Some("libucm.so.0")
        );
        assert_eq!(soname_of_copy(&ucx, "libucx-14c218c5.so.0"), None);
    }

    #[test]
    fn other_vendors_runtimes() {
        let cat = Catalog::builtin();
        for (soname, vendor) in [
            ("libhipblas.so.2", "AMD ROCm"),
            ("libhipblas.so.3", "AMD ROCm"),
            ("libhipblaslt.so.1", "AMD ROCm"),
            ("librocrand.so.1", "AMD ROCm"),
            ("libsycl.so.9", "Intel oneAPI"),
            ("libsvml.so", "Intel oneAPI"),
            ("libintlc.so.5", "Intel oneAPI"),
        ] {
            match cat.classify(soname) {
                SonameClass::Vendor(v) => assert_eq!(v.vendor, vendor, "{soname}"),
                _ => panic!("{soname} is not another vendor's runtime"),
            }
        }
        // Every SONAME read from a real file matches its own row.
        for v in &cat.vendor_libs {
            assert!(!v.sources.is_empty(), "{} has no source", v.stem);
            for s in &v.seen {
                assert_eq!(cat.vendor_lib(s).map(|m| &m.stem), Some(&v.stem));
            }
        }
        // A longer name that merely starts with a stem is not that library.
        assert!(cat.vendor_lib("libhipblas_extra.so.1").is_none());
        assert!(cat.vendor_lib("libhipblaslt-ext.so").is_none());
        assert!(matches!(
            cat.classify("libhipblasfoo.so.2"),
            SonameClass::Other
        ));
        let bad =
            "schema = 1\n[[vendor_lib]]\nstem = \"libx.so\"\nvendor = \"V\"\nprovided_by = \"p\"\n";
        assert!(Catalog::builtin().merge_str("test", bad).is_err());
        let bad_seen = "schema = 1\n[[vendor_lib]]\nstem = \"libx\"\nvendor = \"V\"\nprovided_by = \"p\"\nseen = [\"libxy.so.1\"]\n";
        assert!(Catalog::builtin().merge_str("test", bad_seen).is_err());
    }

    #[test]
    fn shared_sonames_and_families() {
        let cat = Catalog::builtin();
        assert_eq!(cat.majors_of("libcurand.so.10"), vec![11, 12, 13]);
        let m = cat.library_by_soname("libcurand.so.10").unwrap();
        assert!(m.ambiguous);
        assert_eq!(m.major.major, 13);
        let m = cat
            .library_by_soname_hinted("libcurand.so.10", Some(12))
            .unwrap();
        assert!(!m.ambiguous);
        assert_eq!(m.major.pip.as_deref(), Some("nvidia-curand-cu12"));
        // A minor of nvrtc-builtins the catalog does not list.
        match cat.classify("libnvrtc-builtins.so.12.4") {
            SonameClass::Toolkit(m) => {
                assert_eq!(m.library.id, "nvrtc_builtins");
                assert_eq!(m.major.major, 12);
            }
            other => panic!("{other:?}"),
        }
        // Not a family member: a full file version of a major-policy library is no SONAME.
        assert!(matches!(
            cat.classify("libcublas.so.12.9.1.4"),
            SonameClass::Other
        ));
        // Driver libraries whose SONAME carries the driver version.
        if cat
            .driver_libs
            .iter()
            .any(|d| d.soname == "libnvidia-gpucomp.so")
        {
            assert!(cat.driver_lib("libnvidia-gpucomp.so.595.45.04").is_some());
        }
        assert!(cat.driver_lib("libnvidia-ml.so.1").is_some());
        assert!(cat.driver_lib("libcuda-0123abcd.so.1").is_some());
        assert!(cat.driver_lib("libcuda.so.1.x").is_none());
    }

    #[test]
    fn driver_and_arch_queries() {
        let cat = Catalog::builtin();
        let d = cat.min_driver(CudaVersion::parse("12.8").unwrap()).unwrap();
        assert_eq!(d.min_driver, "570.26");
        // 12.7 has no row of its own: the newest older 12.x row answers.
        let d = cat.min_driver(CudaVersion::parse("12.7").unwrap()).unwrap();
        assert_eq!(d.version, "12.6");
        assert_eq!(cat.minor_compat_floor(12).unwrap().min_driver, "525.60.13");
        let archs = cat.archs_for_cuda(CudaVersion::parse("13.0").unwrap());
        assert!(
            archs.iter().all(|a| a.sm >= 75),
            "13.0 dropped Maxwell–Volta"
        );
        assert!(archs.iter().any(|a| a.sm == 90));
        assert!(driver_version_key("580.65.06") > driver_version_key("580.9"));
        // A branch (13.4 onwards) is satisfied by every driver of it.
        let d = cat.min_driver(CudaVersion::parse("13.4").unwrap()).unwrap();
        assert_eq!(d.min_driver, "615");
        assert!(driver_version_key("615.71.09") >= driver_version_key(&d.min_driver));
        assert!(driver_version_key("610.43.02") < driver_version_key(&d.min_driver));
    }

    #[test]
    fn every_cuda_release_has_a_minimum_driver() {
        // Every CUDA release the catalog knows of (a PTX ISA names the release that introduced
        // it) has its own row, 12.7 apart (never released), and the minimums rise with the
        // release within a major.
        let cat = Catalog::builtin();
        for p in &cat.ptx_isa {
            let Some(v) = CudaVersion::parse(&p.cuda) else {
                continue;
            };
            if p.cuda == "12.7" || v.major < 11 {
                continue;
            }
            assert!(
                cat.toolkits.iter().any(|t| t.version == p.cuda),
                "CUDA {} (PTX ISA {}) has no minimum driver in drivers.toml",
                p.cuda,
                p.isa
            );
        }
        let mut rows: Vec<(CudaVersion, Vec<u32>)> = cat
            .toolkits
            .iter()
            .map(|t| {
                (
                    CudaVersion::parse(&t.version).unwrap(),
                    driver_version_key(&t.min_driver),
                )
            })
            .collect();
        rows.sort();
        for w in rows.windows(2) {
            if w[0].0.major == w[1].0.major {
                assert!(w[0].1 <= w[1].1, "{:?} then {:?}", w[0], w[1]);
            }
        }
    }

    #[test]
    fn values_that_end_up_in_wheels_are_checked() {
        let lib = |field: &str| {
            format!(
                "schema = 1\n[[library]]\nid = \"x\"\nstem = \"libx\"\nkind = \"external\"\n\
                 [[library.cuda]]\nmajor = 12\nsonames = [\"libx.so.1\"]\npolicy = \"major\"\n{field}\n"
            )
        };
        let ok = lib("pip = \"x-cu12\"\npip_dir = \"x/lib\"");
        Catalog::builtin().merge_str("ok.toml", &ok).unwrap();
        for (field, want) in [
            (
                "pip = \"x\"\npip_dir = \"../../../../tmp/x\"",
                "has a `..` component",
            ),
            ("pip = \"x\"\npip_dir = \"/abs/lib\"", "is an absolute path"),
            ("pip = \"x\"\npip_dir = \"a:b\"", "holds `:` or `$`"),
            (
                "pip = \"x\\nRequires-Dist: evil\"\npip_dir = \"x/lib\"",
                "is not a distribution name",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_versions = \">=1; extra == 'a'\"",
                "must be `>=A,<B`",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_versions = \">=2,<1\"",
                "must be `>=A,<B`",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_since = { \"libx.so.1\" = \"1,<0\" }",
                "needs one of its sonames and a dotted version",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_since = { \"liby.so.1\" = \"1.2\" }",
                "needs one of its sonames and a dotted version",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_versions = \">=1,<2\"\npip_other_dirs = { \"y/lib\" = \">=1.5,<3\" }",
                "outside pip_versions",
            ),
            (
                "pip = \"x\"\npip_dir = \"x/lib\"\npip_other_dirs = { \"../y\" = \">=0.1,<1\" }",
                "has a `..` component",
            ),
        ] {
            let e = Catalog::builtin()
                .merge_str("bad.toml", &lib(field))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{field}: {e}");
        }
        // Only a regular file of bounded size is read.
        let e = Catalog::builtin()
            .merge_file(Path::new("/dev/zero"))
            .unwrap_err();
        let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
        assert!(chain.contains("a character device"), "{chain}");
    }

    #[test]
    fn newest_cuda_is_the_newest_row() {
        // The newest PTX ISA row (9.5) is CUDA 13.5, newer than any driver row.
        let newest = Catalog::builtin().newest_cuda().unwrap();
        assert_eq!(newest.to_string(), "13.5");
    }

    #[test]
    fn user_file_overrides_and_extends() {
        let mut cat = Catalog::builtin();
        cat.merge_str(
            "user.toml",
            r#"
schema = 1
[[library]]
id = "rmm"
stem = "librmm"
kind = "external"
[[library.cuda]]
major = 12
sonames = ["librmm.so"]
policy = "none"
pip = "librmm-cu12"
pip_dir = "librmm/lib64"
"#,
        )
        .unwrap();
        match cat.classify("librmm.so") {
            SonameClass::External(m) => assert_eq!(m.major.pip.as_deref(), Some("librmm-cu12")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_user_files_are_rejected_with_the_path() {
        let mut cat = Catalog::builtin();
        let e = cat.merge_str("u.toml", "schema = 2").unwrap_err();
        assert!(e.to_string().contains("u.toml"), "{e}");
        let e = cat
            .merge_str(
                "u.toml",
                "schema = 1\n[[library]]\nid='x'\nstem='libx'\nkind='toolkit'\nbogus=1",
            )
            .unwrap_err();
        assert!(matches!(e, CatalogError::Parse { .. }));
        let e = cat
            .merge_str(
                "u.toml",
                "schema = 1\n[[library]]\nid='x'\nstem='libx'\nkind='toolkit'\n[[library.cuda]]\nmajor=12\nsonames=[]\npolicy='major'",
            )
            .unwrap_err();
        assert!(e.to_string().contains("no sonames"), "{e}");
        let e = cat
            .merge_str(
                "u.toml",
                "schema = 1\n[[library]]\nid='x'\nstem='libx'\nkind='toolkit'\nstatic_strings=['x failed']",
            )
            .unwrap_err();
        assert!(e.to_string().contains("need a static_name_table"), "{e}");
    }
}
