//! Will these ELF files load here, and will they run on this machine's GPUs — and exactly why
//! not ([`diagnose`], what `cudist doctor` reports). Read-only: nothing is changed.
//!
//! For every ELF file (an extension module, a library, an executable, or all of them below a
//! directory such as an installed package):
//! - glibc's loader is simulated ([`cudist_elf::loader`]) with the file as the main object, as
//!   `ldd` does: every library's path and the rule that found it; for each failure, the paths tried
//!   and the fix the catalog knows;
//! - the symbols it imports from CUDA libraries must be defined by the libraries that load;
//! - its device code is checked against each GPU of the host ([`gpu`](super::gpu)), and the driver
//!   against the CUDA runtime it links ([`host`](super::host) describes the machine: this one, or a
//!   profile).
//!
//! Without paths, the machine and every CUDA installation visible are reported
//! ([`installations`](super::installations)).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cudist_catalog::{Catalog, SonameClass};
use cudist_elf::loader::{self, LoadEnv, Resolution};
use serde::Serialize;

use super::{gpu as device, host, installations as machine, preload, python as pyfind};
use crate::bail;
use crate::error::{Result, ResultExt};

/// What to check ([`diagnose`]).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// ELF files, or directories whose ELF files to check; none (and no `imports`): report the
    /// machine and the CUDA installations it can see.
    pub paths: Vec<PathBuf>,
    /// Also check where dlopen(NAME) from each file would find these libraries.
    pub dlopen: Vec<String>,
    /// Python packages to check as installed for `python` (located without importing them).
    pub imports: Vec<String>,
    /// The interpreter for `imports` (default: `python3` on PATH).
    pub python: Option<PathBuf>,
    /// Judge for this machine instead of the one cudist runs on.
    pub host: Option<host::Host>,
    /// Simulate with this LD_LIBRARY_PATH instead of the current one (`""` for none).
    pub ld_library_path: Option<String>,
    /// Judge `imports` from the files alone: do not run the import in the interpreter
    /// ([`trace`](super::trace)). A `host` profile is always judged so.
    pub static_only: bool,
    /// The time limit of each real import (default [`DEFAULT_IMPORT_TIMEOUT`]).
    pub import_timeout: Option<std::time::Duration>,
}

/// How long a real import may take before it is killed and reported as hanging.
pub const DEFAULT_IMPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The schema identifier of doctor's report.
pub const SCHEMA: &str = "cudist.doctor/1";

/// The report (`--json`: schema `cudist.doctor/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `cudist.doctor/1`.
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// The verdict of the whole run, with every reason.
    pub verdict: Verdict,
    /// The machine judged for.
    pub host: host::Host,
    /// The machine judged for is a profile (`--host`), not the one cudist runs on: the driver's
    /// libraries count as present exactly when the profile has a driver, and its glibc is the one
    /// files must run with.
    pub profile: bool,
    /// The LD_LIBRARY_PATH the loader was simulated with.
    pub ld_library_path: Vec<String>,
    /// One report per ELF file checked.
    pub files: Vec<FileReport>,
    /// What known packages (`--import`) load themselves at run time, found as their loader would.
    pub runtime_loads: Vec<RuntimeLoad>,
    /// Packages outside those asked for that their import imports first (bitsandbytes imports
    /// torch), judged with them.
    pub imported_with: Vec<ImportedWith>,
    /// Without paths: the CUDA installations visible, and their conflicts.
    pub installations: Vec<machine::Installation>,
    /// Libraries visible in several CUDA majors at once.
    pub conflicts: Vec<machine::Conflict>,
    /// What each `--import` really did when run in the interpreter (none with `--static` or a
    /// profile): the at-import truth the verdict starts from.
    pub imports_run: Vec<super::trace::ImportTrace>,
    /// Where the real import and the model of the files disagree (a file the model placed at
    /// import that the import did not load, a library the model did not find that the process
    /// loaded, a load the model said fails that the import survived): the model is checked by
    /// reality at every use, and these are what reality corrected.
    pub disagreements: Vec<String>,
}

/// Ordered: `Ok` < `Risky` < `WillFailWhenLoaded` < `WillFailOnThisGpu` < `ImportFails` <
/// `WillFailToLoad`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    /// Loads and runs.
    Ok,
    /// Runs, with a catch (PTX JIT at first use; a variant library that loads only where the
    /// process has loaded its CUDA libraries already).
    Risky,
    /// Imports, but a library loaded on demand (a provider, a plugin) fails when it is loaded.
    WillFailWhenLoaded,
    /// Loads, but fails at the first kernel launch or CUDA call on this machine.
    WillFailOnThisGpu,
    /// The import fails, and no library or symbol is missing: an error of the package's own
    /// code (an exception, a crash) that the model of its files does not explain.
    ImportFails,
    /// Fails to load: a library or a symbol is missing.
    WillFailToLoad,
}

/// A status and the reasons for it, one line each.
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The worst status of the reasons.
    pub status: Status,
    /// Each reason, naming the file: the worst first (those that decide the status lead), in
    /// the order found among equals.
    pub reasons: Vec<String>,
    /// The status of each reason.
    #[serde(skip)]
    statuses: Vec<Status>,
    /// Reasons with one root cause (a missing library) over several files, made one line each
    /// by [`Verdict::settle`].
    #[serde(skip)]
    causes: Vec<Cause>,
}

/// One root cause seen in files: what to say when one file has it, and when several do.
#[derive(Debug)]
struct Cause {
    key: String,
    status: Status,
    /// (file, the line for that file alone); for a load by a package's own code, (package, its
    /// line).
    files: Vec<(String, String)>,
    /// What to say for several.
    several: Several,
    /// The missing distribution (else the missing libraries) the cause comes down to: causes
    /// with one root, whatever their kind, are said in one line ([`Verdict::settle`]).
    root: Option<String>,
    /// What the cause is about, gathered over its files, each once: the preloads that cannot
    /// load (`libcugraph.so`), or where the packages load the missing library first
    /// (`libcugraph.load_library() at cugraph/__init__.py:12`).
    subjects: Vec<String>,
}

/// The line of a cause that several files (or packages) have.
#[derive(Debug, Clone)]
enum Several {
    /// This line, then the files.
    Line(String),
    /// A library the files' packages load first cannot load: what it lacks (the subjects are
    /// the libraries).
    Blocked { lacks: String },
    /// Libraries files need are not found: they, and the fix (`" (fix: …)"`).
    Missing { names: String, fix: String },
    /// A library packages load first is not found: it, and the wheel to install (`install
    /// cutensor-cu12`; the files are the packages, the subjects where they load it).
    NotLoaded { soname: String, install: String },
    /// A distribution the files' distributions require is not installed (the files are the
    /// requiring distributions).
    Unmet { pip: String },
}

impl Several {
    fn text(&self) -> String {
        match self {
            Several::Line(l) => l.clone(),
            Several::Blocked { lacks } => format!("{lacks} not found"),
            Several::Missing { names, fix } => format!("{names} not found{fix}"),
            Several::NotLoaded { soname, install } => format!("{soname} not found; {install}"),
            Several::Unmet { pip } => format!("{pip}, which is not installed here"),
        }
    }
}

/// At most three of `items`, then how many more.
fn some_of(items: &[String], unit: &str) -> String {
    let shown = items.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    match items.len() {
        n if n > 3 => format!("{shown} and {} more{}", n - 3, unit),
        _ => shown,
    }
}

impl Cause {
    /// The files (or packages, or distributions) that have it.
    fn file_names(&self) -> Vec<String> {
        self.files.iter().map(|(f, _)| f.clone()).collect()
    }

    /// The line of missing libraries over its files, with `fix`.
    fn missing_line(&self, names: &str, fix: &str) -> String {
        let n = self.files.len();
        format!(
            "{names} not found{fix}: in {n} file{} ({})",
            if n == 1 { "" } else { "s" },
            some_of(&self.file_names(), "")
        )
    }

    /// Its line alone.
    fn line(&self) -> String {
        if self.files.len() == 1 && self.subjects.len() <= 1 {
            return self.files[0].1.clone();
        }
        let n = self.files.len();
        let files = self.file_names();
        match &self.several {
            Several::Line(l) => format!("{l}: in {n} files ({})", some_of(&files, "")),
            Several::Missing { names, fix } => self.missing_line(names, fix),
            Several::Blocked { lacks } => format!(
                "need {}, which their packages load first, but {} here: {lacks} not found: in {n} file{} ({})",
                self.subjects.join(", "),
                if self.subjects.len() == 1 {
                    "that load fails"
                } else {
                    "those loads fail"
                },
                if n == 1 { "" } else { "s" },
                some_of(&files, "")
            ),
            Several::Unmet { pip } => format!(
                "{} require {pip}, which is not installed here: what loads its libraries fails on first use; install {pip}",
                some_of(&files, "")
            ),
            Several::NotLoaded { soname, install } => format!(
                "{soname} not found, which {} load{} first at import ({}){}",
                some_of(&files, " packages"),
                if n == 1 { "s" } else { "" },
                some_of(&self.subjects, ""),
                if install.is_empty() {
                    String::new()
                } else {
                    format!("; {install}")
                }
            ),
        }
    }

    /// What it adds to the line of another cause with the same root.
    fn tail(&self) -> String {
        let n = self.files.len();
        match &self.several {
            Several::Line(_) | Several::Missing { .. } => self.line(),
            Several::Blocked { .. } => {
                let files = self.file_names();
                let one = self.subjects.len() == 1;
                format!(
                    "so {}, which {} first, cannot load, nor can {}",
                    self.subjects.join(", "),
                    if one {
                        "its package loads"
                    } else {
                        "their packages load"
                    },
                    if n == 1 {
                        format!(
                            "{}, which needs {}",
                            files[0],
                            if one { "it" } else { "them" }
                        )
                    } else {
                        format!(
                            "the {n} files that need {} ({})",
                            if one { "it" } else { "them" },
                            some_of(&files, "")
                        )
                    }
                )
            }
            Several::NotLoaded { soname, .. } => {
                format!(
                    "{} load{} {soname} first at import ({})",
                    some_of(&self.file_names(), " packages"),
                    if n == 1 { "s" } else { "" },
                    some_of(&self.subjects, "")
                )
            }
            Several::Unmet { .. } => format!(
                "{} require{} it",
                some_of(&self.file_names(), ""),
                if n == 1 { "s" } else { "" }
            ),
        }
    }
}

impl Verdict {
    fn add(&mut self, status: Status, reason: String) {
        self.status = self.status.max(status);
        let at = self
            .statuses
            .iter()
            .position(|s| *s < status)
            .unwrap_or(self.statuses.len());
        self.reasons.insert(at, reason);
        self.statuses.insert(at, status);
    }

    /// Adds a reason that has a root cause shared by other files (`key`): [`Verdict::settle`]
    /// makes one line of each cause, `one` when a single file has it, else `several` followed by
    /// the files.
    fn add_cause(
        &mut self,
        status: Status,
        key: String,
        file: String,
        one: String,
        several: String,
    ) {
        self.add_rooted(status, key, None, file, one, Several::Line(several), None);
    }

    /// [`Verdict::add_cause`] with what the cause comes down to (`root`: the missing
    /// distribution), and what it is about in this file (`subject`).
    #[allow(clippy::too_many_arguments)]
    fn add_rooted(
        &mut self,
        status: Status,
        key: String,
        root: Option<String>,
        file: String,
        one: String,
        several: Several,
        subject: Option<String>,
    ) {
        let i = match self.causes.iter().position(|c| c.key == key) {
            Some(i) => i,
            None => {
                self.causes.push(Cause {
                    key,
                    status,
                    files: Vec::new(),
                    several,
                    root,
                    subjects: Vec::new(),
                });
                self.causes.len() - 1
            }
        };
        let c = &mut self.causes[i];
        c.status = c.status.max(status);
        // One file once: a library preloaded for every file is said of itself.
        if !c.files.iter().any(|(f, _)| *f == file) {
            c.files.push((file, one));
        }
        if let Some(s) = subject {
            if !c.subjects.contains(&s) {
                c.subjects.push(s);
            }
        }
    }

    /// Turns the root causes into reasons: one line for each root (a missing distribution),
    /// whatever kinds of cause it has: the files that need its libraries lead, then the
    /// packages that load them first, then what cannot load without them.
    fn settle(&mut self) {
        let causes = std::mem::take(&mut self.causes);
        let mut said = vec![false; causes.len()];
        for i in 0..causes.len() {
            if said[i] {
                continue;
            }
            let group: Vec<usize> = match &causes[i].root {
                Some(root) => (i..causes.len())
                    .filter(|&j| !said[j] && causes[j].root.as_ref() == Some(root))
                    .collect(),
                None => vec![i],
            };
            for &j in &group {
                said[j] = true;
            }
            let rank = |c: &Cause| match c.several {
                Several::Missing { .. } => 0,
                Several::NotLoaded { .. } => 1,
                Several::Unmet { .. } => 2,
                Several::Blocked { .. } => 3,
                Several::Line(_) => 4,
            };
            let mut ordered: Vec<&Cause> = group.iter().map(|&j| &causes[j]).collect();
            ordered.sort_by_key(|c| rank(c));
            let status = ordered.iter().map(|c| c.status).max().unwrap_or_default();
            // Where a package loads the library first, installing its wheel is the whole fix:
            // the files get the loaded library, no search path needed.
            let install = ordered.iter().find_map(|c| match &c.several {
                Several::NotLoaded { install, .. } if !install.is_empty() => Some(install.clone()),
                _ => None,
            });
            // With more to say, the missing libraries lead in their form for several files,
            // which has the fix.
            let lead = ordered[0];
            let mut line = match &lead.several {
                Several::Missing { names, fix } if ordered.len() > 1 => {
                    let fix = match &install {
                        Some(i) => format!(" (fix: {i})"),
                        None => fix.clone(),
                    };
                    match lead.files.as_slice() {
                        // One file: its own line, which says when it loads, and the fix.
                        [(_, one)] => format!("{one}{fix}"),
                        _ => lead.missing_line(names, &fix),
                    }
                }
                _ => lead.line(),
            };
            for c in &ordered[1..] {
                line.push_str("; ");
                line.push_str(&c.tail());
            }
            if let Some(i) = install.filter(|i| !line.contains(i.as_str())) {
                line.push_str("; ");
                line.push_str(&i);
            }
            self.add(status, line);
        }
    }

    /// Puts a reason first, whatever its status (the real import's failure leads the reasons
    /// that explain it).
    fn lead(&mut self, status: Status, reason: String) {
        self.status = self.status.max(status);
        self.reasons.insert(0, reason);
        self.statuses.insert(0, self.status);
    }

    /// Whether a reason at `status` or worse, or such a cause not yet made a line, names `what`
    /// (a library).
    fn says_at(&self, status: Status, what: &str) -> bool {
        self.reasons
            .iter()
            .zip(&self.statuses)
            .any(|(r, s)| *s >= status && r.contains(what))
            || self.causes.iter().any(|c| {
                c.status >= status
                    && (c.key.contains(what)
                        || c.several.text().contains(what)
                        // A library that cannot load, said as what its files lack.
                        || c.subjects.iter().any(|s| s == what)
                        || c.files.iter().any(|(f, _)| {
                            f.rsplit('/').next() == Some(what)
                        }))
            })
    }

    /// Adds another verdict's reasons (one file's, to the whole report's).
    fn merge(&mut self, other: Verdict) {
        for (r, s) in other.reasons.into_iter().zip(other.statuses) {
            self.add(s, r);
        }
        for c in other.causes {
            for (file, one) in c.files {
                self.add_rooted(
                    c.status,
                    c.key.clone(),
                    c.root.clone(),
                    file,
                    one,
                    c.several.clone(),
                    None,
                );
            }
            if let Some(mine) = self.causes.iter_mut().find(|m| m.key == c.key) {
                for s in c.subjects {
                    if !mine.subjects.contains(&s) {
                        mine.subjects.push(s);
                    }
                }
            }
        }
    }
}

/// Everything found about one ELF file.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FileReport {
    /// The file.
    pub path: String,
    /// Every `DT_NEEDED` entry of the file and of what it loads, in load order.
    pub resolutions: Vec<Resolution>,
    /// The libraries the loader would not find.
    pub missing: Vec<Missing>,
    /// Symbols imported from CUDA libraries that the library they resolve to does not define.
    pub missing_symbols: Vec<MissingSymbol>,
    /// Symbol versions the file or what it loads requires of a library that the file the
    /// library resolved to does not define (`GLIBCXX_3.4.32` of an older `libstdc++.so.6`):
    /// ld.so refuses the load.
    pub missing_versions: Vec<loader::MissingVersion>,
    /// What each GPU of the host does with the file's device code (empty without device code).
    pub gpus: Vec<device::GpuResult>,
    /// The driver against the CUDA runtime the file links.
    pub driver_problems: Vec<String>,
    /// Libraries opened at run time: `--dlopen` names from the file, and what loaded CUDA
    /// libraries are known to dlopen, from them.
    pub dlopen: Vec<Resolution>,
    /// Of the `dlopen` names not found, those said elsewhere and not of this file: a capability
    /// the opening library treats as optional, a driver library said in the host notes, or what
    /// a library loaded before this file opens (said once, of that library). The per-file
    /// report leaves them out.
    pub dlopen_said_elsewhere: Vec<String>,
    /// With a profile that has a driver: the driver's libraries the file needs, which that
    /// machine's driver provides (not looked for on this one).
    pub from_profile_driver: Vec<String>,
    /// When it loads: at import, on demand, or as one variant of several ([`crate::loads`]).
    pub tier: crate::loads::Tier,
    /// For an extension module that is on demand: why the import does not load it. Text for
    /// people.
    pub tier_reason: Option<String>,
    /// For a build of one CUDA release among several (a variant) whose libraries this
    /// environment lacks while another release's build loads: the release that loads. What it
    /// lacks is no failure (the package picks the build that loads).
    pub unused_variant: Option<String>,
}

/// A symbol an object imports from a CUDA library that the installed library lacks: the object
/// was built against a newer release than the one that loads.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MissingSymbol {
    /// The symbol.
    pub symbol: String,
    /// Its version (`libcusparse.so.12`), for a versioned reference.
    pub version: Option<String>,
    /// The object that imports it.
    pub needed_by: PathBuf,
    /// The CUDA library it is imported from (by symbol version, or by the library's name prefix).
    pub library: String,
    /// Where that library resolved.
    pub resolved: PathBuf,
}

/// A library the loader would not find.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Missing {
    /// Its name (the NEEDED entry).
    pub name: String,
    /// The object that needs it.
    pub needed_by: PathBuf,
    /// The paths the loader tried, in order.
    pub tried: Vec<PathBuf>,
    /// What would make it load, when cudist knows.
    pub fix: Option<String>,
}

/// Which CUDA line's distribution installed a library's directory in `site`, where several lines
/// install the same one (libucx-cu12 and libucx-cu13 both install `libucx/lib`): the one whose
/// `.dist-info` directory is there. `None` when no line's is.
fn installed_line<'a>(
    m: &cudist_catalog::LibraryMatch<'a>,
    dir: &str,
    site: &Path,
) -> Option<&'a str> {
    let entries: Vec<String> = std::fs::read_dir(site)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_lowercase())
        .filter(|n| n.ends_with(".dist-info"))
        .collect();
    m.library
        .cuda
        .iter()
        .filter(|line| line.pip_dirs().iter().any(|(d, _)| *d == dir))
        .filter_map(|line| line.pip.as_deref())
        .find(|pip| {
            let stem = format!("{}-", pip.to_lowercase().replace(['-', '.'], "_"));
            entries.iter().any(|e| e.starts_with(&stem))
        })
}

/// A CUDA or external library installed beside the package that needs it (in
/// `site-packages/<its wheel directory>`), which no search path of that file reaches.
struct Beside {
    /// The distribution that installed it.
    pip: String,
    /// The file.
    path: PathBuf,
    /// The search-path entry that would reach it, after `$ORIGIN/` (`../../nvidia/cublas/lib`).
    entry: String,
}

/// The search-path entry, after `$ORIGIN/`, from the real directory of `file` to `dir` of the
/// site-packages it is in (`../nvidia/cusolver/lib`), where that is at most four levels up.
fn entry_to(file: &Path, dir: &str) -> Option<String> {
    let parent = file.parent()?;
    let parent =
        std::fs::canonicalize(parent).unwrap_or_else(|_| cudist_fs::inner::lexical(parent));
    let site = site_of(&parent)?.to_path_buf();
    let mut up = String::new();
    for ancestor in parent.ancestors().take(5) {
        if ancestor == site {
            return Some(format!("{up}{dir}"));
        }
        up.push_str("../");
    }
    None
}

/// Where `name`, which `needed_by` does not find, is installed beside it, if it is.
fn installed_beside(
    name: &str,
    needed_by: &Path,
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<Beside> {
    let (SonameClass::Toolkit(m) | SonameClass::External(m)) = catalog.classify_hinted(name, major)
    else {
        return None;
    };
    let pip = m.major.pip.as_deref()?;
    // The file's real directory: a path reached through a search-path entry keeps its `..`
    // (`holoscan/gxf_extensions/../lib`), which would count levels that are not there.
    let parent = needed_by.parent()?;
    let parent =
        std::fs::canonicalize(parent).unwrap_or_else(|_| cudist_fs::inner::lexical(parent));
    for (dir, _) in &m.major.pip_dirs() {
        let mut up = String::new();
        for ancestor in parent.ancestors().skip(1).take(4) {
            up.push_str("../");
            if ancestor.join(dir).join(name).is_file() {
                return Some(Beside {
                    pip: installed_line(&m, dir, ancestor).unwrap_or(pip).to_string(),
                    path: ancestor.join(dir).join(name),
                    entry: format!("{up}{dir}"),
                });
            }
        }
    }
    None
}

/// The distribution whose `RECORD` lists one of the paths a search tried, and that path (relative
/// to its site-packages): the file belongs there and is missing. Reads the RECORDs of the
/// site-packages directories the paths lie in (at most 64 MiB each).
fn listed_by_record(tried: &[PathBuf]) -> Option<(String, String)> {
    let mut sites: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for t in tried {
        let t = cudist_fs::inner::lexical(t);
        let Some(site) = site_of(&t) else {
            continue;
        };
        let Some(rel) = t.strip_prefix(site).ok().and_then(|r| r.to_str()) else {
            continue;
        };
        match sites.iter_mut().find(|(s, _)| s == site) {
            Some((_, rels)) => rels.push(rel.to_string()),
            None => sites.push((site.to_path_buf(), vec![rel.to_string()])),
        }
    }
    for (site, rels) in &sites {
        let records = site_records(site);
        for (dist, paths) in records.iter() {
            if let Some(r) = rels.iter().find(|r| paths.contains(*r)) {
                return Some((dist.clone(), r.clone()));
            }
        }
    }
    None
}

/// The `site-packages` (or `dist-packages`) directory a path is in.
fn site_of(p: &Path) -> Option<&Path> {
    p.ancestors().find(|a| {
        a.file_name()
            .is_some_and(|n| n == "site-packages" || n == "dist-packages")
    })
}

/// The reinstall that brings back library `name` where a distribution installed it and it is
/// gone: one of the places tried, or a wheel directory `dirs` (`nvidia/cuda_runtime/lib`) of
/// the site-packages that `needed_by` or a place tried is in, that an installed distribution's
/// `RECORD` lists. `pip install` of a distribution that is installed does nothing.
fn reinstall_for(name: &str, needed_by: &Path, tried: &[PathBuf], dirs: &[&str]) -> Option<String> {
    let mut candidates: Vec<PathBuf> = tried.to_vec();
    for p in std::iter::once(needed_by).chain(tried.iter().map(PathBuf::as_path)) {
        let p = cudist_fs::inner::lexical(p);
        if let Some(site) = site_of(&p) {
            for d in dirs {
                let c = site.join(d).join(name);
                if !candidates.contains(&c) {
                    candidates.push(c);
                }
            }
        }
    }
    candidates.retain(|c| !c.exists());
    let (dist, rel) = listed_by_record(&candidates)?;
    Some(format!(
        "{dist} is installed, but {rel}, which it installs (its RECORD lists it), is gone: reinstall it (`pip install --force-reinstall --no-deps {dist}`)"
    ))
}

/// Each distribution of a site-packages directory with the paths its `RECORD` lists, read once
/// per process (a broken environment asks for every file that misses a library).
fn site_records(site: &Path) -> std::sync::Arc<Vec<(String, BTreeSet<String>)>> {
    type Records = HashMap<PathBuf, std::sync::Arc<Vec<(String, BTreeSet<String>)>>>;
    static READ: std::sync::Mutex<Option<Records>> = std::sync::Mutex::new(None);
    let mut read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    read.get_or_insert_with(HashMap::new)
        .entry(site.to_path_buf())
        .or_insert_with(|| {
            let dists = cudist_wheel::installed::scan_names(site).unwrap_or_default();
            std::sync::Arc::new(
                dists
                    .iter()
                    .filter_map(|d| {
                        let rows = record_rows(&d.dist_info)?;
                        Some((d.name.clone(), rows.into_iter().map(|r| r.path).collect()))
                    })
                    .collect(),
            )
        })
        .clone()
}

/// The fix for a library installed beside the file that needs it, out of its search path, that
/// cannot load here itself: what it lacks is the cause, not the search path (cudaq's cuQuantum
/// libraries with nvidia-nvjitlink-cu12 removed: cuSOLVER, which they link, lacks
/// `libnvJitLink.so.12`), and the root: the library it lacks that the fix is for. None where it
/// is not installed beside it, or loads.
fn beside_but_lacking(
    name: &str,
    needed_by: &Path,
    tried: &[PathBuf],
    major: Option<u32>,
    catalog: &Catalog,
    env: &LoadEnv,
) -> Option<(String, String)> {
    let b = installed_beside(name, needed_by, major, catalog)?;
    // Where no search here tries that copy (pyscfad's `_solver`, which has no search path to
    // cuSOLVER at all), the search path is a fix too, said first.
    let copy = cudist_fs::inner::lexical(&b.path);
    let unreached = !tried.iter().any(|t| cudist_fs::inner::lexical(t) == copy);
    let lacks = lacks_of(&b.path, env)?;
    if lacks.names.is_empty() {
        return None;
    }
    // The root among what it lacks: one not installed at all before one installed out of its
    // search path (cuDensityMat lacks cuSPARSE, which is installed, and nvJitLink, which is
    // not: cuSPARSE itself lacks nvJitLink).
    let fixes: Vec<Option<String>> = lacks
        .names
        .iter()
        .map(|(n, tried)| fix_for(n, &b.path, tried, major, catalog))
        .collect();
    let root = fixes
        .iter()
        .position(|f| f.as_deref().is_some_and(|f| f.starts_with("install ")))
        .unwrap_or(0);
    let fix = fixes
        .get(root)?
        .as_ref()
        .map(|f| format!(": {f}"))
        .unwrap_or_default();
    let reach = if unreached {
        let file = needed_by
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!(
            ", but no search path of {file} reaches it (add the RPATH entry $ORIGIN/{}, which `cudist repair` writes into the wheel), and",
            b.entry
        )
    } else {
        ", but".to_string()
    };
    Some((
        format!(
            "{} is installed ({}){reach} cannot load here: it lacks {}{fix}",
            b.pip,
            b.path.display(),
            lacks.names().join(", "),
        ),
        lacks.names[root].0.clone(),
    ))
}

/// The directories of a wheel's `dirs` that a search for `name` tried.
fn reached<'d>(name: &str, dirs: &[(&'d str, Option<&str>)], tried: &[PathBuf]) -> Vec<&'d str> {
    dirs.iter()
        .map(|(d, _)| *d)
        // A tried path keeps its entry's `..` (`nvidia/cu12/lib/../../nccl/lib`).
        .filter(|d| {
            tried
                .iter()
                .any(|t| cudist_fs::inner::lexical(t).ends_with(Path::new(d).join(name)))
        })
        .collect()
}

