//! `cudist repair`: wheels that depend on NVIDIA's CUDA wheels instead of carrying CUDA. The work
//! is [`cudist_repair`]; this module turns arguments into its call and renders the report.

use std::path::PathBuf;
use std::process::ExitCode;

use cudist_catalog::Catalog;
use cudist_repair::{repair, CudaDeps, Options, Progress, Report};

use crate::util;

/// `cudist repair` arguments.
#[derive(clap::Args)]
pub struct RepairArgs {
    /// Wheels, or directories of wheels.
    #[arg(required = true, value_name = "WHEEL")]
    pub wheels: Vec<PathBuf>,
    /// Where the repaired wheels go (created if missing; inputs are never modified).
    #[arg(
        short = 'w',
        long = "wheel-dir",
        value_name = "OUTDIR",
        default_value = "wheelhouse"
    )]
    pub wheel_dir: PathBuf,
    /// Print the plan without writing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// How to declare the CUDA wheels: per-component, toolkit (cuda-toolkit[extras]==X.*) or
    /// extra:NAME (per component, under an optional extra).
    #[arg(long, value_name = "STYLE", default_value = "per-component")]
    pub cuda_deps: CudaDeps,
    /// Write DT_RUNPATH instead of DT_RPATH (DT_RPATH, the default, is what auditwheel and torch use).
    #[arg(long)]
    pub runpath: bool,
    /// Compression of changed members: fast, default or best.
    #[arg(long, value_name = "LEVEL", default_value = "default", value_parser = ["fast", "default", "best"])]
    pub compression: String,
    /// Refuse wheels whose RECORD does not match their content.
    #[arg(long)]
    pub verify: bool,
    /// Copy unchanged members without inflating them once to check their CRC (faster; a damaged
    /// member is then passed on, and pip refuses the repaired wheel instead).
    #[arg(long)]
    pub no_crc_check: bool,
    /// Tag with this platform policy (manylinux_2_28, manylinux2014, …) or fail saying what
    /// blocks it; default: the most compatible policy the repaired wheel satisfies.
    #[arg(long, value_name = "POLICY")]
    pub plat: Option<String>,
    /// Also add a module that preloads the CUDA libraries from every sys.path entry's CUDA wheel
    /// directories (for installs where $ORIGIN/../.. does not reach them). Your code must import
    /// it; cudist never edits your code.
    #[arg(long)]
    pub loader: bool,
    /// Leave the libraries whose SONAME matches this glob alone (repeatable; `libnccl.so.*`): not
    /// grafted, not required, kept where the wheel carries them, not counted against the platform
    /// tag — as auditwheel's --exclude. The package must provide them some other way.
    #[arg(long, value_name = "PATTERN", value_parser = parse_glob)]
    pub exclude: Vec<glob::Pattern>,
    /// Also take out vendored CUDA libraries that no file loads by name. By default they stay:
    /// the package opens them by path (as triton opens its CUPTI), and a requirement would not
    /// put a replacement there.
    #[arg(long)]
    pub remove_unreached: bool,
    /// The site-packages the wheel was built against (e.g. the build venv's): the CUDA wheels
    /// installed there give the lower bounds of the requirements.
    #[arg(long, value_name = "SITE_PACKAGES")]
    pub build_env: Option<PathBuf>,
    /// Print the report as JSON (schema cudist.repair/1).
    #[arg(long)]
    pub json: bool,
}

/// A `--exclude` pattern.
fn parse_glob(s: &str) -> std::result::Result<glob::Pattern, String> {
    glob::Pattern::new(s).map_err(|e| format!("{s:?}: {e}"))
}

/// Runs `cudist repair`.
pub fn run(args: RepairArgs, catalog: &Catalog) -> anyhow::Result<ExitCode> {
    if let Some(b) = &args.build_env {
        if !b.is_dir() {
            return Err(crate::errors::input(format!(
                "--build-env {}: not a directory (give the build environment's site-packages)",
                b.display()
            )));
        }
    }
    // Directories stand for the wheels in them.
    let mut wheels = Vec::new();
    let mut errors = Vec::new();
    for p in &args.wheels {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|q| q.extension().is_some_and(|x| x == "whl"))
                .collect();
            found.sort();
            if found.is_empty() {
                errors.push(cudist_analysis::model::InputError {
                    path: p.display().to_string(),
                    error: "the directory holds no .whl files".into(),
                    hint: None,
                });
            }
            wheels.extend(found);
        } else {
            wheels.push(p.clone());
        }
    }
    let opts = Options {
        out_dir: args.wheel_dir.clone(),
        dry_run: args.dry_run,
        cuda_deps: args.cuda_deps.clone(),
        tag: if args.runpath {
            cudist_elf::patch::SearchPathTag::Runpath
        } else {
            cudist_elf::patch::SearchPathTag::Rpath
        },
        compression: match args.compression.as_str() {
            "fast" => cudist_wheel::write::Compression::Fast,
            "best" => cudist_wheel::write::Compression::Best,
            _ => cudist_wheel::write::Compression::Default,
        },
        verify: args.verify,
        crc_check: !args.no_crc_check,
        plat: args.plat.clone(),
        loader: args.loader,
        exclude: args.exclude.clone(),
        remove_unreached: args.remove_unreached,
        build_env: args.build_env.clone(),
    };
    let bar = util::progress_shown().then(|| {
        let bar = indicatif::ProgressBar::new(wheels.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} repairing {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    });
    let mut report = repair(&wheels, catalog, &opts, &mut |step| {
        if let Some(bar) = &bar {
            match step {
                Progress::Start(p) => bar.set_message(
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                Progress::Done(_) => bar.inc(1),
            }
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    errors.append(&mut report.errors);
    report.errors = errors;
    if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report, catalog, util::Style::detect()));
    }
    if !args.json {
        util::print_input_errors(report.errors.iter().map(|e| (None, e)));
    }
    // 4 when the machine failed (a full disk); 3 when an input is at fault; 1 when every failure is a limit of cudist (an ELF edit its
    // writer cannot make in a valid file).
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else if report.machine_fault.is_some() {
        ExitCode::from(util::EXIT_MACHINE)
    } else if report.errors.len() > report.not_input_faults {
        ExitCode::from(util::EXIT_INPUT)
    } else {
        ExitCode::from(1)
    })
}

