//! `cudist doctor` without paths: every CUDA installation this machine's programs could see, with
//! versions and majors, and the conflicts between them (two CUDA majors of one library visible).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cudist_catalog::{Catalog, SonameClass};
use serde::Serialize;

/// One place CUDA libraries are visible from.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Installation {
    /// `ld.so.cache`, `LD_LIBRARY_PATH`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda*`,
    /// `conda`, `site-packages`.
    pub kind: String,
    /// Where it is.
    pub path: String,
    /// The toolkit version, where the installation says (version.json, conda `cuda-version`).
    pub version: Option<String>,
    /// CUDA libraries found there: (SONAME or package, CUDA major).
    pub libraries: Vec<VisibleLib>,
}

/// A CUDA library visible in an installation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VisibleLib {
    /// The SONAME, or the package.
    pub name: String,
    /// The catalog library id (`cublas`).
    pub library: Option<String>,
    /// Its CUDA major, when known.
    pub major: Option<u32>,
    /// Where it is.
    pub path: String,
}

/// Two CUDA majors of one library visible at once.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The library (its catalog id, or the SONAME).
    pub library: String,
    /// `major: where`, one per major.
    pub seen: Vec<String>,
}

/// The CUDA libraries in a directory (files named like a catalog SONAME).
fn libs_in(dir: &Path, catalog: &Catalog) -> Vec<VisibleLib> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // CUDA 13 wheels keep everything in nvidia/cu13/lib: the directory names the major of
    // SONAMEs several majors share (libcurand.so.10).
    let parts: Vec<&str> = dir.iter().filter_map(|c| c.to_str()).collect();
    let hint = parts
        .windows(2)
        .find(|w| w[0] == "nvidia")
        .and_then(|w| w[1].strip_prefix("cu")?.parse::<u32>().ok());
    names
        .into_iter()
        .filter_map(|n| {
            let (m, _) = catalog.library_by_name_hinted(&n, hint)?;
            // One row per SONAME file, not for the linker-name links.
            if n.ends_with(".so") {
                return None;
            }
            Some(VisibleLib {
                library: Some(m.library.id.clone()),
                major: (!m.ambiguous).then_some(m.major.major),
                path: dir.join(&n).display().to_string(),
                name: n,
            })
        })
        .collect()
}

/// The toolkit version a CUDA root states (`version.json` "cuda", else `version.txt`).
fn root_version(root: &Path) -> Option<String> {
    if let Ok(t) = std::fs::read_to_string(root.join("version.json")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) {
            if let Some(s) = v["cuda"]["version"].as_str() {
                return Some(s.to_string());
            }
        }
    }
    let t = std::fs::read_to_string(root.join("version.txt")).ok()?;
    t.split_whitespace().last().map(str::to_string)
}

fn root(kind: &str, dir: &Path, catalog: &Catalog) -> Installation {
    let mut libraries = libs_in(&dir.join("lib64"), catalog);
    if libraries.is_empty() {
        libraries = libs_in(&dir.join("lib"), catalog);
    }
    Installation {
        kind: kind.into(),
        path: dir.display().to_string(),
        version: root_version(dir),
        libraries,
    }
}

