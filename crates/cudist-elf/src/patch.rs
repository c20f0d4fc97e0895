//! Patching the dynamic section: RPATH/RUNPATH, NEEDED, SONAME.
//!
//! Three paths:
//! - **In place** (hand-written; no crate edits bytes in place): when each new string fits over the
//!   old one and no other reference shares the old string's bytes (linkers merge string tails), the
//!   string is overwritten and NUL-padded, and a RPATH/RUNPATH tag is switched where asked. The
//!   file keeps its size and layout.
//! - **Appending** (shared libraries, [`append`]): otherwise the grown tables go to a new segment
//!   at the end of the file, as patchelf does, and nothing else moves.
//! - **Layout change** (executables): otherwise the file is rebuilt with `object-rewrite` (the `object`
//!   maintainers' rewriter, built on `object`'s ELF builder), which moves the grown dynamic string
//!   table and its neighbours into a new `PT_LOAD` segment. That rewriter leaves two
//!   inconsistencies that `eu-elflint` reports and that no loader reads, and cudist mends both:
//!   `PT_DYNAMIC` keeps the old size of `.dynamic` (the rewriter drops the spare `DT_NULL` slots),
//!   and `.symtab` section symbols keep the old addresses of the sections that moved.
//!
//! A NEEDED replacement also renames the library in the symbol-version requirements
//! (`.gnu.version_r`'s `vn_file`), as ld.so insists that each names a NEEDED entry; object-rewrite
//! does not, so cudist points each such `vn_file` at the new NEEDED string after either path.
//!
//! Every result is parsed again and checked to hold exactly the requested values before it is
//! returned: a patch that did not take is an error, never a silently wrong file.

use std::collections::HashMap;

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader, Sym};
use object::Endianness;

use crate::{ElfError, ElfFile};

mod append;

/// Which dynamic tag carries the search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchPathTag {
    /// `DT_RPATH`: searched before `LD_LIBRARY_PATH`, inherited by the libraries this file loads
    /// (what auditwheel and torch use).
    Rpath,
    /// `DT_RUNPATH`: searched after `LD_LIBRARY_PATH`, for this file's own NEEDED entries only.
    Runpath,
}

/// The edits to make. Unset fields leave the file as it is.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    /// Replace the search path (both DT_RPATH and DT_RUNPATH) with these entries under this tag.
    pub search_path: Option<(Vec<String>, SearchPathTag)>,
    /// Replace NEEDED entries: old SONAME → new SONAME.
    pub replace_needed: Vec<(String, String)>,
    /// Set DT_SONAME.
    pub soname: Option<String>,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.search_path.is_none() && self.replace_needed.is_empty() && self.soname.is_none()
    }
}

/// The patched file.
#[derive(Debug)]
pub struct Patched {
    pub data: Vec<u8>,
    /// Whether the in-place path sufficed (same size and layout as the input).
    pub in_place: bool,
}

/// Errors raised while patching.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("cannot read the file as ELF")]
    Read(#[from] ElfError),
    #[error("the file has no dynamic section to patch")]
    NoDynamic,
    #[error("no NEEDED entry {0:?} to replace")]
    NeededNotFound(String),
    #[error("rewriting the file failed: {0}")]
    Rewrite(String),
    #[error("the patched file does not hold what was asked: {0}")]
    Verify(String),
    /// Room for the new file could not be made (a temporary file for a large one): the
    /// machine's fault, not the input's.
    #[error("cannot make room for the new file")]
    Output(#[source] std::io::Error),
    /// The file's own tables contradict it (a segment or section beyond its end, an alignment
    /// no loader uses): the input is damaged or hostile, and nothing is rewritten from it.
    #[error("{0}")]
    Layout(String),
    #[error(
        "the patched file would be {got} bytes, more than the {bound} the input ({input} bytes) \
         and this edit can need; refused rather than written"
    )]
    TooLarge { got: u64, bound: u64, input: u64 },
}

/// The largest `PT_LOAD` alignment the layout-change path accepts: 2 MiB, the largest page size
/// linkers have used by default (x86-64 binutils before 2.31). A new segment is padded to this
/// alignment, so a hostile value would make the output as large as it says.
const MAX_LOAD_ALIGN: u64 = 2 << 20;

/// Room for what the layout change adds besides the strings: a new `PT_LOAD` (padded to the
/// alignment on both sides), the moved dynamic table with spare entries, headers.
const LAYOUT_SLACK: u64 = 64 << 10;

