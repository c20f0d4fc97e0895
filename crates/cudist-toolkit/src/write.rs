//! Writing the plan: a new CUDA root assembled in a temporary directory beside the target and
//! renamed into place (nothing half-written is ever left at `--out`), or, with `--in-place`, the
//! few missing links and the stub added inside the environment's own CUDA wheel directories.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use cudist_analysis::bail;
use cudist_analysis::error::{Result, ResultExt};
use cudist_wheel::installed::{self, RecordRow};
use serde::Serialize;

use cudist_analysis::environment::{marker_text, Source, MARKER};
use cudist_catalog::linker_name;

use super::generate::{driver_stub, soname_of};
use super::plan::{Item, Plan};

/// How environment files enter the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Symbolic links to the environment's files (cheap; the root lives as long as the environment).
    Link,
    /// Copies (a relocatable root).
    Copy,
}

/// What was written.
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Files linked or copied from the environment.
    pub files: usize,
    /// Symbolic links made.
    pub links: usize,
    /// Files cudist wrote (nvcc.profile, version.json, pkg-config, the stub).
    pub generated: usize,
    /// Bytes copied (`--copy`, and executables made executable).
    pub bytes_copied: u64,
}

/// Writes `plan` as a CUDA root at `out`.
pub fn write_root(
    plan: &Plan,
    out: &Path,
    mode: Mode,
    force: bool,
    source: &Source,
) -> Result<Stats> {
    if let Ok(meta) = std::fs::symlink_metadata(out) {
        if !force {
            bail!(
                "{} exists; give another --out, or --force to replace it",
                out.display()
            );
        }
        let empty = meta.is_dir() && std::fs::read_dir(out)?.next().is_none();
        if !meta.is_dir() || !(empty || out.join(MARKER).is_file()) {
            bail!(
                "{} exists and is not a CUDA root cudist wrote (no {MARKER} in it); --force replaces only those. \
                 Remove it yourself or choose another --out",
                out.display()
            );
        }
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cuda".into());
    // Assembled in a scratch directory with an unpredictable name beside --out (removed on every
    // error), then renamed into place.
    let scratch = cudist_fs::scratch_dir(&parent, &name)
        .with_context(|| format!("cannot create a directory in {}", parent.display()))?;
    let tmp = scratch.path().join("root");
    let stats = fill(plan, &tmp, mode, source)?;
    if out.exists() {
        // The old root moves into the scratch directory, and goes with it.
        let old = scratch.path().join("old");
        std::fs::rename(out, &old)
            .with_context(|| format!("cannot move {} aside", out.display()))?;
        if let Err(e) = std::fs::rename(&tmp, out) {
            let _ = std::fs::rename(&old, out);
            return Err(e).with_context(|| format!("cannot rename into {}", out.display()));
        }
    } else {
        std::fs::rename(&tmp, out)
            .with_context(|| format!("cannot rename into {}", out.display()))?;
    }
    drop(scratch);
    Ok(stats)
}

fn fill(plan: &Plan, root: &Path, mode: Mode, source: &Source) -> Result<Stats> {
    let mut stats = Stats::default();
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    for (dest, e) in &plan.entries {
        // Every path comes from an environment's file lists: a plain path inside the root.
        cudist_fs::member_name(dest)?;
        let path = root.join(dest);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        match &e.item {
            Item::File { src, exec_fix } => {
                if mode == Mode::Link && !exec_fix {
                    symlink(src, &path)
                        .with_context(|| format!("cannot link {}", path.display()))?;
                    stats.links += 1;
                } else {
                    stats.bytes_copied += std::fs::copy(src, &path).with_context(|| {
                        format!("cannot copy {} to {}", src.display(), path.display())
                    })?;
                    if *exec_fix {
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
                    }
                    stats.files += 1;
                }
            }
            Item::Symlink { target } => {
                symlink(target, &path)
                    .with_context(|| format!("cannot link {}", path.display()))?;
                stats.links += 1;
            }
            Item::Bytes { data, exec } => {
                std::fs::write(&path, data)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                if *exec {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
                }
                stats.generated += 1;
            }
        }
    }
    if root.join("lib64").is_dir() && !root.join("lib").exists() {
        symlink("lib64", root.join("lib"))?;
        stats.links += 1;
    }
    std::fs::write(root.join(MARKER), marker_text(source, &plan.version))?;
    Ok(stats)
}

/// One path `--in-place` added.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Added {
    /// The path added, relative to the site-packages directory.
    pub path: String,
    /// `link` or `stub`.
    pub kind: &'static str,
    /// The package whose RECORD now lists it.
    pub package: String,
}

