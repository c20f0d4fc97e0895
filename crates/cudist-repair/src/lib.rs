//! Wheels that depend on NVIDIA's CUDA wheels instead of carrying CUDA (what `cudist repair`
//! does: [`repair`]).
//!
//! For each wheel: cudist-analysis's [`Artifact`](cudist_analysis::model::Artifact) of it, the
//! non-CUDA libraries to graft ([`graft`]), the plan ([`plan`]: what to exclude, each file's new
//! NEEDED entries and search path, the requirements to add), the platform tag it then satisfies
//! ([`tags`]), the optional loader module ([`loader`]); then the ELF files are patched in parallel
//! and the wheel is rewritten with its untouched members copied raw (`cudist_wheel::write`).
//! Every output is written to a temporary file and renamed into place; a wheel that cannot be
//! read, planned or written becomes an error entry of the report, and nothing is written for it.
//!
//! Repairing a wheel made here around one of the repository's device-code fixtures, an extension
//! linked against CUDA 13's runtime:
//!
//! ```
//! use std::io::Write;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
//!     .join("../../tests/fixtures/device/multi.so");
//! let wheel = dir.path().join("demo-1.0-cp311-cp311-linux_x86_64.whl");
//! let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
//! let opts = zip::write::SimpleFileOptions::default();
//! for (name, data) in [
//!     ("demo/ext.so", std::fs::read(&fixture).unwrap()),
//!     ("demo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n".to_vec()),
//!     ("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n".to_vec()),
//!     ("demo-1.0.dist-info/RECORD", b"".to_vec()),
//! ] {
//!     zip.start_file(name, opts).unwrap();
//!     zip.write_all(&data).unwrap();
//! }
//! zip.finish().unwrap();
//!
//! let catalog = cudist_catalog::Catalog::builtin();
//! let options = cudist_repair::Options {
//!     out_dir: dir.path().join("wheelhouse"),
//!     dry_run: false,
//!     cuda_deps: cudist_repair::CudaDeps::PerComponent,
//!     tag: cudist_elf::patch::SearchPathTag::Rpath,
//!     compression: cudist_wheel::write::Compression::Default,
//!     verify: false,
//!     crc_check: true,
//!     loader: false,
//!     exclude: Vec::new(),
//!     remove_unreached: false,
//!     build_env: None,
//!     plat: None,
//! };
//! let report = cudist_repair::repair(&[wheel], &catalog, &options, &mut |_| {});
//! assert!(report.errors.is_empty(), "{:?}", report.errors);
//! let repaired = &report.wheels[0];
//! // The wheel now depends on NVIDIA's runtime wheel instead of expecting a system CUDA…
//! assert!(repaired.requires_added.iter().any(|r| r.starts_with("nvidia-cuda-runtime")));
//! // …finds it in that wheel's directory…
//! assert!(repaired.patched[0].rpath_added.iter().any(|p| p.ends_with("nvidia/cu13/lib")));
//! // …and is tagged for the platform it can have.
//! assert!(repaired.output.contains("manylinux"));
//! ```

#![deny(missing_docs)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cudist_analysis::bail;
use cudist_analysis::error::{bad_input, Result, ResultExt};
use cudist_catalog::Catalog;
use cudist_elf::patch::SearchPathTag;
use cudist_wheel::write::{Compression, Rewrite};
use cudist_wheel::Wheel;
use rayon::prelude::*;
use serde::Serialize;

use cudist_analysis::artifact::normalise_dist;
use cudist_analysis::open::install_path;
use cudist_analysis::Input;

pub mod graft;
pub mod loader;
pub mod plan;
pub mod tags;

use loader::{loader_module, LOADER_MARK};
use plan::{installed_versions, Grafting};
use tags::{choose_tags, retag_file_name, retag_lines, rewrite_wheel_tags};

