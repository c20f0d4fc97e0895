//! An artifact judged whole: its ELF files' analyses folded into one [`Artifact`] with what it
//! needs from outside, what it vendors or links statically, where its search paths lead, its
//! device code per GPU, its size breakdown, its platform tag and a verdict.
//!
//! An artifact is a wheel, a conda package, a directory (an unpacked wheel, an install prefix) or
//! one ELF file ([`crate::open::Input`]). Its ELF files are found (wheels: by name, then by magic,
//! reading only those members), analysed in parallel ([`crate::analyse`]), and folded here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cudist_catalog::{Catalog, CudaVersion};
use cudist_fatbin::{EntryKind, SectionKind};

use crate::analyse::{analyse_elf, classify_needed, library_ref, Analysed, MarkerIndex};
use crate::error::{input_error, Error};
use crate::model::*;
use crate::open::{scan, Input, Scanned};
use crate::platform;

/// Inspects every input; unreadable inputs become [`InputError`]s in the report.
pub fn inspect(inputs: &[Input], catalog: &Catalog) -> Report {
    let mut artifacts = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        match inspect_one(input, catalog) {
            Ok(a) => artifacts.push(a),
            Err(e) => errors.push(input_error(input.path().display().to_string(), &e)),
        }
    }
    let summary = Summary {
        artifacts: artifacts.len(),
        errors: errors.len() + artifacts.iter().map(|a| a.problems.len()).sum::<usize>(),
        elf_files: artifacts.iter().map(|a| a.elf_files.len()).sum(),
        vendored_cuda_bytes: artifacts.iter().map(|a| a.breakdown.vendored_cuda).sum(),
        needs_attention: artifacts
            .iter()
            .filter(|a| a.verdict.status != VerdictStatus::Ok)
            .count(),
    };
    Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        artifacts,
        errors,
        summary,
    }
}

/// Inspects one artifact.
pub fn inspect_one(input: &Input, catalog: &Catalog) -> Result<Artifact, Error> {
    let markers = MarkerIndex::new(catalog);
    let scanned = scan(input, &|path, data| {
        analyse_elf(path, data, catalog, &markers)
    })?;
    Ok(assemble(input, scanned, catalog))
}

/// Inspects a wheel from the front of its members only ([`crate::open::scan_wheel_front`]): for
/// a wheel on an index read by range requests. `name` is its file name; `enough` says when the
/// device code seen in a member answers the caller's question.
pub fn inspect_front(
    wheel: &cudist_wheel::Wheel,
    name: &str,
    enough: &dyn Fn(&[DeviceEntry]) -> bool,
    catalog: &Catalog,
) -> Result<(Artifact, crate::open::FrontRead), Error> {
    let (scanned, read) = crate::open::scan_wheel_front(wheel, enough, catalog)?;
    let input = Input::Wheel(PathBuf::from(name));
    Ok((assemble(&input, scanned, catalog), read))
}

