//! Human-readable inspect output: a verdict first, then tables.

use std::collections::BTreeMap;
use std::fmt::Write;

use cudist_fatbin::EntryKind;

use crate::util::{human_bytes, Style, Table};
use cudist_analysis::loads::Tier;
use cudist_analysis::model::*;

/// What to print beyond the default report.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderOptions {
    /// One table row per ELF file.
    pub files: bool,
    /// Every fatbin entry of every file.
    pub entries: bool,
}

pub fn render(report: &Report, opts: RenderOptions, style: Style) -> String {
    let mut out = String::new();
    for a in &report.artifacts {
        render_artifact(&mut out, a, opts, style);
        out.push('\n');
    }
    if report.artifacts.len() + report.errors.len() > 1 {
        render_summary(&mut out, report, style);
    }
    out
}

fn status_word(s: VerdictStatus, style: Style) -> String {
    match s {
        VerdictStatus::Ok => style.green("OK"),
        VerdictStatus::Misbuilt => style.yellow("MISBUILT"),
        VerdictStatus::Unportable => style.yellow("UNPORTABLE"),
        VerdictStatus::Bloated => style.yellow("BLOATED"),
        VerdictStatus::Unresolved => style.yellow("UNRESOLVED"),
        VerdictStatus::BundlesDriver => style.red("BUNDLES DRIVER"),
    }
}

fn render_artifact(out: &mut String, a: &Artifact, opts: RenderOptions, style: Style) {
    render_header(out, a, style);
    render_needs(out, a, style);
    render_loads(out, a, style);
    render_search_paths(out, a, style);
    render_vendored(out, a, style);
    render_static(out, a, style);
    render_platform(out, a);
    render_device(out, a, style);
    render_breakdown(out, a, style);
    if opts.files {
        render_files(out, a, style);
    }
    if opts.entries {
        render_entries(out, a, style);
    }
}

/// The artifact's name, kind, sizes and verdict.
fn render_header(out: &mut String, a: &Artifact, style: Style) {
    let kind = match a.kind {
        ArtifactKind::Wheel => "wheel",
        ArtifactKind::Directory => "directory",
        ArtifactKind::Elf => "ELF file",
        ArtifactKind::Conda => "conda package",
    };
    let sizes = if a.installed_size != a.size {
        format!(
            "{}, {} installed",
            human_bytes(a.size),
            human_bytes(a.installed_size)
        )
    } else {
        human_bytes(a.size)
    };
    let _ = writeln!(
        out,
        "{}  ({kind}, {sizes}, {} ELF file{})",
        style.bold(&a.path),
        a.elf_files.len(),
        if a.elf_files.len() == 1 { "" } else { "s" }
    );
    if let Some(s) = a.wheel.as_ref().and_then(|w| w.slimmed.as_ref()) {
        let ptx = serde_json::to_value(s.ptx)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Slimmed by cudist {} for {} (PTX: {ptx}): device code for other GPUs was removed",
            s.cudist_version,
            s.targets.join(" ")
        );
    }
    let _ = writeln!(out, "Verdict: {}", status_word(a.verdict.status, style));
    for l in &a.verdict.lines {
        let _ = writeln!(out, "  - {l}");
    }
}

