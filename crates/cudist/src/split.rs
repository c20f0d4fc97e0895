//! `cudist split`: a CUDA toolkit as components × outputs, the way conda-forge and Nixpkgs package
//! it. The work is [`cudist_toolkit::split`]; this module turns arguments into its call and renders
//! the manifest.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use cudist_catalog::Catalog;
use cudist_toolkit::split::{self, input, Format, Options};

use crate::util;

/// `cudist split` arguments.
#[derive(clap::Args, Debug)]
pub struct SplitArgs {
    /// A site-packages directory holding NVIDIA CUDA wheels; a directory of NVIDIA
    /// redistributable archives (`<component>-linux-<arch>-<version>-archive`, unpacked or
    /// `.tar.xz`), or one unpacked archive; or a CUDA toolkit tree (a `CUDA_HOME` such as
    /// /usr/local/cuda-X.Y, or a root `cudist toolkit` wrote).
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// NVIDIA's `redistrib_<ver>.json`: names the components and versions, and every archive is
    /// checked against its sha256 and size before it is read.
    #[arg(long, value_name = "redistrib.json")]
    pub manifest: Option<PathBuf>,
    /// Where to write (must not exist).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// `manifest` (split.json + features.json), `dirs` (one directory per component-output) or
    /// `conda` (one .conda package per component-output, in DIR/<subdir>/, and a metapackage).
    #[arg(long, default_value = "manifest", value_parser = ["manifest", "dirs", "conda"])]
    pub format: String,
    /// zstd level of the `.conda` packages (1-22).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub zstd_level: i32,
    /// The build number of the `.conda` packages.
    #[arg(long, default_value_t = 0)]
    pub build_number: u64,
    /// Print the report as JSON (the manifest, schema cudist.split/1).
    #[arg(long)]
    pub json: bool,
}

/// Runs `cudist split`.
pub fn run(args: SplitArgs, catalog: &Catalog) -> Result<ExitCode> {
    let options = Options {
        format: match args.format.as_str() {
            "dirs" => Format::Dirs,
            "conda" => Format::Conda,
            _ => Format::Manifest,
        },
        zstd_level: args.zstd_level,
        build_number: args.build_number,
    };
    let spinner = util::Spinner::start(format!(
        "splitting {} ({})",
        args.input.display(),
        args.format
    ));
    let m = split::split(
        &args.input,
        args.manifest.as_deref(),
        &args.out,
        &options,
        catalog,
    )?;
    drop(spinner);
    let out = std::path::absolute(&args.out)?;
    if args.json {
        util::print_json(&m)?;
    } else {
        let mut s = format!(
            "cudist split: {} components, {} files ({} unassigned) -> {} ({})\n",
            m.components.len(),
            m.files.len(),
            m.unassigned.len(),
            out.display(),
            args.format
        );
        for c in &m.components {
            let outs: Vec<String> = c.outputs.iter().map(|(o, n)| format!("{o}:{n}")).collect();
            s.push_str(&format!(
                "  {:<22} {:<12} {}\n",
                c.component,
                c.version,
                outs.join(" ")
            ));
            // On `-dev`, as conda-forge puts them, else on the runtime package.
            let exporter = c
                .packages
                .get("dev")
                .or_else(|| c.packages.get("lib"))
                .map_or("", String::as_str);
            for p in &c.run_exports {
                s.push_str(&format!(
                    "    {exporter} run_exports {}   ({})\n",
                    p.conda, p.reason
                ));
            }
            for (o, deps) in &c.depends {
                s.push_str(&format!(
                    "    {} depends {}\n",
                    c.packages.get(o).map_or(o.as_str(), String::as_str),
                    deps.join(", ")
                ));
            }
        }
        if let Some(meta) = &m.metapackage {
            s.push_str(&format!(
                "  metapackage {} {}: depends on {} packages\n",
                meta.name,
                meta.version,
                meta.depends.len()
            ));
        }
        for c in &m.missing {
            s.push_str(&format!(
                "  not in the input: {c} (listed by the manifest for {})\n",
                input::redist_platform()
            ));
        }
        for c in &m.collisions {
            s.push_str(&format!(
                "  {} given more than once: placed the {}, not the {} ({})\n",
                c.path,
                c.kept,
                c.dropped.join(", the "),
                c.reason
            ));
        }
        for k in &m.skipped {
            s.push_str(&format!("  not read: {}: {}\n", k.path, k.reason));
        }
        for u in &m.unassigned {
            s.push_str(&format!("  unassigned (placed in doc): {u}\n"));
        }
        util::emit(&s);
    }
    Ok(ExitCode::SUCCESS)
}
