//! The CUDA root as a plan: every path it will hold and where its content comes from, checked
//! for mixed CUDA majors, disagreeing component versions, conflicting and missing files before
//! anything is written.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::{bail, Result};
use cudist_catalog::{Catalog, VersionCheck};
use serde::Serialize;

use super::source::{Package, Source};

/// Where one path of the root gets its content.
#[derive(Debug, Clone)]
pub enum Item {
    /// A file of the environment: linked (or copied with `--copy`).
    File { src: PathBuf, exec_fix: bool },
    /// A relative symbolic link cudist makes (`libcudart.so -> libcudart.so.13`).
    Symlink { target: String },
    /// Content cudist writes (nvcc.profile, version.json, pkg-config files, the driver stub).
    Bytes { data: Vec<u8>, exec: bool },
}

/// One planned path and who provides it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub item: Item,
    /// The package name, or `cudist` for generated content.
    pub origin: String,
}

/// Two packages that give one path different content.
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub path: String,
    pub packages: Vec<String>,
    /// The package whose file the root holds.
    pub kept: String,
}

/// A package as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentRow {
    pub name: String,
    pub version: String,
    pub major: Option<u32>,
    /// The key of NVIDIA's manifests and version.json (`cuda_cudart`), when the catalog knows it.
    pub redist: Option<String>,
    pub files: usize,
}

/// The whole plan.
#[derive(Debug, Default)]
pub struct Plan {
    pub entries: BTreeMap<String, Entry>,
    pub conflicts: Vec<Conflict>,
    pub components: Vec<ComponentRow>,
    pub major: u32,
    /// The toolkit version: the runtime's (else the compiler's, else the newest
    /// toolkit-versioned component's) version, as nvcc reports its own (`13.5.37`).
    pub version: String,
    /// Bin files that were not executable in the environment (copied and made executable).
    pub exec_fixed: Vec<String>,
}

/// `13.5.37` → `[13, 5, 37]`.
fn key(v: &str) -> Vec<u32> {
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
        bail!(
            "the environment mixes CUDA majors ({}); headers of one toolkit with libraries of another break builds silently. \
             Uninstall the packages of one major (`pip uninstall …`)",
            list.join("; ")
        );
    }
    let Some((&major, _)) = by_major.iter().next() else {
        bail!(
            "no installed package says which CUDA major it is for ({}); cannot assemble a toolkit",
            source
                .packages
                .iter()
                .map(|p| format!("{} {}", p.name, p.version))
                .collect::<Vec<_>>()
                .join(", ")
        );
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
        bail!(
            "the compiler and runtime components disagree on the CUDA release ({}); nvcc, its crt headers, NVVM and the \
             runtime must come from one release. Install matching versions (e.g. `pip install cuda-toolkit[cudart,nvcc]==X.Y.*`)",
            list.join("; ")
        );
    }
    if let Some((&core_mm, core_pkgs)) = core.iter().next() {
        for (p, mm) in newer {
            if mm < core_mm {
                bail!(
                    "{} {} is older than the toolkit ({} is CUDA {}.{}); it must be at least as new to link the code \
                     this compiler makes. Upgrade it",
                    p.name,
                    p.version,
                    core_pkgs.join(", "),
                    core_mm.0,
                    core_mm.1
                );
            }
        }
    }
    Ok(major)
}

/// The toolkit version: the runtime's, else nvcc's, else the newest toolkit-versioned package's.
fn toolkit_version(source: &Source, catalog: &Catalog) -> String {
    let of = |pip: &str| {
        source
            .packages
            .iter()
            .find(|p| {
                catalog
                    .component_by_pip(&p.name)
                    .is_some_and(|(c, _)| c.pip == pip)
            })
            .map(|p| p.version.clone())
    };
    of("nvidia-cuda-runtime")
        .or_else(|| of("nvidia-cuda-nvcc"))
        .or_else(|| {
            source
                .packages
                .iter()
                .filter(|p| {
                    catalog
                        .component_by_pip(&p.name)
                        .is_some_and(|(c, _)| c.versioning == cudist_catalog::Versioning::Toolkit)
                })
                .map(|p| p.version.clone())
                .max_by_key(|v| key(v))
        })
        .or_else(|| source.release.clone())
        .unwrap_or_default()
}

