//! The `cudist` command line: parses arguments, runs one command, reports errors.
//!
//! Exit codes (stable, documented in README.md):
//! 0 success · 1 failure (a problem found with `--check`-style options, or an internal error) ·
//! 2 usage error · 3 an input could not be read or is malformed.

mod catalog_cmd;
mod doctor;
mod errors;
mod inspect;
mod relink;
mod repair;
mod schema_cmd;
mod select;
mod self_check;
mod slim;
mod split;
mod toolkit;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cudist_catalog::Catalog;
use util::outln;

use util::EXIT_INPUT;

/// The help heading of the options every command takes, apart from each command's own.
const SHARED_OPTIONS: &str = "Options every command takes";

#[derive(Parser)]
#[command(
    name = "cudist",
    version,
    about = "Make CUDA binaries ship lean and load right: wheels, conda packages, install trees.",
    propagate_version = true
)]
struct Cli {
    /// Extra catalog file(s) (TOML, the schema of docs/catalog.md) merged over the built-in one.
    #[arg(
        long = "catalog",
        value_name = "FILE",
        global = true,
        help_heading = SHARED_OPTIONS
    )]
    catalogs: Vec<PathBuf>,

    /// The most bytes one input (a wheel, a conda package, an archive) may unpack to: 16G by
    /// default, above any real package; larger inputs are refused before anything is unpacked.
    #[arg(
        long,
        value_name = "SIZE",
        global = true,
        value_parser = parse_size,
        help_heading = SHARED_OPTIONS
    )]
    max_unpacked: Option<u64>,

    /// The most bytes of unpacked members held in memory at once, over all threads (1G by
    /// default); a larger member is unpacked to an unlinked temporary file in TMPDIR and mapped.
    #[arg(
        long,
        value_name = "SIZE",
        global = true,
        value_parser = parse_size,
        help_heading = SHARED_OPTIONS
    )]
    max_memory: Option<u64>,

    /// No progress and no report on stdout: only `--json` documents, warnings and errors are
    /// printed, and the exit code gives the answer.
    #[arg(
        long,
        short,
        global = true,
        help_heading = SHARED_OPTIONS
    )]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report the CUDA an artifact needs, carries, links statically and runs on.
    Inspect(inspect::InspectArgs),
    /// Make wheels depend on NVIDIA's CUDA wheels instead of carrying CUDA.
    Repair(repair::RepairArgs),
    /// Assemble a CUDA root (CUDA_HOME) from the CUDA wheels of an environment, for nvcc, CMake
    /// and pkg-config; `toolkit env` prints the variables to use it.
    Toolkit(ToolkitArgs),
    /// Split CUDA wheels into components × outputs (lib, dev, static, stubs, bin, doc, sample)
    /// with pins.
    Split(split::SplitArgs),
    /// Distro fix-ups over an installed tree: driver RUNPATH, $ORIGIN-relative search paths, a
    /// check for references outside the tree.
    Relink(relink::RelinkArgs),
    /// Will these ELF files load here, and exactly why not (load simulation by glibc's rules).
    Doctor(doctor::DoctorArgs),
    /// Keep only the device code the target GPUs will run, in ELF files, trees and wheels.
    Slim(slim::SlimArgs),
    /// Which build of a package to install on a machine, judged by what each candidate wheel
    /// contains (device code, CUDA needs, tags).
    Select(select::SelectArgs),
    /// Answer questions from the CUDA catalog.
    #[command(subcommand)]
    Catalog(catalog_cmd::CatalogCmd),
    /// This cudist's version and catalog, and which tools its results are checked against
    /// (readelf, cuobjdump, ldd, nvcc, …) it can reach here.
    SelfCheck(self_check::SelfCheckArgs),
    /// The JSON Schema of a `--json` output (or of doctor's `--host` profile), as committed
    /// under docs/schema/.
    Schema(schema_cmd::SchemaArgs),
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