/// How far a run has got ([`repair`] calls its `progress` with these).
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// This wheel is next.
    Start(&'a Path),
    /// This wheel is done (repaired, or an error entry).
    Done(&'a Path),
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
    /// Where the repaired wheels go.
    pub out_dir: PathBuf,
    /// Plan and report; write nothing.
    pub dry_run: bool,
    /// How the dependencies on CUDA wheels are declared.
    pub cuda_deps: CudaDeps,
    /// The search-path tag to write (DT_RPATH, as auditwheel, or DT_RUNPATH).
    pub tag: SearchPathTag,
    /// Compression of the members that change.
    pub compression: Compression,
    /// Refuse wheels whose RECORD does not match their content.
    pub verify: bool,
    /// Inflate every member copied raw once to check its CRC (the default).
    pub crc_check: bool,
    /// Also write a module that preloads the CUDA libraries from every `sys.path` entry.
    pub loader: bool,
    /// SONAMEs (globs) to leave alone.
    pub exclude: Vec<glob::Pattern>,
    /// Also take out vendored CUDA libraries that no file loads by name (the package opens them
    /// by path; by default they stay).
    pub remove_unreached: bool,
    /// The site-packages the wheel was built against: the CUDA wheels installed there give the
    /// lower bounds of `Requires-Dist` (`nvidia-cuda-runtime-cu12>=12.9.79,<13`).
    pub build_env: Option<PathBuf>,
    /// The platform policy to tag with (`manylinux_2_17`, `manylinux2014`); the most compatible
    /// one the repaired wheel satisfies when unset.
    pub plat: Option<String>,
}

/// What a run did (`--json`: schema `cudist.repair/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// Nothing was written.
    pub dry_run: bool,
    /// One entry per wheel repaired.
    pub wheels: Vec<WheelRepair>,
    /// The inputs that could not be read, repaired or written (nothing was written for them).
    pub errors: Vec<cudist_analysis::model::InputError>,
    /// How many of `errors` are a limit of cudist, not a fault of the input (an ELF edit its
    /// writer cannot make in a valid file): the exit code is 1 for those, not 3.
    #[serde(skip)]
    pub not_input_faults: usize,
    /// A fault of the machine met on the way (a full disk, a read-only output directory): the
    /// exit code is 4 when there is one.
    #[serde(skip)]
    pub machine_fault: Option<cudist_fs::Fault>,
}

/// What was done to one wheel.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WheelRepair {
    /// The wheel given.
    pub input: String,
    /// Where the repaired wheel was (or, with `--dry-run`, would be) written.
    pub output: String,
    /// Its size in bytes.
    pub input_size: u64,
    /// Size of the written wheel; null with `--dry-run`.
    pub output_size: Option<u64>,
    /// The CUDA libraries taken out (the CUDA wheels provide them).
    pub removed: Vec<Removed>,
    /// Vendored CUDA libraries left in the wheel, each with why (`reason`): no file loads them
    /// by name, or the package's Python opens them itself, so no requirement can stand in for
    /// them.
    pub kept: Vec<Removed>,
    /// The ELF files re-linked.
    pub patched: Vec<Patched>,
    /// The `Requires-Dist` lines added.
    pub requires_added: Vec<String>,
    /// Non-system libraries copied into the wheel (`<dist>.libs/`).
    pub grafted: Vec<graft::Graft>,
    /// The generated loader module (`pkg/_cudist_cuda.py`) and how to use it, with `--loader`.
    pub loader: Option<Loader>,
    /// Libraries needed that repair does not handle: neither system, CUDA, nor in the wheel, and
    /// not found to graft; or catalog libraries no known wheel installs (CUDA 11.0's
    /// NVRTC). Never grafted, no requirement.
    pub unhandled: Vec<String>,
    /// Other GPU vendors' runtime libraries the wheel needs (a ROCm or XPU build beside the CUDA
    /// one): never grafted, no requirement; they come with that vendor's stack.
    pub vendor_runtimes: Vec<VendorRuntime>,
    /// Variant libraries (one per CUDA release; the package loads one at run time) whose CUDA
    /// libraries were not made requirements, each with the SONAMEs it needs.
    pub variants: Vec<VariantLeft>,
    /// Plain libraries the package loads only on demand (a provider, a plugin) whose CUDA
    /// distributions were offered under an extra (`Requires-Dist: …; extra == "tensorrt"`) rather
    /// than required.
    pub optional_parts: Vec<OptionalPart>,
    /// Nothing needed changing: the wheel was copied as it is.
    pub unchanged: bool,
    /// Platform tags of the repaired wheel, and the policies more compatible than its own that it
    /// does not satisfy (with the reason).
    pub platform: cudist_analysis::model::Platform,
}