/// Places every package file, reporting conflicts and refusing missing files.
pub fn plan(source: &Source, catalog: &Catalog, major: u32) -> Result<Plan> {
    let mut plan = Plan {
        major,
        version: toolkit_version(source, catalog),
        ..Plan::default()
    };
    // dest → (package, file) candidates in package order.
    let mut cands: BTreeMap<String, Vec<(&Package, &super::source::PkgFile)>> = BTreeMap::new();
    let mut missing: Vec<String> = Vec::new();
    for p in &source.packages {
        let mut n = 0;
        for f in &p.files {
            let Some(dest) = &f.dest else { continue };
            if std::fs::symlink_metadata(&f.abs).is_err() || !f.abs.exists() {
                missing.push(format!(
                    "{} (from {} {})",
                    f.abs.display(),
                    p.name,
                    p.version
                ));
                continue;
            }
            n += 1;
            cands.entry(dest.clone()).or_default().push((p, f));
        }
        plan.components.push(ComponentRow {
            name: p.name.clone(),
            version: p.version.clone(),
            major: p.major,
            redist: catalog
                .component_by_pip(&p.name)
                .map(|(c, _)| c.redist.clone()),
            files: n,
        });
    }
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
        bail!(
            "{} file(s) the package records list are missing or dangling links: {}{}; reinstall those packages \
             (`pip install --force-reinstall --no-deps NAME`)",
            missing.len(),
            shown.join(", "),
            if missing.len() > 5 { ", …" } else { "" }
        );
    }
    for (dest, list) in cands {
        let (first_pkg, first) = list[0];
        // The same path from several packages: the same file on disk (CUDA 13's shared tree) or
        // identical content is fine; different content is a conflict.
        let mut differing: Vec<String> = Vec::new();
        for (p, f) in &list[1..] {
            if same_content(first, f) {
                continue;
            }
            differing.push(p.name.clone());
        }
        if !differing.is_empty() {
            let mut packages = vec![first_pkg.name.clone()];
            packages.extend(differing);
            if !dest.starts_with("include/") && !dest.starts_with("share/") {
                bail!(
                    "{dest} comes from several packages with different content ({}); one of them is from another \
                     release — reinstall the packages so they match",
                    packages.join(", ")
                );
            }
            plan.conflicts.push(Conflict {
                path: dest.clone(),
                packages,
                kept: first_pkg.name.clone(),
            });
        }
        let needs_exec = dest.starts_with("bin/") || dest.starts_with("nvvm/bin/");
        let exec_fix = needs_exec
            && !dest.ends_with(".profile")
            && !dest.starts_with("bin/crt/")
            && std::fs::metadata(&first.abs).is_ok_and(|m| m.permissions().mode() & 0o111 == 0);
        if exec_fix {
            plan.exec_fixed.push(dest.clone());
        }
        plan.entries.insert(
            dest,
            Entry {
                item: Item::File {
                    src: first.abs.clone(),
                    exec_fix,
                },
                origin: first_pkg.name.clone(),
            },
        );
    }
    Ok(plan)
}

/// Whether two package files hold the same bytes: the same path, equal RECORD hashes, or (when a
/// hash is missing) equal content.
fn same_content(a: &super::source::PkgFile, b: &super::source::PkgFile) -> bool {
    if a.abs == b.abs {
        // One file on disk listed by two packages: equal unless their RECORDs disagree (then
        // one overwrote the other when it was installed).
        return a.hash.is_empty() || b.hash.is_empty() || a.hash == b.hash;
    }
    if !a.hash.is_empty() && !b.hash.is_empty() {
        return a.hash == b.hash;
    }
    match (std::fs::read(&a.abs), std::fs::read(&b.abs)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
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
}
