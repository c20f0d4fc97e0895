//! One ELF file analysed: what it needs (classified against the catalog), its search paths, its
//! device code and sizes, and the evidence of CUDA libraries linked into it statically.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cudist_catalog::{Catalog, LibraryMatch, SonameClass};
use cudist_elf::ElfFile;

use crate::error::Error;
use crate::model::*;
use crate::platform;

/// One ELF file found in an artifact, analysed.
pub struct Analysed {
    /// What the model reports of the file.
    pub report: ElfReport,
    /// Catalog library ids whose marker symbols the file defines.
    pub(crate) defined_markers: BTreeMap<String, Vec<String>>,
    /// Catalog library ids whose characteristic strings the file contains, together with their
    /// name table (the number of its names found).
    pub(crate) strings_found: BTreeMap<String, QuotedStrings>,
    /// The CUDA major assumed for SONAMEs several majors share.
    pub(crate) hint: Option<u32>,
    /// The catalog library this file is itself (vendored or, in its provider's wheel, shipped).
    pub(crate) own_library: Option<String>,
    /// For an extension module, the dotted module names in its read-only data
    /// ([`crate::loads::dotted_names`]).
    pub(crate) mentions: Vec<String>,
    /// The NVIDIA driver's libraries the file opens itself: it imports `dlopen` and names them
    /// in its read-only data (cupti-python's `libcuda.so.1`).
    pub(crate) driver_dlopens: Vec<String>,
    /// The file imports the CUDA runtime's registration entry point (`__cudaRegisterFatBinary`
    /// undefined): a library it loads provides the runtime, which is then not linked in
    /// (deepmd-kit's `libdeepmd_dyn_cudart.so` forwards it to a libcudart it opens itself).
    pub(crate) imports_runtime: bool,
}

/// A library's characteristic strings found in a file, with its table of names.
pub(crate) struct QuotedStrings {
    pub(crate) strings: Vec<String>,
    pub(crate) table_prefix: String,
    pub(crate) table_names: usize,
    /// What the table's names are (catalog `names`), where the catalog says.
    pub(crate) table_kind: Option<String>,
}

/// Catalog marker symbols, indexed for the static-linking check.
pub struct MarkerIndex {
    owner: HashMap<String, String>,
    /// (library id, string) pairs.
    strings: Vec<(String, String)>,
    /// The name table each library with `strings` keeps (without one, its strings are no evidence).
    name_tables: HashMap<String, cudist_catalog::NameTable>,
    /// Every symbol any manylinux policy blacklists.
    blacklisted: std::collections::HashSet<&'static str>,
}

impl MarkerIndex {
    /// Indexes the marker symbols and strings of every catalog library.
    pub fn new(catalog: &Catalog) -> MarkerIndex {
        let mut owner = HashMap::new();
        let mut strings = Vec::new();
        let mut name_tables = HashMap::new();
        for lib in &catalog.libraries {
            if let Some(t) = &lib.static_name_table {
                name_tables.insert(lib.id.clone(), t.clone());
            }
            for m in &lib.static_markers {
                owner.insert(m.clone(), lib.id.clone());
            }
            for s in &lib.static_strings {
                strings.push((lib.id.clone(), s.clone()));
            }
        }
        let blacklisted = cudist_catalog::manylinux::policies()
            .iter()
            .flat_map(|p| p.blacklist.values().flatten().map(String::as_str))
            .collect();
        MarkerIndex {
            owner,
            strings,
            name_tables,
            blacklisted,
        }
    }
}

/// The number of distinct NUL-terminated C strings in `sections` that are `prefix`, an ASCII
/// capital letter, then identifier characters (`cuMemAlloc_v2` for prefix `cu`): the shape of a
/// table of entry-point names a library resolves with dlsym or cuGetProcAddress.
fn count_c_names(sections: &[&[u8]], prefix: &[u8]) -> usize {
    let mut names: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    for bytes in sections {
        // The last piece has no terminating NUL inside the section: not a C string.
        let mut pieces = bytes.split(|b| *b == 0);
        let _ = pieces.next_back();
        for s in pieces {
            if s.len() > prefix.len()
                && s.len() <= 128
                && s.starts_with(prefix)
                && s[prefix.len()].is_ascii_uppercase()
                && s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                names.insert(s);
            }
        }
    }
    names.len()
}

