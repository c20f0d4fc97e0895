//! `cudist toolkit`: one CUDA root (a `CUDA_HOME`) assembled from the CUDA wheels of an
//! environment, so nvcc, CMake's FindCUDAToolkit and pkg-config work against the same files the
//! program will load at run time; `cudist toolkit env`: the variables to use it.
//!
//! The work is cudist-toolkit's ([`cudist_toolkit`]: plan, generate, write, env); this module turns
//! arguments into its calls and renders the report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use cudist_catalog::Catalog;
use serde::Serialize;

use crate::util::{self, Style, Table};
use cudist_analysis::environment::{check_versions, Source, SourceKind, Spec};
use cudist_toolkit::{env, generate, plan, write};

/// Which environment to read, as given on the command line.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SourceArgs {
    /// Read the environment of this Python interpreter (default: `python3` on PATH).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["site_packages", "conda_prefix"])]
    pub python: Option<PathBuf>,
    /// Read these site-packages directories instead of asking an interpreter (repeatable).
    #[arg(
        long = "site-packages",
        value_name = "DIR",
        conflicts_with = "conda_prefix"
    )]
    pub site_packages: Vec<PathBuf>,
    /// Read the CUDA packages of this conda prefix (from its conda-meta/ records).
    #[arg(long, value_name = "DIR")]
    pub conda_prefix: Option<PathBuf>,
}

impl SourceArgs {
    /// The environment these arguments name, with relative directories made absolute.
    fn spec(&self) -> Result<Spec> {
        Ok(Spec {
            python: self.python.clone(),
            site_packages: self
                .site_packages
                .iter()
                .map(std::path::absolute)
                .collect::<std::io::Result<_>>()?,
            conda_prefix: self
                .conda_prefix
                .as_deref()
                .map(std::path::absolute)
                .transpose()?,
        })
    }
}

/// `cudist toolkit` arguments (assembling a root).
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Where to assemble the CUDA root (must not exist, unless --force).
    #[arg(
        long,
        short = 'o',
        value_name = "DIR",
        required_unless_present = "in_place"
    )]
    pub out: Option<PathBuf>,
    /// Copy the files instead of linking them (a relocatable root that outlives the environment).
    #[arg(long)]
    pub copy: bool,
    /// Replace --out if it is a root cudist wrote before (or empty).
    #[arg(long)]
    pub force: bool,
    /// Add only the missing linker-name links and the libcuda.so stub inside the environment's
    /// own CUDA wheel directories (recorded in their RECORD files): for PEP 517 build environments.
    #[arg(long, conflicts_with_all = ["out", "copy", "force"])]
    pub in_place: bool,
    /// Show what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print the report as JSON (schema cudist.toolkit/1, docs/json-schema.md).
    #[arg(long)]
    pub json: bool,
}

/// `cudist toolkit env` arguments.
#[derive(clap::Args, Debug)]
pub struct EnvArgs {
    /// A root made by `cudist toolkit --out`; without it, the environment's own CUDA wheel
    /// directories (as `--in-place` prepares them).
    #[arg(value_name = "ROOT")]
    pub root: Option<PathBuf>,
    /// The shell to print for.
    #[arg(long, value_name = "SHELL", default_value = "sh", value_parser = ["sh", "fish"])]
    pub shell: String,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print the variables as JSON (schema cudist.toolkit.env/1).
    #[arg(long)]
    pub json: bool,
}

/// The schema identifier of `cudist toolkit --json`.
pub const SCHEMA: &str = "cudist.toolkit/1";
/// The schema identifier of `cudist toolkit env --json`.
pub const ENV_SCHEMA: &str = "cudist.toolkit.env/1";

/// The answer of `cudist toolkit env --json` (schema `cudist.toolkit.env/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct EnvReport {
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// The CUDA root the variables point at (`CUDA_HOME`).
    pub root: Option<String>,
    /// Variables to set, by name (`CUDA_HOME`, `CUDAToolkit_ROOT`, …).
    pub set: std::collections::BTreeMap<String, String>,
    /// Search paths, by name (`PATH`, `PKG_CONFIG_PATH`, …): directories to put before the
    /// current value, first first.
    pub prepend: std::collections::BTreeMap<String, Vec<String>>,
    /// What the user should know about this environment (e.g. it cannot link `-lcudart` yet).
    pub notes: Vec<String>,
}

