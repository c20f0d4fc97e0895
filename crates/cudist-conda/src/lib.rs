//! Conda packages for cudist: write `.conda` packages from a list of files and links, and read
//! `.conda` / `.tar.bz2` packages back (their `index.json`, `paths.json`, `run_exports.json`, and
//! their files).
//!
//! The `info/` files ([`info`]: `index.json`, `paths.json`, `run_exports.json`) are written from a
//! typed [`NewPackage`] and checked by parsing them back as they are read; the tests install
//! every package cudist writes with py-rattler, the independent reader. The archives themselves
//! (`archive`) are written and read with the zip, zstd, bzip2 and tar crates.
//! Files are staged in a directory with an unpredictable name that is removed whatever happens,
//! and a package is written to an exclusive temporary and renamed, so a failed write leaves
//! nothing behind.
//!
//! Packages are read by streaming their tar members ([`scan`]), never by unpacking them to disk:
//! every member name must be a plain path inside the prefix, the members together must unpack to
//! no more than the limit in force ([`cudist_fs::limits`]), `info/` files are read only up to
//! [`cudist_fs::SMALL_FILE`], and the same path twice is refused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

mod archive;
pub mod info;

use info::{IndexJson, PathType, PathsEntry, PathsJson, RunExportsJson};
use serde_json::json;
use sha2::Digest;

/// What can go wrong reading or writing a package.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: invalid {what}: {message}")]
    Invalid {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    #[error("{path}: cannot read the conda package: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("package {package}: {path} is given twice")]
    Duplicate { package: String, path: String },
    #[error("{path} is {kind}, not a regular file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path}: member {source}")]
    Unsafe {
        path: PathBuf,
        #[source]
        source: cudist_fs::PathError,
    },
    #[error(
        "{path}: its members unpack to more than the {limit}-byte limit (raise it with \
         --max-unpacked)"
    )]
    TooLarge { path: PathBuf, limit: u64 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a file of a new package is.
#[derive(Debug, Clone)]
pub enum Content {
    /// A regular file, copied (or hard-linked) from this path.
    File(PathBuf),
    /// A symbolic link with this target.
    Link(String),
}

/// One path of a new package, relative to the prefix (`lib/libcudart.so.13`).
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: String,
    pub content: Content,
    /// A file's sha256 (hex) and size when the caller already has them; else they are computed
    /// from the file, streaming.
    pub known: Option<(String, u64)>,
}

/// The `run_exports` of a package: what a package built against it must depend on.
#[derive(Debug, Clone, Default)]
pub struct RunExports {
    pub weak: Vec<String>,
    pub strong: Vec<String>,
}

/// A package to write.
#[derive(Debug, Clone)]
pub struct NewPackage {
    pub name: String,
    pub version: String,
    pub build: String,
    pub build_number: u64,
    /// conda's platform directory: `linux-64`, `linux-aarch64`.
    pub subdir: String,
    pub depends: Vec<String>,
    pub constrains: Vec<String>,
    pub license: Option<String>,
    pub run_exports: Option<RunExports>,
    pub files: Vec<Entry>,
    /// License files, written to `info/licenses/<name>` (conda keeps them with the metadata, so
    /// packages that share a license do not clash in the prefix).
    pub licenses: Vec<(String, PathBuf)>,
}

impl NewPackage {
    /// `name-version-build`, the package's file stem.
    pub fn stem(&self) -> String {
        format!("{}-{}-{}", self.name, self.version, self.build)
    }
}

/// conda's platform directory for this machine's architecture, and the `arch` of `index.json`.
pub fn host_subdir() -> (&'static str, &'static str) {
    match std::env::consts::ARCH {
        "aarch64" => ("linux-aarch64", "aarch64"),
        "powerpc64" => ("linux-ppc64le", "ppc64le"),
        _ => ("linux-64", "x86_64"),
    }
}

/// How the `.conda` is compressed and stamped.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// zstd level, 1–22.
    pub zstd_level: i32,
    /// Seconds since the epoch for `index.json`'s timestamp and every archive member.
    pub timestamp: i64,
    /// zstd threads.
    pub threads: u32,
}

