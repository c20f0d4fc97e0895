//! What a package declares: its `Requires-Dist` lines, read as far as cudist needs them (name,
//! extras, version specifier, the package's extra they sit under, whether the marker can hold on
//! Linux), and whether they provide a library's wheel: by naming it, through the `cuda-toolkit[…]`
//! metapackage's extras, or through the requirements of a package they declare
//! (onnxruntime-gpu asks for `nvidia-cudnn-cu13`, and every release of that requires
//! `nvidia-cublas`). The last is read off the catalog's snapshot of PyPI
//! ([`cudist_catalog::pip::requires`]): a library counts as declared that way only when every
//! recorded release the specifier admits requires it.

use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};

use crate::model::LibraryRef;

/// A distribution name normalised as PEP 503 says (`Nvidia_CUBLAS.cu12` → `nvidia-cublas-cu12`).
pub use cudist_wheel::installed::normalise as normalise_dist;

/// The catalog's libraries (one CUDA major each) that the wheel `pip` (a normalised
/// distribution name: `nvidia-cuda-cupti`) installs.
pub fn majors_of_wheel<'c>(
    catalog: &'c cudist_catalog::Catalog,
    pip: &'c str,
) -> impl Iterator<Item = &'c cudist_catalog::LibraryMajor> + 'c {
    catalog
        .libraries
        .iter()
        .flat_map(|l| &l.cuda)
        .filter(move |m| m.pip.as_deref().is_some_and(|p| normalise_dist(p) == pip))
}

/// How deep the requirements of declared packages are followed (a declared package, its
/// requirements, theirs).
const DEPTH: usize = 3;

/// A requirement's distribution name (normalised), extras, version specifier, and the extra of
/// the package that pulls it in (`; extra == "ctk"`), if any.
#[derive(Debug, Clone)]
pub struct ReqName {
    /// The distribution name, normalised (`nvidia-cublas-cu12`).
    pub name: String,
    /// The extras it asks for, normalised (`cuda-toolkit[cublas]` → `cublas`).
    pub extras: Vec<String>,
    /// The version specifier as written (`>=12.1,<13`, empty for any version).
    pub specifier: String,
    /// The extra of the requiring package under which it is required (`; extra == "ctk"`).
    pub in_extra: Option<String>,
    /// Its marker can hold on Linux ([`crate::marker::may_hold_on_linux`]): a requirement for
    /// Windows only declares nothing for a Linux artifact.
    pub on_linux: bool,
}

/// How a package's requirements provide a library's wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provision {
    /// The requirement, as reports name it: `nvidia-cublas-cu12`, `cuda-toolkit[cublas]`, or
    /// `nvidia-cudnn-cu13 → nvidia-cublas` when a declared package requires it.
    pub by: String,
    /// The package's optional extra that declares it, when only extras do.
    pub in_extra: Option<String>,
}

impl ReqName {
    /// Reads a `Requires-Dist` value; none when it names no distribution.
    ///
    /// ```
    /// let r = cudist_analysis::requirements::ReqName::parse("cuda-toolkit[cuBLAS]==12.*; extra == 'gpu'").unwrap();
    /// assert_eq!((r.name.as_str(), r.extras[0].as_str(), r.in_extra.as_deref()), ("cuda-toolkit", "cublas", Some("gpu")));
    /// assert_eq!(r.specifier, "==12.*");
    /// ```
    pub fn parse(req: &str) -> Option<ReqName> {
        let req = req.trim();
        let (spec_part, marker) = match req.split_once(';') {
            Some((a, m)) => (a, Some(m)),
            None => (req, None),
        };
        let end = spec_part
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(spec_part.len());
        let name = normalise_dist(&spec_part[..end]);
        if name.is_empty() {
            return None;
        }
        let mut rest = spec_part[end..].trim_start();
        let mut extras = Vec::new();
        if let Some(r) = rest.strip_prefix('[') {
            let (inside, after) = r.split_once(']').unwrap_or((r, ""));
            extras = inside
                .split(',')
                .map(|e| normalise_dist(e.trim()))
                .filter(|e| !e.is_empty())
                .collect();
            rest = after.trim_start();
        }
        // `name (>=1.0)`: the old parenthesised form.
        let specifier = rest
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim()
            .to_string();
        let in_extra = marker.and_then(|marker| {
            let at = marker.find("extra")?;
            let rest = marker[at + 5..]
                .trim_start()
                .strip_prefix("==")?
                .trim_start();
            let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let value = rest[1..].split(q).next()?;
            Some(normalise_dist(value))
        });
        let on_linux = marker.is_none_or(crate::marker::may_hold_on_linux);
        Some(ReqName {
            name,
            extras,
            specifier,
            in_extra,
            on_linux,
        })
    }

