//! CUDA fatbinaries: the device-code containers nvcc embeds in host ELF files.
//!
//! NVIDIA publishes no specification and no crate parses the format, so this one is written here from
//! the layout documented in `docs/fatbin.md` and checked entry for entry against `cuobjdump` on real
//! files (nvcc 13.5 fixtures, every module of `cupy-cuda12x` 14.2.0).
//!
//! A host ELF carries fatbins in two sections: `.nv_fatbin` (device code the runtime loads) and
//! `__nv_relfatbin` (relocatable device code kept for a later device link, `-rdc=true`). Each section
//! holds containers back to back on 8-byte boundaries; each container holds entries: a cubin (an ELF
//! for one SM), PTX text (JIT-compiled by the driver for newer GPUs), or LTO-IR. Entries may be
//! compressed with an LZ4 block or a zstd frame.
//!
//! [`parse_section`] walks a section and returns [`Entry`] values (never panics on hostile input);
//! [`Entry::decompress`] returns the payload; [`cuobjdump_listing`] prints the listing in the same
//! form as `cuobjdump --list-elf --list-ptx`. [`stream::StreamScan`] finds entries in a file read
//! front to back, keeping only their headers.

pub mod stream;

use std::fmt;

use serde::Serialize;

/// Magic number at the start of every fatbin container.
pub const CONTAINER_MAGIC: u32 = 0xBA55_ED50;
/// Size of the container header.
pub const CONTAINER_HEADER: usize = 16;
/// Smallest entry header.
pub const ENTRY_HEADER_MIN: usize = 0x40;
/// Largest payload [`Entry::decompress`] will inflate to (a guard against decompression bombs).
pub const MAX_UNCOMPRESSED: u64 = 1 << 32;

/// Flag bits of an entry header (see `docs/fatbin.md`).
pub mod flags {
    pub const ADDRESS_64: u64 = 0x1;
    pub const DEBUG: u64 = 0x2;
    pub const HOST_LINUX: u64 = 0x10;
    pub const COMPRESSED_OLD: u64 = 0x1000;
    pub const COMPRESSED_LZ4: u64 = 0x2000;
    pub const COMPRESSED_ZSTD: u64 = 0x8000;
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    pub const FAMILY_SPECIFIC: u64 = 0x20_0000;
    /// The option record holds a binary copy of the cubin's `.nv.compat` section (sm_100+ cubins).
    pub const COMPAT_RECORD: u64 = 0x100_0000;
    pub const ANY_COMPRESSION: u64 = COMPRESSED_OLD | COMPRESSED_LZ4 | COMPRESSED_ZSTD;
}

/// Which ELF section a fatbin came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum SectionKind {
    /// `.nv_fatbin`: device code registered with the runtime.
    #[serde(rename = ".nv_fatbin")]
    NvFatbin,
    /// `__nv_relfatbin`: relocatable device code (`-rdc=true`).
    #[serde(rename = "__nv_relfatbin")]
    RelFatbin,
}

impl SectionKind {
    /// The ELF section name.
    pub fn section_name(self) -> &'static str {
        match self {
            SectionKind::NvFatbin => ".nv_fatbin",
            SectionKind::RelFatbin => "__nv_relfatbin",
        }
    }

    /// The section kind for an ELF section name, if it holds fatbins.
    pub fn from_section_name(name: &str) -> Option<SectionKind> {
        match name {
            ".nv_fatbin" => Some(SectionKind::NvFatbin),
            "__nv_relfatbin" => Some(SectionKind::RelFatbin),
            _ => None,
        }
    }
}

/// What an entry holds. In JSON always a string ([`EntryKind::name`]): `"other"` for every kind
/// without a name, whose value is in the entry's raw kind field, so the field has one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX assembly (kind 1).
    Ptx,
    /// A cubin: an ELF of machine code for one SM (kind 2).
    Cubin,
    /// NVVM IR for link-time optimisation (kind 8); obfuscated, never listed by cuobjdump.
    LtoIr,
    /// Several cubins in one compressed payload (kind 0x100, `nvcc --concat`); see [`Entry::images`].
    Concat,
    /// Any other kind value. cuobjdump lists kind 0x10 as ELF and skips the rest.
    Other(u16),
}

impl Serialize for EntryKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for EntryKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EntryKind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What an entry holds: PTX, a cubin, NVVM IR for link-time optimisation, several cubins in one payload (nvcc --concat), or another kind (its number is the entry's raw kind).",
            "type": "string",
            "enum": ["ptx", "cubin", "lto-ir", "concat", "other"]
        })
    }
}

