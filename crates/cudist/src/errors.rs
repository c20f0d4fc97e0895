//! What the one reporting layer needs to know of an error: whether it is the input's fault
//! (exit code 3) and a hint for well-known failures.

/// An input that cannot be read or is malformed, said in one sentence that names the file.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// An error that says the input is bad (exit code 3).
pub fn input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Whether an error comes from a bad input (exit code 3) rather than from cudist or the machine
/// (exit code 1): anywhere in its cause chain, a [`BadInput`] or an error of the readers of
/// wheels, ELF files, device code, catalogs, conda packages, or a path from inside an input.
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<BadInput>()
            || c.is::<cudist_wheel::WheelError>()
            || c.is::<cudist_elf::ElfError>()
            || c.is::<cudist_fatbin::FatbinError>()
            || c.is::<cudist_catalog::CatalogError>()
            || c.is::<cudist_fs::PathError>()
            || c.is::<cudist_fs::ReadError>()
            || c.is::<cudist_fs::ExtractError>()
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

/// A hint for well-known failure kinds, found anywhere in the cause chain.
pub fn hint(e: &anyhow::Error) -> Option<&'static str> {
    for cause in e.chain() {
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
        if let Some(cudist_elf::patch::PatchError::Layout(_)) =
            cause.downcast_ref::<cudist_elf::patch::PatchError>()
        {
            return Some("the file's headers describe what no linker writes; rebuild it, or check it with `readelf -lS`");
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
