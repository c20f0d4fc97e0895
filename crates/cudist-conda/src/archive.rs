//! The two conda archive formats, read and written with the zip, zstd, bzip2 and tar crates.
//!
//! Hand-written on purpose: the one crate that packs and unpacks conda archives
//! (rattler_package_streaming) depends on rattler's networking stack (reqwest, hyper, tokio) even
//! with its default features off, and cudist is an offline tool that must not carry one. The
//! formats are small:
//!
//! - `.conda` (conda-package-handling's format version 2): a zip archive whose members are
//!   stored, not compressed: `metadata.json` (`{"conda_pkg_format_version": 2}`),
//!   `pkg-<stem>.tar.zst` (the files installed in the prefix) and `info-<stem>.tar.zst` (the
//!   `info/` directory), each a zstd-compressed tar.
//! - `.tar.bz2`: one bzip2-compressed tar holding both.
//!
//! What is written is reproducible: members sorted by path, every timestamp the caller's, owner
//! and group 0, no directory entries (conda creates directories from the file paths).

use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The `.conda` format version this writes and reads.
const FORMAT: &str = "{\"conda_pkg_format_version\": 2}";

/// Packs the files `paths` (inside `stage`; those under `stage/info/` go to the info archive) as a
/// `.conda` package named `stem` into `out`, compressed at `opts.zstd_level` with `opts.threads`
/// threads, every member stamped `opts.timestamp`. Compressed parts are spooled in unlinked temporary
/// files in `spool` so that each zip member is written with its size known.
pub(crate) fn write_conda<W: Write + Seek>(
    out: W,
    stage: &Path,
    paths: &[PathBuf],
    stem: &str,
    opts: &crate::WriteOptions,
    spool: &Path,
) -> std::io::Result<W> {
    let mut info = Vec::new();
    let mut pkg = Vec::new();
    for p in paths {
        let rel = p
            .strip_prefix(stage)
            .map_err(|_| std::io::Error::other(format!("{} is not in the stage", p.display())))?;
        let name = rel
            .to_str()
            .ok_or_else(|| std::io::Error::other(format!("{} is not UTF-8", rel.display())))?;
        let dest = if name.starts_with("info/") {
            &mut info
        } else {
            &mut pkg
        };
        dest.push((name.to_string(), p.clone()));
    }
    let mtime = u64::try_from(opts.timestamp).unwrap_or(0);
    let spool_part = |members: &mut Vec<(String, PathBuf)>| -> std::io::Result<std::fs::File> {
        members.sort();
        let mut spooled = tempfile::tempfile_in(spool)?;
        let mut enc = zstd::stream::write::Encoder::new(&mut spooled, opts.zstd_level)?;
        if opts.threads > 1 {
            enc.multithread(opts.threads)?;
        }
        enc.include_checksum(true)?;
        let mut tar = tar::Builder::new(enc);
        for (name, path) in members.iter() {
            append(&mut tar, name, path, mtime)?;
        }
        tar.into_inner()?.finish()?;
        Ok(spooled)
    };
    let mut pkg_spool = spool_part(&mut pkg)?;
    let mut info_spool = spool_part(&mut info)?;
    write_parts(out, stem, opts, &mut pkg_spool, &mut info_spool)
}

/// One member of a package being repacked, as [`crate::scan`] read it: a file (with its bytes), a
/// link, a hard link or a directory, with its mode and time.
pub(crate) fn append_member<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    kind: &crate::MemberKind,
    mode: u32,
    mtime: u64,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_mtime(mtime);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mode(mode);
    match kind {
        crate::MemberKind::File(_) => {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(bytes.len() as u64);
            tar.append_data(&mut h, name, bytes)
        }
        crate::MemberKind::Link(target) => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            tar.append_link(&mut h, name, target)
        }
        crate::MemberKind::HardLink(target) => {
            h.set_entry_type(tar::EntryType::Link);
            h.set_size(0);
            tar.append_link(&mut h, name, target)
        }
        crate::MemberKind::Dir => {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            tar.append_data(&mut h, format!("{name}/"), std::io::empty())
        }
        crate::MemberKind::Other => Ok(()),
    }
}

