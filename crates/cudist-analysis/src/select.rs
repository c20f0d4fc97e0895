//! Which build of a package a machine should install (`cudist select`), judged by what each
//! candidate wheel contains rather than by its name alone.
//!
//! Each candidate is read as inspect reads it ([`crate::model::Artifact`]); its build (a CUDA
//! major, CPU, ROCm) comes from its version's local label (`+cu126`, `+cpu`, `+rocm6.3`), its
//! name (`cupy-cuda12x`, `-cu13`), and its content (the CUDA libraries it needs, its device
//! code), and a name that disagrees with the content is said. Against the host (doctor's profile,
//! [`Host`]) every candidate is judged on what decides whether it works there:
//!
//! - **installs**: its Python tag for the host's Python, its platform tag for the host's
//!   architecture and glibc (pip's rules: `cp311`, `abi3` up to the host's minor, `py3`;
//!   `manylinux_X_Y` up to the host's glibc, the legacy aliases, `linux_<arch>`, `any`);
//! - **driver**: the minor-version-compatibility floor of each CUDA major it needs, and the floor
//!   its device code carries (a static runtime too);
//! - **GPUs**: per GPU, the worst answer over its files ([`super::runtime::gpu::check_gpus`]):
//!   a native cubin, PTX the driver compiles at first use, or no kernel image.
//!
//! The ranking: what installs and whose driver floor the host meets first; then, on a machine
//! with NVIDIA GPUs, CUDA builds whose code runs natively on every GPU before those that JIT
//! before those with no kernel image, then the newest CUDA, then the smaller download; on a
//! machine with AMD GPUs, ROCm builds first; on one with no GPU, CPU builds first (a GPU build
//! still imports there, but has nothing to run on).

use std::cmp::Reverse;

use cudist_catalog::{driver_version_key, Catalog};
use cudist_fatbin::SectionKind;
use serde::Serialize;

use crate::model::Artifact;
use crate::runtime::gpu::{check_driver, check_gpus};
use crate::runtime::host::Host;

/// What kind of build a candidate is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Build {
    /// `cuda`, `cpu`, `rocm` or `unknown`.
    pub kind: String,
    /// For CUDA: the major (`12`), or major.minor from a local label (`12.6`); for ROCm its
    /// version.
    pub version: Option<String>,
    /// Where it was read: `local version +cu126`, `name cupy-cuda12x`, `content (libcudart.so.13)`.
    pub from: String,
    /// Where the name or label says one CUDA major and the content needs another: what the
    /// content says (the driver is judged by the content).
    pub disagrees: Option<String>,
}

/// One GPU's answer for a candidate: the worst over its files.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GpuFit {
    /// The GPU (`H100 (sm_90)`).
    pub gpu: String,
    /// `cubin`, `jit`, `ptx-too-new`, `no-kernel-image`, or `no-device-code` (nothing to run).
    pub status: String,
    /// What happens, with the file it happens in.
    pub detail: String,
}

/// How a candidate fares on the host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Judged {
    /// The wheel's file name.
    pub file: String,
    /// Its path as given.
    pub path: String,
    /// Distribution name (from the file name).
    pub distribution: String,
    /// Version (from the file name), with its local label.
    pub version: String,
    /// What kind of build it is.
    pub build: Build,
    /// Its size in bytes (the download).
    pub size: u64,
    /// Why pip would not install it here (Python or platform tag); empty when it would.
    pub install_problems: Vec<String>,
    /// Why the driver cannot run it; empty when it can.
    pub driver_problems: Vec<String>,
    /// Why this CPU cannot run it: files that need a higher x86-64 level (their GNU property
    /// note) than the host's CPU has, which ld.so refuses to load ("CPU ISA level is lower than
    /// required"); empty when none.
    pub cpu_problems: Vec<String>,
    /// Per NVIDIA GPU of the host.
    pub gpus: Vec<GpuFit>,
    /// 1 for the best.
    pub rank: usize,
    /// `best`, `works`, `jit`, `no-gpu-use`, `rejected`.
    pub outcome: String,
    /// Why it ranks where it does, most decisive first.
    pub reasons: Vec<String>,
    /// How much of it was read: `whole` (a local or cached file), `front` (fetched by range
    /// requests: the central directory and METADATA, then each shared library as far as its
    /// device code and dynamic section need), or `none` (judged by its file name).
    pub read: String,
    /// Bytes received from its index to judge it (0 for a local or cached file).
    pub bytes_received: u64,
    /// For a build offered as an extra (`jax[cuda12]`): the extra. Its verdict is over the
    /// package and the build packages the extra pulls in (`parts`).
    pub extra: Option<String>,
    /// For a build offered as an extra: the wheels judged with it, one per package it pulls in
    /// (`jax_cuda12_pjrt-0.10.2-…whl`), each the best of its package's for this host.
    pub parts: Vec<String>,
}

/// What one `-`-separated part of a distribution name says of its build.
enum NamePart<'a> {
    /// `cuda12x`, `cu12`: a CUDA major.
    Cuda(&'a str),
    /// `rocm`, `rocm6`.
    Rocm,
}

fn name_part(part: &str) -> Option<NamePart<'_>> {
    let digits = |d: &&str| (2..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit());
    // `cuda12x` (cupy), `cuda12` (jax-cuda12-plugin), `cu12`.
    if let Some(m) = part
        .strip_prefix("cuda")
        .map(|r| r.strip_suffix('x').unwrap_or(r))
        .filter(digits)
        .or_else(|| part.strip_prefix("cu").filter(digits))
    {
        return Some(NamePart::Cuda(m));
    }
    part.starts_with("rocm").then_some(NamePart::Rocm)
}

/// The family a distribution belongs to: its name without the parts that name a build
/// (`cupy-cuda12x` → `cupy`, `nvidia-cublas-cu12` → `nvidia-cublas`).
pub fn family(distribution: &str) -> String {
    cudist_wheel::installed::normalise(distribution)
        .split('-')
        .filter(|p| name_part(p).is_none())
        .collect::<Vec<_>>()
        .join("-")
}

fn local_label(version: &str) -> Option<&str> {
    version.split_once('+').map(|(_, l)| l)
}

/// The build a candidate is: its local label, else its name, else its content; and whether the
/// content agrees.
pub fn build_of(distribution: &str, version: &str, a: &Artifact, catalog: &Catalog) -> Build {
    let content = content_cuda(a, catalog);
    let mut b = declared_build(distribution, version, a, &content);
    if let (Some((major, why)), "cpu") = (&content, b.kind.as_str()) {
        b.disagrees = Some(format!(
            "its {} says a CPU build, but its content needs CUDA {major} ({why})",
            b.from
        ));
    }
    if let (Some((major, why)), "cuda", Some(v)) = (&content, b.kind.as_str(), &b.version) {
        let said = v.split('.').next().and_then(|m| m.parse::<u32>().ok());
        if said.is_some_and(|m| m != *major) {
            b.disagrees = Some(format!(
                "its {} says CUDA {v}, but its content needs CUDA {major} ({why})",
                b.from
            ));
        }
    }
    b
}

fn declared_build(
    distribution: &str,
    version: &str,
    a: &Artifact,
    content: &Option<(u32, String)>,
) -> Build {
    if let Some(b) = build_from_name(distribution, version) {
        return b;
    }
    let label = |kind: &str, v: Option<String>, from: String| Build {
        kind: kind.into(),
        version: v,
        from,
        disagrees: None,
    };
    match content {
        Some((major, why)) => label("cuda", Some(major.to_string()), format!("content ({why})")),
        None if a.device.cubins + a.device.ptx == 0 => label(
            "cpu",
            None,
            "content (no CUDA library, no device code)".into(),
        ),
        None => label("cuda", None, "content (device code)".into()),
    }
}

