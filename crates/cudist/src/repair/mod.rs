//! `cudist repair`: wheels that depend on NVIDIA's CUDA wheels instead of carrying CUDA.
//!
//! The plan comes from the inspect analysis of the wheel:
//! - every CUDA toolkit (or catalog-declared external) library an ELF needs gets an RPATH entry
//!   from that ELF's directory to the library's wheel directory for its CUDA major
//!   (`$ORIGIN/../../nvidia/cublas/lib`, `$ORIGIN/../nvidia/cu13/lib`), after the entries the file
//!   already has, and a `Requires-Dist` on the providing distribution;
//! - vendored CUDA toolkit and driver libraries (also auditwheel's renamed copies) are removed, and
//!   NEEDED entries that named a renamed copy are restored to the real SONAME;
//! - the wheel is rewritten with untouched members copied raw (`cudist_wheel::write`).
//!
//! Not yet done here (see the issue's notes): grafting non-CUDA external libraries under a manylinux
//! policy, platform-tag selection, and the optional loader module.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use cudist_catalog::{Catalog, SonamePolicy};
use cudist_elf::patch::{Edits, SearchPathTag};
use cudist_wheel::write::{Compression, Rewrite};
use cudist_wheel::Wheel;
use rayon::prelude::*;
use serde::Serialize;

use cudist_analysis::artifact::{normalise_dist, parent, ReqName};
use cudist_analysis::model::{Artifact, ElfReport, NeededClass, PathLocation};
use cudist_analysis::open::install_path;
use cudist_analysis::Input;

use crate::util::{self, outln};

mod graft;

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
    /// The site-packages the wheel was built against (e.g. the build venv's): the CUDA wheels
    /// installed there give the lower bounds of the requirements.
    #[arg(long, value_name = "SITE_PACKAGES")]
    pub build_env: Option<PathBuf>,
    /// Print the report as JSON (schema cudist.repair/1).
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: RepairArgs, catalog: &Catalog) -> anyhow::Result<ExitCode> {
    if let Some(b) = &args.build_env {
        if !b.is_dir() {
            anyhow::bail!(
                "--build-env {}: not a directory (give the build environment's site-packages)",
                b.display()
            );
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
        build_env: args.build_env.clone(),
        progress: (!args.quiet && !args.json && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(wheels.len() as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} repairing {pos}/{len} {wide_msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        }),
    };
    let mut report = repair(&wheels, catalog, &opts);
    if let Some(bar) = &opts.progress {
        bar.finish_and_clear();
    }
    errors.append(&mut report.errors);
    report.errors = errors;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if !args.quiet {
        util::emit(&render(&report, util::Style::detect()));
    }
    if !args.json {
        util::print_input_errors(report.errors.iter().map(|e| (None, e)));
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(util::EXIT_INPUT)
    })
}

/// The schema identifier of `cudist repair --json`.
pub const SCHEMA: &str = "cudist.repair/1";

/// How the dependencies on CUDA wheels are declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaDeps {
    /// One requirement per providing distribution (`nvidia-cublas-cu12>=12,<13`).
    PerComponent,
    /// The metapackage with extras (`cuda-toolkit[cublas,cudart]==12.*`).
    Toolkit,
    /// Per component, but only under an optional extra of this name (`pkg[cuda]`), for packages
    /// that can also use a system CUDA.
    Extra(String),
}

impl std::str::FromStr for CudaDeps {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "per-component" => Ok(CudaDeps::PerComponent),
            "toolkit" => Ok(CudaDeps::Toolkit),
            _ => match s.strip_prefix("extra:") {
                Some(name)
                    if !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
                {
                    Ok(CudaDeps::Extra(normalise_dist(name)))
                }
                _ => Err(format!(
                    "{s:?}: expected per-component, toolkit or extra:NAME"
                )),
            },
        }
    }
}

/// Options of one repair run.
#[derive(Debug, Clone)]
pub struct Options {
    pub out_dir: PathBuf,
    pub dry_run: bool,
    pub cuda_deps: CudaDeps,
    pub tag: SearchPathTag,
    pub compression: Compression,
    pub verify: bool,
    /// Inflate every member copied raw once to check its CRC (the default).
    pub crc_check: bool,
    /// Also write a module that preloads the CUDA libraries from every `sys.path` entry.
    pub loader: bool,
    /// The site-packages the wheel was built against: the CUDA wheels installed there give the
    /// lower bounds of `Requires-Dist` (`nvidia-cuda-runtime-cu12>=12.9.79,<13`).
    pub build_env: Option<PathBuf>,
    /// The platform policy to tag with (`manylinux_2_17`, `manylinux2014`); the most compatible
    /// one the repaired wheel satisfies when unset.
    pub plat: Option<String>,
    /// Shown on a terminal (not with `--quiet` or `--json`): one step per wheel.
    pub progress: Option<indicatif::ProgressBar>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub cudist_version: &'static str,
    pub dry_run: bool,
    pub wheels: Vec<WheelRepair>,
    pub errors: Vec<cudist_analysis::model::InputError>,
}

