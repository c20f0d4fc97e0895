//! The repair plan of one wheel, from cudist-analysis's [`Artifact`] of it, in four parts:
//!
//! - [`exclude`]: the vendored CUDA toolkit and driver libraries that leave the wheel, and the real
//!   SONAME behind each renamed copy (auditwheel's `libcudart-1a2b3c4d.so.12`);
//! - [`file_needs`]: per remaining (or grafted) file, the NEEDED entries to restore or point at a
//!   graft, and the CUDA wheel directories and distributions that provide the rest;
//! - [`search_path`]: the file's new RPATH or RUNPATH (entries to grafts and CUDA wheel
//!   directories added after its own, entries into directories the repair empties dropped);
//! - [`requirements`]: the `Requires-Dist` lines the wheel does not declare yet.
//!
//! Grafting (what non-CUDA libraries are copied in) is [`super::graft`]'s; [`plan`] puts the parts
//! together.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use cudist_analysis::artifact::{normalise_dist, parent, ReqName};
use cudist_analysis::model::{Artifact, ElfReport, NeededClass, OpenedBy, PathLocation};
use cudist_catalog::{raise_lower_bound, Catalog, PipRequirement};
use cudist_elf::patch::{Edits, SearchPathTag};

use super::{CudaDeps, Removed};

/// One file's edits, and what the report says of them: entries added to and removed from its
/// search path, NEEDED entries replaced (old → new).
pub type FileEdits = (Edits, Vec<String>, Vec<String>, Vec<(String, String)>);

/// Everything a repair changes in one wheel.
pub struct Plan {
    /// Per file (install path): its edits.
    pub edits: BTreeMap<String, FileEdits>,
    /// CUDA libraries needed (SONAME → wheel directory), for the loader.
    pub loads: BTreeMap<String, String>,
    /// NEEDED names of renamed copies that the repair restores.
    pub renamed: BTreeSet<String>,
    /// Files that leave the wheel.
    pub removed: Vec<Removed>,
    /// Vendored CUDA libraries left in the wheel: no file loads them by name (the package
    /// opens them by path), so no requirement could stand in for them.
    pub kept: Vec<Removed>,
    /// `Requires-Dist` lines to add.
    pub requires: Vec<String>,
    /// `Provides-Extra` lines to add.
    pub extras: Vec<String>,
    /// Libraries needed that are neither system, CUDA, grafted nor in the wheel.
    pub unhandled: Vec<String>,
    /// Other GPU vendors' runtime libraries needed (ROCm, oneAPI): left to that vendor's stack.
    pub vendor: Vec<String>,
    /// Variant libraries (one per CUDA release, the package loads one): their CUDA libraries
    /// become no requirement, since requiring every release's at once is what cannot be
    /// installed or wanted. Each with the SONAMEs it needs.
    pub variants: Vec<(String, Vec<String>)>,
    /// Plain libraries loaded on demand, each with the distributions only it (or other such
    /// libraries) needs: offered under an extra, not required.
    pub optional_parts: Vec<(String, Vec<String>)>,
}

/// What grafting contributes to the plan: grafted SONAME → new name, the directory they go to, and
/// the grafted files' own reports (planned like the wheel's files).
pub struct Grafting<'a> {
    /// Grafted SONAME → its new, hashed name.
    pub names: BTreeMap<String, String>,
    /// The directory they go to (`<dist>.libs`).
    pub libs_dir: String,
    /// The grafted files' reports.
    pub reports: Vec<&'a ElfReport>,
}

/// The files that leave the wheel, and the real SONAME (with its CUDA major) behind each name a
/// renamed copy went by.
pub struct Exclusions {
    /// The files taken out.
    pub removed: Vec<Removed>,
    /// A renamed copy's SONAME or file name → (real SONAME, CUDA major).
    pub renamed: HashMap<String, (String, Option<u32>)>,
    /// The vendored libraries left in place, and why.
    pub kept: Vec<Removed>,
}

/// A CUDA distribution a file needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// `>=12,<13`, raised to the build environment's version when one is known.
    pub range: String,
    /// The `cuda-toolkit` extra that installs it (`cublas`).
    pub extra: Option<String>,
    /// The catalog library id.
    pub id: String,
    /// Its CUDA major.
    pub major: u32,
    /// The wheel carried the library (a vendored copy the repair takes out): the requirement
    /// stands in for it, so it is never optional.
    pub carried: bool,
    /// The file loads it itself on the first call (a lazy load, not a NEEDED entry): it never
    /// decides the import.
    pub lazy: bool,
}

/// What one file needs from outside the wheel, and the NEEDED entries to rewrite.
#[derive(Debug, Default, PartialEq)]
pub struct FileNeeds {
    /// NEEDED entries replaced (a renamed copy's name → the real SONAME; a grafted library's
    /// SONAME → its new name).
    pub replaced: Vec<(String, String)>,
    /// Directories inside the wheel to search (where grafts go).
    pub inside: Vec<String>,
    /// CUDA wheel directories to search (`nvidia/cublas/lib`).
    pub dirs: Vec<String>,
    /// (SONAME, CUDA wheel directory) of each CUDA library it needs, for the loader.
    pub loads: Vec<(String, String)>,
    /// (distribution, need) of each CUDA library it needs.
    pub needs: Vec<(String, Need)>,
    /// Libraries no rule provides.
    pub unhandled: Vec<String>,
    /// Other GPU vendors' runtime libraries.
    pub vendor: Vec<String>,
}

impl FileNeeds {
    /// Records a CUDA library the file needs: its wheel directory searched (once), the load,
    /// and the requirement on `pip` in `range`.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        soname: &str,
        dir: &str,
        pip: &str,
        m: &cudist_catalog::LibraryMatch<'_>,
        range: String,
        carried: bool,
        lazy: bool,
    ) {
        if !self.dirs.iter().any(|d| d == dir) {
            self.dirs.push(dir.to_string());
        }
        self.loads.push((soname.to_string(), dir.to_string()));
        self.needs.push((
            pip.to_string(),
            Need {
                range,
                extra: m.library.toolkit_extra.clone(),
                id: m.library.id.clone(),
                major: m.major.major,
                carried,
                lazy,
            },
        ));
    }
}

/// The choices of a repair run that every wheel's plan follows.
pub struct Rules<'a> {
    /// How requirements are written (`--cuda-deps`).
    pub cuda_deps: &'a CudaDeps,
    /// The search-path tag to write (`--runpath`).
    pub tag: SearchPathTag,
    /// The distribution versions of the build environment (normalised name → version), for
    /// lower bounds (`--build-env`).
    pub installed: &'a BTreeMap<String, String>,
    /// SONAMEs to leave alone (`--exclude`).
    pub excluded: &'a dyn Fn(&str) -> bool,
    /// Also take out vendored CUDA libraries no file loads by name (`--remove-unreached`).
    pub remove_unreached: bool,
}

/// The release of each distribution the repaired wheel will get, where one is known: the build
/// environment's (`--build-env`), else the one the wheel's own requirement pins (`==0.8.1`, or
/// `~=0.8.1`, which stays below 0.9), normalised name → version. A lower bound alone says
/// nothing: pip installs the newest release.
fn known_releases(
    installed: &BTreeMap<String, String>,
    declared: &[String],
) -> BTreeMap<String, String> {
    let mut out = installed.clone();
    for r in declared.iter().filter_map(|d| ReqName::parse(d)) {
        if !r.on_linux || r.in_extra.is_some() || out.contains_key(&r.name) {
            continue;
        }
        let version = r.specifier.split(',').find_map(|c| {
            let c = c.trim();
            ["===", "==", "~="]
                .iter()
                .find_map(|op| c.strip_prefix(op))
                .map(|v| v.trim().trim_end_matches(".*").to_string())
        });
        if let Some(v) = version.filter(|v| !v.is_empty()) {
            out.insert(r.name, v);
        }
    }
    out
}

