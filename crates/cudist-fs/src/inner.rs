//! Paths that come from inside an input, and where they may lead.
//!
//! Two forms of check, for two kinds of name:
//! - [`member_name`] for names an archive gives its members (zip, tar, conda): strictly clean.
//!   An archive has no reason to spell a member `a//b`, `./a` or `a/../b`, and two spellings of
//!   one file are how an archive shows one thing to one reader and another to the next, so such
//!   names are refused rather than normalised.
//! - [`within_root`] for rows that name files relative to a directory and may legitimately climb
//!   (`RECORD` rows of an installed package name its scripts as `../../../bin/tool`): normalised
//!   without touching the disk, and refused only when they leave the root.
//!
//! [`resolve_beneath`] then follows such a path on disk, link by link, and refuses it the moment a
//! link leads out of the root — what `openat2(RESOLVE_BENEATH)` does, written out because that
//! call is Linux 5.6+ and says only "no" where cudist wants to name the link.

use std::path::{Component, Path, PathBuf};

/// Why a path from inside an input is refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("an empty path")]
    Empty,
    #[error("{0:?} is an absolute path")]
    Absolute(String),
    #[error("{0:?} holds a NUL byte")]
    Nul(String),
    #[error("{0:?} holds a backslash (a Windows separator)")]
    Backslash(String),
    #[error("{0:?} has an empty or `.` component (`//` or `./`): two spellings of one path")]
    Unclean(String),
    #[error("{0:?} has a `..` component")]
    DotDot(String),
    #[error("{0:?} climbs out of its root with `..`")]
    Escapes(String),
    #[error("{path:?} goes through the link {link} -> {target}, which leads out of {root}")]
    LinkEscapes {
        path: String,
        link: String,
        target: String,
        root: String,
    },
    #[error("{0:?}: more than 40 links on the way (a loop?)")]
    Loop(String),
    #[error("{path:?} cannot be resolved")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The checks every path from inside an input starts with: not empty, no NUL, not absolute.
fn relative(raw: &str) -> Result<(), PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul(raw.into()));
    }
    if raw.starts_with('/') {
        return Err(PathError::Absolute(raw.into()));
    }
    Ok(())
}

/// Checks a name an archive gives one of its members: relative, `/`-separated, no empty, `.` or
/// `..` component, no NUL, no backslash. A trailing `/` (a directory entry) is allowed.
pub fn member_name(raw: &str) -> Result<&str, PathError> {
    relative(raw)?;
    if raw.contains('\\') {
        return Err(PathError::Backslash(raw.into()));
    }
    let body = raw.strip_suffix('/').unwrap_or(raw);
    for part in body.split('/') {
        match part {
            "" | "." => return Err(PathError::Unclean(raw.into())),
            ".." => return Err(PathError::DotDot(raw.into())),
            _ => {}
        }
    }
    Ok(raw)
}

/// Normalises a relative path without touching the disk (`a//b/./c/../d` → `a/b/d`) and checks
/// that it stays inside its root. Refuses absolute paths, NUL bytes and any `..` that climbs above
/// the start.
pub fn within_root(raw: &str) -> Result<String, PathError> {
    relative(raw)?;
    let mut parts: Vec<&str> = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::Escapes(raw.into()));
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Empty);
    }
    Ok(parts.join("/"))
}

/// The most links [`resolve_beneath`] follows, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// Resolves `rel` below `root` on disk, following symbolic links only while they stay inside
/// `root`: a relative target is taken from the link's directory, an absolute one must lie in
/// `root`, and `..` never climbs above `root`. Returns the absolute path, free of links (its last
/// component may not exist). `root` is canonicalised first.
pub fn resolve_beneath(root: &Path, rel: &str) -> Result<PathBuf, PathError> {
    let io = |path: &str, source| PathError::Io {
        path: path.into(),
        source,
    };
    let root = std::fs::canonicalize(root).map_err(|e| io(&root.display().to_string(), e))?;
    relative(rel)?;
    // Components still to walk, last first. `..` is taken as the kernel takes it: from where the
    // walk is, after the links before it.
    let mut todo: Vec<String> = rel.rsplit('/').map(str::to_string).collect();
    let mut at = root.clone();
    let mut links = 0;
    while let Some(part) = todo.pop() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                if at == root {
                    return Err(PathError::Escapes(rel.into()));
                }
                at.pop();
                continue;
            }
            _ => {}
        }
        let next = at.join(&part);
        let meta = match std::fs::symlink_metadata(&next) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Nothing there: the rest is a plain path below it.
                let mut out = next;
                while let Some(p) = todo.pop() {
                    if p == ".." {
                        return Err(io(rel, e));
                    }
                    if !p.is_empty() && p != "." {
                        out.push(p);
                    }
                }
                return Ok(out);
            }
            Err(e) => return Err(io(rel, e)),
        };
        if !meta.file_type().is_symlink() {
            at = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(PathError::Loop(rel.into()));
        }
        let target = std::fs::read_link(&next).map_err(|e| io(rel, e))?;
        let escapes = || PathError::LinkEscapes {
            path: rel.into(),
            link: next.display().to_string(),
            target: target.display().to_string(),
            root: root.display().to_string(),
        };
        let rest: PathBuf = if target.is_absolute() {
            let inside = lexical(&target);
            let Ok(r) = inside.strip_prefix(&root) else {
                return Err(escapes());
            };
            at = root.clone();
            r.to_path_buf()
        } else {
            target.clone()
        };
        // Walk the target's components before what was left; `..` is checked as it comes.
        let mut depth = at.strip_prefix(&root).map_or(0, |p| p.components().count()) as isize;
        let mut parts = Vec::new();
        for c in rest.components() {
            match c {
                Component::Normal(n) => {
                    depth += 1;
                    parts.push(n.to_string_lossy().into_owned());
                }
                Component::ParentDir => {
                    depth -= 1;
                    if depth < 0 {
                        return Err(escapes());
                    }
                    parts.push("..".into());
                }
                _ => {}
            }
        }
        todo.extend(parts.into_iter().rev());
    }
    Ok(at)
}