/// The CUDA libraries the artifact needs and who provides them; the driver libraries.
fn render_needs(out: &mut String, a: &Artifact, style: Style) {
    if !a.cuda_needed.is_empty() {
        let _ = writeln!(out, "\nCUDA libraries needed");
        let mut t = Table::new(&[
            "SONAME",
            "CUDA",
            "PINS",
            "PIP PACKAGE",
            "WHEEL DIR",
            "CONDA",
            "EXTRA",
            "RPATH",
            "DECLARED",
            "LOADS",
            "USED BY",
        ]);
        for n in &a.cuda_needed {
            let l = n.library.as_ref();
            let dash = || "-".to_string();
            t.row(vec![
                n.soname.clone(),
                // A SONAME several majors share, with nothing in the artifact to decide: a guess.
                // One build for every major: no major at all.
                l.map_or_else(dash, |l| {
                    if l.cuda_agnostic {
                        return "any".to_string();
                    }
                    format!(
                        "{}{}",
                        l.cuda_major,
                        if l.cuda_major_ambiguous { "?" } else { "" }
                    )
                }),
                l.map_or_else(dash, |l| l.soname_policy.clone()),
                l.and_then(|l| l.pip.clone()).unwrap_or_else(dash),
                l.and_then(|l| l.pip_dir.clone()).unwrap_or_else(dash),
                l.and_then(|l| l.conda.clone()).unwrap_or_else(dash),
                l.and_then(|l| l.toolkit_extra.clone()).unwrap_or_else(dash),
                yes_no(n.rpath_covers),
                match (&a.kind, &a.conda) {
                    // Not declared directly, but a requirement whose own requirements the
                    // snapshot lacks may bring it.
                    (ArtifactKind::Wheel, _) if !n.declared && !n.may_come_through.is_empty() => {
                        "maybe".to_string()
                    }
                    (ArtifactKind::Wheel, _) => yes_no(n.declared),
                    (ArtifactKind::Conda, Some(c)) => {
                        yes_no(c.cuda_links.iter().any(|l| {
                            l.soname == n.soname && (l.declared_by.is_some() || l.shipped)
                        }))
                    }
                    _ => "-".into(),
                },
                match (&n.preload, n.tier) {
                    (Some(p), _) if p.at_import => "preloaded".into(),
                    // At import only as far as compiled code names the modules that need it.
                    (_, Tier::Import)
                        if a.elf_files
                            .iter()
                            .filter(|e| n.needed_by.contains(&e.path))
                            .all(|e| e.tier != Tier::Import || e.maybe_at_import()) =>
                    {
                        "import?".into()
                    }
                    (_, t) => tier_word(t).into(),
                },
                used_by(&n.needed_by),
            ]);
        }
        out.push_str(&t.render(2, style));
        let guessed: Vec<&str> = a
            .cuda_needed
            .iter()
            .filter(|n| n.library.as_ref().is_some_and(|l| l.cuda_major_ambiguous))
            .map(|n| n.soname.as_str())
            .collect();
        if !guessed.is_empty() {
            let _ = writeln!(
                out,
                "  ? {}: several CUDA majors ship this SONAME and nothing in the artifact says \
                 which it was built for; the newest is assumed",
                guessed.join(", ")
            );
        }
    }
    if !a.driver_needed.is_empty() {
        let list: Vec<String> = a
            .driver_needed
            .iter()
            .map(|d| format!("{} ({})", d.soname, used_by(&d.needed_by)))
            .collect();
        let _ = writeln!(
            out,
            "\nDriver libraries needed (from the NVIDIA driver; never bundle): {}",
            list.join(", ")
        );
    }
}

fn tier_word(t: Tier) -> &'static str {
    match t {
        Tier::Import => "import",
        Tier::OnDemand => "on demand",
        Tier::Variant => "variant",
    }
}

/// What the package's own Python loads, and its variant libraries one by one.
fn render_loads(out: &mut String, a: &Artifact, style: Style) {
    if !a.preloads.is_empty() {
        let _ = writeln!(out, "\nLoaded by the package's Python");
        let mut t = Table::new(&["LIBRARY", "WHEN", "WHERE"]);
        for p in &a.preloads {
            t.row(vec![
                p.name.clone(),
                if p.at_import {
                    "at import".into()
                } else {
                    p.trigger()
                },
                p.place(),
            ]);
        }
        out.push_str(&t.render(2, style));
    }
    if !a.variants.is_empty() {
        let _ = writeln!(out, "\nVariants (the package loads one at run time)");
        let mut t = Table::new(&["FILE", "CUDA", "NEEDS", "SMS", "PTX", "DRIVER >="]);
        for v in &a.variants {
            t.row(vec![
                v.path.clone(),
                v.cuda.clone(),
                if v.cuda_needed.is_empty() {
                    "-".into()
                } else {
                    v.cuda_needed.join(" ")
                },
                if v.native_sms.is_empty() {
                    "-".into()
                } else {
                    v.native_sms.join(" ")
                },
                v.newest_ptx
                    .as_ref()
                    .map_or("-".into(), |p| format!("{} (ISA {})", p.arch, p.isa)),
                v.min_driver
                    .as_ref()
                    .map_or("-".into(), |f| f.driver.clone()),
            ]);
        }
        out.push_str(&t.render(2, style));
    }
}