/// Applies `edits` to an ELF image.
pub fn apply(data: &[u8], edits: &Edits) -> Result<Patched, PatchError> {
    let before = ElfFile::parse(data)?;
    if !before.has_dynamic {
        return Err(PatchError::NoDynamic);
    }
    let room = match data.get(4) {
        Some(&elf::ELFCLASS64) => check_layout::<elf::FileHeader64<Endianness>>(data)?,
        _ => check_layout::<elf::FileHeader32<Endianness>>(data)?,
    };
    for (old, _) in &edits.replace_needed {
        if !before.needed.iter().any(|n| n == old) {
            return Err(PatchError::NeededNotFound(old.clone()));
        }
    }
    if edits.is_empty() {
        return Ok(Patched {
            data: data.to_vec(),
            in_place: true,
        });
    }
    let (mut out, in_place) = match in_place(data, edits)? {
        Some(out) => (out, true),
        None => {
            let appended = match data.get(4) {
                Some(&elf::ELFCLASS64) => {
                    append::append::<elf::FileHeader64<Endianness>>(data, edits)
                }
                _ => append::append::<elf::FileHeader32<Endianness>>(data, edits),
            };
            match appended {
                Some(mut out) => {
                    // A moved dynamic section: `_DYNAMIC` and its section symbol follow it.
                    match out.get(4) {
                        Some(&elf::ELFCLASS64) => mend::<elf::FileHeader64<Endianness>>(&mut out),
                        _ => mend::<elf::FileHeader32<Endianness>>(&mut out),
                    }
                    (out, false)
                }
                None => {
                    if let Some(why) = room.refused_by_rewriter {
                        return Err(PatchError::Layout(why));
                    }
                    (guarded_rewrite(data, edits)?, false)
                }
            }
        }
    };
    if !edits.replace_needed.is_empty() {
        match out.get(4) {
            Some(&elf::ELFCLASS64) => {
                rename_verneed_files::<elf::FileHeader64<Endianness>>(&mut out, edits)
            }
            _ => rename_verneed_files::<elf::FileHeader32<Endianness>>(&mut out, edits),
        }
    }
    // The output can exceed the input by the new strings, the tables the rewriter moves (at most
    // the segments holding the dynamic strings and the dynamic section) and the new segments'
    // padding; anything more means the rewriter was misled by the input.
    let strings: u64 = edits
        .search_path
        .iter()
        .map(|(p, _)| joined(p).len() as u64 + 1)
        .chain(edits.replace_needed.iter().map(|(_, n)| n.len() as u64 + 1))
        .chain(edits.soname.iter().map(|s| s.len() as u64 + 1))
        .sum();
    let bound = (data.len() as u64)
        .saturating_add(room.movable)
        .saturating_add(2 * strings)
        .saturating_add(4 * room.align)
        .saturating_add(LAYOUT_SLACK);
    if out.len() as u64 > bound {
        return Err(PatchError::TooLarge {
            got: out.len() as u64,
            bound,
            input: data.len() as u64,
        });
    }
    verify(&out, &before, edits)?;
    Ok(Patched {
        data: out,
        in_place,
    })
}

/// How much a layout change may add to a file: what it may move, and the padding of a new segment.
struct Room {
    /// The largest `PT_LOAD` alignment (what a new segment is padded to).
    align: u64,
    /// The file bytes of the `PT_LOAD` segments that hold the dynamic string table and the
    /// dynamic section, and of every table the rewriter may move: it moves sections of those
    /// segments, and the tables, into new ones.
    movable: u64,
    /// Why the rewriter must not lay this file out, where the appending writer does not apply.
    refused_by_rewriter: Option<String>,
}

