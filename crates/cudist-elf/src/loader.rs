//! A simulation of glibc's dynamic loader: which file every `DT_NEEDED` entry of an object and of
//! everything it loads resolves to, by which rule, and which paths were tried first — without
//! loading anything.
//!
//! Hand-written, because the answer depends on rules no crate models (glibc `elf/dl-load.c`,
//! `_dl_map_object`):
//! - objects load breadth-first, each `DT_NEEDED` list in order;
//! - a name already loaded (by SONAME or by a name it was loaded under) is reused;
//! - unless the needing object has `DT_RUNPATH`, the `DT_RPATH` of the needing object is searched,
//!   then that of the object that loaded it, and so on up to the main object (RPATH is inherited);
//!   an object with both tags ignores its `DT_RPATH`;
//! - then `LD_LIBRARY_PATH`, then the needing object's own `DT_RUNPATH` (not inherited), then
//!   `ld.so.cache`, then the system directories;
//! - `$ORIGIN`, `$LIB` and `$PLATFORM` expand in search paths, `$ORIGIN` to the directory of the
//!   object whose path it is; each directory is tried with its `glibc-hwcaps/<level>`
//!   subdirectories first; a file of another machine or class is skipped and the search goes on;
//! - a file already loaded under another name (same device and inode) is reused.

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::ldso::{default_dirs, LdCache};
use crate::ElfFile;

/// The machine the simulation stands for.
#[derive(Debug, Clone)]
pub struct LoadEnv {
    pub cache: LdCache,
    /// `LD_LIBRARY_PATH`, split.
    pub ld_library_path: Vec<String>,
    /// The system directories searched last; empty means [`default_dirs`] for the object's machine.
    pub system_dirs: Vec<PathBuf>,
    /// What `$LIB` expands to (`lib/x86_64-linux-gnu` on Debian, `lib64` on Red Hat).
    pub lib: String,
    /// What `$PLATFORM` expands to (`x86_64`).
    pub platform: String,
    /// The `glibc-hwcaps` subdirectories this CPU supports, best first (`x86-64-v3`, `x86-64-v2`).
    pub hwcaps: Vec<String>,
    /// The dynamic loader itself, loaded before anything else (a `NEEDED` of its SONAME reuses it).
    pub rtld: Option<PathBuf>,
    /// Files parsed so far (none: not an ELF file), shared by the simulations run with this
    /// environment, from any thread.
    pub parsed: Arc<Mutex<HashMap<PathBuf, Option<Arc<ObjInfo>>>>>,
    /// Libraries loaded before the main object (as a package's loader preloads them): a `NEEDED`
    /// of their SONAME is already satisfied. Set with [`LoadEnv::set_preload`].
    preload: Vec<PathBuf>,
    /// What is loaded before any main object, resolved on first use.
    before_main: Arc<std::sync::OnceLock<Simulation>>,
    /// Directory listings read so far (none: the directory cannot be read).
    pub listings: Arc<Mutex<HashMap<PathBuf, Option<std::collections::HashSet<String>>>>>,
}

impl LoadEnv {
    /// This machine: its ld.so.cache, `LD_LIBRARY_PATH` from the environment, and the hwcaps
    /// levels its CPU supports.
    ///
    /// The system directories, `$LIB`, `$PLATFORM` and the active hwcaps levels come from
    /// `ld.so --list-diagnostics` (glibc 2.33 and later; it reports its settings and loads
    /// nothing); without it, the usual values for the architecture.
    pub fn this_machine() -> LoadEnv {
        let mut env = LoadEnv::bare(
            LdCache::system(),
            std::env::var("LD_LIBRARY_PATH")
                .map(|v| split_path_list(&v))
                .unwrap_or_default(),
            default_lib(),
            std::env::consts::ARCH.to_string(),
        );
        if let Some(text) = ld_so_diagnostics() {
            env.apply_diagnostics(&text);
        }
        env
    }

