//! The inspect report: the structures behind both the human tables and `--json`.
//!
//! The JSON form is a stable, versioned schema (`cudist.inspect/2`), documented field by field in
//! `docs/json-schema.md`. Fields are only ever added within a schema version.

use std::collections::BTreeMap;

use cudist_fatbin::{Codec, EntryKind, SectionKind};
use serde::Serialize;

/// The schema identifier written at the top of every JSON report.
pub const SCHEMA: &str = "cudist.inspect/2";

#[derive(Debug, Serialize, schemars::JsonSchema)]
/// The whole report of one `cudist inspect` run (schema `cudist.inspect/2`).
pub struct Report {
    /// always `"cudist.inspect/2"` for this version
    pub schema: &'static str,
    /// version of the cudist that wrote the report, e.g. `"0.1.0"`
    pub cudist_version: &'static str,
    /// one per inspected input (wheel, directory or ELF file)
    pub artifacts: Vec<Artifact>,
    /// Inputs that could not be read at all, with the reason; the exit code is non-zero when any
    /// exist (or when an artifact has `problems`).
    pub errors: Vec<InputError>,
    /// totals over the whole run
    pub summary: Summary,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// An input, or a file inside one, that could not be read: where, what went wrong, and what to do.
pub struct InputError {
    /// in `errors[]`: the input as given on the command line (for a wheelhouse, the wheel's path).
    /// In `problems[]`: the file's path inside the artifact. For a wheel, this is the member's name
    /// as stored in the archive, **not** mapped to its installed path
    /// (`pkg-1.0.data/platlib/pkg/x.so`, where `elf_files` would say `pkg/x.so`). For a directory,
    /// it is the path relative to the directory
    pub path: String,
    /// The error and its causes, outermost first, joined with `: `.
    pub error: String,
    /// What to do about it, for well-known failure kinds.
    pub hint: Option<String>,
}

#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
/// Totals over all artifacts of a report.
pub struct Summary {
    /// `artifacts.length`
    pub artifacts: usize,
    /// Unreadable inputs plus unreadable files inside artifacts.
    pub errors: usize,
    /// ELF files over all artifacts (the sum of `elf_files.length`). Files in `problems` are not
    /// counted
    pub elf_files: usize,
    /// Bytes of vendored CUDA toolkit and driver libraries over all artifacts.
    pub vendored_cuda_bytes: u64,
    /// Artifacts whose verdict status is not `ok`.
    pub needs_attention: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
/// What kind of input an artifact is.
pub enum ArtifactKind {
    /// A wheel (`.whl`).
    Wheel,
    /// A directory: an unpacked wheel, an install prefix, a toolkit tree.
    Directory,
    /// A single ELF file.
    Elf,
    /// A conda package (`.conda` or `.tar.bz2`).
    Conda,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// One input (or one package of a wheelhouse or channel) and everything found in it.
pub struct Artifact {
    /// the input path as given (wheelhouse members: the directory joined with the wheel's file
    /// name)
    pub path: String,
    /// what the input is. A file is a wheel if it starts with a zip signature or is named `*.whl`;
    /// a conda package if it is named `*.conda` or `*.tar.bz2`. `"conda"` appears only for conda
    /// packages, which releases before it reported as input errors, so a consumer that gives cudist
    /// only wheels, directories and ELF files never sees it
    pub kind: ArtifactKind,
    /// Size on disk: the wheel file, the ELF file, or the sum of regular files in a directory.
    pub size: u64,
    /// Size once installed (sum of uncompressed members for a wheel; equals `size` otherwise).
    pub installed_size: u64,
    /// wheel metadata. `null` for directories and ELF files, and for a wheel whose `.dist-info`
    /// could not be read
    pub wheel: Option<WheelInfo>,
    /// For a conda package: its metadata and whether its `depends` cover the CUDA it links.
    pub conda: Option<CondaInfo>,
    /// every ELF file found and analysed. Other files are counted only in sizes
    pub elf_files: Vec<ElfReport>,
    /// Files of the artifact that look like ELF but could not be read or analysed (`path` is the
    /// file's path inside the artifact). The exit code is non-zero when any exist.
    pub problems: Vec<InputError>,
    /// CUDA libraries needed by the artifact's ELF files, one row per SONAME.
    pub cuda_needed: Vec<NeededLibrary>,
    /// Driver libraries needed (never to be bundled).
    pub driver_needed: Vec<NeededLibrary>,
    /// CUDA toolkit or driver libraries that the artifact carries itself, in `elf_files` order
    pub vendored: Vec<Vendored>,
    /// what GPUs the device code runs on
    pub device: DeviceSummary,
    /// where the installed bytes go
    pub breakdown: Breakdown,
    /// The most compatible manylinux policy the artifact satisfies, and what blocks better ones.
    pub platform: Platform,
    /// Libraries the package's own Python loads (ctypes, cuda-pathfinder), found in its `.py`
    /// files with file and line; whether each runs at import.
    pub preloads: Vec<crate::loads::Preload>,
    /// Variant libraries (one per CUDA release, one loaded at run time), each judged alone.
    pub variants: Vec<VariantReport>,
    /// the overall judgement
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// One variant library of an artifact, judged alone: what it needs and what it runs on.
pub struct VariantReport {
    /// Its path in the artifact.
    pub path: String,
    /// Its group (`libbitsandbytes_cuda*.so`).
    pub group: String,
    /// The CUDA release its name says (`11.8`).
    pub cuda: String,
    /// The CUDA libraries it needs.
    pub cuda_needed: Vec<String>,
    /// SMs with native code.
    pub native_sms: Vec<String>,
    /// Its newest PTX.
    pub newest_ptx: Option<PtxInfo>,
    /// The oldest driver that runs it.
    pub min_driver: Option<DriverFloor>,
}

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
/// The most compatible manylinux or musllinux tag an artifact satisfies, and what blocks better ones.
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
    /// Libraries the files need from outside the wheel that `policy` does not allow a wheel to
    /// expect from the system, and that cudist counts as provided elsewhere (NVIDIA's CUDA
    /// wheels, the driver, another Python package). auditwheel knows none of those, so it calls
    /// the wheel `linux_<arch>` unless each is given to `--exclude`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auditwheel_excludes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// Why one policy is not satisfied: the first file that breaks it and how.
pub struct PolicyBlock {
    /// The policy (`manylinux_2_17`).
    pub policy: String,
    /// The ELF file that breaks it (path inside the artifact).
    pub file: String,
    /// How: the symbol version, library or import that is not allowed.
    pub reason: String,
}

/// A conda package's metadata and the CUDA overlinking check.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CondaMeta {
    /// From `info/index.json`.
    pub name: String,
    /// From `info/index.json`, as written.
    pub version: String,
    /// From `info/index.json`.
    pub build: String,
    /// From `info/index.json` (`linux-64`), when it has one.
    pub subdir: Option<String>,
    /// From `info/index.json`, verbatim.
    pub depends: Vec<String>,
    /// `run_exports` (weak and strong).
    pub run_exports: Vec<String>,
}

/// One CUDA library a conda package links.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CondaLink {
    /// The linked library's SONAME.
    pub soname: String,
    /// The conda package that provides it (conda-forge's name).
    pub package: Option<String>,
    /// The `depends` entry that covers it.
    pub declared_by: Option<String>,
    /// The package ships the library itself.
    pub shipped: bool,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// What a wheel's file name and metadata say.
pub struct WheelInfo {
    /// `Name:` from `METADATA`, as written (not normalised). `null` if missing
    pub name: Option<String>,
    /// `Version:` from `METADATA`. `null` if missing
    pub version: Option<String>,
    /// the `Tag:` lines of the `WHEEL` file, as written. They can differ from the file name:
    /// `cupy_cuda12x-14.2.0-…-manylinux2014_x86_64.whl` says `cp311-cp311-linux_x86_64`
    pub tags: Vec<String>,
    /// the `Requires-Dist:` lines, verbatim, environment markers included
    pub requires_dist: Vec<String>,
    /// `Requires-Python:` from `METADATA` (`>=3.10`), verbatim. `null` if missing
    pub requires_python: Option<String>,
    /// entries in the zip's central directory, directories included
    pub members: usize,
    /// What `cudist slim` kept (its `<dist-info>/cudist-slim.json`), when it slimmed the wheel
    pub slimmed: Option<crate::slim::SlimRecord>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// One ELF file of an artifact: what it needs, where it looks, what CUDA it carries, its device code.
pub struct ElfReport {
    /// Path inside the artifact (`/`-separated), or the file name for a single ELF.
    pub path: String,
    /// file size (uncompressed, for wheel members)
    pub size: u64,
    /// `32` or `64` (ELFCLASS)
    pub class: u8,
    /// `"x86_64"`, `"aarch64"`, `"ppc64le"`, `"i686"`, `"arm"`, `"s390x"`, `"riscv64"`, `"cuda"`,
    /// or `"machine N"` for any other `e_machine` value N (*open*)
    pub machine: String,
    /// `ET_EXEC`, `ET_DYN`, `ET_REL`, anything else. PIE executables are `ET_DYN`, so they show as
    /// `"shared"`
    pub elf_type: cudist_elf::ElfKind,
    /// `DT_SONAME`. `null` when absent
    pub soname: Option<String>,
    /// the `DT_NEEDED` entries, in file order
    pub needed: Vec<Needed>,
    /// `DT_RPATH`, split at `:`
    pub rpath: Vec<SearchPathEntry>,
    /// `DT_RUNPATH`, split at `:`
    pub runpath: Vec<SearchPathEntry>,
    /// CUDA libraries linked into this file statically
    pub static_cuda: Vec<StaticCuda>,
    /// CUDA libraries the file loads itself on the first call into them (dlopen trampolines and
    /// stub tables), which are not in `needed`: never static linking.
    pub lazy_loads: Vec<LazyLoad>,
    /// The oldest release of a CUDA library's wheel the file can load with, where the symbols it
    /// imports say (one per library and CUDA major): an older release lacks one of them, and the
    /// loader refuses the file ("undefined symbol: __nvJitLinkGetErrorLog_13_1").
    pub symbol_floors: Vec<SymbolFloor>,
    /// Symbol versions the file requires from other libraries (`GLIBC_2.17`, `GLIBCXX_3.4.21`),
    /// sorted: what decides its manylinux policy.
    pub symbol_versions: Vec<String>,
    /// C-library symbols the file imports without a symbol version that glibc added after the
    /// architecture's first manylinux policy, each with that glibc
    /// ([`cudist_catalog::glibc`]): the version requirements above do not say the glibc these
    /// need, and the loader refuses the file on an older one ("undefined symbol").
    pub unversioned_glibc: Vec<UnversionedGlibc>,
    /// Imported symbols (not weak: a weak reference is optional) that some manylinux policy
    /// forbids importing from their library.
    pub blacklisted_imports: Vec<String>,
    /// What else decides the file's platform tag.
    pub abi: ElfAbi,
    /// every fatbin entry, in file order: both sections, ordered by file offset. (The artifact's
    /// `device` summary counts only one section per file; see [`DeviceSummary`](#devicesummary))
    pub device_code: Vec<DeviceEntry>,
    /// this file's bytes by kind
    pub sizes: ElfSizes,
    /// The packer whose self-unpacking stub this file is (`UPX`), where its bytes say so
    /// ([`cudist_elf::packed_by`]): what is read of it (libraries, symbol versions, device
    /// code) is the stub's; the library itself is compressed inside and unpacked when it loads.
    pub packed: Option<String>,
    /// Set when this file is itself a CUDA toolkit or driver library carried by the artifact.
    pub vendored: Option<String>,
    /// When it loads: at import (an extension module, what one needs, what the package's Python
    /// preloads at import), on demand (nothing the import reaches needs it), or as one of
    /// several variants per CUDA release ([`crate::loads`]).
    pub tier: crate::loads::Tier,
    /// For an extension module that is on demand: why the import does not load it (its Python
    /// imports it only in a function, or inside `try … except ImportError`). Text for people.
    pub tier_reason: Option<String>,
    /// For a variant: the CUDA release its name says (`11.8`).
    pub variant_cuda: Option<String>,
}

impl ElfReport {
    /// Whether the import may load this file but the files cannot say that it does: at import
    /// only because a compiled module that the import loads names its module (imported there, or
    /// in a function, or inside `try`: machine code does not show which).
    pub fn maybe_at_import(&self) -> bool {
        self.tier == crate::loads::Tier::Import && self.tier_reason.is_some()
    }