/// Checks that every segment and section the headers describe lies inside the file, that no
/// `PT_LOAD` asks for an alignment beyond [`MAX_LOAD_ALIGN`], and that hash tables fit their
/// sections. Returns the room a layout change may take.
fn check_layout<E: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Room, PatchError> {
    let layout = |m: String| PatchError::Layout(m);
    let len = data.len() as u64;
    let h = E::parse(data).map_err(|e| layout(format!("unreadable ELF header: {e}")))?;
    let endian = h
        .endian()
        .map_err(|e| layout(format!("unreadable ELF header: {e}")))?;
    let phdrs = h
        .program_headers(endian, data)
        .map_err(|_| layout("the program header table lies outside the file".into()))?;
    let mut align = 1u64;
    // The highest address a process can have (x86-64 and AArch64 use 48 bits, 57 with 5-level
    // paging); a segment or section beyond it is no real file's.
    let top: u64 = if h.is_type_64() { 1 << 57 } else { 1 << 32 };
    let mut load_end = 0u64;
    let mut load_aligns: Vec<u64> = Vec::new();
    let mut refused_by_rewriter = None;
    for (i, ph) in phdrs.iter().enumerate() {
        let off: u64 = ph.p_offset(endian).into();
        let size: u64 = ph.p_filesz(endian).into();
        let kind = match ph.p_type(endian) {
            elf::PT_LOAD => "PT_LOAD".to_string(),
            elf::PT_DYNAMIC => "PT_DYNAMIC".to_string(),
            elf::PT_NOTE => "PT_NOTE".to_string(),
            elf::PT_INTERP => "PT_INTERP".to_string(),
            elf::PT_PHDR => "PT_PHDR".to_string(),
            elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME".to_string(),
            elf::PT_TLS => "PT_TLS".to_string(),
            t => format!("type {t:#x}"),
        };
        // A segment other than a loadable one with no file bytes reads nothing there, wherever
        // its offset points (LLD gives a PT_TLS holding only `.tbss` the offset of its aligned
        // address, past the end of cuda-quantum's libnvqir-dynamics.so).
        // The rewriter is never given such a file (object's builder sizes buffers by the
        // offset): only the appending writer, which copies the header as it is.
        if off.checked_add(size).is_none_or(|end| end > len) {
            let why = format!(
                "program header {i} ({kind}) lies outside the file: offset {off:#x} + size \
                 {size:#x} is past its {len} bytes"
            );
            if size == 0 && ph.p_type(endian) != elf::PT_LOAD {
                refused_by_rewriter.get_or_insert(why);
            } else {
                return Err(layout(why));
            }
        }
        // In memory a segment is at least its file bytes, and only PT_LOAD (.bss), PT_TLS (.tbss)
        // and PT_GNU_RELRO (lld rounds it to a page) are more; no segment of a real file spans a
        // terabyte.
        let mem: u64 = ph.p_memsz(endian).into();
        let vaddr: u64 = ph.p_vaddr(endian).into();
        if vaddr.checked_add(mem).is_none_or(|end| end > top) {
            return Err(layout(format!(
                "program header {i} ({kind}) maps {vaddr:#x} + {mem:#x}, past the address space"
            )));
        }
        let grows = matches!(
            ph.p_type(endian),
            elf::PT_LOAD | elf::PT_TLS | elf::PT_GNU_RELRO
        );
        if mem < size || (mem != size && !grows) || mem > 1 << 40 {
            return Err(layout(format!(
                "program header {i} ({kind}) says {mem:#x} bytes in memory for {size:#x} in the file"
            )));
        }
        if ph.p_type(endian) == elf::PT_LOAD {
            let a: u64 = ph.p_align(endian).into();
            if a > MAX_LOAD_ALIGN || (a > 1 && !a.is_power_of_two()) {
                return Err(layout(format!(
                    "program header {i} (PT_LOAD) asks for {a:#x}-byte alignment; loaders take \
                     powers of two up to {MAX_LOAD_ALIGN:#x}"
                )));
            }
            // Linkers give every loadable segment the same alignment (the maximum page size).
            // Older patchelf releases appended page-aligned segments to files aligned to 2 MiB
            // (mxnet's and paddle's OpenBLAS); the rewriter lays a new segment out from such a
            // mix at alignment 1, into the page of a writable one, and the file crashes when
            // loaded: the rewriter is not asked (the appending writer handles such files).
            if refused_by_rewriter.is_none() && load_aligns.iter().any(|b| *b != a) {
                refused_by_rewriter = Some(format!(
                    "program header {i} (PT_LOAD) is aligned to {a:#x}, another loadable segment \
                     to {:#x}",
                    load_aligns[0]
                ));
            }
            load_aligns.push(a);
            align = align.max(a);
            // Loadable segments come in ascending address order and do not overlap in memory
            // (the ELF specification; the kernel would map one over the other).
            if vaddr < load_end {
                return Err(layout(format!(
                    "program header {i} (PT_LOAD) starts at {vaddr:#x}, inside the segment \
                     before it (which ends at {load_end:#x})"
                )));
            }
            load_end = vaddr + mem;
        }
    }
    let sections = h
        .sections(endian, data)
        .map_err(|_| layout("the section header table lies outside the file".into()))?;
    // File offsets of the dynamic section and its string table.
    let mut dynamic: Vec<u64> = Vec::new();
    // (p_offset, p_filesz, p_vaddr, p_memsz, p_align) of every PT_LOAD.
    let loads: Vec<(u64, u64, u64, u64, u64)> = phdrs
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| {
            (
                ph.p_offset(endian).into(),
                ph.p_filesz(endian).into(),
                ph.p_vaddr(endian).into(),
                ph.p_memsz(endian).into(),
                ph.p_align(endian).into(),
            )
        })
        .collect();
    // The file bytes of the tables a layout change may move to a new segment (object's
    // rewriter moves every table it rebuilds, not only those that grow; their old bytes stay
    // in the file, unused: faiss' 64 MB libfaiss grows by 1.7 MB).
    let mut moved_bytes = 0u64;
    // Sections the process never maps (symbols, their strings, debug information) that lie
    // before the end of the loadable segments: a file laid out by patchelf (auditwheel's
    // grafts) has its appended segments after them. The rewriter writes every such section
    // again after the segment it adds and leaves the old bytes where they were, so the file
    // grows by their size (cumm-cu120 0.6.3's `core_cc`: 478 KB of `.symtab` and `.strtab`).
    let load_file_end = loads
        .iter()
        .map(|(off, size, ..)| off.saturating_add(*size))
        .max()
        .unwrap_or(0);
    let mut stranded = 0u64;
    let shoff: u64 = h.e_shoff(endian).into();
    if shoff < load_file_end {
        let table = u64::from(h.e_shnum(endian)) * u64::from(h.e_shentsize(endian));
        stranded = stranded.saturating_add(table);
    }
    for (i, sh) in sections.iter().enumerate() {
        // Every section, file bytes or not, occupies addresses below the top.
        let (addr, msize): (u64, u64) = (sh.sh_addr(endian).into(), sh.sh_size(endian).into());
        if addr.checked_add(msize).is_none_or(|end| end > top) {
            return Err(layout(format!(
                "section {i} is at {addr:#x} + {msize:#x}, past the address space"
            )));
        }
        if matches!(sh.sh_type(endian), elf::SHT_NOBITS | elf::SHT_NULL) {
            continue;
        }
        let off: u64 = sh.sh_offset(endian).into();
        let size: u64 = sh.sh_size(endian).into();
        let name = || {
            sections
                .section_name(endian, sh)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default()
        };
        if off.checked_add(size).is_none_or(|end| end > len) {
            return Err(layout(format!(
                "section {i} ({}) lies outside the file: offset {off:#x} + size {size:#x} is \
                 past its {len} bytes",
                name()
            )));
        }
        // A loaded section lies inside a loadable segment, at the same distance from the
        // segment's start in memory as in the file (what a linker writes; the rewriter moves
        // sections on that assumption).
        let flags: u64 = sh.sh_flags(endian).into();
        if flags & u64::from(elf::SHF_ALLOC) == 0 && off < load_file_end {
            stranded = stranded.saturating_add(size);
        }
        if flags & u64::from(elf::SHF_ALLOC) != 0 && size > 0 && !loads.is_empty() {
            let home = loads.iter().find(|(p_off, _, vaddr, mem, _)| {
                addr >= *vaddr
                    && addr + size <= vaddr + mem
                    && off.checked_sub(*p_off) == Some(addr - vaddr)
            });
            let Some(&(.., seg_align)) = home else {
                return Err(layout(format!(
                    "section {i} ({}) at {addr:#x} (file offset {off:#x}) lies in no loadable \
                     segment",
                    name()
                )));
            };
            // The tables a layout change moves (symbols, strings, hashes, versions, relocations,
            // the dynamic section) are word-aligned in every linker's output; one aligned past
            // its segment would be padded differently in the file and in memory once moved.
            let a: u64 = sh.sh_addralign(endian).into();
            let moved = matches!(
                sh.sh_type(endian),
                elf::SHT_DYNSYM
                    | elf::SHT_STRTAB
                    | elf::SHT_HASH
                    | elf::SHT_GNU_HASH
                    | elf::SHT_GNU_VERSYM
                    | elf::SHT_GNU_VERDEF
                    | elf::SHT_GNU_VERNEED
                    | elf::SHT_DYNAMIC
                    | elf::SHT_REL
                    | elf::SHT_RELA
                    | elf::SHT_NOTE
            );
            if moved {
                // Once, with its alignment padding.
                // The alignment is checked below; a hostile one must not overflow the sum first.
                moved_bytes = moved_bytes
                    .saturating_add(size)
                    .saturating_add(a.clamp(1, MAX_LOAD_ALIGN));
            }
            if moved && a > seg_align.clamp(1, 64) {
                return Err(layout(format!(
                    "section {i} ({}) asks for {a:#x}-byte alignment; the dynamic tables are \
                     aligned to at most 64 bytes, and to no more than their segment ({seg_align:#x})",
                    name()
                )));
            }
        }
        // Section alignment: 0 or 1 (none) or a power of two no loader exceeds; the rewriter
        // pads moved sections to it.
        if matches!(sh.sh_type(endian), elf::SHT_DYNAMIC) {
            dynamic.push(off);
            if let Ok(link) = sections.section(object::SectionIndex(sh.sh_link(endian) as usize)) {
                dynamic.push(link.sh_offset(endian).into());
            }
        }
        let a: u64 = sh.sh_addralign(endian).into();
        if a > 1 && (!a.is_power_of_two() || a > MAX_LOAD_ALIGN) {
            return Err(layout(format!(
                "section {i} ({}) asks for {a:#x}-byte alignment",
                name()
            )));
        }
        // The hash tables' headers size the tables the rewriter rebuilds: they must describe
        // tables that fit their sections (a hostile bloom count is a 32 GiB allocation, a bloom
        // shift of 32 or more an overflow).
        let words = |n: usize| -> Vec<u64> {
            let big = endian == Endianness::Big;
            (0..n)
                .map(|k| {
                    let at = off as usize + 4 * k;
                    let b: [u8; 4] = data[at..at + 4].try_into().unwrap_or_default();
                    u64::from(if big {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    })
                })
                .collect()
        };
        let word = if h.is_type_64() { 8 } else { 4 };
        let bad_table = |what: &str| {
            layout(format!(
                "section {i} ({}): its {what} header describes tables larger than the section",
                name()
            ))
        };
        match sh.sh_type(endian) {
            elf::SHT_GNU_HASH => {
                if size < 16 {
                    return Err(bad_table("GNU hash"));
                }
                let w = words(4);
                let (buckets, bloom, shift) = (w[0], w[2], w[3]);
                if shift >= 32
                    || bloom == 0
                    || !bloom.is_power_of_two()
                    || 16 + bloom * word + buckets * 4 > size
                {
                    return Err(bad_table("GNU hash"));
                }
            }
            elf::SHT_HASH => {
                if size < 8 {
                    return Err(bad_table("hash"));
                }
                let w = words(2);
                if 8 + (w[0] + w[1]) * 4 > size {
                    return Err(bad_table("hash"));
                }
            }
            _ => {}
        }
    }
    let movable = phdrs
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .filter_map(|ph| {
            let off: u64 = ph.p_offset(endian).into();
            let size: u64 = ph.p_filesz(endian).into();
            dynamic
                .iter()
                .any(|d| (off..off + size).contains(d))
                .then_some(size)
        })
        .fold(0u64, u64::saturating_add)
        .saturating_add(moved_bytes)
        .saturating_add(stranded)
        // Each byte moves once at most: never more than the file.
        .min(len);
    Ok(Room {
        align,
        movable,
        refused_by_rewriter,
    })
}

