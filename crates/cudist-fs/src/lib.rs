//! The file-system rules every cudist reader and writer follows, because cudist runs on packages
//! nobody vetted, often as root in a container:
//!
//! - **Containment** ([`inner`]): a path that comes from inside an input (an archive member, a
//!   `RECORD` row, a conda `paths.json` entry, a symbolic link's target, a catalog's `pip_dir`) is
//!   relative, has no `..` that leaves its root, no NUL, and — resolved on disk — stays inside its
//!   root through every link on the way.
//! - **Regular files of bounded size** ([`read`]): a metadata file (a catalog, a host profile, a
//!   manifest) is read only when it is a regular file, at most a fixed number of bytes; a FIFO or a
//!   device given where a file is expected is refused at once, without blocking.
//! - **No write through a link cudist did not make** ([`write`]): every output is written to an
//!   exclusive temporary with an unpredictable name beside its destination and renamed into place;
//!   temporaries and scratch directories are removed on every failure path; a batch of
//!   replacements is all or nothing, and keeps each file's owner, group and mode.
//! - **Faults of the machine are not the input's** ([`fault`]): a full disk, a read-only file
//!   system, memory, the network or a time-out are told apart from a bad input.
//! - **Text from an input is printable** ([`text`]): control characters escaped, long fields cut,
//!   before a name, a URL or a profile field reaches a terminal or a report.
//! - **Bounded unpacking** ([`limits`]): how many bytes an archive may unpack to, and how much of
//!   it may sit in memory at once, whatever the number of cores.
//!
//! The crates that read inputs (`cudist-wheel`, `cudist-conda`, `cudist-catalog`) and the command
//! line all take these rules from here, so there is one place to read and test them.
//! `docs/security.md` states what they guarantee.

pub mod fault;
pub mod inner;
pub mod limits;
pub mod read;
pub mod text;
pub mod unpack;
pub mod write;

pub use fault::{machine_fault, Fault};
pub use inner::{member_name, resolve_beneath, within_root, PathError};
pub use limits::{limits, set_limits, Limits};
pub use read::{
    copy_exact, open_regular, read_bounded, unpack_exact, Buf, ReadError, UnpackError, Unpacked,
    SMALL_FILE,
};
pub use text::printable;
pub use unpack::{ExtractError, Unpacker};
pub use write::{
    copy_atomic, remove_live, scratch_dir, set_sweep_reporter, sweep, write_atomic, AtomicFile,
    Batch, ReplaceError, ScratchDir,
};