impl EntryKind {
    fn from_raw(kind: u16) -> EntryKind {
        match kind {
            1 => EntryKind::Ptx,
            2 => EntryKind::Cubin,
            8 => EntryKind::LtoIr,
            0x100 => EntryKind::Concat,
            k => EntryKind::Other(k),
        }
    }

    /// A short name for tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Ptx => "ptx",
            EntryKind::Cubin => "cubin",
            EntryKind::LtoIr => "lto-ir",
            EntryKind::Concat => "concat",
            EntryKind::Other(_) => "other",
        }
    }
}

/// How an entry's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    None,
    Lz4,
    Zstd,
    /// A compression flag this parser does not know (the pre-CUDA-11 scheme, or a future one).
    Unknown,
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
            Codec::Unknown => "unknown",
        })
    }
}

/// Errors met while walking or decompressing a fatbin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FatbinError {
    /// More entries than the reader's memory budget holds (a real library has thousands; a
    /// hostile section of 64-byte headers, millions).
    #[error("more than {limit} entries, more than the memory budget holds (--max-memory)")]
    TooManyEntries { limit: usize },
    #[error("no fatbin container at offset {offset:#x}: magic {found:#010x}, expected {CONTAINER_MAGIC:#010x}")]
    BadMagic { offset: usize, found: u32 },
    #[error("fatbin truncated at offset {offset:#x}: {what} needs {need} bytes, {have} left")]
    Truncated {
        offset: usize,
        what: &'static str,
        need: u64,
        have: u64,
    },
    #[error("fatbin entry at offset {offset:#x}: {problem}")]
    BadEntry { offset: usize, problem: String },
    #[error("fatbin entry at offset {offset:#x} uses an unknown compression (flags {flags:#x})")]
    UnknownCodec { offset: usize, flags: u64 },
    #[error("fatbin entry at offset {offset:#x}: {codec} payload does not decompress: {reason}")]
    Decompress {
        offset: usize,
        codec: Codec,
        reason: String,
    },
}

/// One entry of a fatbin, with every header field cudist reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Entry {
    pub section: SectionKind,
    /// Index of the container within its section (0-based).
    pub container: usize,
    /// Offset of the entry header from the start of the section.
    pub offset: usize,
    pub kind: EntryKind,
    /// Raw kind value from the header.
    pub raw_kind: u16,
    /// Size of the entry header (0x40 or more).
    pub header_size: u32,
    /// SM number: 90 for sm_90 / compute_90.
    pub sm: u32,
    /// `Some('a')` for arch-specific code (sm_90a), `Some('f')` for family code (sm_100f).
    pub suffix: Option<char>,
    /// Version fields of the header: the PTX ISA version for PTX entries.
    pub version_major: u16,
    pub version_minor: u16,
    pub flags: u64,
    pub codec: Codec,
    /// Bytes the payload occupies in the file (padded to 8).
    pub payload_size: u64,
    /// Compressed size (the codec's input), when compressed.
    pub compressed_size: u64,
    /// Size after decompression; equals the payload size when not compressed.
    pub uncompressed_size: u64,
    /// The identifier string nvcc stores (often the source file name), when present.
    pub identifier: Option<String>,
    /// The compiler options recorded with the entry (PTX, LTO-IR), when present.
    pub options: Option<String>,
    /// For [`EntryKind::Concat`]: the cubins inside the payload, in table order.
    pub images: Vec<Image>,
}

/// One cubin inside a concatenated entry (kind 0x100).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Image {
    pub sm: u32,
    pub flags: u64,
    /// The image's own header version (1.8 for ABI-v8 cubins).
    pub version_major: u16,
    pub version_minor: u16,
    /// Offset of the image inside the decompressed payload.
    pub offset: u64,
    pub size: u64,
}

impl Image {
    /// The architecture name as cuobjdump prints it.
    pub fn arch_name(&self) -> String {
        arch_name(EntryKind::Cubin, self.sm, self.flags)
    }
}

impl Entry {
    /// The architecture name as cuobjdump prints it (`sm_90`, `sm_90a`, PTX `sm_120f`).
    pub fn arch_name(&self) -> String {
        arch_name(self.kind, self.sm, self.flags)
    }

    /// What cuobjdump lists for this entry, in order: `(listed as ELF?, arch name)` pairs. Empty for
    /// entries it skips (LTO-IR, unknown kinds); one pair per image for concatenated entries.
    pub fn listed(&self) -> Vec<(bool, String)> {
        match self.kind {
            EntryKind::Ptx => vec![(false, self.arch_name())],
            EntryKind::Cubin | EntryKind::Other(0x10) => vec![(true, self.arch_name())],
            EntryKind::Concat => self.images.iter().map(|i| (true, i.arch_name())).collect(),
            _ => Vec::new(),
        }
    }

