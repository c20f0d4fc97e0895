//! What `import NAME` really does in the target interpreter: the at-import truth doctor's verdict
//! starts from ([`trace_import`]).
//!
//! The interpreter is started as the user would start it (site-packages, `.pth` files), with an
//! audit hook that records every `ctypes.dlopen` event (PEP 578: the name asked for, and the Python
//! frames that asked), then imports the module and reports, as one JSON document on a duplicate of
//! its standard output (the package's own prints go to standard error):
//! - the exception the import raised, if any;
//! - every shared object the process mapped during the import, read from `/proc/self/maps` before
//!   and after (what the loader loaded for extension modules' `DT_NEEDED`, what ctypes and native
//!   code dlopened, in the order first mapped);
//! - the `ctypes.dlopen` calls, each with the package frame that made it.
//!
//! This runs the package's code, as `python -c "import NAME"` does: doctor's `--static` judges from
//! the files alone. The run is bounded: a time limit (the process group is killed past it), at
//! most [`MAX_OUTPUT`] bytes of report and the last [`STDERR_TAIL`] bytes of standard error kept.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Result, ResultExt};

/// The most bytes of the report read from the interpreter.
pub const MAX_OUTPUT: u64 = 16 << 20;
/// The bytes kept from the end of the interpreter's standard error, for a run that crashed.
pub const STDERR_TAIL: usize = 4096;
/// The most `ctypes.dlopen` calls recorded.
const MAX_EVENTS: usize = 10_000;

/// The script the interpreter runs; `sys.argv[1]` is the module, `sys.argv[2]` the most events.
/// Frames of ctypes itself and of the import machinery are skipped when naming who called dlopen;
/// up to six frames are kept, innermost first.
const SCRIPT: &str = r#"
import importlib, json, os, sys
_out = os.fdopen(os.dup(1), 'w')
os.dup2(2, 1)
_name, _max = sys.argv[1], int(sys.argv[2])
# Lines as it goes, each flushed: the interpreter first, then each load about to be made (an
# extension module, a ctypes dlopen), then the report: an import that kills the interpreter (an
# abort in a library's start-up code) still says what it was loading, and what came before.
_out.write(json.dumps({'python': sys.version.split()[0]}) + '\n')
_out.flush()
_steps = [0]
def _step(kind, what):
    if _steps[0] < _max:
        _steps[0] += 1
        _out.write(json.dumps({'step': kind, 'what': str(what)[:1000]}) + '\n')
        _out.flush()
_events = []
_own = set()
def _frames():
    return _frames_from(3)
def _frames_from(depth):
    f, out = sys._getframe(depth), []
    while f is not None and len(out) < 6:
        fn = f.f_code.co_filename
        if not (fn.endswith(os.sep + 'ctypes' + os.sep + '__init__.py') or fn.startswith('<frozen')
                or f.f_code in _own):
            out.append([fn, f.f_lineno])
        f = f.f_back
    return out
def _hook(ev, args):
    if ev == 'ctypes.dlopen' and len(_events) < _max:
        _events.append({'name': None if not args or args[0] is None else str(args[0]), 'frames': _frames()})
# ctypes is imported before the hook: its own `PyDLL(None)` is not the package's.
import ctypes as _ct
sys.addaudithook(_hook)
# ctypes' CDLL opens through the module's `_dlopen`: wrapped, a load that fails records its error
# (a package that catches the OSError goes on without the library), and a probe with RTLD_NOLOAD
# (is it loaded already?) is marked as one, since it loads nothing.
_real_dlopen = _ct._dlopen
def _dlopen(name, mode=_ct.DEFAULT_MODE, *rest):
    n = len(_events)
    def mark(key, value):
        # The audit event of this call, raised inside the real dlopen.
        if len(_events) > n:
            _events[n][key] = value
    if mode & getattr(os, 'RTLD_NOLOAD', 4):
        try:
            return _real_dlopen(name, mode, *rest)
        finally:
            mark('probe', True)
    _step('dlopen', name)
    try:
        return _real_dlopen(name, mode, *rest)
    except OSError as e:
        mark('error', str(e)[:1000])
        raise
