//! Where the CUDA files come from: the CUDA wheels of a Python environment (found through the
//! interpreter or given as site-packages directories) or the CUDA packages of a conda prefix, each
//! file with the package that installed it and the place it takes in a CUDA root; whether those
//! packages can make one toolkit ([`check_versions`]); and the marker file a CUDA root written by
//! `cudist toolkit` keeps, naming the environment its links lead into ([`MARKER`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cudist_catalog::{Catalog, VersionCheck};
use cudist_wheel::installed;

use crate::error::{BadInput, Error};

type Result<T, E = Error> = std::result::Result<T, E>;

/// The file a CUDA root written by `cudist toolkit` keeps at its top.
pub const MARKER: &str = ".cudist-toolkit";
/// The marker's line prefix naming a site-packages directory the root links into.
pub const MARKER_SITE: &str = "site-packages: ";
/// The marker's line prefix naming a conda prefix the root links into.
pub const MARKER_CONDA: &str = "conda-prefix: ";

/// Which environment to read.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Ask this Python interpreter for its site-packages (`python3` on PATH when nothing is given).
    pub python: Option<PathBuf>,
    /// Read these site-packages directories instead of asking an interpreter.
    pub site_packages: Vec<PathBuf>,
    /// Read the CUDA packages of this conda prefix (from its conda-meta/ records).
    pub conda_prefix: Option<PathBuf>,
}

/// The marker a CUDA root written from `source` keeps ([`MARKER`]): a line for people, then one
/// line per directory of the environment its links lead into, which [`Spec::from_marker`] reads.
pub fn marker_text(source: &Source, version: &str) -> String {
    let mut marker = format!(
        "CUDA {version} root written by cudist toolkit from {}\n",
        source.description
    );
    for r in &source.roots {
        let key = match source.kind {
            SourceKind::Pip => MARKER_SITE,
            SourceKind::Conda => MARKER_CONDA,
        };
        marker.push_str(&format!("{key}{}\n", r.display()));
    }
    marker
}

impl Spec {
    /// The environment a CUDA root written by `cudist toolkit` links into, from the marker at
    /// `root` (none without one, or when it names no environment). A marker is input like any
    /// other: it can only name an environment, which is then read with the usual containment.
    pub fn from_marker(root: &Path) -> Option<Spec> {
        let text = cudist_fs::read_bounded(&root.join(MARKER), cudist_fs::SMALL_FILE).ok()?;
        let text = String::from_utf8_lossy(&text);
        let mut spec = Spec::default();
        for line in text.lines() {
            if let Some(p) = line.strip_prefix(MARKER_SITE) {
                spec.site_packages.push(PathBuf::from(p));
            } else if let Some(p) = line.strip_prefix(MARKER_CONDA) {
                spec.conda_prefix = Some(PathBuf::from(p));
            }
        }
        if spec.conda_prefix.is_some() {
            spec.site_packages.clear();
        }
        (!spec.site_packages.is_empty() || spec.conda_prefix.is_some()).then_some(spec)
    }
}

/// The kind of environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A Python environment: CUDA wheels in site-packages.
    Pip,
    /// A conda prefix: CUDA packages recorded in conda-meta/.
    Conda,
}

/// One file a package installed, and its place in a CUDA root.
#[derive(Debug, Clone)]
pub struct PkgFile {
    /// The path as the package records it, relative to its root.
    pub rel: String,
    /// The path on disk.
    pub abs: PathBuf,
    /// Its place in a CUDA root (`lib64/libcudart.so.13`), or none when it has none.
    pub dest: Option<String>,
    /// The RECORD hash (`sha256=…`), where the package manager wrote one.
    pub hash: String,
}

/// One installed CUDA package.
#[derive(Debug, Clone)]
pub struct Package {
    /// The distribution or package name as installed.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The CUDA major, from the name's `-cuNN` suffix, the `nvidia/cuNN` directory, or the
    /// version of a toolkit-versioned component; none when nothing says.
    pub major: Option<u32>,
    /// The directory the package's paths are relative to (site-packages or the prefix).
    pub root: PathBuf,
    /// The `.dist-info` directory (pip) — where `--in-place` records what it adds.
    pub dist_info: Option<PathBuf>,
    /// The files it installed that have a place in a CUDA root.
    pub files: Vec<PkgFile>,
}

