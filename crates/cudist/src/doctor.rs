//! `cudist doctor`: will these ELF files load here, and will they run on this machine's GPUs —
//! and exactly why not. Read-only: doctor never changes anything. The work is
//! [`cudist_analysis::runtime`]; this module turns arguments into its calls and renders the
//! report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use cudist_analysis::runtime::check::{diagnose, FileReport, Options, Report, Status};
use cudist_analysis::runtime::host;
use cudist_catalog::Catalog;
use cudist_elf::loader::Resolution;

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
    /// Check a Python package as installed for the interpreter: the import is run there first
    /// (what it loads, from where, and whether it fails), and the files' model explains it and
    /// judges what the import does not load.
    #[arg(long = "import", value_name = "NAME")]
    pub import: Vec<String>,
    /// Judge --import packages from their files alone: do not run the import (it runs the
    /// package's code, as `python -c "import NAME"` does).
    #[arg(long = "static", requires = "import")]
    pub static_only: bool,
    /// The time limit of each real import, in seconds (past it the import is killed and
    /// reported as hanging).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 300,
        requires = "import"
    )]
    pub import_timeout: u64,
    /// Exit 1 also when the import works but features fail on first use (a library loaded on
    /// demand is missing).
    #[arg(long)]
    pub strict: bool,
    /// The interpreter for --import, and the Python --write-host records (default: python3 on
    /// PATH).
    #[arg(long, value_name = "PATH")]
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
    /// List every file with every library it loads; by default only files with something to
    /// say are listed, the others counted.
    #[arg(long, short)]
    pub verbose: bool,
    /// Print the report as JSON (schema cudist.doctor/1, docs/doctor.md).
    #[arg(long)]
    pub json: bool,
}

