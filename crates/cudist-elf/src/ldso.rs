//! Where glibc's ld.so would find a library: `/etc/ld.so.cache` and the default directories.
//!
//! Hand-written: no crate reads `ld.so.cache`. The format (glibc `sysdeps/generic/dl-cache.h`, new
//! format `glibc-ld.so.cache1.1`, possibly after an old-format block): a 48-byte header with the
//! entry count, then 24-byte entries `{i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap}`
//! whose key (SONAME) and value (path) are offsets from the start of the new-format block.

use std::path::{Path, PathBuf};

use object::elf;

use crate::ElfFile;

const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";

/// One `ld.so.cache` entry.
#[derive(Debug, Clone)]
pub struct CacheEntry {
    pub soname: String,
    pub path: PathBuf,
    pub flags: i32,
}

/// The parsed cache (empty when there is none or it cannot be read).
#[derive(Debug, Clone, Default)]
pub struct LdCache {
    pub entries: Vec<CacheEntry>,
}

impl LdCache {
    /// Reads `/etc/ld.so.cache`.
    pub fn system() -> LdCache {
        std::fs::read("/etc/ld.so.cache")
            .map(|d| LdCache::parse(&d))
            .unwrap_or_default()
    }

    /// Parses cache bytes; malformed input yields the entries read before the damage.
    pub fn parse(data: &[u8]) -> LdCache {
        let mut base = 0usize;
        if data.starts_with(OLD_MAGIC) {
            // Old format: 12-byte magic+version, u32 count, 12-byte entries; the new block follows,
            // 8-aligned.
            let Some(n) = data
                .get(12..16)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
            else {
                return LdCache::default();
            };
            base = (16 + n * 12 + 7) & !7;
        }
        let Some(block) = data.get(base..) else {
            return LdCache::default();
        };
        if !block.starts_with(NEW_MAGIC) || block.len() < 48 {
            return LdCache::default();
        }
        let u32_at = |o: usize| {
            block
                .get(o..o + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        };
        let Some(n) = u32_at(20) else {
            return LdCache::default();
        };
        let string = |o: u32| -> Option<String> {
            let rest = block.get(o as usize..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        };
        let mut entries = Vec::new();
        for i in 0..n as usize {
            let at = 48 + i * 24;
            let (Some(flags), Some(key), Some(value)) =
                (u32_at(at), u32_at(at + 4), u32_at(at + 8))
            else {
                break;
            };
            if let (Some(soname), Some(path)) = (string(key), string(value)) {
                entries.push(CacheEntry {
                    soname,
                    path: PathBuf::from(path),
                    flags: flags as i32,
                });
            }
        }
        LdCache { entries }
    }

    /// The cached path of `soname` for a file of this machine and class.
    pub fn lookup(&self, soname: &str, machine: u16, class: u8) -> Option<&Path> {
        let want = cache_flags(machine, class);
        self.entries
            .iter()
            .find(|e| e.soname == soname && want.is_none_or(|w| e.flags == w))
            .map(|e| e.path.as_path())
    }
}

/// The cache flags glibc writes for libraries of this machine and class (libc6 ELF + the
/// architecture's bits), where known.
fn cache_flags(machine: u16, class: u8) -> Option<i32> {
    const ELF_LIBC6: i32 = 0x0003;
    match (machine, class) {
        (elf::EM_X86_64, 64) => Some(ELF_LIBC6 | 0x0300),
        (elf::EM_AARCH64, 64) => Some(ELF_LIBC6 | 0x0a00),
        (elf::EM_PPC64, 64) => Some(ELF_LIBC6 | 0x0500),
        (elf::EM_S390, 64) => Some(ELF_LIBC6 | 0x0400),
        (elf::EM_386, 32) => Some(ELF_LIBC6),
        _ => None,
    }
}

/// The default search directories of ld.so for a machine (after the cache), as Debian and Red Hat
/// lay them out.
pub fn default_dirs(machine: u16, class: u8) -> Vec<PathBuf> {
    let triple = match (machine, class) {
        (elf::EM_X86_64, 64) => Some("x86_64-linux-gnu"),
        (elf::EM_AARCH64, 64) => Some("aarch64-linux-gnu"),
        (elf::EM_PPC64, 64) => Some("powerpc64le-linux-gnu"),
        (elf::EM_386, 32) => Some("i386-linux-gnu"),
        _ => None,
    };
    let mut dirs = Vec::new();
    if let Some(t) = triple {
        dirs.push(PathBuf::from(format!("/lib/{t}")));
        dirs.push(PathBuf::from(format!("/usr/lib/{t}")));
    }
    if class == 64 {
        dirs.push(PathBuf::from("/lib64"));
        dirs.push(PathBuf::from("/usr/lib64"));
    }
    dirs.push(PathBuf::from("/lib"));
    dirs.push(PathBuf::from("/usr/lib"));
    dirs
}

/// Whether the file at `path` is an ELF library of this machine and class.
pub fn matches_machine(path: &Path, machine: u16, class: u8) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|d| ElfFile::parse(&d).ok())
        .is_some_and(|f| f.machine == machine && f.class == class)
}

