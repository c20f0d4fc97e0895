//! Slimming device code: which fatbin entries of an ELF file the target GPUs will run, and the
//! file with only those (`cudist slim`).
//!
//! The runtime registers each container of `.nv_fatbin` as one module, and for each module picks
//! one entry per GPU ([`cudist_catalog::targets::pick`], the rules doctor judges by): the
//! compatible cubin of the highest SM, else PTX to JIT-compile. Slimming keeps, per container,
//! exactly what that picks for each target, plus the PTX the `--ptx` policy asks for, so every
//! target gets the same entry from the slimmed file as from the original. LTO-IR and entries of
//! kinds nobody has named are kept; `__nv_relfatbin` (relocatable code for a later device link) is
//! left alone. Removed entries first become zero bytes inside their container
//! ([`cudist_fatbin::rewrite_section`]), which a wheel's deflate shrinks to nearly nothing; then,
//! unless the layout is to be kept, the zero tail of `.nv_fatbin` after the last container leaves
//! the file where its layout allows ([`cudist_elf::cut::cut_section_tail`]: every address kept),
//! so the installed file shrinks too.

use cudist_catalog::targets::{self, Code, Target};
use cudist_elf::ElfFile;
use cudist_fatbin::{Entry, EntryKind, SectionKind};
use serde::Serialize;

/// Which PTX to keep besides what a target runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PtxPolicy {
    /// Every PTX entry.
    Keep,
    /// Per module, the PTX of the highest SM that some target could JIT from: newer GPUs than
    /// the targets still run.
    #[default]
    Newest,
    /// Only PTX a target needs (no cubin runs there).
    Drop,
}

/// The file `cudist slim` writes into a slimmed wheel's `.dist-info`, which inspect reads.
pub const RECORD_FILE: &str = "cudist-slim.json";

/// What `<dist-info>/cudist-slim.json` says: what a wheel was slimmed to.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SlimRecord {
    /// `cudist.slim-record/1`.
    pub schema: String,
    /// The GPUs it keeps device code for (`sm_86`).
    pub targets: Vec<String>,
    /// The PTX policy.
    pub ptx: PtxPolicy,
    /// The cudist that slimmed it.
    pub cudist_version: String,
}

/// What to keep.
#[derive(Debug, Clone)]
pub struct Options {
    /// The GPUs: each target's SM. A target that asks for PTX (`9.0+PTX`, `compute_90`) keeps
    /// the PTX that GPU would JIT from even where a cubin runs.
    pub targets: Vec<Target>,
    /// Which PTX to keep besides what a target runs.
    pub ptx: PtxPolicy,
    /// A target nothing in a file runs on is no error.
    pub allow_empty: bool,
    /// Keep the file's layout: removed entries stay as zero bytes, the file its size. Otherwise
    /// the zero tail of `.nv_fatbin` leaves the file where its layout allows
    /// ([`cudist_elf::cut::cut_section_tail`]).
    pub keep_layout: bool,
}

/// One entry, as the report names it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EntryName {
    /// `cubin`, `ptx`, `lto-ir`, `concat` or `other`.
    pub kind: String,
    /// `sm_90`, `sm_90a`; for PTX the virtual architecture (`compute_90`).
    pub arch: String,
    /// The container (module) it is in, 0-based.
    pub container: usize,
    /// Bytes it occupies in the section (header and payload).
    pub bytes: u64,
}

/// What slimming does to one ELF file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileSlim {
    /// Its path (in the artifact, or as given).
    pub path: String,
    /// Entries kept, in file order.
    pub kept: Vec<EntryName>,
    /// Entries removed, in file order.
    pub removed: Vec<EntryName>,
    /// Bytes of `.nv_fatbin` entries removed (zero bytes in the file, or gone from it).
    pub bytes_removed: u64,
    /// Bytes the file itself lost: the zero tail of `.nv_fatbin` taken out (0 when the layout was
    /// kept).
    pub file_bytes_cut: u64,
    /// Why the file kept its size although entries were removed (`--keep-layout`, or what in its
    /// layout prevents the cut); null when it was cut or nothing was removed.
    pub layout_kept: Option<String>,
    /// Targets nothing in the file runs on (only with `allow_empty`).
    pub nothing_for: Vec<String>,
}

