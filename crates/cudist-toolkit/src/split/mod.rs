//! A CUDA toolkit as components × outputs, the way conda-forge and Nixpkgs package it (what
//! `cudist split` does: [`split`]).
//!
//! Every file gets a **component** (`cuda_cudart`, `libcublas`, … the key NVIDIA's manifests use,
//! from the catalog's `components.toml` for the wheel that installed it) and an **output**:
//! - `lib`: shared libraries under their SONAME;
//! - `dev`: headers, linker-name links, pkg-config and CMake files;
//! - `static`: archives;
//! - `stubs`: link-time stubs;
//! - `bin`: executables;
//! - `doc`;
//! - `sample`.
//!
//! Licenses go with every output. **Pins** are derived from the SONAMEs, not written by hand:
//! - a SONAME that carries only the major (`libcublas.so.13`) makes dependents pin the major;
//! - one that carries the minor (`libcudart.so.11.0`, `libnvrtc.so.11.2`) makes them pin
//!   major.minor;
//! - an unversioned one pins the exact version.
//!
//! `dev` pins its `lib` exactly, and `static` pins its `dev`.
//!
//! Inputs ([`input`]): the CUDA wheels of a site-packages directory, NVIDIA's redistributable
//! archives (verified against `redistrib_<ver>.json` when given), or a toolkit tree. Formats:
//! `manifest` (one JSON with every file, plus a Nixpkgs-style features file), `dirs` (one directory
//! per component-output, with SONAME and linker-name links) and `conda` (`.conda` packages,
//! [`conda`]).

pub mod conda;
pub mod input;

pub use input::Input;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use cudist_analysis::bail;
use cudist_analysis::error::{Result, ResultExt};
use cudist_catalog::linker_name;
use cudist_catalog::Catalog;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// What a split writes ([`split`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `split.json` and `features.json` only.
    Manifest,
    /// One directory per component-output, with SONAME and linker-name links.
    Dirs,
    /// One `.conda` package per component-output in `<subdir>/`, and a metapackage.
    Conda,
}

/// How a split is written.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// What to write.
    pub format: Format,
    /// zstd level of the `.conda` packages (1-22).
    pub zstd_level: i32,
    /// The build number of the `.conda` packages.
    pub build_number: u64,
}

/// Splits `input` (a site-packages directory, NVIDIA's redistributable archives, or a toolkit
/// tree; `manifest`: NVIDIA's `redistrib_<ver>.json` to verify archives against) and writes the
/// result to `out`, which must not exist.
///
/// Written in a scratch directory with an unpredictable name beside `out` (removed on every
/// error), then renamed: nothing half-written, nothing written through a planted link.
pub fn split(
    input: &Path,
    manifest_json: Option<&Path>,
    out: &Path,
    options: &Options,
    catalog: &Catalog,
) -> Result<Manifest> {
    if out.exists() {
        bail!("{} exists; give another --out", out.display());
    }
    let out = std::path::absolute(out)?;
    let parent = out
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ".".into());
    std::fs::create_dir_all(&parent)?;
    let name = out
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let scratch = cudist_fs::scratch_dir(&parent, &name)
        .with_context(|| format!("cannot create a directory in {}", parent.display()))?;
    // Archives are unpacked below the scratch directory; removed when `what` is dropped.
    let what = input::read(input, manifest_json, scratch.path(), catalog)?;
    let m = manifest(input, &what, catalog)?;
    let tmp = scratch.path().join("out");
    write(&m, options, &tmp)?;
    std::fs::rename(&tmp, &out).with_context(|| format!("cannot rename into {}", out.display()))?;
    Ok(m)
}

/// The outputs, in the order conda-forge and Nixpkgs list them.
pub const OUTPUTS: &[&str] = &["lib", "dev", "static", "stubs", "bin", "doc", "sample"];

/// One file of the split.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileRow {
    /// The path in a CUDA root (`lib64/libcudart.so.13`).
    pub path: String,
    /// The component (`cuda_cudart`).
    pub component: String,
    /// The output (`lib`, `dev`, …).
    pub output: String,
    /// `file`, or `link` for a link cudist makes (its target in `target`).
    pub kind: &'static str,
    /// The target of a link.
    pub target: Option<String>,
    /// Its size in bytes (0 for a link).
    pub size: u64,
    /// The sha256 of its content (none for a link).
    pub sha256: Option<String>,
    /// The SONAME of a shared library.
    pub soname: Option<String>,
    /// The SONAMEs it needs (DT_NEEDED).
    pub needed: Vec<String>,
    /// The installed file it is copied from (`dirs`); none for links.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// A pin: what a dependent of this output requires.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Pin {
    /// conda-forge style (`libcublas >=13.10.0.20,<14.0a0`).
    pub conda: String,
    /// PEP 508 (`nvidia-cublas>=13.10.0.20,<14`).
    pub pep508: Option<String>,
    /// Why: the SONAME and what it carries.
    pub reason: String,
}

/// One component and its outputs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ComponentRow {
    /// The component (`cuda_cudart`).
    pub component: String,
    /// The package or archive it came from.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The conda-forge package name of the `lib` output (`cuda-cudart`, `libcublas`).
    pub conda: String,
    /// The license, as the package's metadata states it.
    pub license: Option<String>,
    /// Output → conda package name (`dev` → `cuda-cudart-dev`).
    pub packages: BTreeMap<String, String>,
    /// Output → number of files.
    pub outputs: BTreeMap<String, usize>,
    /// What dependents of the `lib` output pin (run_exports): written on the `dev` package, as
    /// conda-forge does, or on the `lib` package when the component has no `dev` output.
    pub run_exports: Vec<Pin>,
    /// Output → what it depends on (`dev` → the `lib` output, exactly; and the `dev` outputs whose
    /// headers its headers include).
    pub depends: BTreeMap<String, Vec<String>>,
}