/// Folds per-file analyses into the artifact report.
fn assemble(input: &Input, scanned: Scanned, catalog: &Catalog) -> Artifact {
    let Scanned {
        kind,
        size,
        installed_size,
        wheel,
        conda,
        mut elfs,
        problems,
        files,
        links,
        sources,
    } = scanned;
    elfs.sort_by(|a, b| a.report.path.cmp(&b.report.path));

    let wheel_dirs = wheel_dir_index(catalog);
    // The distribution's own CUDA major, for files whose own names do not pin one.
    let dist_major = wheel
        .as_ref()
        .and_then(|w| distribution_major(w.name.as_deref(), &w.requires_dist, catalog));
    classify_with_majors(&mut elfs, dist_major, catalog, &wheel_dirs);
    let this_dist = wheel
        .as_ref()
        .and_then(|w| w.name.as_deref())
        .map(normalise_dist);
    let conda_name = conda.as_ref().map(|c| c.name.as_str());
    let vendored = mark_vendored(&mut elfs, this_dist.as_deref(), conda_name, catalog);
    // Lazy loads: a library's own file names itself, and the SONAME of a trampoline table's
    // library is the one of the file's CUDA major.
    for a in &mut elfs {
        let own = a.own_library.clone().or_else(|| a.report.vendored.clone());
        // A CUDA library's own run-time loads (NVRTC's builtins, the runtime's driver) are the
        // catalog's `dlopens` facts, which doctor checks: lazy loading is what other files do.
        if own.is_some() {
            a.report.lazy_loads.clear();
        }
        // Without a major from its NEEDED entries, the file's own lazily loaded SONAMEs that
        // belong to one major say it (ctranslate2 names libcublas.so.12 beside libnccl.so.2).
        // A fallback chain's first link is no vote: which link loads is what is to be chosen
        // (qoco names libcublas.so.11 before .12).
        if a.hint.is_none() {
            let single = a
                .report
                .lazy_loads
                .iter()
                .filter(|l| l.alternatives.len() < 2);
            a.hint = lazy_major(single, catalog);
        }
        // A file that names both majors of a library tries them in turn (a fallback chain):
        // the distribution's major is the one its install provides.
        let hint = a.hint.or(dist_major);
        // The CUDA major its own code was built with (its newest PTX), for a chain none of whose
        // links is of the file's major (qoco's CUDA 13 build names libcublas.so.11 and .12).
        let built = built_major(&a.report, catalog);
        // A fallback chain of SONAMEs: the one of the file's major is what it loads there.
        for l in a.report.lazy_loads.iter_mut() {
            if l.alternatives.len() < 2 {
                l.alternatives.clear();
                continue;
            }
            // The names as the file writes them (its linker name among them): whichever it
            // finds first.
            l.evidence.push_str(", whichever it finds");
            // Else the newest link not newer than what it was built with: the newest wheels
            // it accepts.
            let of_hint = crate::analyse::chain_link_of_major(&l.alternatives, hint, catalog)
                .or_else(|| newest_link(&l.alternatives, hint.or(built), catalog));
            if let Some(so) = of_hint.map(|i| l.alternatives[i].clone()) {
                l.written = Some(so.clone());
                l.soname = Some(so);
            }
        }
        // The links chosen say the major of the SONAMEs several majors share (qoco's
        // libcusparse.so.12 beside libcublas.so.12 is CUDA 12's).
        if a.hint.is_none() {
            a.hint = lazy_major(&a.report.lazy_loads, catalog);
        }
        for l in a
            .report
            .lazy_loads
            .iter_mut()
            .filter(|l| l.soname.is_none())
        {
            l.soname = catalog
                .library(&l.library)
                .and_then(|lib| lib.cuda.iter().find(|m| Some(m.major) == hint))
                .and_then(|m| m.sonames.iter().rev().find(|s| !s.contains(".alt.")))
                .cloned();
        }
    }
    // Static CUDA: marker definitions in files that are not that library themselves.
    for a in &mut elfs {
        a.report.static_cuda = static_cuda(a);
    }
    locate(&mut elfs, input, &files, &links, &wheel_dirs);
    // What loads when: the package's own preloads, and each file's tier.
    // Tiers are a Python package's (an import reaches some files, not others); a lone ELF
    // file, a toolkit tree or a prefix without Python loads every file it is asked about.
    // The package's CUDA major: its runtime's, else what its files and name say (cupy-cuda13x
    // opens every CUDA library through cuda-pathfinder, whose names span majors).
    let major = cuda_major_of(&elfs)
        .or_else(|| artifact_major_hint(&elfs, dist_major, catalog, &wheel_dirs));
    let mut scan = crate::loads::scan(&sources, catalog, major);
    // What the package's Python hands on to a file that reads the variable loads as it finds it.
    let read: BTreeSet<String> = elfs
        .iter()
        .flat_map(|a| &a.report.lazy_loads)
        .flat_map(|l| l.variables.iter().cloned())
        .collect();
    scan.hand_over(&read);
    let mut preloads = scan.preloads;
    // A file built for another machine never loads on this one (PyNvVideoCodec's
    // `…cpython-*-aarch64-linux-gnu*` beside its x86_64 names): not a load of this artifact.
    if let Some(arch) = elfs.iter().find_map(|a| a.report.abi.arch.as_deref()) {
        preloads.retain(|p| !crate::loads::names_another_machine(&p.name, arch));
    }
    let python = elfs.iter().any(|a| a.report.abi.python_extension.is_some())
        || sources.iter().any(|s| s.path.ends_with(".py"));
    if kind != ArtifactKind::Elf && python {
        assign_tiers(&mut elfs, &preloads, &scan.modules);
    }
    let mut vendored = vendored;
    let reports: Vec<&ElfReport> = elfs.iter().map(|a| &a.report).collect();
    let mut reach = opened_by(&reports, &vendored, &preloads, catalog);
    // The carried libraries in a directory the package puts on `LD_LIBRARY_PATH` for the
    // programs it starts: those find them by name there, wherever they run from.
    for v in &vendored {
        let dir = parent(&v.path);
        let dir = dir.rsplit('/').next().unwrap_or(&dir);
        if let Some((_, at)) = scan.library_path_dirs.iter().find(|(d, _)| d == dir) {
            reach.insert(
                v.path.clone(),
                (
                    OpenedBy::Python,
                    Some(format!("{at}, a directory it puts on LD_LIBRARY_PATH")),
                ),
            );
        }
    }
    for v in &mut vendored {
        if let Some((by, at)) = reach.get(v.path.as_str()) {
            v.opened_by = *by;
            v.opened_at = at.clone();
        }
    }
    let requires: Vec<ReqName> = wheel
        .as_ref()
        .map(|w| {
            w.requires_dist
                .iter()
                .filter_map(|r| ReqName::parse(r))
                .collect()
        })
        .unwrap_or_default();
    let (mut cuda_needed, driver_needed) =
        aggregate_needs(&elfs, &requires, &files, &preloads, catalog);
    // A wheel that is the library's own distribution (libucx-cu12's files need libucs.so.0,
    // which it installs) provides it by being installed. Else what may come through a
    // requirement whose requirements the snapshot lacks: only a library of another wheel than
    // NVIDIA's (RAPIDS', UCX's). NVIDIA's wheels are what a package built for CUDA declares
    // itself, and a snapshot gap must not excuse a missing `nvidia-*` requirement (cupy-cuda12x,
    // say, brings cuBLAS only under an extra).
    let own_name = wheel
        .as_ref()
        .and_then(|w| w.name.as_deref())
        .map(crate::requirements::normalise_dist);
    let unrecorded = crate::requirements::unrecorded_cuda_requirements(&requires);
    for n in cuda_needed.iter_mut().filter(|n| !n.declared) {
        let Some(l) = &n.library else { continue };
        if l.pip.as_deref().map(crate::requirements::normalise_dist) == own_name
            && own_name.is_some()
        {
            n.declared = true;
            n.declared_by = own_name.as_ref().map(|own| format!("{own} (this wheel)"));
        } else if catalog
            .library(&l.id)
            .is_some_and(|c| c.kind == cudist_catalog::LibraryKind::External)
        {
            n.may_come_through = unrecorded.clone();
        }
    }
    // What a wheel's loader loads at import brings what that wheel requires (cuvs:
    // `libcuvs.load_library()` loads libcuvs.so, which finds libcublas.so.12 through its own
    // RPATH, before any of cuvs' modules load): the files that need it find it loaded.
    for n in cuda_needed
        .iter_mut()
        .filter(|n| n.loaded_first_by.is_none())
    {
        if let Some((wheel, p)) = loaded_wheel_requiring(n, &preloads, catalog) {
            n.loaded_first_by = Some(format!("{wheel} ({})", p.place()));
        }
    }

    // 5. Device code and sizes; variants one by one.
    let variants = variant_reports(&elfs, &cuda_needed, catalog);
    let mut device = device_summary(&elfs, &cuda_needed, catalog);
    if !variants.is_empty() {
        variant_floors(&mut device, &elfs, &cuda_needed, &variants, catalog);
    }
    let breakdown = breakdown(&elfs, &vendored, installed_size);
    let file_name = input
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file_tag = platform::FileTag::of(&file_name);
    // A library of a Python package (torch's libc10.so) comes with that package, which must be
    // imported before the file can load at all (auditwheel is told so with `--exclude`): not an
    // outside library to judge.
    let from_required = |n: &crate::model::Needed| catalog.python_provider(&n.soname).is_some();
    let platform = platform::evaluate(elfs.iter().map(|a| &a.report), &from_required, &file_tag);
    let mut verdict = verdict(
        kind,
        (&cuda_needed, &driver_needed),
        &vendored,
        &elfs,
        &device,
        PythonLoads {
            preloads: &preloads,
            modules: &scan.modules,
        },
        catalog,
    );
    declared_only_line(&cuda_needed, &requires, catalog, &mut verdict);
    variant_lines(&variants, &cuda_needed, &mut verdict);
    vendor_lines(&elfs, catalog, &mut verdict);
    linker_name_lines(&preloads, catalog, &mut verdict);
    lazy_linker_name_lines(&elfs, catalog, &mut verdict);
    finder_lines(&scan.finds, catalog, &mut verdict);
    // A Linux wheel (not one for Android, iOS, …) that no policy allows.
    let unallowed = kind == ArtifactKind::Wheel
        && file_tag.is_linux()
        && platform.policy.as_deref() == Some("linux");
    // A wheel its tagger already tagged manylinux or musllinux: the libraries it needs that no
    // policy allows, that it does not carry and that no catalog names, were left out on purpose
    // (auditwheel's `--exclude`: OpenMM's CUDA plugins need `libOpenMMAmoeba.so` from the openmm
    // wheel). Where a policy holds with those out, repair tags the wheel with it and the verdict
    // says what the tag rests on; else the wheel is unportable.
    let other = |carried: bool| -> BTreeSet<&str> {
        elfs.iter()
            .flat_map(|a| &a.report.needed)
            .filter(|n| {
                n.class == NeededClass::Other && n.provided_in_artifact.is_some() == carried
            })
            .map(|n| n.soname.as_str())
            .collect()
    };
    let tagged_with = |left_out: &BTreeSet<&str>| {
        Some(platform::evaluate(
            elfs.iter().map(|a| &a.report),
            &|n| from_required(n) || left_out.contains(n.soname.as_str()),
            &file_tag,
        ))
        .filter(|p| p.policy.as_deref().is_some_and(|x| x != "linux"))
    };
    // Where those are not enough, a library it carries where a file's search path does not reach
    // it was left where it is too (BabitMF's program linking the package's libhmp.so.1).
    let mut left_out = other(false);
    let mut as_tagged = None;
    if unallowed && file_tag.libc.is_some() {
        as_tagged = tagged_with(&left_out).filter(|_| !left_out.is_empty());
        if as_tagged.is_none() {
            left_out.extend(other(true));
            as_tagged = tagged_with(&left_out);
        }
    }
    // A tag older than what the files need is misbuilt, judged with the libraries its tagger
    // left out where it left some (dgl: tagged manylinux1, its files need glibc 2.27).
    if kind == ArtifactKind::Wheel {
        misbuilt_lines(
            &file_name,
            &elfs,
            as_tagged.as_ref().unwrap_or(&platform),
            &mut verdict,
        );
    }
    if unallowed {
        match as_tagged {
            Some(p) => {
                // A SONAME the wheel carries under another file name (`libtensorrt_rtx.so.1.7.1`,
                // no `libtensorrt_rtx.so.1` beside it) is the wheel's own: the loader finds it
                // only once something has loaded that file by path.
                let under_other_name = |so: &str| {
                    elfs.iter()
                        .filter(|a| a.report.soname.as_deref() == Some(so))
                        .map(|a| a.report.path.as_str())
                        .find(|path| !path.ends_with(&format!("/{so}")) && *path != so)
                };
                let (carried, absent): (Vec<&str>, Vec<&str>) = left_out
                    .iter()
                    .copied()
                    .partition(|so| under_other_name(so).is_some());
                let mut rests = Vec::new();
                if !absent.is_empty() {
                    rests.push(format!(
                        "its tagger having left out {}: no manylinux policy allows a wheel to expect them from the system, so a dependency or the user's machine must provide them",
                        absent.join(", ")
                    ));
                }
                if !carried.is_empty() {
                    rests.push(format!(
                        "{}, which it carries under other file names ({}): no search finds them by these names, only a load of those files by path",
                        carried.join(", "),
                        carried
                            .iter()
                            .filter_map(|so| under_other_name(so))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                verdict.lines.push(format!(
                    "its tag, {} for what it carries, rests on {} (auditwheel's reading gives {}; `cudist repair` tags it {})",
                    p.policy.as_deref().unwrap_or_default(),
                    rests.join("; and on "),
                    platform.tags.join("."),
                    p.tags.join("."),
                ))
            }
            None => unportable(&platform, &mut verdict),
        }
    }
    let conda = conda.map(|c| conda_check(c, &cuda_needed, catalog, &mut verdict));

    Artifact {
        path: input.path().display().to_string(),
        kind,
        size,
        installed_size,
        wheel,
        conda,
        elf_files: elfs.into_iter().map(|a| a.report).collect(),
        problems,
        cuda_needed,
        driver_needed,
        vendored,
        device,
        breakdown,
        platform,
        preloads,
        variants,
        verdict,
    }
}

/// The CUDA major an artifact's files link, when one is certain (for cuda-pathfinder's names).
/// The CUDA major a file's device code was built with: the release that introduced its newest
/// PTX ISA.
fn built_major(r: &ElfReport, catalog: &Catalog) -> Option<u32> {
    built_major_of(&r.device_code, catalog)
}

/// [`built_major`] of a file's device code entries.
pub(crate) fn built_major_of(
    entries: &[crate::model::DeviceEntry],
    catalog: &Catalog,
) -> Option<u32> {
    entries
        .iter()
        .filter(|e| e.kind == EntryKind::Ptx)
        .filter_map(|e| CudaVersion::parse(&e.version))
        .max()
        .and_then(|isa| catalog.cuda_for_ptx_isa(isa))
        .map(|c| c.major)
}

/// The link of a fallback chain of SONAMEs of the newest CUDA major not above `limit` (any, with
/// none): where no link is of the file's own major, the newest wheels the file accepts.
pub(crate) fn newest_link(
    chain: &[String],
    limit: Option<u32>,
    catalog: &Catalog,
) -> Option<usize> {
    chain
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let m = catalog
                .majors_of(s)
                .into_iter()
                .filter(|m| limit.is_none_or(|l| *m <= l))
                .max()?;
            Some((m, i))
        })
        .max_by_key(|(m, i)| (*m, std::cmp::Reverse(*i)))
        .map(|(_, i)| i)
}

fn cuda_major_of(elfs: &[Analysed]) -> Option<u32> {
    elfs.iter()
        .flat_map(|a| &a.report.needed)
        .filter_map(|n| n.library.as_ref())
        .filter(|l| !l.cuda_major_ambiguous && l.id == "cudart")
        .map(|l| l.cuda_major)
        .max()
}

/// Sets each file's load tier ([`crate::loads::tiers`]) and a variant's CUDA release.
fn assign_tiers(
    elfs: &mut [Analysed],
    preloads: &[crate::loads::Preload],
    modules: &BTreeMap<String, crate::pysource::ImportedAt>,
) {
    let nodes: Vec<crate::loads::Node> = elfs
        .iter()
        .map(|a| crate::loads::Node {
            path: &a.report.path,
            soname: a.report.soname.as_deref(),
            needed: a.report.needed.iter().map(|n| n.soname.as_str()).collect(),
            extension: a.report.abi.python_extension.is_some(),
            mentions: &a.mentions,
        })
        .collect();
    let placed = crate::loads::tiers(&nodes, preloads, modules);
    for (a, p) in elfs.iter_mut().zip(placed) {
        let t = p.tier;
        a.report.tier = t;
        a.report.tier_reason = p.why;
        if t == crate::loads::Tier::Variant {
            a.report.variant_cuda = crate::loads::variant_name(&a.report.path).map(|v| v.cuda);
        }
    }
}

/// Each variant library's own needs, device code and driver floor.
fn variant_reports(
    elfs: &[Analysed],
    cuda_needed: &[NeededLibrary],
    catalog: &Catalog,
) -> Vec<VariantReport> {
    elfs.iter()
        .filter(|a| a.report.tier == crate::loads::Tier::Variant)
        .filter_map(|a| {
            let name = crate::loads::variant_name(&a.report.path)?;
            let mine: Vec<NeededLibrary> = cuda_needed
                .iter()
                .filter(|n| n.needed_by.contains(&a.report.path))
                .cloned()
                .collect();
            let d = device_summary(std::slice::from_ref(a), &mine, catalog);
            Some(VariantReport {
                path: a.report.path.clone(),
                group: name.group,
                cuda: name.cuda,
                cuda_needed: mine.iter().map(|n| n.soname.clone()).collect(),
                native_sms: d.native_sms,
                newest_ptx: d.newest_ptx,
                min_driver: d.min_driver,
            })
        })
        .collect()
}

/// With variants, the artifact runs on the oldest driver one of its variants runs on (the
/// package picks one; bitsandbytes' CUDA 11.8 build runs where its CUDA 13 build does not), and
/// on no older one than its other files need.
fn variant_floors(
    device: &mut DeviceSummary,
    elfs: &[Analysed],
    cuda_needed: &[NeededLibrary],
    variants: &[VariantReport],
    catalog: &Catalog,
) {
    let rest_needs: Vec<NeededLibrary> = cuda_needed
        .iter()
        .filter(|n| n.tier != crate::loads::Tier::Variant)
        .cloned()
        .collect();
    let others = device_summary(
        elfs.iter()
            .filter(|a| a.report.tier != crate::loads::Tier::Variant),
        &rest_needs,
        catalog,
    );
    let oldest = variants
        .iter()
        .filter_map(|v| v.min_driver.as_ref().map(|f| (v, f)))
        .min_by_key(|(_, f)| cudist_catalog::driver_version_key(&f.driver));
    device.min_driver = match (others.min_driver, oldest) {
        (Some(o), Some((_, f)))
            if cudist_catalog::driver_version_key(&o.driver)
                >= cudist_catalog::driver_version_key(&f.driver) =>
        {
            Some(o)
        }
        (_, Some((v, f))) => Some(DriverFloor {
            driver: f.driver.clone(),
            reason: format!(
                "its oldest variant, {} (CUDA {}): {}; each variant's own floor is in `variants`",
                v.path, v.cuda, f.reason
            ),
        }),
        (o, None) => o,
    };
    device.ptx_jit_min_driver = others.ptx_jit_min_driver;
}

/// The verdict's lines about variant libraries: which releases, and what each needs that the
/// package does not provide (it finds those only where the process has loaded them already).
fn variant_lines(variants: &[VariantReport], cuda_needed: &[NeededLibrary], verdict: &mut Verdict) {
    let mut groups: BTreeMap<&str, Vec<&VariantReport>> = BTreeMap::new();
    for v in variants {
        groups.entry(v.group.as_str()).or_default().push(v);
    }
    for (group, vs) in groups {
        let releases: Vec<&str> = vs.iter().map(|v| v.cuda.as_str()).collect();
        verdict.lines.push(format!(
            "variants {group} for CUDA {}: the package loads one at run time; each is judged alone (`variants`), \
             and none of their needs becomes a requirement",
            releases.join(", ")
        ));
        for v in vs {
            let open: Vec<&str> = cuda_needed
                .iter()
                .filter(|n| n.tier == crate::loads::Tier::Variant && n.needed_by.contains(&v.path))
                .filter(|n| !(n.rpath_covers && n.declared) && n.preload.is_none())
                .map(|n| n.soname.as_str())
                .collect();
            if !open.is_empty() {
                verdict.lines.push(format!(
                    "variant CUDA {} ({}): needs {}, which no RPATH reaches and no requirement installs: it loads \
                     only where the process has loaded them already{}",
                    v.cuda,
                    v.path,
                    open.join(", "),
                    v.min_driver
                        .as_ref()
                        .map(|f| format!("; driver >= {}", f.driver))
                        .unwrap_or_default()
                ));
            }
        }
    }
}

/// Classifies every NEEDED entry again with the CUDA major the file (or else the artifact) pins
/// down, for SONAMEs several majors share.
fn classify_with_majors(
    elfs: &mut [Analysed],
    dist_major: Option<u32>,
    catalog: &Catalog,
    wheel_dirs: &WheelDirs,
) {
    let artifact_hint = artifact_major_hint(elfs, dist_major, catalog, wheel_dirs);
    for a in elfs.iter_mut() {
        let hint = elf_major_hint(&a.report, catalog, wheel_dirs).or(artifact_hint);
        a.hint = hint;
        for n in &mut a.report.needed {
            *n = classify_needed(&n.soname, catalog, hint);
        }
    }
}

/// The vendored CUDA libraries: by SONAME (hashed grafts too), confirmed by content. A package
/// that is itself the library's provider (NVIDIA's own wheels, the library's conda package)
/// carries it by design.
fn mark_vendored(
    elfs: &mut [Analysed],
    this_dist: Option<&str>,
    conda_name: Option<&str>,
    catalog: &Catalog,
) -> Vec<Vendored> {
    let mut vendored = Vec::new();
    for a in elfs.iter_mut() {
        if let Some(v) = recognise_vendored(a, catalog) {
            a.own_library = v.library.as_ref().map(|l| l.id.clone());
            let provider = v
                .library
                .as_ref()
                .and_then(|l| l.pip.as_deref())
                .map(normalise_dist);
            if provider.is_some() && provider.as_deref() == this_dist {
                continue;
            }
            // A conda package named as the library's conda package is its provider.
            let conda_provider = v.library.as_ref().and_then(|l| l.conda.as_deref());
            if conda_provider.is_some() && conda_provider == conda_name {
                continue;
            }
            let base = a.report.path.rsplit('/').next().unwrap_or_default();
            a.report.vendored = Some(match &v.library {
                Some(l) => l.id.clone(),
                None => v.soname.clone().unwrap_or_else(|| base.to_string()),
            });
            vendored.push(v);
        }
    }
    vendored
}

/// Where each NEEDED entry is provided inside the artifact (by SONAME, file name, or the name
/// of a link the wheel declares to the file), and where each search-path entry leads.
fn locate(
    elfs: &mut [Analysed],
    input: &Input,
    files: &BTreeSet<String>,
    links: &BTreeMap<String, String>,
    wheel_dirs: &WheelDirs,
) {
    let mut provided: HashMap<String, String> = HashMap::new();
    for a in elfs.iter() {
        if let Some(s) = &a.report.soname {
            provided.entry(s.clone()).or_insert(a.report.path.clone());
        }
        let base = a.report.path.rsplit('/').next().unwrap_or_default();
        provided
            .entry(base.to_string())
            .or_insert(a.report.path.clone());
    }
    let elf_paths: BTreeSet<&str> = elfs.iter().map(|a| a.report.path.as_str()).collect();
    for (link, target) in links {
        if elf_paths.contains(target.as_str()) {
            let base = link.rsplit('/').next().unwrap_or(link);
            provided.entry(base.to_string()).or_insert(target.clone());
        }
    }
    for a in elfs.iter_mut() {
        for n in &mut a.report.needed {
            n.provided_in_artifact = provided.get(&n.soname).cloned();
        }
        let dir = parent(&a.report.path);
        for e in a.report.rpath.iter_mut().chain(a.report.runpath.iter_mut()) {
            resolve_search_path(e, &dir, input, files, wheel_dirs, a.hint);
        }
    }
}

/// The CUDA and driver libraries the artifact's files (not those it vendors) need, each with the
/// files that need it, whether their search paths reach it and whether the package declares it.
fn aggregate_needs(
    elfs: &[Analysed],
    requires: &[ReqName],
    files: &BTreeSet<String>,
    preloads: &[crate::loads::Preload],
    catalog: &Catalog,
) -> (Vec<NeededLibrary>, Vec<NeededLibrary>) {
    let mut cuda_needed: BTreeMap<String, NeededLibrary> = BTreeMap::new();
    let mut driver_needed: BTreeMap<String, NeededLibrary> = BTreeMap::new();
    // Per SONAME: the Python package whose import loads it before each file that needs it can
    // load (`None` once one file has no such package).
    let mut first: BTreeMap<String, Option<String>> = BTreeMap::new();
    let tier_of: HashMap<&str, crate::loads::Tier> = elfs
        .iter()
        .map(|a| (a.report.path.as_str(), a.report.tier))
        .collect();
    for a in elfs.iter().filter(|a| a.report.vendored.is_none()) {
        // A library of a Python package this file links (torch's libc10.so): nothing else puts
        // it on a search path, so the file loads only after that package's import, which has
        // loaded its CUDA libraries by then.
        let provider = a
            .report
            .needed
            .iter()
            .find_map(|n| catalog.python_provider(&n.soname));
        for n in &a.report.needed {
            let table = match n.class {
                NeededClass::Toolkit | NeededClass::External => &mut cuda_needed,
                NeededClass::Driver => &mut driver_needed,
                _ => continue,
            };
            let row = table.entry(n.soname.clone()).or_insert_with(|| {
                let mut library = n.library.clone();
                let mut provision = library
                    .as_ref()
                    .and_then(|l| crate::requirements::provision_of(requires, l));
                // A SONAME several CUDA majors share (librmm.so, libcurand.so.10), with nothing
                // in the file to choose: the major whose wheel the package declares.
                if provision.is_none() && library.as_ref().is_some_and(|l| l.cuda_major_ambiguous) {
                    for major in catalog.majors_of(&n.soname) {
                        let Some(m) = catalog.library_by_soname_hinted(&n.soname, Some(major))
                        else {
                            continue;
                        };
                        let candidate = crate::analyse::library_ref(&m);
                        if let Some(p) = crate::requirements::provision_of(requires, &candidate) {
                            library = Some(candidate);
                            provision = Some(p);
                            break;
                        }
                    }
                }
                NeededLibrary {
                    soname: n.soname.clone(),
                    library,
                    needed_by: Vec::new(),
                    rpath_covers: true,
                    declared: provision.is_some(),
                    declared_extra: provision.as_ref().and_then(|p| p.in_extra.clone()),
                    may_come_through: Vec::new(),
                    declared_by: provision.map(|p| p.by),
                    vendored: n.provided_in_artifact.is_some(),
                    tier: a.report.tier,
                    preload: preloads
                        .iter()
                        .filter(|p| p.loads(&n.soname))
                        .min_by_key(|p| !p.at_import)
                        .cloned(),
                    lazy: None,
                    loaded_first_by: None,
                }
            });
            row.lazy = None;
            row.tier = row.tier.min(a.report.tier);
            // A copy the artifact carries loads when its own loaders do, the package's vendored
            // libraries among them ([`crate::loads::tiers`] follows their NEEDED entries):
            // holoscan's `libuct.so.0` loads at import through its carried `libucp.so.0`.
            if let Some(t) = n
                .provided_in_artifact
                .as_deref()
                .and_then(|p| tier_of.get(p))
            {
                row.tier = row.tier.min(*t);
            }
            row.needed_by.push(a.report.path.clone());
            let by = provider.filter(|p| {
                row.library
                    .as_ref()
                    .is_some_and(|l| p.loads_at_import.contains(&l.id))
            });
            let entry = first
                .entry(n.soname.clone())
                .or_insert_with(|| by.map(|p| format!("{} ({})", p.pip, p.loaded_by)));
            if by.is_none() {
                *entry = None;
            }
            // Every directory the library's wheel installs it in, across its release lines.
            let want: Vec<&str> = row
                .library
                .as_ref()
                .and_then(|l| catalog.library_by_soname_hinted(&n.soname, Some(l.cuda_major)))
                .map(|m| m.major.pip_dirs().into_iter().map(|(d, _)| d).collect())
                .unwrap_or_default();
            let covered = search_path_covers(&a.report, &n.soname, &want, files)
                || loaders_rpath_covers(elfs, a, &n.soname, &want, files, 2)
                || preloaded_sibling_covers(elfs, a, &n.soname, &want, files);
            row.rpath_covers &= covered;
        }
        // Libraries the file loads itself on the first call: the file's own dlopen searches
        // its RPATH/RUNPATH as a NEEDED entry's search does. A linker name (`libcudart.so`) is
        // no SONAME a wheel installs: said on its own ([`lazy_linker_name_lines`]).
        for l in a
            .report
            .lazy_loads
            .iter()
            .filter(|l| !l.written.as_deref().is_some_and(|w| w.ends_with(".so")))
        {
            let Some(lib) = catalog.library(&l.library) else {
                continue;
            };
            let soname = l
                .soname
                .clone()
                .unwrap_or_else(|| format!("{}.so", lib.stem));
            let m = catalog.library_by_soname_hinted(&soname, a.hint);
            let library = m.as_ref().map(crate::analyse::library_ref);
            let row = cuda_needed.entry(soname.clone()).or_insert_with(|| {
                let provision = library
                    .as_ref()
                    .and_then(|l| crate::requirements::provision_of(requires, l));
                NeededLibrary {
                    soname: soname.clone(),
                    library: library.clone(),
                    needed_by: Vec::new(),
                    rpath_covers: true,
                    declared: provision.is_some(),
                    declared_extra: provision.as_ref().and_then(|p| p.in_extra.clone()),
                    may_come_through: Vec::new(),
                    declared_by: provision.map(|p| p.by),
                    vendored: false,
                    tier: crate::loads::Tier::OnDemand,
                    preload: preloads
                        .iter()
                        .filter(|p| p.loads(&soname))
                        .min_by_key(|p| !p.at_import)
                        .cloned(),
                    lazy: Some(l.evidence.clone()),
                    loaded_first_by: None,
                }
            });
            if !row.needed_by.contains(&a.report.path) {
                row.needed_by.push(a.report.path.clone());
            }
            // Carried by the artifact itself: not a need from outside.
            row.vendored |= elfs.iter().any(|b| {
                b.report.soname.as_deref() == Some(soname.as_str())
                    || b.report.path.rsplit('/').next() == Some(soname.as_str())
            });
            let want: Vec<&str> = m
                .as_ref()
                .map(|m| m.major.pip_dirs().into_iter().map(|(d, _)| d).collect())
                .unwrap_or_default();
            row.rpath_covers &= search_path_covers(&a.report, &soname, &want, files);
        }
        // A CUDA runtime linked in opens the driver itself on the first CUDA call (catboost's
        // `_catboost.so`: "CUDA driver version is insufficient" where it is missing).
        let static_runtime = a
            .report
            .static_cuda
            .iter()
            .any(|s| s.library == "cudart" && s.confidence == Confidence::Certain);
        // The driver's libraries the file opens itself (`dlopen("libcuda.so.1")`), and those a
        // runtime linked into it opens.
        let mut opened: Vec<(String, String)> = a
            .driver_dlopens
            .iter()
            .map(|so| {
                let how = if catalog.driver_lib(so).is_some() {
                    format!("imports dlopen and names {so:?} to open")
                } else {
                    format!(
                        "imports dlopen and names {so:?} to open: the driver's linker name, which only its development link provides (a container runtime that mounts the driver's {so}.1 alone leaves it out)"
                    )
                };
                (so.clone(), how)
            })
            .collect();
        if static_runtime {
            let runtime = catalog.library("cudart");
            opened.extend(
                runtime
                    .into_iter()
                    .flat_map(|l| l.dlopens.iter())
                    .filter(|d| {
                        catalog.driver_lib(d).is_some()
                            && !runtime.is_some_and(|l| l.optional_dlopens.contains(d))
                    })
                    .map(|d| {
                        (
                            d.clone(),
                            "the CUDA runtime linked into it opens the driver on the first CUDA call"
                                .to_string(),
                        )
                    }),
            );
        }
        for (soname, how) in opened {
            let row = driver_needed
                .entry(soname.clone())
                .or_insert_with(|| NeededLibrary {
                    soname,
                    library: None,
                    needed_by: Vec::new(),
                    rpath_covers: true,
                    declared: false,
                    declared_extra: None,
                    may_come_through: Vec::new(),
                    declared_by: None,
                    vendored: false,
                    // Opened on the first call, whatever loads the file (cholespy imports
                    // the module that opens `libcuda.so`; its import does not).
                    tier: crate::loads::Tier::OnDemand,
                    preload: None,
                    lazy: Some(how),
                    loaded_first_by: None,
                });
            if !row.needed_by.contains(&a.report.path) {
                row.needed_by.push(a.report.path.clone());
            }
        }
    }
    for (soname, row) in cuda_needed.iter_mut() {
        if row.lazy.is_none() {
            row.loaded_first_by = first.get(soname).cloned().flatten();
        }
    }
    (
        cuda_needed.into_values().collect(),
        driver_needed.into_values().collect(),
    )
}

/// For a declared library the package's files have no search path to, not preloaded itself:
/// the wheel its requirement comes through (the first of `declared_by`'s chain) when a loader
/// the package runs at import (with nothing catching a failure) loads that wheel's libraries,
/// and that loader. That wheel requires the library for its own libraries, which are built to
/// find it; they load before the package's modules, so a later load finds it by SONAME.
fn loaded_wheel_requiring<'a>(
    n: &NeededLibrary,
    preloads: &'a [crate::loads::Preload],
    catalog: &Catalog,
) -> Option<(String, &'a crate::loads::Preload)> {
    if !n.declared || n.rpath_covers || n.preload.is_some() || n.lazy.is_some() {
        return None;
    }
    let by = n.declared_by.as_deref()?;
    let (head, _) = by.split_once(" → ")?;
    let head = crate::requirements::normalise_dist(head);
    let major = n.library.as_ref().map(|l| l.cuda_major);
    preloads
        .iter()
        .filter(|p| p.required_at_import())
        .find_map(|p| {
            p.sonames.iter().find_map(|so| {
                let m = catalog.library_by_soname_hinted(so, major)?;
                let pip = crate::analyse::library_ref(&m).pip?;
                (crate::requirements::normalise_dist(&pip) == head).then_some((pip, p))
            })
        })
}

