//! A package's Python read as far as loading goes, never run: the calls and string literals of
//! each statement, the function each is in, the branches that never run on Linux, the `try`
//! bodies a failed import cannot escape, its imports, and which code runs when the package is
//! imported (module-level code of the modules an import reaches, and the functions that code
//! calls, resolved by name through the file's own definitions and its imports).
//!
//! The files are parsed by ruff's parser (`ruff_python_parser`), which reads every Python 3
//! syntax and recovers from errors, so a file with a syntax error still yields the statements
//! around it. Hand-written is only the question asked of the syntax tree, because no crate asks
//! it: which calls load libraries, which branches a Linux import skips, what an import runs. The
//! reading is an approximation made to be safe in one direction: a call it cannot resolve (a
//! method of an object, a function passed around) is not followed, so code is called "run at
//! import" only when a chain of plain calls and imports leads to it. What it must get right is
//! the shape real packages have: torch's `_load_global_deps()` called from `torch/__init__.py`,
//! its Windows DLL loader under `if sys.platform == "win32":`, its ROCm helpers nobody calls at
//! import; faiss' `from .loader import *`; RAPIDS' `librmm.load_library()` re-exported from
//! `librmm/load.py`; a loader called through an alias (`from cuda.pathfinder import
//! load_nvidia_dynamic_lib as _load`).
//!
//! Parsing is recursive, and a file nobody vetted can nest deeper than any stack: before a file is
//! parsed its tokens bound how deep the parse can go ([`nesting`]), a file past
//! [`MAX_NESTING`] is not read (said in [`File::unread`]), and parsing runs on threads whose stack
//! holds that depth with room to spare ([`read_files`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};
use ruff_python_parser as parser;
use ruff_text_size::{Ranged, TextSize};

/// A call: the dotted name it calls and, when its first argument is a string literal, that
/// string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `foo` for `foo(`, `mod.foo` for `mod.foo(`, `self.d` for `self.d(`, `.h` for a method
    /// of something that is not a name (`g().h(`).
    pub callee: String,
    /// The first positional argument, when it is a string literal (an f-string with fields as a
    /// glob pattern, each field a `*`).
    pub arg: Option<String>,
    /// The first positional argument, when it is a plain name (a parameter passed on:
    /// `load_nvidia_dynamic_lib(lib)` in `def _preload_library(lib)`).
    pub arg_name: Option<String>,
    /// Written in a lambda's body: it runs when the lambda is called, not where it is written.
    pub deferred: bool,
    /// Written in a comprehension that keeps only the files found (`[CDLL(p) for d in dirs if
    /// (p := d / "libz3.so").is_file()]`, tilelang's shape): it runs where a file was found
    /// ([`File::found_first`]).
    pub found: bool,
    /// The `group=` keyword argument, when it is a string literal: the entry-point group an
    /// `entry_points(group="jax_plugins")` call selects.
    pub group: Option<String>,
    /// The `group=` keyword argument, when it is a plain name (`group=ENTRY_POINT_GROUP`): a
    /// module constant ([`File::constant`]).
    pub group_name: Option<String>,
    /// Every positional argument, where there are two to eight and each is a string literal
    /// (`_load_from_package("nvidia.cublas", "lib", "libcublas.so.12")`): the parts a function
    /// joins into a path.
    pub literal_args: Vec<String>,
}

/// Whether a string can name a shared library or a data file listing libraries (`libcudart.so.12`,
/// `lib/libcue_ops.so`, `_preload_library.json`), a directory of carried libraries
/// (`nvidia_pytriton.libs`) or the variable that points programs at one (`LD_LIBRARY_PATH`): the
/// only strings kept, so a package's other strings cost no memory.
fn can_name_a_file(s: &str) -> bool {
    s.len() <= 4096
        && (s.contains(".so")
            || s.ends_with(".json")
            || s.contains(".cpython-")
            || s.trim_end_matches('/').ends_with(".libs")
            || s == "LD_LIBRARY_PATH"
            || is_library_stem(s))
}

/// Whether a string is the start of a library's file name with no suffix: `libtransformer_engine`,
/// which transformer-engine's loader matches against the files of its directory (`name.startswith
/// (prefix)`) and joins with the platform's suffix at run time. "lib" and at least three more
/// characters of a file name; not a word or directory that merely starts so (`library`, `libexec`).
pub fn is_library_stem(s: &str) -> bool {
    s.strip_prefix("lib").is_some_and(|rest| {
        rest.len() >= 3
            && rest.len() <= 128
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-+".contains(c))
            && !matches!(rest, "rary" | "raries" | "exec" | "rary_path" | "rary_dirs")
    })
}

/// A string literal a statement writes that can name a library or a `.json` file listing them
/// ([`can_name_a_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// Its value (implicitly joined parts joined; an f-string with fields as a glob pattern, each
    /// field a `*`).
    pub value: String,
    /// Its first line.
    pub line: usize,
    /// It is only compared against (`"libcudart.so" in maps`, `name == "x"`,
    /// `s.startswith("lib")`), or stored in the environment for another program to read
    /// (`os.environ["TRT_SHIM_NVINFER_LIB_NAME"] = "…/libnvinfer.so"`): not a name the code
    /// loads.
    pub tested: bool,
    /// Written in a lambda's body.
    pub deferred: bool,
}

/// One statement that defines a function, imports, calls or writes a string that can name a
/// library (the others are not kept). A compound statement (`def`, `class`, `if`, `for`, `with`,
/// `try`…) is its header: the expressions evaluated where it stands (decorators and defaults, a
/// condition, a context manager); its body is statements of their own.
#[derive(Debug, Clone, Default)]
pub struct Stmt {
    /// The number of its first line.
    pub number: usize,
    /// For a `def`, the name it defines.
    pub def: Option<String>,
    /// For a `def`, its first positional parameter other than `self` or `cls`: the one a call's
    /// first argument is passed to (`lib` in `def _preload_library(lib)`).
    pub first_param: Option<String>,
    /// The calls it writes, in order (those in a lambda's body [`Call::deferred`]).
    pub calls: Vec<Call>,
    /// The string literals it writes that can name a library or a `.json` file, in order (none
    /// for a docstring or another string that stands alone as a statement).
    pub literals: Vec<Literal>,
    /// The f-strings it writes that build a library's name from its function's first parameter
    /// (`f"lib/lib{lib_name}*{ext}.*[0-9]"` in transformer-engine's `def
    /// _load_cuda_library_from_python(lib_name)`): each `value` a template, the parameter's
    /// field [`PARAM_FIELD`], any other field a `*` ([`fill`] puts a value in).
    pub templates: Vec<Literal>,
    /// The environment variables it sets (`os.environ[KEY] = …`, `os.environ.setdefault(KEY,
    /// …)`, `os.putenv(KEY, …)`), each a literal or the name of a module constant
    /// ([`File::env_sets`]).
    pub env_sets: Vec<EnvKey>,
    /// For an import, what it names and binds.
    import: Option<Box<Import>>,
}

/// The key of an environment variable a statement sets: written there, or a name bound at module
/// level (`NVRTC_LIBRARY_ENVIRONMENT_VARIABLE = "SYMMETRIX_JIT_NVRTC_LIBRARY"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvKey {
    /// A string literal.
    Literal(String),
    /// A plain name.
    Name(String),
}

impl EnvKey {
    fn of(e: &Expr) -> Option<EnvKey> {
        match e {
            Expr::Name(n) => Some(EnvKey::Name(n.id.to_string())),
            _ => string_value(e)
                .filter(|v| v.len() <= MAX_CONSTANT)
                .map(EnvKey::Literal),
        }
    }
}

/// The longest module constant kept ([`File::constant`]).
const MAX_CONSTANT: usize = 256;

/// Where a template ([`Stmt::templates`]) takes its function's first parameter: a character no
/// file name or pattern holds.
pub const PARAM_FIELD: char = '\u{1}';

/// A template with `value` in place of its function's parameter (`lib/libcurand*` for
/// `"curand"`).
pub fn fill(template: &str, value: &str) -> String {
    template.replace(PARAM_FIELD, value)
}

/// The value of `sys.platform` on Linux.
const LINUX_PLATFORM: &str = "linux";

/// Whether a condition is false (`Some(false)`) or true (`Some(true)`) whenever a package is
/// imported on Linux with no environment variable of its own set: the platform tests
/// (`sys.platform == "win32"`, `platform.system() != "Windows"`, `os.name == "nt"`,
/// `sys.platform.startswith("win")`, flags named `IS_WINDOWS`, `IS_MACOS`, `IS_LINUX`),
/// `TYPE_CHECKING`, `__name__ == "__main__"`, and environment reads (`os.getenv("X")`,
/// `os.environ.get("X", "0") == "1"`, `"X" in os.environ`), through `not`, `and` and `or`.
/// `None` when it may go either way. `known` gives what names assigned before hold: such a test
/// (`is_windows = platform.system() == "Windows"`, then `if is_windows and msvc:`), or an
/// environment read (`flag = os.environ.get("X", None)`, then `if flag is None: return`).
pub fn truth(e: &Expr, known: &dyn Fn(&str) -> Option<Known>) -> Option<bool> {
    let truth = |e: &Expr| truth(e, known);
    match e {
        Expr::BoolOp(b) => {
            let vs: Vec<Option<bool>> = b.values.iter().map(truth).collect();
            let (short, other) = match b.op {
                ast::BoolOp::And => (false, true),
                ast::BoolOp::Or => (true, false),
            };
            if vs.contains(&Some(short)) {
                Some(short)
            } else if vs.iter().all(|v| *v == Some(other)) {
                Some(other)
            } else {
                None
            }
        }
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::Not => truth(&u.operand).map(|v| !v),
        Expr::Name(n) => match known(n.id.as_str()) {
            Some(Known::Truth(t)) => Some(t),
            Some(Known::Env(d)) => Some(d.is_some_and(|d| !d.is_empty())),
            None => flag_truth(n.id.as_str()),
        },
        Expr::Attribute(a) => flag_truth(a.attr.as_str()),
        Expr::Compare(c) if c.ops.len() == 1 => {
            compare_truth(&c.left, c.ops[0], &c.comparators[0], known).or_else(|| {
                // The same test written the other way round (`"win32" == sys.platform`).
                let flipped = match c.ops[0] {
                    ast::CmpOp::Eq | ast::CmpOp::NotEq => c.ops[0],
                    _ => return None,
                };
                compare_truth(&c.comparators[0], flipped, &c.left, known)
            })
        }
        Expr::Call(c) => {
            let callee = callee_text(&c.func)?;
            if let Some(default) = env_read(&callee, c) {
                // Unset: the default, or None.
                return Some(default.is_some_and(|d| !d.is_empty()));
            }
            // `sys.platform.startswith("win")`, `platform.system().startswith("Win")`.
            let (on, method) = callee.rsplit_once('.')?;
            let prefix = c.arguments.args.first().and_then(string_value)?;
            let value = match (on, &*c.func) {
                ("sys.platform", _) => LINUX_PLATFORM,
                ("", Expr::Attribute(a)) if is_call_of(&a.value, "platform.system") => "Linux",
                _ => return None,
            };
            match method {
                "startswith" => Some(value.starts_with(prefix.as_str())),
                "endswith" => Some(value.ends_with(prefix.as_str())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A flag by its name: `TYPE_CHECKING` is false at run time; `IS_WINDOWS`, `IS_MACOS` (torch's
/// `torch._utils_internal`, and many packages alike) are false on Linux, `IS_LINUX` true.
fn flag_truth(name: &str) -> Option<bool> {
    if name == "TYPE_CHECKING" {
        return Some(false);
    }
    let upper = name.trim_start_matches('_');
    ["IS_WINDOWS", "IS_MACOS", "IS_DARWIN"]
        .contains(&upper)
        .then_some(false)
        .or_else(|| (upper == "IS_LINUX").then_some(true))
}

/// Whether `e` is a call of `name` (`platform.system()`).
fn is_call_of(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Call(c) if callee_text(&c.func).as_deref() == Some(name))
}

/// What a name assigned before holds at a default import ([`truth`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// A test whose truth is known.
    Truth(bool),
    /// An environment read, unset: its default (None when it has none).
    Env(Option<String>),
}

/// What a value test compares: the value on Linux of `sys.platform`, `platform.system()`,
/// `os.name`, `__name__` at import; for an environment read, its default.
enum Value {
    Known(String),
    /// An environment read whose default is this (None when it has none).
    Env(Option<String>),
}

fn value_of(e: &Expr, known: &dyn Fn(&str) -> Option<Known>) -> Option<Value> {
    if let Expr::Name(n) = e {
        if let Some(Known::Env(d)) = known(n.id.as_str()) {
            return Some(Value::Env(d));
        }
    }
    match e {
        Expr::Attribute(_) | Expr::Name(_) => match callee_text(e)?.as_str() {
            "sys.platform" => Some(Value::Known(LINUX_PLATFORM.into())),
            "os.name" => Some(Value::Known("posix".into())),
            // At import, a module's name is its own, never `__main__`.
            "__name__" => Some(Value::Known(String::new())),
            _ => None,
        },
        Expr::Call(c) => {
            // A value's case or spaces changed (`os.getenv("X", "false").lower()`).
            if let Expr::Attribute(a) = &*c.func {
                if c.arguments.args.is_empty() {
                    let change: Option<fn(&str) -> String> = match a.attr.as_str() {
                        "lower" | "casefold" => Some(str::to_lowercase),
                        "upper" => Some(str::to_uppercase),
                        "strip" => Some(|s: &str| s.trim().to_string()),
                        _ => None,
                    };
                    if let Some(change) = change {
                        return match value_of(&a.value, known)? {
                            Value::Known(v) => Some(Value::Known(change(&v))),
                            Value::Env(d) => Some(Value::Env(d.map(|d| change(&d)))),
                        };
                    }
                }
            }
            let callee = callee_text(&c.func)?;
            if callee == "platform.system" {
                return Some(Value::Known("Linux".into()));
            }
            env_read(&callee, c).map(Value::Env)
        }
        _ => None,
    }
}

/// For `os.getenv("X"[, default])` and `os.environ.get("X"[, default])`: `Some(default)`, where
/// the default is a string literal, or absent or `None` (`None`); `None` for any other call.
fn env_read(callee: &str, c: &ast::ExprCall) -> Option<Option<String>> {
    let env = callee == "getenv"
        || callee.ends_with(".getenv")
        || callee == "environ.get"
        || callee.ends_with(".environ.get");
    if !env || c.arguments.args.is_empty() || !c.arguments.keywords.is_empty() {
        return None;
    }
    match c.arguments.args.get(1) {
        None | Some(Expr::NoneLiteral(_)) => Some(None),
        Some(d) => string_value(d).map(Some),
    }
}

/// The strings a comparison's right side names: one literal, or a tuple, list or set of them.
fn strings_of(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Tuple(t) => t.elts.iter().map(string_value).collect(),
        Expr::List(l) => l.elts.iter().map(string_value).collect(),
        Expr::Set(s) => s.elts.iter().map(string_value).collect(),
        _ => string_value(e).map(|s| vec![s]),
    }
}

fn compare_truth(
    left: &Expr,
    op: ast::CmpOp,
    right: &Expr,
    known: &dyn Fn(&str) -> Option<Known>,
) -> Option<bool> {
    // `"X" in os.environ`: unset.
    if matches!(op, ast::CmpOp::In | ast::CmpOp::NotIn)
        && string_value(left).is_some()
        && callee_text(right).is_some_and(|r| r == "environ" || r.ends_with(".environ"))
    {
        return Some(op == ast::CmpOp::NotIn);
    }
    let value = value_of(left, known)?;
    let value = match value {
        Value::Known(v) => Some(v),
        Value::Env(d) => d,
    };
    if matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot) {
        // `os.getenv("X") is None`.
        if !matches!(right, Expr::NoneLiteral(_)) {
            return None;
        }
        return Some(value.is_none() == (op == ast::CmpOp::Is));
    }
    let names = strings_of(right)?;
    let found = value.is_some_and(|v| names.contains(&v));
    match op {
        ast::CmpOp::Eq | ast::CmpOp::In => Some(found),
        ast::CmpOp::NotEq | ast::CmpOp::NotIn => Some(!found),
        _ => None,
    }
}

/// The dotted name an expression spells (`a.b.c`), `.c` for an attribute of something that is
/// not a name; `None` for anything else.
fn callee_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(match callee_text(&a.value) {
            Some(base) if !base.starts_with('.') => format!("{base}.{}", a.attr.as_str()),
            _ => format!(".{}", a.attr.as_str()),
        }),
        _ => None,
    }
}

