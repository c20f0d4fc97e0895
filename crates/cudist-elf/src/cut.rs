//! Taking the zero tail of a loaded section out of the file, every virtual address kept.
//!
//! `cudist slim` leaves removed device code as zero bytes at the end of `.nv_fatbin` (the
//! containers cannot move without rewriting the relocations that point at them). Those bytes sit
//! inside a `PT_LOAD` segment, between the kept entries and whatever follows (`.eh_frame`, the
//! next segment), whose addresses code refers to PC-relatively: they cannot move in memory. What
//! can change is where they sit in the file. [`cut_section_tail`] splits the segment in two at
//! the hole: the first part ends after the kept bytes, the second starts where the data after the
//! hole starts, at the same virtual address as before but at a file offset lower by the hole's
//! size, rounded to whole [`GRANULE`]s so that every segment's offset stays congruent to its
//! address modulo any page size a loader uses. Nothing maps the hole any more; nothing read it
//! (the runtime reads a container up to its `fat_size`, which slim shrank to the kept entries).
//!
//! The new segment needs one more program header, and the table has no room where linkers put it
//! (the first section follows it), so the table moves into the first part's tail, after the kept
//! bytes, inside the mapped range (where `PT_PHDR` and the kernel want it). Everything after the
//! hole in the file (later segments, non-allocated sections, the section header table) moves down
//! by the same amount. The result is checked byte for byte against the input: every byte a loader
//! maps is where it was in memory, and every section holds what it held.
//!
//! Hand-written: the `object` crate's writer lays a file out afresh, which would move the virtual
//! addresses this has to keep; no other crate edits segments in place.

use crate::patch::PatchError;

/// The unit file offsets move by, and segment alignments are clamped to: 64 KiB, the largest
/// page size of the targets cudist handles (aarch64 kernels with 64 KiB pages), so a cut file
/// loads on every kernel the input loaded on.
pub const GRANULE: u64 = 64 << 10;

const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const EHDR: usize = 64;
const PHDR: usize = 56;
const SHDR: usize = 64;

/// What [`cut_section_tail`] did; `B` holds the new file ([`cut_section_tail_into`]).
#[derive(Debug)]
pub enum Cut<B = Vec<u8>> {
    /// The file without the tail: `bytes` fewer.
    Done {
        /// The new file.
        data: B,
        /// How many bytes it lost.
        bytes: u64,
    },
    /// The layout does not allow it; the file is left as it is. Why, in words.
    Kept(String),
}

#[derive(Clone, Copy, Debug)]
struct Phdr {
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

#[derive(Clone, Copy, Debug)]
struct Shdr {
    at: usize,
    name: u32,
    sh_type: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
}

fn u16_at(d: &[u8], at: usize) -> Result<u16, PatchError> {
    d.get(at..at.saturating_add(2))
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| PatchError::Layout("the ELF header is cut short".into()))
}

fn u32_at(d: &[u8], at: usize) -> Result<u32, PatchError> {
    d.get(at..at.saturating_add(4))
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| PatchError::Layout("a header table runs past the end of the file".into()))
}

fn u64_at(d: &[u8], at: usize) -> Result<u64, PatchError> {
    d.get(at..at.saturating_add(8))
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| PatchError::Layout("a header table runs past the end of the file".into()))
}

fn put32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A header table of `num` entries of `size` bytes at `off` lies in the file.
fn table_fits(d: &[u8], off: usize, num: usize, size: usize) -> Result<(), PatchError> {
    match off.checked_add(num * size) {
        Some(end) if end <= d.len() => Ok(()),
        _ => Err(PatchError::Layout(
            "a header table runs past the end of the file".into(),
        )),
    }
}

fn phdrs(d: &[u8], phoff: usize, phnum: usize) -> Result<Vec<Phdr>, PatchError> {
    table_fits(d, phoff, phnum, PHDR)?;
    (0..phnum)
        .map(|i| {
            let at = phoff + i * PHDR;
            Ok(Phdr {
                p_type: u32_at(d, at)?,
                flags: u32_at(d, at + 4)?,
                offset: u64_at(d, at + 8)?,
                vaddr: u64_at(d, at + 16)?,
                paddr: u64_at(d, at + 24)?,
                filesz: u64_at(d, at + 32)?,
                memsz: u64_at(d, at + 40)?,
                align: u64_at(d, at + 48)?,
            })
        })
        .collect()
}