/// The metapackage (`cuda-toolkit`, as the cudatoolkit of old): no files, depends on every
/// package of the split.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Metapackage {
    /// The conda package name (`cuda-toolkit`).
    pub name: String,
    /// The CUDA release: the runtime's version (else nvcc's, else the highest).
    pub version: String,
    /// Every package of the split, pinned exactly.
    pub depends: Vec<String>,
}

/// The schema identifier of the manifest.
pub const SCHEMA: &str = "cudist.split/1";

/// The manifest (`--json` and `split.json`: schema `cudist.split/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Manifest {
    /// `cudist.split/1`.
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// The input as given.
    pub input: String,
    /// `site-packages`, `redist` or `tree`.
    pub input_kind: &'static str,
    /// The CUDA major of the input, when it has one.
    pub cuda_major: Option<u32>,
    /// Each component and its outputs.
    pub components: Vec<ComponentRow>,
    /// The metapackage that depends on every package, when there is a runtime or compiler.
    pub metapackage: Option<Metapackage>,
    /// Every file, placed.
    pub files: Vec<FileRow>,
    /// Destinations the input gave more than once, and which row the split placed there.
    pub collisions: Vec<Collision>,
    /// Links of the input that were not followed (they lead out of it), and why.
    pub skipped: Vec<Skipped>,
    /// Files no rule placed: a toolkit tree's files no catalog rule gives a component (in the
    /// component `cuda_other`), and files no path rule gives an output (in `doc`).
    pub unassigned: Vec<String>,
    /// Components `--manifest` lists for this platform whose archive is not in the input.
    pub missing: Vec<String>,
}

/// The output of a file, by its path in a CUDA root; `None` when no rule applies.
pub fn output_of(path: &str, is_shared_object: bool) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path.contains("/stubs/") {
        return Some("stubs");
    }
    if path.starts_with("samples/") || path.starts_with("extras/demo_suite/") {
        return Some("sample");
    }
    // The sanitizer keeps a tree of its own: tools and their libraries, headers, documents.
    if let Some(rest) = path.strip_prefix("compute-sanitizer/") {
        return Some(if rest.starts_with("docs/") {
            "doc"
        } else if rest.starts_with("include/") {
            "dev"
        } else {
            "bin"
        });
    }
    if name.ends_with(".a") {
        return Some("static");
    }
    if path.starts_with("include/")
        || path.starts_with("nvvm/include/")
        || path.contains("/pkgconfig/")
        || path.contains("/cmake/")
        || path.starts_with("nvvm/libdevice/")
    {
        return Some("dev");
    }
    if path.starts_with("bin/") || path.starts_with("nvvm/bin/") {
        return Some("bin");
    }
    if path.starts_with("share/doc/") || path.starts_with("doc/") {
        return Some("doc");
    }
    if (path.starts_with("lib64/") || path.starts_with("nvvm/lib64/")) && is_shared_object {
        // A bare `libX.so` is a linker name: a build-time file.
        return Some(if name.ends_with(".so") { "dev" } else { "lib" });
    }
    None
}

/// The pin a dependent takes on `package` at `version`, from the SONAME of its library.
pub fn pin_from_soname(soname: &str, conda: &str, pip: Option<&str>, version: &str) -> Pin {
    let nums: Vec<u64> = soname
        .split_once(".so.")
        .map(|(_, v)| v.split('.').map_while(|p| p.parse().ok()).collect())
        .unwrap_or_default();
    let vparts: Vec<u64> = version.split('.').map_while(|p| p.parse().ok()).collect();
    let major = vparts.first().copied().unwrap_or(0);
    let minor = vparts.get(1).copied().unwrap_or(0);
    let (upper, reason) = match nums.len() {
        0 => (None, format!("{soname} carries no version: pinned exactly")),
        1 => (
            Some((major + 1).to_string()),
            format!("{soname} carries one number: dependents pin the package's major ({major}.x)"),
        ),
        _ => (
            Some(format!("{major}.{}", minor + 1)),
            format!("{soname} carries the minor: dependents pin the package's major.minor ({major}.{minor}.x)"),
        ),
    };
    pin_below(conda, pip, version, upper.as_deref(), reason)
}

/// `conda >=version,<upper.0a0` and `pip>=version,<upper`, or both exact without an upper bound.
fn pin_below(
    conda: &str,
    pip: Option<&str>,
    version: &str,
    upper: Option<&str>,
    reason: String,
) -> Pin {
    let conda_spec = match upper {
        Some(u) => format!("{conda} >={version},<{u}.0a0"),
        None => format!("{conda} =={version}"),
    };
    let pep508 = pip.map(|p| match upper {
        Some(u) => format!("{p}>={version},<{u}"),
        None => format!("{p}=={version}"),
    });
    Pin {
        conda: conda_spec,
        pep508,
        reason,
    }
}

/// The pin a dependent takes on a library of this split: the upper bound `cudist repair` writes
/// for the same SONAME (the catalog's range of releases that ship it: `libcudart.so.11.0` is in
/// every 11.x, so `<12`, not the `<11.9` its name would suggest for 11.8) when the packaged
/// version lies in that range, else what the SONAME's name carries ([`pin_from_soname`]).
pub fn pin_for(
    soname: &str,
    conda: &str,
    pip: Option<&str>,
    version: &str,
    catalog: &Catalog,
    cuda_major: Option<u32>,
) -> Pin {
    let range = catalog
        .library_by_soname_hinted(soname, cuda_major)
        .and_then(|m| match m.major.pip_requirement(soname) {
            Some(cudist_catalog::PipRequirement::Range(r)) => Some(r),
            _ => cudist_catalog::soname_range(soname, m.major.policy, &m.major.sonames),
        })
        .filter(|r| cudist_catalog::in_simple_range(version, r));
    match range.as_deref().and_then(|r| r.split_once(",<")) {
        Some((_, upper)) => pin_below(
            conda,
            pip,
            version,
            Some(upper),
            format!(
                "{soname} ships in every release {}: dependents pin below {upper}, as `cudist repair` does",
                range.as_deref().unwrap_or_default()
            ),
        ),
        None => pin_from_soname(soname, conda, pip, version),
    }
}