/// The build a local label (`+cu126`, `+cpu`, `+rocm6.3`) or a distribution name
/// (`cupy-cuda12x`, `-cu13`, `-rocm`) says; None when neither says one.
fn build_from_name(distribution: &str, version: &str) -> Option<Build> {
    let label = |kind: &str, v: Option<String>, from: String| {
        Some(Build {
            kind: kind.into(),
            version: v,
            from,
            disagrees: None,
        })
    };
    if let Some(l) = local_label(version) {
        let l = l.to_ascii_lowercase();
        if let Some(d) = l
            .strip_prefix("cu")
            .filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))
        {
            let (major, minor) = d.split_at(d.len() - 1);
            return label(
                "cuda",
                Some(format!("{major}.{minor}")),
                format!("local version +{l}"),
            );
        }
        if l == "cpu" {
            return label("cpu", None, "local version +cpu".into());
        }
        if let Some(v) = l.strip_prefix("rocm") {
            return label("rocm", Some(v.to_string()), format!("local version +{l}"));
        }
    }
    for part in cudist_wheel::installed::normalise(distribution).split('-') {
        match name_part(part) {
            Some(NamePart::Cuda(m)) => {
                return label("cuda", Some(m.to_string()), format!("name {distribution}"))
            }
            Some(NamePart::Rocm) => return label("rocm", None, format!("name {distribution}")),
            None => {}
        }
    }
    // `faiss-cpu`, `tensorflow-cpu`: a name that ends in `-cpu` names the CPU build.
    if cudist_wheel::installed::normalise(distribution).ends_with("-cpu") {
        return label("cpu", None, format!("name {distribution}"));
    }
    None
}

/// The CUDA major the content needs: of the CUDA libraries it links, else of its device code's
/// driver floor (the catalog's minor-version-compatibility floor it is); with the evidence.
fn content_cuda(a: &Artifact, catalog: &Catalog) -> Option<(u32, String)> {
    let mut majors: Vec<(u32, &str)> = a
        .cuda_needed
        .iter()
        .filter_map(|n| {
            n.library
                .as_ref()
                .map(|l| (l.cuda_major, n.soname.as_str()))
        })
        .collect();
    // The newest major, named by the library that says it best: the runtime, else one whose
    // SONAME carries the major (`libcublas.so.13`), not one that is versioned on its own
    // (`libnvonnxparser.so.10`, `libnvshmem_host.so.3`).
    majors.sort_by_key(|&(m, soname)| {
        (
            m,
            soname.starts_with("libcudart."),
            soname.ends_with(&format!(".so.{m}")),
            std::cmp::Reverse(soname.to_string()),
        )
    });
    if let Some(&(m, soname)) = majors.last() {
        return Some((m, soname.to_string()));
    }
    let floor = a.device.min_driver.as_ref()?;
    let major = catalog
        .minor_compat
        .iter()
        .find(|m| m.min_driver == floor.driver)?
        .major;
    Some((major, format!("device code: {}", floor.reason)))
}

/// pip's Python tag rules for CPython `3.minor`: `py3`, `py3N` (N ≤ minor), `cp3minor`, and `cp3N`
/// with the `abi3` ABI for N ≤ minor.
fn python_ok(python: &str, abi: &str, minor: u32) -> bool {
    python.split('.').any(|t| {
        if t == "py3" {
            return true;
        }
        let n = |rest: &str| rest.parse::<u32>().ok();
        if let Some(v) = t.strip_prefix("py3").and_then(n) {
            return v <= minor;
        }
        if let Some(v) = t.strip_prefix("cp3").and_then(n) {
            return abi.split('.').any(|a| {
                (a == "abi3" && v <= minor)
                    || (v == minor && (a == "none" || a == t || a == format!("{t}t")))
            });
        }
        false
    })
}

/// pip's platform rules on glibc Linux: `any`, `linux_<arch>`, `manylinux_X_Y_<arch>` with X.Y up
/// to the host's glibc, and the legacy aliases (`manylinux1` = 2.5, `2010` = 2.12, `2014` = 2.17).
fn platform_problem(platform: &str, arch: &str, glibc: Option<(u32, u32)>) -> Option<String> {
    let mut reasons = Vec::new();
    for tag in platform.split('.') {
        if tag == "any" || tag == format!("linux_{arch}") {
            return None;
        }
        let Some((need, tag_arch)) = crate::platform::manylinux_tag(tag) else {
            reasons.push(format!("{tag} is not a glibc Linux tag"));
            continue;
        };
        if tag_arch != arch {
            reasons.push(format!("{tag} is for {tag_arch}, the host is {arch}"));
            continue;
        }
        match (need, glibc) {
            (Some(n), Some(have)) if n > have => reasons.push(format!(
                "{tag} needs glibc {}.{}, the host has {}.{}",
                n.0, n.1, have.0, have.1
            )),
            _ => return None,
        }
    }
    Some(reasons.join("; "))
}

fn rank_status(s: &str) -> u8 {
    match s {
        "cubin" => 0,
        "jit" => 1,
        "no-device-code" => 2,
        "ptx-too-new" => 3,
        _ => 4,
    }
}

/// Why pip would not install a wheel of this file name on the host (its Python and platform
/// tags); empty when it would.
pub fn install_problems(file: &str, host: &Host) -> Vec<String> {
    let Some(n) = cudist_wheel::WheelName::parse(file) else {
        return vec!["not a wheel file name".into()];
    };
    let arch = host.arch.clone().unwrap_or_else(|| "x86_64".into());
    let glibc = host.glibc.as_deref().and_then(|g| {
        let (x, y) = g.split_once('.')?;
        Some((x.parse().ok()?, y.parse().ok()?))
    });
    let py_minor = host
        .python
        .as_deref()
        .and_then(|p| p.strip_prefix("3."))
        .and_then(|m| m.split('.').next()?.parse::<u32>().ok());
    let mut out = Vec::new();
    if let Some(minor) = py_minor {
        if !python_ok(&n.python, &n.abi, minor) {
            out.push(format!(
                "its tags {}-{} are not for Python 3.{minor}",
                n.python, n.abi
            ));
        }
    }
    if let Some(p) = platform_problem(&n.platform, &arch, glibc) {
        out.push(p);
    }
    out
}

/// Whether a `Requires-Python` specifier (`>=3.10`, `>=3.9,<3.14`) admits the host's Python
/// (`3.11`: some 3.11.x, so the first and a late patch release are both tried). A specifier that
/// does not parse admits it: pip would be the one to say.
pub fn python_allows(requires_python: &str, python: &str) -> bool {
    use std::str::FromStr;
    let Ok(spec) = pep440_rs::VersionSpecifiers::from_str(requires_python.trim()) else {
        return true;
    };
    let two = python.split('.').count() == 2;
    let tries: Vec<String> = if two {
        vec![format!("{python}.0"), format!("{python}.99")]
    } else {
        vec![python.to_string()]
    };
    tries
        .iter()
        .any(|v| pep440_rs::Version::from_str(v).is_ok_and(|v| spec.contains(&v)))
}