fn write_phdr(d: &mut [u8], at: usize, p: &Phdr) {
    put32(d, at, p.p_type);
    put32(d, at + 4, p.flags);
    put64(d, at + 8, p.offset);
    put64(d, at + 16, p.vaddr);
    put64(d, at + 24, p.paddr);
    put64(d, at + 32, p.filesz);
    put64(d, at + 40, p.memsz);
    put64(d, at + 48, p.align);
}

fn shdrs(d: &[u8], shoff: usize, shnum: usize) -> Result<Vec<Shdr>, PatchError> {
    table_fits(d, shoff, shnum, SHDR)?;
    (0..shnum)
        .map(|i| {
            let at = shoff + i * SHDR;
            Ok(Shdr {
                at,
                name: u32_at(d, at)?,
                sh_type: u32_at(d, at + 4)?,
                flags: u64_at(d, at + 8)?,
                addr: u64_at(d, at + 16)?,
                offset: u64_at(d, at + 24)?,
                size: u64_at(d, at + 32)?,
            })
        })
        .collect()
}

fn section_name<'a>(d: &'a [u8], strtab: &Shdr, name: u32) -> &'a [u8] {
    let start = strtab.offset.saturating_add(name as u64) as usize;
    let end = strtab.offset.saturating_add(strtab.size) as usize;
    let bytes = d.get(start..end.min(d.len())).unwrap_or(&[]);
    &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())]
}

/// The header tables of a 64-bit little-endian file, checked to lie in it, and the index of the
/// section named `name`. `Ok(Err(why))` where the file is not one this module edits.
struct Headers {
    ph: Vec<Phdr>,
    sh: Vec<Shdr>,
    shoff: u64,
    machine: u16,
    /// The index of the section asked for.
    si: usize,
}

fn read_headers(data: &[u8], name: &str) -> Result<Result<Headers, String>, PatchError> {
    if data.len() < EHDR || data[..4] != crate::ELF_MAGIC {
        return Err(PatchError::Layout("not an ELF file".into()));
    }
    if data[4] != 2 || data[5] != 1 {
        return Ok(Err("only 64-bit little-endian files are edited".into()));
    }
    let phoff = u64_at(data, 32)? as usize;
    let shoff = u64_at(data, 40)?;
    let (phentsize, phnum) = (u16_at(data, 54)? as usize, u16_at(data, 56)? as usize);
    let (shentsize, shnum, shstrndx) = (
        u16_at(data, 58)? as usize,
        u16_at(data, 60)? as usize,
        u16_at(data, 62)? as usize,
    );
    if phentsize != PHDR || shentsize != SHDR || shnum == 0 || shstrndx >= shnum {
        return Ok(Err(
            "the header tables are not the standard 64-bit ones".into()
        ));
    }
    let ph = phdrs(data, phoff, phnum)?;
    let sh = shdrs(data, shoff as usize, shnum)?;
    // Every table this reads or compares must lie in the file, and every address it adds to
    // stay far from overflowing (real files use addresses below 2^47).
    let len = data.len() as u64;
    let within = |off: u64, size: u64| off.checked_add(size).is_some_and(|e| e <= len);
    const ADDRESSES: u64 = 1 << 62;
    let addressable = |a: u64, size: u64| a.checked_add(size).is_some_and(|e| e < ADDRESSES);
    if ph
        .iter()
        .any(|p| p.p_type == PT_LOAD && !within(p.offset, p.filesz))
        || sh
            .iter()
            .any(|s| s.sh_type != SHT_NOBITS && s.sh_type != 0 && !within(s.offset, s.size))
    {
        return Err(PatchError::Layout(
            "a segment or section runs past the end of the file".into(),
        ));
    }
    if ph
        .iter()
        .any(|p| !addressable(p.vaddr, p.memsz.max(p.filesz)) || !addressable(p.paddr, p.memsz))
        || sh.iter().any(|s| !addressable(s.addr, s.size))
    {
        return Err(PatchError::Layout(
            "a segment or section lies at addresses no loader maps".into(),
        ));
    }
    let strtab = sh[shstrndx];
    let Some(si) = sh
        .iter()
        .position(|s| section_name(data, &strtab, s.name) == name.as_bytes())
    else {
        return Ok(Err(format!("no section {name}")));
    };
    Ok(Ok(Headers {
        ph,
        sh,
        shoff,
        machine: u16_at(data, 18)?,
        si,
    }))
}

