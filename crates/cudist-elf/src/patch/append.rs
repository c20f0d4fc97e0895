//! Layout change by appending, for shared libraries: the grown dynamic string table (and the
//! dynamic section, when it needs more entries than it has room for) and a copy of the program
//! header table with one more `PT_LOAD` go to a new segment at the end of the file; every other
//! byte stays where it was. This is what patchelf does for libraries, and it is hand-written
//! because no crate edits a file this way: object's rewriter rebuilds the whole layout, which
//! refuses valid files (LLD's layouts, a 4-byte-aligned `.gnu.version_r`) and grows others by
//! the tables it moves (a 162 MB library to 318 MB).
//!
//! The old dynamic string table is kept as the new one's prefix, so every offset into it
//! (symbols, version records, the entries that do not change) stays valid; the new strings are
//! appended. The new segment's file offset and address are congruent modulo the loadable
//! segments' alignment, so the file grows by the tables alone, not by a page of padding.
//!
//! Loaders find the program headers through `e_phoff`, read from the file, and find them in
//! memory in whichever loadable segment holds them (glibc's `_dl_map_segments`, musl's
//! `map_library`). A program's program headers are found by the kernel, which before Linux 5.18
//! computed their address from the first segment's: for a program the new segment keeps that
//! segment's distance between address and file offset (see [`append`]).

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::Endianness;

use super::{joined, put, Edits, SearchPathTag};

/// Field offsets of the ELF structures this writer edits, for one class.
struct Class {
    is64: bool,
    big: bool,
}

impl Class {
    fn word(&self) -> usize {
        if self.is64 {
            8
        } else {
            4
        }
    }
    fn phent(&self) -> usize {
        if self.is64 {
            56
        } else {
            32
        }
    }
    fn dynent(&self) -> usize {
        2 * self.word()
    }
    fn read(&self, data: &[u8], at: usize, width: usize) -> Option<u64> {
        let b = data.get(at..at.checked_add(width)?)?;
        Some(match (width, self.big) {
            (8, false) => u64::from_le_bytes(b.try_into().ok()?),
            (8, true) => u64::from_be_bytes(b.try_into().ok()?),
            (_, false) => u32::from_le_bytes(b.try_into().ok()?).into(),
            (_, true) => u32::from_be_bytes(b.try_into().ok()?).into(),
        })
    }
    /// Writes a program header.
    fn phdr(&self, out: &mut [u8], at: usize, p: &Phdr) {
        let w = self.word();
        let (flags_at, off_at) = if self.is64 { (4, 8) } else { (24, 4) };
        put(out, at, p.kind.into(), 4, self.big);
        put(out, at + flags_at, p.flags.into(), 4, self.big);
        for (k, v) in [p.offset, p.vaddr, p.paddr, p.filesz, p.memsz]
            .into_iter()
            .enumerate()
        {
            put(out, at + off_at + k * w, v, w, self.big);
        }
        let align_at = if self.is64 { 48 } else { 28 };
        put(out, at + align_at, p.align, w, self.big);
    }
    /// Offsets of `sh_addr`, `sh_offset` and `sh_size` in a section header.
    fn shdr_fields(&self) -> (usize, usize, usize) {
        if self.is64 {
            (16, 24, 32)
        } else {
            (12, 16, 20)
        }
    }
}

#[derive(Clone)]
struct Phdr {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
    /// The physical address, kept as it was (unused by loaders).
    paddr: u64,
}

fn align_up(v: u64, a: u64) -> Option<u64> {
    let a = a.max(1);
    v.checked_add(a - 1).map(|x| x / a * a)
}

