//! The `cudist` command line: parses arguments, runs one command, reports errors.
//!
//! Exit codes (stable, documented in README.md):
//! 0 success · 1 failure (a problem found with `--check`-style options, or an internal error) ·
//! 2 usage error · 3 an input could not be read or is malformed.

mod catalog_cmd;
mod doctor;
mod elf_files;
mod errors;
mod graft;
mod inspect;
mod relink;
mod repair;
mod self_check;
mod split;
mod toolkit;
mod util;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cudist_catalog::Catalog;
use util::outln;

/// Exit code for unreadable or malformed input.
const EXIT_INPUT: u8 = 3;

#[derive(Parser)]
#[command(
    name = "cudist",
    version,
    about = "Make CUDA binaries ship lean and load right: wheels, conda packages, install trees.",
    propagate_version = true
)]
struct Cli {
    /// Extra catalog file(s) (TOML, the schema of docs/catalog.md) merged over the built-in one.
    #[arg(long = "catalog", value_name = "FILE", global = true)]
    catalogs: Vec<PathBuf>,

    /// The most bytes one input (a wheel, a conda package, an archive) may unpack to: 16G by
    /// default, above any real package; larger inputs are refused before anything is unpacked.
    #[arg(long, value_name = "SIZE", global = true, value_parser = parse_size)]
    max_unpacked: Option<u64>,

    /// The most bytes of unpacked members held in memory at once, over all threads (1G by
    /// default); a larger member is unpacked to an unlinked temporary file in TMPDIR and mapped.
    #[arg(long, value_name = "SIZE", global = true, value_parser = parse_size)]
    max_memory: Option<u64>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report the CUDA an artifact needs, carries, links statically and runs on.
    Inspect(InspectArgs),
    /// Make wheels depend on NVIDIA's CUDA wheels instead of carrying CUDA.
    Repair(RepairArgs),
    /// Assemble a CUDA root (CUDA_HOME) from the CUDA wheels of an environment, for nvcc, CMake
    /// and pkg-config; `toolkit env` prints the variables to use it.
    Toolkit(ToolkitArgs),
    /// Split CUDA wheels into components × outputs (lib, dev, static, stubs, bin, doc) with pins.
    Split(split::SplitArgs),
    /// Distro fix-ups over an installed tree: driver RUNPATH, $ORIGIN-relative search paths, a
    /// check for references outside the tree.
    Relink(relink::RelinkArgs),
    /// Will these ELF files load here, and exactly why not (load simulation by glibc's rules).
    Doctor(doctor::DoctorArgs),
    /// Answer questions from the CUDA catalog.
    #[command(subcommand)]
    Catalog(catalog_cmd::CatalogCmd),
    /// This cudist's version and catalog, and which tools its results are checked against
    /// (readelf, cuobjdump, ldd, nvcc, …) it can reach here.
    SelfCheck(self_check::SelfCheckArgs),
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct ToolkitArgs {
    #[command(subcommand)]
    sub: Option<ToolkitSub>,
    #[command(flatten)]
    build: toolkit::BuildArgs,
}

#[derive(Subcommand)]
enum ToolkitSub {
    /// Print the environment (CUDA_HOME, PATH, LIBRARY_PATH, CPATH, …) that uses a root.
    Env(toolkit::EnvArgs),
}

#[derive(clap::Args)]
struct RepairArgs {
    /// Wheels, or directories of wheels.
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
    /// Where the repaired wheels go (created if missing; inputs are never modified).
    #[arg(
        short = 'w',
        long = "wheel-dir",
        value_name = "OUTDIR",
        default_value = "wheelhouse"
    )]
    wheel_dir: PathBuf,
    /// Print the plan without writing anything.
    #[arg(long)]
    dry_run: bool,
    /// How to declare the CUDA wheels: per-component, toolkit (cuda-toolkit[extras]==X.*) or
    /// extra:NAME (per component, under an optional extra).
    #[arg(long, value_name = "STYLE", default_value = "per-component")]
    cuda_deps: repair::CudaDeps,
    /// Write DT_RUNPATH instead of DT_RPATH (DT_RPATH, the default, is what auditwheel and torch use).
    #[arg(long)]
    runpath: bool,
    /// Compression of changed members: fast, default or best.
    #[arg(long, value_name = "LEVEL", default_value = "default", value_parser = ["fast", "default", "best"])]
    compression: String,
    /// Refuse wheels whose RECORD does not match their content.
    #[arg(long)]
    verify: bool,
    /// Copy unchanged members without inflating them once to check their CRC (faster; a damaged
    /// member is then passed on, and pip refuses the repaired wheel instead).
    #[arg(long)]
    no_crc_check: bool,
    /// Tag with this platform policy (manylinux_2_28, manylinux2014, …) or fail saying what
    /// blocks it; default: the most compatible policy the repaired wheel satisfies.
    #[arg(long, value_name = "POLICY")]
    plat: Option<String>,
    /// Also add a module that preloads the CUDA libraries from every sys.path entry's CUDA wheel
    /// directories (for installs where $ORIGIN/../.. does not reach them). Your code must import
    /// it; cudist never edits your code.
    #[arg(long)]
    loader: bool,
    /// The site-packages the wheel was built against (e.g. the build venv's): the CUDA wheels
    /// installed there give the lower bounds of the requirements.
    #[arg(long, value_name = "SITE_PACKAGES")]
    build_env: Option<PathBuf>,
    /// Print the report as JSON (schema cudist.repair/1).
    #[arg(long)]
    json: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct InspectArgs {
    /// Wheels (.whl), directories (unpacked trees, install prefixes, wheelhouses) or ELF files.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print the report as JSON (schema cudist.inspect/1, docs/json-schema.md).
    #[arg(long)]
    json: bool,
    /// Add a table with one row per ELF file.
    #[arg(long)]
    files: bool,
    /// Add every fatbin entry of every ELF file.
    #[arg(long)]
    entries: bool,
    /// Print only the device-code listing, in the exact format of `cuobjdump --list-elf --list-ptx`.
    #[arg(long, conflicts_with_all = ["json", "files", "entries"])]
    cuobjdump: bool,
}

