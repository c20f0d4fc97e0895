//! `cudist slim INPUT… --gpu SPEC`: keep only the device code the target GPUs will run, in an ELF
//! file, a directory tree, a wheel or a conda package. What to keep is [`cudist_analysis::slim`]'s; this module
//! reads the inputs, writes the outputs (atomically) and renders the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use cudist_analysis::slim::{slim_elf, FileSlim, Options, PtxPolicy, SlimRecord};
use cudist_catalog::targets::{self, Target};
use cudist_catalog::Catalog;
use cudist_fs::Buf;
use serde::Serialize;

use crate::errors;
use crate::util;

/// The schema id of `cudist slim --json`.
pub const SCHEMA: &str = "cudist.slim/1";

/// `cudist slim` arguments.
#[derive(clap::Args, Debug)]
pub struct SlimArgs {
    /// ELF files, directories (an installed tree, an unpacked wheel), wheels or conda packages
    /// (`.conda`, `.tar.bz2`).
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The GPUs to keep device code for: `8.6`, `sm_86`, `86`, `90a`, lists (`"7.5;8.6;9.0"`,
    /// `75,86,90`), TORCH_CUDA_ARCH_LIST and CMAKE_CUDA_ARCHITECTURES spellings (`9.0+PTX`,
    /// `90-virtual` keep that GPU's PTX too; `Ampere`), GPU names the catalog knows (`H100`,
    /// `"RTX 4090"`, `cudist catalog gpus`); repeatable.
    #[arg(long, value_name = "SPEC", required_unless_present = "host")]
    pub gpu: Vec<String>,
    /// The GPUs of a machine: a doctor `--host` profile (FILE, as `cudist doctor --write-host`
    /// writes it), or `this` for this machine's; added to any --gpu.
    #[arg(long, value_name = "FILE|this")]
    pub host: Option<String>,
    /// PTX to keep besides what a target runs: `newest` (per module, the PTX of the highest SM a
    /// target could JIT from, so newer GPUs still run), `keep` (all) or `drop` (none).
    #[arg(long, value_name = "POLICY", default_value = "newest", value_parser = parse_ptx)]
    pub ptx: PtxPolicy,
    /// Write the slimmed ELF file here (one ELF input only).
    #[arg(short, long, value_name = "FILE", conflicts_with_all = ["wheel_dir", "in_place"])]
    pub output: Option<PathBuf>,
    /// Write slimmed wheels (under their own names) and conda packages (as `.conda`, the build
    /// string ending in `_slim_sm_86_sm_90`) into this directory.
    #[arg(short = 'w', long, value_name = "DIR", conflicts_with = "in_place")]
    pub wheel_dir: Option<PathBuf>,
    /// Replace ELF files (given, or in a directory) in place, each atomically.
    #[arg(long)]
    pub in_place: bool,
    /// A target nothing in a file runs on is no error: the file keeps only what other targets run.
    #[arg(long)]
    pub allow_empty: bool,
    /// Accept a compute capability the catalog does not know (a GPU newer than this catalog, or
    /// one it lacks): its device code is judged by the compatibility rules alone. Without it, an
    /// unknown SM below the newest known one is refused as a typo (`sm_95`).
    #[arg(long)]
    pub allow_unknown_gpu: bool,
    /// Keep every file's size and layout: removed device code stays as zero bytes (which a
    /// wheel's compression takes away) instead of leaving the installed file.
    #[arg(long)]
    pub keep_layout: bool,
    /// Say what would be removed and the bytes saved; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON (schema cudist.slim/1).
    #[arg(long)]
    pub json: bool,
}

fn parse_ptx(s: &str) -> Result<PtxPolicy, String> {
    match s {
        "keep" => Ok(PtxPolicy::Keep),
        "newest" => Ok(PtxPolicy::Newest),
        "drop" => Ok(PtxPolicy::Drop),
        _ => Err(format!("`{s}`: expected keep, newest or drop")),
    }
}

/// The report of `cudist slim`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `cudist.slim/1`.
    pub schema: String,
    /// The cudist release that wrote it.
    pub cudist_version: String,
    /// The GPUs slimmed for, as SMs (`sm_86`).
    pub targets: Vec<String>,
    /// The PTX policy.
    pub ptx: PtxPolicy,
    /// Nothing was written.
    pub dry_run: bool,
    /// One entry per input.
    pub inputs: Vec<InputReport>,
}

