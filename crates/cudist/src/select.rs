//! `cudist select`: the build of a package to install on a machine, from candidate wheels, judged
//! by what they contain (cudist_analysis::select).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use cudist_analysis::open::{expand_inputs, Input};
use cudist_analysis::runtime::host::Host;
use cudist_analysis::select::{family, judge, Judged};
use cudist_catalog::Catalog;
use serde::Serialize;

use crate::errors;
use crate::util;

/// The `schema` of `cudist select --json`.
pub const SCHEMA: &str = "cudist.select/1";

/// `cudist select` arguments.
#[derive(clap::Args, Debug)]
pub struct SelectArgs {
    /// Candidate wheels, or wheelhouse directories (every `.whl` at their top level).
    #[arg(
        value_name = "CANDIDATE",
        required_unless_present_any = ["variant_properties", "index", "find_links"]
    )]
    pub candidates: Vec<PathBuf>,
    /// A package index's simple API (`https://pypi.org/simple`, a mirror, `http://…`): the newest
    /// release of each `--package` is listed there (PEP 691 JSON or PEP 503 HTML); wheels the file
    /// name already rules out are not fetched; the others are read by range requests as far as
    /// the judgement needs (`--fetch front`), or fetched whole into the cache (`--fetch whole`).
    /// Repeatable: builds on separate per-CUDA indexes (PyTorch's `…/whl/cu126`, `…/whl/cu130`)
    /// are compared together, and `--print-requirement` names the index of the one chosen.
    #[arg(long, value_name = "URL", requires = "package")]
    pub index: Vec<String>,
    /// As pip's `--find-links`: a directory of wheels (read like a CANDIDATE directory), or the
    /// URL of an HTML page linking to wheels (a `find-links` page, as JAX and PyG publish): the
    /// newest release of each `--package` among its links is judged, read as `--index` wheels
    /// are, and `--print-requirement` adds `--find-links URL`. Repeatable.
    #[arg(long, value_name = "URL|DIR", requires = "package")]
    pub find_links: Vec<String>,
    /// How a wheel on an index is read: `front` (the default) asks for byte ranges: the central
    /// directory, METADATA, and each shared library from its start only as far as needed (its
    /// device code up to a cubin for each GPU's own SM, its dynamic section), and wheels that
    /// cannot rank above one already read are not read at all; `whole` fetches each wheel into
    /// the cache and reads all of it (what a server without range requests gets too).
    #[arg(long, value_enum, default_value = "front")]
    pub fetch: Fetch,
    /// The size of one range request (`16K`, `1M`). By default each request is as large as the
    /// link makes worth it: the bytes that arrive in the time a request takes to make, measured
    /// as the read goes (small on a slow link, up to 16 MiB on a fast one with a slow start).
    /// A small fixed size keeps the bytes received to the least, at the cost of more requests.
    #[arg(long, value_name = "SIZE", value_parser = parse_range_size)]
    pub range_size: Option<u64>,
    /// Where fetched wheels are kept, by sha256 (default: $XDG_CACHE_HOME/cudist/wheels, else
    /// ~/.cache/cudist/wheels).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Print the host's wheel-variant properties (`nvidia :: sm_arch :: 90_real`, one per line, in
    /// priority order), as NVIDIA's variant provider plugin would report them, then the x86-64
    /// level's (`x86_64 :: level :: v3`), as the x86-64 provider would; no candidates.
    #[arg(long, conflicts_with_all = ["json", "print_requirement", "candidates"])]
    pub variant_properties: bool,
    /// Only candidates of this package: its name, or the family name its builds share
    /// (`cupy` for cupy-cuda12x and cupy-cuda13x, `torch`). With --index, the projects to list
    /// there (repeatable: `--package cupy-cuda12x --package cupy-cuda13x`), each with an
    /// optional version specifier, as pip takes one (`jax<0.11`, `demo>=2.0rc1`).
    #[arg(long, value_name = "NAME[SPEC]")]
    pub package: Vec<String>,
    /// The machine: a doctor `--host` profile (FILE), or `this` (the default).
    #[arg(long, value_name = "FILE|this", default_value = "this")]
    pub host: String,
    /// The Python the wheel is for: a version (`3.11`) or an interpreter to ask; default: the
    /// profile's `python`, else `python3` on PATH.
    #[arg(long, value_name = "VERSION|PATH")]
    pub python: Option<String>,
    /// Print only the requirement to hand to pip or uv (`cupy-cuda12x==14.2.0`); when no
    /// candidate works, nothing on stdout (the report goes to stderr) and exit 1.
    #[arg(long, conflicts_with = "json")]
    pub print_requirement: bool,
    /// Print the report as JSON (schema cudist.select/1).
    #[arg(long)]
    pub json: bool,
    /// List every wheel in the report, those ruled out by their file names (other Pythons and
    /// platforms) too; by default they are counted in one line.
    #[arg(long)]
    pub all: bool,
}

/// How wheels on an index are read (`--fetch`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// By range requests, only as far as the judgement needs.
    Front,
    /// Whole, into the cache.
    Whole,
}