/// The human report.
fn render(r: &Report, catalog: &Catalog, style: crate::util::Style) -> String {
    use crate::util::human_bytes;
    use std::fmt::Write;
    let mut out = String::new();
    for w in &r.wheels {
        let verb = match (r.dry_run, w.unchanged) {
            (true, _) => "would write",
            (false, true) => "unchanged, copied to",
            (false, false) => "repaired ->",
        };
        let size = match w.output_size {
            Some(n) => format!(" ({} -> {})", human_bytes(w.input_size), human_bytes(n)),
            None => format!(" ({})", human_bytes(w.input_size)),
        };
        let _ = writeln!(out, "{} {verb} {}{size}", style.bold(&w.input), w.output);
        for g in &w.grafted {
            let _ = writeln!(
                out,
                "  grafted   {} ({}, {}) as {}",
                g.soname,
                g.source.display(),
                human_bytes(g.bytes),
                g.path
            );
        }
        for rm in &w.removed {
            let _ = writeln!(
                out,
                "  removed   {} ({}, {}): {}",
                rm.path,
                rm.library,
                human_bytes(rm.bytes),
                rm.reason
            );
        }
        // One line per directory and reason: a vendored set (CUPTI and its profiler libraries)
        // is one decision.
        let mut groups: Vec<(String, &str, Vec<&cudist_repair::Removed>)> = Vec::new();
        for k in &w.kept {
            let dir = k.path.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            match groups
                .iter_mut()
                .find(|(d, r, _)| *d == dir && *r == k.reason.as_str())
            {
                Some((_, _, ks)) => ks.push(k),
                None => groups.push((dir, k.reason.as_str(), vec![k])),
            }
        }
        for (dir, reason, ks) in groups {
            let bytes: u64 = ks.iter().map(|k| k.bytes).sum();
            if let [k] = ks[..] {
                let _ = writeln!(
                    out,
                    "  kept      {} ({}, {}): {}",
                    k.path,
                    k.library,
                    human_bytes(bytes),
                    reason
                );
            } else {
                let mut libs: Vec<&str> = ks.iter().map(|k| k.library.as_str()).collect();
                libs.dedup();
                let _ = writeln!(
                    out,
                    "  kept      {dir}/ ({} files: {}; {}): {}",
                    ks.len(),
                    libs.join(", "),
                    human_bytes(bytes),
                    reason
                );
            }
        }
        for p in &w.patched {
            let mut what = Vec::new();
            if !p.rpath_added.is_empty() {
                what.push(format!("search path += {}", p.rpath_added.join(":")));
            }
            if !p.rpath_removed.is_empty() {
                // An empty entry is the current directory, an absolute one the build machine's
                // (the only absolute entries repair drops): said so.
                let removed: Vec<String> = p
                    .rpath_removed
                    .iter()
                    .map(|r| {
                        if r.is_empty() {
                            "\"\" (the current directory)".to_string()
                        } else if r.starts_with('/') {
                            format!("{r} (a directory of the build machine)")
                        } else {
                            r.clone()
                        }
                    })
                    .collect();
                what.push(format!("search path -= {}", removed.join(":")));
            }
            for (a, b) in &p.needed_replaced {
                what.push(format!("NEEDED {a} -> {b}"));
            }
            // A layout change: say what the growth is, so nobody takes it for bloat added.
            if p.size_after > p.size_before + 4096 {
                what.push(format!(
                    "+{} (the dynamic tables moved to a new segment; their old bytes stay, unused)",
                    human_bytes(p.size_after - p.size_before)
                ));
            }
            let _ = writeln!(out, "  patched   {}: {}", p.path, what.join("; "));
        }
        if !w.platform.tags.is_empty() {
            let _ = writeln!(out, "  tagged    {}", w.platform.tags.join("."));
            // The blocker that decides the tag: what keeps it from the next more compatible
            // policy, and when a library grafted from this machine is it, what to do.
            if let Some(b) = w.platform.blocked.last() {
                let _ = writeln!(out, "            not {}: {} {}", b.policy, b.file, b.reason);
                if let Some(g) = w.grafted.iter().find(|g| g.path == b.file) {
                    let _ = writeln!(
                        out,
                        "            {} was grafted from this machine ({}): a system with an older glibc (a manylinux image) gives an older copy and a more compatible tag; or --exclude {}",
                        g.soname,
                        g.source.display(),
                        g.soname
                    );
                }
            }
        }
        for q in &w.requires_added {
            let _ = writeln!(out, "  requires  {q}");
        }
        for o in &w.optional_parts {
            let under = match &o.extra {
                Some(x) if o.distributions.len() > 1 => {
                    format!("offered under extras, all of them under [{x}]")
                }
                Some(x) => format!("offered under the extra [{x}]"),
                None => "offered under an extra".to_string(),
            };
            let _ = writeln!(
                out,
                "  optional  {} loads on demand: {} {under}, not required",
                o.path,
                o.distributions.join(", ")
            );
        }
        if let Some(l) = &w.loader {
            let when = match &l.imported_by {
                Some(init) => format!("imported first by {init}"),
                None => format!("import {} before the first CUDA extension", l.module),
            };
            let _ = writeln!(
                out,
                "  loader    {} ({when}; {}=1 tries the system CUDA first)",
                l.path, l.prefer_system_env
            );
        }
        for v in &w.variants {
            let _ = writeln!(
                out,
                "  variant   {} needs {}: not required (one variant per CUDA release; the package loads one)",
                v.path,
                if v.needs.is_empty() { "no CUDA library".to_string() } else { v.needs.join(", ") }
            );
        }
        for v in &w.vendor_runtimes {
            let _ = writeln!(
                out,
                "  vendor    {} ({}): not grafted, no requirement; it comes with {}{}",
                v.sonames.join(", "),
                v.vendor,
                v.provided_by,
                if v.pip.is_empty() {
                    String::new()
                } else {
                    format!(": {}", v.pip.join(", "))
                }
            );
        }
        let input_name = std::path::Path::new(&w.input)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tagged_before = cudist_analysis::platform::FileTag::of(&input_name)
            .libc
            .is_some();
        for u in &w.unhandled {
            let known = catalog.library_by_soname(u).map(|m| m.library.id.as_str());
            let why = if u.contains('/') {
                "a NEEDED entry that names a path: ld.so opens exactly that path on the user's machine, so it is never grafted".to_string()
            } else if let Some(m) = catalog.renamed_copy_of(u, None) {
                format!(
                    "a renamed copy of {} (a repair tool's graft, carried by another wheel): kept as it is, neither grafted nor required; it loads where a search path reaches that wheel's copy",
                    m.library.id
                )
            } else if let Some(o) = catalog.older_release(u, None) {
                format!(
                    "{}'s, of a CUDA release before any NVIDIA ships as wheels (CUDA {}{}): no wheel to require, and CUDA's libraries are not grafted; the user's machine must provide that CUDA",
                    o.library.id,
                    o.cuda_major,
                    if o.cuda_major_known { "" } else { " or before" }
                )
            } else if let Some(m) = catalog
                .library_by_soname(u)
                .filter(|m| m.library.interface.is_some())
            {
                format!(
                    "{}'s interface ({}), which every vendor's stack provides: not grafted and not required, as the analysis leaves it to the machine (a CUDA wheel's copy would hide other vendors' drivers)",
                    m.library.id, m.library.stem
                )
            } else if let Some(id) = known {
                format!("a catalog library ({id}) whose wheel, or the wheel of this SONAME, the catalog does not know: not grafted and not required; the user's machine must provide it")
            } else if tagged_before {
                "neither a system, CUDA nor catalog library; the wheel's own manylinux tag already \
                 left it out (its tagger excluded it: a dependency or the user's machine must \
                 provide it), so it stays out and does not change the tag"
                    .to_string()
            } else {
                "neither a system, CUDA nor catalog library, and not found on this machine to graft"
                    .to_string()
            };
            // Left out by the wheel's own tagger: said, not warned about.
            let settled = tagged_before
                && !u.contains('/')
                && known.is_none()
                && catalog.renamed_copy_of(u, None).is_none();
            let label = if settled {
                "note:".to_string()
            } else {
                style.yellow("warning:").to_string()
            };
            let _ = writeln!(out, "  {label} needs {u}: {why}");
        }
        let freed: u64 = w.removed.iter().map(|r| r.bytes).sum();
        if freed > 0 {
            let _ = writeln!(
                out,
                "  {} of CUDA libraries left the wheel",
                human_bytes(freed)
            );
        }
    }
    out
}