/// Whether `version` satisfies a requirement's specifier (`==0.10.2`, `<=0.10.2,>=0.10.2`); an
/// empty or unreadable specifier admits every version.
pub fn version_allowed(specifier: &str, version: &str) -> bool {
    use std::str::FromStr;
    let (Ok(spec), Ok(v)) = (
        pep440_rs::VersionSpecifiers::from_str(specifier.trim()),
        pep440_rs::Version::from_str(version),
    ) else {
        return true;
    };
    spec.contains(&v)
}

/// Of a project's files (each a version and whether it is yanked), those of the release pip would
/// take for `specifier`, as indexes into `files`:
/// - versions the specifier excludes, and unparsable ones, are passed over;
/// - yanked files (PEP 592) only when the specifier pins a version exactly (`==1.2`, `===1.2`);
/// - pre-releases and development releases only when the specifier names one, or when no final
///   release is left (as `packaging`'s filter, which pip uses, falls back);
/// - the newest public version wins (post releases count: `1.14.1.post1` after `1.14.1`), with
///   all of its local-label builds (`+cu126`, `+cu130`).
pub fn pip_release(files: &[(&str, bool)], specifier: &str) -> Vec<usize> {
    use std::str::FromStr;
    let spec = pep440_rs::VersionSpecifiers::from_str(specifier.trim()).ok();
    let pinned = spec.as_ref().is_some_and(|s| {
        s.iter().any(|v| {
            matches!(
                v.operator(),
                pep440_rs::Operator::Equal | pep440_rs::Operator::ExactEqual
            )
        })
    });
    let names_pre = spec
        .as_ref()
        .is_some_and(|s| s.iter().any(|v| v.any_prerelease()));
    let usable: Vec<(usize, pep440_rs::Version)> = files
        .iter()
        .enumerate()
        .filter(|(_, (_, yanked))| !yanked || pinned)
        .filter_map(|(i, (v, _))| Some((i, pep440_rs::Version::from_str(v).ok()?)))
        .filter(|(_, v)| spec.as_ref().is_none_or(|s| s.contains(v)))
        .collect();
    let finals = usable.iter().any(|(_, v)| !v.any_prerelease());
    let allowed: Vec<(usize, pep440_rs::Version)> = usable
        .into_iter()
        .filter(|(_, v)| names_pre || !finals || !v.any_prerelease())
        .map(|(i, v)| (i, v.without_local()))
        .collect();
    let Some(newest) = allowed.iter().map(|(_, v)| v).max().cloned() else {
        return Vec::new();
    };
    allowed
        .into_iter()
        .filter(|(_, v)| *v == newest)
        .map(|(i, _)| i)
        .collect()
}

/// The version specifiers `requires_dist` pins the packages it names to (`jax-cuda12-pjrt` →
/// `==0.10.2`), by normalised name.
pub fn pins(requires_dist: &[String]) -> Vec<(String, String)> {
    requires_dist
        .iter()
        .filter_map(|r| crate::requirements::ReqName::parse(r))
        .filter(|r| !r.specifier.is_empty())
        .map(|r| (r.name, r.specifier))
        .collect()
}

/// What a wheel's file name alone rules out on the host, before it is fetched: its tags, and a
/// CUDA major (from its local label or name) whose minor-version-compatibility floor the driver
/// does not meet. Empty when only its content can tell.
pub fn rejected_by_name(file: &str, host: &Host, catalog: &Catalog) -> Vec<String> {
    let mut out: Vec<String> = install_problems(file, host)
        .into_iter()
        .map(|p| format!("does not install here: {p}"))
        .collect();
    let Some(n) = cudist_wheel::WheelName::parse(file) else {
        return out;
    };
    let major = local_label(&n.version)
        .and_then(|l| l.strip_prefix("cu"))
        .filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))
        .map(|d| d[..d.len() - 1].to_string())
        .or_else(|| {
            cudist_wheel::installed::normalise(&n.distribution)
                .split('-')
                .find_map(|p| match name_part(p) {
                    Some(NamePart::Cuda(m)) => Some(m.to_string()),
                    _ => None,
                })
        })
        .and_then(|m| m.parse::<u32>().ok());
    if let Some(m) = major {
        out.extend(
            check_driver(&[m], host, catalog)
                .into_iter()
                .map(|p| format!("{p} (from its file name; the wheel was not fetched)")),
        );
    }
    out
}

/// A candidate the file name ruled out ([`rejected_by_name`]), judged without its content.
pub fn judged_by_name(file: &str, url: &str, reasons: Vec<String>) -> Judged {
    let name = cudist_wheel::WheelName::parse(file);
    // The build its name says (`cupy_cuda13x`, `+cu126`), where it says one.
    let build = name
        .as_ref()
        .and_then(|n| build_from_name(&n.distribution, &n.version))
        .map(|mut b| {
            b.from = format!("{} (file name only, not fetched)", b.from);
            b
        });
    Judged {
        file: file.to_string(),
        path: url.to_string(),
        distribution: name
            .as_ref()
            .map_or_else(|| file.to_string(), |n| n.distribution.clone()),
        version: name.map(|n| n.version).unwrap_or_default(),
        build: build.unwrap_or_else(|| Build {
            kind: "unknown".into(),
            version: None,
            from: "file name only (not fetched)".into(),
            disagrees: None,
        }),
        size: 0,
        install_problems: Vec::new(),
        driver_problems: Vec::new(),
        cpu_problems: Vec::new(),
        gpus: Vec::new(),
        rank: 0,
        outcome: "rejected".into(),
        reasons,
        read: "none".into(),
        bytes_received: 0,
        extra: None,
        parts: Vec::new(),
    }
}

/// Judges every candidate against the host and ranks them, best first. `candidates` are
/// (path, artifact) pairs of wheels.
pub fn judge(candidates: &[(String, &Artifact)], host: &Host, catalog: &Catalog) -> Vec<Judged> {
    let mut out = Vec::new();
    for (path, a) in candidates {
        let views = variant_views(a);
        if views.is_empty() {
            out.push(judge_one(path, a, None, host, catalog));
            continue;
        }
        // A package that loads one of its per-CUDA libraries (bitsandbytes'
        // libbitsandbytes_cuda126.so …) runs here if one of them does: judged by the best.
        let n = views.len();
        let best = views
            .into_iter()
            .map(|(variant, cuda, view)| {
                let mut j = judge_one(path, &view, Some(&cuda), host, catalog);
                j.build.from = format!(
                    "library {variant}: of its {n} per-CUDA libraries, the package loads one at \
                     run time (by the CUDA it finds)"
                );
                j
            })
            .min_by_key(|j| sort_key(j, host))
            .expect("views is not empty");
        let mut best = best;
        best.build.from.push_str(if rejected(&best, host) {
            ", and none runs here: this one comes nearest"
        } else {
            ", and this one runs best here"
        });
        out.push(best);
    }
    rank(&mut out, host);
    out
}