#[derive(Debug, Serialize)]
pub struct WheelRepair {
    pub input: String,
    /// Where the repaired wheel was (or, with `--dry-run`, would be) written.
    pub output: String,
    pub input_size: u64,
    /// Size of the written wheel; null with `--dry-run`.
    pub output_size: Option<u64>,
    pub removed: Vec<Removed>,
    pub patched: Vec<Patched>,
    pub requires_added: Vec<String>,
    /// Non-system libraries copied into the wheel (`<dist>.libs/`).
    pub grafted: Vec<graft::Graft>,
    /// The generated loader module (`pkg/_cudist_cuda.py`) and how to use it, with `--loader`.
    pub loader: Option<Loader>,
    /// Libraries needed that repair does not handle yet (neither system, CUDA, nor in the wheel).
    pub unhandled: Vec<String>,
    /// Nothing needed changing: the wheel was copied as it is.
    pub unchanged: bool,
    /// Platform tags of the repaired wheel, and the policies more compatible than its own that it
    /// does not satisfy (with the reason).
    pub platform: cudist_analysis::model::Platform,
}

#[derive(Debug, Serialize)]
pub struct Loader {
    /// Path of the module inside the wheel.
    pub path: String,
    /// The module name to import.
    pub module: String,
    /// The environment variable that makes it try a system CUDA first.
    pub prefer_system_env: String,
}

