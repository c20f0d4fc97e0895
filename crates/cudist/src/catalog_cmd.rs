//! `cudist catalog`: answers questions from the CUDA catalog.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Subcommand;
use cudist_catalog::{
    targets, Arch, Catalog, CudaVersion, DriverLib, Library, MinorCompat, ToolkitDriver, VendorLib,
};
use serde::Serialize;

use crate::util::{outln, Style, Table};

#[derive(Subcommand)]
pub enum CatalogCmd {
    /// What a library is and who provides it: `cudist catalog lib libcusparse.so.12` (a SONAME,
    /// file name or catalog id).
    Lib {
        /// A SONAME (libcublas.so.12), a file name, a catalog id (cublas), a driver library
        /// (libcuda.so.1) or another GPU vendor's runtime library (libhipblas.so.3).
        #[arg(value_name = "NAME")]
        name: String,
        /// Print the catalog row as JSON (schema cudist.catalog/1).
        #[arg(long)]
        json: bool,
    },
    /// Compute capabilities, optionally those a CUDA version can target: `--cuda 13.0`; or check
    /// a list of GPU targets you are about to build with: `--check "7.5;8.6;9.0+PTX" --cuda 13.0`.
    Sm {
        /// Only the compute capabilities this CUDA toolkit version can target (e.g. 13.0); with
        /// --check, the toolkit the list is checked against.
        #[arg(long, value_name = "X.Y", value_parser = parse_cuda)]
        cuda: Option<CudaVersion>,
        /// Check a list of GPU targets, as TORCH_CUDA_ARCH_LIST ("7.5;8.6;9.0+PTX", "Ampere"),
        /// CMAKE_CUDA_ARCHITECTURES ("75;86-real;90a-virtual"), nvcc -gencode flags, sm_XY /
        /// compute_XY or GPU names ("H100") write it: what the toolkit cannot build, and which
        /// GPUs each entry runs on. Exits 1 when an entry cannot be built.
        #[arg(long, value_name = "LIST", value_parser = parse_targets, allow_hyphen_values = true)]
        check: Option<TargetList>,
        /// Print the list as JSON (schema cudist.catalog/1).
        #[arg(long)]
        json: bool,
    },
    /// Minimum Linux driver for a toolkit version, and its major's compatibility floor.
    Driver {
        /// A CUDA toolkit version such as 12.8.
        #[arg(value_name = "X.Y", value_parser = parse_cuda)]
        cuda: CudaVersion,
        /// Print the answer as JSON (schema cudist.catalog/1).
        #[arg(long)]
        json: bool,
    },
    /// The GPU and architecture names `--gpu` and `sm --check` accept (`H100`, `Ampere`), and
    /// the targets each stands for.
    Gpus {
        /// Print the list as JSON (schema cudist.catalog/1).
        #[arg(long)]
        json: bool,
    },
    /// Every library in the catalog, one line each.
    List {
        /// Print the whole catalog as JSON (schema cudist.catalog/1).
        #[arg(long)]
        json: bool,
    },
}

/// The schema identifier of every `cudist catalog … --json` answer.
pub const SCHEMA: &str = "cudist.catalog/1";

/// A `--check` list, as written: checked against the built-in catalog's GPU names as the
/// arguments are read (a malformed list is a usage error), read again with `--catalog` files'.
#[derive(Clone, Debug)]
pub struct TargetList(String);

fn parse_targets(s: &str) -> std::result::Result<TargetList, String> {
    targets::parse_list_named(s, &Catalog::builtin().gpu_names).map(|_| TargetList(s.to_string()))
}

fn parse_cuda(s: &str) -> std::result::Result<CudaVersion, String> {
    CudaVersion::parse(s)
        .ok_or_else(|| format!("{s:?} is not a CUDA version (expected X.Y, e.g. 12.8)"))
}