fn kept<B>(why: impl Into<String>) -> Result<Cut<B>, PatchError> {
    Ok(Cut::Kept(why.into()))
}

/// Takes the bytes of section `name` after its first `keep` out of the file, keeping every
/// virtual address (the module documentation says how). Those bytes must be zero (slim's
/// removed entries); a layout that does not allow the cut gives [`Cut::Kept`] with the reason,
/// and a contradictory one an error. Only 64-bit little-endian files are handled.
pub fn cut_section_tail(data: &[u8], name: &str, keep: u64) -> Result<Cut, PatchError> {
    cut_section_tail_into(data, name, keep, |len| Ok(vec![0; len as usize]))
}

/// [`cut_section_tail`] writing the new file into a buffer `make(len)` gives (`len` bytes, which
/// the cut fills): one in a temporary file keeps a large file's two copies out of memory.
pub fn cut_section_tail_into<B: std::ops::DerefMut<Target = [u8]>>(
    data: &[u8],
    name: &str,
    keep: u64,
    make: impl FnOnce(u64) -> std::io::Result<B>,
) -> Result<Cut<B>, PatchError> {
    Ok(match cut(data, name, keep, Some(make))? {
        Cut::Done { data, bytes } => Cut::Done {
            data: data.expect("made with an output"),
            bytes,
        },
        Cut::Kept(why) => Cut::Kept(why),
    })
}

/// Whether [`cut_section_tail`] could cut the section after its first `keep` bytes, by its layout
/// alone (the bytes there need not be zero yet): how many bytes it would take out, or why not.
pub fn can_cut(data: &[u8], name: &str, keep: u64) -> Result<Result<u64, String>, PatchError> {
    Ok(match cut(data, name, keep, None::<MakeVec>)? {
        Cut::Done { bytes, .. } => Ok(bytes),
        Cut::Kept(why) => Err(why),
    })
}

/// What makes a new file in memory.
type MakeVec = fn(u64) -> std::io::Result<Vec<u8>>;