_ct._dlopen = _dlopen
_own.add(_dlopen.__code__)
# ctypes.util.find_library(name) looks for lib<name> where the system keeps libraries (its
# cache, LD_LIBRARY_PATH, the compiler's paths), never in a CUDA wheel: each call is recorded with
# what it found, and a package that found nothing goes on without the library.
import ctypes.util as _ctu
_real_find = _ctu.find_library
_finds = []
def _find_library(name):
    found = _real_find(name)
    if len(_finds) < _max:
        _finds.append({'name': str(name), 'found': found, 'frames': _frames_from(1)})
    return found
_ctu.find_library = _find_library
_own.add(_find_library.__code__)
# An extension module that fails to load (a library it needs is missing, a symbol it needs is
# not in the one loaded) raises ImportError from its loader's create_module: recorded there,
# since a package that catches it goes on without the module (and says so, if at all, in a
# warning).
import importlib.machinery as _im
_ext_failures = []
_real_create = _im.ExtensionFileLoader.create_module
def _create_module(self, spec):
    _step('module', getattr(self, 'path', ''))
    try:
        return _real_create(self, spec)
    except ImportError as e:
        if len(_ext_failures) < _max:
            _ext_failures.append({'path': str(getattr(self, 'path', '')), 'error': str(e)[:1000]})
        raise
_im.ExtensionFileLoader.create_module = _create_module
_own.add(_create_module.__code__)
def _maps():
    seen, out = set(), []
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                parts = line.rstrip('\n').split(None, 5)
                if len(parts) == 6 and parts[5].startswith('/') and parts[5] not in seen:
                    seen.add(parts[5])
                    out.append(parts[5])
    except OSError:
        pass
    return out
_before = set(_maps())
_error = None
import time
_t = time.monotonic()
try:
    importlib.import_module(_name)
except BaseException as e:
    _error = {'type': type(e).__name__, 'message': str(e)[:4000]}
_t = time.monotonic() - _t
_out.write(json.dumps({'python': sys.version.split()[0], 'executable': sys.executable, 'error': _error,
                       'mapped': [p for p in _maps() if p not in _before], 'dlopens': _events, 'finds': _finds,
                       'ext_failures': _ext_failures,
                       'seconds': _t}) + '\n')
_out.flush()
os._exit(0)
"#;

/// What the real import did.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ImportTrace {
    /// The module imported.
    pub module: String,
    /// The interpreter that ran it, and its version.
    pub python: String,
    /// Its version (`3.11.9`), when it reported.
    pub python_version: Option<String>,
    /// The import succeeded.
    pub ok: bool,
    /// The exception the import raised (`ImportError: libcublas.so.12: cannot open shared object
    /// file: No such file or directory`), or how the process ended when it did not report (a
    /// signal, a time-out).
    pub error: Option<String>,
    /// Every shared object the import mapped, in the order first mapped, with its SONAME when it
    /// has one and who loaded it when a `ctypes.dlopen` call names it.
    pub loaded: Vec<Loaded>,
    /// The `ctypes.dlopen` calls the import made, with the frames that made them.
    pub dlopens: Vec<DlopenCall>,
    /// The `ctypes.util.find_library` calls the import made, with what each found.
    pub finds: Vec<FindCall>,
    /// The extension modules that failed to load during the import, whether or not the package
    /// caught the error.
    pub extension_failures: Vec<ExtensionFailure>,
    /// Seconds the import took (as the interpreter measured it; the whole run's when it did not
    /// report).
    pub seconds: f64,
    /// The end of the interpreter's standard error (the last 4 KiB), when it wrote any.
    pub stderr_tail: Option<String>,
}

/// A shared object the import mapped.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Loaded {
    /// Its path, as the process mapped it.
    pub path: PathBuf,
    /// Its SONAME, when the file has one.
    pub soname: Option<String>,
    /// The `ctypes.dlopen` call that loaded it (`pkg/loader.py:5`), when one names it; else it came
    /// with another object (a `DT_NEEDED` entry) or from native code's own dlopen.
    pub by: Option<String>,
    /// Its path with every link resolved, once, for comparing with other paths.
    #[serde(skip)]
    canonical: Option<PathBuf>,
    /// Its `DT_NEEDED` entries, read with its SONAME.
    #[serde(skip)]
    pub needed: Vec<String>,
}

