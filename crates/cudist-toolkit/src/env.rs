//! The environment variables that point build tools (nvcc, CMake, pkg-config, a compiler driver)
//! at a CUDA root, or at the directories of the CUDA wheels themselves (`cudist toolkit env`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cudist_analysis::environment::{Source, MARKER};
use cudist_analysis::error::{bad_input, Result};

/// The directories build tools need: the root (none for per-component wheels), and where
/// executables, libraries, headers and pkg-config files are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirs {
    /// The CUDA root (`CUDA_HOME`), when there is one.
    pub roots: Vec<PathBuf>,
    /// Directories of executables (`PATH`).
    pub bins: Vec<PathBuf>,
    /// Directories of libraries (`LIBRARY_PATH`).
    pub libs: Vec<PathBuf>,
    /// Directories of headers (`CPATH`), CCCL's included.
    pub includes: Vec<PathBuf>,
    /// Directories of pkg-config files (`PKG_CONFIG_PATH`).
    pub pkgconfig: Vec<PathBuf>,
    /// What a user should know: what the variables cannot do for this layout.
    pub notes: Vec<String>,
}

/// One variable: its name, its values, and whether they go in front of the current value
/// (a search path) or replace it (`CUDA_HOME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    /// `CUDA_HOME`, `PATH`, ….
    pub name: &'static str,
    /// One value to set, or the directories to prepend.
    pub values: Vec<String>,
    /// Prepend to the current value (a search path) rather than set.
    pub prepend: bool,
}

/// The directories of a CUDA root (one `cudist toolkit` wrote, or any with a `version.json`); a
/// directory that is neither is a bad input.
pub fn of_root(root: &Path) -> Result<Dirs> {
    let root = std::path::absolute(root)?;
    if !root.join(MARKER).is_file() && !root.join("version.json").is_file() {
        return Err(bad_input(format!(
            "{}: not a CUDA root (no version.json); make one with `cudist toolkit --out {}`",
            root.display(),
            root.display()
        )));
    }
    let some = |p: PathBuf| if p.is_dir() { vec![p] } else { vec![] };
    let mut includes = some(root.join("include"));
    includes.extend(some(root.join("include/cccl")));
    let mut notes = vec![];
    if !root.join("bin/nvcc").exists() {
        notes.push(format!(
            "no nvcc in this root: CMake's FindCUDAToolkit finds it through -DCUDAToolkit_ROOT={}, and from \
             CMake 4.2 on also through the CUDAToolkit_ROOT environment variable set here; \
             CUDA_PATH or CUDA_HOME alone is not enough for any CMake without nvcc",
            root.display()
        ));
    }
    notes.extend(unlinkable(&[root.join("lib64")]));
    Ok(Dirs {
        bins: some(root.join("bin")),
        libs: some(root.join("lib64")),
        includes,
        pkgconfig: some(root.join("lib64/pkgconfig")),
        notes,
        roots: vec![root],
    })
}

/// The environment's own wheel directories: CUDA 13's merged `nvidia/cu13` is a root by itself;
/// CUDA 11/12's per-component directories are listed one by one (there is no single root).
pub fn of_wheel_dirs(source: &Source) -> Dirs {
    let mut dirs = BTreeSet::new();
    for p in &source.packages {
        for f in &p.files {
            let mut parts = f.rel.splitn(4, '/');
            if let (Some("nvidia"), Some(comp), Some(top)) =
                (parts.next(), parts.next(), parts.next())
            {
                if parts.next().is_some() {
                    dirs.insert((p.root.join("nvidia").join(comp), top.to_string()));
                }
            }
        }
    }
    let pick = |top: &str| -> Vec<PathBuf> {
        dirs.iter()
            .filter(|(_, t)| t == top)
            .map(|(d, _)| d.join(top))
            .collect()
    };
    let merged: Vec<PathBuf> = dirs
        .iter()
        .map(|(d, _)| d.clone())
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cu1"))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut includes = pick("include");
    includes.extend(
        includes
            .clone()
            .iter()
            .map(|i| i.join("cccl"))
            .filter(|p| p.is_dir())
            .collect::<Vec<_>>(),
    );
    let mut notes = Vec::new();
    let roots = if merged.len() == 1 {
        merged
    } else {
        notes.push(
            "per-component CUDA wheels have no single CUDA root: CUDA_HOME is not set; `cudist toolkit --out DIR` makes one"
                .to_string(),
        );
        vec![]
    };
    let mut libs = pick("lib");
    libs.extend(pick("lib64"));
    notes.extend(unlinkable(&libs));
    Dirs {
        roots,
        bins: pick("bin"),
        libs,
        includes,
        pkgconfig: vec![],
        notes,
    }
}