/// Writes `pkg` as `DIR/name-version-build.conda` and returns its path.
///
/// Files are staged in a directory beside the package (hard-linked where the file system allows,
/// else copied) with the `info/` files, packed, and the stage removed. The package is written
/// under a temporary name and renamed when complete.
pub fn write_conda(pkg: &NewPackage, dir: &Path, opts: &WriteOptions) -> Result<PathBuf, Error> {
    // Every path the package will install is a plain path inside the prefix.
    for p in pkg
        .files
        .iter()
        .map(|e| e.path.as_str())
        .chain(pkg.licenses.iter().map(|(n, _)| n.as_str()))
    {
        cudist_fs::member_name(p).map_err(|source| Error::Unsafe {
            path: dir.join(format!("{}.conda", pkg.stem())),
            source,
        })?;
    }
    // Links point inside the prefix, relative to their own directory.
    for e in &pkg.files {
        if let Content::Link(target) = &e.content {
            let from = Path::new(&e.path).parent().unwrap_or(Path::new(""));
            if target.starts_with('/')
                || cudist_fs::within_root(&from.join(target).to_string_lossy()).is_err()
            {
                return Err(Error::Unsafe {
                    path: dir.join(format!("{}.conda", pkg.stem())),
                    source: cudist_fs::PathError::LinkEscapes {
                        path: e.path.clone(),
                        link: e.path.clone(),
                        target: target.clone(),
                        root: "the prefix".into(),
                    },
                });
            }
        }
    }
    let stage = cudist_fs::scratch_dir(dir, &pkg.stem()).map_err(io(dir))?;
    stage_and_pack(pkg, dir, stage.path(), opts)
}

fn stage_and_pack(
    pkg: &NewPackage,
    dir: &Path,
    stage: &Path,
    opts: &WriteOptions,
) -> Result<PathBuf, Error> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut entries: Vec<PathsEntry> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in &pkg.files {
        if !seen.insert(e.path.as_str()) {
            return Err(Error::Duplicate {
                package: pkg.stem(),
                path: e.path.clone(),
            });
        }
        let dest = stage.join(&e.path);
        let parent = dest.parent().unwrap_or(stage);
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let (path_type, sha256, size) = match &e.content {
            Content::Link(target) => {
                std::os::unix::fs::symlink(target, &dest).map_err(io(&dest))?;
                (PathType::Softlink, None, None)
            }
            Content::File(src) => {
                if std::fs::hard_link(src, &dest).is_err() {
                    std::fs::copy(src, &dest).map_err(io(src))?;
                }
                let known = e
                    .known
                    .as_ref()
                    .filter(|(hex, _)| info::is_sha256_hex(hex))
                    .map(|(hex, size)| (hex.to_ascii_lowercase(), *size));
                let (digest, size) = match known {
                    Some(k) => k,
                    None => sha256_of(&dest).map_err(io(src))?,
                };
                (PathType::Hardlink, Some(digest), Some(size))
            }
        };
        entries.push(PathsEntry {
            path: e.path.clone(),
            path_type,
            sha256,
            size_in_bytes: size,
            no_link: false,
            prefix_placeholder: None,
            file_mode: None,
        });
        paths.push(dest);
    }
    let info = stage.join("info");
    std::fs::create_dir_all(&info).map_err(io(&info))?;
    for (name, src) in &pkg.licenses {
        let dest = info.join("licenses").join(name);
        let parent = dest.parent().unwrap_or(&info);
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        std::fs::copy(src, &dest).map_err(io(src))?;
        paths.push(dest);
    }
    let (subdir_host, arch) = host_subdir();
    let arch = if pkg.subdir == subdir_host {
        Some(arch)
    } else {
        None
    };
    let index = json!({
        "name": pkg.name,
        "version": pkg.version,
        "build": pkg.build,
        "build_number": pkg.build_number,
        "depends": pkg.depends,
        "constrains": pkg.constrains,
        "license": pkg.license,
        "subdir": pkg.subdir,
        "arch": arch,
        "platform": pkg.subdir.split('-').next(),
        "timestamp": opts.timestamp * 1000,
    });
    let paths_json = json!({ "paths": entries, "paths_version": 1 });
    let mut info_files = vec![
        ("index.json", index),
        ("paths.json", paths_json),
        (
            "about.json",
            json!({ "summary": format!("{} (written by cudist split)", pkg.name), "license": pkg.license }),
        ),
    ];
    if let Some(r) = &pkg.run_exports {
        info_files.push((
            "run_exports.json",
            json!({ "weak": r.weak, "strong": r.strong }),
        ));
    }
    for (name, value) in &info_files {
        let path = info.join(name);
        let text = serde_json::to_string_pretty(value).expect("JSON values serialise");
        // What cudist writes must be what it (and conda) reads.
        let check = match *name {
            "index.json" => IndexJson::parse(text.as_bytes()).map(drop),
            "paths.json" => PathsJson::parse(text.as_bytes()).map(drop),
            "run_exports.json" => RunExportsJson::parse(text.as_bytes()).map(drop),
            _ => Ok(()),
        };
        check.map_err(|message| Error::Invalid {
            path: path.clone(),
            what: "info file",
            message,
        })?;
        std::fs::write(&path, text).map_err(io(&path))?;
        paths.push(path);
    }

    let out = dir.join(format!("{}.conda", pkg.stem()));
    // Seconds from 1970 to the end of year 9999, as conda's tools read them.
    if !(0..=253_402_300_799).contains(&opts.timestamp) {
        return Err(Error::Invalid {
            path: out.clone(),
            what: "timestamp",
            message: format!("{} is not a time between 1970 and 9999", opts.timestamp),
        });
    }
    write_atomically(&out, |w| {
        archive::write_conda(w, stage, &paths, &pkg.stem(), opts, dir).map(drop)
    })?;
    Ok(out)
}