/// One `ctypes.dlopen` call of the import.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DlopenCall {
    /// The name or path passed.
    pub name: Option<String>,
    /// `file:line` of the frames that called it, innermost first (ctypes' own left out).
    pub frames: Vec<String>,
    /// The object it loaded, when the process mapped one of that name or path; none: the load
    /// failed (and the import went on without it) or named something mapped before the import.
    pub loaded: Option<PathBuf>,
    /// The error of a load that failed (`libcudart.so.12: cannot open shared object file: No
    /// such file or directory`), as ctypes raised it; the package caught it when the import
    /// went on.
    pub error: Option<String>,
}

/// An extension module that failed to load during the import.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ExtensionFailure {
    /// The module's file.
    pub path: PathBuf,
    /// The error its loader raised (`…/_cuda.so: undefined symbol: _ZTIN3rmm9bad_allocE`).
    pub error: String,
}

/// One `ctypes.util.find_library` call of the import.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FindCall {
    /// The name asked for (`nvrtc` for `libnvrtc`).
    pub name: String,
    /// What it found (`libnvrtc.so.12`), none when nothing.
    pub found: Option<String>,
    /// `file:line` of the frames that called it, innermost first.
    pub frames: Vec<String>,
}

#[derive(serde::Deserialize)]
struct RawFind {
    name: String,
    found: Option<String>,
    frames: Vec<(String, u64)>,
}

#[derive(serde::Deserialize)]
struct RawEvent {
    name: Option<String>,
    frames: Vec<(String, u64)>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    probe: bool,
}

#[derive(serde::Deserialize)]
struct RawError {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// The first line: the interpreter's version.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    python: String,
}

/// A load the import was about to make: an extension module (`module`) or a ctypes dlopen.
#[derive(serde::Deserialize)]
struct RawStep {
    step: String,
    what: String,
}

#[derive(serde::Deserialize)]
struct Raw {
    python: String,
    seconds: Option<f64>,
    error: Option<RawError>,
    mapped: Vec<String>,
    dlopens: Vec<RawEvent>,
    #[serde(default)]
    finds: Vec<RawFind>,
    #[serde(default)]
    ext_failures: Vec<ExtensionFailure>,
}

/// How a run is started: the interpreter, the module and the environment changes.
pub struct Run<'a> {
    /// The interpreter.
    pub python: &'a Path,
    /// The module to import.
    pub module: &'a str,
    /// `Some("")` removes `LD_LIBRARY_PATH`, `Some(x)` sets it, none leaves it as it is: the
    /// same search doctor simulates.
    pub ld_library_path: Option<&'a str>,
    /// Past this the process group is killed and the run reported as timed out.
    pub timeout: Duration,
}

/// A run started ([`start`]); [`finish`] collects it.
pub struct Started {
    child: std::process::Child,
    module: String,
    python: PathBuf,
    started: Instant,
    timeout: Duration,
    stdout: std::sync::mpsc::Receiver<Vec<u8>>,
    stderr: std::sync::mpsc::Receiver<Vec<u8>>,
}

/// Starts the import in a process group of its own, so it runs while doctor reads the files.
pub fn start(run: &Run) -> Result<Started> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(run.python);
    cmd.args(["-c", SCRIPT, run.module, &MAX_EVENTS.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .process_group(0);
    match run.ld_library_path {
        Some("") => {
            cmd.env_remove("LD_LIBRARY_PATH");
        }
        Some(v) => {
            cmd.env("LD_LIBRARY_PATH", v);
        }
        None => {}
    }
    let mut child = cmd.spawn().with_context(|| {
        format!(
            "cannot run {} to import {}",
            run.python.display(),
            run.module
        )
    })?;
    running().push(child.id() as i32);
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let (tx, stdout) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.take(MAX_OUTPUT).read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let (tx, stderr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keep only the tail: a chatty import cannot grow memory.
        let mut tail: Vec<u8> = Vec::new();
        let mut err = err;
        let mut chunk = [0u8; 8192];
        while let Ok(n) = err.read(&mut chunk) {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&chunk[..n]);
            if tail.len() > 2 * STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
        let _ = tx.send(tail);
    });
    Ok(Started {
        child,
        module: run.module.to_string(),
        python: run.python.to_path_buf(),
        started: Instant::now(),
        timeout: run.timeout,
        stdout,
        stderr,
    })
}

