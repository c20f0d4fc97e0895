//! The dynamic-linking view of ELF files: what a loader and a packager need to know.
//!
//! [`ElfFile::parse`] reads, through the `object` crate, the file's class and machine, its dynamic
//! section (SONAME, NEEDED, RPATH, RUNPATH), its section table (names, sizes, offsets) and its
//! dynamic symbols with their GNU symbol versions. Files whose section headers were stripped are
//! read through the program headers (`PT_DYNAMIC`, `PT_LOAD`) instead, as ld.so reads them.
//!
//! [`patch::apply`] edits the dynamic section (RPATH/RUNPATH, NEEDED, SONAME): in place when the new
//! strings fit, else by a layout change; every result is verified before it is returned.
//! [`cut::cut_section_tail`] takes the zero tail of a loaded section out of the file (what `cudist
//! slim` removed), every virtual address kept.

pub mod cut;
pub mod ldso;
pub mod loader;
pub mod patch;
pub mod stub;

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader, Sym};
use object::read::StringTable;
use object::Endianness;
use serde::Serialize;

/// The four bytes every ELF file starts with.
pub const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];

/// Whether `data` starts like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.len() >= 4 && data[..4] == ELF_MAGIC
}

/// The packer whose self-unpacking stub an ELF file is, where its bytes say so: UPX ends the
/// file with its pack header (`UPX!`) and leaves no section headers (polars-fastembed-cuda
/// 0.1.17's libraries). Such a file's real dynamic section, symbol versions and device code are
/// inside a compressed image only its stub unpacks, when it loads. (Hand-written: no crate reads
/// packers' trailers; the two checks are UPX's own layout, `p_lx_elf.cpp`.)
pub fn packed_by(data: &[u8]) -> Option<&'static str> {
    if !is_elf(data) || data.len() < 64 {
        return None;
    }
    let little = data[5] == 1;
    let u16_at = |o: usize| {
        let b = [data[o], data[o + 1]];
        if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    // e_shnum: at 0x3c in a 64-bit header, 0x30 in a 32-bit one.
    let shnum = match data[4] {
        2 => u16_at(0x3c),
        1 => u16_at(0x30),
        _ => return None,
    };
    let tail = &data[data.len().saturating_sub(64)..];
    (shnum == 0 && tail.windows(4).any(|w| w == b"UPX!")).then_some("UPX")
}

/// Errors raised while reading an ELF file.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file (no \\x7fELF magic)")]
    NotElf,
    #[error("malformed ELF: {what}")]
    Malformed {
        what: &'static str,
        #[source]
        source: object::Error,
    },
    #[error("malformed ELF: {0}")]
    Invalid(String),
}

type Result<T> = std::result::Result<T, ElfError>;

fn malformed(what: &'static str) -> impl FnOnce(object::Error) -> ElfError {
    move |source| ElfError::Malformed { what, source }
}

/// The ELF object type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ElfKind {
    /// `ET_EXEC`: a position-dependent executable.
    Executable,
    /// `ET_DYN`: a shared library, extension module or PIE executable.
    Shared,
    /// `ET_REL`: an object file.
    Relocatable,
    Other,
}

/// One section header, as far as cudist uses it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Section {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
}

impl Section {
    /// Whether the section occupies bytes in the file.
    pub fn in_file(&self) -> bool {
        self.sh_type != elf::SHT_NOBITS && self.sh_type != elf::SHT_NULL
    }
    /// Whether the section holds executable code.
    pub fn is_code(&self) -> bool {
        self.flags & elf::SHF_EXECINSTR as u64 != 0
    }
}

/// One dynamic symbol.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct DynSymbol {
    pub name: String,
    /// Defined in this file (not `SHN_UNDEF`).
    pub defined: bool,
    pub weak: bool,
    /// `st_type`: `STT_NOTYPE` 0, `STT_OBJECT` 1, `STT_FUNC` 2, …
    pub kind: u8,
    /// GNU symbol version (`GLIBC_2.17`, `libcudart.so.12`), if any.
    pub version: Option<String>,
}