/// For a package with per-CUDA libraries (two or more files named alike but for a `cudaNNN`
/// part), one view per such library: the artifact with that library and its other files, no
/// other of the group; with the library's path and the CUDA release its name says. Empty
/// without such a group.
fn variant_views(a: &Artifact) -> Vec<(String, String, Artifact)> {
    // By their names (`libbitsandbytes_cuda126.so` in group `libbitsandbytes_cuda*.so`), as the
    // load analysis tells variants apart, so a read that saw no Python source finds them too:
    // the largest group of two or more.
    let mut groups: std::collections::BTreeMap<String, Vec<(&str, String)>> = Default::default();
    for e in &a.elf_files {
        if let Some(v) = crate::loads::variant_name(&e.path) {
            groups
                .entry(v.key(&e.path))
                .or_default()
                .push((e.path.as_str(), v.cuda));
        }
    }
    let Some(variants) = groups
        .into_values()
        .filter(|g| g.len() >= 2)
        .max_by_key(|g| g.len())
    else {
        return Vec::new();
    };
    let variants: Vec<(&str, &str)> = variants.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let is_other_variant =
        |path: &str, keep: &str| path != keep && variants.iter().any(|(p, _)| *p == path);
    variants
        .iter()
        .map(|(keep, cuda)| {
            let mut view = a.clone();
            view.elf_files.retain(|e| !is_other_variant(&e.path, keep));
            view.cuda_needed
                .retain(|n| n.needed_by.iter().any(|b| !is_other_variant(b, keep)));
            // The device code's driver floor is the library's own (the artifact's is that of
            // its oldest variant).
            view.device.min_driver = a
                .variants
                .iter()
                .find(|v| v.path == *keep)
                .and_then(|v| v.min_driver.clone());
            (keep.to_string(), cuda.to_string(), view)
        })
        .collect()
}

/// One candidate's judgement; `variant_cuda`, for a view of one per-CUDA library, is the CUDA
/// release its name says (its major counts among those the driver must run, even when its
/// dependencies were not read).
fn judge_one(
    path: &str,
    a: &Artifact,
    variant_cuda: Option<&str>,
    host: &Host,
    catalog: &Catalog,
) -> Judged {
    let file = path.rsplit('/').next().unwrap_or(path).to_string();
    let name = cudist_wheel::WheelName::parse(&file);
    let (distribution, version) = name
        .as_ref()
        .map(|n| (n.distribution.clone(), n.version.clone()))
        .unwrap_or_else(|| (file.clone(), String::new()));
    let mut build = build_of(&distribution, &version, a, catalog);
    let variant_major = variant_cuda.and_then(|c| c.split('.').next()?.parse::<u32>().ok());
    if let Some(c) = variant_cuda {
        build.kind = "cuda".into();
        build.version = Some(c.to_string());
    }
    let mut install_problems = install_problems(&file, host);
    if let (Some(rp), Some(py)) = (
        a.wheel.as_ref().and_then(|w| w.requires_python.as_deref()),
        host.python.as_deref(),
    ) {
        if !python_allows(rp, py) {
            install_problems.push(format!("it requires Python {rp}, the host has {py}"));
        }
    }
    // The driver: the floor of each CUDA major it links, and its device code's floor.
    let mut majors: Vec<u32> = a
        .cuda_needed
        .iter()
        .filter_map(|n| n.library.as_ref().map(|l| l.cuda_major))
        .chain(variant_major)
        .collect();
    majors.sort();
    majors.dedup();
    let mut driver_problems = check_driver(&majors, host, catalog);
    if let (Some(have), Some(floor)) = (host.driver.as_deref(), &a.device.min_driver) {
        if driver_problems.is_empty()
            && driver_version_key(have) < driver_version_key(&floor.driver)
        {
            driver_problems.push(format!(
                "driver {have} is older than {} ({})",
                floor.driver, floor.reason
            ));
        }
    }
    if host.driver.is_none() && !host.gpus.is_empty() && build.kind == "cuda" {
        driver_problems.push("no NVIDIA driver".into());
    }
    // Each GPU: the worst answer over the files with device code.
    let mut gpus: Vec<GpuFit> = host
        .gpus
        .iter()
        .map(|g| GpuFit {
            gpu: format!(
                "{} (sm_{})",
                g.name.clone().unwrap_or_else(|| "GPU".into()),
                g.sm
            ),
            status: "no-device-code".into(),
            detail: "no file carries device code".into(),
        })
        .collect();
    // Per GPU: how many files give the worst answer, and the first of them.
    let mut worst_count = vec![0usize; gpus.len()];
    let mut with_code = 0;
    for e in &a.elf_files {
        let entries: Vec<_> = e
            .device_code
            .iter()
            .filter(|d| d.section == SectionKind::NvFatbin)
            .cloned()
            .collect();
        if entries.is_empty() {
            continue;
        }
        with_code += 1;
        for ((fit, n), r) in gpus
            .iter_mut()
            .zip(&mut worst_count)
            .zip(check_gpus(&entries, host, catalog))
        {
            if fit.status == "no-device-code" || rank_status(r.status) > rank_status(&fit.status) {
                fit.status = r.status.to_string();
                fit.detail = format!("{}: {}", e.path, r.detail);
                *n = 1;
            } else if r.status == fit.status {
                *n += 1;
            }
        }
    }
    for (fit, n) in gpus.iter_mut().zip(worst_count) {
        if fit.status == "cubin" {
            fit.detail = format!(
                "a native cubin in each of its {with_code} file(s) with device code ({})",
                fit.detail
            );
        } else if n > 1 {
            fit.detail = format!("{} (and {} more file(s) alike)", fit.detail, n - 1);
        }
    }
    Judged {
        file,
        path: path.to_string(),
        distribution,
        version,
        build,
        size: a.size,
        install_problems,
        driver_problems,
        cpu_problems: cpu_problems(a, host),
        gpus,
        rank: 0,
        outcome: String::new(),
        reasons: Vec::new(),
        read: "whole".into(),
        bytes_received: 0,
        extra: None,
        parts: Vec::new(),
    }
}

/// The files of `a` that need a higher x86-64 level than the host's CPU has, in one line per
/// level (on an x86-64 host whose level is known).
fn cpu_problems(a: &Artifact, host: &Host) -> Vec<String> {
    let Some(have) = host.cpu.as_ref().and_then(|c| c.x86_64_level) else {
        return Vec::new();
    };
    if host.arch.as_deref().is_some_and(|x| x != "x86_64") {
        return Vec::new();
    }
    let mut by_level: std::collections::BTreeMap<u8, Vec<&str>> = Default::default();
    for e in &a.elf_files {
        let need = e
            .abi
            .isa_level
            .as_deref()
            .and_then(|l| l.strip_prefix("x86_64_v"))
            .and_then(|n| n.parse::<u8>().ok());
        if let Some(n) = need.filter(|&n| n > have) {
            by_level.entry(n).or_default().push(&e.path);
        }
    }
    by_level
        .into_iter()
        .map(|(n, files)| {
            format!(
                "{} file(s) need x86-64-v{n} instructions (their GNU property note: {}{}), this \
                 CPU is x86-64-v{have}: ld.so refuses to load them (\"CPU ISA level is lower \
                 than required\")",
                files.len(),
                files[0],
                if files.len() > 1 { ", …" } else { "" }
            )
        })
        .collect()
}

/// Whether the device code seen so far in one file settles that file's judgement, so a reader
/// fetching it by range requests can stop: every NVIDIA GPU of the host has a cubin for exactly
/// its SM (the runtime's first choice: no later entry can do better), or, on a host without
/// NVIDIA GPUs, there is device code at all.
pub fn settled(entries: &[crate::model::DeviceEntry], host: &Host) -> bool {
    let mut code = entries
        .iter()
        .filter(|e| e.section == SectionKind::NvFatbin)
        .peekable();
    if host.gpus.is_empty() {
        return code.peek().is_some();
    }
    let cubins: Vec<u32> = code
        .filter(|e| e.kind == cudist_fatbin::EntryKind::Cubin)
        .map(|e| e.sm)
        .collect();
    host.gpus.iter().all(|g| cubins.contains(&g.sm))
}

