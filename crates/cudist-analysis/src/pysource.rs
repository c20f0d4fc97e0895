//! A package's Python read as far as loading goes, never run: its statements, the function each
//! is in, the branches that never run on Linux, its imports, and which code runs when the package
//! is imported (module-level code of the modules an import reaches, and the functions that code
//! calls, resolved by name through the file's own definitions and its imports).
//!
//! Hand-written: no crate reads Python this way without a full parser, and a parser would not
//! answer the question either. The reading is an approximation made to be safe in one direction:
//! a call it cannot resolve (a method of an object, a function passed around) is not followed, so
//! code is called "run at import" only when a chain of plain calls and imports leads to it. What
//! it must get right is the shape real packages have: torch's `_load_global_deps()` called from
//! `torch/__init__.py`, its Windows DLL loader under `if sys.platform == "win32":`, its ROCm
//! helpers nobody calls at import; faiss' `from .loader import *`; RAPIDS' `librmm.load_library()`
//! re-exported from `librmm/load.py`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One statement: its first line, its indentation and its text.
pub struct Stmt<'a> {
    /// The number of its first physical line.
    pub number: usize,
    indent: usize,
    /// Its physical lines outside multi-line strings, with their numbers (string literals are
    /// read off these).
    pub lines: Vec<(usize, &'a str)>,
    /// The statement with the contents of its strings and its comments removed (`f("")`), its
    /// lines joined by a space: calls, imports and definitions are read off this.
    pub bare: String,
}