/// A string literal's value; an f-string's when it has no fields.
fn string_value(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        Expr::FString(f) => fstring_text(f, None),
        _ => None,
    }
}

/// An f-string with fields as a glob pattern, each field a `*` (`f"libcublas.so.{v}"` →
/// `libcublas.so.*`); `None` for anything else.
fn fstring_pattern(e: &Expr) -> Option<String> {
    let Expr::FString(f) = e else { return None };
    fstring_text(f, Some('*'))
}

/// An f-string's text, each field (a run of them) written as `field`; `None` when it has a
/// field and `field` is `None`.
fn fstring_text(f: &ast::ExprFString, field: Option<char>) -> Option<String> {
    let mut out = String::new();
    for part in f.value.iter() {
        match part {
            ast::FStringPart::Literal(l) => out.push_str(&l.value),
            ast::FStringPart::FString(fs) => {
                for el in fs.elements.iter() {
                    // A field that is a string literal is its text (vc6's
                    // `import_module(f".{'_PyVc6ILUtils'}", __name__)`).
                    let constant = el
                        .as_interpolation()
                        .filter(|i| i.format_spec.is_none())
                        .and_then(|i| string_value(&i.expression));
                    if let Some(c) = constant {
                        out.push_str(&c);
                        continue;
                    }
                    match (el.as_literal(), field) {
                        (Some(l), _) => out.push_str(&l.value),
                        (None, None) => return None,
                        (None, Some(c)) if !out.ends_with(c) => out.push(c),
                        (None, Some(_)) => {}
                    }
                }
            }
        }
    }
    Some(out)
}

/// An f-string as a template ([`Stmt::templates`]): a field that is just the name `param`
/// becomes [`PARAM_FIELD`], any other (a run of them) a `*`; `None` when no field is `param`.
fn fstring_template(f: &ast::ExprFString, param: &str) -> Option<String> {
    let mut out = String::new();
    let mut has_param = false;
    for part in f.value.iter() {
        match part {
            ast::FStringPart::Literal(l) => out.push_str(&l.value),
            ast::FStringPart::FString(fs) => {
                for el in fs.elements.iter() {
                    if let Some(l) = el.as_literal() {
                        out.push_str(&l.value);
                        continue;
                    }
                    let is_param = match el {
                        ast::InterpolatedStringElement::Interpolation(x) => {
                            x.format_spec.is_none()
                                && x.conversion == ast::ConversionFlag::None
                                && matches!(&*x.expression, Expr::Name(n) if n.id.as_str() == param)
                        }
                        _ => false,
                    };
                    if is_param {
                        out.push(PARAM_FIELD);
                        has_param = true;
                    } else if !out.ends_with('*') {
                        out.push('*');
                    }
                }
            }
        }
    }
    (has_param && out.len() <= 4096).then_some(out)
}

/// Whether a template can name a library: its last path component starts with `lib` and the
/// parameter (`lib{name}*`), or it holds `.so`.
fn names_by_param(template: &str) -> bool {
    let base = template.rsplit('/').next().unwrap_or(template);
    base.strip_prefix("lib")
        .is_some_and(|r| r.starts_with(PARAM_FIELD))
        || template.contains(".so")
}

/// The classes a handler's class list names, by their last component (`except (OSError,
/// mod.Err)` → `OSError`, `Err`); `*` for a bare `except:`, which catches everything.
fn caught_names(classes: Option<&Expr>) -> Vec<String> {
    let Some(e) = classes else {
        return vec!["*".to_string()];
    };
    let one = |e: &Expr| callee_text(e).map(|t| t.rsplit('.').next().unwrap_or(&t).to_string());
    match e {
        Expr::Tuple(t) => t.elts.iter().filter_map(one).collect(),
        _ => one(e).into_iter().collect(),
    }
}

/// Whether a block raises an exception of its own anywhere in it (a `raise` statement outside
/// the functions and classes it defines, or a call of one of the file's functions that always
/// raise, `raisers`: `except OSError: _fail(name)` where `def _fail(n): raise ImportError(n)`).
fn raises(body: &[ast::Stmt], raisers: &BTreeSet<String>) -> bool {
    use ast::Stmt as S;
    let raises = |b: &[ast::Stmt]| raises(b, raisers);
    body.iter().any(|s| match s {
        S::Raise(_) => true,
        S::Expr(e) => matches!(&*e.value, Expr::Call(c)
            if matches!(&*c.func, Expr::Name(n) if raisers.contains(n.id.as_str()))),
        S::FunctionDef(_) | S::ClassDef(_) => false,
        S::If(i) => raises(&i.body) || i.elif_else_clauses.iter().any(|c| raises(&c.body)),
        S::Try(t) => {
            raises(&t.body)
                || raises(&t.orelse)
                || raises(&t.finalbody)
                || t.handlers.iter().any(|h| {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    raises(&h.body)
                })
        }
        S::With(w) => raises(&w.body),
        S::For(f) => raises(&f.body) || raises(&f.orelse),
        S::While(w) => raises(&w.body) || raises(&w.orelse),
        S::Match(m) => m.cases.iter().any(|c| raises(&c.body)),
        _ => false,
    })
}

/// Whether classes caught ([`caught_names`]) include the error a failed import raises
/// (`ImportError`, its subclass `ModuleNotFoundError`, or a base class).
fn catches_import_error(names: &[String]) -> bool {
    names.iter().any(|n| {
        matches!(
            n.as_str(),
            "*" | "ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException"
        )
    })
}

/// The most the parse of one file may nest, in the units [`nesting`] counts. CPython refuses far
/// less (200 nested brackets, 100 indentation levels); the bound is wide so that long flat
/// expressions of generated code still read.
pub const MAX_NESTING: usize = 10_000;

/// The stack of a thread that parses: ruff's parser takes up to ~2.2 KiB per nesting unit
/// (measured on nested brackets, the costliest), so [`MAX_NESTING`] units need ~22 MiB; the walk
/// of the tree and its drop take less per level.
const PARSE_STACK: usize = 64 << 20;

/// A thread whose stack holds the deepest parse [`MAX_NESTING`] allows.
fn parser_thread() -> std::thread::Builder {
    std::thread::Builder::new()
        .name("cudist-python".into())
        .stack_size(PARSE_STACK)
}

/// An upper bound on how deep the parse of `text` recurses, from its tokens: the indentation
/// depth, plus, along the brackets open at any point, every token since the last comma at each
/// level that is not a name, a number, a string or a closing bracket (each can open at most one
/// level of the syntax tree: an operator, a keyword, an opening bracket, a dot). Names and
/// literals never nest, and a comma starts a sibling.
pub fn nesting(text: &str) -> usize {
    let mut lexer = parser::lexer::lex(text, parser::Mode::Module);
    let mut indent = 0usize;
    // Per open bracket: the count of its level when it opened, the level's count so far.
    let mut open: Vec<usize> = Vec::new();
    let mut outer = 0usize;
    let mut count = 0usize;
    let mut max = 0usize;
    loop {
        let kind = lexer.next_token();
        match kind {
            TokenKind::EndOfFile => break,
            TokenKind::Indent => indent += 1,
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            TokenKind::Newline | TokenKind::Semi => {
                open.clear();
                outer = 0;
                count = 0;
            }
            TokenKind::Comma => count = 0,
            TokenKind::Rpar
            | TokenKind::Rsqb
            | TokenKind::Rbrace
            | TokenKind::FStringEnd
            | TokenKind::TStringEnd => {
                if let Some(c) = open.pop() {
                    outer -= c;
                    count = c;
                }
            }
            TokenKind::Name
            | TokenKind::Int
            | TokenKind::Float
            | TokenKind::Complex
            | TokenKind::String
            | TokenKind::FStringMiddle
            | TokenKind::TStringMiddle
            | TokenKind::Comment
            | TokenKind::NonLogicalNewline => {}
            TokenKind::Lpar
            | TokenKind::Lsqb
            | TokenKind::Lbrace
            | TokenKind::FStringStart
            | TokenKind::TStringStart => {
                count += 1;
                open.push(count);
                outer += count;
                count = 0;
            }
            _ => count += 1,
        }
        max = max.max(indent + outer + count);
    }
    max
}

/// A file's line starts, to turn offsets into line numbers.
struct Lines(Vec<u32>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0u32];
        starts.extend(
            memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| u32::try_from(i + 1).unwrap_or(0)),
        );
        Lines(starts)
    }

    fn line(&self, at: TextSize) -> usize {
        self.0.partition_point(|s| *s <= u32::from(at))
    }
}

/// Gathers a statement's calls and literals from its expressions.
struct Gather<'l> {
    lines: &'l Lines,
    /// The first parameter of the function the statement is in.
    param: Option<String>,
    calls: Vec<Call>,
    literals: Vec<Literal>,
    templates: Vec<Literal>,
    /// Starts of the literals that are only compared against.
    tested: BTreeSet<TextSize>,
    /// Inside a lambda's body.
    deferred: bool,
    /// Inside a comprehension's element whose conditions test that a file exists.
    found: bool,
    /// The environment variables the statement sets ([`Stmt::env_sets`]).
    env_sets: Vec<EnvKey>,
}

impl<'l> Gather<'l> {
    fn new(lines: &'l Lines, param: Option<String>) -> Self {
        Gather {
            lines,
            param,
            calls: Vec::new(),
            literals: Vec::new(),
            templates: Vec::new(),
            tested: BTreeSet::new(),
            deferred: false,
            found: false,
            env_sets: Vec::new(),
        }
    }

