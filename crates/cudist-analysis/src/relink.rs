//! The fix-ups distribution packagers run over an installed tree (`cudist relink TREE`).
//!
//! - `driver_runpath` adds a directory (e.g. `/run/opengl-driver/lib`) to the search path of
//!   every ELF file that needs the CUDA driver: `libcuda.so.1` in NEEDED, or a CUDA library the
//!   catalog knows to dlopen it (the runtime). A file keeps its tag (DT_RUNPATH, or DT_RPATH when
//!   that is what it has, so its inheritance does not change); a file with neither gets
//!   DT_RUNPATH.
//! - `origin` rewrites absolute search-path entries inside the tree to `$ORIGIN`-relative ones and
//!   drops absolute entries outside it (build-machine paths).
//! - `check` changes nothing and lists the references outside the tree (`allow` for the ones that
//!   are meant, such as the driver directory).
//!
//! Files are patched with [`cudist_elf::patch`] (verified after each edit) and replaced all or
//! nothing ([`cudist_fs::Batch`]): every new file is written beside its original first, then all
//! are renamed into place, and a failure puts back what was replaced. Each keeps its owner, group
//! and mode; a file whose owner cannot be kept (another user's, when cudist is not root) stops the
//! run before anything changes, as does a file that cannot be read or parsed.

use std::path::Path;

use cudist_catalog::{Catalog, SonameClass};
use cudist_elf::patch::{apply, Edits, SearchPathTag};
use cudist_elf::ElfFile;
use serde::Serialize;

use crate::bail;
use crate::error::{bad_input, Error, Result, ResultExt};

/// What to do to a tree.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Add this directory to the search path of every ELF file that needs the CUDA driver.
    pub driver_runpath: Option<String>,
    /// Rewrite absolute search-path entries inside the tree as `$ORIGIN`-relative; drop those
    /// outside.
    pub origin: bool,
    /// Change nothing; list the references to paths outside the tree.
    pub check: bool,
    /// With `check`: directories outside the tree that are fine to reference.
    pub allow: Vec<String>,
    /// Say what would change; write nothing.
    pub dry_run: bool,
}

/// One file's changes or findings.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FileChange {
    /// The file.
    pub path: String,
    /// Its search path before.
    pub before: Vec<String>,
    /// Its search path after (the same as `before` with `check`).
    pub after: Vec<String>,
    /// `rpath` or `runpath`.
    pub tag: &'static str,
    /// With `--check`: the references outside the tree.
    pub outside: Vec<String>,
}

/// The schema identifier of relink's report.
pub const SCHEMA: &str = "cudist.relink/1";

/// What a relink changed or found (`--json`: schema `cudist.relink/1`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `cudist.relink/1`.
    pub schema: &'static str,
    /// The version of cudist that wrote it.
    pub cudist_version: &'static str,
    /// The tree, canonical.
    pub tree: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// How many ELF files the tree holds.
    pub files_checked: usize,
    /// The files whose search path changed (or would, with `dry_run`).
    pub changed: Vec<FileChange>,
    /// With `--check`: the files with references outside the tree.
    pub problems: Vec<FileChange>,
}

/// Whether a file needs the CUDA driver: it links `libcuda.so.1`, or it is (or links) a CUDA
/// library that dlopens it.
fn needs_driver(elf: &ElfFile, catalog: &Catalog) -> bool {
    let dlopens_driver = |name: &str| match catalog.classify(name) {
        SonameClass::Toolkit(m) | SonameClass::External(m) => {
            m.library.dlopens.iter().any(|d| d == "libcuda.so.1")
        }
        _ => false,
    };
    elf.needed.iter().any(|n| n == "libcuda.so.1")
        || elf.soname.as_deref().is_some_and(dlopens_driver)
}

/// `path` relative to `from` (both absolute and normalised), as `$ORIGIN/…`.
fn origin_relative(from_dir: &Path, target: &Path) -> String {
    let a: Vec<_> = from_dir.components().collect();
    let b: Vec<_> = target.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut s = String::from("$ORIGIN");
    for _ in common..a.len() {
        s.push_str("/..");
    }
    for c in &b[common..] {
        s.push('/');
        s.push_str(&c.as_os_str().to_string_lossy());
    }
    s
}