/// Another GPU vendor's runtime libraries that a wheel needs, which repair leaves out.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VendorRuntime {
    /// `AMD ROCm`, `Intel oneAPI`.
    pub vendor: String,
    /// The SONAMEs needed.
    pub sonames: Vec<String>,
    /// Where a machine gets them.
    pub provided_by: String,
    /// The PyPI distributions that ship them, where some do.
    pub pip: Vec<String>,
}

/// A variant library whose CUDA needs repair leaves to the package.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VariantLeft {
    /// Its path in the wheel.
    pub path: String,
    /// The CUDA libraries it needs.
    pub needs: Vec<String>,
}

/// A library loaded on demand whose CUDA needs are optional.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct OptionalPart {
    /// Its path in the wheel.
    pub path: String,
    /// The distributions it needs that nothing loaded at import needs (each under an extra).
    pub distributions: Vec<String>,
    /// The extra that brings them all (`cuda`, or the one extra of a single distribution).
    pub extra: Option<String>,
}

/// The loader module `--loader` adds.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Loader {
    /// Path of the module inside the wheel.
    pub path: String,
    /// The module name to import.
    pub module: String,
    /// The environment variable that makes it try a system CUDA first.
    pub prefer_system_env: String,
    /// The package `__init__.py` that imports it first (so importing the package runs it
    /// before any extension), when the package has one.
    pub imported_by: Option<String>,
}

/// A file taken out of the wheel.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Removed {
    /// Its path in the wheel.
    pub path: String,
    /// The CUDA library it is: the catalog's id (`cudart`), else its file name.
    pub library: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Why it was taken out.
    pub reason: String,
}

/// One ELF file re-linked.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Patched {
    /// Its path in the wheel.
    pub path: String,
    /// Search-path entries added.
    pub rpath_added: Vec<String>,
    /// Search-path entries removed.
    pub rpath_removed: Vec<String>,
    /// NEEDED entries rewritten: (before, after).
    pub needed_replaced: Vec<(String, String)>,
    /// Patched without moving anything (the new strings fit in place).
    pub in_place: bool,
    /// Its size before and after, in bytes: a layout change moves the dynamic tables to a new
    /// segment and leaves their old bytes unused in the file.
    pub size_before: u64,
    /// See `size_before`.
    pub size_after: u64,
}

/// Repairs every wheel; one that cannot be read or written becomes an error entry.
pub fn repair(
    inputs: &[PathBuf],
    catalog: &Catalog,
    opts: &Options,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Report {
    let mut wheels = Vec::new();
    let mut errors = Vec::new();
    let mut not_input_faults = 0;
    let mut machine_fault = None;
    let installed = opts
        .build_env
        .as_deref()
        .map(installed_versions)
        .unwrap_or_default();
    for p in inputs {
        progress(Progress::Start(p));
        let result = repair_one(p, catalog, opts, &installed);
        progress(Progress::Done(p));
        match result {
            Ok(w) => wheels.push(w),
            Err(e) => {
                if cudist_analysis::error::is_cudist_limit(cudist_analysis::error::chain(&e)) {
                    not_input_faults += 1;
                }
                machine_fault = machine_fault.or(cudist_analysis::error::machine_fault(
                    cudist_analysis::error::chain(&e),
                ));
                errors.push(cudist_analysis::error::input_error(
                    p.display().to_string(),
                    &e,
                ))
            }
        }
    }
    Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        dry_run: opts.dry_run,
        wheels,
        errors,
        not_input_faults,
        machine_fault,
    }
}