/// The value the search path will have.
fn joined(paths: &[String]) -> String {
    paths.join(":")
}

// ---------------------------------------------------------------------------------------------
// In place

/// Where the dynamic section and its strings live, read through the section table.
struct DynLayout {
    /// (file offset of the entry, tag, value) for each entry up to the first DT_NULL.
    entries: Vec<(usize, u64, u64)>,
    entry_size: usize,
    is64: bool,
    big: bool,
    strtab_off: usize,
    strtab_size: usize,
    /// Offsets into the dynamic string table used by symbols and symbol versions.
    other_refs: Vec<u64>,
    /// Offsets of the library names of version requirements (`vn_file`).
    verneed_files: Vec<u64>,
}

fn in_place(data: &[u8], edits: &Edits) -> Result<Option<Vec<u8>>, PatchError> {
    let layout = match data.get(4) {
        Some(&elf::ELFCLASS64) => dyn_layout::<elf::FileHeader64<Endianness>>(data),
        Some(&elf::ELFCLASS32) => dyn_layout::<elf::FileHeader32<Endianness>>(data),
        _ => None,
    };
    let Some(l) = layout else { return Ok(None) };
    let string_at = |off: u64| -> Option<&[u8]> {
        let start = l.strtab_off.checked_add(off as usize)?;
        let end_of_table = l.strtab_off + l.strtab_size;
        let rest = data.get(start..end_of_table)?;
        let n = rest.iter().position(|&b| b == 0)?;
        Some(&rest[..n])
    };
    // (entry index, new tag or None, new string)
    let mut writes: Vec<(usize, Option<u64>, String)> = Vec::new();
    if let Some((paths, tag)) = &edits.search_path {
        let idx: Vec<usize> = l
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.1 == elf::DT_RPATH as u64 || e.1 == elf::DT_RUNPATH as u64)
            .map(|(i, _)| i)
            .collect();
        let [i] = idx[..] else { return Ok(None) };
        let want = match tag {
            SearchPathTag::Rpath => elf::DT_RPATH,
            SearchPathTag::Runpath => elf::DT_RUNPATH,
        } as u64;
        writes.push((i, Some(want), joined(paths)));
    }
    for (old, new) in &edits.replace_needed {
        for (i, e) in l.entries.iter().enumerate() {
            if e.1 == elf::DT_NEEDED as u64 && string_at(e.2) == Some(old.as_bytes()) {
                writes.push((i, None, new.clone()));
            }
        }
    }
    if let Some(s) = &edits.soname {
        let Some(i) = l.entries.iter().position(|e| e.1 == elf::DT_SONAME as u64) else {
            return Ok(None);
        };
        writes.push((i, None, s.clone()));
    }
    // Every string must fit over its old one, which nothing else may share.
    let string_tags = [
        elf::DT_NEEDED,
        elf::DT_SONAME,
        elf::DT_RPATH,
        elf::DT_RUNPATH,
        elf::DT_AUXILIARY,
        elf::DT_FILTER,
    ];
    let mut refs: Vec<(usize, u64)> = l
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| string_tags.contains(&(e.1 as u32)))
        .map(|(i, e)| (i, e.2))
        .collect();
    refs.extend(l.other_refs.iter().map(|&r| (usize::MAX, r)));
    // A version requirement naming the same library string changes with its NEEDED entry.
    let needed_rename: Vec<usize> = writes
        .iter()
        .filter(|(i, tag, _)| tag.is_none() && l.entries[*i].1 == elf::DT_NEEDED as u64)
        .map(|(i, _, _)| *i)
        .collect();
    for &f in &l.verneed_files {
        let same_as_renamed = needed_rename.iter().any(|&i| l.entries[i].2 == f);
        refs.push((
            if same_as_renamed {
                usize::MAX - 1
            } else {
                usize::MAX
            },
            f,
        ));
    }
    let mut out = data.to_vec();
    for (i, tag, new) in &writes {
        let off = l.entries[*i].2;
        let Some(old) = string_at(off) else {
            return Ok(None);
        };
        if new.len() > old.len() || new.as_bytes().contains(&0) {
            return Ok(None);
        }
        let span = off..=off + old.len() as u64;
        let renames_needed = needed_rename.contains(i);
        if refs.iter().any(|(j, r)| {
            *j != *i && span.contains(r) && !(renames_needed && *j == usize::MAX - 1 && *r == off)
        }) {
            return Ok(None);
        }
        let start = l.strtab_off + off as usize;
        out[start..start + new.len()].copy_from_slice(new.as_bytes());
        out[start + new.len()..start + old.len()].fill(0);
        if let Some(t) = tag {
            let at = l.entries[*i].0;
            put(&mut out, at, *t, if l.is64 { 8 } else { 4 }, l.big);
        }
    }
    let _ = l.entry_size;
    Ok(Some(out))
}

