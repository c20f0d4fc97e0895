//! Python wheels, read through the zip central directory.
//!
//! [`Wheel::open`] reads only the central directory and the `.dist-info` metadata; members are then
//! read one at a time, on any thread ([`Wheel::read_member`] clones a cheap handle that reads the
//! file with positional reads), so memory stays bounded by the members in flight, never the wheel.
//! Hostile archives are refused when opened: entry names that escape the tree (`../x`, `/abs`),
//! symlink entries, and duplicate names. A member that inflates beyond its declared size (a zip
//! bomb) or ends early is an error when read.
//!
//! [`write::rewrite`] writes a changed copy: untouched members copied raw, RECORD regenerated,
//! METADATA edited, atomically renamed into place.

pub mod installed;
pub mod write;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use zip::ZipArchive;

/// Errors raised while reading a wheel. Each names the problem; callers add the file name.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("cannot open the file")]
    Io(#[from] io::Error),
    #[error("not a readable zip archive")]
    Zip(#[source] zip::result::ZipError),
    #[error("member {name:?} escapes the archive (absolute path or `..`)")]
    UnsafeName { name: String },
    #[error("member {name:?} is a symbolic link; wheels cannot carry links")]
    Symlink { name: String },
    #[error("member {name:?} appears more than once")]
    Duplicate { name: String },
    #[error("member {name:?} is encrypted")]
    Encrypted { name: String },
    #[error("member {name:?} cannot be read")]
    Member {
        name: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("member {name:?} is damaged: {problem}")]
    Damaged { name: String, problem: String },
    #[error("no .dist-info directory with METADATA and WHEEL")]
    NoDistInfo,
}

type Result<T> = std::result::Result<T, WheelError>;

/// A file handle that reads with `pread`, so clones share one descriptor and never race on a
/// cursor: each clone of the archive can be read on its own thread. Reads go through a read-ahead
/// buffer (allocated on first use; a clone starts without one), since the zip reader asks for a
/// few KiB at a time.
struct SharedFile {
    file: Arc<File>,
    len: u64,
    pos: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_at: u64,
}

const READ_AHEAD: usize = 256 * 1024;

impl SharedFile {
    fn new(file: File, len: u64) -> SharedFile {
        SharedFile {
            file: Arc::new(file),
            len,
            pos: 0,
            buf: Vec::new(),
            buf_at: 0,
        }
    }
}

impl Clone for SharedFile {
    fn clone(&self) -> SharedFile {
        SharedFile {
            file: self.file.clone(),
            len: self.len,
            pos: self.pos,
            buf: Vec::new(),
            buf_at: 0,
        }
    }
}

impl Read for SharedFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // Large reads bypass the buffer.
        if out.len() >= READ_AHEAD {
            let n = self.file.read_at(out, self.pos)?;
            self.pos += n as u64;
            return Ok(n);
        }
        let end = self.buf_at + self.buf.len() as u64;
        if !(self.buf_at..end).contains(&self.pos) {
            self.buf.resize(READ_AHEAD, 0);
            let n = self.file.read_at(&mut self.buf, self.pos)?;
            self.buf.truncate(n);
            self.buf_at = self.pos;
            if n == 0 {
                return Ok(0);
            }
        }
        let start = (self.pos - self.buf_at) as usize;
        let n = out.len().min(self.buf.len() - start);
        out[..n].copy_from_slice(&self.buf[start..start + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for SharedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos =
            pos.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before start"))?;
        Ok(self.pos)
    }
}

/// One member of the archive, from the central directory.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    pub index: usize,
    pub name: String,
    pub size: u64,
    pub compressed_size: u64,
    pub is_dir: bool,
    /// Unix permission bits, when the archive records them.
    pub mode: Option<u32>,
}

/// The parts of a wheel file name (`{dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WheelName {
    pub distribution: String,
    pub version: String,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: String,
}

impl WheelName {
    /// Parses a wheel's file name; `None` when it does not follow the wheel naming convention.
    pub fn parse(file_name: &str) -> Option<WheelName> {
        let stem = file_name.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (dist, ver, build, py, abi, plat) = match parts.as_slice() {
            [d, v, p, a, pl] => (*d, *v, None, *p, *a, *pl),
            [d, v, b, p, a, pl] => (*d, *v, Some(b.to_string()), *p, *a, *pl),
            _ => return None,
        };
        Some(WheelName {
            distribution: dist.to_string(),
            version: ver.to_string(),
            build,
            python: py.to_string(),
            abi: abi.to_string(),
            platform: plat.to_string(),
        })
    }
}