/// Why a file cannot be slimmed.
#[derive(Debug, thiserror::Error)]
pub enum SlimError {
    /// Not a readable ELF file.
    #[error("{path}: cannot read ELF")]
    Elf {
        /// The file.
        path: String,
        /// What is wrong.
        #[source]
        source: cudist_elf::ElfError,
    },
    /// Its `.nv_fatbin` is not a well-formed fatbin.
    #[error("{path}: section .nv_fatbin")]
    Fatbin {
        /// The file.
        path: String,
        /// What is wrong.
        #[source]
        source: cudist_fatbin::FatbinError,
    },
    /// A target that no entry of the file runs on.
    #[error("{path}: nothing in it runs on {target} (it has {has}); name other targets, or pass --allow-empty")]
    NothingFor {
        /// The file.
        path: String,
        /// The target (`sm_75`).
        target: String,
        /// What the file has (`sm_80, sm_90, compute_90`).
        has: String,
    },
    /// Something else of the file lies in `.nv_fatbin`'s bytes, which slimming rewrites: the
    /// file is damaged or hostile, and nothing is written from it.
    #[error("{path}: {what} lies inside section .nv_fatbin, whose bytes slimming rewrites; the file is damaged or hostile")]
    Overlap {
        /// The file.
        path: String,
        /// What lies there (`the section header table`, `section .dynsym`).
        what: String,
    },
    /// Taking the zero tail out of the file went wrong (the layout contradicts itself).
    #[error("{path}: cannot take the removed device code out of the file")]
    Cut {
        /// The file.
        path: String,
        /// What is wrong.
        #[source]
        source: cudist_elf::patch::PatchError,
    },
}

fn entry_name(e: &Entry) -> EntryName {
    let arch = e.arch_name();
    EntryName {
        kind: match e.kind {
            EntryKind::Cubin => "cubin".into(),
            EntryKind::Ptx => "ptx".into(),
            EntryKind::LtoIr => "lto-ir".into(),
            EntryKind::Concat => "concat".into(),
            _ => "other".into(),
        },
        arch: if e.kind == EntryKind::Ptx {
            arch.replacen("sm_", "compute_", 1)
        } else if e.kind == EntryKind::Concat {
            e.images
                .iter()
                .map(|i| i.arch_name())
                .collect::<Vec<_>>()
                .join("+")
        } else {
            arch
        },
        container: e.container,
        bytes: e.stored_size(),
    }
}

