//! What loads when, read off a package's files and never by running them: the load tiers of its
//! ELF files and the libraries its own Python preloads.
//!
//! - **Import**: extension modules (an `import` reaches them) and the libraries their `NEEDED`
//!   closure reaches inside the package, and what the package's Python loads when it is imported.
//! - **On demand**: plain libraries that no extension module needs (onnxruntime's CUDA provider,
//!   torch's `libcaffe2_nvrtc.so`): a missing dependency fails only when something loads them.
//! - **Variant**: one library per CUDA release, the package picks one at run time
//!   (`libbitsandbytes_cuda118.so` … `_cuda132.so`): judged one by one, never all at once.
//!
//! Preloads are found in the package's `.py` files (and the `.json` files they read), parsed by
//! [`crate::pysource`]: calls of `ctypes.CDLL` / `cdll.LoadLibrary` / `PyDLL` with the library
//! names written in the same function or the functions around it (faiss' `loader.py` with
//! `_preload_library.json`, RAPIDS' `load.py`, torch's `_preload_cuda_deps` patterns),
//! cuda-pathfinder's `load_nvidia_dynamic_lib("name")`, and the loader functions of the wheels
//! that provide a library (RAPIDS' `librmm.load_library()`, named by the catalog's
//! `python_loader`: what it loads is read off the catalog, the function lives in another wheel).
//! A call is known by what its name stands for through the file's imports, so an alias is the
//! loader it names. A preload runs at import when the import of the package reaches its call
//! ([`crate::pysource::reach`]: module-level code of the modules the import runs, and the
//! functions it calls, resolved through each file's definitions and imports; branches that never
//! run on Linux skipped); otherwise it runs only when a function is called
//! (`onnxruntime.preload_dlls()`), which is said. A call loads the name it is given when it is
//! written there; a name passed as its function's first parameter, what that function's callers
//! pass; otherwise a `ctypes` call loads the names its own function writes, else those of the
//! functions it calls, else those of its callers. A call inside `try … except` that catches its
//! failure is optional: the import does not fail without the library.
//!
//! A function that finds a library and sets an environment variable to its path
//! (`os.environ[KEY] = str(found)`) hands that library on to a native file that reads the
//! variable ([`Mechanism::Environment`]): a load of it where such a file is among those judged
//! ([`Scan::hand_over`]).
//!
//! What a name computed at run time from pieces stands for (bitsandbytes' variant name) is not
//! read: such a name is not a preload of a CUDA library.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cudist_catalog::pathfinder::{PathfinderLib, PathfinderTable};
use cudist_catalog::Catalog;
use serde::Serialize;

use crate::pysource::{self, File, Scope};

/// A text file of a package: a `.py` module or a `.json` data file.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its path in the artifact (`faiss/loader.py`).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// The largest source file read for preloads.
pub const MAX_SOURCE: u64 = 1 << 20;

/// Whether a file of a package is read for preloads: `.py` and `.json` files up to 1 MiB.
pub fn is_source(path: &str, size: u64) -> bool {
    size <= MAX_SOURCE && (path.ends_with(".py") || path.ends_with(".json"))
}

/// Whether a source is worth keeping: every module (any may call a loader's function at
/// import), and data files that name a library.
pub fn worth_keeping(path: &str, text: &str) -> bool {
    !path.ends_with(".json") || text.contains(".so")
}

/// Whether a library name or file-name pattern names a machine other than `arch` (`x86_64`,
/// `aarch64`, …) as one of its parts (`PyNvVideoCodec*.cpython-*-aarch64-linux-gnu*`): a file
/// built for another machine, which a loader on `arch` never opens.
pub fn names_another_machine(name: &str, arch: &str) -> bool {
    const MACHINES: [&str; 8] = [
        "x86_64",
        "aarch64",
        "ppc64le",
        "s390x",
        "i686",
        "armv7l",
        "riscv64",
        "loongarch64",
    ];
    name.split(['-', '.', '*', '/'])
        .any(|part| part != arch && MACHINES.contains(&part))
}

/// The most source text kept per artifact; past it, the rest is not read (torch has 60 MB of
/// Python, but the modules that load libraries are few and small).
pub const MAX_SOURCES_TOTAL: u64 = 256 << 20;

/// How a package's Python loads a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// `ctypes.CDLL`, `ctypes.cdll.LoadLibrary`, `ctypes.PyDLL`.
    Ctypes,
    /// cuda-pathfinder's `load_nvidia_dynamic_lib`.
    CudaPathfinder,
    /// The loader function of the wheel that provides the library (`librmm.load_library()`).
    PackageLoader,
    /// The package's Python finds the file and hands its path to a native file through an
    /// environment variable that file reads (`os.environ["SYMMETRIX_JIT_NVRTC_LIBRARY"] =
    /// str(path)`): the native file opens what Python found ([`Preload::variable`]).
    Environment,
}

/// A library the package's own Python loads.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Preload {
    /// The library as the code names it: a SONAME (`libcudart.so.12`), a file-name pattern
    /// (`libcublas.so.*[0-9]`) or a cuda-pathfinder name (`cufile`).
    pub name: String,
    /// The SONAMEs it stands for, where the name says (a pattern matches by [`Preload::loads`]).
    pub sonames: Vec<String>,
    /// Where the name is written (`faiss/_preload_library.json:6`).
    pub named_at: String,
    /// The call that loads it (`faiss/loader.py:47`).
    pub loaded_at: String,
    /// How.
    pub mechanism: Mechanism,
    /// The call is reached when the package is imported.
    pub at_import: bool,
    /// Otherwise, the function that must be called first (`preload_dlls`), when one is known.
    pub on_call: Option<String>,
    /// The call is inside `try … except` that catches its failure (`OSError` for `ctypes`,
    /// `DynamicLibNotFoundError` for cuda-pathfinder, `Exception`, a bare `except:`), or runs
    /// only where the code found the file first (`if os.path.exists(path):`): where the library
    /// is missing, the code goes on without it, and the import does not fail.
    pub optional: bool,
    /// Optional only because the code found the file first, nothing catching a failed load: a
    /// file the package carries is there, so it loads, and a library it needs that cannot be
    /// found fails the load (torchao loads each `_C*.so` its directory lists).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub if_present: bool,
    /// Directories below site-packages where a library the code names by a relative path lies,
    /// as Python's `os.path.join(os.path.dirname(__file__), "lib/Linux/libx.so")` finds it: the
    /// naming file's directory, or its top package's, joined with the path's directories, for
    /// every path that the file writes with this name (pyqrack picks one of several by
    /// platform). Tried before the package's own directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub near: Vec<String>,
    /// For [`Mechanism::Environment`], the variable set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
}

impl Preload {
    /// Whether the import fails when this library cannot be loaded: loaded at import, and not
    /// [`Preload::optional`].
    pub fn required_at_import(&self) -> bool {
        self.at_import && !self.optional
    }

    /// Whether the import fails when this file, carried by the package, fails to load: loaded at
    /// import where nothing catches the failure (a file the code finds first is there).
    pub fn carried_required_at_import(&self) -> bool {
        self.at_import && (!self.optional || self.if_present)
    }
}

/// Whether a library name as code gives it stands for `soname`: the name itself, or a pattern
/// it matches (`libcudart.so*`, `libcublas.so.*[0-9]`).
pub fn names_library(name: &str, soname: &str) -> bool {
    name == soname
        || (name.contains(['*', '?', '['])
            && glob::Pattern::new(name).is_ok_and(|p| p.matches(soname)))
}

impl Preload {
    /// Whether this preload loads the library `soname`.
    pub fn loads(&self, soname: &str) -> bool {
        self.sonames.iter().any(|s| s == soname) || names_library(&self.name, soname)
    }

    /// What runs the load when the import does not: `_load()` (a function), or `import
    /// cuda.cccl.parallel.experimental._bindings` (module code of a module the import does not
    /// reach, as cuda-cccl's preloads before its extension module's import).
    pub fn trigger(&self) -> String {
        let file_of = |at: &str| at.rsplit_once(':').map_or("", |(f, _)| f).to_string();
        match &self.on_call {
            // A module's `__getattr__` runs on the first use of a name the module does not
            // define (PEP 562: cupy's lazily imported submodules): named with its module.
            Some(f) if f == "__getattr__" => match pysource::module_name(&file_of(&self.loaded_at))
            {
                Some(m) => format!("{m}.__getattr__()"),
                None => format!("{f}()"),
            },
            Some(f) => format!("{f}()"),
            None => {
                // The module code that runs it: where the call is, or, for a name passed to a
                // loading function (cupy's `_preload_library("nccl")` in `cupy/cuda/nccl.py`),
                // where the name is passed.
                let named = file_of(&self.named_at);
                let file = if named.ends_with(".py") {
                    named
                } else {
                    file_of(&self.loaded_at)
                };
                match pysource::module_name(&file) {
                    Some(m) => format!("import {m}"),
                    None => "a function".to_string(),
                }
            }
        }
    }

    /// `faiss/loader.py:47`, or `…:47 (named at faiss/_preload_library.json:6)` when the name is
    /// written elsewhere, or `…:12 (in libcuvs.load_library())` when another wheel's loader that
    /// the call runs names it; a wheel's loader with its call (`librmm.load_library() at
    /// rmm/__init__.py:12`).
    pub fn place(&self) -> String {
        if self.mechanism == Mechanism::PackageLoader {
            return format!("{} at {}", self.name, self.loaded_at);
        }
        if let Some(v) = self.variable.as_deref() {
            return format!("{} (its path handed on in {v})", self.loaded_at);
        }
        // Named in another wheel's loader that the call runs (`libcuvs.load_library()`).
        if self.named_at.ends_with("()") {
            return format!("{} (in {})", self.loaded_at, self.named_at);
        }
        if self.named_at.split(':').next() == self.loaded_at.split(':').next() {
            self.loaded_at.clone()
        } else {
            format!("{} (named at {})", self.loaded_at, self.named_at)
        }
    }
}

/// String literals of a line of a `.json` file (single or double quoted, no escapes needed for
/// library names).
fn literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let q = bytes[i];
        if q == b'"' || q == b'\'' {
            let Some(len) = code[i + 1..].find(q as char) else {
                break;
            };
            out.push(&code[i + 1..i + 1 + len]);
            i += len + 2;
            continue;
        }
        i += 1;
    }
    out
}

/// Whether `name` is a linker name (`libnvrtc.so`) written beside a SONAME or a pattern of the
/// same library among `all` (`libnvrtc.so.*`): a fallback the code takes only where the other is
/// not found (torch's `_get_nvrtc_library()` tries `f"libnvrtc.so.{major}"`, then
/// `"libnvrtc.so"`; symmetrix globs both), not a library of its own, and no wheel installs it.
fn is_fallback_linker_name<'a>(name: &str, mut all: impl Iterator<Item = &'a str>) -> bool {
    let Some(stem) = name.strip_suffix(".so") else {
        return false;
    };
    all.any(|n| {
        n.strip_prefix(stem)
            .and_then(|t| t.strip_prefix(".so"))
            .is_some_and(|t| !t.is_empty())
    })
}

/// Whether a string names a shared library: `libX.so`, `libX.so.N[.M]`, or such a pattern
/// (`libcublas.so.*[0-9]`).
fn is_library_name(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("lib") else {
        return false;
    };
    let Some((stem, tail)) = rest.split_once(".so") else {
        return false;
    };
    !stem.is_empty()
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+.".contains(c))
        && (tail.is_empty()
            || tail == "*"
            || (tail.starts_with('.')
                && tail[1..]
                    .chars()
                    .all(|c| c.is_ascii_digit() || ".*[]-?".contains(c))))
}

/// Whether a string is the name of a shared object file or a pattern of such names (`_C.so`,
/// `_C*.so`, `*.so`): what a load by path (`torch.ops.load_library`) can be given.
///
/// Also the name of an extension module with its suffix left to run time
/// (`f"PyNvVideoCodec{suffix}.cpython-{v}-x86_64-linux-gnu{ext}"` → `PyNvVideoCodec*.cpython-*-x86_64-linux-gnu*`).
fn is_file_name(s: &str) -> bool {
    let name_chars = |stem: &str| {
        !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-+.*?[]".contains(c))
    };
    s.strip_suffix(".so").is_some_and(name_chars)
        || (s.contains(".cpython-") && s.ends_with('*') && name_chars(s))
}

/// A load call found in a file.
struct Call {
    /// The file and the function it is in.
    scope: Scope,
    /// Its statement in the file.
    stmt: usize,
    mechanism: Mechanism,
    /// cuda-pathfinder's literal argument; the package loader's name.
    argument: Option<String>,
    /// In a lambda's body: it runs when the lambda is called.
    deferred: bool,
    /// Inside `try … except` that catches its failure, or run only where the code found the file
    /// first ([`Preload::optional`]).
    optional: bool,
    /// Optional only because the file was found first ([`Preload::if_present`]).
    if_present: bool,
    /// For a wheel's loader: the call is caught for cuda-pathfinder's error too, so what the
    /// loader hands cuda-pathfinder is optional ([`Catalog::python_loader_pathfinder`]).
    pathfinder_optional: bool,
    /// Its argument is the first parameter of its function: it loads what the function's
    /// callers pass.
    passed: bool,
    /// It loads a file by path, whatever the file's name (`torch.ops.load_library`): a name it
    /// is given need not look like `libX.so`.
    by_path: bool,
}

/// Whether classes caught around a call ([`pysource::File::caught`]) include the error a failed
/// load by `m` raises: `OSError` from `ctypes` (and the wheels' loaders, which use it),
/// `DynamicLibNotFoundError` (a `RuntimeError`) from cuda-pathfinder, or a base class.
fn catches_failure(caught: &[String], m: Mechanism) -> bool {
    caught.iter().any(|c| match c.as_str() {
        "*" | "Exception" | "BaseException" => true,
        "OSError" | "EnvironmentError" | "IOError" => m != Mechanism::CudaPathfinder,
        "RuntimeError" | "DynamicLibNotFoundError" => m == Mechanism::CudaPathfinder,
        _ => false,
    })
}

/// What a package's Python does at import, as far as loading goes.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// The libraries it loads ([`preloads`]).
    pub preloads: Vec<Preload>,
    /// Modules outside the package that its import imports (`torch` for bitsandbytes), each
    /// with the `file:line` of the first import: their own import runs first, and can fail.
    pub imports: Vec<(String, String)>,
    /// Every module its imports name, with how the import of the package reaches it: decides
    /// whether an extension module loads at import ([`tiers`]).
    pub modules: BTreeMap<String, pysource::ImportedAt>,
    /// The entry-point groups its code reads (`entry_points(group="jax_plugins")`,
    /// `pkg_resources.iter_entry_points("G")`): the modules installed distributions register
    /// there are its plugins, imported when that code runs.
    pub plugin_groups: Vec<PluginGroup>,
    /// Functions of modules outside the package that its import calls (`libcuopt.load_library()`
    /// from cuopt's `__init__.py`): what such a function loads, read from that package, loads
    /// during this import.
    pub outside_calls: Vec<OutsideCall>,
    /// Directories of carried libraries (`nvidia_pytriton.libs`) that the package names where it
    /// also sets `LD_LIBRARY_PATH`: the programs it starts find libraries there by name
    /// ([`library_path_dirs`]), each with where it is named.
    pub library_path_dirs: Vec<(String, String)>,
    /// The CUDA libraries it looks for with `ctypes.util.find_library("nvrtc")` ([`Find`]).
    pub finds: Vec<Find>,
    /// Packages its functions look up with `importlib.util.find_spec("…")` (a name, or a pattern
    /// for a name built at run time: `f"bartorch_cuda{major}"` is `bartorch_cuda*`) when they
    /// run, not at import: the code uses their files then (bartorch loads `libbartorch.so` from
    /// the CUDA build it finds). Each with where, and the function that leads to it.
    pub found_specs: Vec<FoundSpec>,
    /// Libraries whose path its Python hands on in an environment variable
    /// ([`Mechanism::Environment`]): each a load only where a native file reads that variable
    /// ([`Scan::hand_over`]).
    pub handoffs: Vec<Preload>,
}

impl Scan {
    /// Makes loads of the handoffs whose variable a native file reads (`read`: the variables the
    /// files that open libraries themselves read, [`crate::model::LazyLoad::variables`]); a
    /// variable no file reads is for some other program.
    pub fn hand_over(&mut self, read: &BTreeSet<String>) {
        for p in &self.handoffs {
            let is_read = p.variable.as_ref().is_some_and(|v| read.contains(v));
            if is_read
                && !self
                    .preloads
                    .iter()
                    .any(|q| q.name == p.name && q.loaded_at == p.loaded_at)
            {
                self.preloads.push(p.clone());
            }
        }
    }
}

/// A package a function looks up with `find_spec` ([`Scan::found_specs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSpec {
    /// The module name, or a pattern (`bartorch_cuda*`).
    pub module: String,
    /// The call's `file:line`.
    pub at: String,
    /// The function a program calls that leads to it (`library`).
    pub function: String,
}

/// A CUDA library the package looks for by its bare name (`nvrtc` for `libnvrtc`): with
/// `ctypes.util.find_library`, which searches where the system keeps libraries (its loader's
/// cache, LD_LIBRARY_PATH, the compiler's paths) and never a CUDA wheel's directory, or with a
/// `ctypes.CDLL` subclass of its own, whose search is its own (tinygrad's `DLL('nvrtc', …)`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Find {
    /// The name asked for (`nvrtc`).
    pub name: String,
    /// The package's own `ctypes.CDLL` subclass that looks (`DLL`), none for
    /// `ctypes.util.find_library`.
    pub class: Option<String>,
    /// The catalog library it names (`lib` + name is its stem).
    pub library: String,
    /// Where (`keopscore/config/cuda.py:73`).
    pub at: String,
    /// The call is reached when the package is imported.
    pub at_import: bool,
}

/// The directories of carried libraries a package names (a string literal that is a `.libs`
/// directory, auditwheel's and meson-python's name for them), where its code also writes the
/// name `LD_LIBRARY_PATH`: nvidia-pytriton copies its `tritonserver` program into a workspace
/// and starts it with `nvidia_pytriton.libs` on `LD_LIBRARY_PATH`, so the copy finds its
/// libraries there, not through its RPATH. The link between the two is not followed: a package
/// that writes both is taken to mean it.
fn library_path_dirs(files: &[File]) -> Vec<(String, String)> {
    let literals = || {
        files.iter().flat_map(|f| {
            f.stmts
                .iter()
                .enumerate()
                .filter(|(i, _)| !f.excluded[*i])
                .flat_map(move |(_, s)| s.literals.iter().map(move |l| (f.path, l)))
        })
    };
    if !literals().any(|(_, l)| l.value == "LD_LIBRARY_PATH") {
        return Vec::new();
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for (path, l) in literals() {
        let dir = l.value.trim_end_matches('/');
        let dir = dir.rsplit('/').next().unwrap_or(dir);
        if dir.len() > 5 && dir.ends_with(".libs") && !out.iter().any(|(d, _)| d == dir) {
            out.push((dir.to_string(), format!("{path}:{}", l.line)));
        }
    }
    out
}

/// A call at import of a function of a module outside the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideCall {
    /// The outside module's top-level name (`libcuopt`).
    pub module: String,
    /// The function, by its last name (`load_library`).
    pub function: String,
    /// The call's `file:line`.
    pub at: String,
    /// Inside `try … except` that catches a failed load.
    pub optional: bool,
}