    /// An environment with these settings and nothing else: no system directories, hwcaps,
    /// `ld.so` or preloads, empty caches.
    fn bare(
        cache: LdCache,
        ld_library_path: Vec<String>,
        lib: String,
        platform: String,
    ) -> LoadEnv {
        LoadEnv {
            cache,
            ld_library_path,
            system_dirs: Vec::new(),
            lib,
            platform,
            hwcaps: Vec::new(),
            rtld: None,
            parsed: Arc::default(),
            preload: Vec::new(),
            before_main: Arc::default(),
            listings: Arc::default(),
        }
    }

    /// Sets the libraries loaded before the main object (in this order), for the simulations to
    /// come.
    pub fn set_preload(&mut self, paths: Vec<PathBuf>) {
        self.preload = paths;
        self.before_main = Arc::default();
    }

    /// Takes the loader's settings from `ld.so --list-diagnostics` output.
    pub fn apply_diagnostics(&mut self, text: &str) {
        let value = |line: &str| -> Option<String> {
            let v = line.split_once('=')?.1;
            Some(v.trim().trim_matches('"').to_string())
        };
        let mut subdirs: Vec<String> = Vec::new();
        let mut active: Option<u64> = None;
        let mut system = Vec::new();
        for line in text.lines() {
            if line.starts_with("dl_dst_lib=") {
                self.lib = value(line).unwrap_or_default();
            } else if line.starts_with("dl_platform=") {
                self.platform = value(line).unwrap_or_default();
            } else if line.starts_with("dl_hwcaps_subdirs=") {
                subdirs = value(line)
                    .unwrap_or_default()
                    .split(':')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
            } else if line.starts_with("dl_hwcaps_subdirs_active=") {
                active = value(line)
                    .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok());
            } else if line.starts_with("path.rtld=") {
                self.rtld = value(line).map(PathBuf::from);
            } else if line.starts_with("path.system_dirs[") {
                if let Some(v) = value(line) {
                    let v = v.trim_end_matches('/');
                    system.push(PathBuf::from(if v.is_empty() { "/" } else { v }));
                }
            }
        }
        if let Some(mask) = active {
            self.hwcaps = subdirs
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < 64 && mask & (1 << i) != 0)
                .map(|(_, s)| s.clone())
                .collect();
        }
        if !system.is_empty() {
            self.system_dirs = system;
        }
    }
}

/// `ld.so --list-diagnostics`, from the first loader found for this architecture (run once).
pub fn ld_so_diagnostics() -> Option<String> {
    static ONCE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ONCE.get_or_init(run_diagnostics).clone()
}

