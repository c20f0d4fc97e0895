//! The `conda` format of `cudist split`: one `.conda` package per component-output, named as
//! conda-forge names its split (`cuda-cudart`, `cuda-cudart-dev`, `cuda-cudart-static`,
//! `libcublas`, …), with `index.json`, `paths.json` and `run_exports.json`, plus a metapackage that
//! depends on them all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cudist_analysis::error::{Result, ResultExt};
use cudist_conda::{Content, Entry, NewPackage, RunExports, WriteOptions};
use sha2::{Digest, Sha256};

use super::{Manifest, Metapackage};

/// The path of a file of a CUDA root in a conda prefix: libraries, pkg-config and CMake files in
/// `lib/` (conda has no `lib64/`), everything else where it is.
pub fn prefix_path(root_path: &str) -> String {
    match root_path.strip_prefix("lib64/") {
        Some(rest) => format!("lib/{rest}"),
        None => root_path.to_string(),
    }
}

/// A content-derived build string, `h` + 8 hex digits + `_` + build number, as conda-forge's
/// builds look: the same inputs give the same name.
fn build_string(name: &str, version: &str, depends: &[String], files: &[String], n: u64) -> String {
    let mut h = Sha256::new();
    for part in [name, version] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for d in depends {
        h.update(d.as_bytes());
        h.update([0]);
    }
    for f in files {
        h.update(f.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    format!("h{:02x}{:02x}{:02x}{:02x}_{n}", d[0], d[1], d[2], d[3])
}

/// One package to write, before its build string.
struct Planned {
    name: String,
    version: String,
    depends: Vec<String>,
    run_exports: Option<RunExports>,
    license: Option<String>,
    files: Vec<Entry>,
    licenses: Vec<(String, PathBuf)>,
    /// Each file's path and sha256 (or link target), for the build string.
    fingerprint: Vec<String>,
}

/// Writes every package of the manifest into `dir`; returns their paths, metapackage last.
pub fn write(
    m: &Manifest,
    dir: &Path,
    build_number: u64,
    opts: &WriteOptions,
) -> Result<Vec<PathBuf>> {
    let mut planned: Vec<Planned> = Vec::new();
    for c in &m.components {
        let mut by_output: BTreeMap<&str, (Vec<Entry>, Vec<String>)> = BTreeMap::new();
        let mut licenses: BTreeMap<&str, Vec<(String, PathBuf)>> = BTreeMap::new();
        for f in m.files.iter().filter(|f| f.component == c.component) {
            // share/licenses/<wheel>/X -> info/licenses/X, the place conda keeps them.
            if let Some(rest) = f.path.strip_prefix("share/licenses/") {
                let name = rest.split_once('/').map_or(rest, |(_, n)| n);
                if let Some(src) = &f.source {
                    licenses
                        .entry(f.output.as_str())
                        .or_default()
                        .push((name.to_string(), src.clone()));
                    by_output
                        .entry(f.output.as_str())
                        .or_default()
                        .1
                        .push(format!(
                            "info/licenses/{name} {}",
                            f.sha256.as_deref().unwrap_or("")
                        ));
                }
                continue;
            }
            let content = match (&f.target, &f.source) {
                (Some(t), _) => Content::Link(t.clone()),
                (None, Some(s)) => Content::File(s.clone()),
                (None, None) => cudist_analysis::bail!("{}: no source file", f.path),
            };
            let (entries, fingerprint) = by_output.entry(f.output.as_str()).or_default();
            let path = prefix_path(&f.path);
            let what = f.sha256.as_deref().or(f.target.as_deref()).unwrap_or("");
            fingerprint.push(format!("{path} {what}"));
            let known = f.sha256.clone().map(|h| (h, f.size));
            entries.push(Entry {
                path,
                content,
                known,
            });
        }
        for (output, (files, fingerprint)) in by_output {
            let name = c.packages.get(output).cloned().unwrap_or_default();
            // conda-forge puts the run_exports on `-dev` (what a build installs to link the
            // library), else they go on the runtime package itself.
            let exports_on = if c.outputs.contains_key("dev") {
                "dev"
            } else {
                "lib"
            };
            let run_exports =
                (output == exports_on && !c.run_exports.is_empty()).then(|| RunExports {
                    weak: c.run_exports.iter().map(|p| p.conda.clone()).collect(),
                    strong: Vec::new(),
                });
            planned.push(Planned {
                name,
                version: c.version.clone(),
                depends: c.depends.get(output).cloned().unwrap_or_default(),
                run_exports,
                license: c.license.clone(),
                files,
                licenses: licenses.remove(output).unwrap_or_default(),
                fingerprint,
            });
        }
    }
    if let Some(meta) = &m.metapackage {
        planned.push(metapackage(meta));
    }
    let subdir = cudist_conda::host_subdir().0;
    let mut written = Vec::new();
    for p in planned {
        let build = build_string(
            &p.name,
            &p.version,
            &p.depends,
            &p.fingerprint,
            build_number,
        );
        let pkg = NewPackage {
            name: p.name,
            version: p.version,
            build,
            build_number,
            subdir: subdir.into(),
            depends: p.depends,
            constrains: Vec::new(),
            license: p.license,
            run_exports: p.run_exports,
            files: p.files,
            licenses: p.licenses,
        };
        let path = cudist_conda::write_conda(&pkg, dir, opts)
            .with_context(|| format!("cannot write the conda package {}", pkg.stem()))?;
        written.push(path);
    }
    Ok(written)
}

fn metapackage(meta: &Metapackage) -> Planned {
    Planned {
        name: meta.name.clone(),
        version: meta.version.clone(),
        depends: meta.depends.clone(),
        run_exports: None,
        license: None,
        files: Vec::new(),
        licenses: Vec::new(),
        fingerprint: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conda_prefix_paths() {
        assert_eq!(prefix_path("lib64/libcudart.so.13"), "lib/libcudart.so.13");
        assert_eq!(
            prefix_path("lib64/stubs/libcuda.so"),
            "lib/stubs/libcuda.so"
        );
        assert_eq!(prefix_path("include/cuda.h"), "include/cuda.h");
        assert_eq!(
            prefix_path("nvvm/lib64/libnvvm.so.4"),
            "nvvm/lib64/libnvvm.so.4"
        );
    }

    #[test]
    fn build_strings_follow_the_content() {
        let e = |t: &str| format!("lib/x {t}");
        let a = build_string("x", "1", &[], &[e("a")], 0);
        assert_eq!(a, build_string("x", "1", &[], &[e("a")], 0));
        assert_ne!(a, build_string("x", "1", &[], &[e("b")], 0));
        assert!(
            a.starts_with('h') && a.ends_with("_0") && a.len() == 11,
            "{a}"
        );
    }
}