/// The report of `cudist select`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `cudist.select/1`.
    pub schema: String,
    /// The cudist release that wrote it.
    pub cudist_version: String,
    /// The machine judged for.
    pub host: Host,
    /// The best candidate's file name; null when every candidate is rejected.
    pub best: Option<String>,
    /// The requirement to install it with (`cupy-cuda12x==14.2.0`).
    pub requirement: Option<String>,
    /// Every candidate, best first, with why it ranks there.
    pub candidates: Vec<Judged>,
    /// The index the best candidate came from (`--index`); null for a local candidate.
    pub index_url: Option<String>,
    /// The find-links page the best candidate came from (`--find-links URL`); null otherwise.
    pub find_links: Option<String>,
    /// With --index: what was listed and fetched, per index.
    pub indexes: Vec<IndexReport>,
}

/// What `--index` or `--find-links` read.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IndexReport {
    /// The index (its simple API root), or the find-links page.
    pub url: String,
    /// `index` or `find-links`.
    pub kind: String,
    /// Wheels of the newest release of each project listed there.
    pub listed: usize,
    /// Wheels fetched whole now (`--fetch whole`, or a server without range requests).
    pub fetched: Vec<String>,
    /// Wheels read by range requests, only as far as needed (`--fetch front`).
    pub read_front: Vec<String>,
    /// Wheels not read because one already read ranks above anything they could do.
    pub unread: Vec<String>,
    /// Wheels ruled out by their file name, never fetched.
    pub not_fetched: Vec<String>,
    /// Wheels past the bound on candidates read per project ([`MAX_CANDIDATES`]), the least
    /// promising by their file names: neither read nor judged, only counted.
    pub beyond_bound: usize,
    /// Bytes received from the index (pages and files).
    pub bytes_received: u64,
}

fn parse_range_size(s: &str) -> std::result::Result<u64, String> {
    let n = cudist_fs::limits::parse_size(s)?;
    if (4096..=cudist_index::RemoteFile::LARGEST).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{s}: a range request is from 4K to {} bytes",
            cudist_index::RemoteFile::LARGEST
        ))
    }
}

/// Said when a project is not on an index.
const FAMILY_HINT: &str = "; an index lists each build of a family as its own project: name \
    each (`--package cupy-cuda12x --package cupy-cuda13x`)";

/// How wheels on an index or a find-links page are read.
struct Reading {
    /// Where whole wheels and saved range reads are kept.
    cache: PathBuf,
    fetch: Fetch,
    /// A fixed range-request size (`--range-size`).
    range_size: Option<u64>,
}

fn default_cache() -> PathBuf {
    match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("cudist/wheels"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into()))
            .join(".cache/cudist/wheels"),
    }
}

/// A candidate read: its path (the file name for one from an index), its artifact, how it was
/// read, the bytes received for it, and a note on the read.
type Read = (
    String,
    cudist_analysis::model::Artifact,
    &'static str,
    u64,
    Option<String>,
);

/// The most wheels of one project read from one index or page: a page listing 50,000 builds
/// of a release must not make cudist send 150,000 requests. The most promising by their file
/// names are read (pip's order: the best the name allows on the host, then the highest build
/// tag); the rest are counted ([`IndexReport::beyond_bound`]). Real releases stay well below it
/// (cupy-cuda12x 14.2.0: 41 wheels in all, 2 for one Python and platform).
pub const MAX_CANDIDATES: usize = 64;

/// The most wheels ruled out by their file names that are judged one by one (the rest are only
/// counted in [`IndexReport::not_fetched`]): the report of a page of 50,000 names stays small.
const MAX_RULED_OUT: usize = 1000;

/// A wheel on an index that its file name does not rule out.
struct Remote {
    file: cudist_index::IndexFile,
    /// Which `--index` (its position).
    index: usize,
}