fn run_diagnostics() -> Option<String> {
    let candidates: &[&str] = match std::env::consts::ARCH {
        "x86_64" => &[
            "/lib64/ld-linux-x86-64.so.2",
            "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        ],
        "aarch64" => &["/lib/ld-linux-aarch64.so.1", "/lib64/ld-linux-aarch64.so.1"],
        "powerpc64" => &["/lib64/ld64.so.2"],
        _ => &[],
    };
    let ld = candidates.iter().find(|p| Path::new(p).exists())?;
    let out = std::process::Command::new(ld)
        .arg("--list-diagnostics")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `$LIB` on this system: where the C library lives.
fn default_lib() -> String {
    let debian = format!("lib/{}-linux-gnu", std::env::consts::ARCH);
    if Path::new("/").join(&debian).is_dir() {
        debian
    } else {
        "lib64".into()
    }
}

/// Splits a colon (or semicolon) separated list as ld.so does; empty entries are dropped.
pub fn split_path_list(s: &str) -> Vec<String> {
    s.split([':', ';'])
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Why a library was found where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// In a directory of the `DT_RPATH` of `owner` (the needing object or one of its loaders).
    Rpath {
        owner: PathBuf,
    },
    LdLibraryPath,
    /// In a directory of the needing object's own `DT_RUNPATH`.
    Runpath,
    Cache,
    SystemDir,
    /// Already loaded, by SONAME, by a name it was loaded under, or as the same file.
    AlreadyLoaded,
    /// The `DT_NEEDED` entry is a path.
    Path,
}

/// One `DT_NEEDED` entry and where it resolved.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Resolution {
    pub name: String,
    /// The object whose `DT_NEEDED` it is.
    pub needed_by: PathBuf,
    /// The file, or none when ld.so would fail ("cannot open shared object file").
    pub path: Option<PathBuf>,
    pub rule: Option<Rule>,
    /// The paths tried before the one found (or all of them, when none was), in order.
    pub tried: Vec<PathBuf>,
}

/// Defined symbol name → its versions (`None`: unversioned). Looked up for every imported CUDA
/// symbol of every simulation, so hashed with foldhash rather than the DoS-resistant default:
/// the keys come from the files being checked, and a slow lookup is all a hostile file could
/// cause.
type Defined = HashMap<String, Vec<Option<String>>, foldhash::fast::RandomState>;

/// What the simulation needs from one file, parsed once and shared by every simulation that
/// loads it (through the [`LoadEnv`]'s cache).
#[derive(Debug)]
pub struct ObjInfo {
    soname: Option<String>,
    needed: Vec<String>,
    /// `DT_RPATH`, empty when the file also has `DT_RUNPATH` (which then wins).
    rpath: Vec<String>,
    runpath: Vec<String>,
    machine: u16,
    class: u8,
    symbols: Vec<crate::DynSymbol>,
    /// Its version requirements (library, version) and the versions it defines.
    verneed: Vec<(String, String)>,
    verdef: Vec<String>,
    /// Defined symbol name → its versions (`None`: unversioned), built on first use.
    defined: std::sync::OnceLock<Defined>,
    /// The distinct versions its imports ask for, sorted, built on first use.
    wanted_versions: std::sync::OnceLock<Vec<String>>,
}

impl ObjInfo {
    fn from_elf(elf: ElfFile) -> ObjInfo {
        let rpath = if elf.runpath.is_empty() {
            elf.rpath
        } else {
            Vec::new()
        };
        ObjInfo {
            soname: elf.soname,
            needed: elf.needed,
            rpath,
            runpath: elf.runpath,
            machine: elf.machine,
            class: elf.class,
            symbols: elf.dynamic_symbols,
            verneed: elf.verneed,
            verdef: elf.verdef,
            defined: std::sync::OnceLock::new(),
            wanted_versions: std::sync::OnceLock::new(),
        }
    }

    fn defined(&self) -> &Defined {
        self.defined.get_or_init(|| {
            let mut m = Defined::default();
            for s in self.symbols.iter().filter(|s| s.defined) {
                m.entry(s.name.clone()).or_default().push(s.version.clone());
            }
            m
        })
    }
}

/// One loaded object.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Loaded {
    pub path: PathBuf,
    pub soname: Option<String>,
    /// The index of the object that loaded it (none for the main object).
    pub loader: Option<usize>,
    #[serde(skip)]
    names: Vec<String>,
    #[serde(skip)]
    id: Option<(u64, u64)>,
    #[serde(skip)]
    info: Arc<ObjInfo>,
    /// The dynamic loader: loaded first, needs nothing, its symbols are not read.
    #[serde(skip)]
    rtld: bool,
    /// Loaded before the main object: the dynamic loader, a preloaded library, or what those
    /// need.
    #[serde(skip)]
    before_main: bool,
}

impl Loaded {
    /// Whether it was loaded before the main object (preloaded, or needed by what was): what it
    /// opens at run time is its own doing, not the main object's.
    pub fn loaded_before_main(&self) -> bool {
        self.before_main
    }

    /// Its `DT_NEEDED` entries.
    pub fn needed(&self) -> &[String] {
        if self.rtld {
            &[]
        } else {
            &self.info.needed
        }
    }

    /// Whether its dynamic symbols could be read (files without section headers may not say).
    pub fn has_symbols(&self) -> bool {
        !self.rtld && !self.info.symbols.is_empty()
    }

    /// The names it imports without a symbol version and not weakly: what any loaded object may
    /// define, glibc's newer symbols among them ([`crate::DynSymbol::version`]).
    pub fn unversioned_imports(&self) -> impl Iterator<Item = &str> {
        let symbols: &[crate::DynSymbol] = if self.rtld { &[] } else { &self.info.symbols };
        symbols
            .iter()
            .filter(|s| s.is_unversioned_import())
            .map(|s| s.name.as_str())
    }