/// Runs `cudist doctor`.
pub fn run(args: DoctorArgs, catalog: &Catalog) -> Result<ExitCode> {
    if args.python.is_some() && args.import.is_empty() && args.write_host.is_none() {
        return Err(crate::errors::usage(
            "--python names the interpreter of --import or --write-host; give one of them",
        ));
    }
    if let Some(out) = &args.write_host {
        let mut h = host::Host::detect();
        h.record_python(
            args.python
                .as_deref()
                .unwrap_or(std::path::Path::new("python3")),
        );
        let mut text = serde_json::to_string_pretty(&h)?;
        text.push('\n');
        // Renamed into place: a link planted at the path is replaced, never written through.
        cudist_fs::write_atomic(out, text.as_bytes(), Some(0o644))
            .with_context(|| format!("cannot write {}", out.display()))?;
        if !args.json {
            outln!("wrote this machine's profile to {}", out.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = Options {
        paths: args.paths.clone(),
        dlopen: args.dlopen.clone(),
        imports: args.import.clone(),
        python: args.python.clone(),
        host: args.host.as_deref().map(host::Host::load).transpose()?,
        ld_library_path: args.ld_library_path.clone(),
        static_only: args.static_only,
        import_timeout: Some(std::time::Duration::from_secs(args.import_timeout.max(1))),
    };
    let spinner = util::Spinner::start(if options.imports.is_empty() {
        "simulating the loader".to_string()
    } else {
        format!("importing {}", options.imports.join(", "))
    });
    let report = diagnose(&options, catalog)?;
    drop(spinner);
    finish(&args, report, catalog)
}

fn finish(args: &DoctorArgs, report: Report, catalog: &Catalog) -> Result<ExitCode> {
    if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report, args.verbose, catalog, Style::detect()));
    }
    // The import fails, or the GPU cannot run it: 1. It imports and only features used later
    // fail: 0, unless --strict.
    Ok(match report.verdict.status {
        Status::Ok | Status::Risky => ExitCode::SUCCESS,
        Status::WillFailWhenLoaded if !args.strict => ExitCode::SUCCESS,
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

fn render(r: &Report, verbose: bool, catalog: &Catalog, style: Style) -> String {
    let mut s = String::new();
    render_verdict(&mut s, r, style);
    render_imports_run(&mut s, r, style);
    render_host(&mut s, &r.host, style);
    render_runtime_loads(&mut s, r, catalog, style);
    render_installations(&mut s, r, style);
    // Without a driver, its libraries' absence is said once, in the host notes.
    let said = |name: &str| r.host.driver.is_none() && catalog.driver_lib(name).is_some();
    if !verbose {
        render_missing(&mut s, r, style);
    }
    let mut quiet = 0;
    for f in &r.files {
        if verbose || has_news(f, &said) {
            render_file(&mut s, f, verbose, &said, style);
        } else if f.missing.is_empty() {
            quiet += 1;
        }
    }
    if quiet > 0 {
        s.push_str(&format!(
            "\n{}\n",
            style.dim(&format!(
                "{quiet} other file(s) load with every library found{} (--verbose lists them)",
                if r.host.gpus.is_empty() {
                    ""
                } else {
                    " and run on every GPU"
                }
            ))
        ));
    }
    s
}

/// Each library not found, once, with the files that need it, where the first was looked for,
/// and the fix (the per-file lists are `--verbose`'s).
fn render_missing(s: &mut String, r: &Report, style: Style) {
    let mut by_name: Vec<(
        &str,
        Vec<(&FileReport, &cudist_analysis::runtime::check::Missing)>,
    )> = Vec::new();
    // A build for another CUDA release than the one that loads here lacks its release's
    // libraries by design (said in the verdict).
    for f in r.files.iter().filter(|f| f.unused_variant.is_none()) {
        for m in &f.missing {
            // A file counts once, however many objects of its closure need the library.
            match by_name.iter_mut().find(|(n, _)| *n == m.name) {
                Some((_, v)) if v.iter().any(|(g, _)| g.path == f.path) => {}
                Some((_, v)) => v.push((f, m)),
                None => by_name.push((&m.name, vec![(f, m)])),
            }
        }
    }
    let some = |items: &[String]| {
        let more = items.len().saturating_sub(3);
        format!(
            "{}{}",
            items[..items.len().min(3)].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    for (name, users) in &by_name {
        // The files whose own NEEDED entries name it, and, where those are libraries the
        // checked files load (bipp's extension module loads libcufinufft, which needs cuFFT),
        // the checked files.
        let mut needers: Vec<String> = Vec::new();
        let mut loading: Vec<String> = Vec::new();
        for (f, m) in users {
            let by = cudist_fs::inner::lexical(&m.needed_by);
            let own = by.ends_with(&f.path);
            // Written as the report writes the file where it checks it too.
            let needer = match r.files.iter().find(|g| by.ends_with(&g.path)) {
                Some(g) => g.path.clone(),
                None => by.display().to_string(),
            };
            if !needers.contains(&needer) {
                needers.push(needer);
            }
            if !own && !loading.contains(&f.path) {
                loading.push(f.path.clone());
            }
        }
        s.push_str(&format!(
            "\n{} {}, needed by {} file(s): {}{}\n",
            name,
            style.red("not found"),
            needers.len(),
            some(&needers),
            if loading.is_empty() {
                String::new()
            } else {
                format!(", which {} load(s)", some(&loading))
            }
        ));
        let (_, first) = users[0];
        if !first.tried.is_empty() {
            let tried: Vec<String> = first
                .tried
                .iter()
                .map(|t| t.display().to_string())
                .collect();
            s.push_str(&format!("  tried: {}\n", tried.join(", ")));
        }
        if let Some(fix) = &first.fix {
            s.push_str(&format!("  fix: {fix}\n"));
        }
    }
}

/// Whether a file has something to say beyond "every library found" (a missing library is said
/// with the others, in its own list): a symbol missing, a GPU that does not run its code
/// natively, a library opened at run time not found (the driver's, on a machine without one,
/// is said once), a driver problem.
fn has_news(f: &FileReport, said: &dyn Fn(&str) -> bool) -> bool {
    !f.missing_symbols.is_empty()
        || f.gpus.iter().any(|g| g.status != "cubin")
        || f.dlopen.iter().any(|r| {
            r.path.is_none() && !said(&r.name) && !f.dlopen_said_elsewhere.contains(&r.name)
        })
        || !f.driver_problems.is_empty()
}

/// The verdict and its reasons.
fn render_verdict(s: &mut String, r: &Report, style: Style) {
    let verdict = match r.verdict.status {
        Status::Ok => style.green("OK"),
        Status::Risky => style.yellow("risky"),
        Status::WillFailWhenLoaded => {
            style.yellow("imports; features that load a missing library fail on first use")
        }
        Status::WillFailOnThisGpu if r.profile => {
            style.red("will load but fail on the profile's machine")
        }
        Status::WillFailOnThisGpu => style.red("will load but fail on this machine"),
        Status::ImportFails => style.red("the import fails, with an error of the package's own (no library or symbol is missing)"),
        Status::WillFailToLoad => style.red("will fail to load"),
    };
    let whose = if r.profile {
        format!(
            "cudist doctor (for the profile {}):",
            r.host.name.as_deref().unwrap_or("given with --host")
        )
    } else {
        "cudist doctor:".to_string()
    };
    s.push_str(&format!("{} {verdict}\n", style.bold(&whose)));
    for reason in &r.verdict.reasons {
        s.push_str(&format!("  - {reason}\n"));
    }
    for w in &r.imported_with {
        let line = match (&w.plugin, &w.on_call) {
            (Some(ep), _) => format!(
                "{} loads its plugin {} ({ep}) when {} runs, on first use: its files and preloads are judged as loaded then",
                w.by, w.package, w.at
            ),
            (None, Some(f)) => format!(
                "{} imports {} only when {f} runs ({}), on first use: what its import loads is judged as loaded then",
                w.by, w.package, w.at
            ),
            (None, None) => format!(
                "importing {} imports {} ({}): its files and preloads are judged too",
                w.by, w.package, w.at
            ),
        };
        s.push_str(&format!("  {}\n", style.dim(&line)));
    }
}

/// What each real import did, and where it contradicted the model.
fn render_imports_run(s: &mut String, r: &Report, style: Style) {
    for t in &r.imports_run {
        let outcome = match &t.error {
            None => style.green("imported"),
            Some(_) => style.red("failed"),
        };
        s.push_str(&format!(
            "\nreal import of {} ({} {}, {:.1} s): {outcome}, {} shared object(s) loaded\n",
            t.module,
            t.python,
            t.python_version.as_deref().unwrap_or("?"),
            t.seconds,
            t.loaded.len()
        ));
        for l in t.loaded.iter().filter(|l| l.by.is_some()) {
            s.push_str(&format!(
                "  {:<28} {}  ({})\n",
                l.soname.clone().unwrap_or_else(|| l
                    .path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()),
                l.path.display(),
                l.by.as_deref().unwrap_or_default()
            ));
        }
        // A call without a name is ctypes' own handle on the process (`PyDLL(None)`).
        for d in t
            .dlopens
            .iter()
            .filter(|d| d.loaded.is_none() && d.name.is_some())
        {
            s.push_str(&format!(
                "  {} {} at {}: nothing loaded{}\n",
                style.dim("ctypes.CDLL"),
                d.name.as_deref().unwrap_or("None"),
                d.frames.first().map(String::as_str).unwrap_or("?"),
                if t.ok {
                    " (the import went on without it)"
                } else {
                    ""
                }
            ));
        }
        if let Some(tail) = t.stderr_tail.as_deref().filter(|_| t.error.is_some()) {
            let last: Vec<&str> = tail.lines().rev().take(5).collect();
            for line in last.into_iter().rev() {
                s.push_str(&format!("  {}\n", style.dim(line)));
            }
        }
    }
    if !r.disagreements.is_empty() {
        s.push_str("\nwhere the real import corrected the model of the files:\n");
        for d in &r.disagreements {
            s.push_str(&format!("  - {d}\n"));
        }
    }
}

/// The machine judged for.
fn render_host(s: &mut String, h: &host::Host, style: Style) {
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
}

/// The libraries a known package loads itself, and where they were found: one heading per
/// package and loader.
fn render_runtime_loads(s: &mut String, r: &Report, catalog: &Catalog, style: Style) {
    let mut heading: Option<(&str, &str)> = None;
    let library = |soname: &str| {
        catalog
            .library_by_soname(soname)
            .map(|m| m.library.id.clone())
    };
    // A loader that tries several names of one library (cuda-pathfinder: `.so.13`, then `.so.12`)
    // needs one: a name not found is no news where another of the same call was.
    let candidate_found = |l: &cudist_analysis::runtime::check::RuntimeLoad| {
        library(&l.soname).is_some_and(|id| {
            r.runtime_loads.iter().any(|o| {
                o.path.is_some()
                    && o.package == l.package
                    && o.loader == l.loader
                    && library(&o.soname).as_ref() == Some(&id)
            })
        })
    };
    for l in r
        .runtime_loads
        .iter()
        .filter(|l| l.path.is_some() || !candidate_found(l))
    {
        // The call, without where each name is written (faiss names each in its JSON file).
        let call = l.loader.split(" (named at ").next().unwrap_or(&l.loader);
        if heading != Some((l.package.as_str(), call)) {
            heading = Some((l.package.as_str(), call));
            s.push_str(&format!(
                "\nloaded by {} itself ({call}), before the modules that link them:\n",
                l.package
            ));
        }
        match &l.path {
            Some(p) => s.push_str(&format!(
                "  {:<28} {}  ({}){}\n",
                l.soname,
                p.display(),
                l.found_by.as_deref().unwrap_or("?"),
                if l.not_loaded {
                    "; found, but the real import did not load it"
                } else {
                    ""
                }
            )),
            None => s.push_str(&format!("  {:<28} {}\n", l.soname, style.red("not found"))),
        }
    }
}

/// Without paths: the CUDA installations visible, and their conflicts.
fn render_installations(s: &mut String, r: &Report, style: Style) {
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
}

/// One file: where each library loads from (`verbose`: every one; else only those not found),
/// what is missing and why, its GPUs, dlopen and driver.
fn render_file(
    s: &mut String,
    f: &FileReport,
    verbose: bool,
    said: &dyn Fn(&str) -> bool,
    style: Style,
) {
    s.push_str(&format!("\n{}\n", style.bold(&f.path)));
    // Without --verbose, the libraries not found are listed once for all files.
    for res in f
        .resolutions
        .iter()
        .filter(|x| x.rule != Some(cudist_elf::loader::Rule::AlreadyLoaded))
        .filter(|_| verbose)
    {
        match &res.path {
            None if f.from_profile_driver.contains(&res.name) => {
                s.push_str(&format!("  {:<28} the profile's driver\n", res.name))
            }
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
            m.version_suffix(),
            m.needed_by.file_name().map(|f| f.to_string_lossy()).unwrap_or_default(),
            m.resolved.display(),
            m.library_stem()
        ));
    }
    for m in f.missing.iter().filter(|_| verbose) {
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
    for r in f.dlopen.iter().filter(|r| {
        verbose
            || (r.path.is_none() && !said(&r.name) && !f.dlopen_said_elsewhere.contains(&r.name))
    }) {
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