/// The newest release's wheels of each project on the index: those the file name rules out are
/// judged as they are; the others are returned to be read.
fn list_index(
    index: &str,
    find_links: bool,
    at: usize,
    projects: &[(String, String)],
    host: &Host,
    catalog: &Catalog,
) -> Result<(Vec<Remote>, Vec<Judged>, IndexReport)> {
    let before = cudist_index::received();
    let limits = cudist_index::Limits::default();
    // A find-links page lists every project at once: read it once.
    let page = if find_links {
        let body =
            cudist_index::get(index, Some("text/html"), limits.page).map_err(errors::index)?;
        cudist_index::parse_page(index, &body).map_err(errors::index)?
    } else {
        Vec::new()
    };
    let mut report = IndexReport {
        url: index.to_string(),
        kind: if find_links { "find-links" } else { "index" }.into(),
        listed: 0,
        fetched: Vec::new(),
        read_front: Vec::new(),
        unread: Vec::new(),
        not_fetched: Vec::new(),
        beyond_bound: 0,
        bytes_received: 0,
    };
    let mut remotes = Vec::new();
    let mut ruled_out = Vec::new();
    // Each project with the version specifier it is wanted at (empty: any).
    for (project, specifier) in projects {
        let files = if find_links {
            // The page's wheels of this project, or of this family (`cupy` for cupy-cuda12x).
            let want = cudist_wheel::installed::normalise(project);
            page.iter()
                .filter(|f| {
                    cudist_wheel::WheelName::parse(&f.filename).is_some_and(|n| {
                        cudist_wheel::installed::normalise(&n.distribution) == want
                            || family(&n.distribution) == want
                    })
                })
                .cloned()
                .collect()
        } else {
            cudist_index::project_files(index, project, limits).map_err(|e| match e {
                cudist_index::IndexError::Status { status: 404, .. } => errors::input(format!(
                    "{index}: no project {project} there (HTTP 404){FAMILY_HINT}"
                )),
                e => errors::index(e),
            })?
        };
        // As pip does, releases whose files require another Python are passed over.
        let wheels: Vec<(cudist_wheel::WheelName, &cudist_index::IndexFile)> = files
            .iter()
            .filter(|f| match (&f.requires_python, &host.python) {
                (Some(rp), Some(py)) => cudist_analysis::select::python_allows(rp, py),
                _ => true,
            })
            .filter_map(|f| cudist_wheel::WheelName::parse(&f.filename).map(|n| (n, f)))
            .collect();
        // The release pip would take: no yanked file unless pinned, no pre-release unless
        // asked for or alone.
        let versions: Vec<(&str, bool)> = wheels
            .iter()
            .map(|(n, f)| (n.version.as_str(), f.yanked))
            .collect();
        let chosen = cudist_analysis::select::pip_release(&versions, specifier);
        if chosen.is_empty() {
            let any_wheel = files
                .iter()
                .any(|f| cudist_wheel::WheelName::parse(&f.filename).is_some());
            bail!(errors::input(if files.is_empty() {
                format!("{index}: nothing of {project} there{FAMILY_HINT}")
            } else if !any_wheel {
                format!("{index}: {project} has no wheel there, only sources{FAMILY_HINT}")
            } else {
                format!(
                    "{index}: no wheel of {project} that pip would take (for this Python, at \
                     the version asked for, not yanked)"
                )
            }));
        }
        let mut passing = Vec::new();
        for f in chosen.iter().map(|&i| wheels[i].1) {
            report.listed += 1;
            let why = cudist_analysis::select::rejected_by_name(&f.filename, host, catalog);
            if !why.is_empty() {
                report.not_fetched.push(f.filename.clone());
                if ruled_out.len() < MAX_RULED_OUT {
                    let mut j = cudist_analysis::select::judged_by_name(&f.filename, &f.url, why);
                    j.size = f.size.unwrap_or(0);
                    ruled_out.push(j);
                }
                continue;
            }
            passing.push(f);
        }
        if passing.len() > MAX_CANDIDATES {
            // Most promising first: the best the name allows (unknown: after the known), then
            // the highest build tag, then the page's order.
            passing.sort_by_cached_key(|f| {
                let best = cudist_analysis::select::optimistic(&f.filename, 0, host)
                    .map(|o| cudist_analysis::select::sort_key(&o, host));
                let build = cudist_wheel::WheelName::parse(&f.filename)
                    .and_then(|n| n.build)
                    .map(|b| {
                        let digits = b.bytes().take_while(u8::is_ascii_digit).count();
                        b[..digits].parse::<u64>().unwrap_or(0)
                    })
                    .unwrap_or(0);
                (best.is_none(), best, std::cmp::Reverse(build))
            });
            report.beyond_bound += passing.len() - MAX_CANDIDATES;
            passing.truncate(MAX_CANDIDATES);
        }
        for f in passing {
            remotes.push(Remote {
                file: f.clone(),
                index: at,
            });
        }
    }
    report.bytes_received = cudist_index::received() - before;
    Ok((remotes, ruled_out, report))
}

/// The error for a wheel (`wheel`, its path or URL) one of whose files cannot be read: the wheel,
/// then the file's problem, which names the file (named once).
fn unreadable(wheel: &str, p: &cudist_analysis::model::InputError) -> anyhow::Error {
    let problem = cudist_analysis::error::located(&p.path, &p.error);
    errors::input(format!("{wheel}: {problem}"))
}

/// Reads a wheel on an index by range requests, as far as the judgement on `host` needs; None
/// when the server does not answer range requests.
fn read_front(
    remote: &Remote,
    host: &Host,
    catalog: &Catalog,
    how: &Reading,
) -> Result<Option<(cudist_analysis::model::Artifact, String)>> {
    let f = &remote.file;
    // An earlier run's reads of the same file from the same URL are not asked for again.
    let saved = cudist_index::ranges_path(f, &how.cache);
    let opened = match &saved {
        Some(p) => cudist_index::RemoteFile::open_saved(&f.url, p),
        None => cudist_index::RemoteFile::open(&f.url),
    };
    let source = match opened.and_then(|s| s.within(f.size)) {
        Ok(s) => s,
        Err(cudist_index::IndexError::NoRanges(_)) => return Ok(None),
        Err(e) => bail!(errors::index(e)),
    };
    let source = source.with_request_size(how.range_size);
    let len = source.len();
    let source = std::sync::Arc::new(source);
    let wheel = cudist_wheel::Wheel::open_source(Path::new(&f.filename), source.clone(), len)
        .map_err(|e| errors::reading(&f.url, &e))?;
    let (a, read) = cudist_analysis::artifact::inspect_front(
        &wheel,
        &f.filename,
        &|d| cudist_analysis::select::settled(d, host),
        catalog,
    )
    .map_err(|e| errors::reading(&f.url, &e))?;
    if let Some(p) = a.problems.first() {
        return Err(unreadable(&f.url, p));
    }
    if let (Some(p), true) = (&saved, source.requests() > 0) {
        // The cache is a help, not the answer: a save that fails is said and passed over.
        if let Err(e) = source.save(p) {
            eprintln!("warning: the bytes read are not kept for the next run: {e}");
        }
    }
    let mut note = format!(
        "read by range requests: {} shared librar{} from their start ({} inflated), {} request(s)",
        read.members_read,
        if read.members_read == 1 { "y" } else { "ies" },
        cudist_analysis::human_bytes(read.inflated),
        source.requests()
    );
    if source.saved_bytes() > 0 {
        note.push_str(&format!(
            ", {} kept from an earlier run",
            cudist_analysis::human_bytes(source.saved_bytes())
        ));
    }
    if !read.stopped_early.is_empty() {
        note.push_str(&format!(
            "; {} stopped at {} ({})",
            read.stopped_early.len(),
            if host.gpus.is_empty() {
                "their first device code (this machine has no NVIDIA GPU)"
            } else {
                "a cubin for each GPU's own SM"
            },
            read.stopped_early.join(", ")
        ));
    }
    if !read.dynamic_unread.is_empty() {
        note.push_str(&format!(
            "; what {} need(s) was not read",
            read.dynamic_unread.join(", ")
        ));
    }
    Ok(Some((a, note)))
}