/// The statements of a Python file. A tokenizer as small as the question allows: strings (one-
/// and three-quoted, with escapes, a one-quoted one continued past a line end by `\`) and
/// comments are skipped, brackets and `\` join lines.
pub fn statements(text: &str) -> Vec<Stmt<'_>> {
    let mut out: Vec<Stmt> = Vec::new();
    let mut triple: Option<&'static str> = None;
    let mut depth = 0usize;
    let mut backslash = false;
    for (i, line) in text.lines().enumerate() {
        let in_string = triple.is_some();
        let starts = !in_string && depth == 0 && !backslash;
        let code = line.trim_start();
        if starts && (code.is_empty() || code.starts_with('#')) {
            continue;
        }
        let bytes = line.as_bytes();
        let mut bare: Vec<u8> = Vec::new();
        let mut j = 0;
        while j < bytes.len() {
            if let Some(d) = triple {
                if bytes[j..].starts_with(d.as_bytes()) {
                    triple = None;
                    j += d.len();
                } else {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                continue;
            }
            match bytes[j] {
                b'#' => break,
                q @ (b'"' | b'\'') => {
                    let three = if q == b'"' { "\"\"\"" } else { "'''" };
                    if bytes[j..].starts_with(three.as_bytes()) {
                        triple = Some(three);
                        bare.extend_from_slice(b"\"\"");
                        j += 3;
                        continue;
                    }
                    // A one-line string: to its closing quote, past escaped characters.
                    let mut k = j + 1;
                    while k < bytes.len() && bytes[k] != q {
                        k += if bytes[k] == b'\\' { 2 } else { 1 };
                    }
                    bare.extend_from_slice(b"\"\"");
                    // Past the end: a backslash before the line break continues the string
                    // on the next line.
                    if k > bytes.len() {
                        triple = Some(if q == b'"' { "\"" } else { "'" });
                    }
                    j = k + 1;
                    continue;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            bare.push(bytes[j]);
            j += 1;
        }
        let bare = String::from_utf8(bare)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let bare = bare.trim();
        backslash = triple.is_none() && bare.ends_with('\\');
        let bare = bare.trim_end_matches('\\').trim_end();
        if starts {
            out.push(Stmt {
                number: i + 1,
                indent: line.len() - code.len(),
                lines: vec![(i + 1, code)],
                bare: bare.to_string(),
            });
        } else if let Some(s) = out.last_mut() {
            if !in_string {
                s.lines.push((i + 1, code));
            }
            if !bare.is_empty() {
                s.bare.push(' ');
                s.bare.push_str(bare);
            }
        }
    }
    out
}

/// The name a `def` statement defines.
pub fn def_name(code: &str) -> Option<&str> {
    let rest = code
        .strip_prefix("def ")
        .or_else(|| code.strip_prefix("async def "))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// The names a statement calls, with what they are called on (`foo(` → `foo`, `mod.foo(` →
/// `mod.foo`, `x().foo(` → `.foo`): the dotted name directly before each `(`.
pub fn called_names(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices('(') {
        let head = &code[..i];
        // Past the last character that is not part of a dotted name (which may be several bytes
        // long: torch's docstrings write `M×ceil_div(K)`).
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
            .map_or(0, |(p, c)| p + c.len_utf8());
        let name = &head[start..];
        let last = name.rsplit('.').next().unwrap_or(name);
        if !last.is_empty() && !last.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(name);
        }
    }
    out
}

/// Where a condition holds, as far as the operating system goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Os {
    /// Only on Linux (`sys.platform == "linux"`, `platform.system() != "Windows"`).
    Linux,
    /// Never on Linux (`sys.platform == "win32"`, `os.name == "nt"`, `IS_MACOS`).
    NotLinux,
}

/// Where one test holds: `None` when it says nothing about the system.
fn os_test(cond: &str) -> Option<Os> {
    const OTHER: &[&str] = &[
        "\"win32\"",
        "'win32'",
        "\"Windows\"",
        "'Windows'",
        "\"Darwin\"",
        "'Darwin'",
        "\"darwin\"",
        "'darwin'",
        "\"cygwin\"",
        "\"nt\"",
        "'nt'",
        "startswith(\"win\")",
        "startswith('win')",
        "IS_WINDOWS",
        "IS_MACOS",
    ];
    const LINUX: &[&str] = &["\"linux\"", "'linux'", "\"Linux\"", "'Linux'", "IS_LINUX"];
    let negated = cond.contains("!=") || cond.starts_with("not ") || cond.contains(" not ");
    let os = if OTHER.iter().any(|t| cond.contains(t)) {
        Os::NotLinux
    } else if LINUX.iter().any(|t| cond.contains(t)) {
        Os::Linux
    } else {
        return None;
    };
    Some(match (os, negated) {
        (o, false) => o,
        (Os::Linux, true) => Os::NotLinux,
        (Os::NotLinux, true) => Os::Linux,
    })
}

/// Whether one test is false when no environment variable it reads is set (the default
/// environment): `os.getenv("X")`, `os.environ.get("X")`, `os.environ.get("X", "0") == "1"`,
/// `"X" in os.environ`. `None` when it reads none, or may hold.
fn env_false(test: &str) -> bool {
    let mut t = test.trim();
    while let Some(inner) = t.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
        t = inner.trim();
    }
    if t.starts_with("not ") || t.contains(" not in ") || t.contains("!=") {
        return false;
    }
    // The string literal at the start of `rest` (an f-string too), and what follows it.
    fn literal(rest: &str) -> Option<(&str, &str)> {
        let rest = rest
            .trim_start()
            .strip_prefix('f')
            .unwrap_or(rest.trim_start());
        let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let body = &rest[1..];
        let end = body.find(q)?;
        Some((&body[..end], &body[end + 1..]))
    }
    for call in ["os.getenv(", "os.environ.get("] {
        let Some(after) = t.strip_prefix(call) else {
            continue;
        };
        let Some((_, rest)) = literal(after) else {
            return false;
        };
        let rest = rest.trim_start();
        // `os.getenv("X")`: None when unset.
        if rest == ")" {
            return true;
        }
        // `os.getenv("X", "0") == "1"`: the default against the value.
        let Some(rest) = rest.strip_prefix(',') else {
            return false;
        };
        let Some((default, rest)) = literal(rest) else {
            return false;
        };
        let Some(rest) = rest.trim_start().strip_prefix(')') else {
            return false;
        };
        let Some(rest) = rest.trim_start().strip_prefix("==") else {
            return false;
        };
        return literal(rest).is_some_and(|(want, tail)| tail.trim().is_empty() && want != default);
    }
    // `"X" in os.environ`.
    literal(t).is_some_and(|(_, rest)| rest.trim() == "in os.environ")
}

/// The condition of an `if`/`elif` header (`if X:` → `X`).
fn condition<'s>(code: &'s str, keyword: &str) -> Option<&'s str> {
    let rest = code.strip_prefix(keyword)?.strip_prefix(' ')?;
    Some(rest.trim_end().strip_suffix(':').unwrap_or(rest).trim())
}

/// Whether the body of a branch with this condition never runs on Linux, or never when the
/// package is imported (`if TYPE_CHECKING:`, `if __name__ == "__main__":`).
fn never_runs(cond: &str) -> bool {
    if cond == "TYPE_CHECKING"
        || cond == "typing.TYPE_CHECKING"
        || (cond.contains("__name__") && cond.contains("__main__"))
    {
        return true;
    }
    let false_here = |t: &str| os_test(t) == Some(Os::NotLinux) || env_false(t);
    if cond.contains(" or ") {
        // Every alternative false (and none an `and` of its own, which this does not split).
        return !cond.contains(" and ") && cond.split(" or ").all(env_false);
    }
    cond.split(" and ").any(false_here)
}