    /// Marks the string literals `e` is made of (one, or those in a tuple, list or set) as
    /// compared against.
    fn mark_tested(&mut self, e: &Expr) {
        match e {
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.mark_tested(x)),
            Expr::List(l) => l.elts.iter().for_each(|x| self.mark_tested(x)),
            Expr::Set(s) => s.elts.iter().for_each(|x| self.mark_tested(x)),
            Expr::StringLiteral(_) | Expr::FString(_) => {
                self.tested.insert(e.start());
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Gather<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        match e {
            Expr::Lambda(l) => {
                // Its defaults are evaluated here; its body when it is called.
                if let Some(p) = &l.parameters {
                    self.visit_parameters(p);
                }
                let outer = std::mem::replace(&mut self.deferred, true);
                self.visit_expr(&l.body);
                self.deferred = outer;
                return;
            }
            Expr::Call(c) => {
                if let Some(callee) = callee_text(&c.func) {
                    if callee.ends_with("startswith") || callee.ends_with("endswith") {
                        for a in c.arguments.args.iter() {
                            self.mark_tested(a);
                        }
                    }
                    let first = c.arguments.args.first();
                    // A module name built from a literal start (`importlib.import_module(
                    // "mooncake.pg" + version_suffix)`) is a pattern: the start, then anything.
                    let built = |a: &Expr| match a {
                        Expr::BinOp(b)
                            if b.op == ast::Operator::Add && callee.ends_with("import_module") =>
                        {
                            string_value(&b.left).map(|l| format!("{l}*"))
                        }
                        _ => None,
                    };
                    let arg = first.and_then(|a| {
                        string_value(a)
                            .or_else(|| fstring_pattern(a))
                            .or_else(|| built(a))
                    });
                    let arg_name = match first {
                        Some(Expr::Name(n)) => Some(n.id.to_string()),
                        _ => None,
                    };
                    let group_arg = c
                        .arguments
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "group"))
                        .map(|k| &k.value);
                    let group = group_arg
                        .and_then(string_value)
                        .filter(|g| g.len() <= MAX_CONSTANT);
                    let group_name = match group_arg {
                        Some(Expr::Name(n)) => Some(n.id.to_string()),
                        _ => None,
                    };
                    // `os.environ.setdefault(KEY, …)`, `os.putenv(KEY, …)`: a variable set.
                    let sets_env = callee == "putenv"
                        || callee.ends_with(".putenv")
                        || callee.ends_with("environ.setdefault");
                    if let Some(k) = first.filter(|_| sets_env).and_then(EnvKey::of) {
                        self.env_sets.push(k);
                    }
                    let literal_args: Vec<String> = if (2..=8).contains(&c.arguments.args.len()) {
                        c.arguments
                            .args
                            .iter()
                            .map(|a| string_value(a).filter(|v| v.len() <= MAX_CONSTANT))
                            .collect::<Option<Vec<String>>>()
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    self.calls.push(Call {
                        callee,
                        arg,
                        arg_name,
                        deferred: self.deferred,
                        found: self.found,
                        group,
                        group_name,
                        literal_args,
                    });
                }
            }
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::SetComp(ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) if generators.iter().any(|g| g.ifs.iter().any(tests_existence)) => {
                for g in generators {
                    self.visit_comprehension(g);
                }
                let outer = std::mem::replace(&mut self.found, true);
                self.visit_expr(elt);
                self.found = outer;
                return;
            }
            Expr::Compare(c) => {
                self.mark_tested(&c.left);
                for x in c.comparators.iter() {
                    self.mark_tested(x);
                }
            }
            Expr::StringLiteral(_) | Expr::FString(_) => {
                // An f-string with fields names a pattern: each field matches anything
                // (onnxruntime's `f"libcublasLt.so.{cuda_major_version}"`).
                let value = string_value(e).or_else(|| fstring_pattern(e));
                if let Some(value) = value.filter(|v| can_name_a_file(v)) {
                    self.literals.push(Literal {
                        value,
                        line: self.lines.line(e.start()),
                        tested: self.tested.contains(&e.start()),
                        deferred: self.deferred,
                    });
                }
                // One that builds a name from the function's parameter, kept whole for the values
                // the callers pass.
                if let (Expr::FString(f), Some(p)) = (e, self.param.as_deref()) {
                    if let Some(value) = fstring_template(f, p).filter(|t| names_by_param(t)) {
                        self.templates.push(Literal {
                            value,
                            line: self.lines.line(e.start()),
                            tested: self.tested.contains(&e.start()),
                            deferred: self.deferred,
                        });
                    }
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, e);
    }
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
#[derive(Debug, Clone, Default)]
struct Import {
    /// The modules as written (`import a, b`: a and b; `from a import b`: a).
    named: Vec<String>,
    modules: Vec<String>,
    bind_modules: Vec<(String, String)>,
    bind_names: Vec<(String, (String, String))>,
    stars: Vec<String>,
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
    pub stmts: Vec<Stmt>,
    /// The function each statement is in (`None`: module level or a class body).
    pub scope: Vec<Option<usize>>,
    /// Statements under a branch that never runs on Linux at import ([`truth`]).
    pub excluded: Vec<bool>,
    /// Statements in the body of a `try:` whose handlers catch a failed import (`except
    /// ImportError`, `ModuleNotFoundError`, `Exception`, a bare `except:`), or of `with
    /// suppress(ImportError):`: an import there that fails leaves the importing module
    /// importable.
    pub guarded: Vec<bool>,
    /// Why the file was not read (it nests deeper than [`MAX_NESTING`]); it then has no
    /// statements.
    pub unread: Option<String>,
    /// Per statement, the set of classes caught around it ([`File::caught`]).
    catching: Vec<Option<usize>>,
    catch_sets: Vec<Vec<String>>,
    /// Per statement, the tests of its function's first parameter around it ([`File::runs_for`]).
    when: Vec<Option<usize>>,
    when_sets: Vec<Vec<ParamTest>>,
    /// Per statement, [`File::found_first`].
    found: Vec<bool>,
    /// Names a function assigns its first parameter ([`File::passes_param`]).
    aliases: BTreeSet<(usize, String)>,
    /// Functions defined in the file, by name (methods included).
    defs: BTreeMap<String, Vec<usize>>,
    /// The bases of each class the file defines, as written (`ctypes.CDLL`), with the class's
    /// statement for [`File::canonical`].
    class_bases: BTreeMap<String, (usize, Vec<String>)>,
    /// The methods of each class the file defines (their `def`), by class and method name:
    /// calling a class runs its `__init__` (keopscore's `cuda_config = CUDAConfig()` at import).
    class_methods: BTreeMap<String, BTreeMap<String, usize>>,
    /// Names the file's module code assigns a call of something (`lib = CuPyNumericLib("x")`):
    /// what was called, as written. A method called on such a name (`lib.register()`) is the
    /// class's, when a class was called.
    instances: BTreeMap<String, String>,
    /// Module-level names bound to a string literal, with the last value bound.
    constants: BTreeMap<String, String>,
    bindings: Bindings,
    /// Every name an import binds, in order: (statement, its function, name, what it stands
    /// for as a dotted name).
    imports: Vec<(usize, Option<usize>, String, String)>,
}

impl File<'_> {
    /// The string a module-level name is bound to (`ENTRY_POINT_GROUP = "symmetrix.backends"`),
    /// its last binding at module level: what a function that reads the name sees.
    pub fn constant(&self, name: &str) -> Option<&str> {
        self.constants.get(name).map(String::as_str)
    }

    /// The environment variables statement `at` sets, by name ([`Stmt::env_sets`]; a key named
    /// by a module constant is its value, one the file does not bind is left out).
    pub fn env_sets(&self, at: usize) -> Vec<String> {
        self.stmts[at]
            .env_sets
            .iter()
            .filter_map(|k| match k {
                EnvKey::Literal(v) => Some(v.clone()),
                EnvKey::Name(n) => self.constant(n).map(String::from),
            })
            .collect()
    }

    /// The classes that the `try` bodies (and `contextlib.suppress` blocks) around statement `at`
    /// catch, by their last component (`OSError`, `DynamicLibNotFoundError`; `*` for a bare
    /// `except:`): a failure of one of them there leaves the code around going on.
    pub fn caught(&self, at: usize) -> &[String] {
        self.catching
            .get(at)
            .copied()
            .flatten()
            .map_or(&[], |i| self.catch_sets[i].as_slice())
    }

    /// Whether statement `at` can run when its function's first parameter is `arg`: every test of
    /// that parameter around it (`if library == "core":`, the `elif` branches after it) admits
    /// `arg`. transformer-engine's `_get_shared_object_file("core")` runs the branch that names
    /// `libtransformer_engine`, not the one that names `libnccl_ep`.
    pub fn runs_for(&self, at: usize, arg: &str) -> bool {
        self.when.get(at).copied().flatten().is_none_or(|i| {
            self.when_sets[i]
                .iter()
                .all(|t| t.values.iter().any(|v| v == arg) == t.holds)
        })
    }

    /// Whether statement `at` runs only where the code has found a file first: in the body of a
    /// test that a file exists (`if os.path.exists(path):`, `if path.is_file():`, `if found:`
    /// after `found = glob.glob(…)`), after `if not os.path.exists(path): continue` (or `return`,
    /// `raise`, `break`), or in a loop over a directory's listing. A library loaded there is
    /// loaded where it is and skipped where it is not, so its absence fails nothing:
    /// cudnn-frontend tries `LD_LIBRARY_PATH`'s directories and then the cuDNN wheel's by
    /// globbing, and imports without cuDNN. Which file was found is not followed: any existence
    /// test counts, as code checks the file it is about to load.
    pub fn found_first(&self, at: usize) -> bool {
        self.found.get(at).copied().unwrap_or(false)
    }

    /// Whether `name`, given to a call in function `scope`, is that function's first parameter or
    /// a name the function assigns it (`pathfinder_name = name`, cupy's `__getattr__`).
    pub fn passes_param(&self, scope: Option<usize>, name: &str) -> bool {
        let Some(f) = scope else { return false };
        self.stmts.get(f).and_then(|d| d.first_param.as_deref()) == Some(name)
            || self.aliases.contains(&(f, name.to_string()))
    }

    /// The values of its function's first parameter for which statement `at` runs, where tests
    /// around it list them (`if name in _submodules:`, `_submodules` a tuple of literals): none
    /// where nothing limits them.
    pub fn admitted(&self, at: usize) -> Option<Vec<String>> {
        let tests = &self.when_sets[self.when.get(at).copied().flatten()?];
        let mut out: Option<Vec<String>> = None;
        for t in tests.iter().filter(|t| t.holds) {
            out = Some(match out {
                None => t.values.clone(),
                Some(o) => o.into_iter().filter(|v| t.values.contains(v)).collect(),
            });
        }
        let mut out = out?;
        out.retain(|v| self.runs_for(at, v));
        Some(out)
    }

    /// Whether an import anywhere in the file binds `name`.
    pub fn imports_name(&self, name: &str) -> bool {
        self.imports.iter().any(|(_, _, n, _)| n == name)
    }

    /// The classes the file defines that derive from one of `bases` (canonical dotted names,
    /// `ctypes.CDLL`), directly or through another class of the file.
    pub fn classes_deriving(&self, bases: &[&str]) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = BTreeSet::new();
        loop {
            let before = out.len();
            for (class, (at, written)) in &self.class_bases {
                if written
                    .iter()
                    .any(|b| bases.contains(&self.canonical(b, *at).as_str()) || out.contains(b))
                {
                    out.insert(class.clone());
                }
            }
            if out.len() == before {
                return out;
            }
        }
    }

    /// What a dotted name called by statement `at` stands for, through the file's imports:
    /// `_load` → `cuda.pathfinder.load_nvidia_dynamic_lib` after `from cuda.pathfinder import
    /// load_nvidia_dynamic_lib as _load`; `rl.load_library` → `librmm.load_library` after `import
    /// librmm as rl`. The binding is the one in force there, as Python sees it: the last import
    /// before it in its own function, else, in a function, the module's last one (module code has
    /// run when a function is called); in module code, the last one before it. ucxx imports
    /// `libucxx` and calls `libucxx.load_library()` before `from ._lib import libucxx` rebinds
    /// the name. A name no import binds is returned as it is.
    pub fn canonical(&self, dotted: &str, at: usize) -> String {
        let (first, rest) = dotted.split_once('.').unwrap_or((dotted, ""));
        let scope = self.scope.get(at).copied().flatten();
        let bound = self
            .imports
            .iter()
            .rev()
            .find(|(i, sc, name, _)| *i < at && *sc == scope && name == first)
            .or_else(|| {
                scope.and(
                    self.imports
                        .iter()
                        .rev()
                        .find(|(_, sc, name, _)| sc.is_none() && name == first),
                )
            });
        let Some((_, _, _, base)) = bound else {
            return dotted.to_string();
        };
        if rest.is_empty() {
            base.clone()
        } else {
            format!("{base}.{rest}")
        }
    }
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

/// Where a statement stands: the function it is in, and whether it never runs on Linux at
/// import or runs where a failed import is caught.
#[derive(Clone, Copy)]
struct Ctx {
    scope: Option<usize>,
    excluded: bool,
    guarded: bool,
    /// The classes the handlers of the `try` bodies (and `suppress` blocks) around it catch: an
    /// index into [`Reader::catch_sets`].
    catching: Option<usize>,
    /// The tests of the function's first parameter against literals that hold around it
    /// ([`File::runs_for`]): an index into [`Reader::when_sets`].
    when: Option<usize>,
    /// It runs only where the code has found a file ([`File::found_first`]).
    found: bool,
}

/// A test of a function's first parameter against string literals (`library == "core"`,
/// `kind in ("a", "b")`): the parameter is one of `values` (`holds`), or none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParamTest {
    values: Vec<String>,
    holds: bool,
}

/// The [`ParamTest`] a condition makes of parameter `param` (or a name assigned it), when it is
/// one. `named` gives the strings a module-level name is bound to (`_submodules = ('cublas',
/// …)`, tested as `name in _submodules`).
fn param_test(
    e: &Expr,
    param: &str,
    aliases: &[String],
    named: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Option<ParamTest> {
    let Expr::Compare(c) = e else { return None };
    if c.ops.len() != 1 {
        return None;
    }
    let is_param = |x: &Expr| matches!(x, Expr::Name(n) if n.id.as_str() == param || aliases.iter().any(|a| a == n.id.as_str()));
    let strings = |x: &Expr| match x {
        Expr::Name(n) => named(n.id.as_str()),
        _ => strings_of(x),
    };
    let (op, values) = if is_param(&c.left) {
        (c.ops[0], strings(&c.comparators[0])?)
    } else if is_param(&c.comparators[0]) && matches!(c.ops[0], ast::CmpOp::Eq | ast::CmpOp::NotEq)
    {
        (c.ops[0], vec![string_value(&c.left)?])
    } else {
        return None;
    };
    let holds = match op {
        ast::CmpOp::Eq | ast::CmpOp::In => true,
        ast::CmpOp::NotEq | ast::CmpOp::NotIn => false,
        _ => return None,
    };
    Some(ParamTest { values, holds })
}

/// Builds a [`File`] from a syntax tree.
struct Reader<'l> {
    lines: &'l Lines,
    /// The package a relative import starts from.
    package: Option<String>,
    stmts: Vec<Stmt>,
    scope: Vec<Option<usize>>,
    excluded: Vec<bool>,
    guarded: Vec<bool>,
    catching: Vec<Option<usize>>,
    /// Each set of caught classes a statement can be under.
    catch_sets: Vec<Vec<String>>,
    defs: BTreeMap<String, Vec<usize>>,
    /// Each class's bases as written, with its statement ([`File::class_bases`]).
    class_bases: BTreeMap<String, (usize, Vec<String>)>,
    /// Each class's methods ([`File::class_methods`]).
    class_methods: BTreeMap<String, BTreeMap<String, usize>>,
    /// Module-level names assigned a call of a class ([`File::instances`]).
    instances: BTreeMap<String, String>,
    /// The class whose body is being read, if any (not a function inside one).
    class: Option<String>,
    /// Names assigned a test whose truth is known, or an environment read ([`truth`]), by
    /// function.
    known: HashMap<(Option<usize>, String), Known>,
    /// The file's module-level functions whose body raises whenever it runs (a `raise` at its
    /// top level).
    raisers: BTreeSet<String>,
    when: Vec<Option<usize>>,
    /// Each set of parameter tests a statement can be under.
    when_sets: Vec<Vec<ParamTest>>,
    /// The loops around the statement being read whose variable takes the strings of a literal
    /// tuple or list (`for libname in ("nvrtc", "nvJitLink"):`): variable, strings.
    loop_strings: Vec<(String, Vec<String>)>,
    found: Vec<bool>,
    /// Module-level names bound to a tuple or list of string literals (`_submodules = ('cublas',
    /// 'cusolver')`).
    module_strings: HashMap<String, Vec<String>>,
    /// Module-level names bound to a string literal ([`File::constant`]).
    constants: BTreeMap<String, String>,
    /// Names a function assigns its first parameter (`pathfinder_name = name`), by function.
    aliases: BTreeSet<(usize, String)>,
    /// Names assigned a listing of files (`glob.glob(…)`, `os.listdir(…)`), by function: true
    /// only where files were found.
    listings: BTreeSet<(Option<usize>, String)>,
}

impl<'l> Reader<'l> {
    /// [`truth`] of a test in function `scope`, with the names assigned known tests before it.
    fn truth(&self, e: &Expr, scope: Option<usize>) -> Option<bool> {
        truth(e, &self.known_in(scope))
    }

