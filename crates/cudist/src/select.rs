//! `cudist select`: the build of a package to install on a machine, from candidate wheels, judged
//! by what they contain (cudist_analysis::select).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use cudist_analysis::open::{expand_inputs, Input};
use cudist_analysis::runtime::host::Host;
use cudist_analysis::select::{family, judge, Judged};
use cudist_catalog::Catalog;
use serde::Serialize;

use crate::errors;
use crate::util;

/// The `schema` of `cudist select --json`.
pub const SCHEMA: &str = "cudist.select/1";

/// `cudist select` arguments.
#[derive(clap::Args, Debug)]
pub struct SelectArgs {
    /// Candidate wheels, or wheelhouse directories (every `.whl` at their top level).
    #[arg(
        value_name = "CANDIDATE",
        required_unless_present = "variant_properties"
    )]
    pub candidates: Vec<PathBuf>,
    /// Print the host's wheel-variant properties (`nvidia :: sm_arch :: 90_real`, one per line, in
    /// priority order), as NVIDIA's variant provider plugin would report them; no candidates.
    #[arg(long, conflicts_with_all = ["json", "print_requirement", "candidates"])]
    pub variant_properties: bool,
    /// Only candidates of this package: its name, or the family name its builds share
    /// (`cupy` for cupy-cuda12x and cupy-cuda13x, `torch`).
    #[arg(long, value_name = "NAME")]
    pub package: Option<String>,
    /// The machine: a doctor `--host` profile (FILE), or `this` (the default).
    #[arg(long, value_name = "FILE|this", default_value = "this")]
    pub host: String,
    /// The Python the wheel is for: a version (`3.11`) or an interpreter to ask; default: the
    /// profile's `python`, else `python3` on PATH.
    #[arg(long, value_name = "VERSION|PATH")]
    pub python: Option<String>,
    /// Print only the requirement to hand to pip or uv (`cupy-cuda12x==14.2.0`).
    #[arg(long, conflicts_with = "json")]
    pub print_requirement: bool,
    /// Print the report as JSON (schema cudist.select/1).
    #[arg(long)]
    pub json: bool,
}

/// The report of `cudist select`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `cudist.select/1`.
    pub schema: String,
    /// The cudist release that wrote it.
    pub cudist_version: String,
    /// The machine judged for.
    pub host: Host,
    /// The best candidate's file name; null when every candidate is rejected.
    pub best: Option<String>,
    /// The requirement to install it with (`cupy-cuda12x==14.2.0`).
    pub requirement: Option<String>,
    /// Every candidate, best first, with why it ranks there.
    pub candidates: Vec<Judged>,
}

/// The Python version of `--python`: a version as given, or what an interpreter says.
fn python_version(spec: &str) -> Result<String> {
    if spec.split('.').all(|p| p.parse::<u32>().is_ok()) && spec.starts_with("3.") {
        return Ok(spec.to_string());
    }
    let out = std::process::Command::new(spec)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .map_err(|e| errors::input(format!("--python {spec}: cannot run it: {e}")))?;
    if !out.status.success() {
        bail!(errors::input(format!(
            "--python {spec}: it did not say its version"
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `cudist select`.
pub fn run(args: SelectArgs, catalog: &Catalog) -> Result<ExitCode> {
    let mut host = if args.host == "this" {
        Host::detect()
    } else {
        Host::load(Path::new(&args.host))?
    };
    match (&args.python, &host.python) {
        (Some(p), _) => host.python = Some(python_version(p)?),
        (None, None) => host.python = python_version("python3").ok(),
        _ => {}
    }
    if args.variant_properties {
        let props = cudist_analysis::select::variants::host_properties(&host, catalog);
        let mut text = String::new();
        if props.is_empty() {
            text.push_str("# no NVIDIA driver (or one outside CUDA 11.0-15.20): the provider reports nothing\n");
        }
        for p in props {
            text.push_str(&p);
            text.push('\n');
        }
        util::emit(&text);
        return Ok(ExitCode::SUCCESS);
    }
    let (inputs, errors) = expand_inputs(&args.candidates);
    if let Some(e) = errors.first() {
        bail!(errors::input(format!("{}: {}", e.path, e.error)));
    }
    let wheels: Vec<&Input> = inputs
        .iter()
        .filter(|i| matches!(i, Input::Wheel(_)))
        .collect();
    if wheels.len() != inputs.len() {
        bail!(errors::input(
            "select judges wheels: give wheel files or directories of wheels"
        ));
    }
    let wanted = args.package.as_deref().map(family);
    let mut artifacts = Vec::new();
    for w in wheels {
        let file = w
            .path()
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if let (Some(f), Some(n)) = (&wanted, cudist_wheel::WheelName::parse(&file)) {
            if family(&n.distribution) != *f {
                continue;
            }
        }
        let spinner = util::Spinner::start(format!("reading {}", w.path().display()));
        let a = cudist_analysis::artifact::inspect_one(w, catalog)?;
        drop(spinner);
        artifacts.push((w.path().display().to_string(), a));
    }
    if artifacts.is_empty() {
        bail!(errors::input(match &args.package {
            Some(p) => format!("no candidate wheel of {p}"),
            None => "no candidate wheel".to_string(),
        }));
    }
    let refs: Vec<(String, &cudist_analysis::model::Artifact)> =
        artifacts.iter().map(|(p, a)| (p.clone(), a)).collect();
    let judged = judge(&refs, &host, catalog);
    let best = judged.first().filter(|j| j.outcome == "best");
    let requirement = best.map(|j| {
        format!(
            "{}=={}",
            j.distribution.to_ascii_lowercase().replace('_', "-"),
            j.version
        )
    });
    let report = Report {
        schema: SCHEMA.into(),
        cudist_version: env!("CARGO_PKG_VERSION").into(),
        best: best.map(|j| j.file.clone()),
        requirement: requirement.clone(),
        host,
        candidates: judged,
    };
    if args.print_requirement {
        match &requirement {
            Some(r) => util::emit(&format!("{r}\n")),
            None => util::emit(&render(&report)),
        }
    } else if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report));
    }
    Ok(if report.best.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn render(r: &Report) -> String {
    let h = &r.host;
    let mut s = String::new();
    let gpus: Vec<String> = h
        .gpus
        .iter()
        .map(|g| format!("{} (sm_{})", g.name.as_deref().unwrap_or("GPU"), g.sm))
        .chain(h.amd_gpus.iter().map(|g| format!("AMD {}", g.gfx)))
        .collect();
    s.push_str(&format!(
        "for {}: driver {}, GPUs {}; Python {}, glibc {}, {}\n",
        h.name.as_deref().unwrap_or("the host"),
        h.driver.as_deref().unwrap_or("none"),
        if gpus.is_empty() {
            "none".to_string()
        } else {
            gpus.join(", ")
        },
        h.python.as_deref().unwrap_or("?"),
        h.glibc.as_deref().unwrap_or("?"),
        h.arch.as_deref().unwrap_or("x86_64"),
    ));
    match (&r.best, &r.requirement) {
        (Some(b), Some(req)) => s.push_str(&format!("best: {b}\n  install: {req}\n")),
        _ => s.push_str("no candidate works here\n"),
    }
    for j in &r.candidates {
        s.push_str(&format!(
            "{:>3}  {:<10} {}  ({})\n",
            j.rank,
            j.outcome,
            j.file,
            cudist_analysis::human_bytes(j.size)
        ));
        for reason in &j.reasons {
            s.push_str(&format!("       {reason}\n"));
        }
    }
    s
}