/// A read environment.
#[derive(Debug, Clone)]
pub struct Source {
    /// Python environment or conda prefix.
    pub kind: SourceKind,
    /// What was read, in words (`python3 (/venv/bin/python3)`).
    pub description: String,
    /// The directories read.
    pub roots: Vec<PathBuf>,
    /// The CUDA packages found, sorted by name.
    pub packages: Vec<Package>,
    /// The `cuda-toolkit` metapackage (pip) or `cuda-version` (conda) version, when installed.
    pub release: Option<String>,
}

impl Source {
    /// Reads the environment `args` names.
    pub fn read(args: &Spec, catalog: &Catalog) -> Result<Source> {
        if let Some(prefix) = &args.conda_prefix {
            return read_conda(prefix, catalog);
        }
        let (description, roots) = if !args.site_packages.is_empty() {
            for d in &args.site_packages {
                if !d.is_dir() {
                    return Err(Error::Bad(BadInput(format!(
                        "--site-packages {}: not a directory",
                        d.display()
                    ))));
                }
            }
            ("site-packages".to_string(), args.site_packages.clone())
        } else {
            let python = args.python.clone().unwrap_or_else(|| "python3".into());
            let roots = python_site_dirs(&python)?;
            (format!("the environment of {}", python.display()), roots)
        };
        read_pip(description, roots, catalog)
    }
}

/// A version's numeric parts, for ordering: `13.5.37` → `[13, 5, 37]` (stops at the first part
/// that is not a number).
pub fn key(v: &str) -> Vec<u32> {
    v.split(['.', '+', '-'])
        .map_while(|p| p.parse().ok())
        .collect()
}

fn major_minor(v: &str) -> Option<(u32, u32)> {
    let k = key(v);
    Some((*k.first()?, *k.get(1)?))
}