/// Every document cudist writes with `--json`, and doctor's `--host` profile, with its schema
/// (`cudist schema`, docs/schema/). Listed here, where the commands are wired, because the
/// types belong to the commands and their engines and no command imports another.
fn outputs() -> Vec<schema_cmd::Output> {
    use schema_cmd::{of, Contract::*};
    let v = vec![
        of::<cudist_analysis::model::Report>("inspect", cudist_analysis::model::SCHEMA, Writes),
        of::<cudist_repair::Report>("repair", cudist_repair::SCHEMA, Writes),
        of::<cudist_analysis::runtime::check::Report>(
            "doctor",
            cudist_analysis::runtime::check::SCHEMA,
            Writes,
        ),
        of::<cudist_analysis::relink::Report>("relink", cudist_analysis::relink::SCHEMA, Writes),
        of::<cudist_toolkit::split::Manifest>("split", cudist_toolkit::split::SCHEMA, Writes),
        of::<toolkit::Report>("toolkit", toolkit::SCHEMA, Writes),
        of::<toolkit::EnvReport>("toolkit.env", toolkit::ENV_SCHEMA, Writes),
        of::<catalog_cmd::Answer>("catalog", catalog_cmd::SCHEMA, Writes),
        of::<self_check::Report>("self-check", self_check::SCHEMA, Writes),
        of::<slim::Report>("slim", slim::SCHEMA, Writes),
        of::<select::Report>("select", select::SCHEMA, Writes),
        of::<cudist_analysis::runtime::host::Host>("host", "cudist doctor --host profile", Reads),
    ];
    debug_assert!(v.iter().map(|o| o.name).eq(schema_cmd::NAMES));
    v
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
    on_signals();
    cudist_fs::set_sweep_reporter(|dir, names| {
        // The names are cudist's own pattern, but their middle comes from a file name.
        let names: Vec<String> = names.iter().map(|n| cudist_fs::printable(n, 255)).collect();
        eprintln!(
            "note: removed what an interrupted cudist run left in {}: {}",
            cudist_fs::printable(&dir.display().to_string(), 4096),
            names.join(", ")
        );
    });
    let mut limits = cudist_fs::limits();
    if let Some(n) = cli.max_unpacked {
        limits.unpacked = n;
    }
    if let Some(n) = cli.max_memory {
        limits.memory = n;
    }
    cudist_fs::set_limits(limits);
    util::set_quiet(cli.quiet);
    let catalog = match Catalog::with_user_files(&cli.catalogs) {
        Ok(c) => c,
        Err(e) => {
            report_error(&anyhow::Error::new(e));
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(args, &catalog),
        Command::Repair(args) => repair::run(args, &catalog),
        Command::Toolkit(args) => match args.sub {
            Some(ToolkitSub::Env(env)) => toolkit::run_env(env, &catalog),
            None => toolkit::run(args.build, &catalog),
        },
        Command::Doctor(args) => doctor::run(args, &catalog),
        Command::Relink(args) => relink::run(args, &catalog),
        Command::Slim(args) => slim::run(args, &catalog),
        Command::Select(args) => select::run(args, &catalog),
        Command::Split(args) => split::run(args, &catalog),
        Command::Catalog(cmd) => catalog_cmd::run(cmd, &catalog),
        Command::SelfCheck(args) => self_check::run(args, &catalog),
        Command::Schema(args) => schema_cmd::run(args, &outputs()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            ExitCode::from(if errors::is_usage(&e) {
                2
            } else if errors::machine_fault(&e).is_some() {
                util::EXIT_MACHINE
            } else if errors::is_bad_input(&e) {
                EXIT_INPUT
            } else {
                1
            })
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP end cudist as they would, with 128 + the signal's number, after
/// removing its temporaries and scratch directories and killing the imports doctor runs: an
/// interrupted run leaves nothing behind ([`cudist_fs::remove_live`]).
fn on_signals() {
    use signal_hook::consts::{SIGBUS, SIGHUP, SIGINT, SIGTERM};
    // Files are mapped to be read; one truncated by another process while mapped (or whose
    // storage fails) raises SIGBUS on the next page read. That is reported, with exit code 4,
    // instead of dying of the signal: the input's content is not to blame. Temporaries are left
    // to the next run's sweep (cleaning up is not safe inside a signal handler).
    // SAFETY: the action calls only write(2) and _exit(2), which are async-signal-safe, and never
    // returns (returning would fault again).
    let _ = unsafe {
        signal_hook::low_level::register(SIGBUS, || {
            const MSG: &[u8] = b"error: a file cudist had mapped became shorter than its mapping while it was read (another process truncated or replaced it, or its storage failed)\n  hint: not a fault of the input's content: run it again once nothing else writes to the input; temporaries left behind are removed by the next run\n";
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(util::EXIT_MACHINE as i32);
        })
    };
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            cudist_analysis::runtime::trace::kill_running();
            let n = cudist_fs::remove_live();
            if n > 0 {
                eprintln!("cudist: interrupted; removed the {n} temporary file(s) it was writing");
            }
            std::process::exit(128 + sig);
        }
    });
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// Every argument of every command says what it is for in `--help`.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let here = format!("{path} {}", cmd.get_name());
            if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
                missing.push(format!("{here}: no description"));
            }
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if ["help", "version"].contains(&id) {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{here} {id}"));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &here, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "", &mut missing);
        assert!(
            missing.is_empty(),
            "without help text:\n{}",
            missing.join("\n")
        );
    }
}