/// The release of each library the wheel carried and the repair takes out, where its file name
/// says it (normalised distribution name → version): a copy named past its SONAME
/// (`libcudart.so.12.0.107`, also as a repair tool renamed it, `libcudart-5a077122.so.12.0.107`)
/// is that release of the library, and NVIDIA's wheels carry the library's version
/// (nvidia-cuda-runtime-cu12 12.0.107). The requirement that replaces the copy admits no older
/// release: code built against a library may need what that release added. A version outside
/// the requirement's range says nothing ([`cudist_catalog::raise_lower_bound`]).
fn carried_releases(
    a: &Artifact,
    removed: &[Removed],
    catalog: &Catalog,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let taken = a
        .vendored
        .iter()
        .filter(|v| removed.iter().any(|r| r.path == v.path));
    for v in taken {
        let Some(l) = &v.library else { continue };
        let Some(pip) = &l.pip else { continue };
        let file = v.path.rsplit('/').next().unwrap_or(&v.path);
        let file = cudist_catalog::unhashed(file).unwrap_or_else(|| file.to_string());
        let sonames = catalog
            .library(&l.id)
            .and_then(|lib| lib.cuda.iter().find(|m| m.major == l.cuda_major))
            .map(|m| m.sonames.as_slice())
            .unwrap_or_default();
        let version = sonames.iter().find_map(|so| {
            let rest = file.strip_prefix(so.as_str())?.strip_prefix('.')?;
            let (_, number) = so.rsplit_once(".so.")?;
            let v = format!("{number}.{rest}");
            v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then_some(v)
        });
        let Some(version) = version else { continue };
        let pip = normalise_dist(pip);
        match out.get(&pip) {
            Some(known) if !newer(&version, known) => {}
            _ => {
                out.insert(pip, version);
            }
        }
    }
    out
}

/// Whether dotted version `a` is newer than `b` (numbers compared part by part).
fn newer(a: &str, b: &str) -> bool {
    let key = |v: &str| -> Vec<u64> { v.split('.').map_while(|p| p.parse().ok()).collect() };
    key(a) > key(b)
}

/// The whole plan of one wheel. `declared` is its `Requires-Dist`.
pub fn plan(
    a: &Artifact,
    catalog: &Catalog,
    declared: &[String],
    grafting: &Grafting<'_>,
    rules: &Rules<'_>,
) -> Plan {
    let Rules {
        cuda_deps,
        tag,
        installed,
        excluded,
        remove_unreached,
    } = *rules;
    let Exclusions {
        removed,
        renamed,
        kept,
    } = exclude(a, catalog, excluded, remove_unreached);
    let mut releases = known_releases(installed, declared);
    for (pip, v) in carried_releases(a, &removed, catalog) {
        match releases.get(&pip) {
            Some(known) if !newer(&v, known) => {}
            _ => {
                releases.insert(pip, v);
            }
        }
    }
    let installed = &releases;
    let removed_paths: BTreeSet<&str> = removed.iter().map(|r| r.path.as_str()).collect();
    let emptied = emptied_dirs(a, &removed_paths);
    // The one CUDA major of the wheel's libraries, for SONAMEs several majors share.
    let majors: BTreeSet<u32> = a
        .cuda_needed
        .iter()
        .filter_map(|n| n.library.as_ref())
        .filter(|l| !l.cuda_major_ambiguous)
        .map(|l| l.cuda_major)
        .collect();
    let wheel_major = (majors.len() == 1)
        .then(|| majors.into_iter().next())
        .flatten();

    let mut edits = BTreeMap::new();
    let mut loads = BTreeMap::new();
    let mut needs: BTreeMap<String, Need> = BTreeMap::new();
    // Needed only by plain libraries loaded on demand (a provider, a plugin): optional.
    let mut optional: BTreeMap<String, Need> = BTreeMap::new();
    let mut optional_parts: Vec<(String, Vec<String>)> = Vec::new();
    let mut unhandled = BTreeSet::new();
    let mut vendor = BTreeSet::new();
    let mut variants = Vec::new();
    let grafted_paths: BTreeSet<&str> = grafting.reports.iter().map(|r| r.path.as_str()).collect();
    // A distribution named for a CUDA major none of whose files the import loads, only its
    // code on first use (kiwi-array-cuda12's libmlx.so, found through its frontend's entry
    // point; itk-cudacommon-cuda128's module, which ITK imports lazily): the wheel is its CUDA
    // part, and nothing of it works without what its files link. Those are required; what
    // they open themselves on a first call stays offered. (A wheel of providers for several
    // stacks, named for none, keeps each provider's needs optional.)
    let kept_files: Vec<&cudist_analysis::model::ElfReport> = a
        .elf_files
        .iter()
        .filter(|e| !removed_paths.contains(e.path.as_str()))
        .filter(|e| e.tier != cudist_analysis::loads::Tier::Variant)
        .collect();
    let cuda_named = a
        .wheel
        .as_ref()
        .and_then(|w| w.name.as_deref())
        .is_some_and(|n| cudist_analysis::artifact::name_major(n).is_some());
    let whole_wheel_on_demand = cuda_named
        && !kept_files.is_empty()
        && kept_files
            .iter()
            .all(|e| e.tier == cudist_analysis::loads::Tier::OnDemand);
    for e in a
        .elf_files
        .iter()
        .filter(|e| !removed_paths.contains(e.path.as_str()))
        .chain(grafting.reports.iter().copied())
    {
        let mut n = file_needs(
            e,
            catalog,
            grafting,
            &renamed,
            &removed_paths,
            installed,
            excluded,
        );
        lazy_needs(
            e,
            catalog,
            &removed_paths,
            installed,
            excluded,
            wheel_major,
            &mut n,
        );
        if e.tier == cudist_analysis::loads::Tier::Variant {
            let sonames: Vec<String> = n.loads.iter().map(|(s, _)| s.clone()).collect();
            variants.push((e.path.clone(), sonames));
        } else {
            loads.extend(n.loads);
            // Never demand more than the original needed: what a file loaded only on demand
            // needs from outside the wheel (onnxruntime's TensorRT provider, cupy's cuTENSOR and
            // NCCL modules, imported on first use) is offered under an extra, as the original
            // relied on it being there without requiring it. Never ship less: what the wheel
            // carried, and what the import loads, is required. A file the import may load, as
            // far as compiled code can say (cupy-cuda11x's cuFFT module, named by a module the
            // import loads, imported there only in a function), is not known to fail the import:
            // what it needs from outside is offered too, as the original did not declare it.
            let on_demand = (e.tier == cudist_analysis::loads::Tier::OnDemand
                && !whole_wheel_on_demand)
                || e.maybe_at_import();
            let optional_needs: BTreeSet<String> = n
                .needs
                .iter()
                .filter(|(_, need)| (on_demand || need.lazy) && !need.carried)
                .map(|(p, _)| p.clone())
                .collect();
            if !optional_needs.is_empty() {
                optional_parts.push((e.path.clone(), optional_needs.into_iter().collect()));
            }
            for (pip, need) in n.needs {
                let into = if (on_demand || need.lazy) && !need.carried {
                    &mut optional
                } else {
                    &mut needs
                };
                merge_need(into, pip, need);
            }
        }
        unhandled.extend(n.unhandled);
        vendor.extend(n.vendor);
        let is_graft = grafted_paths.contains(e.path.as_str());
        if let Some(edit) = search_path(e, n.inside, n.dirs, n.replaced, &emptied, is_graft, tag) {
            edits.insert(e.path.clone(), edit);
        }
    }
    for (pip, need) in preload_needs(a, catalog, &removed_paths, installed, excluded, wheel_major) {
        merge_need(&mut needs, pip, need);
    }
    optional.retain(|pip, _| !needs.contains_key(pip));
    let (requires, extras) = requirements(&needs, &optional, declared, cuda_deps, catalog);
    // Each part lists what was offered for it: not what is required anyway, nor what the
    // package declares itself.
    let added = |pip: &str| {
        requires.iter().any(|r| {
            r.strip_prefix(pip).is_some_and(|rest| {
                !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || "-_.".contains(c))
            })
        })
    };
    for (_, pips) in &mut optional_parts {
        pips.retain(|p| optional.contains_key(p) && added(p));
    }
    optional_parts.retain(|(_, pips)| !pips.is_empty());
    let (requires, extras) = umbrella(requires, extras, &optional_parts, declared);
    Plan {
        edits,
        loads,
        renamed: renamed.keys().cloned().collect(),
        removed,
        kept,
        requires,
        extras,
        unhandled: unhandled.into_iter().collect(),
        vendor: vendor.into_iter().collect(),
        variants,
        optional_parts,
    }
}

/// Adds a file's need of a distribution to the wheel's: two files (or two libraries of one
/// distribution, `libnvrtc.so.12` and `libnvrtc-builtins.so.12.0`) that need it get the releases
/// both allow.
fn merge_need(into: &mut BTreeMap<String, Need>, pip: String, need: Need) {
    match into.get_mut(&pip) {
        Some(have) => have.range = cudist_catalog::intersect_ranges(&have.range, &need.range),
        None => {
            into.insert(pip, need);
        }
    }
}