/// Every RPATH and RUNPATH entry and where it leads.
fn render_search_paths(out: &mut String, a: &Artifact, style: Style) {
    let paths: Vec<(&ElfReport, &str, &SearchPathEntry)> = a
        .elf_files
        .iter()
        .flat_map(|e| {
            e.rpath
                .iter()
                .map(move |p| (e, "RPATH", p))
                .chain(e.runpath.iter().map(move |p| (e, "RUNPATH", p)))
        })
        .collect();
    if !paths.is_empty() {
        let _ = writeln!(out, "\nSearch paths");
        let mut t = Table::new(&["FILE", "TAG", "ENTRY", "EXPANDS TO", "WHERE"]);
        for (e, tag, p) in paths {
            let loc = match p.location {
                PathLocation::CudaWheel => format!("CUDA wheel dir ({})", p.provided_by.join(", ")),
                PathLocation::Inside => "inside".into(),
                PathLocation::Outside => "outside".into(),
                PathLocation::Absolute => "absolute".into(),
                PathLocation::Unresolved => "unresolved".into(),
            };
            t.row(vec![
                e.path.clone(),
                tag.into(),
                p.raw.clone(),
                p.expanded.clone(),
                loc,
            ]);
        }
        out.push_str(&t.render(2, style));
    }
}

/// The CUDA libraries the artifact carries.
fn render_vendored(out: &mut String, a: &Artifact, style: Style) {
    if a.vendored.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nVendored CUDA libraries");
    let mut t = Table::new(&["FILE", "LIBRARY", "KIND", "SIZE", "PROVIDED BY", "EVIDENCE"]);
    for v in &a.vendored {
        t.row(vec![
            v.path.clone(),
            v.library
                .as_ref()
                .map_or_else(|| v.soname.clone().unwrap_or_default(), |l| l.id.clone()),
            match v.class {
                NeededClass::Driver => "driver".into(),
                _ => "toolkit".into(),
            },
            human_bytes(v.bytes),
            v.library
                .as_ref()
                .and_then(|l| l.pip.clone())
                .unwrap_or_else(|| "NVIDIA driver".into()),
            v.evidence.join("; "),
        ]);
    }
    out.push_str(&t.render(2, style));
}

/// CUDA linked statically into the artifact's files.
fn render_static(out: &mut String, a: &Artifact, style: Style) {
    let statics: Vec<(&ElfReport, &StaticCuda)> = a
        .elf_files
        .iter()
        .flat_map(|e| e.static_cuda.iter().map(move |s| (e, s)))
        .collect();
    if !statics.is_empty() {
        let _ = writeln!(out, "\nStatically linked CUDA");
        let mut t = Table::new(&["FILE", "LIBRARY", "CONFIDENCE", "EVIDENCE"]);
        for (e, s) in statics {
            t.row(vec![
                e.path.clone(),
                s.library.clone(),
                match s.confidence {
                    Confidence::Certain => "certain".into(),
                    Confidence::Likely => "likely".into(),
                },
                s.evidence.join("; "),
            ]);
        }
        out.push_str(&t.render(2, style));
    }
}