/// Adds the linker-name (and SONAME) links every library directory lacks, and a driver stub
/// beside the runtime, inside the environment; records each addition in the RECORD of the package
/// that owns the directory, so `pip uninstall` removes it. Running it again adds nothing.
pub fn in_place(source: &Source, dry_run: bool) -> Result<Vec<Added>> {
    let mut added = Vec::new();
    for p in &source.packages {
        let mut rows = Vec::new();
        for f in &p.files {
            let Some((dir, file)) = f.rel.rsplit_once('/') else {
                continue;
            };
            if !dir.starts_with("nvidia/") || !(dir.ends_with("/lib") || dir.ends_with("/lib64")) {
                continue;
            }
            let Some(linker) = linker_name(file) else {
                continue;
            };
            let soname = soname_of(&f.abs)?;
            let mut want = Vec::new();
            if let Some(so) = soname.as_deref().filter(|s| *s != file) {
                want.push((so.to_string(), file.to_string()));
            }
            if linker != file {
                let target = soname
                    .clone()
                    .filter(|s| *s != linker)
                    .unwrap_or(file.to_string());
                want.push((linker.clone(), target));
            }
            // The library's own directory, as resolved inside the environment (never through a
            // link that leaves it).
            let real_dir = f.abs.parent().unwrap_or(&p.root).to_path_buf();
            for (name, target) in want {
                let rel = format!("{dir}/{name}");
                let path = real_dir.join(&name);
                if std::fs::symlink_metadata(&path).is_ok() {
                    continue;
                }
                if !dry_run {
                    symlink(&target, &path)
                        .with_context(|| format!("cannot link {}", path.display()))?;
                }
                rows.push(RecordRow {
                    path: rel.clone(),
                    hash: String::new(),
                    size: None,
                });
                added.push(Added {
                    path: path.display().to_string(),
                    kind: "link",
                    package: p.name.clone(),
                });
            }
            // The driver stub goes beside the runtime library.
            if file.starts_with("libcudart.so") {
                let rel = format!("{dir}/stubs/libcuda.so");
                let path = real_dir.join("stubs/libcuda.so");
                let header_rel = format!(
                    "{}/include/cuda.h",
                    dir.rsplit_once('/').map(|(d, _)| d).unwrap_or(dir)
                );
                let header = cudist_fs::resolve_beneath(&p.root, &header_rel)?;
                let stubs = cudist_fs::resolve_beneath(&p.root, &format!("{dir}/stubs"))?;
                if stubs != real_dir.join("stubs") {
                    bail!(
                        "{}: a link in the environment; cudist adds no file through it",
                        p.root.join(format!("{dir}/stubs")).display()
                    );
                }
                if std::fs::symlink_metadata(&path).is_err() && header.is_file() {
                    let text = cudist_fs::read_bounded(&header, cudist_fs::SMALL_FILE)?;
                    let (data, _) = driver_stub(&String::from_utf8_lossy(&text))?;
                    if !dry_run {
                        std::fs::create_dir_all(path.parent().unwrap())?;
                        cudist_fs::write_atomic(&path, &data, Some(0o644))
                            .with_context(|| format!("cannot write {}", path.display()))?;
                    }
                    rows.push(RecordRow {
                        path: rel,
                        hash: cudist_wheel::write::record_hash(&data),
                        size: Some(data.len() as u64),
                    });
                    added.push(Added {
                        path: path.display().to_string(),
                        kind: "stub",
                        package: p.name.clone(),
                    });
                }
            }
        }
        if !dry_run && !rows.is_empty() {
            if let Some(di) = &p.dist_info {
                installed::append_record(di, &rows)
                    .with_context(|| format!("cannot update {}/RECORD", di.display()))?;
            }
        }
    }
    Ok(added)
}
