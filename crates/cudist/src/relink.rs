//! `cudist relink TREE`: the fix-ups distribution packagers run over an installed tree.
//!
//! - `--driver-runpath DIR` adds DIR (e.g. `/run/opengl-driver/lib`) to the search path of every
//!   ELF file that needs the CUDA driver: `libcuda.so.1` in NEEDED, or a CUDA library the catalog
//!   knows to dlopen it (the runtime). A file keeps its tag (DT_RUNPATH, or DT_RPATH when that is
//!   what it has, so its inheritance does not change); a file with neither gets DT_RUNPATH.
//! - `--origin` rewrites absolute search-path entries inside TREE to `$ORIGIN`-relative ones and
//!   drops absolute entries outside it (build-machine paths).
//! - `--check` changes nothing and fails with the list of references outside TREE (`--allow DIR`
//!   for the ones that are meant, such as the driver directory).
//!
//! Files are patched with [`cudist_elf::patch`] (verified after each edit) and replaced all or
//! nothing ([`cudist_fs::Batch`]): every new file is written beside its original first, then all
//! are renamed into place, and a failure puts back what was replaced. Each keeps its owner, group
//! and mode; a file whose owner cannot be kept (another user's, when cudist is not root) stops the
//! run before anything changes, as does a file that cannot be read or parsed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::errors::InputContext;
use anyhow::{bail, Context, Result};
use cudist_catalog::{Catalog, SonameClass};
use cudist_elf::patch::{apply, Edits, SearchPathTag};
use cudist_elf::ElfFile;
use serde::Serialize;

use crate::util::{self, outln};

/// `cudist relink` arguments.
#[derive(clap::Args, Debug)]
pub struct RelinkArgs {
    /// The installed tree (a prefix, a Nix output, an unpacked package).
    #[arg(value_name = "TREE")]
    pub tree: PathBuf,
    /// Add this directory to the search path of every ELF file that needs the CUDA driver.
    #[arg(long, value_name = "DIR")]
    pub driver_runpath: Option<String>,
    /// Rewrite absolute search-path entries inside TREE as $ORIGIN-relative; drop those outside.
    #[arg(long)]
    pub origin: bool,
    /// Change nothing; fail with a list of the references to paths outside TREE.
    #[arg(long, conflicts_with_all = ["driver_runpath", "origin"])]
    pub check: bool,
    /// With --check: directories outside TREE that are fine to reference (the driver's, e.g.
    /// /run/opengl-driver/lib); repeatable.
    #[arg(long, value_name = "DIR", requires = "check")]
    pub allow: Vec<String>,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON (schema cudist.relink/1).
    #[arg(long)]
    pub json: bool,
}

/// One file's changes or findings.
#[derive(Debug, Serialize)]
pub struct FileChange {
    pub path: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// `rpath` or `runpath`.
    pub tag: &'static str,
    /// With `--check`: the references outside the tree.
    pub outside: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub tree: String,
    pub dry_run: bool,
    pub files_checked: usize,
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

/// Runs `cudist relink`.
pub fn run(args: RelinkArgs, catalog: &Catalog) -> Result<ExitCode> {
    let tree = std::fs::canonicalize(&args.tree)
        .input_context(|| format!("{}: not a directory", args.tree.display()))?;
    if !tree.is_dir() {
        return Err(crate::errors::input(format!(
            "{}: not a directory",
            args.tree.display()
        )));
    }
    if !args.check && args.driver_runpath.is_none() && !args.origin {
        bail!("nothing to do: give --driver-runpath DIR, --origin or --check");
    }
    let (files, unreadable) = cudist_analysis::elf_files::loadable_or_unreadable(&tree)?;
    if let Some((f, e)) = unreadable.first() {
        return Err(crate::errors::input(format!(
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
        schema: "cudist.relink/1",
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
            crate::errors::input(format!(
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
            let mut outside: Vec<String> = before
                .iter()
                .filter(|e| {
                    e.starts_with('/')
                        && !cudist_fs::inner::lexical(Path::new(e)).starts_with(&tree)
                })
                .filter(|e| {
                    !args
                        .allow
                        .iter()
                        .any(|a| a.trim_end_matches('/') == e.trim_end_matches('/'))
                })
                .map(|e| format!("{tag_name} {e}"))
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
                .map_err(|e| anyhow::anyhow!("{e}; relink changed nothing in the tree"))?;
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
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let mut s = String::new();
        if args.check {
            if report.problems.is_empty() {
                s.push_str(&format!(
                    "cudist relink --check: {} ELF files, none references a path outside {}\n",
                    report.files_checked, report.tree
                ));
            } else {
                s.push_str(&format!(
                    "cudist relink --check: {} of {} ELF files reference paths outside {}:\n",
                    report.problems.len(),
                    report.files_checked,
                    report.tree
                ));
                for p in &report.problems {
                    s.push_str(&format!("  {}: {}\n", p.path, p.outside.join(", ")));
                }
            }
        } else {
            s.push_str(&format!(
                "cudist relink: {} of {} ELF files {}\n",
                report.changed.len(),
                report.files_checked,
                if args.dry_run {
                    "would change"
                } else {
                    "changed"
                }
            ));
            for c in &report.changed {
                s.push_str(&format!(
                    "  {}: {} {:?} -> {:?}\n",
                    c.path,
                    c.tag,
                    c.before.join(":"),
                    c.after.join(":")
                ));
            }
        }
        util::emit(&s);
    }
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