/// Analyses one ELF file. `path` is its path inside the artifact.
pub fn analyse_elf(
    path: &str,
    data: &[u8],
    catalog: &Catalog,
    markers: &MarkerIndex,
) -> Result<Analysed, Error> {
    let elf = ElfFile::parse(data).map_err(|source| Error::Elf {
        context: format!("{path}: cannot read ELF"),
        source,
    })?;

    let (device_code, fat_bytes) = crate::device::entries(path, &elf, data)?;

    let host_code: u64 = elf
        .sections
        .iter()
        .filter(|s| s.is_code() && s.in_file())
        .map(|s| s.size)
        .sum();
    let size = data.len() as u64;
    let sizes = ElfSizes {
        host_code,
        device_code: fat_bytes,
        other: size.saturating_sub(host_code + fat_bytes),
    };

    // Which catalog libraries' API entry points does this file define?
    // One pass over the symbol tables finds them and the trampoline tables of lazy loaders.
    let found = cudist_elf::defined_symbols_where(data, |n| {
        is_trampoline_table(n) || markers.owner.contains_key(n)
    })
    .map_err(|source| Error::Elf {
        context: format!("{path}: cannot read symbol tables"),
        source,
    })?;
    let mut defined_markers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut tables = Vec::new();
    for (sym, _) in found {
        match markers.owner.get(&sym) {
            Some(lib) => defined_markers.entry(lib.clone()).or_default().push(sym),
            None => tables.push(sym),
        }
    }
    // Characteristic strings in read-only data: these survive `strip`. Any program may quote a
    // library's messages (cudist's own catalog does), so they count only together with the table
    // of names that library's code resolves at run time (cudart: 400+ driver entry points).
    let mut rodata = Vec::new();
    for s in elf
        .sections
        .iter()
        .filter(|s| s.name.starts_with(".rodata"))
    {
        let bytes = elf.section_data(data, s).map_err(|source| Error::Elf {
            context: format!("{path}: section {}", s.name),
            source,
        })?;
        rodata.push(bytes);
    }
    let mut quoted: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (lib, needle) in &markers.strings {
        if rodata
            .iter()
            .any(|b| memchr::memmem::find(b, needle.as_bytes()).is_some())
        {
            quoted.entry(lib).or_default().push(needle.clone());
        }
    }
    let mut strings_found = BTreeMap::new();
    for (lib, strs) in quoted {
        let Some(table) = markers.name_tables.get(lib) else {
            continue;
        };
        let names = count_c_names(&rodata, table.prefix.as_bytes());
        if names >= table.min_names {
            strings_found.insert(
                lib.to_string(),
                QuotedStrings {
                    strings: strs,
                    table_prefix: table.prefix.clone(),
                    table_names: names,
                    table_kind: table.names.clone(),
                },
            );
        }
    }

    // An extension module's cimports, for the load tiers.
    let mentions = if elf
        .dynamic_symbols
        .iter()
        .any(|s| s.defined && s.name.starts_with("PyInit_"))
    {
        crate::loads::dotted_names(&rodata)
    } else {
        Vec::new()
    };

    let (lazy_loads, driver_dlopens) = lazy_loads(&elf, &tables, &rodata, catalog);
    let imports_runtime = imports_runtime(&elf);

    // Classified without a CUDA-major hint here; `assemble` refines it with the artifact's context.
    let needed = elf
        .needed
        .iter()
        .map(|n| classify_needed(n, catalog, None))
        .collect();

    Ok(Analysed {
        report: ElfReport {
            path: path.to_string(),
            size,
            class: elf.class,
            machine: elf.machine_name(),
            elf_type: elf.kind,
            soname: elf.soname.clone(),
            needed,
            rpath: elf.rpath.iter().map(|r| raw_entry(r)).collect(),
            runpath: elf.runpath.iter().map(|r| raw_entry(r)).collect(),
            static_cuda: Vec::new(),
            lazy_loads,
            symbol_floors: symbol_floors(&elf),
            unversioned_glibc: unversioned_glibc(&elf),
            // A weak reference is optional (Rust's std and much C++ probe for
            // __cxa_thread_atexit_impl at run time): auditwheel checks only strong imports.
            blacklisted_imports: elf
                .undefined_dynamic()
                .filter(|s| !s.weak && markers.blacklisted.contains(s.name.as_str()))
                .map(|s| s.name.clone())
                .collect(),
            // The versions the file requires, from its version-requirement table, leaving out the
            // dynamic loader's (as auditwheel does).
            symbol_versions: elf
                .verneed
                .iter()
                .filter(|(file, _)| !platform::is_loader(file))
                .map(|(_, v)| v.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            abi: platform::elf_abi(path, &elf),
            device_code,
            sizes,
            packed: cudist_elf::packed_by(data).map(String::from),
            vendored: None,
            tier: Default::default(),
            tier_reason: None,
            variant_cuda: None,
        },
        defined_markers,
        strings_found,
        hint: None,
        own_library: None,
        mentions,
        driver_dlopens,
        imports_runtime,
    })
}

/// An ELF file of which only the front was read ([`crate::open::scan_wheel_front`]): what its
/// dynamic section says when the read reached it (`elf`), the device code seen, its size. What
/// needs the whole file (symbols, sections, static-linking evidence) is left empty.
pub fn analyse_front(
    path: &str,
    size: u64,
    front: &cudist_elf::Front,
    elf: Option<&ElfFile>,
    device_code: Vec<DeviceEntry>,
    catalog: &Catalog,
) -> Analysed {
    let fat_bytes: u64 = device_code.iter().map(|d| d.stored_size).sum();
    let abi = match elf {
        Some(elf) => platform::elf_abi(path, elf),
        None => ElfAbi::default(),
    };
    Analysed {
        report: ElfReport {
            path: path.to_string(),
            size,
            class: front.class,
            machine: cudist_elf::machine_name(front.machine),
            elf_type: front.kind,
            soname: elf.and_then(|e| e.soname.clone()),
            needed: elf
                .map(|e| {
                    e.needed
                        .iter()
                        .map(|n| classify_needed(n, catalog, None))
                        .collect()
                })
                .unwrap_or_default(),
            rpath: elf
                .map(|e| e.rpath.iter().map(|r| raw_entry(r)).collect())
                .unwrap_or_default(),
            runpath: elf
                .map(|e| e.runpath.iter().map(|r| raw_entry(r)).collect())
                .unwrap_or_default(),
            static_cuda: Vec::new(),
            lazy_loads: Vec::new(),
            symbol_floors: Vec::new(),
            unversioned_glibc: elf.map(unversioned_glibc).unwrap_or_default(),
            symbol_versions: elf
                .map(|e| {
                    e.verneed
                        .iter()
                        .filter(|(file, _)| !platform::is_loader(file))
                        .map(|(_, v)| v.clone())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default(),
            blacklisted_imports: Vec::new(),
            abi,
            device_code,
            sizes: ElfSizes {
                host_code: 0,
                device_code: fat_bytes,
                other: size.saturating_sub(fat_bytes),
            },
            packed: None,
            vendored: None,
            tier: Default::default(),
            tier_reason: None,
            variant_cuda: None,
        },
        defined_markers: BTreeMap::new(),
        strings_found: BTreeMap::new(),
        hint: None,
        own_library: None,
        mentions: Vec::new(),
        driver_dlopens: Vec::new(),
        imports_runtime: elf.is_some_and(imports_runtime),
    }
}

/// The catalog library a trampoline table is named for: Implib.so calls the table of `libX.so.N`
/// `_libX_so_N_tramp_table` by default, and TSL/XLA name theirs `_X_tramp_table`
/// (`_cublas_tramp_table`), by the library rather than its file where the two differ
/// (`_nvshmem_tramp_table` for `libnvshmem_host.so.3`): the file's stem first, else the
/// library's name.
fn trampoline_library<'c>(
    symbol: &str,
    catalog: &'c Catalog,
) -> Option<&'c cudist_catalog::Library> {
    let name = symbol.strip_prefix('_')?.strip_suffix("_tramp_table")?;
    let name = name.strip_prefix("lib").unwrap_or(name);
    let name = match name.find("_so") {
        Some(at)
            if name[at + 3..]
                .chars()
                .all(|c| c == '_' || c.is_ascii_digit()) =>
        {
            &name[..at]
        }
        _ => name,
    };
    let stem = format!("lib{name}");
    catalog
        .libraries
        .iter()
        .find(|l| l.stem == stem)
        .or_else(|| {
            catalog
                .libraries
                .iter()
                .find(|l| l.id.eq_ignore_ascii_case(name))
        })
}

/// The CUDA libraries a file loads itself on the first call into them. Two shapes, both the
/// file's own code (the library is not in `DT_NEEDED`):
/// - a trampoline table (`_cublas_tramp_table`): generated stubs for every entry point that jump
///   through a table filled by dlopen and dlsym on the first call;
/// - dlsym stubs: the file imports `dlopen` and holds the library's SONAME (`libcublas.so.12`) or
///   linker name (`libcublas.so`) as a C string in its read-only data, to open it by.
///
/// Hand-written because no crate knows which libraries are CUDA's: the catalog does.
/// Which SONAME of a fallback chain (`libnvrtc.so.13`, `libnvrtc.so.12`) belongs to CUDA
/// `major` alone: the one a file of that major loads.
pub(crate) fn chain_link_of_major(
    chain: &[String],
    major: Option<u32>,
    catalog: &Catalog,
) -> Option<usize> {
    let m = major?;
    chain.iter().position(|s| catalog.majors_of(s) == [m])
}

pub(crate) fn lazy_loads(
    elf: &ElfFile,
    tables: &[String],
    rodata: &[&[u8]],
    catalog: &Catalog,
) -> (Vec<LazyLoad>, Vec<String>) {
    let mut drivers: Vec<String> = Vec::new();
    let needs = |id: &str| {
        elf.needed.iter().any(|n| match catalog.classify(n) {
            SonameClass::Toolkit(m) | SonameClass::External(m) => m.library.id == id,
            _ => false,
        })
    };
    let mut out: Vec<LazyLoad> = Vec::new();
    // The names a file writes for each library it opens, in the order found.
    let mut written: std::collections::HashMap<String, Vec<String>> = Default::default();
    for table in tables {
        let Some(lib) = trampoline_library(table, catalog) else {
            continue;
        };
        if needs(&lib.id) || out.iter().any(|l| l.library == lib.id) {
            continue;
        }
        out.push(LazyLoad {
            library: lib.id.clone(),
            soname: None,
            written: None,
            alternatives: Vec::new(),
            variables: Vec::new(),
            evidence: format!("trampoline table {table}: its entry points are stubs filled by dlopen on the first call"),
        });
    }
    let opens = elf
        .undefined_dynamic()
        .any(|s| s.name == "dlopen" || s.name == "dlmopen");
    // The names of environment variables it may read, where it reads any.
    let reads_env = elf
        .undefined_dynamic()
        .any(|s| s.name == "getenv" || s.name == "secure_getenv");
    let mut env_names: Vec<&str> = Vec::new();
    if opens {
        let mut seen: BTreeSet<&[u8]> = BTreeSet::new();
        for bytes in rodata {
            let mut pieces = bytes.split(|b| *b == 0);
            let _ = pieces.next_back();
            for s in pieces {
                if reads_env && env_names.len() < MAX_ENV_NAMES && is_env_name(s) {
                    env_names.extend(std::str::from_utf8(s).ok());
                }
                if s.len() < 7 || s.len() > 64 || !s.starts_with(b"lib") || !seen.insert(s) {
                    continue;
                }
                let Ok(name) = std::str::from_utf8(s) else {
                    continue;
                };
                let (lib, soname) = match catalog.classify(name) {
                    SonameClass::Toolkit(m) | SonameClass::External(m) => {
                        (m.library, Some(name.to_string()))
                    }
                    SonameClass::Driver(_) => {
                        if !elf.needed.iter().any(|n| n == name) {
                            drivers.push(name.to_string());
                        }
                        continue;
                    }
                    _ => match name.strip_suffix(".so") {
                        // A linker name: the stem of a catalog library.
                        Some(stem) => match catalog.libraries.iter().find(|l| l.stem == stem) {
                            Some(l) => (l, None),
                            // The driver's own linker name (drjit's `dlopen("libcuda.so")`):
                            // the driver is used, through a name only its development link
                            // gives.
                            None if catalog.driver_lib(&format!("{name}.1")).is_some() => {
                                if !drivers.iter().any(|d| d == name) {
                                    drivers.push(name.to_string());
                                }
                                continue;
                            }
                            None => continue,
                        },
                        None => continue,
                    },
                };
                if needs(&lib.id) {
                    continue;
                }
                match out.iter_mut().find(|l| l.library == lib.id) {
                    Some(l) => {
                        if let Some(so) = &soname {
                            if l.alternatives.is_empty() {
                                l.alternatives.extend(l.soname.clone());
                            }
                            if !l.alternatives.contains(so) {
                                l.alternatives.push(so.clone());
                            }
                        }
                        if l.soname.is_none() && soname.is_some() {
                            l.soname = soname;
                            l.written = Some(name.to_string());
                        }
                    }
                    None => out.push(LazyLoad {
                        library: lib.id.clone(),
                        soname,
                        written: Some(name.to_string()),
                        alternatives: Vec::new(),
                        variables: Vec::new(),
                        evidence: String::new(),
                    }),
                }
                // Every name it writes is said, the linker name it may try first too
                // (symmetrix tries `libnvrtc.so`, then `.13`, `.12`, `.11.2`).
                let names = written.entry(lib.id.clone()).or_default();
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    for l in out.iter_mut().filter(|l| l.evidence.is_empty()) {
        let names: Vec<String> = written
            .get(&l.library)
            .into_iter()
            .flatten()
            .map(|n| format!("{n:?}"))
            .collect();
        l.evidence = format!("imports dlopen and names {} to open", names.join(", "));
    }
    // A variable named for a library it opens is where a program hands it that library's path
    // (symmetrix's `SYMMETRIX_JIT_NVRTC_LIBRARY`): one of the words of its name is the library's
    // (`NVRTC`, or `LIBNVRTC`).
    for l in out.iter_mut() {
        let Some(stem) = catalog
            .libraries
            .iter()
            .find(|c| c.id == l.library)
            .map(|c| c.stem.to_ascii_uppercase())
        else {
            continue;
        };
        let short = stem.strip_prefix("LIB").unwrap_or(&stem).to_string();
        for v in &env_names {
            if v.split('_').any(|w| w == short || w == stem) && !l.variables.iter().any(|x| x == v)
            {
                l.variables.push(v.to_string());
            }
        }
        if !l.variables.is_empty() {
            l.evidence = format!(
                "{}, and reads {}, named for it: a path set there may be what it opens",
                l.evidence,
                l.variables.join(", ")
            );
        }
    }
    (out, drivers)
}

/// The most names of environment variables read from one file: a file nobody vetted can hold
/// any number of strings.
const MAX_ENV_NAMES: usize = 4096;

/// Whether a string can be the name of an environment variable a program sets for another:
/// capitals, digits and underscores, at least two words (`SYMMETRIX_JIT_NVRTC_LIBRARY`,
/// `CUDA_HOME`), at most 128 bytes.
fn is_env_name(s: &[u8]) -> bool {
    (4..=128).contains(&s.len())
        && s[0].is_ascii_uppercase()
        && s.contains(&b'_')
        && s.iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// Whether a file imports the CUDA runtime's registration entry point, strongly: its device
/// code is registered by a runtime another object provides.
fn imports_runtime(elf: &ElfFile) -> bool {
    elf.undefined_dynamic()
        .any(|s| !s.weak && s.name == "__cudaRegisterFatBinary")
}

/// Whether a symbol names a trampoline table (`_cublas_tramp_table`, `_libfoo_so_1_tramp_table`).
pub(crate) fn is_trampoline_table(name: &str) -> bool {
    name.starts_with('_') && name.ends_with("_tramp_table")
}

fn raw_entry(raw: &str) -> SearchPathEntry {
    SearchPathEntry {
        raw: raw.to_string(),
        expanded: String::new(),
        location: PathLocation::Unresolved,
        provided_by: Vec::new(),
    }
}

/// The model's reference to a catalog library matched by SONAME.
pub fn library_ref(m: &LibraryMatch<'_>) -> LibraryRef {
    LibraryRef {
        id: m.library.id.clone(),
        component: m.library.component.clone(),
        cuda_major: m.major.major,
        cuda_major_ambiguous: m.ambiguous,
        cuda_agnostic: m.library.cuda.len() > 1
            && m.major.pip.is_some()
            && m.library.cuda.iter().all(|c| c.pip == m.major.pip),
        soname_policy: m.major.policy.to_string(),
        pip: m.major.pip.clone(),
        pip_dir: m.major.pip_dir.clone(),
        conda: m.library.conda.clone(),
        toolkit_extra: m.library.toolkit_extra.clone(),
        older_release: false,
    }
}

/// The reference to a CUDA library of a release the catalog does not list: no wheel, and the
/// conda package of that era (the whole toolkit in one).
pub fn older_library_ref(o: &cudist_catalog::OlderRelease<'_>) -> LibraryRef {
    LibraryRef {
        id: o.library.id.clone(),
        component: o.library.component.clone(),
        cuda_major: o.cuda_major,
        cuda_major_ambiguous: !o.cuda_major_known,
        cuda_agnostic: false,
        soname_policy: o
            .library
            .cuda
            .first()
            .map(|m| m.policy.to_string())
            .unwrap_or_default(),
        pip: None,
        pip_dir: None,
        conda: Some(OLDER_CONDA.to_string()),
        toolkit_extra: None,
        older_release: true,
    }
}

/// The conda package that carried the CUDA libraries of releases before the CUDA 12 split: one
/// package for the whole toolkit's run-time libraries (`cudatoolkit`, on Anaconda's channel and
/// conda-forge; CUDA 12 split it into `cuda-cudart`, `libcublas`, …).
pub const OLDER_CONDA: &str = "cudatoolkit";

/// The newest first release among the symbols the file imports, per library and CUDA major
/// ([`cudist_catalog::symbols`]). A weak import is left out: the file checks for it at run time.
fn symbol_floors(elf: &ElfFile) -> Vec<SymbolFloor> {
    let mut out: BTreeMap<(&str, u32), SymbolFloor> = BTreeMap::new();
    for s in elf.undefined_dynamic().filter(|s| !s.weak) {
        for f in cudist_catalog::symbols::floors_of(&s.name) {
            let newer = out
                .get(&(f.library, f.major))
                .is_none_or(|have| version_key(f.since) > version_key(&have.since));
            if newer {
                out.insert(
                    (f.library, f.major),
                    SymbolFloor {
                        library: f.library.to_string(),
                        cuda_major: f.major,
                        pip: f.pip.to_string(),
                        since: f.since.to_string(),
                        symbol: s.name.clone(),
                    },
                );
            }
        }
    }
    out.into_values().collect()
}

/// The C-library symbols `elf` imports without a version that its architecture's oldest
/// manylinux glibc lacks, newest glibc first, then by name. A weak import is left out (the file
/// checks for it at run time), and so is a file with no C library among what it links (a
/// kernel module, a static executable): nothing it loads is glibc.
fn unversioned_glibc(elf: &ElfFile) -> Vec<UnversionedGlibc> {
    let Ok(arch) = elf.platform_arch() else {
        return Vec::new();
    };
    if !elf.needed.iter().any(|n| platform::is_glibc_library(n)) {
        return Vec::new();
    }
    let mut out: Vec<UnversionedGlibc> = elf
        .dynamic_symbols
        .iter()
        .filter(|s| s.is_unversioned_import())
        .filter_map(|s| {
            cudist_catalog::glibc::glibc_since(arch, &s.name).map(|since| UnversionedGlibc {
                symbol: s.name.clone(),
                since: since.to_string(),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        version_key(&b.since)
            .cmp(&version_key(&a.since))
            .then_with(|| a.symbol.cmp(&b.symbol))
    });
    out.dedup();
    out
}

/// A dotted release as numbers, for ordering (`13.1.80` → [13, 1, 80]).
fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map_while(|p| p.parse().ok()).collect()
}

/// One `DT_NEEDED` entry classified by the catalog (toolkit, external, driver, system, other);
/// `hint` is the CUDA major assumed for SONAMEs several majors share.
pub fn classify_needed(soname: &str, catalog: &Catalog, hint: Option<u32>) -> Needed {
    // A CUDA library of a release before the catalog's (`libcudart.so.10.2`; `libcufft.so.10`
    // beside it) is that release's, whatever a newer release shares of its name.
    if let Some(o) = catalog.older_release(soname, hint) {
        return Needed {
            soname: soname.to_string(),
            class: NeededClass::Toolkit,
            library: Some(older_library_ref(&o)),
            provided_in_artifact: None,
        };
    }
    let (class, library) = match catalog.classify_hinted(soname, hint) {
        SonameClass::Toolkit(m) => (NeededClass::Toolkit, Some(library_ref(&m))),
        SonameClass::External(m) => (NeededClass::External, Some(library_ref(&m))),
        SonameClass::Driver(_) => (NeededClass::Driver, None),
        SonameClass::Vendor(_) => (NeededClass::Vendor, None),
        SonameClass::System(_) => (NeededClass::System, None),
        // A renamed copy (a repair tool's graft: `libcudart-5a077122.so.12.0.107`) is the
        // library it copies; only a file of that exact name satisfies it.
        SonameClass::Other => match catalog.renamed_copy_of(soname, hint) {
            Some(m) => (
                match m.library.kind {
                    cudist_catalog::LibraryKind::External => NeededClass::External,
                    _ => NeededClass::Toolkit,
                },
                Some(library_ref(&m)),
            ),
            None => (NeededClass::Other, None),
        },
    };
    Needed {
        soname: soname.to_string(),
        class,
        library,
        provided_in_artifact: None,
    }
}