/// The cut, or only its layout check (no new file) when there is no `make` for the output.
fn cut<B: std::ops::DerefMut<Target = [u8]>>(
    data: &[u8],
    name: &str,
    keep: u64,
    make: Option<impl FnOnce(u64) -> std::io::Result<B>>,
) -> Result<Cut<Option<B>>, PatchError> {
    let layout_only = make.is_none();
    let Headers {
        ph, sh, shoff, si, ..
    } = match read_headers(data, name)? {
        Ok(h) => h,
        Err(why) => return kept(why),
    };
    let phnum = ph.len();
    let strtab = sh[u16_at(data, 62)? as usize];
    let s = sh[si];
    if s.sh_type == SHT_NOBITS || s.flags & SHF_ALLOC == 0 || keep > s.size {
        return kept(format!("{name} is not loaded file data"));
    }
    let end = s
        .offset
        .checked_add(s.size)
        .filter(|&e| e <= data.len() as u64);
    let Some(end) = end else {
        return Err(PatchError::Layout(format!(
            "{name} runs past the end of the file"
        )));
    };
    if !layout_only
        && data[(s.offset + keep) as usize..end as usize]
            .iter()
            .any(|&b| b != 0)
    {
        return Err(PatchError::Layout(format!(
            "{name} holds data after the {keep} bytes to keep"
        )));
    }
    // The segment that loads it.
    let Some(li) = ph.iter().position(|p| {
        p.p_type == PT_LOAD && p.offset <= s.offset && end <= p.offset.saturating_add(p.filesz)
    }) else {
        return kept(format!("{name} is not inside one loaded segment"));
    };
    let l = ph[li];
    if l.vaddr.wrapping_sub(l.offset) != s.addr.wrapping_sub(s.offset)
        || !l.align.is_power_of_two()
        || (l.vaddr.wrapping_sub(l.offset)) % l.align.min(GRANULE) != 0
    {
        return kept("the segment's addresses and offsets are not congruent");
    }
    let is_program = ph.iter().any(|p| p.p_type == PT_INTERP);
    let has_phdr = ph.iter().any(|p| p.p_type == PT_PHDR);
    let first_load = ph.iter().position(|p| p.p_type == PT_LOAD) == Some(li);
    if is_program && !has_phdr && !first_load {
        // The kernel finds a program's header table relative to its first segment.
        return kept("a program whose header table would leave its first segment");
    }
    let off_of = |v: u64| l.offset + (v - l.vaddr);
    // The new header table goes right after the kept bytes; the first part ends at the next
    // granule after it, the second starts at the granule where the hole ends.
    let table = (s.addr + keep).next_multiple_of(8);
    let table_len = ((phnum + 1) * PHDR) as u64;
    let a_end = (table + table_len).next_multiple_of(GRANULE);
    let b_start = (s.addr + s.size) / GRANULE * GRANULE;
    if b_start < a_end + GRANULE {
        return kept(format!(
            "less than {} KiB of {name} to take out",
            GRANULE >> 10
        ));
    }
    let (cut_from, cut_to) = (off_of(a_end), off_of(b_start));
    let delta = cut_to - cut_from;
    // Nothing else may live in the hole: no other section, no other segment, no header table.
    for (i, o) in sh.iter().enumerate() {
        let o_end = o
            .offset
            .saturating_add(if o.sh_type == SHT_NOBITS { 0 } else { o.size });
        let overlaps = o.offset < cut_to && o_end > cut_from;
        let inside = o.offset > cut_from && o.offset < cut_to;
        if i != si && o.sh_type != 0 && (overlaps || inside) {
            return kept(format!(
                "section {} lies in the hole",
                String::from_utf8_lossy(section_name(data, &strtab, o.name))
            ));
        }
        if i != si && o.flags & SHF_ALLOC != 0 && o.addr < b_start && o.addr + o.size > a_end {
            return kept("another section's addresses fall in the hole");
        }
    }
    for (i, p) in ph.iter().enumerate() {
        let p_end = p.offset.saturating_add(p.filesz);
        if i != li && p.filesz > 0 && p.offset < cut_to && p_end > cut_from {
            return kept("another segment lies in the hole");
        }
        if i != li && p.p_type == PT_LOAD && p.vaddr < b_start && p.vaddr + p.memsz > a_end {
            return kept("another segment's addresses fall in the hole");
        }
    }
    if shoff >= cut_from && shoff < cut_to {
        return kept("the section header table lies in the hole");
    }
    let table_off = off_of(table) as usize;
    let Some(make) = make else {
        return Ok(Cut::Done {
            data: None,
            bytes: delta,
        });
    };
    if data[table_off..table_off + table_len as usize]
        .iter()
        .any(|&b| b != 0)
    {
        return Err(PatchError::Layout(format!(
            "{name}'s tail is not zero where the header table goes"
        )));
    }

    // The new file: everything before the hole, everything after it.
    let mut out = make(data.len() as u64 - delta).map_err(PatchError::Output)?;
    let cut_from_at = cut_from as usize;
    out[..cut_from_at].copy_from_slice(&data[..cut_from_at]);
    out[cut_from_at..].copy_from_slice(&data[cut_to as usize..]);
    let moved = |off: u64| if off >= cut_to { off - delta } else { off };

    // Each part keeps the segment's permissions that one of its sections needs: the part after
    // the hole often holds no code (`.eh_frame` after `.nv_fatbin` in a text segment).
    let flags_for = |lo: u64, hi: u64| {
        let within = |o: &&Shdr| o.flags & SHF_ALLOC != 0 && o.addr >= lo && o.addr < hi;
        let has = |f: u64| sh.iter().filter(within).any(|o| o.flags & f != 0);
        let mut flags = l.flags;
        if !has(SHF_EXECINSTR) {
            flags &= !PF_X;
        }
        if !has(SHF_WRITE) {
            flags &= !PF_W;
        }
        flags
    };
    // Program headers: the segment in two, the others where their bytes went.
    let mut new_ph = Vec::with_capacity(phnum + 1);
    for (i, p) in ph.iter().enumerate() {
        if i == li {
            new_ph.push(Phdr {
                filesz: a_end - l.vaddr,
                memsz: a_end - l.vaddr,
                flags: flags_for(l.vaddr, a_end),
                ..l
            });
            let skip = b_start - l.vaddr;
            new_ph.push(Phdr {
                offset: cut_to - delta,
                vaddr: b_start,
                paddr: l.paddr.wrapping_add(skip),
                filesz: l.filesz - skip,
                memsz: l.memsz - skip,
                align: l.align.min(GRANULE),
                flags: flags_for(b_start, l.vaddr + l.memsz),
                ..l
            });
            continue;
        }
        let mut q = *p;
        if q.p_type == PT_PHDR {
            q.offset = table_off as u64;
            q.vaddr = table;
            q.paddr = table;
            q.filesz = table_len;
            q.memsz = table_len;
        } else if q.offset >= cut_to {
            q.offset -= delta;
            if q.p_type == PT_LOAD {
                // Moved by whole granules, not by its own (larger) alignment.
                q.align = q.align.min(GRANULE);
            }
        }
        new_ph.push(q);
    }
    for (i, p) in new_ph.iter().enumerate() {
        write_phdr(&mut out, table_off + i * PHDR, p);
    }
    put64(&mut out, 32, table_off as u64);
    out[56..58].copy_from_slice(&((phnum + 1) as u16).to_le_bytes());
    put64(&mut out, 40, moved(shoff));
    let new_shoff = moved(shoff) as usize;
    for (i, o) in sh.iter().enumerate() {
        let at = new_shoff + (o.at - shoff as usize);
        if i == si {
            put64(&mut out, at + 32, keep);
        }
        put64(&mut out, at + 24, moved(o.offset));
    }
    verify(
        data,
        &out,
        &ph,
        &sh,
        si,
        keep,
        (a_end, b_start),
        (table, table_len),
    )?;
    Ok(Cut::Done {
        data: Some(out),
        bytes: delta,
    })
}