    /// The names a `NEEDED` entry or a load can reach it by: its SONAME, then its file name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let base = self.path.rsplit('/').next().unwrap_or(&self.path);
        self.soname
            .as_deref()
            .into_iter()
            .chain(std::iter::once(base))
    }
}

/// What decides an ELF file's platform tag besides its libraries and symbol versions.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
/// What a needed library is, by the catalog.
pub enum NeededClass {
    /// A CUDA toolkit library (or NVIDIA library shipped as a wheel).
    Toolkit,
    /// A library a user catalog declares as coming from another wheel.
    External,
    /// A library of the NVIDIA driver: must never be bundled.
    Driver,
    /// A library of another GPU vendor's runtime (AMD ROCm, Intel oneAPI): comes with that
    /// vendor's stack, never grafted.
    Vendor,
    /// A base-system library (glibc family, libstdc++, …).
    System,
    /// Anything else.
    Other,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// One `DT_NEEDED` entry of an ELF file, classified.
pub struct Needed {
    /// the `DT_NEEDED` string
    pub soname: String,
    /// a CUDA toolkit (or NVIDIA wheel) library · a library that a user catalog assigns to another
    /// wheel · an NVIDIA driver library · another GPU vendor's runtime library (ROCm, oneAPI) · a
    /// base-system library (glibc family, libstdc++, …) · unknown
    pub class: NeededClass,
    /// the catalog match, for `toolkit` and `external`. `null` for other classes
    pub library: Option<LibraryRef>,
    /// Where the artifact itself carries a file with this SONAME, if it does.
    pub provided_in_artifact: Option<String>,
}

/// A catalog library as matched for one SONAME.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord, schemars::JsonSchema)]
pub struct LibraryRef {
    /// catalog id (`"cublas"`)
    pub id: String,
    /// NVIDIA redistributable component (`"libcublas"`)
    pub component: Option<String>,
    /// the CUDA major that this SONAME was matched to
    pub cuda_major: u32,
    /// The SONAME exists in several CUDA majors and nothing in the artifact told which one:
    /// `cuda_major` is then the newest.
    pub cuda_major_ambiguous: bool,
    /// One build serves every CUDA major the catalog lists (the same distribution for each:
    /// `rapids-logger`, whose library needs no CUDA): `cuda_major` then says nothing of the
    /// artifact.
    pub cuda_agnostic: bool,
    /// what the SONAME pins
    pub soname_policy: String,
    /// PyPI distribution that ships it for this CUDA major.
    pub pip: Option<String>,
    /// Directory (relative to site-packages) that distribution installs it into.
    pub pip_dir: Option<String>,
    /// conda-forge package
    pub conda: Option<String>,
    /// Extra of the `cuda-toolkit` metapackage.
    pub toolkit_extra: Option<String>,
    /// Of a CUDA release older than every one the catalog lists (CUDA 10 and before), for
    /// which no wheel exists: `pip` is null, and `cuda_major` is the release its name or the
    /// file's other libraries say, else the newest it can be.
    pub older_release: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
/// Where a search-path entry points.
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// One `DT_RPATH` or `DT_RUNPATH` entry, as written and as resolved.
pub struct SearchPathEntry {
    /// the entry as stored in the file (`"$ORIGIN/../lib"`)
    pub raw: String,
    /// `$ORIGIN` expanded and `..` folded: relative to the artifact root (site-packages for a
    /// wheel), or absolute.
    pub expanded: String,
    /// where the entry points
    pub location: PathLocation,
    /// For a CUDA wheel directory: the distributions that install libraries there.
    pub provided_by: Vec<String>,
}

impl SearchPathEntry {
    /// An empty entry, or one relative to no `$ORIGIN` (`a::b`, a trailing `:`, `lib`): glibc's
    /// ld.so searches it from the current directory of whatever process loads the file.
    pub fn is_from_current_directory(&self) -> bool {
        !self.raw.starts_with('/') && !self.raw.starts_with('$')
    }