/// Writes `v` as a `width`-byte word (4 or 8) at `at`, in the file's byte order; nothing when the
/// word would not fit.
fn put(out: &mut [u8], at: usize, v: u64, width: usize, big: bool) {
    let bytes = match (width, big) {
        (8, false) => v.to_le_bytes().to_vec(),
        (8, true) => v.to_be_bytes().to_vec(),
        (_, false) => (v as u32).to_le_bytes().to_vec(),
        (_, true) => (v as u32).to_be_bytes().to_vec(),
    };
    if let Some(slot) = out.get_mut(at..at + bytes.len()) {
        slot.copy_from_slice(&bytes);
    }
}

/// A word to change in an ELF image: where, what, and how wide (4 or 8 bytes).
struct Word {
    at: usize,
    value: u64,
    width: usize,
}

/// Reads `out` as ELF, lets `plan` list the words to change, then writes them in the file's byte
/// order. Nothing changes when the image does not parse or `plan` has nothing.
fn rewrite_words<E: FileHeader<Endian = Endianness>>(
    out: &mut [u8],
    plan: impl FnOnce(&[u8], &E, Endianness) -> Option<Vec<Word>>,
) {
    let (words, big) = {
        let data: &[u8] = out;
        let Ok(h) = E::parse(data) else { return };
        let Ok(endian) = h.endian() else { return };
        let Some(words) = plan(data, h, endian) else {
            return;
        };
        (words, endian == Endianness::Big)
    };
    for w in words {
        put(out, w.at, w.value, w.width, big);
    }
}