/// What the `.dist-info` says about the wheel.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metadata {
    pub name: Option<String>,
    pub version: Option<String>,
    pub requires_dist: Vec<String>,
    /// `Tag:` lines of the `WHEEL` file.
    pub tags: Vec<String>,
    pub root_is_purelib: Option<bool>,
    /// The `.dist-info` directory name.
    pub dist_info: String,
}

/// An open wheel.
#[derive(Clone)]
pub struct Wheel {
    path: PathBuf,
    archive: ZipArchive<SharedFile>,
    members: Vec<Member>,
    file_size: u64,
}

impl Wheel {
    /// Opens a wheel (any zip file) and validates its central directory.
    pub fn open(path: &Path) -> Result<Wheel> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let reader = SharedFile::new(file, len);
        let mut archive = ZipArchive::new(reader).map_err(|e| match e {
            zip::result::ZipError::InvalidArchive(ref m) if m.contains("uplicate") => {
                WheelError::Duplicate {
                    name: m.to_string(),
                }
            }
            other => WheelError::Zip(other),
        })?;
        // The zip crate keys members by name, so duplicates collapse silently: compare with the
        // count the end-of-central-directory record states.
        let stated = stated_entry_count(&reader_for_count(&archive))?;
        if let Some(n) = stated {
            if n > archive.len() as u64 {
                return Err(WheelError::Duplicate {
                    name: format!(
                        "(the central directory lists {n} members but only {} distinct names)",
                        archive.len()
                    ),
                });
            }
        }
        let mut members = Vec::with_capacity(archive.len());
        let mut seen = std::collections::HashSet::new();
        for index in 0..archive.len() {
            let f = archive.by_index_raw(index).map_err(WheelError::Zip)?;
            let name = f.name().to_string();
            if f.enclosed_name().is_none() || name.starts_with('/') || name.contains('\\') {
                return Err(WheelError::UnsafeName { name });
            }
            if f.is_symlink() {
                return Err(WheelError::Symlink { name });
            }
            if f.encrypted() {
                return Err(WheelError::Encrypted { name });
            }
            if !seen.insert(name.clone()) {
                return Err(WheelError::Duplicate { name });
            }
            members.push(Member {
                index,
                name,
                size: f.size(),
                compressed_size: f.compressed_size(),
                is_dir: f.is_dir(),
                mode: f.unix_mode(),
            });
        }
        Ok(Wheel {
            path: path.to_path_buf(),
            archive,
            members,
            file_size: len,
        })
    }

    /// The path the wheel was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the wheel file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The members in central-directory order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Reads and decompresses a whole member. Safe to call from several threads on clones.
    pub fn read_member(&self, index: usize) -> Result<Vec<u8>> {
        let m = &self.members[index];
        let mut out = Vec::with_capacity(m.size.min(1 << 30) as usize);
        self.read_member_into(index, &mut out, None)?;
        Ok(out)
    }

    /// Reads the first `n` bytes of a member (fewer if it is shorter): enough to tell an ELF file.
    pub fn read_prefix(&self, index: usize, n: usize) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        self.read_member_into(index, &mut out, Some(n as u64))?;
        Ok(out)
    }

    fn read_member_into(&self, index: usize, out: &mut Vec<u8>, limit: Option<u64>) -> Result<()> {
        let m = &self.members[index];
        let mut archive = self.archive.clone();
        let f = archive
            .by_index(index)
            .map_err(|source| WheelError::Member {
                name: m.name.clone(),
                source,
            })?;
        let want = limit.map_or(m.size, |l| l.min(m.size));
        // Read one byte past the declared size to catch members that inflate beyond it.
        let cap = if limit.is_some() { want } else { want + 1 };
        let got = f
            .take(cap)
            .read_to_end(out)
            .map_err(|e| WheelError::Damaged {
                name: m.name.clone(),
                problem: e.to_string(),
            })? as u64;
        if got != want {
            return Err(WheelError::Damaged {
                name: m.name.clone(),
                problem: if got > want {
                    format!("inflates beyond its declared size of {} bytes", m.size)
                } else {
                    format!("ends after {got} of {want} bytes")
                },
            });
        }
        Ok(())
    }

    /// Reads the `.dist-info` metadata (`METADATA` and `WHEEL`).
    pub fn metadata(&self) -> Result<Metadata> {
        let dist_info = self
            .members
            .iter()
            .filter_map(|m| {
                let (dir, file) = m.name.split_once('/')?;
                (dir.ends_with(".dist-info") && file == "METADATA").then(|| dir.to_string())
            })
            .min_by_key(|d| d.len())
            .ok_or(WheelError::NoDistInfo)?;
        let text_of = |file: &str| -> Result<Option<String>> {
            let name = format!("{dist_info}/{file}");
            match self.members.iter().find(|m| m.name == name) {
                Some(m) => Ok(Some(
                    String::from_utf8_lossy(&self.read_member(m.index)?).into_owned(),
                )),
                None => Ok(None),
            }
        };
        let mut md = Metadata {
            dist_info: dist_info.clone(),
            ..Metadata::default()
        };
        if let Some(text) = text_of("METADATA")? {
            for (k, v) in header_fields(&text) {
                match k.as_str() {
                    "name" => md.name = Some(v),
                    "version" => md.version = Some(v),
                    "requires-dist" => md.requires_dist.push(v),
                    _ => {}
                }
            }
        }
        if let Some(text) = text_of("WHEEL")? {
            for (k, v) in header_fields(&text) {
                match k.as_str() {
                    "tag" => md.tags.push(v),
                    "root-is-purelib" => md.root_is_purelib = Some(v.eq_ignore_ascii_case("true")),
                    _ => {}
                }
            }
        }
        Ok(md)
    }
}