/// A scope: a file's module-level code (`None`) or one of its functions (the index of its `def`).
pub type Scope = (usize, Option<usize>);

/// One file, read.
pub struct File<'a> {
    /// Its path in the artifact.
    pub path: &'a str,
    /// Its dotted module name (`faiss.loader`; `faiss` for `faiss/__init__.py`).
    pub module: Option<String>,
    /// Its statements, in order.
    pub stmts: Vec<Stmt<'a>>,
    /// The function each statement is in (`None`: module level or a class body).
    pub scope: Vec<Option<usize>>,
    /// Statements under a branch that never runs on Linux.
    pub excluded: Vec<bool>,
    /// Statements in the body of a `try:` whose handlers catch a failed import (`except
    /// ImportError`, `ModuleNotFoundError`, `Exception`, a bare `except:`): an import there
    /// that fails leaves the importing module importable.
    pub guarded: Vec<bool>,
    /// Functions defined in the file, by name (methods included).
    defs: BTreeMap<String, Vec<usize>>,
}

/// The dotted module name of a `.py` path (`a/b/c.py` → `a.b.c`, `a/b/__init__.py` → `a.b`),
/// below `site-packages/` or a wheel's `.data/purelib|platlib/` when the path has one.
pub fn module_name(path: &str) -> Option<String> {
    let mut p = path.strip_suffix(".py")?;
    for marker in ["site-packages/", "/purelib/", "/platlib/"] {
        if let Some((_, rest)) = p.rsplit_once(marker) {
            p = rest;
        }
    }
    let p = p.strip_suffix("/__init__").unwrap_or(p);
    let ok = p.split('/').all(|c| {
        !c.is_empty()
            && !c.starts_with(|ch: char| ch.is_ascii_digit())
            && c.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
    });
    ok.then(|| p.replace('/', "."))
}

/// A file read: its statements, the function each is in, and those that never run on Linux.
pub fn read_file<'a>(path: &'a str, text: &'a str) -> File<'a> {
    let stmts = statements(text);
    let n = stmts.len();
    let mut scope = vec![None; n];
    let mut excluded = vec![false; n];
    let mut child_scope: Vec<Option<usize>> = vec![None; n];
    let mut child_excluded = vec![false; n];
    let mut defs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    // The enclosing statements, by indentation.
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..n {
        let mut sibling = None;
        while let Some(&top) = stack.last() {
            if stmts[top].indent >= stmts[i].indent {
                if stmts[top].indent == stmts[i].indent {
                    sibling = Some(top);
                }
                stack.pop();
            } else {
                break;
            }
        }
        let parent = stack.last().copied();
        scope[i] = parent.and_then(|p| child_scope[p]);
        excluded[i] = parent.is_some_and(|p| child_excluded[p]);
        let code = stmts[i].bare.as_str();
        let raw = stmts[i].lines[0].1;
        let header_excludes = if let Some(c) = condition(raw, "if").or(condition(raw, "elif")) {
            // A condition that goes on to the next line is read no further than its first.
            never_runs(c)
                && (stmts[i].lines.len() == 1
                    || !c.contains(['(', ')'])
                    || raw.trim_end().ends_with(':'))
        } else if code.starts_with("else") && code.trim_end_matches(' ') == "else:" {
            // `else` of an `if` that holds only on Linux.
            sibling.is_some_and(|s| {
                let r = stmts[s].lines[0].1;
                condition(r, "if")
                    .or(condition(r, "elif"))
                    .is_some_and(|c| {
                        !c.contains(" or ") && !c.contains(" and ") && os_test(c) == Some(Os::Linux)
                    })
            })
        } else {
            false
        };
        child_excluded[i] = excluded[i] || header_excludes;
        child_scope[i] = match def_name(code) {
            Some(name) => {
                defs.entry(name.to_string()).or_default().push(i);
                Some(i)
            }
            None => scope[i],
        };
        stack.push(i);
    }
    let guarded = guarded_statements(&stmts);
    File {
        path,
        module: module_name(path),
        stmts,
        scope,
        excluded,
        guarded,
        defs,
    }
}

/// Whether an `except` clause catches the error a failed import raises (`ImportError`, its
/// subclass `ModuleNotFoundError`, or a base class).
fn catches_import_error(bare: &str) -> bool {
    let Some(rest) = bare.strip_prefix("except") else {
        return false;
    };
    let rest = rest.trim_end().trim_end_matches(':');
    let rest = rest.split(" as ").next().unwrap_or(rest).trim();
    // `except*` (exception groups) catches the same classes.
    let rest = rest.trim_start_matches('*').trim();
    rest.is_empty()
        || rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .filter(|t| !t.is_empty())
            .any(|t| {
                matches!(
                    t.rsplit('.').next().unwrap_or(t),
                    "ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException"
                )
            })
}