impl DynSymbol {
    /// Whether it is an import without a symbol version that the file needs (not weak): what
    /// any loaded object may define, glibc's newer symbols among them.
    pub fn is_unversioned_import(&self) -> bool {
        !self.defined && !self.weak && self.version.is_none()
    }
}

/// Everything cudist reads from one ELF file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ElfFile {
    /// 32 or 64.
    pub class: u8,
    pub big_endian: bool,
    pub machine: u16,
    /// `e_flags` (the ARM EABI version and float ABI live here).
    pub flags: u32,
    pub kind: ElfKind,
    /// The program interpreter (`PT_INTERP`: `/lib64/ld-linux-x86-64.so.2`, `/lib/ld-musl-x86_64.so.1`).
    pub interpreter: Option<String>,
    /// The x86 ISA level the file needs (`GNU_PROPERTY_X86_ISA_1_NEEDED` in `.note.gnu.property`):
    /// bit 1 x86-64-v2, bit 2 v3, bit 3 v4.
    pub x86_isa_needed: Option<u32>,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// DT_RPATH split on `:` (empty when absent).
    pub rpath: Vec<String>,
    /// DT_RUNPATH split on `:` (empty when absent).
    pub runpath: Vec<String>,
    pub has_dynamic: bool,
    /// Libraries named by symbol-version requirements (`.gnu.version_r`): ld.so requires each
    /// to be among the NEEDED entries.
    pub verneed_files: Vec<String>,
    /// Every version each of those libraries is required at: (`libc.so.6`, `GLIBC_2.17`).
    pub verneed: Vec<(String, String)>,
    /// The versions the file defines (`.gnu.version_d`: `GLIBCXX_3.4.30`, …), its own base
    /// name among them: what ld.so checks each requirement on it against.
    pub verdef: Vec<String>,
    pub sections: Vec<Section>,
    pub dynamic_symbols: Vec<DynSymbol>,
}

impl ElfFile {
    /// Reads an ELF file from memory. Never panics on malformed input.
    pub fn parse(data: &[u8]) -> Result<ElfFile> {
        if !is_elf(data) {
            return Err(ElfError::NotElf);
        }
        match data.get(4) {
            Some(&elf::ELFCLASS64) => parse_generic::<elf::FileHeader64<Endianness>>(data),
            Some(&elf::ELFCLASS32) => parse_generic::<elf::FileHeader32<Endianness>>(data),
            other => Err(ElfError::Invalid(format!("unknown ELF class {other:?}"))),
        }
    }

    /// The machine name (`x86_64`, `aarch64`, …) for reports.
    pub fn machine_name(&self) -> String {
        machine_name(self.machine)
    }