/// The vendored CUDA toolkit and driver libraries leave the wheel (the wheels of NVIDIA, or the
/// machine's driver, provide them); the NEEDED entries naming a renamed copy get the real SONAME.
/// A copy whose SONAME or file name is `excluded` (`--exclude`) stays. So does a toolkit library
/// that no file loads by name ([`cudist_analysis::artifact::opened_by`]) unless `remove_unreached`: the package opens
/// it by path (triton's CUPTI, found by a fixed path inside the package), where no requirement
/// puts a replacement. The driver's libraries always go: a copy of them is never right.
pub fn exclude(
    a: &Artifact,
    catalog: &Catalog,
    excluded: &dyn Fn(&str) -> bool,
    remove_unreached: bool,
) -> Exclusions {
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    let mut renamed = HashMap::new();
    for v in &a.vendored {
        let base = v.path.rsplit('/').next().unwrap_or(&v.path).to_string();
        if excluded(&base) || v.soname.as_deref().is_some_and(excluded) {
            continue;
        }
        if v.library.is_some() && !remove_unreached {
            let why = match v.opened_by {
                OpenedBy::Loader => None,
                OpenedBy::Python => Some(format!(
                    "the package's Python opens it itself ({}): no requirement can stand in \
                     for it",
                    v.opened_at.as_deref().unwrap_or("ctypes")
                )),
                OpenedBy::Path => Some(
                    "no file in the wheel loads it by name (the package opens it by path): no \
                     requirement can stand in for it; --remove-unreached takes it out"
                        .to_string(),
                ),
            };
            if let Some(reason) = why {
                kept.push(Removed {
                    path: v.path.clone(),
                    library: v.library.as_ref().map_or(base.clone(), |l| l.id.clone()),
                    bytes: v.bytes,
                    reason,
                });
                continue;
            }
        }
        // A copy of a release before any NVIDIA ships as wheels (CudaVox's
        // `libcudart-80664282.so.10.2.89`, whose users import `libcudart.so.10.2`'s versioned
        // symbols): no wheel can stand in for it, kept.
        let own = v.soname.clone().unwrap_or_else(|| base.clone());
        let older = v.library.as_ref().and_then(|_| {
            catalog
                .older_release_major(&own)
                .or_else(|| catalog.older_release_major(&cudist_catalog::strip_graft_hash(&own)))
        });
        if let (Some(l), Some(major)) = (v.library.as_ref(), older) {
            kept.push(Removed {
                path: v.path.clone(),
                library: l.id.clone(),
                bytes: v.bytes,
                reason: format!(
                    "a copy of CUDA {major}'s {}, a release before any NVIDIA ships as wheels: no \
                     requirement can stand in for it",
                    l.id
                ),
            });
            continue;
        }
        // A copy whose SONAME carries no version: kept (`Vendored::replaceable`).
        if let Some(l) = v.library.as_ref().filter(|_| !v.replaceable) {
            kept.push(Removed {
                path: v.path.clone(),
                library: l.id.clone(),
                bytes: v.bytes,
                reason: format!(
                    "its SONAME {} carries no version: no release of {} promises the ABI of the \
                     copy the package was built against",
                    cudist_catalog::strip_graft_hash(v.soname.as_deref().unwrap_or(&base)),
                    l.pip.as_deref().unwrap_or("its wheel")
                ),
            });
            continue;
        }
        let (library, reason, real) = match &v.library {
            Some(l) => {
                let m = catalog
                    .library(&l.id)
                    .and_then(|lib| lib.cuda.iter().find(|m| m.major == l.cuda_major));
                let real = m.map(|m| {
                    let own = v.soname.clone().unwrap_or_else(|| base.clone());
                    let stripped = cudist_catalog::strip_graft_hash(&own);
                    // A SONAME that carries the minor keeps the copy's minor: auditwheel's
                    // `libnvrtc-builtins-8cb4db2d.so.12.0.140` is `libnvrtc-builtins.so.12.0`,
                    // which the 12.0 wheels ship, not the newest wheel's `.so.12.9`.
                    let family = (m.policy == cudist_catalog::SonamePolicy::MajorMinor)
                        .then(|| major_minor_name(&stripped))
                        .flatten()
                        .filter(|n| catalog.major_minor_family(n, Some(m.major)).is_some());
                    if let Some(n) = cudist_catalog::soname_of_copy(&m.sonames, &own) {
                        n
                    } else if let Some(n) = family {
                        n
                    } else {
                        m.sonames[0].clone()
                    }
                });
                (
                    l.id.clone(),
                    format!("provided by {}", l.pip.as_deref().unwrap_or("a CUDA wheel")),
                    real,
                )
            }
            None => {
                let soname = v.soname.clone().unwrap_or_else(|| base.clone());
                (
                    soname.clone(),
                    "part of the NVIDIA driver: never bundle it".into(),
                    Some(cudist_catalog::strip_graft_hash(&soname)),
                )
            }
        };
        if let Some(real) = real {
            let major = v.library.as_ref().map(|l| l.cuda_major);
            for name in v.soname.iter().chain(std::iter::once(&base)) {
                if *name != real {
                    renamed.insert(name.clone(), (real.clone(), major));
                }
            }
        }
        removed.push(Removed {
            path: v.path.clone(),
            library,
            bytes: v.bytes,
            reason,
        });
    }
    Exclusions {
        removed,
        renamed,
        kept,
    }
}

/// `stem.so.MAJOR.MINOR` of a name with a longer version (`libnvrtc-builtins.so.12.0.140`).
fn major_minor_name(name: &str) -> Option<String> {
    let (stem, version) = name.split_once(".so.")?;
    let mut parts = version.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (numeric(major) && numeric(minor)).then(|| format!("{stem}.so.{major}.{minor}"))
}

/// Directories that lose all their ELF files: they no longer need a search-path entry.
fn emptied_dirs(a: &Artifact, removed_paths: &BTreeSet<&str>) -> BTreeSet<String> {
    let dirs: BTreeSet<String> = removed_paths.iter().map(|p| parent(p)).collect();
    dirs.into_iter()
        .filter(|d| {
            !a.elf_files
                .iter()
                .any(|e| parent(&e.path) == *d && !removed_paths.contains(e.path.as_str()))
        })
        .collect()
}

