//! Which manylinux or musllinux policy an artifact satisfies, and what blocks the more compatible
//! ones.
//!
//! The rules are auditwheel's (PEP 600, PEP 656), so that a tag cudist writes is one auditwheel
//! agrees with (a test runs `auditwheel show` on auditwheel's own test wheels and compares):
//! - **the architecture** comes from the ELF header (machine, class, byte order, ARM EABI and
//!   float ABI) or the wheel's file name; ELF files of another architecture, or of none a policy
//!   covers (mips64, soft-float ARM), are left out, and a wheel with no file left is no platform
//!   wheel;
//! - **the C library** comes from the interpreter, else NEEDED (`libc.so.6` / `libc.musl-*`),
//!   else the file name; glibc wheels are judged against the manylinux policies that cover the
//!   architecture, musl wheels against the newest musllinux policy;
//! - every symbol version an ELF file requires must be in the policy's set for its family and
//!   architecture; every NEEDED library must be one the policy lets a wheel expect from the system;
//!   no strong (non-weak) import of a blacklisted symbol; no `PyFPE_jbuf`, no UCS2 Python 2
//!   extension, and no x86-64 level beyond the baseline (those only `linux` allows).
//!
//! cudist adds what auditwheel cannot know: CUDA libraries that come from NVIDIA's wheels (or
//! catalog-declared wheels; not those of releases before any wheel), driver libraries, and
//! libraries carried by the artifact itself, where a search path reaches them (as auditwheel's
//! lddtree finds them), are not system libraries and do not count against a policy.

use std::collections::{BTreeSet, HashMap};

use cudist_catalog::manylinux::{policies_for, Policy};
use cudist_elf::ElfFile;

use crate::model::{ElfAbi, ElfReport, Needed, NeededClass, Platform, PolicyBlock};

/// The dynamic loader: named in NEEDED by some files, always present, never grafted.
pub fn is_loader(soname: &str) -> bool {
    soname.starts_with("ld-linux-") || soname.starts_with("ld64.so.") || soname == "ld.so.1"
}

/// Whether `soname` is one of glibc's own libraries (the C library, its maths, threads, dynamic
/// linking, real-time, resolver and utility libraries, or its loader): what a glibc symbol
/// imported without a version comes from. musl's C library (`libc.musl-x86_64.so.1`) is not.
pub fn is_glibc_library(soname: &str) -> bool {
    is_loader(soname)
        || matches!(
            soname,
            "libc.so.6"
                | "libm.so.6"
                | "libpthread.so.0"
                | "libdl.so.2"
                | "librt.so.1"
                | "libresolv.so.2"
                | "libutil.so.1"
                | "libanl.so.1"
        )
}

/// What a wheel's file name says of its platform (`…-manylinux2014_aarch64.whl`,
/// `…-musllinux_1_2_x86_64.whl`, `…-linux_armv6l.whl`): the architecture, when it is one a policy
/// covers, and the C library, when the tag names one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTag {
    /// The architecture as tags name it (`aarch64`, `armv7l`), when a policy covers it.
    pub arch: Option<String>,
    /// `glibc` or `musl`, when the tag names a policy of one.
    pub libc: Option<String>,
}

/// The architectures platform tags name (PEP 600, 656).
const ARCHES: &[&str] = &[
    "x86_64",
    "i686",
    "aarch64",
    "armv7l",
    "ppc64le",
    "ppc64",
    "s390x",
    "riscv64",
    "loongarch64",
];

