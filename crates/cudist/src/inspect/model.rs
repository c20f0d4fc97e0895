//! The inspect report: the structures behind both the human tables and `--json`.
//!
//! The JSON form is a stable, versioned schema (`cudist.inspect/1`), documented field by field in
//! `docs/json-schema.md`. Fields are only ever added within a schema version.

use std::collections::BTreeMap;

use cudist_fatbin::{Codec, EntryKind, SectionKind};
use serde::Serialize;

/// The schema identifier written at the top of every JSON report.
pub const SCHEMA: &str = "cudist.inspect/1";

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub cudist_version: &'static str,
    pub artifacts: Vec<Artifact>,
    /// Inputs that could not be read at all, with the reason; the exit code is non-zero when any
    /// exist (or when an artifact has `problems`).
    pub errors: Vec<InputError>,
    pub summary: Summary,
}

#[derive(Debug, Serialize)]
pub struct InputError {
    pub path: String,
    /// The error and its causes, outermost first, joined with `: `.
    pub error: String,
    /// What to do about it, for well-known failure kinds.
    pub hint: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub artifacts: usize,
    /// Unreadable inputs plus unreadable files inside artifacts.
    pub errors: usize,
    pub elf_files: usize,
    /// Bytes of vendored CUDA toolkit and driver libraries over all artifacts.
    pub vendored_cuda_bytes: u64,
    /// Artifacts whose verdict status is not `ok`.
    pub needs_attention: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    Wheel,
    Directory,
    Elf,
    /// A conda package (`.conda` or `.tar.bz2`).
    Conda,
}