    /// The distinct symbol versions its imports ask for (`GLIBC_2.14`, `libcudart.so.12`).
    pub fn undefined_versions(&self) -> impl Iterator<Item = &str> {
        let versions: &[String] = if self.rtld {
            &[]
        } else {
            self.info.wanted_versions.get_or_init(|| {
                let mut v: Vec<String> = self
                    .info
                    .symbols
                    .iter()
                    .filter(|s| !s.defined)
                    .filter_map(|s| s.version.clone())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
        };
        versions.iter().map(String::as_str)
    }

    fn symbols(&self) -> &[crate::DynSymbol] {
        if self.rtld {
            &[]
        } else {
            &self.info.symbols
        }
    }
}

/// A symbol version an object requires of a library that the file it resolved to lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MissingVersion {
    /// The version (`GLIBCXX_3.4.32`).
    pub version: String,
    /// The library it is required of (`libstdc++.so.6`).
    pub library: String,
    /// The object that requires it.
    pub needed_by: PathBuf,
    /// The file the library resolved to.
    pub resolved: PathBuf,
}

/// The result of a simulation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Simulation {
    pub objects: Vec<Loaded>,
    /// Every `DT_NEEDED` entry, in the order ld.so processes them.
    pub resolutions: Vec<Resolution>,
}

/// A symbol an object imports that no loaded object defines.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UndefinedSymbol {
    pub symbol: String,
    /// The version the reference asks for (`libcusparse.so.12`), if any.
    pub version: Option<String>,
    pub needed_by: PathBuf,
}

impl Simulation {
    /// The resolutions that failed.
    pub fn missing(&self) -> impl Iterator<Item = &Resolution> {
        self.resolutions.iter().filter(|r| r.path.is_none())
    }

    /// Where `dlopen(name)` called from object `from` would find `name` once everything is loaded:
    /// the same rules as for `DT_NEEDED`, with `from` as the object asking (its RPATH chain, then
    /// `LD_LIBRARY_PATH`, its RUNPATH, the cache, the system directories).
    pub fn dlopen(&self, from: usize, name: &str, env: &LoadEnv) -> Resolution {
        match locate(self, from, name, env) {
            Found::Loaded(res, _) | Found::Missing(res) | Found::New(res, _) => res,
        }
    }

    /// The non-weak symbols of loaded objects that no loaded object defines, as glibc binds them:
    /// a versioned reference needs a definition of that version (or an unversioned one). With
    /// `RTLD_NOW` (Python imports, `LD_BIND_NOW`) each one fails the load; lazily bound, it fails
    /// at the first call. The dynamic loader's own symbols are not read, so references to its
    /// private symbols (`_dl_*`, `__libc_*`) are left out.
    pub fn undefined_symbols(&self) -> Vec<UndefinedSymbol> {
        self.undefined_symbols_where(|_| |_: &crate::DynSymbol| true)
    }

    /// The version requirements ld.so refuses: an object requires version `version` of a
    /// library it needs (`.gnu.version_r`), and the file that name resolved to does not define
    /// it: "version `GLIBCXX_3.4.32' not found (required by …)", and the load fails.
    pub fn missing_versions(&self) -> Vec<MissingVersion> {
        let mut out = Vec::new();
        for o in self.objects.iter().filter(|o| !o.rtld) {
            for (file, version) in &o.info.verneed {
                let Some(resolved) = self
                    .resolutions
                    .iter()
                    .find(|r| r.needed_by == o.path && r.name == *file)
                    .and_then(|r| r.path.as_ref())
                else {
                    continue;
                };
                let Some(provider) = self.objects.iter().find(|p| p.path == *resolved) else {
                    continue;
                };
                // The dynamic loader's own versions are not read; a file with no definitions
                // could not be read that far.
                if provider.rtld || provider.info.verdef.is_empty() {
                    continue;
                }
                if !provider.info.verdef.contains(version) {
                    out.push(MissingVersion {
                        version: version.clone(),
                        library: file.clone(),
                        needed_by: o.path.clone(),
                        resolved: resolved.clone(),
                    });
                }
            }
        }
        out
    }