/// A manylinux tag (`manylinux_2_17_x86_64`, and PEP 513/571/599's aliases with their
/// architecture: `manylinux1_` is glibc 2.5, `manylinux2010_` 2.12, `manylinux2014_` 2.17) or
/// policy name (`manylinux_2_24`) read: the glibc it promises (none where `manylinux_X_Y` does
/// not parse) and the architecture it names (empty in a policy name). None for any other tag.
pub fn manylinux_tag(tag: &str) -> Option<(Option<(u32, u32)>, &str)> {
    for (alias, glibc) in [
        ("manylinux1_", (2, 5)),
        ("manylinux2010_", (2, 12)),
        ("manylinux2014_", (2, 17)),
    ] {
        if let Some(arch) = tag.strip_prefix(alias) {
            return Some((Some(glibc), arch));
        }
    }
    let mut parts = tag.strip_prefix("manylinux_")?.splitn(3, '_');
    let (x, y, arch) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
    let glibc = x
        .zip(y)
        .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)));
    Some((glibc, arch))
}

impl FileTag {
    /// Reads a wheel file name's platform tags; anything else (an ELF file's name) says nothing.
    pub fn of(file_name: &str) -> FileTag {
        let Some(w) = cudist_wheel::WheelName::parse(file_name) else {
            return FileTag::default();
        };
        let mut arches = Vec::new();
        let mut libcs = Vec::new();
        for tag in w.platform.split('.') {
            let (libc, arch) = if let Some(rest) = tag.strip_prefix("musllinux_") {
                (Some("musl"), rest.splitn(3, '_').nth(2))
            } else if let Some((_, arch)) = manylinux_tag(tag) {
                (Some("glibc"), Some(arch).filter(|a| !a.is_empty()))
            } else if let Some(rest) = tag.strip_prefix("android_") {
                (Some("android"), rest.split_once('_').map(|(_, a)| a))
            } else if let Some(arch) = tag.strip_prefix("linux_") {
                (None, Some(arch))
            } else {
                (None, None)
            };
            libcs.extend(libc);
            arches.extend(arch.map(|a| if a == "arm64_v8a" { "aarch64" } else { a }));
        }
        arches.dedup();
        libcs.dedup();
        FileTag {
            arch: match arches.as_slice() {
                [one] if ARCHES.contains(one) => Some(one.to_string()),
                _ => None,
            },
            libc: match libcs.as_slice() {
                [one] => Some(one.to_string()),
                _ => None,
            },
        }
    }
}

impl FileTag {
    /// Whether the file name's tag is a Linux one (`linux_*`, `manylinux*`, `musllinux*`) for an
    /// architecture a policy covers: not Android, iOS or macOS.
    pub fn is_linux(&self) -> bool {
        self.arch.is_some() && self.libc.as_deref() != Some("android")
    }
}