    /// Bytes of the section the entry occupies (header + payload).
    pub fn stored_size(&self) -> u64 {
        self.header_size as u64 + self.payload_size
    }

    /// The payload bytes as stored (compressed bytes when compressed, without padding).
    pub fn stored_payload<'a>(&self, section: &'a [u8]) -> &'a [u8] {
        let start = self.offset + self.header_size as usize;
        let len = if self.codec == Codec::None {
            self.payload_size
        } else {
            self.compressed_size
        } as usize;
        &section[start..start + len]
    }

    /// The payload, decompressed when compressed. `section` is the section bytes the entry was
    /// parsed from.
    pub fn decompress(&self, section: &[u8]) -> Result<Vec<u8>, FatbinError> {
        let src = self.stored_payload(section);
        let err = |reason: String| FatbinError::Decompress {
            offset: self.offset,
            codec: self.codec,
            reason,
        };
        match self.codec {
            Codec::None => Ok(src.to_vec()),
            Codec::Unknown => Err(FatbinError::UnknownCodec {
                offset: self.offset,
                flags: self.flags,
            }),
            Codec::Lz4 => {
                let mut out = vec![0u8; self.uncompressed_size as usize];
                // The stated size may include trailing zero padding the block does not encode,
                // so a block that fills less than the buffer is fine: the rest stays zero.
                lz4_flex::block::decompress_into(src, &mut out).map_err(|e| err(e.to_string()))?;
                Ok(out)
            }
            Codec::Zstd => {
                let out = zstd::bulk::decompress(src, self.uncompressed_size as usize)
                    .map_err(|e| err(e.to_string()))?;
                if out.len() as u64 > self.uncompressed_size {
                    return Err(err(format!(
                        "inflates to {} bytes, header says {}",
                        out.len(),
                        self.uncompressed_size
                    )));
                }
                Ok(out)
            }
        }
    }
}

pub(crate) fn u16_at(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([d[o], d[o + 1]])
}
pub(crate) fn u32_at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(d[o..o + 4].try_into().unwrap())
}
pub(crate) fn u64_at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().unwrap())
}

/// Walks every container of a fatbin section and returns its entries in file order.
///
/// Zero padding between containers is skipped. Any size that points outside its container, a
/// container that does not start with the magic, or a truncated header is an error: a fatbin whose
/// sizes lie is reported, never guessed around.
pub fn parse_section(data: &[u8], section: SectionKind) -> Result<Vec<Entry>, FatbinError> {
    walk(data, section).map(|(_, entries)| entries)
}

/// One container of a section: where it starts, its header size and the size of its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Container {
    /// Offset of the container header from the start of the section: the address the runtime's
    /// `__fatBinC_Wrapper_t` points at, relative to the section.
    pub offset: usize,
    pub header_size: usize,
    /// The `fat_size` field: bytes of entries after the header.
    pub fat_size: u64,
}

/// The containers and entries of a section, in file order ([`parse_section`]).
pub fn parse_containers(
    data: &[u8],
    section: SectionKind,
) -> Result<(Vec<Container>, Vec<Entry>), FatbinError> {
    walk(data, section)
}

/// Every entry of a section, handed to `f` one at a time in file order, without collecting them:
/// memory stays at one entry whatever their number (a hostile section can hold millions). Stops
/// at the first malformed container or entry, with the error [`parse_section`] gives; the
/// entries before it have been handed over.
pub fn for_each_entry(
    data: &[u8],
    section: SectionKind,
    f: &mut dyn FnMut(Entry) -> Result<(), FatbinError>,
) -> Result<(), FatbinError> {
    walk_with(data, section, f).map(drop)
}

fn walk(data: &[u8], section: SectionKind) -> Result<(Vec<Container>, Vec<Entry>), FatbinError> {
    let mut entries = Vec::new();
    let containers = walk_with(data, section, &mut |e| {
        entries.push(e);
        Ok(())
    })?;
    Ok((containers, entries))
}

