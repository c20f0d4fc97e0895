//! manylinux (glibc, PEP 600) and musllinux (musl, PEP 656) policies: what a wheel may expect
//! from the system.
//!
//! The data (`data/manylinux.toml`) is generated from auditwheel's policy files by
//! `data/gen-manylinux.py` and parsed on first use (it is large, and only platform-tag decisions
//! need it). A policy covers an architecture when it lists symbol versions for it, which is how
//! each architecture gets its first policy (aarch64 at `manylinux_2_17`, riscv64 at
//! `manylinux_2_31`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// One policy, e.g. `manylinux_2_17` (alias `manylinux2014`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    /// `glibc` or `musl`; none for `linux`, which constrains nothing.
    #[serde(default)]
    pub libc: Option<String>,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Higher is more compatible (older systems); `linux` is 0.
    pub priority: u32,
    /// SONAMEs a wheel may expect the system to provide.
    #[serde(default)]
    pub libraries: Vec<String>,
    /// arch → symbol-version family (`GLIBC`, `GLIBCXX`, …) → allowed versions (`2.17`, …).
    #[serde(default)]
    pub symbol_versions: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// library → symbols a wheel must not import from it.
    #[serde(default)]
    pub blacklist: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub sources: Vec<String>,
}

impl Policy {
    /// The platform tags of this policy for an architecture: aliases first, then the name
    /// (`manylinux2014_x86_64`, `manylinux_2_17_x86_64`), as auditwheel writes them.
    pub fn tags(&self, arch: &str) -> Vec<String> {
        self.aliases
            .iter()
            .chain(std::iter::once(&self.name))
            .map(|n| format!("{n}_{arch}"))
            .collect()
    }

    /// Whether the policy covers `arch` (it lists symbol versions for it; `linux` covers all).
    pub fn covers(&self, arch: &str) -> bool {
        self.priority == 0 || self.symbol_versions.contains_key(arch)
    }

    /// Whether a required symbol version (`GLIBC_2.17`) is allowed on `arch`. Versions of
    /// families the policy does not govern on that architecture (`libcudart.so.12`, a library's
    /// own) are allowed, as auditwheel allows them.
    pub fn allows_version(&self, arch: &str, version: &str) -> bool {
        let Some((family, v)) = split_version(version) else {
            return true;
        };
        match self.symbol_versions.get(arch).and_then(|f| f.get(family)) {
            Some(allowed) => allowed.iter().any(|a| a == v),
            None => true,
        }
    }

    /// Whether a wheel may expect `soname` from the system on `arch`. musl's C library is listed
    /// as `libc.so` and is named per architecture (`libc.musl-x86_64.so.1`, `libc.musl-armv7.so.1`).
    pub fn allows_library(&self, arch: &str, soname: &str) -> bool {
        self.libraries.iter().any(|l| {
            if self.libc.as_deref() == Some("musl") && l == "libc.so" {
                Some(soname) == musl_libc(arch).as_deref()
            } else {
                l == soname
            }
        })
    }
}

/// Splits `GLIBCXX_3.4.21` into (`GLIBCXX`, `3.4.21`); `None` when the name has no `_<digit>`.
pub fn split_version(version: &str) -> Option<(&str, &str)> {
    let i = version.rfind('_')?;
    let (f, v) = (&version[..i], &version[i + 1..]);
    v.starts_with(|c: char| c.is_ascii_digit())
        .then_some((f, v))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[allow(dead_code)]
    schema: u32,
    manylinux: Vec<Policy>,
}

/// The SONAME of musl's C library on `arch` (`libc.musl-x86_64.so.1`).
pub fn musl_libc(arch: &str) -> Option<String> {
    let name = match arch {
        "x86_64" => "x86_64",
        "i686" => "x86",
        "aarch64" => "aarch64",
        "s390x" => "s390x",
        "ppc64le" => "ppc64le",
        "armv7l" => "armv7",
        "riscv64" => "riscv64",
        "loongarch64" => "loongarch64",
        _ => return None,
    };
    Some(format!("libc.musl-{name}.so.1"))
}

