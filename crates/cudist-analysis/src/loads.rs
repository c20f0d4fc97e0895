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
//! Preloads are found in the package's `.py` files (and the `.json` files they read): calls of
//! `ctypes.CDLL` / `cdll.LoadLibrary` / `PyDLL` with the library names written in the same file
//! (faiss' `loader.py` with `_preload_library.json`, RAPIDS' `load.py`, torch's `_preload_cuda_deps`
//! patterns), cuda-pathfinder's `load_nvidia_dynamic_lib("name")`, and the loader functions of the
//! wheels that provide a library (RAPIDS' `librmm.load_library()`, named by the catalog's
//! `python_loader`: what it loads is read off the catalog, the function lives in another wheel). A preload runs at import when
//! its call is reached from module-level code, following calls by function name across the files
//! read (rmm's `__init__.py` calls `librmm.load_library()`); otherwise it runs only when a function
//! is called (`onnxruntime.preload_dlls()`), which is said.
//!
//! Hand-written: no crate reads Python this way, and a parser would still not say which names a
//! package computes at run time. What this reads is the shape every package above uses; a name
//! built at run time from pieces (bitsandbytes' variant name) is not a preload of a CUDA library.

use std::collections::{BTreeMap, BTreeSet};

use cudist_catalog::Catalog;
use serde::Serialize;

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

/// The most source text kept per artifact; past it, the rest is not read (torch has 60 MB of
/// Python, but the modules that load libraries are few and small).
pub const MAX_SOURCES_TOTAL: u64 = 256 << 20;

/// Calls that load a shared library by name or path.
const LOAD_CALLS: &[&str] = &[
    "CDLL(",
    "LoadLibrary(",
    "PyDLL(",
    "load_nvidia_dynamic_lib(",
];

/// How a package's Python loads a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// `ctypes.CDLL`, `ctypes.cdll.LoadLibrary`, `ctypes.PyDLL`.
    Ctypes,
    /// cuda-pathfinder's `load_nvidia_dynamic_lib`.
    CudaPathfinder,
    /// The loader function of the wheel that provides the library (`librmm.load_library()`).
    PackageLoader,
}

/// A library the package's own Python loads.
#[derive(Debug, Clone, Serialize)]
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
}

impl Preload {
    /// Whether this preload loads the library `soname`.
    pub fn loads(&self, soname: &str) -> bool {
        self.sonames.iter().any(|s| s == soname)
            || (self.name.contains(['*', '?', '['])
                && glob::Pattern::new(&self.name).is_ok_and(|p| p.matches(soname)))
    }

    /// `faiss/loader.py:47`, or `…:47 (named at faiss/_preload_library.json:6)` when the name is
    /// written elsewhere; a wheel's loader with its call (`librmm.load_library() at
    /// rmm/__init__.py:12`).
    pub fn place(&self) -> String {
        if self.mechanism == Mechanism::PackageLoader {
            return format!("{} at {}", self.name, self.loaded_at);
        }
        if self.named_at.split(':').next() == self.loaded_at.split(':').next() {
            self.loaded_at.clone()
        } else {
            format!("{} (named at {})", self.loaded_at, self.named_at)
        }
    }
}

/// One line of Python, as far as the scan needs it.
struct Line<'a> {
    number: usize,
    indent: usize,
    code: &'a str,
}

/// The logical lines of a Python file (comments and blank lines dropped, continuation lines kept
/// as they are: an argument list spread over lines still names its strings on one of them).
fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let code = l.trim_start();
            (!code.is_empty() && !code.starts_with('#')).then(|| Line {
                number: i + 1,
                indent: l.len() - code.len(),
                code,
            })
        })
        .collect()
}

/// The function a line is in, by indentation (`None`: module level, or a class body).
fn enclosing_def(lines: &[Line], at: usize) -> Option<String> {
    let mut indent = lines[at].indent;
    for l in lines[..at].iter().rev() {
        if l.indent < indent {
            indent = l.indent;
            if let Some(name) = def_name(l.code) {
                return Some(name.to_string());
            }
            if indent == 0 {
                return None;
            }
        }
    }
    None
}