fn walk_with(
    data: &[u8],
    section: SectionKind,
    on_entry: &mut dyn FnMut(Entry) -> Result<(), FatbinError>,
) -> Result<Vec<Container>, FatbinError> {
    let mut containers = Vec::new();
    let mut off = 0usize;
    let mut container = 0usize;
    loop {
        // Skip zero padding up to the next container (containers start 8-aligned).
        while off < data.len() && data[off] == 0 {
            off += 1;
        }
        if off >= data.len() {
            break;
        }
        off &= !7;
        let have = (data.len() - off) as u64;
        if have < CONTAINER_HEADER as u64 {
            return Err(FatbinError::Truncated {
                offset: off,
                what: "container header",
                need: CONTAINER_HEADER as u64,
                have,
            });
        }
        let magic = u32_at(data, off);
        if magic != CONTAINER_MAGIC {
            return Err(FatbinError::BadMagic {
                offset: off,
                found: magic,
            });
        }
        let header_size = u16_at(data, off + 6) as u64;
        let fat_size = u64_at(data, off + 8);
        if header_size < CONTAINER_HEADER as u64 {
            return Err(FatbinError::BadEntry {
                offset: off,
                problem: format!("container header size {header_size} is below 16"),
            });
        }
        let need = header_size.saturating_add(fat_size);
        if need > have {
            return Err(FatbinError::Truncated {
                offset: off,
                what: "container",
                need,
                have,
            });
        }
        let start = off + header_size as usize;
        let end = off + need as usize;
        parse_entries(&data[..end], start, section, container, on_entry)?;
        containers.push(Container {
            offset: off,
            header_size: header_size as usize,
            fat_size,
        });
        off = end;
        container += 1;
    }
    Ok(containers)
}

/// Rewrites a section in place to hold only the entries `keep` accepts, every container where it
/// was and the section the same length. The runtime finds each container through the address in
/// its `__fatBinC_Wrapper_t` (`.nvFatBinSegment`, relocated), never by walking the section, so a
/// container must not move; within one, entries are read one after the other up to `fat_size`.
/// The kept entries are therefore packed, byte for byte, at the start of their container, its
/// `fat_size` shrinks to them, and the bytes they no longer cover are zero (which the section walk
/// skips, and which compress to nearly nothing in a wheel). The section is parsed whole before
/// any byte changes: a malformed one is an error and left as it was. Returns the bytes of entries
/// removed.
///
/// Hand-written: the layout is the one [`parse_section`] reads; nothing else knows it.
pub fn rewrite_section(
    data: &mut [u8],
    section: SectionKind,
    keep: &dyn Fn(&Entry) -> bool,
) -> Result<u64, FatbinError> {
    let (containers, entries) = walk(data, section)?;
    let mut removed = 0u64;
    for (ci, c) in containers.iter().enumerate() {
        let start = c.offset + c.header_size;
        let end = start + c.fat_size as usize;
        let mut at = start;
        for e in entries.iter().filter(|e| e.container == ci) {
            let size = e.stored_size() as usize;
            if keep(e) {
                // Kept entries only move toward the container's start, in order: a source is
                // never overwritten before it is copied.
                data.copy_within(e.offset..e.offset + size, at);
                at += size;
            } else {
                removed += size as u64;
            }
        }
        // The zero fill the walk skips after the last entry goes too: `fat_size` covers the kept
        // entries exactly.
        data[at..end].fill(0);
        let fat = (at - start) as u64;
        data[c.offset + 8..c.offset + 16].copy_from_slice(&fat.to_le_bytes());
    }
    Ok(removed)
}

fn parse_entries(
    data: &[u8],
    mut off: usize,
    section: SectionKind,
    container: usize,
    out: &mut dyn FnMut(Entry) -> Result<(), FatbinError>,
) -> Result<(), FatbinError> {
    let end = data.len();
    while off < end {
        let have = (end - off) as u64;
        if have < ENTRY_HEADER_MIN as u64 {
            // Trailing padding inside a container is allowed only if it is all zero.
            if data[off..end].iter().all(|&b| b == 0) {
                return Ok(());
            }
            return Err(FatbinError::Truncated {
                offset: off,
                what: "entry header",
                need: ENTRY_HEADER_MIN as u64,
                have,
            });
        }
        let raw_kind = u16_at(data, off);
        let header_size = u32_at(data, off + 4);
        let payload_size = u64_at(data, off + 8);
        if raw_kind == 0 && header_size == 0 && payload_size == 0 {
            // Zero fill at the end of a container.
            if data[off..end].iter().all(|&b| b == 0) {
                return Ok(());
            }
        }
        let bad = |problem: String| FatbinError::BadEntry {
            offset: off,
            problem,
        };
        if (header_size as usize) < ENTRY_HEADER_MIN {
            return Err(bad(format!("header size {header_size:#x} is below 0x40")));
        }
        let total = (header_size as u64).saturating_add(payload_size);
        if total > have {
            return Err(FatbinError::Truncated {
                offset: off,
                what: "entry",
                need: total,
                have,
            });
        }
        out(entry_from_header(
            &data[off..off + header_size as usize],
            off,
            section,
            container,
        )?)?;
        off += total as usize;
    }
    Ok(())
}

