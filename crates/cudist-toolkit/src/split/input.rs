//! What `cudist split` reads: the CUDA wheels of a site-packages directory, NVIDIA's
//! redistributable archives (`cuda_cudart-linux-x86_64-13.0.96-archive`, unpacked or as
//! `.tar.xz`), optionally named and verified by a `redistrib_<ver>.json` manifest, or a CUDA
//! toolkit tree (a `CUDA_HOME`: `/usr/local/cuda-X.Y`, a root `cudist toolkit` wrote).
//!
//! Wheels name each file's component through their RECORD, archives through their name; a
//! toolkit tree has no such record, so its files are placed by the catalog: the header and file
//! rules (`headers.toml`, `files.toml`), then each library's SONAME (`libraries.toml`).
//!
//! Every reader gives the same thing: components, each with its files under the paths they have in
//! a CUDA root (`lib64/libcudart.so.13`, `include/cuda.h`, `bin/nvcc`), and its license files
//! under `share/licenses/<component>/`. Symbolic links of the input are not carried over: the
//! SONAME and linker-name links are made again from each library's SONAME, so a broken or
//! missing chain in the input is repaired in the output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cudist_analysis::error::{bad_input, Result, ResultExt};
use cudist_catalog::Catalog;
use serde::Deserialize;

use cudist_analysis::environment::{check_versions, Source, Spec, MARKER};

/// One component of the input.
#[derive(Debug)]
pub struct InputComponent {
    /// NVIDIA's key (`cuda_cudart`).
    pub component: String,
    /// Where it came from: the wheel's name, or the archive's.
    pub package: String,
    /// The pip name, for PEP 508 pins (wheels only).
    pub pip: Option<String>,
    /// Its version.
    pub version: String,
    /// Its license, as its metadata states it.
    pub license: Option<String>,
    /// (path in a CUDA root, file on disk); licenses under `share/licenses/`.
    pub files: Vec<(String, PathBuf)>,
}

/// The input of a split.
#[derive(Debug)]
pub struct Input {
    /// `site-packages`, `redist` or `tree`.
    pub kind: &'static str,
    /// The CUDA major, when every component agrees on one.
    pub cuda_major: Option<u32>,
    /// The components, each with its files.
    pub components: Vec<InputComponent>,
    /// Archives given by `--manifest` whose platform entry is missing from the directory.
    pub missing: Vec<String>,
    /// Files of a toolkit tree no catalog rule gives a component (placed in [`OTHER`]).
    pub unplaced: Vec<String>,
    /// Links of the input that were not followed, and why (a link out of a toolkit tree).
    pub skipped: Vec<super::Skipped>,
    /// Where `.tar.xz` archives were unpacked; removed when the input is dropped.
    pub _unpacked: Option<cudist_fs::ScratchDir>,
}

/// NVIDIA's platform name for this machine in redistrib manifests and archive names.
pub fn redist_platform() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "linux-sbsa",
        "powerpc64" => "linux-ppc64le",
        _ => "linux-x86_64",
    }
}

/// Reads INPUT: a site-packages directory (it has `*.dist-info`), else a directory of NVIDIA
/// redistributable archives (or one unpacked archive).
pub fn read(
    input: &Path,
    manifest: Option<&Path>,
    scratch: &Path,
    catalog: &Catalog,
) -> Result<Input> {
    // `scratch` is the directory unpacked archives go to (in a directory of its own with an
    // unpredictable name, removed with the input).
    let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(input)
        .input_context(|| format!("{}: not a directory", input.display()))?
        .flatten()
        .collect();
    let name_of = |e: &std::fs::DirEntry| e.file_name().to_string_lossy().into_owned();
    if manifest.is_none() && entries.iter().any(|e| name_of(e).ends_with(".dist-info")) {
        return site_packages(input, catalog);
    }
    if manifest.is_some()
        || parse_archive_name(&input.file_name().unwrap_or_default().to_string_lossy()).is_some()
        || entries
            .iter()
            .any(|e| parse_archive_name(&name_of(e)).is_some())
    {
        return redist(input, manifest, scratch);
    }
    if ["include", "lib64", "bin", "targets", "version.json"]
        .iter()
        .any(|n| input.join(n).exists())
    {
        return tree(input, catalog);
    }
    Err(bad_input(format!(
        "{}: neither a site-packages directory (no .dist-info), NVIDIA redistributable archives \
         (no <component>-{}-<version>-archive[.tar.xz]) nor a CUDA toolkit tree (no include/, lib64/, \
         bin/, targets/ or version.json); split reads one of those",
        input.display(),
        redist_platform()
    )))
}