/// Which statements are in the body of a `try:` that one of its handlers makes an import
/// failure harmless in (the handlers follow the body at the `try`'s indentation).
fn guarded_statements(stmts: &[Stmt]) -> Vec<bool> {
    let n = stmts.len();
    let mut guarded = vec![false; n];
    for i in 0..n {
        let indent = stmts[i].indent;
        let mut end = i + 1;
        while end < n && stmts[end].indent > indent {
            end += 1;
        }
        // `with contextlib.suppress(ImportError):` guards its body as a `try` does.
        let bare = stmts[i].bare.trim_end();
        if bare.starts_with("with ") && bare.ends_with(':') {
            if let Some(args) = bare.split("suppress(").nth(1) {
                let args = args.split(')').next().unwrap_or("");
                if catches_import_error(&format!("except ({args}):")) {
                    for g in &mut guarded[i + 1..end] {
                        *g = true;
                    }
                }
            }
            continue;
        }
        if bare != "try:" {
            continue;
        }
        // The handlers: `except …:` statements at the same indentation, each with its body.
        let mut k = end;
        let mut catches = false;
        while k < n && stmts[k].indent == indent && stmts[k].bare.starts_with("except") {
            catches |= catches_import_error(&stmts[k].bare);
            k += 1;
            while k < n && stmts[k].indent > indent {
                k += 1;
            }
        }
        if catches {
            for g in &mut guarded[i + 1..end] {
                *g = true;
            }
        }
    }
    guarded
}

/// What a file's imports bind.
#[derive(Default)]
struct Bindings {
    /// Local name → module (`import a.b as x`: x → a.b; `import a.b`: a → a).
    modules: BTreeMap<String, String>,
    /// Local name → (module, name) (`from a import f as g`: g → (a, f)).
    names: BTreeMap<String, (String, String)>,
    /// Modules imported with `*`.
    stars: Vec<String>,
}

/// One import statement: the modules it names (each also runs its parents), and bindings.
struct Import {
    /// The modules as written (`import a, b`: a and b; `from a import b`: a).
    named: Vec<String>,
    modules: Vec<String>,
    bind_modules: Vec<(String, String)>,
    bind_names: Vec<(String, (String, String))>,
    stars: Vec<String>,
}

/// The package a relative import starts from: the module itself for an `__init__.py`, else its
/// parent.
fn package_of(file: &File) -> Option<String> {
    let m = file.module.as_deref()?;
    if file.path.ends_with("__init__.py") {
        Some(m.to_string())
    } else {
        Some(m.rsplit_once('.').map_or("", |(p, _)| p).to_string())
    }
}

/// Whether `s` is a dotted module name (`a.b_c.d`): what an import can name. Anything else in a
/// file (a hostile `import /etc`) names no module, and no path is made of it.
fn is_module_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

fn parse_import(bare: &str, file: &File) -> Option<Import> {
    let mut imp = parse_import_text(bare, file)?;
    imp.named.retain(|m| is_module_name(m));
    imp.modules.retain(|m| is_module_name(m));
    imp.stars.retain(|m| is_module_name(m));
    imp.bind_modules
        .retain(|(a, m)| is_module_name(a) && is_module_name(m));
    imp.bind_names
        .retain(|(a, (m, n))| is_module_name(a) && is_module_name(m) && is_module_name(n));
    Some(imp)
}