    /// An absolute entry outside the directories every Linux system owns (root creates them;
    /// packages put libraries there): a directory of the build machine, such as a CI workspace
    /// or a temporary build tree. On a user's machine it is absent, and whoever can create it
    /// there puts first a library the file loads.
    pub fn is_build_machine(&self) -> bool {
        const SYSTEM: [&str; 7] = [
            "/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/", "/opt/", "/etc/",
        ];
        self.location == PathLocation::Absolute
            && !SYSTEM
                .iter()
                .any(|p| self.expanded.starts_with(p) || self.expanded == p.trim_end_matches('/'))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
/// How sure a static-linking finding is.
pub enum Confidence {
    /// The library's own API entry points are defined in the file, or it contains the library's
    /// characteristic strings (catalog `static_strings`) together with the table of names its
    /// code resolves at run time (`static_name_table`). Strings alone are never evidence.
    Certain,
    /// Indirect evidence only (device code without any CUDA runtime in NEEDED).
    Likely,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// A CUDA library linked statically into an ELF file, with the evidence.
pub struct StaticCuda {
    /// Catalog library id (`cudart`, `cublas`, `culibos`, …).
    pub library: String,
    /// `certain`: the file defines the library's marker API symbols (catalog `static_markers`), or
    /// contains the library's characteristic strings (catalog `static_strings`) together with the
    /// table of names its code resolves at run time (catalog `static_name_table`: for cudart, at
    /// least 200 distinct `cu…` driver entry-point names as C strings in `.rodata`; every libcudart
    /// from 11.7 to 13.5 holds 414 to 522). Either one is enough; strings alone are not evidence,
    /// as any program may quote a message (cudist's own catalog does). `likely`: inferred only.
    /// This is used for one case: the file has device code in `.nv_fatbin` but no `libcudart` in
    /// `needed` and no evidence of a static `cudart`, so a runtime must be linked in (or the driver
    /// API is used directly)
    pub confidence: Confidence,
    /// what was found, for people
    pub evidence: Vec<String>,
}

/// A CUDA library a file loads itself on the first call into it: the file defines the library's
/// entry points as stubs that dlopen it and resolve the real ones (a generated trampoline table,
/// as Implib.so makes and TSL/XLA/JAX use, or hand-written dlsym stubs with the library's SONAME
/// in the file). A missing library fails that first call, not the load of the file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LazyLoad {
    /// Catalog library id (`cublas`).
    pub library: String,
    /// The SONAME loaded: written in the file, or the catalog's for the file's CUDA major (none
    /// when that major is unknown).
    pub soname: Option<String>,
    /// The name the file gives `dlopen`, as written (`libcublas.so.12`, or a linker name such as
    /// `libcupti.so`, which no NVIDIA wheel ships: such a load goes by a path the program
    /// builds); null for a trampoline table.
    pub written: Option<String>,
    /// Every SONAME of the library the file names, when it names several: a fallback chain
    /// (cudnn-frontend tries `libnvrtc.so.13`, then `libnvrtc.so.12`), of which the one of the
    /// file's CUDA major is `soname`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    /// Environment variables the file reads whose names name the library
    /// (`SYMMETRIX_JIT_NVRTC_LIBRARY` for NVRTC): where a program can hand it the library's path
    /// ([`crate::loads::Mechanism::Environment`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<String>,
    /// What shows it, for people.
    pub evidence: String,
}

/// A C-library symbol imported without a symbol version, and the first glibc that defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UnversionedGlibc {
    /// The symbol (`__isoc23_strtoll`).
    pub symbol: String,
    /// The first glibc release that defines it (`2.38`).
    pub since: String,
}

/// The oldest release of a library's wheel that exports every symbol a file imports from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SymbolFloor {
    /// Catalog library id (`nvjitlink`).
    pub library: String,
    /// Its CUDA major.
    pub cuda_major: u32,
    /// The wheel (`nvidia-nvjitlink`).
    pub pip: String,
    /// Its first release that exports them all (`13.1.80`).
    pub since: String,
    /// The imported symbol that sets it (`__nvJitLinkGetErrorLog_13_1`).
    pub symbol: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
/// One fatbin entry: a cubin, PTX or LTO-IR for one architecture.
pub struct DeviceEntry {
    /// which section it came from: device code that the runtime loads, or relocatable device code
    /// (`-rdc`) kept for a device link
    pub section: SectionKind,
    /// entry kind. `"concat"` appears only for a concatenated entry with an empty image table
    /// (normally such an entry is split into `cubin` rows). Any other raw kind is `"other"`, with
    /// its number in `raw_kind`. Of these, only `"cubin"` and `"other"` with raw kind 16 (0x10,
    /// which cuobjdump lists as an ELF file) count as cubins in `device` and `breakdown`. The others
    /// (`"concat"` and every other raw kind) count under `device.other` and
    /// `breakdown.other_device`
    pub kind: EntryKind,
    /// The kind number in the entry header (1 PTX, 2 cubin, 8 LTO-IR, 0x100 concatenated, …);
    /// for an image of a concatenated entry, that entry's (0x100).
    pub raw_kind: u16,
    /// `sm_90`, `sm_90a`, `sm_100f`; PTX entries name their virtual architecture the same way.
    pub arch: String,
    /// SM number from the entry header: 90 for sm_90 and compute_90
    pub sm: u32,
    /// PTX ISA version for PTX entries (`9.0`), the header version for others.
    pub version: String,
    /// payload compression. For a concatenated image, the codec of the enclosing entry. `"unknown"`
    /// is reserved: an entry with an unknown codec fails the file (a `problems[]` entry of its
    /// artifact, or an `errors[]` entry for a single ELF file)
    pub codec: Codec,
    /// Bytes the entry occupies in the file (header + payload).
    pub stored_size: u64,
    /// codec input size. `0` when `codec` is `"none"`. For a concatenated image, its proportional
    /// share
    pub compressed_size: u64,
    /// payload size after decompression. When uncompressed, this is the payload size as stored,
    /// which is padded to 8, so it can exceed the real cubin or PTX by up to 7 bytes. For a
    /// concatenated image, the image size
    pub uncompressed_size: u64,
    /// Raw flag bits of the entry header.
    pub flags: u64,
    /// The cubin is one image of a concatenated entry (`nvcc --concat`); its sizes are its share of
    /// that entry.
    pub concatenated: bool,
    /// the identifier string that nvcc can record in the header. `null` when absent, which is the
    /// case in every file seen so far
    pub identifier: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
/// An ELF file's bytes by kind.
pub struct ElfSizes {
    /// Executable sections (`.text`, `.plt`, …).
    pub host_code: u64,
    /// Fatbin sections.
    pub device_code: u64,
    /// Everything else (data, symbols, debug info, headers).
    pub other: u64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// A CUDA library some ELF file of the artifact needs: who provides it and how it is found.
pub struct NeededLibrary {
    /// The SONAME needed.
    pub soname: String,
    /// catalog match. Always `null` in `driver_needed`
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
    /// When not declared: the requirements built for a CUDA major whose own requirements
    /// cudist's snapshot of PyPI does not record, through which it may come
    /// (`distributed-ucxx-cu12`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_come_through: Vec<String>,
    /// Whether the artifact carries the library itself.
    pub vendored: bool,
    /// When the files that need it load: `import` when any does at import, else `on-demand`,
    /// or `variant` when only variant libraries need it.
    pub tier: crate::loads::Tier,
    /// The package's own Python loads it (a match in `preloads`).
    pub preload: Option<crate::loads::Preload>,
    /// Set when no file needs it in `DT_NEEDED` and files load it themselves on the first call
    /// into it ([`LazyLoad`]): how. Its absence fails that call, not the import.
    pub lazy: Option<String>,
    /// Set when something loads it before every file that needs it: a Python package whose
    /// library every such file links (torch's `libc10.so`: the catalog's `python_provider`), which
    /// loads only after that package's import, and that import loads this one first; or a
    /// wheel's loader the package runs at import (`libcuvs.load_library()`), whose wheel the
    /// requirement comes through. The distribution, and where it loads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_first_by: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// A CUDA toolkit or driver library that the artifact carries itself.
pub struct Vendored {
    /// its path in the artifact
    pub path: String,
    /// its `DT_SONAME`
    pub soname: Option<String>,
    /// the catalog library. `null` for driver libraries
    pub library: Option<LibraryRef>,
    /// `toolkit` or `driver`.
    pub class: NeededClass,
    /// its file size
    pub bytes: u64,
    /// How it was recognised.
    pub evidence: Vec<String>,
    /// How the package opens it: `loader` (by name, through a search path of one of its files:
    /// a requirement on its wheel can stand in for it), `python` (the package's Python opens it
    /// with ctypes), `path` (nothing names it: the package opens it by path, as triton opens its
    /// CUPTI). Only `loader` copies are what `cudist repair` removes (driver libraries always).
    pub opened_by: OpenedBy,
    /// For `python`, the call that opens it (`pkg/__init__.py:12`).
    pub opened_at: Option<String>,
    /// Whether a requirement on the library's wheel can stand in for this copy: a toolkit or
    /// driver library, or another project's library whose SONAME carries a version
    /// (`libucp.so.0`); not one named only `libX.so` (`librmm.so`: no release promises the ABI
    /// of the copy the package was built against). Inspect's verdict and repair both read it.
    pub replaceable: bool,
}

/// How a package opens a library it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OpenedBy {
    /// The dynamic loader, by name (NEEDED or a lazy load, in a search-path directory).
    Loader,
    /// The package's Python, through ctypes.
    Python,
    /// By path: nothing names it where the loader looks.
    Path,
}

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
/// Counts cover the device code the runtime loads: per file, `.nv_fatbin` when present, else
/// `__nv_relfatbin` (object files). `ElfReport.device_code` lists both sections.
pub struct DeviceSummary {
    /// cubin entries (kind `"cubin"`, concatenated images included) and entries of kind 0x10
    /// (`{"other": 16}`)
    pub cubins: usize,
    /// PTX entries
    pub ptx: usize,
    /// LTO-IR entries
    pub lto_ir: usize,
    /// Entries of kinds cuobjdump does not list.
    pub other: usize,
    /// Entries of a file's other device-code section, which the runtime does not load: the
    /// relocatable copies in `__nv_relfatbin` beside `.nv_fatbin` (inputs to a device link). Not
    /// in the counts above; the size breakdown counts their bytes.
    pub relocatable: usize,
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// The newest PTX of an artifact.
pub struct PtxInfo {
    /// as in `DeviceEntry.arch` (`"sm_90"` for compute_90)
    pub arch: String,
    /// PTX ISA version (`"9.5"`)
    pub isa: String,
    /// The toolkit that introduced this PTX ISA version.
    pub cuda: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// The oldest driver that runs an artifact's device code, and why.
pub struct DriverFloor {
    /// Linux driver version (`"580.65.06"`)
    pub driver: String,
    /// why, for people
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
/// An artifact's installed bytes by kind.
pub struct Breakdown {
    /// sum of `sizes.host_code` over non-vendored ELF files
    pub host_code: u64,
    /// Cubin bytes per architecture (`sm_80` → bytes), as stored.
    pub device_code: BTreeMap<String, u64>,
    /// `stored_size` of PTX entries
    pub ptx: u64,
    /// `stored_size` of LTO-IR entries
    pub lto_ir: u64,
    /// Fatbin entries of other kinds.
    pub other_device: u64,
    /// sum of `vendored[].bytes`
    pub vendored_cuda: u64,
    /// `total` minus all of the above (never negative): Python code, data, non-code parts of ELF
    /// files, fatbin container headers and padding, and files listed in `problems`
    pub other: u64,
    /// `installed_size`
    pub total: u64,
}

/// Ordered by severity: `Ok` < `Misbuilt` < `Unportable` < `Bloated` < `Unresolved` < `BundlesDriver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictStatus {
    /// Nothing to fix.
    Ok,
    /// A build mistake installers do not catch: a wheel tagged for every platform (`any`) that
    /// carries ELF files, or files that search a directory of the build machine.
    Misbuilt,
    /// A wheel that satisfies no manylinux or musllinux policy: its tag would be `linux_*`, which
    /// PyPI refuses.
    Unportable,
    /// Carries CUDA it should take from NVIDIA's wheels.
    Bloated,
    /// Needs CUDA libraries it gives the loader no declared way to find (no RPATH to the providing
    /// wheel's directory, or no dependency on that wheel).
    Unresolved,
    /// Carries a library of the NVIDIA driver, which must always come from the system.
    BundlesDriver,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
/// The one-word judgement of an artifact and the lines that explain it.
pub struct Verdict {
    /// the most severe finding, in this order of severity
    pub status: VerdictStatus,
    /// the findings, one sentence each, for people
    pub lines: Vec<String>,
}
