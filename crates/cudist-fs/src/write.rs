//! Writing outputs without following a link cudist did not make, and without leaving anything
//! half-written.
//!
//! Every file cudist writes is first an exclusive temporary (`O_CREAT|O_EXCL`, a random name, in
//! the destination's own directory: a name nobody could plant a link at beforehand), then renamed
//! over its destination. `rename` replaces a link at the destination instead of writing through
//! it. A temporary that is not committed is removed when it is dropped, on every error path.
//!
//! Interrupted runs leave nothing either: every temporary and scratch directory is registered
//! while it lives, and [`remove_live`] (which the command line calls on SIGINT, SIGTERM and SIGHUP)
//! removes them all, waiting for a batch of replacements being committed to finish first. A run
//! killed outright (SIGKILL, a power cut) cannot clean up: each temporary holds an exclusive
//! `flock` for as long as its process lives, so the next run writing to the same directory
//! recognises what no live process holds by its exclusive name (`.NAME.XXXXXX.cudist-tmp`,
//! `.LABEL.cudist-XXXXXX`) and removes it ([`sweep`]), and says so ([`set_sweep_reporter`]).

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

const TEMP_SUFFIX: &str = ".cudist-tmp";
const SCRATCH_MARK: &str = ".cudist-";

fn temp_beside(dest: &Path) -> io::Result<(NamedTempFile, Live)> {
    let dir = dir_of(dest);
    sweep(dir);
    let (tmp, live) = Live::make(
        || {
            tempfile::Builder::new()
                .prefix(&prefix_for(dest))
                .suffix(TEMP_SUFFIX)
                // Created 0666 less the umask, as a plain create would be; the mode of a replaced
                // file is set by the caller.
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(dir)
        },
        |t| t.path(),
    )?;
    try_lock(tmp.as_file());
    Ok((tmp, live))
}

