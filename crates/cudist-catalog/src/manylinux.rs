//! manylinux policies (PEP 600): what a wheel may expect from the system.
//!
//! The data (`data/manylinux.toml`) is generated from auditwheel's policy file by
//! `data/gen-manylinux.py` and parsed on first use (it is large, and only platform-tag decisions
//! need it).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// One policy, e.g. `manylinux_2_17` (alias `manylinux2014`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
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

    /// Whether a required symbol version (`GLIBC_2.17`) is allowed on `arch`. Versions of
    /// families the policy does not govern (`libcudart.so.12`, a library's own) are allowed.
    pub fn allows_version(&self, arch: &str, version: &str) -> bool {
        let Some((family, v)) = split_version(version) else {
            return true;
        };
        match self.symbol_versions.get(arch).and_then(|f| f.get(family)) {
            Some(allowed) => allowed.iter().any(|a| a == v),
            None => !self
                .symbol_versions
                .values()
                .any(|fams| fams.contains_key(family)),
        }
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
}