fn def_name(code: &str) -> Option<&str> {
    let rest = code
        .strip_prefix("def ")
        .or_else(|| code.strip_prefix("async def "))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// The names a line calls (`foo(`, `mod.foo(`): identifiers directly before a `(`.
fn called_names(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices('(') {
        let head = &code[..i];
        // Past the last character that is not part of a name (which may be several bytes long:
        // torch's docstrings write `M×ceil_div(K)`).
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(0, |(p, c)| p + c.len_utf8());
        let name = &head[start..];
        if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(name);
        }
    }
    out
}

/// String literals of a line (single or double quoted, no escapes needed for library names).
fn literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let q = bytes[i];
        if q == b'"' || q == b'\'' {
            if let Some(len) = code[i + 1..].find(q as char) {
                out.push(&code[i + 1..i + 1 + len]);
                i += len + 2;
                continue;
            }
            break;
        }
        i += 1;
    }
    out
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
            || (tail.starts_with('.')
                && tail[1..]
                    .chars()
                    .all(|c| c.is_ascii_digit() || ".*[]-?".contains(c))))
}

/// A load call found in a file.
struct Call {
    file: usize,
    line: usize,
    /// The function it is in.
    within: Option<String>,
    mechanism: Mechanism,
    /// cuda-pathfinder's literal argument; the package loader's name.
    argument: Option<String>,
}