/// Whether a SONAME belongs to another component than `component` by the catalog (CUDA 11's
/// runtime archive carries the OpenCL loader `libOpenCL.so.1`: no pin of the runtime follows it).
fn foreign_library(soname: &str, component: &str, catalog: &Catalog) -> bool {
    catalog
        .library_by_soname(soname)
        .and_then(|m| m.library.component.as_deref())
        .is_some_and(|c| c != component)
}

/// conda-forge's name for a component's runtime package: the catalog's conda name of the
/// component's first library (`libnvvm` → `cuda-nvvm-impl`), else the key with `-` for `_`
/// (`cuda_cudart` → `cuda-cudart`, `libcublas` → `libcublas`).
fn conda_name(component: &str, catalog: &Catalog) -> String {
    catalog
        .libraries
        .iter()
        .find(|l| l.component.as_deref() == Some(component))
        .and_then(|l| l.conda.clone())
        .unwrap_or_else(|| component.replace('_', "-"))
}

/// The size and sha256 of a file, read once.
pub(crate) fn sha256_file(path: &Path) -> Result<(u64, String)> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += k as u64;
        h.update(&buf[..k]);
    }
    Ok((n, format!("{:x}", h.finalize())))
}

/// Builds the manifest of an input.
pub fn manifest(input: &Path, what: &Input, catalog: &Catalog) -> Result<Manifest> {
    let mut m = Manifest {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        input: input.display().to_string(),
        input_kind: what.kind,
        cuda_major: what.cuda_major,
        components: Vec::new(),
        metapackage: None,
        files: Vec::new(),
        collisions: Vec::new(),
        skipped: what.skipped.clone(),
        unassigned: what.unplaced.clone(),
        missing: what.missing.clone(),
    };
    // Every file's size and sha256, on all cores (hashing is what a split spends its time on).
    let digests: BTreeMap<&Path, (u64, String)> = {
        use rayon::prelude::*;
        let all: Vec<&Path> = what
            .components
            .iter()
            .flat_map(|c| c.files.iter().map(|(_, abs)| abs.as_path()))
            .collect();
        all.par_iter()
            .with_max_len(1)
            .map(|abs| sha256_file(abs).map(|d| (*abs, d)))
            .collect::<Result<_>>()?
    };
    // 1. The files found and the links made again from the SONAMEs, of every component.
    let mut files = Vec::new();
    for p in &what.components {
        for (dest, abs) in p.files.iter().filter(|(d, _)| !is_license(d)) {
            placed_rows(
                dest,
                abs,
                &p.component,
                &digests,
                &mut files,
                &mut m.unassigned,
            );
        }
    }
    // 2. One row per destination.
    m.collisions = settle(&mut files)?;
    // 3. Per component: licenses with every output, pins, package names, depends.
    for p in &what.components {
        let component = p.component.clone();
        let conda = conda_name(&component, catalog);
        let mut row = ComponentRow {
            component: component.clone(),
            package: p.package.clone(),
            version: p.version.clone(),
            conda: conda.clone(),
            license: p.license.clone(),
            packages: BTreeMap::new(),
            outputs: BTreeMap::new(),
            run_exports: Vec::new(),
            depends: BTreeMap::new(),
        };
        let (mut mine, rest): (Vec<FileRow>, Vec<FileRow>) =
            files.into_iter().partition(|f| f.component == component);
        files = rest;
        let lib_sonames: Vec<String> = mine
            .iter()
            .filter(|f| f.output == "lib" && f.kind == "file")
            .filter_map(|f| f.soname.clone())
            .collect();
        // A library another library of this component loads with dlopen (NVRTC's builtins) is
        // private to it: dependents never link it, so it sets no pin.
        let private: Vec<&String> = lib_sonames
            .iter()
            .filter(|so| dlopened_by(so, &lib_sonames, catalog))
            .collect();
        for so in lib_sonames
            .iter()
            .filter(|s| !private.contains(s) && !foreign_library(s, &component, catalog))
        {
            row.run_exports.push(pin_for(
                so,
                &conda,
                p.pip.as_deref(),
                &p.version,
                catalog,
                what.cuda_major,
            ));
        }
        // Licenses go with every output the component has.
        let outputs: BTreeSet<String> = mine.iter().map(|f| f.output.clone()).collect();
        for (lic_dest, lic_abs) in p.files.iter().filter(|(d, _)| is_license(d)) {
            let (size, sha) = digests[lic_abs.as_path()].clone();
            for o in &outputs {
                mine.push(FileRow {
                    path: lic_dest.to_string(),
                    component: component.clone(),
                    output: o.clone(),
                    kind: "file",
                    target: None,
                    size,
                    sha256: Some(sha.clone()),
                    soname: None,
                    needed: Vec::new(),
                    source: Some(lic_abs.to_path_buf()),
                });
            }
        }
        for f in &mine {
            *row.outputs.entry(f.output.clone()).or_default() += 1;
        }
        // The runtime library takes the bare name; a component without one (nvcc) gives it to
        // its executables, as conda-forge's `cuda-nvcc` holds `bin/nvcc`.
        let bare = if row.outputs.contains_key("lib") {
            "lib"
        } else {
            "bin"
        };
        for o in row.outputs.keys() {
            let name = if o == bare {
                conda.clone()
            } else {
                format!("{conda}-{o}")
            };
            row.packages.insert(o.clone(), name);
        }
        // dev pins its runtime exactly; static pins its dev exactly.
        if row.outputs.contains_key("dev") && row.outputs.contains_key("lib") {
            row.depends
                .insert("dev".into(), vec![format!("{conda} =={}", p.version)]);
        }
        if row.outputs.contains_key("static") && row.outputs.contains_key("dev") {
            row.depends.insert(
                "static".into(),
                vec![format!("{} =={}", row.packages["dev"], p.version)],
            );
        }
        row.run_exports.dedup_by(|a, b| a.conda == b.conda);
        m.files.extend(mine);
        m.components.push(row);
    }
    needed_depends(&mut m, catalog);
    header_depends(&mut m)?;
    m.metapackage = metapackage(&m);
    Ok(m)
}