/// The process groups of the imports running now, for [`kill_running`].
static RUNNING: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn running() -> std::sync::MutexGuard<'static, Vec<i32>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills every import running now (its process group: the interpreter and what it started), for
/// a signal handler that ends cudist next: an interrupted doctor leaves no interpreter behind.
pub fn kill_running() {
    for &pid in running().iter() {
        // SAFETY: killpg only sends a signal, to a group this process made.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// Kills the process group of a run (the interpreter and what it started).
fn kill_group(child: &mut std::process::Child) {
    let pid = child.id() as i32;
    // SAFETY: killpg only sends a signal; the group is the child's own (process_group(0)).
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for the run (no longer than its time limit) and reads its report.
pub fn finish(mut s: Started) -> Result<ImportTrace> {
    let deadline = s.started + s.timeout;
    let status = loop {
        match s.child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                kill_group(&mut s.child);
                break None;
            }
            Err(e) => {
                kill_group(&mut s.child);
                return Err(e).with_context(|| {
                    format!(
                        "cannot wait for {} importing {}",
                        s.python.display(),
                        s.module
                    )
                });
            }
        }
    };
    // Processes the import left behind may hold the pipes: end them, and wait no longer.
    // SAFETY: as in kill_group.
    unsafe {
        libc::killpg(s.child.id() as i32, libc::SIGKILL);
    }
    running().retain(|&p| p != s.child.id() as i32);
    let grace = Duration::from_secs(2);
    let out = s.stdout.recv_timeout(grace).unwrap_or_default();
    let err = s.stderr.recv_timeout(grace).unwrap_or_default();
    let seconds = s.started.elapsed().as_secs_f64();
    let tail = || {
        let t = String::from_utf8_lossy(&err).trim().to_string();
        (!t.is_empty()).then_some(t)
    };
    let mut trace = ImportTrace {
        module: s.module.clone(),
        python: s.python.display().to_string(),
        python_version: None,
        ok: false,
        error: None,
        loaded: Vec::new(),
        dlopens: Vec::new(),
        finds: Vec::new(),
        extension_failures: Vec::new(),
        seconds,
        stderr_tail: None,
    };
    // The lines: the interpreter's version, the loads it was about to make, the report last.
    let lines: Vec<&[u8]> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let raw: Option<Raw> = lines.last().and_then(|l| serde_json::from_slice(l).ok());
    let Some(raw) = raw else {
        let mut steps: Vec<RawStep> = Vec::new();
        for l in &lines {
            if let Ok(h) = serde_json::from_slice::<RawHeader>(l) {
                trace.python_version = Some(h.python);
            } else if let Ok(st) = serde_json::from_slice::<RawStep>(l) {
                steps.push(st);
            }
        }
        // What it was loading when it ended, and the extension modules whose loads came before
        // (each loaded, or failed and went on).
        let during = steps.last().map(|last| {
            format!(
                " while loading {} ({}{})",
                last.what,
                if last.step == "module" {
                    "an extension module"
                } else {
                    "ctypes.dlopen"
                },
                match steps.len() - 1 {
                    0 => String::new(),
                    n => format!(", after {n} other load(s)"),
                }
            )
        });
        trace.error = Some(match status {
            None => format!(
                "the import did not finish within {} s (killed){}",
                s.timeout.as_secs(),
                during.unwrap_or_default()
            ),
            Some(st) => {
                use std::os::unix::process::ExitStatusExt;
                match st.signal() {
                    Some(sig) => format!(
                        "the interpreter died of signal {sig}{}",
                        during.as_deref().unwrap_or(" during the import")
                    ),
                    None => format!(
                        "the interpreter ended with exit code {}{} without reporting",
                        st.code().unwrap_or(-1),
                        during.unwrap_or_default()
                    ),
                }
            }
        });
        trace.stderr_tail = tail();
        return Ok(trace);
    };
    trace.python_version = Some(raw.python);
    if let Some(s) = raw.seconds {
        trace.seconds = s;
    }
    trace.ok = raw.error.is_none();
    if let Some(e) = raw.error {
        trace.error = Some(format!("{}: {}", e.kind, e.message.trim_end()));
    }
    // What the package said on standard error (a native loader's "[ERROR] nvJPEG not loaded"),
    // whether or not the import failed.
    trace.stderr_tail = tail();
    trace.loaded = raw
        .mapped
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| is_shared_object(p))
        .map(|path| {
            let (soname, needed) = dynamic_of(&path);
            Loaded {
                soname,
                needed,
                canonical: std::fs::canonicalize(&path).ok(),
                path,
                by: None,
            }
        })
        .collect();
    trace.extension_failures = raw.ext_failures;
    trace.finds = raw
        .finds
        .into_iter()
        .map(|f| FindCall {
            name: f.name,
            found: f.found,
            frames: f
                .frames
                .into_iter()
                .map(|(f, l)| format!("{f}:{l}"))
                .collect(),
        })
        .collect();
    // A probe (RTLD_NOLOAD: is it loaded already?) loads nothing, whatever it answers.
    for e in raw.dlopens.into_iter().filter(|e| !e.probe) {
        let loaded = e
            .name
            .as_deref()
            .and_then(|n| trace.loaded_as(n))
            .map(|l| l.path.clone());
        trace.dlopens.push(DlopenCall {
            name: e.name,
            frames: e
                .frames
                .into_iter()
                .map(|(f, l)| format!("{f}:{l}"))
                .collect(),
            loaded,
            error: e.error,
        });
    }
    for l in &mut trace.loaded {
        if let Some(d) = trace
            .dlopens
            .iter()
            .find(|d| d.loaded.as_ref() == Some(&l.path))
        {
            l.by = d.frames.first().map(|f| format!("ctypes.CDLL at {f}"));
        }
    }
    // The process maps objects at addresses that change from run to run: listed in the order
    // the `ctypes.dlopen` calls loaded them, then by path, so a report is the same every time.
    let order = |l: &Loaded| {
        trace
            .dlopens
            .iter()
            .position(|d| d.loaded.as_ref() == Some(&l.path))
            .unwrap_or(usize::MAX)
    };
    let mut loaded = std::mem::take(&mut trace.loaded);
    loaded.sort_by_cached_key(|l| (order(l), l.path.clone()));
    trace.loaded = loaded;
    Ok(trace)
}

