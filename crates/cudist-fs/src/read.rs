//! Reading files named on the command line or found in an input: only regular files, and small
//! files only up to a bound.
//!
//! A FIFO opened for reading blocks until something writes to it, and `/dev/zero` never ends; both
//! have been given to tools as "the catalog" or "the wheel". Files are therefore opened with
//! `O_NONBLOCK` (which makes opening a FIFO return at once and changes nothing for a regular file)
//! and judged by `fstat` on the descriptor before a byte is read.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The bound for small metadata files: catalogs, host profiles, redistrib manifests, `METADATA`,
/// `RECORD`, conda `info/` files. The largest real ones are a few MiB (the `RECORD` of a CUDA
/// toolkit wheel is under 1 MiB; NVIDIA's redistrib manifests under 100 KiB).
pub const SMALL_FILE: u64 = 16 << 20;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is {kind}, not a regular file")]
    NotAFile { path: String, kind: &'static str },
    #[error("{path} is {size} bytes, over the {limit}-byte limit for this kind of file")]
    TooLarge { path: String, size: u64, limit: u64 },
}

impl ReadError {
    /// The error as an `io::Error`: the operating system's own error where there is one (so a
    /// caller that names the file itself does not name it twice), else this error.
    pub fn into_io(self) -> std::io::Error {
        match self {
            ReadError::Io { source, .. } => source,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other),
        }
    }
}

/// What a file type is, in words, for messages.
pub fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

/// Opens `path` for reading only if it is a regular file (following links, as `open` does),
/// without ever blocking on a FIFO.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let err = |source| ReadError::Io {
        path: path.display().to_string(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(err)?;
    let ft = f.metadata().map_err(err)?.file_type();
    if !ft.is_file() {
        return Err(ReadError::NotAFile {
            path: path.display().to_string(),
            kind: kind_of(ft),
        });
    }
    Ok(f)
}

/// Reads a whole regular file of at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let f = open_regular(path)?;
    let too_large = |size| ReadError::TooLarge {
        path: path.display().to_string(),
        size,
        limit,
    };
    let size = f
        .metadata()
        .map_err(|source| ReadError::Io {
            path: path.display().to_string(),
            source,
        })?
        .len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut out = Vec::with_capacity(size as usize);
    // One byte more than the limit tells a file that grew while it was read.
    f.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|source| ReadError::Io {
            path: path.display().to_string(),
            source,
        })?;
    if out.len() as u64 > limit {
        return Err(too_large(out.len() as u64));
    }
    Ok(out)
}

/// Bytes unpacked from an archive: in memory, or — when larger than their share of the memory
/// budget — in an unlinked temporary file, mapped.
#[derive(Debug)]
pub enum Unpacked {
    Heap(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Unpacked {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Unpacked::Heap(v) => v,
            Unpacked::Mapped(m) => m,
        }
    }
}

/// Bytes a command changes (a member or file being slimmed): in memory, or — when larger than
/// their share of the memory budget — in an unlinked temporary file in `TMPDIR`, mapped shared
/// and writable, so the kernel may write their pages out instead of holding them (what
/// `--max-memory` promises). A mapping of the temporary, never of the input: an input that
/// shrinks while it is read cannot fault a reader of this.
#[derive(Debug)]
pub enum Buf {
    Heap(Vec<u8>),
    Spilled(memmap2::MmapMut),
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Spilled(m) => m,
        }
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Spilled(m) => m,
        }
    }
}

impl AsRef<[u8]> for Buf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Buf {
    /// `len` zero bytes: in memory when `len` is at most `in_memory`, else in a temporary file.
    pub fn zeroed(len: u64, in_memory: u64) -> std::io::Result<Buf> {
        if len <= in_memory || len == 0 {
            return Ok(Buf::Heap(vec![0; len as usize]));
        }
        let file = tempfile::tempfile()?;
        file.set_len(len)?;
        Buf::map(&file)
    }

