//! Link-time stub libraries: a shared object that exports a list of function names under a
//! SONAME, with code that only returns.
//!
//! The CUDA toolkit ships `lib64/stubs/libcuda.so` so programs link `-lcuda` on machines without
//! a driver; the CUDA wheels do not. A stub is written here with `object`'s low-level ELF writer
//! rather than by running a C compiler, so `cudist toolkit` needs no compiler and its output is the
//! same bytes on every machine. No crate writes a linkable shared object from a symbol list, hence
//! this module. The stub is complete enough for ld.so too (hash tables, `PT_DYNAMIC`), but it is
//! meant for the linker only: every function returns at once.

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::write::StreamingBuffer;
use object::Endianness;

use crate::ElfError;

/// Bytes reserved per function: each symbol gets its own slot so no two functions overlap.
const SLOT: u64 = 16;
const PAGE: u64 = 0x1000;

/// The code of one slot: return, then traps.
fn slot_code(machine: u16) -> Result<Vec<u8>, ElfError> {
    let mut code = match machine {
        // ret; int3 ...
        elf::EM_X86_64 => vec![0xc3],
        // ret (0xd65f03c0, little endian)
        elf::EM_AARCH64 => vec![0xc0, 0x03, 0x5f, 0xd6],
        // blr (0x4e800020, little endian for ppc64le)
        elf::EM_PPC64 => vec![0x20, 0x00, 0x80, 0x4e],
        m => {
            return Err(ElfError::Invalid(format!(
                "no stub code for machine {}",
                crate::machine_name(m)
            )))
        }
    };
    let fill = if machine == elf::EM_X86_64 { 0xcc } else { 0 };
    code.resize(SLOT as usize, fill);
    Ok(code)
}