fn parse_import_text(bare: &str, file: &File) -> Option<Import> {
    let clean = |s: &str| {
        s.trim()
            .trim_matches(|c| c == '(' || c == ')')
            .trim()
            .to_string()
    };
    let mut imp = Import {
        named: Vec::new(),
        modules: Vec::new(),
        bind_modules: Vec::new(),
        bind_names: Vec::new(),
        stars: Vec::new(),
    };
    if let Some(rest) = bare.strip_prefix("import ") {
        for item in rest.split(',') {
            let item = clean(item);
            let (module, alias) = match item.split_once(" as ") {
                Some((m, a)) => (m.trim().to_string(), Some(a.trim().to_string())),
                None => (item.clone(), None),
            };
            if module.is_empty() {
                continue;
            }
            match alias {
                Some(a) => imp.bind_modules.push((a, module.clone())),
                None => {
                    let top = module.split('.').next().unwrap_or(&module).to_string();
                    imp.bind_modules.push((top.clone(), top));
                }
            }
            imp.named.push(module.clone());
            imp.modules.push(module);
        }
        return Some(imp);
    }
    let rest = bare.strip_prefix("from ")?;
    let (from, names) = rest.split_once(" import ")?;
    let from = from.trim();
    let dots = from.len() - from.trim_start_matches('.').len();
    let base = if dots == 0 {
        from.to_string()
    } else {
        let mut pkg = package_of(file)?;
        for _ in 1..dots {
            pkg = pkg.rsplit_once('.').map_or("", |(p, _)| p).to_string();
        }
        let tail = &from[dots..];
        match (pkg.is_empty(), tail.is_empty()) {
            (true, _) => tail.to_string(),
            (false, true) => pkg,
            (false, false) => format!("{pkg}.{tail}"),
        }
    };
    if base.is_empty() || base == "__future__" {
        return None;
    }
    if dots == 0 {
        imp.named.push(base.clone());
    }
    imp.modules.push(base.clone());
    for item in names.split(',') {
        let item = clean(item);
        if item == "*" {
            imp.stars.push(base.clone());
            continue;
        }
        let (name, alias) = match item.split_once(" as ") {
            Some((n, a)) => (n.trim().to_string(), a.trim().to_string()),
            None => (item.clone(), item.clone()),
        };
        if name.is_empty() {
            continue;
        }
        // `from a import b` runs `a.b` when it is a module; which it is is decided when the
        // import is resolved, against the files read.
        imp.modules.push(format!("{base}.{name}"));
        imp.bind_modules
            .push((alias.clone(), format!("{base}.{name}")));
        imp.bind_names.push((alias, (base.clone(), name)));
    }
    Some(imp)
}

/// What the package's Python runs when it is imported.
pub struct Reach {
    /// Scopes that run at import.
    pub reached: BTreeSet<Scope>,
    /// Every resolved call between scopes (callee → callers), for the way to a function that
    /// does not run at import.
    pub callers: HashMap<Scope, BTreeSet<Scope>>,
    /// Modules outside the files read that code run at import imports: (top-level name, the
    /// import's `file:line`), in order.
    pub external: Vec<(String, String)>,
    /// Every module an import names (`a.b` for `from a import b`, whether `b` is a module or
    /// not), with how the import of the package reaches it.
    pub modules: BTreeMap<String, ImportedAt>,
}