/// Reads a wheel on an index or find-links page: from the cache when it is there, else whole
/// into the cache (`--fetch whole`, or a server without range requests), else by range requests.
/// Returns the artifact, how it was read, the bytes received and a note on the read.
fn read_remote(
    r: &Remote,
    host: &Host,
    catalog: &Catalog,
    how: &Reading,
    indexes: &mut [IndexReport],
) -> Result<(
    cudist_analysis::model::Artifact,
    &'static str,
    u64,
    Option<String>,
)> {
    let before = cudist_index::received();
    let cached = cudist_index::cached(&r.file, &how.cache);
    let fallback = cached.is_none() && how.fetch == Fetch::Front;
    let front = match (&cached, how.fetch) {
        (None, Fetch::Front) => {
            let spinner =
                util::Spinner::start(format!("reading {} by range requests", r.file.filename));
            let front = read_front(r, host, catalog, how)?;
            drop(spinner);
            front
        }
        _ => None,
    };
    let (a, read, note) = match front {
        Some((a, note)) => (a, "front", Some(note)),
        None => {
            let path = match cached {
                Some(p) => p,
                None => {
                    let spinner = util::Spinner::start(format!("fetching {}", r.file.filename));
                    let (path, fresh) =
                        cudist_index::fetch(&r.file, &how.cache, cudist_index::Limits::default())
                            .map_err(errors::index)?;
                    drop(spinner);
                    if fresh {
                        indexes[r.index].fetched.push(r.file.filename.clone());
                    }
                    path
                }
            };
            let a = cudist_analysis::artifact::inspect_one(&Input::Wheel(path), catalog)?;
            let note = fallback
                .then(|| "fetched whole: the server does not answer range requests".to_string());
            (a, "whole", note)
        }
    };
    let got = cudist_index::received() - before;
    let ix = &mut indexes[r.index];
    ix.bytes_received += got;
    if read == "front" {
        ix.read_front.push(r.file.filename.clone());
    }
    Ok((a, read, got, note))
}