    /// `len` zero bytes kept as this buffer is kept (in memory or in a temporary file): for a
    /// changed copy of it.
    pub fn zeroed_like(&self, len: u64) -> std::io::Result<Buf> {
        match self {
            Buf::Heap(_) => Ok(Buf::Heap(vec![0; len as usize])),
            Buf::Spilled(_) => Buf::zeroed(len, 0),
        }
    }

    /// Whether the bytes are in a temporary file.
    pub fn is_spilled(&self) -> bool {
        matches!(self, Buf::Spilled(_))
    }

    /// Reads exactly `declared` bytes from `r` (an archive member being inflated) as
    /// [`unpack_exact`] does, into a buffer that can be changed.
    pub fn unpack(r: &mut dyn Read, declared: u64, in_memory: u64) -> Result<Buf, UnpackError> {
        match unpack_to(r, declared, in_memory)? {
            Ok(v) => Ok(Buf::Heap(v)),
            Err(file) => Ok(Buf::map(&file)?),
        }
    }

    /// A regular file's bytes, at most `limit` ([`read_bounded`]'s rules), copied into a buffer
    /// that can be changed (the file itself is never mapped: another process may shrink it).
    pub fn read_file(path: &Path, limit: u64, in_memory: u64) -> Result<Buf, ReadError> {
        let io = |source| ReadError::Io {
            path: path.display().to_string(),
            source,
        };
        let f = open_regular(path)?;
        let size = f.metadata().map_err(io)?.len();
        if size <= in_memory {
            return read_bounded(path, limit).map(Buf::Heap);
        }
        if size > limit {
            return Err(ReadError::TooLarge {
                path: path.display().to_string(),
                size,
                limit,
            });
        }
        let mut spill = tempfile::tempfile().map_err(io)?;
        // One byte more than the limit tells a file that grew while it was read.
        let got = std::io::copy(&mut f.take(limit + 1), &mut spill).map_err(io)?;
        if got > limit {
            return Err(ReadError::TooLarge {
                path: path.display().to_string(),
                size: got,
                limit,
            });
        }
        Buf::map(&spill).map_err(io)
    }

    fn map(file: &std::fs::File) -> std::io::Result<Buf> {
        if file.metadata()?.len() == 0 {
            return Ok(Buf::Heap(Vec::new()));
        }
        // SAFETY: a shared mapping of an unlinked temporary file that only this process holds
        // and never resizes while mapped; nothing else can truncate it.
        Ok(Buf::Spilled(unsafe { memmap2::MmapMut::map_mut(file)? }))
    }
}

/// Why unpacked bytes were not what their archive said.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("cannot unpack: {0}")]
    Io(#[from] std::io::Error),
    #[error("inflates beyond its declared size of {declared} bytes")]
    Longer { declared: u64 },
    #[error("ends after {got} of its declared {declared} bytes")]
    Shorter { got: u64, declared: u64 },
}

/// Copies exactly `declared` bytes from `r` (an archive member being inflated) to `w`: reading
/// one byte more than declared is an error, and so is ending early.
pub fn copy_exact(
    r: &mut dyn Read,
    declared: u64,
    w: &mut dyn std::io::Write,
) -> Result<(), UnpackError> {
    let got = std::io::copy(&mut r.take(declared + 1), w)?;
    if got > declared {
        Err(UnpackError::Longer { declared })
    } else if got < declared {
        Err(UnpackError::Shorter { got, declared })
    } else {
        Ok(())
    }
}

/// Reads exactly `declared` bytes from `r` (an archive member being inflated), holding them in
/// memory when they fit `in_memory`, else in an unlinked temporary file (in `TMPDIR`) that is
/// mapped. One byte more than declared is an error, so a member that inflates beyond its header
/// never costs more than the header said.
pub fn unpack_exact(
    r: &mut dyn Read,
    declared: u64,
    in_memory: u64,
) -> Result<Unpacked, UnpackError> {
    match unpack_to(r, declared, in_memory)? {
        Ok(v) => Ok(Unpacked::Heap(v)),
        // SAFETY: a private read-only mapping of an unlinked temporary file that only this
        // process holds; nothing else can truncate it.
        Err(file) => Ok(Unpacked::Mapped(unsafe { memmap2::Mmap::map(&file)? })),
    }
}