fn dyn_layout<E: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<DynLayout> {
    let h = E::parse(data).ok()?;
    let endian = h.endian().ok()?;
    let sections = h.sections(endian, data).ok()?;
    let (index, dynamic) = sections
        .iter()
        .enumerate()
        .find(|(_, s)| s.sh_type(endian) == elf::SHT_DYNAMIC)?;
    let _ = index;
    let dyn_off: u64 = dynamic.sh_offset(endian).into();
    let entry_size = std::mem::size_of::<E::Dyn>();
    let (dyns, link) = sections.dynamic(endian, data).ok()??;
    let strtab = sections.section(link).ok()?;
    let mut entries = Vec::new();
    for (k, d) in dyns.iter().enumerate() {
        let tag: u64 = d.d_tag(endian).into();
        if tag == elf::DT_NULL as u64 {
            break;
        }
        entries.push((
            dyn_off as usize + k * entry_size,
            tag,
            d.d_val(endian).into(),
        ));
    }
    let mut other_refs = Vec::new();
    let mut verneed_files = Vec::new();
    if let Ok(table) = sections.symbols(endian, data, elf::SHT_DYNSYM) {
        if table.string_section() == link {
            other_refs.extend(table.symbols().iter().map(|s| s.st_name(endian) as u64));
        } else {
            return None;
        }
    }
    // Version definitions and needs name their strings in the same table.
    if let Ok(Some((mut verdefs, l))) = sections.gnu_verdef(endian, data) {
        if l != link {
            return None;
        }
        while let Ok(Some((_, mut aux))) = verdefs.next() {
            while let Ok(Some(a)) = aux.next() {
                other_refs.push(a.vda_name.get(endian) as u64);
            }
        }
    }
    if let Ok(Some((mut verneeds, l))) = sections.gnu_verneed(endian, data) {
        if l != link {
            return None;
        }
        while let Ok(Some((need, mut aux))) = verneeds.next() {
            verneed_files.push(need.vn_file.get(endian) as u64);
            while let Ok(Some(a)) = aux.next() {
                other_refs.push(a.vna_name.get(endian) as u64);
            }
        }
    }
    Some(DynLayout {
        entries,
        entry_size,
        is64: h.is_type_64(),
        big: endian == Endianness::Big,
        strtab_off: strtab.sh_offset(endian).into() as usize,
        strtab_size: strtab.sh_size(endian).into() as usize,
        other_refs,
        verneed_files,
    })
}

// ---------------------------------------------------------------------------------------------
// Layout change

/// [`rewrite`], with a panic inside the rewriter (a third-party crate fed a hostile file that
/// passed [`check_layout`]) turned into an error instead of ending the process, and kept off
/// stderr. Fuzz builds (`--cfg fuzzing`) let such panics through, so the fuzzer reports them.
fn guarded_rewrite(data: &[u8], edits: &Edits) -> Result<Vec<u8>, PatchError> {
    #[cfg(fuzzing)]
    {
        rewrite(data, edits)
    }
    #[cfg(not(fuzzing))]
    {
        use std::cell::Cell;
        thread_local! {
            static QUIET: Cell<bool> = const { Cell::new(false) };
        }
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(Cell::get) {
                    previous(info)
                }
            }));
        });
        QUIET.with(|q| q.set(true));
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rewrite(data, edits)));
        QUIET.with(|q| q.set(false));
        result.unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(PatchError::Rewrite(format!(
                "the ELF rewriter failed on this file ({why}); the file's layout is one it cannot \
                 rewrite"
            )))
        })
    }
}

fn rewrite(data: &[u8], edits: &Edits) -> Result<Vec<u8>, PatchError> {
    let err = |e: object_rewrite::Error| PatchError::Rewrite(e.to_string());
    // Sections of types the rewriter does not know are carried byte for byte under a type it
    // does, and given their own type back afterwards.
    let (input, retyped) = match data.get(4) {
        Some(&elf::ELFCLASS64) => retype_unknown::<elf::FileHeader64<Endianness>>(data),
        _ => retype_unknown::<elf::FileHeader32<Endianness>>(data),
    };
    let data: &[u8] = input.as_deref().unwrap_or(data);
    let mut r = object_rewrite::Rewriter::read(data).map_err(err)?;
    if let Some((paths, tag)) = &edits.search_path {
        r.elf_delete_runpath().map_err(err)?;
        r.elf_set_runpath(joined(paths).into_bytes()).map_err(err)?;
        if *tag == SearchPathTag::Rpath {
            r.elf_use_rpath().map_err(err)?;
        }
    }
    if !edits.replace_needed.is_empty() {
        let map: HashMap<Vec<u8>, Vec<u8>> = edits
            .replace_needed
            .iter()
            .map(|(a, b)| (a.clone().into_bytes(), b.clone().into_bytes()))
            .collect();
        r.elf_replace_needed(&map).map_err(err)?;
    }
    if let Some(s) = &edits.soname {
        r.elf_set_soname(s.clone().into_bytes()).map_err(err)?;
    }
    let mut out = Vec::with_capacity(data.len() + 65536);
    r.write(&mut out).map_err(err)?;
    match out.get(4) {
        Some(&elf::ELFCLASS64) => {
            mend::<elf::FileHeader64<Endianness>>(&mut out);
            restore_types::<elf::FileHeader64<Endianness>>(&mut out, &retyped);
        }
        _ => {
            mend::<elf::FileHeader32<Endianness>>(&mut out);
            restore_types::<elf::FileHeader32<Endianness>>(&mut out, &retyped);
        }
    }
    Ok(out)
}

/// Section types the rewriter (object 0.35's ELF builder, which object-rewrite pins) reads.
/// Others, such as LLVM's `.deplibs` (`SHT_LLVM_DEPENDENT_LIBRARIES`, 0x6fff4c04) or `SHT_RELR`,
/// make it refuse the whole file.
fn rewriter_knows(sh_type: u32, machine: u16) -> bool {
    matches!(
        sh_type,
        elf::SHT_NULL
            | elf::SHT_PROGBITS
            | elf::SHT_NOBITS
            | elf::SHT_INIT_ARRAY
            | elf::SHT_FINI_ARRAY
            | elf::SHT_PREINIT_ARRAY
            | elf::SHT_REL
            | elf::SHT_RELA
            | elf::SHT_SYMTAB
            | elf::SHT_SYMTAB_SHNDX
            | elf::SHT_DYNSYM
            | elf::SHT_STRTAB
            | elf::SHT_NOTE
            | elf::SHT_DYNAMIC
            | elf::SHT_GNU_ATTRIBUTES
            | elf::SHT_HASH
            | elf::SHT_GNU_HASH
            | elf::SHT_GNU_VERSYM
            | elf::SHT_GNU_VERDEF
            | elf::SHT_GNU_VERNEED
    ) || matches!(
        (machine, sh_type),
        (elf::EM_ARM, elf::SHT_ARM_ATTRIBUTES | elf::SHT_ARM_EXIDX)
            | (elf::EM_AARCH64, elf::SHT_AARCH64_ATTRIBUTES)
            | (elf::EM_CSKY, elf::SHT_CSKY_ATTRIBUTES)
            | (elf::EM_RISCV, elf::SHT_RISCV_ATTRIBUTES)
            | (elf::EM_IA_64, elf::SHT_IA_64_UNWIND)
            | (elf::EM_MIPS, elf::SHT_MIPS_REGINFO | elf::SHT_MIPS_DWARF)
            | (elf::EM_X86_64, elf::SHT_X86_64_UNWIND)
    )
}