    /// The architecture as platform tags name it (PEP 600 and 656: `x86_64`, `i686`, `aarch64`,
    /// `armv7l`, `ppc64le`, `ppc64`, `s390x`, `riscv64`, `loongarch64`), from the machine, class,
    /// byte order and (for ARM) the EABI flags, as auditwheel reads them. 32-bit ARM is `armv7l`
    /// only with EABI 5 and the hard-float ABI; an error says why a file has no such name (no
    /// manylinux or musllinux policy covers it).
    pub fn platform_arch(&self) -> std::result::Result<&'static str, String> {
        const EF_ARM_EABIMASK: u32 = 0xff00_0000;
        const EF_ARM_EABI_VER5: u32 = 0x0500_0000;
        const EF_ARM_ABI_FLOAT_HARD: u32 = 0x400;
        Ok(match (self.machine, self.class, self.big_endian) {
            (elf::EM_386, 32, false) => "i686",
            (elf::EM_X86_64, 64, false) => "x86_64",
            (elf::EM_PPC64, 64, false) => "ppc64le",
            (elf::EM_PPC64, 64, true) => "ppc64",
            (elf::EM_RISCV, 64, false) => "riscv64",
            (elf::EM_AARCH64, 64, false) => "aarch64",
            (elf::EM_S390, 64, true) => "s390x",
            (elf::EM_LOONGARCH, 64, false) => "loongarch64",
            (elf::EM_ARM, 32, false) => {
                if self.flags & EF_ARM_EABIMASK != EF_ARM_EABI_VER5 {
                    return Err(format!(
                        "32-bit ARM with EABI version {} (armv7l needs EABI 5)",
                        self.flags >> 24
                    ));
                }
                if self.flags & EF_ARM_ABI_FLOAT_HARD == 0 {
                    return Err(
                        "32-bit ARM with the soft-float ABI (armv5l, armv6l soft-float): armv7l \
                         needs hard-float"
                            .into(),
                    );
                }
                "armv7l"
            }
            _ => {
                let name = match self.machine {
                    elf::EM_MIPS => "MIPS".to_string(),
                    elf::EM_PPC => "32-bit PowerPC".to_string(),
                    elf::EM_SPARCV9 => "SPARC V9".to_string(),
                    elf::EM_SPARC => "SPARC".to_string(),
                    _ => self.machine_name(),
                };
                return Err(format!(
                    "{name} ({}-bit, {}-endian)",
                    self.class,
                    if self.big_endian { "big" } else { "little" }
                ));
            }
        })
    }

    /// The x86-64 micro-architecture level beyond the baseline that the file says it needs
    /// (`x86_64_v2`, `_v3`, `_v4`, from `GNU_PROPERTY_X86_ISA_1_NEEDED`); `Ok(None)` for the
    /// baseline or no note, an error for bits no level defines.
    pub fn x86_level(&self) -> std::result::Result<Option<&'static str>, String> {
        let Some(bits) = self.x86_isa_needed else {
            return Ok(None);
        };
        let above = bits & !1;
        Ok(if above & 8 != 0 {
            Some("x86_64_v4")
        } else if above & 4 != 0 {
            Some("x86_64_v3")
        } else if above & 2 != 0 {
            Some("x86_64_v2")
        } else if above != 0 {
            return Err(format!("unknown x86-64 ISA level bits {bits:#x}"));
        } else {
            None
        })
    }

    /// The section with this name.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The bytes of a section inside `data` (the same bytes [`ElfFile::parse`] read).
    pub fn section_data<'a>(&self, data: &'a [u8], section: &Section) -> Result<&'a [u8]> {
        if !section.in_file() {
            return Ok(&[]);
        }
        let start = usize::try_from(section.offset).ok();
        let end = section
            .offset
            .checked_add(section.size)
            .and_then(|e| usize::try_from(e).ok());
        match (start, end) {
            (Some(s), Some(e)) if e <= data.len() => Ok(&data[s..e]),
            _ => Err(ElfError::Invalid(format!(
                "section {} ({} bytes at {:#x}) lies outside the file ({} bytes)",
                section.name,
                section.size,
                section.offset,
                data.len()
            ))),
        }
    }

    /// Names of the dynamic symbols this file defines.
    pub fn defined_dynamic(&self) -> impl Iterator<Item = &DynSymbol> {
        self.dynamic_symbols.iter().filter(|s| s.defined)
    }

    /// Names of the dynamic symbols this file imports.
    pub fn undefined_dynamic(&self) -> impl Iterator<Item = &DynSymbol> {
        self.dynamic_symbols.iter().filter(|s| !s.defined)
    }
}

/// Machine names for the architectures wheels are built for.
pub fn machine_name(machine: u16) -> String {
    match machine {
        elf::EM_X86_64 => "x86_64".into(),
        elf::EM_AARCH64 => "aarch64".into(),
        elf::EM_PPC64 => "ppc64le".into(),
        elf::EM_386 => "i686".into(),
        elf::EM_ARM => "arm".into(),
        elf::EM_S390 => "s390x".into(),
        elf::EM_RISCV => "riscv64".into(),
        elf::EM_CUDA => "cuda".into(),
        m => format!("machine {m}"),
    }
}