fn reader_for_count(archive: &ZipArchive<SharedFile>) -> SharedFile {
    archive.clone().into_inner()
}

/// The member count the end-of-central-directory record states (zip64 aware), or `None` when the
/// record cannot be found (the zip crate has then already judged the archive).
///
/// Hand-written because no zip reader exposes the raw count: they index members by name.
fn stated_entry_count(file: &SharedFile) -> Result<Option<u64>> {
    let len = file.len;
    let tail_len = len.min(65_557);
    let mut tail = vec![0u8; tail_len as usize];
    file.file.read_exact_at(&mut tail, len - tail_len)?;
    let Some(eocd) = tail.windows(4).rposition(|w| w == b"PK\x05\x06") else {
        return Ok(None);
    };
    if eocd + 22 > tail.len() {
        return Ok(None);
    }
    let count = u16::from_le_bytes([tail[eocd + 10], tail[eocd + 11]]) as u64;
    if count != 0xFFFF {
        return Ok(Some(count));
    }
    // Zip64: the locator sits 20 bytes before the EOCD and points at the zip64 record.
    if eocd < 20 || tail[eocd - 20..eocd - 16] != *b"PK\x06\x07" {
        return Ok(None);
    }
    let at = u64::from_le_bytes(tail[eocd - 12..eocd - 4].try_into().unwrap());
    let mut rec = [0u8; 56];
    if at + 56 > len {
        return Ok(None);
    }
    file.file.read_exact_at(&mut rec, at)?;
    if rec[..4] != *b"PK\x06\x06" {
        return Ok(None);
    }
    Ok(Some(u64::from_le_bytes(rec[32..40].try_into().unwrap())))
}

/// The `Key: value` header lines of an email-style metadata file, up to the first blank line,
/// with keys lower-cased and continuation lines joined.
fn header_fields(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_names() {
        let n =
            WheelName::parse("cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl").unwrap();
        assert_eq!(n.distribution, "cupy_cuda12x");
        assert_eq!(n.platform, "manylinux2014_x86_64");
        let n = WheelName::parse("a-1-2-py3-none-any.whl").unwrap();
        assert_eq!(n.build.as_deref(), Some("2"));
        assert!(WheelName::parse("x.whl").is_none());
        assert!(WheelName::parse("a-1-py3-none-any.zip").is_none());
    }

    #[test]
    fn metadata_headers() {
        let f = header_fields("Metadata-Version: 2.1\nName: foo\nRequires-Dist: bar>=1\nRequires-Dist: baz;\n  extra == 'x'\n\nbody: no");
        assert_eq!(f[1], ("name".into(), "foo".into()));
        assert_eq!(f[3].1, "baz; extra == 'x'");
        assert_eq!(f.len(), 4);
    }
}