/// A change made to files of a package as it is repacked ([`repack`]): gets a file's path and
/// bytes (in memory, or in a temporary file when larger than the memory budget allows), changes
/// the bytes, says whether it changed them.
pub type Transform<'a> = &'a mut dyn FnMut(&str, &mut cudist_fs::Buf) -> Result<bool, String>;

/// Writes `path` again as `DIR/name-version-<build>.conda` with its files passed through
/// `transform`: every member is kept as it was (its mode, time, links, every `info/` file) but
/// the files `transform` changes, whose `sha256` and `size_in_bytes` in `info/paths.json` are
/// rewritten, and `info/index.json`'s `build`, which becomes `build`. `extra_info` adds files
/// under `info/`. Returns the package written (through a temporary, renamed when complete) and
/// the paths changed.
///
/// Hand-written around the `tar` and `zstd` crates: no crate rewrites a conda package.
pub fn repack(
    path: &Path,
    dir: &Path,
    build: &str,
    transform: Transform<'_>,
    extra_info: &[(String, Vec<u8>)],
    opts: &WriteOptions,
) -> Result<(PathBuf, Vec<String>), Error> {
    let pkg = read(path)?;
    if !build
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.+".contains(c))
        || build.is_empty()
    {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            what: "build string",
            message: format!("{build:?}: letters, digits, `_`, `.` and `+` only"),
        });
    }
    let stem = format!("{}-{}-{build}", pkg.index.name, pkg.index.version);
    let out = dir.join(format!("{stem}.conda"));
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        what: "package",
        message,
    };
    // The package's files go straight into a zstd tar spooled beside the output; `info/` is kept
    // in memory until the hashes of the changed files are known.
    let spool = |e| io(dir)(e);
    let mut pkg_spool = tempfile::tempfile_in(dir).map_err(spool)?;
    let mut info: Vec<(String, MemberKind, u32, u64, Vec<u8>)> = Vec::new();
    let mut changed: Vec<(String, String, u64)> = Vec::new();
    {
        let mut enc =
            zstd::stream::write::Encoder::new(&mut pkg_spool, opts.zstd_level).map_err(spool)?;
        if opts.threads > 1 {
            enc.multithread(opts.threads).map_err(spool)?;
        }
        enc.include_checksum(true).map_err(spool)?;
        let mut tar = tar::Builder::new(enc);
        let limits = cudist_fs::limits();
        let mut failure: Option<Error> = None;
        scan(path, Parts::All, |m| {
            let info_file = m.path.starts_with("info/") || m.path == "info";
            let mut bytes = cudist_fs::Buf::Heap(Vec::new());
            if let MemberKind::File(size) = m.kind {
                // `info/` files are edited as JSON: read whole, within the unpacked limit; the
                // package's files are held in memory up to the budget, beyond it in a temporary.
                let in_memory = if info_file {
                    limits.unpacked
                } else {
                    limits.in_memory_member(1)
                };
                bytes = cudist_fs::Buf::unpack(m.reader, size, in_memory)
                    .map_err(|e| invalid(format!("{}: {e}", m.path)))?;
            }
            if info_file {
                info.push((m.path.to_string(), m.kind, m.mode, m.mtime, bytes.to_vec()));
                return Ok(Next::Continue);
            }
            if matches!(m.kind, MemberKind::File(_)) {
                match transform(m.path, &mut bytes) {
                    Ok(true) => {
                        let digest = sha2::Sha256::digest(&bytes);
                        changed.push((
                            m.path.to_string(),
                            digest.iter().map(|b| format!("{b:02x}")).collect(),
                            bytes.len() as u64,
                        ));
                    }
                    Ok(false) => {}
                    Err(e) => {
                        failure = Some(invalid(format!("{}: {e}", m.path)));
                        return Ok(Next::Stop);
                    }
                }
            }
            archive::append_member(&mut tar, m.path, &m.kind, m.mode, m.mtime, &bytes)
                .map_err(spool)?;
            Ok(Next::Continue)
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        tar.into_inner()
            .and_then(|enc| enc.finish())
            .map_err(spool)?;
    }
    // info/: the build string, the changed files' hashes, the extra files.
    for (name, _, _, _, bytes) in info.iter_mut() {
        if name == "info/index.json" {
            let mut v: serde_json::Value = serde_json::from_slice(bytes)
                .map_err(|e| invalid(format!("info/index.json: {e}")))?;
            v["build"] = serde_json::Value::from(build);
            *bytes = serde_json::to_vec_pretty(&v).expect("JSON values serialise");
        } else if name == "info/paths.json" {
            let mut v: serde_json::Value = serde_json::from_slice(bytes)
                .map_err(|e| invalid(format!("info/paths.json: {e}")))?;
            if let Some(rows) = v["paths"].as_array_mut() {
                for row in rows {
                    let Some(p) = row["_path"].as_str() else {
                        continue;
                    };
                    if let Some((_, sha, size)) = changed.iter().find(|(c, _, _)| c == p) {
                        row["sha256"] = serde_json::Value::from(sha.as_str());
                        row["size_in_bytes"] = serde_json::Value::from(*size);
                    }
                }
            }
            *bytes = serde_json::to_vec_pretty(&v).expect("JSON values serialise");
            PathsJson::parse(bytes).map_err(|e| invalid(format!("info/paths.json: {e}")))?;
        }
    }
    let now = u64::try_from(opts.timestamp).unwrap_or(0);
    for (name, bytes) in extra_info {
        let full = format!("info/{name}");
        cudist_fs::member_name(&full).map_err(|source| Error::Unsafe {
            path: out.clone(),
            source,
        })?;
        info.retain(|(n, ..)| n != &full);
        info.push((
            full,
            MemberKind::File(bytes.len() as u64),
            0o644,
            now,
            bytes.clone(),
        ));
    }
    let mut info_spool = tempfile::tempfile_in(dir).map_err(spool)?;
    {
        let mut enc =
            zstd::stream::write::Encoder::new(&mut info_spool, opts.zstd_level).map_err(spool)?;
        enc.include_checksum(true).map_err(spool)?;
        let mut tar = tar::Builder::new(enc);
        for (name, kind, mode, mtime, bytes) in &info {
            archive::append_member(&mut tar, name, kind, *mode, *mtime, bytes).map_err(spool)?;
        }
        tar.into_inner()
            .and_then(|enc| enc.finish())
            .map_err(spool)?;
    }
    write_atomically(&out, |w| {
        archive::write_parts(w, &stem, opts, &mut pkg_spool, &mut info_spool).map(drop)
    })?;
    Ok((out, changed.into_iter().map(|(p, ..)| p).collect()))
}

/// Writes `out` through a temporary beside it (created exclusively), renamed into place only when
/// `write` has written all of it; on any failure nothing is left.
fn write_atomically(
    out: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<cudist_fs::AtomicFile>) -> std::io::Result<()>,
) -> Result<(), Error> {
    let file = cudist_fs::AtomicFile::new(out).map_err(io(out))?;
    let mut w = std::io::BufWriter::new(file);
    write(&mut w).and_then(|_| w.flush()).map_err(io(out))?;
    w.into_inner()
        .map_err(|e| Error::Io {
            path: out.to_path_buf(),
            source: e.into_error(),
        })?
        .commit()
        .map_err(io(out))
}