/// The code the import of the package's top-level modules runs (modules whose name has no dot:
/// `faiss` for `faiss/__init__.py`).
pub fn reach(files: &[File]) -> Reach {
    let by_module: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.module.as_deref().map(|m| (m, i)))
        .collect();
    let tops: BTreeSet<&str> = by_module
        .keys()
        .map(|m| m.split('.').next().unwrap_or(m))
        .collect();
    // Bindings of every file, from all its imports (an import inside a function binds only
    // there, but a name means one thing in one file nearly always).
    let mut bindings: Vec<Bindings> = Vec::with_capacity(files.len());
    // Per scope: the scopes it runs (functions it calls, modules it imports), and external
    // imports.
    let mut edges: HashMap<Scope, Vec<Scope>> = HashMap::new();
    let mut external: HashMap<Scope, Vec<(String, String)>> = HashMap::new();
    let mut imports: Vec<(Scope, Import, usize)> = Vec::new();
    // Every module an import statement or `importlib.import_module("…")` names: (module, scope,
    // `file:line`, guarded).
    let mut sites: Vec<(String, Scope, String, bool)> = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        let mut b = Bindings::default();
        for (si, s) in f.stmts.iter().enumerate() {
            if f.excluded[si] {
                continue;
            }
            if let Some(imp) = parse_import(&s.bare, f) {
                for (k, v) in &imp.bind_modules {
                    b.modules.insert(k.clone(), v.clone());
                }
                for (k, v) in &imp.bind_names {
                    b.names.insert(k.clone(), v.clone());
                }
                b.stars.extend(imp.stars.iter().cloned());
                for m in &imp.modules {
                    sites.push((
                        m.clone(),
                        (fi, f.scope[si]),
                        format!("{}:{}", f.path, s.number),
                        f.guarded[si],
                    ));
                }
                imports.push(((fi, f.scope[si]), imp, s.number));
            } else if s.bare.contains("import_module(") || s.bare.contains("__import__(") {
                for (number, line) in &s.lines {
                    for call in ["import_module(", "__import__("] {
                        let Some(after) = line.split(call).nth(1) else {
                            continue;
                        };
                        let quoted = after.trim_start().starts_with(['"', '\'']);
                        let Some(m) = quoted
                            .then(|| literal_at_start(after.trim_start()))
                            .flatten()
                        else {
                            continue;
                        };
                        if is_module_name(m) {
                            sites.push((
                                m.to_string(),
                                (fi, f.scope[si]),
                                format!("{}:{number}", f.path),
                                f.guarded[si],
                            ));
                        }
                    }
                }
            }
        }
        bindings.push(b);
    }
    // Keep only module bindings that are modules of the files read or outside them (`from a
    // import f` binds f to a function when a.f is no module read).
    for b in &mut bindings {
        b.modules.retain(|_, m| {
            by_module.contains_key(m.as_str()) || !tops.contains(m.split('.').next().unwrap_or(m))
        });
    }
    let run_module = |module: &str, out: &mut Vec<Scope>| {
        let mut prefix = String::new();
        for part in module.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part);
            if let Some(&fi) = by_module.get(prefix.as_str()) {
                out.push((fi, None));
            }
        }
    };
    for (scope, imp, line) in &imports {
        let out = edges.entry(*scope).or_default();
        for m in &imp.modules {
            run_module(m, out);
        }
        for m in &imp.named {
            let top = m.split('.').next().unwrap_or(m);
            if !tops.contains(top)
                && !external
                    .get(scope)
                    .is_some_and(|e| e.iter().any(|(t, _)| t == top))
            {
                external
                    .entry(*scope)
                    .or_default()
                    .push((top.to_string(), format!("{}:{line}", files[scope.0].path)));
            }
        }
    }
    // The functions a name in a module stands for, through re-exports.
    fn resolve(
        files: &[File],
        bindings: &[Bindings],
        by_module: &HashMap<&str, usize>,
        fi: usize,
        name: &str,
        depth: usize,
        out: &mut Vec<Scope>,
    ) {
        if let Some(ds) = files[fi].defs.get(name) {
            out.extend(ds.iter().map(|d| (fi, Some(*d))));
            return;
        }
        if depth == 0 {
            return;
        }
        let b = &bindings[fi];
        if let Some((m, n)) = b.names.get(name) {
            if let Some(&gi) = by_module.get(m.as_str()) {
                resolve(files, bindings, by_module, gi, n, depth - 1, out);
            }
            return;
        }
        for m in &b.stars {
            if let Some(&gi) = by_module.get(m.as_str()) {
                resolve(files, bindings, by_module, gi, name, depth - 1, out);
            }
        }
    }
    for (fi, f) in files.iter().enumerate() {
        let b = &bindings[fi];
        for (si, s) in f.stmts.iter().enumerate() {
            if f.excluded[si] || def_name(&s.bare).is_some() {
                continue;
            }
            let mut targets = Vec::new();
            // A lambda's body runs when the lambda is called, not where it is written.
            let runs_here = match [" lambda ", " lambda:", "(lambda ", "(lambda:", "=lambda"]
                .iter()
                .filter_map(|l| s.bare.find(l))
                .min()
            {
                Some(at) => &s.bare[..at],
                None => s.bare.as_str(),
            };
            for called in called_names(runs_here) {
                let (qual, name) = match called.rsplit_once('.') {
                    Some((q, n)) => (q, n),
                    None => ("", called),
                };
                match qual {
                    "" => resolve(files, &bindings, &by_module, fi, name, 4, &mut targets),
                    "self" | "cls" => {
                        if let Some(ds) = f.defs.get(name) {
                            targets.extend(ds.iter().map(|d| (fi, Some(*d))));
                        }
                    }
                    q if !q.starts_with('.') => {
                        let (first, rest) = q.split_once('.').unwrap_or((q, ""));
                        let Some(m) = b.modules.get(first) else {
                            continue;
                        };
                        let module = if rest.is_empty() {
                            m.clone()
                        } else {
                            format!("{m}.{rest}")
                        };
                        if let Some(&gi) = by_module.get(module.as_str()) {
                            resolve(files, &bindings, &by_module, gi, name, 4, &mut targets);
                        }
                    }
                    _ => {}
                }
            }
            if !targets.is_empty() {
                edges.entry((fi, f.scope[si])).or_default().extend(targets);
            }
        }
    }
    let mut callers: HashMap<Scope, BTreeSet<Scope>> = HashMap::new();
    for (from, tos) in &edges {
        for to in tos {
            if to.1.is_some() {
                callers.entry(*to).or_default().insert(*from);
            }
        }
    }
    let mut reached: BTreeSet<Scope> = BTreeSet::new();
    let mut todo: Vec<Scope> = by_module
        .iter()
        .filter(|(m, _)| !m.contains('.'))
        .map(|(_, fi)| (*fi, None))
        .collect();
    todo.sort();
    let mut ext: Vec<(String, String)> = Vec::new();
    while let Some(s) = todo.pop() {
        if !reached.insert(s) {
            continue;
        }
        for (top, at) in external.get(&s).into_iter().flatten() {
            if !ext.iter().any(|(t, _)| t == top) {
                ext.push((top.clone(), at.clone()));
            }
        }
        for t in edges.get(&s).into_iter().flatten() {
            if !reached.contains(t) {
                todo.push(*t);
            }
        }
    }
    ext.sort_by(|a, b| a.1.cmp(&b.1));
    // How each module named in an import is reached: the strongest of its sites.
    let mut modules: BTreeMap<String, ImportedAt> = BTreeMap::new();
    for (m, scope, at, guarded) in sites {
        let how = if reached.contains(&scope) {
            if guarded {
                ImportedAt::Guarded(at)
            } else {
                ImportedAt::Import(at)
            }
        } else {
            let function = scope
                .1
                .and_then(|d| def_name(&files[scope.0].stmts[d].bare).map(str::to_string));
            ImportedAt::OnCall { at, function }
        };
        merge_modules(&mut modules, BTreeMap::from([(m, how)]));
    }
    Reach {
        reached,
        callers,
        external: ext,
        modules,
    }
}