/// What decides one ELF file's platform tag besides its libraries and versions (auditwheel's
/// per-file readings). `path` is the file's path in the artifact (its name matters: module names
/// and the libc suffixes of extension modules).
pub fn elf_abi(path: &str, elf: &ElfFile) -> ElfAbi {
    let (arch, arch_error) = match elf.platform_arch() {
        Ok(a) => (Some(a.to_string()), None),
        Err(e) => (None, Some(e)),
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    let (libc, libc_error) = libc_of(elf, name);
    // `init<mod>` (2), `PyInit_<mod>` (3), `_cffi_pypyinit_<mod>` (2), defined as functions.
    let module = name.split('.').next().unwrap_or(name);
    let defines_func = |n: &str| {
        elf.dynamic_symbols
            .iter()
            .any(|s| s.defined && s.kind == 2 && s.name == n)
    };
    let python_extension = if defines_func(&format!("PyInit_{module}")) {
        Some(3)
    } else if defines_func(&format!("init{module}"))
        || defines_func(&format!("_cffi_pypyinit_{module}"))
    {
        Some(2)
    } else {
        None
    };
    let undefined = |pred: &dyn Fn(&cudist_elf::DynSymbol) -> bool| {
        elf.dynamic_symbols.iter().any(|s| !s.defined && pred(s))
    };
    let pyfpe = undefined(&|s| {
        matches!(
            s.name.as_str(),
            "PyFPE_jbuf" | "PyFPE_dummy" | "PyFPE_counter"
        ) && matches!(s.kind, 0 | 2)
    });
    let ucs2 = python_extension == Some(2)
        && undefined(&|s| s.kind == 2 && s.name.contains("PyUnicodeUCS2_"));
    let isa_level = match elf.x86_level() {
        Ok(l) => l.map(str::to_string),
        Err(e) => Some(e),
    };
    ElfAbi {
        arch,
        arch_error,
        libc,
        libc_error,
        isa_level,
        python_extension,
        pyfpe,
        ucs2,
    }
}

/// The C library a file is for, as auditwheel reads it: the interpreter (`ld-musl-*` is musl,
/// any other glibc), then NEEDED (`libc.musl-*`/`ld-musl-*`, `libc.so.6`/`ld-linux-*`/`ld64.so.*`),
/// then the extension-module suffix (`-linux-musl.so`; `-linux-gnu.so` only for CPython 3.11+,
/// since musl builds of older CPythons used the gnu suffix too).
fn libc_of(elf: &ElfFile, name: &str) -> (Option<String>, Option<String>) {
    let mut libc: Option<&str> = elf.interpreter.as_deref().map(|i| {
        let base = i.rsplit('/').next().unwrap_or(i);
        if base.starts_with("ld-musl-") {
            "musl"
        } else {
            "glibc"
        }
    });
    for n in &elf.needed {
        let this = if n.starts_with("libc.musl-") || n.starts_with("ld-musl-") {
            "musl"
        } else if n == "libc.so.6" || n.starts_with("ld-linux-") || n.starts_with("ld64.so.") {
            "glibc"
        } else {
            continue;
        };
        match libc {
            None => libc = Some(this),
            Some(l) if l != this => {
                return (
                    None,
                    Some(format!(
                        "it needs {n} ({this}) but its interpreter or other libraries are {l}'s"
                    )),
                )
            }
            _ => {}
        }
    }
    if libc.is_none() {
        if name.ends_with("-arm-linux-musleabihf.so") || name.ends_with("-linux-musl.so") {
            libc = Some("musl");
        } else if name.ends_with("-arm-linux-gnueabihf.so") || name.ends_with("-linux-gnu.so") {
            let stem = name.strip_suffix(".so").unwrap_or(name);
            let soabi = stem.rsplit('.').next().unwrap_or("");
            let mut parts = soabi.split('-');
            let cpython_311_plus = parts.next() == Some("cpython")
                && parts
                    .next()
                    .and_then(|v| v.strip_prefix('3'))
                    .and_then(|m| m.parse::<u32>().ok())
                    .is_some_and(|m| m >= 11);
            if cpython_311_plus {
                libc = Some("glibc");
            }
        }
    }
    (libc.map(str::to_string), None)
}

/// The files of each name (a SONAME or file name), wherever they are: a wheel may carry one per
/// CUDA major (`cu12/…/libnvbench.so`, `cu13/…/libnvbench.so`).
fn by_name<'a>(judged: &[&'a ElfReport]) -> HashMap<&'a str, Vec<&'a ElfReport>> {
    let mut out: HashMap<&str, Vec<&ElfReport>> = HashMap::new();
    for e in judged {
        let base = e.path.rsplit('/').next().unwrap_or_default();
        for name in e.soname.as_deref().into_iter().chain([base]) {
            out.entry(name).or_default().push(e);
        }
    }
    out
}

