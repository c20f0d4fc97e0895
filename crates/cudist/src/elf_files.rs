//! Finding the ELF files a command works on: executables and shared objects (what the dynamic
//! loader loads) below a directory, told apart by their first bytes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// File name endings that are never ELF files (skipped without opening them: a Python package
/// holds thousands of sources and headers).
const NOT_ELF: &[&str] = &[
    ".py", ".pyc", ".pyi", ".pyx", ".pxd", ".pxi", ".h", ".hpp", ".cuh", ".cu", ".c", ".cpp",
    ".inl", ".txt", ".md", ".rst", ".json", ".toml", ".cfg", ".ini", ".typed", ".html", ".js",
    ".css", ".png", ".csv", ".yaml", ".yml", ".cmake", ".pc",
];

/// The executables and shared objects below `p` (or `p` itself), sorted; symbolic links are not
/// followed.
pub fn loadable(p: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let meta =
        std::fs::symlink_metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
    if meta.is_dir() {
        walk(p, &mut out)?;
        out.sort();
    } else if meta.is_file() && is_loadable_elf(p) {
        out.push(p.to_path_buf());
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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
            if !NOT_ELF.iter().any(|x| name.ends_with(x)) && is_loadable_elf(&path) {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// Whether a file is an ELF executable or shared object (from its first 18 bytes).
pub fn is_loadable_elf(p: &Path) -> bool {
    let mut head = [0u8; 18];
    let read = std::fs::File::open(p)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok();
    let e_type = u16::from_le_bytes([head[16], head[17]]);
    read && cudist_elf::is_elf(&head) && head[5] == 1 && matches!(e_type, 2 | 3)
}
