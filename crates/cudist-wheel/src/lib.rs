//! Python wheels, read through the zip central directory, and seen as pip sees them.
//!
//! [`Wheel::open`] reads only the central directory; members are then read one at a time, on any
//! thread ([`Wheel::read_member`] clones a cheap handle that reads the file with positional
//! reads), so memory stays bounded by the members in flight, never the wheel. What pip would not
//! install, or would install differently from what a reader of the central directory sees, is
//! refused when the wheel is opened:
//! - member names that are not plain paths inside the archive (`../x`, `/abs`, `a//b`, `./a`,
//!   backslashes, NUL: [`cudist_fs::member_name`]), symbolic-link members, duplicate names;
//! - a central directory that disagrees with its end record (a member count that hides members
//!   from a reader that trusts the count, while pip's reader walks the directory by its size);
//! - members that unpack to more than the limit in force ([`cudist_fs::limits`]).
//!
//! [`Wheel::dist_info`] then requires exactly one `.dist-info` directory, named after the file,
//! holding `WHEEL`, `METADATA` and `RECORD`. A member that inflates beyond its declared size, or
//! whose CRC is wrong, is an error when it is read. Large members are inflated to an unlinked
//! temporary file and mapped ([`Wheel::read_member_mapped`]) instead of being held in memory.
//!
//! [`write::rewrite`] writes a changed copy: untouched members copied raw (their CRC checked),
//! RECORD regenerated with a CSV writer, METADATA edited byte for byte, atomically renamed into
//! place.

pub mod installed;
pub mod record;
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
    /// The archive being written could not be written (the output's fault, or the machine's:
    /// never the input's).
    #[error("cannot write the archive")]
    Write(#[source] io::Error),
    #[error("is {0}, not a regular file")]
    NotAFile(&'static str),
    /// The path problem's own message names the member.
    #[error("member {0}")]
    UnsafeName(cudist_fs::PathError),
    #[error("member {name:?} is a symbolic link; wheels cannot carry links")]
    Symlink { name: String },
    #[error("member {name:?} appears more than once")]
    Duplicate { name: String },
    #[error("the central directory {0}")]
    CentralDirectory(String),
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
    #[error(
        "its members unpack to {declared} bytes, over the {limit}-byte limit (raise it with \
         --max-unpacked)"
    )]
    TooLarge { declared: u64, limit: u64 },
    /// A central directory larger than any real wheel's: refused before it is allocated.
    #[error(
        "its central directory is said to be {size} bytes; cudist reads at most {limit} (about \
         {members} members)"
    )]
    DirectoryTooLarge { size: u64, limit: u64, members: u64 },
    #[error("{0}")]
    Layout(String),
    #[error("RECORD is not CSV")]
    Record(#[source] csv::Error),
}

type Result<T> = std::result::Result<T, WheelError>;

/// Where a wheel's bytes come from: positional reads of a fixed-length source. A local file is
/// one; a wheel on an index read by HTTP range requests (`cudist-index`) is another.
pub trait ReadAt: Send + Sync {
    /// Reads into `buf` from `offset`; the bytes read (0 only at the end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Says that the reads to come lie in `start..end` (a member's bytes), so a source that
    /// fetches ahead need not fetch past it. The default ignores it.
    fn hint(&self, _start: u64, _end: u64) {}

    /// Fills `buf` from `offset`, or fails.
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }
}

/// A source read with positional reads (`pread` for a file), so clones share one handle and never
/// race on a cursor: each clone of the archive can be read on its own thread. Reads go through a
/// read-ahead buffer (allocated on first use; a clone starts without one), since the zip reader
/// asks for a few KiB at a time.
struct SharedFile {
    file: Arc<dyn ReadAt>,
    len: u64,
    pos: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_at: u64,
}

const READ_AHEAD: usize = 256 * 1024;