/// Whether a CUDA-root path is a license file (these go with every output of their component).
fn is_license(dest: &str) -> bool {
    dest.starts_with("share/licenses/")
}

/// The rows of one file found in the input: the file itself and, for a shared library, the links a
/// split tree carries: its SONAME link (`lib`) where the file has another name, and its linker name
/// (`dev`).
fn placed_rows(
    dest: &str,
    abs: &Path,
    component: &str,
    digests: &BTreeMap<&Path, (u64, String)>,
    rows: &mut Vec<FileRow>,
    unassigned: &mut Vec<String>,
) {
    let is_so = dest.contains(".so") && cudist_analysis::elf_files::is_loadable_elf(abs);
    let (soname, needed) = if is_so {
        let data = cudist_elf::map_file(abs).ok();
        let elf = data
            .as_ref()
            .and_then(|d| cudist_elf::ElfFile::parse(d).ok());
        (
            // A SONAME names a file in the same directory; one with a `/` is no such name, and
            // no link is made from it.
            elf.as_ref()
                .and_then(|e| e.soname.clone())
                .filter(|s| !s.contains('/') && cudist_fs::member_name(s).is_ok()),
            elf.map(|e| e.needed).unwrap_or_default(),
        )
    } else {
        (None, Vec::new())
    };
    let output = output_of(dest, is_so).unwrap_or_else(|| {
        if !unassigned.iter().any(|u| u == dest) {
            unassigned.push(dest.to_string());
        }
        "doc"
    });
    let (size, sha) = digests[abs].clone();
    rows.push(FileRow {
        path: dest.to_string(),
        component: component.to_string(),
        output: output.into(),
        kind: "file",
        target: None,
        size,
        sha256: Some(sha),
        soname: soname.clone(),
        needed,
        source: Some(abs.to_path_buf()),
    });
    if output != "lib" {
        return;
    }
    let file = dest.rsplit('/').next().unwrap_or(dest);
    let dir = &dest[..dest.len() - file.len()];
    if let Some(so) = soname.as_deref().filter(|s| *s != file) {
        rows.push(link_row(format!("{dir}{so}"), file, component, "lib"));
    }
    if let Some(l) = linker_name(file).filter(|l| l != file) {
        let target = soname.unwrap_or(file.to_string());
        rows.push(link_row(format!("{dir}{l}"), &target, component, "dev"));
    }
}

/// A file of the input that was not read, and why (a link that leads out of a toolkit tree or an
/// archive).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// The path in the input.
    pub path: String,
    /// Why it was not read.
    pub reason: String,
}

/// A destination that more than one row of the input claimed, and which one the split placed.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Collision {
    /// The destination in a CUDA root.
    pub path: String,
    /// What the split placed there: `link -> TARGET (component)` or `file SOURCE (component)`.
    pub kept: String,
    /// What it did not place there, in the same form.
    pub dropped: Vec<String>,
    /// Why that row was placed.
    pub reason: String,
}

/// How a row reads in a [`Collision`].
fn describe(f: &FileRow) -> String {
    match f.kind {
        "link" => format!(
            "link -> {} ({})",
            f.target.as_deref().unwrap_or(""),
            f.component
        ),
        _ => format!(
            "file {} ({})",
            f.source
                .as_deref()
                .map_or(String::new(), |s| s.display().to_string()),
            f.component
        ),
    }
}

