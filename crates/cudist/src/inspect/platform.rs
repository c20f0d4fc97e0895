//! Which manylinux policy an artifact satisfies, and what blocks the more compatible ones.
//!
//! The rules are auditwheel's (PEP 600): every symbol version an ELF file requires must be in the
//! policy's set for its family and architecture; every NEEDED library must be one the policy lets a
//! wheel expect from the system; no blacklisted symbol may be imported. cudist adds what auditwheel
//! cannot know: CUDA libraries that come from NVIDIA's wheels (or catalog-declared wheels), driver
//! libraries, and libraries carried by the artifact itself are not system libraries and do not
//! count against a policy.

use cudist_catalog::manylinux::{policies, Policy};

use super::model::{ElfReport, Needed, NeededClass, Platform, PolicyBlock};

/// The glibc dynamic loader: named in NEEDED by some files, always present, never grafted.
pub fn is_loader(soname: &str) -> bool {
    soname.starts_with("ld-linux-") || soname.starts_with("ld64.so.") || soname == "ld.so.1"
}

/// The first reason `policy` rejects `e`, if any. `extra_ok` accepts NEEDED entries the caller
/// knows are taken care of (repair: libraries it un-vendors).
fn reject(
    policy: &Policy,
    e: &ElfReport,
    arch: &str,
    extra_ok: &dyn Fn(&Needed) -> bool,
) -> Option<String> {
    if let Some(v) = e
        .symbol_versions
        .iter()
        .find(|v| !policy.allows_version(arch, v))
    {
        return Some(format!("requires symbol version {v}"));
    }
    if policy.priority == 0 {
        return None; // `linux`: no constraints
    }
    for n in e.needed.iter().filter(|n| !is_loader(&n.soname)) {
        let from_elsewhere = matches!(
            n.class,
            NeededClass::Toolkit | NeededClass::External | NeededClass::Driver
        ) || n.provided_in_artifact.is_some()
            || extra_ok(n);
        if !from_elsewhere && !policy.libraries.contains(&n.soname) {
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

/// Evaluates the ELF files (those `skip` does not exclude) against every policy.
pub fn evaluate<'a>(
    elfs: impl Iterator<Item = &'a ElfReport> + Clone,
    extra_ok: &dyn Fn(&Needed) -> bool,
) -> Platform {
    let arch = elfs.clone().next().map(|e| e.machine.clone());
    let Some(arch) = arch else {
        return Platform::default();
    };
    let mut blocked = Vec::new();
    for p in policies() {
        let failure = elfs
            .clone()
            .find_map(|e| reject(p, e, &arch, extra_ok).map(|r| (e.path.clone(), r)));
        match failure {
            None => {
                return Platform {
                    tags: p.tags(&arch),
                    policy: Some(p.name.clone()),
                    arch: Some(arch),
                    blocked,
                }
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
        blocked,
    }
}