/// Exactly `declared` bytes of `r`: in memory (`Ok`) within `in_memory`, else in an unlinked
/// temporary file in `TMPDIR` (`Err`), for [`unpack_exact`] and [`Buf::unpack`] to map.
fn unpack_to(
    r: &mut dyn Read,
    declared: u64,
    in_memory: u64,
) -> Result<Result<Vec<u8>, File>, UnpackError> {
    if declared <= in_memory || declared == 0 {
        let mut v = Vec::with_capacity(declared as usize);
        copy_exact(r, declared, &mut v)?;
        return Ok(Ok(v));
    }
    let mut spill = std::io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
    copy_exact(r, declared, &mut spill)?;
    Ok(Err(spill.into_inner().map_err(|e| e.into_error())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_of_bounded_size() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("small.toml");
        std::fs::write(&f, b"schema = 1\n").unwrap();
        assert_eq!(read_bounded(&f, 100).unwrap(), b"schema = 1\n");
        let e = read_bounded(&f, 4).unwrap_err().to_string();
        assert!(e.contains("11 bytes, over the 4-byte limit"), "{e}");
        let e = read_bounded(d.path(), 100).unwrap_err().to_string();
        assert!(e.ends_with("is a directory, not a regular file"), "{e}");
        // A FIFO is refused at once instead of blocking.
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bounded(&fifo, 100).unwrap_err().to_string();
        assert!(e.contains("a FIFO (named pipe), not a regular file"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a character device"), "{e}");
        let e = read_bounded(&d.path().join("missing"), 100).unwrap_err();
        assert!(e.to_string().starts_with("cannot read "), "{e}");
    }

    /// A buffer to change is in memory up to its share and in a writable temporary beyond it,
    /// with the same bytes either way; a copy made "like" it is kept the same way.
    #[test]
    fn buffers_to_change_spill_beyond_their_share() {
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        for (in_memory, spilled) in [(1 << 20, false), (100, true)] {
            let mut b = Buf::unpack(&mut &data[..], 5000, in_memory).unwrap();
            assert_eq!(b.is_spilled(), spilled);
            assert_eq!(&b[..], &data[..]);
            b[0] = 0xAA;
            assert_eq!(b[0], 0xAA);
            let copy = b.zeroed_like(10).unwrap();
            assert_eq!((copy.is_spilled(), &copy[..]), (spilled, &[0u8; 10][..]));
            assert!(Buf::unpack(&mut &data[..], 4999, in_memory).is_err());
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join("f");
            std::fs::write(&f, &data).unwrap();
            let r = Buf::read_file(&f, 10_000, in_memory).unwrap();
            assert_eq!((r.is_spilled(), &r[..]), (spilled, &data[..]));
            let e = Buf::read_file(&f, 4000, in_memory).unwrap_err().to_string();
            assert!(e.contains("over the 4000-byte limit"), "{e}");
        }
        assert!(!Buf::zeroed(0, 0).unwrap().is_spilled());
    }

    #[test]
    fn unpacked_bytes_are_exactly_the_declared_size_in_memory_or_mapped() {
        let data = vec![7u8; 1000];
        let small = unpack_exact(&mut &data[..], 1000, 4096).unwrap();
        assert!(matches!(small, Unpacked::Heap(_)));
        assert_eq!(&small[..], &data[..]);
        let big = unpack_exact(&mut &data[..], 1000, 10).unwrap();
        assert!(matches!(big, Unpacked::Mapped(_)));
        assert_eq!(&big[..], &data[..]);
        for in_memory in [10, 4096] {
            let e = unpack_exact(&mut &data[..], 999, in_memory).unwrap_err();
            assert_eq!(
                e.to_string(),
                "inflates beyond its declared size of 999 bytes"
            );
            let e = unpack_exact(&mut &data[..], 1001, in_memory).unwrap_err();
            assert_eq!(e.to_string(), "ends after 1000 of its declared 1001 bytes");
        }
    }
}