/// The `e_machine` value of the machine this program runs on (its ELF class is 64-bit on every
/// architecture cudist is built for).
pub fn host_machine() -> u16 {
    match std::env::consts::ARCH {
        "aarch64" => elf::EM_AARCH64,
        "powerpc64" => elf::EM_PPC64,
        _ => elf::EM_X86_64,
    }
}

/// Maps a file read-only, for the parsers here: only the pages they touch are read, so a 500 MB
/// library costs its headers and tables, not its size.
pub fn map_file(path: &std::path::Path) -> std::io::Result<memmap2::Mmap> {
    // Only a regular file: a FIFO would block the open, a device never end.
    let f = cudist_fs::open_regular(path).map_err(cudist_fs::ReadError::into_io)?;
    // SAFETY: a private read-only mapping of a file cudist never writes. A file truncated by
    // another process while mapped can raise SIGBUS, the risk every mmap-based reader (ld.so
    // included) accepts.
    unsafe { memmap2::Mmap::map(&f) }
}

/// The `e_machine` value of a machine name as [`machine_name`] prints it.
pub fn machine_from_name(name: &str) -> Option<u16> {
    [
        elf::EM_X86_64,
        elf::EM_AARCH64,
        elf::EM_PPC64,
        elf::EM_386,
        elf::EM_ARM,
        elf::EM_S390,
        elf::EM_RISCV,
        elf::EM_CUDA,
    ]
    .into_iter()
    .find(|&m| machine_name(m) == name)
}

/// Looks for symbols this file *defines* among `names`, in `.symtab` and `.dynsym`; returns the
/// names found. This is the evidence for statically linked libraries.
pub fn defined_symbols_among(data: &[u8], names: &[&str]) -> Result<Vec<String>> {
    Ok(defined_symbols_where(data, |n| names.contains(&n))?
        .into_iter()
        .map(|(n, _)| n)
        .collect())
}