/// A package read back: its metadata and, when asked for, its files unpacked in a directory.
#[derive(Debug)]
pub struct Package {
    pub path: PathBuf,
    pub index: IndexJson,
    /// `info/paths.json`; `None` for old packages that have only `info/files`.
    pub paths: Option<PathsJson>,
    pub run_exports: Option<RunExportsJson>,
}

impl Package {
    /// The package's name, lower-cased as conda compares names.
    pub fn name(&self) -> String {
        self.index.name.to_ascii_lowercase()
    }

    /// Its version, as written.
    pub fn version(&self) -> String {
        self.index.version.clone()
    }
}

/// Whether `path` names a conda package (`.conda` or `.tar.bz2`).
pub fn is_package_path(path: &Path) -> bool {
    let n = path.file_name().unwrap_or_default().to_string_lossy();
    n.ends_with(".conda") || n.ends_with(".tar.bz2")
}

/// What a member of a package is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberKind {
    /// A regular file of this many bytes.
    File(u64),
    /// A symbolic link with this target.
    Link(String),
    /// A hard link to another member.
    HardLink(String),
    Dir,
    Other,
}

/// One member of a package, as [`scan`] hands it over: its path relative to the prefix
/// (`lib/libcudart.so.13`, `info/index.json`), what it is, and a reader of its bytes.
pub struct Member<'a> {
    pub path: &'a str,
    pub kind: MemberKind,
    /// Its permission bits, as the archive records them.
    pub mode: u32,
    /// Its modification time, seconds since the epoch, as the archive records it.
    pub mtime: u64,
    pub reader: &'a mut dyn Read,
}