/// For a library needed only by on-demand files: the preload of it by a function of the package
/// (not at import) and, for every file that needs it, a preload of that file by the same function
/// (the first one). Both are loaded when that function runs; the package's loaders load what a
/// library needs before it (a wrong order would fail on the package's own machine first).
fn loaded_with<'a>(
    n: &NeededLibrary,
    preload: Option<&'a crate::loads::Preload>,
    preloads: &'a [crate::loads::Preload],
) -> Option<(&'a crate::loads::Preload, &'a crate::loads::Preload)> {
    let p = preload.filter(|p| !p.at_import && n.tier == crate::loads::Tier::OnDemand)?;
    let entry = p.on_call.as_deref()?;
    let mut first = None;
    for f in &n.needed_by {
        let name = f.rsplit('/').next().unwrap_or(f);
        let q = preloads.iter().find(|q| {
            !q.at_import && q.on_call.as_deref() == Some(entry) && (q.name == name || q.loads(name))
        })?;
        first.get_or_insert(q);
    }
    Some((p, first?))
}

/// For a library needed only by on-demand files: its preload in module code of a module the
/// import does not reach, when that module imports, after the preload, every extension module
/// through which a file needing the library loads (the file itself, or one it links): cuda-cccl's
/// `_bindings.py` loads NVRTC and nvJitLink through cuda-pathfinder, then imports
/// `_bindings_impl`, whose `libcccl.c.parallel.so` needs them. With the import's `file:line`.
fn preloaded_before_import<'a>(
    n: &NeededLibrary,
    preload: Option<&'a crate::loads::Preload>,
    elfs: &[Analysed],
    modules: &BTreeMap<String, crate::pysource::ImportedAt>,
) -> Option<(&'a crate::loads::Preload, String)> {
    let p = preload.filter(|p| {
        !p.at_import && p.on_call.is_none() && n.tier == crate::loads::Tier::OnDemand
    })?;
    let split = |at: &str| -> Option<(String, usize)> {
        let (f, l) = at.rsplit_once(':')?;
        Some((f.to_string(), l.parse().ok()?))
    };
    let (file, line) = split(&p.loaded_at)?;
    // Extension modules that module imports after the preload, outside any function.
    let mut first_at = None;
    let mut todo: Vec<usize> = Vec::new();
    for (i, a) in elfs.iter().enumerate() {
        if a.report.abi.python_extension.is_none() {
            continue;
        }
        let Some(m) = crate::loads::extension_module(&a.report.path) else {
            continue;
        };
        if let Some(crate::pysource::ImportedAt::OnCall {
            at, function: None, ..
        }) = modules.get(&m)
        {
            if split(at).is_some_and(|(f, l)| f == file && l > line) {
                first_at.get_or_insert_with(|| at.clone());
                todo.push(i);
            }
        }
    }
    // And what they link, within the package.
    let mut reached: BTreeSet<usize> = todo.iter().copied().collect();
    while let Some(i) = todo.pop() {
        for need in &elfs[i].report.needed {
            for (j, b) in elfs.iter().enumerate() {
                if b.report.names().any(|n| n == need.soname) && reached.insert(j) {
                    todo.push(j);
                }
            }
        }
    }
    let all = !n.needed_by.is_empty()
        && n.needed_by
            .iter()
            .all(|f| reached.iter().any(|&i| elfs[i].report.path == *f));
    all.then(|| first_at.map(|at| (p, at))).flatten()
}

/// The name a conda match spec is about (`libcublas >=13,<14.0a0` → `libcublas`).
fn spec_name(spec: &str) -> &str {
    let end = spec
        .find(|c: char| c.is_whitespace() || "=<>!~[".contains(c))
        .unwrap_or(spec.len());
    &spec[..end]
}

/// The overlinking check of a conda package: every CUDA library its ELF files link must come from
/// a package its `depends` names (or ship in the package); and, the reverse, a declared CUDA
/// library package that nothing links is reported.
fn conda_check(
    c: CondaMeta,
    cuda_needed: &[NeededLibrary],
    catalog: &Catalog,
    verdict: &mut Verdict,
) -> CondaInfo {
    let declared: BTreeMap<&str, &String> = c.depends.iter().map(|d| (spec_name(d), d)).collect();
    let mut links = Vec::new();
    let mut linked_packages = BTreeSet::new();
    for n in cuda_needed {
        let package = n.library.as_ref().and_then(|l| l.conda.clone());
        let declared_by = package
            .as_deref()
            .and_then(|p| declared.get(p))
            .map(|d| d.to_string());
        if let Some(p) = &package {
            linked_packages.insert(p.clone());
        }
        if declared_by.is_none() && !n.vendored {
            if verdict.status < VerdictStatus::Unresolved {
                verdict.status = VerdictStatus::Unresolved;
            }
            verdict.lines.push(format!(
                "links {} but its depends name no {}: conda will not install it with this package (overlinking)",
                n.soname,
                package.as_deref().unwrap_or("package that provides it")
            ));
        }
        links.push(CondaLink {
            soname: n.soname.clone(),
            package,
            declared_by,
            shipped: n.vendored,
        });
    }
    let cuda_packages: BTreeSet<&str> = catalog
        .libraries
        .iter()
        .filter_map(|l| l.conda.as_deref())
        .collect();
    let unlinked: Vec<String> = c
        .depends
        .iter()
        .filter(|d| {
            let n = spec_name(d);
            cuda_packages.contains(n) && !linked_packages.contains(n)
        })
        .cloned()
        .collect();
    if !unlinked.is_empty() {
        verdict.lines.push(format!(
            "declares {} but no ELF file of the package links it",
            unlinked.join(", ")
        ));
    }
    CondaInfo {
        meta: c,
        cuda_links: links,
        unlinked_depends: unlinked,
    }
}