/// The symbols defined in `.symtab` or `.dynsym` whose names `wanted` accepts, with their sizes
/// (`st_size`: 0 for a label without a size, such as a generated trampoline), sorted by name and
/// each once (the larger size when the tables differ).
pub fn defined_symbols_where(
    data: &[u8],
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<(String, u64)>> {
    if !is_elf(data) {
        return Err(ElfError::NotElf);
    }
    match data.get(4) {
        Some(&elf::ELFCLASS64) => find_defined::<elf::FileHeader64<Endianness>>(data, &wanted),
        Some(&elf::ELFCLASS32) => find_defined::<elf::FileHeader32<Endianness>>(data, &wanted),
        other => Err(ElfError::Invalid(format!("unknown ELF class {other:?}"))),
    }
}

fn find_defined<E: FileHeader<Endian = Endianness>>(
    data: &[u8],
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, u64)>> {
    let header = E::parse(data).map_err(malformed("file header"))?;
    let endian = header.endian().map_err(malformed("endianness"))?;
    let sections = header
        .sections(endian, data)
        .map_err(malformed("section headers"))?;
    let mut found: std::collections::BTreeMap<String, u64> = Default::default();
    for sh_type in [elf::SHT_SYMTAB, elf::SHT_DYNSYM] {
        let table = sections
            .symbols(endian, data, sh_type)
            .map_err(malformed("symbol table"))?;
        let strings = table.strings();
        for sym in table.symbols() {
            if sym.st_shndx(endian) == elf::SHN_UNDEF {
                continue;
            }
            if let Ok(name) = sym.name(endian, strings) {
                if let Ok(name) = std::str::from_utf8(name) {
                    if wanted(name) {
                        let size: u64 = sym.st_size(endian).into();
                        let at = found.entry(name.to_string()).or_default();
                        *at = (*at).max(size);
                    }
                }
            }
        }
    }
    Ok(found.into_iter().collect())
}

fn parse_generic<E: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<ElfFile> {
    let header = E::parse(data).map_err(malformed("file header"))?;
    let endian = header.endian().map_err(malformed("endianness"))?;
    let kind = match header.e_type(endian) {
        elf::ET_EXEC => ElfKind::Executable,
        elf::ET_DYN => ElfKind::Shared,
        elf::ET_REL => ElfKind::Relocatable,
        _ => ElfKind::Other,
    };
    let table = header
        .sections(endian, data)
        .map_err(malformed("section headers"))?;
    let mut sections = Vec::with_capacity(table.len());
    for s in table.iter() {
        let name = table
            .section_name(endian, s)
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        sections.push(Section {
            name,
            sh_type: s.sh_type(endian),
            flags: s.sh_flags(endian).into(),
            offset: s.sh_offset(endian).into(),
            size: s.sh_size(endian).into(),
        });
    }

    let mut out = ElfFile {
        class: if header.is_type_64() { 64 } else { 32 },
        big_endian: endian == Endianness::Big,
        machine: header.e_machine(endian),
        flags: header.e_flags(endian),
        kind,
        interpreter: None,
        x86_isa_needed: None,
        soname: None,
        needed: Vec::new(),
        rpath: Vec::new(),
        runpath: Vec::new(),
        has_dynamic: false,
        verneed_files: Vec::new(),
        verneed: Vec::new(),
        verdef: Vec::new(),
        sections,
        dynamic_symbols: Vec::new(),
    };

    // The dynamic section: through the section table when there is one, else PT_DYNAMIC.
    let dynamic = table
        .dynamic(endian, data)
        .map_err(malformed("dynamic section"))?;
    match dynamic {
        Some((dyns, link)) => {
            let strings = table
                .strings(endian, data, link)
                .map_err(malformed("dynamic string table"))?;
            read_dynamic::<E>(endian, dyns, strings, &mut out)?;
        }
        None if table.is_empty() => {
            if let Some((dyns, strings)) = dynamic_from_segments::<E>(header, endian, data)? {
                read_dynamic::<E>(endian, dyns, strings, &mut out)?;
            }
        }
        None => {}
    }

    if let Ok(Some((mut needs, link))) = table.gnu_verneed(endian, data) {
        if let Ok(strings) = table.strings(endian, data, link) {
            while let Ok(Some((need, mut aux))) = needs.next() {
                if let Ok(name) = need.file(endian, strings) {
                    let file = String::from_utf8_lossy(name).into_owned();
                    while let Ok(Some(a)) = aux.next() {
                        if let Ok(v) = a.name(endian, strings) {
                            out.verneed
                                .push((file.clone(), String::from_utf8_lossy(v).into_owned()));
                        }
                    }
                    out.verneed_files.push(file);
                }
            }
        }
    }

    if let Ok(Some((mut defs, link))) = table.gnu_verdef(endian, data) {
        if let Ok(strings) = table.strings(endian, data, link) {
            while let Ok(Some((_, mut aux))) = defs.next() {
                // The first auxiliary entry names the version; the others its parents.
                if let Ok(Some(a)) = aux.next() {
                    if let Ok(v) = a.name(endian, strings) {
                        out.verdef.push(String::from_utf8_lossy(v).into_owned());
                    }
                }
            }
        }
    }

    // The interpreter and the x86 ISA level, from the program headers and the property note.
    if let Ok(phdrs) = header.program_headers(endian, data) {
        for ph in phdrs {
            if ph.p_type(endian) == elf::PT_INTERP {
                if let Ok(bytes) = ph.data(endian, data) {
                    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
                    out.interpreter = Some(String::from_utf8_lossy(&bytes[..end]).into_owned());
                }
            }
        }
    }
    if out.machine == elf::EM_X86_64 {
        out.x86_isa_needed = x86_isa_needed::<E>(header, &table, endian, data);
    }

    // Dynamic symbols with versions.
    let dynsym = table
        .symbols(endian, data, elf::SHT_DYNSYM)
        .map_err(malformed("dynamic symbol table"))?;
    let versions = table
        .versions(endian, data)
        .map_err(malformed("symbol versions"))?;
    let strings = dynsym.strings();
    for (i, sym) in dynsym.symbols().iter().enumerate().skip(1) {
        let name = match sym.name(endian, strings) {
            Ok(n) if !n.is_empty() => match std::str::from_utf8(n) {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(n).into_owned(),
            },
            _ => continue,
        };
        let version = versions.as_ref().and_then(|v| {
            let idx = v.version_index(endian, object::SymbolIndex(i));
            v.version(idx)
                .ok()
                .flatten()
                .map(|ver| String::from_utf8_lossy(ver.name()).into_owned())
        });
        out.dynamic_symbols.push(DynSymbol {
            name,
            defined: sym.st_shndx(endian) != elf::SHN_UNDEF,
            weak: sym.st_bind() == elf::STB_WEAK,
            kind: sym.st_type(),
            version,
        });
    }
    Ok(out)
}

/// `GNU_PROPERTY_X86_ISA_1_NEEDED` from the `NT_GNU_PROPERTY_TYPE_0` notes: the ISA levels the
/// code needs (what `-march=x86-64-v3` records). The notes come from the section table, or, for a
/// file read without one, from its `PT_NOTE` segments, as ld.so reads them. Hand-written: object's
/// note reader stops at the note; the property array inside it is GNU's format (type, size, data
/// padded to the word).
fn x86_isa_needed<'d, E: FileHeader<Endian = Endianness>>(
    header: &'d E,
    table: &object::read::elf::SectionTable<'d, E, &'d [u8]>,
    endian: Endianness,
    data: &'d [u8],
) -> Option<u32> {
    const GNU_PROPERTY_X86_ISA_1_NEEDED: u32 = 0xc000_8002;
    let align = if header.is_type_64() { 8 } else { 4 };
    let mut all = Vec::new();
    if table.is_empty() {
        for p in header.program_headers(endian, data).ok()? {
            if p.p_type(endian) == elf::PT_NOTE {
                if let Ok(Some(n)) = p.notes(endian, data) {
                    all.push(n);
                }
            }
        }
    } else {
        for s in table.iter() {
            if s.sh_type(endian) == elf::SHT_NOTE {
                if let Ok(Some(n)) = s.notes(endian, data) {
                    all.push(n);
                }
            }
        }
    }
    for mut notes in all {
        while let Ok(Some(note)) = notes.next() {
            if note.name() != b"GNU" || note.n_type(endian) != elf::NT_GNU_PROPERTY_TYPE_0 {
                continue;
            }
            let desc = note.desc();
            let mut at = 0usize;
            while at + 8 <= desc.len() {
                let word = |i: usize| {
                    let b: [u8; 4] = desc[i..i + 4].try_into().unwrap_or_default();
                    if endian == Endianness::Big {
                        u32::from_be_bytes(b)
                    } else {
                        u32::from_le_bytes(b)
                    }
                };
                let (kind, size) = (word(at), word(at + 4) as usize);
                if kind == GNU_PROPERTY_X86_ISA_1_NEEDED && size == 4 && at + 12 <= desc.len() {
                    return Some(word(at + 8));
                }
                at += 8 + size.div_ceil(align) * align;
            }
        }
    }
    None
}