fn site_packages(input: &Path, catalog: &Catalog) -> Result<Input> {
    let source = Source::read(
        &Spec {
            site_packages: vec![std::path::absolute(input)?],
            ..Spec::default()
        },
        catalog,
    )?;
    if source.packages.is_empty() {
        return Err(bad_input(format!(
            "{}: no NVIDIA CUDA wheels installed there",
            input.display()
        )));
    }
    let cuda_major = check_versions(&source, catalog)?;
    let mut components = Vec::new();
    for p in &source.packages {
        let component = match catalog.component_by_pip(&p.name) {
            Some((c, _)) => c.redist.clone(),
            None => cudist_wheel::installed::normalise(&p.name)
                .trim_start_matches("nvidia-")
                .replace('-', "_"),
        };
        let mut files = Vec::new();
        for f in &p.files {
            let Some(dest) = &f.dest else { continue };
            std::fs::metadata(&f.abs)
                .with_context(|| format!("{} (from {}): missing", f.abs.display(), p.name))?;
            files.push((dest.clone(), f.abs.clone()));
        }
        components.push(InputComponent {
            component,
            package: p.name.clone(),
            pip: Some(p.name.clone()),
            version: p.version.clone(),
            license: p.dist_info.as_deref().and_then(license_of),
            files,
        });
    }
    Ok(Input {
        kind: "site-packages",
        cuda_major: Some(cuda_major),
        components,
        missing: Vec::new(),
        unplaced: Vec::new(),
        skipped: Vec::new(),
        _unpacked: None,
    })
}

/// The license a wheel's METADATA states (`License-Expression`, else `License`).
fn license_of(dist_info: &Path) -> Option<String> {
    let bytes = cudist_fs::read_bounded(&dist_info.join("METADATA"), cudist_fs::SMALL_FILE).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let header = text.split("\n\n").next().unwrap_or("");
    let field = |key: &str| {
        header.lines().find_map(|l| {
            l.strip_prefix(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty() && v != "UNKNOWN")
        })
    };
    field("License-Expression:").or_else(|| field("License:"))
}

/// `cuda_cudart-linux-x86_64-13.0.96-archive[.tar.xz]` → (`cuda_cudart`, `13.0.96`), for this
/// machine's platform.
pub fn parse_archive_name(name: &str) -> Option<(String, String)> {
    let stem = name.strip_suffix(".tar.xz").unwrap_or(name);
    let stem = stem.strip_suffix("-archive")?;
    let (component, version) = stem.split_once(&format!("-{}-", redist_platform()))?;
    if component.is_empty() || !version.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some((component.to_string(), version.to_string()))
}

/// One entry of a `redistrib_<ver>.json` manifest.
#[derive(Debug, Deserialize)]
struct RedistEntry {
    #[serde(default)]
    license: Option<String>,
    version: String,
    #[serde(flatten)]
    platforms: BTreeMap<String, serde_json::Value>,
}

/// A platform's archive in the manifest.
#[derive(Debug, Deserialize)]
struct RedistArchive {
    relative_path: String,
    sha256: String,
    /// NVIDIA writes it as a string of digits.
    #[serde(default)]
    size: Option<serde_json::Value>,
}

/// What the manifest says of one component on this platform.
struct Expected {
    component: String,
    version: String,
    license: Option<String>,
    archive: RedistArchive,
}

