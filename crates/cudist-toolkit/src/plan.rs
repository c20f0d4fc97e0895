//! The CUDA root as a plan: every path it will hold and where its content comes from, checked
//! for mixed CUDA majors, disagreeing component versions, conflicting and missing files before
//! anything is written.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use cudist_analysis::bail;
use cudist_analysis::error::Result;
use cudist_catalog::Catalog;
use serde::Serialize;

use cudist_analysis::environment::{key, Package, PkgFile, Source};

/// Where one path of the root gets its content.
#[derive(Debug, Clone)]
pub enum Item {
    /// A file of the environment: linked (or copied with `--copy`).
    File {
        /// The file in the environment.
        src: PathBuf,
        /// Copy it and make it executable (it is not executable in the environment).
        exec_fix: bool,
    },
    /// A relative symbolic link cudist makes (`libcudart.so -> libcudart.so.13`).
    Symlink {
        /// The link's target, relative to its directory.
        target: String,
    },
    /// Content cudist writes (nvcc.profile, version.json, pkg-config files, the driver stub).
    Bytes {
        /// The content.
        data: Vec<u8>,
        /// Make it executable.
        exec: bool,
    },
}

/// One planned path and who provides it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Where the content comes from.
    pub item: Item,
    /// The package name, or `cudist` for generated content.
    pub origin: String,
}

/// Two packages that give one path different content.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The path in the root.
    pub path: String,
    /// The packages that give it.
    pub packages: Vec<String>,
    /// The package whose file the root holds.
    pub kept: String,
}

/// A package as the report shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ComponentRow {
    /// The package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The CUDA major it belongs to, when its name or version says.
    pub major: Option<u32>,
    /// The key of NVIDIA's manifests and version.json (`cuda_cudart`), when the catalog knows it.
    pub redist: Option<String>,
    /// How many files it puts in the root.
    pub files: usize,
}

/// The whole plan.
#[derive(Debug, Default)]
pub struct Plan {
    /// Every path of the root (`lib64/libcudart.so.13`) and its content.
    pub entries: BTreeMap<String, Entry>,
    /// Paths two packages give with different content.
    pub conflicts: Vec<Conflict>,
    /// The packages read, as the report shows them.
    pub components: Vec<ComponentRow>,
    /// The CUDA major of the environment.
    pub major: u32,
    /// The toolkit version: the runtime's (else the compiler's, else the newest
    /// toolkit-versioned component's) version, as nvcc reports its own (`13.5.37`).
    pub version: String,
    /// Bin files that were not executable in the environment (copied and made executable).
    pub exec_fixed: Vec<String>,
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
    let mut cands: BTreeMap<String, Vec<(&Package, &PkgFile)>> = BTreeMap::new();
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
fn same_content(a: &PkgFile, b: &PkgFile) -> bool {
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