/// Takes the exclusive lock that marks a temporary as alive (released by the kernel when its
/// process ends, however it ends); false when another open file holds it. Its maker takes it at
/// once; [`sweep`] takes it to learn that no live process holds a leftover. A file system without
/// `flock` leaves temporaries unmarked: then only their age protects them from [`sweep`], which
/// such a file system's leftovers never pass anyway.
fn try_lock(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this process owns; no memory is passed.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// The temporaries and scratch directories of this process that exist now, by registration
/// number; `closing` once [`remove_live`] has run (what registers after that is removed at once).
struct LiveSet {
    next: u64,
    paths: std::collections::BTreeMap<u64, PathBuf>,
    closing: bool,
}

static LIVE: std::sync::Mutex<LiveSet> = std::sync::Mutex::new(LiveSet {
    next: 0,
    paths: std::collections::BTreeMap::new(),
    closing: false,
});

/// Held while a [`Batch`] renames its files into place: [`remove_live`] waits for it, so a signal
/// never leaves a tree half replaced.
static COMMITTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn live_set() -> std::sync::MutexGuard<'static, LiveSet> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A path registered for [`remove_live`] while this value lives.
struct Live(u64);

impl Live {
    /// Makes a temporary (`make`) and registers its path (`path`) under one hold of the set's
    /// lock: [`remove_live`], which takes the same lock, never finds a temporary that exists on
    /// disk but is not yet registered (a signal arriving between the two would leave it behind).
    fn make<T>(
        make: impl FnOnce() -> io::Result<T>,
        path: impl Fn(&T) -> &Path,
    ) -> io::Result<(T, Live)> {
        let mut set = live_set();
        let made = make()?;
        let p = path(&made);
        if set.closing {
            remove_path(p);
        }
        set.next += 1;
        let n = set.next;
        set.paths.insert(n, p.to_path_buf());
        Ok((made, Live(n)))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        live_set().paths.remove(&self.0);
    }
}

fn remove_path(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

/// Removes every temporary and scratch directory this process has made and not yet committed or
/// removed, after any batch of replacements being committed has finished; what is made after
/// this is removed at once. For a signal handler that ends the process next. Returns how many
/// were removed.
pub fn remove_live() -> usize {
    let _committing = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
    let mut set = live_set();
    set.closing = true;
    for p in set.paths.values() {
        remove_path(p);
    }
    set.paths.len()
}

/// What is told of leftovers [`sweep`] removed: the directory and their names.
pub type SweepReporter = fn(&Path, &[String]);

static REPORTER: std::sync::Mutex<Option<SweepReporter>> = std::sync::Mutex::new(None);

/// Sets who is told of leftovers removed (the command line prints a line); by default nobody.
pub fn set_sweep_reporter(r: SweepReporter) {
    *REPORTER.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
}

/// A leftover younger than this is left alone: its maker may be between creating and locking it.
const SWEEP_AGE: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a name is one cudist gives its temporaries (`.NAME.XXXXXX.cudist-tmp`) or scratch
/// directories (`.LABEL.cudist-XXXXXX`): `Some(true)` for a directory's name.
fn leftover_kind(name: &str) -> Option<bool> {
    if !name.starts_with('.') {
        return None;
    }
    if name.ends_with(TEMP_SUFFIX) && name.len() > TEMP_SUFFIX.len() + 1 {
        return Some(false);
    }
    let (_, tail) = name.rsplit_once(SCRATCH_MARK)?;
    (tail.len() == 6 && tail.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(true)
}

/// Removes, once per directory and process, what runs killed outright left in `dir`: entries
/// with a temporary's or scratch directory's exclusive name, of this user, that no live process
/// holds locked and that are at least a second old. Never follows a link; anything else in the
/// directory is not touched. Returns the names removed.
pub fn sweep(dir: &Path) -> Vec<String> {
    static SWEPT: std::sync::Mutex<std::collections::BTreeSet<PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !SWEPT.lock().unwrap_or_else(|e| e.into_inner()).insert(key) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(is_dir) = name.to_str().and_then(leftover_kind) else {
            continue;
        };
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age >= SWEEP_AGE);
        if meta.uid() != me || meta.is_dir() != is_dir || !(meta.is_dir() || meta.is_file()) || !old
        {
            continue;
        }
        use std::os::unix::fs::OpenOptionsExt;
        let flags = libc::O_NOFOLLOW | if is_dir { libc::O_DIRECTORY } else { 0 };
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&path)
        else {
            continue;
        };
        if !try_lock(&f) {
            continue;
        }
        let gone = if is_dir {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed.push(name.to_string_lossy().into_owned());
        }
    }
    if !removed.is_empty() {
        if let Some(r) = *REPORTER.lock().unwrap_or_else(|e| e.into_inner()) {
            r(dir, &removed);
        }
    }
    removed
}

/// A file being written for `dest`. Nothing appears at `dest` until [`AtomicFile::commit`];
/// dropped uncommitted, the temporary is removed.
pub struct AtomicFile {
    tmp: NamedTempFile,
    dest: PathBuf,
    _live: Live,
}