    /// [`Simulation::undefined_symbols`] for the references selected by `keep`, which is asked
    /// once per object for that object's filter (selected first, so a narrow filter makes the
    /// check cheap).
    pub fn undefined_symbols_where<F>(&self, keep: impl Fn(&Loaded) -> F) -> Vec<UndefinedSymbol>
    where
        F: Fn(&crate::DynSymbol) -> bool,
    {
        // A versioned reference is almost always defined by the object its version names (the
        // library `libcudart.so.12` versions its symbols `libcudart.so.12`): ask that one first.
        let by_soname: HashMap<&str, &Loaded> = self
            .objects
            .iter()
            .filter_map(|o| Some((o.soname.as_deref()?, o)))
            .collect();
        let defines = |d: &Loaded, s: &crate::DynSymbol| {
            !d.rtld
                && d.info.defined().get(&s.name).is_some_and(|defs| {
                    defs.iter()
                        .any(|dv| match (dv.as_deref(), s.version.as_deref()) {
                            (None, _) | (_, None) => true,
                            (Some(dv), Some(rv)) => dv == rv,
                        })
                })
        };
        let mut out = Vec::new();
        for o in &self.objects {
            let keep = keep(o);
            for s in o.symbols().iter().filter(|s| !s.defined && !s.weak) {
                if s.name.starts_with("_dl_") || s.name.starts_with("__libc_") || !keep(s) {
                    continue;
                }
                let named = s.version.as_deref().and_then(|v| by_soname.get(v));
                let ok = named.is_some_and(|d| defines(d, s))
                    || self.objects.iter().any(|d| defines(d, s));
                if !ok {
                    out.push(UndefinedSymbol {
                        symbol: s.name.clone(),
                        version: s.version.clone(),
                        needed_by: o.path.clone(),
                    });
                }
            }
        }
        out
    }
}

/// Parses an ELF file through a read-only mapping: only the pages the parser touches are read, so
/// a 500 MB library costs its headers and symbol tables, not its size.
fn parse_file(path: &Path) -> std::io::Result<Option<ElfFile>> {
    if std::fs::metadata(path)?.len() < 64 {
        return Ok(None);
    }
    let map = crate::map_file(path)?;
    Ok(ElfFile::parse(&map).ok())
}