/// The one CUDA major that a file's lazily loaded SONAMEs belong to, counting only SONAMEs of a
/// single major (ctranslate2 names `libcublas.so.12` beside `libnccl.so.2`); none when they
/// say nothing or disagree.
pub fn lazy_major<'a>(
    lazy_loads: impl IntoIterator<Item = &'a LazyLoad>,
    catalog: &Catalog,
) -> Option<u32> {
    let majors: BTreeSet<u32> = lazy_loads
        .into_iter()
        .filter_map(|l| l.soname.as_deref())
        .filter_map(|s| match catalog.majors_of(s).as_slice() {
            [one] => Some(*one),
            _ => None,
        })
        .collect();
    let mut it = majors.into_iter();
    match (it.next(), it.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// How the package opens each library it carries, by path (those it opens by path are absent).
/// The loader reaches a name only in the directories the asking file's RPATH or RUNPATH lists,
/// starting from the package's own files and going on through the carried libraries it reaches:
/// triton's proton opens `libcupti.so` by joining its own directory to the name, and the wheel's
/// CUPTI directories are on no search path, so neither is reached by name. A library the
/// package's Python opens with ctypes is opened by a name or path the package chose.
pub fn opened_by(
    elfs: &[&ElfReport],
    vendored: &[Vendored],
    preloads: &[crate::loads::Preload],
    catalog: &Catalog,
) -> HashMap<String, (OpenedBy, Option<String>)> {
    let carried: BTreeSet<&str> = vendored.iter().map(|v| v.path.as_str()).collect();
    let report_of: HashMap<&str, &ElfReport> = elfs.iter().map(|e| (e.path.as_str(), *e)).collect();
    let names = |path: &str| -> Vec<String> {
        match report_of.get(path) {
            Some(e) => e.names().map(str::to_string).collect(),
            None => vec![path.rsplit('/').next().unwrap_or(path).to_string()],
        }
    };
    // Each carried file's names (SONAME, file name) → its index, so a name is looked up once.
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, v) in vendored.iter().enumerate() {
        for n in names(&v.path) {
            by_name.entry(n).or_default().push(i);
        }
    }
    // (name, the directories inside the package the asking file's search path lists)
    let own_dirs = |e: &ElfReport| -> Vec<String> {
        e.rpath
            .iter()
            .chain(&e.runpath)
            .filter(|p| p.location == PathLocation::Inside)
            .map(|p| p.expanded.clone())
            .collect()
    };
    let wants = |e: &ElfReport| -> Vec<(String, std::rc::Rc<Vec<String>>)> {
        let dirs: std::rc::Rc<Vec<String>> = std::rc::Rc::new(own_dirs(e));
        e.needed
            .iter()
            .map(|n| n.soname.clone())
            // The name dlopen searches for: as written, else the trampoline's SONAME.
            .chain(
                e.lazy_loads
                    .iter()
                    .filter_map(|l| l.written.clone().or_else(|| l.soname.clone())),
            )
            .map(|n| (n, dirs.clone()))
            .collect()
    };
    let mut out: HashMap<String, (OpenedBy, Option<String>)> = HashMap::new();
    let mut todo: Vec<(String, std::rc::Rc<Vec<String>>)> = elfs
        .iter()
        .filter(|e| !carried.contains(e.path.as_str()))
        .flat_map(|e| wants(e))
        .collect();
    while let Some((name, dirs)) = todo.pop() {
        for &i in by_name.get(&name).into_iter().flatten() {
            let v = &vendored[i];
            if out.contains_key(&v.path) || !dirs.contains(&parent(&v.path)) {
                continue;
            }
            out.insert(v.path.clone(), (OpenedBy::Loader, None));
            if let Some(e) = report_of.get(v.path.as_str()) {
                todo.extend(wants(e));
            }
            // What a CUDA library opens itself (libnvrtc its builtins, `libnvrtc-builtins.so.12.6`:
            // the catalog's `dlopens`, a name or the start of one), searched where the copy was
            // found (its loaders' RPATH) and its own search path.
            let opens = v
                .library
                .as_ref()
                .and_then(|l| catalog.library(&l.id))
                .map(|l| l.dlopens.as_slice())
                .unwrap_or_default();
            if !opens.is_empty() {
                let mut here: Vec<String> = dirs.as_ref().clone();
                if let Some(e) = report_of.get(v.path.as_str()) {
                    here.extend(own_dirs(e));
                }
                let here = std::rc::Rc::new(here);
                for name in by_name.keys().filter(|n| {
                    opens.iter().any(|d| {
                        *n == d
                            || n.strip_prefix(d.as_str())
                                .is_some_and(|r| r.starts_with('.'))
                    })
                }) {
                    todo.push((name.clone(), here.clone()));
                }
            }
        }
    }
    for v in vendored {
        let by_python = preloads.iter().find(|p| {
            p.mechanism == crate::loads::Mechanism::Ctypes
                && names(&v.path).iter().any(|n| p.loads(n) || p.name == *n)
        });
        if let Some(p) = by_python {
            out.insert(v.path.clone(), (OpenedBy::Python, Some(p.place())));
        }
    }
    out
}

fn recognise_vendored(a: &Analysed, catalog: &Catalog) -> Option<Vendored> {
    let r = &a.report;
    let base = r.path.rsplit('/').next().unwrap_or_default();
    let mut evidence = Vec::new();
    // SONAME first; a naive graft rewrites it to the hashed file name, which still names the library.
    let by_soname = r.soname.as_deref().and_then(|s| {
        catalog.library_by_name_hinted(s, a.hint).map(|(m, exact)| {
            evidence.push(if exact {
                format!("SONAME {s}")
            } else if s.split(".so").next() == Some(m.library.stem.as_str()) {
                // The library's own name with a version the catalog does not list
                // (`libnvrtc-builtins.so.12.6`, whose SONAME carries the toolkit's minor).
                format!("SONAME {s} (a release the catalog does not list)")
            } else {
                format!(
                    "SONAME {s} (a renamed copy of {})",
                    cudist_catalog::soname_of_copy(&m.major.sonames, s)
                        .as_deref()
                        .unwrap_or(m.major.sonames[0].as_str())
                )
            });
            m
        })
    });
    let named_by_soname = by_soname.is_some();
    let matched = by_soname
        .or_else(|| {
            // No usable SONAME: the file name may still tell, but only content can confirm it.
            let (m, _) = catalog.library_by_name_hinted(base, a.hint)?;
            evidence.push(format!("file name {base}"));
            Some(m)
        })
        .or_else(|| {
            // A copy whose name keeps only the library's stem (auditwheel's graft of cuFile,
            // `libcufile-1ecaf17d.so.1.15.1`: the file's version, not the SONAME
            // `libcufile.so.0`): the stem, confirmed by the library's own entry points.
            let name = r.soname.as_deref().unwrap_or(base);
            let plain = cudist_catalog::strip_graft_hash(name);
            let stem = plain.split(".so").next()?;
            let lib = catalog.libraries.iter().find(|l| l.stem == stem)?;
            a.defined_markers.get(&lib.id)?;
            let major = lib
                .cuda
                .iter()
                .find(|m| Some(m.major) == a.hint)
                .or_else(|| lib.cuda.last())?;
            let m = catalog.library_by_soname_hinted(major.sonames.first()?, Some(major.major))?;
            evidence.push(format!("named {name}, a copy of {}", lib.stem));
            Some(m)
        });
    // A copy of a cross-vendor interface's library (an OpenCL ICD loader) is the package's own,
    // whoever built it: not a CUDA library.
    if let Some(m) = matched.filter(|m| m.library.interface.is_none()) {
        let own = a.defined_markers.get(&m.library.id);
        match own {
            Some(syms) => evidence.push(format!("defines {}", syms.join(", "))),
            None if m.library.static_markers.is_empty() || named_by_soname => {}
            // Named like the library but defines none of its entry points: not that library.
            None => return None,
        }
        let library = library_ref(&m);
        return Some(Vendored {
            replaceable: replaceable(&library, r.soname.as_deref().unwrap_or(base), catalog),
            path: r.path.clone(),
            soname: r.soname.clone(),
            library: Some(library),
            class: NeededClass::Toolkit,
            bytes: r.size,
            evidence,
            opened_by: OpenedBy::Path,
            opened_at: None,
        });
    }
    let driver = r
        .soname
        .as_deref()
        .and_then(|s| catalog.driver_lib(s))
        .or_else(|| catalog.driver_lib(base))?;
    Some(Vendored {
        path: r.path.clone(),
        soname: r.soname.clone(),
        library: None,
        class: NeededClass::Driver,
        bytes: r.size,
        evidence: vec![format!(
            "{} is the NVIDIA driver's {}",
            r.soname.as_deref().unwrap_or(base),
            driver.description
        )],
        opened_by: OpenedBy::Path,
        opened_at: None,
        replaceable: true,
    })
}

/// Whether a requirement on the wheel of library `l` can stand in for a copy named `name` (its
/// SONAME, else its file name): a toolkit or driver library (NVIDIA versions every SONAME), or
/// another project's library whose SONAME carries a version (`libucp.so.0`). A SONAME without
/// one (`librmm.so`) promises no ABI from one release to the next: RAPIDS' libraries put each
/// release's symbols in a namespace of their own (`rmm::_RMM_26_10::`), so no release of the
/// wheel stands in for the copy the package was built against (holoscan-cu12's `librmm.so`
/// lacked 17 of the symbols its files import from rmm 26.10).
fn replaceable(l: &LibraryRef, name: &str, catalog: &Catalog) -> bool {
    let external = catalog
        .library(&l.id)
        .is_some_and(|lib| lib.kind == cudist_catalog::LibraryKind::External);
    !external || !cudist_catalog::strip_graft_hash(name).ends_with(".so")
}

/// The CUDA libraries linked into a file (`certain` evidence), and a runtime that most likely is
/// (device code, no runtime in NEEDED).
pub(crate) fn static_cuda(a: &Analysed) -> Vec<StaticCuda> {
    let own = a.own_library.as_deref().or(a.report.vendored.as_deref());
    let needs = |id: &str| {
        a.report
            .needed
            .iter()
            .any(|n| n.library.as_ref().is_some_and(|l| l.id == id))
    };
    let lazy = |id: &str| a.report.lazy_loads.iter().any(|l| l.library == id);
    let mut libs: BTreeSet<&String> = a.defined_markers.keys().collect();
    libs.extend(a.strings_found.keys());
    let mut out: Vec<StaticCuda> = Vec::new();
    for lib in libs {
        // A library's own file, or a file that links it dynamically (and so may quote its
        // messages), is no evidence of static linking.
        if Some(lib.as_str()) == own || needs(lib) {
            continue;
        }
        // Entry points defined as stubs that load the library on the first call are a loader,
        // not the library: only the library's own code (its strings and name table) says it
        // is linked in as well.
        if lazy(lib) && !a.strings_found.contains_key(lib) {
            continue;
        }
        let mut evidence = Vec::new();
        if let Some(syms) = a.defined_markers.get(lib) {
            evidence.push(format!("defines {}", syms.join(", ")));
        }
        if let Some(q) = a.strings_found.get(lib) {
            let quoted: Vec<String> = q.strings.iter().map(|s| format!("{s:?}")).collect();
            evidence.push(match &q.table_kind {
                Some(kind) => format!(
                    "contains {} and a table of {} {kind} ({}…)",
                    quoted.join(", "),
                    q.table_names,
                    q.table_prefix
                ),
                None => format!(
                    "contains {} and a table of {} entry-point names ({}…) resolved at run time",
                    quoted.join(", "),
                    q.table_names,
                    q.table_prefix
                ),
            });
        }
        out.push(StaticCuda {
            library: lib.clone(),
            confidence: Confidence::Certain,
            evidence,
        });
    }
    // Device code needs a runtime to register it. With no CUDA runtime in NEEDED and no evidence
    // of a linked-in one, say what is likely rather than nothing.
    let has_device = a
        .report
        .device_code
        .iter()
        .any(|e| e.section == SectionKind::NvFatbin);
    // A file that imports the runtime's registration entry point gets the runtime from an
    // object it loads (deepmd-kit's own forwarding library): nothing is linked in.
    if has_device
        && !needs("cudart")
        && !lazy("cudart")
        && !a.imports_runtime
        && own.is_none()
        && !out.iter().any(|s| s.library == "cudart")
    {
        out.push(StaticCuda {
            library: "cudart".into(),
            confidence: Confidence::Likely,
            evidence: vec![
                "has device code in .nv_fatbin but no libcudart in NEEDED: the runtime that registers it is linked in (or the driver API is used directly)".into(),
            ],
        });
    }
    out
}

/// The CUDA major of the artifact, for SONAMEs several majors share: the majors its ELF files'
/// unambiguous SONAMEs point to (most common first), else the distribution's
/// ([`distribution_major`], worked out once by the caller).
fn artifact_major_hint(
    elfs: &[Analysed],
    dist_major: Option<u32>,
    catalog: &Catalog,
    wheel_dirs: &WheelDirs,
) -> Option<u32> {
    let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
    for a in elfs {
        if let Some(m) = elf_major_hint(&a.report, catalog, wheel_dirs) {
            *votes.entry(m).or_default() += 1;
        }
    }
    // Files of several majors are builds for each (cuda-cccl's `cu12/` and `cu13/` modules): the
    // package has no one major, so a name cuda-pathfinder resolves loads the SONAME of whichever
    // is installed (what the distribution declares, under extras for each, says no more).
    if votes.len() > 1 {
        return None;
    }
    votes.keys().next().copied().or(dist_major)
}

/// The CUDA major a distribution says it is for: the CUDA wheels it declares (in any extra),
/// when they agree on one (tensorflow's files load every CUDA library lazily, and its
/// `and-cuda` extra names the `-cu12` wheels); else a `cuNN` or `cudaNN` in its name
/// (`nvidia-nvcomp-cu12`, `cupy-cuda12x`).
pub(crate) fn distribution_major(
    name: Option<&str>,
    requires: &[String],
    catalog: &Catalog,
) -> Option<u32> {
    let declared: BTreeSet<u32> = requires
        .iter()
        .filter_map(|r| ReqName::parse(r))
        .filter_map(|r| catalog.component_by_pip(&r.name).and_then(|(_, m)| m))
        .collect();
    if let [one] = declared.iter().copied().collect::<Vec<u32>>()[..] {
        return Some(one);
    }
    // The CUDA flavour its hard requirements ask for: a `-cuNN` distribution, or a `cuNN` extra
    // (cudnn-frontend requires `nvidia-cutlass-dsl[cu13]`). Those under its own extras are
    // alternatives (`[cu12]`, `[cu13]`) and say nothing.
    let flavours: BTreeSet<u32> = requires
        .iter()
        .filter_map(|r| ReqName::parse(r))
        .filter(|r| r.in_extra.is_none() && r.on_linux)
        .flat_map(|r| {
            let extras: Vec<Option<u32>> = r.extras.iter().map(|e| name_major(e)).collect();
            std::iter::once(name_major(&r.name)).chain(extras)
        })
        .flatten()
        .collect();
    if let [one] = flavours.iter().copied().collect::<Vec<u32>>()[..] {
        return Some(one);
    }
    name_major(name?)
}

/// The CUDA major a distribution or extra name says: `cuNN` or `cudaNN` in it (`cupy-cuda12x`,
/// `nvidia-nccl-cu13`, `cu13`), NN from 10 to 20, or with the minor after it (`cu128`,
/// `itk-cudacommon-cuda128`: CUDA 12.8).
pub fn name_major(name: &str) -> Option<u32> {
    let name = name.to_ascii_lowercase();
    for pat in ["cuda", "cu"] {
        for (i, _) in name.match_indices(pat) {
            let digits: String = name[i + pat.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let digits = match digits.len() {
                3 => &digits[..2],
                _ => digits.as_str(),
            };
            if let Ok(m) = digits.parse::<u32>() {
                if (10..=20).contains(&m) {
                    return Some(m);
                }
            }
        }
    }
    None
}

/// The CUDA major one ELF file's own SONAME or NEEDED entries pin down, if they agree.
/// The file's own directory counts too: a library in `nvidia/cu13/lib` is CUDA 13.
fn elf_major_hint(r: &ElfReport, catalog: &Catalog, wheel_dirs: &WheelDirs) -> Option<u32> {
    let mut majors = BTreeSet::new();
    // A library of a release before the catalog's names the file's release outright
    // (`libcudart.so.10.2`): the SONAMEs it shares with later releases (`libcufft.so.10`, also
    // CUDA 11's) say nothing then.
    let older: BTreeSet<u32> = r
        .soname
        .iter()
        .chain(r.needed.iter().map(|n| &n.soname))
        .filter_map(|s| catalog.older_release_major(s))
        .collect();
    if !older.is_empty() {
        return (older.len() == 1).then(|| *older.iter().next().unwrap());
    }
    for s in r.soname.iter().chain(r.needed.iter().map(|n| &n.soname)) {
        if let [m] = catalog.majors_of(s)[..] {
            majors.insert(m);
        }
    }
    if majors.is_empty() {
        let dir_majors: BTreeSet<u32> = wheel_dirs
            .get(&parent(&r.path))
            .map(|pips| pips.iter().map(|(m, _)| *m).collect())
            .unwrap_or_default();
        majors = dir_majors;
    }
    (majors.len() == 1).then(|| *majors.iter().next().unwrap())
}

/// Wheel directory (`pip_dir` and `pip_other_dirs`) → (CUDA major, distribution) pairs
/// installing there, from the catalog.
type WheelDirs = BTreeMap<String, BTreeSet<(u32, String)>>;

fn wheel_dir_index(catalog: &Catalog) -> WheelDirs {
    let mut idx = WheelDirs::new();
    for lib in &catalog.libraries {
        for m in &lib.cuda {
            let Some(pip) = &m.pip else { continue };
            for (dir, _) in m.pip_dirs() {
                idx.entry(dir.trim_end_matches('/').to_string())
                    .or_default()
                    .insert((m.major, pip.clone()));
            }
        }
    }
    idx
}

/// The distributions installing into a wheel directory, narrowed to CUDA major `hint` when that
/// leaves any (`nvidia/cublas/lib` is both `nvidia-cublas-cu11` and `-cu12`).
fn providers(pips: &BTreeSet<(u32, String)>, hint: Option<u32>) -> Vec<String> {
    let of_hint: Vec<String> = pips
        .iter()
        .filter(|(m, _)| Some(*m) == hint)
        .map(|(_, p)| p.clone())
        .collect();
    if !of_hint.is_empty() {
        return of_hint;
    }
    let all: BTreeSet<String> = pips.iter().map(|(_, p)| p.clone()).collect();
    all.into_iter().collect()
}

/// The directory part of a `/`-separated path inside an artifact (`""` at the root).
pub fn parent(path: &str) -> String {
    match path.rfind('/') {
        Some(p) => path[..p].to_string(),
        None => String::new(),
    }
}

/// Joins `rel` onto `base` (both `/`-separated, relative to the artifact root) and folds `.` and
/// `..`. Returns the path and how many levels it climbs above the root.
pub fn fold_path(base: &str, rel: &str) -> (String, usize) {
    let mut stack: Vec<&str> = Vec::new();
    let mut above = 0usize;
    for part in base.split('/').chain(rel.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() {
                    above += 1;
                }
            }
            p => stack.push(p),
        }
    }
    let mut s = "../".repeat(above);
    s.push_str(&stack.join("/"));
    if s.ends_with('/') {
        s.pop();
    }
    (s, above)
}