/// What slim did to one input.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct InputReport {
    /// The input as given.
    pub input: String,
    /// `elf`, `directory`, `wheel` or `conda`.
    pub kind: String,
    /// Where the result was written (`null` with `--dry-run`).
    pub output: Option<String>,
    /// The ELF files with device code, and what was kept and removed of each.
    pub files: Vec<FileSlim>,
    /// ELF files without `.nv_fatbin`, left as they were.
    pub without_device_code: Vec<String>,
    /// Bytes of device code removed (zero bytes in place of entries, or gone from the files).
    pub bytes_removed: u64,
    /// Bytes the ELF files themselves lost (the sum of the files' `file_bytes_cut`): what the
    /// installed size shrinks by.
    pub file_bytes_cut: u64,
    /// For a wheel or a conda package: its size before, and after (`null` with `--dry-run`).
    pub package_bytes: Option<(u64, Option<u64>)>,
}

/// The targets of every `--gpu`, and of the `--host` profile's GPUs: one per SM.
fn parse_targets(
    specs: &[String],
    host: Option<&str>,
    allow_unknown: bool,
    catalog: &Catalog,
) -> Result<Vec<Target>> {
    let mut out: Vec<Target> = Vec::new();
    if let Some(h) = host {
        use cudist_analysis::runtime::host::Host;
        let (host, what) = if h == "this" {
            (Host::detect(), "this machine".to_string())
        } else {
            (Host::load(Path::new(h))?, h.to_string())
        };
        if host.gpus.is_empty() {
            bail!("{what} has no NVIDIA GPU to slim for; name the GPUs with --gpu");
        }
        for g in &host.gpus {
            out.extend(
                targets::parse_list(&g.sm.to_string())
                    .map_err(|e| errors::input(format!("{what}: GPU sm {}: {e}", g.sm)))?,
            );
        }
    }
    // The newest compute capability the catalog knows: an SM below it that the catalog lacks
    // is no GPU's (a typo such as sm_95); one above it may be a GPU newer than this catalog.
    let newest = catalog.archs.iter().map(|a| a.sm).max().unwrap_or(0);
    for spec in specs {
        let list = targets::parse_list_named(spec, &catalog.gpu_names)
            .map_err(|e| errors::usage(format!("--gpu {spec:?}: {e}")))?;
        for t in &list {
            if catalog.arch(t.sm).is_none() && t.sm < newest && !allow_unknown {
                // The known architectures on either side of it: what a typo most likely meant.
                let below = catalog
                    .archs
                    .iter()
                    .map(|a| a.sm)
                    .filter(|&sm| sm < t.sm)
                    .max();
                let above = catalog
                    .archs
                    .iter()
                    .map(|a| a.sm)
                    .filter(|&sm| sm > t.sm)
                    .min();
                let nearest: Vec<String> = below
                    .into_iter()
                    .chain(above)
                    .map(|sm| format!("sm_{sm}"))
                    .collect();
                return Err(errors::usage(format!(
                    "--gpu {spec:?}: no GPU the catalog knows has compute capability {}.{} \
                     (sm_{}); the nearest are {} (`cudist catalog sm` lists them all; \
                     --allow-unknown-gpu takes it as it is)",
                    t.sm / 10,
                    t.sm % 10,
                    t.sm,
                    nearest.join(" and ")
                )));
            }
            if catalog.arch(t.sm).is_none() && (t.sm > newest || allow_unknown) {
                eprintln!(
                    "warning: --gpu {spec:?}: sm_{} is not an architecture this catalog knows \
                     (it knows up to sm_{newest}); its device code is judged by the \
                     compatibility rules alone",
                    t.sm
                );
            }
        }
        out.extend(list);
    }
    if out.is_empty() {
        return Err(errors::usage("--gpu names no GPU"));
    }
    Ok(out)
}