/// Decides, once per destination, which of the rows that claim it the split places, and reports
/// each decision. An input can give one destination twice: a toolkit root whose linker-name link
/// resolves outside the tree is read as a file, and the same link is made again from the SONAME;
/// a tree can hold a library in both `lib/` and `lib64/`; two libraries can share a SONAME.
///
/// - Links made again from the SONAMEs win over a file found at the same path when that file is a
///   copy of the library the link names (same sha256): the file was the input's own link.
/// - A found file wins over a made link when it holds something else (a linker script named
///   `libX.so`, say): that is what the input means.
/// - Two files with the same content: the first (in component order) is placed.
/// - Two files with different content: the input is ambiguous, and the split is refused.
/// - Two links: the one naming the newest file (by version order of the target name).
pub fn settle(rows: &mut Vec<FileRow>) -> Result<Vec<Collision>> {
    let mut at: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, f) in rows.iter().enumerate() {
        at.entry(f.path.clone()).or_default().push(i);
    }
    // The sha256 of the file a link finally names, following links among the rows of its directory.
    let sha_of_path = |path: &str| -> Option<String> {
        let mut path = path.to_string();
        for _ in 0..8 {
            let i = *at.get(&path)?.first()?;
            let f = &rows[i];
            match (f.kind, &f.target) {
                ("link", Some(t)) => {
                    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                    path = if dir.is_empty() {
                        t.clone()
                    } else {
                        format!("{dir}/{t}")
                    };
                }
                _ => return f.sha256.clone(),
            }
        }
        None
    };
    let mut drop = vec![false; rows.len()];
    let mut collisions = Vec::new();
    for (path, idx) in at.iter().filter(|(_, v)| v.len() > 1) {
        let (links, found): (Vec<usize>, Vec<usize>) =
            idx.iter().partition(|&&i| rows[i].kind == "link");
        // Files: one content, or refuse.
        if let Some(&first) = found.first() {
            if let Some(&other) = found
                .iter()
                .find(|&&i| rows[i].sha256 != rows[first].sha256)
            {
                bail!(
                    "{path} is given twice with different content: {} and {}; a split places one \
                     file per path (remove one from the input)",
                    describe(&rows[first]),
                    describe(&rows[other])
                );
            }
        }
        // Links: the one to the newest library.
        let best_link = links.iter().copied().max_by(|&a, &b| {
            version_order(
                rows[a].target.as_deref().unwrap_or(""),
                rows[b].target.as_deref().unwrap_or(""),
            )
        });
        let (kept, reason) = match (found.first().copied(), best_link) {
            (Some(file), Some(link)) => {
                let named = rows[link].target.as_deref().and_then(|t| {
                    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                    sha_of_path(&if dir.is_empty() {
                        t.to_string()
                    } else {
                        format!("{dir}/{t}")
                    })
                });
                if named.is_some() && named == rows[file].sha256 {
                    (
                        link,
                        "the file found here is a copy of the library the link names (the \
                         input's own link, resolved): made again as a link",
                    )
                } else {
                    (
                        file,
                        "the file found here is not the library the link would name: kept as \
                         the input has it",
                    )
                }
            }
            (Some(file), None) => (file, "the same content given more than once: placed once"),
            (None, Some(link)) => (
                link,
                "more than one library gives this name: linked to the newest",
            ),
            (None, None) => continue,
        };
        for &i in idx.iter().filter(|&&i| i != kept) {
            drop[i] = true;
        }
        collisions.push(Collision {
            path: path.clone(),
            kept: describe(&rows[kept]),
            dropped: idx
                .iter()
                .filter(|&&i| i != kept)
                .map(|&i| describe(&rows[i]))
                .collect(),
            reason: reason.to_string(),
        });
    }
    let mut i = 0;
    rows.retain(|_| {
        i += 1;
        !drop[i - 1]
    });
    Ok(collisions)
}

/// Orders file names by their numeric parts (`libx.so.12.9` < `libx.so.12.10`).
fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| -> Vec<(u64, String)> {
        s.split('.')
            .map(|p| (p.parse::<u64>().unwrap_or(0), p.to_string()))
            .collect()
    };
    key(a).cmp(&key(b))
}

/// Adds to each `lib` and `bin` output the runtime packages of the other components whose
/// libraries its files link (NEEDED), pinned as those libraries' SONAMEs say: cuRAND's library
/// links the CUDA runtime, so `libcurand` depends on `cuda-cudart >=V,<M+1`.
fn needed_depends(m: &mut Manifest, catalog: &Catalog) {
    let mut provider: BTreeMap<&str, (&str, String)> = BTreeMap::new();
    for f in m.files.iter().filter(|f| f.output == "lib") {
        let Some(so) = &f.soname else { continue };
        let Some(c) = m.components.iter().find(|c| c.component == f.component) else {
            continue;
        };
        let pin = pin_for(so, &c.conda, None, &c.version, catalog, m.cuda_major).conda;
        provider.insert(so.as_str(), (f.component.as_str(), pin));
    }
    let mut add: Vec<(String, String, String)> = Vec::new();
    for f in m
        .files
        .iter()
        .filter(|f| f.output == "lib" || f.output == "bin")
    {
        for n in &f.needed {
            if let Some((c, pin)) = provider.get(n.as_str()) {
                if *c != f.component {
                    add.push((f.component.clone(), f.output.clone(), pin.clone()));
                }
            }
        }
    }
    for (component, output, pin) in add {
        if let Some(c) = m.components.iter_mut().find(|c| c.component == component) {
            let deps = c.depends.entry(output).or_default();
            if !deps.contains(&pin) {
                deps.push(pin);
            }
        }
    }
}

/// Adds to each `dev` output the `dev` outputs of the other components whose headers its
/// headers include (`cuda_runtime.h` includes `crt/host_config.h`, which `cuda_crt` ships): a
/// build that uses one needs the other. Derived from the `#include` lines, not written by hand.
fn header_depends(m: &mut Manifest) -> Result<()> {
    let owner: BTreeMap<&str, &str> = m
        .files
        .iter()
        .filter(|f| f.output == "dev")
        .filter_map(|f| Some((f.path.strip_prefix("include/")?, f.component.as_str())))
        .collect();
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &m.files {
        let (Some(rel), Some(src)) = (f.path.strip_prefix("include/"), &f.source) else {
            continue;
        };
        if f.output != "dev" || f.kind != "file" {
            continue;
        }
        let text = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
        let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        for inc in includes(&text) {
            let joined = if dir.is_empty() {
                inc.to_string()
            } else {
                format!("{dir}/{inc}")
            };
            let other = owner.get(inc).or_else(|| owner.get(joined.as_str()));
            if let Some(o) = other.filter(|o| **o != f.component) {
                needs
                    .entry(f.component.clone())
                    .or_default()
                    .insert(o.to_string());
            }
        }
    }
    let by_name: BTreeMap<String, (String, String)> = m
        .components
        .iter()
        .filter_map(|c| {
            Some((
                c.component.clone(),
                (c.packages.get("dev")?.clone(), c.version.clone()),
            ))
        })
        .collect();
    for c in &mut m.components {
        for o in needs.get(&c.component).into_iter().flatten() {
            let Some((dev, version)) = by_name.get(o) else {
                continue;
            };
            let major = version.split('.').next().unwrap_or("0");
            let upper = major.parse::<u64>().map(|n| n + 1).unwrap_or(1);
            c.depends
                .entry("dev".into())
                .or_default()
                .push(format!("{dev} >={version},<{upper}.0a0"));
        }
    }
    Ok(())
}