/// The codes an entry stands for, as the runtime chooses: one for a cubin or PTX, one per image
/// for a concatenated entry, none for anything else (kept whatever the targets).
fn codes_of(e: &Entry) -> Vec<Code> {
    match e.kind {
        EntryKind::Cubin | EntryKind::Other(0x10) => vec![Code {
            sm: e.sm,
            suffix: e.suffix,
            ptx: false,
        }],
        EntryKind::Ptx => vec![Code {
            sm: e.sm,
            suffix: e.suffix,
            ptx: true,
        }],
        EntryKind::Concat => e
            .images
            .iter()
            .map(|i| {
                let (sm, suffix) = targets::parse_arch_name(&i.arch_name()).unwrap_or((i.sm, None));
                Code {
                    sm,
                    suffix,
                    ptx: false,
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether a target asks for PTX by how it is written: `+PTX`, `-virtual`, `compute_XY`. (A
/// plain `90` builds PTX too in CMake's spelling, but as a GPU to slim for it names only the GPU.)
pub fn asks_for_ptx(t: &Target) -> bool {
    let w = t.written.to_ascii_lowercase();
    if w.contains("code=") {
        // `-gencode arch=compute_90,code=sm_90` builds a cubin only: its parse says.
        return t.ptx;
    }
    w.contains("+ptx") || w.contains("virtual") || w.contains("compute_")
}

/// Which entries of `entries` (one section, all containers) to keep, by index, and the targets
/// no container has anything for.
pub fn select(entries: &[Entry], opts: &Options) -> (Vec<bool>, Vec<String>) {
    let mut keep = vec![false; entries.len()];
    let mut served = vec![false; opts.targets.len()];
    let containers: std::collections::BTreeSet<usize> =
        entries.iter().map(|e| e.container).collect();
    for c in containers {
        // The module's codes, each with the entry it belongs to.
        let mut codes: Vec<Code> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.container == c) {
            let cs = codes_of(e);
            if cs.is_empty() {
                keep[i] = true;
            }
            for code in cs {
                codes.push(code);
                owner.push(i);
            }
        }
        let ptx_at: Vec<usize> = (0..codes.len()).filter(|&k| codes[k].ptx).collect();
        let ptx_codes: Vec<Code> = ptx_at.iter().map(|&k| codes[k]).collect();
        for (ti, t) in opts.targets.iter().enumerate() {
            let picked = targets::pick(&codes, t.sm);
            served[ti] |= !picked.is_empty();
            for k in picked {
                keep[owner[k]] = true;
            }
            if asks_for_ptx(t) {
                // The PTX this GPU would JIT from, kept beside its cubin (`+PTX`).
                for k in targets::pick(&ptx_codes, t.sm) {
                    keep[owner[ptx_at[k]]] = true;
                }
            }
        }
        match opts.ptx {
            PtxPolicy::Keep => {
                for (k, code) in codes.iter().enumerate() {
                    if code.ptx {
                        keep[owner[k]] = true;
                    }
                }
            }
            PtxPolicy::Newest => {
                let jittable = |code: &Code| {
                    code.ptx
                        && opts
                            .targets
                            .iter()
                            .any(|t| targets::runs_on(code.sm, code.suffix, t.sm, true))
                };
                if let Some(best) = codes.iter().filter(|c| jittable(c)).map(|c| c.sm).max() {
                    for (k, code) in codes.iter().enumerate() {
                        if jittable(code) && code.sm == best {
                            keep[owner[k]] = true;
                        }
                    }
                }
            }
            PtxPolicy::Drop => {}
        }
    }
    let nothing: Vec<String> = opts
        .targets
        .iter()
        .zip(&served)
        .filter(|(_, s)| !**s)
        .map(|(t, _)| format!("sm_{}", t.sm))
        .collect();
    (keep, nothing)
}

/// Slims one ELF file: `Ok(None)` when it has no `.nv_fatbin` entries (nothing to do), else what
/// was done. `data` keeps its length with `keep_layout`, else loses the zero tail of `.nv_fatbin`
/// where the layout allows. On an error `data` may be half-changed: callers write nothing then.
/// The cut copy is kept where `data` is (in memory, or in a temporary file for a large file).
pub fn slim_elf(
    path: &str,
    data: &mut cudist_fs::Buf,
    opts: &Options,
) -> Result<Option<FileSlim>, SlimError> {
    let before = data.len();
    let Some(mut f) = slim_in_place(path, data, opts)? else {
        return Ok(None);
    };
    if f.bytes_removed == 0 {
        return Ok(Some(f));
    }
    if opts.keep_layout {
        f.layout_kept = Some("--keep-layout".into());
        return Ok(Some(f));
    }
    // The containers move together to the start of the section, their wrappers' relocations
    // with them; where something else points at them, they stay, and only the zero tail after
    // the last one can go.
    let elf_err = |source| SlimError::Elf {
        path: path.to_string(),
        source,
    };
    let cut_err = |source| SlimError::Cut {
        path: path.to_string(),
        source,
    };
    let elf = ElfFile::parse(data).map_err(elf_err)?;
    // `inside` refused a file whose tables lie in the bytes slimming rewrote, so the section is
    // where it was; a file that still says otherwise is refused, never trusted.
    let section = elf
        .sections
        .iter()
        .find(|s| s.name == SectionKind::NvFatbin.section_name() && s.in_file())
        .ok_or_else(|| SlimError::Overlap {
            path: path.to_string(),
            what: "the section table".into(),
        })?;
    let bytes = elf.section_data(data, section).map_err(elf_err)?;
    let (containers, _) =
        cudist_fatbin::parse_containers(bytes, SectionKind::NvFatbin).map_err(|source| {
            SlimError::Fatbin {
                path: path.to_string(),
                source,
            }
        })?;
    let pieces: Vec<(u64, u64)> = containers
        .iter()
        .map(|c| (c.offset as u64, c.header_size as u64 + c.fat_size))
        .collect();
    let tail_only = pieces.last().map_or(0, |&(o, l)| o + l);
    let name = SectionKind::NvFatbin.section_name();
    // Where the packed containers would end; they are packed only when the file can then be cut.
    let packed_end = pieces
        .iter()
        .fold(None, |end: Option<u64>, &(o, l)| {
            Some(end.map_or(o, |e| e.next_multiple_of(8)) + l)
        })
        .unwrap_or(0);
    let (keep, unpacked) = match cudist_elf::cut::can_cut(data, name, packed_end) {
        Ok(Ok(_)) => match cudist_elf::cut::pack_section(data, name, &pieces) {
            Ok(Ok(end)) => (end, None),
            Ok(Err(why)) => (tail_only, Some(why)),
            Err(source) => return Err(cut_err(source)),
        },
        Ok(Err(_)) => (tail_only, None),
        Err(source) => return Err(cut_err(source)),
    };
    let make = |len| data.zeroed_like(len);
    match cudist_elf::cut::cut_section_tail_into(data, name, keep, make) {
        Ok(cudist_elf::cut::Cut::Done { data: cut, bytes }) => {
            *data = cut;
            f.file_bytes_cut = bytes;
            debug_assert_eq!(before - data.len(), bytes as usize);
        }
        Ok(cudist_elf::cut::Cut::Kept(why)) => {
            f.layout_kept = Some(match unpacked {
                Some(u) => format!("{why}; the containers stay apart: {u}"),
                None => why,
            })
        }
        Err(source) => return Err(cut_err(source)),
    }
    Ok(Some(f))
}

/// What of the file, other than `section`, has bytes in `range` (the section's): the ELF header,
/// the program or section header table, another section. Slimming rewrites those bytes; a file
/// whose tables lie there would be destroyed by it.
fn inside(
    data: &[u8],
    elf: &ElfFile,
    section: &cudist_elf::Section,
    range: &std::ops::Range<usize>,
) -> Option<String> {
    let overlaps = |at: u64, len: u64| {
        len > 0
            && (at as u128) < range.end as u128
            && at as u128 + len as u128 > range.start as u128
    };
    let int = |at: usize, n: usize| -> u64 {
        let b = data.get(at..at + n).unwrap_or(&[]);
        let mut v = 0u64;
        for (i, &x) in b.iter().enumerate() {
            let shift = if elf.big_endian {
                8 * (n - 1 - i)
            } else {
                8 * i
            };
            v |= (x as u64) << shift;
        }
        v
    };
    // (table offset, entry size, count): ELF64 or ELF32 header fields.
    let (ehdr, ph, sh) = if elf.class == 64 {
        (
            64,
            (int(32, 8), int(54, 2), int(56, 2)),
            (int(40, 8), int(58, 2), int(60, 2)),
        )
    } else {
        (
            52,
            (int(28, 4), int(42, 2), int(44, 2)),
            (int(32, 4), int(46, 2), int(48, 2)),
        )
    };
    if overlaps(0, ehdr) {
        return Some("the ELF header".into());
    }
    if overlaps(ph.0, ph.1.saturating_mul(ph.2)) {
        return Some("the program header table".into());
    }
    if overlaps(sh.0, sh.1.saturating_mul(sh.2)) {
        return Some("the section header table".into());
    }
    elf.sections
        .iter()
        .filter(|o| o.in_file() && !std::ptr::eq(*o, section))
        .find(|o| overlaps(o.offset, o.size))
        .map(|o| format!("section {}", o.name))
}

/// [`slim_elf`] without the cut: `data` keeps its length.
fn slim_in_place(
    path: &str,
    data: &mut [u8],
    opts: &Options,
) -> Result<Option<FileSlim>, SlimError> {
    let elf = ElfFile::parse(data).map_err(|source| SlimError::Elf {
        path: path.to_string(),
        source,
    })?;
    let Some(section) = elf
        .sections
        .iter()
        .find(|s| s.name == SectionKind::NvFatbin.section_name() && s.in_file())
    else {
        return Ok(None);
    };
    let bytes = elf
        .section_data(data, section)
        .map_err(|source| SlimError::Elf {
            path: path.to_string(),
            source,
        })?;
    let range = section.offset as usize..section.offset as usize + bytes.len();
    if let Some(what) = inside(data, &elf, section, &range) {
        return Err(SlimError::Overlap {
            path: path.to_string(),
            what,
        });
    }
    let fatbin_err = |source| SlimError::Fatbin {
        path: path.to_string(),
        source,
    };
    let entries = cudist_fatbin::parse_section(bytes, SectionKind::NvFatbin).map_err(fatbin_err)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let (keep, nothing_for) = select(&entries, opts);
    if let (Some(t), false) = (nothing_for.first(), opts.allow_empty) {
        let has: std::collections::BTreeSet<String> = entries
            .iter()
            .filter(|e| !codes_of(e).is_empty())
            .map(|e| entry_name(e).arch)
            .collect();
        return Err(SlimError::NothingFor {
            path: path.to_string(),
            target: t.clone(),
            has: has.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    let kept_at: std::collections::HashSet<usize> = entries
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(e, _)| e.offset)
        .collect();
    let bytes_removed =
        cudist_fatbin::rewrite_section(&mut data[range], SectionKind::NvFatbin, &|e: &Entry| {
            kept_at.contains(&e.offset)
        })
        .map_err(fatbin_err)?;
    let (kept, removed): (Vec<_>, Vec<_>) = entries.iter().zip(&keep).partition(|(_, k)| **k);
    Ok(Some(FileSlim {
        path: path.to_string(),
        kept: kept.into_iter().map(|(e, _)| entry_name(e)).collect(),
        removed: removed.into_iter().map(|(e, _)| entry_name(e)).collect(),
        bytes_removed,
        file_bytes_cut: 0,
        layout_kept: None,
        nothing_for,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(container: usize, kind: EntryKind, sm: u32, suffix: Option<char>) -> Entry {
        Entry {
            section: SectionKind::NvFatbin,
            container,
            offset: 0,
            kind,
            raw_kind: 0,
            header_size: 0x40,
            sm,
            suffix,
            version_major: 1,
            version_minor: 8,
            flags: 0x11,
            codec: cudist_fatbin::Codec::None,
            payload_size: 8,
            compressed_size: 0,
            uncompressed_size: 8,
            identifier: None,
            options: None,
            images: Vec::new(),
        }
    }

    fn targets(list: &str) -> Vec<Target> {
        targets::parse_list(list).unwrap()
    }

    /// A file whose section header table lies in the bytes of `.nv_fatbin` slimming rewrites
    /// (here: inside a removed sm_80 cubin of the multi.so fixture) is refused, with and without
    /// the cut, before anything changes: it panicked, and `--keep-layout` wrote a file whose
    /// section table was device code.
    #[test]
    fn tables_inside_the_device_code_are_refused() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/device/multi.so");
        let mut data = std::fs::read(fixture).unwrap();
        let elf = ElfFile::parse(&data).unwrap();
        let fatbin = elf
            .sections
            .iter()
            .find(|s| s.name == ".nv_fatbin")
            .unwrap();
        let shoff = u64::from_le_bytes(data[40..48].try_into().unwrap()) as usize;
        let table = 64 * elf.sections.len();
        // Past the first container (16-byte header, then entries): inside the second one.
        let at = (fatbin.offset + fatbin.size / 2) as usize & !7;
        let copy = data[shoff..shoff + table].to_vec();
        data[at..at + table].copy_from_slice(&copy);
        data[40..48].copy_from_slice(&(at as u64).to_le_bytes());
        for keep_layout in [true, false] {
            let opts = Options {
                targets: targets("90"),
                ptx: PtxPolicy::Newest,
                allow_empty: true,
                keep_layout,
            };
            let mut buf = cudist_fs::Buf::Heap(data.clone());
            let e = slim_elf("multi.so", &mut buf, &opts).unwrap_err();
            assert!(matches!(e, SlimError::Overlap { .. }), "{e}");
            assert_eq!(
                e.to_string(),
                "multi.so: the section header table lies inside section .nv_fatbin, whose bytes \
                 slimming rewrites; the file is damaged or hostile"
            );
            assert!(buf[..] == data[..], "nothing changed");
        }
    }

    #[test]
    fn keeps_what_each_target_runs_and_the_newest_ptx() {
        use EntryKind::*;
        let entries = vec![
            entry(0, Cubin, 80, None),
            entry(0, Cubin, 90, None),
            entry(1, Cubin, 80, None),
            entry(1, Cubin, 86, None),
            entry(1, Cubin, 90, None),
            entry(1, Cubin, 90, Some('a')),
            entry(1, Ptx, 80, None),
            entry(1, Ptx, 90, None),
            entry(1, LtoIr, 90, None),
        ];
        let opts = |list: &str, ptx| Options {
            targets: targets(list),
            ptx,
            allow_empty: false,
            keep_layout: true,
        };
        let kept = |o: &Options| {
            let (k, nothing) = select(&entries, o);
            assert!(nothing.is_empty());
            k
        };
        // sm_90: the sm_90 cubins (plain and `a` tie), the newest PTX, LTO-IR.
        assert_eq!(
            kept(&opts("90", PtxPolicy::Newest)),
            vec![false, true, false, false, true, true, false, true, true]
        );
        // sm_89 runs the sm_86 cubin; sm_80 PTX would do, but compute_90 is newer and no target
        // can JIT it: compute_80 is the newest a target could use.
        assert_eq!(
            kept(&opts("8.9", PtxPolicy::Newest)),
            vec![true, false, false, true, false, false, true, false, true]
        );
        // Drop: no PTX but what a target runs.
        assert_eq!(
            kept(&opts("90", PtxPolicy::Drop)),
            vec![false, true, false, false, true, true, false, false, true]
        );
        // `+PTX` keeps the PTX that GPU would JIT from, even with --ptx drop.
        assert_eq!(
            kept(&opts("8.6+PTX", PtxPolicy::Drop)),
            vec![true, false, false, true, false, false, true, false, true]
        );
        // A target only PTX serves: sm_120 JITs compute_90.
        let (k, nothing) = select(&entries, &opts("12.0", PtxPolicy::Drop));
        assert_eq!(
            k,
            vec![false, false, false, false, false, false, false, true, true]
        );
        // Container 0 has nothing for sm_120, but the file has: not an empty target.
        assert!(nothing.is_empty());
        // sm_75: nothing anywhere.
        let (_, nothing) = select(&entries, &opts("75", PtxPolicy::Newest));
        assert_eq!(nothing, vec!["sm_75".to_string()]);
    }
}