    /// What the names of function `scope` are known to hold there.
    fn known_in(&self, scope: Option<usize>) -> impl Fn(&str) -> Option<Known> + '_ {
        move |n: &str| {
            self.known
                .get(&(scope, n.to_string()))
                .or_else(|| self.known.get(&(None, n.to_string())))
                .cloned()
        }
    }

    /// Records what a plain assignment `name = test` or `name = os.getenv(…)` makes known (or
    /// unknown again).
    fn assigned(&mut self, target: &Expr, value: &Expr, ctx: Ctx) {
        let Expr::Name(n) = target else { return };
        let key = (ctx.scope, n.id.to_string());
        if ctx.scope.is_none() && !ctx.excluded {
            match strings_of(value).filter(|_| matches!(value, Expr::Tuple(_) | Expr::List(_))) {
                Some(v) => {
                    self.module_strings.insert(n.id.to_string(), v);
                }
                None => {
                    self.module_strings.remove(n.id.as_str());
                }
            }
            match string_value(value).filter(|v| v.len() <= MAX_CONSTANT) {
                Some(v) => {
                    self.constants.insert(n.id.to_string(), v);
                }
                None => {
                    self.constants.remove(n.id.as_str());
                }
            }
        }
        if let Some(f) = ctx.scope {
            let is_param = matches!(value, Expr::Name(v)
                if self.param(Some(f)).as_deref() == Some(v.id.as_str()));
            if is_param {
                self.aliases.insert((f, n.id.to_string()));
            }
        }
        if lists_files(value) {
            self.listings.insert(key.clone());
        } else {
            self.listings.remove(&key);
        }
        let env = match value_of(value, &self.known_in(ctx.scope)) {
            Some(Value::Env(d)) => Some(Known::Env(d)),
            _ => None,
        };
        match env.or_else(|| self.truth(value, ctx.scope).map(Known::Truth)) {
            Some(v) if !ctx.excluded => {
                self.known.insert(key, v);
            }
            _ => {
                self.known.remove(&key);
            }
        }
    }

    /// Whether a statement of a function ends it whenever it runs at a default import: a
    /// `return` or `raise`, or an `if` whose test then holds and whose body ends so
    /// (torch-tensorrt's `if os_env_flag is None or …: return` before the load its opt-in
    /// flag enables).
    fn ends(&self, s: &ast::Stmt, scope: Option<usize>) -> bool {
        use ast::Stmt as S;
        match s {
            S::Return(_) | S::Raise(_) => true,
            S::If(i) => {
                self.truth(&i.test, scope) == Some(true)
                    && i.body.iter().any(|b| self.ends(b, scope))
            }
            _ => false,
        }
    }

    /// The context of a body whose failures `names` are caught, as well as those `ctx` catches.
    fn catching(&mut self, ctx: Ctx, names: Vec<String>) -> Ctx {
        if names.is_empty() {
            return ctx;
        }
        let mut set = ctx
            .catching
            .map_or_else(Vec::new, |i| self.catch_sets[i].clone());
        set.extend(names);
        self.catch_sets.push(set);
        Ctx {
            guarded: ctx.guarded
                || catches_import_error(&self.catch_sets[self.catch_sets.len() - 1]),
            catching: Some(self.catch_sets.len() - 1),
            ..ctx
        }
    }

    /// The context of a body that runs only where `tests` hold, as well as those of `ctx`.
    fn when(&mut self, ctx: Ctx, tests: Vec<ParamTest>) -> Ctx {
        if tests.is_empty() {
            return ctx;
        }
        let mut set = ctx
            .when
            .map_or_else(Vec::new, |i| self.when_sets[i].clone());
        set.extend(tests);
        self.when_sets.push(set);
        Ctx {
            when: Some(self.when_sets.len() - 1),
            ..ctx
        }
    }

    /// Whether test `e` holds only where a file was found ([`File::found_first`]): an existence
    /// check, a name assigned a listing of files (or its `len`, compared or not), or an `and`
    /// with one of them.
    fn finds(&self, e: &Expr, scope: Option<usize>) -> bool {
        match e {
            Expr::BoolOp(b) if b.op == ast::BoolOp::And => {
                b.values.iter().any(|v| self.finds(v, scope))
            }
            Expr::Name(n) => {
                let name = n.id.to_string();
                self.listings.contains(&(scope, name.clone()))
                    || self.listings.contains(&(None, name))
            }
            e @ Expr::Call(_) if tests_existence(e) => true,
            // `len(libs)` of a listing, as a test (`if len(libs):`, `if len(libs) > 0:`).
            Expr::Call(c)
                if callee_text(&c.func).as_deref() == Some("len")
                    && c.arguments
                        .args
                        .first()
                        .is_some_and(|a| self.finds(a, scope)) =>
            {
                true
            }
            // `len(libs) > 0`, `>= 1`, `!= 0`: something was found (`== 0` is the opposite).
            Expr::Compare(c)
                if c.ops
                    .iter()
                    .all(|o| matches!(o, ast::CmpOp::Gt | ast::CmpOp::GtE | ast::CmpOp::NotEq)) =>
            {
                self.finds(&c.left, scope)
            }
            _ => lists_files(e),
        }
    }

    /// Whether statement `s` is `if not <a file found>:` whose body leaves the code that follows
    /// (`continue`, `break`, `return`): what follows runs only where it was found. A body that
    /// raises makes the file required, not optional.
    fn leaves_unless_found(&self, s: &ast::Stmt, scope: Option<usize>) -> bool {
        let ast::Stmt::If(i) = s else { return false };
        let Expr::UnaryOp(u) = &*i.test else {
            return false;
        };
        u.op == ast::UnaryOp::Not
            && i.elif_else_clauses.is_empty()
            && self.finds(&u.operand, scope)
            && !raises(&i.body, &self.raisers)
            && i.body.last().is_some_and(|b| {
                matches!(
                    b,
                    ast::Stmt::Continue(_) | ast::Stmt::Break(_) | ast::Stmt::Return(_)
                )
            })
    }

    /// The names function `scope` assigns its first parameter.
    fn aliases_in(&self, scope: Option<usize>) -> Vec<String> {
        let Some(f) = scope else { return Vec::new() };
        self.aliases
            .range((f, String::new())..)
            .take_while(|(g, _)| *g == f)
            .map(|(_, n)| n.clone())
            .collect()
    }

    /// The first parameter of function `scope`.
    fn param(&self, scope: Option<usize>) -> Option<String> {
        self.stmts.get(scope?)?.first_param.clone()
    }