/// The names in a header's `#include "..."` and `#include <...>` lines.
fn includes(text: &[u8]) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.split(|b| *b == b'\n') {
        let l = line.trim_ascii_start();
        let Some(rest) = l.strip_prefix(b"#") else {
            continue;
        };
        let Some(rest) = rest.trim_ascii_start().strip_prefix(b"include") else {
            continue;
        };
        let rest = rest.trim_ascii_start();
        let close = match rest.first() {
            Some(b'"') => b'"',
            Some(b'<') => b'>',
            _ => continue,
        };
        if let Some(end) = rest[1..].iter().position(|b| *b == close) {
            if let Ok(name) = std::str::from_utf8(&rest[1..1 + end]) {
                out.push(name);
            }
        }
    }
    out
}

/// The metapackage: `cuda-toolkit` at the runtime's version, depending on every package exactly.
fn metapackage(m: &Manifest) -> Option<Metapackage> {
    let version = ["cuda_cudart", "cuda_nvcc"]
        .iter()
        .find_map(|k| m.components.iter().find(|c| c.component == *k))
        .or_else(|| m.components.iter().max_by(|a, b| a.version.cmp(&b.version)))?
        .version
        .clone();
    let depends = m
        .components
        .iter()
        .flat_map(|c| {
            c.packages
                .values()
                .map(move |name| format!("{name} =={}", c.version))
        })
        .collect();
    Some(Metapackage {
        name: "cuda-toolkit".into(),
        version,
        depends,
    })
}

/// Whether `soname` is opened with dlopen by one of the `siblings` (the catalog's `dlopens`, as a
/// full name or as the `libX.so` stem of a versioned family such as NVRTC's builtins).
fn dlopened_by(soname: &str, siblings: &[String], catalog: &Catalog) -> bool {
    // NVRTC's `.alt` build loads its own `.alt` builtins: the same library, another name.
    let plain = soname.replace(".alt.so", ".so");
    let soname = plain.as_str();
    siblings.iter().filter(|s| s.as_str() != soname).any(|s| {
        catalog.library_by_soname(s).is_some_and(|m| {
            m.library.dlopens.iter().any(|d| {
                d == soname || (d.ends_with(".so") && soname.starts_with(&format!("{d}.")))
            })
        })
    })
}

fn link_row(path: String, target: &str, component: &str, output: &str) -> FileRow {
    FileRow {
        path,
        component: component.into(),
        output: output.into(),
        kind: "link",
        target: Some(target.into()),
        size: 0,
        sha256: None,
        soname: None,
        needed: Vec::new(),
        source: None,
    }
}

/// The Nixpkgs-style features file: component → platform → which outputs exist.
fn features(m: &Manifest) -> serde_json::Value {
    let platform = format!(
        "linux-{}",
        std::env::consts::ARCH.replace("aarch64", "sbsa")
    );
    let mut out = serde_json::Map::new();
    for c in &m.components {
        let outputs: serde_json::Map<String, serde_json::Value> = OUTPUTS
            .iter()
            .map(|o| {
                (
                    o.to_string(),
                    serde_json::Value::Bool(c.outputs.contains_key(*o)),
                )
            })
            .collect();
        out.insert(
            c.component.clone(),
            serde_json::json!({ platform.clone(): { "outputs": outputs } }),
        );
    }
    serde_json::Value::Object(out)
}