/// An entry-point group a package reads its plugins from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginGroup {
    /// The group (`jax_plugins`).
    pub group: String,
    /// The `file:line` of the first read.
    pub at: String,
    /// The function that reads it catches any exception somewhere in its body (JAX's
    /// `discover_pjrt_plugins` around each plugin's `initialize()`): a plugin that fails is
    /// logged and left out, and the package goes on without it.
    pub goes_on_without: bool,
}

/// Every preload the sources show, for a package of CUDA major `cuda_major` (cuda-pathfinder
/// names are resolved to that major's SONAMEs).
pub fn preloads(sources: &[Source], catalog: &Catalog, cuda_major: Option<u32>) -> Vec<Preload> {
    scan(sources, catalog, cuda_major).preloads
}

/// The library names a scope writes (`"libcudart.so.12"`, and those of the `.json` files it
/// names), each with its place. A name that is only tested against (`"libcudart.so" in maps`)
/// is not one it loads; one in a lambda's body counts only for a call in a lambda (`deferred`).
///
/// `args` are the literals the calls pass the function as its first parameter, when that is
/// known: the branches that test that parameter against none of them are not read
/// ([`File::runs_for`]). Where the scope writes no whole name, the start of one with no suffix
/// (`libtransformer_engine`, matched against the files of a directory at run time) names every
/// file that starts with it (`libX*.so*`).
fn names_in(
    sources: &[Source],
    file: &File,
    scope: Option<usize>,
    deferred: bool,
    by_path: bool,
    args: Option<&[String]>,
) -> Vec<(String, String)> {
    let mut named = Vec::new();
    let mut stems = Vec::new();
    // A scope that lists directories (`glob.glob(os.path.join(d, lib_name + "*"))`) and loads
    // by a name it computes loads the files it found: a linker name it writes is the start of
    // their names (moreau-cuda13's `"libcudart.so"` finds `nvidia/cu13/lib/libcudart.so.13`).
    let lists = file.stmts.iter().enumerate().any(|(si, s)| {
        file.scope[si] == scope && s.calls.iter().any(|c| pysource::is_listing(&c.callee))
    });
    for (si, s) in file.stmts.iter().enumerate() {
        if file.scope[si] != scope
            || file.excluded[si]
            || args.is_some_and(|a| !a.iter().any(|a| file.runs_for(si, a)))
        {
            continue;
        }
        for lit in s
            .literals
            .iter()
            .filter(|l| !l.tested && (deferred || !l.deferred))
        {
            let s = lit.value.as_str();
            // A path in the package names its last component (cuequivariance's
            // `os.path.join(root_dir(), "lib/libcue_ops.so")`).
            let base = s.rsplit('/').next().unwrap_or(s);
            if is_library_name(base) || (by_path && is_file_name(base)) {
                named.push((base.to_string(), format!("{}:{}", file.path, lit.line)));
            } else if pysource::is_library_stem(base) {
                stems.push((
                    format!("{base}*.so*"),
                    format!("{}:{}", file.path, lit.line),
                ));
            } else if s.ends_with(".json") {
                named.extend(json_names(sources, file.path, s));
            }
        }
    }
    // The start of a name only where the scope writes no whole one.
    if named.is_empty() {
        return stems;
    }
    // A linker name it globs for is the start of the files found (one beside a name that
    // extends it is a fallback, left to [`is_fallback_linker_name`]).
    if lists {
        let all: Vec<String> = named.iter().map(|(n, _)| n.clone()).collect();
        for (n, _) in &mut named {
            if n.ends_with(".so") && !is_fallback_linker_name(n, all.iter().map(String::as_str)) {
                n.push('*');
            }
        }
    }
    named
}