/// [`resolve_beneath`] for many paths below one root: each directory is resolved once, and only
/// the last component of each path is looked at again (a package lists thousands of files in a
/// few dozen directories).
pub struct Resolver {
    root: PathBuf,
    dirs: std::collections::HashMap<String, PathBuf>,
}

impl Resolver {
    /// A resolver for paths below `root` (canonicalised).
    pub fn new(root: &Path) -> Result<Resolver, PathError> {
        let root = std::fs::canonicalize(root).map_err(|source| PathError::Io {
            path: root.display().to_string(),
            source,
        })?;
        Ok(Resolver {
            root,
            dirs: Default::default(),
        })
    }

    /// The root, canonicalised.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What [`resolve_beneath`] gives for `rel` (a path already normalised by [`within_root`]).
    pub fn resolve(&mut self, rel: &str) -> Result<PathBuf, PathError> {
        let Some((dir, name)) = rel.rsplit_once('/') else {
            return resolve_beneath(&self.root, rel);
        };
        let base = match self.dirs.get(dir) {
            Some(b) => b.clone(),
            None => {
                let b = resolve_beneath(&self.root, dir)?;
                self.dirs.insert(dir.to_string(), b.clone());
                b
            }
        };
        let at = base.join(name);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => resolve_beneath(&self.root, rel),
            _ => Ok(at),
        }
    }
}

/// `path` with `.` and `..` removed without touching the file system (`/t/bin/../lib` → `/t/lib`).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn member_names_are_clean_or_refused() {
        for ok in [
            "a",
            "a/b.so",
            "pkg/",
            "x.dist-info/RECORD",
            "a..b/c",
            ".hidden",
        ] {
            assert_eq!(member_name(ok).unwrap(), ok);
        }
        for (bad, why) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("a/../../x", "`..`"),
            ("..", "`..`"),
            ("./a", "`.`"),
            ("a//b", "`//`"),
            ("a/./b", "`.`"),
            ("a\\..\\b", "backslash"),
            ("a\0b", "NUL"),
        ] {
            let e = member_name(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn rows_are_normalised_and_kept_inside() {
        assert_eq!(within_root("a//b/./c/../d").unwrap(), "a/b/d");
        assert_eq!(within_root("a/b/../../c").unwrap(), "c");
        for bad in [
            "../x",
            "a/../../x",
            "nvidia/cuda_runtime/include/../../../../secret/token.txt",
            "/abs",
            "a\0",
            ".",
            "",
        ] {
            assert!(within_root(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn links_are_followed_only_while_they_stay_inside() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        let outside = d.path().join("secret");
        std::fs::create_dir_all(root.join("lib/sub")).unwrap();
        std::fs::write(&outside, "s").unwrap();
        std::fs::write(root.join("lib/libx.so.1.2"), "x").unwrap();
        symlink("libx.so.1.2", root.join("lib/libx.so.1")).unwrap();
        symlink("lib", root.join("lib64")).unwrap();
        symlink("../libx.so.1", root.join("lib/sub/up")).unwrap();
        symlink(&outside, root.join("lib/abs-out")).unwrap();
        symlink("../../secret", root.join("lib/rel-out")).unwrap();
        symlink(root.join("lib/libx.so.1.2"), root.join("abs-in")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        let canon = std::fs::canonicalize(&root).unwrap();
        let want = canon.join("lib/libx.so.1.2");
        assert_eq!(resolve_beneath(&root, "lib64/libx.so.1").unwrap(), want);
        assert_eq!(resolve_beneath(&root, "lib/sub/up").unwrap(), want);
        assert_eq!(resolve_beneath(&root, "abs-in").unwrap(), want);
        assert_eq!(
            resolve_beneath(&root, "lib/missing/x").unwrap(),
            canon.join("lib/missing/x")
        );
        for (bad, why) in [
            ("lib/abs-out", "leads out of"),
            ("lib/rel-out", "leads out of"),
            ("lib64/../../secret", "climbs out"),
            ("loop", "more than 40 links"),
        ] {
            let e = resolve_beneath(&root, bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