/// One entry from its header bytes (`header_size` of them; the payload is not needed), at `off`.
pub(crate) fn entry_from_header(
    header: &[u8],
    off: usize,
    section: SectionKind,
    container: usize,
) -> Result<Entry, FatbinError> {
    let bad = |problem: String| FatbinError::BadEntry {
        offset: off,
        problem,
    };
    let raw_kind = u16_at(header, 0);
    let header_size = u32_at(header, 4);
    let payload_size = u64_at(header, 8);
    let compressed_size = u32_at(header, 0x10) as u64;
    let options_off = u32_at(header, 0x14) as usize;
    let version_minor = u16_at(header, 0x18);
    let version_major = u16_at(header, 0x1A);
    let sm = u32_at(header, 0x1C);
    let ident_off = u32_at(header, 0x20) as usize;
    let ident_len = u32_at(header, 0x24) as usize;
    let flags = u64_at(header, 0x28);
    let uncompressed = u64_at(header, 0x38);
    let codec = if flags & flags::ANY_COMPRESSION == 0 {
        Codec::None
    } else if flags & flags::COMPRESSED_ZSTD != 0 {
        Codec::Zstd
    } else if flags & flags::COMPRESSED_LZ4 != 0 {
        Codec::Lz4
    } else {
        Codec::Unknown
    };
    if codec == Codec::Unknown {
        // Nothing can list such an entry (cuobjdump must inflate cubins to name them).
        return Err(FatbinError::UnknownCodec { offset: off, flags });
    }
    if codec != Codec::None {
        if compressed_size > payload_size {
            return Err(bad(format!(
                "compressed size {compressed_size} exceeds the payload size {payload_size}"
            )));
        }
        if uncompressed > MAX_UNCOMPRESSED {
            return Err(bad(format!(
                "uncompressed size {uncompressed} is beyond any real device image"
            )));
        }
    }
    let kind = EntryKind::from_raw(raw_kind);
    let suffix = arch_suffix(kind, flags);
    let images = if kind == EntryKind::Concat {
        concat_table(header, options_off, uncompressed.max(payload_size))
            .map_err(|p| bad(format!("concatenated entry: {p}")))?
    } else {
        Vec::new()
    };
    let options = if kind == EntryKind::Concat || flags & flags::COMPAT_RECORD != 0 {
        None // binary records, not option strings
    } else {
        options_record(header, options_off).filter(|s| s.chars().all(|c| !c.is_control()))
    };
    Ok(Entry {
        section,
        container,
        offset: off,
        kind,
        raw_kind,
        header_size,
        sm,
        suffix,
        version_major,
        version_minor,
        flags,
        codec,
        payload_size,
        compressed_size: if codec == Codec::None {
            0
        } else {
            compressed_size
        },
        uncompressed_size: if codec == Codec::None {
            payload_size
        } else {
            uncompressed
        },
        identifier: header_string(header, ident_off, Some(ident_len)),
        options,
        images,
    })
}

/// The `a`/`f` suffix of an entry, by the rules cuobjdump follows (`docs/fatbin.md`): PTX carries
/// `a` (flag 0x100000) or `f` (0x200000); a cubin only ever `a`, because plain sm_100 cubins built by
/// CUDA 12.9 carry the family flag too and cuobjdump prints them (and sm_100f ones) as `sm_100`.
fn arch_suffix(kind: EntryKind, flags: u64) -> Option<char> {
    if flags & flags::ARCH_SPECIFIC != 0 {
        Some('a')
    } else if kind == EntryKind::Ptx && flags & flags::FAMILY_SPECIFIC != 0 {
        Some('f')
    } else {
        None
    }
}

fn arch_name(kind: EntryKind, sm: u32, flags: u64) -> String {
    match arch_suffix(kind, flags) {
        Some(c) => format!("sm_{sm}{c}"),
        None => format!("sm_{sm}"),
    }
}

/// The image table of a concatenated entry: `{u32 count, u32 length}` at `at`, then `count`
/// 0x40-byte sub-headers laid out like entry headers, whose header-size slot holds the image's
/// offset inside the decompressed payload.
fn concat_table(header: &[u8], at: usize, payload: u64) -> Result<Vec<Image>, String> {
    if at == 0 || at + 8 > header.len() {
        return Err(format!(
            "image table at {at:#x} lies outside the {:#x}-byte header",
            header.len()
        ));
    }
    let count = u32_at(header, at) as usize;
    let table = at + 8;
    if count
        .checked_mul(0x40)
        .is_none_or(|n| table + n > header.len())
    {
        return Err(format!(
            "{count} images do not fit in the {:#x}-byte header",
            header.len()
        ));
    }
    let mut images = Vec::with_capacity(count);
    for i in 0..count {
        let h = table + i * 0x40;
        let img = Image {
            offset: u32_at(header, h + 4) as u64,
            size: u64_at(header, h + 8),
            sm: u32_at(header, h + 0x1C),
            flags: u64_at(header, h + 0x28),
            version_minor: u16_at(header, h + 0x18),
            version_major: u16_at(header, h + 0x1A),
        };
        if img.offset.saturating_add(img.size) > payload {
            return Err(format!("image {} runs past the payload", i + 1));
        }
        images.push(img);
    }
    Ok(images)
}

