//! The `cudist` command line: parses arguments, runs one command, reports errors.
//!
//! Exit codes (stable, documented in README.md):
//! 0 success · 1 failure (a problem found with `--check`-style options, or an internal error) ·
//! 2 usage error · 3 an input could not be read or is malformed.

mod catalog_cmd;
mod errors;
mod inspect;
mod util;

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

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report the CUDA an artifact needs, carries, links statically and runs on.
    Inspect(InspectArgs),
    /// Answer questions from the CUDA catalog.
    #[command(subcommand)]
    Catalog(catalog_cmd::CatalogCmd),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let catalog = match Catalog::with_user_files(&cli.catalogs) {
        Ok(c) => c,
        Err(e) => {
            report_error(&anyhow::Error::new(e));
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => run_inspect(args, &catalog),
        Command::Catalog(cmd) => catalog_cmd::run(cmd, &catalog),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            ExitCode::from(1)
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
        for (artifact, e) in report.errors.iter().map(|e| (None, e)).chain(inside) {
            match artifact {
                Some(a) => eprintln!("error: {a}: {}", e.error),
                None => eprintln!("error: {}: {}", e.path, e.error),
            }
            if let Some(h) = &e.hint {
                eprintln!("  hint: {h}");
            }
        }
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
fn cuobjdump_listings(report: &inspect::model::Report, args: &[PathBuf]) -> String {
    let single = report.artifacts.len() == 1
        && report.artifacts[0].kind == inspect::model::ArtifactKind::Elf;
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
                inspect::cuobjdump_items(&e.device_code),
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