    /// Whether this requirement names the wheel `pip` itself, or the `cuda-toolkit` extra
    /// `extra` that installs it; how reports name it.
    fn names(&self, pip: &str, extra: Option<&str>) -> Option<String> {
        if !self.on_linux {
            return None;
        }
        if self.name == normalise_dist(pip) {
            return Some(self.name.clone());
        }
        let extra = normalise_dist(extra?);
        (self.name == "cuda-toolkit" && self.extras.contains(&extra))
            .then(|| format!("cuda-toolkit[{extra}]"))
    }

    /// `nvidia-cudnn-cu13 → nvidia-cublas` when every release of this requirement's package that
    /// it admits (and the snapshot records) requires a package that provides `pip`.
    /// Whether cudist's snapshot of PyPI records the requirements of a release this requirement
    /// admits: librmm-cu12's are recorded from 26.4 on, so `librmm-cu12==25.12.*` is not.
    fn recorded(&self) -> bool {
        let Some(releases) = cudist_catalog::pip::requires(&self.name) else {
            return false;
        };
        let spec = VersionSpecifiers::from_str(&self.specifier).ok();
        releases
            .keys()
            .any(|version| match (&spec, Version::from_str(version)) {
                (Some(s), Ok(v)) => s.contains(&v),
                (None, _) => true,
                (Some(_), Err(_)) => false,
            })
    }

    fn through_dependencies(&self, pip: &str, extra: Option<&str>, depth: usize) -> Option<String> {
        if depth == 0 || !self.on_linux {
            return None;
        }
        // The `cuda-toolkit` metapackage installs the wheels its extras name; their own
        // requirements count as the wheels' do (moreau-cuda13's `cuda-toolkit[cusolver]` brings
        // nvidia-cusolver, which requires nvidia-cublas). A wheel of another CUDA major than
        // the one asked for requires that major's wheels, never `pip`.
        if self.name == "cuda-toolkit" {
            let spec = VersionSpecifiers::from_str(&self.specifier).ok();
            // The metapackage's release is the CUDA release (13.0.2): a major is asked for when
            // the specifier admits one of its releases.
            let admits = |major: u32| {
                spec.as_ref().is_none_or(|s| {
                    (0..=12).any(|minor| {
                        (0..=3).any(|patch| {
                            Version::from_str(&format!("{major}.{minor}.{patch}"))
                                .is_ok_and(|v| s.contains(&v))
                        })
                    })
                })
            };
            return self.extras.iter().find_map(|x| {
                toolkit_extra_wheels(x, &admits).find_map(|w| {
                    let wheel = ReqName {
                        name: normalise_dist(w),
                        extras: Vec::new(),
                        specifier: String::new(),
                        in_extra: None,
                        on_linux: true,
                    };
                    wheel
                        .through_dependencies(pip, extra, depth - 1)
                        .map(|v| format!("cuda-toolkit[{x}] → {v}"))
                })
            });
        }
        let releases = cudist_catalog::pip::requires(&self.name)?;
        let spec = VersionSpecifiers::from_str(&self.specifier).ok();
        let mut found: Option<String> = None;
        let mut admitted = 0;
        for (version, reqs) in releases {
            let admits = match (&spec, Version::from_str(version)) {
                (Some(s), Ok(v)) => s.contains(&v),
                (None, _) => true,
                (Some(_), Err(_)) => false,
            };
            if !admits {
                continue;
            }
            admitted += 1;
            let via = reqs
                .iter()
                .filter_map(|r| ReqName::parse(r))
                // A requirement under an extra of the declared package counts when the
                // declaration asks for that extra.
                .filter(|c| c.in_extra.as_ref().is_none_or(|x| self.extras.contains(x)))
                .find_map(|c| {
                    c.names(pip, extra)
                        .or_else(|| c.through_dependencies(pip, extra, depth - 1))
                });
            match via {
                Some(v) => {
                    found.get_or_insert(v);
                }
                None => return None,
            }
        }
        if admitted == 0 {
            return None;
        }
        found.map(|v| format!("{} → {v}", self.name))
    }
}