/// Writes a 64-bit little-endian shared object named `soname` that defines every name in
/// `functions` as a global function. Names are deduplicated; order does not matter.
pub fn write_stub(soname: &str, functions: &[String], machine: u16) -> Result<Vec<u8>, ElfError> {
    let code = slot_code(machine)?;
    let mut names: Vec<&[u8]> = functions.iter().map(|s| s.as_bytes()).collect();
    names.sort_unstable();
    names.dedup();
    if names.iter().any(|n| n.is_empty() || n.contains(&0)) {
        return Err(ElfError::Invalid(
            "a stub symbol name is empty or holds a NUL byte".into(),
        ));
    }
    let count = names.len() as u32;
    // The GNU hash table wants the symbols grouped by bucket.
    let bucket_count = (count / 4).max(1);
    names.sort_by_key(|n| (elf::gnu_hash(n) % bucket_count, *n));
    let bloom_count = (count / 32).next_power_of_two().max(1);
    let bloom_shift = 6;

    let mut out = Vec::new();
    let mut buf = StreamingBuffer::new(&mut out);
    let mut w = Writer::new(Endianness::Little, true, &mut buf);

    // Layout: [ELF header, program headers, .hash, .gnu.hash, .dynsym, .dynstr, .text] in the
    // first (read+execute) load segment; [.dynamic] in the second (read+write), page-aligned so
    // file offset and address stay equal; then the section headers.
    w.reserve_file_header();
    const PHDRS: u32 = 4;
    w.reserve_program_headers(PHDRS);
    let soname_id = w.add_dynamic_string(soname.as_bytes());
    let name_ids: Vec<_> = names.iter().map(|n| w.add_dynamic_string(n)).collect();

    w.reserve_null_section_index();
    let _hash_index = w.reserve_hash_section_index();
    let _gnu_hash_index = w.reserve_gnu_hash_section_index();
    let _dynsym_index = w.reserve_dynsym_section_index();
    let _dynstr_index = w.reserve_dynstr_section_index();
    let text_name = w.add_section_name(b".text");
    let text_index = w.reserve_section_index();
    let _dynamic_index = w.reserve_dynamic_section_index();
    w.reserve_shstrtab_section_index();

    w.reserve_null_dynamic_symbol_index();
    for _ in &names {
        w.reserve_dynamic_symbol_index();
    }
    let hash_off = w.reserve_hash(bucket_count, count + 1) as u64;
    let gnu_hash_off = w.reserve_gnu_hash(bloom_count, bucket_count, count) as u64;
    let dynsym_off = w.reserve_dynsym() as u64;
    let dynstr_off = w.reserve_dynstr() as u64;
    let text_off = w.reserve(code.len() * names.len(), 16) as u64;
    let text_end = text_off + SLOT * count as u64;
    w.reserve_until(text_end.next_multiple_of(PAGE) as usize);
    const DYNAMICS: usize = 8;
    let dynamic_off = w.reserve_dynamic(DYNAMICS) as u64;
    let dynamic_size = w.reserved_len() as u64 - dynamic_off;
    w.reserve_shstrtab();
    w.reserve_section_headers();

    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_DYN,
        e_machine: machine,
        e_entry: 0,
        e_flags: 0,
    })
    .map_err(|e| ElfError::Invalid(format!("writing the stub header: {e}")))?;
    w.write_align_program_headers();
    // The stub is mapped at its file offsets: every segment has vaddr = paddr = offset and
    // memsz = filesz.
    let segment = |p_type, p_flags, offset: u64, size: u64, p_align| ProgramHeader {
        p_type,
        p_flags,
        p_offset: offset,
        p_vaddr: offset,
        p_paddr: offset,
        p_filesz: size,
        p_memsz: size,
        p_align,
    };
    w.write_program_header(&segment(
        elf::PT_LOAD,
        elf::PF_R | elf::PF_X,
        0,
        text_end,
        PAGE,
    ));
    w.write_program_header(&segment(
        elf::PT_LOAD,
        elf::PF_R | elf::PF_W,
        dynamic_off,
        dynamic_size,
        PAGE,
    ));
    w.write_program_header(&segment(
        elf::PT_DYNAMIC,
        elf::PF_R | elf::PF_W,
        dynamic_off,
        dynamic_size,
        8,
    ));
    w.write_program_header(&segment(elf::PT_GNU_STACK, elf::PF_R | elf::PF_W, 0, 0, 16));

    let hashes: Vec<u32> = names.iter().map(|n| elf::hash(n)).collect();
    let gnu_hashes: Vec<u32> = names.iter().map(|n| elf::gnu_hash(n)).collect();
    w.write_hash(bucket_count, count + 1, |i| {
        (i > 0).then(|| hashes[i as usize - 1])
    });
    w.write_gnu_hash(1, bloom_shift, bloom_count, bucket_count, count, |i| {
        gnu_hashes[i as usize]
    });
    w.write_null_dynamic_symbol();
    for (i, id) in name_ids.iter().enumerate() {
        w.write_dynamic_symbol(&Sym {
            name: Some(*id),
            section: Some(text_index),
            st_info: (elf::STB_GLOBAL << 4) | elf::STT_FUNC,
            st_other: elf::STV_DEFAULT,
            st_shndx: 0,
            st_value: text_off + SLOT * i as u64,
            st_size: SLOT,
        });
    }
    w.write_dynstr();
    w.write_align(16);
    for _ in &names {
        w.write(&code);
    }
    w.pad_until(dynamic_off as usize);
    w.write_align_dynamic();
    w.write_dynamic_string(elf::DT_SONAME, soname_id);
    w.write_dynamic(elf::DT_HASH, hash_off);
    w.write_dynamic(elf::DT_GNU_HASH, gnu_hash_off);
    w.write_dynamic(elf::DT_SYMTAB, dynsym_off);
    w.write_dynamic(elf::DT_STRTAB, dynstr_off);
    let strsz = w.dynstr_len() as u64;
    w.write_dynamic(elf::DT_STRSZ, strsz);
    w.write_dynamic(
        elf::DT_SYMENT,
        std::mem::size_of::<elf::Sym64<Endianness>>() as u64,
    );
    w.write_dynamic(elf::DT_NULL, 0);
    w.write_shstrtab();

    w.write_null_section_header();
    w.write_hash_section_header(hash_off);
    w.write_gnu_hash_section_header(gnu_hash_off);
    w.write_dynsym_section_header(dynsym_off, 1);
    w.write_dynstr_section_header(dynstr_off);
    w.write_section_header(&SectionHeader {
        name: Some(text_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: (elf::SHF_ALLOC | elf::SHF_EXECINSTR).into(),
        sh_addr: text_off,
        sh_offset: text_off,
        sh_size: SLOT * count as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 16,
        sh_entsize: 0,
    });
    w.write_dynamic_section_header(dynamic_off);
    w.write_shstrtab_section_header();
    debug_assert_eq!(w.reserved_len(), w.len());
    drop(w);
    buf.result()
        .map_err(|e| ElfError::Invalid(format!("writing the stub: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElfFile;

    #[test]
    fn stub_reads_back_with_soname_and_every_symbol() {
        let names: Vec<String> = (0..700).map(|i| format!("cuFunc{i}_v2")).collect();
        let data = write_stub("libcuda.so.1", &names, elf::EM_X86_64).unwrap();
        let f = ElfFile::parse(&data).unwrap();
        assert_eq!(f.soname.as_deref(), Some("libcuda.so.1"));
        let mut got: Vec<&str> = f.defined_dynamic().map(|s| s.name.as_str()).collect();
        got.sort_unstable();
        let mut want: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        want.sort_unstable();
        assert_eq!(got, want);
        // Deterministic: same input, same bytes, whatever the input order.
        let mut rev = names.clone();
        rev.reverse();
        assert_eq!(
            data,
            write_stub("libcuda.so.1", &rev, elf::EM_X86_64).unwrap()
        );
    }

    #[test]
    fn bad_names_and_machines_are_refused() {
        assert!(write_stub("libx.so.1", &["".into()], elf::EM_X86_64).is_err());
        assert!(write_stub("libx.so.1", &["a".into()], elf::EM_386).is_err());
    }
}
