//! Errors of opening and analysing an artifact, and what a reporter needs to know of any error
//! cudist's crates raise: whether the input is to blame ([`is_bad_input`]) and a hint for the
//! well-known failures ([`hint`]).
//!
//! Both judgements look through a whole cause chain (an `anyhow` chain in the command-line tool,
//! [`chain`] of a library error here), so a caller may wrap these errors in context of its own.

use std::error::Error as StdError;

use crate::device::DeviceCodeError;
use crate::model::InputError;

/// Why an artifact, or one file inside it, could not be opened or analysed.
///
/// Each variant keeps the error of the reader it comes from as its source (or, for the wrappers
/// without context of their own, as itself), so [`is_bad_input`] and [`hint`] see through it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read; `context` says which and what was being done.
    #[error("{context}")]
    Io {
        /// What was being read (`cannot list /x/lib`).
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An ELF file is malformed; `context` names it and the part that could not be read.
    #[error("{context}")]
    Elf {
        /// The file and the part (`lib/x.so: cannot read symbol tables`).
        context: String,
        /// The ELF reader's error.
        #[source]
        source: cudist_elf::ElfError,
    },
    /// A problem said in words: the input is of no kind cudist reads, or an environment cannot
    /// make one toolkit.
    #[error("{0}")]
    Message(String),
    /// An input that is malformed or hostile, said in one sentence that names the file.
    #[error(transparent)]
    Bad(#[from] BadInput),
    /// A file of an input could not be read within its bounds.
    #[error(transparent)]
    Read(#[from] cudist_fs::ReadError),
    /// A path from inside an input leads out of its root.
    #[error(transparent)]
    Path(#[from] cudist_fs::PathError),
    /// A read error without context of its own.
    #[error(transparent)]
    RawIo(#[from] std::io::Error),
    /// A wheel is unreadable, malformed or hostile.
    #[error(transparent)]
    Wheel(#[from] cudist_wheel::WheelError),
    /// A conda package is unreadable, malformed or hostile.
    #[error(transparent)]
    Conda(#[from] cudist_conda::Error),
    /// An archive member does not unpack to its declared size.
    #[error(transparent)]
    Unpack(#[from] cudist_fs::UnpackError),
    /// An ELF file's device code could not be read.
    #[error(transparent)]
    Device(#[from] DeviceCodeError),
    /// An ELF file could not be rewritten.
    #[error(transparent)]
    Patch(#[from] cudist_elf::patch::PatchError),
    /// Files could not be replaced all or nothing.
    #[error(transparent)]
    Replace(#[from] cudist_fs::ReplaceError),
    /// A JSON document could not be read or written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An error with what was being done when it happened ([`ResultExt::context`]).
    #[error("{context}")]
    Context {
        /// What was being done (`cannot write /out/lib64/libcudart.so`).
        context: String,
        /// The error itself, kept in the chain.
        #[source]
        source: Box<dyn StdError + Send + Sync + 'static>,
    },
    /// An error that makes the input the culprit ([`ResultExt::input_context`]): a path given to
    /// the library that does not exist or is not what it reads. [`is_bad_input`] says so.
    #[error("{context}")]
    Input {
        /// What is wrong with the input, naming it.
        context: String,
        /// The error itself, kept in the chain.
        #[source]
        source: Box<dyn StdError + Send + Sync + 'static>,
    },
}

/// A [`Result`](std::result::Result) with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Says what was being done when an error happened, keeping the error in the chain (as the
/// command-line tool's `anyhow` does for its own errors).
pub trait ResultExt<T> {
    /// Wraps an error in `context`.
    fn context(self, context: impl std::fmt::Display) -> Result<T>;
    /// Wraps an error in the context `f` makes (only made when there is an error).
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T>;
    /// Wraps an error in `f`'s context and makes the input the culprit (exit code 3).
    fn input_context(self, f: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: StdError + Send + Sync + 'static> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context.to_string(),
            source: Box::new(e),
        })
    }
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: f().to_string(),
            source: Box::new(e),
        })
    }
    fn input_context(self, f: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Input {
            context: f(),
            source: Box::new(e),
        })
    }
}

/// A missing value becomes an error said in words ([`Error::Message`]), or with
/// `input_context`, a bad input ([`Error::Bad`]).
impl<T> ResultExt<T> for Option<T> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::Message(context.to_string()))
    }
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| Error::Message(f().to_string()))
    }
    fn input_context(self, f: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| bad_input(f()))
    }
}