/// What the visitor of [`scan`] wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Continue,
    Stop,
}

/// Which parts of a package [`scan`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    /// `info/` only (for a `.tar.bz2`, which has one tar, up to the first member after `info/`).
    Info,
    /// Everything.
    All,
}

/// Streams the members of a package (`.conda` or `.tar.bz2`) to `visit`, without writing
/// anything. Refuses member names that are not plain paths inside the prefix, the same path twice,
/// and members that together unpack to more than [`cudist_fs::limits`]'s `unpacked`.
pub fn scan(
    path: &Path,
    parts: Parts,
    mut visit: impl FnMut(Member<'_>) -> Result<Next, Error>,
) -> Result<(), Error> {
    if !is_package_path(path) {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            what: "package name",
            message: "a conda package ends in .conda or .tar.bz2".into(),
        });
    }
    let file = cudist_fs::open_regular(path).map_err(|e| match e {
        cudist_fs::ReadError::NotAFile { kind, .. } => Error::NotAFile {
            path: path.to_path_buf(),
            kind,
        },
        other => Error::Io {
            path: path.to_path_buf(),
            source: other.into_io(),
        },
    })?;
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut walk = Walk {
        path,
        unpacked: 0,
        limit: cudist_fs::limits().unpacked,
        seen: std::collections::HashSet::new(),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if name.ends_with(".tar.bz2") {
        let mut tar = archive::tar_bz2(&file);
        walk.tar(&mut tar, parts, &mut visit)?;
        return Ok(());
    }
    // A .conda is a zip of two zstd tars; say which one is missing rather than "a component".
    let missing = |part: &str| Error::Invalid {
        path: path.to_path_buf(),
        what: "package",
        message: format!(
            "no {part}-*.tar.zst member (a .conda holds info-*.tar.zst and pkg-*.tar.zst)"
        ),
    };
    let part_err = |e| match e {
        archive::OpenError::Missing(part) => missing(part),
        archive::OpenError::Io(e) => read_err(e),
    };
    let mut conda = archive::Conda::open(std::io::BufReader::new(&file)).map_err(read_err)?;
    let mut info = conda.part("info").map_err(part_err)?;
    if walk.tar(&mut info, Parts::All, &mut visit)? == Next::Stop || parts == Parts::Info {
        return Ok(());
    }
    drop(info);
    let mut content = conda.part("pkg").map_err(part_err)?;
    walk.tar(&mut content, Parts::All, &mut visit)?;
    Ok(())
}

/// The state of one [`scan`].
struct Walk<'p> {
    path: &'p Path,
    unpacked: u64,
    limit: u64,
    seen: std::collections::HashSet<String>,
}