/// A `.conda` from its two spooled parts (zstd tars, rewound here): `metadata.json`, then
/// `pkg-<stem>.tar.zst` and `info-<stem>.tar.zst`, stored.
pub(crate) fn write_parts<W: Write + Seek>(
    out: W,
    stem: &str,
    opts: &crate::WriteOptions,
    pkg: &mut std::fs::File,
    info: &mut std::fs::File,
) -> std::io::Result<W> {
    let date = cudist_wheel::write::zip_time(opts.timestamp).unwrap_or_default();
    let mut zip = zip::ZipWriter::new(out);
    let stored = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(date)
        .unix_permissions(0o644);
    zip.start_file("metadata.json", stored)
        .map_err(std::io::Error::other)?;
    zip.write_all(FORMAT.as_bytes())?;
    for (part, spooled) in [("pkg", pkg), ("info", info)] {
        let size = spooled.stream_position()?;
        spooled.rewind()?;
        zip.start_file(
            format!("{part}-{stem}.tar.zst"),
            stored.large_file(size >= u64::from(u32::MAX)),
        )
        .map_err(std::io::Error::other)?;
        let copied = std::io::copy(spooled, &mut zip)?;
        if copied != size {
            return Err(std::io::Error::other("the spooled archive changed size"));
        }
    }
    zip.finish().map_err(std::io::Error::other)
}

/// One tar member: a regular file (its permission bits kept) or a symbolic link, as on disk.
fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    path: &Path,
    mtime: u64,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    let mut h = tar::Header::new_gnu();
    h.set_mtime(mtime);
    h.set_uid(0);
    h.set_gid(0);
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)?;
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_mode(0o777);
        h.set_size(0);
        tar.append_link(&mut h, name, target)
    } else if meta.is_file() {
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(meta.permissions().mode() & 0o777);
        h.set_size(meta.len());
        let file = std::fs::File::open(path)?;
        // Exactly the size in the header, even if the file changes under us.
        let mut body = file.take(meta.len());
        tar.append_data(&mut h, name, &mut body)
    } else {
        Err(std::io::Error::other(format!(
            "{} is neither a file nor a symbolic link",
            path.display()
        )))
    }
}

/// Why a `.conda` could not be opened as one.
pub(crate) enum OpenError {
    /// No `<part>-*.tar.zst` member.
    Missing(&'static str),
    Io(std::io::Error),
}

/// The members of a `.conda`: its zip index, read once.
pub(crate) struct Conda<R> {
    zip: zip::ZipArchive<R>,
}

impl<R: Read + Seek> Conda<R> {
    pub(crate) fn open(r: R) -> std::io::Result<Self> {
        let zip = zip::ZipArchive::new(r).map_err(std::io::Error::other)?;
        Ok(Self { zip })
    }

    /// The tar of `part` (`"info"` or `"pkg"`), decompressed as it is read.
    pub(crate) fn part(
        &mut self,
        part: &'static str,
    ) -> Result<tar::Archive<impl Read + '_>, OpenError> {
        let prefix = format!("{part}-");
        let name = self
            .zip
            .file_names()
            .find(|n| n.starts_with(&prefix) && n.ends_with(".tar.zst") && !n.contains('/'))
            .map(str::to_string)
            .ok_or(OpenError::Missing(part))?;
        let member = self
            .zip
            .by_name(&name)
            .map_err(|e| OpenError::Io(std::io::Error::other(e)))?;
        let dec = zstd::stream::read::Decoder::new(member).map_err(OpenError::Io)?;
        Ok(tar::Archive::new(dec))
    }
}

/// The tar of a `.tar.bz2` package, decompressed as it is read (several bzip2 streams one after
/// another, as parallel compressors write them, are one tar).
pub(crate) fn tar_bz2<R: Read>(r: R) -> tar::Archive<impl Read> {
    tar::Archive::new(bzip2::read::MultiBzDecoder::new(BufReader::new(r)))
}