/// What one file needs from outside the wheel: each NEEDED entry is a grafted library (searched
/// in the grafts' directory, under its new name), a renamed copy (restored to the real SONAME), a
/// library the wheel keeps (nothing to do), the driver's (nothing: the machine has it), a CUDA
/// library (its wheel directory searched, its distribution required), or none of these. An
/// `excluded` SONAME (`--exclude`) is left alone.
pub fn file_needs(
    e: &ElfReport,
    catalog: &Catalog,
    grafting: &Grafting<'_>,
    renamed: &HashMap<String, (String, Option<u32>)>,
    removed_paths: &BTreeSet<&str>,
    installed: &BTreeMap<String, String>,
    excluded: &dyn Fn(&str) -> bool,
) -> FileNeeds {
    let mut out = FileNeeds::default();
    for n in &e.needed {
        if excluded(&n.soname) {
            continue;
        }
        if let Some(new) = grafting.names.get(&n.soname) {
            out.replaced.push((n.soname.clone(), new.clone()));
            out.inside.push(grafting.libs_dir.clone());
            continue;
        }
        let real = renamed.get(&n.soname).cloned();
        if let Some((r, _)) = &real {
            out.replaced.push((n.soname.clone(), r.clone()));
        }
        // A library the wheel carries, and keeps, needs nothing.
        let kept = n
            .provided_in_artifact
            .as_deref()
            .is_some_and(|p| !removed_paths.contains(p));
        if kept && real.is_none() {
            continue;
        }
        let carried = real.is_some() || n.provided_in_artifact.is_some();
        let (soname, hint) = match real {
            Some((r, major)) => (r, major),
            None => (n.soname.clone(), n.library.as_ref().map(|l| l.cuda_major)),
        };
        if catalog.driver_lib(&soname).is_some() {
            continue; // from the machine's driver: no dependency, no search path
        }
        // A CUDA library of a release before any with wheels: nothing to require or search,
        // and never grafted (CUDA's libraries come from CUDA); said as unhandled.
        if n.library.as_ref().is_some_and(|l| l.older_release) {
            out.unhandled.push(soname);
            continue;
        }
        let found = catalog
            .library_by_soname_hinted(&soname, hint)
            .or_else(|| catalog.major_minor_family(&soname, hint).map(|(m, _)| m));
        // An interface any vendor's stack provides (the OpenCL ICD loader), which the wheel does
        // not carry: the machine's, as the analysis classes it, and no CUDA wheel is its
        // provider (an NVIDIA copy would hide another vendor's drivers).
        if !carried && n.library.is_none() && found.is_some_and(|m| m.library.interface.is_some()) {
            out.unhandled.push(soname);
            continue;
        }
        match found {
            Some(m) => {
                // A catalog library whose wheel is not known: nothing to require or search, and
                // never grafted; said as unhandled.
                if m.major.pip.is_none() && !kept {
                    out.unhandled.push(soname);
                    continue;
                }
                if let (Some(dir), Some(pip)) = (&m.major.pip_dir, &m.major.pip) {
                    let mut range = match m.major.pip_requirement(&soname) {
                        Some(PipRequirement::Range(r)) => r,
                        // No wheel ships this SONAME: nothing to require or search.
                        Some(PipRequirement::NotShipped) => {
                            out.unhandled.push(soname);
                            continue;
                        }
                        _ => String::new(),
                    };
                    // A release the wheel pins (or the build used) from a line that installs
                    // elsewhere (cuSPARSELt 0.8 in nvidia/cusparselt/lib): its directory, its range.
                    let release = installed.get(&normalise_dist(pip));
                    let mut dir = dir.clone();
                    if let Some((other, r)) = release.and_then(|v| m.major.other_line_of(v)) {
                        dir = other.to_string();
                        range = r.to_string();
                    }
                    if let Some(v) = release {
                        range = raise_lower_bound(&range, v);
                    }
                    // The symbols the file imports from it set a floor of their own.
                    if let Some(f) = e
                        .symbol_floors
                        .iter()
                        .find(|f| f.library == m.library.id && f.cuda_major == m.major.major)
                    {
                        range = raise_lower_bound(&range, &f.since);
                    }
                    out.add(&soname, &dir, pip, &m, range, carried, false);
                }
            }
            // Unknown, or a renamed copy of a CUDA library that the wheel does not carry (it comes
            // with another wheel's grafts): kept as it is, and said.
            None if matches!(
                n.class,
                NeededClass::Other | NeededClass::Toolkit | NeededClass::External
            ) =>
            {
                out.unhandled.push(soname)
            }
            None if n.class == NeededClass::Vendor => out.vendor.push(soname),
            None => {}
        }
    }
    out
}

/// What a file needs from the libraries it opens itself on the first call ([`file_needs`]'s
/// counterpart for lazy loads), added to `out`. `wheel_major` is the one CUDA major the wheel's
/// libraries belong to, if one.
pub fn lazy_needs(
    e: &ElfReport,
    catalog: &Catalog,
    removed_paths: &BTreeSet<&str>,
    installed: &BTreeMap<String, String>,
    excluded: &dyn Fn(&str) -> bool,
    wheel_major: Option<u32>,
    out: &mut FileNeeds,
) {
    // Libraries the file opens itself on the first call (a trampoline table, dlopen of a SONAME):
    // its dlopen searches its own RPATH, so the wheel's directory goes there too, and the wheel
    // is needed as any other (optional, since no import waits for it; hard when it replaces a
    // copy the wheel carried, which `plan` decides).
    let removed = removed_names(removed_paths);
    for l in &e.lazy_loads {
        let Some(soname) = l.soname.as_deref() else {
            continue;
        };
        // A linker name (`libcupti.so`) is no file of an NVIDIA wheel: the program opens it by a
        // path it builds (triton's proton joins its CUPTI directory to it), and neither a search
        // path nor a requirement helps.
        if l.written.as_deref().is_some_and(|w| w.ends_with(".so")) {
            continue;
        }
        if excluded(soname) || e.needed.iter().any(|n| n.soname == soname) {
            continue;
        }
        // A SONAME several CUDA majors share (`libnccl.so.2`) is the major of the file's own
        // CUDA libraries (paddle's CUDA 11.8 `libphi.so` loads NCCL for CUDA 11).
        let hint = e
            .needed
            .iter()
            .find_map(|n| n.library.as_ref().map(|l| l.cuda_major))
            .or(wheel_major)
            // Else the one major the file's other lazily loaded SONAMEs belong to.
            .or_else(|| cudist_analysis::artifact::lazy_major(&e.lazy_loads, catalog));
        let Some(m) = catalog.library_by_soname_hinted(soname, hint) else {
            continue;
        };
        // Nothing says which major's wheel (paddle's libphi.so names only `libnccl.so.2`): no
        // guess is written.
        if m.ambiguous {
            continue;
        }
        let (Some(dir), Some(pip)) = (&m.major.pip_dir, &m.major.pip) else {
            continue;
        };
        let Some(range) = requirement_range(&m, soname, pip, installed) else {
            continue;
        };
        let carried = removed.contains(soname);
        out.add(soname, dir, pip, &m, range, carried, true);
    }
}

/// What the package's Python loads at import, where a failure fails the import
/// ([`cudist_analysis::loads::Preload::required_at_import`]), of CUDA's libraries the wheel
/// does not carry: required, as what the import loads is (transformer-engine's
/// `_load_cuda_library("curand")`, which raises where no `libcurand*` is found, and which no
/// file links). A name is its SONAMEs, a pattern the first SONAME, of the wheel's CUDA major, of
/// the library whose name it starts with. Another wheel's loader loads what that wheel
/// requires: not a need of this one.
pub fn preload_needs(
    a: &Artifact,
    catalog: &Catalog,
    removed_paths: &BTreeSet<&str>,
    installed: &BTreeMap<String, String>,
    excluded: &dyn Fn(&str) -> bool,
    wheel_major: Option<u32>,
) -> Vec<(String, Need)> {
    use cudist_analysis::loads::Mechanism;
    let carried = |soname: &str| {
        a.elf_files.iter().any(|e| {
            !removed_paths.contains(e.path.as_str())
                && (e.soname.as_deref() == Some(soname)
                    || e.path.rsplit('/').next() == Some(soname))
        })
    };
    let mut out: Vec<(String, Need)> = Vec::new();
    for p in a.preloads.iter().filter(|p| {
        p.required_at_import()
            && matches!(p.mechanism, Mechanism::Ctypes | Mechanism::CudaPathfinder)
    }) {
        let sonames: Vec<String> = if !p.sonames.is_empty() {
            p.sonames.clone()
        } else if p.name.contains(['*', '?', '[']) {
            // The library whose name the pattern starts with (`libcurand*.*[0-9]`: cuRAND),
            // by its first SONAME of the wheel's major: not every file the pattern could match
            // (`libnvrtc-builtins.so.13.5` pins a release).
            let stem = p.name.split(['*', '?', '[']).next().unwrap_or_default();
            catalog
                .libraries
                .iter()
                .filter(|l| l.kind == cudist_catalog::LibraryKind::Toolkit && l.stem == stem)
                .flat_map(|l| &l.cuda)
                .filter(|m| wheel_major.is_none_or(|w| w == m.major))
                .filter_map(|m| m.sonames.first())
                .filter(|so| p.loads(so))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        for soname in sonames {
            if excluded(&soname) || carried(&soname) {
                continue;
            }
            let Some(m) = catalog.library_by_soname_hinted(&soname, wheel_major) else {
                continue;
            };
            if m.ambiguous || m.library.kind != cudist_catalog::LibraryKind::Toolkit {
                continue;
            }
            let Some(pip) = &m.major.pip else { continue };
            let Some(range) = requirement_range(&m, &soname, pip, installed) else {
                continue;
            };
            out.push((
                pip.clone(),
                Need {
                    range,
                    extra: m.library.toolkit_extra.clone(),
                    id: m.library.id.clone(),
                    major: m.major.major,
                    carried: false,
                    lazy: false,
                },
            ));
        }
    }
    out
}

/// The version range to require of wheel `pip` for `soname` (`>=12,<13`), raised to the build
/// environment's release where one is known; none where no wheel ships that SONAME.
fn requirement_range(
    m: &cudist_catalog::LibraryMatch<'_>,
    soname: &str,
    pip: &str,
    installed: &BTreeMap<String, String>,
) -> Option<String> {
    let range = match m.major.pip_requirement(soname) {
        Some(PipRequirement::Range(r)) => r,
        Some(PipRequirement::NotShipped) => return None,
        _ => String::new(),
    };
    Some(match installed.get(&normalise_dist(pip)) {
        Some(v) => raise_lower_bound(&range, v),
        None => range,
    })
}

/// The file names of the files that leave the wheel (a lazily loaded library's SONAME is its
/// file name in every wheel that carries one).
fn removed_names<'a>(removed_paths: &BTreeSet<&'a str>) -> BTreeSet<&'a str> {
    removed_paths
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect()
}