fn read_manifest(path: &Path) -> Result<(Option<String>, Vec<Expected>)> {
    let text = cudist_fs::read_bounded(path, cudist_fs::SMALL_FILE)?;
    let top: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&text)
        .with_context(|| {
            format!(
                "{}: not a JSON object (a redistrib_<ver>.json manifest)",
                path.display()
            )
        })?;
    let label = top
        .get("release_label")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let mut out = Vec::new();
    for (key, value) in &top {
        if !value.is_object() {
            continue; // release_date, release_label, release_product
        }
        let entry: RedistEntry = serde_json::from_value(value.clone()).with_context(|| {
            format!("{}: component {key}: not a manifest entry", path.display())
        })?;
        let Some(arch) = entry.platforms.get(redist_platform()) else {
            continue;
        };
        let archive: RedistArchive = serde_json::from_value(arch.clone()).with_context(|| {
            format!(
                "{}: {key}.{}: needs relative_path and sha256",
                path.display(),
                redist_platform()
            )
        })?;
        // Archives are looked for below the input directory only.
        cudist_fs::within_root(&archive.relative_path).map_err(|e| {
            cudist_analysis::error::bad_input(format!(
                "{}: {key}.{}.relative_path: {e}",
                path.display(),
                redist_platform()
            ))
        })?;
        out.push(Expected {
            component: key.clone(),
            version: entry.version,
            license: entry.license,
            archive,
        });
    }
    if out.is_empty() {
        return Err(bad_input(format!(
            "{}: no component has a {} archive; is it a redistrib_<ver>.json manifest?",
            path.display(),
            redist_platform()
        )));
    }
    Ok((label, out))
}

/// Unpacks a `.tar.xz` archive into `dest` through [`cudist_fs::Unpacker`]: members land under
/// `dest` and nowhere else (no `..`, no absolute names, no file written through a link member, no
/// link member pointing out), and the archive unpacks to at most the limit in force.
fn unpack(archive: &Path, dest: &Path) -> Result<()> {
    let f = cudist_fs::open_regular(archive)?;
    let mut tar = tar::Archive::new(liblzma::read::XzDecoder::new(std::io::BufReader::new(f)));
    std::fs::create_dir_all(dest)?;
    let mut u = cudist_fs::Unpacker::new(dest, cudist_fs::limits().unpacked)?;
    let named = |e: cudist_fs::ExtractError| {
        cudist_analysis::error::bad_input(format!("{}: {e}", archive.display()))
    };
    for entry in tar
        .entries()
        .with_context(|| format!("{}: not a tar.xz archive", archive.display()))?
    {
        let mut entry = entry.with_context(|| format!("{}: damaged archive", archive.display()))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let header = entry.header();
        let link = || {
            entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default()
        };
        match header.entry_type() {
            tar::EntryType::Directory => u.dir(&name).map_err(named)?,
            tar::EntryType::Symlink => u.symlink(&name, &link()).map_err(named)?,
            tar::EntryType::Link => u.hard_link(&name, &link()).map_err(named)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = header.size()?;
                let mode = header.mode().ok();
                u.file(&name, size, mode, &mut entry).map_err(named)?;
            }
            // Devices, FIFOs, PAX and GNU extension headers carry no file of a toolkit.
            _ => {}
        }
    }
    Ok(())
}

