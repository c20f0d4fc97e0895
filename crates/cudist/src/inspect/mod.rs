//! `cudist inspect`: what CUDA an artifact needs, carries, links statically, and runs on — the
//! report of cudist-analysis, as a table, `--json` or cuobjdump's listing.

mod render;

use std::path::PathBuf;
use std::process::ExitCode;

use cudist_analysis::model::VerdictStatus;
use cudist_catalog::Catalog;

use crate::util;

#[derive(clap::Args)]
pub struct InspectArgs {
    /// Wheels (.whl), conda packages (.conda, .tar.bz2), directories (unpacked trees, install
    /// prefixes, wheelhouses) or ELF files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print the report as JSON (schema cudist.inspect/2, docs/json-schema.md).
    #[arg(long)]
    pub json: bool,
    /// Add a table with one row per ELF file.
    #[arg(long)]
    pub files: bool,
    /// Add every fatbin entry of every ELF file.
    #[arg(long)]
    pub entries: bool,
    /// Print only the device-code listing, in the exact format of `cuobjdump --list-elf --list-ptx`.
    #[arg(long, conflicts_with_all = ["json", "files", "entries"])]
    pub cuobjdump: bool,
    /// Exit with code 1 when an artifact's verdict is one of these (comma-separated: misbuilt,
    /// unportable, bloated, unresolved, bundles-driver), to fail a CI job on it. Unreadable inputs still exit 3.
    #[arg(long, value_name = "KINDS", value_delimiter = ',', value_parser = parse_status)]
    pub fail_on: Vec<VerdictStatus>,
    /// Exit with code 1 when any artifact's verdict is not OK (--fail-on with every kind).
    #[arg(long, conflicts_with = "fail_on")]
    pub strict: bool,
    /// Print, per wheel, the wheel-variant properties its content needs (`nvidia :: sm_arch ::
    /// 90_real`, `nvidia :: cuda_version_lower_bound :: 13`, `x86_64 :: level :: v3`), those its
    /// `variant.json` declares, and where the two disagree (exit 1 then).
    #[arg(long, conflicts_with_all = ["json", "files", "entries", "cuobjdump"])]
    pub variant_properties: bool,
}

/// A `--fail-on` kind: a verdict status as the JSON writes it.
fn parse_status(s: &str) -> Result<VerdictStatus, String> {
    Ok(match s {
        "misbuilt" => VerdictStatus::Misbuilt,
        "unportable" => VerdictStatus::Unportable,
        "bloated" => VerdictStatus::Bloated,
        "unresolved" => VerdictStatus::Unresolved,
        "bundles-driver" => VerdictStatus::BundlesDriver,
        _ => {
            return Err(format!(
                "{s:?}: expected misbuilt, unportable, bloated, unresolved or bundles-driver"
            ))
        }
    })
}

pub fn run(args: InspectArgs, catalog: &Catalog) -> anyhow::Result<ExitCode> {
    let (inputs, mut errors) = cudist_analysis::expand_inputs(&args.paths);
    let spinner = util::Spinner::start(match inputs.len() {
        1 => format!("inspecting {}", inputs[0].path().display()),
        n => format!("inspecting {n} inputs"),
    });
    let mut report = cudist_analysis::inspect(&inputs, catalog);
    drop(spinner);
    report.summary.errors += errors.len();
    errors.append(&mut report.errors);
    report.errors = errors;
    let style = util::Style::detect();
    if args.variant_properties {
        return variant_properties(&report, catalog);
    }
    if args.json {
        util::print_json(&report)?;
    } else if args.cuobjdump {
        util::emit(&cuobjdump_listings(&report, &args.paths));
    } else {
        let opts = render::RenderOptions {
            files: args.files,
            entries: args.entries,
        };
        util::emit(&render::render(&report, opts, style));
    }
    if !args.json {
        let inside = report
            .artifacts
            .iter()
            .flat_map(|a| a.problems.iter().map(move |p| (Some(a.path.as_str()), p)));
        util::print_input_errors(report.errors.iter().map(|e| (None, e)).chain(inside));
    }
    if report.summary.errors > 0 {
        return Ok(ExitCode::from(util::EXIT_INPUT));
    }
    let fails =
        |s: VerdictStatus| s != VerdictStatus::Ok && (args.strict || args.fail_on.contains(&s));
    let failing: Vec<&cudist_analysis::model::Artifact> = report
        .artifacts
        .iter()
        .filter(|a| fails(a.verdict.status))
        .collect();
    for a in &failing {
        let status = serde_json::to_value(a.verdict.status)?;
        eprintln!(
            "cudist inspect: {}: verdict {} ({})",
            a.path,
            status.as_str().unwrap_or_default(),
            if args.strict { "--strict" } else { "--fail-on" }
        );
    }
    Ok(if failing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// cuobjdump-format listings: a lone ELF prints exactly what `cuobjdump --list-elf --list-ptx PATH`
/// prints to stdout; for several files, a `== path` line precedes each listing (the stem is taken
/// from the member's file name, as if cuobjdump ran on the extracted file).
fn cuobjdump_listings(report: &cudist_analysis::model::Report, args: &[PathBuf]) -> String {
    let single = report.artifacts.len() == 1
        && report.artifacts[0].kind == cudist_analysis::model::ArtifactKind::Elf;
    let mut out = String::new();
    for a in &report.artifacts {
        for e in a.elf_files.iter().filter(|e| !e.device_code.is_empty()) {
            let as_given = if single {
                args.iter()
                    .find(|p| p.display().to_string() == a.path)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| e.path.clone())
            } else {
                out.push_str(&format!("== {}\n", e.path));
                e.path.rsplit('/').next().unwrap_or(&e.path).to_string()
            };
            out.push_str(&cudist_fatbin::cuobjdump_listing(
                &as_given,
                cudist_analysis::device::cuobjdump_items(&e.device_code),
            ));
        }
    }
    out
}

/// `--variant-properties`: per wheel, what its content needs, what it declares, and where they
/// disagree.
fn variant_properties(
    report: &cudist_analysis::model::Report,
    catalog: &Catalog,
) -> anyhow::Result<ExitCode> {
    use cudist_analysis::select::variants;
    let mut out = String::new();
    let mut disagree = false;
    for a in &report.artifacts {
        if a.kind != cudist_analysis::model::ArtifactKind::Wheel {
            continue;
        }
        out.push_str(&format!("# {}\n", a.path));
        let content = variants::content_properties(a, catalog);
        for p in &content {
            out.push_str(&format!("{p}\n"));
        }
        let wheel = cudist_wheel::Wheel::open(std::path::Path::new(&a.path))?;
        let dist_info = wheel.dist_info()?;
        if let Some(json) = wheel.dist_info_file(&dist_info, "variant.json")? {
            let declared = variants::declared_properties(&json)
                .map_err(|e| crate::errors::input(format!("{}: {e}", a.path)))?;
            for p in &declared {
                out.push_str(&format!("# declared: {p}\n"));
            }
            for d in variants::disagreements(&declared, &content) {
                disagree = true;
                out.push_str(&format!("# disagrees: {d}\n"));
            }
        }
    }
    util::emit(&out);
    Ok(if disagree {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