/// The best a candidate not read yet could do on the host, from its file name alone: its build
/// from its local label or name, no install or driver problem, a native cubin on every GPU, the
/// download `size` (0 when unknown). None when its name does not say its build, so only reading
/// it can tell.
pub fn optimistic(file: &str, size: u64, host: &Host) -> Option<Judged> {
    let n = cudist_wheel::WheelName::parse(file)?;
    let build = build_from_name(&n.distribution, &n.version)?;
    let gpus = host
        .gpus
        .iter()
        .map(|g| GpuFit {
            gpu: format!("sm_{}", g.sm),
            status: "cubin".into(),
            detail: String::new(),
        })
        .collect();
    Some(Judged {
        file: file.to_string(),
        path: String::new(),
        distribution: n.distribution,
        version: n.version,
        build,
        size,
        install_problems: Vec::new(),
        driver_problems: Vec::new(),
        cpu_problems: Vec::new(),
        gpus,
        rank: 0,
        outcome: String::new(),
        reasons: Vec::new(),
        read: "none".into(),
        bytes_received: 0,
        extra: None,
        parts: Vec::new(),
    })
}

/// Where a judged candidate sorts on the host: smaller is better ([`judge`]'s order).
pub fn sort_key(j: &Judged, host: &Host) -> impl Ord {
    let nvidia = !host.gpus.is_empty();
    let amd = !host.amd_gpus.is_empty();
    let worst = worst_gpu(j);
    let cuda_version: Vec<u32> = j
        .build
        .version
        .as_deref()
        .map(|v| v.split('.').filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default();
    // What fits the machine's GPUs: 0 best.
    let fits: u8 = match (j.build.kind.as_str(), nvidia, amd) {
        ("cuda", true, _) => worst.min(2),
        ("rocm", _, true) => 0,
        ("cpu", false, false) => 0,
        ("cpu", _, _) => 5,
        ("unknown", _, _) => 6,
        _ => 7,
    };
    (
        // Whatever else it offers, a candidate that fails here ranks below one that works (a
        // GPU build with no kernel image for the GPU below the CPU build).
        rejected(j, host),
        !j.install_problems.is_empty(),
        !(j.driver_problems.is_empty() && j.cpu_problems.is_empty()),
        fits,
        Reverse(cuda_version),
        j.size,
    )
}

/// The worst GPU verdict of a candidate ([`rank_status`]; 2 without GPUs).
fn worst_gpu(j: &Judged) -> u8 {
    j.gpus
        .iter()
        .map(|g| rank_status(&g.status))
        .max()
        .unwrap_or(2)
}

/// Whether a candidate fails on the host: it does not install, its driver or CPU cannot run it,
/// or (a CUDA build on an NVIDIA machine) a GPU has no kernel it can run.
fn rejected(j: &Judged, host: &Host) -> bool {
    !j.install_problems.is_empty()
        || !j.driver_problems.is_empty()
        || !j.cpu_problems.is_empty()
        || (!host.gpus.is_empty() && j.build.kind == "cuda" && worst_gpu(j) >= 3)
}

/// A candidate left unread because it cannot rank above `best`, which was read: judged by its
/// file name, with why.
pub fn judged_unread(file: &str, url: &str, best: &Judged) -> Judged {
    let mut j = judged_by_name(
        file,
        url,
        vec![format!(
            "not read: at best{} it ranks below {}, which was read",
            at_best(best),
            best.file
        )],
    );
    j.outcome = "unread".into();
    j
}

/// What "at best" means for the host `best` was judged for: a native cubin on every GPU, where
/// it has NVIDIA GPUs.
fn at_best(best: &Judged) -> &'static str {
    if best.gpus.is_empty() {
        ""
    } else {
        " (a native cubin on every GPU)"
    }
}