/// The fix for a library that a preload which cannot load here lacks too, where that preload's
/// own search path reaches the wheel that provides it: installing the wheel is enough, for the
/// preload then loads it before the file that needs it (pylibraft's modules get cuBLAS with
/// libraft.so, whose RPATH reaches `nvidia/cublas/lib`). None where its search path does not.
fn found_by_first(
    name: &str,
    preload: &str,
    tried: &[PathBuf],
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<String> {
    let (SonameClass::Toolkit(m) | SonameClass::External(m)) = catalog.classify_hinted(name, major)
    else {
        return None;
    };
    let pip = m.major.pip.as_deref()?;
    let reached = reached(name, &m.major.pip_dirs(), tried);
    // Installed, its file gone: the reinstall.
    if !reached.is_empty() {
        let dirs: Vec<&str> = m.major.pip_dirs().into_iter().map(|(d, _)| d).collect();
        let first = tried.first().map_or(Path::new(""), PathBuf::as_path);
        if let Some(advice) = reinstall_for(name, first, tried, &dirs) {
            return Some(advice);
        }
    }
    (!reached.is_empty()).then(|| {
        format!(
            "install {pip} (it puts {name} in site-packages/{}): {preload}, which its package loads first, looks there, and the files that need it get the loaded one",
            reached.join(" and site-packages/")
        )
    })
}

/// The fix for a library that is not found: the package that ships it and where it installs.
/// `tried` is where the loader looked: a wheel directory among them is one the search path
/// already reaches, so only the install is missing.
fn fix_for(
    name: &str,
    needed_by: &Path,
    tried: &[PathBuf],
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<String> {
    let file = needed_by
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Where nothing said the major of a SONAME several share, the file's own search path may:
    // the wheel directory it already reaches (`nvidia/cusparse/lib` is CUDA 12's
    // `libcusparse.so.12`, `nvidia/cu13/lib` CUDA 13's).
    let major = major.or_else(|| {
        let by_path: Vec<u32> = catalog
            .majors_of(name)
            .into_iter()
            .filter(|m| {
                catalog
                    .library_by_soname_hinted(name, Some(*m))
                    .is_some_and(|lm| !reached(name, &lm.major.pip_dirs(), tried).is_empty())
            })
            .collect();
        match by_path[..] {
            [one] => Some(one),
            _ => None,
        }
    });
    if let Some(o) = catalog.older_release(name, major) {
        let oldest = o.cuda_major + 1;
        return Some(format!(
            "{name} is {}'s of CUDA {}{}, older than any release NVIDIA ships as wheels (they start at CUDA {oldest}): install that CUDA where the loader finds it (conda: {}), or a build of the package for CUDA {oldest} or later",
            o.library.id,
            o.cuda_major,
            if o.cuda_major_known { "" } else { " or before" },
            crate::analyse::OLDER_CONDA,
        ));
    }
    match catalog.classify_hinted(name, major) {
        SonameClass::Toolkit(m) | SonameClass::External(m) => {
            let pip = m.major.pip.as_deref()?;
            // Releases may install it in different directories (cuSPARSELt 0.8 and 0.9).
            let dirs = m.major.pip_dirs();
            // Installed by a distribution whose file is gone (a wheel's directory moved or
            // deleted): installing it again does nothing while its metadata is there.
            let dir_names: Vec<&str> = dirs.iter().map(|(d, _)| *d).collect();
            if let Some(advice) = reinstall_for(name, needed_by, tried, &dir_names) {
                // Reinstalled, it is still out of reach of a file whose search path does not
                // reach its directory (pyscfad's `_solver`): that is a second fix.
                // (Nothing tried is nothing known: no second fix.)
                let entry = if !tried.is_empty() && reached(name, &dirs, tried).is_empty() {
                    entry_to(needed_by, dir_names.first().copied().unwrap_or_default())
                } else {
                    None
                };
                return Some(match entry {
                    Some(e) => format!(
                        "{advice}; and no search path of {file} reaches it: add the RPATH entry $ORIGIN/{e} (`cudist repair` writes it into the wheel)"
                    ),
                    None => advice,
                });
            }
            // Installed next to the package (site-packages/<dir>) but not searched: name the entry.
            if let Some(b) = installed_beside(name, needed_by, major, catalog) {
                return Some(format!(
                    "{} is installed ({}), but no search path of {file} reaches it: add the RPATH entry \
                     $ORIGIN/{} (`cudist repair` writes it into the wheel)",
                    b.pip,
                    b.path.display(),
                    b.entry
                ));
            }
            let puts = match dirs.as_slice() {
                [(dir, _)] => format!("site-packages/{dir}"),
                _ => dirs
                    .iter()
                    .map(|(d, r)| match r {
                        Some(r) => format!("site-packages/{d} for releases {r}"),
                        None => format!("site-packages/{d}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let reached = reached(name, &dirs, tried);
            if !reached.is_empty() {
                return Some(format!(
                    "install {pip} (it puts {name} in {puts}); the search path of {file} already reaches {}",
                    reached.join(" and ")
                ));
            }
            let dir = dirs.first()?.0;
            // A load by the library's own name (a failed `dlopen` the import made): the loading
            // code searches for it itself; no file's search path to mend.
            if file == name {
                return Some(format!("install {pip} (it puts {name} in {puts})"));
            }
            Some(format!(
                "install {pip} (it puts {name} in {puts}), and make {file} find it: an RPATH entry \
                 $ORIGIN/…/{dir} at the right depth, which `cudist repair` writes into the wheel",
            ))
        }
        SonameClass::Driver(_) => Some(format!(
            "{name} comes with the NVIDIA driver; install the driver (no GPU driver is visible on this machine)"
        )),
        SonameClass::Vendor(v) => Some(format!(
            "{name} is {}'s {}: it comes with {}",
            v.vendor, v.description, v.provided_by
        )),
        SonameClass::System(_) => Some(format!(
            "{name} is a system library; install it with the system's package manager"
        )),
        SonameClass::Other => {
            // A file a distribution installs, missing from the installation (a vendored copy
            // moved or deleted: brainpylib-cu12x's `libcudart-960a404b.so.12.0.146`).
            if let Some((dist, rel)) = listed_by_record(tried) {
                return Some(format!(
                    "{rel} is a file {dist} installs (its RECORD lists it), missing here: reinstall it (`pip install --force-reinstall --no-deps {dist}`)"
                ));
            }
            // A CUDA library's linker name: only a toolkit's development files have it.
            let lib = catalog.library_by_linker_name(name)?;
            let wheels = match lib.newest_wheel_soname(major) {
                Some((so, pip)) => format!("{pip} installs {so}, not this name"),
                None => "CUDA wheels install SONAMEs, not this name".to_string(),
            };
            Some(format!(
                "{name} is the linker name of {}: {wheels}; only a CUDA toolkit's development files have it (load the SONAME instead, or install those files)",
                lib.id
            ))
        }
    }
}

/// The name prefix of a CUDA library's functions: `libcusparse.so.12` → `cusparse`,
/// `libcudart.so.12` → `cuda`, `libnvJitLink.so.13` → `nvJitLink`.
fn symbol_prefix(soname: &str) -> String {
    let stem = soname.split(".so").next().unwrap_or(soname);
    let stem = stem.strip_prefix("lib").unwrap_or(stem);
    match stem {
        "cudart" => "cuda".to_string(),
        s => s.to_string(),
    }
}

impl MissingSymbol {
    /// `@libcusparse.so.12` for a versioned reference, else nothing.
    pub fn version_suffix(&self) -> String {
        self.version
            .as_deref()
            .map(|v| format!("@{v}"))
            .unwrap_or_default()
    }

    /// The library's name without its SONAME version (`libcusparse`).
    pub fn library_stem(&self) -> &str {
        self.library.split(".so").next().unwrap_or(&self.library)
    }
}

/// A library a known package loads itself (cupy through cuda-pathfinder).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RuntimeLoad {
    /// The distribution (`cupy-cuda12x`).
    pub package: String,
    /// Its loader (`cuda-pathfinder`).
    pub loader: String,
    /// The SONAME it loads.
    pub soname: String,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// `site-packages`, `conda`, `ld_library_path`, `cache`, `system_dir` or `cuda_home`.
    pub found_by: Option<String>,
    /// The paths tried, in order.
    pub tried: Vec<PathBuf>,
    /// The wheel that provides it, for the fix.
    pub pip: Option<String>,
    /// Found, but the real import, which ran to its end, did not load it (its load failed or was
    /// never made: pylibcudf's `libnvcomp_cpu.so.5`, which nvcomp's loader does not load).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_loaded: bool,
}

/// A package an `--import` package imports when it is imported, judged with it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ImportedWith {
    /// The top-level module imported (`torch`).
    pub package: String,
    /// The package whose import imports it (`bitsandbytes`).
    pub by: String,
    /// The import statement (`bitsandbytes/__init__.py:3`).
    pub at: String,
    /// Where it is installed.
    pub path: PathBuf,
    /// For a plugin, not imported by an import statement but found through an entry point the
    /// package reads (`entry_points(group="jax_plugins")`): which one (`xla_cuda13 of
    /// jax-cuda13-pjrt, group jax_plugins`). A plugin is imported when that code runs, on first
    /// use: its files load then, and what it misses fails then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// For a package that an `--import` package's function imports, not its import: that
    /// function (`cuda12x_module_loader()`). What its own import loads loads on first use, as a
    /// plugin's files do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<String>,
}

impl ImportedWith {
    /// Its files load on first use, not at import.
    pub fn on_first_use(&self) -> bool {
        self.plugin.is_some() || self.on_call.is_some()
    }
}

/// How many plugins (entry-point modules) doctor follows, over all the groups read.
const MAX_PLUGINS: usize = 64;

/// Whether doctor follows no more packages loaded on first use ([`MAX_PLUGINS`]): an environment
/// nobody vetted may register or name any number.
fn first_use_full(report: &Report) -> bool {
    report
        .imported_with
        .iter()
        .filter(|w| w.on_first_use())
        .count()
        >= MAX_PLUGINS
}

/// The directory of top-level package `top` as `python` imports it: in its venv (a namespace
/// package too), else where the interpreter finds it.
fn package_dir(python: &Path, search_path: Option<&[PathBuf]>, top: &str) -> Option<PathBuf> {
    venv_package(python, top, true).or_else(|| outside_package(python, search_path, top))
}

/// How many imports deep doctor follows packages into other packages.
const MAX_FOLLOW: usize = 3;

/// ` (imported by bitsandbytes at bitsandbytes/__init__.py:3)` for a followed package.
fn imported_by(with: &[ImportedWith], name: &str) -> String {
    with.iter()
        .find(|w| w.package == name)
        .map(|w| format!(" (imported by {} at {})", w.by, w.at))
        .unwrap_or_default()
}

/// Where an outside import of a package is installed, when it is a package of a site-packages
/// directory: found in the venv without starting the interpreter, else in its search path when
/// that was asked for already. The standard library is not followed.
fn outside_package(
    python: &Path,
    search_path: Option<&[PathBuf]>,
    module: &str,
) -> Option<PathBuf> {
    if let Some(p) = venv_package(python, module, false) {
        return Some(p);
    }
    let found = pyfind::find(search_path?, module)?;
    let in_site = found.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("site-packages" | "dist-packages")
        )
    });
    (in_site && found.is_dir()).then_some(found)
}

/// The distributions that the distribution(s) of import `name` among `installed` declare in
/// `Requires-Dist` (normalised): a distribution provides the import when its name is the
/// import's or starts with it (`rmm-cu12` for `rmm`, `faiss-gpu-cu12` for `faiss`).
fn declared_requirements(
    installed: &[cudist_wheel::installed::Installed],
    name: &str,
) -> Vec<String> {
    providers(installed, name)
        .flat_map(|d| d.requires.iter().cloned())
        .collect()
}

/// The distributions among `installed` that provide import `name`: its name is the import's or
/// starts with it (`rmm-cu12` for `rmm`, `cupy-cuda12x` for `cupy`).
fn providers<'a>(
    installed: &'a [cudist_wheel::installed::Installed],
    name: &str,
) -> impl Iterator<Item = &'a cudist_wheel::installed::Installed> {
    let import = cudist_wheel::installed::normalise(name);
    let prefix = format!("{import}-");
    installed.iter().filter(move |d| {
        let n = cudist_wheel::installed::normalise(&d.name);
        n == import || n.starts_with(&prefix)
    })
}

/// What to install for a missing library that wheel `pip` provides: the package's own extra
/// that brings it, when it has one (`cupy-cuda12x[ctk]`, which requires `cuda-toolkit[cublas]`),
/// else the wheel itself.
fn install_advice(
    installed: &[cudist_wheel::installed::Installed],
    import: &str,
    soname: &str,
    pip: &str,
    catalog: &Catalog,
) -> String {
    let pip_n = cudist_wheel::installed::normalise(pip);
    let toolkit_extra = catalog
        .library_by_soname(soname)
        .and_then(|m| m.library.toolkit_extra.clone());
    for d in providers(installed, import) {
        let brings = d.requires_in_extra.iter().find(|r| {
            r.name == pip_n
                || (r.name == "cuda-toolkit"
                    && toolkit_extra.as_ref().is_some_and(|x| r.with.contains(x)))
        });
        if let Some(r) = brings {
            return format!(
                "{pip} (`pip install \"{}[{}]\"` brings it)",
                d.name, r.extra
            );
        }
    }
    pip.to_string()
}

/// The wheel to install for a missing library: of the CUDA major whose wheel the package
/// declares, else of `major`, else of the newest major that has the SONAME.
fn wheel_for(
    soname: &str,
    declared: &[String],
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<String> {
    let pip_of = |m: Option<u32>| {
        catalog
            .library_by_soname_hinted(soname, m)
            .and_then(|l| l.major.pip.clone())
    };
    catalog
        .majors_of(soname)
        .into_iter()
        .filter_map(|m| pip_of(Some(m)))
        .find(|p| declared.contains(&cudist_wheel::installed::normalise(p)))
        .or_else(|| pip_of(major))
}

/// The catalog package among the distributions `installed` (of one site) that provides import
/// `name`.
fn known_package<'c>(
    installed: &[cudist_wheel::installed::Installed],
    name: &str,
    catalog: &'c Catalog,
) -> Option<&'c cudist_catalog::Package> {
    catalog.packages.iter().find(|p| {
        p.imports.iter().any(|i| i == name)
            && installed
                .iter()
                .any(|d| cudist_wheel::installed::normalise(&d.name) == p.pip)
    })
}

/// Finds each library a known package loads, in cuda-pathfinder's order: the site-packages wheel
/// directories (CUDA 13's `nvidia/cu13/lib`, then the per-component one), `$CONDA_PREFIX/lib`,
/// the system search (`LD_LIBRARY_PATH`, cache, system directories), `CUDA_HOME`/`CUDA_PATH`.
fn runtime_loads(
    pkg: &cudist_catalog::Package,
    site: &Path,
    env: &LoadEnv,
    catalog: &Catalog,
) -> Vec<RuntimeLoad> {
    let mut out = Vec::new();
    for id in &pkg.loads {
        let Some(row) = catalog
            .library(id)
            .and_then(|l| l.cuda.iter().find(|m| m.major == pkg.cuda))
        else {
            continue;
        };
        // The current SONAME of that major: the catalog lists older ones first (libcutensor.so.1
        // before .so.2), and NVRTC's `.alt` variant is not the one loaded by name.
        let Some(soname) = row
            .sonames
            .iter()
            .rev()
            .find(|s| !s.contains(".alt."))
            .cloned()
        else {
            continue;
        };
        let mut dirs: Vec<(PathBuf, &str)> = Vec::new();
        dirs.push((
            site.join(format!("nvidia/cu{}/lib", pkg.cuda)),
            "site-packages",
        ));
        if let Some(d) = &row.pip_dir {
            dirs.push((site.join(d), "site-packages"));
        }
        if let Ok(c) = std::env::var("CONDA_PREFIX") {
            dirs.push((PathBuf::from(c).join("lib"), "conda"));
        }
        let mut load = RuntimeLoad {
            package: pkg.pip.clone(),
            loader: pkg.loader.clone(),
            soname: soname.clone(),
            path: None,
            found_by: None,
            tried: Vec::new(),
            pip: row.pip.clone(),
            not_loaded: false,
        };
        let mut found = dirs.iter().find_map(|(d, how)| {
            let p = d.join(&soname);
            load.tried.push(p.clone());
            p.is_file().then(|| (p, how.to_string()))
        });
        if found.is_none() {
            found = loader::find_on_system(&soname, env).map(|(p, rule)| {
                let how = serde_json::to_value(&rule)
                    .ok()
                    .and_then(|v| v["rule"].as_str().map(String::from));
                (p, how.unwrap_or_else(|| "system".into()))
            });
        }
        if found.is_none() {
            for var in ["CUDA_HOME", "CUDA_PATH"] {
                if let Ok(root) = std::env::var(var) {
                    for sub in ["lib64", "lib"] {
                        let p = Path::new(&root).join(sub).join(&soname);
                        load.tried.push(p.clone());
                        if found.is_none() && p.is_file() {
                            found = Some((p, "cuda_home".into()));
                        }
                    }
                }
            }
        }
        if let Some((p, how)) = found {
            load.path = Some(p);
            load.found_by = Some(how);
        }
        out.push(load);
    }
    out
}

/// Whether SONAMEs are CUDA libraries (toolkit or NVIDIA), answered once per name for all the
/// files of a run: the same libraries turn up in every file's closure.
pub struct CudaNames<'c> {
    catalog: &'c Catalog,
    seen: std::sync::Mutex<std::collections::HashMap<String, bool>>,
    /// The catalog's static-linking evidence, indexed once when a file first needs it.
    markers: std::sync::OnceLock<crate::analyse::MarkerIndex>,
}