/// A warning when libraries in `dirs` have no linker-name link (`libcudart.so.13` without
/// `libcudart.so`): `-lcudart` cannot link against them, whatever the variables say. CUDA wheels
/// ship only SONAME files; `cudist toolkit --in-place` adds the links.
fn unlinkable(dirs: &[PathBuf]) -> Option<String> {
    let mut missing = BTreeSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(linker) = cudist_catalog::linker_name(&name) {
                if linker != name && !dir.join(&linker).exists() {
                    missing.insert(linker);
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let shown: Vec<&str> = missing.iter().take(4).map(String::as_str).collect();
    Some(format!(
        "no linker names for {} librar{} ({}{}): `-l` flags cannot link against them; run \
         `cudist toolkit --in-place` on this environment, or build a root with `cudist toolkit --out DIR`",
        missing.len(),
        if missing.len() == 1 { "y" } else { "ies" },
        shown.join(", "),
        if missing.len() > shown.len() { ", …" } else { "" }
    ))
}

/// The variables that point build tools at `dirs`: the root as `CUDA_HOME`, `CUDA_PATH` and
/// `CUDAToolkit_ROOT` (when there is one), then the search paths that are not empty.
pub fn variables(dirs: &Dirs) -> Vec<Var> {
    let s = |v: &[PathBuf]| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    };
    let mut vars = Vec::new();
    if let Some(root) = dirs.roots.first() {
        let r = vec![root.display().to_string()];
        for name in ["CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT"] {
            vars.push(Var {
                name,
                values: r.clone(),
                prepend: false,
            });
        }
    }
    for (name, v) in [
        ("PATH", &dirs.bins),
        ("LIBRARY_PATH", &dirs.libs),
        ("CPATH", &dirs.includes),
        ("PKG_CONFIG_PATH", &dirs.pkgconfig),
    ] {
        if !v.is_empty() {
            vars.push(Var {
                name,
                values: s(v),
                prepend: true,
            });
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_sets_cuda_home_and_prepends_its_directories() {
        let root = tempfile::tempdir().unwrap();
        assert!(of_root(root.path()).is_err(), "no version.json: not a root");
        std::fs::write(root.path().join("version.json"), "{}").unwrap();
        for d in ["bin", "lib64", "include"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        let dirs = of_root(root.path()).unwrap();
        assert_eq!(dirs.notes.len(), 1, "no nvcc: a note about CMake");
        let vars = variables(&dirs);
        let names: Vec<&str> = vars.iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            [
                "CUDA_HOME",
                "CUDA_PATH",
                "CUDAToolkit_ROOT",
                "PATH",
                "LIBRARY_PATH",
                "CPATH"
            ]
        );
        assert!(!vars[0].prepend && vars[3].prepend);
        assert_eq!(
            vars[4].values,
            [root.path().join("lib64").display().to_string()]
        );

        // A library without its linker name cannot be linked with -l: said, with what to run.
        std::fs::write(root.path().join("lib64/libcudart.so.13"), b"").unwrap();
        let dirs = of_root(root.path()).unwrap();
        let warning = dirs
            .notes
            .iter()
            .find(|n| n.contains("libcudart.so"))
            .unwrap();
        assert!(warning.contains("cudist toolkit --in-place"), "{warning}");
        std::os::unix::fs::symlink("libcudart.so.13", root.path().join("lib64/libcudart.so"))
            .unwrap();
        assert!(!of_root(root.path())
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("linker names")));
    }
}