/// The directories below site-packages that file `f` names library `name` in by a relative path
/// (`"qrack_lib/Linux/2_35/libqrack_pinvoke.so"`): that path's directories below the file's own
/// directory (`os.path.dirname(__file__)`) and below its top package's.
fn near_dirs(f: &File, name: &str) -> Vec<String> {
    let here = f.path.rsplit_once('/').map_or("", |(d, _)| d);
    let top = f.path.split('/').next().unwrap_or("");
    let mut out: Vec<String> = Vec::new();
    for lit in f
        .stmts
        .iter()
        .flat_map(|s| &s.literals)
        .filter(|l| !l.tested)
    {
        let Some((dir, base)) = lit.value.rsplit_once('/') else {
            continue;
        };
        let plain = |c: &str| {
            !c.is_empty()
                && c != "."
                && c != ".."
                && !c.contains(|ch: char| ch == '*' || ch == '\\' || ch.is_whitespace())
        };
        if base != name || lit.value.starts_with('/') || !dir.split('/').all(plain) {
            continue;
        }
        for root in [here, top] {
            let d = if root.is_empty() {
                dir.to_string()
            } else {
                format!("{root}/{dir}")
            };
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// The string literals that scope `from` passes as first argument in its calls of function
/// `to`: written there (`_get_shared_object_file("core")`), or its own first parameter passed on
/// (`_get_shared_object_file(framework)`), then what its callers pass it, `depth` levels up
/// (`load_framework_extension("torch")`). `None` when any call passes something else.
fn literals_passed(
    files: &[File],
    reach: &pysource::Reach,
    from: Scope,
    to: Scope,
    depth: usize,
) -> Option<Vec<String>> {
    let name = files[to.0].stmts[to.1?].def.as_deref()?;
    let f = &files[from.0];
    let param = from.1.and_then(|d| f.stmts[d].first_param.as_deref());
    let mut out: Vec<String> = Vec::new();
    let mut any = false;
    for call in (0..f.stmts.len())
        .filter(|&si| f.scope[si] == from.1 && !f.excluded[si])
        .flat_map(|si| f.stmts[si].calls.iter())
        .filter(|call| last(&call.callee) == name)
    {
        any = true;
        match (&call.arg, &call.arg_name) {
            (Some(a), _) => out.push(a.clone()),
            (None, Some(n)) if depth > 0 && param == Some(n.as_str()) => {
                let callers = reach.callers.get(&from)?;
                for by in callers.iter().filter(|b| **b != from) {
                    out.extend(literals_passed(files, reach, *by, from, depth - 1)?);
                }
            }
            _ => return None,
        }
    }
    (any && !out.is_empty()).then_some(out)
}

/// The values of function `scope`'s first parameter for which its calls of `callee` run, where
/// every such call is in a branch that lists them (`if lib == 'nccl':`); none otherwise.
fn admitted_for_calls(
    file: &File,
    scope: Option<usize>,
    callee_file: &File,
    callee: Scope,
) -> Option<Vec<String>> {
    let name = callee_file.stmts[callee.1?].def.as_deref()?;
    let mut out: Option<Vec<String>> = None;
    for si in (0..file.stmts.len()).filter(|&si| {
        file.scope[si] == scope
            && !file.excluded[si]
            && file.stmts[si].calls.iter().any(|k| last(&k.callee) == name)
    }) {
        out.get_or_insert_with(Vec::new).extend(file.admitted(si)?);
    }
    out
}

/// Whether a call loads a file by the path it is given: torch's loader of operator libraries,
/// and an extension module's loader from a file location.
fn loads_by_path(canonical: &str) -> bool {
    matches!(
        canonical,
        "torch.ops.load_library"
            | "torch.classes.load_library"
            | "importlib.util.spec_from_file_location"
            | "importlib.machinery.ExtensionFileLoader"
    )
}

/// The last component of a dotted name (`ctypes.cdll.LoadLibrary` → `LoadLibrary`).
fn last(dotted: &str) -> &str {
    dotted.rsplit('.').next().unwrap_or(dotted)
}

/// Every preload and outside import the sources show, for a package of CUDA major `cuda_major`.
/// What runs at import is read by [`pysource::reach`]: the module-level code of the modules the
/// import of the package's top-level modules reaches, and the functions that code calls. A call
/// is known by what its name stands for through the file's imports
/// ([`pysource::File::canonical`]), so an alias (`from cuda.pathfinder import
/// load_nvidia_dynamic_lib as _load`) is the loader it names.
pub fn scan(sources: &[Source], catalog: &Catalog, cuda_major: Option<u32>) -> Scan {
    scan_with(sources, catalog, cuda_major, PathfinderTable::builtin())
}

/// [`scan`] with cuda-pathfinder's table read elsewhere (the one installed where the package
/// runs: [`installed_pathfinder`]).
pub fn scan_with(
    sources: &[Source],
    catalog: &Catalog,
    cuda_major: Option<u32>,
    pathfinder: &PathfinderTable,
) -> Scan {
    let py: Vec<(&str, &str)> = sources
        .iter()
        .filter(|s| s.path.ends_with(".py"))
        .map(|s| (s.path.as_str(), s.text.as_str()))
        .collect();
    let files: Vec<File> = pysource::read_files_under(&py, &path_roots(&py));
    let loaders: Vec<String> = catalog.python_loaders().into_iter().collect();
    let mut calls = Vec::new();
    let mut plugin_groups: Vec<PluginGroup> = Vec::new();
    // The package's own top-level modules: a call into any other is a candidate outside call
    // (file, statement, callee), kept if the import reaches it and imports that module.
    let own: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.path.split('/').next())
        .map(|t| t.strip_suffix(".py").unwrap_or(t))
        .collect();
    let mut outside: Vec<(usize, usize, String)> = Vec::new();
    // `ctypes.util.find_library("nvrtc")` calls, and bare names given to a `ctypes.CDLL`
    // subclass.
    struct FindAt {
        scope: Scope,
        stmt: usize,
        /// The literal name, none for a name the function is given.
        name: Option<String>,
        deferred: bool,
        /// The subclass, none for find_library.
        class: Option<String>,
    }
    let mut finds_at: Vec<FindAt> = Vec::new();
    // The package's own `ctypes.CDLL` subclasses, by the dotted name a call reaches them by
    // (`tinygrad.runtime.support.c.DLL`), and by their bare name in their own file.
    let mut cdll_classes: BTreeMap<String, String> = BTreeMap::new();
    let mut cdll_here: BTreeSet<(usize, String)> = BTreeSet::new();
    for (fi, f) in files.iter().enumerate() {
        for class in f.classes_deriving(&["ctypes.CDLL", "ctypes.PyDLL"]) {
            if let Some(m) = &f.module {
                cdll_classes.insert(format!("{m}.{class}"), class.clone());
            }
            cdll_here.insert((fi, class));
        }
    }
    // The environment variables set, each with its statement.
    let mut env_at: Vec<(Scope, usize, String)> = Vec::new();
    // `find_spec` calls in functions: (scope, statement, module or pattern).
    let mut specs_at: Vec<(Scope, usize, String)> = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        for (si, st) in f.stmts.iter().enumerate() {
            // Never a call under a branch that does not run on Linux.
            if f.excluded[si] {
                continue;
            }
            let scope = (fi, f.scope[si]);
            for v in f.env_sets(si) {
                env_at.push((scope, si, v));
            }
            for call in &st.calls {
                let canonical = f.canonical(&call.callee, si);
                if last(&canonical) == "find_spec" && scope.1.is_some() && !call.deferred {
                    if let Some(m) = call
                        .arg
                        .as_deref()
                        .filter(|m| pysource::is_module_pattern(m))
                    {
                        specs_at.push((scope, si, m.to_string()));
                    }
                }
                if !call.deferred
                    && !loaders.contains(&canonical)
                    && canonical
                        .split_once('.')
                        .is_some_and(|(top, _)| !top.is_empty() && !own.contains(top))
                {
                    outside.push((fi, si, canonical.clone()));
                }
                // A group named by a module constant (`group=ENTRY_POINT_GROUP`) is its value.
                let group_constant = call
                    .group_name
                    .as_deref()
                    .and_then(|n| f.constant(n))
                    .map(String::from);
                let group = match last(&canonical) {
                    "entry_points" | "select" => call.group.clone().or(group_constant),
                    "iter_entry_points" => call
                        .group
                        .clone()
                        .or(group_constant)
                        .or_else(|| call.arg.clone()),
                    _ => None,
                };
                let group = group.as_ref();
                if let Some(g) = group {
                    if !plugin_groups.iter().any(|p| p.group == *g) {
                        let function = f.scope[si];
                        let goes_on_without = (0..f.stmts.len())
                            .filter(|&sj| f.scope[sj] == function && !f.excluded[sj])
                            .any(|sj| {
                                f.caught(sj).iter().any(|c| {
                                    matches!(c.as_str(), "*" | "Exception" | "BaseException")
                                })
                            });
                        plugin_groups.push(PluginGroup {
                            group: g.clone(),
                            at: format!("{}:{}", f.path, st.number),
                            goes_on_without,
                        });
                    }
                    continue;
                }
                if canonical == "ctypes.util.find_library" {
                    match (&call.arg, &call.arg_name) {
                        (Some(name), _) => finds_at.push(FindAt {
                            scope,
                            stmt: si,
                            name: Some(name.clone()),
                            deferred: call.deferred,
                            class: None,
                        }),
                        // A name its function is given (keopscore's
                        // `_try_load_library(self, lib_name)`): what its callers pass.
                        (None, Some(n)) if f.passes_param(f.scope[si], n) => {
                            finds_at.push(FindAt {
                                scope,
                                stmt: si,
                                name: None,
                                deferred: call.deferred,
                                class: None,
                            })
                        }
                        _ => {}
                    }
                    continue;
                }
                // A `ctypes.CDLL` subclass of the package's own is a ctypes load; a bare name
                // it is given (`DLL('nvrtc', …)`) is looked for its own way.
                let subclass = cdll_classes.get(&canonical).cloned().or_else(|| {
                    cdll_here
                        .contains(&(fi, call.callee.clone()))
                        .then(|| call.callee.clone())
                });
                if let Some(class) = &subclass {
                    if let Some(name) = call
                        .arg
                        .as_deref()
                        .filter(|a| !a.contains('/') && !a.contains(".so") && !a.starts_with("lib"))
                    {
                        finds_at.push(FindAt {
                            scope,
                            stmt: si,
                            name: Some(name.to_string()),
                            deferred: call.deferred,
                            class: Some(class.clone()),
                        });
                        continue;
                    }
                }
                // Another wheel's loader (`librapidsmpf.load_library()`), by the convention
                // RAPIDS' and NVIDIA's library wheels share: a known one loads what the catalog
                // says; an unknown one loads what cannot be said here, which is said as such.
                // Such a loader takes no argument; torch's `torch.ops.load_library(path)` is a
                // load by path (below).
                let wheel_loader =
                    loaders
                        .iter()
                        .find(|l| **l == canonical)
                        .cloned()
                        .or_else(|| {
                            canonical
                                .strip_suffix(".load_library")
                                .filter(|m| m.split('.').next().is_some_and(|t| !own.contains(t)))
                                .filter(|_| call.arg.is_none() && call.arg_name.is_none())
                                .filter(|_| !loads_by_path(&canonical))
                                .map(|_| canonical.clone())
                        });
                if let Some(name) = wheel_loader {
                    calls.push(Call {
                        scope,
                        stmt: si,
                        mechanism: Mechanism::PackageLoader,
                        argument: Some(name.to_string()),
                        deferred: call.deferred,
                        optional: catches_failure(f.caught(si), Mechanism::PackageLoader),
                        if_present: false,
                        pathfinder_optional: catches_failure(
                            f.caught(si),
                            Mechanism::CudaPathfinder,
                        ),
                        passed: false,
                        by_path: false,
                    });
                    continue;
                }
                // torch's loader of operator libraries (`torch.ops.load_library(path)`, also
                // reached as `torch.classes.load_library`) is `ctypes.CDLL(path)`: a load by
                // path, of a file of the package whatever its name (fbgemm-gpu's
                // `fbgemm_gpu_tbe_utils.so`, torchao's `_C*.so`).
                // So is an extension module loaded from a file the code finds
                // (`importlib.util.spec_from_file_location(name, path)`, then `exec_module`:
                // PyNvVideoCodec picks `PyNvVideoCodec_130…so` or `_121…so` by the driver).
                let by_path = loads_by_path(&canonical);
                let mechanism = match last(&canonical) {
                    "load_nvidia_dynamic_lib" => Mechanism::CudaPathfinder,
                    "CDLL" | "LoadLibrary" | "PyDLL" => Mechanism::Ctypes,
                    _ if by_path || subclass.is_some() => Mechanism::Ctypes,
                    _ => continue,
                };
                // cuda-pathfinder's argument, when it is a literal; a ctypes call's, when it is a
                // library name or a path to one (its last component).
                let argument = match mechanism {
                    Mechanism::CudaPathfinder => call.arg.clone(),
                    _ => call
                        .arg
                        .as_deref()
                        .map(|a| a.rsplit('/').next().unwrap_or(a))
                        .filter(|a| is_library_name(a) || (by_path && is_file_name(a)))
                        .map(str::to_string),
                };
                let passed = argument.is_none()
                    && call
                        .arg_name
                        .as_deref()
                        .is_some_and(|n| f.passes_param(f.scope[si], n));
                // A ctypes load of a file the code found first goes on without it where it
                // is not (cudnn-frontend's `if lib_path: ctypes.CDLL(lib_path[0])`).
                let found_first =
                    mechanism == Mechanism::Ctypes && (f.found_first(si) || call.found);
                let caught = catches_failure(f.caught(si), mechanism);
                calls.push(Call {
                    scope,
                    stmt: si,
                    mechanism,
                    argument,
                    deferred: call.deferred,
                    optional: found_first || caught,
                    if_present: found_first && !caught,
                    pathfinder_optional: false,
                    passed,
                    by_path,
                });
            }
        }
    }
    // A load in a function every call of which catches its failure is optional too (one level:
    // `try: _load() except OSError: pass`).
    let wanted: BTreeSet<&str> = calls
        .iter()
        .filter_map(|c| files[c.scope.0].stmts[c.scope.1?].def.as_deref())
        .collect();
    let by_name = calls_by_name(&files, &wanted);
    for c in calls.iter_mut().filter(|c| {
        !c.optional
            || c.if_present
            || (c.mechanism == Mechanism::PackageLoader && !c.pathfinder_optional)
    }) {
        let sites = call_sites(&files, &by_name, c.scope);
        let all_catch = |m: Mechanism| {
            !sites.is_empty()
                && sites
                    .iter()
                    .all(|(gi, sj, _)| catches_failure(files[*gi].caught(*sj), m))
        };
        if all_catch(c.mechanism) {
            c.optional = true;
            c.if_present = false;
        }
        if c.mechanism == Mechanism::PackageLoader && all_catch(Mechanism::CudaPathfinder) {
            c.pathfinder_optional = true;
        }
    }
    let reach = pysource::reach(&files);
    // Calls at import into the outside modules the import imports.
    let mut outside_calls: Vec<OutsideCall> = Vec::new();
    for (fi, si, canonical) in outside {
        let f = &files[fi];
        let Some((top, _)) = canonical.split_once('.') else {
            continue;
        };
        if !reach.reached.contains(&(fi, f.scope[si]))
            || !reach.external.iter().any(|(m, _)| m == top)
        {
            continue;
        }
        let c = OutsideCall {
            module: top.to_string(),
            function: last(&canonical).to_string(),
            at: format!("{}:{}", f.path, f.stmts[si].number),
            optional: catches_failure(f.caught(si), Mechanism::Ctypes),
        };
        if !outside_calls
            .iter()
            .any(|o| o.module == c.module && o.function == c.function)
        {
            outside_calls.push(c);
        }
    }
    let def_of = |s: Scope| -> Option<String> { files[s.0].stmts[s.1?].def.clone() };
    // The public function that leads to a call, for calls not reached at import: up the
    // callers while there is one.
    // A public function (no leading `_`, or a dunder such as `__init__`) is where a program can
    // enter: the walk stops there (nvshmem4py's `get_unique_id()` loads its library whether or
    // not `init()` calls it).
    let public = |s: Scope| {
        def_of(s).is_some_and(|n| !n.starts_with('_') || (n.starts_with("__") && n.ends_with("__")))
    };
    let entry_of = |scope: Scope| -> Option<String> {
        let mut f = scope;
        f.1?;
        for _ in 0..8 {
            if public(f) {
                break;
            }
            let callers: Vec<&Scope> = reach
                .callers
                .get(&f)
                .into_iter()
                .flatten()
                .filter(|s| s.1.is_some() && **s != f)
                .collect();
            match callers.as_slice() {
                [one] => f = **one,
                _ => break,
            }
        }
        def_of(f)
    };
    let place = |c: &Call| {
        format!(
            "{}:{}",
            files[c.scope.0].path, files[c.scope.0].stmts[c.stmt].number
        )
    };
    let mut out: Vec<Preload> = Vec::new();
    let mut push = |p: Preload| {
        if !out
            .iter()
            .any(|q| q.name == p.name && q.loaded_at == p.loaded_at)
        {
            out.push(p);
        }
    };
    // Each name with the values of the load's function's first parameter for which it is
    // named, where a branch limits them (none: whatever the callers pass).
    type Named = Vec<(String, String, Option<Vec<String>>)>;
    let mut named_for: BTreeMap<(Scope, bool), Named> = BTreeMap::new();
    for c in &calls {
        let at_import = reach.reached.contains(&c.scope) && !c.deferred;
        let on_call = if at_import { None } else { entry_of(c.scope) };
        // A name passed in by the function's callers; when none passes a literal, the names
        // around the call are read as for any other.
        let computed = c.mechanism == Mechanism::Ctypes
            && c.argument.is_none()
            && !c.by_path
            && c.scope.1.is_some();
        let passed = if c.passed || computed {
            passed_in(&files, &by_name, &reach, c, pathfinder, catalog, cuda_major)
        } else {
            Vec::new()
        };
        if !passed.is_empty() {
            for p in passed {
                push(Preload {
                    loaded_at: place(c),
                    optional: p.optional || c.optional,
                    if_present: c.if_present && !p.optional,
                    ..p
                });
            }
            continue;
        }
        // A parameter no caller passes a literal for, where the code around the call lists the
        // values it loads for (`if name in _submodules:` in cupy's module `__getattr__`, which
        // Python calls on the first use of a submodule): each is a load, when the function runs.
        if c.passed {
            let f = &files[c.scope.0];
            if let Some(values) = f.admitted(c.stmt) {
                for v in values {
                    let (name, sonames) = match c.mechanism {
                        Mechanism::CudaPathfinder => {
                            let so = pathfinder_sonames(&v, pathfinder, catalog, cuda_major);
                            (v, so)
                        }
                        _ if is_library_name(&v) => {
                            let so = named_sonames(&v);
                            (v, so)
                        }
                        _ => continue,
                    };
                    push(Preload {
                        name,
                        sonames,
                        named_at: place(c),
                        loaded_at: place(c),
                        mechanism: c.mechanism,
                        at_import,
                        on_call: on_call.clone(),
                        optional: c.optional,
                        if_present: c.if_present,
                        near: Vec::new(),
                        variable: None,
                    });
                }
                continue;
            }
        }
        match c.mechanism {
            // Not a call: handoffs are read apart, above.
            Mechanism::Environment => {}
            Mechanism::PackageLoader => {
                let Some(f) = &c.argument else { continue };
                push(Preload {
                    name: format!("{f}()"),
                    sonames: catalog.python_loader_sonames(f),
                    named_at: place(c),
                    loaded_at: place(c),
                    mechanism: c.mechanism,
                    at_import,
                    on_call: on_call.clone(),
                    optional: c.optional,
                    if_present: c.if_present,
                    near: Vec::new(),
                    variable: None,
                });
                // What that loader (or one it calls) hands cuda-pathfinder loads in the same
                // call, and fails it where missing (libcuvs' `load_nvidia_dynamic_lib("nvrtc")`):
                // a cuda-pathfinder load, named in that loader, optional only where the call is
                // caught for cuda-pathfinder's error.
                for (by, name) in catalog.python_loader_pathfinder(f) {
                    push(Preload {
                        sonames: pathfinder_sonames(&name, pathfinder, catalog, cuda_major),
                        name,
                        named_at: format!("{by}()"),
                        loaded_at: place(c),
                        mechanism: Mechanism::CudaPathfinder,
                        at_import,
                        on_call: on_call.clone(),
                        optional: c.pathfinder_optional,
                        if_present: false,
                        near: Vec::new(),
                        variable: None,
                    });
                }
            }
            Mechanism::CudaPathfinder => {
                let Some(name) = &c.argument else { continue };
                let sonames = pathfinder_sonames(name, pathfinder, catalog, cuda_major);
                push(Preload {
                    name: name.clone(),
                    sonames,
                    named_at: place(c),
                    loaded_at: place(c),
                    mechanism: c.mechanism,
                    at_import,
                    on_call,
                    optional: c.optional,
                    if_present: c.if_present,
                    near: Vec::new(),
                    variable: None,
                });
            }
            Mechanism::Ctypes => {
                // The name the call is given, when it is written there; else the names the
                // call's own function writes; else those of the functions it calls in the same
                // file (onnxruntime's `_get_nvidia_dll_paths()`), else those of its callers there,
                // nearest first (torch's `_preload_cuda_lib(folder, name)` gets its names from
                // `_preload_cuda_deps`).
                let given;
                let named = match &c.argument {
                    Some(name) => {
                        given = vec![(name.clone(), place(c), None)];
                        &given
                    }
                    None => named_for.entry((c.scope, c.deferred)).or_insert_with(|| {
                        let file = &files[c.scope.0];
                        let unlimited = |v: Vec<(String, String)>| -> Named {
                            v.into_iter().map(|(n, at)| (n, at, None)).collect()
                        };
                        let own = names_in(sources, file, c.scope.1, c.deferred, c.by_path, None);
                        if !own.is_empty() {
                            return unlimited(own);
                        }
                        let mut seen = BTreeSet::from([c.scope]);
                        // Callees, two deep, in any file the calls resolve to (xgboost's
                        // `_load_lib()` loads what `libpath.find_lib_path()` names).
                        let mut level: Vec<Scope> = vec![c.scope];
                        let mut found = Vec::new();
                        for _ in 0..2 {
                            let mut next = Vec::new();
                            for (callee, by) in &reach.callers {
                                if level.iter().any(|l| by.contains(l)) && seen.insert(*callee) {
                                    next.push(*callee);
                                }
                            }
                            next.sort();
                            for s in &next {
                                // The literal the call passes, where this callee is called
                                // from the call's own function (`_get_shared_object_file("core")`).
                                let args = (level == [c.scope])
                                    .then(|| literals_passed(&files, &reach, c.scope, *s, 2))
                                    .flatten();
                                // The values of the load's parameter for which the call of this
                                // callee runs (cupy's `if lib == 'nccl':` before
                                // `_get_nccl_from_wheel(…)`): its names load only for them.
                                let limit = (level == [c.scope])
                                    .then(|| admitted_for_calls(file, c.scope.1, &files[s.0], *s))
                                    .flatten();
                                found.extend(
                                    names_in(
                                        sources,
                                        &files[s.0],
                                        s.1,
                                        false,
                                        c.by_path,
                                        args.as_deref(),
                                    )
                                    .into_iter()
                                    .map(|(n, at)| (n, at, limit.clone())),
                                );
                            }
                            if !found.is_empty() {
                                return found;
                            }
                            level = next;
                        }
                        // Callers, four up.
                        let mut level: Vec<Scope> = vec![c.scope];
                        for _ in 0..4 {
                            let mut next: Vec<Scope> = level
                                .iter()
                                .flat_map(|l| reach.callers.get(l).into_iter().flatten())
                                .filter(|s| s.0 == c.scope.0 && seen.insert(**s))
                                .copied()
                                .collect();
                            next.sort();
                            // A caller that loads libraries itself keeps its names for its own
                            // loads (tilelang's module code loads `libz3.so` where found, and
                            // calls the function that loads its own library by a computed path).
                            for s in next.iter().filter(|s| {
                                !calls
                                    .iter()
                                    .any(|o| o.scope == **s && o.mechanism == Mechanism::Ctypes)
                            }) {
                                // Whole names only: the start of a name written anywhere in a
                                // caller is what another call of it takes (numba-cuda's
                                // `_get_source_variable("libdevice")` beside its loop that opens
                                // nvvm and nvrtc), not a name passed on to the load.
                                found.extend(unlimited(
                                    names_in(sources, file, s.1, false, c.by_path, None)
                                        .into_iter()
                                        .filter(|(n, _)| {
                                            !n.strip_suffix("*.so*")
                                                .is_some_and(pysource::is_library_stem)
                                        })
                                        .collect(),
                                ));
                            }
                            if !found.is_empty() || next.is_empty() {
                                break;
                            }
                            level = next;
                        }
                        found
                    }),
                };
                for (name, named_at, limit) in named.iter().cloned() {
                    if is_fallback_linker_name(&name, named.iter().map(|(n, ..)| n.as_str())) {
                        continue;
                    }
                    let sonames = named_sonames(&name);
                    // Named only for some values of the parameter: loaded when a caller passes
                    // one, at import where such a call runs at import, else in its function.
                    let sites: Vec<_> = limit
                        .as_ref()
                        .map(|values| {
                            call_sites(&files, &by_name, c.scope)
                                .into_iter()
                                .filter(|(_, _, k)| {
                                    k.arg.as_ref().is_some_and(|a| values.contains(a))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    // Named where the value that selects it is passed, as a name passed to
                    // the load is; optional where every such call catches the failure.
                    let whens: Vec<CalledAt> = sites
                        .into_iter()
                        .map(|site| called_at(&files, &reach, c, site))
                        .collect();
                    let (at_import, on_call, optional, named_at) = match whens
                        .iter()
                        .position(|w| w.at_import)
                        .or((!whens.is_empty()).then_some(0))
                    {
                        None => (at_import, on_call.clone(), c.optional, named_at),
                        Some(i) => (
                            whens[i].at_import,
                            whens[i].on_call.clone(),
                            c.optional || whens.iter().all(|w| w.optional),
                            whens[i].named_at.clone(),
                        ),
                    };
                    push(Preload {
                        name,
                        sonames,
                        named_at,
                        loaded_at: place(c),
                        mechanism: c.mechanism,
                        at_import,
                        on_call,
                        optional,
                        if_present: c.if_present,
                        near: Vec::new(),
                        variable: None,
                    });
                }
            }
        }
    }
    // Where a name loaded by ctypes is also written with directories before it, relative to
    // the code (`"qrack_lib/Linux/2_35/libqrack_pinvoke.so"`, joined to the file's directory).
    for p in out
        .iter_mut()
        .filter(|p| p.mechanism == Mechanism::Ctypes && !p.name.contains(['/', '*', '?', '[']))
    {
        let mut near = std::mem::take(&mut p.near);
        for at in [&p.loaded_at, &p.named_at] {
            let path = at.rsplit_once(':').map_or(at.as_str(), |(f, _)| f);
            if let Some(f) = files.iter().find(|f| f.path == path) {
                for d in near_dirs(f, &p.name) {
                    if !near.contains(&d) {
                        near.push(d);
                    }
                }
            }
        }
        p.near = near;
    }
    // One entry per name: the one that runs at import (a required one first); else one per
    // function that runs it (nvshmem4py loads `nvshmem_host` in `init()`, `get_version()`, …:
    // whichever a program calls first loads it).
    out.sort_by_key(|p| (!p.at_import, p.optional));
    let mut seen = BTreeSet::new();
    let mut at_import = BTreeSet::new();
    out.retain(|p| {
        if p.at_import {
            at_import.insert(p.name.clone());
            seen.insert((p.name.clone(), None))
        } else {
            !at_import.contains(&p.name) && seen.insert((p.name.clone(), p.on_call.clone()))
        }
    });
    // In the order the files are written: by file, then line (`x.py:9` before `x.py:10`).
    let key = |p: &Preload| {
        let (file, line) = p.named_at.rsplit_once(':').unwrap_or((&p.named_at, ""));
        (file.to_string(), line.parse::<usize>().unwrap_or(0))
    };
    out.sort_by_key(key);
    // A variable set in a function that names a library (symmetrix's
    // `_discover_packaged_nvrtc_library` globs `libnvrtc.so.*` where cuda-nvrtc's wheel installs
    // it, then sets `SYMMETRIX_JIT_NVRTC_LIBRARY` to what it found): a handoff of that library,
    // when it runs. Module code hands nothing on (what it names is not found there). The native
    // file opens the path when it needs the library, so the import never fails for it: optional.
    let mut handoffs: Vec<Preload> = Vec::new();
    for (scope, si, variable) in env_at {
        let f = &files[scope.0];
        if scope.1.is_none() {
            continue;
        }
        let at_import = reach.reached.contains(&scope);
        let on_call = if at_import { None } else { entry_of(scope) };
        let loaded_at = format!("{}:{}", f.path, f.stmts[si].number);
        let names = names_in(sources, f, scope.1, false, false, None);
        for (name, named_at) in names.iter().cloned() {
            if is_fallback_linker_name(&name, names.iter().map(|(n, _)| n.as_str())) {
                continue;
            }
            if handoffs
                .iter()
                .any(|p| p.name == name && p.variable.as_deref() == Some(variable.as_str()))
            {
                continue;
            }
            handoffs.push(Preload {
                sonames: named_sonames(&name),
                name,
                named_at,
                loaded_at: loaded_at.clone(),
                mechanism: Mechanism::Environment,
                at_import,
                on_call: on_call.clone(),
                optional: true,
                if_present: false,
                near: Vec::new(),
                variable: Some(variable.clone()),
            });
        }
    }
    // A package a function looks up, where that function is not reached at import.
    let mut found_specs: Vec<FoundSpec> = Vec::new();
    for (scope, si, module) in specs_at {
        if reach.reached.contains(&scope) || found_specs.iter().any(|s| s.module == module) {
            continue;
        }
        let Some(function) = entry_of(scope) else {
            continue;
        };
        let f = &files[scope.0];
        found_specs.push(FoundSpec {
            module,
            at: format!("{}:{}", f.path, f.stmts[si].number),
            function,
        });
    }
    let mut finds: Vec<Find> = Vec::new();
    for FindAt {
        scope,
        stmt: si,
        name,
        deferred,
        class,
    } in finds_at
    {
        let f = &files[scope.0];
        let at = format!("{}:{}", f.path, f.stmts[si].number);
        let names: Vec<String> = match name {
            Some(n) => vec![n],
            None => reach
                .callers
                .get(&scope)
                .into_iter()
                .flatten()
                .filter(|by| **by != scope)
                .filter_map(|by| literals_passed(&files, &reach, *by, scope, 2))
                .flatten()
                .collect(),
        };
        for name in names {
            // find_library matches the name as written; a class of the package's own may not
            // (tinygrad labels nvJitLink `nvjitlink`).
            let stem = format!("lib{name}");
            let Some(lib) = catalog.libraries.iter().find(|l| {
                l.stem == stem || (class.is_some() && l.stem.eq_ignore_ascii_case(&stem))
            }) else {
                continue;
            };
            // A file that names the NVIDIA wheel that installs the library looks in it (gpuwm's
            // `importlib.metadata.distribution("nvidia-nvjitlink")` files first): its
            // find_library is a fallback, not the only place it looks.
            if names_a_wheel_of(sources, f.path, lib) {
                continue;
            }
            if !finds.iter().any(|x| x.name == name) {
                finds.push(Find {
                    name,
                    class: class.clone(),
                    library: lib.id.clone(),
                    at: at.clone(),
                    at_import: reach.reached.contains(&scope) && !deferred,
                });
            }
        }
    }
    Scan {
        preloads: out,
        finds,
        imports: reach.external,
        modules: reach.modules,
        plugin_groups,
        outside_calls,
        library_path_dirs: library_path_dirs(&files),
        handoffs,
        found_specs,
    }
}

/// Directories inside the package that its code puts on `sys.path`, so that the packages there
/// import by their own names: where some file changes `sys.path` (`sys.path.insert(0,
/// install_tvm_path + "/python")`), each directory that holds a package no ordinary import can
/// reach (a component such as `3rdparty` is no module name), has no `__init__.py` itself, and
/// whose package some file imports by name (`import tvm`). The path is built at run time; the
/// principle is that a package nothing could import otherwise is imported from where it is.
fn path_roots(py: &[(&str, &str)]) -> Vec<String> {
    if !py
        .iter()
        .any(|(_, t)| t.contains("sys.path.insert") || t.contains("sys.path.append"))
    {
        return Vec::new();
    }
    let paths: BTreeSet<&str> = py.iter().map(|(p, _)| *p).collect();
    // Candidates: (directory, package name).
    let mut candidates: Vec<(&str, &str)> = Vec::new();
    for (path, _) in py {
        let Some(pkg_dir) = path.strip_suffix("/__init__.py") else {
            continue;
        };
        if pysource::module_name(path).is_some() {
            continue;
        }
        let (root, name) = pkg_dir.rsplit_once('/').unwrap_or(("", pkg_dir));
        if root.is_empty()
            || paths.contains(format!("{root}/__init__.py").as_str())
            || pysource::module_name(&format!("{name}/__init__.py")).is_none()
        {
            continue;
        }
        candidates.push((root, name));
    }
    if candidates.is_empty() {
        return Vec::new();
    }
    // The top-level names the files import, in one pass over their lines.
    let wanted: BTreeSet<&str> = candidates.iter().map(|(_, n)| *n).collect();
    let mut imported: BTreeSet<&str> = BTreeSet::new();
    for (_, text) in py {
        for line in text.lines() {
            let l = line.trim_start();
            let Some(rest) = l
                .strip_prefix("import ")
                .or_else(|| l.strip_prefix("from "))
            else {
                continue;
            };
            let top = rest
                .trim_start()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            if let Some(w) = wanted.get(top) {
                imported.insert(w);
            }
        }
    }
    let mut roots: Vec<String> = Vec::new();
    for (root, name) in candidates {
        if imported.contains(name) && !roots.iter().any(|r| r == root) {
            roots.push(root.to_string());
        }
    }
    roots
}

/// The SONAME a library name a `ctypes` call is given stands for: itself when it is one
/// (`libcudart.so.12`), none for a pattern (`libcublas.so.*[0-9]`) or a linker name (`libfoo.so`).
fn named_sonames(name: &str) -> Vec<String> {
    if name.contains(['*', '?', '[']) || !name.contains(".so.") {
        Vec::new()
    } else {
        vec![name.to_string()]
    }
}

/// Every call of the files outside branches that never run, as (file, statement, call), by the
/// name of the function it can stand for: its last part (imports rename only a dotted name's
/// first part), and for a bare name an import binds, the last part of what it stands for
/// (`_l()` after `from m import f as _l`); only for the names in `wanted` (the functions the
/// loads are in), and those of the functions that pass their first parameter on to one of them
/// (a few calls deep: [`passed_in`] follows them). Made once per scan: [`call_sites`] looks a
/// function up in it.
type CallsByName<'f> = HashMap<String, Vec<(usize, usize, &'f pysource::Call)>>;

fn calls_by_name<'f>(files: &'f [File], wanted: &BTreeSet<&'f str>) -> CallsByName<'f> {
    let mut wanted = wanted.clone();
    let mut out = calls_of(files, &wanted);
    // Each round reads the files for the names the last one found, not for all again.
    let mut fresh: Vec<(usize, usize, &pysource::Call)> = out.values().flatten().copied().collect();
    for _ in 0..3 {
        let forwarding: BTreeSet<&str> = fresh
            .iter()
            .filter_map(|&(gi, sj, k)| {
                let d = files[gi].scope[sj]?;
                let st = &files[gi].stmts[d];
                // The function passes on its first parameter, or a path it computes
                // ([`passed_in`]): its own callers say what.
                k.arg_name.is_some().then_some(st.def.as_deref()).flatten()
            })
            .filter(|n| !wanted.contains(n))
            .collect();
        if forwarding.is_empty() {
            break;
        }
        wanted.extend(&forwarding);
        // Keys are the names asked for: these are new, so nothing in `out` is replaced.
        let more = calls_of(files, &forwarding);
        fresh = more.values().flatten().copied().collect();
        out.extend(more);
    }
    out
}

fn calls_of<'f>(files: &'f [File], wanted: &BTreeSet<&str>) -> CallsByName<'f> {
    let mut out: CallsByName = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    for (gi, g) in files.iter().enumerate() {
        for (sj, st) in g.stmts.iter().enumerate() {
            if g.excluded[sj] {
                continue;
            }
            for k in &st.calls {
                let key = if !k.callee.contains('.') && g.imports_name(&k.callee) {
                    last(&g.canonical(&k.callee, sj)).to_string()
                } else {
                    last(&k.callee).to_string()
                };
                if wanted.contains(key.as_str()) {
                    out.entry(key).or_default().push((gi, sj, k));
                }
            }
        }
    }
    out
}

/// The calls of the function `scope` is (file, statement, call), outside branches that never
/// run: a call whose name stands for it through the caller's imports, or its bare name (or
/// `self.`/`cls.` name) in its own file. Empty for module-level code.
fn call_sites<'f>(
    files: &[File],
    by_name: &CallsByName<'f>,
    scope: Scope,
) -> Vec<(usize, usize, &'f pysource::Call)> {
    let (fi, Some(d)) = scope else {
        return Vec::new();
    };
    let Some(name) = files[fi].stmts[d].def.as_deref() else {
        return Vec::new();
    };
    let qualified = files[fi].module.as_deref().map(|m| format!("{m}.{name}"));
    let Some(candidates) = by_name.get(name) else {
        return Vec::new();
    };
    candidates
        .iter()
        .filter(|(gi, sj, k)| {
            let own_file = *gi == fi
                && (k.callee == name
                    || k.callee.strip_prefix("self.") == Some(name)
                    || k.callee.strip_prefix("cls.") == Some(name));
            own_file || qualified.as_deref() == Some(files[*gi].canonical(&k.callee, *sj).as_str())
        })
        .copied()
        .collect()
}

/// What a loader call whose argument is its function's first parameter loads: the literal each
/// call of that function passes (cupy's `_environment._preload_library('cutensor')` at import
/// reaches `load_nvidia_dynamic_lib(lib)` in `def _preload_library(lib)`). A call of the function
/// is one whose name stands for it through the caller's imports, or its bare name (or
/// `self.`/`cls.` name) in its own file. Each preload is named where the literal is passed, runs
/// at import when that call does, and is optional when either the load or that call catches the
/// failure. `loaded_at` is left for the caller to set.
fn passed_in(
    files: &[File],
    by_name: &CallsByName,
    reach: &pysource::Reach,
    c: &Call,
    pathfinder: &PathfinderTable,
    catalog: &Catalog,
    cuda_major: Option<u32>,
) -> Vec<Preload> {
    let mut out = Vec::new();
    // (file, statement, call, passed on from a call of the load's function, caught on the way).
    // (…, the path is computed by the calling function from what its callers pass).
    let mut sites: Vec<_> = call_sites(files, by_name, c.scope)
        .into_iter()
        .map(|(gi, sj, k)| (gi, sj, k, false, false, false))
        .collect();
    let mut forwarding: BTreeSet<Scope> = BTreeSet::from([c.scope]);
    let mut next = 0;
    while let Some(&(gi, sj, k, forwarded, caught, computed)) = sites.get(next) {
        next += 1;
        let g = &files[gi];
        // A call that passes on its own function's first parameter (libkvikio's
        // `_load_wheel_installation(soname)` in `def _load_library(soname)`, called as
        // `_load_library("libkvikio.so")`): what that function's callers pass, a few calls deep.
        let scope = (gi, g.scope[sj]);
        if let (Some(name), Some(d)) = (k.arg_name.as_deref(), scope.1) {
            if g.stmts[d].first_param.as_deref() == Some(name)
                && forwarding.len() < 4
                && forwarding.insert(scope)
            {
                let caught = caught || catches_failure(g.caught(sj), c.mechanism);
                sites.extend(
                    call_sites(files, by_name, scope)
                        .into_iter()
                        .map(|(gi, sj, k)| (gi, sj, k, true, caught, false)),
                );
                continue;
            }
            // A path the calling function computes from what its own callers pass (cyborgdb's
            // `_load(path)` in `def _load_from_package(package, *rel_path)`, which joins the
            // package's directory and the parts, called as `_load_from_package("nvidia.cublas",
            // "lib", "libcublas.so.12")`): the library names those calls pass, as for a ctypes
            // load of a computed path.
            if c.passed
                && !forwarded
                && !computed
                && forwarding.len() < 4
                && forwarding.insert(scope)
            {
                let caught = caught || catches_failure(g.caught(sj), c.mechanism);
                sites.extend(
                    call_sites(files, by_name, scope)
                        .into_iter()
                        .map(|(gi, sj, k)| (gi, sj, k, false, caught, true)),
                );
                continue;
            }
        }
        // The first argument as the function's first parameter; for a ctypes load of a path
        // the function computes, any library name the call passes (deepmd-kit's
        // `dlopen_library("nvidia.cuda_runtime.lib", "libcudart.so*")`, which globs the second
        // in the module the first names).
        let mut args: Vec<&str> = if (c.passed || forwarded) && !computed {
            k.arg.as_deref().into_iter().collect()
        } else {
            g.stmts[sj]
                .literals
                .iter()
                .filter(|l| !l.tested && is_library_name(&l.value))
                .map(|l| l.value.as_str())
                .collect()
        };
        // A word the load's function builds a name from (transformer-engine's
        // `_load_cuda_library_from_python("cublas")` globbing `lib{lib_name}*`).
        if c.mechanism == Mechanism::Ctypes && (!c.passed || computed) && !forwarded {
            args.extend(
                k.arg
                    .as_deref()
                    .filter(|a| !templated(files, c, a).is_empty()),
            );
        }
        for arg in args {
            let libs: Vec<(String, Vec<String>)> = match c.mechanism {
                Mechanism::CudaPathfinder => vec![(
                    arg.to_string(),
                    pathfinder_sonames(arg, pathfinder, catalog, cuda_major),
                )],
                _ => {
                    let base = arg.rsplit('/').next().unwrap_or(arg);
                    if is_library_name(base) {
                        vec![(base.to_string(), named_sonames(base))]
                    } else {
                        templated(files, c, arg)
                    }
                }
            };
            if libs.is_empty() {
                continue;
            }
            let when = called_at(files, reach, c, (gi, sj, k));
            // The module's directory and the parts the call passes with the name, for a path
            // the function computes from them.
            let near: Vec<String> = if (computed || !c.passed) && !forwarded {
                module_dir(&k.literal_args, arg).into_iter().collect()
            } else {
                Vec::new()
            };
            for (lib, sonames) in libs {
                out.push(Preload {
                    name: lib,
                    sonames,
                    named_at: when.named_at.clone(),
                    loaded_at: String::new(),
                    mechanism: c.mechanism,
                    at_import: when.at_import,
                    on_call: when.on_call.clone(),
                    optional: when.optional || caught,
                    if_present: false,
                    near: near.clone(),
                    variable: None,
                });
            }
        }
    }
    out
}

/// The directory below site-packages that a call's literals name before the library name
/// `lib`: a module, then directories (`"nvidia.cublas", "lib", "libcublas.so.12"` →
/// `nvidia/cublas/lib`; `"nvidia.cuda_runtime.lib", "libcudart.so*"` → `nvidia/cuda_runtime/lib`),
/// for a function that joins the module's directory and the parts. None where the literals
/// are not written that way.
fn module_dir(literals: &[String], lib: &str) -> Option<String> {
    let at = literals.iter().position(|l| l == lib)?;
    let (module, dirs) = literals[..at].split_first()?;
    let word = |w: &str| {
        !w.is_empty()
            && w.len() <= 100
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if !module.split('.').all(word) || !dirs.iter().all(|d| word(d)) {
        return None;
    }
    let mut dir = module.replace('.', "/");
    for d in dirs {
        dir.push('/');
        dir.push_str(d);
    }
    Some(dir)
}

/// The libraries a ctypes load's function names by putting `arg`, the word a call passes as its
/// first parameter, in the templates it writes ([`pysource::Stmt::templates`]), in the branches
/// that run for that word: a whole name (`lib{name}.so.12`), a pattern with a suffix of its own
/// (`lib{lib_name}*{ext}.*[0-9]` → `libcurand*.*[0-9]`), else the start of a name, which names
/// every file that starts with it (`lib{lib_name}{ext}` → `libcurand*.so*`). Only a
/// plain word is put in: never a path or a name with a suffix.
fn templated(files: &[File], c: &Call, arg: &str) -> Vec<(String, Vec<String>)> {
    let plain = !arg.is_empty()
        && arg.len() <= 128
        && arg
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-+".contains(ch));
    let Some(scope) = c.scope.1.filter(|_| plain) else {
        return Vec::new();
    };
    let f = &files[c.scope.0];
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (si, st) in f.stmts.iter().enumerate() {
        if f.scope[si] != Some(scope) || f.excluded[si] || !f.runs_for(si, arg) {
            continue;
        }
        for t in st.templates.iter().filter(|t| !t.tested && !t.deferred) {
            let filled = pysource::fill(&t.value, arg);
            let base = filled.rsplit('/').next().unwrap_or(&filled);
            let lib = if is_library_name(base) {
                (base.to_string(), named_sonames(base))
            } else {
                let stem = base.split(['*', '?', '[']).next().unwrap_or(base);
                if !pysource::is_library_stem(stem) {
                    continue;
                }
                // The pattern as written where it has a suffix of its own (`libcudnn*.*[0-9]`:
                // not a `libcudnn.so.9.bak`), else the start of a name.
                let rest = &base[stem.len()..];
                if rest.contains('.') {
                    let mut pattern = String::with_capacity(base.len());
                    for ch in base.chars() {
                        if !(ch == '*' && pattern.ends_with('*')) {
                            pattern.push(ch);
                        }
                    }
                    (pattern, Vec::new())
                } else {
                    (format!("{stem}*.so*"), Vec::new())
                }
            };
            if !out.contains(&lib) {
                out.push(lib);
            }
        }
    }
    out
}

/// When a load runs for one call of its function (file, statement, call): at import where that
/// call is reached at import (neither it nor the load deferred), else when the call's own
/// function runs; optional where the call catches the load's failure; named where the call is.
struct CalledAt {
    at_import: bool,
    on_call: Option<String>,
    optional: bool,
    named_at: String,
}

fn called_at(
    files: &[File],
    reach: &pysource::Reach,
    c: &Call,
    (gi, sj, k): (usize, usize, &pysource::Call),
) -> CalledAt {
    let g = &files[gi];
    let scope = (gi, g.scope[sj]);
    let at_import = reach.reached.contains(&scope) && !k.deferred && !c.deferred;
    CalledAt {
        at_import,
        on_call: if at_import {
            None
        } else {
            scope.1.and_then(|s| g.stmts[s].def.clone())
        },
        optional: catches_failure(g.caught(sj), c.mechanism),
        named_at: format!("{}:{}", g.path, g.stmts[sj].number),
    }
}

/// The library names in the `.json` file `name` that the Python file `from` reads (looked for
/// beside it), each with its line.
/// Whether the source `path` writes, as a string literal, the name of a wheel that installs
/// `lib` (`"nvidia-nvjitlink-cu12"`, in either quotes).
fn names_a_wheel_of(sources: &[Source], path: &str, lib: &cudist_catalog::Library) -> bool {
    let Some(text) = sources.iter().find(|s| s.path == path).map(|s| &s.text) else {
        return false;
    };
    lib.cuda
        .iter()
        .filter_map(|m| m.pip.as_deref())
        .any(|w| text.contains(&format!("\"{w}\"")) || text.contains(&format!("'{w}'")))
}

fn json_names(sources: &[Source], from: &str, name: &str) -> Vec<(String, String)> {
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    let base = name.rsplit('/').next().unwrap_or(name);
    let want = if dir.is_empty() {
        base.to_string()
    } else {
        format!("{dir}/{base}")
    };
    let Some(json) = sources.iter().find(|s| s.path == want) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, l) in json.text.lines().enumerate() {
        for s in literals(l) {
            if is_library_name(s) {
                out.push((s.to_string(), format!("{}:{}", json.path, i + 1)));
            }
        }
    }
    out
}

/// The SONAMEs cuda-pathfinder loads for one of its names (`cublas`, `nvJitLink`, `cufile`), by
/// its own table ([`PathfinderTable::sonames`]: the name's SONAMEs and those of the names it loads
/// first), kept to the package's CUDA major when known (a SONAME the catalog gives no major stays);
/// a name the table lacks is looked up as a catalog id.
fn pathfinder_sonames(
    name: &str,
    table: &PathfinderTable,
    catalog: &Catalog,
    cuda_major: Option<u32>,
) -> Vec<String> {
    let in_major = |s: &String| {
        let majors = catalog.majors_of(s);
        cuda_major.is_none_or(|c| majors.is_empty() || majors.contains(&c))
    };
    let mut sonames = table.sonames(name);
    if sonames.is_empty() {
        sonames = PathfinderTable::builtin().sonames(name);
    }
    if !sonames.is_empty() {
        return sonames.into_iter().filter(in_major).collect();
    }
    let Some(lib) = catalog.library(name) else {
        return Vec::new();
    };
    lib.cuda
        .iter()
        .filter(|m| cuda_major.is_none_or(|c| c == m.major))
        .flat_map(|m| m.sonames.iter().cloned())
        .collect()
}

/// Where cuda-pathfinder keeps its table, below site-packages: `descriptor_catalog.py` (its
/// `DescriptorSpec` entries), and before that release `supported_nvidia_libs.py` (its
/// `SUPPORTED_LINUX_SONAMES` and `DIRECT_DEPENDENCIES` tables).
const PATHFINDER_FILES: [&str; 2] = [
    "cuda/pathfinder/_dynamic_libs/descriptor_catalog.py",
    "cuda/pathfinder/_dynamic_libs/supported_nvidia_libs.py",
];

/// cuda-pathfinder's table as installed in the first of `dirs` (site-packages directories) that
/// has it, read without running it; `None` where none has it or its file does not read as a
/// table.
pub fn installed_pathfinder(dirs: &[std::path::PathBuf]) -> Option<PathfinderTable> {
    use std::io::Read;
    for dir in dirs {
        for (i, rel) in PATHFINDER_FILES.iter().enumerate() {
            let path = dir.join(rel);
            let Ok(f) = std::fs::File::open(&path) else {
                continue;
            };
            let mut text = String::new();
            if f.take(MAX_SOURCE).read_to_string(&mut text).is_err() {
                continue;
            }
            let Ok(data) = pysource::literal_data(&text, "DescriptorSpec") else {
                continue;
            };
            let mut libs = BTreeMap::new();
            if i == 0 {
                for c in data.calls {
                    let Some(name) = c.get("name").and_then(|n| n.first()) else {
                        continue;
                    };
                    let field = |f: &str| c.get(f).cloned().unwrap_or_default();
                    if c.contains_key("linux_sonames") {
                        libs.insert(
                            name.clone(),
                            PathfinderLib {
                                linux_sonames: field("linux_sonames"),
                                dependencies: field("dependencies"),
                                optional_dependencies: field("optional_dependencies"),
                                site_packages_linux: field("site_packages_linux"),
                            },
                        );
                    }
                }
            } else {
                let table = |names: &[&str]| -> BTreeMap<String, Vec<String>> {
                    names
                        .iter()
                        .filter_map(|n| data.tables.get(*n))
                        .flat_map(|t| t.clone())
                        .collect()
                };
                let deps = table(&["DIRECT_DEPENDENCIES_CTK", "DIRECT_DEPENDENCIES"]);
                let dirs = table(&[
                    "SITE_PACKAGES_LIBDIRS_LINUX_CTK",
                    "SITE_PACKAGES_LIBDIRS_LINUX_OTHER",
                ]);
                for (name, sonames) in table(&[
                    "SUPPORTED_LINUX_SONAMES_CTK",
                    "SUPPORTED_LINUX_SONAMES_OTHER",
                    "SUPPORTED_LINUX_SONAMES",
                ]) {
                    // The old table lists the oldest SONAME first; the new one the preferred.
                    let mut sonames = sonames;
                    sonames.reverse();
                    libs.insert(
                        name.clone(),
                        PathfinderLib {
                            linux_sonames: sonames,
                            dependencies: deps.get(&name).cloned().unwrap_or_default(),
                            optional_dependencies: Vec::new(),
                            site_packages_linux: dirs.get(&name).cloned().unwrap_or_default(),
                        },
                    );
                }
            }
            if !libs.is_empty() {
                return Some(PathfinderTable::from_entries(
                    format!("{} (installed)", path.display()),
                    libs,
                ));
            }
        }
    }
    None
}

/// When an ELF file of a package loads.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// When the package is imported.
    #[default]
    Import,
    /// Only when something loads it (a plugin, a provider, a lazily loaded helper).
    OnDemand,
    /// One of several builds for different CUDA releases; the package picks one at run time.
    Variant,
}