impl Walk<'_> {
    fn tar<R: Read>(
        &mut self,
        tar: &mut tar::Archive<R>,
        parts: Parts,
        visit: &mut impl FnMut(Member<'_>) -> Result<Next, Error>,
    ) -> Result<Next, Error> {
        let damaged = |e: std::io::Error| Error::Invalid {
            path: self.path.to_path_buf(),
            what: "tar stream",
            message: e.to_string(),
        };
        let mut in_info = false;
        for entry in tar.entries().map_err(damaged)? {
            let mut entry = entry.map_err(damaged)?;
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let name = raw.strip_prefix("./").unwrap_or(&raw).to_string();
            cudist_fs::member_name(&name).map_err(|source| Error::Unsafe {
                path: self.path.to_path_buf(),
                source,
            })?;
            let name = name.trim_end_matches('/').to_string();
            if parts == Parts::Info {
                if name.starts_with("info/") {
                    in_info = true;
                } else if in_info {
                    return Ok(Next::Stop);
                }
            }
            let header = entry.header();
            let kind = match header.entry_type() {
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    MemberKind::File(header.size().map_err(damaged)?)
                }
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    let target = entry
                        .link_name_bytes()
                        .map(|t| String::from_utf8_lossy(&t).into_owned())
                        .unwrap_or_default();
                    if header.entry_type() == tar::EntryType::Link {
                        MemberKind::HardLink(target)
                    } else {
                        MemberKind::Link(target)
                    }
                }
                tar::EntryType::Directory => MemberKind::Dir,
                _ => MemberKind::Other,
            };
            if kind != MemberKind::Dir && !self.seen.insert(name.clone()) {
                return Err(Error::Duplicate {
                    package: self.path.display().to_string(),
                    path: name,
                });
            }
            if let MemberKind::File(size) = kind {
                self.unpacked = self.unpacked.saturating_add(size);
                if self.unpacked > self.limit {
                    return Err(Error::TooLarge {
                        path: self.path.to_path_buf(),
                        limit: self.limit,
                    });
                }
            }
            let mode = header.mode().unwrap_or(0o644) & 0o7777;
            let mtime = header.mtime().unwrap_or(0);
            let next = visit(Member {
                path: &name,
                kind,
                mode,
                mtime,
                reader: &mut entry,
            })?;
            if next == Next::Stop {
                return Ok(Next::Stop);
            }
        }
        Ok(Next::Continue)
    }
}

/// Reads a package's metadata (without unpacking its files): `info/index.json`,
/// `info/paths.json` and `info/run_exports.json`, each at most [`cudist_fs::SMALL_FILE`].
pub fn read(path: &Path) -> Result<Package, Error> {
    let mut files: std::collections::HashMap<&'static str, Vec<u8>> = Default::default();
    scan(path, Parts::Info, |m| {
        let want = [
            "info/index.json",
            "info/paths.json",
            "info/run_exports.json",
        ]
        .into_iter()
        .find(|w| *w == m.path);
        if let (Some(w), MemberKind::File(size)) = (want, &m.kind) {
            if *size > cudist_fs::SMALL_FILE {
                return Err(Error::Invalid {
                    path: path.to_path_buf(),
                    what: "info file",
                    message: format!(
                        "{w} is {size} bytes, over the {}-byte limit for metadata files",
                        cudist_fs::SMALL_FILE
                    ),
                });
            }
            let bytes =
                cudist_fs::unpack_exact(m.reader, *size, cudist_fs::SMALL_FILE).map_err(|e| {
                    Error::Invalid {
                        path: path.to_path_buf(),
                        what: "info file",
                        message: format!("{w} {e}"),
                    }
                })?;
            files.insert(w, bytes.to_vec());
        }
        Ok(Next::Continue)
    })?;
    fn parse<P>(
        path: &Path,
        files: &std::collections::HashMap<&'static str, Vec<u8>>,
        name: &'static str,
        parse: fn(&[u8]) -> Result<P, String>,
    ) -> Result<Option<P>, Error> {
        files
            .get(name)
            .map(|b| {
                parse(b).map_err(|e| Error::Invalid {
                    path: path.to_path_buf(),
                    what: "info file",
                    message: format!("{name}: {e}"),
                })
            })
            .transpose()
    }
    let index = parse(path, &files, "info/index.json", IndexJson::parse)?.ok_or_else(|| {
        Error::Invalid {
            path: path.to_path_buf(),
            what: "package",
            message: "no info/index.json".into(),
        }
    })?;
    Ok(Package {
        path: path.to_path_buf(),
        index,
        paths: parse(path, &files, "info/paths.json", PathsJson::parse)?,
        run_exports: parse(path, &files, "info/run_exports.json", RunExportsJson::parse)?,
    })
}

/// The sha256 (lower-case hex) and size of a file, read streaming.
fn sha256_of(path: &Path) -> std::io::Result<(String, u64)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let size = std::io::copy(&mut f, &mut h)?;
    let digest = h.finalize();
    Ok((digest.iter().map(|b| format!("{b:02x}")).collect(), size))
}

