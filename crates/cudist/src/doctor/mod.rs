//! `cudist doctor`: will these ELF files load here, and will they run on this machine's GPUs —
//! and exactly why not. Read-only: doctor never changes anything.
//!
//! For every ELF file (an extension module, a library, an executable, or all of them below a
//! directory such as an installed package):
//! - glibc's loader is simulated ([`cudist_elf::loader`]) with the file as the main object, as
//!   `ldd` does: every library's path and the rule that found it; for each failure, the paths tried
//!   and the fix the catalog knows;
//! - the symbols it imports from CUDA libraries must be defined by the libraries that load;
//! - its device code is checked against each GPU of the host ([`device`]), and the driver against
//!   the CUDA runtime it links ([`host`] describes the machine: this one, or a `--host` profile).
//!
//! Without paths, doctor reports the machine and every CUDA installation visible ([`machine`]).

pub mod device;
pub mod host;
pub mod machine;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use cudist_catalog::{Catalog, SonameClass};
use cudist_elf::loader::{self, LoadEnv, Resolution};
use serde::Serialize;

use crate::util::{self, outln, Style};

/// `cudist doctor` arguments.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// ELF files, or directories (an installed package, a site-packages) whose ELF files to
    /// check; none: report this machine and the CUDA installations it can see.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Also check where dlopen(NAME) from each file would find this library (repeatable); the
    /// libraries the catalog knows to be dlopened (libcuda.so.1 by the runtime, NVRTC's builtins)
    /// are always checked.
    #[arg(long = "dlopen", value_name = "SONAME")]
    pub dlopen: Vec<String>,
    /// Check a Python package as installed for the interpreter (located without importing it).
    #[arg(long = "import", value_name = "NAME")]
    pub import: Vec<String>,
    /// The interpreter for --import (default: python3 on PATH).
    #[arg(long, value_name = "PATH", requires = "import")]
    pub python: Option<PathBuf>,
    /// Judge for the machine this profile describes (driver, GPUs) instead of this one.
    #[arg(long, value_name = "FILE")]
    pub host: Option<PathBuf>,
    /// Write this machine's profile (for --host elsewhere) and exit.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["paths", "host", "import"])]
    pub write_host: Option<PathBuf>,
    /// Simulate with this LD_LIBRARY_PATH instead of the current one ("" for none).
    #[arg(long, value_name = "DIRS")]
    pub ld_library_path: Option<String>,
    /// Print the report as JSON (schema cudist.doctor/1, docs/doctor.md).
    #[arg(long)]
    pub json: bool,
}

/// The report (`--json`: schema `cudist.doctor/1`).
#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub host: host::Host,
    pub ld_library_path: Vec<String>,
    pub files: Vec<FileReport>,
    /// Without paths: the CUDA installations visible, and their conflicts.
    pub installations: Vec<machine::Installation>,
    pub conflicts: Vec<machine::Conflict>,
}

/// Ordered: `Ok` < `Risky` < `WillFailOnGpu` < `WillFailToLoad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// Runs, with a catch (PTX JIT at first use).
    Risky,
    /// Loads, but fails at the first kernel launch or CUDA call on this machine.
    WillFailOnThisGpu,
    WillFailToLoad,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    pub status: Status,
    pub reasons: Vec<String>,
}

impl Verdict {
    fn add(&mut self, status: Status, reason: String) {
        self.status = self.status.max(status);
        self.reasons.push(reason);
    }
}

#[derive(Debug, Serialize)]
pub struct FileReport {
    pub path: String,
    /// Every `DT_NEEDED` entry of the file and of what it loads, in load order.
    pub resolutions: Vec<Resolution>,
    pub missing: Vec<Missing>,
    /// Symbols imported from CUDA libraries that the library they resolve to does not define.
    pub missing_symbols: Vec<MissingSymbol>,
    /// What each GPU of the host does with the file's device code (empty without device code).
    pub gpus: Vec<device::GpuResult>,
    /// The driver against the CUDA runtime the file links.
    pub driver_problems: Vec<String>,
    /// Libraries opened at run time: `--dlopen` names from the file, and what loaded CUDA
    /// libraries are known to dlopen, from them.
    pub dlopen: Vec<Resolution>,
}