/// Finds `soname` for a file that needs it, the way ld.so would outside a running process: the
/// file's absolute DT_RPATH entries, `LD_LIBRARY_PATH`, its absolute DT_RUNPATH entries, the cache,
/// the default directories. (`$ORIGIN` entries point inside the artifact, which the caller has
/// already looked at; RPATH inheritance needs the whole load chain, which `cudist doctor` walks.)
pub fn find(
    soname: &str,
    needer: &ElfFile,
    ld_library_path: Option<&str>,
    cache: &LdCache,
) -> Option<PathBuf> {
    find_for(
        soname,
        needer.machine,
        needer.class,
        &needer.rpath,
        &needer.runpath,
        ld_library_path,
        cache,
    )
}

/// [`find`] from the needing file's machine, class and search paths.
pub fn find_for(
    soname: &str,
    machine: u16,
    class: u8,
    rpath: &[String],
    runpath: &[String],
    ld_library_path: Option<&str>,
    cache: &LdCache,
) -> Option<PathBuf> {
    let try_dir = |d: &Path| -> Option<PathBuf> {
        let p = d.join(soname);
        (p.is_file() && matches_machine(&p, machine, class)).then_some(p)
    };
    let absolute = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .filter(|e| e.starts_with('/'))
            .map(PathBuf::from)
            .collect()
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    if runpath.is_empty() {
        dirs.extend(absolute(rpath));
    }
    if let Some(lp) = ld_library_path {
        dirs.extend(
            lp.split([':', ';'])
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
        );
    }
    dirs.extend(absolute(runpath));
    if let Some(p) = dirs.iter().find_map(|d| try_dir(d)) {
        return Some(p);
    }
    if let Some(p) = cache.lookup(soname, machine, class) {
        if p.is_file() {
            return Some(p.to_path_buf());
        }
    }
    default_dirs(machine, class).iter().find_map(|d| try_dir(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_system_cache_and_finds_libc() {
        let cache = LdCache::system();
        if cache.entries.is_empty() {
            eprintln!("no /etc/ld.so.cache here");
            return;
        }
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let me = ElfFile::parse(&exe).unwrap();
        let libc = find("libc.so.6", &me, None, &cache).expect("libc.so.6 is found");
        assert!(libc.to_string_lossy().contains("libc.so.6"));
        assert!(find("libdoes-not-exist.so.9", &me, None, &cache).is_none());
    }

    #[test]
    fn garbage_is_an_empty_cache() {
        assert!(LdCache::parse(b"").entries.is_empty());
        assert!(LdCache::parse(b"glibc-ld.so.cache1.1\xff\xff\xff\xff")
            .entries
            .is_empty());
        let mut d = NEW_MAGIC.to_vec();
        d.resize(48, 0);
        d[20..24].copy_from_slice(&1000u32.to_le_bytes()); // claims 1000 entries, has none
        assert!(LdCache::parse(&d).entries.is_empty());
    }
}