/// `--files`: one row per ELF file.
fn render_files(out: &mut String, a: &Artifact, style: Style) {
    let _ = writeln!(out, "\nELF files");
    let mut t = Table::new(&[
        "FILE",
        "TYPE",
        "SIZE",
        "HOST CODE",
        "DEVICE CODE",
        "CUBINS",
        "PTX",
        "CUDA NEEDED",
    ]);
    for e in &a.elf_files {
        let cuda: Vec<&str> = e
            .needed
            .iter()
            .filter(|n| {
                matches!(
                    n.class,
                    NeededClass::Toolkit | NeededClass::External | NeededClass::Driver
                )
            })
            .map(|n| n.soname.as_str())
            .collect();
        t.row(vec![
            e.path.clone(),
            format!("{:?}", e.elf_type).to_lowercase(),
            human_bytes(e.size),
            human_bytes(e.sizes.host_code),
            human_bytes(e.sizes.device_code),
            e.device_code
                .iter()
                .filter(|d| !matches!(d.kind, EntryKind::Ptx | EntryKind::LtoIr))
                .count()
                .to_string(),
            e.device_code
                .iter()
                .filter(|d| d.kind == EntryKind::Ptx)
                .count()
                .to_string(),
            if cuda.is_empty() {
                "-".into()
            } else {
                cuda.join(" ")
            },
        ]);
    }
    out.push_str(&t.render(2, style));
}

/// `--entries`: every device-code entry of every file.
fn render_entries(out: &mut String, a: &Artifact, style: Style) {
    for e in a.elf_files.iter().filter(|e| !e.device_code.is_empty()) {
        let _ = writeln!(out, "\nDevice code of {}", e.path);
        let mut t = Table::new(&[
            "#",
            "SECTION",
            "KIND",
            "ARCH",
            "VERSION",
            "CODEC",
            "STORED",
            "UNCOMPRESSED",
            "IDENTIFIER",
        ]);
        for (i, d) in e.device_code.iter().enumerate() {
            t.row(vec![
                (i + 1).to_string(),
                serde_json::to_value(d.section)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                kind_name(d.kind),
                d.arch.clone(),
                d.version.clone(),
                d.codec.to_string(),
                human_bytes(d.stored_size),
                human_bytes(d.uncompressed_size),
                d.identifier.clone().unwrap_or_default(),
            ]);
        }
        out.push_str(&t.render(2, style));
    }
}

fn kind_name(k: EntryKind) -> String {
    match k {
        EntryKind::Other(v) => format!("kind {v}"),
        k => k.name().into(),
    }
}