fn repair_one(
    path: &Path,
    catalog: &Catalog,
    opts: &Options,
    installed: &BTreeMap<String, String>,
) -> Result<WheelRepair> {
    // Errors name the problem; the report names the wheel (once).
    let (wheel, md, artifact) = open_checked(path, catalog, opts.verify)?;
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
    // Non-system, non-CUDA libraries the wheel needs are grafted into `<dist>.libs/`, unless the
    // wheel is tagged manylinux or musllinux already: whoever tagged it judged its outside
    // libraries (auditwheel grafted what it should carry, `--exclude` left the rest to a
    // dependency or the system), and copying this machine's libcurl or libssl into it would
    // ship what its author left out on purpose, and raise its glibc floor to this machine's.
    let dist = file_name.split('-').next().unwrap_or("wheel").to_string();
    let libs_dir = format!("{dist}.libs");
    let excluded = |soname: &str| opts.exclude.iter().any(|p| p.matches(soname));
    let tagged = cudist_analysis::platform::FileTag::of(&file_name)
        .libc
        .is_some();
    let (grafts, missing) = graft::collect(
        artifact.elf_files.iter().filter(|e| e.vendored.is_none()),
        &|soname: &str| tagged || excluded(soname),
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
    let rules = plan::Rules {
        cuda_deps: &opts.cuda_deps,
        tag: opts.tag,
        installed,
        excluded: &excluded,
        remove_unreached: opts.remove_unreached,
    };
    let mut plan = plan::plan(&artifact, catalog, &md.requires_dist, &grafting, &rules);
    plan.unhandled.retain(|u| !grafting.names.contains_key(u));
    for m in missing {
        if !plan.unhandled.contains(&m) {
            plan.unhandled.push(m);
        }
    }
    let platform = repaired_platform(&artifact, &plan, &grafting, &file_name, &excluded)?;
    let graft_data: HashMap<&str, &[u8]> = grafts
        .iter()
        .map(|g| (g.path.as_str(), g.data.as_slice()))
        .collect();
    let tags = choose_tags(&platform, opts.plat.as_deref())?;
    // The same platforms in another order are the same tag set: the name stays as it is.
    let own: std::collections::BTreeSet<String> = cudist_wheel::WheelName::parse(&file_name)
        .map(|w| w.platform.split('.').map(String::from).collect())
        .unwrap_or_default();
    let file_name = if own == tags.iter().cloned().collect() {
        file_name
    } else {
        retag_file_name(&file_name, &tags)
    };
    let out = opts.out_dir.join(&file_name);
    if out.canonicalize().ok() == path.canonicalize().ok() && out.exists() {
        bail!("the output would overwrite the input; choose another -w directory");
    }

    let patched = patch_files(&plan, &wheel, &member_of, &graft_data)?;

    let wheel_member = format!("{}/WHEEL", md.dist_info);
    let old_tags: Vec<String> = md.tags.clone();
    let new_tags = retag_lines(&old_tags, &tags);
    // Compared as sets: the same tags in another order change nothing.
    let retagged = new_tags.iter().collect::<std::collections::BTreeSet<_>>()
        != old_tags.iter().collect::<std::collections::BTreeSet<_>>();
    let unchanged =
        patched.is_empty() && plan.removed.is_empty() && plan.requires.is_empty() && !retagged;
    let mut report = WheelRepair {
        input: path.display().to_string(),
        output: out.display().to_string(),
        input_size: wheel.file_size(),
        output_size: None,
        removed: plan.removed,
        kept: plan.kept,
        patched: Vec::new(),
        requires_added: plan.requires.clone(),
        loader: None,
        grafted: Vec::new(),
        unhandled: plan.unhandled,
        vendor_runtimes: vendor_runtimes(&plan.vendor, catalog),
        variants: plan
            .variants
            .into_iter()
            .map(|(path, needs)| VariantLeft { path, needs })
            .collect(),
        optional_parts: plan
            .optional_parts
            .into_iter()
            .map(|(path, distributions)| OptionalPart {
                extra: plan::extra_for(&plan.requires, &distributions),
                path,
                distributions,
            })
            .collect(),
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
        report.loader = Some(add_loader(&mut rw, &wheel, &artifact, &md, &plan.loads)?);
    }
    if retagged {
        let text =
            String::from_utf8_lossy(&wheel.read_member(member_index(&wheel, &wheel_member)?)?)
                .into_owned();
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
        // Nothing to change: the wheel itself, byte for byte (its RECORD, dates and modes as
        // they are), as the report says.
        if report.unchanged && rw.add.is_empty() && rw.replace.is_empty() && rw.remove.is_empty() {
            // Its members' CRCs checked first, as a rewrite checks what it copies raw: a member
            // pip would refuse is not passed on.
            if rw.check_copied {
                use rayon::prelude::*;
                wheel
                    .members()
                    .par_iter()
                    .with_max_len(1)
                    .filter(|m| !m.is_dir && !rw.already_checked.contains(&m.name))
                    .try_for_each(|m| wheel.check_member(m.index))?;
            }
            let bytes = cudist_fs::copy_atomic(path, &out)
                .with_context(|| format!("cannot copy {} to {}", path.display(), out.display()))?;
            report.output_size = Some(bytes);
        } else {
            let written = cudist_wheel::write::rewrite(&wheel, &rw, &out)
                .with_context(|| format!("cannot write {}", out.display()))?;
            report.output_size = Some(written.bytes);
        }
    }
    Ok(report)
}

/// Opens a wheel, checks its RECORD (with `--verify`) and inspects it; a wheel with a file that
/// cannot be analysed is not repaired.
fn open_checked(
    path: &Path,
    catalog: &Catalog,
    verify: bool,
) -> Result<(
    Wheel,
    cudist_wheel::Metadata,
    cudist_analysis::model::Artifact,
)> {
    let wheel = Wheel::open(path)?;
    let md = wheel.metadata()?;
    if verify {
        let problems = cudist_wheel::write::verify_record(&wheel)?;
        if let Some((m, p)) = problems.first() {
            return Err(bad_input(format!(
                "RECORD does not match the content ({} problem(s)); first: {m}: {p}",
                problems.len()
            )));
        }
    }
    let artifact = cudist_analysis::inspect_one(&Input::Wheel(path.to_path_buf()), catalog)?;
    if let Some(p) = artifact.problems.first() {
        return Err(bad_input(cudist_analysis::error::located(
            &p.path, &p.error,
        )));
    }
    Ok((wheel, md, artifact))
}

/// The platform the repaired wheel will have: its remaining files and its grafts judged by
/// auditwheel's rules, the restored and grafted names no longer counted as outside libraries. A
/// wheel auditwheel would not tag is not repaired either: the error says why.
fn repaired_platform(
    artifact: &cudist_analysis::model::Artifact,
    plan: &plan::Plan,
    grafting: &Grafting<'_>,
    file_name: &str,
    excluded: &dyn Fn(&str) -> bool,
) -> Result<cudist_analysis::model::Platform> {
    let removed: BTreeSet<&str> = plan.removed.iter().map(|r| r.path.as_str()).collect();
    // A wheel tagged manylinux or musllinux already had its outside libraries judged by whoever
    // tagged it: one it needs but neither carries nor gets from a known wheel was left out on
    // purpose (auditwheel's `--exclude`: torchvision needs torch's libc10.so, which the torch
    // wheel brings). Repair does its CUDA work and keeps that judgement, as it cannot know better.
    let tagged = cudist_analysis::platform::FileTag::of(file_name)
        .libc
        .is_some();
    let platform = cudist_analysis::platform::evaluate(
        artifact
            .elf_files
            .iter()
            .filter(|e| !removed.contains(e.path.as_str()))
            .chain(grafting.reports.iter().copied()),
        &|n| {
            plan.renamed.contains(&n.soname)
                || grafting.names.contains_key(&n.soname)
                || excluded(&n.soname)
                || (tagged && plan.unhandled.contains(&n.soname))
                // So was a library it carries that a file's search path does not reach (a
                // plugin linking the platform plugin its package loads first, a program
                // linking the package's library): repair does not move it.
                || (tagged
                    && n
                        .provided_in_artifact
                        .as_deref()
                        .is_some_and(|p| !removed.contains(p)))
        },
        &cudist_analysis::platform::FileTag::of(file_name),
    );
    if let Some(why) = &platform.error {
        return Err(bad_input(format!("cannot be tagged: {why}")));
    }
    Ok(platform)
}

/// The index of a wheel member by name.
fn member_index(wheel: &Wheel, name: &str) -> Result<usize> {
    wheel
        .members()
        .iter()
        .position(|m| m.name == name)
        .with_context(|| format!("the wheel has no member {name}"))
}

/// Patches the planned ELF files in parallel, each read again from the wheel (or taken from the
/// grafts): (member name, new bytes, what the report says).
fn patch_files(
    plan: &plan::Plan,
    wheel: &Wheel,
    member_of: &HashMap<String, String>,
    graft_data: &HashMap<&str, &[u8]>,
) -> Result<Vec<(String, Vec<u8>, Patched)>> {
    plan.edits
        .par_iter()
        .map(
            |(elf_path, (edits, added, removed, replaced))| -> Result<(String, Vec<u8>, Patched)> {
                let (member, data) = match graft_data.get(elf_path.as_str()) {
                    Some(d) => (elf_path.clone(), d.to_vec()),
                    None => {
                        let member = member_of
                            .get(elf_path)
                            .context("member of a planned file")?;
                        (
                            member.clone(),
                            wheel.read_member(member_index(wheel, member)?)?,
                        )
                    }
                };
                // A packed file's headers are its unpacker's stub's: patching them breaks the
                // unpacking (polars-fastembed-cuda's UPX-packed libraries).
                if let Some(by) = cudist_elf::packed_by(&data) {
                    return Err(bad_input(format!(
                        "cannot patch {elf_path}: it is packed with {by}, and its headers are the unpacker's stub's; unpack it (`upx -d`) before repairing the wheel"
                    )));
                }
                let p = cudist_elf::patch::apply(&data, edits)
                    .with_context(|| format!("cannot patch {elf_path}"))?;
                let (size_before, size_after) = (data.len() as u64, p.data.len() as u64);
                Ok((
                    member,
                    p.data,
                    Patched {
                        path: elf_path.clone(),
                        rpath_added: added.clone(),
                        rpath_removed: removed.clone(),
                        needed_replaced: replaced.clone(),
                        in_place: p.in_place,
                        size_before,
                        size_after,
                    },
                ))
            },
        )
        .collect()
}

/// Adds the `--loader` module to the rewrite. A module already at that path that an earlier
/// `repair --loader` wrote is replaced; anything else is the package's own code and is not
/// overwritten.
fn add_loader(
    rw: &mut Rewrite,
    wheel: &Wheel,
    artifact: &cudist_analysis::model::Artifact,
    md: &cudist_wheel::Metadata,
    loads: &BTreeMap<String, String>,
) -> Result<Loader> {
    let (loader, source) = loader_module(artifact, &md.name.clone().unwrap_or_default(), loads);
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
    // The package's `__init__.py` imports it first: `import pkg` runs `__init__` before anything
    // else, and most packages import their extensions there, so importing the loader by hand
    // would come too late. Once only, whatever repaired the wheel before.
    let mut loader = loader;
    if let Some((package, _)) = loader.path.rsplit_once('/') {
        let init = format!("{package}/__init__.py");
        if let Some(m) = wheel.members().iter().find(|m| m.name == init) {
            let text = wheel.read_member(m.index)?;
            let Ok(text) = String::from_utf8(text) else {
                bail!("--loader cannot add its import to {init}: the file is not UTF-8");
            };
            let new = match crate::loader::with_init_import(&text) {
                Ok(new) => new,
                Err(e @ cudist_analysis::pysource::Unread::TooDeep(_)) => {
                    return Err(bad_input(format!(
                        "--loader cannot add its import to {init}: {e}"
                    )));
                }
                Err(cudist_analysis::pysource::Unread::NoThread(e)) => return Err(e.into()),
            };
            if let Some(new) = new {
                rw.replace.insert(init.clone(), new.into_bytes());
            }
            loader.imported_by = Some(init);
        }
    }
    Ok(loader)
}

/// The vendor libraries of a plan, one entry per vendor.
fn vendor_runtimes(sonames: &[String], catalog: &Catalog) -> Vec<VendorRuntime> {
    let mut out: Vec<VendorRuntime> = Vec::new();
    for s in sonames {
        let Some(v) = catalog.vendor_lib(s) else {
            continue;
        };
        let i = match out.iter().position(|r| r.vendor == v.vendor) {
            Some(i) => i,
            None => {
                out.push(VendorRuntime {
                    vendor: v.vendor.clone(),
                    sonames: Vec::new(),
                    provided_by: v.provided_by.clone(),
                    pip: Vec::new(),
                });
                out.len() - 1
            }
        };
        let r = &mut out[i];
        r.sonames.push(s.clone());
        if let Some(pip) = v.pip.as_ref().filter(|p| !r.pip.contains(p)) {
            r.pip.push(pip.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