fn write(m: &Manifest, options: &Options, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut text = serde_json::to_string_pretty(m)?;
    text.push('\n');
    std::fs::write(dir.join("split.json"), text)?;
    let mut f = serde_json::to_string_pretty(&features(m))?;
    f.push('\n');
    std::fs::write(dir.join("features.json"), f)?;
    if options.format == Format::Conda {
        let channel = dir.join(cudist_conda::host_subdir().0);
        std::fs::create_dir_all(&channel)?;
        let timestamp = match std::env::var("SOURCE_DATE_EPOCH") {
            Ok(v) => v
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={v}: not a number of seconds"))?,
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        };
        let opts = cudist_conda::WriteOptions {
            zstd_level: options.zstd_level,
            timestamp,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        };
        conda::write(m, &channel, options.build_number, &opts)?;
    }
    if options.format == Format::Dirs {
        for f in &m.files {
            // Every path comes from the input: a plain path inside its output directory.
            cudist_fs::member_name(&f.path)?;
            let out_dir = dir.join(format!("{}-{}", f.component, f.output));
            let path = out_dir.join(&f.path);
            std::fs::create_dir_all(path.parent().unwrap())?;
            match f.kind {
                "link" => {
                    std::os::unix::fs::symlink(f.target.as_deref().unwrap_or_default(), &path)?
                }
                _ => {
                    let src = f
                        .source
                        .as_ref()
                        .with_context(|| format!("no source for {}", f.path))?;
                    std::fs::copy(src, &path).with_context(|| {
                        format!("cannot copy {} to {}", src.display(), path.display())
                    })?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_follow_what_the_soname_carries() {
        // Major only.
        let p = pin_from_soname(
            "libcublas.so.13",
            "libcublas",
            Some("nvidia-cublas"),
            "13.10.0.20",
        );
        assert_eq!(p.conda, "libcublas >=13.10.0.20,<14.0a0");
        assert_eq!(p.pep508.as_deref(), Some("nvidia-cublas>=13.10.0.20,<14"));
        // Major.minor: cudart 11.0, nvrtc 11.2, the NVRTC builtins.
        let p = pin_from_soname(
            "libcudart.so.11.0",
            "cuda-cudart",
            Some("nvidia-cuda-runtime-cu11"),
            "11.0.221",
        );
        assert_eq!(p.conda, "cuda-cudart >=11.0.221,<11.1.0a0");
        assert_eq!(
            p.pep508.as_deref(),
            Some("nvidia-cuda-runtime-cu11>=11.0.221,<11.1")
        );
        let p = pin_from_soname("libnvrtc.so.11.2", "cuda-nvrtc", None, "11.2.152");
        assert_eq!(p.conda, "cuda-nvrtc >=11.2.152,<11.3.0a0");
        assert_eq!(p.pep508, None);
        let p = pin_from_soname("libnvrtc-builtins.so.12.9", "cuda-nvrtc", None, "12.9.86");
        assert_eq!(p.conda, "cuda-nvrtc >=12.9.86,<12.10.0a0");
        // No version in the SONAME: exact.
        let p = pin_from_soname("libnvvm.so", "cuda-nvvm", None, "12.9.86");
        assert_eq!(p.conda, "cuda-nvvm ==12.9.86");
    }

    #[test]
    fn pins_agree_with_repair() {
        let cat = Catalog::builtin();
        // The cases: CUDA 11's runtime and NVRTC keep their SONAMEs through 11.8, so an
        // 11.8 split pins the major, as repair's `>=11.0,<12` / `>=11.2,<12` do.
        let p = pin_for(
            "libcudart.so.11.0",
            "cuda-cudart",
            Some("nvidia-cuda-runtime-cu11"),
            "11.8.89",
            &cat,
            Some(11),
        );
        assert_eq!(p.conda, "cuda-cudart >=11.8.89,<12.0a0");
        assert_eq!(
            p.pep508.as_deref(),
            Some("nvidia-cuda-runtime-cu11>=11.8.89,<12")
        );
        let p = pin_for(
            "libnvrtc.so.11.2",
            "cuda-nvrtc",
            None,
            "11.8.89",
            &cat,
            Some(11),
        );
        assert_eq!(p.conda, "cuda-nvrtc >=11.8.89,<12.0a0");
        // cuFile's releases are 1.x while its SONAME says 0: the release line, not the name.
        let p = pin_for(
            "libcufile.so.0",
            "libcufile",
            None,
            "1.15.1.6",
            &cat,
            Some(13),
        );
        assert_eq!(p.conda, "libcufile >=1.15.1.6,<2.0a0");
        // A version outside every range the catalog knows: the name decides.
        let p = pin_for("libfoo.so.3", "foo", None, "3.1.0", &cat, None);
        assert_eq!(p.conda, "foo >=3.1.0,<4.0a0");
        // For every SONAME repair requires a range for, a split of a release in that range pins
        // the same upper bound.
        let mut checked = 0;
        // (The toolkit's libraries: RAPIDS' are not split from a CUDA root.)
        for lib in cat
            .libraries
            .iter()
            .filter(|l| l.kind == cudist_catalog::LibraryKind::Toolkit)
        {
            for m in &lib.cuda {
                for so in &m.sonames {
                    let Some(cudist_catalog::PipRequirement::Range(r)) = m.pip_requirement(so)
                    else {
                        continue;
                    };
                    let (lo, hi) = r.strip_prefix(">=").unwrap().split_once(",<").unwrap();
                    let p = pin_for(so, "x", Some("x"), lo, &cat, Some(m.major));
                    assert_eq!(p.pep508.as_deref(), Some(format!("x{r}").as_str()), "{so}");
                    assert_eq!(p.conda, format!("x >={lo},<{hi}.0a0"), "{so}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 60, "{checked}");
        // The OpenCL loader in CUDA 11's runtime archive is not the runtime's library.
        assert!(foreign_library("libOpenCL.so.1", "cuda_cudart", &cat));
        assert!(!foreign_library("libcudart.so.11.0", "cuda_cudart", &cat));
        // NVRTC's `.alt` builtins are private to NVRTC like the plain ones.
        let sibs = vec![
            "libnvrtc.so.12".to_string(),
            "libnvrtc.alt.so.12".to_string(),
            "libnvrtc-builtins.so.12.9".to_string(),
            "libnvrtc-builtins.alt.so.12.9".to_string(),
        ];
        assert!(dlopened_by("libnvrtc-builtins.alt.so.12.9", &sibs, &cat));
        assert!(!dlopened_by("libnvrtc.alt.so.12", &sibs, &cat));
    }

    #[test]
    fn every_catalog_soname_policy_gives_the_matching_pin() {
        let cat = Catalog::builtin();
        let mut seen = std::collections::BTreeSet::new();
        for lib in &cat.libraries {
            for m in &lib.cuda {
                for so in &m.sonames {
                    let p = pin_from_soname(so, "x", None, "1.2.3");
                    let want = match m.policy {
                        cudist_catalog::SonamePolicy::Major => "x >=1.2.3,<2.0a0",
                        cudist_catalog::SonamePolicy::MajorMinor => "x >=1.2.3,<1.3.0a0",
                        cudist_catalog::SonamePolicy::None => "x ==1.2.3",
                    };
                    // The catalog's policy and the pin derived from the name agree.
                    if so.split_once(".so.").is_some()
                        || m.policy == cudist_catalog::SonamePolicy::None
                    {
                        assert_eq!(p.conda, want, "{so} ({})", m.policy);
                    }
                    seen.insert(m.policy.to_string());
                }
            }
        }
        assert!(
            seen.contains("major") && seen.contains("major.minor"),
            "{seen:?}"
        );
    }

    fn file(path: &str, component: &str, sha: &str) -> FileRow {
        FileRow {
            path: path.into(),
            component: component.into(),
            output: output_of(path, true).unwrap_or("doc").into(),
            kind: "file",
            target: None,
            size: 1,
            sha256: Some(sha.into()),
            soname: None,
            needed: Vec::new(),
            source: Some(PathBuf::from(format!("/in/{path}"))),
        }
    }

    fn paths(rows: &[FileRow]) -> Vec<(String, &'static str, Option<String>)> {
        rows.iter()
            .map(|f| (f.path.clone(), f.kind, f.target.clone()))
            .collect()
    }

    #[test]
    fn each_destination_is_placed_once_and_the_choice_reported() {
        // The input's own linker-name link, resolved to a copy of the library: the made link wins.
        let mut rows = vec![
            file("lib64/libcudart.so.13", "cuda_cudart", "aa"),
            link_row(
                "lib64/libcudart.so".into(),
                "libcudart.so.13",
                "cuda_cudart",
                "dev",
            ),
            file("lib64/libcudart.so", "cuda_cudart", "aa"),
        ];
        let c = settle(&mut rows).unwrap();
        assert_eq!(
            paths(&rows),
            vec![
                ("lib64/libcudart.so.13".into(), "file", None),
                (
                    "lib64/libcudart.so".into(),
                    "link",
                    Some("libcudart.so.13".into())
                ),
            ]
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].path, "lib64/libcudart.so");
        assert_eq!(c[0].kept, "link -> libcudart.so.13 (cuda_cudart)");
        assert_eq!(
            c[0].dropped,
            vec!["file /in/lib64/libcudart.so (cuda_cudart)"]
        );
        // Through a chain: linker name -> SONAME link -> file.
        let mut rows = vec![
            file("lib64/libx.so.1.2", "c", "bb"),
            link_row("lib64/libx.so.1".into(), "libx.so.1.2", "c", "lib"),
            link_row("lib64/libx.so".into(), "libx.so.1", "c", "dev"),
            file("lib64/libx.so", "c", "bb"),
        ];
        settle(&mut rows).unwrap();
        assert_eq!(rows.len(), 3);
        assert!(rows
            .iter()
            .all(|f| f.path != "lib64/libx.so" || f.kind == "link"));
        // A found file that is something else (a linker script) is kept as the input has it.
        let mut rows = vec![
            file("lib64/liby.so.1", "c", "cc"),
            link_row("lib64/liby.so".into(), "liby.so.1", "c", "dev"),
            file("lib64/liby.so", "c", "script"),
        ];
        let c = settle(&mut rows).unwrap();
        assert_eq!(c[0].kept, "file /in/lib64/liby.so (c)");
        assert_eq!(rows.len(), 2);
        // The same content twice (lib/ and lib64/ as real directories): placed once.
        let mut rows = vec![
            file("include/a.h", "c", "dd"),
            file("include/a.h", "d", "dd"),
        ];
        let c = settle(&mut rows).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].component, "c");
        assert!(c[0].reason.contains("same content"));
        // Different content at one path: refused, both named.
        let mut rows = vec![
            file("include/a.h", "c", "dd"),
            file("include/a.h", "d", "ee"),
        ];
        let e = settle(&mut rows).unwrap_err().to_string();
        assert!(
            e.contains("include/a.h is given twice with different content"),
            "{e}"
        );
        assert!(e.contains("(c)") && e.contains("(d)"), "{e}");
        // Two libraries with one SONAME: the link names the newest.
        let mut rows = vec![
            link_row("lib64/libz.so.1".into(), "libz.so.1.9", "c", "lib"),
            link_row("lib64/libz.so.1".into(), "libz.so.1.10", "c", "lib"),
        ];
        let c = settle(&mut rows).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].target.as_deref(), Some("libz.so.1.10"));
        assert!(c[0].reason.contains("newest"));
        // Nothing to decide: nothing reported.
        let mut rows = vec![file("a", "c", "1"), file("b", "c", "2")];
        assert!(settle(&mut rows).unwrap().is_empty());
    }

    #[test]
    fn outputs_by_path() {
        assert_eq!(output_of("lib64/libcudart.so.13", true), Some("lib"));
        assert_eq!(output_of("lib64/libcudart.so", true), Some("dev"));
        assert_eq!(output_of("lib64/libcudart_static.a", false), Some("static"));
        assert_eq!(output_of("lib64/stubs/libcuda.so", true), Some("stubs"));
        assert_eq!(output_of("include/cuda_runtime.h", false), Some("dev"));
        assert_eq!(
            output_of("lib64/cmake/cub/cub-config.cmake", false),
            Some("dev")
        );
        assert_eq!(output_of("bin/nvcc", false), Some("bin"));
        assert_eq!(output_of("nvvm/bin/cicc", false), Some("bin"));
        assert_eq!(output_of("nvvm/lib64/libnvvm.so", true), Some("dev"));
        assert_eq!(
            output_of("nvvm/libdevice/libdevice.10.bc", false),
            Some("dev")
        );
        assert_eq!(output_of("bin/crt/link.stub", false), Some("bin"));
        assert_eq!(output_of("samples/0_Simple/x.cu", false), Some("sample"));
        assert_eq!(
            output_of("compute-sanitizer/compute-sanitizer", false),
            Some("bin")
        );
        assert_eq!(
            output_of("compute-sanitizer/include/sanitizer.h", false),
            Some("dev")
        );
        assert_eq!(
            output_of("compute-sanitizer/docs/ComputeSanitizer/index.html", false),
            Some("doc")
        );
        assert_eq!(output_of("weird/thing", false), None);
    }
}