/// A symbol an object imports from a CUDA library that the installed library lacks: the object
/// was built against a newer release than the one that loads.
#[derive(Debug, Serialize)]
pub struct MissingSymbol {
    pub symbol: String,
    pub version: Option<String>,
    pub needed_by: PathBuf,
    /// The CUDA library it is imported from (by symbol version, or by the library's name prefix).
    pub library: String,
    /// Where that library resolved.
    pub resolved: PathBuf,
}

#[derive(Debug, Serialize)]
pub struct Missing {
    pub name: String,
    pub needed_by: PathBuf,
    pub tried: Vec<PathBuf>,
    /// What would make it load, when cudist knows.
    pub fix: Option<String>,
}

/// ELF files below `p` (or `p` itself), sorted; symbolic links are not followed.
fn elf_files(p: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta =
        std::fs::symlink_metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .with_context(|| format!("cannot list {}", p.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            elf_files(&e, out)?;
        }
    } else if meta.is_file() {
        // The ELF header up to e_type: only executables and shared objects load.
        let mut head = [0u8; 18];
        let read = std::fs::File::open(p)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok();
        let e_type = u16::from_le_bytes([head[16], head[17]]);
        if read && cudist_elf::is_elf(&head) && head[5] == 1 && matches!(e_type, 2 | 3) {
            out.push(p.to_path_buf());
        }
    }
    Ok(())
}