/// Unpacks a package's files (and `info/`) into `dest`, which must not exist, through
/// [`cudist_fs::Unpacker`]: nothing is written outside `dest`, links may only point inside it, and
/// no file is written through a link the package made.
pub fn extract(path: &Path, dest: &Path) -> Result<(), Error> {
    std::fs::create_dir(dest).map_err(io(dest))?;
    let mut u = cudist_fs::Unpacker::new(dest, u64::MAX).map_err(io(dest))?;
    let bad = |e: cudist_fs::ExtractError| Error::Invalid {
        path: path.to_path_buf(),
        what: "member",
        message: e.to_string(),
    };
    scan(path, Parts::All, |m| {
        match &m.kind {
            MemberKind::Dir => u.dir(m.path).map_err(bad)?,
            MemberKind::File(size) => drop(u.file(m.path, *size, None, m.reader).map_err(bad)?),
            MemberKind::Link(target) => u.symlink(m.path, target).map_err(bad)?,
            MemberKind::HardLink(target) => u.hard_link(m.path, target).map_err(bad)?,
            MemberKind::Other => {}
        }
        Ok(Next::Continue)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> WriteOptions {
        WriteOptions {
            zstd_level: 3,
            timestamp: 1_700_000_000,
            threads: 1,
        }
    }

    #[test]
    fn a_written_package_reads_back_with_its_files_links_and_run_exports() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("libfoo.so.1.2.3");
        std::fs::write(&src, b"not really an ELF").unwrap();
        let pkg = NewPackage {
            name: "libfoo".into(),
            version: "1.2.3".into(),
            build: "h0_0".into(),
            build_number: 0,
            subdir: host_subdir().0.into(),
            depends: vec!["libbar >=2,<3.0a0".into()],
            constrains: vec![],
            license: Some("MIT".into()),
            run_exports: Some(RunExports {
                weak: vec!["libfoo >=1.2.3,<2.0a0".into()],
                strong: vec![],
            }),
            licenses: vec![("LICENSE.txt".into(), src.clone())],
            files: vec![
                Entry {
                    path: "lib/libfoo.so.1.2.3".into(),
                    content: Content::File(src),
                    known: None,
                },
                Entry {
                    path: "lib/libfoo.so.1".into(),
                    content: Content::Link("libfoo.so.1.2.3".into()),
                    known: None,
                },
            ],
        };
        let out = t.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let p = write_conda(&pkg, &out, &opts()).unwrap();
        assert_eq!(p.file_name().unwrap(), "libfoo-1.2.3-h0_0.conda");
        // Only the package is left in the directory.
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");

        let back = read(&p).unwrap();
        assert_eq!(back.name(), "libfoo");
        assert_eq!(back.version(), "1.2.3");
        assert_eq!(back.index.depends, vec!["libbar >=2,<3.0a0"]);
        assert_eq!(back.index.subdir.as_deref(), Some(host_subdir().0));
        let paths = back.paths.unwrap().paths;
        assert_eq!(paths.len(), 2);
        let link = paths.iter().find(|e| e.path == "lib/libfoo.so.1").unwrap();
        assert_eq!(link.path_type, PathType::Softlink);
        let file = paths
            .iter()
            .find(|e| e.path == "lib/libfoo.so.1.2.3")
            .unwrap();
        assert_eq!(file.size_in_bytes, Some(17));
        // sha256 of the content, as Python's hashlib gives it.
        assert_eq!(
            file.sha256.as_deref(),
            Some("fb92de780796de46c688702b6a133c9b3825d2f25eb67113046f9e5205bf2fe2")
        );
        assert_eq!(
            back.run_exports.unwrap().weak,
            vec!["libfoo >=1.2.3,<2.0a0"]
        );

        let x = t.path().join("x");
        extract(&p, &x).unwrap();
        assert_eq!(
            std::fs::read_link(x.join("lib/libfoo.so.1")).unwrap(),
            Path::new("libfoo.so.1.2.3")
        );
        assert_eq!(
            std::fs::read(x.join("lib/libfoo.so.1.2.3")).unwrap(),
            b"not really an ELF"
        );
        assert!(x.join("info/licenses/LICENSE.txt").is_file());
    }

    fn small_package(src: &Path) -> NewPackage {
        NewPackage {
            name: "libfoo".into(),
            version: "1.0".into(),
            build: "h0_0".into(),
            build_number: 0,
            subdir: host_subdir().0.into(),
            depends: vec![],
            constrains: vec![],
            license: None,
            run_exports: None,
            licenses: vec![],
            files: vec![
                Entry {
                    path: "lib/libfoo.so.1".into(),
                    content: Content::File(src.to_path_buf()),
                    known: None,
                },
                Entry {
                    path: "lib/libfoo.so".into(),
                    content: Content::Link("libfoo.so.1".into()),
                    known: None,
                },
            ],
        }
    }

    #[test]
    fn a_package_is_written_byte_for_byte_again_in_the_conda_v2_layout() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("libfoo.so.1");
        std::fs::write(&src, vec![7u8; 100_000]).unwrap();
        let mut written = Vec::new();
        for out in ["a", "b"] {
            let out = t.path().join(out);
            std::fs::create_dir(&out).unwrap();
            written.push(
                std::fs::read(write_conda(&small_package(&src), &out, &opts()).unwrap()).unwrap(),
            );
        }
        assert!(written[0] == written[1], "two writes differ");
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(&written[0])).unwrap();
        let names: Vec<String> = z.file_names().map(str::to_string).collect();
        assert_eq!(
            names,
            [
                "metadata.json",
                "pkg-libfoo-1.0-h0_0.tar.zst",
                "info-libfoo-1.0-h0_0.tar.zst"
            ]
        );
        for i in 0..z.len() {
            let m = z.by_index(i).unwrap();
            assert_eq!(m.compression(), zip::CompressionMethod::Stored);
            // Stamped with the timestamp: 1_700_000_000 is 2023-11-14 22:13:20 UTC.
            let t = m.last_modified().unwrap();
            assert_eq!(
                (
                    t.year(),
                    t.month(),
                    t.day(),
                    t.hour(),
                    t.minute(),
                    t.second()
                ),
                (2023, 11, 14, 22, 13, 20)
            );
        }
        let mut meta = String::new();
        z.by_name("metadata.json")
            .unwrap()
            .read_to_string(&mut meta)
            .unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&meta).unwrap(),
            json!({ "conda_pkg_format_version": 2 })
        );
        // Members sorted, stamped with the timestamp, owned by 0.
        let pkg = z.by_name("pkg-libfoo-1.0-h0_0.tar.zst").unwrap();
        let mut tar = tar::Archive::new(zstd::stream::read::Decoder::new(pkg).unwrap());
        let members: Vec<(String, u64, u64)> = tar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mtime().unwrap(),
                    h.uid().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            members,
            [
                ("lib/libfoo.so".to_string(), 1_700_000_000, 0),
                ("lib/libfoo.so.1".to_string(), 1_700_000_000, 0)
            ]
        );
    }

    #[test]
    fn a_tar_bz2_of_several_bzip2_streams_reads_as_one_tar() {
        // Parallel compressors (pbzip2, lbzip2) write one bzip2 stream per block.
        let t = tempfile::tempdir().unwrap();
        let mut b = tar::Builder::new(Vec::new());
        for (name, body) in [
            (
                "info/index.json",
                &br#"{"name":"x","version":"1","build":"0","build_number":0}"#[..],
            ),
            ("lib/libx.so", &b"\x7fELF"[..]),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, body).unwrap();
        }
        let raw = b.into_inner().unwrap();
        let mut bz = Vec::new();
        for half in [&raw[..1024], &raw[1024..]] {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(half).unwrap();
            bz.extend(e.finish().unwrap());
        }
        let p = t.path().join("x-1-0.tar.bz2");
        std::fs::write(&p, bz).unwrap();
        let mut seen = Vec::new();
        scan(&p, Parts::All, |m| {
            seen.push(m.path.to_string());
            Ok(Next::Continue)
        })
        .unwrap();
        assert_eq!(seen, ["info/index.json", "lib/libx.so"]);
        assert_eq!(read(&p).unwrap().name(), "x");
    }

    #[test]
    fn a_bad_version_is_refused_and_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let pkg = NewPackage {
            name: "libfoo".into(),
            version: "1.2.3 beta".into(),
            build: "h0_0".into(),
            build_number: 0,
            subdir: "linux-64".into(),
            depends: vec![],
            constrains: vec![],
            license: None,
            run_exports: None,
            files: vec![],
            licenses: vec![],
        };
        let e = write_conda(&pkg, t.path(), &opts()).unwrap_err();
        assert!(e.to_string().contains("index.json"), "{e}");
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn reading_a_file_that_is_not_a_package_names_it() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("broken.conda");
        std::fs::write(&p, b"garbage").unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.to_string().contains("broken.conda"), "{e}");
        let e = read(&t.path().join("x.zip")).unwrap_err();
        assert!(e.to_string().contains(".tar.bz2"), "{e}");
    }
}