/// The edited file, or `None` where this writer does not apply (an executable, a table it cannot
/// find through the segments) and the rewriter is asked instead.
pub(super) fn append<E: FileHeader<Endian = Endianness>>(
    data: &[u8],
    edits: &Edits,
) -> Option<Vec<u8>> {
    let h = E::parse(data).ok()?;
    let endian = h.endian().ok()?;
    let c = Class {
        is64: h.is_type_64(),
        big: endian == Endianness::Big,
    };
    let e_type = h.e_type(endian);
    if !matches!(e_type, elf::ET_DYN | elf::ET_EXEC)
        || usize::from(h.e_phentsize(endian)) != c.phent()
    {
        return None;
    }
    let phnum = usize::from(h.e_phnum(endian));
    // PN_XNUM: the count lives in section 0; no real library has that many.
    if phnum == 0 || phnum >= 0xfff0 {
        return None;
    }
    let phdrs: Vec<Phdr> = h
        .program_headers(endian, data)
        .ok()?
        .iter()
        .map(|ph| Phdr {
            kind: ph.p_type(endian),
            flags: ph.p_flags(endian),
            offset: ph.p_offset(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            paddr: ph.p_paddr(endian).into(),
            filesz: ph.p_filesz(endian).into(),
            memsz: ph.p_memsz(endian).into(),
            align: ph.p_align(endian).into(),
        })
        .collect();
    // A program the kernel starts (it has an interpreter, or is not position-independent).
    let program = e_type == elf::ET_EXEC || phdrs.iter().any(|p| p.kind == elf::PT_INTERP);
    let loads: Vec<&Phdr> = phdrs.iter().filter(|p| p.kind == elf::PT_LOAD).collect();
    let last_load = phdrs.iter().rposition(|p| p.kind == elf::PT_LOAD)?;
    let dynamic = phdrs.iter().find(|p| p.kind == elf::PT_DYNAMIC)?;
    // The file offset of an address the file holds, with the bytes that remain from there.
    let file_at = |vaddr: u64, len: u64| -> Option<usize> {
        let l = loads.iter().find(|l| {
            vaddr >= l.vaddr
                && vaddr
                    .checked_add(len)
                    .is_some_and(|end| end <= l.vaddr + l.filesz)
        })?;
        usize::try_from(l.offset + (vaddr - l.vaddr)).ok()
    };

    // The dynamic entries, as the loader reads them: through PT_DYNAMIC.
    let ent = c.dynent();
    let dyn_off = usize::try_from(dynamic.offset).ok()?;
    let slots = usize::try_from(dynamic.filesz).ok()? / ent;
    let mut entries: Vec<(u64, u64)> = Vec::new();
    for k in 0..slots {
        let at = dyn_off + k * ent;
        let tag = c.read(data, at, c.word())?;
        if tag == u64::from(elf::DT_NULL) {
            break;
        }
        entries.push((tag, c.read(data, at + c.word(), c.word())?));
    }
    let value = |tag: u32| {
        entries
            .iter()
            .find(|(t, _)| *t == u64::from(tag))
            .map(|e| e.1)
    };
    let (str_vaddr, str_size) = (value(elf::DT_STRTAB)?, value(elf::DT_STRSZ)?);
    let str_off = file_at(str_vaddr, str_size)?;
    let old_strings = data.get(str_off..str_off.checked_add(usize::try_from(str_size).ok()?)?)?;
    // A static PIE has neither: the kernel starts it, and finds its program headers itself.
    if value(elf::DT_NEEDED).is_none() && value(elf::DT_SONAME).is_none() {
        return None;
    }
    let string_at = |off: u64| -> Option<&[u8]> {
        let rest = old_strings.get(usize::try_from(off).ok()?..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };

    // The new string table: the old one, then the new strings.
    let mut strings = old_strings.to_vec();
    if strings.last() != Some(&0) {
        strings.push(0);
    }
    let mut add = |s: &str| -> Option<u64> {
        if s.as_bytes().contains(&0) {
            return None;
        }
        let at = strings.len() as u64;
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
        Some(at)
    };
    if let Some((paths, tag)) = &edits.search_path {
        let tag = u64::from(match tag {
            SearchPathTag::Rpath => elf::DT_RPATH,
            SearchPathTag::Runpath => elf::DT_RUNPATH,
        });
        let at = add(&joined(paths))?;
        let is_path = |t: u64| t == u64::from(elf::DT_RPATH) || t == u64::from(elf::DT_RUNPATH);
        match entries.iter().position(|(t, _)| is_path(*t)) {
            Some(first) => {
                entries[first] = (tag, at);
                let mut k = 0;
                entries.retain(|(t, _)| {
                    k += 1;
                    k - 1 == first || !is_path(*t)
                });
            }
            None => entries.push((tag, at)),
        }
    }
    for (old, new) in &edits.replace_needed {
        let mut at = None;
        for e in entries.iter_mut() {
            if e.0 == u64::from(elf::DT_NEEDED) && string_at(e.1) == Some(old.as_bytes()) {
                let a = match at {
                    Some(a) => a,
                    None => *at.insert(add(new)?),
                };
                e.1 = a;
            }
        }
    }
    if let Some(s) = &edits.soname {
        let at = add(s)?;
        match entries
            .iter_mut()
            .find(|(t, _)| *t == u64::from(elf::DT_SONAME))
        {
            Some(e) => e.1 = at,
            None => entries.push((u64::from(elf::DT_SONAME), at)),
        }
    }
    let moved_dynamic = entries.len() + 1 > slots;

    // The new segment: [program headers][dynamic section, if moved][dynamic strings].
    let align = loads.iter().map(|l| l.align).max().unwrap_or(1).max(0x1000);
    let phdr_size = ((phnum + 1) * c.phent()) as u64;
    let dyn_rel = align_up(phdr_size, 16)?;
    let dyn_size = if moved_dynamic {
        ((entries.len() + 1) * ent) as u64
    } else {
        0
    };
    let str_rel = align_up(dyn_rel + dyn_size, 8)?;
    let seg_len = str_rel.checked_add(strings.len() as u64)?;
    let mem_end = loads
        .iter()
        .map(|l| l.vaddr.checked_add(l.memsz))
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()?;
    let end = align_up(data.len() as u64, 16)?;
    let (seg_off, seg_vaddr) = if program {
        // Linux before 5.18 tells a program where its program headers are as the first
        // segment's address for `e_phoff` (AT_PHDR = first p_vaddr - first p_offset + e_phoff),
        // and glibc takes the load bias from that and PT_PHDR. So the new segment keeps the
        // first segment's distance between address and offset: it starts at the file offset
        // that puts it past every segment in memory, the file padded with zeros up to there.
        // Without PT_PHDR, or where that padding is more than a few pages (a large .bss), the
        // rewriter is asked instead.
        if !phdrs.iter().any(|p| p.kind == elf::PT_PHDR) {
            return None;
        }
        let first = loads.first()?;
        let delta = first.vaddr.checked_sub(first.offset)?;
        if delta % align != 0 {
            return None;
        }
        let off = end.max(align_up(mem_end, align)?.checked_sub(delta)?);
        if off - end > 4 * align + (64 << 10) {
            return None;
        }
        (off, off.checked_add(delta)?)
    } else {
        // A library: any address past the others, congruent with the offset. One more
        // megabyte of address space (not of file) between the last segment and the new one
        // keeps tools that judge a relocation by its symbol's size (eu-elflint) from reading
        // into the new segment.
        let gap = if c.is64 { align_up(1 << 20, align)? } else { 0 };
        let vaddr = align_up(mem_end, align)?
            .checked_add(gap)?
            .checked_add(end % align)?;
        (end, vaddr)
    };
    seg_vaddr.checked_add(seg_len)?;
    let new_str_vaddr = seg_vaddr + str_rel;
    for e in entries.iter_mut() {
        if e.0 == u64::from(elf::DT_STRTAB) {
            e.1 = new_str_vaddr;
        } else if e.0 == u64::from(elf::DT_STRSZ) {
            e.1 = strings.len() as u64;
        }
    }

    let mut out = Vec::with_capacity(usize::try_from(seg_off + seg_len).ok()?);
    out.extend_from_slice(data);
    out.resize(usize::try_from(seg_off + seg_len).ok()?, 0);
    let seg = usize::try_from(seg_off).ok()?;

    // The program headers, with the new segment after the last loadable one.
    let mut table: Vec<Phdr> = Vec::with_capacity(phnum + 1);
    for (k, p) in phdrs.iter().enumerate() {
        let mut p = p.clone();
        match p.kind {
            elf::PT_PHDR => {
                p.offset = seg_off;
                p.vaddr = seg_vaddr;
                p.paddr = seg_vaddr;
                p.filesz = phdr_size;
                p.memsz = phdr_size;
            }
            elf::PT_DYNAMIC if moved_dynamic => {
                p.offset = seg_off + dyn_rel;
                p.vaddr = seg_vaddr + dyn_rel;
                p.paddr = p.vaddr;
                p.filesz = dyn_size;
                p.memsz = dyn_size;
            }
            _ => {}
        }
        table.push(p);
        if k == last_load {
            table.push(Phdr {
                kind: elf::PT_LOAD,
                // Writable when it holds the dynamic section, which glibc before 2.35 relocates
                // in place.
                flags: elf::PF_R | if moved_dynamic { elf::PF_W } else { 0 },
                offset: seg_off,
                vaddr: seg_vaddr,
                paddr: seg_vaddr,
                filesz: seg_len,
                memsz: seg_len,
                align,
            });
        }
    }
    for (k, p) in table.iter().enumerate() {
        let at = seg + k * c.phent();
        c.phdr(&mut out, at, p);
    }

    // The dynamic section: in place (spare slots become DT_NULL), or in the new segment.
    let write_dynamic = |out: &mut Vec<u8>, at: usize, slots: usize| {
        for k in 0..slots {
            let (t, v) = entries.get(k).copied().unwrap_or((0, 0));
            put(out, at + k * ent, t, c.word(), c.big);
            put(out, at + k * ent + c.word(), v, c.word(), c.big);
        }
    };
    if moved_dynamic {
        write_dynamic(&mut out, seg + dyn_rel as usize, entries.len() + 1);
    } else {
        write_dynamic(&mut out, dyn_off, slots);
    }
    out[seg + str_rel as usize..].copy_from_slice(&strings);

    // The ELF header: the program headers' new place and count.
    let (phoff_at, phnum_at) = if c.is64 { (32, 56) } else { (28, 44) };
    put(&mut out, phoff_at, seg_off, c.word(), c.big);
    if c.big {
        out[phnum_at..phnum_at + 2].copy_from_slice(&((phnum + 1) as u16).to_be_bytes());
    } else {
        out[phnum_at..phnum_at + 2].copy_from_slice(&((phnum + 1) as u16).to_le_bytes());
    }

    // The section headers of the dynamic section and its strings, for the tools that read
    // sections (readelf, the object crate); the loader reads only what is above.
    if let Ok(sections) = h.sections(endian, data) {
        let shoff = usize::try_from(Into::<u64>::into(h.e_shoff(endian))).ok()?;
        let shentsize = usize::from(h.e_shentsize(endian));
        let (addr_at, off_at, size_at) = c.shdr_fields();
        let w = c.word();
        let mut set = |index: usize, off: u64, addr: u64, size: u64| {
            let base = shoff + index * shentsize;
            put(&mut out, base + addr_at, addr, w, c.big);
            put(&mut out, base + off_at, off, w, c.big);
            put(&mut out, base + size_at, size, w, c.big);
        };
        for (i, sh) in sections.iter().enumerate() {
            if sh.sh_type(endian) != elf::SHT_DYNAMIC {
                continue;
            }
            if moved_dynamic {
                set(i, seg_off + dyn_rel, seg_vaddr + dyn_rel, dyn_size);
            }
            let link = sh.sh_link(endian) as usize;
            if let Ok(s) = sections.section(object::SectionIndex(link)) {
                if Into::<u64>::into(s.sh_addr(endian)) == str_vaddr {
                    set(link, seg_off + str_rel, new_str_vaddr, strings.len() as u64);
                }
            }
        }
    }
    Some(out)
}