    /// A gatherer for a statement in `ctx`, which knows the first parameter of its function.
    fn gather(&self, ctx: Ctx) -> Gather<'l> {
        Gather::new(self.lines, self.param(ctx.scope))
    }

    /// A new statement at `at`, its calls and literals those of `exprs`.
    fn push<'e>(&mut self, at: TextSize, ctx: Ctx, exprs: impl IntoIterator<Item = &'e Expr>) {
        let mut g = self.gather(ctx);
        for e in exprs {
            g.visit_expr(e);
        }
        self.push_gathered(at, ctx, g, None, None);
    }

    /// Keeps a statement when it defines, imports, calls or names something; its index then.
    fn push_gathered(
        &mut self,
        at: TextSize,
        ctx: Ctx,
        g: Gather,
        def: Option<String>,
        import: Option<Box<Import>>,
    ) -> Option<usize> {
        if def.is_none()
            && import.is_none()
            && g.calls.is_empty()
            && g.literals.is_empty()
            && g.templates.is_empty()
            && g.env_sets.is_empty()
        {
            return None;
        }
        // A call given a loop's variable over literal strings is a call with each of them
        // (cuda-cccl's `for libname in ("nvrtc", "nvJitLink"): load_nvidia_dynamic_lib(libname)`).
        let mut calls = Vec::with_capacity(g.calls.len());
        for c in g.calls {
            let strings = match (&c.arg, &c.arg_name) {
                (None, Some(n)) => self
                    .loop_strings
                    .iter()
                    .rev()
                    .find(|(v, _)| v == n)
                    .map(|(_, s)| s.clone()),
                _ => None,
            };
            match strings {
                Some(strings) => calls.extend(strings.into_iter().map(|s| Call {
                    arg: Some(s),
                    arg_name: None,
                    ..c.clone()
                })),
                None => calls.push(c),
            }
        }
        self.stmts.push(Stmt {
            number: self.lines.line(at),
            def,
            first_param: None,
            calls,
            literals: g.literals,
            templates: g.templates,
            env_sets: g.env_sets,
            import,
        });
        self.scope.push(ctx.scope);
        self.excluded.push(ctx.excluded);
        self.guarded.push(ctx.guarded);
        self.catching.push(ctx.catching);
        self.when.push(ctx.when);
        self.found.push(ctx.found);
        Some(self.stmts.len() - 1)
    }

    fn suite(&mut self, body: &[ast::Stmt], ctx: Ctx) {
        let mut ctx = ctx;
        for s in body {
            self.stmt(s, ctx);
            // What follows a statement that ends the function never runs at a default import.
            if ctx.scope.is_some() && !ctx.excluded && self.ends(s, ctx.scope) {
                ctx.excluded = true;
            }
            if self.leaves_unless_found(s, ctx.scope) {
                ctx.found = true;
            }
        }
    }

    fn stmt(&mut self, s: &ast::Stmt, ctx: Ctx) {
        use ast::Stmt as S;
        match s {
            S::FunctionDef(f) => {
                let mut g = self.gather(ctx);
                for d in &f.decorator_list {
                    g.visit_decorator(d);
                }
                g.visit_parameters(&f.parameters);
                if let Some(r) = &f.returns {
                    g.visit_expr(r);
                }
                let name = f.name.as_str().to_string();
                let i = self.push_gathered(f.start(), ctx, g, Some(name.clone()), None);
                if let Some(i) = i {
                    if let Some(class) = &self.class {
                        self.class_methods
                            .entry(class.clone())
                            .or_default()
                            .entry(name.clone())
                            .or_insert(i);
                    }
                    self.defs.entry(name).or_default().push(i);
                    self.stmts[i].first_param = f
                        .parameters
                        .posonlyargs
                        .iter()
                        .chain(&f.parameters.args)
                        .map(|p| p.parameter.name.as_str())
                        .find(|n| *n != "self" && *n != "cls")
                        .map(str::to_string);
                }
                // Its body's parameter tests are of its own parameter; a function in it is no
                // method of the class around.
                let class = self.class.take();
                self.suite(
                    &f.body,
                    Ctx {
                        scope: i,
                        when: None,
                        ..ctx
                    },
                );
                self.class = class;
            }
            S::ClassDef(c) => {
                let mut g = self.gather(ctx);
                for d in &c.decorator_list {
                    g.visit_decorator(d);
                }
                if let Some(a) = &c.arguments {
                    g.visit_arguments(a);
                }
                // Its bases resolve through the imports before it (a statement with nothing
                // gathered is not kept: the next one's index stands for its place).
                let at = self
                    .push_gathered(c.start(), ctx, g, None, None)
                    .unwrap_or(self.stmts.len());
                let bases: Vec<String> = c
                    .arguments
                    .iter()
                    .flat_map(|a| a.args.iter())
                    .filter_map(callee_text)
                    .collect();
                if !bases.is_empty() {
                    self.class_bases
                        .entry(c.name.to_string())
                        .or_insert((at, bases));
                }
                // A class body runs where the class is defined.
                let outer = self.class.replace(c.name.to_string());
                self.suite(&c.body, ctx);
                self.class = outer;
            }
            S::If(i) => {
                self.push(i.test.start(), ctx, [&*i.test]);
                let mut earlier = self.truth(&i.test, ctx.scope);
                // Tests of the function's first parameter: a body runs for the values its own
                // test admits and the earlier tests of the chain did not take.
                // Every test of the chain, read as things stand at the `if` (before its bodies).
                let (first, in_and, clause_tests) = {
                    let param = self.param(ctx.scope);
                    let aliases = self.aliases_in(ctx.scope);
                    let named = |n: &str| self.module_strings.get(n).cloned();
                    let test_of = |e: &Expr| {
                        param
                            .as_deref()
                            .and_then(|p| param_test(e, p, &aliases, &named))
                    };
                    let first = test_of(&i.test);
                    // `if A and name in X:` runs its body only where `name in X` holds (its
                    // `else` says nothing of `name`).
                    let in_and: Vec<ParamTest> = match &*i.test {
                        Expr::BoolOp(b) if b.op == ast::BoolOp::And && first.is_none() => {
                            b.values.iter().filter_map(test_of).collect()
                        }
                        _ => Vec::new(),
                    };
                    let clause_tests: Vec<Option<ParamTest>> = i
                        .elif_else_clauses
                        .iter()
                        .map(|c| c.test.as_ref().and_then(test_of))
                        .collect();
                    (first, in_and, clause_tests)
                };
                let mut not_taken: Vec<ParamTest> = first
                    .iter()
                    .map(|t| ParamTest {
                        holds: !t.holds,
                        ..t.clone()
                    })
                    .collect();
                // Where the code raises when the file is not found, the file is required: the
                // branch that loads it is no optional load.
                let others_raise = i
                    .elif_else_clauses
                    .iter()
                    .any(|c| raises(&c.body, &self.raisers));
                let finds = self.finds(&i.test, ctx.scope) && !others_raise;
                let finds_not = match &*i.test {
                    Expr::UnaryOp(u) if u.op == ast::UnaryOp::Not => {
                        self.finds(&u.operand, ctx.scope) && !raises(&i.body, &self.raisers)
                    }
                    _ => false,
                };
                let body = self.when(
                    Ctx {
                        excluded: ctx.excluded || earlier == Some(false),
                        found: ctx.found || finds,
                        ..ctx
                    },
                    first.into_iter().chain(in_and).collect(),
                );
                self.suite(&i.body, body);
                // An `elif` or `else` never runs after a test that always holds.
                let mut held = earlier == Some(true);
                for (clause, own) in i.elif_else_clauses.iter().zip(clause_tests) {
                    let here = self.when(
                        Ctx {
                            excluded: ctx.excluded || held,
                            ..ctx
                        },
                        not_taken.clone(),
                    );
                    match &clause.test {
                        Some(t) => {
                            self.push(t.start(), here, [t]);
                            earlier = self.truth(t, ctx.scope);
                            let body = self.when(
                                Ctx {
                                    excluded: here.excluded || earlier == Some(false),
                                    ..here
                                },
                                own.iter().cloned().collect(),
                            );
                            self.suite(&clause.body, body);
                            not_taken.extend(own.map(|t| ParamTest {
                                holds: !t.holds,
                                ..t
                            }));
                            held |= earlier == Some(true);
                        }
                        None => self.suite(
                            &clause.body,
                            Ctx {
                                found: here.found || finds_not,
                                ..here
                            },
                        ),
                    }
                }
            }
            S::Try(t) => {
                // A handler that raises again (`except OSError: raise ImportError(…)`) lets the
                // failure out: it catches nothing for the code around.
                let names: Vec<String> = t
                    .handlers
                    .iter()
                    .flat_map(|h| {
                        let ast::ExceptHandler::ExceptHandler(h) = h;
                        if raises(&h.body, &self.raisers) {
                            Vec::new()
                        } else {
                            caught_names(h.type_.as_deref())
                        }
                    })
                    .collect();
                let body = self.catching(ctx, names);
                self.suite(&t.body, body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.push(h.start(), ctx, h.type_.as_deref());
                    self.suite(&h.body, ctx);
                }
                self.suite(&t.orelse, ctx);
                self.suite(&t.finalbody, ctx);
            }
            S::With(w) => {
                let mut g = self.gather(ctx);
                let mut names = Vec::new();
                for item in &w.items {
                    g.visit_with_item(item);
                    if let Expr::Call(c) = &item.context_expr {
                        let suppress = callee_text(&c.func)
                            .is_some_and(|t| t == "suppress" || t.ends_with(".suppress"));
                        if suppress {
                            for a in c.arguments.args.iter() {
                                names
                                    .extend(caught_names(Some(a)).into_iter().filter(|n| n != "*"));
                            }
                        }
                    }
                }
                self.push_gathered(w.start(), ctx, g, None, None);
                let body = self.catching(ctx, names);
                self.suite(&w.body, body);
            }
            S::For(f) => {
                self.push(f.start(), ctx, [&*f.iter, &*f.target]);
                let strings = match (&*f.target, strings_of(&f.iter)) {
                    (Expr::Name(n), Some(s)) if !matches!(&*f.iter, Expr::StringLiteral(_)) => {
                        Some((n.id.to_string(), s))
                    }
                    _ => None,
                };
                let pushed = strings.is_some();
                self.loop_strings.extend(strings);
                // A loop over a directory's listing runs for the files found there.
                let listed = match &*f.iter {
                    Expr::Name(_) => self.finds(&f.iter, ctx.scope),
                    e => lists_files(e),
                };
                self.suite(
                    &f.body,
                    Ctx {
                        found: ctx.found || listed,
                        ..ctx
                    },
                );
                if pushed {
                    self.loop_strings.pop();
                }
                self.suite(&f.orelse, ctx);
            }
            S::While(w) => {
                self.push(w.start(), ctx, [&*w.test]);
                self.suite(&w.body, ctx);
                self.suite(&w.orelse, ctx);
            }
            S::Match(m) => {
                self.push(m.start(), ctx, [&*m.subject]);
                for case in &m.cases {
                    self.push(case.start(), ctx, case.guard.as_deref());
                    self.suite(&case.body, ctx);
                }
            }
            S::Import(imp) => {
                let g = self.gather(ctx);
                let import = Some(Box::new(import_of(imp)));
                self.push_gathered(imp.start(), ctx, g, None, import);
            }
            S::ImportFrom(imp) => {
                let g = self.gather(ctx);
                let import = import_from(imp, self.package.as_deref()).map(Box::new);
                self.push_gathered(imp.start(), ctx, g, None, import);
            }
            S::Expr(e) if string_value(&e.value).is_some() => {
                // A docstring, or another string standing alone: it names nothing.
                let mut g = self.gather(ctx);
                g.visit_expr(&e.value);
                g.literals.clear();
                g.templates.clear();
                self.push_gathered(e.start(), ctx, g, None, None);
            }
            _ => {
                match s {
                    S::Assign(a) if a.targets.len() == 1 => {
                        // Module code's `name = Something(...)`: a method called on the name
                        // is Something's, when Something is a class.
                        if let (None, None, Expr::Name(t), Expr::Call(c)) =
                            (ctx.scope, &self.class, &a.targets[0], &*a.value)
                        {
                            if let Some(callee) = callee_text(&c.func) {
                                self.instances.insert(t.id.to_string(), callee);
                            }
                        }
                        self.assigned(&a.targets[0], &a.value, ctx)
                    }
                    S::AnnAssign(a) => {
                        if let Some(v) = &a.value {
                            self.assigned(&a.target, v, ctx);
                        }
                    }
                    _ => {}
                }
                let mut g = self.gather(ctx);
                visitor::walk_stmt(&mut g, s);
                // A value stored in the environment is for whatever reads it (torch-tensorrt's
                // shim library reads the libnvinfer path it is given): not a load here.
                if let S::Assign(a) = s {
                    let keys: Vec<Option<EnvKey>> = a
                        .targets
                        .iter()
                        .filter_map(|t| match t {
                            Expr::Subscript(x)
                                if callee_text(&x.value)
                                    .is_some_and(|c| c.ends_with("environ")) =>
                            {
                                Some(EnvKey::of(&x.slice))
                            }
                            _ => None,
                        })
                        .collect();
                    if !keys.is_empty() {
                        for l in &mut g.literals {
                            l.tested = true;
                        }
                    }
                    g.env_sets.extend(keys.into_iter().flatten());
                }
                self.push_gathered(s.start(), ctx, g, None, None);
            }
        }
    }
}

/// Whether a test checks that a file exists: `os.path.exists(p)`, `os.path.isfile(p)`,
/// `p.is_file()`, `p.exists()`, `os.access(p, …)`, or an `and` with one of them.
fn tests_existence(e: &Expr) -> bool {
    match e {
        Expr::BoolOp(b) if b.op == ast::BoolOp::And => b.values.iter().any(tests_existence),
        Expr::Call(c) => callee_text(&c.func).is_some_and(|t| {
            matches!(
                t.rsplit('.').next().unwrap_or(&t),
                "exists" | "isfile" | "is_file" | "lexists" | "access"
            )
        }),
        _ => false,
    }
}

/// Whether a callee lists a directory's files (`glob.glob`, `Path.rglob`, `os.listdir`, …).
pub fn is_listing(callee: &str) -> bool {
    matches!(
        callee.rsplit('.').next().unwrap_or(callee),
        "glob" | "iglob" | "rglob" | "listdir" | "scandir" | "iterdir"
    )
}

/// Whether an expression is a listing of files ([`is_listing`]), also sorted, made a list, or
/// filtered by a comprehension over one.
fn lists_files(e: &Expr) -> bool {
    match e {
        Expr::Call(c) => callee_text(&c.func).is_some_and(|t| {
            is_listing(&t)
                || (matches!(t.as_str(), "sorted" | "list" | "tuple")
                    && c.arguments.args.first().is_some_and(lists_files))
        }),
        Expr::ListComp(l) => l.generators.first().is_some_and(|g| lists_files(&g.iter)),
        Expr::Generator(l) => l.generators.first().is_some_and(|g| lists_files(&g.iter)),
        _ => false,
    }
}

/// Whether `s` is a dotted module name, or one with `*` for parts built at run time
/// (`bartorch_cuda*` for `f"bartorch_cuda{major}"`), that starts with at least three characters of
/// a name.
pub fn is_module_pattern(s: &str) -> bool {
    let head = s.split('*').next().unwrap_or_default();
    head.len() >= 3
        && is_module_name(head.trim_end_matches(['.', '_']))
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '*')
}

/// Whether `s` is a dotted module name (`a.b_c.d`): what an import can name.
fn is_module_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

fn import_of(imp: &ast::StmtImport) -> Import {
    let mut out = Import::default();
    for a in &imp.names {
        let module = a.name.as_str().to_string();
        if !is_module_name(&module) {
            continue;
        }
        match &a.asname {
            Some(alias) => out
                .bind_modules
                .push((alias.as_str().to_string(), module.clone())),
            None => {
                let top = module.split('.').next().unwrap_or(&module).to_string();
                out.bind_modules.push((top.clone(), top));
            }
        }
        out.named.push(module.clone());
        out.modules.push(module);
    }
    out
}

fn import_from(imp: &ast::StmtImportFrom, package: Option<&str>) -> Option<Import> {
    let from = imp.module.as_ref().map_or("", |m| m.as_str());
    let dots = imp.level as usize;
    let base = if dots == 0 {
        from.to_string()
    } else {
        let mut pkg = package?.to_string();
        for _ in 1..dots {
            pkg = pkg.rsplit_once('.').map_or("", |(p, _)| p).to_string();
        }
        match (pkg.is_empty(), from.is_empty()) {
            (true, _) => from.to_string(),
            (false, true) => pkg,
            (false, false) => format!("{pkg}.{from}"),
        }
    };
    if !is_module_name(&base) || base == "__future__" {
        return None;
    }
    let mut out = Import::default();
    if dots == 0 {
        out.named.push(base.clone());
    }
    out.modules.push(base.clone());
    for a in &imp.names {
        let name = a.name.as_str();
        if name == "*" {
            out.stars.push(base.clone());
            continue;
        }
        if !is_module_name(name) {
            continue;
        }
        let alias = a.asname.as_ref().map_or(name, |x| x.as_str()).to_string();
        // `from a import b` runs `a.b` when it is a module; which it is is decided when the
        // import is resolved, against the files read.
        out.modules.push(format!("{base}.{name}"));
        out.bind_modules
            .push((alias.clone(), format!("{base}.{name}")));
        out.bind_names
            .push((alias, (base.clone(), name.to_string())));
    }
    Some(out)
}