/// For each file, the directories of the artifact where a library it needs is found as auditwheel's
/// lddtree finds it: its own search path's, and those of the files that load it, up to the
/// extension module (a name one of them resolved is reused for the whole tree, as the loader
/// reuses a loaded SONAME; `DT_RPATH` is inherited too).
fn searched_dirs<'a>(
    judged: &[&'a ElfReport],
    of_name: &HashMap<&str, Vec<&'a ElfReport>>,
) -> HashMap<&'a str, BTreeSet<&'a str>> {
    let mut loaded_by: HashMap<&str, Vec<&ElfReport>> = HashMap::new();
    for e in judged {
        for n in &e.needed {
            for p in of_name.get(n.soname.as_str()).into_iter().flatten() {
                loaded_by.entry(p.path.as_str()).or_default().push(e);
            }
        }
    }
    let mut out = HashMap::new();
    for e in judged {
        let mut dirs: BTreeSet<&str> = BTreeSet::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut todo: Vec<&ElfReport> = vec![e];
        while let Some(f) = todo.pop() {
            if !seen.insert(f.path.as_str()) {
                continue;
            }
            dirs.extend(
                f.rpath
                    .iter()
                    .chain(&f.runpath)
                    .map(|s| s.expanded.trim_end_matches('/')),
            );
            todo.extend(loaded_by.get(f.path.as_str()).into_iter().flatten());
        }
        out.insert(e.path.as_str(), dirs);
    }
    out
}

/// The directory of an artifact path (`""` at its root).
fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The first reason `policy` rejects `e`, if any. `extra_ok` accepts NEEDED entries the caller
/// knows are taken care of (repair: libraries it un-vendors or grafts).
fn reject(
    policy: &Policy,
    e: &ElfReport,
    arch: &str,
    extra_ok: &dyn Fn(&Needed) -> bool,
    searched: &BTreeSet<&str>,
    of_name: &HashMap<&str, Vec<&ElfReport>>,
) -> Option<String> {
    if policy.priority == 0 {
        return None; // `linux`: no constraints
    }
    if let Some(v) = e
        .symbol_versions
        .iter()
        .find(|v| !policy.allows_version(arch, v))
    {
        return Some(format!("requires symbol version {v}"));
    }
    // A C-library symbol imported without a version needs the glibc that added it, though the
    // file's version requirements do not say so.
    if let Some(u) = e
        .unversioned_glibc
        .iter()
        .find(|u| !policy.allows_version(arch, &format!("GLIBC_{}", u.since)))
    {
        return Some(format!(
            "imports {} without a symbol version, a symbol glibc has only from {}",
            u.symbol, u.since
        ));
    }
    if e.abi.pyfpe {
        return Some(
            "imports PyFPE_jbuf: built for a Python configured --with-fpectl (PEP 513), which no \
             manylinux or musllinux policy allows"
                .into(),
        );
    }
    if e.abi.ucs2 {
        return Some(
            "is a Python 2 extension for a narrow-unicode (UCS2) Python, which no manylinux or \
             musllinux policy allows"
                .into(),
        );
    }
    if let Some(level) = &e.abi.isa_level {
        return Some(format!(
            "needs {level} instructions (its GNU property note), beyond the {arch} baseline every \
             manylinux and musllinux policy assumes"
        ));
    }
    // A library the artifact carries counts where the search path of this file, or of a file
    // that loads it ([`searched_dirs`]), reaches its directory, as auditwheel's lddtree finds it:
    // one only the package's Python loads first (sapien's `libOpenImageDenoise.so.2`, preloaded
    // from a directory no RPATH names) is, to the policy, a library expected from the system.
    let reached = |n: &Needed| {
        n.provided_in_artifact.as_deref().is_some_and(|p| {
            searched.contains(dir_of(p))
                || of_name
                    .get(n.soname.as_str())
                    .is_some_and(|fs| fs.iter().any(|f| searched.contains(dir_of(&f.path))))
        })
    };
    for n in e.needed.iter().filter(|n| !is_loader(&n.soname)) {
        let from_elsewhere = provided_elsewhere(n, extra_ok) || reached(n);
        if !from_elsewhere && !policy.allows_library(arch, &n.soname) {
            return Some(format!(
                "needs {}, which {} does not allow a wheel to expect from the system (it would have to be grafted)",
                n.soname, policy.name
            ));
        }
        if let Some(bad) = policy.blacklist.get(&n.soname) {
            if let Some(s) = e.blacklisted_imports.iter().find(|s| bad.contains(s)) {
                return Some(format!(
                    "imports {s} from {}, which {} forbids",
                    n.soname, policy.name
                ));
            }
        }
    }
    None
}