fn read_dynamic<E: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    dyns: &[E::Dyn],
    strings: StringTable<'_>,
    out: &mut ElfFile,
) -> Result<()> {
    out.has_dynamic = true;
    for d in dyns {
        let tag = d.tag32(endian);
        if tag == Some(elf::DT_NULL) {
            break;
        }
        let Some(tag) = tag else { continue };
        if !matches!(
            tag,
            elf::DT_NEEDED | elf::DT_SONAME | elf::DT_RPATH | elf::DT_RUNPATH
        ) {
            continue;
        }
        let value = d
            .string(endian, strings)
            .map_err(malformed("dynamic string"))?;
        let value = String::from_utf8_lossy(value).into_owned();
        match tag {
            elf::DT_NEEDED => out.needed.push(value),
            elf::DT_SONAME => out.soname = Some(value),
            elf::DT_RPATH => out.rpath.extend(split_path(&value)),
            elf::DT_RUNPATH => out.runpath.extend(split_path(&value)),
            _ => unreachable!(),
        }
    }
    Ok(())
}

/// Splits a search path on `:`; empty entries (which ld.so reads as the current directory) are kept
/// as `""` so that reports can flag them.
fn split_path(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    s.split(':').map(str::to_string).collect()
}

type SegmentDynamic<'a, E> = (&'a [<E as FileHeader>::Dyn], StringTable<'a>);