/// Every `cudist catalog … --json` answer (schema `cudist.catalog/1`): one document whose fields
/// are those of the question asked (`lib`: one of `library`, `driver_lib`, `vendor_lib`; `sm`:
/// `archs` and `cuda`; `sm --check`: `check` and `cuda`; `driver`: `cuda`, `toolkit`,
/// `toolkit_exact`, `minor_compat`; `list`: `libraries`).
#[derive(Serialize, schemars::JsonSchema, Default)]
pub struct Answer<'a> {
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// `lib`: a CUDA library's catalog row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<&'a Library>,
    /// `lib`: an NVIDIA driver library (never bundled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_lib: Option<&'a DriverLib>,
    /// `lib`: another GPU vendor's runtime library (AMD ROCm, Intel oneAPI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor_lib: Option<&'a VendorLib>,
    /// `sm`, `driver`: the CUDA release asked about (`null` for `sm` without `--cuda`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<Option<String>>,
    /// `sm`: the GPU architectures (all, or those the release can target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archs: Option<Vec<&'a Arch>>,
    /// `driver`: the release's minimum driver row, or the newest older release's of the same
    /// major (`null` when the catalog has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<Option<&'a ToolkitDriver>>,
    /// `driver`: false when the catalog has no row for this release and `toolkit` is the newest
    /// older release of the same major.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toolkit_exact: Option<bool>,
    /// `driver`: the major's minor-version compatibility floor (`null` when the catalog has
    /// none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minor_compat: Option<Option<&'a MinorCompat>>,
    /// `sm --check`: each code of each entry of the list, with what is wrong with it and what it
    /// runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<Vec<targets::Checked>>,
    /// `list`: every library in the catalog.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub libraries: Option<&'a [Library]>,
    /// `gpus`: the GPU and architecture names, with the targets each stands for and sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_names: Option<&'a [cudist_catalog::GpuName]>,
}

impl Answer<'_> {
    fn new() -> Self {
        Answer {
            schema: SCHEMA,
            cudist_version: env!("CARGO_PKG_VERSION"),
            ..Default::default()
        }
    }
}