/// The policies a wheel of this C library and architecture is judged against, most compatible
/// first, ending with `linux`. For glibc, every manylinux policy that covers the architecture.
/// For musl, only the newest musllinux policy that covers it: musl has no symbol versions, so
/// nothing in a wheel says which musl it was built for; auditwheel takes the build machine's musl
/// (or, on a machine without musl, the newest it knows), and cudist does the same as the latter.
/// `--plat` chooses an older one.
pub fn policies_for(libc: &str, arch: &str) -> Vec<&'static Policy> {
    let mut out: Vec<&Policy> = policies()
        .iter()
        .filter(|p| p.libc.as_deref() == Some(libc) && p.covers(arch))
        .collect();
    if libc == "musl" {
        out = out
            .into_iter()
            .min_by_key(|p| p.priority)
            .into_iter()
            .collect();
    }
    out.extend(policies().iter().filter(|p| p.priority == 0));
    out
}

/// All policies, most compatible (highest priority) first.
pub fn policies() -> &'static [Policy] {
    static P: OnceLock<Vec<Policy>> = OnceLock::new();
    P.get_or_init(|| {
        let f: File = toml::from_str(include_str!("../data/manylinux.toml"))
            .expect("built-in manylinux policy data is valid (checked by tests)");
        let mut v = f.manylinux;
        v.sort_by_key(|p| std::cmp::Reverse(p.priority));
        v
    })
}

/// The policy with this name or alias.
pub fn policy(name: &str) -> Option<&'static Policy> {
    policies()
        .iter()
        .find(|p| p.name == name || p.aliases.iter().any(|a| a == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_load_in_priority_order() {
        let p = policies();
        assert!(p.len() >= 15);
        assert_eq!(p[0].name, "manylinux_2_5");
        assert_eq!(p.last().unwrap().name, "linux");
        let m2014 = policy("manylinux2014").unwrap();
        assert_eq!(m2014.name, "manylinux_2_17");
        assert_eq!(
            m2014.tags("x86_64"),
            vec!["manylinux2014_x86_64", "manylinux_2_17_x86_64"]
        );
        assert!(m2014.libraries.iter().any(|l| l == "libstdc++.so.6"));
        assert!(m2014.allows_version("x86_64", "GLIBC_2.17"));
        assert!(!m2014.allows_version("x86_64", "GLIBC_2.28"));
        assert!(m2014.allows_version("x86_64", "libcudart.so.12"));
        assert!(policy("manylinux_2_28")
            .unwrap()
            .allows_version("x86_64", "GLIBC_2.28"));
        assert_eq!(split_version("GLIBCXX_3.4.21"), Some(("GLIBCXX", "3.4.21")));
        assert_eq!(split_version("libcudart.so.12"), None);
    }

    #[test]
    fn each_architecture_starts_at_its_first_policy() {
        let first = |libc: &str, arch: &str| policies_for(libc, arch)[0].name.clone();
        for (arch, want) in [
            ("x86_64", "manylinux_2_5"),
            ("i686", "manylinux_2_5"),
            ("aarch64", "manylinux_2_17"),
            ("ppc64le", "manylinux_2_17"),
            ("s390x", "manylinux_2_17"),
            ("armv7l", "manylinux_2_17"),
            ("ppc64", "manylinux_2_17"),
            ("riscv64", "manylinux_2_31"),
            ("loongarch64", "manylinux_2_36"),
        ] {
            assert_eq!(first("glibc", arch), want, "{arch}");
        }
        // ppc64 (big-endian) has manylinux2014 only.
        assert_eq!(policies_for("glibc", "ppc64").len(), 2);
        for arch in ["x86_64", "aarch64", "armv7l", "riscv64", "loongarch64"] {
            let p = policies_for("musl", arch);
            assert_eq!(p.len(), 2, "{arch}");
            assert_eq!(p[0].name, "musllinux_1_2", "{arch}");
            assert_eq!(p[1].name, "linux");
        }
        let m = policy("musllinux_1_2").unwrap();
        assert!(m.allows_library("x86_64", "libc.musl-x86_64.so.1"));
        assert!(m.allows_library("armv7l", "libc.musl-armv7.so.1"));
        assert!(!m.allows_library("x86_64", "libc.so.6"));
        assert!(!m.allows_library("x86_64", "libc.so"));
        assert!(policy("manylinux_2_17")
            .unwrap()
            .allows_library("aarch64", "libc.so.6"));
        assert!(!policy("manylinux_2_5").unwrap().covers("aarch64"));
        assert!(policy("linux").unwrap().covers("mips64"));
    }
}