/// Runs the import and collects it ([`start`], then [`finish`]).
pub fn trace_import(run: &Run) -> Result<ImportTrace> {
    finish(start(run)?)
}

/// Whether a file is a shared object by its name (not the interpreter, a data file or a locale
/// archive): its name has `.so` as a part.
pub(super) fn is_shared_object(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".so") || n.contains(".so."))
}

/// The SONAME and `DT_NEEDED` entries of a mapped file, read from its dynamic section (mapped:
/// only the pages read cost).
fn dynamic_of(p: &Path) -> (Option<String>, Vec<String>) {
    let Some(elf) = cudist_elf::map_file(p)
        .ok()
        .and_then(|m| cudist_elf::ElfFile::parse(&m).ok())
    else {
        return (None, Vec::new());
    };
    (elf.soname, elf.needed)
}

impl ImportTrace {
    /// Whether the import mapped `path` (compared as the process saw it, and canonicalised).
    pub fn mapped(&self, path: &Path) -> bool {
        self.at_path(path).is_some()
    }

    /// The object mapped from `path` (compared as given, and with links resolved).
    fn at_path(&self, path: &Path) -> Option<&Loaded> {
        let canon = std::fs::canonicalize(path).ok();
        self.loaded
            .iter()
            .find(|l| l.path == path || (canon.is_some() && l.canonical == canon))
    }

    /// Where the import tried to load `path` by its path and failed (`pkg/__init__.py:6`, or the
    /// module when no frame was recorded): the package caught the error.
    pub fn failed_load_of(&self, path: &Path) -> Option<String> {
        let canon = std::fs::canonicalize(path).ok();
        self.dlopens
            .iter()
            .filter(|d| d.error.is_some())
            .find(|d| {
                d.name.as_deref().is_some_and(|n| {
                    n.contains('/')
                        && (Path::new(n) == path
                            || (canon.is_some() && std::fs::canonicalize(n).ok() == canon))
                })
            })
            .map(|d| {
                d.frames
                    .first()
                    .cloned()
                    .unwrap_or_else(|| self.module.clone())
            })
    }

    /// The object the import left loaded under this SONAME or file name: a later dlopen of the
    /// name, or a `DT_NEEDED` entry of it, gets that one. A name with a slash is a path, which
    /// dlopen opens as it is.
    pub fn loaded_as(&self, name: &str) -> Option<&Loaded> {
        if name.contains('/') {
            return self.at_path(Path::new(name));
        }
        self.loaded.iter().find(|l| {
            l.soname.as_deref() == Some(name)
                || l.path.file_name().and_then(|n| n.to_str()) == Some(name)
        })
    }
}