/// What the tiers are worked out from, per ELF file.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    /// Its path in the package.
    pub path: &'a str,
    /// Its SONAME.
    pub soname: Option<&'a str>,
    /// Its NEEDED entries.
    pub needed: Vec<&'a str>,
    /// A Python extension module.
    pub extension: bool,
    /// For an extension module, the dotted module names in its read-only data ([`dotted_names`]):
    /// a compiled module (Cython) imports the modules it `cimport`s when it is imported.
    pub mentions: &'a [String],
}

/// A file's tier, and for an extension module the import does not need, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// When it loads.
    pub tier: Tier,
    /// Why the import does not need an extension module (`imported only when __getattr__()
    /// runs (cupy/cuda/__init__.py:71)`; imported inside `try … except ImportError`), or, at
    /// import, why that is not certain (its name is only in a compiled module's code).
    pub why: Option<String>,
}

/// The dotted module name of an extension module's path (`cupy/cuda/jitify.cpython-311-x86_64-
/// linux-gnu.so` → `cupy.cuda.jitify`), below `site-packages/` or a wheel's `.data` directory.
pub fn extension_module(path: &str) -> Option<String> {
    let (dir, base) = path.rsplit_once('/').unwrap_or(("", path));
    let name = base.split('.').next()?;
    let as_py = if dir.is_empty() {
        format!("{name}.py")
    } else {
        format!("{dir}/{name}.py")
    };
    pysource::module_name(&as_py)
}