/// The cut file maps every byte the input mapped, outside the hole and the new table, at the same
/// address with the same content, and every section holds what it held.
#[allow(clippy::too_many_arguments)]
fn verify(
    before: &[u8],
    after: &[u8],
    ph: &[Phdr],
    sh: &[Shdr],
    si: usize,
    keep: u64,
    hole: (u64, u64),
    table: (u64, u64),
) -> Result<(), PatchError> {
    let bad = |what: String| Err(PatchError::Verify(what));
    let old_shoff = u64_at(before, 40)? as usize;
    let table_at = ph
        .iter()
        .find(|p| p.p_type == PT_LOAD && table.0 >= p.vaddr && table.0 < p.vaddr + p.filesz)
        .map_or(0, |p| (p.offset + (table.0 - p.vaddr)) as usize);
    let mut rewritten = [
        (0, EHDR),
        (table_at, table_at + table.1 as usize),
        (old_shoff, old_shoff + sh.len() * SHDR),
    ];
    rewritten.sort();
    let phoff = u64_at(after, 32)? as usize;
    let phnum = u16_at(after, 56)? as usize;
    let new_ph = phdrs(after, phoff, phnum)?;
    let loads: Vec<&Phdr> = new_ph.iter().filter(|p| p.p_type == PT_LOAD).collect();
    if loads
        .windows(2)
        .any(|w| w[0].vaddr + w[0].memsz > w[1].vaddr)
    {
        return bad("the segments overlap or are out of order".into());
    }
    // Where an address's byte is in the new file.
    let file_at = |v: u64| {
        loads
            .iter()
            .find(|p| v >= p.vaddr && v < p.vaddr + p.filesz)
            .map(|p| (p.offset + (v - p.vaddr)) as usize)
    };
    for p in ph.iter().filter(|p| p.p_type == PT_LOAD) {
        // Walk the input's mapped bytes in runs that one new segment holds.
        let mut v = p.vaddr;
        let v_end = p.vaddr + p.filesz;
        while v < v_end {
            if v >= hole.0 && v < hole.1 {
                v = hole.1;
                continue;
            }
            let Some(at) = file_at(v) else {
                return bad(format!("address {v:#x} is no longer loaded from the file"));
            };
            let seg = loads
                .iter()
                .find(|q| v >= q.vaddr && v < q.vaddr + q.filesz)
                .unwrap();
            let mut run_end = (seg.vaddr + seg.filesz).min(v_end);
            if v < hole.0 {
                run_end = run_end.min(hole.0);
            }
            let from = (p.offset + (v - p.vaddr)) as usize;
            let len = (run_end - v) as usize;
            // The ELF header is loaded too; its table offsets and count changed (checked below).
            // Bytes this rewrote on purpose, if loaded: the ELF header, the new program header
            // table, the section header table (patchelf leaves it inside a segment); each is
            // checked on its own.
            let mut same = true;
            let mut pos = from;
            for &(x0, x1) in &rewritten {
                let (x0, x1) = (x0.clamp(from, from + len), x1.clamp(from, from + len));
                if x0 > pos {
                    same &= before[pos..x0] == after[at + (pos - from)..at + (x0 - from)];
                }
                pos = pos.max(x1);
            }
            same &= before[pos..from + len] == after[at + (pos - from)..at + len];
            if !same {
                return bad(format!("the bytes loaded at {v:#x} changed"));
            }
            v = run_end;
        }
    }
    let unchanged = |r: std::ops::Range<usize>| before[r.clone()] == after[r];
    if !(unchanged(0..32) && unchanged(48..56) && unchanged(58..EHDR)) {
        return bad("the ELF header changed beyond its table offsets".into());
    }
    let shoff = u64_at(after, 40)? as usize;
    for (i, o) in sh.iter().enumerate() {
        if o.sh_type == SHT_NOBITS || o.sh_type == 0 {
            continue;
        }
        let at = shoff + i * SHDR;
        let (off, size) = (
            u64_at(after, at + 24)? as usize,
            u64_at(after, at + 32)? as usize,
        );
        let want_size = if i == si {
            keep as usize
        } else {
            o.size as usize
        };
        let old = &before[o.offset as usize..o.offset as usize + want_size];
        if size != want_size || after.get(off..off + size) != Some(old) {
            return bad(format!("section {i} does not hold what it held"));
        }
    }
    Ok(())
}