/// Reads the dynamic entries the way ld.so does when there are no section headers: `PT_DYNAMIC`
/// gives the entries, `DT_STRTAB`/`DT_STRSZ` (virtual addresses) give the strings.
fn dynamic_from_segments<'a, E: FileHeader<Endian = Endianness>>(
    header: &'a E,
    endian: Endianness,
    data: &'a [u8],
) -> Result<Option<SegmentDynamic<'a, E>>> {
    let phdrs = header
        .program_headers(endian, data)
        .map_err(malformed("program headers"))?;
    let mut dyns = None;
    for ph in phdrs {
        if let Some(d) = ph
            .dynamic(endian, data)
            .map_err(malformed("PT_DYNAMIC segment"))?
        {
            dyns = Some(d);
        }
    }
    let Some(dyns) = dyns else { return Ok(None) };
    let (mut strtab, mut strsz) = (None, None);
    for d in dyns {
        match d.tag32(endian) {
            Some(elf::DT_STRTAB) => strtab = Some(d.d_val(endian).into()),
            Some(elf::DT_STRSZ) => strsz = Some(d.d_val(endian).into()),
            _ => {}
        }
    }
    let (Some(addr), Some(size)): (Option<u64>, Option<u64>) = (strtab, strsz) else {
        return Err(ElfError::Invalid(
            "PT_DYNAMIC has no DT_STRTAB/DT_STRSZ".into(),
        ));
    };
    for ph in phdrs {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let vaddr: u64 = ph.p_vaddr(endian).into();
        let filesz: u64 = ph.p_filesz(endian).into();
        let offset: u64 = ph.p_offset(endian).into();
        if addr >= vaddr && addr.saturating_add(size) <= vaddr.saturating_add(filesz) {
            let start = offset + (addr - vaddr);
            let end = start.saturating_add(size);
            if end > data.len() as u64 {
                break;
            }
            let strings = StringTable::new(data, start, end);
            return Ok(Some((dyns, strings)));
        }
    }
    Err(ElfError::Invalid(
        "DT_STRTAB does not lie in any PT_LOAD segment".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(exe).unwrap();
        let f = ElfFile::parse(&data).unwrap();
        assert_eq!(f.class, 64);
        assert!(f.has_dynamic);
        assert!(
            f.needed.iter().any(|n| n.starts_with("libc.so")),
            "{:?}",
            f.needed
        );
        assert!(f.section(".text").is_some());
        assert!(f.undefined_dynamic().any(|s| s
            .version
            .as_deref()
            .is_some_and(|v| v.starts_with("GLIBC_"))));
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert!(matches!(ElfFile::parse(b"hello"), Err(ElfError::NotElf)));
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(exe).unwrap();
        for cut in [5, 16, 63, 64, 200, 4096] {
            assert!(ElfFile::parse(&data[..cut]).is_err(), "cut at {cut}");
        }
        // A cut past the headers but before the section table: must fail, not panic.
        let cut = data.len() - 100;
        assert!(ElfFile::parse(&data[..cut]).is_err());
    }

    #[test]
    fn fuzz_like_mutations_never_panic() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(exe).unwrap();
        let head = &data[..data.len().min(1 << 16)];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..2000 {
            let mut d = head.to_vec();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % 256.min(d.len());
                d[i] = (x >> 40) as u8;
            }
            let _ = ElfFile::parse(&d);
            let _ = defined_symbols_among(&d, &["main"]);
        }
    }
}

