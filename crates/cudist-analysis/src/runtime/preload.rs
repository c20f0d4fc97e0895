//! What an installed package's own Python loads at import, found where its code would find it,
//! and the load tier of each of its ELF files ([`crate::loads`] applied to an installed tree).
//!
//! Where a preload is looked for follows what the packages do: a name that is a file of the
//! package (RAPIDS' `lib64/librmm.so`) is that file; a CUDA library (faiss' names from its
//! `_preload_library.json`, located through the files of the NVIDIA wheel that installs it;
//! torch's `libcublas.so.*[0-9]` in `nvidia/<lib>/lib`) is looked for in the site-packages
//! directories of the NVIDIA wheels; a bare SONAME passed to `ctypes.CDLL` falls back to
//! dlopen's own search from the interpreter (`LD_LIBRARY_PATH`, the cache, the system
//! directories).

use std::path::{Path, PathBuf};

use cudist_catalog::Catalog;
use cudist_elf::loader::{self, LoadEnv};

use crate::loads::{self, Preload, Source};

/// The `.py` and `.json` files below an installed package, within the limits of
/// [`loads::MAX_SOURCE`] and [`loads::MAX_SOURCES_TOTAL`].
pub fn package_sources(dir: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut total = 0u64;
    let base = dir.parent().unwrap_or(dir);
    walk(dir, base, &mut out, &mut total, 0);
    out
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<Source>, total: &mut u64, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        if ft.is_dir() && depth < 16 {
            walk(&path, base, out, total, depth + 1);
        } else if ft.is_file() {
            let rel = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let size = e.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
            if !loads::is_source(&rel, size) || *total + size > loads::MAX_SOURCES_TOTAL {
                continue;
            }
            let Ok(bytes) = cudist_fs::read_bounded(&path, loads::MAX_SOURCE) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if loads::worth_keeping(&rel, &text) {
                *total += size;
                out.push(Source { path: rel, text });
            }
        }
    }
}

/// Where one preload was looked for and found.
#[derive(Debug)]
pub struct Found {
    /// The SONAME or file name loaded.
    pub name: String,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// `package`, `site-packages` or the loader rule (`ld_library_path`, `cache`, …).
    pub found_by: Option<String>,
    /// The places tried, in order.
    pub tried: Vec<PathBuf>,
}

/// The directories of site-packages that NVIDIA's wheels install libraries into
/// (`nvidia/cu13/lib`, `nvidia/cublas/lib`, …), in a stable order.
fn nvidia_dirs(site: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(site.join("nvidia")) {
        // A wheel installs under a package directory (`nvidia/cudnn`, imported as
        // `nvidia.cudnn`): a name no import can have (`cudnn.bak`, a directory moved aside) is
        // none, and no code names it.
        let mut subs: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                !n.is_empty()
                    && !n.starts_with(|c: char| c.is_ascii_digit())
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(|e| e.path().join("lib"))
            .collect();
        subs.sort();
        out.extend(subs.into_iter().filter(|d| d.is_dir()));
    }
    out
}