/// Every preload the sources show, for a package of CUDA major `cuda_major` (cuda-pathfinder
/// names are resolved to that major's SONAMEs).
pub fn preloads(sources: &[Source], catalog: &Catalog, cuda_major: Option<u32>) -> Vec<Preload> {
    let py: Vec<(usize, Vec<Line>)> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.path.ends_with(".py"))
        .map(|(i, s)| (i, lines(&s.text)))
        .collect();
    // Load calls, and the functions each function calls.
    let mut calls = Vec::new();
    let mut calls_from: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut module_level: BTreeSet<String> = BTreeSet::new();
    // The catalog's wheel loaders, as the text of their call (`librmm.load_library(`), made once.
    let loaders: Vec<(String, &str)> = catalog
        .python_loaders()
        .into_iter()
        .map(|f| (format!("{f}("), f))
        .collect();
    for (fi, ls) in &py {
        for (li, l) in ls.iter().enumerate() {
            let within = enclosing_def(ls, li);
            let names = called_names(l.code);
            let is_def = def_name(l.code).is_some();
            if !is_def {
                match &within {
                    Some(f) => calls_from
                        .entry(f.clone())
                        .or_default()
                        .extend(names.iter().map(|n| n.to_string())),
                    None => module_level.extend(names.iter().map(|n| n.to_string())),
                }
            }
            // A statement, not a definition or an import, may call a loader.
            if is_def || l.code.starts_with("import ") {
                continue;
            }
            for (call, f) in &loaders {
                if l.code.contains(call.as_str()) {
                    calls.push(Call {
                        file: *fi,
                        line: l.number,
                        within: within.clone(),
                        mechanism: Mechanism::PackageLoader,
                        argument: Some(f.to_string()),
                    });
                }
            }
            let mechanism = if l.code.contains("load_nvidia_dynamic_lib(") {
                Mechanism::CudaPathfinder
            } else if LOAD_CALLS[..3].iter().any(|c| l.code.contains(c)) {
                Mechanism::Ctypes
            } else {
                continue;
            };
            let argument = (mechanism == Mechanism::CudaPathfinder)
                .then(|| {
                    let after = l.code.split("load_nvidia_dynamic_lib(").nth(1)?;
                    let quoted = after.trim_start().starts_with(['"', '\'']);
                    literals(after)
                        .first()
                        .filter(|_| quoted)
                        .map(|a| a.to_string())
                })
                .flatten();
            calls.push(Call {
                file: *fi,
                line: l.number,
                within,
                mechanism,
                argument,
            });
        }
    }
    // Functions reached from module-level code, by name (an approximation: two functions of the
    // same name are one).
    let mut reached = module_level.clone();
    let mut todo: Vec<String> = reached.iter().cloned().collect();
    while let Some(f) = todo.pop() {
        for g in calls_from.get(&f).into_iter().flatten() {
            if reached.insert(g.clone()) {
                todo.push(g.clone());
            }
        }
    }
    let is_reached = |c: &Call| c.within.as_ref().is_none_or(|f| reached.contains(f));
    // The public function that leads to a call, for calls not reached at import.
    let entry_of = |c: &Call| -> Option<String> {
        let mut f = c.within.clone()?;
        for _ in 0..8 {
            let callers: Vec<&String> = calls_from
                .iter()
                .filter(|(_, gs)| gs.contains(&f))
                .map(|(k, _)| k)
                .collect();
            match callers.as_slice() {
                [one] => f = (*one).clone(),
                _ => break,
            }
        }
        Some(f)
    };
    let place = |fi: usize, line: usize| format!("{}:{line}", sources[fi].path);
    let mut out: Vec<Preload> = Vec::new();
    let mut push = |p: Preload| {
        if !out
            .iter()
            .any(|q| q.name == p.name && q.loaded_at == p.loaded_at)
        {
            out.push(p);
        }
    };
    let mut named_in: BTreeMap<usize, Vec<(String, String)>> = BTreeMap::new();
    for c in &calls {
        let at_import = is_reached(c);
        let on_call = if at_import { None } else { entry_of(c) };
        match c.mechanism {
            Mechanism::PackageLoader => {
                let Some(f) = &c.argument else { continue };
                push(Preload {
                    name: format!("{f}()"),
                    sonames: catalog.python_loader_sonames(f),
                    named_at: place(c.file, c.line),
                    loaded_at: place(c.file, c.line),
                    mechanism: c.mechanism,
                    at_import,
                    on_call,
                });
            }
            Mechanism::CudaPathfinder => {
                let Some(name) = &c.argument else { continue };
                let sonames = pathfinder_sonames(name, catalog, cuda_major);
                push(Preload {
                    name: name.clone(),
                    sonames,
                    named_at: place(c.file, c.line),
                    loaded_at: place(c.file, c.line),
                    mechanism: c.mechanism,
                    at_import,
                    on_call,
                });
            }
            Mechanism::Ctypes => {
                // The names written in the same file, and in the data files it names: read
                // once per file, whatever its number of calls.
                let named = named_in.entry(c.file).or_insert_with(|| {
                    let (fi, ls) = py.iter().find(|(i, _)| *i == c.file).expect("a .py file");
                    let mut named: Vec<(String, String)> = Vec::new();
                    for l in ls {
                        for s in literals(l.code) {
                            if is_library_name(s) {
                                named.push((s.to_string(), place(*fi, l.number)));
                            } else if s.ends_with(".json") {
                                named.extend(json_names(sources, &sources[*fi].path, s));
                            }
                        }
                    }
                    named
                });
                for (name, named_at) in named.iter().cloned() {
                    let sonames = if name.contains(['*', '?', '[']) || !name.contains(".so.") {
                        Vec::new()
                    } else {
                        vec![name.clone()]
                    };
                    push(Preload {
                        name,
                        sonames,
                        named_at,
                        loaded_at: place(c.file, c.line),
                        mechanism: c.mechanism,
                        at_import,
                        on_call: on_call.clone(),
                    });
                }
            }
        }
    }
    // One entry per name: the one that runs at import, else the first.
    out.sort_by_key(|p| !p.at_import);
    let mut seen = BTreeSet::new();
    out.retain(|p| seen.insert(p.name.clone()));
    out.sort_by(|a, b| a.named_at.cmp(&b.named_at));
    out
}

/// The library names in the `.json` file `name` that the Python file `from` reads (looked for
/// beside it), each with its line.
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

/// The SONAMEs cuda-pathfinder loads for one of its names (`cublas`, `cudart`, `cufile`): the
/// catalog library of that id (cuda-pathfinder's names are the catalog's ids), in the package's
/// CUDA major when known, else in every major.
fn pathfinder_sonames(name: &str, catalog: &Catalog, cuda_major: Option<u32>) -> Vec<String> {
    let Some(lib) = catalog.library(name) else {
        return Vec::new();
    };
    lib.cuda
        .iter()
        .filter(|m| cuda_major.is_none_or(|c| c == m.major))
        .flat_map(|m| m.sonames.iter().cloned())
        .collect()
}