/// What the front of an ELF file says about the rest, for a reader that gets the file front to
/// back and may stop early (a wheel member fetched by range requests, `cudist select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Front {
    /// 32 or 64.
    pub class: u8,
    pub machine: u16,
    pub kind: ElfKind,
    /// Where the bytes a loader maps end: the furthest `PT_LOAD` file extent. Device code the
    /// CUDA runtime registers lies before it; debug information and the section table after.
    pub loaded_end: u64,
    /// Where the dynamic section (`PT_DYNAMIC`) ends, if the file has one: a prefix this long
    /// holds NEEDED, SONAME and the search paths ([`parse_front`]).
    pub dynamic_end: Option<u64>,
}

/// Reads [`Front`] from the first bytes of an ELF file: `Ok(None)` while `prefix` is too short to
/// hold the file header and program headers.
pub fn front(prefix: &[u8]) -> Result<Option<Front>> {
    if !is_elf(prefix) {
        return Err(ElfError::NotElf);
    }
    match prefix.get(4) {
        None => Ok(None),
        Some(&elf::ELFCLASS64) => front_generic::<elf::FileHeader64<Endianness>>(prefix),
        Some(&elf::ELFCLASS32) => front_generic::<elf::FileHeader32<Endianness>>(prefix),
        Some(other) => Err(ElfError::Invalid(format!("unknown ELF class {other}"))),
    }
}

fn front_generic<E: FileHeader<Endian = Endianness>>(prefix: &[u8]) -> Result<Option<Front>> {
    if prefix.len() < std::mem::size_of::<E>() {
        return Ok(None);
    }
    let header = E::parse(prefix).map_err(malformed("file header"))?;
    let endian = header.endian().map_err(malformed("endianness"))?;
    let phoff: u64 = header.e_phoff(endian).into();
    let table = (header.e_phnum(endian) as u64) * (header.e_phentsize(endian) as u64);
    if phoff.saturating_add(table) > prefix.len() as u64 {
        return Ok(None);
    }
    let phdrs = header
        .program_headers(endian, prefix)
        .map_err(malformed("program headers"))?;
    let mut out = Front {
        class: if header.is_type_64() { 64 } else { 32 },
        machine: header.e_machine(endian),
        kind: match header.e_type(endian) {
            elf::ET_EXEC => ElfKind::Executable,
            elf::ET_DYN => ElfKind::Shared,
            elf::ET_REL => ElfKind::Relocatable,
            _ => ElfKind::Other,
        },
        loaded_end: 0,
        dynamic_end: None,
    };
    for p in phdrs {
        let end = Into::<u64>::into(p.p_offset(endian))
            .checked_add(p.p_filesz(endian).into())
            .ok_or_else(|| ElfError::Invalid("a segment ends beyond 2^64".into()))?;
        match p.p_type(endian) {
            elf::PT_LOAD => out.loaded_end = out.loaded_end.max(end),
            elf::PT_DYNAMIC => out.dynamic_end = Some(end),
            _ => {}
        }
    }
    Ok(Some(out))
}

/// Reads an ELF file from its front alone: `prefix` reaches at least [`Front::dynamic_end`], and
/// the section table (past the loaded bytes) is not there, so it is read the way ld.so reads a
/// file, through its program headers: NEEDED, SONAME and the search paths, no sections. The
/// section-table fields of `prefix`'s file header are cleared for that.
pub fn parse_front(prefix: &mut [u8]) -> Result<ElfFile> {
    // e_shoff, e_shentsize, e_shnum, e_shstrndx by class.
    let (shoff, shoff_len, rest) = match prefix.get(4) {
        Some(&elf::ELFCLASS64) => (0x28, 8, 0x3A),
        Some(&elf::ELFCLASS32) => (0x20, 4, 0x2E),
        _ => return ElfFile::parse(prefix),
    };
    if prefix.len() < rest + 6 {
        return Err(ElfError::Invalid("the file header is cut short".into()));
    }
    prefix[shoff..shoff + shoff_len].fill(0);
    prefix[rest..rest + 6].fill(0);
    ElfFile::parse(prefix)
}