/// The package a relative import in `path` starts from: the module itself for an
/// `__init__.py`, else its parent.
fn package_of(path: &str, module: Option<&str>) -> Option<String> {
    let m = module?;
    if path.ends_with("__init__.py") {
        Some(m.to_string())
    } else {
        Some(m.rsplit_once('.').map_or("", |(p, _)| p).to_string())
    }
}

/// Why a file is not read.
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    /// It nests deeper than [`MAX_NESTING`]: the file's fault.
    #[error("it nests {0} levels deep, more than the {MAX_NESTING} cudist reads")]
    TooDeep(usize),
    /// No thread with the stack a parse needs could be started: this machine's fault.
    #[error("no thread could be started to read it")]
    NoThread(#[source] std::io::Error),
}

/// A file's syntax tree, or why it is not read.
fn parse(text: &str) -> Result<parser::Parsed<ast::ModModule>, Unread> {
    // A file shorter than the bound cannot nest past it: no need to count.
    if text.len() > MAX_NESTING {
        let depth = nesting(text);
        if depth > MAX_NESTING {
            return Err(Unread::TooDeep(depth));
        }
    }
    Ok(parser::parse_unchecked_source(
        text,
        ast::PySourceType::Python,
    ))
}

/// Reads one file (on the calling thread: [`read_files`] gives it the stack it needs).
fn read_on_this_thread<'a>(path: &'a str, text: &str, roots: &[String]) -> File<'a> {
    let module = module_under(path, roots);
    let lines = Lines::new(text);
    let mut r = Reader {
        lines: &lines,
        package: package_of(path, module.as_deref()),
        stmts: Vec::new(),
        scope: Vec::new(),
        excluded: Vec::new(),
        guarded: Vec::new(),
        catching: Vec::new(),
        catch_sets: Vec::new(),
        defs: BTreeMap::new(),
        class_bases: BTreeMap::new(),
        class_methods: BTreeMap::new(),
        instances: BTreeMap::new(),
        class: None,
        known: HashMap::new(),
        raisers: BTreeSet::new(),
        when: Vec::new(),
        when_sets: Vec::new(),
        loop_strings: Vec::new(),
        found: Vec::new(),
        module_strings: HashMap::new(),
        constants: BTreeMap::new(),
        aliases: BTreeSet::new(),
        listings: BTreeSet::new(),
    };
    let unread = match parse(text) {
        Ok(parsed) => {
            r.raisers = parsed
                .syntax()
                .body
                .iter()
                .filter_map(|s| match s {
                    ast::Stmt::FunctionDef(f)
                        if f.body.iter().any(|b| matches!(b, ast::Stmt::Raise(_))) =>
                    {
                        Some(f.name.as_str().to_string())
                    }
                    _ => None,
                })
                .collect();
            let top = Ctx {
                scope: None,
                excluded: false,
                guarded: false,
                catching: None,
                when: None,
                found: false,
            };
            r.suite(&parsed.syntax().body, top);
            None
        }
        Err(why) => Some(why.to_string()),
    };
    let mut bindings = Bindings::default();
    let mut imports = Vec::new();
    for (si, s) in r.stmts.iter().enumerate() {
        let Some(imp) = &s.import else { continue };
        if r.excluded[si] {
            continue;
        }
        for (k, v) in &imp.bind_modules {
            imports.push((si, r.scope[si], k.clone(), v.clone()));
        }
        for (k, v) in &imp.bind_modules {
            bindings.modules.insert(k.clone(), v.clone());
        }
        for (k, v) in &imp.bind_names {
            bindings.names.insert(k.clone(), v.clone());
        }
        bindings.stars.extend(imp.stars.iter().cloned());
    }
    File {
        path,
        module,
        stmts: r.stmts,
        scope: r.scope,
        excluded: r.excluded,
        guarded: r.guarded,
        catching: r.catching,
        catch_sets: r.catch_sets,
        when: r.when,
        when_sets: r.when_sets,
        found: r.found,
        aliases: r.aliases,
        unread,
        defs: r.defs,
        class_bases: r.class_bases,
        class_methods: r.class_methods,
        instances: r.instances,
        constants: r.constants,
        bindings,
        imports,
    }
}

/// Reads files (path, text), in order, on up to four threads whose stacks hold the deepest parse
/// [`MAX_NESTING`] allows.
pub fn read_files<'a>(files: &[(&'a str, &str)]) -> Vec<File<'a>> {
    read_files_under(files, &[])
}

/// The dotted module name of a `.py` path, relative to the first of `roots` it is under (a
/// directory the package puts on `sys.path`), else as [`module_name`] says.
fn module_under(path: &str, roots: &[String]) -> Option<String> {
    roots
        .iter()
        .find_map(|r| path.strip_prefix(r.as_str())?.strip_prefix('/'))
        .map_or_else(|| module_name(path), module_name)
}

/// [`read_files`], with the modules under each of `roots` named from there: directories inside
/// the package that it puts on `sys.path` (bitblas imports `tvm` from
/// `bitblas/3rdparty/tvm/python`).
pub fn read_files_under<'a>(files: &[(&'a str, &str)], roots: &[String]) -> Vec<File<'a>> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(files.len().div_ceil(8).max(1));
    let chunk = files.len().div_ceil(workers).max(1);
    let mut out: Vec<File<'a>> = Vec::with_capacity(files.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                let h = parser_thread().spawn_scoped(s, move || {
                    part.iter()
                        .map(|(p, t)| read_on_this_thread(p, t, roots))
                        .collect::<Vec<_>>()
                });
                (part, h)
            })
            .collect();
        for (part, h) in handles {
            let read = h.map(|h| h.join());
            match read {
                Ok(Ok(files)) => out.extend(files),
                // A panic while reading is a bug, and stays one.
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                // No thread to be had: a fault of this machine, said per file, never a guess
                // at what the file holds.
                Err(e) => out.extend(part.iter().map(|(p, _)| File {
                    path: p,
                    module: module_under(p, roots),
                    stmts: Vec::new(),
                    scope: Vec::new(),
                    excluded: Vec::new(),
                    guarded: Vec::new(),
                    catching: Vec::new(),
                    catch_sets: Vec::new(),
                    when: Vec::new(),
                    when_sets: Vec::new(),
                    found: Vec::new(),
                    aliases: BTreeSet::new(),
                    unread: Some(format!("no thread could be started to read it: {e}")),
                    defs: BTreeMap::new(),
                    class_bases: BTreeMap::new(),
                    class_methods: BTreeMap::new(),
                    instances: BTreeMap::new(),
                    constants: BTreeMap::new(),
                    bindings: Bindings::default(),
                    imports: Vec::new(),
                })),
            }
        }
    });
    out
}

/// Reads one file ([`read_files`]).
pub fn read_file<'a>(path: &'a str, text: &str) -> File<'a> {
    read_files(&[(path, text)])
        .pop()
        .expect("one file read for one given")
}