/// The file's new search path, or none when nothing about it changes. Its own entries stay first
/// (RPATH and RUNPATH merged into the one tag written), then the grafts' directory and the CUDA
/// wheel directories it does not reach yet; entries into directories the repair empties go.
pub fn search_path(
    e: &ElfReport,
    inside: Vec<String>,
    dirs: Vec<String>,
    replaced: Vec<(String, String)>,
    emptied: &BTreeSet<String>,
    is_graft: bool,
    tag: SearchPathTag,
) -> Option<FileEdits> {
    let (existing, other) = if !e.rpath.is_empty() {
        (&e.rpath, &e.runpath)
    } else {
        (&e.runpath, &e.rpath)
    };
    let mut entries: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    // An empty entry, or one relative to no `$ORIGIN`, is searched from the process's current
    // directory, and an absolute one outside the system's directories is the build machine's:
    // whatever lies there loads first (inspect calls the wheel misbuilt for either). The rewrite
    // drops both, as auditwheel keeps only entries that stay inside the wheel; system
    // directories (`/usr/local/cuda/lib64`) stay, as the file's own choice.
    for p in existing.iter().chain(other.iter()) {
        let into_emptied = p.location == PathLocation::Inside && emptied.contains(&p.expanded);
        if into_emptied || p.is_from_current_directory() || p.is_build_machine() {
            dropped.push(p.raw.clone());
        } else if !entries.contains(&p.raw) {
            entries.push(p.raw.clone());
        }
    }
    let reached = |location: PathLocation| -> BTreeSet<String> {
        existing
            .iter()
            .chain(other.iter())
            .filter(|p| p.location == location)
            .map(|p| p.expanded.clone())
            .collect()
    };
    let have = reached(PathLocation::CudaWheel);
    let have_inside = reached(PathLocation::Inside);
    let mut added = Vec::new();
    let mut add = |entry: String| {
        if !entries.contains(&entry) {
            entries.push(entry.clone());
            added.push(entry);
        }
    };
    for d in inside {
        if have_inside.contains(&d) {
            continue;
        }
        add(if parent(&e.path) == d {
            "$ORIGIN".to_string()
        } else {
            origin_path(&e.path, &d)
        });
    }
    for d in dirs {
        if !have.contains(&d) {
            add(origin_path(&e.path, &d));
        }
    }
    let current = current_tag(e);
    // A file's own RUNPATH stays RUNPATH: written as RPATH, each entry it has would come before
    // LD_LIBRARY_PATH. Only a file with no search path, or an RPATH with `--runpath`, takes `tag`.
    let tag = if current == Some(SearchPathTag::Runpath) {
        SearchPathTag::Runpath
    } else {
        tag
    };
    let tag_changes = !other.is_empty() && !existing.is_empty()
        || (!existing.is_empty() && current != Some(tag) && !added.is_empty());
    if added.is_empty() && dropped.is_empty() && replaced.is_empty() && !tag_changes && !is_graft {
        return None;
    }
    let tag = if added.is_empty() && dropped.is_empty() {
        current.unwrap_or(tag)
    } else {
        tag
    };
    let edit = Edits {
        search_path: (!added.is_empty() || !dropped.is_empty() || tag_changes)
            .then(|| (entries.clone(), tag)),
        replace_needed: replaced.clone(),
        // A grafted library takes its (hashed) file name as SONAME.
        soname: is_graft.then(|| e.path.rsplit('/').next().unwrap_or(&e.path).to_string()),
    };
    Some((edit, added, dropped, replaced))
}

/// The `Requires-Dist` and `Provides-Extra` lines to add: one per needed distribution the wheel
/// does not declare unconditionally, written as `cuda_deps` says.
pub fn requirements(
    needs: &BTreeMap<String, Need>,
    optional: &BTreeMap<String, Need>,
    declared: &[String],
    cuda_deps: &CudaDeps,
    catalog: &Catalog,
) -> (Vec<String>, Vec<String>) {
    // Requirements declared, unconditionally or under one of the package's optional extras: an
    // extra the package offers (onnxruntime-gpu[cuda]) stays optional, repair does not make it a
    // hard requirement.
    // A requirement whose marker cannot hold on Linux (`; platform_system == "Windows"`) declares
    // nothing for a Linux wheel.
    let declared: Vec<ReqName> = declared
        .iter()
        .filter_map(|r| ReqName::parse(r))
        .filter(|r| r.on_linux)
        .collect();
    let declared_toolkit = declared.iter().any(|r| r.name == "cuda-toolkit");
    // Declared by name, through the `cuda-toolkit` extra that installs it, or through the
    // requirements of a declared package (nvidia-cudnn-cu13 requires nvidia-cublas).
    let is_declared = |pip: &str, need: &Need| {
        cudist_analysis::requirements::provision(&declared, pip, need.extra.as_deref()).is_some()
    };
    let mut requires = Vec::new();
    let mut extras = Vec::new();
    let marker = match cuda_deps {
        CudaDeps::Extra(x) => {
            extras.push(x.clone());
            format!("; extra == \"{x}\"")
        }
        _ => String::new(),
    };
    let mut toolkit: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for (pip, need) in needs {
        if is_declared(pip, need) {
            continue;
        }
        let is_toolkit = catalog
            .library(&need.id)
            .is_some_and(|l| l.kind == cudist_catalog::LibraryKind::Toolkit);
        match (cuda_deps, &need.extra) {
            (CudaDeps::Toolkit, Some(x)) if is_toolkit => {
                if !declared_toolkit {
                    toolkit.entry(need.major).or_default().insert(x.clone());
                }
            }
            _ => requires.push(format!("{pip}{}{marker}", need.range)),
        }
    }
    for (major, xs) in toolkit {
        requires.push(format!(
            "cuda-toolkit[{}]=={major}.*",
            xs.into_iter().collect::<Vec<_>>().join(",")
        ));
    }
    if requires.is_empty() {
        extras.clear();
    }
    // Optional parts' needs: each under an extra named after its catalog library
    // (`pip install onnxruntime-gpu[tensorrt]`), or under the extra the user chose for all.
    for (pip, need) in optional {
        if is_declared(pip, need) {
            continue;
        }
        // Named after the wheel's library as the `cuda-toolkit` extras name it (`cudart`,
        // `cublas`), else the catalog library: a wheel that installs several libraries
        // (nvidia-cuda-runtime-cu11 brings libOpenCL too) is not named after whichever of them a
        // file needed first.
        let primary = catalog.component_by_pip(pip).and_then(|(c, _)| {
            catalog
                .libraries
                .iter()
                .find(|l| l.component.as_deref() == Some(c.redist.as_str()))
        });
        let extra = match cuda_deps {
            CudaDeps::Extra(x) => x.clone(),
            _ => primary
                .map(|l| l.toolkit_extra.clone().unwrap_or_else(|| l.id.clone()))
                .or_else(|| need.extra.clone())
                .unwrap_or_else(|| need.id.clone()),
        };
        requires.push(format!("{pip}{}; extra == \"{extra}\"", need.range));
        if !extras.contains(&extra) {
            extras.push(extra);
        }
    }
    (requires, extras)
}

/// The extra that brings all the distributions one optional part needs, where it needs several,
/// each offered under an extra of its own.
pub const UMBRELLA: &str = "cuda";