/// The wheels that the `cuda-toolkit` extra `extra` (normalised) installs for the CUDA majors
/// `admits` takes, from the built-in catalog.
fn toolkit_extra_wheels<'a>(
    extra: &'a str,
    admits: &'a dyn Fn(u32) -> bool,
) -> impl Iterator<Item = &'static str> + 'a {
    static CATALOG: std::sync::OnceLock<cudist_catalog::Catalog> = std::sync::OnceLock::new();
    CATALOG
        .get_or_init(cudist_catalog::Catalog::builtin)
        .libraries
        .iter()
        .filter(move |l| {
            l.toolkit_extra
                .as_deref()
                .is_some_and(|x| normalise_dist(x) == extra)
        })
        .flat_map(|l| &l.cuda)
        .filter(|m| admits(m.major))
        .filter_map(|m| m.pip.as_deref())
}

/// How `requires` provides the wheel `pip` (or the `cuda-toolkit` extra `extra`): the first
/// requirement that names it, else the first that requires it through its dependencies;
/// unconditional requirements before those under one of the package's extras.
pub fn provision(requires: &[ReqName], pip: &str, extra: Option<&str>) -> Option<Provision> {
    let pick = |direct: bool| -> Option<Provision> {
        let all: Vec<(&ReqName, String)> = requires
            .iter()
            .filter_map(|r| {
                let by = if direct {
                    r.names(pip, extra)
                } else {
                    r.through_dependencies(pip, extra, DEPTH)
                }?;
                Some((r, by))
            })
            .collect();
        let (r, by) = all
            .iter()
            .find(|(r, _)| r.in_extra.is_none())
            .or(all.first())?;
        Some(Provision {
            by: by.clone(),
            in_extra: r.in_extra.clone(),
        })
    };
    pick(true).or_else(|| pick(false))
}

/// The requirements (unconditional, on Linux) of packages built for a CUDA major (their name
/// says so: `distributed-ucxx-cu12`, `cupy-cuda12x`) whose own requirements the catalog's
/// snapshot does not record, for any release the requirement admits: a library not declared
/// directly may come through one of them
/// (raft-dask-cu12 gets libucx-cu12 through distributed-ucxx-cu12 → ucxx-cu12 → libucxx-cu12).
pub fn unrecorded_cuda_requirements(requires: &[ReqName]) -> Vec<String> {
    let for_cuda = |name: &str| {
        name.split('-').any(|t| {
            let digits = t
                .strip_prefix("cuda")
                .map(|d| d.strip_suffix('x').unwrap_or(d))
                .or_else(|| t.strip_prefix("cu"));
            digits.is_some_and(|d| {
                (2..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())
            })
        })
    };
    let mut out: Vec<String> = requires
        .iter()
        .filter(|r| r.on_linux && r.in_extra.is_none() && for_cuda(&r.name))
        .filter(|r| !r.recorded())
        .map(|r| r.name.clone())
        .collect();
    out.dedup();
    out
}