/// Builds offered as extras (`jax[cuda12]`): for each candidate that carries no device code and
/// whose METADATA offers build extras, the packages those extras pull in (and the build packages
/// those pull in) are found where the candidate was (on the same index or find-links page, or
/// among the local wheels given, `pool`) and read, all of them (they are parts of a candidate,
/// not its rivals), and each extra is judged as one candidate beside the package itself.
#[allow(clippy::too_many_arguments)]
fn extras(
    judged: &[Judged],
    artifacts: &[Read],
    origin: &std::collections::HashMap<String, (usize, String)>,
    sources: &[(String, bool)],
    host: &Host,
    catalog: &Catalog,
    how: &Reading,
    pool: &[PathBuf],
    indexes: &mut [IndexReport],
) -> Result<(Vec<Judged>, Vec<Judged>)> {
    use cudist_analysis::select::{
        build_parts, extra_builds, extra_unread, judge_extra, optimistic_extra, sort_key,
    };
    let (mut composites, mut unread) = (Vec::new(), Vec::new());
    for (file, a, ..) in artifacts {
        let Some(w) = &a.wheel else {
            continue;
        };
        // Where its parts are: its index (by position), or the local wheels.
        let at = origin.get(file).map(|(at, _)| *at);
        if a.device.cubins + a.device.ptx + a.device.lto_ir > 0 {
            continue;
        }
        let dist = w.name.clone().unwrap_or_default();
        let builds = extra_builds(&dist, &w.requires_dist);
        let Some(base) = judged.iter().find(|j| &j.path == file) else {
            continue;
        };
        if builds.is_empty() {
            continue;
        }
        // The builds most promising first: one that cannot rank above the best judged so far (the
        // package itself, or another build) has its packages left unread.
        let mut order: Vec<(&cudist_analysis::select::ExtraBuild, Judged)> = builds
            .iter()
            .map(|b| (b, optimistic_extra(base, b, host, catalog)))
            .collect();
        order.sort_by_cached_key(|(_, o)| sort_key(o, host));
        let mut best = base.clone();
        let mut pinned: std::collections::HashMap<String, String> =
            cudist_analysis::select::pins(&w.requires_dist)
                .into_iter()
                .collect();
        let mut listed = std::collections::HashSet::new();
        let mut parts = Vec::new();
        for (b, optimistic) in order {
            if !cudist_analysis::select::uses_gpus_of(&b.build, host) {
                composites.push(judge_extra(base, b, &parts, host));
                continue;
            }
            if sort_key(&best, host) <= sort_key(&optimistic, host) {
                unread.push(extra_unread(base, b, &best, &optimistic));
                continue;
            }
            // Its packages, at the versions pinned.
            let mut queue: Vec<String> = b.parts.clone();
            while let Some(name) = queue.pop() {
                if listed.len() >= 16 || !listed.insert(name.clone()) {
                    continue;
                }
                let spec = pinned.get(&name).cloned().unwrap_or_default();
                // The part's wheels read, and those their names rule out.
                let mut read_parts: Vec<Read> = Vec::new();
                match at {
                    Some(at) => {
                        let (url, find_links) = &sources[at];
                        // A package the index does not have: the extra says so when it is judged.
                        let Ok((found, out, report)) =
                            list_index(url, *find_links, at, &[(name, spec)], host, catalog)
                        else {
                            continue;
                        };
                        let ix = &mut indexes[at];
                        ix.listed += report.listed;
                        ix.not_fetched.extend(report.not_fetched);
                        ix.bytes_received += report.bytes_received;
                        parts.extend(out.into_iter().map(|j| (j, Vec::new())));
                        for r in found {
                            let (a, read, got, note) =
                                read_remote(&r, host, catalog, how, indexes)?;
                            read_parts.push((r.file.filename.clone(), a, read, got, note));
                        }
                    }
                    None => {
                        let (found, out) = local_parts(pool, &name, &spec, host, catalog)?;
                        parts.extend(out.into_iter().map(|j| (j, Vec::new())));
                        read_parts.extend(found);
                    }
                }
                for (part, a, read, got, _) in read_parts {
                    let mut j = judge(&[(part, &a)], host, catalog).remove(0);
                    j.read = read.into();
                    j.bytes_received = got;
                    // Builds of the package's family that this part pulls in in turn, and the
                    // versions it pins them to.
                    let theirs = a.wheel.as_ref().map_or_else(Vec::new, |w| {
                        for (n, spec) in cudist_analysis::select::pins(&w.requires_dist) {
                            pinned.entry(n).or_insert(spec);
                        }
                        build_parts(&dist, &w.requires_dist, None)
                    });
                    queue.extend(theirs.iter().cloned());
                    parts.push((j, theirs));
                }
            }
            let j = judge_extra(base, b, &parts, host);
            if sort_key(&j, host) < sort_key(&best, host) {
                best = j.clone();
            }
            composites.push(j);
        }
    }
    Ok((composites, unread))
}

/// The newest release of package `name` among the local wheels `pool` that `spec` allows: those
/// the host can install, read whole, and those their names rule out, judged by name.
fn local_parts(
    pool: &[PathBuf],
    name: &str,
    spec: &str,
    host: &Host,
    catalog: &Catalog,
) -> Result<(Vec<Read>, Vec<Judged>)> {
    let wheels: Vec<(cudist_wheel::WheelName, &PathBuf)> = pool
        .iter()
        .filter_map(|p| {
            let n = cudist_wheel::WheelName::parse(&p.file_name()?.to_string_lossy())?;
            (cudist_wheel::installed::normalise(&n.distribution) == name).then_some((n, p))
        })
        .collect();
    let versions: Vec<(&str, bool)> = wheels
        .iter()
        .map(|(n, _)| (n.version.as_str(), false))
        .collect();
    let (mut found, mut out) = (Vec::new(), Vec::new());
    for p in cudist_analysis::select::pip_release(&versions, spec)
        .into_iter()
        .map(|i| wheels[i].1)
    {
        let file = p.file_name().unwrap_or_default().to_string_lossy();
        let shown = p.display().to_string();
        let why = cudist_analysis::select::rejected_by_name(&file, host, catalog);
        if !why.is_empty() {
            out.push(cudist_analysis::select::judged_by_name(&file, &shown, why));
            continue;
        }
        let a = cudist_analysis::artifact::inspect_one(&Input::Wheel((*p).clone()), catalog)?;
        found.push((shown, a, "whole", 0, None));
    }
    Ok((found, out))
}

/// The wheel a candidate's file names: itself, or, for a build offered as an extra
/// (`jax-0.10.2-py3-none-any.whl[cuda12]`), the package's wheel.
fn base_file(file: &str) -> &str {
    file.split_once(".whl[")
        .map_or(file, |(w, _)| &file[..w.len() + 4])
}