/// A section given another type for the rewriter: its name, which of the sections of that name it
/// is, and its own type.
type Retyped = Vec<(Vec<u8>, usize, u32)>;

/// A copy of `data` in which every section of a type the rewriter does not know is `SHT_PROGBITS`
/// (opaque bytes, kept as they are) and every alignment of 0 is 1 (the same meaning), and the
/// list of the retyped sections. `None` when nothing needed changing.
fn retype_unknown<E: FileHeader<Endian = Endianness>>(data: &[u8]) -> (Option<Vec<u8>>, Retyped) {
    let mut retyped = Vec::new();
    let mut out = None;
    let Ok(h) = E::parse(data) else {
        return (None, retyped);
    };
    let Ok(endian) = h.endian() else {
        return (None, retyped);
    };
    let Ok(sections) = h.sections(endian, data) else {
        return (None, retyped);
    };
    let shoff: u64 = h.e_shoff(endian).into();
    let shentsize = h.e_shentsize(endian) as u64;
    let machine = h.e_machine(endian);
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    for (i, sh) in sections.iter().enumerate() {
        let name = sections
            .section_name(endian, sh)
            .unwrap_or_default()
            .to_vec();
        let nth = seen.entry(name.clone()).or_default();
        *nth += 1;
        // An alignment of 0 means none, as 1 does; the rewriter computes `align - 1`.
        let base = (shoff + i as u64 * shentsize) as usize;
        let big = endian == Endianness::Big;
        if i > 0 && Into::<u64>::into(sh.sh_addralign(endian)) == 0 {
            let bytes = out.get_or_insert_with(|| data.to_vec());
            let (at, width) = if h.is_type_64() {
                (base + 0x30, 8)
            } else {
                (base + 0x20, 4)
            };
            put(bytes, at, 1, width, big);
        }
        let t = sh.sh_type(endian);
        if rewriter_knows(t, machine) {
            continue;
        }
        let bytes = out.get_or_insert_with(|| data.to_vec());
        put(bytes, base + 4, elf::SHT_PROGBITS.into(), 4, big);
        retyped.push((name, *nth, t));
    }
    (out, retyped)
}

/// Gives the sections [`retype_unknown`] changed their own types back, found by name.
fn restore_types<E: FileHeader<Endian = Endianness>>(out: &mut [u8], retyped: &Retyped) {
    if retyped.is_empty() {
        return;
    }
    rewrite_words::<E>(out, |data, h, endian| {
        let sections = h.sections(endian, data).ok()?;
        let shoff: u64 = h.e_shoff(endian).into();
        let shentsize = h.e_shentsize(endian) as u64;
        let mut seen: HashMap<&[u8], usize> = HashMap::new();
        let mut words = Vec::new();
        for (i, sh) in sections.iter().enumerate() {
            let name = sections.section_name(endian, sh).unwrap_or_default();
            let nth = seen.entry(name).or_default();
            *nth += 1;
            if let Some((_, _, t)) = retyped.iter().find(|(n, k, _)| n == name && k == nth) {
                words.push(Word {
                    at: (shoff + i as u64 * shentsize + 4) as usize,
                    value: (*t).into(),
                    width: 4,
                });
            }
        }
        Some(words)
    });
}