#[derive(Debug, Serialize)]
pub struct Removed {
    pub path: String,
    pub library: String,
    pub bytes: u64,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct Patched {
    pub path: String,
    pub rpath_added: Vec<String>,
    pub rpath_removed: Vec<String>,
    pub needed_replaced: Vec<(String, String)>,
    pub in_place: bool,
}

/// Repairs every wheel; one that cannot be read or written becomes an error entry.
pub fn repair(inputs: &[PathBuf], catalog: &Catalog, opts: &Options) -> Report {
    let mut wheels = Vec::new();
    let mut errors = Vec::new();
    let installed = opts
        .build_env
        .as_deref()
        .map(installed_versions)
        .unwrap_or_default();
    for p in inputs {
        if let Some(bar) = &opts.progress {
            bar.set_message(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        let result = repair_one(p, catalog, opts, &installed);
        if let Some(bar) = &opts.progress {
            bar.inc(1);
        }
        match result {
            Ok(w) => wheels.push(w),
            Err(e) => errors.push(cudist_analysis::model::InputError {
                path: p.display().to_string(),
                error: format!("{e:#}"),
                hint: crate::errors::hint(&e).map(str::to_string),
            }),
        }
    }
    Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        dry_run: opts.dry_run,
        wheels,
        errors,
    }
}

/// The `Requires-Dist` range for a library's wheel: the package's version major follows the
/// SONAME's (`libcublas.so.12` ↔ `nvidia-cublas-cu12 12.*`, `libcurand.so.10` ↔ `10.*`). Where
/// the SONAME carries a minor, the bound follows it: a minor that later releases keep (the last
/// one the catalog lists for that major: `libnvrtc.so.11.2`, `libcudart.so.11.0`) allows the rest
/// of the major, an earlier one only itself.
pub fn version_range(soname: &str, policy: SonamePolicy, listed: &[String]) -> Option<String> {
    let version = soname.split_once(".so.")?.1;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    match policy {
        SonamePolicy::None => None,
        SonamePolicy::Major => Some(format!(">={major},<{}", major + 1)),
        SonamePolicy::MajorMinor => {
            let minor = parts.next().flatten().unwrap_or(0);
            let last = listed.last().map(String::as_str) == Some(soname);
            Some(if last {
                format!(">={major}.{minor},<{}", major + 1)
            } else {
                format!(">={major}.{minor},<{major}.{}", minor + 1)
            })
        }
    }
}

/// `$ORIGIN`-relative path from a file's directory to `target` (both relative to the install root).
pub fn origin_path(elf_path: &str, target: &str) -> String {
    let depth = elf_path.matches('/').count();
    format!(
        "$ORIGIN/{}{}",
        "../".repeat(depth),
        target.trim_end_matches('/')
    )
}

/// Distribution versions installed in a site-packages (normalised name → version), from the
/// `.dist-info/METADATA` files.
pub fn installed_versions(site: &Path) -> BTreeMap<String, String> {
    cudist_wheel::installed::scan_names(site)
        .unwrap_or_default()
        .into_iter()
        .map(|d| (normalise_dist(&d.name), d.version))
        .collect()
}

/// Raises the lower bound of a `>=L,<U` range to the version the binary was built against, when
/// that version lies inside the range.
pub fn with_build_version(range: &str, built: &str) -> String {
    let key = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let Some((lower, upper)) = range.strip_prefix(">=").and_then(|r| r.split_once(",<")) else {
        return range.to_string();
    };
    if key(built) >= key(lower) && key(built) < key(upper) {
        format!(">={built},<{upper}")
    } else {
        range.to_string()
    }
}

fn repair_one(
    path: &Path,
    catalog: &Catalog,
    opts: &Options,
    installed: &BTreeMap<String, String>,
) -> Result<WheelRepair> {
    // Errors name the problem; the report names the wheel (once).
    let wheel = Wheel::open(path)?;
    let md = wheel.metadata()?;
    if opts.verify {
        let problems = cudist_wheel::write::verify_record(&wheel)?;
        if let Some((m, p)) = problems.first() {
            return Err(crate::errors::input(format!(
                "RECORD does not match the content ({} problem(s)); first: {m}: {p}",
                problems.len()
            )));
        }
    }
    let artifact = cudist_analysis::inspect_one(&Input::Wheel(path.to_path_buf()), catalog)?;
    if let Some(p) = artifact.problems.first() {
        return Err(crate::errors::input(format!("{}: {}", p.path, p.error)));
    }
    let file_name = path
        .file_name()
        .context("the input has no file name")?
        .to_string_lossy()
        .into_owned();
    let member_of: HashMap<String, String> = wheel
        .members()
        .iter()
        .map(|m| (install_path(&m.name), m.name.clone()))
        .collect();
    // Non-system, non-CUDA libraries the wheel needs are grafted into `<dist>.libs/`.
    let dist = file_name.split('-').next().unwrap_or("wheel").to_string();
    let libs_dir = format!("{dist}.libs");
    let (grafts, missing) = graft::collect(
        artifact.elf_files.iter().filter(|e| e.vendored.is_none()),
        &|_| false,
        &libs_dir,
        catalog,
    )?;
    let grafting = Grafting {
        names: grafts
            .iter()
            .map(|g| (g.soname.clone(), g.name().to_string()))
            .collect(),
        libs_dir: libs_dir.clone(),
        reports: grafts.iter().map(|g| &g.report).collect(),
    };
    let mut plan = plan(
        &artifact,
        catalog,
        opts,
        &md.requires_dist,
        &grafting,
        installed,
    );
    plan.unhandled.retain(|u| !grafting.names.contains_key(u));
    for m in missing {
        if !plan.unhandled.contains(&m) {
            plan.unhandled.push(m);
        }
    }
    let removed: BTreeSet<&str> = plan.removed.iter().map(|r| r.path.as_str()).collect();
    let platform = cudist_analysis::platform::evaluate(
        artifact
            .elf_files
            .iter()
            .filter(|e| !removed.contains(e.path.as_str()))
            .chain(grafts.iter().map(|g| &g.report)),
        &|n| plan.renamed.contains(&n.soname) || grafting.names.contains_key(&n.soname),
        &cudist_analysis::platform::FileTag::of(&file_name),
    );
    // A wheel auditwheel would not tag is not repaired either: say why.
    if let Some(why) = &platform.error {
        return Err(crate::errors::input(format!("cannot be tagged: {why}")));
    }
    let graft_data: HashMap<&str, &[u8]> = grafts
        .iter()
        .map(|g| (g.path.as_str(), g.data.as_slice()))
        .collect();
    let tags = choose_tags(&platform, opts.plat.as_deref())?;
    let file_name = retag_file_name(&file_name, &tags);
    let out = opts.out_dir.join(&file_name);
    if out.canonicalize().ok() == path.canonicalize().ok() && out.exists() {
        bail!("the output would overwrite the input; choose another -w directory");
    }

    // Patch the ELF files in parallel (each read again from the wheel).
    let patched: Vec<(String, Vec<u8>, Patched)> = plan
        .edits
        .par_iter()
        .map(
            |(elf_path, (edits, added, removed, replaced))| -> Result<(String, Vec<u8>, Patched)> {
                let (member, data) = match graft_data.get(elf_path.as_str()) {
                    Some(d) => (elf_path.clone(), d.to_vec()),
                    None => {
                        let member = member_of
                            .get(elf_path)
                            .context("member of a planned file")?;
                        let index = wheel
                            .members()
                            .iter()
                            .position(|m| &m.name == member)
                            .unwrap();
                        (member.clone(), wheel.read_member(index)?)
                    }
                };
                let p = cudist_elf::patch::apply(&data, edits)
                    .with_context(|| format!("cannot patch {elf_path}"))?;
                Ok((
                    member,
                    p.data,
                    Patched {
                        path: elf_path.clone(),
                        rpath_added: added.clone(),
                        rpath_removed: removed.clone(),
                        needed_replaced: replaced.clone(),
                        in_place: p.in_place,
                    },
                ))
            },
        )
        .collect::<Result<_>>()?;

    let wheel_member = format!("{}/WHEEL", md.dist_info);
    let old_tags: Vec<String> = md.tags.clone();
    let new_tags = retag_lines(&old_tags, &tags);
    let retagged = new_tags != old_tags;
    let unchanged =
        patched.is_empty() && plan.removed.is_empty() && plan.requires.is_empty() && !retagged;
    let mut report = WheelRepair {
        input: path.display().to_string(),
        output: out.display().to_string(),
        input_size: wheel.file_size(),
        output_size: None,
        removed: plan.removed,
        patched: Vec::new(),
        requires_added: plan.requires.clone(),
        loader: None,
        grafted: Vec::new(),
        unhandled: plan.unhandled,
        unchanged,
        platform: cudist_analysis::model::Platform {
            tags: tags.clone(),
            ..platform
        },
    };
    let mut rw = Rewrite {
        remove: report
            .removed
            .iter()
            .map(|r| {
                member_of
                    .get(&r.path)
                    .cloned()
                    .unwrap_or_else(|| r.path.clone())
            })
            .collect(),
        requires_dist: plan.requires,
        provides_extra: plan.extras,
        compression: opts.compression,
        check_copied: opts.crc_check,
        // The ELF members were inflated whole (their CRC checked) by the inspection above.
        already_checked: artifact
            .elf_files
            .iter()
            .filter_map(|e| member_of.get(&e.path).cloned())
            .collect(),
        ..Rewrite::default()
    };
    if opts.loader && !plan.loads.is_empty() {
        let (loader, source) =
            loader_module(&artifact, &md.name.clone().unwrap_or_default(), &plan.loads);
        // A module already at that path: one an earlier `repair --loader` wrote is replaced;
        // anything else is the package's own code and is not overwritten.
        if let Some(m) = wheel.members().iter().find(|m| m.name == loader.path) {
            let old = wheel.read_prefix(m.index, LOADER_MARK.len())?;
            if old != LOADER_MARK.as_bytes() {
                bail!(
                    "--loader would write {}, but the wheel already has a file there that cudist \
                     did not write; rename that module in the package, or repair without --loader",
                    loader.path
                );
            }
            rw.replace.insert(loader.path.clone(), source.into_bytes());
        } else {
            rw.add
                .insert(loader.path.clone(), (source.into_bytes(), 0o644));
        }
        report.loader = Some(loader);
    }
    if retagged {
        let index = wheel
            .members()
            .iter()
            .position(|m| m.name == wheel_member)
            .context("the wheel has no WHEEL file")?;
        let text = String::from_utf8_lossy(&wheel.read_member(index)?).into_owned();
        rw.replace.insert(
            wheel_member,
            rewrite_wheel_tags(&text, &new_tags).into_bytes(),
        );
    }
    for (member, data, p) in patched {
        if graft_data.contains_key(member.as_str()) {
            rw.add.insert(member, (data, 0o755));
        } else {
            rw.replace.insert(member, data);
            report.patched.push(p);
        }
    }
    report.grafted = grafts;
    report.patched.sort_by(|a, b| a.path.cmp(&b.path));
    if !opts.dry_run {
        std::fs::create_dir_all(&opts.out_dir)
            .with_context(|| format!("cannot create {}", opts.out_dir.display()))?;
        let written = cudist_wheel::write::rewrite(&wheel, &rw, &out)
            .with_context(|| format!("cannot write {}", out.display()))?;
        report.output_size = Some(written.bytes);
    }
    Ok(report)
}

type FileEdits = (Edits, Vec<String>, Vec<String>, Vec<(String, String)>);

struct Plan {
    edits: BTreeMap<String, FileEdits>,
    /// CUDA libraries needed (SONAME → wheel directory), for the loader.
    loads: BTreeMap<String, String>,
    /// NEEDED names of renamed copies that the repair restores.
    renamed: BTreeSet<String>,
    removed: Vec<Removed>,
    requires: Vec<String>,
    extras: Vec<String>,
    unhandled: Vec<String>,
}

/// What grafting contributes to the plan: grafted SONAME → new name, the directory they go to, and
/// the grafted files' own reports (planned like the wheel's files).
struct Grafting<'a> {
    names: BTreeMap<String, String>,
    libs_dir: String,
    reports: Vec<&'a ElfReport>,
}

fn plan(
    a: &Artifact,
    catalog: &Catalog,
    opts: &Options,
    declared: &[String],
    grafting: &Grafting<'_>,
    installed: &BTreeMap<String, String>,
) -> Plan {
    // 1. What leaves the wheel, and the real SONAME behind each renamed copy.
    let mut removed = Vec::new();
    // renamed copy's SONAME or file name → (real SONAME, CUDA major)
    let mut renamed: HashMap<String, (String, Option<u32>)> = HashMap::new();
    let removed_paths: BTreeSet<&str> = a.vendored.iter().map(|v| v.path.as_str()).collect();
    for v in &a.vendored {
        let base = v.path.rsplit('/').next().unwrap_or(&v.path).to_string();
        let (library, reason, real) = match (&v.library, v.class) {
            (Some(l), _) => {
                let m = catalog
                    .library(&l.id)
                    .and_then(|lib| lib.cuda.iter().find(|m| m.major == l.cuda_major));
                let real = m.map(|m| {
                    let own = v.soname.clone().unwrap_or_else(|| base.clone());
                    let stripped = cudist_catalog::strip_graft_hash(&own);
                    if m.sonames.contains(&stripped) {
                        stripped
                    } else {
                        m.sonames[0].clone()
                    }
                });
                (
                    l.id.clone(),
                    format!("provided by {}", l.pip.as_deref().unwrap_or("a CUDA wheel")),
                    real,
                )
            }
            (None, _) => {
                let soname = v.soname.clone().unwrap_or_else(|| base.clone());
                (
                    soname.clone(),
                    "part of the NVIDIA driver: never bundle it".into(),
                    Some(cudist_catalog::strip_graft_hash(&soname)),
                )
            }
        };
        if let Some(real) = real {
            let major = v.library.as_ref().map(|l| l.cuda_major);
            for name in v.soname.iter().chain(std::iter::once(&base)) {
                if *name != real {
                    renamed.insert(name.clone(), (real.clone(), major));
                }
            }
        }
        removed.push(Removed {
            path: v.path.clone(),
            library,
            bytes: v.bytes,
            reason,
        });
    }
    // Directories that lose all their files no longer need a search path entry.
    let emptied: BTreeSet<String> = {
        let dirs: BTreeSet<String> = removed.iter().map(|r| parent(&r.path)).collect();
        dirs.into_iter()
            .filter(|d| {
                !a.elf_files
                    .iter()
                    .any(|e| parent(&e.path) == *d && !removed_paths.contains(e.path.as_str()))
            })
            .collect()
    };

    // 2. Per file: NEEDED restored, search path extended.
    let mut edits = BTreeMap::new();
    let mut loads: BTreeMap<String, String> = BTreeMap::new();
    let mut needs: BTreeMap<String, (String, Option<String>, String, u32)> = BTreeMap::new(); // pip → (range, extra, id, major)
    let mut unhandled = BTreeSet::new();
    let grafted_paths: BTreeSet<&str> = grafting.reports.iter().map(|r| r.path.as_str()).collect();
    for e in a
        .elf_files
        .iter()
        .filter(|e| !removed_paths.contains(e.path.as_str()))
        .chain(grafting.reports.iter().copied())
    {
        let mut replaced = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        let mut inside: Vec<String> = Vec::new();
        for n in &e.needed {
            if let Some(new) = grafting.names.get(&n.soname) {
                replaced.push((n.soname.clone(), new.clone()));
                inside.push(grafting.libs_dir.clone());
                continue;
            }
            let real = renamed.get(&n.soname).cloned();
            if let Some((r, _)) = &real {
                replaced.push((n.soname.clone(), r.clone()));
            }
            // A library the wheel carries, and keeps, needs nothing.
            let kept = n
                .provided_in_artifact
                .as_deref()
                .is_some_and(|p| !removed_paths.contains(p));
            if kept && real.is_none() {
                continue;
            }
            let (soname, hint) = match real {
                Some((r, major)) => (r, major),
                None => (n.soname.clone(), n.library.as_ref().map(|l| l.cuda_major)),
            };
            if catalog.driver_lib(&soname).is_some() {
                continue; // from the machine's driver: no dependency, no search path
            }
            match catalog.library_by_soname_hinted(&soname, hint) {
                Some(m) => {
                    if let (Some(dir), Some(pip)) = (&m.major.pip_dir, &m.major.pip) {
                        dirs.push(dir.clone());
                        loads.insert(soname.clone(), dir.clone());
                        let mut range = version_range(&soname, m.major.policy, &m.major.sonames)
                            .unwrap_or_default();
                        if let Some(v) = installed.get(&normalise_dist(pip)) {
                            range = with_build_version(&range, v);
                        }
                        needs.entry(pip.clone()).or_insert((
                            range,
                            m.library.toolkit_extra.clone(),
                            m.library.id.clone(),
                            m.major.major,
                        ));
                    }
                }
                None if n.class == NeededClass::Other => {
                    unhandled.insert(soname);
                }
                None => {}
            }
        }
        let (existing, other) = if !e.rpath.is_empty() {
            (&e.rpath, &e.runpath)
        } else {
            (&e.runpath, &e.rpath)
        };
        let mut entries: Vec<String> = Vec::new();
        let mut dropped = Vec::new();
        for p in existing.iter().chain(other.iter()) {
            let into_emptied = p.location == PathLocation::Inside && emptied.contains(&p.expanded);
            if into_emptied {
                dropped.push(p.raw.clone());
            } else if !entries.contains(&p.raw) {
                entries.push(p.raw.clone());
            }
        }
        let have: BTreeSet<String> = existing
            .iter()
            .chain(other.iter())
            .filter(|p| p.location == PathLocation::CudaWheel)
            .map(|p| p.expanded.clone())
            .collect();
        let mut added = Vec::new();
        let have_inside: BTreeSet<String> = existing
            .iter()
            .chain(other.iter())
            .filter(|p| p.location == PathLocation::Inside)
            .map(|p| p.expanded.clone())
            .collect();
        for d in inside {
            if have_inside.contains(&d) {
                continue;
            }
            let entry = if parent(&e.path) == d {
                "$ORIGIN".to_string()
            } else {
                origin_path(&e.path, &d)
            };
            if !entries.contains(&entry) {
                entries.push(entry.clone());
                added.push(entry);
            }
        }
        for d in dirs {
            if have.contains(&d) {
                continue;
            }
            let entry = origin_path(&e.path, &d);
            if !entries.contains(&entry) {
                entries.push(entry.clone());
                added.push(entry);
            }
        }
        let is_graft = grafted_paths.contains(e.path.as_str());
        let tag_changes = !other.is_empty() && !existing.is_empty()
            || (!existing.is_empty() && current_tag(e) != Some(opts.tag) && !added.is_empty());
        if added.is_empty()
            && dropped.is_empty()
            && replaced.is_empty()
            && !tag_changes
            && !is_graft
        {
            continue;
        }
        let tag = if added.is_empty() && dropped.is_empty() {
            current_tag(e).unwrap_or(opts.tag)
        } else {
            opts.tag
        };
        let edit = Edits {
            search_path: (!added.is_empty() || !dropped.is_empty() || tag_changes)
                .then(|| (entries.clone(), tag)),
            replace_needed: replaced.clone(),
            // A grafted library takes its (hashed) file name as SONAME.
            soname: is_graft.then(|| e.path.rsplit('/').next().unwrap_or(&e.path).to_string()),
        };
        edits.insert(e.path.clone(), (edit, added, dropped, replaced));
    }

    // 3. Requirements not declared yet.
    // Names declared unconditionally (not only under an optional extra).
    let declared_names: BTreeSet<String> = declared
        .iter()
        .filter_map(|r| ReqName::parse(r))
        .filter(|r| r.in_extra.is_none())
        .map(|r| r.name)
        .collect();
    let declared_toolkit = declared_names.contains("cuda-toolkit");
    let mut requires = Vec::new();
    let mut extras = Vec::new();
    let marker = match &opts.cuda_deps {
        CudaDeps::Extra(x) => {
            extras.push(x.clone());
            format!("; extra == \"{x}\"")
        }
        _ => String::new(),
    };
    let mut toolkit: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for (pip, (range, extra, id, major)) in &needs {
        if declared_names.contains(&normalise_dist(pip)) {
            continue;
        }
        let lib = catalog.library(id);
        let is_toolkit = lib.is_some_and(|l| l.kind == cudist_catalog::LibraryKind::Toolkit);
        match (&opts.cuda_deps, extra) {
            (CudaDeps::Toolkit, Some(x)) if is_toolkit => {
                if !declared_toolkit {
                    toolkit.entry(*major).or_default().insert(x.clone());
                }
            }
            _ => requires.push(format!("{pip}{range}{marker}")),
        }
    }
    for (major, xs) in toolkit {
        requires.push(format!(
            "cuda-toolkit[{}]=={major}.*",
            xs.into_iter().collect::<Vec<_>>().join(",")
        ));
    }
    if requires.is_empty() {
        extras.clear();
    }
    Plan {
        edits,
        loads,
        renamed: renamed.keys().cloned().collect(),
        removed,
        requires,
        extras,
        unhandled: unhandled.into_iter().collect(),
    }
}

/// The `--loader` module: where it goes (the top-level package of the first file that needs CUDA)
/// and its source.
fn loader_module(a: &Artifact, dist: &str, loads: &BTreeMap<String, String>) -> (Loader, String) {
    let top = a
        .elf_files
        .iter()
        .find(|e| e.needed.iter().any(|n| loads.contains_key(&n.soname)))
        .and_then(|e| e.path.split_once('/').map(|(t, _)| t.to_string()))
        .filter(|t| is_identifier(t));
    // Names that go into Python source and an environment variable: letters, digits and `_`
    // only, whatever METADATA's Name holds.
    let norm: String = normalise_dist(dist)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let (path, module) = match &top {
        Some(t) => (format!("{t}/_cudist_cuda.py"), format!("{t}._cudist_cuda")),
        None => (
            format!("_cudist_cuda_{norm}.py"),
            format!("_cudist_cuda_{norm}"),
        ),
    };
    let env = format!("{}_CUDA_PREFER_SYSTEM", norm.to_ascii_uppercase());
    let libs: Vec<String> = loads
        .iter()
        .map(|(soname, dir)| format!("    ({}, {}),", py_str(soname), py_str(dir)))
        .collect();
    let libs = libs.join("\n");
    let prefer = py_str(&env);
    let source = format!(
        r#""""Preload the CUDA libraries {norm} needs, from NVIDIA's wheels on any sys.path entry.

Generated by `cudist repair --loader`. The extension modules find these libraries through their
RPATH ($ORIGIN/../nvidia/...) when the CUDA wheels are installed next to this package; this module
covers installs where they are not (purelib and platlib apart, --target, PYTHONPATH layers).
Import it before the first extension module that needs CUDA:

    import {module}

Set {env}=1 to try the system's CUDA (ld.so search) first and fall back to the wheels.
"""
import ctypes
import os
import sys

LIBRARIES = [
{libs}
]
PREFER_SYSTEM = {prefer}

loaded = {{}}
missing = []


def _candidates(soname, directory):
    if os.environ.get(PREFER_SYSTEM, "") not in ("", "0"):
        yield soname
    for entry in sys.path:
        path = os.path.join(entry or ".", directory, soname)
        if os.path.isfile(path):
            yield path


def _load():
    pending = list(LIBRARIES)
    # A library may need another from a different wheel directory: retry those whose
    # dependencies were not loaded yet, while each pass makes progress.
    while pending:
        failed = []
        for soname, directory in pending:
            for candidate in _candidates(soname, directory):
                try:
                    ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    continue
                loaded[soname] = candidate
                break
            else:
                failed.append((soname, directory))
        if len(failed) == len(pending):
            break
        pending = failed
    missing.extend(soname for soname, _ in pending)


_load()
"#
    );
    (
        Loader {
            path,
            module,
            prefer_system_env: env,
        },
        source,
    )
}

/// The first line of every loader module cudist writes (how a re-repair knows its own).
const LOADER_MARK: &str = "\"\"\"Preload the CUDA libraries ";

/// Whether `s` is a Python identifier of ASCII letters, digits and `_` (a package directory a
/// module path can name).
fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// `s` as a Python string literal: printable ASCII as it is (quotes and backslashes escaped),
/// everything else as `\xNN`, `\uNNNN` or `\UNNNNNNNN`, so no content can end the literal.
fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// The platform tags to write: `--plat`'s if the wheel satisfies that policy, else the most
/// compatible satisfied one.
fn choose_tags(p: &cudist_analysis::model::Platform, plat: Option<&str>) -> Result<Vec<String>> {
    let arch = p.arch.clone().unwrap_or_else(|| "x86_64".into());
    let Some(want) = plat else {
        return Ok(p.tags.clone());
    };
    let name = want.strip_suffix(&format!("_{arch}")).unwrap_or(want);
    let Some(policy) = cudist_catalog::manylinux::policy(name) else {
        bail!(
            "--plat {want}: not a known platform policy (e.g. manylinux_2_28, manylinux2014, \
             musllinux_1_2)"
        );
    };
    if !policy.covers(&arch) {
        let first = p
            .libc
            .as_deref()
            .and_then(|l| {
                cudist_catalog::manylinux::policies_for(l, &arch)
                    .first()
                    .copied()
            })
            .map_or(String::new(), |f| format!(" ({arch} starts at {})", f.name));
        bail!("--plat {want}: {} has no {arch} policy{first}", policy.name);
    }
    if policy.priority > 0 && policy.libc != p.libc {
        bail!(
            "--plat {want}: a {} policy, but the wheel is built for {}",
            policy.libc.as_deref().unwrap_or("?"),
            p.libc.as_deref().unwrap_or("an unknown C library")
        );
    }
    // musl has no symbol versions: every musllinux policy allows what the evaluated one allows.
    let judged = if policy.libc.as_deref() == Some("musl") {
        p.blocked
            .iter()
            .find(|b| b.policy.starts_with("musllinux_"))
    } else {
        p.blocked.iter().find(|b| b.policy == policy.name)
    };
    if let Some(b) = judged {
        bail!(
            "cannot be tagged {}: {} {}",
            policy.tags(&arch).join("/"),
            b.file,
            b.reason
        );
    }
    Ok(policy.tags(&arch))
}

/// `Tag:` values with their platform replaced by each of `plats` (`cp311-cp311-linux_x86_64` →
/// `cp311-cp311-manylinux_2_24_x86_64`), in order, without duplicates.
fn retag_lines(tags: &[String], plats: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let Some((head, _)) = t.rsplit_once('-') else {
            continue;
        };
        for p in plats {
            let tag = format!("{head}-{p}");
            if !out.contains(&tag) {
                out.push(tag);
            }
        }
    }
    out
}

/// The WHEEL file with its `Tag:` lines replaced (at the place of the first one).
fn rewrite_wheel_tags(text: &str, tags: &[String]) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in text.lines() {
        if line
            .split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("tag"))
        {
            if !done {
                for t in tags {
                    out.push_str(&format!("Tag: {t}\n"));
                }
                done = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !done {
        for t in tags {
            out.push_str(&format!("Tag: {t}\n"));
        }
    }
    out
}

/// The wheel file name with its platform part replaced by the (compressed) tag set.
fn retag_file_name(name: &str, plats: &[String]) -> String {
    match (name.strip_suffix(".whl"), plats.is_empty()) {
        (Some(stem), false) => match stem.rsplit_once('-') {
            Some((head, _)) => format!("{head}-{}.whl", plats.join(".")),
            None => name.to_string(),
        },
        _ => name.to_string(),
    }
}

fn current_tag(e: &ElfReport) -> Option<SearchPathTag> {
    if !e.rpath.is_empty() {
        Some(SearchPathTag::Rpath)
    } else if !e.runpath.is_empty() {
        Some(SearchPathTag::Runpath)
    } else {
        None
    }
}

/// The human report.
pub fn render(r: &Report, style: crate::util::Style) -> String {
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
        for p in &w.patched {
            let mut what = Vec::new();
            if !p.rpath_added.is_empty() {
                what.push(format!("search path += {}", p.rpath_added.join(":")));
            }
            if !p.rpath_removed.is_empty() {
                what.push(format!("search path -= {}", p.rpath_removed.join(":")));
            }
            for (a, b) in &p.needed_replaced {
                what.push(format!("NEEDED {a} -> {b}"));
            }
            let _ = writeln!(out, "  patched   {}: {}", p.path, what.join("; "));
        }
        if !w.platform.tags.is_empty() {
            let _ = writeln!(out, "  tagged    {}", w.platform.tags.join("."));
        }
        for q in &w.requires_added {
            let _ = writeln!(out, "  requires  {q}");
        }
        if let Some(l) = &w.loader {
            let _ = writeln!(
                out,
                "  loader    {} (import {} before the first CUDA extension; {}=1 tries the system CUDA first)",
                l.path, l.module, l.prefer_system_env
            );
        }
        for u in &w.unhandled {
            let why = if u.contains('/') {
                "a NEEDED entry that names a path: ld.so opens exactly that path on the user's machine, so it is never grafted"
            } else {
                "neither a system, CUDA nor catalog library, and not found on this machine to graft"
            };
            let _ = writeln!(out, "  {} needs {u}: {why}", style.yellow("warning:"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_the_soname() {
        let one = |s: &str, p, l: &[&str]| {
            version_range(s, p, &l.iter().map(|x| x.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            one("libcublas.so.12", SonamePolicy::Major, &["libcublas.so.12"]).unwrap(),
            ">=12,<13"
        );
        assert_eq!(
            one("libcurand.so.10", SonamePolicy::Major, &["libcurand.so.10"]).unwrap(),
            ">=10,<11"
        );
        let nvrtc = ["libnvrtc.so.11.0", "libnvrtc.so.11.1", "libnvrtc.so.11.2"];
        assert_eq!(
            one("libnvrtc.so.11.1", SonamePolicy::MajorMinor, &nvrtc).unwrap(),
            ">=11.1,<11.2"
        );
        assert_eq!(
            one("libnvrtc.so.11.2", SonamePolicy::MajorMinor, &nvrtc).unwrap(),
            ">=11.2,<12"
        );
        assert_eq!(
            one(
                "libcudart.so.11.0",
                SonamePolicy::MajorMinor,
                &["libcudart.so.11.0"]
            )
            .unwrap(),
            ">=11.0,<12"
        );
        assert_eq!(one("librmm.so", SonamePolicy::None, &[]), None);
    }

    #[test]
    fn origin_paths_climb_to_the_root() {
        assert_eq!(
            origin_path("torch/lib/libtorch_cuda.so", "nvidia/cublas/lib"),
            "$ORIGIN/../../nvidia/cublas/lib"
        );
        assert_eq!(
            origin_path("ext.so", "nvidia/cu13/lib/"),
            "$ORIGIN/nvidia/cu13/lib"
        );
    }

    #[test]
    fn build_versions_raise_the_lower_bound() {
        assert_eq!(with_build_version(">=12,<13", "12.9.79"), ">=12.9.79,<13");
        assert_eq!(with_build_version(">=11.2,<12", "11.8.89"), ">=11.8.89,<12");
        // A version outside the SONAME's range says nothing about this library.
        assert_eq!(with_build_version(">=12,<13", "13.0.1"), ">=12,<13");
        assert_eq!(with_build_version("", "1.0"), "");
    }

    #[test]
    fn retagging() {
        let plats = vec![
            "manylinux2014_x86_64".to_string(),
            "manylinux_2_17_x86_64".to_string(),
        ];
        assert_eq!(
            retag_file_name("cupy_cuda12x-14.2.0-cp311-cp311-linux_x86_64.whl", &plats),
            "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
        );
        assert_eq!(
            retag_lines(&["cp311-cp311-linux_x86_64".into()], &plats),
            vec![
                "cp311-cp311-manylinux2014_x86_64",
                "cp311-cp311-manylinux_2_17_x86_64"
            ]
        );
        assert_eq!(
            rewrite_wheel_tags(
                "Wheel-Version: 1.0\nTag: a-b-c\nBuild: 1\n",
                &["a-b-x".into()]
            ),
            "Wheel-Version: 1.0\nTag: a-b-x\nBuild: 1\n"
        );
    }

    #[test]
    fn cuda_deps_parse() {
        assert_eq!("toolkit".parse::<CudaDeps>().unwrap(), CudaDeps::Toolkit);
        assert_eq!(
            "extra:CUDA".parse::<CudaDeps>().unwrap(),
            CudaDeps::Extra("cuda".into())
        );
        assert!("extra:".parse::<CudaDeps>().is_err());
        assert!("bogus".parse::<CudaDeps>().is_err());
    }
}