impl<'c> CudaNames<'c> {
    /// Answers for `catalog`.
    pub fn new(catalog: &'c Catalog) -> CudaNames<'c> {
        CudaNames {
            catalog,
            seen: Default::default(),
            markers: Default::default(),
        }
    }

    /// Whether `name` is a CUDA library (toolkit or NVIDIA).
    pub fn is_cuda(&self, name: &str) -> bool {
        if let Some(hit) = self.seen.lock().ok().and_then(|m| m.get(name).copied()) {
            return hit;
        }
        let answer = matches!(
            self.catalog.classify(name),
            SonameClass::Toolkit(_) | SonameClass::External(_)
        );
        if let Ok(mut m) = self.seen.lock() {
            m.insert(name.to_string(), answer);
        }
        answer
    }
}

/// The CUDA-library symbols of a simulation that the library they resolve to does not define.
fn missing_symbols(sim: &loader::Simulation, names: &CudaNames) -> Vec<MissingSymbol> {
    let is_cuda = |s: &str| names.is_cuda(s);
    // Only references that can come from a CUDA library are bound: versioned by a CUDA SONAME,
    // or unversioned with the function prefix of a CUDA library the object needs. The prefixes
    // and the versions' classification are worked out once per object and per version, not per
    // symbol.
    let cuda_versions: std::collections::HashSet<&str> = sim
        .objects
        .iter()
        .flat_map(|o| o.undefined_versions())
        .filter(|v| v.contains(".so") && is_cuda(v))
        .collect();
    let wanted = |o: &loader::Loaded| {
        let prefixes: Vec<String> = o
            .needed()
            .iter()
            .filter(|n| is_cuda(n))
            .map(|n| symbol_prefix(n))
            .collect();
        let cuda_versions = &cuda_versions;
        move |s: &cudist_elf::DynSymbol| match s.version.as_deref() {
            Some(v) => cuda_versions.contains(v),
            None => prefixes.iter().any(|p| s.name.starts_with(p.as_str())),
        }
    };
    let mut out = Vec::new();
    for u in sim.undefined_symbols_where(wanted) {
        let Some(obj) = sim.objects.iter().find(|o| o.path == u.needed_by) else {
            continue;
        };
        // The library the symbol is imported from: named by its version, else the CUDA library
        // among the object's NEEDED whose function prefix it carries (the longest: cublasLt).
        let library = match u.version.as_deref().filter(|v| is_cuda(v)) {
            Some(v) => Some(v.to_string()),
            None if u.version.is_none() => obj
                .needed()
                .iter()
                .filter(|n| is_cuda(n))
                .filter(|n| u.symbol.starts_with(&symbol_prefix(n)))
                .max_by_key(|n| symbol_prefix(n).len())
                .cloned(),
            None => None,
        };
        let Some(library) = library else { continue };
        let Some(resolved) = sim
            .resolutions
            .iter()
            .find(|r| r.needed_by == u.needed_by && r.name == library)
            .and_then(|r| r.path.clone())
        else {
            continue;
        };
        let provider = sim.objects.iter().find(|o| o.path == resolved);
        if provider.is_some_and(|p| !p.has_symbols()) {
            continue;
        }
        out.push(MissingSymbol {
            symbol: u.symbol,
            version: u.version,
            needed_by: u.needed_by,
            library,
            resolved,
        });
    }
    out
}

/// The CUDA runtime majors a simulation loads (`libcudart.so.12` → 12).
fn cudart_majors(sim: &loader::Simulation, catalog: &Catalog) -> Vec<u32> {
    let mut v: Vec<u32> = sim
        .resolutions
        .iter()
        .filter(|r| r.name.starts_with("libcudart.so."))
        .flat_map(|r| catalog.majors_of(&r.name))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The device code of an ELF file (empty when it has none or cannot be read).
fn device_code(path: &Path) -> Vec<crate::model::DeviceEntry> {
    let Ok(map) = cudist_elf::map_file(path) else {
        return Vec::new();
    };
    let Ok(elf) = cudist_elf::ElfFile::parse(&map) else {
        return Vec::new();
    };
    crate::device::entries(&path.display().to_string(), &elf, &map)
        .map(|(e, _)| e)
        .unwrap_or_default()
}

/// A regular package of a virtual environment, found without starting its interpreter: for a
/// venv's `bin/python` (PEP 405: `pyvenv.cfg` one level up, user site off) with no `PYTHONPATH`,
/// `find_spec` answers `lib/python3.X/site-packages/NAME` when that holds `NAME/__init__.py`.
/// A dotted name (`jax_plugins.xla_cuda13`) is its parts below that directory, the last a
/// regular package; with `namespace`, the last may be a namespace package's directory too
/// (a backend a function imports). Anything else is left to the interpreter.
fn venv_package(python: &Path, name: &str, namespace: bool) -> Option<PathBuf> {
    if std::env::var_os("PYTHONPATH").is_some_and(|v| !v.is_empty())
        || name.split('.').any(|p| p.is_empty() || p == "..")
    {
        return None;
    }
    let rel = name.replace('.', "/");
    let venv = python.parent()?.parent()?;
    let cfg = cudist_fs::read_bounded(&venv.join("pyvenv.cfg"), cudist_fs::SMALL_FILE).ok()?;
    let cfg = String::from_utf8_lossy(&cfg);
    // A venv that also sees the system site-packages could find the name there first.
    if cfg.lines().any(|l| {
        l.replace(' ', "")
            .eq_ignore_ascii_case("include-system-site-packages=true")
    }) {
        return None;
    }
    let mut found = std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .filter_map(|site| {
            let p = site.join(&rel);
            if p.join("__init__.py").is_file() {
                return Some(p);
            }
            // A namespace package (`lisatools_backend_cuda12x/`, no `__init__.py`), as the
            // path finder takes it: where no module of that name comes first.
            namespace
                .then(|| pyfind::find(std::slice::from_ref(&site), name))
                .flatten()
                .filter(|f| *f == p && f.is_dir())
        });
    let first = found.next()?;
    // Two Python versions in one venv: let the interpreter say which it uses.
    found.next().is_none().then_some(first)
}

/// The exact name a library passes to dlopen for a catalog entry, where the library's file holds
/// it: a full SONAME (`libcuda.so.1`) as a string of its own, or as the format it is built from
/// (`libnvrtc.so.%d`); for a bare `libX.so` (NVRTC's `libnvrtc-builtins.so`, whose version follows
/// NVRTC's own), the `libX.so.<version>` string the file contains. The catalog's facts are read
/// off the releases it cites: a build that does not hold the name (cuSPARSELt 0.6, which torch
/// 2.4 vendors, names no NVRTC; 0.8 opens `libnvrtc.so.13`) does not load it.
fn dlopen_name(library: &Path, pattern: &str) -> Option<String> {
    // Scanning a 100 MB library once is enough for all the files that load it.
    type Names = std::collections::HashMap<(PathBuf, String), Option<String>>;
    static SEEN: std::sync::OnceLock<std::sync::Mutex<Names>> = std::sync::OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    let key = (library.to_path_buf(), pattern.to_string());
    if let Some(hit) = seen.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return hit;
    }
    let found = scan_dlopen_name(library, pattern);
    if let Ok(mut m) = seen.lock() {
        m.insert(key, found.clone());
    }
    found
}

fn scan_dlopen_name(library: &Path, pattern: &str) -> Option<String> {
    let map = cudist_elf::map_file(library).ok()?;
    // The name is a string constant: search `.rodata` (13 MB of NVRTC's 106), not the file.
    let elf = cudist_elf::ElfFile::parse(&map).ok()?;
    let hay = elf
        .section(".rodata")
        .and_then(|sec| elf.section_data(&map, sec).ok())
        .unwrap_or(&map[..]);
    if !pattern.ends_with(".so") {
        // The whole name, ended by its NUL (`libnvrtc.so.13`, not `libnvrtc.so.130`), or the
        // format it is printed from.
        let whole = format!("{pattern}\0");
        let format = pattern
            .rfind(".so.")
            .map(|at| format!("{}%", &pattern[..at + 4]));
        let held = memchr::memmem::find(hay, whole.as_bytes()).is_some()
            || format.is_some_and(|f| memchr::memmem::find(hay, f.as_bytes()).is_some());
        return held.then(|| pattern.to_string());
    }
    let needle = format!("{pattern}.");
    let at = memchr::memmem::find(hay, needle.as_bytes())?;
    let tail = &hay[at + needle.len()..];
    let len = tail
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .count();
    (len > 0).then(|| {
        format!(
            "{needle}{}",
            String::from_utf8_lossy(&tail[..len]).trim_end_matches('.')
        )
    })
}

/// The SONAMEs a file loads itself on the first call into them ([`crate::model::LazyLoad`]): a
/// trampoline table's library by the catalog's SONAME of `major` (skipped when no major is
/// known). Read once per file for all the files of a run. Each comes with the other names of its
/// fallback chain, when it has one (cudnn-frontend tries `libnvrtc.so.13`, then `.so.12`): the
/// first SONAME the chain holds of `major` leads.
fn lazy_names(path: &Path, catalog: &Catalog, major: Option<u32>) -> Vec<Vec<String>> {
    let (found, own_major) = lazy_scan(path, catalog);
    // A file that links no CUDA runtime (JAX's PJRT plugin loads every CUDA library through
    // its trampolines) takes the major its search path names (`$ORIGIN/../nvidia/cu13/lib`).
    let major = major.or(own_major);
    found
        .into_iter()
        .filter_map(|(id, soname, alternatives, _)| {
            if alternatives.len() >= 2 {
                let mut chain = alternatives;
                // The link of the file's major, else the newest it accepts, not newer than
                // what its device code was built with (as inspect reads it: qoco's
                // `libcublas.so.11`, `.12` is CUDA 12's; colabfold's CUDA 12 build tries
                // `libcublasLt.so.13` first, and takes `.12` where 13's is not there).
                let limit =
                    major.or_else(|| crate::artifact::built_major_of(&device_code(path), catalog));
                if let Some(i) = crate::analyse::chain_link_of_major(&chain, major, catalog)
                    .or_else(|| crate::artifact::newest_link(&chain, limit, catalog))
                {
                    let lead = chain.remove(i);
                    chain.insert(0, lead);
                }
                return Some(chain);
            }
            soname.map(|s| vec![s]).or_else(|| {
                catalog
                    .library(&id)?
                    .cuda
                    .iter()
                    .find(|m| Some(m.major) == major)?
                    .sonames
                    .iter()
                    .rev()
                    .find(|s| !s.contains(".alt."))
                    .map(|s| vec![s.clone()])
            })
        })
        .collect()
}

/// A file's lazy loads (library, SONAME, fallback chain) and the major its search path names.
type LazyFound = (
    Vec<(String, Option<String>, Vec<String>, Vec<String>)>,
    Option<u32>,
);

/// [`scan_lazy`], once per file.
fn lazy_scan(path: &Path, catalog: &Catalog) -> LazyFound {
    type Found = LazyFound;
    type Seen = std::collections::HashMap<PathBuf, Found>;
    static SEEN: std::sync::OnceLock<std::sync::Mutex<Seen>> = std::sync::OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(f) = seen.lock().ok().and_then(|m| m.get(path).cloned()) {
        return f;
    }
    let f = scan_lazy(path, catalog);
    if let Ok(mut m) = seen.lock() {
        m.insert(path.to_path_buf(), f.clone());
    }
    f
}

/// The lazy loads of one file, and the CUDA major its RPATH or RUNPATH names (a `cuNN`
/// directory of NVIDIA's CUDA 13 wheel layout, `nvidia/cu13/lib`), else the one its NEEDED CUDA
/// libraries have, if exactly one.
fn scan_lazy(path: &Path, catalog: &Catalog) -> LazyFound {
    let Ok(map) = cudist_elf::map_file(path) else {
        return (Vec::new(), None);
    };
    let Ok(elf) = cudist_elf::ElfFile::parse(&map) else {
        return (Vec::new(), None);
    };
    let rodata: Vec<&[u8]> = elf
        .sections
        .iter()
        .filter(|s| s.name.starts_with(".rodata"))
        .filter_map(|s| elf.section_data(&map, s).ok())
        .collect();
    let tables: Vec<String> =
        cudist_elf::defined_symbols_where(&map, crate::analyse::is_trampoline_table)
            .map(|v| v.into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
    let loads = crate::analyse::lazy_loads(&elf, &tables, &rodata, catalog)
        .0
        .into_iter()
        // A load by a linker name (`dlopen("libnvrtc.so")`) asks for that name, whatever
        // SONAME the major has.
        .map(|l| {
            let linker = l
                .written
                .filter(|w| l.soname.is_none() && w.ends_with(".so"));
            (l.library, l.soname.or(linker), l.alternatives, l.variables)
        })
        .collect();
    let mut majors: Vec<u32> = elf
        .rpath
        .iter()
        .chain(&elf.runpath)
        .flat_map(|e| e.split('/'))
        .filter_map(|c| c.strip_prefix("cu")?.parse::<u32>().ok())
        .filter(|m| {
            catalog
                .library("cudart")
                .is_some_and(|l| l.cuda.iter().any(|c| c.major == *m))
        })
        .collect();
    majors.sort_unstable();
    majors.dedup();
    // Else the major of the CUDA libraries it links (a fallback chain's file linking cuBLAS 12
    // loads NVRTC 12), if one.
    if majors.is_empty() {
        majors = elf
            .needed
            .iter()
            .flat_map(|n| catalog.majors_of(n))
            .collect();
        majors.sort_unstable();
        majors.dedup();
    }
    (loads, (majors.len() == 1).then(|| majors[0]))
}

/// The wheel that provides a library, of the package's CUDA major, where the catalog knows one.
fn wheel_of(name: &str, major: Option<u32>, catalog: &Catalog) -> Option<String> {
    match catalog.classify_hinted(name, major) {
        SonameClass::Toolkit(l) | SonameClass::External(l) => l.major.pip.clone(),
        _ => None,
    }
}

/// What a missing library comes down to for a user: the distribution that provides it (the
/// catalog's wheel of the package's CUDA major), else its own name; several, each once, sorted.
fn root_of(names: &[&str], major: Option<u32>, catalog: &Catalog) -> String {
    let mut roots: Vec<String> = names
        .iter()
        .map(|n| wheel_of(n, major, catalog).unwrap_or_else(|| n.to_string()))
        .collect();
    roots.sort();
    roots.dedup();
    roots.join(" + ")
}

/// The names of missing libraries, each once (two files of a closure may need the same one),
/// in the order found.
fn distinct_names(ms: &[&Missing]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for m in ms {
        if !names.contains(&m.name.as_str()) {
            names.push(m.name.as_str());
        }
    }
    names.join(", ")
}

/// The CUDA major of the wheel directory a file lies in, where every library the catalog puts
/// there is of one major (`nvidia/cu12/lib`: nvidia-cudss-cu12's and the other -cu12 wheels of
/// that layout). `None` where the directory is no CUDA wheel's or is shared across majors.
fn dir_major(f: &Path, catalog: &Catalog) -> Option<u32> {
    let parent = cudist_fs::inner::lexical(f.parent()?);
    let mut majors: BTreeSet<u32> = BTreeSet::new();
    for l in &catalog.libraries {
        for c in &l.cuda {
            if c.pip_dirs().iter().any(|(d, _)| parent.ends_with(d)) {
                majors.insert(c.major);
            }
        }
    }
    match majors.len() {
        1 => majors.into_iter().next(),
        _ => None,
    }
}

/// The variables a file that opens `name` itself reads to find it (named for the library:
/// `TRITON_CUPTI_LIB_PATH`), from its lazy loads.
fn lazy_variables(file: &Path, name: &str, catalog: &Catalog) -> Vec<String> {
    lazy_scan(file, catalog)
        .0
        .into_iter()
        .filter(|(_, so, chain, _)| so.as_deref() == Some(name) || chain.iter().any(|c| c == name))
        .flat_map(|(_, _, _, v)| v)
        .collect()
}

/// A file named `name` that the distribution installing `file` also installs (its `RECORD`
/// lists both), other than `file` itself.
fn carried_copy(file: &Path, name: &str) -> Option<PathBuf> {
    let listed = listed_in_record(file)?;
    let (_, paths) = listed.entry();
    paths
        .iter()
        .filter(|p| p.as_str() != listed.rel)
        .find(|p| p.rsplit('/').next() == Some(name))
        .map(|p| listed.site.join(p))
        .filter(|p| p.is_file())
}

/// The distribution of a site-packages directory whose `RECORD` lists a file: where, as what,
/// and which of that directory's records ([`site_records`]).
struct Listed {
    site: PathBuf,
    /// The file's path in the `RECORD`, relative to `site`.
    rel: String,
    records: std::sync::Arc<Vec<(String, BTreeSet<String>)>>,
    at: usize,
}

impl Listed {
    /// The distribution and every path its `RECORD` lists.
    fn entry(&self) -> &(String, BTreeSet<String>) {
        &self.records[self.at]
    }
}

/// [`Listed`] for a file, where an installed distribution's `RECORD` lists it.
fn listed_in_record(f: &Path) -> Option<Listed> {
    let f = cudist_fs::inner::lexical(f);
    let site = site_of(&f)?.to_path_buf();
    let rel = f.strip_prefix(&site).ok()?.to_str()?.to_string();
    let records = site_records(&site);
    let at = records.iter().position(|(_, paths)| paths.contains(&rel))?;
    Some(Listed {
        site,
        rel,
        records,
        at,
    })
}

/// The CUDA major of the distribution whose `RECORD` lists a file, as its name says
/// (`cupy-cuda12x` installs `cupy_backends/`): for a file of a package doctor did not follow,
/// which the real import loaded.
fn record_major(f: &Path, catalog: &Catalog) -> Option<u32> {
    let listed = listed_in_record(f)?;
    crate::artifact::distribution_major(Some(&listed.entry().0), &[], catalog)
}

/// The CUDA major of a simulation: the one most of its CUDA libraries (found or missing) whose
/// SONAME belongs to a single major say.
fn sim_major(sim: &loader::Simulation, catalog: &Catalog) -> Option<u32> {
    let mut votes: BTreeMap<u32, usize> = Default::default();
    let names = sim
        .objects
        .iter()
        .filter_map(|o| o.soname.as_deref())
        .chain(sim.missing().map(|m| m.name.as_str()));
    let names: Vec<&str> = names.collect();
    // A library of a release before the catalog's names the release outright
    // (`libcudart.so.10.2`): what it shares with later releases (`libcufft.so.10`) says nothing.
    let older: BTreeSet<u32> = names
        .iter()
        .filter_map(|n| catalog.older_release_major(n))
        .collect();
    if let Some(m) = older.last() {
        return Some(*m);
    }
    for name in names {
        if !matches!(
            catalog.classify(name),
            SonameClass::Toolkit(_) | SonameClass::External(_)
        ) {
            continue;
        }
        if let [one] = catalog.majors_of(name).as_slice() {
            *votes.entry(*one).or_default() += 1;
        }
    }
    votes
        .into_iter()
        .max_by_key(|(m, n)| (*n, *m))
        .map(|(m, _)| m)
}

/// Whether the `RECORD` of the distribution at `dist_info` lists a file under `prefix`
/// (`nvshmem/`). Read only where a package's distribution is not named like it; a RECORD larger
/// than 64 MiB is not read.
fn record_lists(dist_info: &Path, prefix: &str) -> bool {
    record_rows(dist_info).is_some_and(|rows| rows.iter().any(|row| row.path.starts_with(prefix)))
}

/// The rows of the `RECORD` of the distribution at `dist_info`: none where it cannot be read,
/// is not UTF-8, or is larger than 64 MiB.
fn record_rows(dist_info: &Path) -> Option<Vec<cudist_wheel::installed::RecordRow>> {
    let bytes = cudist_fs::read_bounded(&dist_info.join("RECORD"), 64 << 20).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(cudist_wheel::installed::parse_record(&text))
}

/// The ELF files at the top of `site` (beside the packages, not in one) that the distribution
/// providing package `name` installs: its `RECORD` lists `name/` and them. `installed` is the
/// site's distributions. A RECORD larger than 64 MiB is not read, and at most 64 files are
/// taken.
fn beside_package(
    site: &Path,
    installed: &[cudist_wheel::installed::Installed],
    name: &str,
) -> Vec<PathBuf> {
    let top = name.split('.').next().unwrap_or(name);
    let prefix = format!("{top}/");
    let mut out = Vec::new();
    for d in installed {
        let Some(rows) = record_rows(&d.dist_info) else {
            continue;
        };
        if !rows.iter().any(|r| r.path.starts_with(&prefix)) {
            continue;
        }
        for r in rows.iter().filter(|r| !r.path.contains('/')) {
            let f = site.join(&r.path);
            let named_so = r.path.ends_with(".so") || r.path.contains(".so.");
            if named_so && f.is_file() && !out.contains(&f) && out.len() < 64 {
                out.push(f);
            }
        }
    }
    out
}

/// The environment's CUDA major: the one the distributions installed where the imports run are
/// for (a CUDA 12 environment whose failed loads a -cu12 package's loader made: cupy-cuda12x's
/// cuTENSOR is cutensor-cu12); none where they are for several, or none.
fn environment_major(
    dists: &HashMap<PathBuf, Vec<cudist_wheel::installed::Installed>>,
    catalog: &Catalog,
) -> Option<u32> {
    let env: BTreeSet<u32> = dists
        .values()
        .flatten()
        .filter_map(|d| crate::artifact::distribution_major(Some(&d.name), &d.requires, catalog))
        .collect();
    match env.into_iter().collect::<Vec<u32>>()[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// The package directories strictly between `site` and a submodule's `dir`
/// (`site/a` for `site/a/b`): the packages Python imports before it.
fn parents_between(site: &Path, dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .skip(1)
        .take_while(|p| *p != site && p.starts_with(site))
        .map(Path::to_path_buf)
        .collect()
}

/// The directory an import's package sits in (`site-packages`): above its directory by as many
/// levels as the import has names (`nvidia.nvcomp` in `site-packages/nvidia/nvcomp`).
fn site_of_import<'a>(name: &str, dir: &'a Path) -> Option<&'a Path> {
    let mut d = dir;
    for _ in name.split('.') {
        d = d.parent()?;
    }
    Some(d)
}

/// One file's report, its verdict, and where the real import contradicted the model.
type Checked = (FileReport, Verdict, Vec<Unfound>);

/// A library the simulated search does not find for a file, which the real import had loaded (by
/// a load the model does not know of: a path list handed to native code). Said once per library
/// and place, for every file that needs it.
struct Unfound {
    name: String,
    file: String,
    loaded: PathBuf,
}

/// A CUDA runtime linked into a file (nvcc's default, `-cudart static`).
struct LinkedRuntime {
    /// The release that built it, from the newest PTX ISA.
    cuda: cudist_catalog::CudaVersion,
    /// That PTX ISA.
    isa: cudist_catalog::CudaVersion,
    /// The file defines the runtime's marker symbols or carries its strings and name table (else:
    /// device code with no runtime in NEEDED, so one is most likely linked in).
    certain: bool,
}

/// The runtime linked into a file that loads no `libcudart`, when cudist's static-linking evidence
/// finds one and the file's PTX says which release built it. Cubins alone do not say the release:
/// none then.
fn static_runtime(
    f: &Path,
    entries: &[crate::model::DeviceEntry],
    names: &CudaNames,
) -> Option<LinkedRuntime> {
    let catalog = names.catalog;
    let isa = entries
        .iter()
        .filter(|e| e.kind == cudist_fatbin::EntryKind::Ptx)
        .filter_map(|e| cudist_catalog::CudaVersion::parse(&e.version))
        .max()?;
    let cuda = catalog.cuda_for_ptx_isa(isa)?;
    let map = cudist_elf::map_file(f).ok()?;
    let markers = names
        .markers
        .get_or_init(|| crate::analyse::MarkerIndex::new(catalog));
    let analysed =
        crate::analyse::analyse_elf(&f.display().to_string(), &map, catalog, markers).ok()?;
    let runtime = crate::artifact::static_cuda(&analysed)
        .into_iter()
        .find(|s| s.library == "cudart")?;
    Some(LinkedRuntime {
        cuda,
        isa,
        certain: runtime.confidence == crate::model::Confidence::Certain,
    })
}

/// `2.28` → (2, 28).
fn glibc_key(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The files a simulation found through the loader cache or the system directories: this
/// machine's own libraries, which a profile's machine has in its own build.
fn system_files(sim: &loader::Simulation) -> BTreeSet<&Path> {
    sim.resolutions
        .iter()
        .filter(|r| {
            matches!(
                r.rule,
                Some(loader::Rule::Cache) | Some(loader::Rule::SystemDir)
            )
        })
        .filter_map(|r| r.path.as_deref())
        .collect()
}

/// The newest `GLIBC_x.y` a simulation's objects require beyond the profile's glibc, said with
/// the object that requires it: by a version requirement, or by a glibc symbol it imports without
/// a version ([`cudist_catalog::glibc`]; the loader then fails on "undefined symbol"). The
/// system's own libraries are left out: the profile's machine has its own, built for its glibc.
/// `versions`: whether to judge version requirements too (this machine's loader reads those).
fn glibc_problem<'a>(
    sim: &'a loader::Simulation,
    host: &host::Host,
    versions: bool,
) -> Option<(&'a Path, String)> {
    let have = glibc_key(host.glibc.as_deref()?)?;
    let arch = host.arch.as_deref().unwrap_or(std::env::consts::ARCH);
    let system = system_files(sim);
    // (glibc, the version or symbol that needs it, unversioned, the object)
    let mut worst: Option<((u32, u32), String, bool, &Path)> = None;
    for o in sim
        .objects
        .iter()
        .filter(|o| !system.contains(&o.path.as_path()))
    {
        let versioned = o
            .undefined_versions()
            .filter(|_| versions)
            .filter_map(|v| Some((v.strip_prefix("GLIBC_").and_then(glibc_key)?, v, false)));
        let unversioned = o.unversioned_imports().filter_map(|s| {
            Some((
                glibc_key(cudist_catalog::glibc::glibc_since(arch, s)?)?,
                s,
                true,
            ))
        });
        for (key, what, bare) in versioned.chain(unversioned) {
            if key > have && worst.as_ref().is_none_or(|(w, ..)| key > *w) {
                worst = Some((key, what.to_string(), bare, &o.path));
            }
        }
    }
    let ((major, minor), what, bare, path) = worst?;
    let glibc = host.glibc.as_deref().unwrap_or("?");
    Some((
        path,
        if bare {
            format!(
                "imports {what} without a symbol version, a symbol glibc has only from \
                 {major}.{minor}, and the glibc here is {glibc}: the loader refuses it \
                 (\"undefined symbol: {what}\"), though its version requirements do not say so: \
                 it needs a system with glibc {major}.{minor} or newer, or a build of its package \
                 made for this one"
            )
        } else {
            format!(
                "needs {what}, and the profile's glibc is {glibc}: the loader refuses it there \
                 (\"version `{what}' not found\")"
            )
        },
    ))
}

/// What `map` holds for the library `name`: its own entry, else one whose key is a pattern the
/// name matches (moreau-cuda13 loads the files `libcudart.so*` finds in the NVIDIA wheels'
/// directories: `libcudart.so.13` is one).
fn by_name_or_pattern<'m, V>(map: &'m HashMap<String, V>, name: &str) -> Option<&'m V> {
    map.get(name).or_else(|| {
        map.iter()
            .find(|(k, _)| crate::loads::names_library(k, name))
            .map(|(_, v)| v)
    })
}

/// A line about `object`, found while checking `f`: the object named once when it is `f`.
fn said_of(f: &Path, object: &Path, what: &str) -> String {
    let same = f == object
        || f.canonicalize()
            .is_ok_and(|c| object.canonicalize().is_ok_and(|o| o == c));
    if same {
        format!("{}: {what}", f.display())
    } else {
        format!("{}: {} {what}", f.display(), object.display())
    }
}

/// What every file's check shares.
struct Shared<'a> {
    env: &'a LoadEnv,
    host: &'a host::Host,
    profile: bool,
    names: &'a CudaNames<'a>,
    dlopen: &'a [String],
    /// The libraries the packages load at import, by SONAME and file name, and those their
    /// functions load when called ([`Shared::loaded_on_call`]).
    loaded_first: &'a HashMap<String, PathBuf>,
    /// Of [`Shared::loaded_first`], those loaded when a function of the package runs, not at
    /// import: what runs it (`cupy_backends.cuda.libs.__getattr__()`).
    loaded_on_call: &'a HashMap<String, String>,
    /// The SONAMEs of the packages' own files that load on demand, each with its file: a file
    /// loaded on demand that needs one, and that no search path of its own leads to, loads after
    /// it (triton's plugins need `libtriton.so`, its extension module's SONAME, which the
    /// import may leave unloaded).
    carried_on_demand: &'a HashMap<String, PathBuf>,
    /// What the real imports left loaded, by SONAME and file name ([`super::trace`]): a later
    /// load of the name gets that object.
    traced: &'a HashMap<String, PathBuf>,
    /// Packages `cudist slim` slimmed (their directory, and what to say of it).
    slimmed: &'a [(PathBuf, String)],
    /// The CUDA major of each `--import` package's files ([`preload::cuda_major`]).
    package_major: &'a HashMap<PathBuf, u32>,
    /// Files of other packages that the real import loaded by path, or that sit beside those
    /// ([`diagnose`]): loaded after what they need, which the process had.
    followed: &'a std::collections::HashSet<PathBuf>,
    /// The libraries the packages load first that cannot load here, by SONAME and file name:
    /// where each is, and what it lacks.
    blocked: &'a HashMap<String, (PathBuf, Vec<String>)>,
    /// The libraries the packages load first that are not found, by SONAME: the wheel that
    /// provides it, and who loads it (`cupy (cuda-pathfinder at cupy/_environment.py:410)`).
    not_loaded: &'a HashMap<String, (Option<String>, String)>,
    /// The libraries the preloads that cannot load here would bring with them (found by their
    /// own search paths), each with the first such preload.
    blocked_brings: &'a HashMap<String, String>,
    /// The libraries the preloads that cannot load here lack, each with the first such preload
    /// and where it looked.
    blocked_tried: &'a HashMap<String, (String, Vec<PathBuf>)>,
    /// The distributions installed where the imports were found (normalised names).
    installed: &'a BTreeSet<String>,
}

/// Whether `p` is one of the `followed` files, which the trace names by absolute paths while a
/// package's own files are named as the interpreter's path was given (`--python venv/bin/python`).
fn is_followed(followed: &std::collections::HashSet<PathBuf>, p: &Path) -> bool {
    followed.contains(p) || std::fs::canonicalize(p).is_ok_and(|c| followed.contains(&c))
}