/// Relinks (or with `check`, checks) the ELF files below `tree`: all are read and parsed before
/// any is changed, and all changes land together or none does.
pub fn relink(tree: &Path, args: &Options, catalog: &Catalog) -> Result<Report> {
    let given = tree;
    let tree = std::fs::canonicalize(given)
        .input_context(|| format!("{}: not a directory", given.display()))?;
    if !tree.is_dir() {
        return Err(bad_input(format!("{}: not a directory", given.display())));
    }
    if !args.check && args.driver_runpath.is_none() && !args.origin {
        bail!("nothing to do: give --driver-runpath DIR, --origin or --check");
    }
    let (files, unreadable) = crate::elf_files::loadable_or_unreadable(&tree)?;
    if let Some((f, e)) = unreadable.first() {
        return Err(bad_input(format!(
            "{}: cannot be read ({e}){}; relink reads every file of the tree before it changes \
             any, and changed nothing",
            f.display(),
            match unreadable.len() {
                1 => String::new(),
                n => format!(", nor {} other files", n - 1),
            }
        )));
    }
    let mut report = Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        tree: tree.display().to_string(),
        dry_run: args.dry_run,
        files_checked: files.len(),
        changed: Vec::new(),
        problems: Vec::new(),
    };
    // Every replacement is written beside its file first; they are renamed into place together
    // once all are written, or none is.
    let mut batch = cudist_fs::Batch::new();
    for f in &files {
        let data = std::fs::read(f).with_context(|| format!("cannot read {}", f.display()))?;
        let elf = ElfFile::parse(&data).map_err(|e| {
            bad_input(format!(
                "{}: a damaged ELF file ({e}); relink changed nothing in the tree",
                f.display()
            ))
        })?;
        if !elf.has_dynamic {
            continue;
        }
        let (tag, before) = if !elf.runpath.is_empty() {
            (SearchPathTag::Runpath, elf.runpath.clone())
        } else if !elf.rpath.is_empty() {
            (SearchPathTag::Rpath, elf.rpath.clone())
        } else {
            (SearchPathTag::Runpath, Vec::new())
        };
        let tag_name = if tag == SearchPathTag::Rpath {
            "rpath"
        } else {
            "runpath"
        };
        let dir = f.parent().unwrap_or(&tree);
        if args.check {
            // Where each entry leads, as the loader expands it: absolute, or `$ORIGIN`-relative
            // (`$ORIGIN/../../nvidia/cu13/lib` from a file near the top leaves the tree just as
            // `/usr/local/cuda/lib64` does). Entries with other tokens (`$LIB`) are not judged.
            let resolved = |e: &str| -> Option<std::path::PathBuf> {
                let e = e.replace("${ORIGIN}", "$ORIGIN");
                if e.starts_with('/') {
                    return Some(cudist_fs::inner::lexical(Path::new(&e)));
                }
                let rest = e.strip_prefix("$ORIGIN")?;
                if rest.contains('$') || !(rest.is_empty() || rest.starts_with('/')) {
                    return None;
                }
                Some(cudist_fs::inner::lexical(
                    &dir.join(rest.trim_start_matches('/')),
                ))
            };
            let allowed = |e: &str, p: &Path| {
                args.allow.iter().any(|a| {
                    let a = a.trim_end_matches('/');
                    a == e.trim_end_matches('/') || Path::new(a) == p
                })
            };
            let mut outside: Vec<String> = before
                .iter()
                .filter_map(|e| {
                    let p = resolved(e)?;
                    if p.starts_with(&tree) || allowed(e, &p) {
                        return None;
                    }
                    Some(if e.starts_with('/') {
                        format!("{tag_name} {e}")
                    } else {
                        format!("{tag_name} {e} ({})", p.display())
                    })
                })
                .collect();
            outside.extend(
                elf.needed
                    .iter()
                    .filter(|n| n.starts_with('/') && !Path::new(n).starts_with(&tree))
                    .map(|n| format!("NEEDED {n}")),
            );
            if !outside.is_empty() {
                report.problems.push(FileChange {
                    path: f.display().to_string(),
                    before: before.clone(),
                    after: before,
                    tag: tag_name,
                    outside,
                });
            }
            continue;
        }
        let mut after: Vec<String> = Vec::new();
        for e in &before {
            let expanded = e.replace("${ORIGIN}", "$ORIGIN");
            if args.origin && expanded.starts_with('/') {
                let p = cudist_fs::inner::lexical(Path::new(&expanded));
                if p.starts_with(&tree) {
                    after.push(origin_relative(dir, &p));
                }
                // Outside the tree: a build-machine path, dropped.
                continue;
            }
            after.push(e.clone());
        }
        if let Some(d) = &args.driver_runpath {
            if needs_driver(&elf, catalog) && !after.iter().any(|e| e == d) {
                after.push(d.clone());
            }
        }
        after.dedup();
        if after == before {
            continue;
        }
        if !args.dry_run {
            let edits = Edits {
                search_path: Some((after.clone(), tag)),
                ..Edits::default()
            };
            let patched = apply(&data, &edits).with_context(|| {
                format!(
                    "{}: cannot patch; relink changed nothing in the tree",
                    f.display()
                )
            })?;
            batch
                .stage(f, &patched.data)
                .map_err(|e| Error::Message(format!("{e}; relink changed nothing in the tree")))?;
        }
        report.changed.push(FileChange {
            path: f.display().to_string(),
            before,
            after,
            tag: tag_name,
            outside: Vec::new(),
        });
    }
    batch.commit()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn origin_paths() {
        assert_eq!(
            origin_relative(Path::new("/t/lib"), Path::new("/t/lib")),
            "$ORIGIN"
        );
        assert_eq!(
            origin_relative(Path::new("/t/bin"), Path::new("/t/lib")),
            "$ORIGIN/../lib"
        );
        assert_eq!(
            origin_relative(Path::new("/t/a/b"), Path::new("/t/lib/x")),
            "$ORIGIN/../../lib/x"
        );
        assert_eq!(
            cudist_fs::inner::lexical(Path::new("/t/bin/../lib/./x")),
            PathBuf::from("/t/lib/x")
        );
    }
}