/// The Python version of `--python`: a version as given, or what an interpreter says.
fn python_version(spec: &str) -> Result<String> {
    if spec.split('.').all(|p| p.parse::<u32>().is_ok()) && spec.starts_with("3.") {
        return Ok(spec.to_string());
    }
    let out = std::process::Command::new(spec)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .map_err(|e| errors::input(format!("--python {spec}: cannot run it: {e}")))?;
    if !out.status.success() {
        bail!(errors::input(format!(
            "--python {spec}: it did not say its version"
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `cudist select`.
pub fn run(args: SelectArgs, catalog: &Catalog) -> Result<ExitCode> {
    let mut host = if args.host == "this" {
        Host::detect()
    } else {
        Host::load(Path::new(&args.host))?
    };
    match (&args.python, &host.python) {
        (Some(p), _) => host.python = Some(python_version(p)?),
        (None, None) => host.python = python_version("python3").ok(),
        _ => {}
    }
    if args.variant_properties {
        let props = cudist_analysis::select::variants::host_properties(&host, catalog);
        let mut text = String::new();
        if !props.iter().any(|p| p.starts_with("nvidia ::")) {
            text.push_str("# no NVIDIA driver (or one outside CUDA 11.0-15.20): NVIDIA's provider reports nothing\n");
        }
        for p in props {
            text.push_str(&p);
            text.push('\n');
        }
        util::emit(&text);
        return Ok(ExitCode::SUCCESS);
    }
    // Each --package as a name and a version specifier (`cupy-cuda12x`, `demo>=2.0rc1`).
    let packages: Vec<(String, String)> = args
        .package
        .iter()
        .map(|p| {
            cudist_analysis::requirements::ReqName::parse(p)
                .filter(|r| r.extras.is_empty())
                .map(|r| (r.name, r.specifier))
                .ok_or_else(|| {
                    errors::input(format!(
                        "--package {p}: not a project name with an optional version specifier \
                         (`cupy-cuda12x`, `demo>=2.0rc1`)"
                    ))
                })
        })
        .collect::<Result<_>>()?;
    let mut paths = args.candidates.clone();
    let (mut ruled_out, mut indexes, mut remotes) = (Vec::new(), Vec::new(), Vec::new());
    // The remote sources, in order: the indexes, then the find-links pages (a find-links
    // directory is a candidate directory).
    let mut sources: Vec<(String, bool)> = args.index.iter().map(|i| (i.clone(), false)).collect();
    for f in &args.find_links {
        if f.contains("://") {
            sources.push((f.clone(), true));
        } else {
            paths.push(PathBuf::from(f));
        }
    }
    for (at, (url, find_links)) in sources.iter().enumerate() {
        let (found, out, report) = list_index(url, *find_links, at, &packages, &host, catalog)?;
        remotes.extend(found);
        ruled_out.extend(out);
        indexes.push(report);
    }
    // Where each candidate read from an index came from: its file name → (index, URL).
    let mut origin: std::collections::HashMap<String, (usize, String)> = Default::default();
    // Wheels in the cache, or all of them with `--fetch whole`, are read whole from disk.
    let how = Reading {
        cache: args.cache_dir.clone().unwrap_or_else(default_cache),
        fetch: args.fetch,
        range_size: args.range_size,
    };
    let cache = &how.cache;
    let limits = cudist_index::Limits::default();
    let mut pending = Vec::new();
    // Bytes received for each wheel fetched whole now, by file name.
    let mut fetched_bytes: std::collections::HashMap<String, u64> = Default::default();
    for r in remotes {
        origin.insert(r.file.filename.clone(), (r.index, r.file.url.clone()));
        let cached = cudist_index::cached(&r.file, cache);
        match (cached, args.fetch) {
            (Some(p), _) => paths.push(p),
            (None, Fetch::Whole) => {
                let before = cudist_index::received();
                let spinner = util::Spinner::start(format!("fetching {}", r.file.filename));
                let (path, fresh) =
                    cudist_index::fetch(&r.file, cache, limits).map_err(errors::index)?;
                drop(spinner);
                let ix = &mut indexes[r.index];
                let got = cudist_index::received() - before;
                ix.bytes_received += got;
                fetched_bytes.insert(r.file.filename.clone(), got);
                if fresh {
                    ix.fetched.push(r.file.filename.clone());
                }
                paths.push(path);
            }
            (None, Fetch::Front) => pending.push(r),
        }
    }
    let (inputs, errors) = expand_inputs(&paths);
    if let Some(e) = errors.first() {
        bail!(errors::input(cudist_analysis::error::located(
            &e.path, &e.error
        )));
    }
    let wheels: Vec<&Input> = inputs
        .iter()
        .filter(|i| matches!(i, Input::Wheel(_)))
        .collect();
    if wheels.len() != inputs.len() {
        bail!(errors::input(
            "select judges wheels: give wheel files or directories of wheels"
        ));
    }
    // The local wheels given, all of them: where the parts of a local candidate's extras are.
    let pool: Vec<PathBuf> = wheels
        .iter()
        .map(|w| w.path().to_path_buf())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|f| origin.contains_key(&*f.to_string_lossy()))
        })
        .collect();
    let wanted: Vec<String> = packages.iter().map(|(p, _)| family(p)).collect();
    let mut artifacts: Vec<Read> = Vec::new();
    for w in wheels {
        let file = w
            .path()
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if let (false, Some(n)) = (wanted.is_empty(), cudist_wheel::WheelName::parse(&file)) {
            if !wanted.contains(&family(&n.distribution)) {
                continue;
            }
        }
        let spinner = util::Spinner::start(format!("reading {}", w.path().display()));
        let a = cudist_analysis::artifact::inspect_one(w, catalog)
            .map_err(|e| errors::reading(&w.path().display().to_string(), &e))?;
        drop(spinner);
        // A file of the wheel that cannot be read refuses the wheel, as a range read of the same
        // bytes does (and inspect): judged without it, a GPU build could pass for a CPU build.
        if let Some(p) = a.problems.first() {
            return Err(unreadable(&w.path().display().to_string(), p));
        }
        let path = if origin.contains_key(&file) {
            file
        } else {
            w.path().display().to_string()
        };
        let got = fetched_bytes.get(&path).copied().unwrap_or(0);
        artifacts.push((path, a, "whole", got, None));
    }
    // The wheels to read by range requests, most promising first: each is read only if what its
    // name allows could rank above the best read so far.
    let mut pending: Vec<(Option<Judged>, Remote)> = pending
        .into_iter()
        .map(|r| {
            (
                // The size the index gives bounds the best case too; unknown, it is 0.
                cudist_analysis::select::optimistic(
                    &r.file.filename,
                    r.file.size.unwrap_or(0),
                    &host,
                ),
                r,
            )
        })
        .collect();
    // Those whose name says nothing of their build are read first (nothing bounds them).
    pending.sort_by_cached_key(|(o, _)| {
        o.as_ref()
            .map(|o| (true, Some(cudist_analysis::select::sort_key(o, &host))))
            .unwrap_or((false, None))
    });
    let mut unread = Vec::new();
    // The best candidate read so far, kept up to date as candidates are read.
    let key = |j: &Judged| cudist_analysis::select::sort_key(j, &host);
    let mut best: Option<Judged> = None;
    let better = |best: &mut Option<Judged>, (p, a, ..): &Read| {
        let j = judge(&[(p.clone(), a)], &host, catalog).remove(0);
        if best.as_ref().is_none_or(|b| key(&j) < key(b)) {
            *best = Some(j);
        }
    };
    for a in &artifacts {
        better(&mut best, a);
    }
    for (bound, r) in pending {
        if let (Some(b), Some(o)) = (&best, &bound) {
            if key(b) <= key(o) {
                indexes[r.index].unread.push(r.file.filename.clone());
                let mut j =
                    cudist_analysis::select::judged_unread(&r.file.filename, &r.file.url, b);
                // The size the index gives (PEP 700), where it gives one.
                j.size = r.file.size.unwrap_or(0);
                unread.push(j);
                continue;
            }
        }
        let (a, read, got, note) = read_remote(&r, &host, catalog, &how, &mut indexes)?;
        artifacts.push((r.file.filename.clone(), a, read, got, note));
        better(&mut best, artifacts.last().expect("just pushed"));
    }
    if artifacts.is_empty() && ruled_out.is_empty() {
        bail!(errors::input(if args.package.is_empty() {
            "no candidate wheel".to_string()
        } else {
            format!("no candidate wheel of {}", args.package.join(", "))
        }));
    }
    let refs: Vec<(String, &cudist_analysis::model::Artifact)> =
        artifacts.iter().map(|(p, a, ..)| (p.clone(), a)).collect();
    let mut judged = judge(&refs, &host, catalog);
    let (composites, extras_unread) = extras(
        &judged,
        &artifacts,
        &origin,
        &sources,
        &host,
        catalog,
        &how,
        &pool,
        &mut indexes,
    )?;
    // The package itself stays a candidate: installed plainly, it is the build its content is
    // (jax alone: the CPU one).
    if !composites.is_empty() {
        judged.extend(composites);
        cudist_analysis::select::rank(&mut judged, &host);
    }
    unread.extend(extras_unread);
    for j in &mut judged {
        if let Some((_, _, read, got, note)) = artifacts.iter().find(|(p, ..)| *p == j.path) {
            j.read = read.to_string();
            // A build offered as an extra has its packages' bytes already; the package's own
            // read is not the extra's.
            j.bytes_received += *got;
            if let (Some(n), None) = (note, &j.extra) {
                j.reasons.push(n.clone());
            }
        }
        if !j.parts.is_empty() {
            j.reasons.push(format!(
                "judged with what the extra pulls in: {}",
                j.parts.join(", ")
            ));
        }
        if let Some((_, url)) = origin.get(base_file(&j.file)) {
            j.path = url.clone();
        }
    }
    // What was not read ranks after everything read; then what the file name ruled out: first
    // what would install here (its CUDA is what rules it out), then the wheels for other
    // Pythons or platforms.
    ruled_out.sort_by_key(|j| {
        j.reasons
            .iter()
            .any(|r| r.starts_with("does not install here"))
    });
    for mut j in unread.into_iter().chain(ruled_out) {
        j.rank = judged.len() + 1;
        if let Some((_, url)) = origin.get(base_file(&j.file)) {
            j.path = url.clone();
        }
        judged.push(j);
    }
    let best = judged.first().filter(|j| j.outcome == "best");
    let requirement = best.map(|j| {
        // `==1.0` also matches `1.0+cu126`, which pip prefers: where a build with a local label
        // shares the chosen plain version, only `===1.0` pins the plain one.
        let name = cudist_wheel::installed::normalise(&j.distribution);
        let shadowed = !j.version.contains('+')
            && judged.iter().any(|o| {
                cudist_wheel::installed::normalise(&o.distribution) == name
                    && o.version
                        .split_once('+')
                        .is_some_and(|(public, _)| public == j.version)
            });
        format!(
            "{name}{}{}{}",
            j.extra
                .as_ref()
                .map_or_else(String::new, |e| format!("[{e}]")),
            if shadowed { "===" } else { "==" },
            j.version
        )
    });
    let source = best.and_then(|j| origin.get(base_file(&j.file)).map(|(ix, _)| &sources[*ix]));
    let index_url = source.filter(|(_, fl)| !fl).map(|(u, _)| u.clone());
    let find_links = source.filter(|(_, fl)| *fl).map(|(u, _)| u.clone());
    let report = Report {
        schema: SCHEMA.into(),
        cudist_version: env!("CARGO_PKG_VERSION").into(),
        best: best.map(|j| j.file.clone()),
        requirement: requirement.clone(),
        index_url,
        find_links,
        host,
        candidates: judged,
        indexes,
    };
    if args.print_requirement {
        match (&requirement, &report.index_url, &report.find_links) {
            // PyPI is pip's default; another index is named, as PyTorch's instructions do.
            (Some(r), Some(ix), _) if ix.trim_end_matches('/') != "https://pypi.org/simple" => {
                util::emit(&format!("{r} --index-url {ix}\n"))
            }
            (Some(r), _, Some(fl)) => util::emit(&format!("{r} --find-links {fl}\n")),
            (Some(r), _, _) => util::emit(&format!("{r}\n")),
            // Nothing for pip to read on stdout: why, on stderr, and exit 1.
            (None, _, _) => eprint!("{}", render(&report, args.all)),
        }
    } else if args.json {
        util::print_json(&report)?;
    } else {
        util::emit(&render(&report, args.all));
    }
    Ok(if report.best.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn render(r: &Report, all: bool) -> String {
    let h = &r.host;
    let mut s = String::new();
    let gpus: Vec<String> = h
        .gpus
        .iter()
        .map(|g| format!("{} (sm_{})", g.name.as_deref().unwrap_or("GPU"), g.sm))
        .chain(h.amd_gpus.iter().map(|g| format!("AMD {}", g.gfx)))
        .collect();
    s.push_str(&format!(
        "for {}: driver {}, GPUs {}; Python {}, glibc {}, {}\n",
        h.name.as_deref().unwrap_or("the host"),
        h.driver.as_deref().unwrap_or("none"),
        if gpus.is_empty() {
            "none".to_string()
        } else {
            gpus.join(", ")
        },
        h.python.as_deref().unwrap_or("?"),
        h.glibc.as_deref().unwrap_or("?"),
        h.arch.as_deref().unwrap_or("x86_64"),
    ));
    for ix in &r.indexes {
        s.push_str(&format!(
            "{} {}: {} wheel(s) of the newest releases listed; {} read by range requests, {} fetched whole, {} not read (they cannot rank above one read), {} ruled out by their file name; {} received\n",
            ix.kind,
            ix.url,
            ix.listed,
            ix.read_front.len(),
            ix.fetched.len(),
            ix.unread.len(),
            ix.not_fetched.len(),
            cudist_analysis::human_bytes(ix.bytes_received)
        ));
        if ix.beyond_bound > 0 {
            s.push_str(&format!(
                "  {} more wheel(s) not read: cudist reads at most {MAX_CANDIDATES} of one project from one index, the most promising by their names\n",
                ix.beyond_bound
            ));
        }
    }
    match (&r.best, &r.requirement) {
        (Some(b), Some(req)) => {
            s.push_str(&format!("best: {b}\n  install: {req}"));
            if let Some(ix) = r.index_url.as_ref().or(r.find_links.as_ref()) {
                s.push_str(&format!(" (from {ix})"));
            }
            s.push('\n');
        }
        _ => s.push_str("no candidate works here\n"),
    }
    // Wheels only for other Pythons or platforms, never fetched, are counted, not listed (the
    // JSON has them all).
    // Wheels that do not install on the host (other Pythons, other platforms; the reason a
    // rejected wheel gives first): what else they are does not matter there. Counted, not
    // listed, unless --all.
    let elsewhere = |j: &&Judged| {
        !all && j.outcome == "rejected"
            && j.reasons
                .first()
                .is_some_and(|r| r.starts_with("does not install here"))
    };
    let hidden = r.candidates.iter().filter(elsewhere).count();
    for j in r.candidates.iter().filter(|j| !elsewhere(j)) {
        let size = if j.size == 0 {
            "not fetched".to_string()
        } else {
            cudist_analysis::human_bytes(j.size)
        };
        s.push_str(&format!(
            "{:>3}  {:<10} {}  ({size})\n",
            j.rank, j.outcome, j.file
        ));
        for reason in &j.reasons {
            s.push_str(&format!("       {reason}\n"));
        }
    }
    if hidden > 0 {
        s.push_str(&format!(
            "  and {hidden} wheel(s) for other Pythons or platforms (--all or --json lists them)\n"
        ));
    }
    s
}
