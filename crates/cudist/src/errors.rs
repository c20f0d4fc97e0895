//! The hints the reporting layer adds to well-known failures.

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
                W::Damaged { .. } | W::Member { .. } => "a member does not decompress to its recorded size; the archive is damaged or hostile",
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