/// Finds a preload at import as the package's code would: in the package, in the NVIDIA wheels'
/// directories, then by dlopen's search. A pattern is matched against the files there.
pub fn find(
    p: &Preload,
    package: &Path,
    site: &Path,
    env: &LoadEnv,
    catalog: &Catalog,
) -> Vec<Found> {
    // A wheel's loader the catalog does not describe: what it loads is not known here.
    if p.mechanism == loads::Mechanism::PackageLoader && p.sonames.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = if p.sonames.is_empty() {
        vec![p.name.clone()]
    } else {
        p.sonames.clone()
    };
    let pattern = p.name.contains(['*', '?', '[']);
    let mut out = Vec::new();
    for name in names {
        let mut f = Found {
            name: name.clone(),
            path: None,
            found_by: None,
            tried: Vec::new(),
        };
        let mut dirs: Vec<(PathBuf, &str)> = Vec::new();
        // A wheel's own loader (`librmm.load_library()`) loads the file its wheel installs.
        if p.mechanism == loads::Mechanism::PackageLoader {
            dirs.extend(
                catalog
                    .pip_dirs_of(&name)
                    .into_iter()
                    .map(|d| (site.join(d), "wheel")),
            );
        }
        // A relative path the code writes it with, joined to where the code is.
        dirs.extend(
            p.near
                .iter()
                .map(|d| site.join(d))
                .filter(|d| d.is_dir())
                .map(|d| (d, "package")),
        );
        dirs.extend(
            package_lib_dirs(package)
                .into_iter()
                .map(|d| (d, "package")),
        );
        // The top package's own directories, for code in a subpackage (ri_kernels' `jax_api`
        // looks where `find_spec("ri_kernels")` says the package is).
        let top = p
            .loaded_at
            .split('/')
            .next()
            .filter(|t| !t.is_empty() && !t.contains(':') && *t != "." && *t != "..")
            .map(|t| site.join(t))
            .filter(|t| t.is_dir() && t.as_path() != package);
        if let Some(top) = top {
            for d in package_lib_dirs(&top) {
                if !dirs.iter().any(|(x, _)| *x == d) {
                    dirs.push((d, "package"));
                }
            }
        }
        // Code of the package's own may look in any NVIDIA wheel's directory (torch's glob of
        // `nvidia/*/lib`); cuda-pathfinder, and a wheel's loader that calls it, look only where
        // the wheel that ships the library installs it (its table), not in a renamed copy.
        // (A wheel's loader's own directories come first, above.)
        match p.mechanism {
            loads::Mechanism::CudaPathfinder => dirs.extend(
                catalog
                    .pip_dirs_of(&name)
                    .into_iter()
                    .map(|d| (site.join(d), "site-packages")),
            ),
            loads::Mechanism::PackageLoader => {}
            // Python finds what it hands on as it finds what it loads itself.
            loads::Mechanism::Ctypes | loads::Mechanism::Environment => {
                dirs.extend(nvidia_dirs(site).into_iter().map(|d| (d, "site-packages")))
            }
        }
        // A pattern: every file it matches in the first directory where it matches any (the
        // code globs there and loads what it finds: transformer-engine loads each
        // `libcudnn*.so.*` of the cuDNN wheel), the last of them first.
        let mut more: Vec<Found> = Vec::new();
        for (d, how) in dirs {
            let mut hits: Vec<PathBuf> = if pattern {
                std::fs::read_dir(&d)
                    .map(|rd| {
                        rd.flatten()
                            .filter(|e| p.loads(&e.file_name().to_string_lossy()))
                            .map(|e| e.path())
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                let c = d.join(&name);
                f.tried.push(c.clone());
                if c.is_file() {
                    vec![c]
                } else {
                    Vec::new()
                }
            };
            hits.sort();
            if let Some(hit) = hits.pop() {
                f.path = Some(hit);
                f.found_by = Some(how.to_string());
                more = hits
                    .into_iter()
                    .rev()
                    .map(|h| Found {
                        name: name.clone(),
                        path: Some(h),
                        found_by: Some(how.to_string()),
                        tried: Vec::new(),
                    })
                    .collect();
                break;
            }
        }
        if f.path.is_none() && !pattern && !name.contains('/') {
            if let Some((path, rule)) = loader::find_on_system(&name, env) {
                f.path = Some(path);
                f.found_by = serde_json::to_value(rule)
                    .ok()
                    .and_then(|v| v["rule"].as_str().map(String::from))
                    .or(Some("system".into()));
            }
        }
        // A pattern that matches nothing is not a failure by itself (torch falls back to it only
        // when its own libraries fail): only named libraries are reported missing.
        if f.path.is_some() || !pattern {
            out.push(f);
        }
        out.extend(more);
    }
    out
}

/// The package's directory and the library directories right below it (`lib`, `lib64`).
fn package_lib_dirs(package: &Path) -> Vec<PathBuf> {
    let mut out = vec![package.to_path_buf()];
    for sub in ["lib", "lib64"] {
        let d = package.join(sub);
        if d.is_dir() {
            out.push(d);
        }
    }
    out
}

/// What the tiers and the CUDA major are worked out from: one ELF file's dynamic section, read
/// once.
#[derive(Debug)]
pub struct Dynamic {
    /// The file.
    pub path: PathBuf,
    /// Its path below the directory its package is in (`cupy/cuda/jitify.cpython-311-….so`):
    /// its module name.
    rel: String,
    soname: Option<String>,
    needed: Vec<String>,
    extension: bool,
    /// For an extension module, the dotted names in its read-only data ([`loads::dotted_names`]).
    mentions: Vec<String>,
}

impl Dynamic {
    /// Whether it links `soname` (a `DT_NEEDED` entry).
    pub fn links(&self, soname: &str) -> bool {
        self.needed.iter().any(|n| n == soname)
    }
}

impl Dynamic {
    /// Its SONAME.
    pub fn soname(&self) -> Option<&str> {
        self.soname.as_deref()
    }
}

/// Reads the dynamic section of each file (a file that cannot be read has none), and of an
/// extension module the module names it holds. `base` is the directory the package is in
/// (site-packages).
pub fn dynamic(files: &[PathBuf], base: &Path) -> Vec<Dynamic> {
    files
        .iter()
        .map(|f| {
            let map = cudist_elf::map_file(f).ok();
            let parsed = map
                .as_ref()
                .and_then(|m| cudist_elf::ElfFile::parse(m).ok());
            let extension = parsed
                .as_ref()
                .is_some_and(|e| e.defined_dynamic().any(|s| s.name.starts_with("PyInit_")));
            let mentions = match (&map, &parsed) {
                (Some(m), Some(e)) if extension => {
                    let rodata: Vec<&[u8]> = e
                        .sections
                        .iter()
                        .filter(|s| s.name.starts_with(".rodata"))
                        .filter_map(|s| e.section_data(m, s).ok())
                        .collect();
                    loads::dotted_names(&rodata)
                }
                _ => Vec::new(),
            };
            Dynamic {
                path: f.clone(),
                rel: f
                    .strip_prefix(base)
                    .unwrap_or(f)
                    .to_string_lossy()
                    .into_owned(),
                soname: parsed.as_ref().and_then(|e| e.soname.clone()),
                needed: parsed
                    .as_ref()
                    .map(|e| e.needed.clone())
                    .unwrap_or_default(),
                extension,
                mentions,
            }
        })
        .collect()
}

/// The tier of each file ([`crate::loads::tiers`]), in order.
pub fn tiers(
    files: &[Dynamic],
    preloads: &[Preload],
    modules: &std::collections::BTreeMap<String, crate::pysource::ImportedAt>,
) -> Vec<loads::Placed> {
    let nodes: Vec<loads::Node> = files
        .iter()
        .map(|f| loads::Node {
            path: &f.rel,
            soname: f.soname.as_deref(),
            needed: f.needed.iter().map(String::as_str).collect(),
            extension: f.extension,
            mentions: &f.mentions,
        })
        .collect();
    loads::tiers(&nodes, preloads, modules)
}

/// The CUDA major a package's files link, for cuda-pathfinder's names: its runtime's, else the
/// major most of its files pin down by their SONAME and NEEDED entries (cupy-cuda13x links no
/// runtime, it loads it, but its cuBLAS module links `libcublas.so.13`); none when unknown.
pub fn cuda_major(files: &[Dynamic], catalog: &Catalog) -> Option<u32> {
    // A release before the catalog's names the file's outright (`libcudart.so.10.2`).
    let older = |n: &String| catalog.older_release_major(n);
    let runtime = files
        .iter()
        .flat_map(|f| &f.needed)
        .filter(|n| n.starts_with("libcudart.so."))
        .flat_map(|n| {
            let mut m = catalog.majors_of(n);
            m.extend(older(n));
            m
        })
        .max();
    if runtime.is_some() {
        return runtime;
    }
    let mut votes: std::collections::BTreeMap<u32, usize> = Default::default();
    for f in files {
        let mut majors = std::collections::BTreeSet::new();
        for n in f.soname.iter().chain(&f.needed) {
            if let [m] = catalog.majors_of(n)[..] {
                majors.insert(m);
            } else if let Some(m) = older(n) {
                majors.insert(m);
            }
        }
        if let [m] = majors.into_iter().collect::<Vec<_>>()[..] {
            *votes.entry(m).or_default() += 1;
        }
    }
    // Files of several majors are builds for each (cuda-cccl's `cu12/` and `cu13/`): no one
    // major, so cuda-pathfinder's names keep every SONAME it tries.
    match votes.keys().collect::<Vec<_>>()[..] {
        [one] => Some(*one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(soname: Option<&str>, needed: &[&str]) -> Dynamic {
        Dynamic {
            path: PathBuf::from("x.so"),
            rel: "x.so".into(),
            soname: soname.map(str::to_string),
            needed: needed.iter().map(|s| s.to_string()).collect(),
            extension: true,
            mentions: Vec::new(),
        }
    }

    /// The runtime a package links decides its major; without one (cupy-cuda13x loads its
    /// runtime through cuda-pathfinder), the major its files' CUDA libraries pin down does, so
    /// cuda-pathfinder's names stay in it (`cublasLt` is `libcublasLt.so.13`, not `.12`).
    #[test]
    fn the_major_is_the_runtimes_else_what_the_files_link() {
        let c = Catalog::builtin();
        let runtime = [
            file(None, &["libcudart.so.12", "libcublas.so.13"]),
            file(None, &["libcublas.so.13"]),
        ];
        assert_eq!(cuda_major(&runtime, &c), Some(12));
        let cupy13 = [
            file(None, &["libcublas.so.13", "libc.so.6"]),
            file(None, &["libcusparse.so.12"]), // 12 and 13 share this SONAME: no vote
            file(None, &["libnvrtc.so.13"]),
            file(None, &["libc.so.6"]),
        ];
        assert_eq!(cuda_major(&cupy13, &c), Some(13));
        assert_eq!(cuda_major(&[file(None, &["libc.so.6"])], &c), None);
    }
    /// The wheel directories are package directories (`nvidia/cudnn`): one moved aside under a
    /// name no import can have (`cudnn.bak`) is not where any code looks.
    #[test]
    fn a_wheel_directory_moved_aside_is_none() {
        let site = tempfile::tempdir().unwrap();
        for d in ["cudnn", "cu13", "cudnn.bak", "cuda_runtime.moved"] {
            std::fs::create_dir_all(site.path().join("nvidia").join(d).join("lib")).unwrap();
        }
        let dirs: Vec<String> = nvidia_dirs(site.path())
            .iter()
            .map(|d| {
                d.strip_prefix(site.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(dirs, ["nvidia/cu13/lib", "nvidia/cudnn/lib"]);
    }
}