fn redist(input: &Path, manifest: Option<&Path>, scratch: &Path) -> Result<Input> {
    // The archives to read: (component, version, license, unpacked directory).
    let mut dirs: Vec<(String, String, Option<String>, PathBuf)> = Vec::new();
    let mut missing = Vec::new();
    let mut unpacked: Option<cudist_fs::ScratchDir> = None;
    let mut label = None;
    let mut unpack_to = |archive: &Path, name: &str| -> Result<PathBuf> {
        let work = match &unpacked {
            Some(d) => d.path().to_path_buf(),
            None => unpacked
                .insert(cudist_fs::scratch_dir(scratch, "unpack")?)
                .path()
                .to_path_buf(),
        };
        let dest = work.join(name);
        unpack(archive, &dest)?;
        // An archive holds one directory named as the archive.
        let inner = dest.join(name.strip_suffix(".tar.xz").unwrap_or(name));
        Ok(if inner.is_dir() { inner } else { dest })
    };
    if let Some(mpath) = manifest {
        let (l, expected) = read_manifest(mpath)?;
        label = l;
        for e in expected {
            let file = e
                .archive
                .relative_path
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            let candidates = [input.join(&e.archive.relative_path), input.join(&file)];
            let Some(path) = candidates.iter().find(|p| p.is_file()) else {
                missing.push(e.component.clone());
                continue;
            };
            let (size, sha) = super::sha256_file(path)?;
            if sha != e.archive.sha256.to_ascii_lowercase() {
                return Err(bad_input(format!(
                    "{}: sha256 {sha} does not match the manifest's {} for {} ({}); the archive is damaged or not the one released",
                    path.display(),
                    e.archive.sha256,
                    e.component,
                    mpath.display()
                )));
            }
            let want_size = e.archive.size.as_ref().and_then(|v| match v {
                serde_json::Value::String(s) => s.parse::<u64>().ok(),
                v => v.as_u64(),
            });
            if want_size.is_some_and(|w| w != size) {
                return Err(bad_input(format!(
                    "{}: {size} bytes, the manifest says {}",
                    path.display(),
                    want_size.unwrap_or(0)
                )));
            }
            let dir = unpack_to(path, &file)?;
            dirs.push((e.component, e.version, e.license, dir));
        }
        if dirs.is_empty() {
            return Err(bad_input(format!(
                "{}: none of the {} archives {} lists is there (looked for each relative_path and its file name)",
                input.display(),
                redist_platform(),
                mpath.display()
            )));
        }
    } else {
        let own = input
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut names: Vec<(String, PathBuf)> =
            if parse_archive_name(&own).is_some() && input.is_dir() {
                vec![(own, input.to_path_buf())]
            } else {
                std::fs::read_dir(input)?
                    .flatten()
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .filter(|(n, _)| parse_archive_name(n).is_some())
                    .collect()
            };
        names.sort();
        for (name, path) in names {
            let (component, version) = parse_archive_name(&name).expect("filtered above");
            // Both the unpacked directory and its .tar.xz: read the directory once.
            if name.ends_with(".tar.xz") && dirs.iter().any(|d| d.0 == component && d.1 == version)
            {
                continue;
            }
            let dir = if name.ends_with(".tar.xz") {
                unpack_to(&path, &name)?
            } else if path.is_dir() {
                path
            } else {
                continue;
            };
            if dirs.iter().any(|d| d.0 == component && d.1 == version) {
                continue;
            }
            dirs.push((component, version, None, dir));
        }
    }
    let mut components = Vec::new();
    let mut skipped = Vec::new();
    for (component, version, license, dir) in dirs {
        components.push(InputComponent {
            files: archive_files(&dir, &component, &mut skipped)?,
            package: format!("{component}-{}-{version}-archive", redist_platform()),
            pip: None,
            component,
            version,
            license,
        });
    }
    // The CUDA major: the runtime's or nvcc's version, else the manifest's release.
    let cuda_major = ["cuda_cudart", "cuda_nvcc"]
        .iter()
        .find_map(|k| components.iter().find(|c| c.component == *k))
        .map(|c| c.version.clone())
        .or(label)
        .and_then(|v| v.split('.').next()?.parse().ok());
    Ok(Input {
        kind: "redist",
        cuda_major,
        components,
        missing,
        unplaced: Vec::new(),
        skipped,
        _unpacked: unpacked,
    })
}

