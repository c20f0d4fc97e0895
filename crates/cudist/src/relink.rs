//! `cudist relink TREE`: the fix-ups distribution packagers run over an installed tree. The work
//! is [`cudist_analysis::relink`]; this module turns arguments into its call and renders the
//! report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use cudist_analysis::relink::{relink, Options};
use cudist_catalog::Catalog;

use crate::util;

/// `cudist relink` arguments.
#[derive(clap::Args, Debug)]
pub struct RelinkArgs {
    /// The installed tree (a prefix, a Nix output, an unpacked package).
    #[arg(value_name = "TREE")]
    pub tree: PathBuf,
    /// Add this directory to the search path of every ELF file that needs the CUDA driver.
    #[arg(long, value_name = "DIR")]
    pub driver_runpath: Option<String>,
    /// Rewrite absolute search-path entries inside TREE as $ORIGIN-relative; drop those outside.
    #[arg(long)]
    pub origin: bool,
    /// Change nothing; fail with a list of the references to paths outside TREE.
    #[arg(long, conflicts_with_all = ["driver_runpath", "origin"])]
    pub check: bool,
    /// With --check: directories outside TREE that are fine to reference (the driver's, e.g.
    /// /run/opengl-driver/lib); repeatable.
    #[arg(long, value_name = "DIR", requires = "check")]
    pub allow: Vec<String>,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON (schema cudist.relink/1).
    #[arg(long)]
    pub json: bool,
}

/// Runs `cudist relink`.
pub fn run(args: RelinkArgs, catalog: &Catalog) -> Result<ExitCode> {
    let options = Options {
        driver_runpath: args.driver_runpath.clone(),
        origin: args.origin,
        check: args.check,
        allow: args.allow.clone(),
        dry_run: args.dry_run,
    };
    let spinner = util::Spinner::start(format!("relinking {}", args.tree.display()));
    let report = relink(&args.tree, &options, catalog)?;
    drop(spinner);
    if args.json {
        util::print_json(&report)?;
    } else {
        let mut s = String::new();
        if args.check {
            if report.problems.is_empty() {
                s.push_str(&format!(
                    "cudist relink --check: {} ELF files, none references a path outside {}\n",
                    report.files_checked, report.tree
                ));
            } else {
                s.push_str(&format!(
                    "cudist relink --check: {} of {} ELF files reference paths outside {}:\n",
                    report.problems.len(),
                    report.files_checked,
                    report.tree
                ));
                for p in &report.problems {
                    s.push_str(&format!("  {}: {}\n", p.path, p.outside.join(", ")));
                }
            }
        } else {
            s.push_str(&format!(
                "cudist relink: {} of {} ELF files {}\n",
                report.changed.len(),
                report.files_checked,
                if args.dry_run {
                    "would change"
                } else {
                    "changed"
                }
            ));
            for c in &report.changed {
                s.push_str(&format!(
                    "  {}: {} {:?} -> {:?}\n",
                    c.path,
                    c.tag,
                    c.before.join(":"),
                    c.after.join(":")
                ));
            }
        }
        util::emit(&s);
    }
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