/// `--max-unpacked` and `--max-memory` values: `4096`, `512M`, `16G`.
fn parse_size(s: &str) -> Result<u64, String> {
    cudist_fs::limits::parse_size(s)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--version` also names the CUDA releases the built-in catalog covers.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            outln!("{}", self_check::version_line());
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let mut limits = cudist_fs::limits();
    if let Some(n) = cli.max_unpacked {
        limits.unpacked = n;
    }
    if let Some(n) = cli.max_memory {
        limits.memory = n;
    }
    cudist_fs::set_limits(limits);
    let catalog = match Catalog::with_user_files(&cli.catalogs) {
        Ok(c) => c,
        Err(e) => {
            report_error(&anyhow::Error::new(e));
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => run_inspect(args, &catalog),
        Command::Repair(args) => run_repair(args, &catalog),
        Command::Toolkit(args) => match args.sub {
            Some(ToolkitSub::Env(env)) => toolkit::run_env(env, &catalog),
            None => toolkit::run(args.build, &catalog),
        },
        Command::Doctor(args) => doctor::run(args, &catalog),
        Command::Relink(args) => relink::run(args, &catalog),
        Command::Split(args) => split::run(args, &catalog),
        Command::Catalog(cmd) => catalog_cmd::run(cmd, &catalog),
        Command::SelfCheck(args) => self_check::run(args, &catalog),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            ExitCode::from(if errors::is_bad_input(&e) {
                EXIT_INPUT
            } else {
                1
            })
        }
    }
}

/// The one place errors are printed: the message, its causes, and a hint where one helps.
fn report_error(e: &anyhow::Error) {
    eprintln!("error: {e}");
    for cause in e.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    if let Some(h) = errors::hint(e) {
        eprintln!("  hint: {h}");
    }
}

/// Prints unreadable inputs (and, with the artifact's path, unreadable files inside artifacts) to
/// stderr with their hints.
fn print_input_errors<'a>(
    errors: impl Iterator<Item = (Option<&'a str>, &'a cudist_analysis::model::InputError)>,
) {
    for (artifact, e) in errors {
        match artifact {
            Some(a) => eprintln!("error: {a}: {}", e.error),
            None => eprintln!("error: {}: {}", e.path, e.error),
        }
        if let Some(h) = &e.hint {
            eprintln!("  hint: {h}");
        }
    }
}

fn run_repair(args: RepairArgs, catalog: &Catalog) -> anyhow::Result<ExitCode> {
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
    let opts = repair::Options {
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
    let mut report = repair::repair(&wheels, catalog, &opts);
    if let Some(bar) = &opts.progress {
        bar.finish_and_clear();
    }
    errors.append(&mut report.errors);
    report.errors = errors;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if !args.quiet {
        util::emit(&repair::render(&report, util::Style::detect()));
    }
    if !args.json {
        print_input_errors(report.errors.iter().map(|e| (None, e)));
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INPUT)
    })
}

fn run_inspect(args: InspectArgs, catalog: &Catalog) -> anyhow::Result<ExitCode> {
    let (inputs, mut errors) = inspect::expand_inputs(&args.paths);
    let mut report = inspect::inspect(&inputs, catalog);
    report.summary.errors += errors.len();
    errors.append(&mut report.errors);
    report.errors = errors;
    let style = util::Style::detect();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if args.cuobjdump {
        util::emit(&cuobjdump_listings(&report, &args.paths));
    } else {
        let opts = inspect::render::RenderOptions {
            files: args.files,
            entries: args.entries,
        };
        util::emit(&inspect::render::render(&report, opts, style));
    }
    if !args.json {
        let inside = report
            .artifacts
            .iter()
            .flat_map(|a| a.problems.iter().map(move |p| (Some(a.path.as_str()), p)));
        print_input_errors(report.errors.iter().map(|e| (None, e)).chain(inside));
    }
    Ok(if report.summary.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INPUT)
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
