//! Where artifacts come from: wheels, conda packages, directories, single ELF files.
//!
//! Each source lists its files, picks the ELF ones without reading the rest (wheels: by name, then
//! by the member's first 4 bytes, inflated alone; directories: by a 4-byte read), and hands each
//! ELF's bytes to the analyser on the rayon pool. Disk files are memory-mapped; wheel members are
//! inflated one per worker, and one larger than its share of the memory budget goes to an unlinked
//! temporary file that is mapped, so memory is bounded whatever the core count.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use cudist_elf::is_elf;
use cudist_wheel::Wheel;
use rayon::prelude::*;

use crate::analyse::Analysed;
use crate::error::{input_error, Error};
use crate::model::{ArtifactKind, CondaMeta, InputError, WheelInfo};

type Result<T, E = Error> = std::result::Result<T, E>;

/// One artifact to inspect.
#[derive(Debug, Clone)]
pub enum Input {
    /// A wheel (`.whl`, a zip archive).
    Wheel(PathBuf),
    /// A directory: an unpacked wheel, an install prefix, a toolkit root.
    Directory(PathBuf),
    /// One ELF file.
    Elf(PathBuf),
    /// A conda package, `.conda` or `.tar.bz2`.
    Conda(PathBuf),
}

impl Input {
    /// The path the artifact was given by.
    pub fn path(&self) -> &Path {
        match self {
            Input::Wheel(p) | Input::Directory(p) | Input::Elf(p) | Input::Conda(p) => p,
        }
    }
}

/// Turns command-line paths into artifacts. A directory that holds `.whl` files at its top level is
/// a wheelhouse: each wheel is one artifact. Paths that are none of the known kinds are errors.
pub fn expand_inputs(paths: &[PathBuf]) -> (Vec<Input>, Vec<InputError>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match classify(p) {
            Ok(v) => {
                for i in v {
                    // A name that holds a control character would print raw onto a terminal
                    // (an ESC sequence, a forged line): refused, and named escaped.
                    let name = i.path().to_string_lossy();
                    if name.chars().any(char::is_control) {
                        errors.push(InputError {
                            path: cudist_fs::printable(&name, 4096),
                            error: "its name holds a control character (a newline, an escape): \
                                    printed, it could forge lines on a terminal; rename it"
                                .into(),
                            hint: None,
                        });
                    } else {
                        inputs.push(i);
                    }
                }
            }
            Err(e) => errors.push(input_error(
                cudist_fs::printable(&p.display().to_string(), 4096),
                &e,
            )),
        }
    }
    (inputs, errors)
}