/// The string literal a text starts with (`"a.b")` → `a.b`).
fn literal_at_start(text: &str) -> Option<&str> {
    let q = text.chars().next()?;
    let rest = &text[1..];
    rest.find(q).map(|end| &rest[..end])
}

/// How the import of a package reaches a module that its Python imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportedAt {
    /// Code that runs at import imports it (`file:line`).
    Import(String),
    /// Code that runs at import imports it inside `try: … except ImportError`: a failure leaves
    /// the package importable, without it.
    Guarded(String),
    /// Only code that does not run at import imports it: a function (a module `__getattr__`,
    /// a helper called on first use).
    OnCall {
        /// The import, `file:line`.
        at: String,
        /// The function it is in.
        function: Option<String>,
    },
}

/// Adds the modules of another package's reach to `into`, keeping the stronger reach of each.
pub fn merge_modules(into: &mut BTreeMap<String, ImportedAt>, from: BTreeMap<String, ImportedAt>) {
    for (m, how) in from {
        match into.get(&m) {
            Some(old) if old.rank() >= how.rank() => {}
            _ => {
                into.insert(m, how);
            }
        }
    }
}

impl ImportedAt {
    fn rank(&self) -> u8 {
        match self {
            ImportedAt::OnCall { .. } => 0,
            ImportedAt::Guarded(_) => 1,
            ImportedAt::Import(_) => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_continued_by_a_backslash_is_no_code() {
        let text = "@dep(\n    \"a \\\n    use f(x) instead.\",\n)\ndef g():\n    pass\nh()\n";
        let st = statements(text);
        let bare: Vec<&str> = st.iter().map(|s| s.bare.as_str()).collect();
        assert_eq!(bare, vec!["@dep( \"\" , )", "def g():", "pass", "h()"]);
    }

    #[test]
    fn branches_that_need_an_environment_variable() {
        for cond in [
            "os.getenv(\"X\")",
            "os.environ.get('X')",
            "os.getenv(f\"_FAISS_{g}_PRELOAD\")",
            "trace is None and os.environ.get(\"TORCH_COMPILE_DEBUG\", \"0\") == \"1\"",
            "\"TORCH_CUDA_SANITIZER\" in os.environ",
            "os.getenv(\"A\") or os.getenv(\"B\")",
        ] {
            assert!(never_runs(cond), "{cond}");
        }
        for cond in [
            "not os.getenv(\"X\")",
            "os.environ.get(\"X\") is None",
            "os.environ.get(\"X\", \"1\") == \"1\"",
            "os.getenv(\"X\", \"0\") != \"1\"",
            "\"X\" not in os.environ",
            "USE_GLOBAL or os.getenv(\"TORCH_USE_RTLD_GLOBAL\")",
            "x",
        ] {
            assert!(!never_runs(cond), "{cond}");
        }
    }

    #[test]
    fn try_bodies_that_catch_a_failed_import() {
        let text = "try:\n    import a\n    if x:\n        import b\nexcept (ValueError, ImportError) as e:\n    import c\nimport d\ntry:\n    import e\nexcept ValueError:\n    pass\nexcept:\n    pass\ntry:\n    import f\nexcept KeyError:\n    pass\nfinally:\n    pass\ntry:\n    import g\nexcept builtins.ModuleNotFoundError:\n    pass\nwith contextlib.suppress(ImportError):\n    import h\nwith suppress(KeyError):\n    import i\n";
        let f = read_file("p/__init__.py", text);
        let guarded: Vec<&str> = f
            .stmts
            .iter()
            .zip(&f.guarded)
            .filter(|(_, g)| **g)
            .map(|(s, _)| s.bare.as_str())
            .collect();
        // The handler's own body and code after the `try` are not guarded; a bare `except:`
        // after another handler is.
        assert_eq!(
            guarded,
            vec!["import a", "if x:", "import b", "import e", "import g", "import h"]
        );
    }

    #[test]
    fn statements_join_brackets_and_skip_strings() {
        let text = "x = f(\n    \"a(b\",  # c(\n    'd')\ns = \"\"\"doc\ng(1)\n\"\"\"\ny = 1 + \\\n    h(2)\n";
        let st = statements(text);
        let bare: Vec<(usize, &str)> = st.iter().map(|s| (s.number, s.bare.as_str())).collect();
        assert_eq!(
            bare,
            vec![
                (1, "x = f( \"\", \"\")"),
                (4, "s = \"\""),
                (7, "y = 1 + h(2)")
            ]
        );
        // The string's inner lines are not read for literals.
        assert_eq!(st[1].lines.len(), 1);
        assert_eq!(called_names(&st[0].bare), vec!["f"]);
        assert_eq!(
            called_names("a.b.c(x) + self.d() + g().h()"),
            vec!["a.b.c", "self.d", "g", ".h"]
        );
    }

    #[test]
    fn branches_that_never_run_on_linux() {
        let text = "if sys.platform == \"win32\":\n    def a():\n        pass\n    a()\nelse:\n    b()\nif platform.system() != \"Windows\":\n    c()\nelse:\n    d()\nif TYPE_CHECKING:\n    import x\nif os.name == 'nt' and y:\n    e()\nif __name__ == \"__main__\":\n    main()\n";
        let f = read_file("p/__init__.py", text);
        let excluded: Vec<(usize, bool)> = f
            .stmts
            .iter()
            .zip(&f.excluded)
            .map(|(s, e)| (s.number, *e))
            .collect();
        assert_eq!(
            excluded,
            vec![
                (1, false),
                (2, true),
                (3, true),
                (4, true),
                (5, false),
                (6, false),
                (7, false),
                (8, false),
                (9, false),
                (10, true),
                (11, false),
                (12, true),
                (13, false),
                (14, true),
                (15, false),
                (16, true)
            ]
        );
        assert_eq!(f.scope[2], Some(1));
    }

    #[test]
    fn imports_name_modules_only() {
        let f = read_file(
            "p/__init__.py",
            "import /etc, os\nfrom ../x import y\nimport a.b as c\n",
        );
        let names: Vec<Vec<String>> = f
            .stmts
            .iter()
            .filter_map(|s| parse_import(&s.bare, &f))
            .map(|i| i.named)
            .collect();
        assert_eq!(
            names,
            vec![vec!["os".to_string()], vec![], vec!["a.b".to_string()]]
        );
    }

    #[test]
    fn module_names() {
        assert_eq!(
            module_name("faiss/loader.py").as_deref(),
            Some("faiss.loader")
        );
        assert_eq!(module_name("faiss/__init__.py").as_deref(), Some("faiss"));
        assert_eq!(
            module_name("lib/python3.11/site-packages/rmm/__init__.py").as_deref(),
            Some("rmm")
        );
        assert_eq!(
            module_name("x-1.0.data/purelib/x/y.py").as_deref(),
            Some("x.y")
        );
        assert_eq!(module_name("setup-tools/x.py"), None);
    }

    #[test]
    fn what_an_import_runs() {
        let init = "from .a import *\nimport pkg.b as bb\nfrom pkg import c\nimport torch\nbb.go()\nc.later\n";
        let a = "def f():\n    g()\ndef g():\n    pass\nf()\n";
        let b = "import numpy\ndef go():\n    helper()\ndef helper():\n    pass\ndef unused():\n    pass\n";
        let c = "import os\ndef lazy():\n    import scipy\n";
        let d = "def never():\n    pass\n";
        let files = vec![
            read_file("pkg/__init__.py", init),
            read_file("pkg/a.py", a),
            read_file("pkg/b.py", b),
            read_file("pkg/c.py", c),
            read_file("pkg/d.py", d),
        ];
        let r = reach(&files);
        let has = |fi: usize, line: Option<usize>| {
            r.reached.contains(&(
                fi,
                line.map(|l| files[fi].stmts.iter().position(|s| s.number == l).unwrap()),
            ))
        };
        assert!(has(0, None) && has(1, None) && has(2, None) && has(3, None));
        assert!(!has(4, None), "pkg.d is imported by nobody");
        assert!(has(1, Some(1)) && has(1, Some(3)), "f and g through f");
        assert!(
            has(2, Some(2)) && has(2, Some(4)),
            "bb.go() and what it calls"
        );
        assert!(!has(2, Some(6)) && !has(3, Some(2)));
        let ext: Vec<&str> = r.external.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(ext, vec!["torch", "numpy", "os"]);
        assert_eq!(r.external[0].1, "pkg/__init__.py:4");
    }
}