/// An error said in words ([`Error::Message`]), returned at once: `bail!("{x} is not a root")`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Message(format!($($arg)*)))
    };
}

/// A bad input said in words, naming it ([`Error::Bad`]): exit code 3 in the command-line tool.
pub fn bad_input(message: impl Into<String>) -> Error {
    Error::Bad(BadInput(message.into()))
}

/// An input that cannot be read or is malformed, said in one sentence that names the file: the
/// error a caller raises for a bad input no reader's error type describes.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for BadInput {}

/// An error followed by its sources, outermost first.
pub fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e: &&'a (dyn StdError + 'static)| e.source())
}

/// An error and its causes in one line, joined by `: ` (as `anyhow` prints `{:#}`).
pub fn message(e: &(dyn StdError + 'static)) -> String {
    chain(e)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

/// `place: message`, or `message` alone where it already names `place` (a reader's error that
/// begins with its file, or quotes a member's name): an error line names each thing once.
pub fn located(place: &str, message: &str) -> String {
    if message.starts_with(&format!("{place}: ")) || message.contains(&format!("\"{place}\"")) {
        message.to_string()
    } else {
        format!("{place}: {message}")
    }
}

/// The report entry for an input (or a file inside one) that could not be read.
pub fn input_error(path: String, e: &(dyn StdError + 'static)) -> InputError {
    InputError {
        path,
        error: message(e),
        hint: hint(chain(e)).map(str::to_string),
    }
}

/// The reader's error an [`Error`] wraps without context of its own, or the error itself.
fn unwrapped<'a>(c: &'a (dyn StdError + 'static)) -> &'a (dyn StdError + 'static) {
    match c.downcast_ref::<Error>() {
        Some(Error::RawIo(e)) => e,
        Some(Error::Wheel(e)) => e,
        Some(Error::Conda(e)) => e,
        Some(Error::Unpack(e)) => e,
        Some(Error::Device(e)) => e,
        Some(Error::Bad(e)) => e,
        Some(Error::Read(e)) => e,
        Some(Error::Path(e)) => e,
        Some(Error::Patch(e)) => e,
        Some(Error::Json(e)) => e,
        Some(Error::Replace(e)) => e,
        _ => c,
    }
}

/// Whether an error comes from a bad input (exit code 3) rather than from cudist or the machine
/// (exit code 1): anywhere in its cause chain, a [`BadInput`] or an error of the readers of
/// wheels, ELF files, device code, catalogs, conda packages, or a path from inside an input.
pub fn is_bad_input<'a>(causes: impl IntoIterator<Item = &'a (dyn StdError + 'static)>) -> bool {
    causes.into_iter().map(unwrapped).any(|c| {
        c.is::<BadInput>()
            || matches!(c.downcast_ref::<Error>(), Some(Error::Input { .. }))
            || c.downcast_ref::<cudist_wheel::WheelError>()
                .is_some_and(|w| !matches!(w, cudist_wheel::WheelError::Write(_)))
            || c.is::<cudist_elf::ElfError>()
            || c.is::<cudist_fatbin::FatbinError>()
            || c.is::<cudist_catalog::CatalogError>()
            || c.is::<cudist_fs::PathError>()
            || c.is::<cudist_fs::ReadError>()
            || c.is::<cudist_fs::ExtractError>()
            || matches!(
                c.downcast_ref::<crate::slim::SlimError>(),
                Some(crate::slim::SlimError::Overlap { .. })
            )
            || c.downcast_ref::<cudist_conda::Error>()
                .is_some_and(|e| !matches!(e, cudist_conda::Error::Io { .. }))
            || matches!(
                c.downcast_ref::<cudist_elf::patch::PatchError>(),
                Some(
                    cudist_elf::patch::PatchError::Read(_)
                        | cudist_elf::patch::PatchError::Layout(_)
                )
            )
    })
}

/// The machine's fault anywhere in the cause chain ([`cudist_fs::fault`]): an operating-system
/// error that says the disk is full, the file system read-only, memory or the network gone, or a
/// time-out. Such an error is never the input's, whatever reader met it (exit code 4).
pub fn machine_fault<'a>(
    causes: impl IntoIterator<Item = &'a (dyn StdError + 'static)>,
) -> Option<cudist_fs::Fault> {
    causes.into_iter().map(unwrapped).find_map(|c| {
        let io = c.downcast_ref::<std::io::Error>()?;
        cudist_fs::machine_fault(io)
    })
}

/// Whether the cause chain holds a limit of cudist rather than a fault of the input: an ELF edit
/// cudist's writer cannot make in a valid file ([`cudist_elf::patch::PatchError::Rewrite`]).
pub fn is_cudist_limit<'a>(causes: impl IntoIterator<Item = &'a (dyn StdError + 'static)>) -> bool {
    causes.into_iter().map(unwrapped).any(|c| {
        matches!(
            c.downcast_ref::<cudist_elf::patch::PatchError>(),
            Some(cudist_elf::patch::PatchError::Rewrite(_))
        )
    })
}

/// A hint for well-known failure kinds, found anywhere in the cause chain.
///
/// ```
/// use cudist_analysis::error::{chain, hint, Error};
///
/// let e = Error::Wheel(cudist_wheel::WheelError::NotAFile("a FIFO"));
/// assert_eq!(hint(chain(&e)), Some("give the path of a regular file"));
/// ```
pub fn hint<'a>(
    causes: impl IntoIterator<Item = &'a (dyn StdError + 'static)>,
) -> Option<&'static str> {
    let causes: Vec<_> = causes.into_iter().map(unwrapped).collect();
    if let Some(f) = machine_fault(causes.iter().copied()) {
        return Some(f.hint());
    }
    for cause in causes {
        if let Some(w) = cause.downcast_ref::<cudist_wheel::WheelError>() {
            use cudist_wheel::WheelError as W;
            return Some(match w {
                W::Zip(_) => "the file is not a complete zip archive; re-download it (`python -m zipfile -t FILE` tests it)",
                W::UnsafeName { .. } | W::Symlink { .. } | W::Duplicate { .. } => {
                    "this archive could write outside its install directory or is ambiguous; cudist refuses such wheels, and pip should too"
                }
                W::CentralDirectory(_) => "the zip directory hides or invents members: readers would disagree on what the wheel holds; rebuild it",
                W::Layout(_) => "build the wheel with a standard backend (pip wheel, python -m build); pip would refuse this one too",
                W::Damaged { .. } | W::Member { .. } => "a member does not decompress to its recorded size or checksum; the archive is damaged or hostile",
                W::TooLarge { .. } => "a real package never unpacks this large; if this one does, raise the limit with --max-unpacked",
                W::DirectoryTooLarge { .. } => "no real wheel has a central directory this large: the file is damaged or hostile (a sparse file or a server can claim any size)",
                W::NotAFile(_) => "give the path of a regular file",
                _ => continue,
            });
        }
        if let Some(r) = cause.downcast_ref::<cudist_fs::ReadError>() {
            return Some(match r {
                cudist_fs::ReadError::NotAFile { .. } => "give the path of a regular file",
                cudist_fs::ReadError::TooLarge { .. } => {
                    "no real file of this kind is this large; check the path"
                }
                cudist_fs::ReadError::Io { .. } => continue,
            });
        }
        if cause.is::<cudist_fs::PathError>() || cause.is::<cudist_fs::ExtractError>() {
            return Some("the input names a path outside itself, or writes through a link; cudist reads and writes only inside an input's own root (docs/security.md)");
        }
        match cause.downcast_ref::<cudist_elf::patch::PatchError>() {
            Some(cudist_elf::patch::PatchError::Layout(_)) => {
                return Some("the file's headers describe what no linker writes; rebuild it, or check it with `readelf -lS`");
            }
            Some(cudist_elf::patch::PatchError::Rewrite(_)) => {
                return Some("the file is valid, but cudist's ELF writer cannot make this layout change (a limit of cudist, not a fault of the wheel): nothing was written; `patchelf --set-rpath` can make the edit");
            }
            _ => {}
        }
        if let Some(c) = cause.downcast_ref::<cudist_conda::Error>() {
            return Some(match c {
                cudist_conda::Error::Unsafe { .. } => "the package names a path outside its prefix; conda installers refuse such packages too",
                cudist_conda::Error::TooLarge { .. } => "a real package never unpacks this large; if this one does, raise the limit with --max-unpacked",
                _ => continue,
            });
        }
        if cause.downcast_ref::<cudist_fatbin::FatbinError>().is_some() {
            return Some("the device-code container is damaged or of an unknown layout; `cuobjdump --list-elf FILE` shows whether NVIDIA's tool can read it");
        }
        if cause.downcast_ref::<cudist_elf::ElfError>().is_some() {
            return Some(
                "the ELF file is cut short or damaged; extract or rebuild it and try again",
            );
        }
        if cause
            .downcast_ref::<cudist_catalog::CatalogError>()
            .is_some()
        {
            return Some("catalog files use the schema in docs/catalog.md (`schema = 1`)");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::located;

    #[test]
    fn a_place_already_named_is_not_named_again() {
        assert_eq!(
            located("a.so", "a.so: cannot read ELF"),
            "a.so: cannot read ELF"
        );
        assert_eq!(
            located("p/x.so", "member \"p/x.so\" is damaged"),
            "member \"p/x.so\" is damaged"
        );
        assert_eq!(located("a.so", "cannot read ELF"), "a.so: cannot read ELF");
        assert_eq!(located("a.so", "a.so.1: missing"), "a.so: a.so.1: missing");
    }

    use super::*;

    #[test]
    fn wrapped_reader_errors_are_seen_through() {
        let e = Error::Elf {
            context: "lib/x.so: cannot read ELF".into(),
            source: cudist_elf::ElfError::NotElf,
        };
        assert!(is_bad_input(chain(&e)));
        assert!(message(&e).starts_with("lib/x.so: cannot read ELF: "));
        assert!(hint(chain(&e)).unwrap().contains("cut short"));
        let io = Error::Io {
            context: "cannot list /x".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert!(!is_bad_input(chain(&io)));
        assert_eq!(hint(chain(&io)), None);
        assert!(is_bad_input(chain(&BadInput("x: broken".into()))));

        // Context keeps the reader's error in the chain; input context makes any error the input's.
        let missing: Result<()> = Err(std::io::Error::from(std::io::ErrorKind::NotFound).into());
        let wrapped = missing.context("cannot read /x/version.json").unwrap_err();
        assert_eq!(
            message(&wrapped),
            format!(
                "cannot read /x/version.json: {}",
                std::io::Error::from(std::io::ErrorKind::NotFound)
            )
        );
        assert!(!is_bad_input(chain(&wrapped)));
        let not_elf: Result<()> = Err(Error::Elf {
            context: "lib/x.so".into(),
            source: cudist_elf::ElfError::NotElf,
        });
        let e = not_elf.context("cannot relink /x").unwrap_err();
        assert!(is_bad_input(chain(&e)));
        assert!(hint(chain(&e)).unwrap().contains("cut short"));
        let given: Result<()> = Err(std::io::Error::from(std::io::ErrorKind::NotFound).into());
        let e = given
            .input_context(|| "/x: no such root".into())
            .unwrap_err();
        assert!(is_bad_input(chain(&e)));
        assert!(message(&e).starts_with("/x: no such root: "));
    }
}