/// A library cudist counts as coming from outside the system's policy list: a CUDA library
/// (NVIDIA's wheels), the driver's, another GPU vendor's stack, or what the caller accepts (a
/// library of a Python package the files link).
fn provided_elsewhere(n: &Needed, extra_ok: &dyn Fn(&Needed) -> bool) -> bool {
    // A CUDA library of a release before any with wheels (CUDA 10) has no wheel to come from.
    let wheel_less = n.library.as_ref().is_some_and(|l| l.older_release);
    (matches!(
        n.class,
        NeededClass::Toolkit | NeededClass::External | NeededClass::Driver | NeededClass::Vendor
    ) && !wheel_less)
        || extra_ok(n)
}

/// Evaluates the ELF files against the policies of their architecture and C library. `extra_ok`
/// accepts NEEDED entries the caller takes care of; `tag` is what the wheel's file name says.
pub fn evaluate<'a>(
    elfs: impl Iterator<Item = &'a ElfReport>,
    extra_ok: &dyn Fn(&Needed) -> bool,
    tag: &FileTag,
) -> Platform {
    let elfs: Vec<&ElfReport> = elfs.collect();
    if elfs.is_empty() {
        return Platform::default();
    }
    let mut arch = tag.arch.clone();
    let mut libc = tag.libc.clone();
    let mut ignored = Vec::new();
    let mut judged: Vec<&ElfReport> = Vec::new();
    let mut error = None;
    for e in &elfs {
        let Some(a) = &e.abi.arch else {
            ignored.push(format!(
                "{}: {}",
                e.path,
                e.abi
                    .arch_error
                    .as_deref()
                    .unwrap_or("unknown architecture")
            ));
            continue;
        };
        match &arch {
            None => arch = Some(a.clone()),
            Some(w) if w != a => {
                ignored.push(format!("{}: {a}, not {w}", e.path));
                continue;
            }
            _ => {}
        }
        if let Some(why) = &e.abi.libc_error {
            error.get_or_insert_with(|| format!("{}: {why}", e.path));
            continue;
        }
        if let Some(l) = &e.abi.libc {
            match &libc {
                None => libc = Some(l.clone()),
                Some(w) if w != l => {
                    ignored.push(format!("{}: built for {l}, not {w}", e.path));
                    continue;
                }
                _ => {}
            }
        }
        if e.abi.python_extension.is_some() && libc.is_none() {
            error.get_or_insert_with(|| {
                format!(
                    "{}: a Python extension that names no C library (no interpreter, no libc in \
                     NEEDED, no -linux-gnu/-linux-musl suffix): glibc or musl cannot be told",
                    e.path
                )
            });
        }
        judged.push(e);
    }
    let Some(arch) = arch.filter(|_| !judged.is_empty()) else {
        return Platform {
            error: Some(format!(
                "not a platform wheel: no ELF file is for an architecture a manylinux or \
                 musllinux policy covers ({})",
                ignored.join("; ")
            )),
            ignored,
            ..Platform::default()
        };
    };
    if error.is_some() {
        return Platform {
            arch: Some(arch),
            libc,
            error,
            ignored,
            ..Platform::default()
        };
    }
    // Without any file saying (no interpreter, no libc in NEEDED), the C library of the machine
    // that builds CUDA wheels: glibc.
    let libc = libc.unwrap_or_else(|| "glibc".into());
    let mut blocked = Vec::new();
    let of_name = by_name(&judged);
    let searched = searched_dirs(&judged, &of_name);
    for p in policies_for(&libc, &arch) {
        let failure = judged.iter().find_map(|e| {
            let dirs = searched.get(e.path.as_str()).cloned().unwrap_or_default();
            reject(p, e, &arch, extra_ok, &dirs, &of_name).map(|r| (e.path.clone(), r))
        });
        match failure {
            None => {
                let mut auditwheel_excludes: Vec<String> = Vec::new();
                for n in judged.iter().flat_map(|e| e.needed.iter()) {
                    let elsewhere = provided_elsewhere(n, extra_ok)
                        && n.provided_in_artifact.is_none()
                        && !is_loader(&n.soname);
                    if elsewhere
                        && p.priority != 0
                        && !p.allows_library(&arch, &n.soname)
                        && !auditwheel_excludes.contains(&n.soname)
                    {
                        auditwheel_excludes.push(n.soname.clone());
                    }
                }
                auditwheel_excludes.sort();
                return Platform {
                    auditwheel_excludes,
                    tags: p.tags(&arch),
                    policy: Some(p.name.clone()),
                    arch: Some(arch),
                    libc: Some(libc),
                    error: None,
                    ignored,
                    blocked,
                };
            }
            Some((file, reason)) => blocked.push(PolicyBlock {
                policy: p.name.clone(),
                file,
                reason,
            }),
        }
    }
    // `linux` allows everything, so this is reached only without policy data.
    Platform {
        tags: vec![format!("linux_{arch}")],
        policy: Some("linux".into()),
        arch: Some(arch),
        libc: Some(libc),
        error: None,
        ignored,
        blocked,
        auditwheel_excludes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One reading of manylinux tags for the file-name tag, select's install check and
    /// inspect's mis-tag check: aliases with their architecture, `manylinux_X_Y` with or
    /// without one, an unparsable version kept as a manylinux tag of unknown glibc.
    #[test]
    fn manylinux_tags_read_once() {
        assert_eq!(
            manylinux_tag("manylinux1_x86_64"),
            Some((Some((2, 5)), "x86_64"))
        );
        assert_eq!(
            manylinux_tag("manylinux2014_aarch64"),
            Some((Some((2, 17)), "aarch64"))
        );
        assert_eq!(
            manylinux_tag("manylinux_2_28_x86_64"),
            Some((Some((2, 28)), "x86_64"))
        );
        assert_eq!(manylinux_tag("manylinux_2_24"), Some((Some((2, 24)), "")));
        assert_eq!(
            manylinux_tag("manylinux_x_y_x86_64"),
            Some((None, "x86_64"))
        );
        assert_eq!(manylinux_tag("manylinux2014"), None);
        assert_eq!(manylinux_tag("musllinux_1_2_x86_64"), None);
        assert_eq!(manylinux_tag("linux_x86_64"), None);
    }

    #[test]
    fn file_names_say_arch_and_libc() {
        let t = |n: &str| FileTag::of(n);
        assert_eq!(
            t("x-1.0-cp313-cp313-manylinux2014_aarch64.whl"),
            FileTag {
                arch: Some("aarch64".into()),
                libc: Some("glibc".into())
            }
        );
        assert_eq!(
            t("x-1.0-cp312-cp312-musllinux_1_2_x86_64.whl")
                .libc
                .as_deref(),
            Some("musl")
        );
        assert_eq!(
            t("x-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
            FileTag {
                arch: Some("x86_64".into()),
                libc: Some("glibc".into())
            }
        );
        // linux_ says the architecture only; one no policy covers says nothing.
        assert_eq!(
            t("x-1.0-cp313-cp313-linux_ppc64le.whl"),
            FileTag {
                arch: Some("ppc64le".into()),
                libc: None
            }
        );
        assert_eq!(t("x-1.0-cp312-cp312-linux_armv6l.whl").arch, None);
        assert_eq!(t("x-1.0-cp313-cp313-linux_mips64.whl").arch, None);
        assert_eq!(
            t("spam-0.1.0-cp313-cp313-android_24_arm64_v8a.whl"),
            FileTag {
                arch: Some("aarch64".into()),
                libc: Some("android".into())
            }
        );
        assert_eq!(t("libfoo.so"), FileTag::default());
    }
}