/// The fix for a library that is not found: the package that ships it and where it installs.
fn fix_for(name: &str, needed_by: &Path, catalog: &Catalog) -> Option<String> {
    match catalog.classify(name) {
        SonameClass::Toolkit(m) | SonameClass::External(m) => {
            let pip = m.major.pip.as_deref()?;
            let dir = m.major.pip_dir.as_deref()?;
            // Installed next to the package (site-packages/<dir>) but not searched: name the entry.
            let mut up = String::new();
            for ancestor in needed_by.parent()?.ancestors().skip(1).take(4) {
                up.push_str("../");
                if ancestor.join(dir).join(name).is_file() {
                    return Some(format!(
                        "{pip} is installed ({}), but no search path of {} reaches it: add the RPATH entry \
                         $ORIGIN/{up}{dir} (`cudist repair` writes it into the wheel)",
                        ancestor.join(dir).join(name).display(),
                        needed_by.file_name().map(|f| f.to_string_lossy()).unwrap_or_default()
                    ));
                }
            }
            Some(format!(
                "install {pip} (it puts {name} in site-packages/{dir}), and make {} find it: an RPATH entry \
                 $ORIGIN/…/{dir} at the right depth, which `cudist repair` writes into the wheel",
                needed_by.file_name().map(|f| f.to_string_lossy()).unwrap_or_default()
            ))
        }
        SonameClass::Driver(_) => Some(format!(
            "{name} comes with the NVIDIA driver; install the driver (no GPU driver is visible on this machine)"
        )),
        SonameClass::System(_) => Some(format!(
            "{name} is a system library; install it with the system's package manager"
        )),
        SonameClass::Other => None,
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

/// The CUDA-library symbols of a simulation that the library they resolve to does not define.
fn missing_symbols(sim: &loader::Simulation, catalog: &Catalog) -> Vec<MissingSymbol> {
    let is_cuda = |s: &str| {
        matches!(
            catalog.classify(s),
            SonameClass::Toolkit(_) | SonameClass::External(_)
        )
    };
    let mut out = Vec::new();
    for u in sim.undefined_symbols() {
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
fn device_code(path: &Path) -> Vec<crate::inspect::model::DeviceEntry> {
    let Ok(f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    // SAFETY: read-only private mapping of an input cudist never writes.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&f) }) else {
        return Vec::new();
    };
    let Ok(elf) = cudist_elf::ElfFile::parse(&map) else {
        return Vec::new();
    };
    crate::inspect::device_entries(&path.display().to_string(), &elf, &map)
        .map(|(e, _)| e)
        .unwrap_or_default()
}

/// Where an importable package lives, found with `importlib.util.find_spec` (which locates a
/// top-level package without running its code).
fn locate_import(python: &Path, name: &str) -> Result<PathBuf> {
    let script = "import importlib.util, sys\n\
        s = importlib.util.find_spec(sys.argv[1])\n\
        if s is None: sys.exit(3)\n\
        print(list(s.submodule_search_locations)[0] if s.submodule_search_locations else s.origin)";
    let out = std::process::Command::new(python)
        .args(["-c", script, name])
        .output()
        .with_context(|| format!("cannot run {} to locate {name}", python.display()))?;
    if out.status.code() == Some(3) {
        anyhow::bail!("{name} is not installed for {}", python.display());
    }
    if !out.status.success() {
        anyhow::bail!(
            "{} could not locate {name}: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The exact name a library passes to dlopen for a catalog entry: the entry itself when it is a
/// full SONAME (`libcuda.so.1`); for a bare `libX.so` (NVRTC's `libnvrtc-builtins.so`, whose
/// version follows NVRTC's own), the `libX.so.<version>` string the library's file contains.
fn dlopen_name(library: &Path, pattern: &str) -> Option<String> {
    if !pattern.ends_with(".so") {
        return Some(pattern.to_string());
    }
    let f = std::fs::File::open(library).ok()?;
    // SAFETY: read-only private mapping of an input cudist never writes.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    let needle = format!("{pattern}.");
    let at = memchr::memmem::find(&map, needle.as_bytes())?;
    let tail = &map[at + needle.len()..];
    let len = tail
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .count();
    (len > 0).then(|| format!("{needle}{}", String::from_utf8_lossy(&tail[..len]).trim_end_matches('.')))
}

/// Runs `cudist doctor`.
pub fn run(mut args: DoctorArgs, catalog: &Catalog) -> Result<ExitCode> {
    if !args.import.is_empty() {
        let python = args.python.clone().unwrap_or_else(|| "python3".into());
        for name in &args.import {
            args.paths.push(locate_import(&python, name)?);
        }
    }
    if let Some(out) = &args.write_host {
        let h = host::Host::detect();
        let mut text = serde_json::to_string_pretty(&h)?;
        text.push('\n');
        std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
        if !args.json {
            outln!("wrote this machine's profile to {}", out.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut host = match &args.host {
        Some(p) => host::Host::load(p)?,
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
        schema: "cudist.doctor/1",
        verdict: Verdict {
            status: Status::Ok,
            reasons: Vec::new(),
        },
        host,
        ld_library_path: env.ld_library_path.clone(),
        files: Vec::new(),
        installations: Vec::new(),
        conflicts: Vec::new(),
    };
    if report.host.driver.is_some() && report.host.gpus.is_empty() {
        report.host.notes.push("no GPU known: the device code is not checked (`--host FILE` checks it for a described machine)".into());
    }
    if args.paths.is_empty() {
        report.installations = machine::installations(catalog);
        report.conflicts = machine::conflicts(&report.installations);
        for c in &report.conflicts {
            report.verdict.add(
                Status::Risky,
                format!(
                    "{} is visible in several CUDA majors: {}",
                    c.library,
                    c.seen.join("; ")
                ),
            );
        }
        return finish(&args, report);
    }
    let mut files = Vec::new();
    for p in &args.paths {
        elf_files(p, &mut files)?;
    }
    if files.is_empty() {
        anyhow::bail!(
            "no ELF files in {}",
            args.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for f in &files {
        let sim = loader::simulate(f, &env)
            .with_context(|| format!("cannot simulate loading {}", f.display()))?;
        let missing: Vec<Missing> = sim
            .missing()
            .map(|m| Missing {
                name: m.name.clone(),
                needed_by: m.needed_by.clone(),
                tried: m.tried.clone(),
                fix: fix_for(&m.name, &m.needed_by, catalog),
            })
            .collect();
        let missing_syms = missing_symbols(&sim, catalog);
        for m in &missing_syms {
            report.verdict.add(Status::WillFailToLoad, format!(
                "{}: {} needs {}{} from {}, which {} does not define: it was built against a newer {} than the one \
                 installed",
                f.display(),
                m.needed_by.display(),
                m.symbol,
                m.version.as_deref().map(|v| format!("@{v}")).unwrap_or_default(),
                m.library,
                m.resolved.display(),
                m.library.split(".so").next().unwrap_or(&m.library)
            ));
        }
        for m in &missing {
            report.verdict.add(
                Status::WillFailToLoad,
                format!(
                    "{}: {} not found (needed by {})",
                    f.display(),
                    m.name,
                    m.needed_by.display()
                ),
            );
        }
        let gpus = device::check_gpus(&device_code(f), &report.host, catalog);
        for g in &gpus {
            let status = match g.status {
                "cubin" => continue,
                "jit" => Status::Risky,
                _ => Status::WillFailOnThisGpu,
            };
            report
                .verdict
                .add(status, format!("{}: {}: {}", f.display(), g.gpu, g.detail));
        }
        let driver_problems =
            device::check_driver(&cudart_majors(&sim, catalog), &report.host, catalog);
        for d in &driver_problems {
            report
                .verdict
                .add(Status::WillFailOnThisGpu, format!("{}: {d}", f.display()));
        }
        let mut dl = Vec::new();
        for name in &args.dlopen {
            dl.push(sim.dlopen(0, name, &env));
        }
        for (i, o) in sim.objects.iter().enumerate() {
            let Some(so) = &o.soname else { continue };
            // The catalog lists what a library dlopens across its CUDA majors (cuFFT 12 opens
            // libnvJitLink.so.12, cuFFT 13 libnvJitLink.so.13): keep the names of this major.
            let known: Vec<String> = match catalog.classify(so) {
                SonameClass::Toolkit(m) | SonameClass::External(m) => m
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
                    dl.push(sim.dlopen(i, &name, &env));
                }
            }
        }
        for r in dl.iter().filter(|r| r.path.is_none()) {
            let driver_lib = catalog.driver_lib(&r.name).is_some();
            if driver_lib && report.host.driver.is_none() {
                continue; // No driver here: said once, in the host notes.
            }
            report.verdict.add(
                Status::WillFailOnThisGpu,
                format!(
                    "{}: dlopen({}) from {} will fail: not found (tried {})",
                    f.display(),
                    r.name,
                    r.needed_by.display(),
                    r.tried.len()
                ),
            );
        }
        report.files.push(FileReport {
            path: f.display().to_string(),
            resolutions: sim.resolutions,
            missing,
            missing_symbols: missing_syms,
            gpus,
            driver_problems,
            dlopen: dl,
        });
    }
    finish(&args, report)
}

fn finish(args: &DoctorArgs, report: Report) -> Result<ExitCode> {
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        util::emit(&render(&report, Style::detect()));
    }
    Ok(match report.verdict.status {
        Status::Ok | Status::Risky => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

fn rule_text(r: &Resolution) -> String {
    use cudist_elf::loader::Rule;
    match &r.rule {
        Some(Rule::Rpath { owner }) if *owner == r.needed_by => "RPATH".into(),
        Some(Rule::Rpath { owner }) => format!(
            "RPATH of {} (inherited)",
            owner
                .file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default()
        ),
        Some(Rule::LdLibraryPath) => "LD_LIBRARY_PATH".into(),
        Some(Rule::Runpath) => "RUNPATH".into(),
        Some(Rule::Cache) => "ld.so.cache".into(),
        Some(Rule::SystemDir) => "system directory".into(),
        Some(Rule::AlreadyLoaded) => "already loaded".into(),
        Some(Rule::Path) => "path in NEEDED".into(),
        None => "not found".into(),
    }
}

fn render(r: &Report, style: Style) -> String {
    let mut s = String::new();
    let verdict = match r.verdict.status {
        Status::Ok => style.green("OK"),
        Status::Risky => style.yellow("risky"),
        Status::WillFailOnThisGpu => style.red("will load but fail on this machine"),
        Status::WillFailToLoad => style.red("will fail to load"),
    };
    s.push_str(&format!("{} {verdict}\n", style.bold("cudist doctor:")));
    for reason in &r.verdict.reasons {
        s.push_str(&format!("  - {reason}\n"));
    }
    let h = &r.host;
    s.push_str(&format!(
        "\nhost: {}\n",
        h.name.clone().unwrap_or_else(|| "profile".into())
    ));
    if let Some(os) = &h.os {
        s.push_str(&format!(
            "  OS        {os}, glibc {}\n",
            h.glibc.clone().unwrap_or("?".into())
        ));
    }
    if let Some(cpu) = &h.cpu {
        s.push_str(&format!(
            "  CPU       {}{}\n",
            cpu.model.clone().unwrap_or("?".into()),
            cpu.x86_64_level
                .map(|l| format!(" (x86-64-v{l})"))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "  driver    {}\n",
        match (&h.driver, &h.driver_cuda) {
            (Some(d), Some(c)) => format!("{d} (runs CUDA ≤ {c})"),
            (Some(d), None) => d.clone(),
            (None, _) => "none".into(),
        }
    ));
    for g in &h.gpus {
        s.push_str(&format!(
            "  GPU       {} — compute capability {}.{}{}\n",
            g.name.clone().unwrap_or("GPU".into()),
            g.sm / 10,
            g.sm % 10,
            g.memory_mib
                .map(|m| format!(", {}", util::human_bytes(m * 1024 * 1024)))
                .unwrap_or_default()
        ));
    }
    for n in &h.notes {
        s.push_str(&format!("  {}\n", style.dim(n)));
    }
    if !r.installations.is_empty() {
        s.push_str("\nCUDA installations visible:\n");
        for i in &r.installations {
            s.push_str(&format!(
                "  {:<16} {}{}\n",
                i.kind,
                i.path,
                i.version
                    .as_deref()
                    .map(|v| format!(" (CUDA {v})"))
                    .unwrap_or_default()
            ));
            for l in &i.libraries {
                s.push_str(&format!(
                    "    {:<40} {}\n",
                    l.name,
                    l.major.map(|m| format!("CUDA {m}")).unwrap_or_default()
                ));
            }
        }
    }
    for c in &r.conflicts {
        s.push_str(&format!(
            "  {} {}: {}\n",
            style.yellow("conflict:"),
            c.library,
            c.seen.join("; ")
        ));
    }
    for f in &r.files {
        s.push_str(&format!("\n{}\n", style.bold(&f.path)));
        for res in f
            .resolutions
            .iter()
            .filter(|x| x.rule != Some(cudist_elf::loader::Rule::AlreadyLoaded))
        {
            match &res.path {
                Some(p) => s.push_str(&format!(
                    "  {:<28} {}  ({})\n",
                    res.name,
                    p.display(),
                    rule_text(res)
                )),
                None => s.push_str(&format!(
                    "  {:<28} {}  (needed by {})\n",
                    res.name,
                    style.red("not found"),
                    res.needed_by.display()
                )),
            }
        }
        for m in &f.missing_symbols {
            s.push_str(&format!(
                "  {} {}{} (needed by {}) is not defined by {}: built against a newer {} than the one installed\n",
                style.red("missing symbol"),
                m.symbol,
                m.version.as_deref().map(|v| format!("@{v}")).unwrap_or_default(),
                m.needed_by.file_name().map(|f| f.to_string_lossy()).unwrap_or_default(),
                m.resolved.display(),
                m.library.split(".so").next().unwrap_or(&m.library)
            ));
        }
        for m in &f.missing {
            if !m.tried.is_empty() {
                let tried: Vec<String> = m.tried.iter().map(|t| t.display().to_string()).collect();
                s.push_str(&format!("    {} tried: {}\n", m.name, tried.join(", ")));
            }
            if let Some(fix) = &m.fix {
                s.push_str(&format!("    fix: {fix}\n"));
            }
        }
        for g in &f.gpus {
            let tag = match g.status {
                "cubin" => style.green("runs"),
                "jit" => style.yellow("JIT"),
                _ => style.red("fails"),
            };
            s.push_str(&format!("  {} {tag}: {}\n", g.gpu, g.detail));
        }
        for r in &f.dlopen {
            match &r.path {
                Some(p) => s.push_str(&format!(
                    "  dlopen {:<21} {}  ({})\n",
                    r.name,
                    p.display(),
                    rule_text(r)
                )),
                None => s.push_str(&format!(
                    "  dlopen {:<21} {}  (from {})\n",
                    r.name,
                    style.red("not found"),
                    r.needed_by.display()
                )),
            }
        }
        for d in &f.driver_problems {
            s.push_str(&format!("  {} {d}\n", style.red("driver:")));
        }
    }
    s
}