/// Runs `f` on the syntax tree of `text` (and its line starts) on a thread whose stack holds the
/// deepest parse [`MAX_NESTING`] allows.
fn with_tree<T: Send>(
    text: &str,
    f: impl FnOnce(&ast::ModModule, &Lines) -> T + Send,
) -> Result<T, Unread> {
    std::thread::scope(|s| {
        let h = parser_thread()
            .spawn_scoped(s, || {
                let parsed = parse(text)?;
                Ok(f(parsed.syntax(), &Lines::new(text)))
            })
            .map_err(Unread::NoThread)?;
        h.join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The line of the first statement of a module that is not its docstring or a `from __future__`
/// import (which must stay first): where a statement can be put first. `Ok(None)` when there is
/// none; `Err` when the file is not read ([`Unread`]).
pub fn first_code_line(text: &str) -> Result<Option<usize>, Unread> {
    with_tree(text, |module, lines| {
        let mut it = module
            .body
            .iter()
            .enumerate()
            .skip_while(|(i, st)| match st {
                ast::Stmt::Expr(e) => *i == 0 && matches!(*e.value, Expr::StringLiteral(_)),
                ast::Stmt::ImportFrom(f) => f
                    .module
                    .as_ref()
                    .is_some_and(|m| m.as_str() == "__future__"),
                _ => false,
            });
        it.next().map(|(_, st)| lines.line(st.start()))
    })
}

/// A string, or a tuple or list of strings, as strings.
fn strings_literal(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Tuple(_) | Expr::List(_) => strings_of(e),
        _ => string_value(e).map(|s| vec![s]),
    }
}

/// Literal data a module writes: its calls of one function with literal keyword arguments, and
/// its module-level tables of strings.
#[derive(Debug, Default)]
pub struct LiteralData {
    /// Per call of the function asked for, its keyword arguments whose value is a string or a
    /// tuple or list of strings.
    pub calls: Vec<BTreeMap<String, Vec<String>>>,
    /// Module-level assignments `NAME = {"key": ("a", "b"), …}` (also `NAME = OTHER | {…}` of
    /// tables before it), by name: each key with its strings.
    pub tables: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// Reads the literal data of a module ([`LiteralData`]): the calls of `callee` (as written,
/// `DescriptorSpec`) and the module-level tables. Nothing is run.
pub fn literal_data(text: &str, callee: &str) -> Result<LiteralData, Unread> {
    struct Calls<'c> {
        callee: &'c str,
        out: Vec<BTreeMap<String, Vec<String>>>,
    }
    impl<'a> Visitor<'a> for Calls<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                if callee_text(&c.func).as_deref() == Some(self.callee) {
                    let kw = c
                        .arguments
                        .keywords
                        .iter()
                        .filter_map(|k| {
                            Some((
                                k.arg.as_ref()?.as_str().to_string(),
                                strings_literal(&k.value)?,
                            ))
                        })
                        .collect();
                    self.out.push(kw);
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    fn table(
        e: &Expr,
        known: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    ) -> Option<BTreeMap<String, Vec<String>>> {
        match e {
            Expr::Dict(d) => {
                let mut out = BTreeMap::new();
                for item in &d.items {
                    let key = string_value(item.key.as_ref()?)?;
                    out.insert(key, strings_literal(&item.value)?);
                }
                Some(out)
            }
            Expr::Name(n) => known.get(n.id.as_str()).cloned(),
            Expr::BinOp(b) if b.op == ast::Operator::BitOr => {
                let mut left = table(&b.left, known)?;
                left.extend(table(&b.right, known)?);
                Some(left)
            }
            _ => None,
        }
    }
    with_tree(text, |module, _| {
        let mut calls = Calls {
            callee,
            out: Vec::new(),
        };
        visitor::walk_body(&mut calls, &module.body);
        let mut tables = BTreeMap::new();
        for st in &module.body {
            let (target, value) = match st {
                ast::Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], &*a.value),
                ast::Stmt::AnnAssign(a) => match &a.value {
                    Some(v) => (&*a.target, &**v),
                    None => continue,
                },
                _ => continue,
            };
            let Expr::Name(n) = target else { continue };
            if let Some(t) = table(value, &tables) {
                tables.insert(n.id.to_string(), t);
            }
        }
        LiteralData {
            calls: calls.out,
            tables,
        }
    })
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

/// The functions a name in a module stands for, through re-exports.
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
    // Calling a class runs its `__init__`.
    if let Some(&init) = files[fi]
        .class_methods
        .get(name)
        .and_then(|m| m.get("__init__"))
    {
        out.push((fi, Some(init)));
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

/// The class a name stands for in file `fi` (`Config`, or one an import binds: `from .config
/// import Config`), as (its file, its name); none for what is not a class of the files read.
fn class_of(
    files: &[File],
    bindings: &[Bindings],
    by_module: &HashMap<&str, usize>,
    fi: usize,
    name: &str,
    depth: usize,
) -> Option<(usize, String)> {
    if name.contains('.') {
        return None;
    }
    if files[fi].class_methods.contains_key(name) || files[fi].class_bases.contains_key(name) {
        return Some((fi, name.to_string()));
    }
    if depth == 0 {
        return None;
    }
    let (m, n) = bindings[fi].names.get(name)?;
    let gi = *by_module.get(m.as_str())?;
    class_of(files, bindings, by_module, gi, n, depth - 1)
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
    // Each file's bindings, keeping only module bindings that are modules of the files read or
    // outside them (`from a import f` binds f to a function when a.f is no module read). An
    // import inside a function binds only there, but a name means one thing in one file nearly
    // always.
    let bindings: Vec<Bindings> = files
        .iter()
        .map(|f| Bindings {
            modules: f
                .bindings
                .modules
                .iter()
                .filter(|(_, m)| {
                    by_module.contains_key(m.as_str())
                        || !tops.contains(m.split('.').next().unwrap_or(m))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            names: f.bindings.names.clone(),
            stars: f.bindings.stars.clone(),
        })
        .collect();
    // Per scope: the scopes it runs (functions it calls, modules it imports), and external
    // imports.
    let mut edges: HashMap<Scope, Vec<Scope>> = HashMap::new();
    let mut external: HashMap<Scope, Vec<(String, String)>> = HashMap::new();
    // Every module an import statement or `importlib.import_module("…")` names: (module, scope,
    // `file:line`, guarded).
    let mut sites: Vec<(String, Scope, String, bool)> = Vec::new();
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
    for (fi, f) in files.iter().enumerate() {
        let b = &bindings[fi];
        for (si, s) in f.stmts.iter().enumerate() {
            if f.excluded[si] {
                continue;
            }
            let scope = (fi, f.scope[si]);
            let at = || format!("{}:{}", f.path, s.number);
            if let Some(imp) = &s.import {
                for m in &imp.modules {
                    sites.push((m.clone(), scope, at(), f.guarded[si]));
                    run_module(m, edges.entry(scope).or_default());
                }
                for m in &imp.named {
                    let top = m.split('.').next().unwrap_or(m);
                    let seen = external
                        .get(&scope)
                        .is_some_and(|e| e.iter().any(|(t, _)| t == top));
                    if !tops.contains(top) && !seen {
                        external
                            .entry(scope)
                            .or_default()
                            .push((top.to_string(), at()));
                    }
                }
            }
            let mut targets = Vec::new();
            for call in s.calls.iter().filter(|c| !c.deferred) {
                let called = call.callee.as_str();
                let (qual, name) = called.rsplit_once('.').unwrap_or(("", called));
                // `importlib.import_module("a.b")`, `__import__("a")`.
                if name == "import_module" || called == "__import__" {
                    // A relative name (`import_module("._ext", __name__)`), against the
                    // package the file is in, or is (its `__init__.py`).
                    let relative = call
                        .arg
                        .as_deref()
                        .filter(|m| name == "import_module" && m.starts_with('.'))
                        .and_then(|m| {
                            let own = f.module.as_deref()?;
                            let package = if f.path.ends_with("__init__.py") {
                                own
                            } else {
                                own.rsplit_once('.').map_or("", |(p, _)| p)
                            };
                            let rest = m.trim_start_matches('.');
                            let up = m.len() - rest.len() - 1;
                            let mut base: Vec<&str> = package.split('.').collect();
                            if up >= base.len() || rest.is_empty() {
                                return None;
                            }
                            base.truncate(base.len() - up);
                            Some(format!("{}.{rest}", base.join(".")))
                        });
                    if let Some(m) = relative
                        .as_deref()
                        .or(call.arg.as_deref())
                        .filter(|m| is_module_name(m))
                    {
                        sites.push((m.to_string(), scope, at(), f.guarded[si]));
                        run_module(m, &mut targets);
                    }
                    // A name built from a literal start: every module it can be
                    // ([`imported_at`]), none of which runs here as far as the reading goes.
                    if let Some(m) = call
                        .arg
                        .as_deref()
                        .and_then(|m| m.strip_suffix('*'))
                        .filter(|m| m.len() >= 3 && is_module_name(m.trim_end_matches(['.', '_'])))
                    {
                        sites.push((format!("{m}*"), scope, at(), f.guarded[si]));
                    }
                    continue;
                }
                match qual {
                    "" => resolve(files, &bindings, &by_module, fi, name, 4, &mut targets),
                    "self" | "cls" => {
                        if let Some(ds) = f.defs.get(name) {
                            targets.extend(ds.iter().map(|d| (fi, Some(*d))));
                        }
                    }
                    // A method of an object the module made from a class (`lib.register()`
                    // after `lib = CuPyNumericLib("x")`).
                    q if f.instances.contains_key(q) => {
                        if let Some((gi, class)) =
                            class_of(files, &bindings, &by_module, fi, &f.instances[q], 4)
                        {
                            if let Some(&d) = files[gi]
                                .class_methods
                                .get(&class)
                                .and_then(|m| m.get(name))
                            {
                                targets.push((gi, Some(d)));
                            }
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
                edges.entry(scope).or_default().extend(targets);
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
    // What is imported: the top-level modules, and in a namespace package (a top-level
    // directory with no `__init__.py`: `nvidia/`) the packages below it that have one
    // (`nvidia.nvcomp`), which is what users import. So is a package whose `__init__.py` does
    // nothing but declare itself one (vc6-cu12's `vnova/__init__.py`, a comment;
    // `pkgutil.extend_path`): importing it alone runs nothing of the packages below.
    let inert = |fi: usize| {
        files[fi].stmts.iter().all(|s| {
            s.def.is_none()
                && s.import.is_none()
                && s.env_sets.is_empty()
                && s.calls.iter().all(|c| {
                    let name = c.callee.rsplit('.').next().unwrap_or(&c.callee);
                    matches!(name, "extend_path" | "declare_namespace" | "__import__")
                })
        })
    };
    let in_namespace = |m: &str, fi: usize| {
        files[fi].path.ends_with("__init__.py")
            && m.match_indices('.')
                .all(|(i, _)| by_module.get(&m[..i]).is_none_or(|&pi| inert(pi)))
    };
    let mut todo: Vec<Scope> = by_module
        .iter()
        .filter(|(m, fi)| !m.contains('.') || in_namespace(m, **fi))
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
            let function = scope.1.and_then(|d| files[scope.0].stmts[d].def.clone());
            ImportedAt::OnCall {
                at,
                function,
                more: 0,
            }
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

/// How module `m` is imported, from `modules` ([`Reach::modules`]): by its name, else by a name
/// built from a literal start that `m` begins with (`mooncake.pg*` for `mooncake.pg_2_12_0`).
pub fn imported_at<'a>(
    modules: &'a BTreeMap<String, ImportedAt>,
    m: &str,
) -> Option<&'a ImportedAt> {
    modules.get(m).or_else(|| {
        modules
            .iter()
            .filter_map(|(k, v)| Some((k.strip_suffix('*')?, v)))
            .filter(|(start, _)| m.starts_with(start) && m.len() > start.len())
            .max_by_key(|(start, _)| start.len())
            .map(|(_, v)| v)
    })
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
        /// How many other imports of it there are, none of which runs at import (said as
        /// `(+N more)` after the first).
        more: usize,
    },
}

/// Adds the modules of another package's reach to `into`, keeping the stronger reach of each.
pub fn merge_modules(into: &mut BTreeMap<String, ImportedAt>, from: BTreeMap<String, ImportedAt>) {
    for (m, how) in from {
        match (into.get_mut(&m), &how) {
            // Another import of it that does not run at import either: counted.
            (
                Some(ImportedAt::OnCall {
                    at: first, more, ..
                }),
                ImportedAt::OnCall { at, more: also, .. },
            ) => {
                if first != at {
                    *more += 1 + also;
                }
            }
            (Some(old), _) if old.rank() >= how.rank() => {}
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

    /// (line, callee) of every call in a file, in order.
    fn calls(f: &File) -> Vec<(usize, String)> {
        f.stmts
            .iter()
            .flat_map(|s| s.calls.iter().map(move |c| (s.number, c.callee.clone())))
            .collect()
    }

    /// The lines of a file's statements that a failed import cannot escape.
    fn guarded_lines(f: &File) -> Vec<usize> {
        f.stmts
            .iter()
            .zip(&f.guarded)
            .filter(|(_, g)| **g)
            .map(|(s, _)| s.number)
            .collect()
    }

    /// Values of the literals of a file that are not only tested against.
    fn named(f: &File) -> Vec<String> {
        f.stmts
            .iter()
            .flat_map(|s| s.literals.iter().filter(|l| !l.tested))
            .map(|l| l.value.clone())
            .collect()
    }

    #[test]
    fn strings_and_comments_are_no_code() {
        // A string continued by a backslash, a `(` in a string and in a comment, a string over
        // several lines, a line continued by a backslash.
        let text = "@dep(\n    \"a.so \\\n    use f(x) instead.\",\n)\ndef g():\n    pass\nh()\nx = f(\n    \"a(b.so\",  # c(\n    'd.so', 'e')\ns = \"\"\"doc.so\ng(1)\n\"\"\"\ny = 1 + \\\n    h(2)\n";
        let f = read_file("p/__init__.py", text);
        assert_eq!(
            calls(&f),
            vec![
                (1, "dep".to_string()),
                (7, "h".to_string()),
                (8, "f".to_string()),
                (14, "h".to_string())
            ]
        );
        assert_eq!(f.stmts[0].def.as_deref(), Some("g"));
        assert_eq!(
            named(&f),
            vec![
                "a.so     use f(x) instead.",
                "a(b.so",
                "d.so",
                "doc.so\ng(1)\n"
            ]
        );
        let x = f.stmts.iter().find(|s| s.number == 8).unwrap();
        let lines: Vec<usize> = x.literals.iter().map(|l| l.line).collect();
        assert_eq!(lines, vec![9, 10]);
    }

    #[test]
    fn what_each_call_is_called_on() {
        let f = read_file("p/__init__.py", "a.b.c(x) + self.d() + g().h()\nf()()\n");
        let got: Vec<String> = calls(&f).into_iter().map(|(_, c)| c).collect();
        assert_eq!(got, vec!["a.b.c", "self.d", ".h", "g", "f"]);
    }

    #[test]
    fn docstrings_and_tests_name_nothing() {
        let text = "\"\"\"libdoc.so.1\"\"\"\nif \"libcudart.so\" in maps or lib == 'libx.so.2':\n    pass\nif n.startswith(\"liby.so\"):\n    pass\nCDLL(f\"libz.so.{v}\")\nCDLL(f\"liba.so.1\")\ndef f():\n    \"\"\"libb.so\"\"\"\n    x = (lambda: CDLL(\"libc.so.3\"))\n";
        let f = read_file("p/__init__.py", text);
        // An f-string with fields is a pattern.
        assert_eq!(named(&f), vec!["libz.so.*", "liba.so.1", "libc.so.3"]);
        // The lambda's call runs when the lambda is called, never where it is written.
        let lambda: Vec<bool> = f
            .stmts
            .iter()
            .flat_map(|s| &s.calls)
            .map(|c| c.deferred)
            .collect();
        assert_eq!(lambda, vec![false, false, false, true]);
        // A call inside an f-string's field runs.
        let f = read_file("p/__init__.py", "x = f\"{load()}\"\n");
        assert_eq!(calls(&f), vec![(1, "load".to_string())]);
    }

    /// Whether the body of `if COND:` is excluded.
    fn never_runs(cond: &str) -> bool {
        let f = read_file("p/__init__.py", &format!("if {cond}:\n    x()\n"));
        let body = f.stmts.iter().position(|s| s.number == 2).expect(cond);
        f.excluded[body]
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
            "os.getenv(\"X\", \"0\") in (\"1\", \"true\")",
            "os.getenv(\"X\", \"false\").lower() != \"false\"",
            "os.environ.get(\"X\") is not None",
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
            "os.getenv(\"X\", default)",
        ] {
            assert!(!never_runs(cond), "{cond}");
        }
    }

    #[test]
    fn branches_that_never_run_on_linux() {
        let text = "if sys.platform == \"win32\":\n    def a():\n        load()\n    a()\nelse:\n    b()\nif platform.system() != \"Windows\":\n    c()\nelse:\n    d()\nif TYPE_CHECKING:\n    import x\nif os.name == 'nt' and y:\n    e()\nif __name__ == \"__main__\":\n    main()\nif sys.platform.startswith(\"win\") or IS_MACOS:\n    g()\nelif sys.platform in (\"linux\", \"linux2\"):\n    h()\nelif z:\n    i()\nelse:\n    j()\n";
        let f = read_file("p/__init__.py", text);
        let excluded: Vec<(usize, bool)> = f
            .stmts
            .iter()
            .zip(&f.excluded)
            .map(|(s, e)| (s.number, *e))
            .collect();
        assert_eq!(
            excluded,
            // Statements that call, import or define (conditions without a call are not kept).
            vec![
                (2, true),
                (3, true),
                (4, true),
                (6, false),
                (7, false),
                (8, false),
                (10, true),
                (12, true),
                (14, true),
                (16, true),
                (17, false),
                (18, true),
                (20, false),
                // After a test that holds on Linux, no `elif` or `else` runs.
                (22, true),
                (24, true)
            ]
        );
        assert_eq!(f.scope[1], Some(0));
    }

    #[test]
    fn a_name_assigned_a_platform_test_is_that_test() {
        let text = "import platform\ndef f(msvc):\n    is_windows = platform.system() == \"Windows\"\n    if is_windows and msvc:\n        a()\n    if not is_windows:\n        b()\n    is_windows = other()\n    if is_windows:\n        c()\n";
        let f = read_file("p/__init__.py", text);
        let excluded = |line: usize| {
            let i = f.stmts.iter().position(|s| s.number == line).unwrap();
            f.excluded[i]
        };
        assert!(excluded(5) && !excluded(7) && !excluded(10));
    }

    #[test]
    fn try_bodies_that_catch_a_failed_import() {
        let text = "try:\n    import a\n    if x:\n        import b\nexcept (ValueError, ImportError) as e:\n    import c\nimport d\ntry:\n    import e\nexcept ValueError:\n    pass\nexcept:\n    pass\ntry:\n    import f\nexcept KeyError:\n    pass\nfinally:\n    pass\ntry:\n    import g\nexcept builtins.ModuleNotFoundError:\n    pass\nwith contextlib.suppress(ImportError):\n    import h\nwith suppress(KeyError):\n    import i\ntry:\n    import j\nexcept* ImportError:\n    pass\n";
        let f = read_file("p/__init__.py", text);
        let guarded = guarded_lines(&f);
        // The handler's own body and code after the `try` are not guarded; a bare `except:`
        // after another handler is.
        assert_eq!(guarded, vec![2, 4, 9, 21, 25, 29]);
        // A handler that raises again catches nothing.
        let f = read_file(
            "p/__init__.py",
            "try:\n    import a\nexcept ImportError as e:\n    if x:\n        raise RuntimeError() from e\ntry:\n    import b\nexcept ImportError:\n    def f():\n        raise KeyError\n",
        );
        let guarded = guarded_lines(&f);
        assert_eq!(guarded, vec![7]);
    }

    #[test]
    fn statements_that_run_only_where_a_file_was_found() {
        // Each shape of "found first": an existence test around it, a listing tested, the rest
        // of a loop after `if not exists: continue`, a loop over a listing, the `else` of a
        // negated test. A test of something else, and code after the `if`, are not.
        let text = "import os, glob, ctypes
def a(p):
    if os.path.exists(p):
        ctypes.CDLL(p)
    ctypes.CDLL('x.so')
def b(d):
    found = glob.glob(d + '/libx.so.*')
    if found:
        ctypes.CDLL(found[0])
    if not found:
        found = sorted(glob.glob('y/libx.so.*'))
    if found and x:
        ctypes.CDLL(found[0])
def c(dirs):
    for d in dirs:
        p = os.path.join(d, 'libx.so.1')
        if not os.path.exists(p):
            continue
        ctypes.CDLL(p)
def e(d):
    for n in os.listdir(d):
        ctypes.CDLL(n)
    if not pathlib.Path(d).is_file():
        pass
    else:
        ctypes.CDLL(d)
def f(p):
    if p.endswith('.so'):
        ctypes.CDLL(p)
    found = glob.glob(p)
    found = ['a']
    if found:
        ctypes.CDLL(p)
    handles = [ctypes.CDLL(str(p)) for d in dirs if (p := Path(d) / 'libz3.so').is_file()]
    handles = [ctypes.CDLL(str(p)) for p in paths if p.endswith('.so')]
def g(p):
    if os.path.exists(p):
        ctypes.CDLL(p)
    else:
        raise ImportError(p)
    if not os.path.isfile(p):
        raise ImportError(p)
    ctypes.CDLL(p)
";
        let f = read_file("p/__init__.py", text);
        let found: Vec<usize> = (0..f.stmts.len())
            .filter(|&i| f.found_first(i) && !f.stmts[i].calls.is_empty())
            .map(|i| f.stmts[i].number)
            .collect();
        assert_eq!(found, vec![4, 9, 13, 19, 22, 26]);
        // In a comprehension that keeps the files found, the load is of a file found.
        let in_comprehension = |line: usize| {
            let i = (0..f.stmts.len())
                .find(|&i| f.stmts[i].number == line)
                .unwrap();
            f.stmts[i]
                .calls
                .iter()
                .find(|c| c.callee == "ctypes.CDLL")
                .unwrap()
                .found
        };
        assert!(in_comprehension(34));
        assert!(!in_comprehension(35));
    }

    #[test]
    fn a_syntax_error_leaves_the_rest_readable() {
        let text = "import ctypes\ndef broken(:\n    pass\nprint 'py2'\nctypes.CDLL(\"libcudart.so.12\")\n";
        let f = read_file("p/__init__.py", text);
        assert!(f.unread.is_none());
        assert!(
            calls(&f).contains(&(5, "ctypes.CDLL".to_string())),
            "{:?}",
            calls(&f)
        );
    }

    #[test]
    fn imports_name_modules_only() {
        let f = read_file(
            "p/__init__.py",
            "import /etc, os\nfrom ../x import y\nimport a.b as c\nfrom .. import z\n",
        );
        let names: Vec<String> = f
            .stmts
            .iter()
            .filter_map(|s| s.import.as_ref())
            .flat_map(|i| i.modules.clone())
            .collect();
        assert!(names.iter().all(|m| is_module_name(m)), "{names:?}");
        assert!(names.contains(&"os".to_string()) && names.contains(&"a.b".to_string()));
        assert_eq!(f.canonical("c.d", f.stmts.len()), "a.b.d");
    }

    #[test]
    fn aliases_resolve_to_what_they_name() {
        let text = "from cuda.pathfinder import load_nvidia_dynamic_lib as _load\nimport ctypes as C\nfrom . import sub as s\nimport libx\nlibx.load_library()\ndef f():\n    libx.go()\nfrom ._lib import libx\n";
        let f = read_file("pkg/__init__.py", text);
        let end = f.stmts.len();
        assert_eq!(
            f.canonical("_load", end),
            "cuda.pathfinder.load_nvidia_dynamic_lib"
        );
        assert_eq!(
            f.canonical("C.cdll.LoadLibrary", end),
            "ctypes.cdll.LoadLibrary"
        );
        assert_eq!(f.canonical("s.go", end), "pkg.sub.go");
        assert_eq!(f.canonical("other.x", end), "other.x");
        // A name rebound later: module code before the rebinding sees the first import, a
        // function the last.
        let at = |line: usize| f.stmts.iter().position(|s| s.number == line).unwrap();
        assert_eq!(f.canonical("libx.load_library", at(5)), "libx.load_library");
        assert_eq!(f.canonical("libx.go", at(7)), "pkg._lib.libx.go");
        assert_eq!(f.canonical("C.CDLL", 0), "C.CDLL", "not bound yet");
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

    /// A package whose `__init__.py` only declares itself a namespace (a comment; pkgutil's
    /// `extend_path`) runs nothing of the packages below it: those are what users import, as in
    /// a directory with no `__init__.py` (vc6-cu12's `vnova/vc6_cu12`). A package with code of
    /// its own is the import.
    #[test]
    fn packages_below_an_inert_package_are_imported() {
        let files = read_files(&[
            ("vnova/__init__.py", "# Namespace package for vnova\n"),
            ("vnova/codec/__init__.py", "from . import fast\n"),
            ("vnova/codec/fast.py", "X = 1\n"),
            (
                "ns/__init__.py",
                "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n",
            ),
            ("ns/sub/__init__.py", "\"\"\"Doc.\"\"\"\nimport json\n"),
            ("real/__init__.py", "import os\n"),
            ("real/sub/__init__.py", "import json\n"),
        ]);
        let r = reach(&files);
        let reached = |path: &str| {
            let fi = files.iter().position(|f| f.path == path).unwrap();
            r.reached.contains(&(fi, None))
        };
        assert!(reached("vnova/codec/__init__.py") && reached("vnova/codec/fast.py"));
        assert!(reached("ns/sub/__init__.py"));
        assert!(
            !reached("real/sub/__init__.py"),
            "real's import runs code of its own"
        );
    }

    #[test]
    fn what_an_import_runs() {
        let init = "from .a import *\nimport pkg.b as bb\nfrom pkg import c\nimport torch\nbb.go()\nc.later\n";
        let a = "def f():\n    g()\ndef g():\n    pass\nf()\n";
        let b = "import numpy\ndef go():\n    helper()\ndef helper():\n    pass\ndef unused():\n    pass\n";
        let c = "import os\ndef lazy():\n    import scipy\n";
        let d = "def never():\n    pass\n";
        let files = read_files(&[
            ("pkg/__init__.py", init),
            ("pkg/a.py", a),
            ("pkg/b.py", b),
            ("pkg/c.py", c),
            ("pkg/d.py", d),
        ]);
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
        assert_eq!(
            r.modules.get("scipy"),
            Some(&ImportedAt::OnCall {
                at: "pkg/c.py:3".into(),
                function: Some("lazy".into()),
                more: 0,
            })
        );
    }

    /// Whether the import reaches the statement on `line` of file `fi`.
    fn reached_line(files: &[File], r: &Reach, fi: usize, line: usize) -> bool {
        let at = files[fi]
            .stmts
            .iter()
            .position(|s| s.number == line)
            .unwrap();
        r.reached.contains(&(fi, Some(at)))
    }

    /// Calling a class runs its `__init__`, and the methods it calls on `self`; a class that is
    /// only defined runs none of them, and a function nested in a method is no `__init__`.
    #[test]
    fn calling_a_class_runs_its_init() {
        let init = "from .config import Config\ncfg = Config()\n";
        let config = "class Config:\n    def __init__(self):\n        self.setup()\n        def __init__():\n            pass\n    def setup(self):\n        find()\n    def other(self):\n        pass\nclass Unused:\n    def __init__(self):\n        pass\ndef find():\n    pass\n";
        let files = read_files(&[("pkg/__init__.py", init), ("pkg/config.py", config)]);
        let r = reach(&files);
        let at = |line: usize| reached_line(&files, &r, 1, line);
        assert!(at(2), "Config.__init__");
        assert!(at(6) && at(13), "self.setup() and what it calls");
        assert!(!at(8) && !at(11), "other(), Unused.__init__");
        assert_eq!(
            files[1]
                .class_methods
                .get("Config")
                .and_then(|m| m.get("__init__"))
                .map(|&i| files[1].stmts[i].number),
            Some(2)
        );
    }

    /// A method called on an object module code made from a class (`lib.register()` after
    /// `lib = Lib("x")`, cupynumeric's shape) runs that method; one never called does not.
    #[test]
    fn a_method_called_on_a_module_level_object_runs() {
        let init = "from .lib import Lib\nlib = Lib('x')\nlib.register()\n";
        let libpy = "class Lib:\n    def __init__(self, name):\n        self.name = name\n    def register(self):\n        load()\n    def unused(self):\n        pass\ndef load():\n    pass\n";
        let files = read_files(&[("pkg/__init__.py", init), ("pkg/lib.py", libpy)]);
        let r = reach(&files);
        let at = |line: usize| reached_line(&files, &r, 1, line);
        assert!(at(4) && at(8), "register() and what it calls");
        assert!(!at(6), "unused()");
    }

    /// Hostile nesting of every kind the parser recurses on.
    fn nested(kind: &str, n: usize) -> String {
        match kind {
            "paren" => format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
            "subscript" => format!("x = {}1{}\n", "f[".repeat(n), "]".repeat(n)),
            "dict" => format!("x = {}1{}\n", "{1:".repeat(n), "}".repeat(n)),
            "walrus" => format!("x = {}1{}\n", "(a:=".repeat(n), ")".repeat(n)),
            "fstring" => format!("x = {}1{}\n", "f'{".repeat(n), "}'".repeat(n)),
            "minus" => format!("x = {}1\n", "-".repeat(n)),
            "not" => format!("x = {}1\n", "not ".repeat(n)),
            "lambda" => format!("x = {}1\n", "lambda: ".repeat(n)),
            "power" => format!("x = 1{}\n", "**1".repeat(n)),
            "ifelse" => format!("x = 1{}\n", " if 1 else 1".repeat(n)),
            "calls" => format!("x = f{}\n", "()".repeat(n)),
            "attributes" => format!("x = f{}\n", ".a".repeat(n)),
            "sum" => format!("x = 1{}\n", "+1".repeat(n)),
            "blocks" => {
                let mut s = String::new();
                for i in 0..n {
                    s.push_str(&" ".repeat(i));
                    s.push_str("if x():\n");
                }
                s.push_str(&" ".repeat(n));
                s.push_str("f()\n");
                s
            }
            _ => unreachable!(),
        }
    }

    const KINDS: &[&str] = &[
        "paren",
        "subscript",
        "dict",
        "walrus",
        "fstring",
        "minus",
        "not",
        "lambda",
        "power",
        "ifelse",
        "calls",
        "attributes",
        "sum",
        "blocks",
    ];

    #[test]
    fn nesting_past_the_bound_is_not_read_and_within_it_is() {
        // Blocks nest by indentation, which 1 MiB holds ~1,450 levels of: within the bound.
        let f = read_file("p/__init__.py", &nested("blocks", 1440));
        assert!(f.unread.is_none() && f.stmts.len() == 1441);
        for kind in KINDS.iter().filter(|k| **k != "blocks") {
            // A file of up to 1 MiB (the most read) of one kind: refused, never a crash.
            let unit = nested(kind, 1).len();
            let n = if *kind == "blocks" {
                1400
            } else {
                (1 << 20) / unit
            };
            let text = nested(kind, n);
            let f = read_file("p/__init__.py", &text);
            assert!(
                f.unread.as_deref().is_some_and(|w| w.contains("nests")),
                "{kind}: {:?}",
                f.unread
            );
            // Just within the bound: read, on the stack the parse gets.
            let mut n = MAX_NESTING;
            while nesting(&nested(kind, n)) > MAX_NESTING {
                n = n * 9 / 10;
            }
            let text = nested(kind, n) + "f()\n";
            let f = read_file("p/__init__.py", &text);
            assert!(f.unread.is_none(), "{kind} at {n}: {:?}", f.unread);
            assert!(!f.stmts.is_empty(), "{kind}");
        }
    }

    #[test]
    fn literal_data_of_a_module() {
        let text = "X = (\n    Spec(name=\"cublas\", linux_sonames=(\"libcublas.so.13\",), n=f(1)),\n    Spec(name='nccl', dependencies=['a', 'b']),\n)\nA = {\"a\": (\"x\", \"y\"), \"b\": \"z\"}\nB: dict = A | {\"c\": ()}\nC = {k: v for k, v in A.items()}\n";
        let d = literal_data(text, "Spec").unwrap();
        assert_eq!(d.calls.len(), 2);
        assert_eq!(d.calls[0]["linux_sonames"], vec!["libcublas.so.13"]);
        assert!(!d.calls[0].contains_key("n"));
        assert_eq!(d.calls[1]["dependencies"], vec!["a", "b"]);
        assert_eq!(d.tables["A"]["a"], vec!["x", "y"]);
        assert_eq!(d.tables["B"].len(), 3);
        assert!(!d.tables.contains_key("C"));
    }

    #[test]
    fn the_first_line_a_statement_can_go_before() {
        let t = "\"\"\"Doc\nstring.\"\"\"\n# c\nfrom __future__ import (\n    annotations,\n)\n\n@deco\ndef f(): pass\n";
        assert_eq!(first_code_line(t).unwrap(), Some(8));
        assert_eq!(first_code_line("'''x'''\n").unwrap(), None);
        assert_eq!(first_code_line("x = 1\n'''late'''\n").unwrap(), Some(1));
    }
}