/// [`provision`] for a catalog library (its wheel in the library's CUDA major).
pub fn provision_of(requires: &[ReqName], l: &LibraryRef) -> Option<Provision> {
    provision(requires, l.pip.as_deref()?, l.toolkit_extra.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(pip: &str, extra: Option<&str>) -> LibraryRef {
        LibraryRef {
            id: "cublas".into(),
            component: None,
            cuda_major: 12,
            cuda_major_ambiguous: false,
            cuda_agnostic: false,
            soname_policy: "major".into(),
            pip: Some(pip.into()),
            pip_dir: None,
            conda: None,
            toolkit_extra: extra.map(str::to_string),
            older_release: false,
        }
    }

    #[test]
    fn requirements_built_for_cuda_that_the_snapshot_does_not_record() {
        let reqs: Vec<ReqName> = [
            "distributed-ucxx-cu12==0.52.*",
            "cupy-cuda12x>=13",
            "numpy>=2",
            "nvidia-nccl-cu12>=2.19",
            "ucxx-cu12; extra == 'test'",
            "rmm-cu12; sys_platform == 'win32'",
            "pycuda",
            "librmm-cu12==25.12.*",
            "librmm-cu12>=26.4",
        ]
        .iter()
        .filter_map(|r| ReqName::parse(r))
        .collect();
        // nvidia-nccl-cu12's requirements are recorded; numpy and pycuda name no CUDA major;
        // an extra's and Windows' requirements are not the package's own on Linux; librmm-cu12's
        // are recorded from 26.4 on, not for 25.12 (cyborgdb-core-cu12 0.18.0 requires that).
        assert_eq!(
            unrecorded_cuda_requirements(&reqs),
            ["distributed-ucxx-cu12", "cupy-cuda12x", "librmm-cu12"]
        );
    }

    #[test]
    fn requirement_names() {
        let r = ReqName::parse("cuda-toolkit[cublas,CURAND]==12.*; extra == 'ctk'").unwrap();
        assert_eq!(r.name, "cuda-toolkit");
        assert_eq!(r.extras, vec!["cublas", "curand"]);
        assert_eq!(r.in_extra.as_deref(), Some("ctk"));
        assert_eq!(r.specifier, "==12.*");
        assert_eq!(
            ReqName::parse("a; python_version >= \"3.9\"")
                .unwrap()
                .in_extra,
            None
        );
        let r = ReqName::parse("nvidia_cublas_cu12>=12.1").unwrap();
        assert_eq!(
            (r.name.as_str(), r.specifier.as_str()),
            ("nvidia-cublas-cu12", ">=12.1")
        );
        assert_eq!(ReqName::parse("x (>=1.0)").unwrap().specifier, ">=1.0");
        let l = lib("nvidia-cublas-cu12", Some("cublas"));
        let provides = |r: ReqName| provision_of(&[r], &l).is_some();
        assert!(provides(r));
        assert!(provides(ReqName::parse("cuda-toolkit[cublas]").unwrap()));
        assert!(!provides(ReqName::parse("cuda-toolkit[cufft]").unwrap()));
        assert!(!provides(
            ReqName::parse("nvidia-cublas-cu12; sys_platform == 'win32'").unwrap()
        ));
    }

    #[test]
    fn declared_through_a_declared_package() {
        // onnxruntime-gpu 1.31.1's [cudnn] extra: cuDNN for CUDA 13, whose releases require cuBLAS.
        let requires: Vec<ReqName> = ["nvidia-cudnn-cu13>=9,<10; extra == \"cudnn\"", "numpy"]
            .iter()
            .filter_map(|r| ReqName::parse(r))
            .collect();
        let p = provision(&requires, "nvidia-cublas", Some("cublas")).expect("through cuDNN");
        assert_eq!(p.by, "nvidia-cudnn-cu13 → nvidia-cublas");
        assert_eq!(p.in_extra.as_deref(), Some("cudnn"));
        // A package nothing declared requires stays undeclared.
        assert_eq!(provision(&requires, "nvidia-cufft", Some("cufft")), None);
        // The cuda-toolkit metapackage's extras bring their wheels, whose requirements count
        // (moreau-cuda13 0.4.1: `cuda-toolkit[cusolver]==13.*` → nvidia-cusolver → nvidia-cublas),
        // in the CUDA major asked for only.
        let toolkit = [ReqName::parse("cuda-toolkit[cudart,cusolver]==13.*").unwrap()];
        let p = provision(&toolkit, "nvidia-cublas", Some("cublas")).expect("through cusolver");
        assert_eq!(
            p.by,
            "cuda-toolkit[cusolver] → nvidia-cusolver → nvidia-cublas"
        );
        assert_eq!(
            provision(&toolkit, "nvidia-cublas-cu12", Some("cublas")),
            None
        );
        let cu12 = [ReqName::parse("cuda-toolkit[cusolver]>=12.1,<13").unwrap()];
        assert!(provision(&cu12, "nvidia-cublas-cu12", Some("cublas")).is_some());
        assert_eq!(provision(&cu12, "nvidia-cublas", Some("cublas")), None);
        // A specifier no recorded release satisfies declares nothing.
        let none = [ReqName::parse("nvidia-cudnn-cu13==1.0").unwrap()];
        assert_eq!(provision(&none, "nvidia-cublas", Some("cublas")), None);
        // Named directly beats through a dependency.
        let both: Vec<ReqName> = ["nvidia-cudnn-cu13", "nvidia-cublas"]
            .iter()
            .filter_map(|r| ReqName::parse(r))
            .collect();
        assert_eq!(
            provision(&both, "nvidia-cublas", None).unwrap().by,
            "nvidia-cublas"
        );
    }
}