const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;
const SHT_DYNSYM: u32 = 11;
const SHT_RELR: u32 = 19;
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;

/// Points every pointer into section `name` that the file's relocations, RELR table and symbol
/// tables hold at a new address: `moves` maps an old address to its new one (and the new size a
/// symbol there gets). Used to pack `.nv_fatbin`'s containers together before
/// [`cut_section_tail`]: the containers move down, and their wrappers' relocations with them.
/// Nothing is written unless every pointer into the section is at an address `moves` names and
/// every moved address is pointed at by something found (else [`Cut::Kept`]-style refusal as
/// `Err(reason)`): a pointer the file holds without a relocation (a program linked at fixed
/// addresses) cannot be found, so a container nobody is seen to point at never moves.
pub fn retarget(
    data: &mut [u8],
    name: &str,
    moves: &std::collections::BTreeMap<u64, (u64, u64)>,
) -> Result<Result<(), String>, PatchError> {
    let Headers {
        ph,
        sh,
        machine,
        si,
        ..
    } = match read_headers(data, name)? {
        Ok(h) => h,
        Err(why) => return Ok(Err(why)),
    };
    let relative = match machine {
        EM_X86_64 => 8,
        EM_AARCH64 => 1027,
        _ => return Ok(Err("relocations of this machine are not read".into())),
    };
    let s = sh[si];
    let inside = |v: u64| v >= s.addr && v < s.addr + s.size;
    // The file offset of a loaded address.
    let file_of = |v: u64| {
        ph.iter()
            .find(|p| {
                p.p_type == PT_LOAD
                    && v >= p.vaddr
                    && v.checked_add(8).is_some_and(|e| e <= p.vaddr + p.filesz)
            })
            .map(|p| (p.offset + (v - p.vaddr)) as usize)
    };
    let mut writes: Vec<(usize, u64)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    // Every pointer found: where it is (file offset of the 8 bytes), what it points at.
    let mut point = |at: Option<usize>, target: u64, writes: &mut Vec<(usize, u64)>| {
        let Some(&(new, _)) = moves.get(&target) else {
            return Err(format!(
                "a pointer into {name} at {target:#x} is not to a container"
            ));
        };
        seen.insert(target);
        if let Some(at) = at {
            writes.push((at, new));
        }
        Ok(new)
    };
    for r in sh.iter().filter(|r| r.sh_type == SHT_RELA) {
        let entries = (r.size / 24) as usize;
        for k in 0..entries {
            let at = r.offset as usize + k * 24;
            let (offset, info, addend) = (
                u64_at(data, at)?,
                u64_at(data, at + 8)?,
                u64_at(data, at + 16)?,
            );
            let (sym, rtype) = (info >> 32, info & 0xffff_ffff);
            if sym != 0 {
                // Against a symbol: one defined in the section would move under it.
                let table = sh.get(u32_at(data, r.at + 40)? as usize);
                let shndx = match table {
                    Some(t) => u16_at(data, t.offset as usize + sym as usize * 24 + 6)? as usize,
                    None => 0,
                };
                if shndx == si {
                    return Ok(Err(format!("a relocation against a symbol in {name}")));
                }
                continue;
            }
            if !inside(addend) {
                continue;
            }
            if rtype != relative {
                return Ok(Err(format!(
                    "a relocation of type {rtype} points into {name}"
                )));
            }
            // The value in place, where the linker also wrote it.
            let slot = file_of(offset).filter(|&f| u64_at(data, f).ok() == Some(addend));
            match point(slot, addend, &mut writes) {
                Ok(new) => writes.push((at + 16, new)),
                Err(why) => return Ok(Err(why)),
            }
        }
    }
    for r in sh.iter().filter(|r| r.sh_type == SHT_RELR) {
        // RELR: an address, then bitmaps of the words after it that hold addresses too.
        let mut base = 0u64;
        for k in 0..(r.size / 8) as usize {
            let word = u64_at(data, r.offset as usize + k * 8)?;
            let mut slots = Vec::new();
            if word & 1 == 0 {
                slots.push(word);
                base = word.wrapping_add(8);
            } else {
                for bit in 1..64 {
                    if word >> bit & 1 == 1 {
                        slots.push(base.wrapping_add((bit - 1) * 8));
                    }
                }
                base = base.wrapping_add(63 * 8);
            }
            for a in slots {
                let Some(f) = file_of(a) else { continue };
                let v = u64_at(data, f)?;
                if inside(v) {
                    if let Err(why) = point(Some(f), v, &mut writes) {
                        return Ok(Err(why));
                    }
                }
            }
        }
    }
    for t in sh
        .iter()
        .filter(|t| t.sh_type == SHT_SYMTAB || t.sh_type == SHT_DYNSYM)
    {
        for k in 0..(t.size / 24) as usize {
            let at = t.offset as usize + k * 24;
            let shndx = u16_at(data, at + 6)? as usize;
            let value = u64_at(data, at + 8)?;
            if shndx != si || value == s.addr && moves.get(&value).is_some_and(|m| m.0 == value) {
                continue;
            }
            if t.sh_type == SHT_DYNSYM {
                return Ok(Err(format!("{name} exports a symbol")));
            }
            match moves.get(&value) {
                Some(&(new, size)) => {
                    writes.push((at + 8, new));
                    let old_size = u64_at(data, at + 16)?;
                    if old_size != 0 {
                        writes.push((at + 16, size));
                    }
                }
                None => return Ok(Err(format!("a symbol points into {name} at {value:#x}"))),
            }
        }
    }
    if let Some((old, _)) = moves
        .iter()
        .find(|(o, (n, _))| o != &n && !seen.contains(*o))
    {
        return Ok(Err(format!(
            "nothing the file's relocations hold points at {old:#x}: it cannot move"
        )));
    }
    for (at, v) in writes {
        put64(data, at, v);
    }
    Ok(Ok(()))
}