/// The most dotted names read from one file.
const MAX_MENTIONS: usize = 4096;

/// The dotted module names (`cupy._core.core`: identifiers joined by dots, two parts at least)
/// that are whole NUL-terminated strings in `sections` (a file's `.rodata`). Cython writes the
/// full name of every module a module `cimport`s there, for the import it does at its own
/// import; Python-level imports it may keep compressed, so their absence proves nothing.
pub fn dotted_names(sections: &[&[u8]]) -> Vec<String> {
    let mut out = BTreeSet::new();
    for bytes in sections {
        let mut pieces = bytes.split(|b| *b == 0);
        let _ = pieces.next_back();
        for s in pieces {
            if s.len() < 3 || s.len() > 200 || !s.contains(&b'.') {
                continue;
            }
            let ok = s.split(|b| *b == b'.').all(|p| {
                p.first()
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                    && p.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
            });
            if ok {
                out.insert(String::from_utf8_lossy(s).into_owned());
                if out.len() >= MAX_MENTIONS {
                    return out.into_iter().collect();
                }
            }
        }
    }
    out.into_iter().collect()
}

/// A variant library: its group (`libbitsandbytes_cuda*.so`) and the CUDA release its name
/// says (`11.8`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VariantName {
    /// The file names of the group, with `*` for the release.
    pub group: String,
    /// The CUDA release, `major.minor` (or `major`).
    pub cuda: String,
}

impl VariantName {
    /// Whether the release is a directory of the path (`cuda/compute/cu*/…`), not a part of the
    /// file name: the group is then the whole path, across directories.
    pub fn by_directory(&self) -> bool {
        self.group.contains('/')
    }

    /// What the files of one group share, for the file at `path`: the group of names within the
    /// file's directory, or the path with `*` for a release directory.
    pub fn key(&self, path: &str) -> String {
        if self.by_directory() {
            self.group.clone()
        } else {
            let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/{}", self.group)
        }
    }
}

/// The CUDA release a file name carries (`libbitsandbytes_cuda118.so` → `libbitsandbytes_cuda*.so`,
/// `11.8`; `libfoo_cu12.so` → `12`), for a name that is one of several alike.
pub fn variant_name(path: &str) -> Option<VariantName> {
    let base = path.rsplit('/').next().unwrap_or(path);
    for tag in ["cuda", "cu"] {
        for (at, _) in base.match_indices(tag) {
            let after = &base[at + tag.len()..];
            let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
            let rest = &after[digits.len()..];
            if !(2..=3).contains(&digits.len()) || !(rest.starts_with('.') || rest.starts_with('_'))
            {
                continue;
            }
            let cuda = match digits.len() {
                3 => format!("{}.{}", &digits[..2], &digits[2..]),
                _ => digits.clone(),
            };
            if !(11..=19).contains(&cuda[..2].parse::<u32>().unwrap_or(0)) {
                continue;
            }
            return Some(VariantName {
                group: format!("{}{tag}*{rest}", &base[..at]),
                cuda,
            });
        }
    }
    // A directory named for the release (cuda-cccl's `cuda/compute/cu12/` and `cu13/`, one
    // build each, picked by the CUDA its bindings are for): the group is the path with `*`.
    let parts: Vec<&str> = path.split('/').collect();
    for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
        let Some(digits) = ["cuda", "cu"].iter().find_map(|t| part.strip_prefix(t)) else {
            continue;
        };
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if !(11..=19).contains(&digits[..2].parse::<u32>().unwrap_or(0)) {
            continue;
        }
        let cuda = match digits.len() {
            3 => format!("{}.{}", &digits[..2], &digits[2..]),
            _ => digits.to_string(),
        };
        let mut group = parts.clone();
        let star = format!("{}*", &part[..part.len() - digits.len()]);
        group[i] = &star;
        return Some(VariantName {
            group: group.join("/"),
            cuda,
        });
    }
    None
}

