//! Unpacking an archive's members under a root, and nowhere else.
//!
//! [`Unpacker`] is what cudist's tar readers (NVIDIA's redistributable archives, conda packages)
//! write through: every member name must be a plain path inside the root, no member is written
//! through a link (a link member named `lib` pointing at `/etc`, then a file `lib/passwd`, is the
//! classic escape), link members may only point inside the root, files are created exclusively,
//! and the members together may not unpack to more than a limit.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::inner::{lexical, member_name, resolve_beneath, PathError};

/// Why a member was not unpacked.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("member {0}")]
    Path(#[from] PathError),
    #[error("member {name:?}: {source}")]
    Io {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("member {name:?} {source}")]
    Size {
        name: String,
        #[source]
        source: crate::read::UnpackError,
    },
    #[error(
        "the members unpack to more than the {limit}-byte limit (raise it with --max-unpacked)"
    )]
    TooLarge { limit: u64 },
    #[error(
        "member {name:?} is a hard link to {target:?}, which is not a file unpacked before it"
    )]
    HardLink { name: String, target: String },
}

/// Writes members under one root directory (which must exist).
pub struct Unpacker {
    root: PathBuf,
    unpacked: u64,
    limit: u64,
}

impl Unpacker {
    /// Unpacks under `root`, at most `limit` bytes in all.
    pub fn new(root: &Path, limit: u64) -> io::Result<Unpacker> {
        Ok(Unpacker {
            root: std::fs::canonicalize(root)?,
            unpacked: 0,
            limit,
        })
    }

    /// The root members are unpacked under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `name` goes: a plain path under the root, reached through no link.
    fn place(&self, name: &str) -> Result<(PathBuf, String), ExtractError> {
        let name = name.strip_prefix("./").unwrap_or(name);
        member_name(name)?;
        let name = name.trim_end_matches('/').to_string();
        let at = self.root.join(&name);
        let walked = resolve_beneath(&self.root, &name)?;
        if walked != at {
            return Err(PathError::LinkEscapes {
                path: name.clone(),
                link: name.clone(),
                target: walked.display().to_string(),
                root: self.root.display().to_string(),
            }
            .into());
        }
        Ok((at, name))
    }

    fn parent_of(at: &Path, name: &str) -> Result<(), ExtractError> {
        if let Some(p) = at.parent() {
            std::fs::create_dir_all(p).map_err(|source| ExtractError::Io {
                name: name.to_string(),
                source,
            })?;
        }
        Ok(())
    }

    /// A directory.
    pub fn dir(&mut self, name: &str) -> Result<(), ExtractError> {
        let (at, name) = self.place(name)?;
        std::fs::create_dir_all(&at).map_err(|source| ExtractError::Io { name, source })
    }

    /// A regular file of `size` bytes read from `r`, with `mode`'s permission bits (never set-ID).
    pub fn file(
        &mut self,
        name: &str,
        size: u64,
        mode: Option<u32>,
        r: &mut dyn Read,
    ) -> Result<PathBuf, ExtractError> {
        self.unpacked = self.unpacked.saturating_add(size);
        if self.unpacked > self.limit {
            return Err(ExtractError::TooLarge { limit: self.limit });
        }
        let (at, name) = self.place(name)?;
        Self::parent_of(&at, &name)?;
        let io_err = |source| ExtractError::Io {
            name: name.clone(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&at)
            .map_err(io_err)?;
        let got = io::copy(&mut r.take(size + 1), &mut f).map_err(io_err)?;
        if got != size {
            return Err(ExtractError::Size {
                name,
                source: if got > size {
                    crate::read::UnpackError::Longer { declared: size }
                } else {
                    crate::read::UnpackError::Shorter {
                        got,
                        declared: size,
                    }
                },
            });
        }
        if let Some(m) = mode {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(m & 0o777))
                .map_err(io_err)?;
        }
        Ok(at)
    }

    /// A symbolic link; its target must be relative and stay inside the root.
    pub fn symlink(&mut self, name: &str, target: &str) -> Result<(), ExtractError> {
        let (at, name) = self.place(name)?;
        let from = Path::new(&name).parent().unwrap_or(Path::new(""));
        let lands = lexical(&self.root.join(from).join(target));
        if target.starts_with('/') || !lands.starts_with(&self.root) || target.contains('\0') {
            return Err(PathError::LinkEscapes {
                path: name.clone(),
                link: name.clone(),
                target: target.to_string(),
                root: self.root.display().to_string(),
            }
            .into());
        }
        Self::parent_of(&at, &name)?;
        std::os::unix::fs::symlink(target, &at).map_err(|source| ExtractError::Io { name, source })
    }

    /// A hard link to a file unpacked before it (tar names the target by its member name).
    pub fn hard_link(&mut self, name: &str, target: &str) -> Result<(), ExtractError> {
        let (at, name) = self.place(name)?;
        let (from, _) = self.place(target).map_err(|_| ExtractError::HardLink {
            name: name.clone(),
            target: target.to_string(),
        })?;
        if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
            return Err(ExtractError::HardLink {
                name,
                target: target.to_string(),
            });
        }
        Self::parent_of(&at, &name)?;
        std::fs::hard_link(&from, &at).map_err(|source| ExtractError::Io { name, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_land_under_the_root_and_nowhere_else() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut u = Unpacker::new(&root, 100).unwrap();
        u.file("lib/libx.so.1.2", 3, Some(0o4755), &mut &b"abc"[..])
            .unwrap();
        u.symlink("lib/libx.so.1", "libx.so.1.2").unwrap();
        u.hard_link("lib/copy", "lib/libx.so.1.2").unwrap();
        u.dir("include").unwrap();
        let mode = std::fs::metadata(root.join("lib/libx.so.1.2"))
            .unwrap()
            .permissions();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.mode() & 0o7777, 0o755, "set-ID bits are dropped");
        for (what, r) in [
            ("escape", u.file("../x", 1, None, &mut &b"x"[..]).map(drop)),
            ("absolute link", u.symlink("lib/evil", "/etc/shadow")),
            ("climbing link", u.symlink("lib/evil", "../../etc")),
            ("hard link out", u.hard_link("lib/h", "/etc/passwd")),
            (
                "again",
                u.file("lib/libx.so.1.2", 1, None, &mut &b"x"[..]).map(drop),
            ),
        ] {
            assert!(r.is_err(), "{what}");
        }
        // A link member inside the root, then a file through it: refused.
        u.symlink("up", "lib").unwrap();
        let e = u.file("up/through", 1, None, &mut &b"x"[..]).unwrap_err();
        assert!(e.to_string().contains("up/through"), "{e}");
        // Sizes: exactly what the header says, and the total bounded.
        let e = u.file("short", 5, None, &mut &b"abc"[..]).unwrap_err();
        assert!(e.to_string().contains("ends after 3"), "{e}");
        let e = u.file("big", 200, None, &mut &b"abc"[..]).unwrap_err();
        assert!(e.to_string().contains("100-byte limit"), "{e}");
        assert!(!d.path().join("x").exists());
    }
}