/// Refuses environments whose packages cannot make one toolkit: several CUDA majors, or
/// components whose versions disagree beyond what CUDA allows (the catalog's `check`).
pub fn check_versions(source: &Source, catalog: &Catalog) -> Result<u32> {
    let mut by_major: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for p in &source.packages {
        if let Some(m) = p.major {
            by_major
                .entry(m)
                .or_default()
                .push(format!("{} {}", p.name, p.version));
        }
    }
    if by_major.len() > 1 {
        let list: Vec<String> = by_major
            .iter()
            .map(|(m, ps)| format!("CUDA {m}: {}", ps.join(", ")))
            .collect();
        return Err(Error::Message(format!(
            "the environment mixes CUDA majors ({}); headers of one toolkit with libraries of another break builds silently. \
             Uninstall the packages of one major (`pip uninstall …`)",
            list.join("; ")
        )));
    }
    let Some((&major, _)) = by_major.iter().next() else {
        return Err(Error::Message(format!(
            "no installed package says which CUDA major it is for ({}); cannot assemble a toolkit",
            source
                .packages
                .iter()
                .map(|p| format!("{} {}", p.name, p.version))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    // Core components (runtime, nvcc, nvvm, crt) must be one CUDA major.minor.
    let mut core: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
    let mut newer: Vec<(&Package, (u32, u32))> = Vec::new();
    for p in &source.packages {
        let Some((c, _)) = catalog.component_by_pip(&p.name) else {
            continue;
        };
        let Some(mm) = major_minor(&p.version) else {
            continue;
        };
        match c.check {
            VersionCheck::Core => core
                .entry(mm)
                .or_default()
                .push(format!("{} {}", p.name, p.version)),
            VersionCheck::Newer => newer.push((p, mm)),
            VersionCheck::Major => {}
        }
    }
    if core.len() > 1 {
        let list: Vec<String> = core
            .iter()
            .map(|((a, b), ps)| format!("{a}.{b}: {}", ps.join(", ")))
            .collect();
        return Err(Error::Message(format!(
            "the compiler and runtime components disagree on the CUDA release ({}); nvcc, its crt headers, NVVM and the \
             runtime must come from one release. Install matching versions (e.g. `pip install cuda-toolkit[cudart,nvcc]==X.Y.*`)",
            list.join("; ")
        )));
    }
    if let Some((&core_mm, core_pkgs)) = core.iter().next() {
        for (p, mm) in newer {
            if mm < core_mm {
                return Err(Error::Message(format!(
                    "{} {} is older than the toolkit ({} is CUDA {}.{}); it must be at least as new to link the code \
                     this compiler makes. Upgrade it",
                    p.name,
                    p.version,
                    core_pkgs.join(", "),
                    core_mm.0,
                    core_mm.1
                )));
            }
        }
    }
    Ok(major)
}

/// The purelib and platlib directories of an interpreter.
fn python_site_dirs(python: &Path) -> Result<Vec<PathBuf>> {
    let script =
        "import sysconfig\nfor k in ('purelib', 'platlib'): print(sysconfig.get_paths()[k])";
    let out = Command::new(python)
        .args(["-c", script])
        .output()
        .map_err(|source| Error::Io {
            context: format!(
                "cannot run {} to find its site-packages (give --python PATH or --site-packages DIR)",
                python.display()
            ),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::Message(format!(
            "{} failed while asked for its site-packages: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let p = PathBuf::from(l.trim());
        if p.is_dir() && !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    Ok(dirs)
}

/// The place of a wheel file (path relative to site-packages) in a CUDA root.
///
/// CUDA 13 wheels share one tree, `nvidia/cu13/{bin,include,lib,nvvm}`; CUDA 11/12 wheels keep one
/// per component, `nvidia/<component>/{bin,include,lib}` (with `nvvm/` inside `cuda_nvcc`). Both
/// map onto the toolkit layout: `lib/` becomes `lib64/`, the rest keeps its name. Licenses from the
/// `.dist-info` go to `share/licenses/<package>/`. Python files have no place.
pub fn wheel_dest(rel: &str, package: &str) -> Option<String> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rel.contains("__pycache__") || name.ends_with(".py") || name.ends_with(".pyc") {
        return None;
    }
    if let Some((dir, rest)) = rel.split_once('/') {
        if dir.ends_with(".dist-info") {
            let lic = rest.strip_prefix("licenses/").unwrap_or(rest);
            let lower = lic.to_ascii_lowercase();
            let is_license = rest.starts_with("licenses/")
                || lower.starts_with("license")
                || lower.starts_with("copying")
                || lower.starts_with("eula");
            return is_license.then(|| format!("share/licenses/{package}/{lic}"));
        }
    }
    let rest = rel.strip_prefix("nvidia/")?;
    let (_component, inner) = rest.split_once('/')?;
    let (top, below) = inner.split_once('/')?;
    if below.is_empty() {
        return None;
    }
    Some(match top {
        "lib" | "lib64" => format!("lib64/{below}"),
        // CUDA 13's CCCL keeps its CMake packages in nvidia/cu13/cccl/lib/cmake.
        "cccl" => match below.strip_prefix("lib/") {
            Some(b) => format!("lib64/{b}"),
            None => format!("share/doc/cccl/{below}"),
        },
        other => format!("{other}/{below}"),
    })
}

/// The CUDA major a wheel file's directory names (`nvidia/cu13/…` → 13).
fn merged_major(rel: &str) -> Option<u32> {
    let dir = rel.strip_prefix("nvidia/")?.split('/').next()?;
    dir.strip_prefix("cu")?.parse().ok()
}

fn read_pip(description: String, roots: Vec<PathBuf>, catalog: &Catalog) -> Result<Source> {
    let mut packages = Vec::new();
    let mut release = None;
    let mut seen = BTreeSet::new();
    for root in &roots {
        let dists = installed::scan(root).map_err(|source| Error::Io {
            context: format!("cannot read site-packages {}", root.display()),
            source,
        })?;
        for d in dists {
            let norm = installed::normalise(&d.name);
            if norm == "cuda-toolkit" {
                release = Some(d.version.clone());
                continue;
            }
            let cuda_files: Vec<&installed::RecordRow> = d
                .record
                .iter()
                .filter(|r| r.path.starts_with("nvidia/") && !r.path.ends_with("__init__.py"))
                .filter(|r| !r.path.contains("__pycache__"))
                .collect();
            if cuda_files.is_empty() || !seen.insert(norm.clone()) {
                continue;
            }
            let mut major = None;
            if let Some((c, m)) = catalog.component_by_pip(&norm) {
                major = m;
                if major.is_none() && c.versioning == cudist_catalog::Versioning::Toolkit {
                    major = d.version.split('.').next().and_then(|v| v.parse().ok());
                }
            } else if let Some((_, m)) = norm.rsplit_once("-cu") {
                major = m.parse().ok();
            }
            if let Some(m) = cuda_files.iter().find_map(|r| merged_major(&r.path)) {
                major = major.or(Some(m));
            }
            let mut files = Vec::new();
            let mut resolver = cudist_fs::inner::Resolver::new(root)?;
            for r in &d.record {
                // A package's files stay inside site-packages, through every link on the way;
                // rows that climb out of it (scripts in ../../bin) are no CUDA files.
                let rel = match cudist_fs::within_root(&r.path) {
                    Ok(rel) => rel,
                    Err(_) if !r.path.starts_with("nvidia/") => continue,
                    Err(e) => return Err(hostile_row(&d.dist_info.join("RECORD"), e)),
                };
                let Some(dest) = wheel_dest(&rel, &norm) else {
                    continue;
                };
                let abs = resolver
                    .resolve(&rel)
                    .map_err(|e| hostile_row(&d.dist_info.join("RECORD"), e))?;
                files.push(PkgFile {
                    rel,
                    abs,
                    dest: Some(dest),
                    hash: r.hash.clone(),
                });
            }
            packages.push(Package {
                name: d.name.clone(),
                version: d.version.clone(),
                major,
                root: root.clone(),
                dist_info: Some(d.dist_info.clone()),
                files,
            });
        }
    }
    packages.sort_by_key(|p| installed::normalise(&p.name));
    Ok(Source {
        kind: SourceKind::Pip,
        description,
        roots,
        packages,
        release,
    })
}

/// The error for a row of an installed package's file list that leads out of its root.
fn hostile_row(record: &Path, e: cudist_fs::PathError) -> Error {
    Error::Bad(BadInput(format!(
        "{}: a file it lists, {e}; cudist reads only files inside the environment",
        record.display()
    )))
}

/// The place of a conda package file (path relative to the prefix) in a CUDA root: conda's CUDA
/// packages keep headers and libraries in `targets/<triple>/{include,lib}` (with links in `lib/`),
/// tools in `bin/`, NVVM in `nvvm/`.
pub fn conda_dest(rel: &str) -> Option<String> {
    if let Some(t) = rel.strip_prefix("targets/") {
        let (_triple, inner) = t.split_once('/')?;
        let (top, below) = inner.split_once('/')?;
        return match top {
            "lib" | "lib64" if !below.starts_with("pkgconfig/") => Some(format!("lib64/{below}")),
            "include" => Some(format!("include/{below}")),
            "bin" | "nvvm" => Some(format!("{top}/{below}")),
            _ => None,
        };
    }
    let (top, below) = rel.split_once('/')?;
    match top {
        "bin" | "nvvm" => Some(format!("{top}/{below}")),
        "lib" if !below.contains('/') => Some(format!("lib64/{below}")),
        _ => None,
    }
}

/// Whether a conda package name is a CUDA toolkit package.
fn is_cuda_conda(name: &str, catalog: &Catalog) -> bool {
    name.starts_with("cuda-")
        || catalog.libraries.iter().any(|l| {
            l.conda.as_deref() == Some(name)
                || l.conda
                    .as_deref()
                    .is_some_and(|c| name == format!("{c}-dev") || name == format!("{c}-static"))
        })
}

fn read_conda(prefix: &Path, catalog: &Catalog) -> Result<Source> {
    let meta = prefix.join("conda-meta");
    let entries = std::fs::read_dir(&meta).map_err(|e| {
        Error::Bad(BadInput(format!(
            "{}: not a conda prefix (no conda-meta/ directory: {e})",
            prefix.display()
        )))
    })?;
    let mut packages = Vec::new();
    let mut release = None;
    let mut names: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut resolver = cudist_fs::inner::Resolver::new(prefix)?;
    for p in names {
        let text = cudist_fs::read_bounded(&p, cudist_fs::SMALL_FILE)?;
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
            Error::Bad(BadInput(format!(
                "{}: not a conda package record (bad JSON: {e})",
                p.display()
            )))
        })?;
        let name = v["name"].as_str().unwrap_or_default().to_string();
        let version = v["version"].as_str().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err(Error::Message(format!(
                "{}: conda package record without a name",
                p.display()
            )));
        }
        if name == "cuda-version" {
            release = Some(version);
            continue;
        }
        if !is_cuda_conda(&name, catalog) {
            continue;
        }
        let mut files: Vec<PkgFile> = Vec::new();
        for raw in v["files"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f.as_str()).collect::<Vec<_>>())
            .unwrap_or_default()
        {
            // A package's files stay inside the prefix, through every link on the way.
            let rel = cudist_fs::within_root(raw).map_err(|e| hostile_row(&p, e))?;
            // conda's lib/ links point into targets/, which is placed already.
            if rel.starts_with("lib/") && prefix.join(&rel).is_symlink() {
                continue;
            }
            let Some(dest) = conda_dest(&rel) else {
                continue;
            };
            let abs = resolver.resolve(&rel).map_err(|e| hostile_row(&p, e))?;
            files.push(PkgFile {
                rel,
                dest: Some(dest),
                abs,
                hash: String::new(),
            });
        }
        if files.is_empty() {
            continue;
        }
        packages.push(Package {
            major: None,
            name,
            version,
            root: prefix.to_path_buf(),
            dist_info: None,
            files,
        });
    }
    // In conda, the `cuda-version` package says the CUDA release of the whole prefix.
    let major = release
        .as_deref()
        .and_then(|r| r.split('.').next()?.parse().ok());
    // Without it, the `cuda-*` packages' versions follow the CUDA release (cuda-cudart 12.9.79).
    for p in &mut packages {
        p.major = major.or_else(|| {
            p.name
                .starts_with("cuda-")
                .then(|| p.version.split('.').next()?.parse().ok())
                .flatten()
        });
    }
    Ok(Source {
        kind: SourceKind::Conda,
        description: format!("conda prefix {}", prefix.display()),
        roots: vec![prefix.to_path_buf()],
        packages,
        release,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_keys() {
        assert_eq!(key("13.5.37"), vec![13, 5, 37]);
        assert_eq!(major_minor("12.9.79"), Some((12, 9)));
        assert_eq!(major_minor("13"), None);
        assert!(key("13.10.0.20") > key("13.5.37"));
    }

    #[test]
    fn wheel_layouts_map_onto_a_cuda_root() {
        let d = |r| wheel_dest(r, "p");
        // CUDA 13, merged.
        assert_eq!(
            d("nvidia/cu13/lib/libcudart.so.13").as_deref(),
            Some("lib64/libcudart.so.13")
        );
        assert_eq!(d("nvidia/cu13/bin/nvcc").as_deref(), Some("bin/nvcc"));
        assert_eq!(
            d("nvidia/cu13/nvvm/bin/cicc").as_deref(),
            Some("nvvm/bin/cicc")
        );
        assert_eq!(
            d("nvidia/cu13/include/cccl/cub/cub.cuh").as_deref(),
            Some("include/cccl/cub/cub.cuh")
        );
        assert_eq!(
            d("nvidia/cu13/cccl/lib/cmake/cub/cub-config.cmake").as_deref(),
            Some("lib64/cmake/cub/cub-config.cmake")
        );
        // CUDA 12, per component; nvvm inside cuda_nvcc.
        assert_eq!(
            d("nvidia/cuda_runtime/lib/libcudart.so.12").as_deref(),
            Some("lib64/libcudart.so.12")
        );
        assert_eq!(
            d("nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so").as_deref(),
            Some("nvvm/lib64/libnvvm.so")
        );
        assert_eq!(
            d("nvidia/curand/include/curand.h").as_deref(),
            Some("include/curand.h")
        );
        // No place: Python files, the package directory itself, metadata.
        assert_eq!(d("nvidia/curand/lib/__init__.py"), None);
        assert_eq!(d("nvidia/__init__.py"), None);
        assert_eq!(d("nvidia_curand-1.dist-info/METADATA"), None);
        assert_eq!(
            d("nvidia_curand-1.dist-info/licenses/License.txt").as_deref(),
            Some("share/licenses/p/License.txt")
        );
        assert_eq!(
            d("nvidia_curand-1.dist-info/License.txt").as_deref(),
            Some("share/licenses/p/License.txt")
        );
        assert_eq!(merged_major("nvidia/cu13/lib/x"), Some(13));
        assert_eq!(merged_major("nvidia/cuda_runtime/lib/x"), None);
    }

    #[test]
    fn conda_layout_maps_onto_a_cuda_root() {
        assert_eq!(
            conda_dest("targets/x86_64-linux/lib/libcudart.so.12.9.79").as_deref(),
            Some("lib64/libcudart.so.12.9.79")
        );
        assert_eq!(
            conda_dest("targets/x86_64-linux/lib/stubs/libcuda.so").as_deref(),
            Some("lib64/stubs/libcuda.so")
        );
        assert_eq!(
            conda_dest("targets/x86_64-linux/include/cuda.h").as_deref(),
            Some("include/cuda.h")
        );
        assert_eq!(
            conda_dest("targets/x86_64-linux/lib/pkgconfig/cudart-12.9.pc"),
            None
        );
        assert_eq!(conda_dest("bin/nvcc").as_deref(), Some("bin/nvcc"));
        assert_eq!(
            conda_dest("nvvm/libdevice/libdevice.10.bc").as_deref(),
            Some("nvvm/libdevice/libdevice.10.bc")
        );
        assert_eq!(conda_dest("etc/conda/activate.d/x.sh"), None);
    }
}