impl SharedFile {
    fn new(file: Arc<dyn ReadAt>, len: u64) -> SharedFile {
        SharedFile {
            file,
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Metadata {
    pub name: Option<String>,
    pub version: Option<String>,
    pub requires_dist: Vec<String>,
    /// `Requires-Python:`, as written (`>=3.10`).
    pub requires_python: Option<String>,
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
    /// Where each member's bytes lie (its local header up to the next member's, or the central
    /// directory), by index.
    spans: Vec<(u64, u64)>,
    /// Each member's name, method and sizes as the central directory stores them, by index: its
    /// local header must say the same ([`Wheel::with_member`]).
    heads: Vec<Head>,
    source: Arc<dyn ReadAt>,
}

impl Wheel {
    /// Opens a wheel (any zip file) and validates its central directory.
    pub fn open(path: &Path) -> Result<Wheel> {
        // Only a regular file: a FIFO would block, a device never end.
        let file = cudist_fs::open_regular(path).map_err(|e| match e {
            cudist_fs::ReadError::NotAFile { kind, .. } => WheelError::NotAFile(kind),
            other => WheelError::Io(other.into_io()),
        })?;
        let len = file.metadata()?.len();
        Wheel::open_source(path, Arc::new(file), len)
    }

    /// Opens a wheel whose bytes come from `source` (`len` bytes long), named `path` (its file
    /// name is what the `.dist-info` is checked against); the same checks as [`Wheel::open`].
    pub fn open_source(path: &Path, source: Arc<dyn ReadAt>, len: u64) -> Result<Wheel> {
        let reader = SharedFile::new(source.clone(), len);
        // The central directory as pip's reader walks it, by its size: every entry name, whatever
        // count the end record states.
        let walked = central_directory(&reader);
        if let Err(e @ WheelError::DirectoryTooLarge { .. }) = walked {
            return Err(e);
        }
        let archive = ZipArchive::new(reader).map_err(|e| match e {
            zip::result::ZipError::InvalidArchive(ref m) if m.contains("uplicate") => {
                match walked.as_ref().ok().and_then(|w| first_duplicate(w)) {
                    Some(name) => WheelError::Duplicate { name },
                    None => WheelError::Zip(e),
                }
            }
            other => WheelError::Zip(other),
        })?;
        let walked = walked?;
        // The zip crate keys members by name, so duplicates collapse silently.
        if walked.len() != archive.len() {
            return Err(match first_duplicate(&walked) {
                Some(name) => WheelError::Duplicate { name },
                None => WheelError::CentralDirectory(format!(
                    "holds {} entries, the zip reader sees {}",
                    walked.len(),
                    archive.len()
                )),
            });
        }
        let mut members = Vec::with_capacity(archive.len());
        let mut starts = Vec::with_capacity(archive.len());
        let mut seen = std::collections::HashSet::new();
        let mut unpacked: u64 = 0;
        // Each member as the walk read it (the same order as the zip crate's: duplicates were
        // refused above), named as the zip crate decodes the name.
        for (index, e) in walked.iter().enumerate() {
            let name = archive
                .name_for_index(index)
                .unwrap_or(e.name.as_str())
                .to_string();
            cudist_fs::member_name(&name).map_err(WheelError::UnsafeName)?;
            starts.push(e.header.saturating_add(archive.offset()));
            unpacked = unpacked.saturating_add(e.size);
            let mode = e.unix_mode();
            if mode.is_some_and(|m| m & 0o120000 == 0o120000) {
                return Err(WheelError::Symlink { name });
            }
            if e.flags & 1 != 0 {
                return Err(WheelError::Encrypted { name });
            }
            if !seen.insert(name.clone()) {
                return Err(WheelError::Duplicate { name });
            }
            members.push(Member {
                index,
                is_dir: name.ends_with('/'),
                name,
                size: e.size,
                compressed_size: e.compressed,
                mode,
            });
        }
        let limit = cudist_fs::limits().unpacked;
        if unpacked > limit {
            return Err(WheelError::TooLarge {
                declared: unpacked,
                limit,
            });
        }
        let mut sorted = starts.clone();
        sorted.sort_unstable();
        sorted.push(
            archive
                .central_directory_start()
                .max(sorted.last().copied().unwrap_or(0)),
        );
        let spans = starts
            .iter()
            .map(|&s| {
                let i = sorted.partition_point(|&x| x <= s);
                (s, sorted.get(i).copied().unwrap_or(len).max(s))
            })
            .collect();
        let heads = walked
            .into_iter()
            .map(|e| Head {
                raw_name: e.raw_name,
                method: e.method,
                compressed: e.compressed,
                size: e.size,
            })
            .collect();
        Ok(Wheel {
            path: path.to_path_buf(),
            archive,
            members,
            file_size: len,
            spans,
            heads,
            source,
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

    /// Opens member `index` for reading (inflating as it goes) and hands it to `f`. Safe to call
    /// from several threads: each call reads through its own clone of the archive.
    fn with_member<T>(
        &self,
        index: usize,
        f: impl FnOnce(&mut dyn Read) -> Result<T>,
    ) -> Result<T> {
        let m = &self.members[index];
        let (start, end) = self.spans[index];
        self.source.hint(start, end);
        self.check_local_header(index, start)?;
        let mut archive = self.archive.clone();
        let mut z = archive
            .by_index(index)
            .map_err(|source| WheelError::Member {
                name: m.name.clone(),
                source,
            })?;
        f(&mut z)
    }

    /// Checks that member `index`'s local header, at `at`, is one and names the member as the
    /// central directory does. Python's zipfile (pip's reader) refuses a wheel where they differ
    /// ("File name in directory … and header … differ"); a reader that took the central name
    /// and the local bytes would judge, and repair would rewrite, another file than pip installs.
    /// The compression method and, where the local header states them (no data descriptor, no
    /// zip64 marker), the sizes must agree too: readers that stream an archive front to back
    /// (`bsdtar`, `python -m zipfile`'s peers in other languages) take them from the local
    /// header, and would unpack other bytes than the directory describes.
    fn check_local_header(&self, index: usize, at: u64) -> Result<()> {
        let mut head = [0u8; 30];
        self.source
            .read_exact_at(&mut head, at)
            .map_err(|e| self.damaged(index, format!("its local header cannot be read ({e})")))?;
        if head[..4] != *b"PK\x03\x04" {
            return Err(self.damaged(index, "no local header where the central directory puts it"));
        }
        let n = u16::from_le_bytes([head[26], head[27]]) as usize;
        let mut local = vec![0u8; n];
        self.source
            .read_exact_at(&mut local, at + 30)
            .map_err(|e| self.damaged(index, format!("its local header cannot be read ({e})")))?;
        let want = &self.heads[index];
        if local != want.raw_name {
            let shown: String = String::from_utf8_lossy(&local)
                .chars()
                .take(200)
                .flat_map(char::escape_default)
                .collect();
            return Err(self.damaged(
                index,
                format!(
                    "its local header names {shown:?}: the central directory and the local \
                     header disagree, and pip's zipfile refuses such a wheel"
                ),
            ));
        }
        let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        let (flags, method) = (u16_at(6), u16_at(8));
        if method != want.method {
            return Err(self.damaged(
                index,
                format!(
                    "its local header says compression method {method}, the central directory \
                     {}: readers that stream the archive would unpack other bytes",
                    want.method
                ),
            ));
        }
        let (compressed, size) = (u32_at(18), u32_at(22));
        let stated = flags & 8 == 0 && compressed != u32::MAX && size != u32::MAX;
        if stated && (u64::from(compressed), u64::from(size)) != (want.compressed, want.size) {
            return Err(self.damaged(
                index,
                format!(
                    "its local header says {compressed} bytes stored and {size} unpacked, the \
                     central directory {} and {}: readers that stream the archive would unpack \
                     other bytes",
                    want.compressed, want.size
                ),
            ));
        }
        Ok(())
    }

    /// The error for a member whose bytes are not what its header says.
    fn damaged(&self, index: usize, e: impl std::fmt::Display) -> WheelError {
        WheelError::Damaged {
            name: self.members[index].name.clone(),
            problem: crate::describe_io(&e),
        }
    }

    /// Reads and decompresses a whole member, exactly its declared size.
    pub fn read_member(&self, index: usize) -> Result<Vec<u8>> {
        let size = self.members[index].size;
        self.with_member(index, |r| {
            let mut out = Vec::with_capacity(size.min(1 << 30) as usize);
            cudist_fs::copy_exact(r, size, &mut out).map_err(|e| self.damaged(index, e))?;
            Ok(out)
        })
    }

    /// Reads the first `n` bytes of a member (fewer if it is shorter): enough to tell an ELF file.
    pub fn read_prefix(&self, index: usize, n: usize) -> Result<Vec<u8>> {
        let size = self.members[index].size;
        let want = (n as u64).min(size);
        self.with_member(index, |r| {
            let mut out = Vec::with_capacity(want as usize);
            let got = r
                .take(want)
                .read_to_end(&mut out)
                .map_err(|e| self.damaged(index, e))? as u64;
            if got != want {
                let why = format!("ends after {got} of its declared {size} bytes");
                return Err(self.damaged(index, why));
            }
            Ok(out)
        })
    }

    /// Says that only about the first `fraction` of member `index` will be read (a reader that
    /// stops at an ELF file's loaded bytes), so a source that fetches ahead can stop near there:
    /// the member's compressed bytes are assumed spread evenly, with a small margin. Reads past
    /// that still work; they are fetched as they come.
    pub fn expect_prefix(&self, index: usize, fraction: f64) {
        let (start, end) = self.spans[index];
        let span = (end - start) as f64;
        let guess = start + (span * fraction.min(1.0)) as u64 + (8 << 10);
        self.source.hint(start, guess.min(end));
    }

    /// Reads member `index` front to back, inflating as it goes, and hands `f` each piece (at most
    /// 16 KiB) with its offset in the member, until `f` returns false or the member ends: for a
    /// reader that needs only the front of a member. A member that ends before its declared size
    /// is an error. Returns the bytes handed over.
    pub fn stream_member(
        &self,
        index: usize,
        mut f: impl FnMut(u64, &[u8]) -> bool,
    ) -> Result<u64> {
        let size = self.members[index].size;
        self.with_member(index, |r| {
            let mut buf = vec![0u8; 16 << 10];
            let mut at = 0u64;
            while at < size {
                let want = buf.len().min((size - at) as usize);
                let n = r
                    .read(&mut buf[..want])
                    .map_err(|e| self.damaged(index, e))?;
                if n == 0 {
                    let why = format!("ends after {at} of its declared {size} bytes");
                    return Err(self.damaged(index, why));
                }
                let go_on = f(at, &buf[..n]);
                at += n as u64;
                if !go_on {
                    break;
                }
            }
            Ok(at)
        })
    }

    /// Inflates a member to nowhere: its CRC and size are checked as it is read.
    pub fn check_member(&self, index: usize) -> Result<()> {
        let size = self.members[index].size;
        self.with_member(index, |r| {
            cudist_fs::copy_exact(r, size, &mut std::io::sink()).map_err(|e| self.damaged(index, e))
        })
    }

    /// Reads a member like [`Wheel::read_member`], but one larger than its share of the memory
    /// budget ([`cudist_fs::Limits::in_memory_member`] over the worker threads) is inflated to an
    /// unlinked temporary file and mapped, so peak memory does not grow with the core count.
    pub fn read_member_mapped(&self, index: usize) -> Result<cudist_fs::Unpacked> {
        let size = self.members[index].size;
        let share = cudist_fs::limits().in_memory_member(rayon::current_num_threads());
        self.with_member(index, |r| {
            cudist_fs::unpack_exact(r, size, share).map_err(|e| self.damaged(index, e))
        })
    }

    /// Reads a member to be changed: in memory within `in_memory` bytes, else inflated to an
    /// unlinked temporary file mapped writable ([`cudist_fs::Buf`]).
    pub fn read_member_buf(&self, index: usize, in_memory: u64) -> Result<cudist_fs::Buf> {
        let size = self.members[index].size;
        self.with_member(index, |r| {
            cudist_fs::Buf::unpack(r, size, in_memory).map_err(|e| self.damaged(index, e))
        })
    }

    /// The wheel's one `.dist-info` directory, as pip requires it: exactly one at the top level,
    /// holding `METADATA`, `WHEEL` and `RECORD`, named after the distribution and version of the
    /// file name (when the file is named as a wheel).
    pub fn dist_info(&self) -> Result<String> {
        let mut dirs: Vec<&str> = self
            .members
            .iter()
            .filter_map(|m| m.name.split_once('/').map(|(d, _)| d))
            .filter(|d| d.ends_with(".dist-info"))
            .collect();
        dirs.sort_unstable();
        dirs.dedup();
        let dir = match dirs.as_slice() {
            [] => {
                return Err(WheelError::Layout(
                    "no .dist-info directory: not a wheel pip can install".into(),
                ))
            }
            [one] => one.to_string(),
            many => {
                return Err(WheelError::Layout(format!(
                    "{} .dist-info directories ({}); pip refuses a wheel with more than one",
                    many.len(),
                    many.join(", ")
                )))
            }
        };
        for file in ["METADATA", "WHEEL", "RECORD"] {
            let name = format!("{dir}/{file}");
            if !self.members.iter().any(|m| m.name == name && !m.is_dir) {
                return Err(WheelError::Layout(format!(
                    "{dir}/ has no {file}; pip refuses a wheel without it"
                )));
            }
        }
        let file_name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(w) = WheelName::parse(&file_name) {
            let stem = dir.strip_suffix(".dist-info").unwrap_or(&dir);
            let (name, version) = stem.rsplit_once('-').unwrap_or((stem, ""));
            if installed::normalise(name) != installed::normalise(&w.distribution)
                || version != w.version
            {
                return Err(WheelError::Layout(format!(
                    "{dir} does not match the file name ({}-{}); pip refuses such a wheel",
                    w.distribution, w.version
                )));
            }
        }
        Ok(dir)
    }

    /// A small `.dist-info` file's bytes (at most [`cudist_fs::SMALL_FILE`]).
    pub fn dist_info_file(&self, dist_info: &str, file: &str) -> Result<Option<Vec<u8>>> {
        let name = format!("{dist_info}/{file}");
        let Some(m) = self.members.iter().find(|m| m.name == name) else {
            return Ok(None);
        };
        if m.size > cudist_fs::SMALL_FILE {
            return Err(WheelError::Layout(format!(
                "{name} is {} bytes, over the {}-byte limit for metadata files",
                m.size,
                cudist_fs::SMALL_FILE
            )));
        }
        Ok(Some(self.read_member(m.index)?))
    }

    /// The symbolic links the wheel declares for its installer to make, each as (link, the
    /// member it leads to), both as member names. pip installs no links, so some wheels list
    /// them in `.dist-info/symlinks.txt`, CSV rows of (link path as a member name, target
    /// relative to the link's directory, 1 for a directory), which wheel-axle's runtime
    /// (https://github.com/karellen/wheel-axle-runtime, `_symlinks.py`) creates at the first
    /// start of Python after the install: holoscan-cu12 ships `libucp.so.0.0.0` and links
    /// `libucp.so.0` to it that way. Links to directories, and links whose target is neither a
    /// member nor another link, are left out (nothing to find there); a link that would lie, or
    /// lead, outside the wheel is an error, as wheel-axle's runtime refuses it too.
    pub fn declared_links(&self, dist_info: &str) -> Result<Vec<(String, String)>> {
        const FILE: &str = "symlinks.txt";
        let Some(bytes) = self.dist_info_file(dist_info, FILE)? else {
            return Ok(Vec::new());
        };
        let bad = |row: usize, what: String| {
            WheelError::Layout(format!("{dist_info}/{FILE} row {row}: {what}"))
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(bytes.as_slice());
        // `.` and `..` resolved, refused where they climb out, as member names are kept in
        // (a backslash is no separator in a wheel: refused too).
        let normal_member_path = |p: &str| {
            (!p.contains('\\'))
                .then(|| cudist_fs::within_root(p).ok())
                .flatten()
        };
        let mut raw: Vec<(String, String)> = Vec::new();
        for (i, row) in reader.records().enumerate() {
            let row_no = i + 1;
            let row = row.map_err(|e| bad(row_no, format!("not CSV ({e})")))?;
            let (Some(link), Some(target)) = (row.get(0), row.get(1)) else {
                return Err(bad(row_no, "fewer than two fields".into()));
            };
            if row.get(2).is_some_and(|d| d.trim() == "1") {
                continue;
            }
            let link = normal_member_path(link)
                .ok_or_else(|| bad(row_no, format!("the link {link:?} lies outside the wheel")))?;
            let dir = link.rsplit_once('/').map_or("", |(d, _)| d);
            let joined = if dir.is_empty() {
                target.to_string()
            } else {
                format!("{dir}/{target}")
            };
            let target = normal_member_path(&joined).ok_or_else(|| {
                bad(
                    row_no,
                    format!("the link {link:?} leads outside the wheel ({target:?})"),
                )
            })?;
            raw.push((link, target));
        }
        // A link may lead to another link (`libfmt.so` → `libfmt.so.12` → the file): followed
        // a few steps, as the kernel follows them at most 40.
        let files: std::collections::HashSet<&str> = self
            .members
            .iter()
            .filter(|m| !m.is_dir)
            .map(|m| m.name.as_str())
            .collect();
        let by_link: std::collections::HashMap<&str, &str> =
            raw.iter().map(|(l, t)| (l.as_str(), t.as_str())).collect();
        let mut out = Vec::new();
        for (link, target) in &raw {
            let mut at = target.as_str();
            for _ in 0..8 {
                if files.contains(at) {
                    out.push((link.clone(), at.to_string()));
                    break;
                }
                match by_link.get(at) {
                    Some(next) => at = next,
                    None => break,
                }
            }
        }
        Ok(out)
    }

    /// Reads the `.dist-info` metadata (`METADATA` and `WHEEL`), after [`Wheel::dist_info`]'s
    /// checks.
    pub fn metadata(&self) -> Result<Metadata> {
        let dist_info = self.dist_info()?;
        let mut md = Metadata {
            dist_info: dist_info.clone(),
            ..Metadata::default()
        };
        if let Some(bytes) = self.dist_info_file(&dist_info, "METADATA")? {
            for (k, v) in header_fields(&String::from_utf8_lossy(&bytes)) {
                match k.as_str() {
                    "name" => md.name = Some(v),
                    "version" => md.version = Some(v),
                    "requires-dist" => md.requires_dist.push(v),
                    "requires-python" => md.requires_python = Some(v),
                    _ => {}
                }
            }
        }
        if let Some(bytes) = self.dist_info_file(&dist_info, "WHEEL")? {
            for (k, v) in header_fields(&String::from_utf8_lossy(&bytes)) {
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

/// An I/O error met while inflating a member, in words: the bare "failed to fill whole buffer"
/// of a stream that ended early says nothing about the archive.
pub(crate) fn describe_io(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    if s.contains("failed to fill whole buffer") || s.contains("unexpected end of file") {
        "the archive ends inside it (cut short)".to_string()
    } else {
        s
    }
}

/// The first name that appears twice.
fn first_duplicate(entries: &[CdEntry]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    entries
        .iter()
        .find(|e| !seen.insert(e.name.as_str()))
        .map(|e| e.name.clone())
}

/// What a member's local header must repeat of its central directory entry.
#[derive(Clone)]
struct Head {
    raw_name: Vec<u8>,
    method: u16,
    compressed: u64,
    size: u64,
}

/// One entry of the central directory as [`central_directory`] walks it: what a member's
/// listing needs, read without touching its local header (which the zip crate reads for every
/// member it lists: for a wheel fetched by range requests, a request per member).
struct CdEntry {
    name: String,
    /// The name's bytes as stored.
    raw_name: Vec<u8>,
    /// General-purpose flags (bit 0: encrypted).
    flags: u16,
    /// The compression method (0 stored, 8 deflated).
    method: u16,
    /// The system that made the entry (the high byte of "version made by": 0 DOS, 3 Unix).
    system: u8,
    compressed: u64,
    size: u64,
    /// Where its local header is.
    header: u64,
    external: u32,
}

impl CdEntry {
    /// The Unix mode, by the zip crate's rules: Unix entries carry it in the high half of the
    /// external attributes; DOS entries get one from the directory and read-only bits.
    fn unix_mode(&self) -> Option<u32> {
        if self.external == 0 {
            return None;
        }
        match self.system {
            3 => Some(self.external >> 16),
            0 => {
                let mut mode = if self.external & 0x10 != 0 {
                    0o040775
                } else {
                    0o100664
                };
                if self.external & 0x01 != 0 {
                    mode &= 0o0555;
                }
                Some(mode)
            }
            _ => None,
        }
    }
}

/// The entry names of the central directory, walked as Python's `zipfile` (pip's reader) walks
/// it: from where the directory must start for its stated size to end at the end record, entry
/// after entry until that size is consumed. The entry count the end record states must agree:
/// readers that trust it (the zip crate) would otherwise not see the members beyond it.
///
/// Hand-written because no zip reader exposes the directory as walked: they index members by the
/// stated count and by name.
/// The largest central directory read (128 MiB): about 650,000 members of 200 bytes each, where
/// the largest real wheels hold tens of thousands (torch 2.x: about 15,000).
pub const MAX_DIRECTORY: u64 = 128 << 20;

fn central_directory(file: &SharedFile) -> Result<Vec<CdEntry>> {
    let bad = |m: String| WheelError::CentralDirectory(m);
    let len = file.len;
    let tail_len = len.min(65_557);
    let mut tail = vec![0u8; tail_len as usize];
    file.file.read_exact_at(&mut tail, len - tail_len)?;
    let Some(eocd) = tail.windows(4).rposition(|w| w == b"PK\x05\x06") else {
        return Err(WheelError::Zip(zip::result::ZipError::InvalidArchive(
            "no end-of-central-directory record".into(),
        )));
    };
    if eocd + 22 > tail.len() {
        return Err(bad("end record is cut short".into()));
    }
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u64;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let eocd_abs = len - tail_len + eocd as u64;
    let mut count = u16_at(&tail, eocd + 10);
    let mut size = u32_at(&tail, eocd + 12);
    let mut end = eocd_abs; // where the directory ends
    if count == 0xFFFF || size == 0xFFFF_FFFF || u32_at(&tail, eocd + 16) == 0xFFFF_FFFF {
        // Zip64: the locator sits 20 bytes before the end record and points at the zip64 record.
        if eocd >= 20 && tail[eocd - 20..eocd - 16] == *b"PK\x06\x07" {
            let at = u64_at(&tail, eocd - 12);
            let mut rec = [0u8; 56];
            if at.checked_add(56).is_none_or(|e| e > len) {
                return Err(bad("zip64 end record lies outside the file".into()));
            }
            file.file.read_exact_at(&mut rec, at)?;
            if rec[..4] != *b"PK\x06\x06" {
                return Err(bad("zip64 end record is missing".into()));
            }
            count = u64_at(&rec, 32);
            size = u64_at(&rec, 40);
            end = at;
        }
    }
    let start = end
        .checked_sub(size)
        .ok_or_else(|| bad(format!("is said to be {size} bytes, larger than the file")))?;
    // Bounded before it is allocated: a sparse file or a range-read server can claim gigabytes.
    let limit = MAX_DIRECTORY.min(cudist_fs::limits().memory);
    if size > limit {
        return Err(WheelError::DirectoryTooLarge {
            size,
            limit,
            members: limit / 200,
        });
    }
    let mut cd = vec![0u8; size as usize];
    file.file.read_exact_at(&mut cd, start)?;
    let mut names = Vec::new();
    let mut pos = 0usize;
    while pos < cd.len() {
        if cd.len() - pos < 46 || cd[pos..pos + 4] != *b"PK\x01\x02" {
            return Err(bad(format!(
                "entry {} (at byte {pos} of the directory) is not an entry header",
                names.len() + 1
            )));
        }
        let n = u16_at(&cd, pos + 28) as usize;
        let m = u16_at(&cd, pos + 30) as usize;
        let k = u16_at(&cd, pos + 32) as usize;
        let next = pos + 46 + n + m + k;
        if next > cd.len() {
            return Err(bad(format!(
                "entry {} runs past the directory's stated size",
                names.len() + 1
            )));
        }
        let mut e = CdEntry {
            name: String::from_utf8_lossy(&cd[pos + 46..pos + 46 + n]).into_owned(),
            raw_name: cd[pos + 46..pos + 46 + n].to_vec(),
            flags: u16_at(&cd, pos + 8) as u16,
            method: u16_at(&cd, pos + 10) as u16,
            system: cd[pos + 5],
            compressed: u32_at(&cd, pos + 20),
            size: u32_at(&cd, pos + 24),
            header: u32_at(&cd, pos + 42),
            external: u32_at(&cd, pos + 38) as u32,
        };
        // Zip64: the fields that overflow are 0xFFFFFFFF, their values in extra field 0x0001,
        // in this order.
        let mut extra = &cd[pos + 46 + n..pos + 46 + n + m];
        while extra.len() >= 4 {
            let (id, len) = (u16_at(extra, 0), u16_at(extra, 2) as usize);
            let body = &extra[4..(4 + len).min(extra.len())];
            if id == 1 {
                let mut at = 0;
                for field in [&mut e.size, &mut e.compressed, &mut e.header] {
                    if *field == 0xFFFF_FFFF {
                        if at + 8 > body.len() {
                            return Err(bad(format!("entry {:?} lacks its zip64 sizes", e.name)));
                        }
                        *field = u64_at(body, at);
                        at += 8;
                    }
                }
            }
            extra = &extra[(4 + len).min(extra.len())..];
        }
        names.push(e);
        pos = next;
    }
    if names.len() as u64 != count {
        return Err(bad(format!(
            "holds {} entries but its end record says {count}: a reader that trusts the count \
             sees {count}, pip sees {}",
            names.len(),
            names.len()
        )));
    }
    Ok(names)
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

    /// A wheel of `members` (name, text) in a temporary file, with its dist-info.
    fn wheel_of(members: &[(&str, &str)]) -> (tempfile::TempDir, Wheel) {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w-1.0-py3-none-any.whl");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for (name, text) in members {
            z.start_file(*name, opts).unwrap();
            z.write_all(text.as_bytes()).unwrap();
        }
        z.finish().unwrap();
        let w = Wheel::open(&path).unwrap();
        (dir, w)
    }

    #[test]
    fn declared_links_resolve_inside_the_wheel() {
        let (_d, w) = wheel_of(&[
            ("w-1.0.data/purelib/w/lib/libfmt.so.12.1.0", "elf"),
            (
                "w-1.0.dist-info/symlinks.txt",
                concat!(
                    "w-1.0.data/purelib/w/lib/libfmt.so,libfmt.so.12,0\n",
                    "w-1.0.data/purelib/w/lib/libfmt.so.12,libfmt.so.12.1.0,0\n",
                    "w-1.0.data/purelib/w/lib/dir,../share,1\n",
                    "w-1.0.data/purelib/w/lib/libgone.so,libnone.so.1,0\n",
                ),
            ),
        ]);
        let links = w.declared_links("w-1.0.dist-info").unwrap();
        let to = "w-1.0.data/purelib/w/lib/libfmt.so.12.1.0".to_string();
        assert_eq!(
            links,
            [
                ("w-1.0.data/purelib/w/lib/libfmt.so".to_string(), to.clone()),
                ("w-1.0.data/purelib/w/lib/libfmt.so.12".to_string(), to),
            ]
        );
        for bad in [
            "w-1.0.data/purelib/w/lib/x.so,../../../../../etc/passwd,0
",
            "../outside.so,w/lib/libfmt.so.12.1.0,0
",
            "/abs.so,x,0
",
            "only-one-field
",
        ] {
            let (_d, w) = wheel_of(&[("w-1.0.dist-info/symlinks.txt", bad)]);
            let e = w.declared_links("w-1.0.dist-info").unwrap_err().to_string();
            assert!(
                e.contains("w-1.0.dist-info/symlinks.txt row 1"),
                "{bad}: {e}"
            );
        }
    }

    /// A member whose local header names another file than the central directory (the
    /// directory says `w/__init__.py`, the bytes at its offset are `w/_ext.abi3.so`'s) is
    /// refused when read, as Python's zipfile refuses it: no reader judges, and no writer
    /// copies, bytes pip would not install under that name.
    #[test]
    fn a_local_header_that_names_another_file_is_refused() {
        let (dir, _) = wheel_of(&[("w/_ext.abi3.so", "\x7fELF...")]);
        let path = dir.path().join("w-1.0-py3-none-any.whl");
        let mut bytes = std::fs::read(&path).unwrap();
        // Rename the entry in the central directory only (same length: the layout holds).
        let cd = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
        let name_at = cd + 46;
        bytes[name_at..name_at + 14].copy_from_slice(b"w/__init__.pyc");
        std::fs::write(&path, &bytes).unwrap();
        let w = Wheel::open(&path).unwrap();
        assert_eq!(w.members()[0].name, "w/__init__.pyc");
        let e = w.read_member(0).unwrap_err().to_string();
        assert!(
            e.contains("local header names") && e.contains("w/_ext.abi3.so"),
            "{e}"
        );
        assert!(w.read_prefix(0, 4).is_err());
    }

    /// A member whose local header states another compression method or other sizes than the
    /// central directory is refused when read: a streaming reader would unpack other bytes.
    #[test]
    fn a_local_header_that_states_another_method_or_size_is_refused() {
        let (dir, _) = wheel_of(&[("w/_ext.abi3.so", "\x7fELF...")]);
        let path = dir.path().join("w-1.0-py3-none-any.whl");
        let good = std::fs::read(&path).unwrap();
        let local = good.windows(4).position(|w| w == b"PK\x03\x04").unwrap();
        assert_eq!(
            good[local + 6] & 8,
            0,
            "the test wheel states its sizes locally"
        );
        for (field, what) in [(8, "compression method"), (22, "unpacked")] {
            let mut bytes = good.clone();
            bytes[local + field] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
            let w = Wheel::open(&path).unwrap();
            let e = w.read_member(0).unwrap_err().to_string();
            assert!(e.contains("local header says") && e.contains(what), "{e}");
        }
        std::fs::write(&path, &good).unwrap();
        assert_eq!(
            Wheel::open(&path).unwrap().read_member(0).unwrap(),
            b"\x7fELF..."
        );
    }

    #[test]
    fn metadata_headers() {
        let f = header_fields("Metadata-Version: 2.1\nName: foo\nRequires-Dist: bar>=1\nRequires-Dist: baz;\n  extra == 'x'\n\nbody: no");
        assert_eq!(f[1], ("name".into(), "foo".into()));
        assert_eq!(f[3].1, "baz; extra == 'x'");
        assert_eq!(f.len(), 4);
    }
}