impl AtomicFile {
    /// Creates the temporary beside `dest` (its directory must exist).
    pub fn new(dest: &Path) -> io::Result<AtomicFile> {
        let (tmp, live) = temp_beside(dest)?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            _live: live,
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

/// Copies the file at `src` to `dest` byte for byte through an [`AtomicFile`] (mode 0644), in
/// bounded pieces; the bytes copied.
pub fn copy_atomic(src: &Path, dest: &Path) -> io::Result<u64> {
    let mut from = File::open(src)?;
    let mut f = AtomicFile::new(dest)?;
    let n = io::copy(&mut from, &mut f)?;
    f.set_mode(0o644)?;
    f.commit()?;
    Ok(n)
}

/// A scratch directory with an unpredictable name in `parent`, removed with its content when
/// dropped. `label` goes into the name (`.LABEL.cudist-XXXXXX`).
pub fn scratch_dir(parent: &Path, label: &str) -> io::Result<ScratchDir> {
    sweep(parent);
    let (dir, live) = Live::make(
        || {
            tempfile::Builder::new()
                .prefix(&format!(".{label}{SCRATCH_MARK}"))
                .rand_bytes(6)
                .tempdir_in(parent)
        },
        |d| d.path(),
    )?;
    let held = File::open(dir.path())?;
    try_lock(&held);
    Ok(ScratchDir {
        _live: live,
        _held: held,
        dir,
    })
}

/// A scratch directory ([`scratch_dir`]): removed with its content when dropped, or by
/// [`remove_live`] on a signal; locked while it lives, so no other run's [`sweep`] takes it.
pub struct ScratchDir {
    _live: Live,
    _held: File,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for ScratchDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ScratchDir").field(&self.dir.path()).finish()
    }
}

impl ScratchDir {
    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
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
    _live: [Live; 2],
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
        let (mut tmp, live_tmp) = temp_beside(dest).map_err(write)?;
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
        let (backup, live_backup) = Live::make(
            || {
                Ok(tempfile::Builder::new()
                    .prefix(&prefix_for(dest))
                    .suffix(".cudist-orig")
                    .make_in(dir_of(dest), |p| std::fs::hard_link(dest, p))?
                    .into_temp_path())
            },
            |b| b,
        )
        .map_err(write)?;
        self.staged.push(Staged {
            tmp,
            backup,
            dest: dest.to_path_buf(),
            _live: [live_tmp, live_backup],
        });
        Ok(())
    }

    /// Renames every staged file into place, or none. Returns how many were replaced.
    pub fn commit(self) -> Result<usize, ReplaceError> {
        // A signal waits for the renames to end (remove_live).
        let _committing = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
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

    #[test]
    fn sweep_takes_only_unlocked_old_leftovers_by_their_exclusive_names() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        std::fs::write(&target, "x").unwrap();
        let p = |n: &str| d.path().join(n);
        std::fs::write(p(".a.whl.abc123.cudist-tmp"), "half").unwrap();
        std::fs::create_dir(p(".unpack.cudist-Ab12Cd")).unwrap();
        std::fs::write(p(".unpack.cudist-Ab12Cd/member"), "x").unwrap();
        std::fs::write(p("keep.cudist-tmp"), "not ours: no leading dot").unwrap();
        std::fs::create_dir(p(".x.cudist-toolong1")).unwrap();
        std::fs::write(p(".held.q1w2e3.cudist-tmp"), "a live run's").unwrap();
        symlink(&target, p(".l.q1w2e3.cudist-tmp")).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for n in [
            ".a.whl.abc123.cudist-tmp",
            ".unpack.cudist-Ab12Cd",
            "keep.cudist-tmp",
            ".x.cudist-toolong1",
            ".held.q1w2e3.cudist-tmp",
        ] {
            File::open(p(n)).unwrap().set_modified(old).unwrap();
        }
        // Made just now: spared whatever its lock says.
        std::fs::write(p(".young.abcdef.cudist-tmp"), "").unwrap();
        let held = File::open(p(".held.q1w2e3.cudist-tmp")).unwrap();
        assert!(try_lock(&held));
        let mut removed = sweep(d.path());
        removed.sort();
        assert_eq!(
            removed,
            [".a.whl.abc123.cudist-tmp", ".unpack.cudist-Ab12Cd"]
        );
        assert_eq!(
            names(d.path()),
            [
                ".held.q1w2e3.cudist-tmp",
                ".l.q1w2e3.cudist-tmp",
                ".x.cudist-toolong1",
                ".young.abcdef.cudist-tmp",
                "keep.cudist-tmp"
            ]
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
        // Once per directory and process.
        drop(held);
        assert!(sweep(d.path()).is_empty());
    }
}