fn resolve_search_path(
    e: &mut SearchPathEntry,
    elf_dir: &str,
    input: &Input,
    files: &BTreeSet<String>,
    wheel_dirs: &WheelDirs,
    hint: Option<u32>,
) {
    let raw = e.raw.as_str();
    let origin_rel = raw
        .strip_prefix("$ORIGIN")
        .or_else(|| raw.strip_prefix("${ORIGIN}"));
    let after_origin = origin_rel.unwrap_or(raw);
    if raw.is_empty()
        || raw.contains("$LIB")
        || raw.contains("$PLATFORM")
        || raw.contains("${LIB}")
        || raw.contains("${PLATFORM}")
        || after_origin.contains('$')
    {
        e.expanded = raw.to_string();
        e.location = PathLocation::Unresolved;
        return;
    }
    if raw.starts_with('/') {
        e.expanded = raw.to_string();
        e.location = PathLocation::Absolute;
        if let Some((_, pips)) = wheel_dirs
            .iter()
            .find(|(d, _)| raw.trim_end_matches('/').ends_with(&format!("/{d}")))
        {
            e.provided_by = providers(pips, hint);
        }
        return;
    }
    let Some(rel) = origin_rel else {
        // Relative without $ORIGIN: ld.so reads it relative to the working directory.
        e.expanded = raw.to_string();
        e.location = PathLocation::Unresolved;
        return;
    };
    let (folded, above) = fold_path(elf_dir, rel);
    e.expanded = match input {
        // A lone ELF: show the real directory, since there is no artifact root to be relative to.
        Input::Elf(p) => {
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            let abs = std::fs::canonicalize(&dir).unwrap_or(dir);
            fold_abs(&abs, &folded)
        }
        _ => folded.clone(),
    };
    if above == 0 {
        if let Some(pips) = wheel_dirs.get(&folded) {
            e.location = PathLocation::CudaWheel;
            e.provided_by = providers(pips, hint);
            return;
        }
        let prefix = format!("{folded}/");
        let inside = folded.is_empty() || files.iter().any(|f| f.starts_with(&prefix));
        e.location = if inside {
            PathLocation::Inside
        } else {
            PathLocation::Outside
        };
    } else {
        e.location = PathLocation::Outside;
    }
}

fn fold_abs(dir: &Path, rel: &str) -> String {
    let mut p = PathBuf::from(dir);
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                p.pop();
            }
            x => p.push(x),
        }
    }
    p.display().to_string()
}

/// Whether a search path of the file points at `want_dir` (the wheel directory of `soname`), or at
/// a directory of the artifact that holds `soname`.
fn search_path_covers(
    r: &ElfReport,
    soname: &str,
    want: &[&str],
    files: &BTreeSet<String>,
) -> bool {
    r.rpath.iter().chain(r.runpath.iter()).any(|e| {
        let d = e.expanded.trim_end_matches('/');
        match e.location {
            PathLocation::CudaWheel => want.contains(&d),
            PathLocation::Absolute => want.iter().any(|w| d.ends_with(&format!("/{w}"))),
            PathLocation::Inside => {
                let name = format!("{}{}{}", d, if d.is_empty() { "" } else { "/" }, soname);
                files.contains(&name)
            }
            _ => false,
        }
    })
}

/// Whether `soname` is loaded before `a` can load at all: `a` needs a library of the artifact
/// that its own search path does not reach, so `a` loads only once something else has loaded
/// that library (by path: OpenMM's plugin loader loads `libOpenMMCUDA.so` before the plugins
/// that need it and have no RUNPATH), and with it what that library needs, through its own
/// search path. A need of `a` that such a library's search path reaches is met by then.
fn preloaded_sibling_covers(
    elfs: &[Analysed],
    a: &Analysed,
    soname: &str,
    want: &[&str],
    files: &BTreeSet<String>,
) -> bool {
    a.report.needed.iter().any(|m| {
        let Some(path) = m.provided_in_artifact.as_deref() else {
            return false;
        };
        if path == a.report.path || search_path_covers(&a.report, &m.soname, &[], files) {
            return false;
        }
        elfs.iter().any(|b| {
            b.report.path == path
                && b.report.needed.iter().any(|n| n.soname == soname)
                && search_path_covers(&b.report, soname, want, files)
        })
    })
}

/// Whether the DT_RPATH of the files that load `a` reaches `soname` (glibc's ld.so: an object
/// without DT_RUNPATH is searched with its own DT_RPATH, then with the DT_RPATH of the object
/// that loaded it, and so on up the chain, skipping objects that have a DT_RUNPATH). legate's
/// `liblegate.so` has no entry for `nvidia/nccl/lib`; the extension modules that load it do.
/// Every file of the artifact that needs `a` must reach it, itself or through its own loaders
/// (`depth` levels up, at most 16 loaders a level): the first to load `a` decides, and any of
/// them may be first.
fn loaders_rpath_covers(
    elfs: &[Analysed],
    a: &Analysed,
    soname: &str,
    want: &[&str],
    files: &BTreeSet<String>,
    depth: usize,
) -> bool {
    if depth == 0 || !a.report.runpath.is_empty() {
        return false;
    }
    let base = a.report.path.rsplit('/').next().unwrap_or_default();
    let names: Vec<&str> = a
        .report
        .soname
        .as_deref()
        .into_iter()
        .chain([base])
        .collect();
    let loaders: Vec<&Analysed> = elfs
        .iter()
        .filter(|b| !std::ptr::eq(*b, a))
        .filter(|b| {
            b.report
                .needed
                .iter()
                .any(|n| names.contains(&n.soname.as_str()))
        })
        .collect();
    // Bounded: a file that dozens of others load is not judged through all their chains.
    !loaders.is_empty()
        && loaders.len() <= 16
        && loaders.iter().all(|b| {
            (b.report.runpath.is_empty() && search_path_covers(&b.report, soname, want, files))
                || loaders_rpath_covers(elfs, b, soname, want, files, depth - 1)
        })
}

pub use crate::requirements::{normalise_dist, ReqName};

fn device_summary<'a>(
    elfs: impl IntoIterator<Item = &'a Analysed>,
    cuda_needed: &[NeededLibrary],
    catalog: &Catalog,
) -> DeviceSummary {
    let mut d = DeviceSummary::default();
    let mut native = BTreeSet::new();
    let mut newest_ptx: Option<(u32, CudaVersion, String)> = None;
    for a in elfs.into_iter().filter(|a| a.report.vendored.is_none()) {
        // What runs is what the runtime loads: `.nv_fatbin` when present (the relocatable copies in
        // `__nv_relfatbin` are inputs to a device link), else `__nv_relfatbin` of an object file.
        let present: Vec<SectionKind> = a.report.device_code.iter().map(|e| e.section).collect();
        let loaded = cudist_fatbin::cuobjdump_default_section(&present);
        d.relocatable += a
            .report
            .device_code
            .iter()
            .filter(|e| Some(e.section) != loaded)
            .count();
        for e in a
            .report
            .device_code
            .iter()
            .filter(|e| Some(e.section) == loaded)
        {
            *d.codecs.entry(e.codec.to_string()).or_default() += 1;
            match e.kind {
                EntryKind::Ptx => {
                    d.ptx += 1;
                    let isa = CudaVersion::parse(&e.version)
                        .unwrap_or(CudaVersion { major: 0, minor: 0 });
                    if newest_ptx
                        .as_ref()
                        .is_none_or(|(sm, v, _)| (e.sm, isa) > (*sm, *v))
                    {
                        newest_ptx = Some((e.sm, isa, e.arch.clone()));
                    }
                }
                EntryKind::LtoIr => d.lto_ir += 1,
                EntryKind::Cubin | EntryKind::Other(0x10) => {
                    d.cubins += 1;
                    native.insert((e.sm, e.arch.clone()));
                }
                _ => d.other += 1,
            }
        }
    }
    d.native_sms = native.into_iter().map(|(_, a)| a).collect();
    // The CUDA major the code was built with: from the toolkit libraries it links, else the PTX.
    let mut major = cuda_needed
        .iter()
        .filter_map(|n| n.library.as_ref())
        .filter(|l| l.id == "cudart")
        .map(|l| l.cuda_major)
        .max();
    if let Some((_, isa, arch)) = newest_ptx {
        let cuda = catalog.cuda_for_ptx_isa(isa);
        if let Some(c) = cuda {
            major = major.or(Some(c.major));
            if let Some(t) = catalog.min_driver(c) {
                let floor_note = if CudaVersion::parse(&t.version) == Some(c) {
                    format!("that toolkit's minimum driver is {}", t.min_driver)
                } else {
                    format!(
                        "the catalog has no minimum driver for {c}; {} (the newest release it knows) needs {}, so {c} needs at least that",
                        t.version, t.min_driver
                    )
                };
                d.ptx_jit_min_driver = Some(DriverFloor {
                    driver: t.min_driver.clone(),
                    reason: format!("PTX ISA {isa} was introduced by CUDA {c}; {floor_note}"),
                });
            }
        }
        d.newest_ptx = Some(PtxInfo {
            arch,
            isa: isa.to_string(),
            cuda: cuda.map(|c| c.to_string()),
        });
    }
    if let Some(m) = major {
        if let Some(f) = catalog.minor_compat_floor(m) {
            d.min_driver = Some(DriverFloor {
                driver: f.min_driver.clone(),
                reason: format!(
                    "built with CUDA {m}; minor-version compatibility floor of CUDA {m}"
                ),
            });
            // zstd-compressed entries need a driver that decompresses them.
            if let Some(z) = f
                .zstd_min_driver
                .as_ref()
                .filter(|_| d.codecs.contains_key("zstd"))
            {
                d.min_driver = Some(DriverFloor {
                    driver: z.clone(),
                    reason: format!(
                        "built with CUDA {m}, with zstd-compressed device code (nvcc --compress-mode=size or balance), which drivers of CUDA {m} decompress from {z}"
                    ),
                });
            }
        }
    }
    d
}