/// Every check of one file, and the verdict lines it adds.
fn check_file(f: &Path, shared: &Shared, placed: crate::loads::Placed) -> Result<Checked> {
    let Shared {
        env,
        host,
        profile,
        names,
        dlopen,
        loaded_first,
        loaded_on_call,
        carried_on_demand,
        traced,
        slimmed,
        package_major,
        followed,
        blocked,
        not_loaded,
        blocked_brings,
        blocked_tried,
        installed,
    } = *shared;
    let catalog = names.catalog;
    let mut verdict = Verdict::default();
    let mut disagreements = Vec::new();
    let tier = placed.tier;
    // A file the import does not reach fails only when it is loaded; a variant, only when the
    // package picks it and the process has not loaded what it needs.
    let (fails, when) = match tier {
        crate::loads::Tier::Import => (Status::WillFailToLoad, String::new()),
        crate::loads::Tier::OnDemand => (
            Status::WillFailWhenLoaded,
            match &placed.why {
                Some(why) => format!(" (fails when it is imported: {why})"),
                None => {
                    " (fails when it is loaded: nothing the import reaches needs it)".to_string()
                }
            },
        ),
        crate::loads::Tier::Variant => (
            Status::Risky,
            " (a variant: it loads only where the process has loaded its libraries already)"
                .to_string(),
        ),
    };
    let sim = loader::simulate(f, env)
        .with_context(|| format!("cannot simulate loading {}", f.display()))?;
    // A packed file's headers are its unpacker's stub's: what the library needs is not known.
    if let Some(by) = cudist_elf::map_file(f)
        .ok()
        .and_then(|m| cudist_elf::packed_by(&m))
    {
        verdict.add(
            Status::Risky,
            format!(
                "{}: packed with {by}: its symbols and symbol versions are inside a compressed image its stub unpacks when it loads, so whether they resolve here is not known from its files (unpack it, `upx -d`, to judge it)",
                f.display()
            ),
        );
    }
    // For a profile, the driver's libraries are the profile's: present when it has a driver,
    // whatever this machine has.
    let is_driver_lib = |name: &str| catalog.driver_lib(name).is_some();
    let mut from_profile_driver = Vec::new();
    if profile {
        for r in sim.resolutions.iter().filter(|r| is_driver_lib(&r.name)) {
            if host.driver.is_some() {
                if r.path.is_none() && !from_profile_driver.contains(&r.name) {
                    from_profile_driver.push(r.name.clone());
                }
            } else if r.path.is_some() {
                verdict.add(
                    Status::WillFailToLoad,
                    format!(
                        "{}: {} (needed by {}) comes with the NVIDIA driver, and the profile has none",
                        f.display(),
                        r.name,
                        r.needed_by.display()
                    ),
                );
            }
        }
        if let Some((path, problem)) = glibc_problem(&sim, host, true) {
            verdict.add(Status::WillFailToLoad, said_of(f, path, &problem));
        }
    } else if let Some((path, problem)) = glibc_problem(&sim, host, false) {
        // On this machine the loader's own check reports a version requirement its glibc lacks;
        // a glibc symbol imported without a version only this table tells.
        verdict.add(fails, format!("{}{when}", said_of(f, path, &problem)));
    }
    // A file loaded after the import (a plugin, a provider) that needs a library of its package
    // which loads at import gets that one: glibc reuses a loaded library whose SONAME is the name
    // (triton's plugins need `libtriton.so`, the SONAME of its extension module `_C/libtriton.so`).
    let mut after_import: Vec<(String, &PathBuf)> = Vec::new();
    for m in sim.missing() {
        if after_import.iter().any(|(n, _)| n == &m.name) {
            continue;
        }
        if tier != crate::loads::Tier::Import {
            if let Some(p) = loaded_first.get(&m.name).or_else(|| traced.get(&m.name)) {
                after_import.push((m.name.clone(), p));
            } else if let Some(p) = carried_on_demand.get(&m.name).filter(|p| p.as_path() != f) {
                after_import.push((m.name.clone(), p));
            }
        } else if let Some(p) = loaded_first
            .get(&m.name)
            .filter(|p| same_top_package(f, p) && !is_extension_module(f))
        {
            // A library of a package's own (no module the import system loads) that needs
            // another library of that package by name, which the package loads at import:
            // what loads it loads that one first, or it would never load (triton's plugins need
            // `libtriton.so`; a failed import leaves them placed at import, unread).
            after_import.push((m.name.clone(), p));
        } else if let Some(p) = traced.get(&m.name) {
            // Loaded at import, yet the simulated search finds no such library: the process
            // had it (from a load the model does not know of). Reality wins, and is said; of a
            // file the model did not follow, that is how it loaded.
            if is_followed(followed, f) {
                after_import.push((m.name.clone(), p));
                continue;
            }
            disagreements.push(Unfound {
                name: m.name.clone(),
                file: f.display().to_string(),
                loaded: p.clone(),
            });
            after_import.push((m.name.clone(), p));
        }
    }
    // A file of a directory loaded whole (a plugin directory the real import loaded from) that
    // needs another one there by name gets it loaded first, as the directory's loader tries
    // again what failed (OpenMM loads libOpenMMCUDA.so before the plugins that need it, which
    // have no search path to it), and what that one loads with it (its cuFFT, through its own
    // RUNPATH).
    let mut sibling_loads: Vec<(String, PathBuf)> = Vec::new();
    // The libraries beside it that it needs by name, each simulated once.
    let beside = f.parent().unwrap_or(Path::new(""));
    let neighbours: Vec<(PathBuf, loader::Simulation)> = sim
        .missing()
        .map(|m| beside.join(&m.name))
        .filter(|p| p.as_path() != f && p.is_file())
        .collect::<BTreeSet<PathBuf>>()
        .into_iter()
        .filter_map(|p| loader::simulate(&p, env).ok().map(|s| (p, s)))
        .collect();
    // A library beside it that it needs and cannot find itself is loaded before it, or it
    // cannot load at all, and what that one needs comes with it: where that one looks for what
    // it lacks is where the fix puts it (OpenMM's CUDA plugins get cuFFT with libOpenMMCUDA.so,
    // through its RUNPATH; they have none).
    let sibling_tried: Vec<(String, Vec<PathBuf>)> = neighbours
        .iter()
        .flat_map(|(_, s)| s.missing().map(|x| (x.name.clone(), x.tried.clone())))
        .collect();
    if is_followed(followed, f) {
        for (first, s) in neighbours.iter().filter(|(p, _)| is_followed(followed, p)) {
            for o in &s.objects {
                for key in o.soname.iter().cloned().chain(
                    o.path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .map(String::from),
                ) {
                    if !sibling_loads.iter().any(|(n, _)| *n == key) {
                        sibling_loads.push((key, first.clone()));
                    }
                }
            }
        }
        sibling_loads.retain(|(n, _)| {
            sim.missing().any(|m| m.name == *n) && !after_import.iter().any(|(a, _)| a == n)
        });
        for (name, by) in &sibling_loads {
            verdict.add_cause(
                Status::Ok,
                format!("loaded first {}", by.display()),
                f.display().to_string(),
                format!(
                    "{}: needs {name}, which {} loads, loaded first from the same directory",
                    f.display(),
                    by.display()
                ),
                format!(
                    "{} is loaded first from their directory, and with it what they need of it",
                    by.display()
                ),
            );
        }
    }
    // The CUDA major of what loads, for the wheel a missing library's fix names (a -cu12
    // package's libcutensor.so.2 is cutensor-cu12's, though cuTENSOR 2 ships for CUDA 13 too).
    // A file whose own libraries span majors (cupy-cuda11x's cuSOLVER module needs only
    // libcusolver.so.11, which CUDA 11 and 12 share) takes its package's.
    let major = sim_major(&sim, catalog)
        .or_else(|| package_major.get(f).copied())
        .or_else(|| dir_major(f, catalog))
        .or_else(|| record_major(f, catalog));
    // Where any file of this load looked for a library.
    let tried_by_any = |name: &str| -> Vec<PathBuf> {
        sim.resolutions
            .iter()
            .filter(|r| r.name == name)
            .flat_map(|r| r.tried.iter().cloned())
            .chain(
                sibling_tried
                    .iter()
                    .filter(|(n, _)| n == name)
                    .flat_map(|(_, t)| t.iter().cloned()),
            )
            .collect()
    };
    // Libraries installed beside their files, out of their search path, that cannot load here
    // themselves: the fix and the root cause are what they lack.
    let mut lacking: BTreeMap<String, (String, String)> = Default::default();
    for m in sim.missing() {
        if !lacking.contains_key(&m.name) {
            let tried = tried_by_any(&m.name);
            if let Some(l) = beside_but_lacking(&m.name, &m.needed_by, &tried, major, catalog, env)
            {
                lacking.insert(m.name.clone(), l);
            }
        }
    }
    let mut missing: Vec<Missing> = sim
        .missing()
        .filter(|m| !from_profile_driver.contains(&m.name))
        .filter(|m| !after_import.iter().any(|(n, _)| n == &m.name))
        .filter(|m| !sibling_loads.iter().any(|(n, _)| n == &m.name))
        .map(|m| Missing {
            name: m.name.clone(),
            needed_by: m.needed_by.clone(),
            tried: m.tried.clone(),
            fix: if profile && is_driver_lib(&m.name) {
                Some(format!(
                    "{} comes with the NVIDIA driver, and the profile has none: install the driver there",
                    m.name
                ))
            } else if let Some((path, lacks)) = blocked.get(&m.name) {
                Some(format!(
                    "its package loads it first from {}, but that load fails here: {} not found; provide those, not a search path to {}",
                    path.display(),
                    lacks.join(", "),
                    m.name
                ))
            } else if let Some((pip, by)) = by_name_or_pattern(not_loaded, &m.name)
                .and_then(|(pip, by)| {
                    // A pattern's load names no wheel: the one that ships the library does.
                    let pip = pip.clone().or_else(|| match catalog.classify_hinted(&m.name, major) {
                        SonameClass::Toolkit(l) | SonameClass::External(l) => l.major.pip.clone(),
                        _ => None,
                    })?;
                    Some((pip, by))
                })
            {
                // A library its package loads first: installed, it is loaded before this file,
                // which gets it with no search path of its own. Where its distribution is
                // installed and the file gone, installing does nothing: the reinstall.
                let dirs: Vec<&str> = match catalog.classify_hinted(&m.name, major) {
                    SonameClass::Toolkit(l) | SonameClass::External(l) => {
                        l.major.pip_dirs().into_iter().map(|(d, _)| d).collect()
                    }
                    _ => Vec::new(),
                };
                Some(match reinstall_for(&m.name, &m.needed_by, &m.tried, &dirs) {
                    Some(advice) => format!(
                        "{advice}: {by} loads {} first, and this file gets the loaded one",
                        m.name
                    ),
                    None => format!(
                        "install {pip}: {by} loads {} first, and this file gets the loaded one",
                        m.name
                    ),
                })
            } else if let Some(fix) = blocked_tried
                .get(&m.name)
                .and_then(|(by, tried)| found_by_first(&m.name, by, tried, major, catalog))
            {
                Some(fix)
            } else if let Some((fix, _)) = lacking.get(&m.name) {
                Some(fix.clone())
            } else {
                // A library another file's search reaches (libOpenMMCUDA.so's, for cuFFT)
                // comes with that one.
                fix_for(&m.name, &m.needed_by, &tried_by_any(&m.name), major, catalog)
            },
        })
        .collect();
    // A file that lacks a library its package loads first lacks what that library brings with
    // it: libraries installed beside it that it reaches only through that load (pylibraft's
    // modules get cuSOLVER and cuBLAS with libraft.so) are no causes of their own.
    let mut brought: BTreeSet<String> = BTreeSet::new();
    let first = missing
        .iter()
        .find_map(|m| by_name_or_pattern(not_loaded, &m.name).map(|w| (m.name.clone(), w.clone())));
    for m in missing.iter_mut().filter(|m| {
        by_name_or_pattern(not_loaded, &m.name).is_none() && !blocked.contains_key(&m.name)
    }) {
        // Brought by a preload this file lacks too (not found), or by one that cannot load here
        // for want of something else (libraft.so without cuBLAS brings no cuSOLVER).
        let fix = match (&first, blocked_brings.get(&m.name)) {
            (Some((lib, (pip, by))), _) => format!(
                "it is installed, and found only with {lib}, which {by} loads first and which is not found{}",
                pip.as_ref().map(|p| format!(": install {p}")).unwrap_or_default()
            ),
            (None, Some(by)) => {
                let lacks = blocked.get(by).map(|(_, l)| l.join(", ")).unwrap_or_default();
                format!(
                    "it is installed, and found only with {by}, which its package loads first and which cannot load here: {lacks} not found"
                )
            }
            (None, None) => continue,
        };
        if installed_beside(&m.name, &m.needed_by, major, catalog).is_some() {
            m.fix = Some(fix);
            brought.insert(m.name.clone());
        }
    }
    // What the package loads first is said only where the file loads otherwise: a file that
    // fails for a library missing here gets nothing from it.
    if missing.is_empty() {
        // One line per moment the package loads them (at import; when a function runs): the
        // libraries of one file that come first are one cause (mitsuba's 100 plugins need 15).
        let mut by_when: Vec<(String, Vec<(&String, &PathBuf)>)> = Vec::new();
        for (name, p) in &after_import {
            let when = match loaded_on_call.get(name) {
                Some(trigger) => format!("first when {trigger} runs"),
                None if !loaded_first.contains_key(name.as_str())
                    && !traced.contains_key(name.as_str())
                    && carried_on_demand.contains_key(name.as_str()) =>
                {
                    "on demand, before it".to_string()
                }
                None => "at import".to_string(),
            };
            match by_when.iter_mut().find(|(w, _)| *w == when) {
                Some((_, v)) => v.push((name, *p)),
                None => by_when.push((when, vec![(name, *p)])),
            }
        }
        for (when, mut libs) in by_when {
            // In name order: files that need the same libraries in another order share the line.
            libs.sort();
            let names: Vec<&str> = libs.iter().map(|(n, _)| n.as_str()).collect();
            let (what, from, it, these) = match &libs[..] {
                [(name, p)] => (
                    format!("needs {name}, which its package loads {when}"),
                    p.display().to_string(),
                    "it loads after that, and gets the loaded one",
                    "these load after that, and get the loaded one",
                ),
                _ => {
                    let mut dirs: Vec<String> = Vec::new();
                    for (_, p) in &libs {
                        let d = p.parent().unwrap_or(p).display().to_string();
                        if !dirs.contains(&d) {
                            dirs.push(d);
                        }
                    }
                    (
                        format!(
                            "needs {} libraries its packages load {when}: {}",
                            names.len(),
                            names.join(", ")
                        ),
                        format!("from {}", dirs.join(", ")),
                        "it loads after that, and gets the loaded ones",
                        "these load after that, and get the loaded ones",
                    )
                }
            };
            verdict.add_cause(
                Status::Ok,
                format!("after import {when} {}", names.join(" ")),
                f.display().to_string(),
                format!("{}: {what} ({from}): {it}", f.display()),
                format!("{what} ({from}): {these}"),
            );
        }
    }
    let missing_syms = missing_symbols(&sim, names);
    for m in &missing_syms {
        // Where the catalog knows the first release that exports the symbol, the fix names it.
        let fix = cudist_catalog::symbols::floors_of(&m.symbol)
            .iter()
            .find(|fl| {
                catalog
                    .library(fl.library)
                    .and_then(|l| l.cuda.iter().find(|c| c.major == fl.major))
                    .is_some_and(|c| c.sonames.contains(&m.library))
            })
            .map(|fl| format!("; pip install \"{}>={}\"", fl.pip, fl.since))
            .unwrap_or_default();
        verdict.add(fails, format!(
            "{}: {} needs {}{} from {}, which {} does not define: it was built against a newer {} than the one \
             installed{when}{fix}",
            f.display(),
            m.needed_by.display(),
            m.symbol,
            m.version_suffix(),
            m.library,
            m.resolved.display(),
            m.library_stem()
        ));
    }
    // Versions required of a library that the file it resolved to lacks: ld.so stops the load
    // ("version `GLIBCXX_3.4.32' not found"). For a profile, only files outside this machine's
    // system directories are that machine's too.
    let system_here = if profile {
        system_files(&sim)
    } else {
        BTreeSet::new()
    };
    let missing_versions: Vec<loader::MissingVersion> = sim
        .missing_versions()
        .into_iter()
        .filter(|m| !profile || !system_here.contains(m.resolved.as_path()))
        .collect();
    for m in &missing_versions {
        verdict.add(
            fails,
            format!(
                "{}: {} requires version {} of {}, which {} does not define (ld.so: \"version `{}' not found\"): it was built against a newer {} than the one it finds{when}",
                f.display(),
                m.needed_by.display(),
                m.version,
                m.library,
                m.resolved.display(),
                m.version,
                m.library.split(".so").next().unwrap_or(&m.library)
            ),
        );
    }
    // A file the import does not reach that misses only another GPU vendor's runtime is that
    // vendor's build (bitsandbytes' libbitsandbytes_rocm*.so): the package loads it where it
    // finds that vendor's GPU, whose stack brings the libraries. Said, not counted.
    // Every missing library's vendor row, or none when one is not another vendor's.
    let vendor_rows: Option<Vec<&cudist_catalog::VendorLib>> = missing
        .iter()
        .map(|m| catalog.vendor_lib(&m.name))
        .collect();
    let other_vendor_build = tier != crate::loads::Tier::Import
        && !missing.is_empty()
        && missing_syms.is_empty()
        && vendor_rows.is_some();
    if other_vendor_build {
        let names: Vec<&str> = missing.iter().map(|m| m.name.as_str()).collect();
        let vendors: Vec<&str> = vendor_rows
            .iter()
            .flatten()
            .map(|v| v.vendor.as_str())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        verdict.add(
            Status::Ok,
            format!(
                "{}: a build for another GPU vendor ({}): {} {} not here, and come with that vendor's stack; the package loads this file only where it finds such a GPU",
                f.display(),
                vendors.join(" and "),
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
            ),
        );
    }
    // One root cause, one line: the SONAMEs one wheel provides (cuTENSOR's libcutensor.so.2 and
    // libcutensorMg.so.2) are said together; so are a Python package's libraries the file links
    // (torch's libc10.so, libtorch.so…) and the CUDA libraries that package's import loads
    // before them (libcudart.so.12): all come with that package (open3d's torch ops).
    let providers: Vec<&cudist_catalog::PythonProvider> = missing
        .iter()
        .filter_map(|m| catalog.python_provider(&m.name))
        .fold(Vec::new(), |mut v, p| {
            if !v
                .iter()
                .any(|q: &&cudist_catalog::PythonProvider| q.pip == p.pip)
            {
                v.push(p);
            }
            v
        });
    let mut by_wheel: Vec<(Option<String>, Vec<&Missing>)> = Vec::new();
    let mut from_provider: Vec<(&cudist_catalog::PythonProvider, Vec<&Missing>)> = Vec::new();
    for m in missing
        .iter()
        .filter(|m| !other_vendor_build && !brought.contains(&m.name))
    {
        // A library its package loads first, whose own load fails here: that is the cause. So
        // is a library of a Python package whose own libraries cannot load here (torch's
        // libc10.so where libtorch_cuda.so lacks cuBLAS): that package's import fails before it
        // loads the rest, and what it lacks is the cause, not a search path to them.
        let cause = match blocked.get(&m.name) {
            Some((path, lacks)) => Some((
                lacks,
                m.name.clone(),
                format!(
                    "needs {}, which its package loads first from {}, but that load fails here",
                    m.name,
                    path.display()
                ),
            )),
            None => catalog.python_provider(&m.name).and_then(|p| {
                p.sonames.iter().find_map(|s| {
                    blocked.get(s).map(|(path, lacks)| {
                        (
                            lacks,
                            s.clone(),
                            format!(
                                "needs {}, which comes with {}, whose import fails here before it loads it: its {s} ({}) cannot load",
                                m.name,
                                p.pip,
                                path.display()
                            ),
                        )
                    })
                })
            }),
        };
        if let Some((lacks, subject, why)) = cause {
            let listed: Vec<&str> = lacks.iter().map(String::as_str).collect();
            let lacks = lacks.join(", ");
            verdict.add_rooted(
                fails,
                format!("blocked by {lacks}"),
                Some(root_of(&listed, major, catalog)),
                f.display().to_string(),
                format!("{}: {why}: {lacks} not found{when}", f.display()),
                Several::Blocked { lacks },
                Some(subject),
            );
            continue;
        }
        let (pip, id) = match catalog.classify_hinted(&m.name, major) {
            SonameClass::Toolkit(l) | SonameClass::External(l) => {
                (l.major.pip.clone(), Some(l.library.id.as_str()))
            }
            _ => (None, None),
        };
        let provider = catalog.python_provider(&m.name).or_else(|| {
            providers
                .iter()
                .find(|p| id.is_some_and(|id| p.loads_at_import.iter().any(|l| l == id)))
                .copied()
        });
        // A CUDA library an installed provider's import loads is missing for that import too:
        // its own wheel is the fix (torch installed, nvidia-cuda-runtime-cu12 missing), not
        // the provider.
        // So is one whose own wheel is installed (its file gone, or out of the file's reach).
        let own_wheel_installed = pip
            .as_deref()
            .is_some_and(|w| installed.contains(&cudist_wheel::installed::normalise(w)));
        // Where both are installed and the library is there, the provider's import would load
        // it: what is missing is that import (kernelforge's modules, which nothing imports
        // torch for), not a search path.
        let provider = provider.filter(|p| {
            let provider_installed =
                installed.contains(&cudist_wheel::installed::normalise(&p.pip));
            p.sonames.contains(&m.name)
                || (!provider_installed && !own_wheel_installed)
                || (provider_installed
                    && own_wheel_installed
                    && installed_beside(&m.name, &m.needed_by, major, catalog).is_some())
        });
        if let Some(p) = provider {
            match from_provider.iter_mut().find(|(q, _)| q.pip == p.pip) {
                Some((_, ms)) => ms.push(m),
                None => from_provider.push((p, vec![m])),
            }
            continue;
        }
        match by_wheel
            .iter_mut()
            .find(|(p, _)| pip.is_some() && *p == pip)
        {
            Some((_, ms)) => ms.push(m),
            None => by_wheel.push((pip, vec![m])),
        }
    }
    // One line per group: the files' first that needs them, why (for a package's libraries)
    // and the fix.
    let mut say = |ms: &[&Missing], why: String, fix: String| {
        let names = distinct_names(ms);
        // A library that cannot load for what it lacks has that as its root.
        let listed: Vec<&str> = ms
            .iter()
            .map(|m| {
                lacking
                    .get(&m.name)
                    .map_or(m.name.as_str(), |(_, r)| r.as_str())
            })
            .collect();
        verdict.add_rooted(
            fails,
            format!("missing {names}"),
            Some(root_of(&listed, major, catalog)),
            f.display().to_string(),
            format!(
                "{}: {names} not found (needed by {}){why}{when}",
                f.display(),
                ms[0].needed_by.display()
            ),
            Several::Missing {
                names: names.clone(),
                fix,
            },
            None,
        );
    };
    for (_, ms) in &by_wheel {
        let fix = ms[0]
            .fix
            .as_deref()
            .map(|x| format!(" (fix: {x})"))
            .unwrap_or_default();
        // The line of one file carries its fix too, as the line over several does.
        say(ms, fix.clone(), fix);
    }
    for (p, ms) in &from_provider {
        let is_installed = installed.contains(&cudist_wheel::installed::normalise(&p.pip));
        // Installed, its library that provides them may not load here (torch without its
        // cuBLAS): importing it first then fails too, and what it lacks is the cause.
        let blocked = is_installed
            .then(|| {
                ms.iter().find_map(|m| {
                    provider_lacks(&p.pip, &m.name, &m.needed_by, env, major, catalog)
                })
            })
            .flatten();
        if let Some((why, fix)) = blocked {
            let fix = format!(" (fix: {fix}; then import {} first)", p.pip);
            say(
                ms,
                format!(
                    ": they come with {}, whose import fails here: {why}{fix}",
                    p.pip
                ),
                fix.clone(),
            );
            continue;
        }
        let fix = if is_installed {
            format!(" (fix: {} is installed: import it first)", p.pip)
        } else {
            format!(" (fix: install {} and import it first)", p.pip)
        };
        say(
            ms,
            format!(
                ": they come with {}, whose import loads them ({}); nothing here loads it first{fix}",
                p.pip, p.loaded_by
            ),
            fix.clone(),
        );
    }
    // The device code is read only when there is a GPU to judge it for, or a driver to judge a
    // linked-in runtime (no libcudart loads) against.
    let majors = cudart_majors(&sim, catalog);
    let entries = if !host.gpus.is_empty() || (majors.is_empty() && host.driver.is_some()) {
        device_code(f)
    } else {
        Vec::new()
    };
    let gpus = if host.gpus.is_empty() {
        Vec::new()
    } else {
        device::check_gpus(&entries, host, catalog)
    };
    // A package slimmed for other GPUs: why this one has no kernel image.
    let slim_note = slimmed
        .iter()
        .find(|(dir, _)| f.starts_with(dir))
        .map(|(_, what)| format!(" ({what}; the original wheel has the rest)"))
        .unwrap_or_default();
    for g in &gpus {
        let (status, note) = match g.status {
            "cubin" => continue,
            "jit" => (Status::Risky, ""),
            "no-kernel-image" => (Status::WillFailOnThisGpu, slim_note.as_str()),
            _ => (Status::WillFailOnThisGpu, ""),
        };
        verdict.add(
            status,
            format!("{}: {}: {}{note}", f.display(), g.gpu, g.detail),
        );
    }
    let mut driver_problems = device::check_driver(&majors, host, catalog);
    if majors.is_empty() && host.driver.is_some() && !entries.is_empty() {
        if let Some(linked) = static_runtime(f, &entries, names) {
            for p in device::check_driver(&[linked.cuda.major], host, catalog) {
                driver_problems.push(format!(
                    "{p} (no libcudart loads: the CUDA {} runtime is {} into the file, \
                     and its newest PTX, ISA {}, is CUDA {}'s)",
                    linked.cuda.major,
                    if linked.certain {
                        "linked"
                    } else {
                        "most likely linked"
                    },
                    linked.isa,
                    linked.cuda
                ));
            }
        }
    }
    // zstd-compressed device code needs a driver that decompresses it (CUDA 12: 550.54.14).
    if let Some(driver) = &host.driver {
        let zstd = entries
            .iter()
            .any(|e| e.codec == cudist_fatbin::Codec::Zstd);
        for m in majors.iter().filter(|_| zstd) {
            let Some(z) = catalog
                .minor_compat_floor(*m)
                .and_then(|f| f.zstd_min_driver.as_ref())
            else {
                continue;
            };
            if cudist_catalog::driver_version_key(driver) < cudist_catalog::driver_version_key(z) {
                driver_problems.push(format!(
                    "driver {driver} cannot decompress its zstd-compressed device code: CUDA {m} drivers do from {z} (nvcc --compress-mode=size or balance); update the driver, or rebuild with --compress-mode=speed"
                ));
            }
        }
    }
    for d in &driver_problems {
        verdict.add(Status::WillFailOnThisGpu, format!("{}: {d}", f.display()));
    }
    let mut dl = Vec::new();
    for name in dlopen {
        dl.push(sim.dlopen(0, name, env));
    }
    for (i, o) in sim.objects.iter().enumerate() {
        let class = o.soname.as_deref().map(|so| catalog.classify(so));
        // Any other object may load CUDA libraries itself on the first call into them
        // (trampolines, dlsym stubs: [`crate::model::LazyLoad`]).
        if matches!(class, None | Some(SonameClass::Other)) {
            for chain in lazy_names(&o.path, catalog, majors.first().copied()) {
                if chain
                    .iter()
                    .any(|name| dl.iter().any(|r: &Resolution| r.name == *name))
                {
                    continue;
                }
                // A fallback chain gets the first name that loads (one the process holds
                // already, or one the search finds); where none does, the lead is reported.
                let tried: Vec<Resolution> = chain.iter().map(|n| sim.dlopen(i, n, env)).collect();
                let found = tried.iter().position(|r| {
                    r.path.is_some()
                        || loaded_first.contains_key(&r.name)
                        || traced.contains_key(&r.name)
                });
                if let Some(r) = tried.into_iter().nth(found.unwrap_or(0)) {
                    dl.push(r);
                }
            }
        }
        // The catalog lists what a library dlopens across its CUDA majors (cuFFT 12 opens
        // libnvJitLink.so.12, cuFFT 13 libnvJitLink.so.13): keep the names of this major.
        let known: Vec<String> = match class {
            Some(SonameClass::Toolkit(m)) | Some(SonameClass::External(m)) => m
                .library
                .dlopens
                .iter()
                .filter(|d| {
                    let majors = catalog.majors_of(d);
                    majors.is_empty() || majors.contains(&m.major.major)
                })
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        for pattern in known {
            let Some(name) = dlopen_name(&o.path, &pattern) else {
                continue;
            };
            if !dl.iter().any(|r: &Resolution| r.name == name) {
                dl.push(sim.dlopen(i, &name, env));
            }
        }
    }
    // A name the process has loaded already (at import, by the package or the real import)
    // is what a later dlopen of it gets.
    for r in dl.iter_mut().filter(|r| r.path.is_none()) {
        if let Some(p) = loaded_first.get(&r.name).or_else(|| traced.get(&r.name)) {
            r.path = Some(p.clone());
            r.rule = Some(cudist_elf::loader::Rule::AlreadyLoaded);
        }
    }
    // Which library asks for each name, and whether it treats the name as optional.
    let optional = |r: &Resolution| {
        let base = r.needed_by.file_name().and_then(|n| n.to_str());
        let so = sim
            .objects
            .iter()
            .find(|o| o.path == r.needed_by)
            .and_then(|o| o.soname.as_deref())
            .or(base);
        // A renamed copy (legate's `libcufile-1ecaf17d.so.1.15.1`) is the library it copies.
        so.and_then(|so| match catalog.classify(so) {
            SonameClass::Toolkit(m) | SonameClass::External(m) => {
                Some(m.library.optional_dlopens.contains(&r.name))
            }
            _ => {
                // Renamed with its file's version (`libcufile-1ecaf17d.so.1.15.1`): the library
                // whose stem it keeps.
                let plain = cudist_catalog::strip_graft_hash(so);
                let stem = plain.split(".so").next().unwrap_or(&plain);
                catalog
                    .renamed_copy_of(so, None)
                    .map(|m| m.library)
                    .or_else(|| {
                        (plain != so)
                            .then(|| catalog.libraries.iter().find(|l| l.stem == stem))
                            .flatten()
                    })
                    .map(|l| l.optional_dlopens.contains(&r.name))
            }
        })
        .unwrap_or(false)
    };
    let mut said_elsewhere: Vec<String> = Vec::new();
    for r in dl.iter().filter(|r| r.path.is_none()) {
        // A name this load lacks already (openmm's CUDA plugins and libcufft.so.12's dlopen of
        // the libnvrtc.so.13 they link): the file never loads, and the missing library is said
        // as such; the dlopen is no second cause.
        if sim.missing().any(|m| m.name == r.name) {
            said_elsewhere.push(r.name.clone());
            continue;
        }
        // What a library loaded before this file (a package's preload, torch's libcufile)
        // opens is that library's doing: said of it, once, not of every file checked.
        let owner = if sim
            .objects
            .iter()
            .any(|o| o.path == r.needed_by && o.loaded_before_main())
        {
            said_elsewhere.push(r.name.clone());
            r.needed_by.as_path()
        } else {
            f
        };
        let driver_lib = catalog.driver_lib(&r.name);
        if driver_lib.is_some() && (host.driver.is_none() || profile) {
            // No driver here: said once, in the host notes. A profile's driver provides its
            // own libraries: this machine's are not looked for.
            said_elsewhere.push(r.name.clone());
            continue;
        }
        let by = r
            .needed_by
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // What a library itself treats as optional, or a driver library only some drivers
        // provide: said, and counts for nothing.
        // A variable the file reads, named for the library: what it names is what it opens.
        let variables = if driver_lib.is_none() {
            lazy_variables(&r.needed_by, &r.name, catalog)
        } else {
            Vec::new()
        };
        // A library opened by a name such a variable can replace, of which the file's own
        // distribution carries a copy under that name (triton's libproton.so opens libcupti.so,
        // or what TRITON_CUPTI_LIB_PATH names, and triton's Python points that at its
        // `backends/nvidia/lib/cupti` before proton starts): the package hands over its copy.
        let carried = (!variables.is_empty())
            .then(|| carried_copy(&r.needed_by, &r.name))
            .flatten();
        let not_failing = match (driver_lib.and_then(|d| d.optional.as_deref()), carried) {
            (Some(why), _) => Some((
                "optional",
                format!(
                    "{} is not here: this driver does not provide it ({why})",
                    r.name
                ),
            )),
            (None, _) if optional(r) => Some((
                "optional",
                format!(
                    "{} is not here; {by} works without it (an optional capability, which is missing)",
                    r.name
                ),
            )),
            (None, Some(copy)) => Some((
                "carried",
                format!(
                    "{by} opens {} where {} points, and its distribution carries it ({}): found when the package sets the variable",
                    r.name,
                    variables.join(" or "),
                    copy.display()
                ),
            )),
            (None, None) => None,
        };
        if let Some((kind, what)) = not_failing {
            said_elsewhere.push(r.name.clone());
            verdict.add_cause(
                Status::Ok,
                format!("{kind} {}", r.name),
                owner.display().to_string(),
                format!("{}: {what}", owner.display()),
                what,
            );
            continue;
        }
        // A library opened at run time fails the feature that opens it, on first use. The
        // driver is here (libcuda.so.1 found), so a driver library it lacks (NVML in a container
        // started without the `utility` capability) fails what opens it, not every kernel.
        let (why_one, why_several) = if driver_lib.is_some() {
            let why = "the installed driver does not provide it".to_string();
            (why.clone(), why)
        } else {
            let major = majors
                .first()
                .copied()
                .or_else(|| lazy_scan(&r.needed_by, catalog).1)
                .or_else(|| package_major.get(f).copied());
            let fix = fix_for(&r.name, &r.needed_by, &r.tried, major, catalog)
                .map(|f| format!(" (fix: {f})"))
                .unwrap_or_default();
            // A variable the file reads that nothing followed sets (symmetrix's backend module,
            // imported without the frontend that sets it).
            let unless = match variables.as_slice() {
                [] => String::new(),
                vs => format!(
                    "; unless {} holds its path: {by} reads it, and what it names is what it opens",
                    vs.join(" or ")
                ),
            };
            (
                format!(
                    "not found in the {} places its search tries{fix}{unless}",
                    r.tried.len()
                ),
                format!("not found{fix}{unless}"),
            )
        };
        verdict.add_cause(
            Status::WillFailWhenLoaded,
            format!("dlopen {}", r.name),
            owner.display().to_string(),
            format!(
                "{}: dlopen({}) from {by} will fail on first use: {why_one}",
                owner.display(),
                r.name
            ),
            format!("dlopen({}) will fail on first use: {why_several}", r.name),
        );
    }
    Ok((
        FileReport {
            path: f.display().to_string(),
            resolutions: sim.resolutions,
            missing,
            missing_symbols: missing_syms,
            missing_versions,
            gpus,
            driver_problems,
            dlopen: dl,
            dlopen_said_elsewhere: {
                said_elsewhere.sort();
                said_elsewhere.dedup();
                said_elsewhere
            },
            from_profile_driver,
            tier,
            tier_reason: placed.why,
            unused_variant: None,
        },
        verdict,
        disagreements,
    ))
}

/// Checks the files (and imports) `args` names on the host it names, or without paths the
/// machine's CUDA installations, and gives the verdict.
pub fn diagnose(args: &Options, catalog: &Catalog) -> Result<Report> {
    let mut paths = args.paths.clone();
    let python = args.python.clone().unwrap_or_else(|| "python3".into());
    // The real imports start first, each in its own process, and run while the files are read
    // ([`super::trace`]); a profile is another machine, judged from the files alone.
    let mut runs = Vec::new();
    if !args.static_only && args.host.is_none() {
        for n in &args.imports {
            runs.push(super::trace::start(&super::trace::Run {
                python: &python,
                module: n,
                ld_library_path: args.ld_library_path.as_deref(),
                timeout: args.import_timeout.unwrap_or(DEFAULT_IMPORT_TIMEOUT),
            })?);
        }
    }
    // Packages are located without running any of their code (`pyfind`): the interpreter is
    // asked only for its search path, started now so it runs while the machine is read.
    let mut pending: Vec<String> = Vec::new();
    let mut imports: Vec<(String, PathBuf)> = Vec::new();
    // How many imports away from one asked for each package is (0: asked for).
    let mut depth_of: Vec<usize> = Vec::new();
    // The modules a package asked for imports in a function (`lisatools_backend_cuda12x.pycppdetector`).
    let mut on_call_modules: Vec<String> = Vec::new();
    // The packages followed because a function looks them up with `find_spec` to use their
    // files: all their files load then, not only what their import loads.
    let mut spec_packages: BTreeSet<String> = BTreeSet::new();
    for n in &args.imports {
        match venv_package(&python, n, false) {
            Some(p) => {
                imports.push((n.clone(), p));
                depth_of.push(0);
            }
            None => pending.push(n.clone()),
        }
    }
    let path_child = if pending.is_empty() {
        None
    } else {
        Some(pyfind::start(&python)?)
    };
    let mut host = match &args.host {
        Some(h) => h.clone(),
        None => host::Host::detect(),
    };
    if host.driver_cuda.is_none() {
        host.driver_cuda = host.cuda(catalog).map(|c| c.to_string());
    }
    let mut env = LoadEnv::this_machine();
    if let Some(l) = &args.ld_library_path {
        env.ld_library_path = loader::split_path_list(l);
    }
    let mut report = Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        verdict: Verdict::default(),
        host,
        profile: args.host.is_some(),
        ld_library_path: env.ld_library_path.clone(),
        files: Vec::new(),
        runtime_loads: Vec::new(),
        imported_with: Vec::new(),
        installations: Vec::new(),
        conflicts: Vec::new(),
        imports_run: Vec::new(),
        disagreements: Vec::new(),
    };
    if report.host.driver.is_some() && report.host.gpus.is_empty() {
        report.host.notes.push("no GPU known: the device code is not checked (`--host FILE` checks it for a described machine)".into());
    }
    let path = match path_child {
        Some(child) => Some(pyfind::search_path(child, &python)?),
        None => None,
    };
    if let Some(path) = &path {
        for name in pending {
            let Some(found) = pyfind::find(path, &name) else {
                bail!(
                    "{name} is not installed for {} (looked in its search path, as import \
                     would, without running any package code)",
                    python.display()
                );
            };
            imports.push((name, found));
            depth_of.push(0);
        }
    }
    // What each imported package's own Python does at import ([`crate::loads`]): the libraries
    // it loads, and the packages it imports first (bitsandbytes imports torch), which are judged
    // too: their import runs before the package's own code, and fails the same way.
    let search_path = path.as_deref();
    // Each package directory's ELF files, listed once (a followed package is listed to decide
    // whether to follow it, then read, then checked).
    let mut elfs: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
    fn list_elfs(elfs: &mut HashMap<PathBuf, Vec<PathBuf>>, dir: &Path) -> Vec<PathBuf> {
        if let Some(v) = elfs.get(dir) {
            return v.clone();
        }
        // A directory that cannot be listed is listed again below, where its error is reported.
        let Ok(v) = crate::elf_files::loadable(dir) else {
            return Vec::new();
        };
        elfs.insert(dir.to_path_buf(), v.clone());
        v
    }
    let mut scans: Vec<(Vec<preload::Dynamic>, crate::loads::Scan, Option<u32>)> = Vec::new();
    // The CUDA major of each package: its files', else (cupyx: only cuSOLVER's
    // libcusolver.so.11, which CUDA 11 and 12 share) that of the package that imports it, which
    // is read first.
    let mut major_of_package: HashMap<String, u32> = HashMap::new();
    let mut pathfinder_tables: HashMap<
        Option<PathBuf>,
        Option<cudist_catalog::pathfinder::PathfinderTable>,
    > = HashMap::new();
    // The distributions of each site, read once (for the files a distribution installs beside
    // its package, and for what it requires).
    let mut dists: HashMap<PathBuf, Vec<cudist_wheel::installed::Installed>> = HashMap::new();
    let mut i = 0;
    while i < imports.len() {
        let dir = imports[i].1.clone();
        let site = site_of_import(&imports[i].0, &dir).map(Path::to_path_buf);
        let mut files =
            preload::dynamic(&list_elfs(&mut elfs, &dir), site.as_deref().unwrap_or(&dir));
        let sources = preload::package_sources(&dir);
        // cuda-pathfinder's own table where the package runs, else the one cudist ships.
        let pathfinder = pathfinder_tables
            .entry(site.clone())
            .or_insert_with(|| {
                let dirs: Vec<PathBuf> = search_path
                    .map(<[PathBuf]>::to_vec)
                    .unwrap_or_default()
                    .into_iter()
                    .chain(site)
                    .collect();
                crate::loads::installed_pathfinder(&dirs)
            })
            .as_ref()
            .unwrap_or(cudist_catalog::pathfinder::PathfinderTable::builtin());
        let name = &imports[i].0;
        let major = preload::cuda_major(&files, catalog).or_else(|| {
            let by = report.imported_with.iter().find(|w| w.package == *name)?;
            major_of_package.get(&by.by).copied()
        });
        if let Some(m) = major {
            major_of_package.insert(name.clone(), m);
        }
        let mut scan = crate::loads::scan_with(&sources, catalog, major, pathfinder);
        // Files built for another machine never load on this one.
        if let Some(arch) = report.host.arch.as_deref() {
            scan.preloads
                .retain(|p| !crate::loads::names_another_machine(&p.name, arch));
        }
        // The extension modules its distribution installs beside it that its code imports
        // (nvidia-resiliency-ext's `nvrx_cupti_module`): its files, placed as its imports say.
        if let Some(site) = site_of_import(name, &dir).filter(|_| depth_of[i] == 0) {
            let here = dists
                .entry(site.to_path_buf())
                .or_insert_with(|| cudist_wheel::installed::scan_names(site).unwrap_or_default());
            // An extension module its code imports, by its path below the site.
            let imported = |f: &Path| {
                f.strip_prefix(site)
                    .ok()
                    .and_then(|r| r.to_str())
                    .and_then(crate::loads::extension_module)
                    .is_some_and(|m| scan.modules.contains_key(&m))
            };
            let beside: Vec<PathBuf> = beside_package(site, here, name)
                .into_iter()
                .filter(|f| imported(f))
                .collect();
            // And those of the packages above a submodule's (`import a.b` runs `a` first, and
            // `a.b` may import `a`'s extension modules: pennylane_lightning.lightning_tensor
            // imports `pennylane_lightning.lightning_tensor_ops`).
            let above: Vec<PathBuf> = parents_between(site, &dir)
                .iter()
                .flat_map(|p| crate::elf_files::loadable_in(p, &imported))
                .collect();
            let beside: Vec<PathBuf> = beside.into_iter().chain(above).collect();
            if let Some(listed) = elfs.get_mut(&dir).filter(|_| !beside.is_empty()) {
                files.extend(preload::dynamic(&beside, site));
                listed.extend(beside);
            }
        }
        let depth = depth_of[i];
        if depth < MAX_FOLLOW {
            for (module, at) in &scan.imports {
                if imports.iter().any(|(n, _)| n == module) {
                    continue;
                }
                let Some(found) = outside_package(&python, search_path, module) else {
                    continue;
                };
                // Only packages with ELF files can fail to load, or import one that can.
                if list_elfs(&mut elfs, &found).is_empty() {
                    continue;
                }
                report.imported_with.push(ImportedWith {
                    package: module.clone(),
                    by: imports[i].0.clone(),
                    at: at.clone(),
                    path: found.clone(),
                    plugin: None,
                    on_call: None,
                });
                imports.push((module.clone(), found));
                depth_of.push(depth + 1);
            }
            // The packages its code imports only when a function runs (lisatools'
            // `cuda12x_module_loader()` imports `lisatools_backend_cuda12x`): their files load
            // on first use, and what they lack fails then.
            // Only from a package asked for, through a function it has (what a module the
            // import never reaches imports is too far from any use to judge), and no further.
            let own_top = imports[i]
                .0
                .split('.')
                .next()
                .unwrap_or_default()
                .to_string();
            for (module, how) in scan.modules.iter().filter(|_| depth == 0) {
                let crate::pysource::ImportedAt::OnCall {
                    at,
                    function: Some(function),
                    ..
                } = how
                else {
                    continue;
                };
                let top = module.split('.').next().unwrap_or_default();
                if top == own_top || first_use_full(&report) {
                    continue;
                }
                let Some(found) = package_dir(&python, search_path, top) else {
                    continue;
                };
                on_call_modules.push(module.clone());
                if imports.iter().any(|(n, _)| n == top) {
                    continue;
                }
                if list_elfs(&mut elfs, &found).is_empty() {
                    continue;
                }
                report.imported_with.push(ImportedWith {
                    package: top.to_string(),
                    by: imports[i].0.clone(),
                    at: at.clone(),
                    path: found.clone(),
                    plugin: None,
                    on_call: Some(format!("{function}()")),
                });
                imports.push((top.to_string(), found));
                depth_of.push(MAX_FOLLOW);
            }
            // The packages its functions look up with `find_spec` to use their files (bartorch's
            // `find_spec(f"bartorch_cuda{major}")`, then `libbartorch.so` from there): their
            // files load on first use too. A pattern stands for each package of the site whose
            // name it matches.
            let site_dir = dir.parent().map(Path::to_path_buf);
            for spec in scan.found_specs.iter().filter(|_| depth == 0) {
                let tops: Vec<String> = if spec.module.contains('*') {
                    let top_pattern = spec.module.split('.').next().unwrap_or_default();
                    let Ok(pattern) = glob::Pattern::new(top_pattern) else {
                        continue;
                    };
                    let mut names: Vec<String> = site_dir
                        .as_deref()
                        .and_then(|d| std::fs::read_dir(d).ok())
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter(|e| e.path().is_dir())
                        .filter_map(|e| e.file_name().into_string().ok())
                        .filter(|n| !n.contains('-') && pattern.matches(n))
                        .collect();
                    names.sort();
                    names.truncate(MAX_PLUGINS);
                    names
                } else {
                    vec![spec
                        .module
                        .split('.')
                        .next()
                        .unwrap_or_default()
                        .to_string()]
                };
                for top in tops {
                    if top == own_top
                        || imports.iter().any(|(n, _)| *n == top)
                        || first_use_full(&report)
                    {
                        continue;
                    }
                    let Some(found) = package_dir(&python, search_path, &top) else {
                        continue;
                    };
                    if list_elfs(&mut elfs, &found).is_empty() {
                        continue;
                    }
                    report.imported_with.push(ImportedWith {
                        package: top.clone(),
                        by: imports[i].0.clone(),
                        at: format!("{}, find_spec: its files are used then", spec.at),
                        path: found.clone(),
                        plugin: None,
                        on_call: Some(format!("{}()", spec.function)),
                    });
                    spec_packages.insert(top.clone());
                    imports.push((top, found));
                    depth_of.push(MAX_FOLLOW);
                }
            }
            // Its plugins: the modules installed distributions register in the entry-point
            // groups its code reads, wherever the interpreter finds distributions.
            let mut sites: Vec<&Path> = Vec::new();
            for site in dir
                .parent()
                .into_iter()
                .chain(search_path.unwrap_or_default().iter().map(PathBuf::as_path))
            {
                if !sites.contains(&site) {
                    sites.push(site);
                }
            }
            for crate::loads::PluginGroup {
                group,
                at,
                goes_on_without,
            } in &scan.plugin_groups
            {
                for site in &sites {
                    let Ok(eps) = cudist_wheel::installed::entry_points(site, group) else {
                        continue;
                    };
                    for ep in eps {
                        if imports.iter().any(|(n, _)| *n == ep.module) {
                            continue;
                        }
                        // An environment nobody vetted may register any number.
                        if first_use_full(&report) {
                            break;
                        }
                        let Some(found) = outside_package(&python, search_path, &ep.module) else {
                            continue;
                        };
                        if list_elfs(&mut elfs, &found).is_empty() {
                            continue;
                        }
                        report.imported_with.push(ImportedWith {
                            package: ep.module.clone(),
                            by: imports[i].0.clone(),
                            at: at.clone(),
                            path: found.clone(),
                            plugin: Some(format!(
                                "entry point {} of {}, group {group}{}",
                                ep.name,
                                ep.dist,
                                if *goes_on_without {
                                    format!(
                                        "; {} catches a plugin's failure and goes on without it",
                                        imports[i].0
                                    )
                                } else {
                                    String::new()
                                }
                            )),
                            on_call: None,
                        });
                        imports.push((ep.module.clone(), found));
                        depth_of.push(depth + 1);
                    }
                }
            }
        }
        scans.push((files, scan, major));
        i += 1;
    }
    // What a package's Python hands on in a variable that a file of any package followed reads
    // (symmetrix sets `SYMMETRIX_JIT_NVRTC_LIBRARY` for its CUDA backend's module) is loaded as
    // that Python finds it.
    if scans.iter().any(|(_, scan, _)| !scan.handoffs.is_empty()) {
        let read: BTreeSet<String> = scans
            .iter()
            .flat_map(|(files, _, _)| files)
            .flat_map(|d| lazy_scan(&d.path, catalog).0)
            .flat_map(|(_, _, _, variables)| variables)
            .collect();
        for (_, scan, _) in &mut scans {
            scan.hand_over(&read);
        }
    }
    paths.extend(imports.iter().map(|(_, d)| d.clone()));
    for r in runs {
        report.imports_run.push(super::trace::finish(r)?);
    }
    // A package the model has imported only when a function runs, whose files the real import
    // of the package that imports it mapped, is imported at import by some module that import
    // ran (gbgpu imports cupy in a loader function, and gpubackendtools, a pure-Python package
    // gbgpu imports, imports it at module level): said so, not as on first use.
    let mapped_under = |by: &str, dir: &Path| {
        // The process maps absolute paths; the directory may be given relative.
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        report.imports_run.iter().any(|t| {
            t.ok && t.module == by.split('.').next().unwrap_or(by)
                && t.loaded.iter().any(|l| l.path.starts_with(&dir))
        })
    };
    let at_import: Vec<bool> = report
        .imported_with
        .iter()
        .map(|w| w.plugin.is_none() && w.on_call.is_some() && mapped_under(&w.by, &w.path))
        .collect();
    for (w, at_import) in report.imported_with.iter_mut().zip(at_import) {
        if at_import {
            w.on_call = None;
            w.at = "a module its real import ran".to_string();
        }
    }
    let traces = &report.imports_run;
    // The run of the import asked for that a package's import is part of (a package followed
    // into is imported by the run of the one that imports it).
    let trace_of = |name: &str| -> Option<&super::trace::ImportTrace> {
        let mut name = name;
        for _ in 0..=MAX_FOLLOW {
            match report.imported_with.iter().find(|w| w.package == name) {
                Some(w) => name = &w.by,
                None => break,
            }
        }
        traces.iter().find(|t| t.module == name)
    };
    // What the real imports left loaded, by SONAME and file name.
    let mut traced: HashMap<String, PathBuf> = HashMap::new();
    for t in traces {
        for l in &t.loaded {
            for key in l
                .soname
                .iter()
                .map(String::as_str)
                .chain(l.path.file_name().and_then(|n| n.to_str()))
            {
                traced
                    .entry(key.to_string())
                    .or_insert_with(|| l.path.clone());
            }
        }
    }
    let mut disagreements: Vec<String> = Vec::new();
    for (name, dir) in &imports {
        if let Some(site) = site_of_import(name, dir) {
            dists
                .entry(site.to_path_buf())
                .or_insert_with(|| cudist_wheel::installed::scan_names(site).unwrap_or_default());
        }
    }
    // Shared objects a package's distribution installed (its RECORD lists them) that are gone:
    // the install is broken, and what loads them fails, whether or not a model knows the load
    // (wgpu opens its `libwgpu_native-release.so` through cffi on first use). Said once the
    // package's files are read ([`gone_from_install`]).
    let mut gone: Vec<(String, Vec<String>)> = Vec::new();
    for (name, dir) in &imports {
        let Some(site) = site_of_import(name, dir) else {
            continue;
        };
        let top = name.split('.').next().unwrap_or(name);
        let prefix = format!("{top}/");
        for (dist, paths) in site_records(site).iter() {
            let missing: Vec<String> = paths
                .iter()
                .filter(|p| p.starts_with(&prefix) && !p.contains(".."))
                .filter(|p| {
                    super::trace::is_shared_object(Path::new(p.as_str())) && !site.join(p).exists()
                })
                .cloned()
                .collect();
            if !missing.is_empty() && !gone.iter().any(|(d, _)| d == dist) {
                gone.push((dist.clone(), missing));
            }
        }
    }
    // A module the real import found missing (`No module named 'jzfmm_cuda'`) whose files a
    // distribution installed (its RECORD lists them) and that are gone: the install is broken,
    // and the reinstall restores it (a backend wheel's directory moved or deleted).
    let mut sites_seen: Vec<&Path> = Vec::new();
    for (name, dir) in &imports {
        if let Some(site) = site_of_import(name, dir) {
            if !sites_seen.contains(&site) {
                sites_seen.push(site);
            }
        }
    }
    for t in &report.imports_run {
        let Some(module) = t
            .error
            .as_deref()
            .and_then(|e| e.strip_prefix("ModuleNotFoundError: No module named '"))
            .and_then(|e| e.split('\'').next())
        else {
            continue;
        };
        let top = module.split('.').next().unwrap_or(module);
        if !is_module_word(top) {
            continue;
        }
        for site in &sites_seen {
            for (dist, paths) in site_records(site).iter() {
                let missing: Vec<&String> = paths
                    .iter()
                    .filter(|p| {
                        (p.starts_with(&format!("{top}/")) || p.as_str() == format!("{top}.py"))
                            && !p.contains("..")
                            && !site.join(p.as_str()).exists()
                    })
                    .collect();
                if missing.is_empty() {
                    continue;
                }
                report.verdict.add(
                    Status::WillFailToLoad,
                    format!(
                        "module {top}, which {dist} installs (its RECORD lists {} file(s) of it), is gone: the import of {} fails on it; reinstall it (`pip install --force-reinstall --no-deps {dist}`)",
                        missing.len(),
                        t.module
                    ),
                );
            }
        }
    }
    // A CUDA wheel the package's distribution requires outright (on Linux, under no extra) that
    // is not installed: the package loads its libraries itself, by names its files may not show
    // (cupti-python requires nvidia-cuda-cupti and loads libcupti through cuda-pathfinder from
    // compiled code), so what uses them fails on first use. pip would have installed it: the
    // install is broken (`pip check` says so too).
    for ((name, dir), depth) in imports.iter().zip(&depth_of) {
        let Some(site) = site_of_import(name, dir).filter(|_| *depth == 0) else {
            continue;
        };
        let here = &dists[site];
        for d in providers(here, name) {
            let Ok(meta) =
                cudist_fs::read_bounded(&d.dist_info.join("METADATA"), cudist_fs::SMALL_FILE)
            else {
                continue;
            };
            let meta = String::from_utf8_lossy(&meta);
            for r in meta
                .lines()
                .take_while(|l| !l.is_empty())
                .filter_map(|l| l.strip_prefix("Requires-Dist:"))
                .filter_map(|r| crate::requirements::ReqName::parse(r.trim()))
                .filter(|r| r.on_linux && r.in_extra.is_none())
            {
                // The wheel's libraries, where it installs them.
                let provides: Vec<(&str, &str)> =
                    crate::requirements::majors_of_wheel(catalog, &r.name)
                        .flat_map(|m| {
                            let dirs = m.pip_dirs();
                            m.sonames.iter().flat_map(move |so| {
                                dirs.clone().into_iter().map(move |(d, _)| (d, so.as_str()))
                            })
                        })
                        .collect();
                let installed = here
                    .iter()
                    .any(|x| cudist_wheel::installed::normalise(&x.name) == r.name);
                // Its files there without its metadata (a tree put together by hand), or a conda
                // environment that provides the libraries: not missing.
                let files_there = provides
                    .iter()
                    .any(|(d, so)| site.join(d).join(so).exists());
                let conda = std::env::var_os("CONDA_PREFIX").is_some();
                if !provides.is_empty() && !installed && !files_there && !conda {
                    report.verdict.add_rooted(
                        Status::WillFailWhenLoaded,
                        format!("requires {}", r.name),
                        Some(r.name.clone()),
                        d.name.clone(),
                        format!(
                            "{} requires {}, which is not installed here: what loads its libraries fails on first use; install {}",
                            d.name, r.name, r.name
                        ),
                        Several::Unmet {
                            pip: r.name.clone(),
                        },
                        None,
                    );
                }
            }
        }
    }
    // Known packages load CUDA libraries themselves before importing the modules that link
    // them: find those as their loader would, and treat them as loaded.
    let mut preload = Vec::new();
    // Preloads found where the package looks that the real import did not load.
    let mut failed_preloads: Vec<PathBuf> = Vec::new();
    let mut loaded_on_call: HashMap<String, (PathBuf, String)> = HashMap::new();
    for (name, dir) in &imports {
        let Some(site) = site_of_import(name, dir) else {
            continue;
        };
        let Some(pkg) = known_package(&dists[site], name, catalog) else {
            continue;
        };
        if report.runtime_loads.iter().any(|l| l.package == pkg.pip) {
            continue;
        }
        let mut loads = runtime_loads(pkg, site, &env, catalog);
        for l in &mut loads {
            match &l.path {
                Some(p) => {
                    // A load on first use (cupy's, before the module that links it) is not the
                    // import's to confirm: it stays loaded for the modules it comes before.
                    let on_use = pkg.when == cudist_catalog::LoadTime::OnUse;
                    if on_use || loaded_at_import(trace_of(name), p, &l.soname, &mut disagreements)
                    {
                        preload.push(p.clone());
                    } else {
                        l.not_loaded = true;
                    }
                }
                None => {
                    let on_use = (pkg.when == cudist_catalog::LoadTime::OnUse)
                        .then(|| pkg.on_use.as_deref().unwrap_or("on first use"));
                    let advice = l
                        .pip
                        .as_deref()
                        .map(|p| install_advice(&dists[site], name, &l.soname, p, catalog));
                    let reason = not_found(
                        &l.package,
                        &imported_by(&report.imported_with, name),
                        &l.soname,
                        on_use,
                        &l.loader,
                        &l.tried,
                        &advice
                            .map(|a| format!("install {a}"))
                            .into_iter()
                            .collect::<Vec<_>>(),
                    );
                    let status = if on_use.is_some() {
                        Status::WillFailWhenLoaded
                    } else {
                        Status::WillFailToLoad
                    };
                    reality(
                        trace_of(name),
                        &l.soname,
                        (status, on_use.is_none()),
                        reason,
                        &mut disagreements,
                        catalog,
                    )
                    .apply(&mut preload, &mut report.verdict);
                }
            }
        }
        report.runtime_loads.extend(loads);
    }
    let plugins: Vec<ImportedWith> = report
        .imported_with
        .iter()
        .filter(|w| w.on_first_use())
        .cloned()
        .collect();
    let is_plugin = |name: &str| plugins.iter().any(|w| w.package == name);
    // The CUDA major of each package's files, for a file whose own libraries do not tell.
    let mut package_major: HashMap<PathBuf, u32> = HashMap::new();
    // The libraries each package's Python loads at import, found where its code finds them.
    let mut package_preloads: Vec<crate::loads::Preload> = Vec::new();
    // The CUDA libraries each package looks for by a bare name (`ctypes.util.find_library`, a
    // `ctypes.CDLL` subclass of its own).
    let mut package_finds: Vec<(String, crate::loads::Find)> = Vec::new();
    let mut package_files: Vec<preload::Dynamic> = Vec::new();
    let mut package_modules: BTreeMap<String, crate::pysource::ImportedAt> =
        std::collections::BTreeMap::new();
    // What each followed package's functions load when called, for the packages that call them
    // at import (cuopt calls `libcuopt.load_library()`, which loads libcuopt.so through ctypes):
    // (package, its directory, the loads of its functions).
    let loads_on_call: Vec<(String, PathBuf, Vec<crate::loads::Preload>)> = imports
        .iter()
        .zip(&scans)
        .map(|((n, d), (_, scan, _))| {
            let on_call = scan
                .preloads
                .iter()
                .filter(|p| p.on_call.is_some())
                .cloned()
                .collect();
            (n.clone(), d.clone(), on_call)
        })
        .collect();
    for ((name, dir), (files, scan, major)) in imports.iter().zip(scans) {
        let Some(site) = site_of_import(name, dir) else {
            continue;
        };
        // Its own loads, each found from its own directory, then what the functions of other
        // packages it calls at import load, found from theirs.
        let mut found: Vec<(crate::loads::Preload, PathBuf)> = scan
            .preloads
            .into_iter()
            .map(|p| (p, dir.clone()))
            .collect();
        for call in &scan.outside_calls {
            let Some((_, their_dir, theirs)) =
                loads_on_call.iter().find(|(n, ..)| *n == call.module)
            else {
                continue;
            };
            for p in theirs
                .iter()
                .filter(|p| p.on_call.as_deref() == Some(call.function.as_str()))
            {
                let p = crate::loads::Preload {
                    at_import: true,
                    on_call: None,
                    optional: p.optional || call.optional,
                    if_present: p.if_present && !call.optional,
                    loaded_at: format!("{} (called at {})", p.loaded_at, call.at),
                    ..p.clone()
                };
                if !found.iter().any(|(q, _)| q.name == p.name && q.at_import) {
                    found.push((p, their_dir.clone()));
                }
            }
        }
        // Which wheel provides a library the package cannot find: the one of the CUDA major
        // it declares (rmm-cu12 requires librmm-cu12), else of the major its files link.
        let declared = declared_requirements(&dists[site], name);
        // Where its files do not say (a static runtime, libraries every major ships), the
        // distribution does: `nvidia-nvcomp-cu12`, or the CUDA wheels it requires.
        // Those named like it, else those whose RECORD lists its files (nvshmem4py-cu12
        // installs `nvshmem/`).
        let major = major.or_else(|| {
            let rel = dir
                .strip_prefix(site)
                .ok()
                .map(|r| format!("{}/", r.display()))?;
            let mut by: Vec<&cudist_wheel::installed::Installed> =
                providers(&dists[site], name).collect();
            if by.is_empty() {
                by = dists[site]
                    .iter()
                    .filter(|d| record_lists(&d.dist_info, &rel))
                    .collect();
            }
            let said: BTreeSet<u32> = by
                .into_iter()
                .filter_map(|d| {
                    crate::artifact::distribution_major(Some(&d.name), &d.requires, catalog)
                })
                .collect();
            match said.into_iter().collect::<Vec<u32>>()[..] {
                [one] => Some(one),
                _ => None,
            }
        });
        if let Some(m) = major {
            for f in &files {
                package_major.insert(f.path.clone(), m);
            }
        }
        // What the package's own functions load when called, where they find it: the package's
        // API calls them before what needs the library runs (nvshmem4py's init(), get_version()
        // load nvshmem_host through cuda-pathfinder before its bindings dlopen it).
        for (p, from) in found
            .iter()
            .filter(|(p, _)| !p.at_import && p.on_call.is_some())
        {
            for f in preload::find(p, from, site, &env, catalog) {
                let Some(path) = f.path else { continue };
                // A pattern's match is known by its own names: its file's, and its SONAME.
                let keys: Vec<String> = if f.name.contains(['*', '?', '[']) {
                    let soname = preload::dynamic(std::slice::from_ref(&path), site)
                        .first()
                        .and_then(|d| d.soname().map(String::from));
                    path.file_name()
                        .and_then(|n| n.to_str())
                        .map(String::from)
                        .into_iter()
                        .chain(soname)
                        .collect()
                } else {
                    vec![f.name]
                };
                for key in keys {
                    loaded_on_call
                        .entry(key)
                        .or_insert((path.clone(), p.trigger()));
                }
            }
        }
        for (p, from) in found.iter().filter(|(p, _)| p.at_import) {
            let mut founds = preload::find(p, from, site, &env, catalog);
            // A pattern that matches nothing, loaded at import (where it is found first too: the
            // code may raise when nothing was found), and a real import that failed naming its
            // library (transformer-engine's "cublas shared object not found."): the library it
            // stands for, of the package's CUDA major, is missing.
            // (The start of a name before its wildcards, without `.so`: `libcudart.so*`,
            // moreau-cuda13's, and torch's `libnccl.so.*[0-9]` stand for their libraries as
            // `libcudart*.so*` does.)
            let head = p.name.split(['*', '?', '[']).next().unwrap_or_default();
            let head = head.trim_end_matches('.');
            let stem = head.strip_suffix(".so").unwrap_or(head);
            let word = stem.strip_prefix("lib").unwrap_or_default();
            let mut failed_here = false;
            let failed_on = |t: &&super::trace::ImportTrace| {
                !t.ok && word.len() >= 3 && t.error.as_deref().is_some_and(|e| e.contains(word))
            };
            if founds.is_empty()
                && p.at_import
                && p.name.contains(['*', '?', '['])
                && trace_of(name).filter(failed_on).is_some()
            {
                // The SONAME the package's files link, where one does (moreau-cuda13's
                // extension links libcudss.so.0, which nvidia-cudss-cu13 0.7 installs; 0.8
                // installs libcudss.so.1), else the newest its major's wheel installs.
                let so = catalog
                    .libraries
                    .iter()
                    .find(|l| l.stem == stem)
                    .and_then(|l| {
                        l.cuda
                            .iter()
                            .filter(|m| major.is_none_or(|x| x == m.major))
                            .flat_map(|m| &m.sonames)
                            .find(|so| files.iter().any(|d| d.links(so)))
                            .map(String::as_str)
                            .or_else(|| l.newest_wheel_soname(major).map(|(so, _)| so))
                    });
                if let Some(so) = so {
                    founds.push(preload::Found {
                        name: so.to_string(),
                        path: None,
                        found_by: None,
                        tried: catalog
                            .pip_dirs_of(so)
                            .into_iter()
                            .map(|d| site.join(d).join(so))
                            .collect(),
                    });
                    failed_here = true;
                }
            }
            // A pattern's other matches are loads only where the real import made them (the
            // code may load every file it matches, or the first): where it ran to its end, the
            // ones it mapped, else the first.
            if let Some(t) = trace_of(name).filter(|t| t.ok && p.name.contains(['*', '?', '['])) {
                let mapped = |f: &preload::Found| f.path.as_deref().is_some_and(|q| t.mapped(q));
                if founds.iter().any(mapped) {
                    founds.retain(mapped);
                } else {
                    founds.truncate(1);
                }
            }
            // A wheel's own loader loads the file its wheel installs, one of the library's
            // SONAMEs (nvidia-libnvcomp 6 installs libnvcomp.so.6, 5 installed .so.5), and
            // cuda-pathfinder the first of its candidates it finds (`libnvrtc.so.13 or
            // libnvrtc.so.12`, where the package's major is not known): per library, the
            // others are not failures, and where none is found, one line says so, of the
            // package's CUDA major. (Other libraries of the same call are loads of their own:
            // libraft.so missing where libcugraph's loader finds libcugraph.so.)
            if p.mechanism != crate::loads::Mechanism::Ctypes {
                // What the same call loads and finds (libcudf.load_library() loads libcudf.so,
                // which links libnvcomp.so.5): a library of several SONAMEs is the one those link.
                let found_paths: Vec<PathBuf> =
                    founds.iter().filter_map(|f| f.path.clone()).collect();
                let loaded_with = preload::dynamic(&found_paths, site);
                let library = |f: &preload::Found| {
                    catalog
                        .library_by_name(&f.name)
                        .map_or_else(|| f.name.clone(), |(m, _)| m.library.id.clone())
                };
                let mut groups: Vec<(String, Vec<preload::Found>)> = Vec::new();
                for f in founds {
                    let id = library(&f);
                    match groups.iter_mut().find(|(g, _)| *g == id) {
                        Some((_, v)) => v.push(f),
                        None => groups.push((id, vec![f])),
                    }
                }
                founds = Vec::new();
                for (_, mut group) in groups {
                    if group.iter().any(|f| f.path.is_some()) {
                        group.retain(|f| f.path.is_some());
                        if p.mechanism == crate::loads::Mechanism::CudaPathfinder {
                            group.truncate(1);
                        }
                        founds.extend(group);
                        continue;
                    }
                    let of_major = |f: &preload::Found| {
                        major.is_some_and(|m| catalog.majors_of(&f.name).contains(&m))
                    };
                    // The one the package's files link, where one does.
                    let linked = group.iter().position(|f| {
                        (major.is_none() || of_major(f))
                            && files.iter().chain(&loaded_with).any(|d| d.links(&f.name))
                    });
                    let keep = linked
                        .or_else(|| group.iter().rposition(of_major))
                        .unwrap_or(group.len().saturating_sub(1));
                    founds.extend(group.into_iter().skip(keep).take(1));
                }
            }
            for f in founds {
                let mut not_loaded = false;
                // Loaded already by another load of the package (a pattern's matches are files
                // of their own).
                let pattern = f.name.contains(['*', '?', '[']);
                if report.runtime_loads.iter().any(|l| {
                    l.soname == f.name && l.path.is_some() && (!pattern || l.path == f.path)
                }) {
                    continue;
                }
                let pip = wheel_for(&f.name, &declared, major, catalog);
                match &f.path {
                    Some(path) => {
                        if loaded_at_import(trace_of(name), path, &f.name, &mut disagreements) {
                            preload.push(path.clone());
                        } else {
                            failed_preloads.push(path.clone());
                            not_loaded = true;
                        }
                    }
                    None => {
                        // Installed, its file gone: reinstall; else install.
                        let advice =
                            reinstall_for(&f.name, from, &f.tried, &catalog.pip_dirs_of(&f.name))
                                .or_else(|| {
                                    pip.as_deref().map(|p| {
                                        format!(
                                            "install {}",
                                            install_advice(&dists[site], name, &f.name, p, catalog)
                                        )
                                    })
                                });
                        // A load whose failure the package catches leaves the import working:
                        // what needs the library fails when used.
                        let caught = (p.optional && !failed_here).then_some(if p.if_present {
                            "the code loads it only where it finds it: the import goes on \
                             without it, and what needs it fails when used"
                        } else {
                            "the call is inside `try … except`: the import goes on without it, \
                             and what needs it fails when used"
                        });
                        let reason = not_found(
                            name,
                            &imported_by(&report.imported_with, name),
                            &f.name,
                            None,
                            &p.place(),
                            &f.tried,
                            &caught
                                .map(str::to_string)
                                .into_iter()
                                .chain(advice.clone())
                                .collect::<Vec<_>>(),
                        );
                        // A plugin's import runs on first use: what it misses fails then.
                        let status = if (p.optional && !failed_here) || is_plugin(name) {
                            Status::WillFailWhenLoaded
                        } else {
                            Status::WillFailToLoad
                        };
                        // Several packages that load one missing library first are one cause,
                        // and one with the files that need it (its wheel is the root).
                        match reality(
                            trace_of(name),
                            &f.name,
                            (status, true),
                            reason,
                            &mut disagreements,
                            catalog,
                        ) {
                            Reality::Fails(status, reason) => report.verdict.add_rooted(
                                status,
                                format!("not loaded {}", f.name),
                                Some(root_of(&[f.name.as_str()], major, catalog)),
                                format!("{name}{}", imported_by(&report.imported_with, name)),
                                reason,
                                Several::NotLoaded {
                                    soname: f.name.clone(),
                                    install: advice.clone().unwrap_or_default(),
                                },
                                Some(p.place()),
                            ),
                            other => other.apply(&mut preload, &mut report.verdict),
                        }
                    }
                }
                // Not found where this call looks, and mapped by the real import all the same
                // (from where another load of the package found it: onnxruntime's library, by
                // the glob the next lines try): what the process has is listed, not "not found".
                let (path, found_by) = match f.path {
                    Some(path) => (Some(path), f.found_by),
                    None => match trace_of(name).and_then(|t| {
                        t.loaded
                            .iter()
                            .find(|l| l.soname.as_deref() == Some(f.name.as_str()))
                    }) {
                        Some(l) => (
                            Some(l.path.clone()),
                            Some(match &l.by {
                                Some(by) => format!("the real import loaded it, at {by}"),
                                None => "the real import loaded it".to_string(),
                            }),
                        ),
                        None => (None, f.found_by),
                    },
                };
                report.runtime_loads.push(RuntimeLoad {
                    package: name.clone(),
                    loader: match p.mechanism {
                        crate::loads::Mechanism::Ctypes => format!("ctypes at {}", p.place()),
                        crate::loads::Mechanism::CudaPathfinder => {
                            format!("cuda-pathfinder at {}", p.place())
                        }
                        crate::loads::Mechanism::PackageLoader => p.place(),
                        crate::loads::Mechanism::Environment => format!("Python at {}", p.place()),
                    },
                    soname: f.name,
                    path,
                    found_by,
                    tried: f.tried,
                    pip,
                    not_loaded,
                });
            }
        }
        // A load on first use by a CUDA library's linker name (`ctypes.CDLL("libcudart.so")`
        // in a function): CUDA wheels install only the SONAME (`libcudart.so.13`); the linker
        // name comes with a toolkit's development files. Where none is found, the use fails.
        for (p, _) in found
            .iter()
            .filter(|(p, _)| !p.at_import && p.sonames.is_empty())
        {
            let Some(lib) = catalog.library_by_linker_name(&p.name) else {
                continue;
            };
            let Some(f) = preload::find(p, dir, site, &env, catalog)
                .into_iter()
                .find(|f| f.path.is_none())
            else {
                continue;
            };
            let soname = lib.newest_wheel_soname(major);
            let wheels = match soname {
                Some((so, pip)) => format!("{pip} installs {so}, not this name"),
                None => "CUDA wheels install SONAMEs, not this name".to_string(),
            };
            report.verdict.add(
                Status::WillFailWhenLoaded,
                format!(
                    "{name} loads {} by its linker name when {} runs ({}): not found in the {} place(s) its search tries; {wheels}: only a CUDA toolkit's development files have it, so what needs it fails when used{}",
                    p.name,
                    p.trigger(),
                    p.place(),
                    f.tried.len(),
                    if p.optional {
                        " (the call is inside `try … except`)"
                    } else {
                        ""
                    }
                ),
            );
        }
        package_preloads.extend(found.into_iter().map(|(p, _)| p));
        package_finds.extend(scan.finds.iter().map(|f| (name.clone(), f.clone())));
        package_files.extend(files);
        crate::pysource::merge_modules(&mut package_modules, scan.modules);
    }
    // A preload that cannot load itself (cupy's cuTENSOR where cuBLASLt is missing) is not
    // loaded: its loader's dlopen fails, and what needs it is judged without it. The order the
    // preloads are listed in is not always the order a package's loaders run in (RAPIDS' loaders
    // load cuBLAS before libraft), so each is tried with every other that loads, until no more
    // does.
    // What the real imports mapped is loaded too, whatever the model says loads it (openmm's
    // libOpenMM.so, which its plugin loader had loaded before libOpenMMOpenCL.so's turn).
    let mapped: Vec<PathBuf> = report
        .imports_run
        .iter()
        .flat_map(|t| t.loaded.iter().map(|l| l.path.clone()))
        .filter(|p| p.is_file())
        .collect();
    let with_mapped =
        |loaded: &[PathBuf]| -> Vec<PathBuf> { mapped.iter().chain(loaded).cloned().collect() };
    let mut loaded: Vec<PathBuf> = Vec::new();
    let mut waiting: Vec<PathBuf> = preload;
    loop {
        let mut progress = false;
        let mut still = Vec::new();
        for p in std::mem::take(&mut waiting) {
            env.set_preload(with_mapped(&loaded));
            let ok = loader::simulate(&p, &env)
                .map(|sim| sim.missing().next().is_none())
                .unwrap_or(false);
            if ok {
                loaded.push(p);
                progress = true;
            } else {
                still.push(p);
            }
        }
        waiting = still;
        if !progress || waiting.is_empty() {
            break;
        }
    }
    // A preload the real import did not load, whose file is there but cannot load here (a
    // loader that catches its failure: libraft's without cuBLAS): one that cannot load, as the
    // model would have found; one that could was never loaded, and is left out.
    env.set_preload(with_mapped(&loaded));
    for p in failed_preloads {
        let lacks = loader::simulate(&p, &env)
            .map(|sim| sim.missing().next().is_some())
            .unwrap_or(false);
        if lacks && !waiting.contains(&p) {
            waiting.push(p);
        }
    }
    // What each preload that cannot load lacks, by its SONAME and file name: a file that needs
    // it fails for that, one root cause, not for want of a search path to it.
    let mut blocked: HashMap<String, (PathBuf, Vec<String>)> = HashMap::new();
    // What each would bring with it, where it found it: the libraries its load resolves.
    let mut blocked_brings: HashMap<String, String> = HashMap::new();
    // Where each looked for what it lacks: once installed where it looks, the preload loads it
    // and the files that need it get the loaded one.
    let mut blocked_tried: HashMap<String, (String, Vec<PathBuf>)> = HashMap::new();
    for p in &waiting {
        disagreements.push(format!(
            "{} would be loaded first by its package, but cannot load itself here (a library it needs is missing): the files are judged without it",
            p.display()
        ));
        let Some(found) = lacks_of(p, &env) else {
            continue;
        };
        let lacks = found.names();
        let soname = cudist_elf::map_file(p)
            .ok()
            .and_then(|m| cudist_elf::ElfFile::parse(&m).ok()?.soname);
        let name = soname
            .clone()
            .or_else(|| p.file_name().and_then(|n| n.to_str()).map(String::from))
            .unwrap_or_default();
        for b in found.brings {
            blocked_brings.entry(b).or_insert_with(|| name.clone());
        }
        for (lib, tried) in found.names {
            blocked_tried
                .entry(lib)
                .or_insert_with(|| (name.clone(), tried));
        }
        for key in soname
            .into_iter()
            .chain(p.file_name().and_then(|n| n.to_str()).map(String::from))
        {
            blocked.insert(key, (p.clone(), lacks.clone()));
        }
    }
    // What each lacks, down to the root: a library it lacks that is itself a preload that
    // cannot load (libraft.so, where cuBLAS is missing) stands for what that one lacks, so that
    // every preload blocked by one missing wheel names that wheel's libraries.
    let roots: HashMap<String, Vec<String>> = blocked
        .keys()
        .map(|k| {
            let mut out: Vec<String> = Vec::new();
            let mut seen: BTreeSet<String> = BTreeSet::new();
            let mut todo: Vec<String> = blocked[k].1.iter().rev().cloned().collect();
            while let Some(l) = todo.pop() {
                if !seen.insert(l.clone()) {
                    continue;
                }
                match blocked.get(&l) {
                    Some((_, more)) => todo.extend(more.iter().rev().cloned()),
                    None => out.push(l),
                }
            }
            (k.clone(), out)
        })
        .collect();
    for (k, v) in blocked.iter_mut() {
        if let Some(r) = roots.get(k).filter(|r| !r.is_empty()) {
            v.1 = r.clone();
        }
    }
    // What a library lacks is asked with what the real imports mapped loaded too.
    let mut mapped_env = env.clone();
    mapped_env.set_preload(with_mapped(&loaded));
    env.set_preload(loaded);
    if paths.is_empty() {
        report.installations = machine::installations(catalog);
        report.conflicts = machine::conflicts(&report.installations);
        for c in &report.conflicts {
            report.verdict.add(
                Status::Risky,
                if c.library == "toolkit headers vs runtime" {
                    format!(
                        "headers of one CUDA toolkit with the runtime of another, a known source of silent breakage: {}",
                        c.seen.join("; ")
                    )
                } else {
                    format!(
                        "{} is visible in several CUDA majors: {}",
                        c.library,
                        c.seen.join("; ")
                    )
                },
            );
        }
        report.verdict.settle();
        return Ok(report);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for p in &paths {
        match elfs.remove(p) {
            Some(listed) => files.extend(listed),
            None => files.extend(crate::elf_files::loadable(p)?),
        }
    }
    // A package and its subpackage, or a package asked for and one followed into, list the
    // same files: each is checked once.
    let mut listed: std::collections::HashSet<PathBuf> = Default::default();
    files.retain(|f| listed.insert(f.clone()));
    // The files of other packages that the real import loaded, which the model did not follow
    // (a module imported by a name built at run time: `import_module(f'{pkg}._versions')`):
    // judged with the package, as loaded at import, so that what they load on first use is.
    // The libraries the catalog knows (a CUDA wheel's, the system's) are judged as what the
    // files need, not as files of their own.
    let canonical_listed: std::collections::HashSet<PathBuf> = files
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .collect();
    // Compared with links resolved: the interpreter may be named by a relative path.
    let sites: Vec<PathBuf> = imports
        .iter()
        .filter_map(|(name, dir)| site_of_import(name, dir))
        .filter_map(|s| std::fs::canonicalize(s).ok())
        .collect();
    let mut followed: BTreeMap<&str, Vec<PathBuf>> = Default::default();
    for t in report.imports_run.iter().filter(|t| t.ok) {
        // What the mapped objects need: those came as dependencies (judged through what needs
        // them); the others were loaded by path or imported.
        let needed: std::collections::HashSet<&str> = t
            .loaded
            .iter()
            .flat_map(|l| l.needed.iter().map(String::as_str))
            .collect();
        for l in &t.loaded {
            let file_name = l
                .path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if needed.contains(file_name) || l.soname.as_deref().is_some_and(|s| needed.contains(s))
            {
                continue;
            }
            let known = l
                .soname
                .as_deref()
                .is_some_and(|so| !matches!(catalog.classify(so), SonameClass::Other));
            let canon = std::fs::canonicalize(&l.path).unwrap_or_else(|_| l.path.clone());
            let in_site = sites.iter().any(|s| canon.starts_with(s));
            if known
                || !in_site
                || canonical_listed.contains(&canon)
                || !listed.insert(l.path.clone())
            {
                continue;
            }
            files.push(l.path.clone());
            followed.entry(&t.module).or_default().push(l.path.clone());
        }
    }
    // The extension modules of other packages that the real import tried and failed to load,
    // the import going on without them (osqp's `try: import osqp_cuda`): judged whole, on
    // demand, so that every library each lacks is said with its fix, not only the first one
    // the loader's error names.
    let mut failed_elsewhere: Vec<(PathBuf, String)> = Vec::new();
    for t in report.imports_run.iter().filter(|t| t.ok) {
        for x in &t.extension_failures {
            let canon = std::fs::canonicalize(&x.path).unwrap_or_else(|_| x.path.clone());
            if !sites.iter().any(|s| canon.starts_with(s))
                || canonical_listed.contains(&canon)
                || !crate::elf_files::loadable(&x.path).is_ok_and(|v| !v.is_empty())
                || !listed.insert(x.path.clone())
            {
                continue;
            }
            files.push(x.path.clone());
            failed_elsewhere.push((x.path.clone(), t.module.clone()));
        }
    }
    // Canonical too: [`is_followed`] asks by either.
    let mut followed_files: std::collections::HashSet<PathBuf> = followed
        .values()
        .flatten()
        .flat_map(|p| [Some(p.clone()), std::fs::canonicalize(p).ok()])
        .flatten()
        .collect();
    // A directory native code loaded libraries from by path (OpenMM's plugin directory, which
    // other distributions install into: the CUDA plugins of OpenMM-CUDA-12) is loaded whole:
    // its other libraries are loaded the same way, and one that did not load failed or was
    // not tried. Judged as loaded on demand: what it provides fails on first use. Extension
    // modules are imported by name, not scanned.
    let mut beside_followed: Vec<(PathBuf, String)> = Vec::new();
    for dir in followed
        .values()
        .flatten()
        .filter(|p| !is_extension_module(p))
        .filter_map(|p| p.parent())
        .collect::<BTreeSet<_>>()
    {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| super::trace::is_shared_object(p) && p.is_file())
            .collect();
        found.sort();
        for p in found.into_iter().take(256) {
            if listed.contains(&p) || !crate::elf_files::loadable(&p).is_ok_and(|v| !v.is_empty()) {
                continue;
            }
            listed.insert(p.clone());
            beside_followed.push((p.clone(), dir.display().to_string()));
            followed_files.extend(std::fs::canonicalize(&p).ok());
            followed_files.insert(p.clone());
            files.push(p);
        }
    }
    for (module, found) in &followed {
        let shown: Vec<String> = found
            .iter()
            .take(3)
            .map(|p| p.display().to_string())
            .collect();
        disagreements.push(format!(
            "import {module}: the real import loaded {} file(s) of packages the model did not follow ({}{}): judged with it, as loaded at import",
            found.len(),
            shown.join(", "),
            if found.len() > 3 { format!(" and {} more", found.len() - 3) } else { String::new() }
        ));
    }
    // What each package looks for by a bare name. `ctypes.util.find_library` searches the
    // system's library cache and LD_LIBRARY_PATH (and the compiler's paths), never a CUDA wheel:
    // where neither has the library, what uses it fails on first use (a find the real import
    // made is judged from what it found). A class of the package's own searches its own way: said.
    // A profile's machine has its own system libraries: not judged from this one's.
    for (name, f) in &package_finds {
        let stem = catalog
            .library(&f.library)
            .map_or_else(|| format!("lib{}", f.name), |l| l.stem.clone());
        let when = if f.at_import {
            "at import"
        } else {
            "when used"
        };
        match &f.class {
            Some(class) => report.verdict.add(
                Status::Ok,
                format!(
                    "{name} opens {stem} by the bare name {:?} with {class}, a ctypes.CDLL subclass of its own, {when} ({}): its own search decides where it finds it, which doctor does not read",
                    f.name, f.at
                ),
            ),
            None if !report.profile => {
                let made = trace_of(name)
                    .filter(|t| t.ok)
                    .is_some_and(|t| t.finds.iter().any(|c| c.name == f.name));
                let want = format!("lib{}.so", f.name);
                let found = env.cache.entries.iter().any(|e| e.soname.starts_with(&want))
                    || env
                        .ld_library_path
                        .iter()
                        .any(|d| Path::new(d).join(&want).exists());
                if !made && !found {
                    report.verdict.add(
                        Status::WillFailWhenLoaded,
                        format!(
                            "{name} looks for {stem} with ctypes.util.find_library({:?}) {when} ({}): not in this machine's library cache or LD_LIBRARY_PATH, and it never looks in a CUDA wheel; what uses it fails on first use (fix: a CUDA toolkit whose libraries the system's loader knows)",
                            f.name, f.at
                        ),
                    );
                }
            }
            None => {}
        }
    }
    if files.is_empty()
        && args.paths.is_empty()
        && !(report.imports_run.is_empty()
            && report.runtime_loads.is_empty()
            && package_finds.is_empty())
    {
        // Pure Python: the real import, and what its Python loads, are the whole answer.
        gone_from_install(
            &mut report.verdict,
            &gone,
            &package_files,
            &package_preloads,
        );
        let major = environment_major(&dists, catalog);
        return Ok(conclude(report, disagreements, major, catalog));
    }
    if files.is_empty() {
        // A package file (a wheel, a conda package) holds what would be installed, not what is:
        // doctor judges an installed tree, inspect reads the package.
        if let Some(p) = paths.iter().find(|p| {
            let n = p.to_string_lossy();
            p.is_file()
                && [".whl", ".conda", ".tar.bz2"]
                    .iter()
                    .any(|e| n.ends_with(e))
        }) {
            return Err(crate::error::bad_input(format!(
                "{} is a package file: doctor judges what is installed (a directory, an ELF file, \
                 or `--import NAME`); install it and run `cudist doctor --import NAME`, or read the \
                 package with `cudist inspect`",
                p.display()
            )));
        }
        // An ELF file doctor passed over is one for another machine or byte order: said as such,
        // not as "no ELF files".
        for p in &paths {
            let mut head = [0u8; 20];
            let read = cudist_fs::open_regular(p)
                .ok()
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head).ok())
                .unwrap_or(0);
            if read < 4 || head[..4] != *b"\x7fELF" {
                continue;
            }
            let here: u16 = if cfg!(target_arch = "aarch64") {
                183
            } else {
                62
            };
            let other =
                read == 20 && (head[5] != 1 || u16::from_le_bytes([head[18], head[19]]) != here);
            return Err(crate::error::bad_input(if other {
                format!(
                    "{} is an ELF file for another machine or byte order than this one's \
                     loader loads: doctor judges what would load here; `cudist inspect` reads it",
                    p.display()
                )
            } else {
                format!("{}: an ELF file cut short or damaged", p.display())
            }));
        }
        // Not what doctor reads: the input's fault (3), not a "no" (1).
        return Err(crate::error::bad_input(format!(
            "no ELF files in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // Files are checked in parallel; the parsed libraries are shared through the environment.
    use rayon::prelude::*;
    let names = CudaNames::new(catalog);
    // Tiers are a package's: files of an `--import` package get theirs; a file or directory
    // given as a path is asked about as it is (it loads, as the main object).
    let tier_of: HashMap<&Path, crate::loads::Placed> = package_files
        .iter()
        .map(|f| f.path.as_path())
        .zip(preload::tiers(
            &package_files,
            &package_preloads,
            &package_modules,
        ))
        .collect();
    let mut tiers: Vec<crate::loads::Placed> = files
        .iter()
        .map(|f| {
            tier_of
                .get(f.as_path())
                .cloned()
                .unwrap_or(crate::loads::Placed {
                    tier: crate::loads::Tier::Import,
                    why: None,
                })
        })
        .collect();
    for (f, placed) in files.iter().zip(tiers.iter_mut()) {
        if let Some((_, module)) = failed_elsewhere.iter().find(|(p, _)| p == f) {
            *placed = crate::loads::Placed {
                tier: crate::loads::Tier::OnDemand,
                why: Some(format!(
                    "the real import of {module} tried to load it, and went on without it when that failed"
                )),
            };
        }
        if let Some((_, dir)) = beside_followed.iter().find(|(p, _)| p == f) {
            *placed = crate::loads::Placed {
                tier: crate::loads::Tier::OnDemand,
                why: Some(format!(
                    "it sits in {dir}, from which the real import loaded libraries by path; it did not load"
                )),
            };
        }
    }
    // A package imported only when a function runs brings on first use what its own import
    // loads, not what its own functions import later (a second first use): those files are
    // left out.
    let later: Vec<bool> = files
        .iter()
        .zip(&tiers)
        .map(|(f, placed)| {
            let Some(w) = plugins
                .iter()
                .filter(|w| f.starts_with(&w.path))
                .max_by_key(|w| w.path.components().count())
                .filter(|w| w.plugin.is_none() && !spec_packages.contains(&w.package))
            else {
                return false;
            };
            // The module the function imports loads then, with what its package's import loads.
            let imported = w
                .path
                .parent()
                .and_then(|site| f.strip_prefix(site).ok())
                .and_then(|r| r.to_str())
                .and_then(crate::loads::extension_module)
                .is_some_and(|m| on_call_modules.contains(&m));
            placed.tier != crate::loads::Tier::Import && !imported
        })
        .collect();
    if later.contains(&true) {
        (files, tiers) = files
            .into_iter()
            .zip(tiers)
            .zip(later)
            .filter(|(_, later)| !later)
            .map(|(kept, _)| kept)
            .unzip();
    }
    // A plugin's files load when the package loads its plugins, on first use.
    for (f, placed) in files.iter().zip(tiers.iter_mut()) {
        let plugin = plugins
            .iter()
            .filter(|w| f.starts_with(&w.path))
            .max_by_key(|w| w.path.components().count());
        if let (Some(w), crate::loads::Tier::Import) = (plugin, placed.tier) {
            *placed = crate::loads::Placed {
                tier: crate::loads::Tier::OnDemand,
                why: Some(match (&w.plugin, &w.on_call) {
                    (None, Some(f)) => format!(
                        "{} imports {} only when {f} runs, at {}",
                        w.by, w.package, w.at
                    ),
                    _ => format!(
                        "a plugin of {} ({}), imported when {} runs",
                        w.by,
                        w.plugin.as_deref().unwrap_or_default(),
                        w.at
                    ),
                }),
            };
        }
    }
    // Reality places the files of a package whose import ran to its end: loaded at import when
    // the process mapped them, else not (what the import did not exercise stays the model's).
    let mut moved: BTreeMap<&str, (Vec<String>, Vec<String>)> = Default::default();
    for (f, placed) in files.iter().zip(tiers.iter_mut()) {
        // The innermost package holding the file (`nvidia.nvimgcodec`, not the namespace
        // `nvidia` it was followed into).
        let Some((name, _)) = imports
            .iter()
            .filter(|(_, d)| f.starts_with(d))
            .max_by_key(|(_, d)| d.components().count())
        else {
            continue;
        };
        let Some(t) = trace_of(name).filter(|t| t.ok) else {
            continue;
        };
        let short = f.display().to_string();
        if t.mapped(f) {
            if placed.tier != crate::loads::Tier::Import {
                moved.entry(name).or_default().1.push(short);
                *placed = crate::loads::Placed {
                    tier: crate::loads::Tier::Import,
                    why: Some("the real import loaded it".into()),
                };
            }
        } else if let Some(at) = t.failed_load_of(f) {
            // The import tried it, the load failed, and the package went on without it: what
            // uses it fails, not the import.
            if placed.tier == crate::loads::Tier::Import {
                moved.entry(name).or_default().0.push(short);
            }
            *placed = crate::loads::Placed {
                tier: crate::loads::Tier::OnDemand,
                why: Some(format!(
                    "the real import tried to load it at {at}, and went on without it when that failed"
                )),
            };
        } else if placed.tier == crate::loads::Tier::Import {
            moved.entry(name).or_default().0.push(short);
            *placed = crate::loads::Placed {
                tier: crate::loads::Tier::OnDemand,
                why: Some("the real import did not load it".into()),
            };
        }
    }
    for (name, (not_loaded, loaded)) in &moved {
        let list = |v: &Vec<String>| {
            let shown: Vec<&str> = v.iter().take(3).map(String::as_str).collect();
            match v.len().saturating_sub(3) {
                0 => shown.join(", "),
                more => format!("{} and {more} more", shown.join(", ")),
            }
        };
        if !not_loaded.is_empty() {
            disagreements.push(format!(
                "import {name}: the model placed {} file(s) at import that the real import did not load ({}): judged as loaded on demand",
                not_loaded.len(),
                list(not_loaded)
            ));
        }
        if !loaded.is_empty() {
            disagreements.push(format!(
                "import {name}: the real import loaded {} file(s) the model placed on demand ({}): judged as loaded at import",
                loaded.len(),
                list(loaded)
            ));
        }
    }
    // The libraries the packages load at import, by SONAME and file name.
    let mut loaded_first: HashMap<String, PathBuf> = HashMap::new();
    // Only a library another package file links is worth asking whether it can load; one that
    // cannot load itself here (libcuvs_c.so without its cuBLAS) gives nothing that needs it a
    // loaded copy: they fail for what it lacks, one root cause (the driver's libraries aside:
    // their absence is said apart).
    let needed_by_others = |name: &str| package_files.iter().any(|d| d.links(name));
    let lacks_here = |f: &Path| -> Vec<String> {
        let mut l = lacks_of(f, &mapped_env).unwrap_or_default().names();
        l.retain(|n| catalog.driver_lib(n).is_none());
        l
    };
    let mut cannot_load: Vec<(String, PathBuf, Vec<String>)> = Vec::new();
    for (f, p) in files.iter().zip(&tiers) {
        if p.tier != crate::loads::Tier::Import || !tier_of.contains_key(f.as_path()) {
            continue;
        }
        if let Some(d) = package_files.iter().find(|d| d.path == *f) {
            let keys: Vec<String> = d
                .soname()
                .into_iter()
                .map(String::from)
                .chain(f.file_name().and_then(|n| n.to_str()).map(String::from))
                .collect();
            if keys.iter().any(|k| needed_by_others(k)) {
                let lacks = lacks_here(f);
                if !lacks.is_empty() {
                    cannot_load.extend(keys.into_iter().map(|k| (k, f.clone(), lacks.clone())));
                    continue;
                }
            }
            for key in keys {
                loaded_first.entry(key).or_insert_with(|| f.clone());
            }
        }
    }
    // Then what the package's functions load when its API is used.
    let mut on_call_trigger: HashMap<String, String> = HashMap::new();
    for (name, (path, trigger)) in loaded_on_call {
        if loaded_first.contains_key(&name) {
            continue;
        }
        if needed_by_others(&name) {
            let lacks = lacks_here(&path);
            if !lacks.is_empty() {
                cannot_load.push((name, path, lacks));
                continue;
            }
        }
        loaded_first.insert(name.clone(), path);
        on_call_trigger.insert(name, trigger);
    }
    // What each would bring with it (libOpenMMCUDA.so finds cuFFT through its own RPATH for
    // the plugins that link both): no cause of its own where it cannot load.
    let brings_of = |key: &str, path: &Path, blocked_brings: &mut HashMap<String, String>| {
        for b in lacks_of(path, &mapped_env)
            .map(|l| l.brings)
            .unwrap_or_default()
        {
            blocked_brings.entry(b).or_insert_with(|| key.to_string());
        }
    };
    for (key, path, lacks) in cannot_load {
        brings_of(&key, &path, &mut blocked_brings);
        blocked.entry(key).or_insert((path, lacks));
    }
    let mut carried_on_demand: HashMap<String, PathBuf> = HashMap::new();
    for (f, p) in files.iter().zip(&tiers) {
        if p.tier == crate::loads::Tier::Import {
            continue;
        }
        let Some(so) = package_files
            .iter()
            .find(|d| d.path == *f)
            .and_then(|d| d.soname())
        else {
            continue;
        };
        // Only one something can load: an extension module the package imports (triton's
        // `_C/libtriton.so`), a library its code loads when a function runs, one named as its
        // SONAME (a load by that name, or by a path joined from it). A copy under a name that is
        // not its SONAME, which nothing loads (onnxruntime-ep-nv-tensorrt-rtx-cu13's
        // `libcudart.so.13.4.36`), gives what needs its SONAME nothing.
        let named_as_soname = f.file_name().is_some_and(|n| n == so);
        if !is_extension_module(f) && p.why.is_none() && !named_as_soname {
            continue;
        }
        if !needed_by_others(so) || blocked.contains_key(so) || carried_on_demand.contains_key(so) {
            continue;
        }
        // One that cannot load here gives what needs it nothing: they fail for what it lacks.
        let lacks = lacks_here(f);
        if lacks.is_empty() {
            carried_on_demand.insert(so.to_string(), f.clone());
        } else {
            brings_of(so, f, &mut blocked_brings);
            blocked.insert(so.to_string(), (f.clone(), lacks));
        }
    }
    // Packages `cudist slim` slimmed: their distribution's `cudist-slim.json`.
    let mut slimmed: Vec<(PathBuf, String)> = Vec::new();
    for (name, dir) in &imports {
        let Some(site) = site_of_import(name, dir) else {
            continue;
        };
        let import = cudist_wheel::installed::normalise(name);
        for d in dists.get(site).into_iter().flatten() {
            let n = cudist_wheel::installed::normalise(&d.name);
            if n != import && !n.starts_with(&format!("{import}-")) {
                continue;
            }
            let record = cudist_fs::read_bounded(
                &d.dist_info.join(crate::slim::RECORD_FILE),
                cudist_fs::SMALL_FILE,
            )
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::slim::SlimRecord>(&b).ok());
            if let Some(r) = record {
                let what = format!(
                    "{} {} was slimmed by cudist {} for {}",
                    d.name,
                    d.version,
                    r.cudist_version,
                    r.targets.join(" ")
                );
                report.verdict.add(
                    Status::Ok,
                    format!("{what}: device code for other GPUs was removed"),
                );
                slimmed.push((dir.clone(), what));
            }
        }
    }
    let not_loaded: HashMap<String, (Option<String>, String)> = report
        .runtime_loads
        .iter()
        .filter(|l| l.path.is_none())
        .map(|l| {
            (
                l.soname.clone(),
                (l.pip.clone(), format!("{} ({})", l.package, l.loader)),
            )
        })
        .collect();
    let installed_names: BTreeSet<String> = dists
        .values()
        .flatten()
        .map(|d| cudist_wheel::installed::normalise(&d.name))
        .collect();
    gone_from_install(
        &mut report.verdict,
        &gone,
        &package_files,
        &package_preloads,
    );
    let shared = Shared {
        env: &env,
        host: &report.host,
        profile: report.profile,
        names: &names,
        dlopen: &args.dlopen,
        loaded_first: &loaded_first,
        loaded_on_call: &on_call_trigger,
        carried_on_demand: &carried_on_demand,
        traced: &traced,
        slimmed: &slimmed,
        package_major: &package_major,
        followed: &followed_files,
        blocked: &blocked,
        not_loaded: &not_loaded,
        blocked_brings: &blocked_brings,
        blocked_tried: &blocked_tried,
        installed: &installed_names,
    };
    let results: Vec<Result<Checked>> = files
        .par_iter()
        .zip(tiers)
        .map(|(f, tier)| check_file(f, &shared, tier))
        .collect();
    let mut checked = Vec::with_capacity(results.len());
    for r in results {
        checked.push(r?);
    }
    unused_variants(&mut checked, catalog);
    let mut unfound: BTreeMap<(String, PathBuf), Vec<String>> = BTreeMap::new();
    for (file, verdict, disagree) in checked {
        report.verdict.merge(verdict);
        report.files.push(file);
        for u in disagree {
            unfound.entry((u.name, u.loaded)).or_default().push(u.file);
        }
    }
    for ((name, loaded), files) in unfound {
        disagreements.push(format!(
            "the model finds no {name} for {} file(s) that need it ({}), but the real import had it loaded from {}",
            files.len(),
            some_of(&files, ""),
            loaded.display()
        ));
    }
    // The packages' own CUDA major, where they have one: advice for what the import failed to
    // load names that major's wheel (cutensor-cu12 in a CUDA 12 environment).
    let majors: BTreeSet<u32> = package_major.values().copied().collect();
    let major = match majors.into_iter().collect::<Vec<u32>>()[..] {
        [one] => Some(one),
        _ => None,
    };
    let major = major.or_else(|| environment_major(&dists, catalog));
    Ok(conclude(report, disagreements, major, catalog))
}

/// Whether a name can be a Python module's (`jzfmm_cuda`): letters, digits and `_`, not
/// starting with a digit.
fn is_module_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Says the shared objects each distribution installed that are gone: a failure on first use
/// where a file of the packages links one or their Python loads one by name; else a risk (the
/// install is broken, and whatever loads them fails: a second copy nothing loads is harmless).
fn gone_from_install(
    verdict: &mut Verdict,
    gone: &[(String, Vec<String>)],
    files: &[preload::Dynamic],
    preloads: &[crate::loads::Preload],
) {
    for (dist, missing) in gone {
        let needed = missing.iter().any(|p| {
            let base = p.rsplit('/').next().unwrap_or(p);
            files.iter().any(|d| d.links(base)) || preloads.iter().any(|l| l.loads(base))
        });
        verdict.add(
            if needed {
                Status::WillFailWhenLoaded
            } else {
                Status::Risky
            },
            format!(
                "{dist} installed {} shared object(s) that are gone ({}): the install is broken, and what loads them fails; reinstall it (`pip install --force-reinstall --no-deps {dist}`)",
                missing.len(),
                some_of(missing, "")
            ),
        );
    }
}

/// Builds for several CUDA releases of one file (a variant group): the package picks the one for
/// the CUDA it finds, so where one build loads (what it lacks is at most the driver, said of its
/// own), the others lacking their release's libraries are not this environment's builds, not
/// failures: each is one line saying so. Where none loads, each says what it lacks.
fn unused_variants(checked: &mut [Checked], catalog: &Catalog) {
    // Each variant file's group key, release and the libraries (not the driver's) it lacks.
    let found: Vec<Option<(String, crate::loads::VariantName, Vec<String>)>> = checked
        .iter()
        .map(|(f, _, _)| {
            let v = (f.tier == crate::loads::Tier::Variant)
                .then(|| crate::loads::variant_name(&f.path))
                .flatten()?;
            let mut lacks: Vec<String> = Vec::new();
            for m in &f.missing {
                if catalog.driver_lib(&m.name).is_none() && !lacks.contains(&m.name) {
                    lacks.push(m.name.clone());
                }
            }
            Some((v.key(&f.path), v, lacks))
        })
        .collect();
    let mut loading: BTreeMap<&str, Vec<&str>> = Default::default();
    for (key, v, lacks) in found.iter().flatten() {
        if lacks.is_empty() {
            loading.entry(key).or_default().push(&v.cuda);
        }
    }
    for ((f, verdict, _), found) in checked.iter_mut().zip(&found) {
        let Some((key, v, lacks)) = found else {
            continue;
        };
        let Some(others) = loading.get(key.as_str()).filter(|_| !lacks.is_empty()) else {
            continue;
        };
        let (group, cuda) = (&v.group, &v.cuda);
        let lacking = lacks.join(", ");
        let loads = others.join(", ");
        let mut unused = Verdict::default();
        unused.add_cause(
            Status::Ok,
            format!("unused variant {cuda} {lacking}"),
            f.path.clone(),
            format!(
                "{}: the CUDA {cuda} build of {group}, not this environment's: {lacking} not installed, and the CUDA {loads} build loads",
                f.path
            ),
            format!(
                "CUDA {cuda} builds of files the package has for several releases, not this environment's: {lacking} not installed, and the CUDA {loads} builds load"
            ),
        );
        f.unused_variant = Some(loads);
        *verdict = unused;
    }
}

/// What a file's load meets here: what it lacks and what it brings with it.
#[derive(Default)]
struct Lacks {
    /// The libraries it lacks, each once, in the order the loader misses them, with where the
    /// loader looked for each.
    names: Vec<(String, Vec<PathBuf>)>,
    /// The libraries its load resolves.
    brings: Vec<String>,
}

impl Lacks {
    fn names(&self) -> Vec<String> {
        self.names.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// What a file lacks here and brings with it: none when it cannot be simulated.
fn lacks_of(f: &Path, env: &LoadEnv) -> Option<Lacks> {
    let sim = loader::simulate(f, env).ok()?;
    let mut names: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for m in sim.missing() {
        if !names.iter().any(|(n, _)| *n == m.name) {
            names.push((m.name.clone(), m.tried.clone()));
        }
    }
    let brings = sim
        .resolutions
        .iter()
        .filter(|r| r.path.is_some())
        .map(|r| r.name.clone())
        .collect();
    Some(Lacks { names, brings })
}

/// Why the installed distribution `pip`'s file `name` (found by its RECORD, in the
/// site-packages of `near`) cannot load here, and the fix for the first library it lacks: a
/// provider whose own library lacks what it needs (torch's libtorch_cuda.so with nvidia-cublas's
/// file gone) fails its own import, so importing it first cannot help. None where it loads, or
/// where its file is not found.
fn provider_lacks(
    pip: &str,
    name: &str,
    near: &Path,
    env: &LoadEnv,
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<(String, String)> {
    let site = site_of(near)?;
    let dist = cudist_wheel::installed::scan_names(site)
        .ok()?
        .into_iter()
        .find(|d| {
            cudist_wheel::installed::normalise(&d.name) == cudist_wheel::installed::normalise(pip)
        })?;
    let rel = record_rows(&dist.dist_info)?
        .into_iter()
        .find(|r| r.path.rsplit('/').next() == Some(name))?;
    let file = cudist_fs::inner::lexical(&site.join(&rel.path));
    let lacks = lacks_of(&file, env)?;
    let (first, tried) = lacks.names.first()?;
    let fix = fix_for(first, &file, tried, major, catalog)
        .unwrap_or_else(|| format!("provide {first} where {name} looks"));
    Some((
        format!(
            "its {name} ({}) lacks {}",
            file.display(),
            lacks.names().join(", ")
        ),
        fix,
    ))
}

/// Whether two installed files belong to the same top-level package: the same directory right
/// below the same `site-packages` (or `dist-packages`).
fn same_top_package(a: &Path, b: &Path) -> bool {
    let top = |p: &Path| -> Option<PathBuf> {
        let p = std::path::absolute(p).ok()?;
        let site = site_of(&p)?;
        let first = p.strip_prefix(site).ok()?.components().next()?;
        Some(site.join(first))
    };
    top(a).is_some_and(|t| top(b) == Some(t))
}

/// Whether an ELF file is a Python extension module: it defines the `PyInit_` function the
/// import system calls.
fn is_extension_module(p: &Path) -> bool {
    cudist_elf::map_file(p)
        .ok()
        .and_then(|m| cudist_elf::defined_symbols_where(&m, |n| n.starts_with("PyInit_")).ok())
        .is_some_and(|v| !v.is_empty())
}

/// The library a glibc loader error names as not found (`libcudart.so.12: cannot open shared
/// object file: …`): the file asked for, or one it needs.
fn not_found_in(error: &str) -> Option<&str> {
    let head = error.split(": cannot open shared object file").next()?;
    if head.len() == error.len() {
        return None;
    }
    // After an exception's name (`ImportError: libcufile.so.0`), the file's name.
    let name = head.rsplit(": ").next().unwrap_or(head);
    let name = name.rsplit('/').next().unwrap_or(name);
    (!name.is_empty()).then_some(name)
}

/// Loads the real import made that failed while the import went on (the package caught the
/// error): a guarded `ctypes` load through cuda-pathfinder, a torch extension built for another
/// CUDA major that `torch.ops.load_library` cannot open. What uses the library fails on first
/// use. A failed candidate is no failure when the same library was loaded by another name or
/// path (a loader trying `libnvrtc.so.13`, then `.12`); another GPU vendor's runtime tried on
/// this machine is that vendor's build.
fn failed_at_import(
    report: &mut Report,
    major: Option<u32>,
    catalog: &Catalog,
    disagreements: &mut Vec<String>,
) {
    // A library by its SONAME, or by a file name the catalog reads as its (a file with more of
    // its version: `libcutensor.so.2.1.0`, the file of `libcutensor.so.2`).
    let library_of = |name: &str| {
        catalog
            .library_by_name(name)
            .map(|(m, _)| m.library.id.clone())
    };
    let file_name = |n: &str| n.rsplit('/').next().unwrap_or(n).to_string();
    // `ctypes.util.find_library("nvrtc")` that found nothing: the package goes on without the
    // library (keopscore switches to the CPU). It searches the system's library cache,
    // LD_LIBRARY_PATH and the compiler's paths for `libnvrtc`, never a CUDA wheel's directory.
    for t in report.imports_run.iter().filter(|t| t.ok) {
        let mut said: BTreeSet<&str> = BTreeSet::new();
        for c in t.finds.iter().filter(|c| c.found.is_none()) {
            let stem = format!("lib{}", c.name);
            let Some(lib) = catalog.libraries.iter().find(|l| l.stem == stem) else {
                continue;
            };
            let loaded = t.loaded.iter().any(|l| {
                l.soname.as_deref().and_then(library_of).as_deref() == Some(lib.id.as_str())
            });
            if loaded || !said.insert(c.name.as_str()) {
                continue;
            }
            let at = c
                .frames
                .first()
                .cloned()
                .unwrap_or_else(|| t.module.clone());
            let wheels = match lib.newest_wheel_soname(None) {
                Some((so, pip)) => {
                    format!(" ({pip} installs {so} in site-packages, where it does not look)")
                }
                None => String::new(),
            };
            disagreements.push(format!(
                "import {}: ctypes.util.find_library({:?}) found nothing, and the import went on",
                t.module, c.name
            ));
            report.verdict.add(
                Status::WillFailWhenLoaded,
                format!(
                    "{at}: ctypes.util.find_library({:?}) found no {stem} during import {}: it searches the system's library cache, LD_LIBRARY_PATH and the compiler's paths, never a CUDA wheel{wheels}; the import went on without it, and what uses it fails on first use (fix: a CUDA toolkit whose libraries the system's loader knows)",
                    c.name, t.module
                ),
            );
        }
    }
    for t in report.imports_run.iter().filter(|t| t.ok) {
        // A loader that tries each CUDA major's name of a library in turn (cuda-pathfinder tries
        // `libcublasLt.so.13`, then `.so.12`) failed once: one line, for the name of the
        // package's major where it tried that one.
        let mut tried_of: BTreeMap<String, Vec<String>> = Default::default();
        for d in t.dlopens.iter().filter(|d| d.error.is_some()) {
            let Some(name) = d.name.as_deref() else {
                continue;
            };
            let base = file_name(name);
            if let Some(id) = library_of(&base) {
                let names = tried_of.entry(id).or_default();
                if !names.contains(&base) {
                    names.push(base);
                }
            }
        }
        let mut said_library: BTreeSet<String> = BTreeSet::new();
        for d in &t.dlopens {
            let (Some(name), Some(error)) = (d.name.as_deref(), d.error.as_deref()) else {
                continue;
            };
            let base = file_name(name);
            let id = library_of(&base);
            let tried = id
                .as_ref()
                .and_then(|i| tried_of.get(i))
                .filter(|n| n.len() > 1);
            if let Some(tried) = tried {
                let of_major =
                    |n: &&String| major.is_some_and(|m| catalog.majors_of(n).contains(&m));
                let wanted = tried.iter().find(of_major).unwrap_or(&tried[0]);
                if *wanted != base || !said_library.insert(id.clone().unwrap_or_default()) {
                    continue;
                }
            }
            let what = match tried {
                Some(n) => {
                    let others: Vec<&str> = n
                        .iter()
                        .filter(|x| **x != base)
                        .map(String::as_str)
                        .collect();
                    format!("the loads of {name} and {}", others.join(", "))
                }
                None => format!("the load of {name}"),
            };
            let loaded_otherwise = t.loaded_as(name).is_some()
                || t.loaded_as(&base).is_some()
                || t.dlopens.iter().any(|o| {
                    o.loaded.is_some()
                        && o.name
                            .as_deref()
                            .map(file_name)
                            .is_some_and(|n| n == base || (id.is_some() && library_of(&n) == id))
                })
                || (id.is_some()
                    && t.loaded
                        .iter()
                        .any(|l| l.soname.as_deref().and_then(library_of) == id));
            let missing = not_found_in(error).unwrap_or(&base).to_string();
            if loaded_otherwise || matches!(catalog.classify(&missing), SonameClass::Vendor(_)) {
                continue;
            }
            let at = d
                .frames
                .first()
                .cloned()
                .unwrap_or_else(|| t.module.clone());
            let fix = fix_for(&missing, Path::new(name), &[], major, catalog)
                .map(|x| format!(" (fix: {x})"))
                .unwrap_or_default();
            // The model already says it fails (one root cause, one line): by this name, or by
            // a SONAME of the same library (cupy-cuda11x tries `libcutensor.so.2.1.0` where its
            // module needs `libcutensor.so.2`).
            let same_library = library_of(&missing)
                .and_then(|id| catalog.library(&id))
                .is_some_and(|l| {
                    l.cuda
                        .iter()
                        .flat_map(|m| &m.sonames)
                        .any(|so| report.verdict.says_at(Status::WillFailWhenLoaded, so))
                });
            if same_library || report.verdict.says_at(Status::WillFailWhenLoaded, &missing) {
                continue;
            }
            disagreements.push(format!(
                "import {}: the real import's load of {name} failed ({error}) and the import went on; the model of its files had no failure for it",
                t.module
            ));
            report.verdict.add_cause(
                Status::WillFailWhenLoaded,
                format!("missing {missing}"),
                at.clone(),
                format!(
                    "{at}: {what} failed during import {} ({error}); the import went on without it, and what uses it fails on first use{fix}",
                    t.module
                ),
                format!(
                    "loads of {missing} failed during import {} ({error}); the import went on without it, and what uses it fails on first use{fix}",
                    t.module
                ),
            );
        }
    }
}

/// Extension modules that failed to load while the import went on (the package caught the
/// ImportError: implicit's GPU module, whose librmm is another release than it was built
/// against, "undefined symbol"): what the module provides fails, or the package runs without
/// it. A failure the model says already (a library not found) is its line.
fn extensions_failed_at_import(
    report: &mut Report,
    major: Option<u32>,
    catalog: &Catalog,
    disagreements: &mut Vec<String>,
) {
    let traces: Vec<super::trace::ImportTrace> = report
        .imports_run
        .iter()
        .filter(|t| t.ok)
        .cloned()
        .collect();
    for t in &traces {
        for x in &t.extension_failures {
            let fix = match not_found_in(&x.error) {
                Some(missing) => {
                    if report.verdict.says_at(Status::WillFailWhenLoaded, missing) {
                        continue;
                    }
                    fix_for(missing, &x.path, &[], major, catalog)
                        .map(|f| format!(" (fix: {f})"))
                        .unwrap_or_default()
                }
                None => match undefined_symbol_in(&x.error) {
                    Some((file, symbol)) => {
                        format!(" ({})", undefined_symbol_reason(&file, &symbol, &t.loaded))
                    }
                    None => String::new(),
                },
            };
            let file = x.path.display().to_string();
            disagreements.push(format!(
                "import {}: the real import's load of the module {file} failed ({}) and the import went on; the model of its files had no failure for it",
                t.module, x.error
            ));
            report.verdict.add_cause(
                Status::WillFailWhenLoaded,
                format!("module failed {file}"),
                file.clone(),
                format!(
                    "{file}: the module failed to load during import {} ({}); the package caught it and went on without it: what it provides fails, or runs without it{fix}",
                    t.module, x.error
                ),
                format!(
                    "modules failed to load during import {} ({}); the package caught it and went on without them{fix}",
                    t.module, x.error
                ),
            );
        }
    }
}

/// The file and the symbol of a load the loader refused for a symbol no loaded object defines
/// (`OSError: /…/mslk.so: undefined symbol: _ZN3c1013MessageLogger…`).
fn undefined_symbol_in(error: &str) -> Option<(PathBuf, String)> {
    let (head, rest) = error.split_once(": undefined symbol: ")?;
    let file = head
        .rsplit([' ', '\'', '"'])
        .next()
        .filter(|p| p.starts_with('/'))?;
    let symbol = rest
        .split_whitespace()
        .next()?
        .trim_end_matches(['\'', '"', ')', ',']);
    (!symbol.is_empty()).then(|| (PathBuf::from(file), symbol.to_string()))
}

/// Why a file's load failed on `symbol`, read from the libraries it links as the import loaded
/// them: the one that defines the symbol nearest to it (the longest common prefix, at least
/// [`NEAR_SYMBOL`] bytes) is another release of the library the file was built against.
/// torch 2.10's libc10.so defines `_ZN3c1013MessageLoggerC1EPKciib`; a module built against a
/// later torch asks for `_ZN3c1013MessageLoggerC1ENS_14SourceLocationEib`, and that release of
/// torch is the fix. Nothing found: a library it links is not the release it was built against.
fn undefined_symbol_reason(file: &Path, symbol: &str, loaded: &[super::trace::Loaded]) -> String {
    let base = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let generic = format!(
        "{base}: undefined symbol {symbol}: a library it links is not the release it was built against: install the versions its package requires"
    );
    let Ok(map) = cudist_elf::map_file(file) else {
        return generic;
    };
    let Ok(elf) = cudist_elf::ElfFile::parse(&map) else {
        return generic;
    };
    // A C-library symbol newer than this glibc: the file was built for a newer one.
    if let Some(since) = elf
        .platform_arch()
        .ok()
        .and_then(|arch| cudist_catalog::glibc::glibc_since(arch, symbol))
    {
        return format!(
            "{base}: undefined symbol {symbol}: glibc has it only from {since}, newer than the C library here: {base} was built for glibc {since} or newer; it needs a system with that glibc, or a build of its package made for this one"
        );
    }
    let common = |a: &str| {
        a.bytes()
            .zip(symbol.bytes())
            .take_while(|(x, y)| x == y)
            .count()
    };
    let mut best: Option<(usize, &Path, String)> = None;
    for l in loaded {
        let file_name = l.path.file_name().and_then(|n| n.to_str());
        let linked = elf
            .needed
            .iter()
            .any(|n| l.soname.as_deref() == Some(n.as_str()) || file_name == Some(n.as_str()));
        if !linked {
            continue;
        }
        let Ok(lib_map) = cudist_elf::map_file(&l.path) else {
            continue;
        };
        let Ok(lib) = cudist_elf::ElfFile::parse(&lib_map) else {
            continue;
        };
        if let Some(near) = lib
            .defined_dynamic()
            .map(|s| (common(&s.name), &s.name))
            .filter(|(n, _)| *n >= NEAR_SYMBOL)
            .max_by_key(|(n, _)| *n)
        {
            if best.as_ref().is_none_or(|(b, _, _)| near.0 > *b) {
                best = Some((near.0, l.path.as_path(), near.1.clone()));
            }
        }
    }
    let Some((_, lib, near)) = best else {
        return generic;
    };
    let lib_name = lib
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (from, install) = match record_owner(lib) {
        Some((dist, version)) => (
            format!(", from {dist} {version}"),
            format!("install the {dist} release {base} was built against"),
        ),
        None => (
            String::new(),
            format!("install the {lib_name} {base} was built against"),
        ),
    };
    format!(
        "{base}: undefined symbol {symbol}: the {lib_name} it links ({}{from}) defines {near}, not it: {base} was built against another release of it; {install}",
        lib.display()
    )
}

/// The shortest common prefix of a missing symbol and one a library defines that names the
/// library as the one it came from: longer than any library's function prefix alone (`cublas`),
/// as long as a C++ namespace and a class (`_ZN3c1013M`).
const NEAR_SYMBOL: usize = 10;

/// The installed distribution whose `RECORD` lists a file, with its version.
fn record_owner(f: &Path) -> Option<(String, String)> {
    let listed = listed_in_record(f)?;
    let dist = &listed.entry().0;
    let version = cudist_wheel::installed::scan_names(&listed.site)
        .ok()?
        .into_iter()
        .find(|d| d.name == *dist)?
        .version;
    Some((dist.clone(), version))
}

/// The verdict made whole: what the real import tried and failed to load, one line per root
/// cause, and the real import's failure leading.
fn conclude(
    mut report: Report,
    mut disagreements: Vec<String>,
    major: Option<u32>,
    catalog: &Catalog,
) -> Report {
    failed_at_import(&mut report, major, catalog, &mut disagreements);
    extensions_failed_at_import(&mut report, major, catalog, &mut disagreements);
    report.verdict.settle();
    // The real import's failure leads: what the model found explains it. A failure the model
    // has no reason for is a disagreement too.
    let model_fails = report.verdict.status == Status::WillFailToLoad;
    // (module, error, the error is the package's own: no library the model or the error names).
    let mut leads: Vec<(String, String, bool)> = Vec::new();
    for t in report.imports_run.iter().rev() {
        if let Some(e) = &t.error {
            // A load refused for an undefined symbol, by the import's error or by a load it made
            // before failing (mslk's `torch.ops.load_library`, whose own error hides the
            // loader's): the library it links is another release than it was built against.
            let refused = undefined_symbol_in(e)
                .or_else(|| {
                    t.dlopens
                        .iter()
                        .filter_map(|d| d.error.as_deref())
                        .find_map(undefined_symbol_in)
                })
                .or_else(|| {
                    t.extension_failures
                        .iter()
                        .find_map(|x| undefined_symbol_in(&x.error))
                });
            if let Some((file, symbol)) = refused {
                // A reason of the model that names the symbol explains it, with its fix.
                if report.verdict.reasons.iter().any(|r| r.contains(&symbol)) {
                    leads.push((t.module.clone(), e.clone(), false));
                    continue;
                }
                let why = undefined_symbol_reason(&file, &symbol, &t.loaded);
                disagreements.push(format!(
                    "import {}: the real import failed because the loader refused {} (undefined symbol {symbol}), which the model of its files does not check outside CUDA libraries",
                    t.module,
                    file.display()
                ));
                leads.push((t.module.clone(), format!("{e} ({why})"), false));
                continue;
            }
            // A library the error names that no reason of the model names: the model failed
            // for another reason, or for none.
            let unexplained = match not_found_in(e) {
                Some(name) => !report.verdict.says_at(Status::WillFailWhenLoaded, name),
                None => !model_fails,
            };
            // A load the package caught that failed before the import did (pyqrack's `try:
            // CDLL(…) except: print(e)`, then `self.qrack_lib` used): the code went on without
            // the library and failed for want of it, whatever the error says.
            let caught = t
                .dlopens
                .iter()
                .find(|d| d.error.is_some() && d.loaded.is_none() && d.name.is_some());
            if let (true, Some(d)) = (unexplained && not_found_in(e).is_none(), caught) {
                let name = d.name.as_deref().unwrap_or_default();
                let base = name.rsplit('/').next().unwrap_or(name);
                disagreements.push(format!(
                    "import {}: the load of {base} the package catches failed ({}{}), and the import failed after it: the model took the caught load for optional",
                    t.module,
                    d.error.as_deref().unwrap_or_default(),
                    d.frames.first().map(|f| format!(", at {f}")).unwrap_or_default()
                ));
                // What that load's own error names as not found, with its fix (torch's
                // `libtorch_global_deps.so` without the CUDA runtime it links).
                let lacks = d
                    .error
                    .as_deref()
                    .and_then(not_found_in)
                    .filter(|m| *m != base)
                    .map(|m| {
                        let fix = fix_for(m, Path::new(name), &[], major, catalog)
                            .map(|f| format!(" (fix: {f})"))
                            .unwrap_or_default();
                        format!(": it lacks {m}{fix}")
                    })
                    .unwrap_or_default();
                leads.push((
                    t.module.clone(),
                    format!("{e} (after the load of {base} it caught failed: that library is the cause{lacks})"),
                    false,
                ));
                for r in report
                    .verdict
                    .reasons
                    .iter_mut()
                    .filter(|r| r.contains(base))
                {
                    *r = r.replace(
                        "the import goes on without it, and what needs it fails when used",
                        "the import went on without it, and then failed for want of it (above)",
                    );
                }
                continue;
            }
            if unexplained {
                disagreements.push(match not_found_in(e) {
                    Some(name) => format!(
                        "import {}: the real import fails on {name}, which no reason of the model of its files names",
                        t.module
                    ),
                    _ => format!(
                        "import {}: the real import fails, and the model of its files found no reason for it: the error is the package's own (above)",
                        t.module
                    ),
                });
            }
            let own = unexplained && !model_fails && not_found_in(e).is_none();
            // A library the error says cannot be opened, that no reason names (openmmjax's
            // `loadPluginLibrary` of a plugin whose libOpenMMCUDA.so needs libnvrtc.so.12): the
            // fix for it, from the file the error names as opening it where it names one.
            let fix = not_found_in(e)
                .filter(|_| unexplained)
                .and_then(|name| {
                    let opener = e
                        .split(&format!(": {name}"))
                        .next()
                        .and_then(|h| h.rsplit([' ', '\'', '"']).next())
                        .filter(|p| p.starts_with('/'))
                        .map(PathBuf::from)
                        // Else the module or ctypes load the import failed on with that error
                        // (torch's `_C` without cuDNN, imported by a module of the user's).
                        .or_else(|| {
                            t.extension_failures
                                .iter()
                                .find(|x| not_found_in(&x.error) == Some(name))
                                .map(|x| x.path.clone())
                        })
                        .or_else(|| {
                            t.dlopens
                                .iter()
                                .filter(|d| d.error.as_deref().and_then(not_found_in) == Some(name))
                                .find_map(|d| d.name.as_deref().filter(|n| n.starts_with('/')))
                                .map(PathBuf::from)
                        })
                        .unwrap_or_else(|| PathBuf::from(&t.module));
                    fix_for(name, &opener, &[], major, catalog)
                })
                .map(|f| format!(" (fix: {f})"))
                .unwrap_or_default();
            leads.push((t.module.clone(), format!("{e}{fix}"), own));
        }
    }
    for (module, e, _) in &leads {
        // The model placed the file on demand; the real import failed on its library: the
        // reasons say so, not that nothing the import reaches needs it.
        if let Some(name) = not_found_in(e) {
            for r in report
                .verdict
                .reasons
                .iter_mut()
                .filter(|r| r.contains(name))
            {
                *r = r.replace(
                    " (fails when it is loaded: nothing the import reaches needs it)",
                    &format!(" (the real import of {module} failed on it: above)"),
                );
            }
        }
    }
    for (module, e, own) in leads {
        report.verdict.lead(
            if own {
                Status::ImportFails
            } else {
                Status::WillFailToLoad
            },
            format!("import {module} fails: {}", folded(&e)),
        );
    }
    report.disagreements = disagreements;
    report
}

/// An error message as a reason shows it: its first lines, where a package raises pages of text
/// (vc6's `RuntimeError` is its whole licence); the whole message stays in `imports_run[].error`.
fn folded(e: &str) -> String {
    const SHOWN: usize = 4;
    let lines: Vec<&str> = e.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() <= SHOWN {
        return e.to_string();
    }
    format!(
        "{}\n    … ({} more lines: `--json`, imports_run[].error)",
        lines[..SHOWN].join("\n"),
        lines.len() - SHOWN
    )
}

/// Whether a library the model says a package loads at import, found at `path`, is loaded when
/// the files are simulated: yes without a real import, or when the real import failed (the model
/// explains the failure); after a real import that ran to its end, only if the process mapped it
/// (a guarded load that failed, or one the import never made, leaves nothing loaded: cupy's
/// `try: load libcutensor … except` where libcutensor's own cuBLASLt is missing).
fn loaded_at_import(
    trace: Option<&super::trace::ImportTrace>,
    path: &Path,
    soname: &str,
    disagreements: &mut Vec<String>,
) -> bool {
    let Some(t) = trace.filter(|t| t.ok) else {
        return true;
    };
    if t.mapped(path) || t.loaded_as(soname).is_some() {
        return true;
    }
    disagreements.push(format!(
        "import {}: the model has {soname} loaded at import from {}, but the real import did not load it (its load failed or was never made): the files are judged without it",
        t.module,
        path.display()
    ));
    false
}

/// What reality says of a library the model says a package loads at import and does not find.
enum Reality {
    /// The real import loaded it (from here): the model was wrong.
    Loaded(PathBuf),
    /// It fails, with this status and reason.
    Fails(Status, String),
    /// Nothing to say but the disagreement: the import did not need it.
    Nothing,
}

impl Reality {
    /// Takes it into account: a library loaded is preloaded for the simulations, a failure is a
    /// reason of the verdict.
    fn apply(self, preload: &mut Vec<PathBuf>, verdict: &mut Verdict) {
        match self {
            Reality::Loaded(p) => preload.push(p),
            Reality::Fails(status, reason) => verdict.add(status, reason),
            Reality::Nothing => {}
        }
    }
}

/// Checks a load the model says fails against the real import of the package, when one ran:
/// loaded there, the model missed where it is found; not loaded but the import ran to its end,
/// the package went on without it (a guarded load), so what uses it fails on first use, not the
/// import; read at import (`at_import`) but never attempted by an import that worked, no load of
/// the import at all.
fn reality(
    trace: Option<&super::trace::ImportTrace>,
    soname: &str,
    (status, at_import): (Status, bool),
    reason: String,
    disagreements: &mut Vec<String>,
    catalog: &Catalog,
) -> Reality {
    let Some(t) = trace else {
        return Reality::Fails(status, reason);
    };
    if let Some(l) = t.loaded_as(soname) {
        disagreements.push(format!(
            "{reason} — but the real import of {} loaded it from {}",
            t.module,
            l.path.display()
        ));
        return Reality::Loaded(l.path.clone());
    }
    // A loader that tries several names of one library (cuda-pathfinder's candidates,
    // libnvrtc.so.13 then .12) needs one: another SONAME of the same library loaded is it.
    let library_of = |name: &str| match catalog.classify(name) {
        SonameClass::Toolkit(m) | SonameClass::External(m) => Some(m.library.id.clone()),
        _ => None,
    };
    if t.ok {
        if let Some(id) = library_of(soname) {
            if let Some(other) = t
                .loaded
                .iter()
                .find(|l| l.soname.as_deref().and_then(library_of).as_ref() == Some(&id))
            {
                disagreements.push(format!(
                    "import {}: the model reads a load of {soname} at import; the real import loaded {} ({}) of the same library instead",
                    t.module,
                    other.soname.as_deref().unwrap_or_default(),
                    other.path.display()
                ));
                return Reality::Nothing;
            }
        }
    }
    // A load read at import (its failure caught or not) that the import that worked never made.
    if t.ok && at_import {
        let tried = t.dlopens.iter().any(|d| {
            d.name.as_deref().is_some_and(|n| {
                n == soname || Path::new(n).file_name().and_then(|f| f.to_str()) == Some(soname)
            })
        });
        if !tried {
            // The reading of the Python placed the load at import; the import never made it
            // (a candidate name of a loader that found another, a check in a function, a call
            // a condition guards: onnxruntime's build-info module loads libcudart.so only where
            // torch imports): not a failure of anything the import does.
            disagreements.push(format!(
                "import {}: the model reads a load of {soname} at import, but the real import made no such load",
                t.module
            ));
            return Reality::Nothing;
        }
        return Reality::Fails(
            Status::WillFailWhenLoaded,
            format!(
                "{reason} (the real import of {} went on without it: what uses it fails on first use)",
                t.module
            ),
        );
    }
    Reality::Fails(status, reason)
}

/// The reason for a library a package's own Python loads that is not found, one wording whoever
/// loads it (a known package's loader, ctypes, cuda-pathfinder): who loads it, when (at import,
/// or on first use: `on_use` says of what), where, the paths tried and, when a wheel provides it,
/// which to install.
/// Why a library loaded by `loader` is not found, then each of `then` (what follows from it, the
/// fix).
fn not_found(
    package: &str,
    imported_by: &str,
    soname: &str,
    on_use: Option<&str>,
    loader: &str,
    tried: &[PathBuf],
    then: &[String],
) -> String {
    let when = match on_use {
        Some(u) => format!("{u} ({loader}), not at import"),
        None => format!("at import ({loader})"),
    };
    let mut out = format!(
        "{package}{imported_by} loads {soname} {when}: not found (tried {}, then the system search)",
        tried
            .iter()
            .map(|t| t.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    for t in then {
        out.push_str("; ");
        out.push_str(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in a CUDA wheel directory of one major takes that major for its fixes (cudss'
    /// comm layer in `nvidia/cu12/lib`: nvidia-nccl-cu12, not -cu13), and a search path that
    /// reaches the wheel's directory through `..` is said to reach it, not told to add an entry.
    #[test]
    fn a_fix_in_the_files_own_major_and_its_own_search_path() {
        let catalog = Catalog::builtin();
        let site = Path::new("/nonexistent/site-packages");
        let f = site.join("nvidia/cu12/lib/libcomm.so.1");
        assert_eq!(dir_major(&f, &catalog), Some(12));
        assert_eq!(
            dir_major(&site.join("nvidia/cu13/lib/x.so"), &catalog),
            Some(13)
        );
        assert_eq!(dir_major(&site.join("pkg/x.so"), &catalog), None);
        let tried = [site.join("nvidia/cu12/lib/../../nccl/lib/libnccl.so.2")];
        let fix = fix_for(
            "libnccl.so.2",
            &f,
            &tried,
            dir_major(&f, &catalog),
            &catalog,
        )
        .unwrap();
        assert!(fix.starts_with("install nvidia-nccl-cu12 "), "{fix}");
        assert!(fix.contains("already reaches nvidia/nccl/lib"), "{fix}");
    }

    /// The library glibc's message names, as ctypes and the import system pass it on.
    #[test]
    fn a_long_error_message_is_folded() {
        assert_eq!(
            folded("ImportError: no\n\nmodule"),
            "ImportError: no\n\nmodule"
        );
        let page: String = (0..40).map(|i| format!("line {i}\n\n")).collect();
        let f = folded(&format!("RuntimeError: \nEULA\n{page}"));
        assert_eq!(
            f,
            "RuntimeError: \nEULA\nline 0\nline 1\n    … (38 more lines: `--json`, imports_run[].error)"
        );
    }

    #[test]
    fn one_missing_wheel_is_one_line() {
        let mut v = Verdict::default();
        let missing = |v: &mut Verdict, file: &str| {
            v.add_rooted(
                Status::WillFailToLoad,
                "missing libraft.so".into(),
                Some("libraft-cu12".into()),
                file.into(),
                format!("{file}: libraft.so not found"),
                Several::Missing {
                    names: "libraft.so".into(),
                    fix: " (fix: add an RPATH entry)".into(),
                },
                None,
            )
        };
        missing(&mut v, "a/libcugraph.so");
        missing(&mut v, "a/libcuvs.so");
        for (pkg, at) in [
            ("cugraph", "cugraph/__init__.py:12"),
            ("pylibraft", "pylibraft/__init__.py:13"),
        ] {
            v.add_rooted(
                Status::WillFailToLoad,
                "not loaded libraft.so".into(),
                Some("libraft-cu12".into()),
                pkg.into(),
                format!("{pkg} loads libraft.so at import ({at}): not found"),
                Several::NotLoaded {
                    soname: "libraft.so".into(),
                    install: "install libraft-cu12".into(),
                },
                Some(at.into()),
            );
        }
        for (file, blocked) in [
            ("b/x.so", "libcugraph.so"),
            ("b/y.so", "libcuvs.so"),
            ("b/x.so", "libcuvs.so"),
        ] {
            v.add_rooted(
                Status::WillFailToLoad,
                "blocked by libraft.so".into(),
                Some("libraft-cu12".into()),
                file.into(),
                format!("{file}: needs {blocked}"),
                Several::Blocked {
                    lacks: "libraft.so".into(),
                },
                Some(blocked.into()),
            );
        }
        // Another root stays a line of its own.
        v.add_rooted(
            Status::WillFailWhenLoaded,
            "missing libtbb.so.12".into(),
            Some("libtbb.so.12".into()),
            "c/tbb.so".into(),
            "c/tbb.so: libtbb.so.12 not found".into(),
            Several::Missing {
                names: "libtbb.so.12".into(),
                fix: String::new(),
            },
            None,
        );
        v.settle();
        assert_eq!(v.reasons.len(), 2, "{:#?}", v.reasons);
        assert_eq!(v.status, Status::WillFailToLoad);
        assert_eq!(
            v.reasons[0],
            "libraft.so not found (fix: install libraft-cu12): in 2 files (a/libcugraph.so, a/libcuvs.so); \
             cugraph, pylibraft load libraft.so first at import (cugraph/__init__.py:12, pylibraft/__init__.py:13); \
             so libcugraph.so, libcuvs.so, which their packages load first, cannot load, nor can the 2 files that need them (b/x.so, b/y.so)"
        );
        assert_eq!(v.reasons[1], "c/tbb.so: libtbb.so.12 not found");
    }

    #[test]
    fn the_library_a_loader_error_names() {
        assert_eq!(
            not_found_in(
                "libcudart.so.12: cannot open shared object file: No such file or directory"
            ),
            Some("libcudart.so.12")
        );
        assert_eq!(
            not_found_in("ImportError: libcufile.so.0: cannot open shared object file: No such file or directory"),
            Some("libcufile.so.0")
        );
        assert_eq!(
            not_found_in("OSError: /v/site/pkg/_C.so: cannot open shared object file: No such file or directory"),
            Some("_C.so")
        );
        assert_eq!(
            not_found_in("ImportError: undefined symbol: cublasLtCreate"),
            None
        );
    }

    #[test]
    fn an_imports_site_is_above_it_by_its_depth() {
        let dir = Path::new("/v/site-packages/nvidia/nvcomp");
        assert_eq!(
            site_of_import("nvidia.nvcomp", dir),
            Some(Path::new("/v/site-packages"))
        );
        assert_eq!(
            site_of_import("cupy", Path::new("/v/site-packages/cupy")),
            Some(Path::new("/v/site-packages"))
        );
    }

    /// A load the import made by the library's own name (cupy's cuTENSOR through
    /// cuda-pathfinder) that failed: the fix is the wheel of the package's CUDA major, with no
    /// search path to mend.
    #[test]
    fn the_fix_for_a_failed_load_by_name_is_the_wheel_of_the_packages_major() {
        let cat = Catalog::builtin();
        let name = "libcutensor.so.2";
        for (major, pip) in [(12, "cutensor-cu12"), (13, "cutensor-cu13")] {
            let fix = fix_for(name, Path::new(name), &[], Some(major), &cat).unwrap();
            assert!(
                fix.starts_with(&format!("install {pip} (it puts {name} in ")),
                "{fix}"
            );
            assert!(!fix.contains("RPATH") && !fix.contains("find it"), "{fix}");
        }
    }

    #[test]
    fn the_fix_names_the_cuda_line_that_is_installed() {
        // libucx-cu12 and libucx-cu13 install the same libucx/lib/libucp.so.0: the fix names the
        // one whose .dist-info is there, whatever line the SONAME alone suggests.
        let cat = Catalog::builtin();
        for line in ["12", "13"] {
            let site = tempfile::tempdir().unwrap();
            let lib = site.path().join("libucx/lib");
            std::fs::create_dir_all(&lib).unwrap();
            std::fs::write(lib.join("libucp.so.0"), b"").unwrap();
            std::fs::create_dir_all(
                site.path()
                    .join(format!("libucx_cu{line}-1.22.0.dist-info")),
            )
            .unwrap();
            let user = site.path().join("ucxx/_lib/libucxx_python.so");
            let fix = fix_for("libucp.so.0", &user, &[], None, &cat).unwrap();
            assert!(
                fix.starts_with(&format!("libucx-cu{line} is installed (")),
                "{fix}"
            );
            assert!(fix.contains("$ORIGIN/../../libucx/lib"), "{fix}");
        }
    }
}