/// Adds the [`UMBRELLA`] extra where an optional part needs several distributions that no one
/// extra brings (onnxruntime-genai's CUDA library needs cuBLAS, the runtime, cuFFT and cuRAND,
/// each its own extra): `pip install PKG[cuda]` then brings what that part needs. Not where the
/// package has an extra of that name already, or parts each need one (cupy's cuTENSOR and NCCL
/// modules keep `[cutensor]` and `[nccl]`).
fn umbrella(
    mut requires: Vec<String>,
    mut extras: Vec<String>,
    parts: &[(String, Vec<String>)],
    declared: &[String],
) -> (Vec<String>, Vec<String>) {
    let own = extras.iter().any(|x| x == UMBRELLA)
        || declared
            .iter()
            .filter_map(|d| ReqName::parse(d))
            .any(|r| r.in_extra.as_deref() == Some(UMBRELLA));
    if own {
        return (requires, extras);
    }
    let mut pips: BTreeSet<&str> = BTreeSet::new();
    for (_, part) in parts {
        if part.len() >= 2 && extra_for(&requires, part).is_none() {
            pips.extend(part.iter().map(String::as_str));
        }
    }
    let lines: Vec<String> = pips
        .iter()
        .filter_map(|pip| {
            requires.iter().find_map(|r| {
                let q = ReqName::parse(r)?;
                (normalise_dist(&q.name) == normalise_dist(pip) && q.in_extra.is_some())
                    .then(|| format!("{pip}{}; extra == \"{UMBRELLA}\"", q.specifier))
            })
        })
        .collect();
    if !lines.is_empty() {
        requires.extend(lines);
        extras.push(UMBRELLA.to_string());
    }
    (requires, extras)
}

/// The one extra of `requires` that brings all of `pips`, where one does: the [`UMBRELLA`], else
/// an extra they share.
pub fn extra_for(requires: &[String], pips: &[String]) -> Option<String> {
    let extras_of = |pip: &str| -> BTreeSet<String> {
        requires
            .iter()
            .filter(|r| {
                r.strip_prefix(pip).is_some_and(|rest| {
                    !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || "-_.".contains(c))
                })
            })
            .filter_map(|r| ReqName::parse(r).and_then(|q| q.in_extra))
            .collect()
    };
    let mut common: Option<BTreeSet<String>> = None;
    for p in pips {
        let e = extras_of(p);
        common = Some(match common {
            None => e,
            Some(c) => c.intersection(&e).cloned().collect(),
        });
    }
    let common = common?;
    if common.contains(UMBRELLA) {
        return Some(UMBRELLA.to_string());
    }
    common.into_iter().next()
}

/// The search-path tag a file has now, if any.
fn current_tag(e: &ElfReport) -> Option<SearchPathTag> {
    if !e.rpath.is_empty() {
        Some(SearchPathTag::Rpath)
    } else if !e.runpath.is_empty() {
        Some(SearchPathTag::Runpath)
    } else {
        None
    }
}

/// `$ORIGIN`-relative path from a file's directory to `target` (both relative to the install root).
pub fn origin_path(elf_path: &str, target: &str) -> String {
    let depth = elf_path.matches('/').count();
    format!(
        "$ORIGIN/{}{}",
        "../".repeat(depth),
        target.trim_end_matches('/')
    )
}

