//! Which operating-system errors are the machine's fault rather than the input's: a full disk, a
//! read-only file system, memory, a device's I/O error, the open-file limit, the network, a
//! time-out. The command line gives these their own exit code (4) and says which it was, so a CI
//! job can tell "this wheel is broken" (3) from "this runner is broken" and retry only the latter.
//!
//! The judgement is made on the error number where the operating system gave one, else on the
//! error's kind (the Rust standard library's, which clients such as ureq also use).

use std::io;

/// A fault of the machine, as a user would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No space left on the device, or the user's quota is spent.
    DiskFull,
    /// The file system is mounted read-only.
    ReadOnly,
    /// Memory could not be had.
    OutOfMemory,
    /// The device reported an input/output error.
    Device,
    /// The process or the system cannot open another file.
    TooManyFiles,
    /// The network is down or unreachable, or the connection was refused, reset or aborted.
    Network,
    /// An operation took longer than its time limit.
    TimedOut,
}

impl Fault {
    /// The I/O error kind that carries this fault through a reader that speaks `std::io` (a
    /// wheel read by range requests): [`machine_fault`] gives the fault back from it.
    pub fn kind(self) -> io::ErrorKind {
        match self {
            Fault::DiskFull => io::ErrorKind::StorageFull,
            Fault::ReadOnly => io::ErrorKind::ReadOnlyFilesystem,
            Fault::OutOfMemory => io::ErrorKind::OutOfMemory,
            Fault::Network => io::ErrorKind::NetworkUnreachable,
            Fault::TimedOut => io::ErrorKind::TimedOut,
            // No kind of their own: said by their error number where they happen.
            Fault::Device | Fault::TooManyFiles => io::ErrorKind::Other,
        }
    }

    /// What happened and what to do about it.
    pub fn hint(self) -> &'static str {
        match self {
            Fault::DiskFull => "the disk is full, a fault of this machine, not of the input: free space where cudist writes (its output, TMPDIR, the cache) and run it again",
            Fault::ReadOnly => "the file system is read-only, a fault of this machine, not of the input: write the output to a writable directory",
            Fault::OutOfMemory => "out of memory, a fault of this machine, not of the input: lower --max-memory, or give the job more memory",
            Fault::Device => "an I/O error of the device, a fault of this machine, not of the input: the disk or file system needs checking",
            Fault::TooManyFiles => "too many open files, a fault of this machine, not of the input: raise the open-file limit (ulimit -n)",
            Fault::Network => "the network failed, a fault of the network, not of the input: check the connection, the proxy (HTTPS_PROXY, NO_PROXY) and the URL's host and port, then run it again",
            Fault::TimedOut => "timed out, a fault of the network or the server, not of the input: run it again, or raise CUDIST_HTTP_TIMEOUT",
        }
    }
}

/// The machine's fault an I/O error reports, if it is one.
///
/// ```
/// use cudist_fs::fault::{machine_fault, Fault};
///
/// let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
/// assert_eq!(machine_fault(&full), Some(Fault::DiskFull));
/// let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
/// assert_eq!(machine_fault(&missing), None);
/// ```
pub fn machine_fault(e: &io::Error) -> Option<Fault> {
    if let Some(n) = e.raw_os_error() {
        return match n {
            libc::ENOSPC | libc::EDQUOT => Some(Fault::DiskFull),
            libc::EROFS => Some(Fault::ReadOnly),
            libc::ENOMEM => Some(Fault::OutOfMemory),
            libc::EIO => Some(Fault::Device),
            libc::EMFILE | libc::ENFILE => Some(Fault::TooManyFiles),
            libc::ENETDOWN
            | libc::ENETUNREACH
            | libc::EHOSTUNREACH
            | libc::EHOSTDOWN
            | libc::ECONNREFUSED
            | libc::ECONNRESET
            | libc::ECONNABORTED => Some(Fault::Network),
            libc::ETIMEDOUT => Some(Fault::TimedOut),
            _ => None,
        };
    }
    use io::ErrorKind as K;
    match e.kind() {
        K::StorageFull | K::QuotaExceeded => Some(Fault::DiskFull),
        K::ReadOnlyFilesystem => Some(Fault::ReadOnly),
        K::OutOfMemory => Some(Fault::OutOfMemory),
        K::NetworkDown
        | K::NetworkUnreachable
        | K::HostUnreachable
        | K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted => Some(Fault::Network),
        K::TimedOut => Some(Fault::TimedOut),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_numbers_and_kinds_name_the_same_faults() {
        for (n, k, f) in [
            (libc::ENOSPC, io::ErrorKind::StorageFull, Fault::DiskFull),
            (
                libc::EROFS,
                io::ErrorKind::ReadOnlyFilesystem,
                Fault::ReadOnly,
            ),
            (
                libc::ECONNREFUSED,
                io::ErrorKind::ConnectionRefused,
                Fault::Network,
            ),
            (libc::ETIMEDOUT, io::ErrorKind::TimedOut, Fault::TimedOut),
        ] {
            assert_eq!(machine_fault(&io::Error::from_raw_os_error(n)), Some(f));
            assert_eq!(machine_fault(&io::Error::from(k)), Some(f));
        }
        // What an input does wrong is not the machine's fault.
        for n in [
            libc::ENOENT,
            libc::EACCES,
            libc::ENOTDIR,
            libc::EISDIR,
            libc::ELOOP,
        ] {
            assert_eq!(machine_fault(&io::Error::from_raw_os_error(n)), None, "{n}");
        }
        assert_eq!(
            machine_fault(&io::Error::from(io::ErrorKind::UnexpectedEof)),
            None
        );
        for f in [Fault::DiskFull, Fault::Network, Fault::TimedOut] {
            assert_eq!(machine_fault(&io::Error::new(f.kind(), "x")), Some(f));
        }
    }
}