/// The tier of each node, in order. `modules` is how the import of the package reaches each
/// module its Python imports ([`Scan::modules`]): an extension module its Python imports only in
/// functions (cupy's `__getattr__`), or inside `try … except ImportError`, does not decide the
/// import; one no Python imports is taken to load at import (a compiled module may import it,
/// and its imports cannot all be read).
pub fn tiers(
    nodes: &[Node],
    preloads: &[Preload],
    modules: &BTreeMap<String, pysource::ImportedAt>,
) -> Vec<Placed> {
    let key = |n: &Node| -> Vec<String> {
        let base = n.path.rsplit('/').next().unwrap_or(n.path).to_string();
        n.soname
            .map(str::to_string)
            .into_iter()
            .chain(std::iter::once(base))
            .collect()
    };
    // Variant groups: two or more files alike but for the CUDA release in their names.
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    // Files named for a release group within their directory; files in a directory named for
    // one group across directories, extension modules too (the package imports the one for the
    // CUDA it finds, by a computed name).
    let keys: Vec<Option<String>> = nodes
        .iter()
        .map(|n| {
            variant_name(n.path)
                .filter(|v| !n.extension || v.by_directory())
                .map(|v| v.key(n.path))
        })
        .collect();
    for k in keys.iter().flatten() {
        *groups.entry(k.clone()).or_default() += 1;
    }
    let in_group = |i: usize| {
        keys[i]
            .as_ref()
            .is_some_and(|k| groups.get(k).is_some_and(|n| *n >= 2))
    };
    let mut placed: Vec<Placed> = (0..nodes.len())
        .map(|i| Placed {
            tier: if in_group(i) {
                Tier::Variant
            } else {
                Tier::OnDemand
            },
            why: None,
        })
        .collect();
    // A file named like an extension module whose init function is not there (a hand-built
    // one, or a library given a module's name) is one only where an import names it: then the
    // import reaches it (and fails there, or loads it); else it is loaded by path, if at all
    // (torch-memory-saver's `…_hook_mode_preload.abi3.so`, for `LD_PRELOAD`).
    let named_like_module = |n: &Node| {
        let base = n.path.rsplit('/').next().unwrap_or(n.path);
        [".cpython-", ".abi3.so", ".pypy"]
            .iter()
            .any(|s| base.contains(s))
    };
    let ext_module: Vec<Option<String>> = nodes
        .iter()
        .map(|n| {
            (n.extension || named_like_module(n))
                .then(|| extension_module(n.path))
                .flatten()
        })
        .collect();
    // Import: extension modules the import reaches, libraries preloaded at import, and their
    // NEEDED closure, and the modules compiled modules import.
    let mut todo: Vec<usize> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let preloaded = key(n).iter().any(|k| {
            preloads
                .iter()
                .any(|p| p.carried_required_at_import() && p.loads(k))
        });
        let reached = match ext_module[i]
            .as_ref()
            .and_then(|m| pysource::imported_at(modules, m))
        {
            _ if ext_module[i].is_none() => false,
            // A variant module no Python names is imported by a name built for the CUDA found
            // (cuda-cccl's `f".{extra}._bindings_impl"`): one of its group, not each.
            None => n.extension && placed[i].tier != Tier::Variant,
            Some(pysource::ImportedAt::Import(_)) => true,
            Some(pysource::ImportedAt::Guarded(at)) => {
                placed[i].why = Some(format!(
                    "imported at {at} inside `try … except ImportError`: the package imports without it"
                ));
                false
            }
            Some(pysource::ImportedAt::OnCall { at, function, more }) => {
                let others = match more {
                    0 => String::new(),
                    n => format!(" (+{n} more)"),
                };
                placed[i].why = Some(match function {
                    Some(f) => format!("imported only when {f}() runs, at {at}{others}"),
                    None => {
                        format!("imported only by {at}{others}, a module the import does not reach")
                    }
                });
                false
            }
        };
        if reached || preloaded {
            placed[i] = Placed {
                tier: Tier::Import,
                why: None,
            };
            todo.push(i);
        }
    }
    // A module reached only because a compiled module's code names it may be imported there
    // inside `try … except ImportError` or in a function: the machine code does not show which.
    // Such a node (and what it needs) is at import with that said (`why`).
    while let Some(i) = todo.pop() {
        let by_module = nodes[i].mentions.iter().filter_map(|m| {
            ext_module
                .iter()
                .position(|e| e.as_deref() == Some(m.as_str()))
        });
        let named_by = format!(
            "its name is in the compiled code of {}, which the import loads",
            nodes[i].path
        );
        let mut next: Vec<(usize, Option<String>)> = by_module
            .map(|j| (j, placed[i].why.clone().or_else(|| Some(named_by.clone()))))
            .collect();
        for need in &nodes[i].needed {
            next.extend(
                nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| key(m).iter().any(|k| k == need))
                    .map(|(j, _)| (j, placed[i].why.clone())),
            );
        }
        for (j, why) in next {
            let certain = placed[j].tier == Tier::Import && placed[j].why.is_none();
            if certain || (placed[j].tier == Tier::Import && why.is_some()) {
                continue;
            }
            placed[j] = Placed {
                tier: Tier::Import,
                why,
            };
            todo.push(j);
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(path: &str, text: &str) -> Source {
        Source {
            path: path.into(),
            text: text.into(),
        }
    }

    /// A library path stored in the environment for another program (torch-tensorrt's
    /// `os.environ["TRT_SHIM_NVINFER_LIB_NAME"] = os.path.join(p, "libnvinfer.so")`) is not a
    /// name the ctypes call beside it loads; the call's own name is.
    #[test]
    fn a_name_stored_in_the_environment_is_not_loaded() {
        let preloads = preloads(
            &[src(
                "pkg/__init__.py",
                "import ctypes, os\ndef capture(path):\n    ctypes.CDLL(os.path.join(path, \"libtensorrt_shim.so\"))\n    os.environ[\"TRT_SHIM_NVINFER_LIB_NAME\"] = os.path.join(path, \"libnvinfer.so\")\n",
            )],
            &Catalog::builtin(),
            None,
        );
        let names: Vec<&str> = preloads.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["libtensorrt_shim.so"]);
    }

    /// Bare library names: `ctypes.util.find_library("cusparse")` (direct, and a name passed to
    /// the function that calls it), and a `ctypes.CDLL` subclass of the package's own (through
    /// another subclass too) given `nvrtc` (tinygrad's `c.DLL('nvrtc', …)`); a name no catalog
    /// library has is none, and a subclass given a file name loads it as ctypes does.
    #[test]
    fn bare_names_for_find_library_and_cdll_subclasses() {
        let scan = scan(
            &[
                src("pkg/__init__.py", "from . import auto, finder\n"),
                src(
                    "pkg/c.py",
                    "import ctypes\nclass DLL(ctypes.CDLL):\n    def __init__(self, nm, paths):\n        pass\nclass Sub(DLL):\n    pass\nclass Plain:\n    pass\n",
                ),
                src(
                    "pkg/auto.py",
                    "from pkg import c\ndll = c.DLL('nvrtc', 'nvrtc')\nfft = c.Sub('cufft', 'cufft')\nno = c.Plain('cublas')\nwho = c.DLL('notalib', 'x')\nso = c.DLL('libcurand.so.10', 'x')\n",
                ),
                src(
                    "pkg/finder.py",
                    "from ctypes.util import find_library\nclass Config:\n    def __init__(self):\n        self._try('cusolver')\n    def _try(self, name):\n        return find_library(name)\ncfg = Config()\nfind_library('cusparse')\n",
                ),
            ],
            &Catalog::builtin(),
            None,
        );
        let finds: Vec<(&str, Option<&str>, &str, bool)> = scan
            .finds
            .iter()
            .map(|f| {
                (
                    f.name.as_str(),
                    f.class.as_deref(),
                    f.at.as_str(),
                    f.at_import,
                )
            })
            .collect();
        assert_eq!(
            finds,
            [
                ("nvrtc", Some("DLL"), "pkg/auto.py:2", true),
                ("cufft", Some("Sub"), "pkg/auto.py:3", true),
                ("cusolver", None, "pkg/finder.py:6", true),
                ("cusparse", None, "pkg/finder.py:8", true),
            ]
        );
        let names: Vec<&str> = scan.preloads.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["libcurand.so.10"]);
        // A file that names the wheel that installs the library looks in its files first
        // (gpuwm 2.9's batch_mixing.py): its find_library is a fallback, no lookup of its own.
        let scan = super::scan(
            &[src(
                "pkg/__init__.py",
                "import ctypes.util, importlib.metadata\n\
                 for package in ('nvidia-nvjitlink', 'nvidia-nvjitlink-cu12'):\n    \
                     try:\n        \
                         importlib.metadata.distribution(package)\n    \
                     except importlib.metadata.PackageNotFoundError:\n        \
                         pass\n\
                 system = ctypes.util.find_library('nvJitLink')\n\
                 other = ctypes.util.find_library('cusparse')\n",
            )],
            &Catalog::builtin(),
            None,
        );
        let names: Vec<&str> = scan.finds.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["cusparse"]);
    }

    /// A ctypes load of a path its function computes from its parameters loads the library
    /// names each call passes (deepmd-kit's `dlopen_library(module, pattern)`, which globs the
    /// pattern in the module's directory), as optional where the function finds the file first;
    /// a call passing no library name adds none.
    #[test]
    fn a_computed_load_loads_the_library_names_its_calls_pass() {
        let preloads = preloads(
            &[src(
                "pkg/env.py",
                "import ctypes\nfrom importlib import import_module\nfrom pathlib import Path\n\
                 def dlopen_library(module, filename):\n    m = import_module(module)\n    libs = sorted(Path(m.__path__[0]).glob(filename))\n    if len(libs):\n        ctypes.CDLL(str(libs[0].absolute()))\n\
                 dlopen_library('nvidia.cuda_runtime.lib', 'libcudart.so*')\ndlopen_library('nvidia.cublas.lib', 'libcublas.so*')\ndlopen_library('x.y', 'README')\n",
            )],
            &Catalog::builtin(),
            None,
        );
        let got: Vec<(&str, &str, bool)> = preloads
            .iter()
            .map(|p| (p.name.as_str(), p.named_at.as_str(), p.optional))
            .collect();
        assert_eq!(
            got,
            [
                ("libcudart.so*", "pkg/env.py:9", true),
                ("libcublas.so*", "pkg/env.py:10", true)
            ]
        );
    }

    /// A ctypes wrapper called with a path its caller computes from what that caller's own
    /// callers pass (cyborgdb-core's `_load(path)` in `_load_from_package(package, *rel_path)`,
    /// called as `_load_from_package("nvidia.cublas", "lib", "libcublas.so.12")`): each library
    /// name those calls pass is loaded, optional where the wrapper catches the failure.
    #[test]
    fn a_wrapper_given_a_path_its_caller_computes_loads_what_the_callers_name() {
        let preloads = preloads(
            &[src(
                "pkg/__init__.py",
                "import os, sys\n\
                 def _preload():\n    import importlib, ctypes\n\
                 \x20   def _load(path):\n        try:\n            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)\n        except OSError:\n            pass\n\
                 \x20   def _load_from_package(package, *rel):\n        try:\n            mod = importlib.import_module(package)\n            path = os.path.join(mod.__path__[0], *rel)\n            if os.path.exists(path):\n                _load(path)\n        except ImportError:\n            pass\n\
                 \x20   _load_from_package('nvidia.cublas', 'lib', 'libcublas.so.12')\n\
                 \x20   _load_from_package('librmm', 'lib64', 'librmm.so')\n\
                 \x20   _load_from_package('x', 'README')\n\
                 _preload()\n",
            )],
            &Catalog::builtin(),
            None,
        );
        let got: Vec<(&str, &str, bool, bool)> = preloads
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.named_at.as_str(),
                    p.at_import,
                    p.optional,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("libcublas.so.12", "pkg/__init__.py:17", true, true),
                ("librmm.so", "pkg/__init__.py:18", true, true)
            ]
        );
        // Found where the function looks: the module's directory joined with the parts.
        let near: Vec<&[String]> = preloads.iter().map(|p| p.near.as_slice()).collect();
        assert_eq!(
            near,
            [
                &["nvidia/cublas/lib".to_string()][..],
                &["librmm/lib64".to_string()][..]
            ]
        );
    }

    /// The entry-point groups a package reads are its plugin groups, however the call is
    /// written (JAX's `for ep in entry_points(group="jax_plugins")` inside a function, a
    /// `.select(group=…)`, pkg_resources' `iter_entry_points("G")`); other calls are not.
    #[test]
    fn entry_point_groups_read_are_plugin_groups() {
        let scan = scan(
            &[
                src(
                    "jax/_src/xla_bridge.py",
                    "import logging\ndef discover():\n  from importlib.metadata import entry_points\n  for ep in entry_points(group=\"jax_plugins\"):\n    try:\n      ep.load().initialize()\n    except Exception:\n      logging.exception('x')\n",
                ),
                src(
                    "jax/other.py",
                    "import importlib.metadata as md\nimport pkg_resources\neps = md.entry_points().select(group='g2')\nfor e in pkg_resources.iter_entry_points('g3'): pass\nlogging.getLogger(group='no')\n",
                ),
                // A group named by a module constant, bound after the function that reads it.
                src(
                    "jax/by_name.py",
                    "import importlib.metadata\ndef points():\n  return importlib.metadata.entry_points().select(group=GROUP)\nGROUP = 'g4'\nOTHER = GROUP\n",
                ),
            ],
            &Catalog::builtin(),
            None,
        );
        let groups: Vec<(&str, &str, bool)> = scan
            .plugin_groups
            .iter()
            .map(|p| (p.group.as_str(), p.at.as_str(), p.goes_on_without))
            .collect();
        assert_eq!(
            groups,
            [
                ("jax_plugins", "jax/_src/xla_bridge.py:4", true),
                ("g2", "jax/other.py:3", false),
                ("g3", "jax/other.py:4", false),
                ("g4", "jax/by_name.py:3", false)
            ]
        );
    }

    /// A linker name tried after the SONAME of the same library (torch's `_get_nvrtc_library()`:
    /// `f"libnvrtc.so.{major}"`, then `"libnvrtc.so"`) is a fallback, not a load of its own; a
    /// linker name alone is one.
    #[test]
    fn a_linker_name_tried_after_the_soname_is_no_load_of_its_own() {
        let preloads = preloads(
            &[src(
                "pkg/utils.py",
                "import ctypes\n\
                 def nvrtc(major):\n    for n in [f'libnvrtc.so.{major}', 'libnvrtc.so']:\n        try:\n            return ctypes.CDLL(n)\n        except OSError:\n            continue\n\
                 def cudart():\n    return ctypes.CDLL('libcudart.so')\n",
            )],
            &Catalog::builtin(),
            Some(12),
        );
        let names: Vec<&str> = preloads.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["libnvrtc.so.*", "libcudart.so"]);
    }

    /// A function that finds a library and sets an environment variable to its path hands that
    /// library on (symmetrix's `_discover_packaged_nvrtc_library`): a load only where a file
    /// reads the variable, of the names the function writes (a linker name beside a SONAME
    /// pattern is a preference, not a load of its own); a variable set in module code, or in a
    /// function that names no library, hands nothing on.
    #[test]
    fn a_path_set_in_a_variable_a_native_file_reads_is_a_load_of_that_library() {
        let mut scan = scan(
            &[src(
                "pkg/jit.py",
                "import os\nfrom pathlib import Path\nKEY = 'PKG_NVRTC_LIBRARY'\n\
                 os.environ['PKG_AT_MODULE_LEVEL'] = 'libcublas.so.12'\n\
                 def _find(root):\n    c = list(Path(root).glob('libnvrtc.so')) + list(Path(root).glob('libnvrtc.so.*'))\n    if c:\n        os.environ[KEY] = str(c[0])\n\
                 def _other():\n    os.environ.setdefault('PKG_NOTHING_NAMED', '1')\n\
                 def compile(root):\n    _find(root)\n",
            )],
            &Catalog::builtin(),
            Some(12),
        );
        let handoffs: Vec<String> = scan
            .handoffs
            .iter()
            .map(|p| {
                format!(
                    "{} {:?} {} {:?} {}",
                    p.name, p.variable, p.loaded_at, p.on_call, p.optional
                )
            })
            .collect();
        assert_eq!(
            handoffs,
            [r#"libnvrtc.so.* Some("PKG_NVRTC_LIBRARY") pkg/jit.py:8 Some("compile") true"#]
        );
        assert!(scan.preloads.is_empty());
        scan.hand_over(&BTreeSet::from(["SOMETHING_ELSE".to_string()]));
        assert!(scan.preloads.is_empty());
        scan.hand_over(&BTreeSet::from(["PKG_NVRTC_LIBRARY".to_string()]));
        assert_eq!(scan.preloads.len(), 1);
        assert!(scan.preloads[0].loads("libnvrtc.so.12"));
        assert_eq!(
            scan.preloads[0].place(),
            "pkg/jit.py:8 (its path handed on in PKG_NVRTC_LIBRARY)"
        );
    }

    /// The preloads of a CUDA 12 package whose whole Python is `pkg/__init__.py`.
    fn init_preloads(init: &str) -> Vec<Preload> {
        preloads(
            &[src("pkg/__init__.py", init)],
            &Catalog::builtin(),
            Some(12),
        )
    }

    #[test]
    fn loaders_called_through_aliases() {
        // cuda-pathfinder's names are its own (`nvJitLink`); `cublas` loads `cublasLt` first; a
        // call inside `try … except` is still a load, and one in a lambda waits for its call.
        let init = "from cuda.pathfinder import load_nvidia_dynamic_lib as _load\nimport ctypes as C\ntry:\n    _load(\"nvJitLink\")\n    _load('cublas')\nexcept Exception:\n    pass\nC.CDLL(\"libcudart.so.12\")\nlater = lambda: C.cdll.LoadLibrary(\"libcufft.so.11\")\n";
        let p = init_preloads(init);
        let got: Vec<(&str, Vec<&str>, bool)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.sonames.iter().map(String::as_str).collect(),
                    p.at_import,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("nvJitLink", vec!["libnvJitLink.so.12"], true),
                ("cublas", vec!["libcublas.so.12", "libcublasLt.so.12"], true),
                ("libcudart.so.12", vec!["libcudart.so.12"], true),
                ("libcufft.so.11", vec!["libcufft.so.11"], false),
            ]
        );
    }

    #[test]
    fn a_load_whose_failure_is_caught_is_optional() {
        // The error each loader raises: OSError from ctypes, DynamicLibNotFoundError (a
        // RuntimeError) from cuda-pathfinder; a handler for something else does not catch it.
        let init = "import ctypes\nfrom cuda.pathfinder import load_nvidia_dynamic_lib, DynamicLibNotFoundError\ntry:\n    ctypes.CDLL(\"libcudart.so.12\")\nexcept OSError:\n    pass\ntry:\n    load_nvidia_dynamic_lib(\"cublas\")\nexcept DynamicLibNotFoundError:\n    pass\ntry:\n    load_nvidia_dynamic_lib(\"cufft\")\nexcept OSError:\n    pass\nwith contextlib.suppress(Exception):\n    ctypes.CDLL(\"libcurand.so.10\")\nctypes.CDLL(\"libnvrtc.so.12\")\n";
        let p = init_preloads(init);
        let got: Vec<(&str, bool, bool)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.optional, p.required_at_import()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("libcudart.so.12", true, false),
                ("cublas", true, false),
                ("cufft", false, true),
                ("libcurand.so.10", true, false),
                ("libnvrtc.so.12", false, true),
            ],
            "{p:#?}"
        );
    }

    #[test]
    fn a_load_of_a_file_found_first_is_optional() {
        // cudnn-frontend's shape: `LD_LIBRARY_PATH`'s directories tried with an existence test,
        // then the wheel's directory globbed, each loaded only where found; a plain load of a
        // path is required.
        let init = "import ctypes, glob, os
def _dlopen():
    for d in os.environ.get('LD_LIBRARY_PATH', '').split(':'):
        for name in ('libcudnn.so.9',):
            path = os.path.join(d, name)
            if not os.path.exists(path):
                continue
            return ctypes.CDLL(path)
    found = glob.glob(os.path.join(site, 'nvidia/cudnn/lib/libcudnn.so.*[0-9]'))
    if found:
        ctypes.CDLL(found[0])
def _plain():
    ctypes.CDLL(os.path.join(site, 'nvidia/cublas/lib/libcublas.so.13'))
_dlopen()
_plain()
";
        let p = init_preloads(init);
        let got: Vec<(&str, bool, bool)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.optional, p.required_at_import()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("libcudnn.so.9", true, false),
                ("libcudnn.so.*[0-9]", true, false),
                ("libcublas.so.13", false, true),
            ],
            "{p:#?}"
        );
    }

    #[test]
    fn a_parameter_tested_against_listed_names_loads_each() {
        // cupy's `cupy_backends/cuda/libs/__init__.py`: Python calls the module's `__getattr__`
        // on the first use of a submodule, and it loads the library of each name it lists; a
        // failed load raises ImportError, so nothing catches it.
        let init = "from cuda import pathfinder as _pathfinder
_submodules = ('cublas', 'curand')
def __getattr__(name):
    if not _is_hip and name in _submodules:
        try:
            pathfinder_name = name
            if name == 'cusparselt':
                pathfinder_name = 'cusparseLt'
            _pathfinder.load_nvidia_dynamic_lib(pathfinder_name)
        except _pathfinder.DynamicLibNotFoundError as e:
            raise ImportError(str(e)) from e
    raise AttributeError(name)
";
        let p = init_preloads(init);
        let got: Vec<(&str, Option<&str>, bool, bool)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.on_call.as_deref(),
                    p.at_import,
                    p.optional,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("cublas", Some("__getattr__"), false, false),
                ("curand", Some("__getattr__"), false, false),
            ],
            "{p:#?}"
        );
        assert!(
            p[0].sonames.contains(&"libcublas.so.12".to_string()),
            "{p:#?}"
        );
    }

    #[test]
    fn a_load_is_entered_by_the_nearest_public_function() {
        // A private helper is entered through its one caller; a public function is itself an
        // entry, even where another public function calls it (nvshmem4py's `get_unique_id()`).
        let init = "import ctypes
def _load():
    ctypes.CDLL('libcudart.so.13')
def get_unique_id():
    ctypes.CDLL('libnvshmem_host.so.3')
def init():
    _load()
    get_unique_id()
";
        let p = init_preloads(init);
        let got: Vec<(&str, Option<&str>)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.on_call.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("libcudart.so.13", Some("init")),
                ("libnvshmem_host.so.3", Some("get_unique_id")),
            ],
            "{p:#?}"
        );
    }

    /// cupy's `_preload_library(lib)`: one ctypes load of a path its helpers build, each helper
    /// called in a branch for one value of `lib` (`if lib == 'cutensor':`). A name is loaded
    /// when a caller passes its value: cuTENSOR's at import (`cupy/__init__.py`), NCCL's when
    /// `cupy.cuda.nccl` is imported, which the import does not do.
    #[test]
    fn a_name_of_one_branch_loads_when_its_value_is_passed() {
        let env = "import ctypes, os
def _cutensor_paths():
    return [os.path.join('cutensor/lib', 'libcutensor.so.2')]
def _nccl_paths():
    return [os.path.join('nvidia/nccl/lib', 'libnccl.so.2')]
def _preload_library(lib):
    cands = []
    if lib == 'cutensor':
        cands = _cutensor_paths()
    elif lib == 'nccl':
        cands = _nccl_paths()
    for path in cands:
        try:
            ctypes.CDLL(path)
        except Exception:
            pass
";
        let cat = Catalog::builtin();
        let s = scan(
            &[
                src(
                    "pkg/__init__.py",
                    "from pkg import _environment
_environment._preload_library('cutensor')
",
                ),
                src("pkg/_environment.py", env),
                src("pkg/cuda/__init__.py", ""),
                src(
                    "pkg/cuda/nccl.py",
                    "from pkg import _environment
_environment._preload_library('nccl')
",
                ),
            ],
            &cat,
            Some(12),
        );
        let got: Vec<(&str, bool, &str)> = s
            .preloads
            .iter()
            .map(|p| (p.name.as_str(), p.at_import, p.named_at.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("libcutensor.so.2", true, "pkg/__init__.py:2"),
                ("libnccl.so.2", false, "pkg/cuda/nccl.py:2"),
            ],
            "{:#?}",
            s.preloads
        );
        let nccl = &s.preloads[1];
        assert_eq!(nccl.trigger(), "import pkg.cuda.nccl");
        assert!(nccl.optional, "{nccl:?}");
    }

    /// A name passed on through functions that pass their first parameter on (libkvikio's
    /// `load_library()` → `_load_library("libkvikio.so")` → `_load_wheel_installation(soname)` →
    /// `ctypes.CDLL(os.path.join(…, soname))`) loads when the outermost call runs, named where
    /// the literal is; a `try` on the way makes it optional. A function that passes on something
    /// else than its parameter passes nothing.
    #[test]
    fn a_name_passed_on_through_functions_is_loaded() {
        let load = "import ctypes, os
def _wheel(soname):
    if os.path.isfile(lib := os.path.join(os.path.dirname(__file__), 'lib64', soname)):
        return ctypes.CDLL(lib)
def _load_library(soname):
    try:
        return _wheel(soname)
    except OSError:
        pass
def _other(name):
    return _wheel(other)
def load_library():
    _other('libnot.so.1')
    return _load_library('libwidget.so')
";
        let cat = Catalog::builtin();
        let s = scan(
            &[
                src("libwidget/__init__.py", ""),
                src("libwidget/load.py", load),
            ],
            &cat,
            Some(12),
        );
        let got: Vec<(&str, bool, Option<&str>, &str, bool)> = s
            .preloads
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.at_import,
                    p.on_call.as_deref(),
                    p.named_at.as_str(),
                    p.optional,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(
                "libwidget.so",
                false,
                Some("load_library"),
                "libwidget/load.py:14",
                true
            )],
            "{:#?}",
            s.preloads
        );
    }

    /// The start of a library's name written in a caller of a function that loads a computed
    /// path is what another call in that caller takes, not a name for the load (numba-cuda's
    /// `test()` opens nvvm and nvrtc in a loop and asks `_source("libdevice")` elsewhere).
    #[test]
    fn a_stem_in_a_caller_is_no_name_for_the_load() {
        let libs = "import ctypes
def get_cudalib(lib):
    return find(lib)
def open_cudalib(lib):
    path = get_cudalib(lib)
    return ctypes.CDLL(path)
def test():
    for lib in names():
        open_cudalib(lib)
    where = _source('libdevice')
";
        let cat = Catalog::builtin();
        let s = scan(
            &[src("pkg/__init__.py", ""), src("pkg/libs.py", libs)],
            &cat,
            Some(12),
        );
        assert!(
            !s.preloads.iter().any(|p| p.name.starts_with("libdevice")),
            "{:#?}",
            s.preloads
        );
    }

    /// Another wheel's `load_library()` that the catalog does not describe (rapidsmpf's
    /// `librapidsmpf.load_library()`, in the `else` of `try: import librapidsmpf`) is a
    /// package loader all the same: what it loads is unknown, and nothing catches its failure.
    #[test]
    fn an_unknown_wheels_loader_is_a_loader() {
        let init = "try:
    import libwidget
except ModuleNotFoundError:
    pass
else:
    libwidget.load_library()
    del libwidget
";
        let p = init_preloads(init);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].name, "libwidget.load_library()");
        assert_eq!(p[0].mechanism, Mechanism::PackageLoader);
        assert!(
            p[0].sonames.is_empty() && p[0].required_at_import(),
            "{p:#?}"
        );
    }

    #[test]
    fn names_of_files_for_another_machine() {
        for (name, other) in [
            ("PyNvVideoCodec*.cpython-*-aarch64-linux-gnu*", true),
            ("PyNvVideoCodec*.cpython-*-x86_64-linux-gnu*", false),
            ("_C.cpython-311-ppc64le-linux-gnu.so", true),
            ("libcudart.so.12", false),
            ("libx86_64_helpers.so", false),
        ] {
            assert_eq!(names_another_machine(name, "x86_64"), other, "{name}");
        }
        assert!(names_another_machine(
            "m.cpython-311-x86_64-linux-gnu.so",
            "aarch64"
        ));
    }

    #[test]
    fn a_caller_that_loads_keeps_its_names_for_its_own_loads() {
        // tilelang's shape: module code loads `libz3.so` from the directories where it is found,
        // and a function it calls loads the package's own library by a computed path: that
        // load is not of `libz3.so`, so nothing requires it at import.
        let init = "import ctypes
from pathlib import Path
from . import libinfo
def _init():
    handles = [ctypes.CDLL(str(p)) for d in dirs() if (p := Path(d) / 'libz3.so').is_file()]
    def _load_own():
        return ctypes.CDLL(libinfo.find_lib_path())
    return _load_own()
_init()
";
        let p = init_preloads(init);
        let got: Vec<(&str, &str, bool, bool)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.loaded_at.as_str(),
                    p.optional,
                    p.required_at_import(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![("libz3.so", "pkg/__init__.py:5", true, false)],
            "{p:#?}"
        );
    }

    #[test]
    fn a_name_passed_to_the_function_that_loads_it() {
        // cupy 14's shape: `_environment._preload_library('cutensor')` at import, the load of
        // the parameter inside `try`, a ctypes fallback by path; and a call only a function makes.
        let init = "from pkg import _environment\n_environment._preload_library('cutensor')\ndef later():\n    _environment._preload_library('nccl')\n";
        let env = "import ctypes\ndef _preload_library(lib):\n    from cuda.pathfinder import load_nvidia_dynamic_lib, DynamicLibNotFoundError\n    try:\n        return load_nvidia_dynamic_lib(lib)\n    except DynamicLibNotFoundError:\n        pass\n    ctypes.CDLL(lib)\n";
        let p = preloads(
            &[
                src("pkg/__init__.py", init),
                src("pkg/_environment.py", env),
            ],
            &Catalog::builtin(),
            Some(13),
        );
        let got: Vec<(&str, &str, &str, bool, bool)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.named_at.as_str(),
                    p.loaded_at.as_str(),
                    p.at_import,
                    p.optional,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "cutensor",
                    "pkg/__init__.py:2",
                    "pkg/_environment.py:5",
                    true,
                    true
                ),
                (
                    "nccl",
                    "pkg/__init__.py:4",
                    "pkg/_environment.py:5",
                    false,
                    true
                ),
            ],
            "{p:#?}"
        );
        assert!(p[0].loads("libcutensor.so.2"), "{p:#?}");
        assert_eq!(p[1].on_call.as_deref(), Some("later"));
    }

    #[test]
    fn optional_is_what_the_code_around_really_catches() {
        // A handler that raises again catches nothing; a caller that catches makes the load in
        // its callee optional.
        let init = "import ctypes\ndef _nccl():\n    try:\n        ctypes.CDLL(\"libnccl.so.2\")\n    except OSError as e:\n        raise ImportError(\"no NCCL\") from e\ndef _helper():\n    ctypes.CDLL(\"libcufile.so.0\")\ntry:\n    _helper()\nexcept OSError:\n    pass\n_nccl()\n";
        let p = init_preloads(init);
        let got: Vec<(&str, bool, bool)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.at_import, p.optional))
            .collect();
        assert_eq!(
            got,
            vec![
                ("libnccl.so.2", true, false),
                ("libcufile.so.0", true, true)
            ],
            "{p:#?}"
        );
    }

    #[test]
    fn the_installed_pathfinder_table_is_read_in_either_layout() {
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("new");
        let old = d.path().join("old");
        let libs = "cuda/pathfinder/_dynamic_libs";
        std::fs::create_dir_all(new.join(libs)).unwrap();
        std::fs::create_dir_all(old.join(libs)).unwrap();
        std::fs::write(
            new.join(libs).join("descriptor_catalog.py"),
            "DESCRIPTOR_CATALOG = (\n    DescriptorSpec(\n        name=\"cufoo\",\n        packaged_with=\"ctk\",\n        linux_sonames=(\"libcufoo.so.13\", \"libcufoo.so.12\"),\n        dependencies=(\"cubar\",),\n    ),\n    DescriptorSpec(name=\"cubar\", packaged_with=\"ctk\", linux_sonames=(\"libcubar.so.2\",)),\n)\n",
        )
        .unwrap();
        std::fs::write(
            old.join(libs).join("supported_nvidia_libs.py"),
            "SUPPORTED_LINUX_SONAMES_CTK = {\n    \"cufoo\": (\"libcufoo.so.11\", \"libcufoo.so.12\"),\n}\nSUPPORTED_LINUX_SONAMES = SUPPORTED_LINUX_SONAMES_CTK | {}\nDIRECT_DEPENDENCIES = {\"cufoo\": (\"cubaz\",)}\n",
        )
        .unwrap();
        let t = installed_pathfinder(&[d.path().join("none"), new.clone()]).unwrap();
        assert!(t.source.contains("descriptor_catalog.py"), "{}", t.source);
        assert_eq!(
            t.sonames("cufoo"),
            vec!["libcufoo.so.13", "libcufoo.so.12", "libcubar.so.2"]
        );
        let t = installed_pathfinder(&[old]).unwrap();
        assert_eq!(
            t.libs["cufoo"].linux_sonames,
            vec!["libcufoo.so.12", "libcufoo.so.11"]
        );
        assert_eq!(t.libs["cufoo"].dependencies, vec!["cubaz"]);
        assert!(installed_pathfinder(&[d.path().to_path_buf()]).is_none());
        // Through the package's CUDA major: only its SONAMEs, the unknown ones kept.
        let cat = Catalog::builtin();
        let init = "from cuda import pathfinder\npathfinder.load_nvidia_dynamic_lib(\"cufoo\")\n";
        let t = installed_pathfinder(&[new]).unwrap();
        let scan = scan_with(&[src("p/__init__.py", init)], &cat, Some(12), &t);
        assert_eq!(scan.preloads[0].sonames.len(), 3, "{:?}", scan.preloads);
    }

    #[test]
    fn a_path_in_the_package_names_its_library() {
        // cuequivariance-ops-cu12 0.13.0's shape: the library joined to the package's directory.
        let init = "import ctypes\nimport os\n\n\ndef root_dir():\n    return os.path.dirname(__file__)\n\n\nctypes.CDLL(os.path.join(root_dir(), \"lib/libcue_ops.so\"))\n";
        let cat = Catalog::builtin();
        let sources = [src("cue/__init__.py", init)];
        let s = scan(&sources, &cat, None);
        let p = s
            .preloads
            .iter()
            .find(|p| p.name == "libcue_ops.so")
            .unwrap_or_else(|| panic!("{:?}", s.preloads));
        assert!(p.at_import, "{p:?}");
    }

    /// A handler that calls a function of the file that always raises lets the failure out:
    /// the load is required. One that calls a function that only warns catches it.
    #[test]
    fn a_handler_that_raises_through_a_function_catches_nothing() {
        let code = |handler: &str| {
            format!(
                "import ctypes, warnings\ndef _fail(name):\n    msg = f'cannot load {{name}}'\n    raise ImportError(msg)\ndef _warn(name):\n    warnings.warn(name)\ntry:\n    ctypes.CDLL(\"libnccl.so.2\")\nexcept OSError:\n    {handler}('nccl')\n"
            )
        };
        for (handler, optional) in [("_fail", false), ("_warn", true)] {
            let p = init_preloads(&code(handler));
            assert_eq!(p.len(), 1, "{p:?}");
            assert_eq!(p[0].optional, optional, "{handler}: {p:?}");
        }
    }

    /// A load after an early return that a default import takes (no environment variable of
    /// the package set) never runs: torch-tensorrt 2.14's API capture, enabled by
    /// `TORCHTRT_ENABLE_TENSORRT_API_CAPTURE`. The same load without the return runs.
    #[test]
    fn a_load_behind_an_opt_in_flag_does_not_run() {
        let capture = |guard: &str| {
            format!(
                "import ctypes, os\ndef enable():\n    flag = os.environ.get(\"TORCHTRT_ENABLE_TENSORRT_API_CAPTURE\", None)\n{guard}    for path in [\"/usr/lib\"]:\n        try:\n            ctypes.CDLL(os.path.join(path, \"libtensorrt_shim.so\"))\n        except Exception:\n            continue\nenable()\n"
            )
        };
        let cat = Catalog::builtin();
        for (guard, runs) in [
            ("    if flag is None or (flag != \"1\" and flag.lower() != \"true\"):\n        return\n", false),
            ("    if not flag:\n        raise RuntimeError(\"off\")\n", false),
            ("    if flag == \"1\":\n        return\n", true),
            ("", true),
        ] {
            let s = scan(&[src("pkg/__init__.py", &capture(guard))], &cat, None);
            let loads = s.preloads.iter().any(|p| p.name == "libtensorrt_shim.so");
            assert_eq!(loads, runs, "{guard}: {:?}", s.preloads);
        }
    }

    /// torch's loader of operator libraries loads files of the package by path, whatever their
    /// names: fbgemm-gpu 1.x's loop over a list through a helper (`_load_library(f"{lib}.so")`
    /// → `torch.ops.load_library(os.path.join(os.path.dirname(__file__), filename))`), and
    /// torchao's glob of `_C*.so`; both at import.
    #[test]
    fn torch_operator_libraries_loaded_in_loops_and_globs() {
        let fbgemm = "import os\nimport torch\n\ndef _load_library(filename, no_throw=False):\n    try:\n        torch.ops.load_library(os.path.join(os.path.dirname(__file__), filename))\n    except Exception as error:\n        if not no_throw:\n            raise error\n\nlibraries = [\"fbgemm_gpu_config\", \"fbgemm_gpu_tbe_utils\"]\nfor library in libraries:\n    _load_library(f\"{library}.so\")\n";
        let torchao = "from pathlib import Path\nimport torch\nso_files = list(Path(__file__).parent.glob(\"_C*.so\"))\nfor file in so_files:\n    torch.ops.load_library(str(file))\n";
        let cat = Catalog::builtin();
        for (path, text, file, other) in [
            (
                "fbgemm_gpu/__init__.py",
                fbgemm,
                "fbgemm_gpu_tbe_utils.so",
                None,
            ),
            (
                "torchao/__init__.py",
                torchao,
                "_C.abi3.so",
                Some("_other.so"),
            ),
        ] {
            let s = scan(&[src(path, text)], &cat, None);
            let p = s
                .preloads
                .iter()
                .find(|p| p.loads(file))
                .unwrap_or_else(|| panic!("{path}: {:?}", s.preloads));
            assert!(p.at_import, "{p:?}");
            if let Some(o) = other {
                // Loaded where the listing finds it: a file the package carries is there, so
                // its load runs at import, and nothing catches its failure.
                assert!(p.if_present && p.carried_required_at_import(), "{p:?}");
                assert!(!s.preloads.iter().any(|p| p.loads(o)), "{:?}", s.preloads);
            }
        }
        // A plain ctypes load still wants a library's name: `CDLL("x.so")` is no load by path.
        let s = scan(
            &[src(
                "pkg/__init__.py",
                "import ctypes\nctypes.CDLL(\"helper.so\")\n",
            )],
            &cat,
            None,
        );
        assert!(s.preloads.is_empty(), "{:?}", s.preloads);
    }

    /// A library found at run time by the start of its name, in a function whose branches test
    /// the name the caller passes (the shape of transformer-engine 2.20's `_get_shared_object_file`,
    /// abridged): the call's literal picks the branch, a parameter passed on takes the literals
    /// its own callers pass, and a library only another branch names is not loaded.
    #[test]
    fn a_library_found_by_the_start_of_its_name_in_the_branch_the_call_picks() {
        let common = r#"import ctypes, importlib.util, os
def _find(prefix):
    for f in os.listdir(os.path.dirname(__file__)):
        if f.startswith(prefix) and f.endswith(_ext()):
            return f
def _get_shared_object_file(library):
    assert library in ("core", "torch", "nccl_ep")
    if library == "core":
        so_prefix = "libtransformer_engine"
    elif library == "nccl_ep":
        so_prefix = "libnccl_ep"
    else:
        so_prefix = f"transformer_engine_{library}"
    return _find(so_prefix)
def _load_core_library():
    return ctypes.CDLL(_get_shared_object_file("core"), mode=ctypes.RTLD_GLOBAL)
def load_framework_extension(framework):
    spec = importlib.util.spec_from_file_location("m", _get_shared_object_file(framework))
def ep_available():
    try:
        _get_shared_object_file("nccl_ep")
    except FileNotFoundError:
        return False
_TE_LIB = _load_core_library()
"#;
        let torch =
            "from te.common import load_framework_extension\nload_framework_extension(\"torch\")\n";
        let s = scan(
            &[
                src("te/__init__.py", "import te.common\n"),
                src("te/common/__init__.py", common),
                src("te/pytorch/__init__.py", torch),
            ],
            &Catalog::builtin(),
            None,
        );
        let core = s
            .preloads
            .iter()
            .find(|p| p.loads("libtransformer_engine.so"))
            .unwrap_or_else(|| panic!("{:?}", s.preloads));
        assert!(core.required_at_import(), "{core:?}");
        assert_eq!(core.loaded_at, "te/common/__init__.py:16");
        assert!(
            !s.preloads.iter().any(|p| p.loads("libnccl_ep.so")),
            "{:?}",
            s.preloads
        );
        // Without the literal, every branch is read: the loader could load either.
        let unknown = common.replace(
            "_get_shared_object_file(\"core\")",
            "_get_shared_object_file(NAME)",
        );
        let s = scan(
            &[src("te/common/__init__.py", &unknown)],
            &Catalog::builtin(),
            None,
        );
        assert!(
            s.preloads.iter().any(|p| p.loads("libnccl_ep.so")),
            "{:?}",
            s.preloads
        );
        // Words and directories that start with "lib" name no library.
        for w in ["lib", "lib64", "library", "libexec", "lib/x"] {
            assert!(!pysource::is_library_stem(w), "{w}");
        }
        assert!(pysource::is_library_stem("libtransformer_engine"));
    }

    /// A package the code puts on `sys.path` from a directory no import could reach
    /// (bitblas 0.1's `sys.path.insert(0, install_tvm_path + "/python")`, then `import tvm`,
    /// whose `_ffi/base.py` loads `libtvm.so` at import): its modules import by their own names,
    /// and what they load at import loads at the package's import.
    #[test]
    fn a_package_put_on_sys_path_imports_by_its_own_name() {
        let init = "import os, sys\nhere = os.path.dirname(os.path.abspath(__file__))\nsys.path.insert(0, os.path.join(here, '3rdparty', 'tvm') + '/python')\nimport tvm\n";
        let tvm = "from ._ffi.base import _LIB\n";
        let base = "import ctypes\nfrom . import libinfo\ndef _load_lib():\n    lib_path = libinfo.find_lib_path()\n    return ctypes.CDLL(lib_path[0], ctypes.RTLD_GLOBAL)\n_LIB = _load_lib()\n";
        let libinfo = "def find_lib_path():\n    return [\"libtvm.so\"]\n";
        let files = |init: &str| {
            vec![
                src("pkg/__init__.py", init),
                src("pkg/3rdparty/tvm/python/tvm/__init__.py", tvm),
                src("pkg/3rdparty/tvm/python/tvm/_ffi/__init__.py", ""),
                src("pkg/3rdparty/tvm/python/tvm/_ffi/base.py", base),
                src("pkg/3rdparty/tvm/python/tvm/_ffi/libinfo.py", libinfo),
            ]
        };
        let s = scan(&files(init), &Catalog::builtin(), None);
        let p = s
            .preloads
            .iter()
            .find(|p| p.name == "libtvm.so")
            .unwrap_or_else(|| panic!("{:?}", s.preloads));
        assert!(p.required_at_import(), "{p:?}");
        // Without the change to sys.path, `import tvm` is another distribution's.
        let s = scan(&files("import tvm\n"), &Catalog::builtin(), None);
        assert!(s.preloads.iter().all(|p| !p.at_import), "{:?}", s.preloads);
    }

    /// The loader of a library's own wheel, by the convention of NVIDIA's C++ library wheels
    /// (`nvidia.libnvcomp.load_library()` beside `nvidia/libnvcomp/lib64`), called at the import
    /// of a package inside a namespace directory (`nvidia/nvcomp/__init__.py`, no
    /// `nvidia/__init__.py`): the library is loaded at import.
    #[test]
    fn a_wheels_own_loader_in_a_namespace_package() {
        let init = "import nvidia.libnvcomp\nnvidia.libnvcomp.load_library()\nfrom .nvcomp_impl import *\n";
        let s = scan(
            &[src("nvidia/nvcomp/__init__.py", init)],
            &Catalog::builtin(),
            Some(12),
        );
        let p = s
            .preloads
            .iter()
            .find(|p| p.loads("libnvcomp.so.6"))
            .unwrap_or_else(|| panic!("{:?}", s.preloads));
        assert!(p.required_at_import(), "{p:?}");
        assert_eq!(p.mechanism, Mechanism::PackageLoader);
        // A directory of scripts with no `__init__.py` is not imported.
        let s = scan(
            &[src("benchmarks/run.py", init)],
            &Catalog::builtin(),
            Some(12),
        );
        assert!(s.preloads.iter().all(|p| !p.at_import), "{:?}", s.preloads);
    }

    /// An extension module loaded from a path the code builds, its suffix left to run time
    /// (PyNvVideoCodec 2.2's `spec_from_file_location("_PyNvVideoCodec", _get_module_path(s))`
    /// over `f"PyNvVideoCodec{s}.cpython-{v}-x86_64-linux-gnu{ext}"`), loads at import.
    #[test]
    fn an_extension_module_loaded_from_a_built_path() {
        let init = r#"import importlib.util, os, sys
def _get_module_path(suffix):
    v = f"{sys.version_info.major}{sys.version_info.minor}"
    ext = ".so"
    names = [f"PyNvVideoCodec{suffix}.cpython-{v}-x86_64-linux-gnu{ext}"]
    for n in names:
        return os.path.join(os.path.dirname(__file__), n)
try:
    spec = importlib.util.spec_from_file_location("_P", _get_module_path("_130"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
except Exception as e:
    raise
"#;
        let s = scan(
            &[src("PyNvVideoCodec/__init__.py", init)],
            &Catalog::builtin(),
            None,
        );
        let p = s
            .preloads
            .iter()
            .find(|p| p.loads("PyNvVideoCodec_130.cpython-311-x86_64-linux-gnu.so"))
            .unwrap_or_else(|| panic!("{:?}", s.preloads));
        assert!(p.required_at_import(), "{p:?}");
        assert!(!p.loads("VersionCheck.cpython-311-x86_64-linux-gnu.so"));
    }

    #[test]
    fn faiss_loader_with_its_json() {
        // The shape of faiss-gpu-cu12 1.14.1.post1's faiss/loader.py (lines abridged).
        let loader = r#"import ctypes
import json

def _load_shared_library(preload_target):
    for file in distribution(preload_target["package"]).files:
        if preload_target["library"] == file.name:
            path = str(file.locate())
            break
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)

_CONFIG_PATH = Path(__file__).parent / "_preload_library.json"
preload_targets = json.loads(_CONFIG_PATH.read_text())["preload-library"]
for target in preload_targets:
    if os.getenv("X"):
        continue
    _load_shared_library(target)
"#;
        let json = "{\n  \"preload-library\": [\n    {\"library\": \"libcudart.so.12\"},\n    {\"library\": \"libcublas.so.12\"}\n  ]\n}";
        let cat = Catalog::builtin();
        let p = preloads(
            &[
                src("faiss/__init__.py", "from .loader import *\n"),
                src("faiss/loader.py", loader),
                src("faiss/_preload_library.json", json),
            ],
            &cat,
            Some(12),
        );
        let names: Vec<(&str, &str, &str, bool)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.named_at.as_str(),
                    p.loaded_at.as_str(),
                    p.at_import,
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    "libcudart.so.12",
                    "faiss/_preload_library.json:3",
                    "faiss/loader.py:9",
                    true
                ),
                (
                    "libcublas.so.12",
                    "faiss/_preload_library.json:4",
                    "faiss/loader.py:9",
                    true
                ),
            ]
        );
        assert!(p[0].loads("libcudart.so.12") && !p[0].loads("libcudart.so.13"));
    }

    #[test]
    fn a_function_nobody_calls_at_import() {
        // onnxruntime's preload_dlls(): defined, never called by the package itself.
        let init = r#"import ctypes
def _paths():
    return {"cublas": "libcublas.so.13", "cudnn": "libcudnn.so.9"}

def preload_dlls(cuda=True):
    for name in _paths().values():
        _ = ctypes.CDLL(name)

from .capi import x
"#;
        let cat = Catalog::builtin();
        let p = preloads(&[src("onnxruntime/__init__.py", init)], &cat, Some(13));
        assert_eq!(p.len(), 2);
        assert!(p.iter().all(|p| !p.at_import));
        assert_eq!(p[0].on_call.as_deref(), Some("preload_dlls"));
        assert_eq!(p[0].loaded_at, "onnxruntime/__init__.py:7");
    }

    #[test]
    fn calls_followed_across_files_and_pathfinder_names() {
        let load = r#"import ctypes
def _load_wheel(soname):
    return ctypes.CDLL(soname, 0)

def load_library():
    _load_wheel("librmm.so")
    from cuda.pathfinder import load_nvidia_dynamic_lib
    load_nvidia_dynamic_lib("cufile")
"#;
        let init = "import librmm\nlibrmm.load_library()\n";
        let librmm = "from librmm.load import load_library\n";
        let cat = Catalog::builtin();
        // Alone, librmm's loader runs only when load_library() is called.
        let p = preloads(
            &[
                src("librmm/__init__.py", librmm),
                src("librmm/load.py", load),
            ],
            &cat,
            Some(12),
        );
        assert!(p.iter().all(|p| !p.at_import), "{p:?}");
        assert_eq!(p[0].on_call.as_deref(), Some("load_library"));
        // With rmm's __init__, which calls it at import, it runs at import: the call is
        // resolved through librmm's re-export of the function.
        let p = preloads(
            &[
                src("librmm/__init__.py", librmm),
                src("librmm/load.py", load),
                src("rmm/__init__.py", init),
            ],
            &cat,
            Some(12),
        );
        assert!(p.iter().all(|p| p.at_import), "{p:?}");
        let cufile = p.iter().find(|p| p.name == "cufile").unwrap();
        assert_eq!(cufile.mechanism, Mechanism::CudaPathfinder);
        assert_eq!(cufile.sonames, vec!["libcufile.so.0"]);
        assert_eq!(cufile.loaded_at, "librmm/load.py:8");
    }

    #[test]
    fn a_wheel_loader_called_at_import() {
        // rmm/__init__.py calls the loader of the librmm wheel, which is not in rmm's wheel: what
        // it loads comes from the catalog (librmm.so, and librapids_logger.so which
        // librmm.load_library() loads first through rapids_logger.load_library()).
        let init = "try:\n    import librmm\nexcept ModuleNotFoundError:\n    pass\nelse:\n    librmm.load_library()\n    del librmm\n";
        let cat = Catalog::builtin();
        let p = preloads(&[src("rmm/__init__.py", init)], &cat, Some(12));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].mechanism, Mechanism::PackageLoader);
        assert_eq!(p[0].name, "librmm.load_library()");
        assert_eq!(p[0].loaded_at, "rmm/__init__.py:6");
        assert!(p[0].at_import);
        assert!(
            p[0].loads("librmm.so") && p[0].loads("librapids_logger.so"),
            "{p:?}"
        );
        assert!(!p[0].loads("libkvikio.so"));
        // Inside a function nothing calls at import, it waits for that function.
        let lazy = "import librmm\ndef setup():\n    librmm.load_library()\n";
        let p = preloads(&[src("x/__init__.py", lazy)], &cat, Some(12));
        assert_eq!(
            (p[0].at_import, p[0].on_call.as_deref()),
            (false, Some("setup"))
        );
    }

    #[test]
    fn names_after_characters_of_several_bytes() {
        // torch/_inductor/…/dense_blockscaled_gemm_persistent.py:78 (a docstring) made the old
        // hand-written scan slice inside `×`.
        let p = preloads(
            &[src(
                "t/__init__.py",
                "\"\"\"M×ceil_div(K)×L\"\"\"\nimport ctypes\nctypes.CDLL(\"libcudart.so.12\")\n",
            )],
            &Catalog::builtin(),
            Some(12),
        );
        assert_eq!(p[0].name, "libcudart.so.12");
    }

    #[test]
    fn patterns_match_sonames() {
        let init = r#"import ctypes
def _preload_cuda_deps(folder, name):
    ctypes.CDLL(path)
def _load_global_deps():
    cuda_libs = {"cublas": "libcublas.so.*[0-9]", "nvrtc": "libnvrtc.so.*[0-9]"}
    for f, n in cuda_libs.items():
        _preload_cuda_deps(f, n)
_load_global_deps()
"#;
        let p = preloads(
            &[src("torch/__init__.py", init)],
            &Catalog::builtin(),
            Some(13),
        );
        assert_eq!(p.len(), 2);
        assert!(p[0].loads("libcublas.so.13") && !p[0].loads("libcublasLt.so.13"));
        assert!(p[0].at_import);
    }

    #[test]
    fn only_what_runs_on_linux_at_import() {
        // The shapes of torch 2.15.0's torch/__init__.py, torch/cuda/_utils.py and
        // torch/_inductor/codecache.py (abridged): a Windows-only loader, a name that is only
        // tested against, a ROCm helper nobody calls at import, a module the import never runs.
        let init = r#"import ctypes
import sys
from torch.cuda import _utils
if sys.platform == "win32":
    def _load_dll_libraries():
        ctypes.CDLL("vcruntime140.dll")
        kernel32.LoadLibraryW(dll)
    _load_dll_libraries()

def _preload_cuda_lib(lib_folder, lib_name):
    ctypes.CDLL(lib_path)

def _preload_cuda_deps(required=True):
    cuda_libs = [
        ("cublas", "libcublas.so.*[0-9]"),
        ("cudnn", "libcudnn.so.*[0-9]"),
    ]
    for f, n in cuda_libs:
        _preload_cuda_lib(f, n)

def _load_global_deps():
    ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)
    if "libcudart.so" not in _maps:
        return
    _preload_cuda_deps(required=False)

