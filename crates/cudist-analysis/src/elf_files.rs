//! Finding the ELF files a command works on: executables and shared objects (what the dynamic
//! loader loads) below a directory, told apart by their first bytes.

use std::path::{Path, PathBuf};

use crate::error::{Result, ResultExt};

/// File name endings that are never ELF files (skipped without opening them: a Python package
/// holds thousands of sources and headers).
const NOT_ELF: &[&str] = &[
    ".py", ".pyc", ".pyi", ".pyx", ".pxd", ".pxi", ".h", ".hpp", ".cuh", ".cu", ".c", ".cpp",
    ".inl", ".txt", ".md", ".rst", ".json", ".toml", ".cfg", ".ini", ".typed", ".html", ".js",
    ".css", ".png", ".csv", ".yaml", ".yml", ".cmake", ".pc",
];

/// The executables and shared objects below `p` (or `p` itself), sorted; symbolic links are not
/// followed. Files that cannot be opened are left out.
pub fn loadable(p: &Path) -> Result<Vec<PathBuf>> {
    Ok(loadable_or_unreadable(p)?.0)
}

/// The loadable ELF files directly in `dir` (not below it) whose paths `keep` accepts; none
/// where it cannot be listed.
pub fn loadable_in(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| keep(p))
        .filter(|p| loadable_elf(p).unwrap_or(false))
        .collect();
    out.sort();
    out
}

/// [`loadable`], with the regular files that could not be opened to tell (a command that
/// changes a tree must not skip those silently).
pub fn loadable_or_unreadable(p: &Path) -> Result<Found> {
    let mut out = (Vec::new(), Vec::new());
    let meta =
        std::fs::symlink_metadata(p).input_context(|| format!("cannot read {}", p.display()))?;
    if meta.is_dir() {
        walk(p, &mut out)?;
        out.0.sort();
    } else if meta.is_file() {
        match loadable_elf(p) {
            Ok(true) => out.0.push(p.to_path_buf()),
            Ok(false) => {}
            Err(e) => out.1.push((p.to_path_buf(), e)),
        }
    }
    Ok(out)
}

/// The ELF files found, and the files that could not be opened to tell, with why.
pub type Found = (Vec<PathBuf>, Vec<(PathBuf, std::io::Error)>);

fn walk(dir: &Path, out: &mut Found) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        // The entry's type comes with the directory listing: no stat per file.
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        if ft.is_dir() {
            walk(&path, out)?;
        } else if ft.is_file() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if NOT_ELF.iter().any(|x| name.ends_with(x)) {
                continue;
            }
            match loadable_elf(&path) {
                Ok(true) => out.0.push(path),
                Ok(false) => {}
                Err(e) => out.1.push((path, e)),
            }
        }
    }
    Ok(())
}

/// Whether a file is an ELF executable or shared object (from its first 18 bytes); a file that
/// cannot be opened is not one.
pub fn is_loadable_elf(p: &Path) -> bool {
    loadable_elf(p).unwrap_or(false)
}

/// Whether a file is an ELF executable or shared object, or why it could not be opened to tell.
/// Only regular files are opened (a FIFO would block).
fn loadable_elf(p: &Path) -> std::io::Result<bool> {
    let mut f = cudist_fs::open_regular(p).map_err(cudist_fs::ReadError::into_io)?;
    let mut head = [0u8; 18];
    match std::io::Read::read_exact(&mut f, &mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let e_type = u16::from_le_bytes([head[16], head[17]]);
    Ok(cudist_elf::is_elf(&head) && head[5] == 1 && matches!(e_type, 2 | 3))
}