/// Orders the judged candidates and says why (their `reasons` are written anew).
pub fn rank(all: &mut [Judged], host: &Host) {
    let nvidia = !host.gpus.is_empty();
    let amd = !host.amd_gpus.is_empty();
    let fits = |j: &Judged| -> u8 {
        match (j.build.kind.as_str(), nvidia, amd) {
            ("cuda", true, _) => worst_gpu(j).min(2),
            ("rocm", _, true) => 0,
            ("cpu", false, false) => 0,
            ("cpu", _, _) => 5,
            ("unknown", _, _) => 6,
            _ => 7,
        }
    };
    all.sort_by_cached_key(|j| sort_key(j, host));
    for (i, j) in all.iter_mut().enumerate() {
        j.rank = i + 1;
        let mut reasons = Vec::new();
        reasons.extend(
            j.install_problems
                .iter()
                .map(|p| format!("does not install here: {p}")),
        );
        reasons.extend(j.driver_problems.iter().cloned());
        reasons.extend(j.cpu_problems.iter().cloned());
        let build = match (&j.build.kind[..], &j.build.version) {
            ("cuda", Some(v)) => format!("a CUDA {v} build"),
            ("cuda", None) => "a CUDA build".into(),
            ("rocm", _) => "a ROCm build".into(),
            ("cpu", _) => "a CPU build".into(),
            _ => "a build of unknown kind".into(),
        };
        let f = fits(j);
        let outcome = if rejected(j, host) {
            "rejected"
        } else if nvidia && j.build.kind == "cuda" {
            match worst_gpu(j) {
                1 => "jit",
                _ => "works",
            }
        } else if f == 0 {
            "works"
        } else {
            "no-gpu-use"
        };
        match (nvidia, amd, j.build.kind.as_str()) {
            (true, _, "cuda") => {
                for g in &j.gpus {
                    reasons.push(format!("{}: {} — {}", g.gpu, g.status, g.detail));
                }
            }
            (true, _, _) => {
                reasons.push(format!("{build}: it does not use the host's NVIDIA GPUs"))
            }
            (false, true, "rocm") => reasons.push(format!(
                "{build} for the host's AMD GPUs ({}); cudist does not read ROCm device code",
                host.amd_gpus
                    .iter()
                    .map(|g| g.gfx.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (false, true, _) => reasons.push(format!(
                "{build}: the host's GPUs are AMD ({}); a ROCm build is the one that uses them",
                host.amd_gpus
                    .iter()
                    .map(|g| g.gfx.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (false, false, "cpu") => reasons.push(format!("{build}: the host has no GPU")),
            (false, false, _) => reasons.push(format!(
                "{build}: the host has no GPU for it to use (it may still import)"
            )),
        }
        reasons.push(format!("{build} (from its {})", j.build.from));
        if let Some(d) = &j.build.disagrees {
            reasons.push(format!("warning: {d}"));
        }
        j.outcome = if i == 0 && outcome != "rejected" {
            "best".into()
        } else {
            outcome.into()
        };
        j.reasons = reasons;
    }
}

/// A build a package offers through an extra (`jax[cuda12]`, `jax[cpu]`): the device code is in
/// the packages the extra pulls in (`jax-cuda12-plugin`, and its `jax-cuda12-pjrt`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraBuild {
    /// The extra, normalised (`cuda12`, `cuda12-local`, `rocm7-local`).
    pub extra: String,
    /// The build its name says, or, for a plain `cuda`, its packages' names.
    pub build: Build,
    /// The packages it pulls in that are builds of the same family (`jax-cuda12-plugin`), whose
    /// own such requirements are followed too ([`build_parts`]).
    pub parts: Vec<String>,
}

/// The build an extra's name says: `cpu`; `cuda12`, `cuda12-local`, `cu126`; `rocm7-local`.
fn extra_build(extra: &str) -> Option<(String, Option<String>)> {
    let head = extra.split(['-', '_']).next().unwrap_or(extra);
    if head == "cpu" {
        return Some(("cpu".into(), None));
    }
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if let Some(d) = head.strip_prefix("cuda") {
        return (d.is_empty() || digits(d)).then(|| ("cuda".into(), digits(d).then(|| d.into())));
    }
    if let Some(d) = head
        .strip_prefix("cu")
        .filter(|d| digits(d) && d.len() >= 2)
    {
        let (major, minor) = d.split_at(2.min(d.len()));
        let v = if minor.is_empty() {
            major.to_string()
        } else {
            format!("{major}.{minor}")
        };
        return Some(("cuda".into(), Some(v)));
    }
    if let Some(d) = head.strip_prefix("rocm") {
        return (d.is_empty() || digits(d)).then(|| ("rocm".into(), digits(d).then(|| d.into())));
    }
    None
}

/// The requirements of `requires_dist` that are builds of `distribution`'s family: a name with a
/// build part (`-cuda12-`, `-cu12`, `-rocm7-`) whose family extends the package's
/// (`jax-cuda12-plugin` and `jax-cuda12-pjrt` for `jax`; not `nvidia-cublas-cu12`, a CUDA
/// library), under `extra` (or unconditional, for `None`). For what a part pulls in, give the
/// package's name, not the part's.
pub fn build_parts(
    distribution: &str,
    requires_dist: &[String],
    extra: Option<&str>,
) -> Vec<String> {
    let base = family(distribution);
    let mut out: Vec<String> = requires_dist
        .iter()
        .filter_map(|r| crate::requirements::ReqName::parse(r))
        .filter(|r| r.on_linux && r.in_extra.as_deref() == extra)
        .filter(|r| family(&r.name) != r.name && family(&r.name).starts_with(&base))
        .map(|r| r.name)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The builds a package offers as extras, from its `Requires-Dist` lines (`Requires-Dist:
/// jax-cuda12-plugin[with-cuda]; extra == "cuda12"`).
pub fn extra_builds(distribution: &str, requires_dist: &[String]) -> Vec<ExtraBuild> {
    let mut extras: Vec<String> = requires_dist
        .iter()
        .filter_map(|r| crate::requirements::ReqName::parse(r)?.in_extra)
        .collect();
    // An extra that requires nothing (`cpu`) appears only as Provides-Extra, which is not kept:
    // the package itself is that build. Extras that pull in the same packages (`cuda`,
    // `cuda12`, `cuda12-local`) are one build, named by the plainest name that says its CUDA.
    extras.sort_by_key(|e| {
        (
            e.contains(['-', '_']),
            !e.bytes().any(|b| b.is_ascii_digit()),
            e.clone(),
        )
    });
    extras.dedup();
    let mut out = Vec::new();
    for extra in extras {
        let Some((kind, version)) = extra_build(&extra) else {
            continue;
        };
        let parts = build_parts(distribution, requires_dist, Some(&extra));
        // A plain `cuda` extra: the major from its packages' names.
        let version = version.or_else(|| {
            parts.iter().find_map(|p| {
                p.split('-').find_map(|x| match name_part(x) {
                    Some(NamePart::Cuda(m)) => Some(m.to_string()),
                    _ => None,
                })
            })
        });
        if kind != "cpu" && parts.is_empty() || out.iter().any(|b: &ExtraBuild| b.parts == parts) {
            continue;
        }
        out.push(ExtraBuild {
            build: Build {
                kind,
                version,
                from: format!("extra [{extra}]"),
                disagrees: None,
            },
            extra,
            parts,
        });
    }
    out
}

/// Judges a build offered as an extra: the package's own wheel (`base`) with, for each package
/// the extra pulls in, the best of that package's wheels for the host (`parts`: each judged, with
/// the build packages its own requirements pull in, [`build_parts`]). It installs if all of them
/// do, the driver and CPU must run all of them, and each GPU gets the worst answer over them. A
/// package of the extra with no wheel at all is an install problem.
pub fn judge_extra(
    base: &Judged,
    extra: &ExtraBuild,
    parts: &[(Judged, Vec<String>)],
    host: &Host,
) -> Judged {
    if !uses_gpus_of(&extra.build, host) {
        // Its packages were not read: a build for GPUs the host does not have.
        return as_extra(base, extra);
    }
    let mut j = as_extra(base, extra);
    j.gpus.iter_mut().for_each(|g| {
        g.status = "no-device-code".into();
        g.detail = "no package of the extra carries device code".into();
    });
    let wanted = wanted_parts(extra, parts);
    for name in wanted {
        // The best for the host; among wheels ruled out by name, one for this platform first
        // (what rules it out then is what matters).
        let best = parts
            .iter()
            .map(|(p, _)| p)
            .filter(|p| crate::requirements::normalise_dist(&p.distribution) == name)
            .min_by_key(|p| {
                let elsewhere = p.read == "none"
                    && p.reasons
                        .iter()
                        .any(|r| r.starts_with("does not install here"));
                (elsewhere, sort_key(p, host))
            });
        let Some(p) = best else {
            j.install_problems.push(format!(
                "{name}, which the extra pulls in, has no wheel here"
            ));
            continue;
        };
        j.parts.push(p.file.clone());
        j.size += p.size;
        j.bytes_received += p.bytes_received;
        let tagged = |v: &[String]| {
            v.iter()
                .map(|x| format!("{}: {x}", p.file))
                .collect::<Vec<_>>()
        };
        if p.read == "none" && p.outcome == "rejected" {
            // Ruled out by its file name (its reasons say what: tags, or the CUDA it names), so
            // its device code was never read.
            j.driver_problems.extend(tagged(&p.reasons));
            for g in j.gpus.iter_mut().filter(|g| g.status == "no-device-code") {
                g.detail = format!("{} was ruled out by its name and not read", p.file);
            }
            continue;
        }
        j.install_problems.extend(tagged(&p.install_problems));
        j.driver_problems.extend(tagged(&p.driver_problems));
        j.cpu_problems.extend(tagged(&p.cpu_problems));
        for (g, pg) in j.gpus.iter_mut().zip(&p.gpus) {
            if pg.status != "no-device-code"
                && (g.status == "no-device-code"
                    || rank_status(&pg.status) > rank_status(&g.status))
            {
                g.status = pg.status.clone();
                g.detail = format!("{}: {}", p.file, pg.detail);
            }
        }
    }
    j
}

/// The package's judgement as the candidate `package[extra]`, of the extra's build.
fn as_extra(base: &Judged, extra: &ExtraBuild) -> Judged {
    let mut j = base.clone();
    j.extra = Some(extra.extra.clone());
    j.build = extra.build.clone();
    j.file = format!("{}[{}]", base.file, extra.extra);
    j
}

/// The best an extra could do before its packages are read: the package's judgement with the
/// extra's build, a native cubin on every GPU, and the driver floor of the CUDA its name says.
pub fn optimistic_extra(
    base: &Judged,
    extra: &ExtraBuild,
    host: &Host,
    catalog: &Catalog,
) -> Judged {
    let mut j = as_extra(base, extra);
    for g in &mut j.gpus {
        g.status = "cubin".into();
    }
    let major = extra
        .build
        .version
        .as_deref()
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
    j.driver_problems = major.map_or_else(Vec::new, |m| check_driver(&[m], host, catalog));
    j
}

/// An extra whose packages were not read because even at its best (`optimistic`, from
/// [`optimistic_extra`]) it cannot rank above `best`, which was: what its name already says
/// against it (the driver its CUDA needs), and why it was not read.
pub fn extra_unread(
    base: &Judged,
    extra: &ExtraBuild,
    best: &Judged,
    optimistic: &Judged,
) -> Judged {
    let mut j = as_extra(base, extra);
    j.outcome = "unread".into();
    // Nothing of it was judged.
    j.gpus.clear();
    j.read = "none".into();
    j.bytes_received = 0;
    j.driver_problems = optimistic.driver_problems.clone();
    j.reasons = optimistic.driver_problems.clone();
    j.reasons.push(format!(
        "its packages were not read: at best{} it ranks below {}, which was read",
        at_best(optimistic),
        best.file
    ));
    j
}

/// Whether a build is for GPUs the host has: a CUDA build on a host with NVIDIA GPUs, a ROCm
/// build on one with AMD GPUs; a CPU build always. The packages of an extra that is not are not
/// read.
pub fn uses_gpus_of(build: &Build, host: &Host) -> bool {
    match build.kind.as_str() {
        "cuda" => !host.gpus.is_empty(),
        "rocm" => !host.amd_gpus.is_empty(),
        _ => true,
    }
}

/// The packages an extra pulls in, its own and theirs (`jax-cuda12-plugin` pulls in
/// `jax-cuda12-pjrt`), as far as the judged parts say.
fn wanted_parts(extra: &ExtraBuild, parts: &[(Judged, Vec<String>)]) -> Vec<String> {
    let mut wanted = extra.parts.clone();
    let mut i = 0;
    while i < wanted.len() && wanted.len() < 16 {
        let name = wanted[i].clone();
        for (_, theirs) in parts
            .iter()
            .filter(|(p, _)| crate::requirements::normalise_dist(&p.distribution) == name)
        {
            for more in theirs {
                if !wanted.contains(more) {
                    wanted.push(more.clone());
                }
            }
        }
        i += 1;
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_tags_follow_pip() {
        assert!(python_ok("cp311", "cp311", 11));
        assert!(!python_ok("cp312", "cp312", 11));
        assert!(python_ok("cp39", "abi3", 11) && !python_ok("cp312", "abi3", 11));
        assert!(python_ok("py3", "none", 11) && python_ok("py2.py3", "none", 11));
        assert!(!python_ok("cp310", "cp310", 11));
    }

    #[test]
    fn requires_python_as_pip_reads_it() {
        assert!(python_allows(">=3.10", "3.11"));
        assert!(!python_allows(">=3.12", "3.11"));
        assert!(python_allows(">3.11", "3.11")); // 3.11.1 and later
        assert!(!python_allows("<3.11", "3.11"));
        assert!(python_allows(">=3.9,!=3.10.*", "3.11"));
        assert!(!python_allows(">=3.9,!=3.11.*", "3.11"));
        assert!(python_allows("not a specifier", "3.11"));
    }

    #[test]
    fn releases_as_pip_takes_them() {
        let files = [
            ("1.9", false),
            ("1.9.post1", false),
            ("2.0.dev3", false),
            ("2.1+cu126", true),
            ("2.1+cu130", true),
            ("1.9.post1+cu126", false),
        ];
        // The newest final that is not yanked, with its local-label builds.
        assert_eq!(pip_release(&files, ""), [1, 5]);
        // A yanked release when pinned exactly; a pre-release when named.
        assert_eq!(pip_release(&files, "==2.1"), [3, 4]);
        assert!(pip_release(&files, ">2.0").is_empty());
        assert_eq!(pip_release(&files, ">=2.0.dev1"), [2]);
        // Only pre-releases: the newest of them.
        assert_eq!(pip_release(&[("3.0a1", false), ("3.0a2", false)], ""), [1]);
        assert!(pip_release(&[("not a version", false)], "").is_empty());
    }

    #[test]
    fn families_drop_the_build_parts() {
        assert_eq!(family("cupy-cuda12x"), "cupy");
        assert_eq!(family("cupy_cuda13x"), "cupy");
        assert_eq!(family("nvidia-cublas-cu12"), "nvidia-cublas");
        assert_eq!(family("torch"), "torch");
        assert_eq!(family("faiss-gpu-cu12"), "faiss-gpu");
        assert_eq!(family("vllm-rocm"), "vllm");
        assert_eq!(family("jax-cuda12-plugin"), "jax-plugin");
        assert_eq!(family("jax_cuda13_pjrt"), "jax-pjrt");
    }

    #[test]
    fn platform_tags_follow_pip() {
        let g = Some((2, 31));
        assert_eq!(platform_problem("manylinux2014_x86_64", "x86_64", g), None);
        assert_eq!(platform_problem("manylinux_2_28_x86_64", "x86_64", g), None);
        assert!(platform_problem("manylinux_2_34_x86_64", "x86_64", g)
            .unwrap()
            .contains("glibc 2.34"));
        assert!(platform_problem("manylinux_2_28_aarch64", "x86_64", g)
            .unwrap()
            .contains("aarch64"));
        assert_eq!(
            platform_problem("manylinux_2_34_x86_64.manylinux_2_17_x86_64", "x86_64", g),
            None
        );
        assert_eq!(platform_problem("linux_x86_64", "x86_64", g), None);
        assert_eq!(platform_problem("any", "x86_64", None), None);
        assert!(platform_problem("macosx_11_0_arm64", "x86_64", g).is_some());
    }
}

/// Wheel-variant properties (WheelNext's proposal; `variantlib` 0.2.2 reads them): what a machine
/// supports, as NVIDIA's provider plugin reports it, and what a wheel's content needs.
///
/// The names and the host's value lists follow `nvidia-variant-provider` 0.0.2
/// (github.com/wheelnext/nvidia-variant-provider, `nvidia_variant_provider/plugin.py` at commit
/// 2ab96595): namespace `nvidia`; `cuda_version_lower_bound` (values `12.9`, `12`: the driver's
/// CUDA, down to 11.0), `cuda_version_upper_bound` (excluded bounds above it, up to 15.20) and
/// `sm_arch` (`90_real`, `80_virtual`: for the highest GPU, its major's real SMs up to its own,
/// then the major's `0_virtual`). The plugin is not on PyPI; docs/select.md says which version
/// this follows.
pub mod variants {
    use super::*;

    /// The namespace of NVIDIA's provider.
    pub const NAMESPACE: &str = "nvidia";
    /// The namespace of the x86-64 provider (`provider-variant-x86-64`), whose `level` feature
    /// cudist reports: `v4` … `v1`, the highest the CPU has first.
    pub const X86_64: &str = "x86_64";
    /// The highest level that provider knows (0.0.1.post2: `max_known_level = 4`).
    const X86_64_MAX_LEVEL: u8 = 4;
    const UMD_MAJORS: std::ops::RangeInclusive<u32> = 11..=15;
    const UMD_MAX_MINOR: u32 = 20;

    fn prop(feature: &str, value: String) -> String {
        format!("{NAMESPACE} :: {feature} :: {value}")
    }

    /// The properties this host supports: NVIDIA's, in its plugin's priority order (nothing
    /// without a driver: the plugin reports nothing then), then the x86-64 level's
    /// ([`x86_64_properties`]).
    pub fn host_properties(host: &Host, catalog: &Catalog) -> Vec<String> {
        let mut out = nvidia_properties(host, catalog);
        out.extend(x86_64_properties(host));
        out
    }

    /// The x86-64 provider's `level` values for this host's CPU, highest first. Like that
    /// provider, nothing for a CPU below x86-64-v2 (its generic microarchitecture is then plain
    /// `x86_64`, which names no level) or for another architecture.
    pub fn x86_64_properties(host: &Host) -> Vec<String> {
        if host.arch.as_deref().is_some_and(|a| a != "x86_64") {
            return Vec::new();
        }
        match host.cpu.as_ref().and_then(|c| c.x86_64_level) {
            Some(level) if level >= 2 => (1..=level.min(X86_64_MAX_LEVEL))
                .rev()
                .map(|l| format!("{X86_64} :: level :: v{l}"))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// NVIDIA's provider's properties for this host, in its priority order.
    fn nvidia_properties(host: &Host, catalog: &Catalog) -> Vec<String> {
        let Some(cuda) = host.cuda(catalog) else {
            return Vec::new();
        };
        let (major, minor) = (cuda.major, cuda.minor);
        if !UMD_MAJORS.contains(&major) || minor > UMD_MAX_MINOR {
            return Vec::new();
        }
        let mut out = Vec::new();
        let values = |maj: u32, minors: Vec<u32>, with_major: bool| -> Vec<String> {
            let mut v: Vec<String> = minors.iter().map(|m| format!("{maj}.{m}")).collect();
            if with_major {
                v.push(maj.to_string());
            }
            v
        };
        for maj in (*UMD_MAJORS.start()..=major).rev() {
            let top = if maj < major { UMD_MAX_MINOR } else { minor };
            for v in values(maj, (0..=top).rev().collect(), true) {
                out.push(prop("cuda_version_lower_bound", v));
            }
        }
        for maj in (major..=*UMD_MAJORS.end()).rev() {
            let (minors, with_major) = if maj > major {
                ((0..=UMD_MAX_MINOR).rev().collect(), true)
            } else {
                (((minor + 1)..=UMD_MAX_MINOR).rev().collect(), false)
            };
            for v in values(maj, minors, with_major) {
                out.push(prop("cuda_version_upper_bound", v));
            }
        }
        // The highest GPU; the plugin leaves out GPUs below 5.0.
        if let Some(sm) = host.gpus.iter().map(|g| g.sm).max().filter(|&s| s >= 50) {
            let (gmaj, gmin) = (sm / 10, sm % 10);
            for m in (0..=gmin).rev() {
                out.push(prop("sm_arch", format!("{gmaj}{m}_real")));
            }
            out.push(prop("sm_arch", format!("{gmaj}0_virtual")));
        }
        out
    }

    /// The properties a wheel's content needs: the CUDA major it links (as a lower bound), an
    /// `sm_arch` value per SM it has a cubin for (`_real`, `a`/`f` cubins under their SM's digits)
    /// or PTX for (`_virtual`), and the highest x86-64 level its files' GNU property notes
    /// require (from v2: v1 is every x86-64 CPU).
    pub fn content_properties(a: &Artifact, catalog: &Catalog) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((major, _)) = content_cuda(a, catalog) {
            out.push(prop("cuda_version_lower_bound", major.to_string()));
        }
        let mut sms = std::collections::BTreeSet::new();
        for d in a
            .elf_files
            .iter()
            .flat_map(|e| &e.device_code)
            .filter(|d| d.section == SectionKind::NvFatbin)
        {
            let kind = match d.kind {
                cudist_fatbin::EntryKind::Cubin => "real",
                cudist_fatbin::EntryKind::Ptx => "virtual",
                _ => continue,
            };
            sms.insert((kind, d.sm));
        }
        for (kind, sm) in sms.iter().rev() {
            out.push(prop("sm_arch", format!("{sm}_{kind}")));
        }
        let level = a
            .elf_files
            .iter()
            .filter_map(|e| e.abi.isa_level.as_deref()?.strip_prefix("x86_64_v"))
            .filter_map(|n| n.parse::<u8>().ok())
            .max();
        if let Some(n) = level.filter(|&n| n >= 2) {
            out.push(format!("{X86_64} :: level :: v{n}"));
        }
        out
    }

    /// The properties a wheel declares in `<dist-info>/variant.json` (`{"variants": {label:
    /// {namespace: {feature: [values]}}}}`), as `namespace :: feature :: value` lines.
    pub fn declared_properties(variant_json: &[u8]) -> Result<Vec<String>, String> {
        let v: serde_json::Value = serde_json::from_slice(variant_json)
            .map_err(|e| format!("variant.json is not JSON: {e}"))?;
        let variants = v
            .get("variants")
            .and_then(|x| x.as_object())
            .ok_or("variant.json has no `variants` object")?;
        let mut out = Vec::new();
        for desc in variants.values() {
            for (ns, features) in desc.as_object().ok_or("a variant is not an object")? {
                for (feature, values) in
                    features.as_object().ok_or("a namespace is not an object")?
                {
                    for value in values.as_array().ok_or("feature values are not a list")? {
                        let value = value.as_str().ok_or("a value is not a string")?;
                        out.push(format!("{ns} :: {feature} :: {value}"));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Where the declared properties and the content disagree, in words: a declared SM with no
    /// code for it, code for an SM left undeclared, a CUDA lower bound below what the content
    /// links, an x86-64 level below what the files require (a CPU of the declared level would
    /// install the wheel and ld.so refuse its files).
    pub fn disagreements(declared: &[String], content: &[String]) -> Vec<String> {
        let level = |list: &[String]| -> Vec<u8> {
            let head = format!("{X86_64} :: level :: v");
            list.iter()
                .filter_map(|p| p.strip_prefix(&head)?.parse().ok())
                .collect()
        };
        let mut out = Vec::new();
        if let Some(need) = level(content).into_iter().max() {
            let low = level(declared).into_iter().filter(|&d| d < need).min();
            if let Some(d) = low {
                out.push(format!(
                    "declares x86_64 level v{d}, but its files require x86-64-v{need} (their GNU \
                     property notes): ld.so refuses them on a v{d} CPU"
                ));
            }
        }
        out.extend(nvidia_disagreements(declared, content));
        out
    }

    fn nvidia_disagreements(declared: &[String], content: &[String]) -> Vec<String> {
        let of = |list: &[String], feature: &str| -> Vec<String> {
            let head = format!("{NAMESPACE} :: {feature} :: ");
            list.iter()
                .filter_map(|p| p.strip_prefix(&head).map(str::to_string))
                .collect()
        };
        let mut out = Vec::new();
        let (d_sm, c_sm) = (of(declared, "sm_arch"), of(content, "sm_arch"));
        for v in &d_sm {
            if !c_sm.contains(v) {
                out.push(format!("declares sm_arch {v}, but no file has code for it"));
            }
        }
        if !d_sm.is_empty() {
            for v in &c_sm {
                if !d_sm.contains(v) {
                    out.push(format!(
                        "has code for sm_arch {v}, which it does not declare"
                    ));
                }
            }
        }
        let major = |v: &String| v.split('.').next().and_then(|m| m.parse::<u32>().ok());
        let need = of(content, "cuda_version_lower_bound")
            .first()
            .and_then(major);
        for v in of(declared, "cuda_version_lower_bound") {
            if let (Some(d), Some(n)) = (major(&v), need) {
                if d < n {
                    out.push(format!(
                        "declares cuda_version_lower_bound {v}, but its content needs CUDA {n}"
                    ));
                }
            }
        }
        out
    }
}