/// When an ELF file of a package loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
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
}

/// A variant library: its group (`libbitsandbytes_cuda*.so`) and the CUDA release its name
/// says (`11.8`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantName {
    /// The file names of the group, with `*` for the release.
    pub group: String,
    /// The CUDA release, `major.minor` (or `major`).
    pub cuda: String,
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
    None
}

/// The tier of each node, in order.
pub fn tiers(nodes: &[Node], preloads: &[Preload]) -> Vec<Tier> {
    let key = |n: &Node| -> Vec<String> {
        let base = n.path.rsplit('/').next().unwrap_or(n.path).to_string();
        n.soname
            .map(str::to_string)
            .into_iter()
            .chain(std::iter::once(base))
            .collect()
    };
    // Variant groups: two or more files alike but for the CUDA release in their names.
    let mut groups: BTreeMap<(String, String), usize> = BTreeMap::new();
    let variants: Vec<Option<VariantName>> = nodes
        .iter()
        .map(|n| variant_name(n.path).filter(|_| !n.extension))
        .collect();
    for (n, v) in nodes.iter().zip(&variants) {
        if let Some(v) = v {
            let dir = n.path.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            *groups.entry((dir, v.group.clone())).or_default() += 1;
        }
    }
    let in_group = |i: usize| {
        variants[i].as_ref().is_some_and(|v| {
            let dir = nodes[i].path.rsplit_once('/').map_or("", |(d, _)| d);
            groups
                .get(&(dir.to_string(), v.group.clone()))
                .is_some_and(|n| *n >= 2)
        })
    };
    let mut tier: Vec<Tier> = (0..nodes.len())
        .map(|i| {
            if in_group(i) {
                Tier::Variant
            } else {
                Tier::OnDemand
            }
        })
        .collect();
    // Import: extension modules, libraries preloaded at import, and their NEEDED closure.
    let mut todo: Vec<usize> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let preloaded = key(n)
            .iter()
            .any(|k| preloads.iter().any(|p| p.at_import && p.loads(k)));
        if n.extension || preloaded {
            tier[i] = Tier::Import;
            todo.push(i);
        }
    }
    while let Some(i) = todo.pop() {
        for need in &nodes[i].needed {
            for (j, m) in nodes.iter().enumerate() {
                if tier[j] != Tier::Import && key(m).iter().any(|k| k == need) {
                    tier[j] = Tier::Import;
                    todo.push(j);
                }
            }
        }
    }
    tier
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
        let cat = Catalog::builtin();
        // Alone, librmm's loader runs only when load_library() is called.
        let p = preloads(&[src("librmm/load.py", load)], &cat, Some(12));
        assert!(p.iter().all(|p| !p.at_import), "{p:?}");
        assert_eq!(p[0].on_call.as_deref(), Some("load_library"));
        // With rmm's __init__, which calls it at import, it runs at import.
        let p = preloads(
            &[src("librmm/load.py", load), src("rmm/__init__.py", init)],
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
        // torch/_inductor/…/dense_blockscaled_gemm_persistent.py:78 (a docstring) made the scan
        // slice inside `×`.
        assert_eq!(
            called_names("which has M×ceil_div(K, v)×L"),
            vec!["ceil_div"]
        );
        assert_eq!(called_names("x = «f(1)"), vec!["f"]);
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
    fn variant_names() {
        let v = variant_name("bitsandbytes/libbitsandbytes_cuda118.so").unwrap();
        assert_eq!(v.group, "libbitsandbytes_cuda*.so");
        assert_eq!(v.cuda, "11.8");
        assert_eq!(variant_name("x/libfoo_cu12.so").unwrap().cuda, "12");
        assert_eq!(variant_name("libcudart.so.12"), None);
        assert_eq!(variant_name("libcurand.so.10"), None);
        assert_eq!(variant_name("libcuda123x.so"), None);
    }

    #[test]
    fn tiers_by_reach() {
        let n = |path, soname, needed: Vec<&'static str>, extension| Node {
            path,
            soname,
            needed,
            extension,
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
        assert_eq!(
            tiers(&nodes, &[]),
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
}
