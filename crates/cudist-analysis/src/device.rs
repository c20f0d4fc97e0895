//! The device code of an ELF file: its fatbin entries as the report lists them (one row per cubin
//! image, as cuobjdump counts them), and what `cuobjdump --list-elf --list-ptx` would print.

use cudist_elf::ElfFile;
use cudist_fatbin::{EntryKind, SectionKind};

use crate::model::DeviceEntry;

/// A fatbin section of an ELF file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DeviceCodeError {
    /// The section's bytes lie outside the file.
    #[error("{path}: section {section}")]
    Section {
        /// The file, as the caller named it.
        path: String,
        /// The section (`.nv_fatbin`).
        section: String,
        /// What is wrong with it.
        #[source]
        source: cudist_elf::ElfError,
    },
    /// The section is not a well-formed fatbin.
    #[error("{path}: section {section}")]
    Fatbin {
        /// The file, as the caller named it.
        path: String,
        /// The section (`.nv_fatbin`, `__nv_relfatbin`).
        section: String,
        /// What is wrong with it.
        #[source]
        source: cudist_fatbin::FatbinError,
    },
}

/// The device code of an ELF file, in file order across both fatbin sections, and the bytes of
/// those sections. `path` names the file in errors; `data` is the file's bytes `elf` was parsed
/// from.
///
/// ```
/// // An ELF file with no fatbin section has no device code.
/// let data = std::fs::read("/proc/self/exe").unwrap();
/// let elf = cudist_elf::ElfFile::parse(&data).unwrap();
/// let (entries, bytes) = cudist_analysis::device::entries("self", &elf, &data).unwrap();
/// assert!(entries.is_empty());
/// assert_eq!(bytes, 0);
/// ```
pub fn entries(
    path: &str,
    elf: &ElfFile,
    data: &[u8],
) -> Result<(Vec<DeviceEntry>, u64), DeviceCodeError> {
    let mut fat_sections: Vec<_> = elf
        .sections
        .iter()
        .filter_map(|s| SectionKind::from_section_name(&s.name).map(|k| (k, s)))
        .collect();
    fat_sections.sort_by_key(|(_, s)| s.offset);
    let mut device_code = Vec::new();
    let mut fat_bytes = 0u64;
    for (kind, section) in fat_sections {
        let bytes = elf
            .section_data(data, section)
            .map_err(|source| DeviceCodeError::Section {
                path: path.to_string(),
                section: section.name.clone(),
                source,
            })?;
        fat_bytes += bytes.len() as u64;
        // One entry at a time: only the report's rows are kept, within the memory budget.
        let limit = max_rows();
        cudist_fatbin::for_each_entry(bytes, kind, &mut |e| {
            push_device_entries(&e, &mut device_code);
            if device_code.len() > limit {
                return Err(cudist_fatbin::FatbinError::TooManyEntries { limit });
            }
            Ok(())
        })
        .map_err(|source| DeviceCodeError::Fatbin {
            path: path.to_string(),
            section: section.name.clone(),
            source,
        })?;
    }
    Ok((device_code, fat_bytes))
}

/// The most device-code rows one ELF file may have: a quarter of a worker's share of
/// `--max-memory`, at what a row costs (about 200 bytes with its strings). With the default 1 GiB
/// and 16 workers, about 80,000; real libraries hold thousands (a hostile 64 MiB section of bare
/// 64-byte headers holds a million, which cost 400 MB before this bound).
pub(crate) fn max_rows() -> usize {
    const ROW: u64 = std::mem::size_of::<DeviceEntry>() as u64 + 64;
    let share = cudist_fs::limits().in_memory_member(rayon::current_num_threads());
    (share / 4 / ROW) as usize
}

/// Adds one fatbin entry to the report; a concatenated entry becomes one cubin row per image, each
/// with its share of the stored bytes, as cuobjdump lists them.
pub(crate) fn push_device_entries(e: &cudist_fatbin::Entry, out: &mut Vec<DeviceEntry>) {
    let row =
        |kind, arch: String, sm, version: String, share: f64, uncompressed, flags, concatenated| {
            DeviceEntry {
                section: e.section,
                kind,
                raw_kind: e.raw_kind,
                arch,
                sm,
                version,
                codec: e.codec,
                stored_size: (e.stored_size() as f64 * share).round() as u64,
                compressed_size: (e.compressed_size as f64 * share).round() as u64,
                uncompressed_size: uncompressed,
                flags,
                concatenated,
                identifier: e.identifier.clone(),
            }
        };
    if e.kind == EntryKind::Concat && !e.images.is_empty() {
        let total: u64 = e.images.iter().map(|i| i.size).sum::<u64>().max(1);
        for i in &e.images {
            let share = i.size as f64 / total as f64;
            let version = format!("{}.{}", i.version_major, i.version_minor);
            // The image header has no codec bits: keep the entry's, which `codec` reports.
            let flags = i.flags | (e.flags & cudist_fatbin::flags::ANY_COMPRESSION);
            out.push(row(
                EntryKind::Cubin,
                i.arch_name(),
                i.sm,
                version,
                share,
                i.size,
                flags,
                true,
            ));
        }
    } else {
        let version = format!("{}.{}", e.version_major, e.version_minor);
        out.push(row(
            e.kind,
            e.arch_name(),
            e.sm,
            version,
            1.0,
            e.uncompressed_size,
            e.flags,
            false,
        ));
    }
}

/// What `cuobjdump --list-elf --list-ptx` lists for these entries: `(is_elf, arch)` in file order,
/// from the section it reads by default.
pub fn cuobjdump_items(entries: &[DeviceEntry]) -> Vec<(bool, &str)> {
    let present: Vec<SectionKind> = entries.iter().map(|e| e.section).collect();
    let Some(section) = cudist_fatbin::cuobjdump_default_section(&present) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.section == section)
        .filter_map(|e| match e.kind {
            EntryKind::Ptx => Some((false, e.arch.as_str())),
            EntryKind::Cubin | EntryKind::Other(0x10) => Some((true, e.arch.as_str())),
            _ => None,
        })
        .collect()
}