/// Every CUDA installation visible here.
pub fn installations(catalog: &Catalog) -> Vec<Installation> {
    let mut out = Vec::new();
    // ld.so.cache: what any program finds without help.
    let cache = cudist_elf::ldso::LdCache::system();
    let mut cached = Vec::new();
    for e in &cache.entries {
        match catalog.classify(&e.soname) {
            SonameClass::Toolkit(m) | SonameClass::External(m) => cached.push(VisibleLib {
                name: e.soname.clone(),
                library: Some(m.library.id.clone()),
                major: (!m.ambiguous).then_some(m.major.major),
                path: e.path.display().to_string(),
            }),
            SonameClass::Driver(_) => cached.push(VisibleLib {
                name: e.soname.clone(),
                library: None,
                major: None,
                path: e.path.display().to_string(),
            }),
            _ => {}
        }
    }
    if !cached.is_empty() {
        out.push(Installation {
            kind: "ld.so.cache".into(),
            path: "/etc/ld.so.cache".into(),
            version: None,
            libraries: cached,
        });
    }
    if let Ok(lp) = std::env::var("LD_LIBRARY_PATH") {
        for d in cudist_elf::loader::split_path_list(&lp) {
            let libraries = libs_in(Path::new(&d), catalog);
            if !libraries.is_empty() {
                out.push(Installation {
                    kind: "LD_LIBRARY_PATH".into(),
                    path: d,
                    version: None,
                    libraries,
                });
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(v) = std::env::var(var) {
            if !v.is_empty() {
                out.push(root(var, Path::new(&v), catalog));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/local") {
        let mut dirs: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("cuda"))
            })
            .collect();
        dirs.sort();
        for d in dirs {
            out.push(root("/usr/local/cuda*", &d, catalog));
        }
    }
    if let Ok(prefix) = std::env::var("CONDA_PREFIX") {
        let p = PathBuf::from(&prefix);
        let mut inst = root("conda", &p, catalog);
        if let Ok(src) = crate::environment::Source::read(
            &crate::environment::Spec {
                conda_prefix: Some(p.clone()),
                ..Default::default()
            },
            catalog,
        ) {
            inst.version = src.release.or(inst.version);
        }
        out.push(inst);
    }
    // The CUDA wheels of the current Python.
    if let Ok(src) = crate::environment::Source::read(&Default::default(), catalog) {
        for root in &src.roots {
            let libraries: Vec<VisibleLib> = src
                .packages
                .iter()
                .filter(|p| &p.root == root)
                .map(|p| VisibleLib {
                    name: format!("{} {}", p.name, p.version),
                    library: catalog
                        .component_by_pip(&p.name)
                        .map(|(c, _)| c.redist.clone()),
                    major: p.major,
                    path: p
                        .files
                        .iter()
                        .find_map(|f| f.abs.parent().map(|d| d.display().to_string()))
                        .unwrap_or_default(),
                })
                .collect();
            if !libraries.is_empty() {
                out.push(Installation {
                    kind: "site-packages".into(),
                    path: root.display().to_string(),
                    version: src.release.clone(),
                    libraries,
                });
            }
        }
    }
    out
}

/// Libraries visible with more than one CUDA major.
pub fn conflicts(installs: &[Installation]) -> Vec<Conflict> {
    let mut by_lib: BTreeMap<String, BTreeMap<u32, String>> = BTreeMap::new();
    for i in installs.iter().filter(|i| i.kind != "site-packages") {
        for l in &i.libraries {
            if let (Some(id), Some(major)) = (&l.library, l.major) {
                by_lib
                    .entry(id.clone())
                    .or_default()
                    .entry(major)
                    .or_insert_with(|| format!("{} ({})", l.path, i.kind));
            }
        }
    }
    let runtimes: BTreeMap<u32, String> = by_lib.get("cudart").cloned().unwrap_or_default();
    let mut out: Vec<Conflict> = by_lib
        .into_iter()
        .filter(|(_, m)| m.len() > 1)
        .map(|(library, m)| Conflict {
            library,
            seen: m
                .into_iter()
                .map(|(k, v)| format!("CUDA {k}: {v}"))
                .collect(),
        })
        .collect();
    // Headers of one toolkit with libraries of another: a CUDA root (CUDA_HOME, /usr/local/cuda,
    // conda) of a major that no visible runtime library has, while another major's is visible.
    let roots = ["CUDA_HOME", "CUDA_PATH", "/usr/local/cuda*", "conda"];
    for i in installs.iter().filter(|i| roots.contains(&i.kind.as_str())) {
        let Some(major) = i
            .version
            .as_deref()
            .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if !runtimes.is_empty() && !runtimes.contains_key(&major) {
            let mut seen = vec![format!(
                "headers: CUDA {} at {} ({})",
                i.version.as_deref().unwrap_or("?"),
                i.path,
                i.kind
            )];
            seen.extend(
                runtimes
                    .iter()
                    .map(|(k, v)| format!("runtime: CUDA {k}: {v}")),
            );
            out.push(Conflict {
                library: "toolkit headers vs runtime".into(),
                seen,
            });
        }
    }
    out
}