/// Distribution versions installed in a site-packages (normalised name → version), from the
/// `.dist-info/METADATA` files.
pub fn installed_versions(site: &Path) -> BTreeMap<String, String> {
    cudist_wheel::installed::scan_names(site)
        .unwrap_or_default()
        .into_iter()
        .map(|d| (normalise_dist(&d.name), d.version))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudist_analysis::model::{ElfAbi, ElfSizes, SearchPathEntry};

    /// An ELF report of a shared library at `path` with these NEEDED entries and RPATH entries
    /// (raw, folded, where it points).
    fn elf(
        path: &str,
        needed: &[&str],
        rpath: &[(&str, &str, PathLocation)],
        catalog: &Catalog,
    ) -> ElfReport {
        ElfReport {
            path: path.into(),
            size: 0,
            class: 64,
            machine: "x86_64".into(),
            elf_type: cudist_elf::ElfKind::Shared,
            soname: None,
            needed: needed
                .iter()
                .map(|n| cudist_analysis::analyse::classify_needed(n, catalog, None))
                .collect(),
            rpath: rpath
                .iter()
                .map(|(raw, expanded, location)| SearchPathEntry {
                    raw: raw.to_string(),
                    expanded: expanded.to_string(),
                    location: *location,
                    provided_by: Vec::new(),
                })
                .collect(),
            runpath: Vec::new(),
            static_cuda: Vec::new(),
            lazy_loads: Vec::new(),
            symbol_floors: Vec::new(),
            unversioned_glibc: Vec::new(),
            symbol_versions: Vec::new(),
            blacklisted_imports: Vec::new(),
            abi: ElfAbi::default(),
            device_code: Vec::new(),
            sizes: ElfSizes {
                host_code: 0,
                device_code: 0,
                other: 0,
            },
            packed: None,
            vendored: None,
            tier: Default::default(),
            tier_reason: None,
            variant_cuda: None,
        }
    }

    /// [`file_needs`] with no grafts, renames, removals, installed releases or exclusions.
    fn plain_needs(e: &ElfReport, catalog: &Catalog) -> FileNeeds {
        file_needs(
            e,
            catalog,
            &no_grafts(),
            &HashMap::new(),
            &BTreeSet::new(),
            &BTreeMap::new(),
            &|_| false,
        )
    }

    fn no_grafts() -> Grafting<'static> {
        Grafting {
            names: BTreeMap::new(),
            libs_dir: "pkg.libs".into(),
            reports: Vec::new(),
        }
    }

    #[test]
    fn each_needed_entry_finds_its_provider() {
        let catalog = Catalog::builtin();
        let e = elf(
            "pkg/ext.so",
            &[
                "libcublas.so.12",
                "libcuda.so.1",
                "libc.so.6",
                "libfoo.so.1",
                "libbar.so.2",
                "libcudart-1a2b3c4d.so.12",
            ],
            &[],
            &catalog,
        );
        let grafting = Grafting {
            names: BTreeMap::from([("libbar.so.2".into(), "libbar-0badf00d.so.2".into())]),
            ..no_grafts()
        };
        let renamed = HashMap::from([(
            "libcudart-1a2b3c4d.so.12".to_string(),
            ("libcudart.so.12".to_string(), Some(12)),
        )]);
        let installed = BTreeMap::from([("nvidia-cublas-cu12".into(), "12.9.1.4".into())]);
        let n = file_needs(
            &e,
            &catalog,
            &grafting,
            &renamed,
            &BTreeSet::new(),
            &installed,
            &|_| false,
        );
        // The driver's library and the system's need nothing; an unknown one is reported.
        assert_eq!(n.unhandled, vec!["libfoo.so.1"]);
        assert_eq!(
            n.replaced,
            vec![
                ("libbar.so.2".into(), "libbar-0badf00d.so.2".into()),
                ("libcudart-1a2b3c4d.so.12".into(), "libcudart.so.12".into())
            ]
        );
        assert_eq!(n.inside, vec!["pkg.libs"]);
        assert_eq!(n.dirs, vec!["nvidia/cublas/lib", "nvidia/cuda_runtime/lib"]);
        let needs: Vec<(&str, &str)> = n
            .needs
            .iter()
            .map(|(pip, need)| (pip.as_str(), need.range.as_str()))
            .collect();
        // The build environment's cuBLAS raises its lower bound; the runtime keeps the SONAME's.
        assert_eq!(
            needs,
            vec![
                ("nvidia-cublas-cu12", ">=12.9.1.4,<13"),
                ("nvidia-cuda-runtime-cu12", ">=12,<13")
            ]
        );
        assert_eq!(
            n.loads[0],
            ("libcublas.so.12".into(), "nvidia/cublas/lib".into())
        );
    }

    #[test]
    fn ranges_name_releases_pip_can_install() {
        let catalog = Catalog::builtin();
        let e = elf(
            "pkg/ext.so",
            &["libcufile.so.0", "libnvToolsExt.so.1", "libnvrtc.so.11.0"],
            &[],
            &catalog,
        );
        let n = plain_needs(&e, &catalog);
        let needs: Vec<(&str, &str)> = n
            .needs
            .iter()
            .map(|(pip, need)| (pip.as_str(), need.range.as_str()))
            .collect();
        // nvidia-cufile 1.x ships libcufile.so.0; nvidia-nvtx-cu12 ships libnvToolsExt.so.1 up to 12.8.
        assert_eq!(
            needs,
            vec![
                ("nvidia-cufile", ">=1,<2"),
                ("nvidia-nvtx-cu12", ">=12,<12.9")
            ]
        );
        // CUDA 11.0's NVRTC is in no wheel pip can install: nothing to require, said as unhandled.
        assert_eq!(n.unhandled, vec!["libnvrtc.so.11.0"]);
    }

    #[test]
    fn cuda_libraries_of_a_release_before_any_wheel_are_not_required() {
        // A CUDA 10.2 build: no wheel to require, no search path to add; said as unhandled.
        let catalog = Catalog::builtin();
        let e = elf(
            "pkg/ext.so",
            &["libcudart.so.10.2", "libcublas.so.10"],
            &[],
            &catalog,
        );
        let n = plain_needs(&e, &catalog);
        assert!(n.needs.is_empty(), "{:?}", n.needs);
        assert_eq!(n.unhandled, vec!["libcudart.so.10.2", "libcublas.so.10"]);
    }

    #[test]
    fn a_library_the_wheel_keeps_needs_nothing() {
        let catalog = Catalog::builtin();
        let mut e = elf("pkg/ext.so", &["libcublas.so.12"], &[], &catalog);
        e.needed[0].provided_in_artifact = Some("pkg/libcublas.so.12".into());
        let kept = plain_needs(&e, &catalog);
        assert_eq!(kept, FileNeeds::default());
        // Unless the repair removes that copy.
        let removed = BTreeSet::from(["pkg/libcublas.so.12"]);
        let n = file_needs(
            &e,
            &catalog,
            &no_grafts(),
            &HashMap::new(),
            &removed,
            &BTreeMap::new(),
            &|_| false,
        );
        assert_eq!(n.dirs, vec!["nvidia/cublas/lib"]);
    }

    #[test]
    fn a_pinned_release_line_gets_its_own_directory() {
        // torch 2.15 pins nvidia-cusparselt-cu13==0.8.1, which installs nvidia/cusparselt/lib;
        // 0.9 on install nvidia/cu13/lib (pip-wheels.json).
        let catalog = Catalog::builtin();
        let e = elf(
            "torch/lib/libtorch_cuda.so",
            &["libcusparseLt.so.0", "libcudart.so.13"],
            &[],
            &catalog,
        );
        let needs = |releases: &BTreeMap<String, String>| {
            file_needs(
                &e,
                &catalog,
                &no_grafts(),
                &HashMap::new(),
                &BTreeSet::new(),
                releases,
                &|_| false,
            )
        };
        let pinned = known_releases(
            &BTreeMap::new(),
            &[
                "nvidia-cusparselt-cu13==0.8.1; platform_system == \"Linux\"".into(),
                "nvidia-cublas>=13.0".into(),
            ],
        );
        assert_eq!(pinned.len(), 1, "{pinned:?}");
        // (searches nvidia/cusparselt/lib, the range required of nvidia-cusparselt-cu13)
        let line = |releases: &BTreeMap<String, String>| {
            let n = needs(releases);
            let range = n
                .needs
                .iter()
                .find(|(p, _)| p == "nvidia-cusparselt-cu13")
                .map(|(_, need)| need.range.clone());
            (n.dirs.iter().any(|d| d == "nvidia/cusparselt/lib"), range)
        };
        assert_eq!(line(&pinned), (true, Some(">=0.8.1,<0.9".into())));
        // Unpinned: the current line's directory and range.
        assert_eq!(line(&BTreeMap::new()), (false, Some(">=0.9,<1".into())));
        // A lower bound or an extra's requirement pins nothing.
        assert!(
            known_releases(&BTreeMap::new(), &["nvidia-cusparselt-cu13>=0.8".into()]).is_empty()
        );
        assert!(known_releases(
            &BTreeMap::new(),
            &["nvidia-cusparselt-cu13==0.8.1; extra == \"sparse\"".into()]
        )
        .is_empty());
    }

    /// A file's own RUNPATH stays RUNPATH when entries are added (written as RPATH, its build
    /// machine's entries would come before LD_LIBRARY_PATH: libmathdx), and an entry searched
    /// from the current directory (empty, or relative to no `$ORIGIN`) goes, as does a directory
    /// of the build machine; a system directory stays.
    #[test]
    fn a_runpath_stays_one_and_entries_from_the_current_directory_go() {
        let catalog = Catalog::builtin();
        let mut e = elf("nvidia/cu12/lib/libm.so.0", &[], &[], &catalog);
        e.runpath = [
            ("/usr/local/cuda/lib64", PathLocation::Absolute),
            ("", PathLocation::Unresolved),
            ("lib", PathLocation::Unresolved),
            ("/tmp/tmpq1w2/build/lib", PathLocation::Absolute),
        ]
        .into_iter()
        .map(|(raw, location)| SearchPathEntry {
            raw: raw.into(),
            expanded: raw.into(),
            location,
            provided_by: Vec::new(),
        })
        .collect();
        let (edits, added, dropped, _) = search_path(
            &e,
            vec![],
            vec!["nvidia/cuda_nvrtc/lib".into()],
            Vec::new(),
            &BTreeSet::new(),
            false,
            SearchPathTag::Rpath,
        )
        .unwrap();
        assert_eq!(added, vec!["$ORIGIN/../../../nvidia/cuda_nvrtc/lib"]);
        assert_eq!(dropped, vec!["", "lib", "/tmp/tmpq1w2/build/lib"]);
        let (entries, tag) = edits.search_path.unwrap();
        assert_eq!(
            entries,
            vec![
                "/usr/local/cuda/lib64",
                "$ORIGIN/../../../nvidia/cuda_nvrtc/lib"
            ]
        );
        assert_eq!(tag, SearchPathTag::Runpath);
    }

    #[test]
    fn search_paths_keep_their_own_entries_first() {
        let catalog = Catalog::builtin();
        let e = elf(
            "pkg/sub/ext.so",
            &[],
            &[
                ("$ORIGIN/../../pkg.libs", "pkg.libs", PathLocation::Inside),
                ("$ORIGIN/../vendored", "pkg/vendored", PathLocation::Inside),
                ("/opt/x", "/opt/x", PathLocation::Absolute),
            ],
            &catalog,
        );
        let emptied = BTreeSet::from(["pkg/vendored".to_string()]);
        let (edits, added, dropped, _) = search_path(
            &e,
            vec!["pkg.libs".into()],
            vec!["nvidia/cublas/lib".into(), "nvidia/cublas/lib".into()],
            Vec::new(),
            &emptied,
            false,
            SearchPathTag::Runpath,
        )
        .unwrap();
        // The grafts' directory is reached already; the emptied one goes; cuBLAS's is added once.
        assert_eq!(added, vec!["$ORIGIN/../../nvidia/cublas/lib"]);
        assert_eq!(dropped, vec!["$ORIGIN/../vendored"]);
        let (entries, tag) = edits.search_path.unwrap();
        assert_eq!(
            entries,
            vec![
                "$ORIGIN/../../pkg.libs",
                "/opt/x",
                "$ORIGIN/../../nvidia/cublas/lib"
            ]
        );
        // An RPATH given more entries becomes the tag asked for.
        assert_eq!(tag, SearchPathTag::Runpath);
        assert_eq!(edits.soname, None);

        // Nothing to add, drop or replace: no edit at all.
        let plain = elf("pkg/ext.so", &[], &[], &catalog);
        let none = search_path(
            &plain,
            vec![],
            vec![],
            vec![],
            &BTreeSet::new(),
            false,
            SearchPathTag::Rpath,
        );
        assert!(none.is_none());
        // A grafted library is always edited: it takes its new file name as SONAME.
        let graft = elf("pkg.libs/libbar-0badf00d.so.2", &[], &[], &catalog);
        let (edits, ..) = search_path(
            &graft,
            vec![],
            vec![],
            vec![],
            &BTreeSet::new(),
            true,
            SearchPathTag::Rpath,
        )
        .unwrap();
        assert_eq!(edits.soname.as_deref(), Some("libbar-0badf00d.so.2"));
        assert!(edits.search_path.is_none());
    }

    #[test]
    fn an_optional_wheel_is_offered_under_the_extra_of_its_own_library() {
        // nvidia-cuda-runtime-cu11 installs libOpenCL.so.1 beside libcudart: a file that needs
        // OpenCL first does not name the runtime's extra `opencl`.
        let need = |id: &str, extra: &str| Need {
            range: ">=11,<12".into(),
            extra: Some(extra.into()),
            id: id.into(),
            major: 11,
            carried: false,
            lazy: true,
        };
        let optional = BTreeMap::from([
            (
                "nvidia-cuda-runtime-cu11".to_string(),
                need("opencl", "opencl"),
            ),
            ("nvidia-cublas-cu11".to_string(), need("cublaslt", "cublas")),
        ]);
        let (requires, extras) = requirements(
            &BTreeMap::new(),
            &optional,
            &[],
            &CudaDeps::PerComponent,
            &Catalog::builtin(),
        );
        assert_eq!(
            requires,
            [
                "nvidia-cublas-cu11>=11,<12; extra == \"cublas\"",
                "nvidia-cuda-runtime-cu11>=11,<12; extra == \"cudart\""
            ]
        );
        assert_eq!(extras, ["cublas", "cudart"]);
    }

    #[test]
    fn one_extra_brings_what_an_optional_part_needs() {
        let offered = |pips: &[&str]| -> Vec<String> {
            pips.iter()
                .map(|p| {
                    format!(
                        "{p}>=13,<14; extra == \"{}\"",
                        p.rsplit('-').next().unwrap()
                    )
                })
                .collect()
        };
        let part = |path: &str, pips: &[&str]| {
            (
                path.to_string(),
                pips.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            )
        };
        // One part needing several: all of them under `cuda` too.
        let requires = offered(&["nvidia-cublas", "nvidia-cufft"]);
        let extras = vec!["cublas".to_string(), "cufft".to_string()];
        let parts = [part("p/libprovider.so", &["nvidia-cublas", "nvidia-cufft"])];
        let (r, x) = umbrella(requires.clone(), extras.clone(), &parts, &[]);
        assert_eq!(
            r[2..],
            [
                "nvidia-cublas>=13,<14; extra == \"cuda\"",
                "nvidia-cufft>=13,<14; extra == \"cuda\""
            ]
        );
        assert_eq!(x, ["cublas", "cufft", "cuda"]);
        assert_eq!(extra_for(&r, &parts[0].1).as_deref(), Some("cuda"));
        // Parts that each need one keep their own extras; so does a package with a `cuda` extra.
        let single = [
            part("p/_a.so", &["nvidia-cublas"]),
            part("p/_b.so", &["nvidia-cufft"]),
        ];
        assert_eq!(
            umbrella(requires.clone(), extras.clone(), &single, &[]).0,
            requires
        );
        assert_eq!(
            extra_for(&requires, &single[0].1).as_deref(),
            Some("cublas")
        );
        let own = ["nvidia-cuda-runtime>=13; extra == \"cuda\"".to_string()];
        assert_eq!(umbrella(requires.clone(), extras, &parts, &own).0, requires);
    }

    #[test]
    fn requirements_follow_the_style_and_skip_what_is_declared() {
        let catalog = Catalog::builtin();
        let need = |soname: &str| {
            let m = catalog.library_by_soname_hinted(soname, Some(12)).unwrap();
            (
                m.major.pip.clone().unwrap(),
                Need {
                    range: match m.major.pip_requirement(soname) {
                        Some(PipRequirement::Range(r)) => r,
                        other => panic!("{soname}: {other:?}"),
                    },
                    extra: m.library.toolkit_extra.clone(),
                    id: m.library.id.clone(),
                    major: m.major.major,
                    carried: false,
                    lazy: false,
                },
            )
        };
        let needs = BTreeMap::from([need("libcublas.so.12"), need("libcudart.so.12")]);
        let none = BTreeMap::new();
        // Declared: not added again.
        let declared = vec!["nvidia-cublas-cu12>=12.1".to_string()];
        let (requires, extras) =
            requirements(&needs, &none, &declared, &CudaDeps::PerComponent, &catalog);
        assert_eq!(requires, vec!["nvidia-cuda-runtime-cu12>=12,<13"]);
        assert!(extras.is_empty());
        // Declared under an optional extra of the package: it stays optional.
        let under_extra = vec![
            "nvidia-cublas-cu12>=12.1".to_string(),
            "nvidia-cuda-runtime-cu12; extra == 'gpu'".to_string(),
        ];
        let (requires, _) = requirements(
            &needs,
            &none,
            &under_extra,
            &CudaDeps::PerComponent,
            &catalog,
        );
        assert!(requires.is_empty(), "{requires:?}");
        // Declared through the metapackage's extras (torch: `cuda-toolkit[cublas,cudart]==13.2.2;
        // platform_system == "Linux"`): nothing to add.
        let torch_like =
            vec!["cuda-toolkit[CUBLAS,cudart]==12.9.1; platform_system == \"Linux\"".to_string()];
        let (requires, _) = requirements(
            &needs,
            &none,
            &torch_like,
            &CudaDeps::PerComponent,
            &catalog,
        );
        assert!(requires.is_empty(), "{requires:?}");
        // The same, but for Windows only: it declares nothing for a Linux wheel.
        let windows_only = vec![
            "cuda-toolkit[CUBLAS,cudart]==12.9.1; platform_system == \"Windows\"".to_string(),
            "nvidia-cublas-cu12; sys_platform == 'win32'".to_string(),
        ];
        let (requires, _) = requirements(
            &needs,
            &none,
            &windows_only,
            &CudaDeps::PerComponent,
            &catalog,
        );
        assert_eq!(requires.len(), 2, "{requires:?}");

        let (requires, _) = requirements(&needs, &none, &[], &CudaDeps::Toolkit, &catalog);
        assert_eq!(requires, vec!["cuda-toolkit[cublas,cudart]==12.*"]);

        let (requires, extras) = requirements(
            &needs,
            &none,
            &[],
            &CudaDeps::Extra("cuda".into()),
            &catalog,
        );
        assert_eq!(
            requires,
            vec![
                "nvidia-cublas-cu12>=12,<13; extra == \"cuda\"",
                "nvidia-cuda-runtime-cu12>=12,<13; extra == \"cuda\""
            ]
        );
        assert_eq!(extras, vec!["cuda"]);
        // Nothing to require: no extra either.
        let (requires, extras) = requirements(
            &BTreeMap::new(),
            &none,
            &[],
            &CudaDeps::Extra("cuda".into()),
            &catalog,
        );
        assert!(requires.is_empty() && extras.is_empty());

        // What only a plugin loaded on demand needs is offered under an extra named after the
        // library (onnxruntime's TensorRT provider), beside what is required.
        let plugin = BTreeMap::from([need("libnvinfer.so.10")]);
        let (requires, extras) =
            requirements(&needs, &plugin, &[], &CudaDeps::PerComponent, &catalog);
        assert_eq!(
            requires,
            vec![
                "nvidia-cublas-cu12>=12,<13",
                "nvidia-cuda-runtime-cu12>=12,<13",
                "tensorrt-cu12-libs>=10,<11; extra == \"tensorrt\""
            ]
        );
        assert_eq!(extras, vec!["tensorrt"]);
        // Declared by the package (under any extra): nothing added.
        let declared = vec!["tensorrt-cu12-libs; extra == 'trt'".to_string()];
        let (requires, extras) = requirements(
            &BTreeMap::new(),
            &plugin,
            &declared,
            &CudaDeps::PerComponent,
            &catalog,
        );
        assert!(requires.is_empty() && extras.is_empty(), "{requires:?}");
        // Under the one extra the user chose for all CUDA requirements.
        let (requires, extras) = requirements(
            &BTreeMap::new(),
            &plugin,
            &[],
            &CudaDeps::Extra("cuda".into()),
            &catalog,
        );
        assert_eq!(
            requires,
            vec!["tensorrt-cu12-libs>=10,<11; extra == \"cuda\""]
        );
        assert_eq!(extras, vec!["cuda"]);
    }

    #[test]
    fn origin_paths_climb_to_the_root() {
        assert_eq!(
            origin_path("torch/lib/libtorch_cuda.so", "nvidia/cublas/lib"),
            "$ORIGIN/../../nvidia/cublas/lib"
        );
        assert_eq!(
            origin_path("ext.so", "nvidia/cu13/lib/"),
            "$ORIGIN/nvidia/cu13/lib"
        );
    }

    #[test]
    fn build_versions_raise_the_lower_bound() {
        assert_eq!(raise_lower_bound(">=12,<13", "12.9.79"), ">=12.9.79,<13");
        assert_eq!(raise_lower_bound(">=11.2,<12", "11.8.89"), ">=11.8.89,<12");
        // A version outside the SONAME's range says nothing about this library.
        assert_eq!(raise_lower_bound(">=12,<13", "13.0.1"), ">=12,<13");
        assert_eq!(raise_lower_bound("", "1.0"), "");
    }
}