fn render_device(out: &mut String, a: &Artifact, _style: Style) {
    let d = &a.device;
    if d.cubins + d.ptx + d.lto_ir == 0 {
        return;
    }
    let files = a
        .elf_files
        .iter()
        .filter(|e| !e.device_code.is_empty() && e.vendored.is_none())
        .count();
    let codecs: Vec<String> = d.codecs.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let _ = writeln!(
        out,
        "\nDevice code: {} cubin(s), {} PTX, {} LTO-IR in {} file(s); compression: {}{}",
        d.cubins,
        d.ptx,
        d.lto_ir,
        files,
        codecs.join(", "),
        if d.relocatable > 0 {
            format!(
                "; and {} relocatable entries in __nv_relfatbin, inputs to a device link that the runtime does not load (their bytes are in the size breakdown)",
                d.relocatable
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "  runs natively on: {}",
        if d.native_sms.is_empty() {
            "-".to_string()
        } else {
            d.native_sms.join(" ")
        }
    );
    if let Some(p) = &d.newest_ptx {
        let _ = writeln!(
            out,
            "  newest PTX: {} (ISA {}{}): JIT-compiled on newer GPUs",
            p.arch.replace("sm_", "compute_"),
            p.isa,
            p.cuda
                .as_deref()
                .map(|c| format!(", CUDA {c}"))
                .unwrap_or_default()
        );
    }
    if let Some(f) = &d.min_driver {
        let _ = writeln!(out, "  minimum driver: {} ({})", f.driver, f.reason);
    }
    if let Some(f) = &d.ptx_jit_min_driver {
        let _ = writeln!(out, "  PTX JIT needs driver: {} ({})", f.driver, f.reason);
    }
}

fn render_breakdown(out: &mut String, a: &Artifact, style: Style) {
    let b = &a.breakdown;
    if b.total == 0 {
        return;
    }
    let _ = writeln!(out, "\nSize breakdown (installed bytes)");
    let mut t = Table::new(&["PART", "SIZE", "SHARE"]);
    let pct = |n: u64| format!("{:.1}%", n as f64 * 100.0 / b.total as f64);
    let mut row = |name: String, n: u64| {
        if n > 0 {
            t.row(vec![name, human_bytes(n), pct(n)]);
        }
    };
    row("host code".into(), b.host_code);
    let mut by_sm: Vec<(&String, &u64)> = b.device_code.iter().collect();
    by_sm.sort_by_key(|(arch, _)| sm_key(arch));
    for (arch, n) in by_sm {
        row(format!("device code {arch}"), *n);
    }
    row("PTX".into(), b.ptx);
    row("LTO-IR".into(), b.lto_ir);
    row("other device code".into(), b.other_device);
    row("vendored CUDA libraries".into(), b.vendored_cuda);
    row("other".into(), b.other);
    row("total".into(), b.total);
    out.push_str(&t.render(2, style));
}

fn sm_key(arch: &str) -> (u32, String) {
    let digits: String = arch
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (digits.parse().unwrap_or(0), arch.to_string())
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

fn used_by(files: &[String]) -> String {
    match files {
        [one] => one.clone(),
        many => format!("{} files", many.len()),
    }
}

fn render_summary(out: &mut String, report: &Report, style: Style) {
    let s = &report.summary;
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    for a in &report.artifacts {
        *by_status
            .entry(format!("{:?}", a.verdict.status))
            .or_default() += 1;
    }
    let _ = writeln!(
        out,
        "{} {} artifact(s), {} unreadable, {} ELF files; {} need attention; vendored CUDA: {}",
        style.bold("Summary:"),
        s.artifacts,
        s.errors,
        s.elf_files,
        s.needs_attention,
        human_bytes(s.vendored_cuda_bytes)
    );
    let mut t = Table::new(&["ARTIFACT", "VERDICT", "SIZE", "VENDORED CUDA"]);
    for a in &report.artifacts {
        t.row(vec![
            a.path.clone(),
            status_word(a.verdict.status, Style { enabled: false }),
            human_bytes(a.size),
            human_bytes(a.breakdown.vendored_cuda),
        ]);
    }
    out.push_str(&t.render(2, style));
}

fn render_platform(out: &mut String, a: &Artifact) {
    let p = &a.platform;
    if let Some(e) = &p.error {
        let _ = writeln!(out, "\nPlatform: none ({e})");
        return;
    }
    let Some(policy) = &p.policy else { return };
    let _ = writeln!(
        out,
        "\nPlatform: {} ({policy}, {})",
        p.tags.join(", "),
        p.libc.as_deref().unwrap_or("glibc")
    );
    for i in &p.ignored {
        let _ = writeln!(out, "  left out: {i}");
    }
    if !p.auditwheel_excludes.is_empty() {
        let _ = writeln!(
            out,
            "  auditwheel says linux_{} unless each is given to --exclude: {} (not on {policy}'s list; cudist counts {} as provided by CUDA wheels, the driver or another package)",
            p.arch.as_deref().unwrap_or("?"),
            p.auditwheel_excludes.join(", "),
            if p.auditwheel_excludes.len() == 1 { "it" } else { "them" },
        );
    }
    // First the reason that decides the tag: why the next policy up fails (the most compatible
    // ones often fail for a reason of their own, such as an old glibc); then the most compatible
    // ones: at most three lines in all.
    let Some((decisive, rest)) = p.blocked.split_last() else {
        return;
    };
    let _ = writeln!(
        out,
        "  not {} (the next more compatible policy): {} {}",
        decisive.policy, decisive.file, decisive.reason
    );
    for b in rest.iter().take(2) {
        let _ = writeln!(out, "  not {}: {} {}", b.policy, b.file, b.reason);
    }
    if rest.len() > 2 {
        let _ = writeln!(out, "  (and {} more compatible policies)", rest.len() - 2);
    }
}