fn breakdown(elfs: &[Analysed], vendored: &[Vendored], installed: u64) -> Breakdown {
    let mut b = Breakdown {
        total: installed,
        vendored_cuda: vendored.iter().map(|v| v.bytes).sum(),
        ..Breakdown::default()
    };
    for a in elfs.iter().filter(|a| a.report.vendored.is_none()) {
        b.host_code += a.report.sizes.host_code;
        for e in &a.report.device_code {
            match e.kind {
                EntryKind::Ptx => b.ptx += e.stored_size,
                EntryKind::LtoIr => b.lto_ir += e.stored_size,
                EntryKind::Cubin | EntryKind::Other(0x10) => {
                    *b.device_code.entry(e.arch.clone()).or_default() += e.stored_size
                }
                _ => b.other_device += e.stored_size,
            }
        }
    }
    let counted = b.host_code
        + b.ptx
        + b.lto_ir
        + b.other_device
        + b.vendored_cuda
        + b.device_code.values().sum::<u64>();
    b.other = installed.saturating_sub(counted);
    b
}

/// A wheel whose best tag is `linux_*`: the verdict says so, with the reason that decides it (why
/// the next policy up fails; the most compatible ones often fail for a reason of their own).
fn unportable(platform: &Platform, verdict: &mut Verdict) {
    let why = platform
        .blocked
        .last()
        .map(|b| format!(": {} {} ({})", b.file, b.reason, b.policy))
        .unwrap_or_default();
    let line = format!(
        "satisfies no manylinux or musllinux policy, so its tag is {}, which PyPI refuses{why}",
        platform.tags.join(".")
    );
    add_finding(verdict, VerdictStatus::Unportable, vec![line]);
}

/// Adds findings of `status` to a verdict. When they are the most severe so far, they come
/// first and decide the status, and the line that said OK keeps what it says without the OK;
/// otherwise they follow the others.
fn add_finding(verdict: &mut Verdict, status: VerdictStatus, lines: Vec<String>) {
    if verdict.status >= status {
        verdict.lines.extend(lines);
        return;
    }
    verdict.status = status;
    if let Some(first) = verdict.lines.first_mut() {
        if let Some(rest) = first.strip_prefix("OK: ") {
            *first = rest.to_string();
        }
    }
    verdict.lines.splice(0..0, lines);
}

/// One line per other GPU vendor whose runtime the files need (a ROCm or XPU build beside the
/// CUDA one): what they need and where it comes from. Not a problem of the package: those
/// libraries come with that vendor's stack, as libcuda comes with the NVIDIA driver.
/// The package's Python loads a CUDA library by its linker name (`ctypes.CDLL("libcudart.so")`,
/// tilelang's and hidet's shape): CUDA wheels install only the SONAME, so that load works only
/// where a CUDA toolkit's development files are. Said; the verdict is the files'. Not said of a
/// fallback: a load whose failure the code goes on from, where the package also loads the
/// library by a name a wheel installs (cudnn-frontend tries `libcudnn.so.9`, then `libcudnn.so`).
fn linker_name_lines(preloads: &[crate::loads::Preload], catalog: &Catalog, verdict: &mut Verdict) {
    let mut said: BTreeSet<&str> = BTreeSet::new();
    for p in preloads.iter().filter(|p| p.sonames.is_empty()) {
        let Some(lib) = catalog.library_by_linker_name(&p.name) else {
            continue;
        };
        let by_soname = |q: &crate::loads::Preload| {
            lib.cuda
                .iter()
                .flat_map(|m| &m.sonames)
                .any(|so| q.loads(so))
        };
        if p.optional && preloads.iter().any(by_soname) {
            continue;
        }
        if !said.insert(p.name.as_str()) {
            continue;
        }
        let when = if p.at_import {
            "at import".to_string()
        } else {
            format!("when {} runs", p.trigger())
        };
        let wheel = lib
            .newest_wheel_soname(None)
            .map(|(so, pip)| format!(" ({pip} installs {so})"))
            .unwrap_or_default();
        verdict.lines.push(format!(
            "loads {} by its linker name {when} ({}): no CUDA wheel installs that name{wheel}, so it loads only where a CUDA toolkit's development files are",
            p.name,
            p.place(),
        ));
    }
}

/// The CUDA libraries the package's Python looks for by a bare name: with
/// `ctypes.util.find_library`, which never looks in a CUDA wheel (keopscore finds NVRTC and the
/// runtime that way, and runs on the CPU without them), or with a `ctypes.CDLL` subclass of its
/// own (tinygrad): said, and an OK that said "needs none" says it finds them itself.
fn finder_lines(finds: &[crate::loads::Find], catalog: &Catalog, verdict: &mut Verdict) {
    if finds.is_empty() {
        return;
    }
    if let Some(head) = verdict
        .lines
        .first_mut()
        .filter(|l| *l == "OK: carries no CUDA libraries and needs none")
    {
        *head = "OK: carries no CUDA libraries; looks for them on the system itself (below)".into();
    }
    for f in finds {
        let when = if f.at_import {
            "at import"
        } else {
            "when used"
        };
        let lib = catalog.library(&f.library);
        let wheel = lib
            .and_then(|l| l.newest_wheel_soname(None))
            .map(|(so, pip)| format!(" ({pip} installs {so})"))
            .unwrap_or_default();
        let stem = lib.map_or_else(|| format!("lib{}", f.name), |l| l.stem.clone());
        verdict.lines.push(match &f.class {
            None => format!(
                "looks for {stem} with ctypes.util.find_library({:?}) {when} ({}): that searches where the system keeps libraries, never a CUDA wheel{wheel}, so it finds it only where a CUDA toolkit is installed on the system",
                f.name, f.at
            ),
            Some(class) => format!(
                "opens {stem} by the bare name {:?} with {class}, a ctypes.CDLL subclass of its own, {when} ({}): where that finds it is its own search, which cudist does not read; a CUDA wheel{wheel} serves only if it looks there",
                f.name, f.at
            ),
        });
    }
}

/// An OK package whose files name no CUDA library but which declares CUDA wheels (cupti-python
/// requires nvidia-cuda-cupti, nccl4py's `[cu13]` nvidia-nccl-cu13): it loads them itself, by
/// names its files do not show (compiled modules calling cuda-pathfinder keep their strings
/// compressed). Its OK says so instead of "needs none".
fn declared_only_line(
    cuda_needed: &[NeededLibrary],
    requires: &[ReqName],
    catalog: &Catalog,
    verdict: &mut Verdict,
) {
    if verdict.status != VerdictStatus::Ok || !cuda_needed.is_empty() {
        return;
    }
    let is_cuda_wheel = |name: &str| {
        catalog.component_by_pip(name).is_some()
            || crate::requirements::majors_of_wheel(catalog, name)
                .next()
                .is_some()
    };
    let declared: Vec<String> = requires
        .iter()
        .filter(|r| r.on_linux && is_cuda_wheel(&r.name))
        .map(|r| match &r.in_extra {
            Some(x) => format!("{} (extra {x})", r.name),
            None => r.name.clone(),
        })
        .collect();
    if declared.is_empty() {
        return;
    }
    if let Some(first) = verdict.lines.first_mut() {
        *first = format!(
            "OK: carries no CUDA libraries and its files name none; it declares {}, which it loads itself at run time by names its files do not show (cuda-pathfinder, a computed path): doctor checks them where it is installed",
            declared.join(", ")
        );
    }
}

/// A file that gives `dlopen` a CUDA library's linker name (`libcudart.so`, `libcupti.so`: mindspore's
/// GPU plugins): no CUDA wheel installs that name, only a toolkit's development files do, so the
/// first call that needs it fails where only wheels are installed. One line per name. Said; the
/// verdict is the files'.
fn lazy_linker_name_lines(elfs: &[Analysed], catalog: &Catalog, verdict: &mut Verdict) {
    let mut by_name: BTreeMap<&str, (Vec<&str>, Option<u32>)> = BTreeMap::new();
    for a in elfs.iter().filter(|a| a.report.vendored.is_none()) {
        for l in &a.report.lazy_loads {
            let Some(w) = l.written.as_deref().filter(|w| w.ends_with(".so")) else {
                continue;
            };
            let row = by_name.entry(w).or_default();
            row.0.push(a.report.path.as_str());
            row.1 = row.1.or(a.hint);
        }
    }
    for (name, (files, hint)) in by_name {
        let Some(lib) = catalog.library_by_linker_name(name) else {
            continue;
        };
        // A package that carries the library opens it by a path it builds (triton's proton
        // joins its CUPTI directory to `libcupti.so`).
        let carried = elfs.iter().any(|b| {
            b.report
                .path
                .rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with(name))
        });
        if carried {
            continue;
        }
        let wheel = lib
            .newest_wheel_soname(hint)
            .map(|(so, pip)| format!(" ({pip} installs {so})"))
            .unwrap_or_default();
        let Some(who) = files_named(&files) else {
            continue;
        };
        verdict.lines.push(format!(
            "{who} dlopen{} {name} by its linker name on the first call into it: no CUDA wheel installs that name{wheel}, so it loads only where a CUDA toolkit's development files are",
            if files.len() == 1 { "s" } else { "" },
        ));
    }
}

/// The files a line is about: the one, or how many with the first (`3 files (a.so, …)`); none
/// for none.
fn files_named(files: &[&str]) -> Option<String> {
    match files {
        [one] => Some(one.to_string()),
        [first, ..] => Some(format!("{} files ({first}, …)", files.len())),
        [] => None,
    }
}

/// Build mistakes no installer catches, each a principle rather than a package's quirk:
/// - a wheel tagged `any` (pure Python) that carries ELF files: pip installs it on every
///   platform, where they cannot load (the tag must name the platform, PEP 425);
/// - a search-path entry that names a directory of the build machine (an absolute path outside
///   the system's own directories, such as a CI workspace): on a user's machine it is absent,
///   and whoever can create it can put there a library these files load before any other.
fn misbuilt_lines(file_name: &str, elfs: &[Analysed], platform: &Platform, verdict: &mut Verdict) {
    let mut lines = Vec::new();
    let pure = cudist_wheel::WheelName::parse(file_name).is_some_and(|w| w.platform == "any");
    if pure && !elfs.is_empty() {
        let should = if platform.tags.is_empty() {
            String::new()
        } else {
            format!(
                "; its tag should be {} (`cudist repair` writes it)",
                platform.tags.join(".")
            )
        };
        lines.push(format!(
            "is tagged for any platform (`any`) but carries {} ELF file(s){}: installers put it on every platform, where they cannot load{should}",
            elfs.len(),
            platform
                .arch
                .as_deref()
                .map(|a| format!(" for {a}"))
                .unwrap_or_default(),
        ));
    }
    // A manylinux tag older than the glibc the content needs: pip installs the wheel on systems
    // where it cannot load (cupoch 0.2.11.0: tagged manylinux1, needs GLIBC_2.29).
    if let (Some(w), Some(needs)) = (
        cudist_wheel::WheelName::parse(file_name),
        platform
            .policy
            .as_deref()
            .and_then(|p| platform::manylinux_tag(p)?.0),
    ) {
        let promised: Vec<(&str, (u32, u32))> = w
            .platform
            .split('.')
            .filter_map(|t| Some((t, platform::manylinux_tag(t)?.0?)))
            .collect();
        if let Some((tag, oldest)) = promised.iter().min_by_key(|(_, g)| *g) {
            if *oldest < needs {
                // What breaks the tagged policy: a symbol version (glibc's, libstdc++'s) or a
                // library it does not allow.
                let policy = format!("manylinux_{}_{}", oldest.0, oldest.1);
                let why = platform
                    .blocked
                    .iter()
                    .find(|b| b.policy == policy)
                    .map(|b| format!("{} {}", b.file, b.reason))
                    .unwrap_or_else(|| format!("its files need glibc {}.{}", needs.0, needs.1));
                lines.push(format!(
                    "is tagged {tag} ({policy}) but {why}, which that policy does not allow: pip installs it on systems the tag admits, where it cannot load; its tag should be {} (`cudist repair` writes it)",
                    platform.tags.join("."),
                ));
            }
        }
    }
    let mut foreign: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for a in elfs {
        for p in a.report.rpath.iter().chain(&a.report.runpath) {
            if p.is_build_machine() {
                foreign
                    .entry(p.raw.as_str())
                    .or_default()
                    .insert(a.report.path.as_str());
            }
        }
    }
    for (entry, files) in foreign {
        let files: Vec<&str> = files.into_iter().collect();
        let Some(who) = files_named(&files) else {
            continue;
        };
        lines.push(format!(
            "{who} search{} {entry}, a directory of the build machine: absent on users' machines, and whoever can create it there can make {} load a library of theirs first (set the install RPATH at build time)",
            if files.len() == 1 { "es" } else { "" },
            if files.len() == 1 { "it" } else { "them" },
        ));
    }
    // An empty or relative entry (`a::b`, a trailing `:`, `lib`) is searched from the current
    // directory of whatever process loads the file (glibc's ld.so): whoever controls that
    // directory picks the library loaded (mindspore's `libmindspore_ascend.so.2`).
    let mut relative: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for a in elfs {
        for p in a.report.rpath.iter().chain(&a.report.runpath) {
            if p.is_from_current_directory() {
                let shown = if p.raw.is_empty() {
                    "an empty entry".to_string()
                } else {
                    format!("the relative entry {}", p.raw)
                };
                relative
                    .entry(shown)
                    .or_default()
                    .insert(a.report.path.as_str());
            }
        }
    }
    for (entry, files) in relative {
        let files: Vec<&str> = files.into_iter().collect();
        let Some(who) = files_named(&files) else {
            continue;
        };
        lines.push(format!(
            "{who} ha{} {entry} in its search path: the loader reads it from the current directory of the process, so whoever controls that directory chooses the library loaded (drop it, or write $ORIGIN/…)",
            if files.len() == 1 { "s" } else { "ve" },
        ));
    }
    if !lines.is_empty() {
        add_finding(verdict, VerdictStatus::Misbuilt, lines);
    }
}