/// Runs `cudist slim`.
pub fn run(args: SlimArgs, catalog: &Catalog) -> Result<ExitCode> {
    let targets = parse_targets(
        &args.gpu,
        args.host.as_deref(),
        args.allow_unknown_gpu,
        catalog,
    )?;
    let opts = Options {
        targets: targets.clone(),
        ptx: args.ptx,
        allow_empty: args.allow_empty,
        keep_layout: args.keep_layout,
    };
    if args.output.is_some() && args.inputs.len() != 1 {
        bail!(errors::usage("-o names one output: give one ELF input"));
    }
    let mut names: Vec<String> = targets.iter().map(|t| format!("sm_{}", t.sm)).collect();
    names.sort_by_key(|n| n[3..].parse::<u32>().unwrap_or(0));
    names.dedup();
    let mut report = Report {
        schema: SCHEMA.into(),
        cudist_version: env!("CARGO_PKG_VERSION").into(),
        targets: names,
        ptx: args.ptx,
        dry_run: args.dry_run,
        inputs: Vec::new(),
    };
    // Every input is planned before anything is written: a bad input writes nothing.
    let mut plans = Vec::new();
    for input in &args.inputs {
        let spinner = util::Spinner::start(format!("slimming {}", input.display()));
        let plan = plan_input(input, &opts)?;
        drop(spinner);
        plans.push(plan);
    }
    for mut plan in plans {
        if !args.dry_run {
            let (output, bytes) = write(&plan, &args, &opts, &report)?;
            plan.report.output = output;
            if let Some((_, after)) = &mut plan.report.package_bytes {
                *after = bytes;
            }
        }
        report.inputs.push(plan.report);
    }
    if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// One input, planned: what slim would do, and which of its ELF files change. Nothing is held
/// in memory: the write reads and slims each changed file again, one at a time.
struct Plan {
    input: PathBuf,
    report: InputReport,
    /// The changed ELF files: paths inside the input (a directory's, a wheel's members), or the
    /// input itself.
    changed: Vec<String>,
    /// A wheel's members read whole while planning (their CRC checked then): not inflated again
    /// to check them when they are copied.
    checked: Vec<String>,
}

fn is_elf(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}

/// The most bytes of one file or member slim holds in memory (`--max-memory`: slim changes one
/// large file at a time); a larger one is held in a temporary file ([`Buf`]).
fn in_memory() -> u64 {
    cudist_fs::limits().in_memory_member(1)
}

fn read_file(path: &Path) -> Result<Buf> {
    Buf::read_file(path, cudist_fs::limits().unpacked, in_memory())
        .map_err(|e| errors::reading(&path.display().to_string(), &e))
}

fn plan_input(input: &Path, opts: &Options) -> Result<Plan> {
    let meta = std::fs::symlink_metadata(input)
        .map_err(|e| errors::input(format!("cannot read {}: {e}", input.display())))?;
    let mut report = InputReport {
        input: input.display().to_string(),
        kind: String::new(),
        output: None,
        files: Vec::new(),
        without_device_code: Vec::new(),
        bytes_removed: 0,
        file_bytes_cut: 0,
        package_bytes: None,
    };
    let mut changed = Vec::new();
    let mut checked = Vec::new();
    // What slimming a file does, into the report.
    let mut record =
        |name: String, slimmed: Option<FileSlim>, report: &mut InputReport| match slimmed {
            Some(f) => {
                report.bytes_removed += f.bytes_removed;
                report.file_bytes_cut += f.file_bytes_cut;
                if f.bytes_removed > 0 {
                    changed.push(name);
                }
                report.files.push(f);
            }
            None => report.without_device_code.push(name),
        };
    // Slims a copy of one file, to see what changes; the copy is dropped.
    let mut one = |name: String, mut data: Buf, report: &mut InputReport| -> Result<()> {
        let r = slim_elf(&name, &mut data, opts)?;
        record(name, r, report);
        Ok(())
    };
    if meta.is_dir() {
        report.kind = "directory".into();
        for f in cudist_analysis::elf_files::loadable(input)? {
            let rel = f
                .strip_prefix(input)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            one(rel, read_file(&f)?, &mut report)?;
        }
    } else if cudist_conda::is_package_path(input) {
        report.kind = "conda".into();
        report.package_bytes = Some((meta.len(), None));
        let mut failure: Option<anyhow::Error> = None;
        cudist_conda::scan(input, cudist_conda::Parts::All, |m| {
            let cudist_conda::MemberKind::File(size) = m.kind else {
                return Ok(cudist_conda::Next::Continue);
            };
            if m.path.starts_with("info/") {
                return Ok(cudist_conda::Next::Continue);
            }
            let data = Buf::unpack(m.reader, size, in_memory()).map_err(|e| {
                cudist_conda::Error::Invalid {
                    path: input.to_path_buf(),
                    what: "member",
                    message: format!("{}: {e}", m.path),
                }
            })?;
            if is_elf(&data) {
                if let Err(e) = one(m.path.to_string(), data, &mut report) {
                    failure = Some(e);
                    return Ok(cudist_conda::Next::Stop);
                }
            }
            Ok(cudist_conda::Next::Continue)
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
    } else if input.extension().is_some_and(|e| e == "whl") {
        report.kind = "wheel".into();
        // The wheel's errors name the member; the context names the wheel, once.
        let named = || input.display().to_string();
        let wheel = cudist_wheel::Wheel::open(input).with_context(named)?;
        report.package_bytes = Some((wheel.file_size(), None));
        let mut elfs = Vec::new();
        for m in wheel.members() {
            if !m.is_dir && is_elf(&wheel.read_prefix(m.index, 4).with_context(named)?) {
                elfs.push(m);
            }
        }
        // Members up to SMALL are planned on all cores, larger ones one at a time: memory stays
        // within the largest member and the small ones in flight.
        const SMALL: u64 = 16 << 20;
        use rayon::prelude::*;
        let small: Vec<(String, Result<Option<FileSlim>>)> = elfs
            .par_iter()
            .filter(|m| m.size <= SMALL)
            .map(|m| {
                let r = wheel
                    .read_member(m.index)
                    .map_err(anyhow::Error::from)
                    .and_then(|d| {
                        slim_elf(&m.name, &mut Buf::Heap(d), opts).map_err(anyhow::Error::from)
                    });
                (m.name.clone(), r)
            })
            .collect();
        let mut results: std::collections::HashMap<String, Result<Option<FileSlim>>> =
            small.into_iter().collect();
        for m in &elfs {
            let r = match results.remove(&m.name) {
                Some(r) => r,
                None => wheel
                    .read_member_buf(m.index, in_memory())
                    .map_err(anyhow::Error::from)
                    .and_then(|mut d| slim_elf(&m.name, &mut d, opts).map_err(anyhow::Error::from)),
            };
            record(m.name.clone(), r.with_context(named)?, &mut report);
            checked.push(m.name.clone());
        }
    } else if meta.is_file() {
        report.kind = "elf".into();
        let data = read_file(input)?;
        if !is_elf(&data) {
            bail!(errors::input(format!(
                "{}: not an ELF file, a wheel or a directory",
                input.display()
            )));
        }
        one(input.display().to_string(), data, &mut report)?;
    } else {
        bail!(errors::input(format!(
            "{}: not a regular file or a directory",
            input.display()
        )));
    }
    Ok(Plan {
        input: input.to_path_buf(),
        report,
        changed,
        checked,
    })
}

/// Writes one input's result; returns where, and the size of a wheel written.
fn write(
    plan: &Plan,
    args: &SlimArgs,
    opts: &Options,
    report: &Report,
) -> Result<(Option<String>, Option<u64>)> {
    let slimmed = |name: &str, mut data: Buf| -> Result<Buf> {
        slim_elf(name, &mut data, opts)?;
        Ok(data)
    };
    match plan.report.kind.as_str() {
        "elf" => {
            let data = slimmed(&plan.report.input, read_file(&plan.input)?)?;
            match (&args.output, args.in_place) {
                (Some(o), _) => {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(&plan.input)?.permissions().mode();
                    cudist_fs::write_atomic(o, &data, Some(mode & 0o777))
                        .with_context(|| format!("cannot write {}", o.display()))?;
                    Ok((Some(o.display().to_string()), None))
                }
                (None, true) => {
                    let mut batch = cudist_fs::write::Batch::new();
                    batch.stage(&plan.input, &data)?;
                    batch.commit()?;
                    Ok((Some(plan.input.display().to_string()), None))
                }
                (None, false) => bail!(errors::usage(
                    "say where the result goes: -o FILE, or --in-place"
                )),
            }
        }
        "directory" => {
            if !args.in_place {
                bail!(errors::usage(
                    "a directory is slimmed in place: pass --in-place (copy it first to keep the original)"
                ));
            }
            // All files or none: each is staged beside itself, then all are renamed into place.
            let mut batch = cudist_fs::write::Batch::new();
            for rel in &plan.changed {
                let p = plan.input.join(rel);
                batch.stage(&p, &slimmed(rel, read_file(&p)?)?)?;
            }
            batch.commit()?;
            Ok((Some(plan.input.display().to_string()), None))
        }
        "conda" => {
            let Some(dir) = &args.wheel_dir else {
                bail!(errors::usage(
                    "say where slimmed packages go: -w DIR (a package is never changed in place)"
                ));
            };
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let pkg = cudist_conda::read(&plan.input)?;
            // The build string says what the package was slimmed to: `h1234_0_slim_sm86_sm90`.
            let build = format!("{}_slim_{}", pkg.index.build, report.targets.join("_"));
            let stem = format!("{}-{}-{build}.conda", pkg.index.name, pkg.index.version);
            if std::fs::canonicalize(dir.join(&stem)).ok()
                == std::fs::canonicalize(&plan.input).ok()
            {
                bail!(errors::input(format!(
                    "{}: the output would overwrite the input; choose another -w directory",
                    plan.input.display()
                )));
            }
            let record = slim_record(report)?;
            let wanted: std::collections::BTreeSet<&str> =
                plan.changed.iter().map(String::as_str).collect();
            let mut transform = |name: &str, data: &mut Buf| -> Result<bool, String> {
                if !wanted.contains(name) {
                    return Ok(false);
                }
                slim_elf(name, data, opts)
                    .map(|f| f.is_some_and(|f| f.bytes_removed > 0))
                    .map_err(|e| cudist_analysis::error::message(&e))
            };
            let write_opts = cudist_conda::WriteOptions {
                zstd_level: 10,
                timestamp: pkg
                    .index
                    .timestamp
                    .map(|ms| (ms / 1000) as i64)
                    .unwrap_or(0),
                threads: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            };
            let (out, _) = cudist_conda::repack(
                &plan.input,
                dir,
                &build,
                &mut transform,
                &[(cudist_analysis::slim::RECORD_FILE.to_string(), record)],
                &write_opts,
            )?;
            let bytes = std::fs::metadata(&out)?.len();
            Ok((Some(out.display().to_string()), Some(bytes)))
        }
        _ => {
            let Some(dir) = &args.wheel_dir else {
                bail!(errors::usage(
                    "say where slimmed wheels go: -w DIR (a wheel is never changed in place)"
                ));
            };
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let name = plan.input.file_name().context("a wheel has a file name")?;
            let dest = dir.join(name);
            if dest.exists()
                && std::fs::canonicalize(&dest).ok() == std::fs::canonicalize(&plan.input).ok()
            {
                bail!(errors::input(format!(
                    "{}: -w names the wheel's own directory; choose another",
                    dest.display()
                )));
            }
            let named = || plan.input.display().to_string();
            let wheel = cudist_wheel::Wheel::open(&plan.input).with_context(named)?;
            let dist_info = wheel.dist_info().with_context(named)?;
            let slim_opts = opts.clone();
            // Each changed member is read, slimmed and deflated into the output one at a time;
            // the ELF members read while planning are not inflated again to check them.
            let mut rw = cudist_wheel::write::Rewrite {
                transform_members: plan.changed.iter().cloned().collect(),
                transform: Some(Box::new(move |name: &str, data: &mut Buf| {
                    slim_elf(name, data, &slim_opts)
                        .map(|_| ())
                        .map_err(|e| cudist_analysis::error::message(&e))
                })),
                check_copied: true,
                already_checked: plan.checked.iter().cloned().collect(),
                ..Default::default()
            };
            let record = slim_record(report)?;
            let member = format!("{dist_info}/{}", cudist_analysis::slim::RECORD_FILE);
            if wheel.members().iter().any(|m| m.name == member) {
                rw.replace.insert(member, record);
            } else {
                rw.add.insert(member, (record, 0o644));
            }
            let written = cudist_wheel::write::rewrite(&wheel, &rw, &dest)?;
            Ok((
                Some(written.path.display().to_string()),
                Some(written.bytes),
            ))
        }
    }
}

/// What a slimmed package records of itself (`cudist-slim.json`).
fn slim_record(report: &Report) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec_pretty(&SlimRecord {
        schema: "cudist.slim-record/1".into(),
        targets: report.targets.clone(),
        ptx: report.ptx,
        cudist_version: report.cudist_version.clone(),
    })?)
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    for i in &r.inputs {
        let kept: usize = i.files.iter().map(|f| f.kept.len()).sum();
        let removed: usize = i.files.iter().map(|f| f.removed.len()).sum();
        s.push_str(&format!(
            "{}  ({}): {} {} of device code in {} entries, {} entries kept, for {}\n",
            i.input,
            i.kind,
            if r.dry_run { "would remove" } else { "removed" },
            human(i.bytes_removed),
            removed,
            kept,
            r.targets.join(" ")
        ));
        for f in &i.files {
            let mut kept: Vec<&str> = f.kept.iter().map(|e| e.arch.as_str()).collect();
            kept.sort();
            kept.dedup();
            // Which of the two shrinks it achieved: the package only (zero bytes in place), or
            // the installed file too.
            let file = match (&f.layout_kept, f.file_bytes_cut) {
                (_, cut) if cut > 0 => format!("; the file shrinks by {}", human(cut)),
                (Some(why), _) => format!("; the file keeps its size ({why})"),
                _ => String::new(),
            };
            s.push_str(&format!(
                "  {}: keeps {}; removes {} entries ({}){file}\n",
                f.path,
                kept.join(" "),
                f.removed.len(),
                human(f.bytes_removed)
            ));
        }
        if !i.without_device_code.is_empty() {
            s.push_str(&format!(
                "  {} ELF file(s) without device code, left as they were\n",
                i.without_device_code.len()
            ));
        }
        if i.file_bytes_cut > 0 {
            s.push_str(&format!(
                "  installed files: {} smaller\n",
                human(i.file_bytes_cut)
            ));
        }
        if let Some((before, Some(after))) = i.package_bytes {
            s.push_str(&format!(
                "  package: {} -> {} ({:.1}%)\n",
                human(before),
                human(after),
                after as f64 * 100.0 / before.max(1) as f64
            ));
        }
        if let Some(o) = &i.output {
            s.push_str(&format!("  wrote {o}\n"));
        }
    }
    s
}

fn human(b: u64) -> String {
    cudist_analysis::human_bytes(b)
}