/// The parsed file, from the environment's cache when another simulation read it already.
fn read_object(path: &Path, env: &LoadEnv) -> Option<Arc<ObjInfo>> {
    if let Some(hit) = env.parsed.lock().ok()?.get(path) {
        return hit.clone();
    }
    let info = parse_file(path)
        .ok()
        .flatten()
        .map(|e| Arc::new(ObjInfo::from_elf(e)));
    if let Ok(mut m) = env.parsed.lock() {
        m.insert(path.to_path_buf(), info.clone());
    }
    info
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn loaded(path: PathBuf, info: Arc<ObjInfo>, loader: Option<usize>, name: Option<&str>) -> Loaded {
    let mut names: Vec<String> = info.soname.iter().cloned().collect();
    names.extend(name.map(str::to_string));
    Loaded {
        id: file_id(&path),
        path,
        soname: info.soname.clone(),
        loader,
        names,
        info,
        rtld: false,
        before_main: false,
    }
}

/// Simulates loading `main` (as the main object, as `ldd` does) on the machine `env` describes.
pub fn simulate(main: &Path, env: &LoadEnv) -> Result<Simulation, crate::ElfError> {
    let main = std::path::absolute(main).unwrap_or_else(|_| main.to_path_buf());
    if let Err(e) = std::fs::metadata(&main) {
        return Err(crate::ElfError::Invalid(format!(
            "cannot read {}: {e}",
            main.display()
        )));
    }
    // The caller names the file (doctor: "cannot simulate loading FILE").
    let info = read_object(&main, env).ok_or_else(|| {
        crate::ElfError::Invalid(
            "no ELF file this machine's loader can read: cut short, damaged, or built for \
             another machine"
                .into(),
        )
    })?;
    // What is loaded before the main object (the dynamic loader, the preloaded libraries and
    // what they need) is the same for every simulation with this environment: resolved once.
    let before = env.before_main.get_or_init(|| loaded_before_main(env));
    let mut sim = Simulation {
        objects: vec![loaded(main, info, None, None)],
        resolutions: before.resolutions.clone(),
    };
    sim.objects
        .extend(before.objects.iter().cloned().map(|mut o| {
            o.loader = o.loader.map(|l| l + 1);
            o.before_main = true;
            o
        }));
    run_queue(&mut sim, VecDeque::from([0]), env);
    Ok(sim)
}

/// The dynamic loader and the preloaded libraries with their `NEEDED` closure, as loaded before
/// any main object.
fn loaded_before_main(env: &LoadEnv) -> Simulation {
    let mut sim = Simulation {
        objects: Vec::new(),
        resolutions: Vec::new(),
    };
    if let Some(rtld) = &env.rtld {
        if let Some(info) = read_object(rtld, env) {
            let mut l = loaded(rtld.clone(), info, None, None);
            l.rtld = true;
            sim.objects.push(l);
        }
    }
    let mut queue = VecDeque::new();
    for p in &env.preload {
        if let Some(info) = read_object(p, env) {
            sim.objects.push(loaded(p.clone(), info, None, None));
            queue.push_back(sim.objects.len() - 1);
        }
    }
    run_queue(&mut sim, queue, env);
    sim
}

/// Loads breadth-first: each queued object's `NEEDED` entries in order, queueing what is new.
fn run_queue(sim: &mut Simulation, mut queue: VecDeque<usize>, env: &LoadEnv) {
    while let Some(i) = queue.pop_front() {
        if sim.objects[i].rtld {
            continue;
        }
        let info = sim.objects[i].info.clone();
        for name in &info.needed {
            if let Some(new) = resolve(sim, i, name, env) {
                queue.push_back(new);
            }
        }
    }
}

/// What loading `name` for object `i` would find, without loading it.
enum Found {
    /// Already loaded (by name, or as the same file): that object's index.
    Loaded(Resolution, usize),
    /// Nowhere to be found.
    Missing(Resolution),
    /// A file to load, parsed.
    New(Resolution, Arc<ObjInfo>),
}

/// Looks `name` up for object `i` by ld.so's rules; changes nothing.
fn locate(sim: &Simulation, i: usize, name: &str, env: &LoadEnv) -> Found {
    let mut res = Resolution {
        name: name.to_string(),
        needed_by: sim.objects[i].path.clone(),
        path: None,
        rule: None,
        tried: Vec::new(),
    };
    if !name.contains('/') {
        if let Some(k) = sim
            .objects
            .iter()
            .position(|o| o.names.iter().any(|n| n == name))
        {
            res.path = Some(sim.objects[k].path.clone());
            res.rule = Some(Rule::AlreadyLoaded);
            return Found::Loaded(res, k);
        }
    }
    let (machine, class) = (sim.objects[i].info.machine, sim.objects[i].info.class);
    let found = if name.contains('/') {
        let p = PathBuf::from(expand(name, &sim.objects[i].path, env));
        res.tried.push(p.clone());
        accept(&p, machine, class, env).map(|e| (p, e, Rule::Path))
    } else {
        search(sim, i, name, env, &mut res.tried)
    };
    let Some((path, info, rule)) = found else {
        return Found::Missing(res);
    };
    // The same file loaded under another name is not loaded twice.
    let id = file_id(&path);
    if let Some(k) = sim
        .objects
        .iter()
        .position(|o| o.id.is_some() && o.id == id)
    {
        res.path = Some(sim.objects[k].path.clone());
        res.rule = Some(Rule::AlreadyLoaded);
        return Found::Loaded(res, k);
    }
    res.path = Some(path);
    res.rule = Some(rule);
    Found::New(res, info)
}

/// Resolves one entry of object `i`; returns the index of a newly loaded object.
fn resolve(sim: &mut Simulation, i: usize, name: &str, env: &LoadEnv) -> Option<usize> {
    match locate(sim, i, name, env) {
        Found::Loaded(res, k) => {
            // A file loaded under another name answers to this one from now on.
            let names = &mut sim.objects[k].names;
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
            sim.resolutions.push(res);
            None
        }
        Found::Missing(res) => {
            sim.resolutions.push(res);
            None
        }
        Found::New(res, info) => {
            let path = res.path.clone().expect("a new object has a path");
            sim.resolutions.push(res);
            sim.objects.push(loaded(path, info, Some(i), Some(name)));
            Some(sim.objects.len() - 1)
        }
    }
}

/// Where a plain `dlopen(name)` with no search path of its own finds `name` (a library of this
/// machine): `LD_LIBRARY_PATH`, the cache, the system directories.
pub fn find_on_system(name: &str, env: &LoadEnv) -> Option<(PathBuf, Rule)> {
    let (machine, class) = (crate::host_machine(), 64);
    let mut tried = Vec::new();
    for d in &env.ld_library_path {
        if let Some((p, _)) = try_dir(env, d, name, machine, class, &mut tried) {
            return Some((p, Rule::LdLibraryPath));
        }
    }
    cache_or_system(env, name, machine, class, &mut tried).map(|(p, _, rule)| (p, rule))
}

/// `name` in directory `dir`, its `glibc-hwcaps/<level>` subdirectories first, as a file of this
/// machine and class; the paths tried are added to `tried`.
fn try_dir(
    env: &LoadEnv,
    dir: &str,
    name: &str,
    machine: u16,
    class: u8,
    tried: &mut Vec<PathBuf>,
) -> Option<(PathBuf, Arc<ObjInfo>)> {
    let base = PathBuf::from(if dir.is_empty() { "." } else { dir });
    let plain = base.join(name);
    let candidates = env
        .hwcaps
        .iter()
        .map(|h| base.join("glibc-hwcaps").join(h).join(name))
        .chain(std::iter::once(plain.clone()));
    for p in candidates {
        // Most directories on a search path hold no such file: the listing, read once per
        // directory for all simulations, answers without a system call.
        let listed = p.parent().is_some_and(|d| dir_has(env, d, name));
        if listed {
            if let Some(e) = accept(&p, machine, class, env) {
                return Some((p, e));
            }
        }
        if listed || p == plain {
            tried.push(p);
        }
    }
    None
}

/// The last two steps of every search: `ld.so.cache`, then the system directories.
fn cache_or_system(
    env: &LoadEnv,
    name: &str,
    machine: u16,
    class: u8,
    tried: &mut Vec<PathBuf>,
) -> Option<(PathBuf, Arc<ObjInfo>, Rule)> {
    if let Some(p) = env.cache.lookup(name, machine, class) {
        if let Some(e) = accept(p, machine, class, env) {
            return Some((p.to_path_buf(), e, Rule::Cache));
        }
    }
    let system = if env.system_dirs.is_empty() {
        default_dirs(machine, class)
    } else {
        env.system_dirs.clone()
    };
    system.iter().find_map(|d| {
        try_dir(env, &d.display().to_string(), name, machine, class, tried)
            .map(|(p, e)| (p, e, Rule::SystemDir))
    })
}

/// Whether directory `dir` holds an entry `name`, from a listing read once and shared through the
/// environment (a directory that cannot be read holds nothing, as for ld.so).
fn dir_has(env: &LoadEnv, dir: &Path, name: &str) -> bool {
    let Ok(mut dirs) = env.listings.lock() else {
        return Path::new(dir).join(name).exists();
    };
    let listing = dirs.entry(dir.to_path_buf()).or_insert_with(|| {
        std::fs::read_dir(dir).ok().map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
    });
    listing.as_ref().is_some_and(|l| l.contains(name))
}

/// An ELF file of the right machine and class at `p`, or none.
fn accept(p: &Path, machine: u16, class: u8, env: &LoadEnv) -> Option<Arc<ObjInfo>> {
    if !p.is_file() {
        return None;
    }
    let info = read_object(p, env)?;
    (info.machine == machine && info.class == class).then_some(info)
}

/// Expands `$ORIGIN`, `$LIB`, `$PLATFORM` (and their `${…}` forms) for an entry of `owner`.
fn expand(entry: &str, owner: &Path, env: &LoadEnv) -> String {
    let origin = owner
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let mut s = entry.to_string();
    for (token, value) in [
        ("ORIGIN", origin.as_str()),
        ("LIB", env.lib.as_str()),
        ("PLATFORM", env.platform.as_str()),
    ] {
        s = s.replace(&format!("${{{token}}}"), value);
        // `$ORIGIN` only when not followed by more identifier characters.
        let pat = format!("${token}");
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(at) = rest.find(&pat) {
            let after = &rest[at + pat.len()..];
            out.push_str(&rest[..at]);
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                out.push_str(&pat);
            } else {
                out.push_str(value);
            }
            rest = after;
        }
        out.push_str(rest);
        s = out;
    }
    s
}