fn vendor_lines(elfs: &[Analysed], catalog: &Catalog, verdict: &mut Verdict) {
    let mut by_vendor: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for a in elfs {
        for n in &a.report.needed {
            if n.class != NeededClass::Vendor || n.provided_in_artifact.is_some() {
                continue;
            }
            if let Some(v) = catalog.vendor_lib(&n.soname) {
                let row = by_vendor.entry(v.vendor.as_str()).or_default();
                row.0.insert(n.soname.as_str());
                row.1.insert(a.report.path.as_str());
            }
        }
    }
    for (vendor, (sonames, files)) in by_vendor {
        let files: Vec<&str> = files.into_iter().collect();
        let Some(who) = files_named(&files) else {
            continue;
        };
        verdict.lines.push(format!(
            "{who} need{} {vendor}'s runtime ({}): it comes with {vendor}'s stack, not from a CUDA package (`cudist repair` leaves it out)",
            if files.len() == 1 { "s" } else { "" },
            sonames.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
}

/// What the package's Python loads, and how its import reaches each module.
#[derive(Clone, Copy)]
struct PythonLoads<'a> {
    preloads: &'a [crate::loads::Preload],
    modules: &'a BTreeMap<String, crate::pysource::ImportedAt>,
}

fn verdict(
    kind: ArtifactKind,
    (cuda_needed, driver_needed): (&[NeededLibrary], &[NeededLibrary]),
    vendored: &[Vendored],
    elfs: &[Analysed],
    device: &DeviceSummary,
    python: PythonLoads,
    catalog: &Catalog,
) -> Verdict {
    let PythonLoads { preloads, modules } = python;
    let mut status = VerdictStatus::Ok;
    let mut lines = Vec::new();
    let raise = |s: VerdictStatus, st: &mut VerdictStatus| {
        if s > *st {
            *st = s;
        }
    };

    let drivers: Vec<&Vendored> = vendored
        .iter()
        .filter(|v| v.class == NeededClass::Driver)
        .collect();
    if !drivers.is_empty() {
        raise(VerdictStatus::BundlesDriver, &mut status);
        lines.push(format!(
            "bundles the NVIDIA driver library {}: it must come from the machine's driver, never from the package",
            drivers.iter().map(|v| v.path.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    // A packed file's symbols are its unpacker's stub's: what it needs of them is not known.
    let mut packed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in elfs {
        if let Some(by) = &e.report.packed {
            packed.entry(by).or_default().push(&e.report.path);
        }
    }
    for (by, files) in packed {
        raise(VerdictStatus::Unresolved, &mut status);
        lines.push(format!(
            "packed with {by}: {}: their symbols, symbol versions and device code are inside a compressed image the stub unpacks when it loads, so the glibc they need, the symbols they import and their GPU code are not known from the files (unpack them, `upx -d`, to judge them)",
            files.join(", ")
        ));
    }
    let carried = |by: OpenedBy| -> Vec<&Vendored> {
        vendored
            .iter()
            .filter(|v| v.class == NeededClass::Toolkit && v.opened_by == by)
            .collect()
    };
    let sum = |vs: &[&Vendored]| crate::human_bytes(vs.iter().map(|v| v.bytes).sum::<u64>());
    let dirs_of = |vs: &[&Vendored]| -> String {
        let mut dirs: Vec<String> = vs.iter().map(|v| parent(&v.path)).collect();
        dirs.dedup();
        let shown: Vec<String> = dirs.iter().take(3).map(|d| format!("{d}/")).collect();
        let more = if dirs.len() > 3 {
            format!(" and {} more", dirs.len() - 3)
        } else {
            String::new()
        };
        format!("{}{more}", shown.join(", "))
    };
    // Copies the package opens itself (by path, or from its Python): bloat all the same, but
    // not what repair can mend without the package's help; said once per way.
    let by_python = carried(OpenedBy::Python);
    if !by_python.is_empty() {
        raise(VerdictStatus::Bloated, &mut status);
        let mut at: Vec<&str> = by_python
            .iter()
            .filter_map(|v| v.opened_at.as_deref())
            .collect();
        at.dedup();
        lines.push(format!(
            "carries {} of CUDA libraries that its Python opens itself ({}): no requirement can stand in for them, so `cudist repair` keeps them (the package would have to load them from the wheels)",
            sum(&by_python),
            if at.is_empty() { dirs_of(&by_python) } else { at.into_iter().take(3).collect::<Vec<_>>().join(", ") }
        ));
    }
    let by_path = carried(OpenedBy::Path);
    if !by_path.is_empty() {
        raise(VerdictStatus::Bloated, &mut status);
        lines.push(format!(
            "carries {} of CUDA libraries that no file of it loads by name ({}): it may open them by path, or not use them; no requirement can stand in for a load by path, so `cudist repair` keeps them (`--remove-unreached` takes them out)",
            sum(&by_path),
            dirs_of(&by_path)
        ));
    }
    let (toolkit, unversioned): (Vec<&Vendored>, Vec<&Vendored>) = carried(OpenedBy::Loader)
        .into_iter()
        .partition(|v| v.replaceable);
    // Copies of a release before any NVIDIA ships as wheels (CudaVox's CUDA 10.2 runtime): no
    // wheel stands in for them, and `cudist repair` keeps them.
    let (older, toolkit): (Vec<&Vendored>, Vec<&Vendored>) = toolkit.into_iter().partition(|v| {
        let base = v.path.rsplit('/').next().unwrap_or(&v.path);
        let own = v.soname.as_deref().unwrap_or(base);
        catalog
            .older_release_major(own)
            .or_else(|| catalog.older_release_major(&cudist_catalog::strip_graft_hash(own)))
            .is_some()
    });
    // The names of the copies that stay: what the files need of them is carried.
    let kept_copies: BTreeSet<&str> = older
        .iter()
        .chain(&unversioned)
        .flat_map(|v| {
            let base = v.path.rsplit('/').next().unwrap_or(&v.path);
            v.soname.as_deref().into_iter().chain(std::iter::once(base))
        })
        .collect();
    if !older.is_empty() {
        lines.push(format!(
            "carries {} of CUDA libraries of a release before any NVIDIA ships as wheels ({}): no requirement can stand in for them, so `cudist repair` keeps them",
            sum(&older),
            dirs_of(&older)
        ));
    }
    if !unversioned.is_empty() {
        let names: BTreeSet<String> = unversioned
            .iter()
            .map(|v| {
                let base = v.path.rsplit('/').next().unwrap_or(&v.path);
                cudist_catalog::strip_graft_hash(v.soname.as_deref().unwrap_or(base))
            })
            .collect();
        lines.push(format!(
            "carries {} of libraries whose SONAME carries no version ({}): no release of their wheels promises the ABI of the copies it was built against, so `cudist repair` keeps them",
            sum(&unversioned),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if !toolkit.is_empty() {
        raise(VerdictStatus::Bloated, &mut status);
        let pips: BTreeSet<String> = toolkit
            .iter()
            .filter_map(|v| v.library.as_ref().and_then(|l| l.pip.clone()))
            .collect();
        lines.push(format!(
            "carries {} of CUDA libraries{}; `cudist repair` would remove them and depend on the wheels instead",
            sum(&toolkit),
            if pips.is_empty() {
                String::new()
            } else {
                format!(" provided by {}", pips.into_iter().collect::<Vec<_>>().join(", "))
            }
        ));
    }
    // CUDA libraries of a release before any with wheels: one line for them all, whatever
    // else the files need.
    let older: BTreeMap<u32, (BTreeSet<&str>, bool)> = cuda_needed
        .iter()
        .filter(|n| !n.vendored)
        .filter_map(|n| {
            n.library
                .as_ref()
                .filter(|l| l.older_release)
                .map(|l| (n, l))
        })
        .fold(BTreeMap::new(), |mut acc, (n, l)| {
            let e = acc
                .entry(l.cuda_major)
                .or_insert_with(|| (BTreeSet::new(), true));
            e.0.insert(n.soname.as_str());
            e.1 &= !l.cuda_major_ambiguous;
            acc
        });
    for (major, (names, known)) in &older {
        lines.push(format!(
            "needs CUDA libraries of CUDA {major}{}, older than any release NVIDIA ships as wheels: {}; no wheel provides them, so they must come from an installation of that CUDA the loader finds (conda: {})",
            if *known { "" } else { " or before" },
            names.iter().copied().collect::<Vec<_>>().join(", "),
            crate::analyse::OLDER_CONDA,
        ));
    }
    let mut by_unknown_loader: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut by_loaded_wheel: BTreeMap<String, (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    let mut by_extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut by_unimported_provider: BTreeMap<(String, String, String), Vec<String>> =
        BTreeMap::new();
    for n in cuda_needed.iter().filter(|n| !n.vendored) {
        let Some(l) = n.library.as_ref().filter(|l| !l.older_release) else {
            continue;
        };
        // A renamed copy another wheel carries: no wheel of NVIDIA's has that name.
        if let Some(plain) = cudist_catalog::unhashed(&n.soname) {
            lines.push(format!(
                "needs {}, a renamed copy of {} ({plain}) that a repair tool grafted into another wheel: only a file of that exact name satisfies it, so it loads where a search path reaches that wheel's copy ({})",
                n.soname,
                l.id,
                n.needed_by.join(", ")
            ));
            continue;
        }
        let dir = l.pip_dir.as_deref().unwrap_or("(no wheel directory known)");
        let pip = l.pip.as_deref().unwrap_or("(no wheel known)");
        // Variants are judged one by one (`variant_lines`).
        if n.tier == crate::loads::Tier::Variant {
            continue;
        }
        // Which load fails: the import, or the first on-demand library that needs it; for a
        // library a file loads itself, the first call into it.
        let lazy_fails = n.lazy.as_ref().map(|how| {
            let first = n.needed_by.first().map(String::as_str).unwrap_or("a file");
            // A file that links the library statically calls its own copy: the name it opens
            // serves something else (cupy's runtime module asks the installed runtime's version),
            // which fails where it is used.
            let links_it = elfs.iter().any(|a| {
                a.report.path == first
                    && a.report
                        .static_cuda
                        .iter()
                        .any(|s| s.library == l.id && s.confidence == Confidence::Certain)
            });
            if links_it {
                format!(
                    "what opens {} fails where it is used ({first} links {} statically, so its own calls into it work; it also opens the shared library by name: {how})",
                    n.soname, l.id
                )
            } else {
                format!(
                    "the first call into {} fails ({first} loads it itself on the first call: {how})",
                    l.id
                )
            }
        });
        let fails = match lazy_fails {
            Some(f) => f,
            None => match n.tier {
                crate::loads::Tier::Import => {
                    // At import only because compiled code names the module: said as such.
                    let at_import: Vec<&Analysed> = n
                        .needed_by
                        .iter()
                        .filter_map(|p| elfs.iter().find(|a| &a.report.path == p))
                        .filter(|a| a.report.tier == crate::loads::Tier::Import)
                        .collect();
                    let named = at_import
                        .iter()
                        .map(|a| a.report.tier_reason.clone())
                        .collect::<Option<Vec<String>>>()
                        .and_then(|w| w.into_iter().next());
                    match named {
                        Some(why) => format!(
                            "may fail at import ({why}; whether it imports it there, or catches \
                             the failure, the machine code does not show)"
                        ),
                        _ => "fails at import".to_string(),
                    }
                }
                _ => {
                    let first = n.needed_by.first();
                    // An extension module the import does not reach: its module and why.
                    let ext = first.and_then(|p| {
                        let a = elfs.iter().find(|a| &a.report.path == p)?;
                        a.report.abi.python_extension?;
                        let m = crate::loads::extension_module(p)?;
                        Some(match &a.report.tier_reason {
                            Some(why) => format!("fails when {m} is imported ({why})"),
                            None => format!("fails when {m} is imported"),
                        })
                    });
                    ext.unwrap_or_else(|| {
                        format!(
                            "fails when {} is loaded",
                            first
                                .map(|p| p.rsplit('/').next().unwrap_or(p))
                                .unwrap_or("it")
                        )
                    })
                }
            },
        };
        // The package's own Python preloads it: at import, or when a function is called.
        let preload = n.preload.as_ref();
        let unless = match preload.filter(|p| !p.at_import) {
            Some(p) => {
                // Every function that loads it, where several do.
                let mut by: Vec<&crate::loads::Preload> = vec![p];
                for q in preloads
                    .iter()
                    .filter(|q| !q.at_import && q.loads(&n.soname))
                {
                    if !by.iter().any(|b| b.trigger() == q.trigger()) {
                        by.push(q);
                    }
                }
                match by.as_slice() {
                    [one] => format!(
                        " (unless {} loads it first: {})",
                        one.trigger(),
                        one.place()
                    ),
                    many => format!(
                        " (unless one of {} loads it first: {}{})",
                        many.iter()
                            .take(4)
                            .map(|b| b.trigger())
                            .collect::<Vec<_>>()
                            .join(", "),
                        many.iter()
                            .take(4)
                            .map(|b| b.place())
                            .collect::<Vec<_>>()
                            .join(", "),
                        if many.len() > 4 { ", …" } else { "" }
                    ),
                }
            }
            None => String::new(),
        };
        // An on-demand library loaded only by a function of the package that loads this one
        // too (RAPIDS' `load_library()` loads librapids_logger.so, then librmm.so): what the
        // package's own loading does, not a failure.
        if let Some((p, q)) = loaded_with(n, preload, preloads) {
            if n.declared || kind != ArtifactKind::Wheel {
                lines.push(format!(
                    "loads: {} is loaded by {} when {}() runs, with {} ({})",
                    n.soname,
                    p.place(),
                    p.on_call.as_deref().unwrap_or_default(),
                    q.name,
                    q.place()
                ));
                continue;
            }
        }
        // Loaded by module code of a module the import does not reach, before that module
        // imports the extension module that needs it (cuda-cccl's `_bindings.py`).
        if let Some((p, at)) = preloaded_before_import(n, preload, elfs, modules) {
            if n.declared || kind != ArtifactKind::Wheel {
                lines.push(format!(
                    "loads: {} is loaded by {} when {} runs, before {at} imports the extension module that needs it",
                    n.soname,
                    p.place(),
                    p.trigger()
                ));
                continue;
            }
        }
        // Every file that needs it links a library of a Python package (torch's), whose
        // import loads it first, from that package's CUDA wheels: nothing to fix here.
        if let (Some(by), false) = (&n.loaded_first_by, n.rpath_covers && n.declared) {
            // Set for what a wheel's loader at import brings ([`loaded_wheel_requiring`]).
            if let Some(p) = preloads
                .iter()
                .find(|p| by.ends_with(&format!("({})", p.place())))
            {
                // One line per loader: the libraries its wheels' requirements bring.
                let (sonames, chains) = by_loaded_wheel.entry(p.place()).or_default();
                sonames.push(n.soname.clone());
                chains.insert(n.declared_by.clone().unwrap_or_default());
                continue;
            }
            // Only where something imports that package first: a wheel whose own Python never
            // does (kernelforge-cuda carries no Python at all) leaves it to the program.
            let provider = by.split_whitespace().next().unwrap_or(by);
            let imported = modules
                .keys()
                .any(|m| m == provider || m.starts_with(&format!("{provider}.")));
            // Their own import fails (libc10.so is found by no search of theirs): a wheel whose
            // extension modules leave `import torch` to their user is unresolved, the fix is its
            // own. A library of operators (torch.ops.load_library's) loads only once torch is.
            let modules_need = n.needed_by.iter().any(|p| {
                elfs.iter()
                    .any(|a| &a.report.path == p && a.report.abi.python_extension.is_some())
            });
            if kind == ArtifactKind::Wheel && !imported && !modules_need {
                lines.push(format!(
                    "loads: {} once {provider} is imported: its files link the libraries of {by}, whose import loads it, and are no modules to import: what loads them has imported it",
                    n.soname
                ));
                continue;
            }
            if kind == ArtifactKind::Wheel && !imported {
                raise(VerdictStatus::Unresolved, &mut status);
                by_unimported_provider
                    .entry((fails.clone(), provider.to_string(), by.clone()))
                    .or_default()
                    .push(n.soname.clone());
                continue;
            }
            lines.push(format!(
                "loads: {} is loaded before the files that need it: they link the libraries of {by}, whose import loads it first",
                n.soname
            ));
            continue;
        }
        // Not declared directly, where a requirement built for CUDA whose own requirements are
        // not recorded may bring it; and a wheel's loader the catalog does not describe, run at
        // import, that may load it (rapidsmpf's `librapidsmpf.load_library()`). Where the
        // library is reached (a search path, a preload at import, such a loader) and may be
        // declared, what happens depends on what cudist cannot read: said, not failed.
        let through = match n.may_come_through.as_slice() {
            [] => None,
            [one] => Some(format!(
                "not declared directly, but may come through {one}, built for CUDA, whose requirements cudist's snapshot of PyPI does not record"
            )),
            many => Some(format!(
                "not declared directly, but may come through {}, built for CUDA, whose requirements cudist's snapshot of PyPI does not record",
                many.join(", ")
            )),
        };
        let unknown_loader = (n.tier == crate::loads::Tier::Import && !n.rpath_covers)
            .then(|| {
                preloads.iter().find(|q| {
                    q.mechanism == crate::loads::Mechanism::PackageLoader
                        && q.sonames.is_empty()
                        && q.required_at_import()
                })
            })
            .flatten();
        if kind == ArtifactKind::Wheel && (n.declared || through.is_some()) && !n.rpath_covers {
            let declared = match (&through, &n.declared_by) {
                (Some(t), _) => format!("; {t}"),
                (None, Some(by)) => format!("; declared by {by}"),
                (None, None) => String::new(),
            };
            if let Some(p) = preload.filter(|p| p.at_import && through.is_some()) {
                lines.push(format!(
                    "loads: {} is preloaded by {} where {pip} is installed{declared}",
                    n.soname,
                    p.place()
                ));
                continue;
            }
            if let Some(q) = unknown_loader.filter(|_| preload.is_none()) {
                // One line per loader: the libraries it may load.
                by_unknown_loader
                    .entry((q.place(), declared))
                    .or_default()
                    .push(n.soname.clone());
                continue;
            }
        }
        if let (Some(t), true, true) = (&through, n.rpath_covers, kind == ArtifactKind::Wheel) {
            lines.push(format!(
                "may load: needs {} and has an RPATH to {dir}; {t}",
                n.soname
            ));
            continue;
        }
        let through = through.map(|t| format!("; {t}")).unwrap_or_default();
        // A library whose wheel the catalog does not know (TensorRT's come from
        // pypi.nvidia.com): no directory to search, no requirement to write.
        if kind == ArtifactKind::Wheel && l.pip.is_none() && !n.rpath_covers && !n.declared {
            raise(VerdictStatus::Unresolved, &mut status);
            lines.push(format!(
                "{fails}: needs {} ({}), which no wheel the catalog knows installs: it loads only where the system's search finds it{unless}",
                n.soname, l.id
            ));
            continue;
        }
        match kind {
            ArtifactKind::Wheel => match (n.rpath_covers, n.declared) {
                // Declared only under an extra: found where that extra is installed. The choice
                // is the package's (CUDA from the system otherwise), said, not failed.
                (true, true) if n.tier == crate::loads::Tier::Import => {
                    if let Some(x) = &n.declared_extra {
                        by_extra
                            .entry(x.clone())
                            .or_default()
                            .push(n.soname.clone());
                    }
                }
                (true, true) => {}
                (_, true) if preload.is_some_and(|p| p.at_import) => {
                    let p = preload.expect("checked");
                    lines.push(format!(
                        "loads: {} is preloaded by {} from {pip}",
                        n.soname,
                        p.place()
                    ));
                }
                (false, false) => {
                    raise(VerdictStatus::Unresolved, &mut status);
                    lines.push(format!(
                        "{fails}: needs {} but has no RPATH to {dir} and no dependency on {pip}{unless}{through}",
                        n.soname
                    ));
                }
                (true, false) => {
                    raise(VerdictStatus::Unresolved, &mut status);
                    lines.push(format!(
                        "needs {} and has an RPATH to {dir}, but does not declare {pip}",
                        n.soname
                    ));
                }
                (false, true) => {
                    raise(VerdictStatus::Unresolved, &mut status);
                    let by = n.declared_by.as_deref().unwrap_or(pip);
                    let how = match &n.declared_extra {
                        Some(x) => format!("declares {by} only in the optional extra [{x}]"),
                        None => format!("declares {by}"),
                    };
                    lines.push(format!(
                        "{fails}: needs {} and {how}, but no RPATH points at {dir}: the loader will not look there{unless}",
                        n.soname
                    ));
                }
            },
            _ => {
                if !n.rpath_covers && !preload.is_some_and(|p| p.at_import) {
                    lines.push(format!(
                        "needs {} (pip: {pip} in {dir}; conda: {}) from the system or the environment: no RPATH points at it{}",
                        n.soname,
                        l.conda.as_deref().unwrap_or("-"),
                        if n.tier == crate::loads::Tier::Import { String::new() } else { format!(" ({fails}){unless}") }
                    ));
                }
            }
        }
    }
    for ((fails, provider, by), sonames) in by_unimported_provider {
        lines.push(format!(
            "{fails} unless {provider} is imported first: needs {}, which the import of {by} loads, as it loads the libraries of {provider} these files link, and nothing in this wheel imports {provider}: alone, the import of these modules fails (fix: import {provider} first in the package's __init__.py, as its extensions do)",
            sonames.join(", ")
        ));
    }
    for (extra, sonames) in by_extra {
        lines.push(format!(
            "loads with the extra [{extra}]: {} come{} from wheels declared only under it; installed without it, the import finds {} only where the system provides {}",
            sonames.join(", "),
            if sonames.len() == 1 { "s" } else { "" },
            if sonames.len() == 1 { "it" } else { "them" },
            if sonames.len() == 1 { "it" } else { "them" },
        ));
    }
    for (place, (sonames, chains)) in by_loaded_wheel {
        let one = sonames.len() == 1;
        lines.push(format!(
            "loads: {} {} loaded first by the libraries {place} loads: their wheels require {} ({}), though no RPATH of this wheel's files points at {}",
            sonames.join(", "),
            if one { "is" } else { "are" },
            if one { "it" } else { "them" },
            chains.into_iter().collect::<Vec<_>>().join(", "),
            if one { "its wheel's directory" } else { "their wheels' directories" },
        ));
    }
    for ((place, declared), sonames) in by_unknown_loader {
        lines.push(format!(
            "may load: {} {} no RPATH to {}: {} load where {place} (a loader cudist's catalog does not describe) loads {} first{declared}",
            sonames.join(", "),
            if sonames.len() == 1 { "has" } else { "have" },
            if sonames.len() == 1 { "its wheel's directory" } else { "their wheels' directories" },
            if sonames.len() == 1 { "it would" } else { "they" },
            if sonames.len() == 1 { "it" } else { "them" },
        ));
    }
    let statics: BTreeMap<&str, usize> = elfs
        .iter()
        .flat_map(|a| a.report.static_cuda.iter())
        .fold(BTreeMap::new(), |mut m, s| {
            *m.entry(s.library.as_str()).or_default() += 1;
            m
        });
    if !statics.is_empty() {
        let parts: Vec<String> = statics
            .iter()
            .map(|(l, n)| format!("{l} in {n} file(s)"))
            .collect();
        lines.push(format!("links CUDA statically: {}", parts.join(", ")));
    }
    if !driver_needed.is_empty() {
        let names: Vec<&str> = driver_needed.iter().map(|d| d.soname.as_str()).collect();
        lines.push(format!(
            "uses the driver through {} (provided by the NVIDIA driver)",
            names.join(", ")
        ));
    }
    if device.cubins + device.ptx + device.lto_ir > 0 {
        let mut s = format!(
            "device code: {} cubin(s) for {}",
            device.cubins,
            if device.native_sms.is_empty() {
                "no SM".into()
            } else {
                device.native_sms.join(" ")
            }
        );
        if let Some(p) = &device.newest_ptx {
            s.push_str(&format!(
                "; PTX up to {} (ISA {}) for JIT on newer GPUs",
                p.arch.replace("sm_", "compute_"),
                p.isa
            ));
        }
        lines.push(s);
    }
    if status == VerdictStatus::Ok {
        let needs: Vec<&str> = cuda_needed
            .iter()
            .map(|n| n.soname.as_str())
            .filter(|n| !kept_copies.contains(n))
            .collect();
        let head = if !kept_copies.is_empty() {
            if needs.is_empty() {
                "OK: carries CUDA libraries that no wheel can stand in for (below), and needs no other".to_string()
            } else {
                format!(
                    "OK: carries CUDA libraries that no wheel can stand in for (below); needs {}",
                    needs.join(", ")
                )
            }
        } else if needs.is_empty() {
            "OK: carries no CUDA libraries and needs none".to_string()
        } else {
            format!("OK: carries no CUDA libraries; needs {}", needs.join(", "))
        };
        lines.insert(0, head);
    }
    Verdict { status, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CUDA major a distribution's or extra's name says, with or without the minor.
    #[test]
    fn a_name_says_its_cuda_major() {
        for (name, major) in [
            ("cupy-cuda12x", Some(12)),
            ("nvidia-nccl-cu13", Some(13)),
            ("itk-cudacommon-cuda128", Some(12)),
            ("torch-cu118", Some(11)),
            ("cu130", Some(13)),
            ("cudacommon", None),
            ("circuit-5", None),
            ("pkg-cuda9", None),
        ] {
            assert_eq!(name_major(name), major, "{name}");
        }
    }

    #[test]
    fn folding_paths() {
        assert_eq!(
            fold_path("cupy/_core", "/../../nvidia/cublas/lib"),
            ("nvidia/cublas/lib".into(), 0)
        );
        assert_eq!(fold_path("pkg", "/../../../x"), ("../../x".into(), 2));
        assert_eq!(fold_path("pkg", ""), ("pkg".into(), 0));
        assert_eq!(fold_path("", "/."), ("".into(), 0));
    }
    /// A fallback chain none of whose links is of the file's major: the newest the file
    /// accepts, not above what it was built with (qoco's CUDA 13 build names `libcublas.so.11`
    /// and `.12`: CUDA 12's wheel, not 11's).
    #[test]
    fn the_newest_link_not_above_the_build() {
        let c = Catalog::builtin();
        let chain = ["libcublas.so.11".to_string(), "libcublas.so.12".to_string()];
        assert_eq!(newest_link(&chain, Some(13), &c), Some(1));
        assert_eq!(newest_link(&chain, Some(11), &c), Some(0));
        assert_eq!(newest_link(&chain, None, &c), Some(1));
        assert_eq!(newest_link(&chain, Some(10), &c), None);
    }
}
