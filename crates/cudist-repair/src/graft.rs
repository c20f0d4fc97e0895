//! Grafting: copying the non-system, non-CUDA libraries a wheel needs into `<dist>.libs/`, as
//! auditwheel does, so that the wheel meets a manylinux policy.
//!
//! Each library is found the way ld.so would find it on this machine (the needing file's absolute
//! RPATH, `LD_LIBRARY_PATH`, its absolute RUNPATH, `/etc/ld.so.cache`, the default directories),
//! copied under a name that carries a hash of its content (`libfoo-1a2b3c4d.so.1`, which becomes its
//! SONAME), and its own dependencies are grafted in turn. CUDA toolkit and driver libraries are
//! never grafted: they come from NVIDIA's wheels and the driver.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use cudist_analysis::error::{Result, ResultExt};
use cudist_catalog::{Catalog, SonameClass};
use cudist_elf::ldso::{self, LdCache};
use serde::Serialize;
use sha2::{Digest, Sha256};

use cudist_analysis::analyse::{analyse_elf, MarkerIndex};
use cudist_analysis::model::{ElfReport, NeededClass};

/// One grafted library.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Graft {
    /// The SONAME the wheel's files need (`libfoo.so.1`).
    pub soname: String,
    /// Where it was found on this machine.
    pub source: PathBuf,
    /// Its path in the wheel (`pkg.libs/libfoo-1a2b3c4d.so.1`); the file name is its new SONAME.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its content, with its new SONAME.
    #[serde(skip)]
    pub data: Vec<u8>,
    /// Its analysis, planned like the wheel's own files.
    #[serde(skip)]
    pub report: ElfReport,
}

impl Graft {
    /// The new SONAME (the file name).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// `libfoo.so.1` + content → `libfoo-<8 hex of sha256>.so.1`.
pub fn hashed_name(soname: &str, data: &[u8]) -> String {
    let hash: String = Sha256::digest(data)
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    match soname.find(".so") {
        Some(i) => format!("{}-{hash}{}", &soname[..i], &soname[i..]),
        None => format!("{soname}-{hash}"),
    }
}

/// Whether a NEEDED entry is one to graft: not a system, CUDA, driver or catalog library, not the
/// loader, and not carried by the artifact. A NEEDED entry with a `/` names a file by its path
/// (`../../tmp/x.so`, `/proc/self/exe`): ld.so opens exactly that path on the user's machine, and
/// copying what sits at that path on this machine into the wheel would carry a host file into it
/// (under a member name that climbs out of the wheel), so such entries are never grafted.
pub fn wants_graft(class: NeededClass, soname: &str, in_artifact: bool) -> bool {
    class == NeededClass::Other
        && !in_artifact
        && !soname.contains('/')
        && !cudist_analysis::platform::is_loader(soname)
}

/// Finds and copies the libraries `needers` need, and theirs, into `libs_dir`. Returns the grafts
/// and the SONAMEs that could not be found on this machine.
pub fn collect<'a>(
    needers: impl Iterator<Item = &'a ElfReport>,
    skip: &dyn Fn(&str) -> bool,
    libs_dir: &str,
    catalog: &Catalog,
) -> Result<(Vec<Graft>, Vec<String>)> {
    let cache = LdCache::system();
    let lp = std::env::var("LD_LIBRARY_PATH").ok();
    let markers = MarkerIndex::new(catalog);
    let mut queue: VecDeque<Wanted> = VecDeque::new();
    for e in needers {
        let Some(machine) = cudist_elf::machine_from_name(&e.machine) else {
            continue;
        };
        for n in &e.needed {
            if wants_graft(n.class, &n.soname, n.provided_in_artifact.is_some()) && !skip(&n.soname)
            {
                queue.push_back(Wanted::new(&n.soname, machine, e));
            }
        }
    }
    let mut grafts: BTreeMap<String, Graft> = BTreeMap::new();
    let mut missing = Vec::new();
    while let Some(w) = queue.pop_front() {
        let soname = w.soname.clone();
        if grafts.contains_key(&soname) || missing.contains(&soname) {
            continue;
        }
        let found = ldso::find_for(
            &soname,
            w.machine,
            w.class,
            &w.rpath,
            &w.runpath,
            lp.as_deref(),
            &cache,
        );
        let Some(source) = found else {
            missing.push(soname);
            continue;
        };
        // Only a regular file of this machine's library directories is copied.
        let data = cudist_fs::read_bounded(&source, cudist_fs::limits().unpacked)
            .with_context(|| format!("cannot graft {soname}"))?;
        let path = format!("{libs_dir}/{}", hashed_name(&soname, &data));
        let analysed = analyse_elf(&path, &data, catalog, &markers)?;
        let report = analysed.report;
        for n in &report.needed {
            let class_now = match catalog.classify(&n.soname) {
                SonameClass::Other => NeededClass::Other,
                _ => NeededClass::System,
            };
            if wants_graft(class_now, &n.soname, false) && !skip(&n.soname) {
                queue.push_back(Wanted::new(&n.soname, w.machine, &report));
            }
        }
        grafts.insert(
            soname.clone(),
            Graft {
                soname,
                source,
                path,
                bytes: data.len() as u64,
                data,
                report,
            },
        );
    }
    Ok((grafts.into_values().collect(), missing))
}

/// A library still to find, with what ld.so would search for the file that needs it.
struct Wanted {
    soname: String,
    machine: u16,
    class: u8,
    rpath: Vec<String>,
    runpath: Vec<String>,
}

impl Wanted {
    fn new(soname: &str, machine: u16, needer: &ElfReport) -> Wanted {
        let raw = |v: &[cudist_analysis::model::SearchPathEntry]| {
            v.iter().map(|p| p.raw.clone()).collect()
        };
        Wanted {
            soname: soname.to_string(),
            machine,
            class: needer.class,
            rpath: raw(&needer.rpath),
            runpath: raw(&needer.runpath),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_a_content_hash() {
        let n = hashed_name("libfoo.so.1.2", b"abc");
        assert_eq!(n, "libfoo-ba7816bf.so.1.2");
        assert_eq!(hashed_name("libbar", b"abc"), "libbar-ba7816bf");
    }
}
