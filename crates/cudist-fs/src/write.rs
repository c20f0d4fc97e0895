//! Writing outputs without following a link cudist did not make, and without leaving anything
//! half-written.
//!
//! Every file cudist writes is first an exclusive temporary (`O_CREAT|O_EXCL`, a random name, in
//! the destination's own directory: a name nobody could plant a link at beforehand), then renamed
//! over its destination. `rename` replaces a link at the destination instead of writing through
//! it. A temporary that is not committed is removed when it is dropped, on every error path.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// The directory a destination lives in (`.` for a bare name).
fn dir_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.NAME.` — temporaries carry their destination's name, so a stray one (after a power cut) says
/// what it was for.
fn prefix_for(dest: &Path) -> String {
    format!(
        ".{}.",
        dest.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

fn temp_beside(dest: &Path) -> io::Result<NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&prefix_for(dest))
        .suffix(".cudist-tmp")
        // Created 0666 less the umask, as a plain create would be; the mode of a replaced file is
        // set by the caller.
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir_of(dest))
}

/// A file being written for `dest`. Nothing appears at `dest` until [`AtomicFile::commit`];
/// dropped uncommitted, the temporary is removed.
pub struct AtomicFile {
    tmp: NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary beside `dest` (its directory must exist).
    pub fn new(dest: &Path) -> io::Result<AtomicFile> {
        Ok(AtomicFile {
            tmp: temp_beside(dest)?,
            dest: dest.to_path_buf(),
        })
    }

    /// The temporary's file.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary's path (for messages).
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Sets the mode the file will have.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        self.tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
    }

    /// Flushes the file to disk and renames it over `dest`.
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.dest).map_err(|e| e.error)?;
        Ok(())
    }
}

impl io::Seek for AtomicFile {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.tmp.seek(to)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// Writes `data` to `dest` through an [`AtomicFile`], with `mode` if given.
pub fn write_atomic(dest: &Path, data: &[u8], mode: Option<u32>) -> io::Result<()> {
    let mut f = AtomicFile::new(dest)?;
    f.write_all(data)?;
    if let Some(m) = mode {
        f.set_mode(m)?;
    }
    f.commit()
}

/// A scratch directory with an unpredictable name in `parent`, removed with its content when
/// dropped. `label` goes into the name (`.LABEL.cudist-XXXXXX`).
pub fn scratch_dir(parent: &Path, label: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!(".{label}.cudist-"))
        .tempdir_in(parent)
}

/// Why a batch of replacements was refused or undone.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    #[error("{path} is {kind}, not a regular file to replace")]
    NotAFile { path: String, kind: &'static str },
    #[error(
        "{path} is owned by uid {uid} gid {gid} and mode {mode:o}; cudist runs as uid {me} and \
         cannot give the new file that owner, so it would change hands{setuid}"
    )]
    Owner {
        path: String,
        uid: u32,
        gid: u32,
        mode: u32,
        me: u32,
        setuid: &'static str,
    },
    #[error("cannot write the new {path}")]
    Write {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot replace {path}; every file replaced before it was put back, nothing changed")]
    Undone {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot replace {path}, and {restore} could not be put back: the tree is partly changed"
    )]
    Partial {
        path: String,
        restore: String,
        #[source]
        source: io::Error,
    },
}

/// One staged replacement: the new content, and a second name for the original.
struct Staged {
    tmp: NamedTempFile,
    backup: tempfile::TempPath,
    dest: PathBuf,
}

/// Replaces several files at once, all or nothing. [`Batch::stage`] writes each new content to a
/// temporary beside its file, with the owner, group and mode of the file it replaces (refusing
/// where the owner cannot be kept, as for a file of another user when cudist is not root), and
/// gives the original a second name (a hard link); [`Batch::commit`] renames the temporaries into
/// place and, on any failure, renames the originals back from their second names. Dropping a
/// batch removes its temporaries and second names: nothing in the tree changes.
#[derive(Default)]
pub struct Batch {
    staged: Vec<Staged>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    /// How many replacements are staged.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Stages `data` as the new content of the regular file `dest`.
    pub fn stage(&mut self, dest: &Path, data: &[u8]) -> Result<(), ReplaceError> {
        let path = dest.display().to_string();
        let write = |source| ReplaceError::Write {
            path: path.clone(),
            source,
        };
        let meta = std::fs::symlink_metadata(dest).map_err(write)?;
        if !meta.file_type().is_file() {
            return Err(ReplaceError::NotAFile {
                path,
                kind: crate::read::kind_of(meta.file_type()),
            });
        }
        let mut tmp = temp_beside(dest).map_err(write)?;
        tmp.write_all(data).map_err(write)?;
        let mine = tmp.as_file().metadata().map_err(write)?;
        if (mine.uid(), mine.gid()) != (meta.uid(), meta.gid())
            && std::os::unix::fs::fchown(tmp.as_file(), Some(meta.uid()), Some(meta.gid())).is_err()
        {
            return Err(ReplaceError::Owner {
                path,
                uid: meta.uid(),
                gid: meta.gid(),
                mode: meta.mode() & 0o7777,
                me: mine.uid(),
                setuid: if meta.mode() & 0o6000 != 0 {
                    ", and a set-user/group-ID file would run as someone else"
                } else {
                    ""
                },
            });
        }
        // After the owner: chown clears the set-ID bits.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(write)?;
        tmp.as_file().sync_all().map_err(write)?;
        // A hard link to the original under an unpredictable name beside it, to put it back.
        let backup = tempfile::Builder::new()
            .prefix(&prefix_for(dest))
            .suffix(".cudist-orig")
            .make_in(dir_of(dest), |p| std::fs::hard_link(dest, p))
            .map_err(write)?
            .into_temp_path();
        self.staged.push(Staged {
            tmp,
            backup,
            dest: dest.to_path_buf(),
        });
        Ok(())
    }

    /// Renames every staged file into place, or none. Returns how many were replaced.
    pub fn commit(self) -> Result<usize, ReplaceError> {
        let n = self.staged.len();
        let mut backups = Vec::with_capacity(n);
        for s in self.staged {
            let dest = s.dest;
            if let Err(e) = s.tmp.persist(&dest) {
                // Put back what was already replaced, from the second names.
                let not_restored: Vec<String> = backups
                    .iter()
                    .filter(|(b, d): &&(tempfile::TempPath, PathBuf)| {
                        std::fs::rename(b, d).is_err()
                    })
                    .map(|(_, d)| d.display().to_string())
                    .collect();
                let path = dest.display().to_string();
                return Err(if not_restored.is_empty() {
                    ReplaceError::Undone {
                        path,
                        source: e.error,
                    }
                } else {
                    ReplaceError::Partial {
                        path,
                        restore: not_restored.join(", "),
                        source: e.error,
                    }
                });
            }
            backups.push((s.backup, dest));
        }
        // The originals' second names go as the backups are dropped.
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn atomic_files_replace_links_instead_of_following_them() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = d.path().join("out");
        symlink(&victim, &out).unwrap();
        write_atomic(&out, b"new", Some(0o644)).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        // Dropped uncommitted: nothing is left.
        {
            let mut f = AtomicFile::new(&d.path().join("never")).unwrap();
            f.write_all(b"x").unwrap();
        }
        assert_eq!(names(d.path()), vec!["out", "victim"]);
    }

    #[test]
    fn a_batch_is_all_or_nothing_and_keeps_modes() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::fs::write(&a, "a0").unwrap();
        std::fs::write(&b, "b0").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o750)).unwrap();
        let mut batch = Batch::new();
        batch.stage(&a, b"a1").unwrap();
        batch.stage(&b, b"b1").unwrap();
        assert_eq!(batch.commit().unwrap(), 2);
        assert_eq!(std::fs::read(&a).unwrap(), b"a1");
        assert_eq!(std::fs::read(&b).unwrap(), b"b1");
        assert_eq!(
            std::fs::metadata(&a).unwrap().permissions().mode() & 0o7777,
            0o750
        );
        assert_eq!(names(d.path()), vec!["a", "b"]);
        // A staged batch that is dropped changes nothing and leaves nothing.
        let mut batch = Batch::new();
        batch.stage(&a, b"a2").unwrap();
        drop(batch);
        assert_eq!(std::fs::read(&a).unwrap(), b"a1");
        assert_eq!(names(d.path()), vec!["a", "b"]);
        // The second rename fails (its destination became a directory): the first is undone.
        let mut batch = Batch::new();
        batch.stage(&a, b"a3").unwrap();
        batch.stage(&b, b"b3").unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(b.join("keep"), "k").unwrap();
        let e = batch.commit().unwrap_err();
        assert!(e.to_string().contains("nothing changed"), "{e}");
        assert_eq!(std::fs::read(&a).unwrap(), b"a1");
        assert_eq!(names(d.path()), vec!["a", "b"]);
        // Links and directories are not files to replace.
        let l = d.path().join("l");
        symlink(&a, &l).unwrap();
        let e = Batch::new().stage(&l, b"x").unwrap_err().to_string();
        assert!(e.contains("a symbolic link, not a regular file"), "{e}");
    }

    #[test]
    fn scratch_directories_are_unpredictable_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let path = {
            let s = scratch_dir(d.path(), "out").unwrap();
            std::fs::write(s.path().join("f"), "x").unwrap();
            assert!(s
                .path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".out.cudist-"));
            s.path().to_path_buf()
        };
        assert!(!path.exists());
    }
}