/// Packs the pieces of section `name` (each `(offset in the section, length)`, in order, not
/// overlapping) together at its start, each 8-aligned, the first where it is; the pointers to each
/// piece's start move with it ([`retarget`]) and the bytes after the last become zero. Returns
/// the length the section's data now ends at, or why nothing was moved (`Ok(Err)`, the file
/// untouched).
pub fn pack_section(
    data: &mut [u8],
    name: &str,
    pieces: &[(u64, u64)],
) -> Result<Result<u64, String>, PatchError> {
    let s = match read_headers(data, name)? {
        Ok(h) => h.sh[h.si],
        Err(why) => return Ok(Err(why)),
    };
    if s.sh_type == SHT_NOBITS || s.offset.saturating_add(s.size) > data.len() as u64 {
        return Err(PatchError::Layout(format!("{name} is not in the file")));
    }
    let Some(&(first, _)) = pieces.first() else {
        return Ok(Ok(0));
    };
    let mut moves = std::collections::BTreeMap::new();
    let mut placed = Vec::with_capacity(pieces.len());
    let mut at = first;
    let mut prev_end = 0;
    for &(off, len) in pieces {
        if off < prev_end || off.saturating_add(len) > s.size {
            return Err(PatchError::Layout(format!(
                "{name}: pieces overlap or run past it"
            )));
        }
        prev_end = off + len;
        moves.insert(s.addr + off, (s.addr + at, len));
        placed.push((off, at, len));
        at = (at + len).next_multiple_of(8);
    }
    let end = placed.last().map_or(0, |&(_, new, len)| new + len);
    if placed.iter().all(|&(old, new, _)| old == new) {
        return Ok(Ok(end));
    }
    // What each piece holds, to check after the move.
    let base = s.offset as usize;
    let saved: Vec<Vec<u8>> = placed
        .iter()
        .map(|&(old, _, len)| data[base + old as usize..base + (old + len) as usize].to_vec())
        .collect();
    if let Err(why) = retarget(data, name, &moves)? {
        return Ok(Err(why));
    }
    // Down the section in order: a piece never moves up, so none overwrites one still to move.
    for &(old, new, len) in &placed {
        let (old, new, len) = (base + old as usize, base + new as usize, len as usize);
        data.copy_within(old..old + len, new);
    }
    let sec_end = base + s.size as usize;
    data[base + end as usize..sec_end].fill(0);
    // Zero the padding between packed pieces too, as the linker left it.
    for w in placed.windows(2) {
        let (gap_from, gap_to) = (w[0].1 + w[0].2, w[1].1);
        data[base + gap_from as usize..base + gap_to as usize].fill(0);
    }
    for (&(_, new, len), bytes) in placed.iter().zip(&saved) {
        let at = base + new as usize;
        if data[at..at + len as usize] != bytes[..] {
            return Err(PatchError::Verify(format!(
                "{name}: a packed piece changed"
            )));
        }
    }
    Ok(Ok(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_it_does_not_handle() {
        assert!(cut_section_tail(b"not elf at all, really not", ".x", 0).is_err());
        let mut elf32 = vec![0u8; 64];
        elf32[..4].copy_from_slice(&crate::ELF_MAGIC);
        elf32[4] = 1;
        elf32[5] = 1;
        assert!(matches!(
            cut_section_tail(&elf32, ".nv_fatbin", 0),
            Ok(Cut::Kept(_))
        ));
    }
}