/// Runs `cudist catalog`.
pub fn run(cmd: CatalogCmd, catalog: &Catalog) -> Result<ExitCode> {
    let style = Style::detect();
    match cmd {
        CatalogCmd::Lib { name, json } => lib(&name, json, catalog, style)?,
        CatalogCmd::Sm {
            cuda,
            check: Some(list),
            json,
        } => {
            let list = targets::parse_list_named(&list.0, &catalog.gpu_names)
                .map_err(|e| anyhow::anyhow!("--check {:?}: {e}", list.0))?;
            return check(&list, cuda, json, catalog, style);
        }
        CatalogCmd::Sm {
            cuda,
            check: None,
            json,
        } => sm(cuda, json, catalog, style)?,
        CatalogCmd::Driver { cuda, json } => driver(cuda, json, catalog)?,
        CatalogCmd::List { json } => list(json, catalog, style)?,
        CatalogCmd::Gpus { json } => gpus(json, catalog, style)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `catalog lib NAME`: one library (by SONAME or id), a driver library, or another GPU
/// vendor's runtime library.
fn lib(name: &str, json: bool, catalog: &Catalog, style: Style) -> Result<()> {
    let lib = match catalog.library_by_name(name) {
        Some((m, _)) => m.library,
        None => match catalog.library(name) {
            Some(l) => l,
            None => {
                if let Some(d) = catalog.driver_lib(name) {
                    if json {
                        crate::util::print_json(&Answer {
                            driver_lib: Some(d),
                            ..Answer::new()
                        })?;
                    } else {
                        outln!("{}: NVIDIA driver library ({}). Provided by the driver; never bundle it.", d.soname, d.description);
                    }
                    return Ok(());
                }
                if let Some(v) = catalog.vendor_lib(name) {
                    if json {
                        crate::util::print_json(&Answer {
                            vendor_lib: Some(v),
                            ..Answer::new()
                        })?;
                    } else {
                        outln!(
                            "{name}: {}'s {}. Not a CUDA library: it comes with {}{}; cudist never grafts it.",
                            v.vendor,
                            v.description,
                            v.provided_by,
                            v.pip.as_deref().map(|p| format!(" ({p} on PyPI)")).unwrap_or_default()
                        );
                    }
                    return Ok(());
                }
                bail!("{name:?} is not in the catalog (try a SONAME such as libcublas.so.12, or `cudist catalog list`)");
            }
        },
    };
    if json {
        crate::util::print_json(&Answer {
            library: Some(lib),
            ..Answer::new()
        })?;
        return Ok(());
    }
    outln!(
        "{} — {} ({:?})",
        style.bold(&lib.id),
        lib.description,
        lib.kind
    );
    if let Some(c) = &lib.component {
        outln!("  component: {c}");
    }
    outln!("  conda-forge: {}", lib.conda.as_deref().unwrap_or("-"));
    outln!(
        "  cuda-toolkit extra: {}",
        lib.toolkit_extra
            .as_deref()
            .map(|e| format!("cuda-toolkit[{e}]"))
            .unwrap_or("-".into())
    );
    let mut t = Table::new(&[
        "CUDA",
        "SONAME",
        "PINS",
        "PIP PACKAGE",
        "REQUIRES (repair)",
        "WHEEL DIR",
        "VERIFIED",
    ]);
    for m in &lib.cuda {
        // What `repair` requires for each SONAME: the releases that ship it.
        let requires: Vec<String> = m
            .sonames
            .iter()
            .filter_map(|s| {
                Some(match m.pip_requirement(s)? {
                    cudist_catalog::PipRequirement::Range(r) => r,
                    cudist_catalog::PipRequirement::Any => "any".into(),
                    cudist_catalog::PipRequirement::NotShipped => {
                        format!("{s}: in no wheel")
                    }
                })
            })
            .collect();
        t.row(vec![
            m.major.to_string(),
            m.sonames.join(" "),
            m.policy.to_string(),
            m.pip.clone().unwrap_or("-".into()),
            if requires.is_empty() {
                "-".into()
            } else {
                requires.join(" ")
            },
            m.pip_dir.clone().unwrap_or("-".into()),
            m.verified.as_deref().map_or("-".into(), |_| "yes".into()),
        ]);
    }
    crate::util::emit(&t.render(2, style));
    if !lib.sources.is_empty() {
        outln!("  sources: {}", lib.sources.join("; "));
    }
    Ok(())
}

/// `catalog sm [--cuda X.Y]`: the GPU architectures (a release's, or all).
fn sm(cuda: Option<CudaVersion>, json: bool, catalog: &Catalog, style: Style) -> Result<()> {
    let archs = match cuda {
        Some(v) => catalog.archs_for_cuda(v),
        None => {
            let mut v: Vec<_> = catalog.archs.iter().collect();
            v.sort_by_key(|a| a.sm);
            v
        }
    };
    if json {
        crate::util::print_json(&Answer {
            cuda: Some(cuda.map(|c| c.to_string())),
            archs: Some(archs),
            ..Answer::new()
        })?;
        return Ok(());
    }
    let mut t = Table::new(&[
        "SM",
        "NAME",
        "FIRST CUDA",
        "LAST CUDA",
        "sm_XXa FROM",
        "sm_XXf FROM",
    ]);
    for a in archs {
        t.row(vec![
            format!("sm_{}", a.sm),
            a.name.clone(),
            a.first_cuda.clone(),
            a.last_cuda.clone().unwrap_or("-".into()),
            a.arch_specific_from.clone().unwrap_or("-".into()),
            a.family_from.clone().unwrap_or("-".into()),
        ]);
    }
    crate::util::emit(&t.render(0, style));
    Ok(())
}

/// `catalog gpus`: the names `--gpu` and `sm --check` accept.
fn gpus(json: bool, catalog: &Catalog, style: Style) -> Result<()> {
    if json {
        crate::util::print_json(&Answer {
            gpu_names: Some(&catalog.gpu_names),
            ..Answer::new()
        })?;
        return Ok(());
    }
    let mut t = Table::new(&["NAME", "TARGETS", "RUNS NATIVELY ON"]);
    for g in &catalog.gpu_names {
        let sms: Vec<String> = targets::parse_list(&g.targets)
            .unwrap_or_default()
            .iter()
            .filter(|x| x.cubin)
            .map(|x| x.cubin_name())
            .collect();
        t.row(vec![g.name.clone(), g.targets.clone(), sms.join(" ")]);
    }
    crate::util::emit(&t.render(0, style));
    Ok(())
}

/// `catalog sm --check LIST [--cuda X.Y]`: what the toolkit cannot build, and what runs where.
fn check(
    list: &[targets::Target],
    cuda: Option<CudaVersion>,
    json: bool,
    catalog: &Catalog,
    style: Style,
) -> Result<ExitCode> {
    let rows = targets::check(list, cuda, catalog);
    let bad = rows.iter().filter(|r| !r.problems.is_empty()).count();
    if json {
        crate::util::print_json(&Answer {
            cuda: Some(cuda.map(|c| c.to_string())),
            check: Some(rows),
            ..Answer::new()
        })?;
    } else {
        let mut t = Table::new(&["ENTRY", "CODE", "BUILDS", "RUNS ON"]);
        for r in &rows {
            let runs = match (r.runs_on.as_slice(), r.kind) {
                ([], _) => "-".to_string(),
                (list, "ptx") => format!("{} (JIT)", list.join(" ")),
                (list, _) => list.join(" "),
            };
            t.row(vec![
                r.entry.clone(),
                r.code.clone(),
                if r.problems.is_empty() {
                    "yes".into()
                } else {
                    style.red("no")
                },
                runs,
            ]);
        }
        crate::util::emit(&t.render(0, style));
        for r in &rows {
            for p in &r.problems {
                outln!("{}: {p}", r.code);
            }
        }
        if cuda.is_none() {
            outln!("(no --cuda: checked against every CUDA release the catalog knows)");
        }
    }
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `catalog driver X.Y`: the driver a CUDA release needs, and its major's compatibility floor.
fn driver(v: CudaVersion, json: bool, catalog: &Catalog) -> Result<()> {
    let t = catalog.min_driver(v);
    let floor = catalog.minor_compat_floor(v.major);
    if t.is_none() && floor.is_none() {
        bail!("the catalog has no driver data for CUDA {v}");
    }
    if json {
        crate::util::print_json(&Answer {
            cuda: Some(Some(v.to_string())),
            toolkit: Some(t),
            toolkit_exact: Some(t.is_some_and(|t| CudaVersion::parse(&t.version) == Some(v))),
            minor_compat: Some(floor),
            ..Answer::new()
        })?;
        return Ok(());
    }
    if let Some(t) = t {
        let exact = if CudaVersion::parse(&t.version) == Some(v) {
            String::new()
        } else {
            format!(" (no row for {v}; nearest older release {})", t.version)
        };
        outln!(
            "CUDA {v}: driver >= {}{exact} for the full feature set, including PTX JIT",
            t.min_driver
        );
    }
    if let Some(f) = floor {
        // The major's floor can lie above an early release's own minimum (11.x's 450.80.02
        // against 11.0's 450.51.05): that release then needs only its own.
        let own = t.filter(|t| {
            CudaVersion::parse(&t.version) == Some(v)
                && cudist_catalog::driver_version_key(&t.min_driver)
                    < cudist_catalog::driver_version_key(&f.min_driver)
        });
        match own {
            Some(t) => outln!(
                "CUDA {}.x minor-version compatibility: driver >= {} runs {}.x builds (no JIT of newer PTX); \
                 {v} builds need only their own {}",
                v.major, f.min_driver, v.major, t.min_driver
            ),
            None => outln!(
                "CUDA {}.x minor-version compatibility: driver >= {} runs {}.x builds (no JIT of newer PTX)",
                v.major, f.min_driver, v.major
            ),
        }
    }
    Ok(())
}

/// `catalog list`: every library.
fn list(json: bool, catalog: &Catalog, style: Style) -> Result<()> {
    if json {
        crate::util::print_json(&Answer {
            libraries: Some(&catalog.libraries),
            ..Answer::new()
        })?;
        return Ok(());
    }
    let mut t = Table::new(&["ID", "KIND", "SONAMES", "CONDA"]);
    for l in &catalog.libraries {
        let sonames: Vec<String> = l
            .cuda
            .iter()
            .flat_map(|m| m.sonames.iter().cloned())
            .collect();
        t.row(vec![
            l.id.clone(),
            format!("{:?}", l.kind).to_lowercase(),
            sonames.join(" "),
            l.conda.clone().unwrap_or("-".into()),
        ]);
    }
    crate::util::emit(&t.render(0, style));
    Ok(())
}