#[derive(Debug, Serialize)]
pub struct Artifact {
    pub path: String,
    pub kind: ArtifactKind,
    /// Size on disk: the wheel file, the ELF file, or the sum of regular files in a directory.
    pub size: u64,
    /// Size once installed (sum of uncompressed members for a wheel; equals `size` otherwise).
    pub installed_size: u64,
    pub wheel: Option<WheelInfo>,
    /// For a conda package: its metadata and whether its `depends` cover the CUDA it links.
    pub conda: Option<CondaInfo>,
    pub elf_files: Vec<ElfReport>,
    /// Files of the artifact that look like ELF but could not be read or analysed (`path` is the
    /// file's path inside the artifact). The exit code is non-zero when any exist.
    pub problems: Vec<InputError>,
    /// CUDA libraries needed by the artifact's ELF files, one row per SONAME.
    pub cuda_needed: Vec<NeededLibrary>,
    /// Driver libraries needed (never to be bundled).
    pub driver_needed: Vec<NeededLibrary>,
    pub vendored: Vec<Vendored>,
    pub device: DeviceSummary,
    pub breakdown: Breakdown,
    /// The most compatible manylinux policy the artifact satisfies, and what blocks better ones.
    pub platform: Platform,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Platform {
    /// The architecture as platform tags name it (`x86_64`, `armv7l`); null when no ELF file
    /// has one.
    pub arch: Option<String>,
    /// `glibc` (manylinux) or `musl` (musllinux).
    pub libc: Option<String>,
    /// Why the artifact gets no platform tag at all (its ELF files are for no architecture a
    /// policy covers; it mixes C libraries; a Python extension says no C library), as auditwheel
    /// refuses such wheels.
    pub error: Option<String>,
    /// ELF files left out of the judgement, and why (another architecture, another C library).
    pub ignored: Vec<String>,
    /// The most compatible policy satisfied (`manylinux_2_17`), or `linux` when none is.
    pub policy: Option<String>,
    /// Its platform tags (`manylinux2014_x86_64`, `manylinux_2_17_x86_64`).
    pub tags: Vec<String>,
    /// Why each more compatible policy fails (first reason per policy, most compatible first).
    pub blocked: Vec<PolicyBlock>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PolicyBlock {
    pub policy: String,
    pub file: String,
    pub reason: String,
}

/// A conda package's metadata and the CUDA overlinking check.
#[derive(Debug, Serialize)]
pub struct CondaInfo {
    /// What the package says of itself (its fields appear inline).
    #[serde(flatten)]
    pub meta: CondaMeta,
    /// Every CUDA library the package's ELF files link, and whether `depends` covers it.
    pub cuda_links: Vec<CondaLink>,
    /// Declared dependencies on CUDA library packages that no ELF file of the package links.
    pub unlinked_depends: Vec<String>,
}

/// What a conda package says of itself (`info/index.json`, `info/run_exports.json`).
#[derive(Debug, Clone, Serialize)]
pub struct CondaMeta {
    pub name: String,
    pub version: String,
    pub build: String,
    pub subdir: Option<String>,
    pub depends: Vec<String>,
    /// `run_exports` (weak and strong).
    pub run_exports: Vec<String>,
}

/// One CUDA library a conda package links.
#[derive(Debug, Serialize)]
pub struct CondaLink {
    pub soname: String,
    /// The conda package that provides it (conda-forge's name).
    pub package: Option<String>,
    /// The `depends` entry that covers it.
    pub declared_by: Option<String>,
    /// The package ships the library itself.
    pub shipped: bool,
}

#[derive(Debug, Serialize)]
pub struct WheelInfo {
    pub name: Option<String>,
    pub version: Option<String>,
    pub tags: Vec<String>,
    pub requires_dist: Vec<String>,
    pub members: usize,
}

#[derive(Debug, Serialize)]
pub struct ElfReport {
    /// Path inside the artifact (`/`-separated), or the file name for a single ELF.
    pub path: String,
    pub size: u64,
    pub class: u8,
    pub machine: String,
    pub elf_type: cudist_elf::ElfKind,
    pub soname: Option<String>,
    pub needed: Vec<Needed>,
    pub rpath: Vec<SearchPathEntry>,
    pub runpath: Vec<SearchPathEntry>,
    pub static_cuda: Vec<StaticCuda>,
    /// Symbol versions the file requires from other libraries (`GLIBC_2.17`, `GLIBCXX_3.4.21`),
    /// sorted: what decides its manylinux policy.
    pub symbol_versions: Vec<String>,
    /// Imported symbols (not weak: a weak reference is optional) that some manylinux policy
    /// forbids importing from their library.
    pub blacklisted_imports: Vec<String>,
    /// What else decides the file's platform tag.
    pub abi: ElfAbi,
    pub device_code: Vec<DeviceEntry>,
    pub sizes: ElfSizes,
    /// Set when this file is itself a CUDA toolkit or driver library carried by the artifact.
    pub vendored: Option<String>,
}

/// What decides an ELF file's platform tag besides its libraries and symbol versions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ElfAbi {
    /// The architecture as platform tags name it (PEP 600/656: `x86_64`, `armv7l`, …).
    pub arch: Option<String>,
    /// Why the file has no such architecture.
    pub arch_error: Option<String>,
    /// `glibc` or `musl`: from the interpreter, else NEEDED (`libc.so.6`, `libc.musl-*`), else the
    /// file name (`*-linux-musl.so`); null when none says.
    pub libc: Option<String>,
    /// The interpreter and NEEDED disagree on the C library.
    pub libc_error: Option<String>,
    /// The x86-64 level beyond the baseline the file needs (`x86_64_v3`), from its property note.
    pub isa_level: Option<String>,
    /// A Python extension module: 2 or 3, by the init function it defines.
    pub python_extension: Option<u8>,
    /// Imports `PyFPE_jbuf` (a Python built with --with-fpectl): no manylinux or musllinux tag.
    pub pyfpe: bool,
    /// A Python 2 extension for a narrow-unicode (UCS2) Python: no manylinux or musllinux tag.
    pub ucs2: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NeededClass {
    /// A CUDA toolkit library (or NVIDIA library shipped as a wheel).
    Toolkit,
    /// A library a user catalog declares as coming from another wheel.
    External,
    /// A library of the NVIDIA driver: must never be bundled.
    Driver,
    /// A base-system library (glibc family, libstdc++, …).
    System,
    Other,
}

#[derive(Debug, Clone, Serialize)]
pub struct Needed {
    pub soname: String,
    pub class: NeededClass,
    pub library: Option<LibraryRef>,
    /// Where the artifact itself carries a file with this SONAME, if it does.
    pub provided_in_artifact: Option<String>,
}

/// A catalog library as matched for one SONAME.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct LibraryRef {
    pub id: String,
    pub component: Option<String>,
    pub cuda_major: u32,
    /// The SONAME exists in several CUDA majors and nothing in the artifact told which one:
    /// `cuda_major` is then the newest.
    pub cuda_major_ambiguous: bool,
    pub soname_policy: String,
    /// PyPI distribution that ships it for this CUDA major.
    pub pip: Option<String>,
    /// Directory (relative to site-packages) that distribution installs it into.
    pub pip_dir: Option<String>,
    pub conda: Option<String>,
    /// Extra of the `cuda-toolkit` metapackage.
    pub toolkit_extra: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathLocation {
    /// A CUDA wheel's library directory (`nvidia/cublas/lib`, `nvidia/cu13/lib`).
    CudaWheel,
    /// Inside the artifact.
    Inside,
    /// Relative to the file but leaving the artifact (and not a known CUDA wheel directory).
    Outside,
    /// An absolute path: a directory of the build machine or of the system.
    Absolute,
    /// Uses a token (`$LIB`, `$PLATFORM`) or is empty.
    Unresolved,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchPathEntry {
    pub raw: String,
    /// `$ORIGIN` expanded and `..` folded: relative to the artifact root (site-packages for a
    /// wheel), or absolute.
    pub expanded: String,
    pub location: PathLocation,
    /// For a CUDA wheel directory: the distributions that install libraries there.
    pub provided_by: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The library's own API entry points are defined in the file, or it contains the library's
    /// characteristic strings (catalog `static_strings`) together with the table of names its
    /// code resolves at run time (`static_name_table`). Strings alone are never evidence.
    Certain,
    /// Indirect evidence only (device code without any CUDA runtime in NEEDED).
    Likely,
}

#[derive(Debug, Clone, Serialize)]
pub struct StaticCuda {
    /// Catalog library id (`cudart`, `cublas`, `culibos`, …).
    pub library: String,
    pub confidence: Confidence,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceEntry {
    pub section: SectionKind,
    pub kind: EntryKind,
    /// `sm_90`, `sm_90a`, `sm_100f`; PTX entries name their virtual architecture the same way.
    pub arch: String,
    pub sm: u32,
    /// PTX ISA version for PTX entries (`9.0`), the header version for others.
    pub version: String,
    pub codec: Codec,
    /// Bytes the entry occupies in the file (header + payload).
    pub stored_size: u64,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    /// Raw flag bits of the entry header.
    pub flags: u64,
    /// The cubin is one image of a concatenated entry (`nvcc --concat`); its sizes are its share of
    /// that entry.
    pub concatenated: bool,
    pub identifier: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ElfSizes {
    /// Executable sections (`.text`, `.plt`, …).
    pub host_code: u64,
    /// Fatbin sections.
    pub device_code: u64,
    /// Everything else (data, symbols, debug info, headers).
    pub other: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NeededLibrary {
    pub soname: String,
    pub library: Option<LibraryRef>,
    /// ELF files (paths in the artifact) that need it.
    pub needed_by: Vec<String>,
    /// Whether some RPATH/RUNPATH of every file that needs it points at a directory that provides it.
    pub rpath_covers: bool,
    /// Whether the wheel declares a dependency on the providing distribution.
    pub declared: bool,
    /// The requirement that declares it: `nvidia-cublas-cu12` or `cuda-toolkit[cublas]`.
    pub declared_by: Option<String>,
    /// When only optional extras declare the dependency (`cupy[ctk]`): the extra's name.
    pub declared_extra: Option<String>,
    /// Whether the artifact carries the library itself.
    pub vendored: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Vendored {
    pub path: String,
    pub soname: Option<String>,
    pub library: Option<LibraryRef>,
    /// `toolkit` or `driver`.
    pub class: NeededClass,
    pub bytes: u64,
    /// How it was recognised.
    pub evidence: Vec<String>,
}

#[derive(Debug, Default, Serialize)]
/// Counts cover the device code the runtime loads: per file, `.nv_fatbin` when present, else
/// `__nv_relfatbin` (object files). `ElfReport.device_code` lists both sections.
pub struct DeviceSummary {
    pub cubins: usize,
    pub ptx: usize,
    pub lto_ir: usize,
    /// Entries of kinds cuobjdump does not list.
    pub other: usize,
    /// SMs with native code (cubins), sorted, with suffixes (`sm_90a`).
    pub native_sms: Vec<String>,
    /// The newest PTX: JIT-compiled by the driver for GPUs newer than every cubin.
    pub newest_ptx: Option<PtxInfo>,
    /// Compression codecs seen, with entry counts.
    pub codecs: BTreeMap<String, usize>,
    /// The oldest driver that runs the cubins: the minor-version-compatibility floor of the CUDA
    /// major the code was built with (from NEEDED or the PTX ISA), where derivable.
    pub min_driver: Option<DriverFloor>,
    /// The oldest driver that can JIT-compile the newest PTX (the driver of the toolkit that
    /// introduced its ISA).
    pub ptx_jit_min_driver: Option<DriverFloor>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PtxInfo {
    pub arch: String,
    pub isa: String,
    /// The toolkit that introduced this PTX ISA version.
    pub cuda: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DriverFloor {
    pub driver: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Breakdown {
    pub host_code: u64,
    /// Cubin bytes per architecture (`sm_80` → bytes), as stored.
    pub device_code: BTreeMap<String, u64>,
    pub ptx: u64,
    pub lto_ir: u64,
    /// Fatbin entries of other kinds.
    pub other_device: u64,
    pub vendored_cuda: u64,
    pub other: u64,
    pub total: u64,
}

/// Ordered by severity: `Ok` < `Bloated` < `Unresolved` < `BundlesDriver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictStatus {
    /// Nothing to fix.
    Ok,
    /// Carries CUDA it should take from NVIDIA's wheels.
    Bloated,
    /// Needs CUDA libraries it gives the loader no declared way to find (no RPATH to the providing
    /// wheel's directory, or no dependency on that wheel).
    Unresolved,
    /// Carries a library of the NVIDIA driver, which must always come from the system.
    BundlesDriver,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    pub status: VerdictStatus,
    pub lines: Vec<String>,
}