/// A NUL-terminated (or length-bounded) string inside the entry header, if it lies within it.
fn header_string(header: &[u8], off: usize, len: Option<usize>) -> Option<String> {
    if off == 0 || off >= header.len() {
        return None;
    }
    let rest = &header[off..];
    let rest = match len {
        Some(l) if l > 0 && l <= rest.len() => &rest[..l],
        _ => rest,
    };
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let s = String::from_utf8_lossy(&rest[..end]).into_owned();
    (!s.is_empty()).then_some(s)
}

/// The ptxas-options record `{u32 offset, u32 length}` at `rec` (relative to the entry).
fn options_record(header: &[u8], rec: usize) -> Option<String> {
    if rec == 0 || rec + 8 > header.len() {
        return None;
    }
    let o = u32_at(header, rec) as usize;
    let l = u32_at(header, rec + 4) as usize;
    let s = rec.checked_add(o)?;
    header_string(header, s, Some(l))
}

/// The sections cuobjdump reads by default: `.nv_fatbin` when the file has one, else
/// `__nv_relfatbin` (its `--all-fatbin` option reads both).
pub fn cuobjdump_default_section(present: &[SectionKind]) -> Option<SectionKind> {
    if present.contains(&SectionKind::NvFatbin) {
        Some(SectionKind::NvFatbin)
    } else if present.contains(&SectionKind::RelFatbin) {
        Some(SectionKind::RelFatbin)
    } else {
        None
    }
}