fn search(
    sim: &Simulation,
    i: usize,
    name: &str,
    env: &LoadEnv,
    tried: &mut Vec<PathBuf>,
) -> Option<(PathBuf, Arc<ObjInfo>, Rule)> {
    let (machine, class) = (sim.objects[i].info.machine, sim.objects[i].info.class);
    let try_dir =
        |dir: &str, tried: &mut Vec<PathBuf>| try_dir(env, dir, name, machine, class, tried);
    let obj = &sim.objects[i];
    if obj.info.runpath.is_empty() {
        // The RPATH of the needing object, then of its loader, and so on up to the main object.
        let mut l = Some(i);
        while let Some(li) = l {
            let owner = &sim.objects[li];
            for entry in owner.info.rpath.iter().filter(|_| !owner.rtld) {
                let dir = expand(entry, &owner.path, env);
                if let Some((p, e)) = try_dir(&dir, tried) {
                    return Some((
                        p,
                        e,
                        Rule::Rpath {
                            owner: owner.path.clone(),
                        },
                    ));
                }
            }
            l = owner.loader;
        }
    }
    let main = &sim.objects[0].path;
    for entry in &env.ld_library_path {
        let dir = expand(entry, main, env);
        if let Some((p, e)) = try_dir(&dir, tried) {
            return Some((p, e, Rule::LdLibraryPath));
        }
    }
    for entry in &obj.info.runpath {
        let dir = expand(entry, &obj.path, env);
        if let Some((p, e)) = try_dir(&dir, tried) {
            return Some((p, e, Rule::Runpath));
        }
    }
    cache_or_system(env, name, machine, class, tried)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_expand_only_as_whole_words() {
        let env = LoadEnv::bare(LdCache::default(), vec![], "lib64".into(), "x86_64".into());
        let owner = Path::new("/opt/pkg/sub/mod.so");
        assert_eq!(expand("$ORIGIN/../lib", owner, &env), "/opt/pkg/sub/../lib");
        assert_eq!(
            expand("${ORIGIN}/x:$LIB/$PLATFORM", owner, &env),
            "/opt/pkg/sub/x:lib64/x86_64"
        );
        assert_eq!(expand("$ORIGINAL/x", owner, &env), "$ORIGINAL/x");
        assert_eq!(split_path_list("/a::/b;/c"), vec!["/a", "/b", "/c"]);
    }

    #[test]
    fn loader_settings_come_from_list_diagnostics() {
        let mut env = LoadEnv::bare(LdCache::default(), vec![], "x".into(), "x".into());
        env.apply_diagnostics(
            "dl_dst_lib=\"lib/x86_64-linux-gnu\"\ndl_hwcaps_subdirs=\"x86-64-v4:x86-64-v3:x86-64-v2\"\n\
             dl_hwcaps_subdirs_active=0x6\ndl_platform=\"x86_64\"\n\
             path.system_dirs[0x0]=\"/lib/x86_64-linux-gnu/\"\npath.system_dirs[0x1]=\"/usr/lib/\"\npath.rtld=\"/lib64/ld-linux-x86-64.so.2\"\n",
        );
        assert_eq!(env.lib, "lib/x86_64-linux-gnu");
        assert_eq!(env.platform, "x86_64");
        assert_eq!(env.hwcaps, vec!["x86-64-v3", "x86-64-v2"]);
        assert_eq!(env.rtld, Some(PathBuf::from("/lib64/ld-linux-x86-64.so.2")));
        assert_eq!(
            env.system_dirs,
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu"),
                PathBuf::from("/usr/lib")
            ]
        );
    }
}