/// The files of one unpacked archive, under their CUDA-root paths: `lib/` → `lib64/`,
/// `pkg-config/` → `lib64/pkgconfig/`, `LICENSE` → `share/licenses/<component>/LICENSE`. Links
/// are left out (made again from the SONAMEs).
fn archive_files(
    dir: &Path,
    component: &str,
    skipped: &mut Vec<super::Skipped>,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let e = e?;
            let ft = e.file_type()?;
            let mut path = e.path();
            if ft.is_dir() {
                stack.push(path);
                continue;
            }
            let rel_of = |p: &Path| {
                p.strip_prefix(dir)
                    .expect("under dir")
                    .to_string_lossy()
                    .into_owned()
            };
            if ft.is_symlink() {
                // A library chain is made again from the SONAMEs.
                let is_chain = path
                    .file_name()
                    .map(|n| n.to_string_lossy().contains(".so"))
                    .unwrap_or(false);
                if is_chain {
                    continue;
                }
                // Any other link to a file of the archive is kept as a copy of that file; a link
                // that leads out of the archive is never followed.
                match cudist_fs::resolve_beneath(dir, &rel_of(&path)) {
                    Ok(t) if t.is_file() => path = t,
                    Ok(_) => continue,
                    Err(e) => {
                        skipped.push(super::Skipped {
                            path: rel_of(&path),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                }
            } else if !ft.is_file() {
                continue; // a FIFO, socket or device is no file of a toolkit
            }
            let rel = rel_of(&e.path());
            let dest = if let Some(rest) = rel.strip_prefix("lib/") {
                format!("lib64/{rest}")
            } else if let Some(rest) = rel.strip_prefix("pkg-config/") {
                format!("lib64/pkgconfig/{rest}")
            } else if !rel.contains('/') && rel.to_ascii_uppercase().starts_with("LICENSE") {
                format!("share/licenses/{component}/{rel}")
            } else {
                rel
            };
            out.push((dest, path));
        }
    }
    out.sort();
    Ok(out)
}

/// The component of the files of a toolkit tree that no catalog rule places.
pub const OTHER: &str = "cuda_other";

/// A CUDA toolkit tree: every file placed by the catalog's rules.
fn tree(input: &Path, catalog: &Catalog) -> Result<Input> {
    let root = std::fs::canonicalize(input)
        .with_context(|| format!("{}: cannot resolve", input.display()))?;
    // version.json: the toolkit's release and each component's version.
    let mut versions: BTreeMap<String, String> = BTreeMap::new();
    if let Ok(text) = cudist_fs::read_bounded(&root.join("version.json"), cudist_fs::SMALL_FILE) {
        let v: serde_json::Value = serde_json::from_slice(&text)
            .with_context(|| format!("{}: not JSON", root.join("version.json").display()))?;
        for (k, e) in v.as_object().into_iter().flatten() {
            if let Some(ver) = e.get("version").and_then(|x| x.as_str()) {
                versions.insert(k.clone(), ver.to_string());
            }
        }
    }
    let mut skipped = Vec::new();
    let files = walk_tree(&root, &trusted_targets(&root, catalog), &mut skipped)?;
    // The CUDA major: version.json's, else the runtime's SONAME.
    let cuda_major = versions
        .get("cuda")
        .and_then(|v| v.split('.').next()?.parse().ok())
        .or_else(|| {
            files.iter().find_map(|(dest, _)| {
                dest.strip_prefix("lib64/libcudart.so.")?
                    .split('.')
                    .next()?
                    .parse()
                    .ok()
            })
        });
    let mut by_component: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for (dest, abs) in files {
        let component = place(&dest, &abs, cuda_major, catalog).unwrap_or_else(|| {
            unplaced.push(dest.clone());
            OTHER.to_string()
        });
        by_component.entry(component).or_default().push((dest, abs));
    }
    if by_component.is_empty() {
        return Err(bad_input(format!(
            "{}: no files in this toolkit tree",
            input.display()
        )));
    }
    let release = versions.get("cuda").cloned();
    let components = by_component
        .into_iter()
        .map(|(component, files)| InputComponent {
            version: versions
                .get(&component)
                .or(release.as_ref())
                .cloned()
                .unwrap_or_else(|| "0".into()),
            package: component.clone(),
            pip: None,
            license: None,
            component,
            files,
        })
        .collect();
    Ok(Input {
        kind: "tree",
        cuda_major,
        components,
        missing: Vec::new(),
        unplaced,
        skipped,
        _unpacked: None,
    })
}

/// The files outside a toolkit tree that its links may lead to. Links that leave the input are
/// never followed, with one exception: a root `cudist toolkit` made by linking names the
/// environment it links into in its marker file, and its links may lead to the files that the
/// CUDA packages of that environment list in their `RECORD` (or conda-meta) — read with the same
/// containment rules as any environment. The marker alone vouches for nothing: a forged one can
/// only name files that CUDA packages installed.
fn trusted_targets(root: &Path, catalog: &Catalog) -> std::collections::BTreeSet<PathBuf> {
    let Some(spec) = Spec::from_marker(root) else {
        return Default::default();
    };
    let Ok(source) = Source::read(&spec, catalog) else {
        return Default::default();
    };
    source
        .packages
        .iter()
        .flat_map(|p| &p.files)
        .filter_map(|f| std::fs::canonicalize(&f.abs).ok())
        .collect()
}

/// The component of one file of a toolkit tree: the path rules, else the SONAME (shared
/// libraries) or the archive name (static libraries) in the libraries table, else the wheel
/// named by a `share/licenses/<wheel>/` directory.
fn place(dest: &str, abs: &Path, major: Option<u32>, catalog: &Catalog) -> Option<String> {
    if let Some(c) = catalog.component_of_path(dest, major) {
        return Some(c.to_string());
    }
    let name = dest.rsplit('/').next().unwrap_or(dest);
    // A pkg-config file is named after its library (`cublasLt-13.5.pc`, `cublasLt.pc`).
    if let Some(pc) = dest
        .strip_prefix("lib64/pkgconfig/")
        .and_then(|n| n.strip_suffix(".pc"))
    {
        let stem = match pc.rsplit_once('-') {
            Some((s, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => s,
            _ => pc,
        };
        let lib = format!("lib{stem}");
        return catalog
            .libraries
            .iter()
            .find(|l| l.stem == lib)?
            .component
            .clone();
    }
    if name.contains(".so") && cudist_analysis::elf_files::is_loadable_elf(abs) {
        let data = cudist_elf::map_file(abs).ok()?;
        let elf = cudist_elf::ElfFile::parse(&data).ok()?;
        let soname = elf.soname.unwrap_or_else(|| name.to_string());
        return catalog
            .library_by_soname(&soname)?
            .library
            .component
            .clone();
    }
    if name.ends_with(".a") {
        return catalog
            .libraries
            .iter()
            .find(|l| l.static_archives.iter().any(|a| a == name))?
            .component
            .clone();
    }
    if let Some(rest) = dest.strip_prefix("share/licenses/") {
        let wheel = rest.split('/').next()?;
        return Some(catalog.component_by_pip(wheel)?.0.redist.clone());
    }
    None
}

/// The files of a toolkit tree under their CUDA-root paths. `targets/<triple>/{lib,include}`
/// (where NVIDIA's installers keep them) read as `lib64/` and `include/`, and `lib/` as `lib64/`.
/// Links to directories are not followed (`lib64 -> targets/x86_64-linux/lib`, `lib -> lib64`);
/// links between the tree's own libraries are chains, made again from the SONAMEs; other links to
/// files of the tree are read as those files. A link that leaves the tree is followed only to one
/// of `trusted` (see [`trusted_targets`]); any other is listed in `skipped`, never read.
fn walk_tree(
    root: &Path,
    trusted: &std::collections::BTreeSet<PathBuf>,
    skipped: &mut Vec<super::Skipped>,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let e = e?;
            let path = e.path();
            let ft = e.file_type()?;
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if ft.is_dir() {
                stack.push(path);
                continue;
            }
            if rel == MARKER {
                continue; // cudist's own bookkeeping
            }
            let source = if ft.is_symlink() {
                let Ok(target) = std::fs::canonicalize(&path) else {
                    continue; // dangling
                };
                // A library chain is a link whose own target is in the tree
                // (`libcudart.so -> libcudart.so.13`), even where that target is in turn a link
                // out of it (a root of links `cudist toolkit` made).
                let first_hop = std::fs::read_link(&path)
                    .map(|t| cudist_fs::inner::lexical(&path.parent().unwrap_or(root).join(t)))
                    .unwrap_or_default();
                let chain = rel.contains(".so")
                    && (target.starts_with(root) || first_hop.starts_with(root));
                if !target.is_file() || chain {
                    continue; // a link to a directory, or a library chain
                }
                if !target.starts_with(root) && !trusted.contains(&target) {
                    skipped.push(super::Skipped {
                        path: rel,
                        reason: format!(
                            "a link to {}, outside the tree: not followed",
                            target.display()
                        ),
                    });
                    continue;
                }
                target
            } else if ft.is_file() {
                path.clone()
            } else {
                continue; // a FIFO, socket or device is no file of a toolkit
            };
            let dest = match rel.strip_prefix("targets/").and_then(|t| t.split_once('/')) {
                Some((_triple, inner)) => match inner.split_once('/') {
                    Some(("lib" | "lib64", below)) => format!("lib64/{below}"),
                    Some((top, below)) => format!("{top}/{below}"),
                    None => inner.to_string(),
                },
                None => match rel.strip_prefix("lib/") {
                    Some(below) => format!("lib64/{below}"),
                    None => rel,
                },
            };
            out.push((dest, source));
        }
    }
    // Two files can land on one path (`lib/x` and `lib64/x` as real directories): the manifest
    // decides which is placed (`settle`), and says so.
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names() {
        let p = redist_platform();
        assert_eq!(
            parse_archive_name(&format!("cuda_cudart-{p}-13.0.96-archive.tar.xz")),
            Some(("cuda_cudart".into(), "13.0.96".into()))
        );
        assert_eq!(
            parse_archive_name(&format!("libcublas-{p}-13.1.0.3-archive")),
            Some(("libcublas".into(), "13.1.0.3".into()))
        );
        assert_eq!(
            parse_archive_name("cuda_cudart-windows-x86_64-13.0.96-archive.zip"),
            None
        );
        assert_eq!(parse_archive_name("random-dir"), None);
    }
}