_load_global_deps()
"""A docstring that says ctypes.CDLL("libfoo.so.1")."""
"#;
        let utils = r#"import ctypes
def _get_hip_runtime_library():
    lib = ctypes.CDLL("libamdhip64.so")
def _get_gpu_runtime_library():
    return _get_hip_runtime_library()
"#;
        let codecache = "import ctypes\nctypes.CDLL(\"libStandaloneHalideRuntime.so\")\n";
        let p = preloads(
            &[
                src("torch/__init__.py", init),
                src("torch/cuda/__init__.py", "import sys\n"),
                src("torch/cuda/_utils.py", utils),
                src("torch/_inductor/codecache.py", codecache),
            ],
            &Catalog::builtin(),
            Some(13),
        );
        let got: Vec<(&str, &str, bool, Option<&str>)> = p
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.loaded_at.as_str(),
                    p.at_import,
                    p.on_call.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("libcublas.so.*[0-9]", "torch/__init__.py:11", true, None),
                ("libcudnn.so.*[0-9]", "torch/__init__.py:11", true, None),
                (
                    "libStandaloneHalideRuntime.so",
                    "torch/_inductor/codecache.py:2",
                    false,
                    None
                ),
                (
                    "libamdhip64.so",
                    "torch/cuda/_utils.py:3",
                    false,
                    Some("_get_gpu_runtime_library")
                ),
            ]
        );
    }

    #[test]
    fn outside_imports_at_import() {
        // bitsandbytes' __init__ imports torch first: torch's own import runs before its code.
        let init = "import torch\nfrom . import cuda_specs\ndef later():\n    import scipy\n";
        let s = scan(
            &[
                src("bitsandbytes/__init__.py", init),
                src(
                    "bitsandbytes/cuda_specs.py",
                    "import ctypes as ct\nfrom typing import Optional\n",
                ),
            ],
            &Catalog::builtin(),
            Some(12),
        );
        assert_eq!(
            s.imports,
            vec![
                (
                    "torch".to_string(),
                    "bitsandbytes/__init__.py:1".to_string()
                ),
                (
                    "ctypes".to_string(),
                    "bitsandbytes/cuda_specs.py:1".to_string()
                ),
                (
                    "typing".to_string(),
                    "bitsandbytes/cuda_specs.py:2".to_string()
                ),
            ]
        );
    }

    #[test]
    fn variant_names() {
        let v = variant_name("bitsandbytes/libbitsandbytes_cuda118.so").unwrap();
        assert_eq!(v.group, "libbitsandbytes_cuda*.so");
        assert_eq!(v.cuda, "11.8");
        assert_eq!(variant_name("x/libfoo_cu12.so").unwrap().cuda, "12");
        assert_eq!(variant_name("libcudart.so.12"), None);
        assert_eq!(variant_name("libcurand.so.10"), None);
        assert_eq!(variant_name("libcuda123x.so"), None);
        // A directory named for the release: the group is the path.
        let v = variant_name("cuda/compute/cu13/cccl/libcccl.c.parallel.so").unwrap();
        assert_eq!(v.group, "cuda/compute/cu*/cccl/libcccl.c.parallel.so");
        assert_eq!(v.cuda, "13");
        assert_eq!(
            variant_name("nvidia/cu13/lib/libcublas.so.13")
                .unwrap()
                .cuda,
            "13"
        );
        assert_eq!(variant_name("pkg/cuda/x.so"), None);
        assert_eq!(variant_name("pkg/cu1/x.so"), None);
    }

    #[test]
    fn tiers_by_reach() {
        let n = |path, soname, needed: Vec<&'static str>, extension| Node {
            path,
            soname,
            needed,
            extension,
            mentions: &[],
        };
        let nodes = vec![
            n(
                "pkg/_ext.cpython-311-x86_64-linux-gnu.so",
                None,
                vec!["libcore.so"],
                true,
            ),
            n(
                "pkg/libcore.so",
                Some("libcore.so"),
                vec!["libcudart.so.12"],
                false,
            ),
            n(
                "pkg/libprovider.so",
                None,
                vec!["libcore.so", "libcublas.so.12"],
                false,
            ),
            n(
                "pkg/libx_cuda118.so",
                Some("libx_cuda118.so"),
                vec![],
                false,
            ),
            n(
                "pkg/libx_cuda121.so",
                Some("libx_cuda121.so"),
                vec![],
                false,
            ),
            n("pkg/lone_cuda126.so", None, vec![], false),
        ];
        let tiers_only =
            |placed: Vec<Placed>| placed.into_iter().map(|p| p.tier).collect::<Vec<_>>();
        assert_eq!(
            tiers_only(tiers(&nodes, &[], &BTreeMap::new())),
            vec![
                Tier::Import,
                Tier::Import,
                Tier::OnDemand,
                Tier::Variant,
                Tier::Variant,
                Tier::OnDemand
            ]
        );
    }

    /// cuda-cccl's shape: one build per CUDA release in directories named for it, the extension
    /// module imported by a name built at run time (no Python names it): each build is a variant,
    /// extension modules too, and neither loads at import; a module no Python names outside such
    /// a directory still does, and a lone release directory is no group.
    #[test]
    fn builds_in_directories_named_for_a_release_are_variants() {
        let n =
            |path: &'static str, soname: Option<&'static str>, needed: Vec<&'static str>, ext| {
                Node {
                    path,
                    soname,
                    needed,
                    extension: ext,
                    mentions: &[],
                }
            };
        let nodes = vec![
            n(
                "pkg/cu12/_impl.cpython-311-x86_64-linux-gnu.so",
                None,
                vec!["libpar.so"],
                true,
            ),
            n(
                "pkg/cu12/lib/libpar.so",
                Some("libpar.so"),
                vec!["libnvrtc.so.12"],
                false,
            ),
            n(
                "pkg/cu13/_impl.cpython-311-x86_64-linux-gnu.so",
                None,
                vec!["libpar.so"],
                true,
            ),
            n(
                "pkg/cu13/lib/libpar.so",
                Some("libpar.so"),
                vec!["libnvrtc.so.13"],
                false,
            ),
            n(
                "pkg/_other.cpython-311-x86_64-linux-gnu.so",
                None,
                vec![],
                true,
            ),
            n("pkg/cu11/lone.so", None, vec![], false),
        ];
        let placed: Vec<Tier> = tiers(&nodes, &[], &BTreeMap::new())
            .into_iter()
            .map(|p| p.tier)
            .collect();
        assert_eq!(
            placed,
            vec![
                Tier::Variant,
                Tier::Variant,
                Tier::Variant,
                Tier::Variant,
                Tier::Import,
                Tier::OnDemand
            ]
        );
    }

    /// cupy's shape: extension modules its Python imports only in a module `__getattr__`, or
    /// inside `try … except ImportError`, do not decide the import; one no Python names loads at
    /// import; one a compiled module names (a Cython cimport) loads with it.
    #[test]
    fn extension_modules_by_how_the_import_reaches_them() {
        let sources = vec![
            src(
                "pkg/__init__.py",
                "from pkg import core\ntry:\n    from pkg import thrust\nexcept ImportError:\n    thrust = None\n\ndef __getattr__(name):\n    if name == 'cublas':\n        import pkg.cublas as m\n        return m\n    if name == 'cufft':\n        return importlib.import_module('pkg.cufft')\n",
            ),
            src(
                "pkg/helpers.py",
                "from pkg import cutensor\n",
            ),
            // Two more importers the import does not reach: counted, not named.
            src("pkg/helpers2.py", "import pkg.cutensor\n"),
            src("pkg/helpers3.py", "def f():\n    from pkg import cutensor\n"),
        ];
        let scan = scan(&sources, &Catalog::builtin(), Some(12));
        let ext = |name: &'static str| format!("pkg/{name}.cpython-311-x86_64-linux-gnu.so");
        let paths: Vec<String> = [
            "core", "thrust", "cublas", "cufft", "cutensor", "stream", "loose", "linked",
        ]
        .into_iter()
        .map(ext)
        .collect();
        let core_mentions = vec!["pkg.stream".to_string(), "numpy.core".to_string()];
        let nodes: Vec<Node> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| Node {
                path: p,
                soname: None,
                needed: if i == 2 {
                    vec!["linked.cpython-311-x86_64-linux-gnu.so"]
                } else {
                    vec![]
                },
                extension: true,
                mentions: if i == 0 { &core_mentions } else { &[] },
            })
            .collect();
        let placed = tiers(&nodes, &[], &scan.modules);
        let t: Vec<Tier> = placed.iter().map(|p| p.tier).collect();
        assert_eq!(
            t,
            vec![
                Tier::Import,   // imported at module level
                Tier::OnDemand, // guarded
                Tier::OnDemand, // in __getattr__
                Tier::OnDemand, // import_module("pkg.cufft") in __getattr__
                Tier::OnDemand, // by a module the import does not reach
                Tier::Import,   // named by core's read-only data
                Tier::Import,   // no Python names it
                Tier::Import,   // no Python names it (and cublas needs it)
            ]
        );
        assert_eq!(
            placed[1].why.as_deref(),
            Some("imported at pkg/__init__.py:3 inside `try … except ImportError`: the package imports without it")
        );
        assert_eq!(
            placed[2].why.as_deref(),
            Some("imported only when __getattr__() runs, at pkg/__init__.py:9")
        );
        assert_eq!(
            placed[3].why.as_deref(),
            Some("imported only when __getattr__() runs, at pkg/__init__.py:12")
        );
        assert_eq!(
            placed[4].why.as_deref(),
            Some("imported only by pkg/helpers.py:1 (+2 more), a module the import does not reach")
        );
        assert_eq!(placed[0].why, None);
        assert_eq!(
            extension_module("lib/python3.11/site-packages/a/b.abi3.so").as_deref(),
            Some("a.b")
        );
        // Named like a module but with no init function: at import where an import names it
        // (`core`), else loaded by path only (torch-memory-saver's `…_preload.abi3.so`).
        let plain: Vec<Node> = ["pkg/core.abi3.so", "pkg/hook_preload.abi3.so"]
            .into_iter()
            .map(|p| Node {
                path: p,
                soname: None,
                needed: vec![],
                extension: false,
                mentions: &[],
            })
            .collect();
        let t: Vec<Tier> = tiers(&plain, &[], &scan.modules)
            .iter()
            .map(|p| p.tier)
            .collect();
        assert_eq!(t, vec![Tier::Import, Tier::OnDemand]);
    }

    #[test]
    fn dotted_names_are_whole_strings() {
        let rodata = b"x\0cupy._core.core\0not a.name\0a..b\0cupy.cuda.stream\0trailing.name";
        assert_eq!(
            dotted_names(&[rodata]),
            vec![
                "cupy._core.core".to_string(),
                "cupy.cuda.stream".to_string()
            ]
        );
    }
    /// A word a call passes to a function that builds library names from it in f-strings
    /// (transformer-engine's `_load_cuda_library("curand")`, whose callee globs
    /// `lib{lib_name}*{ext}.*[0-9]` and opens `lib{lib_name}{ext}`), through a function that
    /// passes it on: each name the word makes, at import. A pattern keeps its own suffix (a file
    /// moved aside, `libcurand.so.10.bak`, is no match); a bare start gets the library suffix.
    #[test]
    fn a_word_passed_on_names_the_libraries_its_f_strings_make() {
        let init = r#"import ctypes, glob, os
def _ext():
    return ".so"
def _from_system(lib_name):
    try:
        return ctypes.CDLL(f"lib{lib_name}{_ext()}", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
def _from_python(lib_name, strict=False):
    so_paths = glob.glob(os.path.join("/x", f"lib/lib{lib_name}*{_ext()}.*[0-9]"))
    for so_path in so_paths:
        ctypes.CDLL(so_path, mode=ctypes.RTLD_GLOBAL)
    if strict and not so_paths:
        raise RuntimeError(f"{lib_name} shared object not found.")
def _load(lib_name):
    if _from_system(lib_name) is None:
        _from_python(lib_name)
_load("curand")
_from_python("cublas", strict=True)
def later():
    _load("cufft")
"#;
        let p = init_preloads(init);
        let at = |name: &str| p.iter().find(|x| x.name == name).map(|x| x.at_import);
        assert_eq!(at("libcurand*.so*"), Some(true), "{p:?}");
        assert_eq!(at("libcurand*.*[0-9]"), Some(true), "{p:?}");
        assert_eq!(at("libcublas*.*[0-9]"), Some(true), "{p:?}");
        // Named by a function nothing calls at import: on call.
        assert_eq!(at("libcufft*.*[0-9]"), Some(false), "{p:?}");
        let curand = p.iter().find(|x| x.name == "libcurand*.*[0-9]").unwrap();
        assert!(curand.loads("libcurand.so.10") && !curand.loads("libcurand.so.10.bak"));
        // The word itself names no file.
        assert!(
            !p.iter().any(|x| x.name == "curand" || x.name == "lib*"),
            "{p:?}"
        );
    }
}