fn classify(p: &Path) -> Result<Vec<Input>> {
    let meta = std::fs::metadata(p).map_err(io("cannot read it"))?;
    if meta.is_dir() {
        // A wheelhouse or a conda channel directory: each package is one artifact.
        let mut packages: Vec<Input> = std::fs::read_dir(p)
            .map_err(io("cannot list the directory"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|q| q.is_file())
            .filter_map(|q| {
                if q.extension().is_some_and(|x| x == "whl") {
                    Some(Input::Wheel(q))
                } else if cudist_conda::is_package_path(&q) {
                    Some(Input::Conda(q))
                } else {
                    None
                }
            })
            .collect();
        if packages.is_empty() {
            return Ok(vec![Input::Directory(p.to_path_buf())]);
        }
        packages.sort_by(|a, b| a.path().cmp(b.path()));
        return Ok(packages);
    }
    if cudist_conda::is_package_path(p) {
        return Ok(vec![Input::Conda(p.to_path_buf())]);
    }
    // Only a regular file is opened (a FIFO would block, a device never end).
    let mut head = [0u8; 4];
    let mut f = match cudist_fs::open_regular(p) {
        Ok(f) => f,
        Err(cudist_fs::ReadError::NotAFile { kind, .. }) => {
            return Err(Error::Message(format!("is {kind}, not a regular file")))
        }
        Err(e) => return Err(io("cannot read it")(e.into_io())),
    };
    let n = f.read(&mut head).map_err(io("cannot read it"))?;
    let head = &head[..n];
    if head == b"PK\x03\x04" || head == b"PK\x05\x06" || p.extension().is_some_and(|x| x == "whl") {
        Ok(vec![Input::Wheel(p.to_path_buf())])
    } else if is_elf(head) {
        Ok(vec![Input::Elf(p.to_path_buf())])
    } else {
        Err(Error::Message("neither a wheel (zip archive), a conda package (.conda, .tar.bz2), an ELF file nor a directory".into()))
    }
}

/// The result of scanning an artifact: its ELF files and size totals.
pub struct Scanned {
    /// What the artifact is.
    pub kind: ArtifactKind,
    /// Its size on disk (a package's file size; a directory's files).
    pub size: u64,
    /// The bytes its files take once installed.
    pub installed_size: u64,
    /// A wheel's metadata.
    pub wheel: Option<WheelInfo>,
    /// A conda package's metadata (`info/index.json`, `info/run_exports.json`).
    pub conda: Option<CondaMeta>,
    /// Its ELF files, analysed.
    pub elfs: Vec<Analysed>,
    /// Files that look like ELF but could not be read or analysed.
    pub problems: Vec<InputError>,
    /// Every regular file's install path (used to tell whether a search path lies inside),
    /// and every link to one that a wheel declares for its installer to make.
    pub files: BTreeSet<String>,
    /// The links a wheel declares ([`cudist_wheel::Wheel::declared_links`]): each link's install
    /// path → the install path of the file it leads to.
    pub links: BTreeMap<String, String>,
    /// Its Python modules and the data files they may read, for what its code loads
    /// ([`crate::loads`]).
    pub sources: Vec<crate::loads::Source>,
}

/// Keeps one source file, within the total that [`crate::loads::MAX_SOURCES_TOTAL`] allows.
fn keep_source(sources: &mut Vec<crate::loads::Source>, total: &mut u64, path: &str, bytes: &[u8]) {
    if *total + bytes.len() as u64 > crate::loads::MAX_SOURCES_TOTAL {
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    if crate::loads::worth_keeping(path, &text) {
        *total += bytes.len() as u64;
        sources.push(crate::loads::Source {
            path: path.to_string(),
            text: text.into_owned(),
        });
    }
}

/// The analyser each ELF's bytes go to.
pub type Analyse<'a> = dyn Fn(&str, &[u8]) -> Result<Analysed> + Sync + 'a;

/// Scans one artifact, analysing every ELF file in it.
pub fn scan(input: &Input, analyse: &Analyse<'_>) -> Result<Scanned> {
    match input {
        Input::Wheel(p) => scan_wheel(p, analyse),
        Input::Directory(p) => scan_dir(p, analyse),
        Input::Conda(p) => scan_conda(p, analyse),
        Input::Elf(p) => {
            let map = map_file(p)?;
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let a = analyse(&name, &map)?;
            Ok(Scanned {
                kind: ArtifactKind::Elf,
                size: map.len() as u64,
                installed_size: map.len() as u64,
                wheel: None,
                conda: None,
                elfs: vec![a],
                problems: Vec::new(),
                files: BTreeSet::from([name]),
                links: BTreeMap::new(),
                sources: Vec::new(),
            })
        }
    }
}

/// Streams a conda package's members (nothing is unpacked to disk): ELF files, told by their
/// first bytes, are read whole (large ones through an unlinked temporary file) and analysed in
/// parallel batches that together stay within the memory budget.
fn scan_conda(path: &Path, analyse: &Analyse<'_>) -> Result<Scanned> {
    use cudist_conda::{MemberKind, Next, Parts};
    let pkg = cudist_conda::read(path)?;
    let size = std::fs::metadata(path)?.len();
    let limits = cudist_fs::limits();
    let share = limits.in_memory_member(rayon::current_num_threads());
    let mut files = BTreeSet::new();
    let mut sources = Vec::new();
    let mut sources_total = 0u64;
    let mut installed_size = 0u64;
    let mut batch: Vec<(String, cudist_fs::Unpacked)> = Vec::new();
    let mut batch_bytes = 0u64;
    let mut results: Vec<(String, Result<Option<Analysed>>)> = Vec::new();
    let analyse_batch =
        |batch: &mut Vec<(String, cudist_fs::Unpacked)>,
         results: &mut Vec<(String, Result<Option<Analysed>>)>| {
            results.par_extend(
                batch
                    .par_iter()
                    .with_max_len(1)
                    .map(|(name, data)| (name.clone(), analyse(name, data).map(Some))),
            );
            batch.clear();
        };
    cudist_conda::scan(path, Parts::All, |m| {
        let MemberKind::File(size) = m.kind else {
            return Ok(Next::Continue);
        };
        if m.path.starts_with("info/") {
            return Ok(Next::Continue);
        }
        files.insert(m.path.to_string());
        installed_size += size;
        if crate::loads::is_source(m.path, size) {
            let mut text = Vec::with_capacity(size as usize);
            m.reader.take(size).read_to_end(&mut text).map_err(|_| {
                cudist_conda::Error::Invalid {
                    path: path.to_path_buf(),
                    what: "member",
                    message: format!("{} cannot be read", m.path),
                }
            })?;
            keep_source(&mut sources, &mut sources_total, m.path, &text);
            return Ok(Next::Continue);
        }
        if size < 52 || surely_not_elf(m.path) {
            return Ok(Next::Continue);
        }
        let mut head = [0u8; 4];
        m.reader
            .read_exact(&mut head)
            .map_err(|_| cudist_conda::Error::Invalid {
                path: path.to_path_buf(),
                what: "member",
                message: format!("{} ends before its declared {size} bytes", m.path),
            })?;
        if !is_elf(&head) {
            return Ok(Next::Continue);
        }
        let mut whole = (&head[..]).chain(m.reader);
        match cudist_fs::unpack_exact(&mut whole, size, share) {
            Ok(data) => {
                batch_bytes += size;
                batch.push((m.path.to_string(), data));
                if batch_bytes >= limits.memory / 2 {
                    analyse_batch(&mut batch, &mut results);
                    batch_bytes = 0;
                }
            }
            Err(e) => results.push((m.path.to_string(), Err(Error::from(e)))),
        }
        Ok(Next::Continue)
    })?;
    analyse_batch(&mut batch, &mut results);
    // In path order, as a directory scan reports them.
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let (elfs, problems) = split_results(results);
    let run_exports = pkg
        .run_exports
        .as_ref()
        .map(|r| r.weak.iter().chain(&r.strong).cloned().collect())
        .unwrap_or_default();
    Ok(Scanned {
        kind: ArtifactKind::Conda,
        size,
        installed_size,
        wheel: None,
        conda: Some(CondaMeta {
            name: pkg.name().to_string(),
            version: pkg.version(),
            build: pkg.index.build.to_string(),
            subdir: pkg.index.subdir.clone(),
            depends: pkg.index.depends.clone(),
            run_exports,
        }),
        elfs,
        problems,
        files,
        links: BTreeMap::new(),
        sources,
    })
}

/// File extensions that are never ELF: skip them without reading a byte.
fn surely_not_elf(name: &str) -> bool {
    const TEXT: &[&str] = &[
        "py", "pyi", "pyx", "pxd", "pxi", "pyc", "h", "hpp", "hh", "cuh", "inl", "c", "cc", "cpp",
        "cu", "txt", "md", "rst", "json", "toml", "cfg", "ini", "yaml", "yml", "typed", "html",
        "css", "js", "png", "svg", "cmake", "pc", "a", "lib", "zip", "gz", "whl", "csv", "license",
        "in",
    ];
    let base = name.rsplit('/').next().unwrap_or(name);
    if matches!(
        base,
        "RECORD" | "METADATA" | "WHEEL" | "LICENSE" | "INSTALLER" | "REQUESTED"
    ) {
        return true;
    }
    match base.rsplit_once('.') {
        Some((_, ext)) => TEXT.contains(&ext.to_ascii_lowercase().as_str()),
        None => false,
    }
}

/// Where a wheel member lands once installed, relative to site-packages: `.data/purelib/` and
/// `.data/platlib/` members go to the root; everything else stays where it is.
pub fn install_path(member: &str) -> String {
    if let Some((head, rest)) = member.split_once(".data/") {
        if !head.contains('/') {
            if let Some(r) = rest
                .strip_prefix("purelib/")
                .or_else(|| rest.strip_prefix("platlib/"))
            {
                return r.to_string();
            }
        }
    }
    member.to_string()
}

/// What every wheel scan starts from: its metadata (pip installs only a wheel with one
/// .dist-info holding METADATA, WHEEL and RECORD; one that has none or two is not a wheel to
/// judge), the bytes its files take once installed, and their install paths.
fn wheel_listing(wheel: &Wheel) -> Result<Listing> {
    let md = wheel.metadata()?;
    let members = wheel.members();
    let installed_size = members.iter().filter(|m| !m.is_dir).map(|m| m.size).sum();
    let links: BTreeMap<String, String> = wheel
        .declared_links(&md.dist_info)?
        .into_iter()
        .map(|(l, t)| (install_path(&l), install_path(&t)))
        .collect();
    let files = members
        .iter()
        .filter(|m| !m.is_dir)
        .map(|m| install_path(&m.name))
        .chain(links.keys().cloned())
        .collect();
    Ok(Listing {
        md,
        installed_size,
        files,
        links,
    })
}

/// What [`wheel_listing`] reads.
struct Listing {
    md: cudist_wheel::Metadata,
    installed_size: u64,
    files: BTreeSet<String>,
    links: BTreeMap<String, String>,
}

/// The model's wheel metadata.
fn wheel_info(
    md: cudist_wheel::Metadata,
    members: usize,
    slimmed: Option<crate::slim::SlimRecord>,
) -> WheelInfo {
    WheelInfo {
        name: md.name,
        version: md.version,
        tags: md.tags,
        requires_dist: md.requires_dist,
        requires_python: md.requires_python,
        members,
        slimmed,
    }
}

fn scan_wheel(path: &Path, analyse: &Analyse<'_>) -> Result<Scanned> {
    let wheel = Wheel::open(path)?;
    let Listing {
        md,
        installed_size,
        files,
        links,
    } = wheel_listing(&wheel)?;
    let members = wheel.members();
    let mut candidates: Vec<usize> = members
        .iter()
        .filter(|m| !m.is_dir && m.size >= 52 && !surely_not_elf(&m.name))
        .map(|m| m.index)
        .collect();
    // Largest first, so that one big module does not start last and leave the other cores idle.
    candidates.sort_by_key(|&i| std::cmp::Reverse(members[i].compressed_size));
    let results = candidates
        .par_iter()
        // One member per task: a few members dominate, and rayon's default chunking would put
        // them on one thread back to back.
        .with_max_len(1)
        .map(|&i| {
            let m = &members[i];
            let one = || -> Result<Option<Analysed>> {
                // Judged by its first bytes before it is inflated: only ELF files are read whole
                // (and large ones through a temporary file, not memory).
                if !is_elf(&wheel.read_prefix(i, 4)?) {
                    return Ok(None);
                }
                let data = wheel.read_member_mapped(i)?;
                if !is_elf(&data) {
                    return Ok(None);
                }
                analyse(&install_path(&m.name), &data).map(Some)
            };
            (m.name.clone(), one())
        })
        .collect::<Vec<_>>();
    let (elfs, problems) = split_results(results);
    let mut sources = Vec::new();
    let mut sources_total = 0u64;
    for m in members
        .iter()
        .filter(|m| !m.is_dir && crate::loads::is_source(&m.name, m.size))
    {
        let text = wheel.read_member(m.index)?;
        keep_source(
            &mut sources,
            &mut sources_total,
            &install_path(&m.name),
            &text,
        );
    }
    // What `cudist slim` left of the device code, when it slimmed the wheel (a record that does
    // not parse is no record).
    let slimmed = wheel
        .dist_info()
        .ok()
        .and_then(|d| {
            wheel
                .dist_info_file(&d, crate::slim::RECORD_FILE)
                .ok()
                .flatten()
        })
        .and_then(|b| serde_json::from_slice::<crate::slim::SlimRecord>(&b).ok());
    Ok(Scanned {
        kind: ArtifactKind::Wheel,
        size: wheel.file_size(),
        installed_size,
        wheel: Some(wheel_info(md, members.len(), slimmed)),
        conda: None,
        elfs,
        problems,
        files,
        links,
        sources,
    })
}

/// How much of a wheel [`scan_wheel_front`] read.
#[derive(Debug, Default, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct FrontRead {
    /// ELF members read (members named like shared libraries: `x.so`, `libx.so.12`).
    pub members_read: usize,
    /// Members whose read stopped once the device code seen answered the question: what follows
    /// in them (more containers, their dynamic section) was not read.
    pub stopped_early: Vec<String>,
    /// Members whose dynamic section was not reached: what they need is not known.
    pub dynamic_unread: Vec<String>,
    /// Bytes of members inflated.
    pub inflated: u64,
}

/// The most of a member's front kept to read its dynamic section from.
const FRONT_KEEP: u64 = 64 << 20;

/// Whether a member's name is a shared library's (`x.so`, `x.cpython-311-x86_64-linux-gnu.so`,
/// `libx.so.12.1`).
fn shared_library_name(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.find(".so") {
        Some(i) => {
            let rest = &base[i + 3..];
            rest.is_empty()
                || (rest.starts_with('.')
                    && rest[1..]
                        .split('.')
                        .all(|p| p.bytes().all(|b| b.is_ascii_digit())))
        }
        None => false,
    }
}

/// Scans a wheel whose bytes are costly to get (fetched by range requests): its central
/// directory and METADATA, then each member named like a shared library, front to back, only as
/// far as needed: through its loaded bytes (its device code and dynamic section lie there, its
/// debug information and section table after), or until `enough` says the device code seen so far
/// answers the caller's question. NEEDED and the search paths come from the dynamic section when
/// the read reached it ([`FrontRead::dynamic_unread`] lists where it did not). Python sources are
/// not read.
pub fn scan_wheel_front(
    wheel: &Wheel,
    enough: &dyn Fn(&[crate::model::DeviceEntry]) -> bool,
    catalog: &cudist_catalog::Catalog,
) -> Result<(Scanned, FrontRead)> {
    use cudist_fatbin::stream::StreamScan;
    let Listing {
        md,
        installed_size,
        files,
        links,
    } = wheel_listing(wheel)?;
    let members = wheel.members();
    let mut read = FrontRead::default();
    let mut elfs = Vec::new();
    let mut problems = Vec::new();
    // The device rows one member may have: its ELF file's share of the memory budget.
    let max_rows = crate::device::max_rows();
    for m in members
        .iter()
        .filter(|m| !m.is_dir && m.size >= 52 && shared_library_name(&m.name))
    {
        let path = install_path(&m.name);
        let mut prefix: Vec<u8> = Vec::new();
        let mut front: Option<cudist_elf::Front> = None;
        let mut scan: Option<StreamScan> = None;
        // The device entries of the scan's entries so far: an entry once listed does not
        // change, so only new ones are converted.
        let mut device: Vec<crate::model::DeviceEntry> = Vec::new();
        let mut seen = 0;
        let mut stopped = false;
        let mut bad: Option<String> = None;
        let mut too_many = false;
        let mut not_elf = false;
        let inflated = wheel.stream_member(m.index, |at, piece| {
            // The loaded bytes are kept (up to FRONT_KEEP): the dynamic section's strings need
            // not come before it (patchelf moves them to a segment of their own at the end).
            let keep = front.map_or(FRONT_KEEP, |f| {
                if f.dynamic_end.is_some() {
                    f.loaded_end.min(FRONT_KEEP)
                } else {
                    0
                }
            });
            if (prefix.len() as u64) < keep {
                let room = (keep - prefix.len() as u64).min(piece.len() as u64) as usize;
                prefix.extend_from_slice(&piece[..room]);
            }
            match (&front, &mut scan) {
                (Some(_), Some(s)) => s.feed(piece),
                _ => {
                    if prefix.len() >= 4 && !cudist_elf::is_elf(&prefix) {
                        not_elf = true;
                        return false;
                    }
                    match cudist_elf::front(&prefix) {
                        Ok(Some(f)) => {
                            wheel.expect_prefix(m.index, f.loaded_end as f64 / m.size as f64);
                            let mut s =
                                StreamScan::new(cudist_fatbin::SectionKind::NvFatbin, f.loaded_end);
                            s.feed(&prefix);
                            front = Some(f);
                            scan = Some(s);
                        }
                        Ok(None) if prefix.len() < 1 << 20 => return true,
                        Ok(None) => {
                            bad = Some("its program headers do not lie in its first MiB".into());
                            return false;
                        }
                        Err(e) => {
                            bad = Some(e.to_string());
                            return false;
                        }
                    }
                }
            }
            let (Some(f), Some(s)) = (&front, &scan) else {
                return true;
            };
            if s.entries().len() != seen {
                for e in &s.entries()[seen..] {
                    crate::device::push_device_entries(e, &mut device);
                }
                seen = s.entries().len();
                if device.len() > max_rows {
                    too_many = true;
                    return false;
                }
                if enough(&device) {
                    stopped = true;
                    return false;
                }
            }
            at + (piece.len() as u64) < f.loaded_end
        });
        let inflated = match inflated {
            Ok(n) => n,
            // The network or the disk failing is no problem of this member: the read ends.
            Err(e) if crate::error::machine_fault(crate::error::chain(&e)).is_some() => {
                return Err(e.into())
            }
            Err(e) => {
                problems.push(input_error(m.name.clone(), &e));
                continue;
            }
        };
        read.inflated += inflated;
        if not_elf {
            continue;
        }
        let (Some(f), Some(mut s)) = (front, scan) else {
            problems.push(InputError {
                path: m.name.clone(),
                error: bad.unwrap_or_else(|| "its ELF header is cut short".into()),
                hint: None,
            });
            continue;
        };
        read.members_read += 1;
        if too_many {
            problems.push(InputError {
                path: m.name.clone(),
                error: format!(
                    "its device code: {}",
                    cudist_fatbin::FatbinError::TooManyEntries { limit: max_rows }
                ),
                hint: None,
            });
            continue;
        }
        s.finish();
        for e in &s.entries()[seen..] {
            crate::device::push_device_entries(e, &mut device);
        }
        if stopped {
            read.stopped_early.push(path.clone());
        }
        if let Some(p) = s.problem() {
            problems.push(InputError {
                path: m.name.clone(),
                error: format!("its device code: {p}"),
                hint: None,
            });
        }
        let whole = prefix.len() as u64 >= f.loaded_end;
        let elf = match f.dynamic_end {
            Some(end) if end <= prefix.len() as u64 => match cudist_elf::parse_front(&mut prefix) {
                Ok(elf) => Some(elf),
                // Its strings lie past what was kept or read: not known.
                Err(_) if !whole => {
                    read.dynamic_unread.push(path.clone());
                    None
                }
                Err(e) => {
                    problems.push(input_error(m.name.clone(), &e));
                    continue;
                }
            },
            Some(_) => {
                read.dynamic_unread.push(path.clone());
                None
            }
            None => None,
        };
        elfs.push(crate::analyse::analyse_front(
            &path,
            m.size,
            &f,
            elf.as_ref(),
            device,
            catalog,
        ));
    }
    let wheel_info = wheel_info(md, members.len(), None);
    Ok((
        Scanned {
            kind: ArtifactKind::Wheel,
            size: wheel.file_size(),
            installed_size,
            wheel: Some(wheel_info),
            conda: None,
            elfs,
            problems,
            files,
            links,
            sources: Vec::new(),
        },
        read,
    ))
}

fn scan_dir(root: &Path, analyse: &Analyse<'_>) -> Result<Scanned> {
    let mut files = Vec::new();
    walk(root, "", &mut files)?;
    let size = files.iter().map(|(_, _, s)| *s).sum();
    let results = files
        .par_iter()
        .with_max_len(1)
        .filter(|(rel, _, size)| *size >= 52 && !surely_not_elf(rel))
        .map(|(rel, abs, _)| {
            let one = || -> Result<Option<Analysed>> {
                let mut head = [0u8; 4];
                let n = File::open(abs)
                    .and_then(|mut f| f.read(&mut head))
                    .map_err(io("cannot read"))?;
                if !is_elf(&head[..n]) {
                    return Ok(None);
                }
                let map = map_file(abs)?;
                analyse(rel, &map).map(Some)
            };
            (rel.clone(), one())
        })
        .collect::<Vec<_>>();
    let (elfs, problems) = split_results(results);
    let mut sources = Vec::new();
    let mut sources_total = 0u64;
    for (rel, abs, size) in files
        .iter()
        .filter(|(rel, _, size)| crate::loads::is_source(rel, *size))
    {
        // A module that cannot be read is left out of what the package loads, not an error of
        // the tree: its ELF files are what is judged.
        let mut text = Vec::with_capacity(*size as usize);
        if File::open(abs)
            .and_then(|f| f.take(crate::loads::MAX_SOURCE).read_to_end(&mut text))
            .is_ok()
        {
            keep_source(&mut sources, &mut sources_total, rel, &text);
        }
    }
    Ok(Scanned {
        kind: ArtifactKind::Directory,
        size,
        installed_size: size,
        wheel: None,
        conda: None,
        elfs,
        problems,
        files: files.into_iter().map(|(rel, _, _)| rel).collect(),
        links: BTreeMap::new(),
        sources,
    })
}

/// Separates the files that were analysed from those that could not be: a malformed file is a
/// problem of its artifact, reported with the rest of it, not the end of the whole report.
fn split_results(
    results: Vec<(String, Result<Option<Analysed>>)>,
) -> (Vec<Analysed>, Vec<InputError>) {
    let mut elfs = Vec::new();
    let mut problems = Vec::new();
    for (path, r) in results {
        match r {
            Ok(Some(a)) => elfs.push(a),
            Ok(None) => {}
            Err(e) => problems.push(input_error(path, &e)),
        }
    }
    (elfs, problems)
}

/// Lists regular files below `dir` (symbolic links are not followed: their targets are listed
/// where they live, so nothing is counted twice).
fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf, u64)>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(format!("cannot list {}", dir.display())))?
        .collect::<std::io::Result<_>>()
        .map_err(io(format!("cannot list {}", dir.display())))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&e.path(), &r, out)?;
        } else if ft.is_file() {
            let len = e.metadata()?.len();
            out.push((r, e.path(), len));
        }
    }
    Ok(())
}

/// A closure turning an I/O error into [`Error::Io`] with the given context.
fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// Maps a file read-only. Empty files map to an empty slice.
fn map_file(p: &Path) -> Result<memmap2::Mmap> {
    cudist_elf::map_file(p).map_err(io(format!("cannot open {}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_paths() {
        assert_eq!(install_path("foo-1.0.data/platlib/foo/x.so"), "foo/x.so");
        assert_eq!(
            install_path("foo-1.0.data/scripts/tool"),
            "foo-1.0.data/scripts/tool"
        );
        assert_eq!(install_path("foo/bar.so"), "foo/bar.so");
        assert_eq!(install_path("foo/x.data/purelib/y"), "foo/x.data/purelib/y");
    }

    #[test]
    fn name_filters() {
        assert!(surely_not_elf("cupy/_core/include/a.cuh"));
        assert!(surely_not_elf("x.dist-info/RECORD"));
        assert!(!surely_not_elf(
            "cupy/_core/core.cpython-311-x86_64-linux-gnu.so"
        ));
        assert!(!surely_not_elf("bin/nvcc"));
    }
}