/// The report of `cudist toolkit` (`--json`: schema `cudist.toolkit/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    pub source: SourceRow,
    pub cuda: CudaRow,
    /// `link`, `copy` or `in-place`.
    pub mode: &'static str,
    pub out: Option<String>,
    pub dry_run: bool,
    pub components: Vec<plan::ComponentRow>,
    /// The executables in `bin/`, and whether nvcc is among them.
    pub tools: Vec<String>,
    pub nvcc: bool,
    pub libraries: Vec<generate::LibRow>,
    pub stub: Option<generate::StubRow>,
    pub conflicts: Vec<plan::Conflict>,
    /// Tools that were not executable in the environment, copied and made executable.
    pub exec_fixed: Vec<String>,
    pub added: Vec<write::Added>,
    pub notes: Vec<String>,
    pub stats: write::Stats,
    pub seconds: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SourceRow {
    pub kind: SourceKind,
    pub description: String,
    pub roots: Vec<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CudaRow {
    pub major: u32,
    pub version: String,
    /// The `cuda-toolkit` (pip) or `cuda-version` (conda) release, when installed.
    pub release: Option<String>,
}

fn read_source(args: &SourceArgs, catalog: &Catalog) -> Result<Source> {
    Ok(cudist_toolkit::read_source(&args.spec()?, catalog)?)
}

/// Runs `cudist toolkit` (assemble, or `--in-place`).
pub fn run(args: BuildArgs, catalog: &Catalog) -> Result<ExitCode> {
    let started = Instant::now();
    let spinner = util::Spinner::start("reading the environment's CUDA wheels");
    let source = read_source(&args.source, catalog)?;
    let major = check_versions(&source, catalog)?;
    let mut report = Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        source: SourceRow {
            kind: source.kind,
            description: source.description.clone(),
            roots: source
                .roots
                .iter()
                .map(|r| r.display().to_string())
                .collect(),
        },
        cuda: CudaRow {
            major,
            version: String::new(),
            release: source.release.clone(),
        },
        mode: if args.in_place {
            "in-place"
        } else if args.copy {
            "copy"
        } else {
            "link"
        },
        out: None,
        dry_run: args.dry_run,
        components: Vec::new(),
        tools: Vec::new(),
        nvcc: false,
        libraries: Vec::new(),
        stub: None,
        conflicts: Vec::new(),
        exec_fixed: Vec::new(),
        added: Vec::new(),
        notes: Vec::new(),
        stats: write::Stats::default(),
        seconds: 0.0,
    };
    let out = match &args.out {
        Some(o) if !args.in_place => Some(std::path::absolute(o)?),
        _ => None,
    };
    let pc_root = out
        .as_ref()
        .filter(|_| !args.copy)
        .map(|o| o.display().to_string());
    let mut plan = plan::plan(&source, catalog, major)?;
    let generated = generate::complete(&mut plan, &source, catalog, pc_root.as_deref())?;
    report.cuda.version = plan.version.clone();
    report.tools = plan
        .entries
        .keys()
        .filter_map(|k| k.strip_prefix("bin/"))
        .filter(|k| !k.contains('/') && !k.ends_with(".profile"))
        .map(str::to_string)
        .collect();
    report.nvcc = plan.entries.contains_key("bin/nvcc");
    report.components = std::mem::take(&mut plan.components);
    report.conflicts = plan.conflicts.clone();
    report.exec_fixed = plan.exec_fixed.clone();
    report.libraries = generated.libraries;
    report.stub = generated.stub;
    report.notes = generated.notes;

    if args.in_place {
        if source.kind != SourceKind::Pip {
            bail!("--in-place works on pip environments; a conda prefix gets its links from the -dev packages");
        }
        if let Some(s) = &spinner {
            s.set_message("adding linker names in place");
        }
        report.added = write::in_place(&source, args.dry_run)?;
    } else {
        let out = out.expect("clap requires --out without --in-place");
        report.out = Some(out.display().to_string());
        if !args.dry_run {
            let mode = if args.copy {
                write::Mode::Copy
            } else {
                write::Mode::Link
            };
            if let Some(s) = &spinner {
                s.set_message(format!("writing {}", out.display()));
            }
            report.stats = write::write_root(&plan, &out, mode, args.force, &source)?;
        }
    }
    drop(spinner);
    report.seconds = started.elapsed().as_secs_f64();
    if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report, Style::detect()));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(r: &Report, style: Style) -> String {
    let mut s = String::new();
    let what = if r.dry_run {
        "would assemble"
    } else {
        "assembled"
    };
    match (&r.out, r.mode) {
        (Some(out), mode) => s.push_str(&format!(
            "{} CUDA {} root ({}) {what} at {out}\n",
            style.bold("cudist toolkit:"),
            r.cuda.version,
            if mode == "copy" { "copies" } else { "links" },
        )),
        (None, _) => s.push_str(&format!(
            "{} CUDA {} wheel directories completed in place{}\n",
            style.bold("cudist toolkit:"),
            r.cuda.version,
            if r.dry_run { " (dry run)" } else { "" }
        )),
    }
    s.push_str(&format!("  from {}\n\n", r.source.description));
    let mut t = Table::new(&["PACKAGE", "VERSION", "CUDA", "COMPONENT", "FILES"]);
    for c in &r.components {
        t.row(vec![
            c.name.clone(),
            c.version.clone(),
            c.major.map(|m| m.to_string()).unwrap_or("-".into()),
            c.redist.clone().unwrap_or("-".into()),
            c.files.to_string(),
        ]);
    }
    s.push_str(&t.render(2, style));
    s.push('\n');
    if r.out.is_some() {
        let nvcc = if r.nvcc {
            style.green("nvcc")
        } else {
            style.yellow("no nvcc")
        };
        s.push_str(&format!("  bin/      {nvcc}; {}\n", r.tools.join(", ")));
        for l in &r.libraries {
            let links: Vec<&str> = l
                .links
                .iter()
                .map(|p| p.trim_start_matches("lib64/"))
                .collect();
            if !links.is_empty() {
                s.push_str(&format!(
                    "  lib64/    {} -> {}\n",
                    links.join(", "),
                    l.file.trim_start_matches("lib64/")
                ));
            }
        }
        match &r.stub {
            Some(st) if st.symbols > 0 => s.push_str(&format!(
                "  stubs/    libcuda.so (SONAME {}, {} driver API functions, {})\n",
                st.soname, st.symbols, st.from
            )),
            Some(st) => s.push_str(&format!("  stubs/    libcuda.so (from {})\n", st.from)),
            None => {}
        }
        let pcs: Vec<&str> = r
            .libraries
            .iter()
            .flat_map(|l| l.pkg_config.iter())
            .chain(r.stub.iter().flat_map(|s| s.pkg_config.iter()))
            .filter_map(|p| p.strip_prefix("lib64/pkgconfig/"))
            .filter(|p| {
                p.matches('-').count() > 0
                    && p.rsplit_once('-')
                        .is_some_and(|(_, v)| v.starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        if !pcs.is_empty() {
            s.push_str(&format!("  pkgconfig/ {}\n", pcs.join(" ")));
        }
        if !r.dry_run {
            s.push_str(&format!(
                "  {} links, {} copied files ({}), {} generated files in {:.2} s\n",
                r.stats.links,
                r.stats.files,
                util::human_bytes(r.stats.bytes_copied),
                r.stats.generated,
                r.seconds
            ));
        }
    } else {
        for a in &r.added {
            s.push_str(&format!(
                "  added {} {} (recorded in {})\n",
                a.kind, a.path, a.package
            ));
        }
        if r.added.is_empty() {
            s.push_str("  nothing to add: every library has its links\n");
        }
    }
    for c in &r.conflicts {
        s.push_str(&format!(
            "  {} {} differs between {}; kept {}'s\n",
            style.yellow("conflict:"),
            c.path,
            c.packages.join(" and "),
            c.kept
        ));
    }
    for e in &r.exec_fixed {
        s.push_str(&format!(
            "  note: {e} was not executable in the environment; copied and made executable\n"
        ));
    }
    for n in &r.notes {
        s.push_str(&format!("  {} {n}\n", style.yellow("note:")));
    }
    if let Some(out) = &r.out {
        if !r.dry_run {
            s.push_str(&format!(
                "\n  use it: eval \"$(cudist toolkit env {out})\"\n"
            ));
        }
    }
    s
}

/// Runs `cudist toolkit env`.
pub fn run_env(args: EnvArgs, catalog: &Catalog) -> Result<ExitCode> {
    let dirs = match &args.root {
        Some(root) => env::of_root(root)?,
        None => {
            let source = read_source(&args.source, catalog)?;
            check_versions(&source, catalog)?;
            env::of_wheel_dirs(&source)
        }
    };
    let vars = env::variables(&dirs);
    if args.json {
        let doc = EnvReport {
            schema: ENV_SCHEMA,
            cudist_version: env!("CARGO_PKG_VERSION"),
            root: dirs.roots.first().map(|r| r.display().to_string()),
            set: vars
                .iter()
                .filter(|v| !v.prepend)
                .map(|v| (v.name.to_string(), v.values[0].clone()))
                .collect(),
            prepend: vars
                .iter()
                .filter(|v| v.prepend)
                .map(|v| (v.name.to_string(), v.values.clone()))
                .collect(),
            notes: dirs.notes.clone(),
        };
        util::print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut s = String::new();
    for n in &dirs.notes {
        s.push_str(&format!("# {n}\n"));
    }
    for env::Var {
        name,
        values,
        prepend,
    } in vars
    {
        let quoted: Vec<String> = values.iter().map(|v| sh_quote(v)).collect();
        match (args.shell.as_str(), prepend) {
            ("fish", false) => s.push_str(&format!("set -gx {name} {}\n", quoted[0])),
            ("fish", true) => s.push_str(&format!("set -gx {name} {} ${name}\n", quoted.join(" "))),
            (_, false) => s.push_str(&format!("export {name}={}\n", quoted[0])),
            (_, true) => s.push_str(&format!(
                "export {name}={}${{{name}:+:${name}}}\n",
                quoted.join(":")
            )),
        }
    }
    util::emit(&s);
    Ok(ExitCode::SUCCESS)
}

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