/// Fixes what the rewriter leaves inconsistent: `PT_DYNAMIC`'s size and `_DYNAMIC`'s, and
/// `.symtab` section symbols of sections that moved.
fn mend<E: FileHeader<Endian = Endianness>>(out: &mut [u8]) {
    rewrite_words::<E>(out, |data, h, endian| {
        let mut words = Vec::new();
        let is64 = h.is_type_64();
        let width = if is64 { 8 } else { 4 };
        let sections = h.sections(endian, data).ok()?;
        let dynamic = sections
            .iter()
            .find(|s| s.sh_type(endian) == elf::SHT_DYNAMIC);
        let phoff: u64 = h.e_phoff(endian).into();
        let phentsize = h.e_phentsize(endian) as u64;
        if let (Some(d), Ok(phdrs)) = (dynamic, h.program_headers(endian, data)) {
            let size: u64 = d.sh_size(endian).into();
            for (k, ph) in phdrs.iter().enumerate() {
                if ph.p_type(endian) == elf::PT_DYNAMIC
                    && Into::<u64>::into(ph.p_filesz(endian)) != size
                {
                    let base = (phoff + k as u64 * phentsize) as usize;
                    // p_filesz and p_memsz: 64-bit at 0x20/0x28, 32-bit at 0x10/0x14.
                    let (fs, ms) = if is64 { (0x20, 0x28) } else { (0x10, 0x14) };
                    for at in [base + fs, base + ms] {
                        words.push(Word {
                            at,
                            value: size,
                            width,
                        });
                    }
                }
            }
        }
        if let Some(symtab) = sections
            .iter()
            .find(|s| s.sh_type(endian) == elf::SHT_SYMTAB)
        {
            let off: u64 = symtab.sh_offset(endian).into();
            let entsize = std::mem::size_of::<E::Sym>() as u64;
            if let Ok(table) = sections.symbols(endian, data, elf::SHT_SYMTAB) {
                // `_DYNAMIC` spans the dynamic section, whose spare entries the rewriter drops.
                if let Some(d) = dynamic {
                    let size: u64 = d.sh_size(endian).into();
                    for (k, sym) in table.symbols().iter().enumerate() {
                        let named = table
                            .symbol_name(endian, sym)
                            .is_ok_and(|n| n == b"_DYNAMIC");
                        if !named {
                            continue;
                        }
                        let addr: u64 = d.sh_addr(endian).into();
                        let base = off + k as u64 * entsize;
                        // st_value and st_size: 64-bit at 8 and 16, 32-bit at 4 and 8.
                        let (value_at, size_at) = if is64 { (8, 16) } else { (4, 8) };
                        for (now, want, at) in [
                            (sym.st_value(endian).into(), addr, value_at),
                            (sym.st_size(endian).into(), size, size_at),
                        ] {
                            if now != want {
                                words.push(Word {
                                    at: (base + at) as usize,
                                    value: want,
                                    width,
                                });
                            }
                        }
                    }
                }
                for (k, sym) in table.symbols().iter().enumerate() {
                    if sym.st_type() != elf::STT_SECTION {
                        continue;
                    }
                    let shndx = sym.st_shndx(endian) as usize;
                    let Ok(sec) = sections.section(object::SectionIndex(shndx)) else {
                        continue;
                    };
                    let addr: u64 = sec.sh_addr(endian).into();
                    let value: u64 = sym.st_value(endian).into();
                    if addr != value {
                        // st_value: 64-bit at 8, 32-bit at 4.
                        let at = off + k as u64 * entsize + if is64 { 8 } else { 4 };
                        words.push(Word {
                            at: at as usize,
                            value: addr,
                            width,
                        });
                    }
                }
            }
        }
        Some(words)
    });
}

/// Points every `vn_file` that names a replaced library at the new NEEDED string.
fn rename_verneed_files<E: FileHeader<Endian = Endianness>>(out: &mut [u8], edits: &Edits) {
    rewrite_words::<E>(out, |data, h, endian| {
        let sections = h.sections(endian, data).ok()?;
        let (dyns, link) = sections.dynamic(endian, data).ok()??;
        let strings = sections.strings(endian, data, link).ok()?;
        // New name → its string offset, from the DT_NEEDED entries.
        let mut offset_of: HashMap<Vec<u8>, u32> = HashMap::new();
        for d in dyns {
            if d.tag32(endian) == Some(elf::DT_NEEDED) {
                if let Ok(name) = d.string(endian, strings) {
                    let v: u64 = d.d_val(endian).into();
                    offset_of.insert(name.to_vec(), v as u32);
                }
            }
        }
        let (mut needs, vlink) = sections.gnu_verneed(endian, data).ok()??;
        if vlink != link {
            return None;
        }
        let mut words = Vec::new();
        while let Ok(Some((need, _))) = needs.next() {
            let Ok(file) = need.file(endian, strings) else {
                continue;
            };
            let Some((_, new)) = edits
                .replace_needed
                .iter()
                .find(|(old, _)| old.as_bytes() == file)
            else {
                continue;
            };
            if let Some(&off) = offset_of.get(new.as_bytes()) {
                // vn_file is the u32 at offset 4 of the Verneed record.
                words.push(Word {
                    at: (need as *const _ as usize) - (data.as_ptr() as usize) + 4,
                    value: off.into(),
                    width: 4,
                });
            }
        }
        Some(words)
    });
}

// ---------------------------------------------------------------------------------------------

fn verify(out: &[u8], before: &ElfFile, edits: &Edits) -> Result<(), PatchError> {
    let after =
        ElfFile::parse(out).map_err(|e| PatchError::Verify(format!("unreadable result: {e}")))?;
    if let Some((paths, tag)) = &edits.search_path {
        let (got, other) = match tag {
            SearchPathTag::Rpath => (&after.rpath, &after.runpath),
            SearchPathTag::Runpath => (&after.runpath, &after.rpath),
        };
        if got != paths || !other.is_empty() {
            return Err(PatchError::Verify(format!(
                "search path is {got:?} (other tag {other:?}), wanted {paths:?}"
            )));
        }
    }
    let mut want_needed = before.needed.clone();
    for (old, new) in &edits.replace_needed {
        for n in want_needed.iter_mut().filter(|n| *n == old) {
            *n = new.clone();
        }
    }
    if after.needed != want_needed {
        return Err(PatchError::Verify(format!(
            "NEEDED is {:?}, wanted {want_needed:?}",
            after.needed
        )));
    }
    let consistent_before = before
        .verneed_files
        .iter()
        .all(|f| before.needed.contains(f));
    if let Some(f) = after
        .verneed_files
        .iter()
        .find(|f| consistent_before && !after.needed.contains(f))
    {
        return Err(PatchError::Verify(format!(
            "a symbol-version requirement names {f:?}, which is not a NEEDED entry"
        )));
    }
    let want_soname = edits.soname.clone().or_else(|| before.soname.clone());
    if after.soname != want_soname {
        return Err(PatchError::Verify(format!(
            "SONAME is {:?}, wanted {want_soname:?}",
            after.soname
        )));
    }
    Ok(())
}