/// The file-name stem cuobjdump puts in its listing, from the path exactly as given on its command
/// line: split at spaces (dropping empty pieces); of each piece keep what follows the last `/` and
/// cut that at its last `.`; join the pieces with `-`. (`libx.so.12` → `libx.so`,
/// `m.cpython-311-x86_64-linux-gnu.so` → `m.cpython-311-x86_64-linux-gnu`.)
pub fn cuobjdump_stem(path: &str) -> String {
    path.split(' ')
        .filter(|p| !p.is_empty())
        .map(|piece| {
            let base = piece.rsplit('/').next().unwrap_or(piece);
            match base.rfind('.') {
                Some(i) => &base[..i],
                None => base,
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Formats a listing exactly as `cuobjdump --list-elf --list-ptx PATH` prints it: one line per
/// listed item in file order, `ELF file    N: <stem>.N.<arch>.cubin` and
/// `PTX file    N: <stem>.N.<arch>.ptx`, the two counters separate and counted from 1.
/// `listed` holds `(is_elf, arch)` pairs as [`Entry::listed`] gives them.
pub fn cuobjdump_listing<'a>(
    path: &str,
    listed: impl IntoIterator<Item = (bool, &'a str)>,
) -> String {
    let stem = cuobjdump_stem(path);
    let mut out = String::new();
    let (mut ne, mut np) = (0, 0);
    for (is_elf, arch) in listed {
        if is_elf {
            ne += 1;
            out.push_str(&format!("ELF file {ne:>4}: {stem}.{ne}.{arch}.cubin\n"));
        } else {
            np += 1;
            out.push_str(&format!("PTX file {np:>4}: {stem}.{np}.{arch}.ptx\n"));
        }
    }
    out
}

/// Entry point for fuzzing and robustness tests: parse, then decompress every entry. Never panics.
pub fn fuzz_one(data: &[u8]) {
    // The stream scan, fed in uneven pieces, never panics, and finds the same entries whatever
    // the pieces.
    let scan = |piece: usize| {
        let mut s = stream::StreamScan::new(SectionKind::NvFatbin, data.len() as u64);
        for chunk in data.chunks(piece) {
            s.feed(chunk);
        }
        s.finish();
        s.entries()
            .iter()
            .map(|e| (e.offset, e.sm, e.section))
            .collect::<Vec<_>>()
    };
    assert_eq!(scan(1), scan(4096));
    for section in [SectionKind::NvFatbin, SectionKind::RelFatbin] {
        if let Ok(entries) = parse_section(data, section) {
            for e in &entries {
                if e.uncompressed_size <= 1 << 24 {
                    let _ = e.decompress(data);
                }
                let _ = e.arch_name();
            }
            let listed: Vec<(bool, String)> = entries.iter().flat_map(Entry::listed).collect();
            let _ = cuobjdump_listing("fuzz.so", listed.iter().map(|(e, a)| (*e, a.as_str())));
            // Rewriting with every other entry kept gives a section of the same length that
            // parses again into exactly the kept entries, byte for byte, each container in its
            // place.
            let mut copy = data.to_vec();
            let keep = |e: &Entry| e.offset % 16 < 8;
            let removed =
                rewrite_section(&mut copy, section, &keep).expect("a section that parses rewrites");
            assert_eq!(copy.len(), data.len());
            let again = parse_section(&copy, section).expect("a rewritten section parses");
            let kept: Vec<&Entry> = entries.iter().filter(|e| keep(e)).collect();
            assert_eq!(again.len(), kept.len());
            let mut removed_bytes = 0;
            for e in entries.iter().filter(|e| !keep(e)) {
                removed_bytes += e.stored_size();
            }
            assert_eq!(removed, removed_bytes);
            for (a, b) in again.iter().zip(&kept) {
                assert_eq!(a.container, b.container);
                let (sa, sb) = (a.stored_size() as usize, b.stored_size() as usize);
                assert_eq!(
                    &copy[a.offset..a.offset + sa],
                    &data[b.offset..b.offset + sb]
                );
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds one entry: header (0x40) + payload padded to 8.
    pub(crate) fn entry(
        kind: u16,
        sm: u32,
        flags: u64,
        payload: &[u8],
        compressed: Option<(u32, u64)>,
    ) -> Vec<u8> {
        let padded = payload.len().div_ceil(8) * 8;
        let mut h = vec![0u8; 0x40];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        if let Some((c, u)) = compressed {
            h[0x10..0x14].copy_from_slice(&c.to_le_bytes());
            h[0x38..0x40].copy_from_slice(&u.to_le_bytes());
        }
        h[0x18..0x1A].copy_from_slice(&5u16.to_le_bytes());
        h[0x1A..0x1C].copy_from_slice(&9u16.to_le_bytes());
        h[0x1C..0x20].copy_from_slice(&sm.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&(flags | 0x11).to_le_bytes());
        h.extend_from_slice(payload);
        h.resize(0x40 + padded, 0);
        h
    }

    /// Builds one container of entries.
    pub(crate) fn container(entries: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut c = Vec::new();
        c.extend_from_slice(&CONTAINER_MAGIC.to_le_bytes());
        c.extend_from_slice(&1u16.to_le_bytes());
        c.extend_from_slice(&16u16.to_le_bytes());
        c.extend_from_slice(&(body.len() as u64).to_le_bytes());
        c.extend_from_slice(&body);
        c
    }

    #[test]
    fn walks_containers_and_padding() {
        let a = container(&[
            entry(2, 80, 0, b"\x7fELFcubin", None),
            entry(1, 90, 0, b"ptx", None),
        ]);
        let b = container(&[entry(2, 90, flags::ARCH_SPECIFIC, b"\x7fELF", None)]);
        let mut sec = a.clone();
        sec.extend_from_slice(&[0u8; 16]);
        sec.extend_from_slice(&b);
        let es = parse_section(&sec, SectionKind::NvFatbin).unwrap();
        assert_eq!(es.len(), 3);
        assert_eq!(es[0].kind, EntryKind::Cubin);
        assert_eq!(es[1].kind, EntryKind::Ptx);
        assert_eq!((es[1].version_major, es[1].version_minor), (9, 5));
        assert_eq!(es[2].container, 1);
        assert_eq!(es[2].arch_name(), "sm_90a");
        assert_eq!(es[0].decompress(&sec).unwrap()[..9], b"\x7fELFcubin"[..]);
        let listed: Vec<(bool, String)> = es.iter().flat_map(Entry::listed).collect();
        let listing =
            cuobjdump_listing("dir/libk.so", listed.iter().map(|(e, a)| (*e, a.as_str())));
        assert_eq!(
            listing,
            "ELF file    1: libk.1.sm_80.cubin\nPTX file    1: libk.1.sm_90.ptx\nELF file    2: libk.2.sm_90a.cubin\n"
        );
    }

    #[test]
    fn stems_follow_cuobjdump() {
        for (path, stem) in [
            (
                "foo.cpython-311-x86_64-linux-gnu.so",
                "foo.cpython-311-x86_64-linux-gnu",
            ),
            ("libx.so.12", "libx.so"),
            ("noext", "noext"),
            (".hidden", ""),
            ("a..so", "a."),
            ("d.ir/plain", "plain"),
            ("sp ace.so", "sp-ace"),
            ("two  sp.so", "two-sp"),
            ("trail .so", "trail-"),
            ("dir sp/in.so", "dir-in"),
            ("/abs/p.q r/z.so", "p-z"),
        ] {
            assert_eq!(cuobjdump_stem(path), stem, "{path}");
        }
    }

    #[test]
    fn suffix_rules() {
        assert_eq!(
            arch_name(EntryKind::Cubin, 100, flags::FAMILY_SPECIFIC),
            "sm_100"
        );
        assert_eq!(
            arch_name(EntryKind::Ptx, 120, flags::FAMILY_SPECIFIC),
            "sm_120f"
        );
        assert_eq!(
            arch_name(EntryKind::Cubin, 90, flags::ARCH_SPECIFIC),
            "sm_90a"
        );
        assert_eq!(
            arch_name(
                EntryKind::Ptx,
                100,
                flags::ARCH_SPECIFIC | flags::FAMILY_SPECIFIC
            ),
            "sm_100a"
        );
    }

    #[test]
    fn lz4_and_zstd_round_trip() {
        let text =
            b"//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n".repeat(20);
        let lz = lz4_flex::block::compress(&text);
        let zs = zstd::bulk::compress(&text, 3).unwrap();
        let sec = container(&[
            entry(
                1,
                90,
                flags::COMPRESSED_LZ4,
                &lz,
                Some((lz.len() as u32, text.len() as u64)),
            ),
            entry(
                1,
                90,
                flags::COMPRESSED_ZSTD,
                &zs,
                Some((zs.len() as u32, text.len() as u64)),
            ),
        ]);
        let es = parse_section(&sec, SectionKind::NvFatbin).unwrap();
        assert_eq!(es[0].codec, Codec::Lz4);
        assert_eq!(es[1].codec, Codec::Zstd);
        for e in &es {
            assert_eq!(e.decompress(&sec).unwrap(), text);
        }
    }

    #[test]
    fn lying_sizes_are_errors_not_panics() {
        let mut sec = container(&[entry(2, 80, 0, b"\x7fELF", None)]);
        // Container claims more than the section holds.
        sec[8] = 0xff;
        assert!(matches!(
            parse_section(&sec, SectionKind::NvFatbin),
            Err(FatbinError::Truncated {
                what: "container",
                ..
            })
        ));
        // Entry payload larger than its container.
        let mut sec = container(&[entry(2, 80, 0, b"\x7fELF", None)]);
        sec[16 + 8] = 0xff;
        assert!(matches!(
            parse_section(&sec, SectionKind::NvFatbin),
            Err(FatbinError::Truncated { what: "entry", .. })
        ));
        // Compressed size beyond the payload.
        let sec = container(&[entry(1, 80, flags::COMPRESSED_LZ4, b"abcd", Some((999, 4)))]);
        assert!(matches!(
            parse_section(&sec, SectionKind::NvFatbin),
            Err(FatbinError::BadEntry { .. })
        ));
        // Bad magic.
        assert!(matches!(
            parse_section(
                &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
                SectionKind::NvFatbin
            ),
            Err(FatbinError::BadMagic { .. })
        ));
        // Unknown codec.
        let sec = container(&[entry(1, 80, flags::COMPRESSED_OLD, b"abcd", Some((4, 4)))]);
        assert!(matches!(
            parse_section(&sec, SectionKind::NvFatbin),
            Err(FatbinError::UnknownCodec { flags: 0x1011, .. })
        ));
        // Garbage LZ4.
        let sec = container(&[entry(
            1,
            80,
            flags::COMPRESSED_LZ4,
            &[0xff; 16],
            Some((16, 64)),
        )]);
        let es = parse_section(&sec, SectionKind::NvFatbin).unwrap();
        assert!(matches!(
            es[0].decompress(&sec),
            Err(FatbinError::Decompress { .. })
        ));
    }

    #[test]
    fn fuzz_entry_survives_random_bytes() {
        // A tiny deterministic generator (xorshift) mutating a valid section.
        let base = container(&[
            entry(2, 80, 0, b"\x7fELFcubin", None),
            entry(
                1,
                90,
                flags::COMPRESSED_LZ4,
                &lz4_flex::block::compress(b"hello hello"),
                Some((13, 11)),
            ),
        ]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut d = base.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % d.len();
                d[i] = (x >> 32) as u8;
            }
            x ^= x << 13;
            let cut = (x as usize) % (d.len() + 1);
            fuzz_one(&d[..cut]);
            fuzz_one(&d);
        }
    }
}
