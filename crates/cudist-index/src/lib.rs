//! Reading a Python package index and fetching wheels from it, for `cudist select --index`.
//!
//! - [`project_files`]: a project's files from the index's simple API, as JSON (PEP 691, asked for
//!   with `Accept: application/vnd.pypi.simple.v1+json`) or HTML (PEP 503 anchors), with their
//!   sha256 where the index gives it;
//! - [`fetch`]: one file into a cache directory, by its sha256 (checked) or its URL, written
//!   through a temporary and renamed; a cached file is not fetched again;
//! - [`RemoteFile`]: a file read by HTTP range requests ([`get_range`]), as a
//!   [`cudist_wheel::ReadAt`] source, so a wheel's central directory and the front of its members
//!   can be read without fetching it whole; what it received can be saved ([`ranges_path`]) and
//!   taken up by a later run, which then asks only for what it lacks.
//!
//! Every request goes through one HTTP client (`agent()`: ureq with rustls, the system's trust
//! store, proxies from the environment, timeouts), after its URL is checked (`Target`: http or
//! https, no control characters). Every response is bounded ([`Limits`]); the bytes received are
//! counted ([`received`]) so a caller can say what it cost.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Why the index could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A URL this reader does not speak.
    #[error("{0}: only http:// and https:// URLs are read")]
    Scheme(String),
    /// A URL that cannot be asked for as written.
    #[error("{url}: {message}")]
    Url {
        /// The URL, escaped.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The network failed (no route, no name, a refused or reset connection) or the server did
    /// not answer in time: a fault of the machine or the network, not of the index.
    #[error("{url}: {message}")]
    Network {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
        /// Which fault it was.
        fault: cudist_fs::Fault,
    },
    /// The server's answer could not be used (a broken TLS handshake, a malformed or truncated
    /// answer, a length that contradicts the index).
    #[error("{url}: {message}")]
    Transfer {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The index answered with an error status.
    #[error("{url}: HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The answer was larger than the limit.
    #[error("{url}: more than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// A project page that is neither PEP 691 JSON nor PEP 503 HTML.
    #[error("{url}: not a simple-API project page ({message})")]
    Page {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// A server that answered a range request with the whole file.
    #[error("{0}: the server does not answer range requests")]
    NoRanges(String),
    /// A fetched file whose sha256 is not the index's.
    #[error("{url}: sha256 {got}, the index says {want}")]
    Hash {
        /// The URL.
        url: String,
        /// What the bytes hash to.
        got: String,
        /// What the index said.
        want: String,
    },
    /// The cache could not be written.
    #[error("{path}: {source}")]
    Cache {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Bounds on what one answer may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A project page.
    pub page: u64,
    /// A file.
    pub file: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            page: 16 << 20,
            file: 4 << 30,
        }
    }
}

static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// Bytes received from indexes by this process so far (bodies, headers not counted).
pub fn received() -> u64 {
    RECEIVED.load(Ordering::Relaxed)
}

/// GETs a URL: its body, at most `limit` bytes.
pub fn get(url: &str, accept: Option<&str>, limit: u64) -> Result<Vec<u8>, IndexError> {
    let mut body = Vec::new();
    transfer(url, accept, limit, &mut body)?;
    Ok(body)
}

/// GETs a URL into `sink`, at most `limit` bytes, without holding the body: the bytes written.
pub fn transfer(
    url: &str,
    accept: Option<&str>,
    limit: u64,
    sink: &mut dyn Write,
) -> Result<u64, IndexError> {
    request(url, accept, None, None, limit, sink).map(|a| a.bytes)
}

/// What a server said identifies the version of a file it sent (`ETag`, `Last-Modified`), to ask
/// next time whether it changed (`If-None-Match`, `If-Modified-Since`), as pip's HTTP cache does.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Validators {
    /// The URL they are for.
    pub url: String,
    /// The `ETag`.
    pub etag: Option<String>,
    /// The `Last-Modified` date.
    pub last_modified: Option<String>,
}

impl Validators {
    fn any(&self) -> bool {
        self.etag.is_some() || self.last_modified.is_some()
    }
}

/// The answer to one GET.
struct Answer {
    /// Bytes of body written.
    bytes: u64,
    /// Its `Content-Range` (a range request's).
    content_range: Option<String>,
    /// 304: the file did not change since the validators asked about.
    not_modified: bool,
    /// The validators it came with.
    validators: Validators,
}

/// One GET, with an optional `Range` header and optional validators (a conditional request,
/// which may be answered 304 with no body).
fn request(
    url: &str,
    accept: Option<&str>,
    range: Option<&str>,
    validators: Option<&Validators>,
    limit: u64,
    sink: &mut dyn Write,
) -> Result<Answer, IndexError> {
    let target = Target::parse(url)?;
    let mut req = agent().get(&target.url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    if let Some(r) = range {
        req = req.header("Range", format!("bytes={r}"));
    }
    if let Some(auth) = &target.authorization {
        req = req.header("Authorization", auth);
    }
    if let Some(v) = validators {
        if let Some(e) = &v.etag {
            req = req.header("If-None-Match", e);
        }
        if let Some(m) = &v.last_modified {
            req = req.header("If-Modified-Since", m);
        }
    }
    let mut answer = req.call().map_err(|e| failure(&target.url, e))?;
    let status = answer.status().as_u16();
    let header = |name: &str| {
        answer
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            // A validator is sent back as it came: only short, printable ones are kept.
            .filter(|v| v.len() <= 256 && v.bytes().all(|b| (0x20..0x7f).contains(&b)))
    };
    let got = Validators {
        url: target.url.clone(),
        etag: header("etag"),
        last_modified: header("last-modified"),
    };
    if status == 304 && validators.is_some_and(Validators::any) {
        return Ok(Answer {
            bytes: 0,
            content_range: None,
            not_modified: true,
            validators: got,
        });
    }
    check_status(&target.url, status, range)?;
    let content_range = header("content-range");
    let mut body = answer.body_mut().as_reader();
    let n = bounded_copy(&target.url, &mut body, sink, limit)?;
    RECEIVED.fetch_add(n, Ordering::Relaxed);
    Ok(Answer {
        bytes: n,
        content_range,
        not_modified: false,
        validators: got,
    })
}

/// Checks an answer's status: 2xx, and 206 to a range request (a server that answers a range
/// request with the whole file does not serve ranges).
fn check_status(url: &str, status: u16, range: Option<&str>) -> Result<(), IndexError> {
    if !(200..300).contains(&status) {
        return Err(IndexError::Status {
            url: url.to_string(),
            status,
        });
    }
    if range.is_some() && status != 206 {
        return Err(IndexError::NoRanges(url.to_string()));
    }
    Ok(())
}

/// Copies at most `limit` bytes from `from` to `to`; more is an error.
fn bounded_copy(
    url: &str,
    from: &mut dyn Read,
    to: &mut dyn Write,
    limit: u64,
) -> Result<u64, IndexError> {
    let n = std::io::copy(&mut from.take(limit + 1), to).map_err(|e| {
        let e = ureq::Error::from(e);
        match failure(url, e) {
            IndexError::Network {
                url,
                message,
                fault: cudist_fs::Fault::TimedOut,
            } => IndexError::Network {
                url,
                message: format!(
                    "{message}, while the answer came: the server sends too slowly or stopped"
                ),
                fault: cudist_fs::Fault::TimedOut,
            },
            other => other,
        }
    })?;
    if n > limit {
        return Err(IndexError::TooLarge {
            url: url.to_string(),
            limit,
        });
    }
    Ok(n)
}

/// The error a failed request is: the network's or the machine's fault ([`IndexError::Network`]), or
/// an answer that cannot be used ([`IndexError::Transfer`]).
fn failure(url: &str, e: ureq::Error) -> IndexError {
    let network = |message: String, fault| IndexError::Network {
        url: url.to_string(),
        message,
        fault,
    };
    match e {
        ureq::Error::Timeout(t) => network(
            format!("timed out ({t}): the server did not answer in time"),
            cudist_fs::Fault::TimedOut,
        ),
        ureq::Error::HostNotFound => network("host not found".into(), cudist_fs::Fault::Network),
        ureq::Error::ConnectionFailed => {
            network("connection failed".into(), cudist_fs::Fault::Network)
        }
        ureq::Error::Io(io) => match cudist_fs::machine_fault(&io) {
            Some(fault) => network(io.to_string(), fault),
            None => IndexError::Transfer {
                url: url.to_string(),
                message: io.to_string(),
            },
        },
        other => IndexError::Transfer {
            url: url.to_string(),
            message: other.to_string(),
        },
    }
}

/// A URL as it is asked for: only http and https, no control characters or spaces anywhere in
/// it (a CR LF in an index's `href` must not become a second header or request line), the
/// user and password of an index URL (`https://user:pass@host/simple`, as pip takes them)
/// moved into an `Authorization: Basic` header, so the URL asked for, and named in messages,
/// holds neither.
struct Target {
    url: String,
    authorization: Option<String>,
}

impl Target {
    fn parse(url: &str) -> Result<Target, IndexError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(IndexError::Scheme(escape(url)));
        };
        if !matches!(scheme, "http" | "https") {
            return Err(IndexError::Scheme(escape(url)));
        }
        if url
            .bytes()
            .any(|b| b.is_ascii_control() || b == b' ' || b >= 0x80)
        {
            return Err(IndexError::Url {
                url: escape(url),
                message: "holds a control character, a space or a byte outside ASCII".into(),
            });
        }
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if host.is_empty() {
            return Err(IndexError::Url {
                url: escape(url),
                message: "names no host".into(),
            });
        }
        let authorization = match userinfo {
            Some(u) => {
                let (user, pass) = u.split_once(':').unwrap_or((u, ""));
                Some(basic(&percent_decode(user), &percent_decode(pass)))
            }
            // As pip (requests) does: the netrc entry of the host, without its port.
            None => netrc().and_then(|n| netrc_authorization(n, host_name(host))),
        };
        let url = format!("{scheme}://{host}{path}");
        Ok(Target { url, authorization })
    }
}

/// An `Authorization: Basic` value.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// A URL authority's host, without its port (`[::1]:8080` → `::1`).
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The credentials pip would send to `host` from a netrc: the host's `machine` entry, else the
/// `default` one (Python's `netrc.authenticators`, which requests calls).
fn netrc_authorization(n: &netrc::Netrc, host: &str) -> Option<String> {
    let a = n.hosts.get(host).or_else(|| n.hosts.get("default"))?;
    Some(basic(&a.login, &a.password))
}

/// The user's netrc, read once, as pip (requests) finds it: the file `NETRC` names, else
/// `~/.netrc`. Parsed by `rust-netrc` (a translation of Python's `netrc` module, which pip's
/// requests uses), after reading it here as every metadata file is read: a regular file of
/// bounded size. `~/.netrc` is passed over, as Python's `netrc` refuses it, when another user
/// owns it or others may read it; so is a file that does not parse (requests ignores it too).
fn netrc() -> Option<&'static netrc::Netrc> {
    static NETRC: std::sync::OnceLock<Option<netrc::Netrc>> = std::sync::OnceLock::new();
    NETRC
        .get_or_init(|| {
            let (path, named) = match std::env::var_os("NETRC") {
                Some(p) if !p.is_empty() => (PathBuf::from(p), true),
                _ => (
                    PathBuf::from(std::env::var_os("HOME")?).join(".netrc"),
                    false,
                ),
            };
            if !named {
                use std::os::unix::fs::MetadataExt;
                let m = std::fs::metadata(&path).ok()?;
                // SAFETY: getuid cannot fail.
                if m.uid() != unsafe { libc::getuid() } || m.mode() & 0o077 != 0 {
                    return None;
                }
            }
            let text = cudist_fs::read_bounded(&path, cudist_fs::SMALL_FILE).ok()?;
            String::from_utf8_lossy(&text).parse().ok()
        })
        .as_ref()
}

/// `%XX` escapes decoded (a user name or password in a URL); anything else kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL from an input made safe to print ([`cudist_fs::printable`]), cut to 512 characters.
fn escape(s: &str) -> String {
    cudist_fs::printable(s, 512)
}

/// How long any one request may take, in all (connect, headers, body): a server that drips or
/// stalls is given up on. `CUDIST_HTTP_TIMEOUT` (seconds) sets it; the default is pip's own
/// order of magnitude per read, widened for whole wheels.
fn request_timeout() -> Duration {
    std::env::var("CUDIST_HTTP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_secs(600))
}

/// The one HTTP client of the process (a protocol is a library's job: ureq, with rustls):
/// certificates verified against the system's trust store, as pip does with truststore
/// (`SSL_CERT_FILE` and `SSL_CERT_DIR` are read, so a company's own CA is trusted where the
/// system trusts it); connections reused across requests, a
/// `User-Agent` naming cudist, the proxies users set (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
/// `NO_PROXY`), at most 10 redirects (credentials are never sent to another host), and
/// timeouts: connecting 30 s, each read 60 s, each request [`request_timeout`] in all.
fn agent() -> &'static ureq::Agent {
    static AGENT: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    AGENT.get_or_init(|| {
        let total = request_timeout();
        let read = total.min(Duration::from_secs(60));
        let config = ureq::Agent::config_builder()
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .http_status_as_error(false)
            .user_agent(format!(
                "cudist/{} (+https://pypi.org/project/cudist/)",
                env!("CARGO_PKG_VERSION")
            ))
            .proxy(ureq::Proxy::try_from_env())
            .max_redirects(10)
            .timeout_connect(Some(total.min(Duration::from_secs(30))))
            .timeout_per_read(Some(read))
            .timeout_global(Some(total))
            .build();
        ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::default(),
            CachedResolver::default(),
        )
    })
}

/// Host names looked up once per process: ureq asks its resolver before it takes a pooled
/// connection, so every range request would otherwise cost a DNS round trip (57 lookups for
/// 56 requests to files.pythonhosted.org, measured with strace; the requests took 2 to 5 times
/// as long as one curl process each, which looked the name up once). At most 64 names are kept.
/// ureq's resolver interface is outside its semver promise (`unversioned`): the version is
/// pinned in Cargo.toml for that reason.
#[derive(Debug, Default)]
struct CachedResolver {
    inner: ureq::unversioned::resolver::DefaultResolver,
    seen: std::sync::Mutex<
        std::collections::HashMap<String, ureq::unversioned::resolver::ResolvedSocketAddrs>,
    >,
}

impl ureq::unversioned::resolver::Resolver for CachedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or_default(),
            uri.authority().map(|a| a.as_str()).unwrap_or_default()
        );
        if let Some(hit) = self.seen.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(hit);
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        if let Ok(mut m) = self.seen.lock() {
            if m.len() < 64 {
                m.insert(key, addrs.clone());
            }
        }
        Ok(addrs)
    }
}

/// Bytes `start..start + len` of a URL, by a range request, and the file's whole length (from
/// `Content-Range`). With `start` None, the last `len` bytes.
pub fn get_range(
    url: &str,
    start: Option<u64>,
    len: u64,
) -> Result<(u64, Vec<u8>, u64), IndexError> {
    let spec = range_spec(start, len);
    let mut body = Vec::new();
    let answer = request(url, None, Some(&spec), None, len.max(1), &mut body)?;
    range_answer(url, start, len, answer.content_range.as_deref(), body)
}

/// The `Range` header's value for `start..start + len` (`-len`: the last `len` bytes).
fn range_spec(start: Option<u64>, len: u64) -> String {
    match start {
        Some(s) => format!("{s}-{}", s.saturating_add(len.max(1) - 1)),
        None => format!("-{}", len.max(1)),
    }
}

/// Checks an answer to a range request for `start..start + len` against what was asked: its
/// `Content-Range` (`bytes 100-199/1000`) names the range asked for, as many bytes as came, inside
/// the length it states. Returns where the bytes start, the bytes, and the file's length.
fn range_answer(
    url: &str,
    start: Option<u64>,
    len: u64,
    content_range: Option<&str>,
    body: Vec<u8>,
) -> Result<(u64, Vec<u8>, u64), IndexError> {
    let spec = range_spec(start, len);
    let n = body.len() as u64;
    let bad = |why: String| IndexError::Transfer {
        url: url.to_string(),
        message: format!("answer to the range {spec}: {why}"),
    };
    if n > len.max(1) {
        return Err(IndexError::TooLarge {
            url: url.to_string(),
            limit: len.max(1),
        });
    }
    let cr = content_range.ok_or_else(|| bad("no Content-Range".into()))?;
    let parse = || -> Option<(u64, u64, u64)> {
        let rest = cr.strip_prefix("bytes ")?;
        let (span, total) = rest.split_once('/')?;
        let (a, b) = span.split_once('-')?;
        Some((
            a.trim().parse().ok()?,
            b.trim().parse().ok()?,
            total.trim().parse().ok()?,
        ))
    };
    let (a, b, total) = parse().ok_or_else(|| bad(format!("Content-Range {cr:?}")))?;
    if b < a || b - a + 1 != n || start.is_some_and(|s| s != a) || b >= total {
        return Err(bad(format!("Content-Range {cr:?} for {n} bytes")));
    }
    Ok((a, body, total))
}

/// Answers given in advance to a [`RemoteFile`]'s range requests, in order: a `Content-Range`
/// (or none) and a body each ([`RemoteFile::scripted`]).
type Answers = std::sync::Mutex<std::collections::VecDeque<(Option<String>, Vec<u8>)>>;

/// A range request of a [`RemoteFile`]: to the server, or answered from `answers`.
fn fetch_range(
    url: &str,
    answers: Option<&Answers>,
    start: Option<u64>,
    len: u64,
) -> Result<(u64, Vec<u8>, u64), IndexError> {
    let Some(answers) = answers else {
        return get_range(url, start, len);
    };
    let next = answers.lock().ok().and_then(|mut a| a.pop_front());
    let Some((content_range, body)) = next else {
        return Err(IndexError::Transfer {
            url: url.to_string(),
            message: "no more answers".into(),
        });
    };
    range_answer(url, start, len, content_range.as_deref(), body)
}

/// A file on an index read by HTTP range requests ([`get_range`]), for reading a wheel's central
/// directory and the front of a few members without fetching it whole
/// ([`cudist_wheel::Wheel::open_source`]). What was fetched is kept (up to
/// [`RemoteFile::KEEP`]) and never asked for twice: a read that misses fetches only the gap up to
/// the next kept bytes. Reads that follow one another ask for growing ranges (16 KiB up to
/// [`RemoteFile::MAX_REQUEST`]), never past the member the reader said it is in
/// ([`cudist_wheel::ReadAt::hint`]), so a reader that stops early has fetched little it did not
/// use.
pub struct RemoteFile {
    url: String,
    len: u64,
    state: std::sync::Mutex<Blocks>,
    /// Bytes taken from an earlier run's reads ([`RemoteFile::open_saved`]).
    saved: u64,
    /// Answers given in advance instead of a server's ([`RemoteFile::scripted`]).
    answers: Option<Answers>,
}

#[derive(Default)]
struct Blocks {
    /// Disjoint fetched ranges by offset.
    kept: std::collections::BTreeMap<u64, Vec<u8>>,
    kept_bytes: u64,
    /// Where the last request ended, and its size.
    last_end: u64,
    last_size: u64,
    /// The span the reader said it reads in.
    hint: Option<(u64, u64)>,
    /// The span of the member read: the first span hinted from its start (a later hint from
    /// the same start narrows `hint` to where the reader guesses it will stop).
    member: Option<(u64, u64)>,
    requests: u64,
    /// The shortest request seen (seconds): the cost of a request apart from its bytes.
    latency: Option<f64>,
    /// The fastest rate a request was seen to go at (bytes per second): a lower bound of the
    /// link's, which larger requests bring closer.
    rate: f64,
    /// A request size set by the caller.
    fixed: Option<u64>,
    /// Bytes fetched by range requests (the opening one included).
    fetched: u64,
    /// The most that may be fetched ([`RemoteFile::within`]).
    budget: u64,
}

impl Blocks {
    /// Takes one request's size and time into the estimates.
    fn timed(&mut self, bytes: u64, secs: f64) {
        let secs = secs.max(1e-6);
        self.latency = Some(self.latency.map_or(secs, |l| l.min(secs)));
        self.rate = self.rate.max(bytes as f64 / secs);
    }

    /// The bytes worth one request: those that come in the time a request takes to make (the
    /// link's bandwidth-delay product, as measured). A request of that size costs little more
    /// than an empty one, so a reader that stops early has wasted at most about one request's
    /// time, while reading on costs as few requests as the link makes worth it. The rate is
    /// measured from whole requests (their latency included), so it starts low and rises as
    /// requests grow; a slow link keeps requests small.
    fn worth(&self) -> u64 {
        if let Some(n) = self.fixed {
            return n;
        }
        let bdp = self.latency.unwrap_or(0.0) * self.rate;
        (bdp.round() as u64).clamp(RemoteFile::MIN_REQUEST, RemoteFile::LARGEST)
    }
}

impl RemoteFile {
    /// The first request for the end of the file (where a zip's central directory ends).
    pub const TAIL: u64 = 64 << 10;
    /// The smallest request.
    pub const MIN_REQUEST: u64 = 16 << 10;
    /// The largest request a run of sequential reads grows to, unless the link makes larger
    /// ones worth it (up to [`RemoteFile::LARGEST`]).
    pub const MAX_REQUEST: u64 = 256 << 10;
    /// The largest request at all.
    pub const LARGEST: u64 = 16 << 20;
    /// A request past the span the reader expected to read.
    pub const STEP: u64 = 16 << 10;
    /// Fetched bytes kept; past it the oldest ranges (lowest offsets) are dropped.
    pub const KEEP: u64 = 64 << 20;
    /// The most a file whose size the index did not declare may cost in range requests: a
    /// server that claims an 8 GiB file and points its central directory at the start would
    /// otherwise be read whole.
    pub const BUDGET: u64 = 1 << 30;

    /// Holds the file to what the index declared (PEP 700 `size`): a server whose length
    /// differs is not believed, and reads may fetch at most that many bytes; without a declared
    /// size, at most [`RemoteFile::BUDGET`].
    pub fn within(self, declared: Option<u64>) -> Result<RemoteFile, IndexError> {
        if let Some(d) = declared.filter(|d| *d != self.len) {
            return Err(IndexError::Transfer {
                url: self.url.clone(),
                message: format!(
                    "the server says the file has {} bytes, the index {d}",
                    self.len
                ),
            });
        }
        Ok(self.with_budget(declared.unwrap_or(Self::BUDGET)))
    }

    /// Lets reads fetch at most `bytes` by range requests in all.
    pub fn with_budget(self, bytes: u64) -> RemoteFile {
        if let Ok(mut s) = self.state.lock() {
            s.budget = bytes;
        }
        self
    }

    /// Opens a remote file: one request for its last 64 KiB (where a zip's central directory
    /// ends), which also gives its length.
    pub fn open(url: &str) -> Result<RemoteFile, IndexError> {
        Self::open_with(url, None)
    }

    /// A remote file whose range requests are answered, in order, from `answers` (a
    /// `Content-Range` and a body each) instead of a server, through the same checks and
    /// bounds: for the fuzz target over the range reader and for tests.
    #[doc(hidden)]
    pub fn scripted(
        url: &str,
        answers: Vec<(Option<String>, Vec<u8>)>,
    ) -> Result<RemoteFile, IndexError> {
        Self::open_with(url, Some(std::sync::Mutex::new(answers.into())))
    }

    fn open_with(url: &str, answers: Option<Answers>) -> Result<RemoteFile, IndexError> {
        let began = std::time::Instant::now();
        let (at, tail, len) = fetch_range(url, answers.as_ref(), None, Self::TAIL)?;
        let mut blocks = Blocks {
            requests: 1,
            kept_bytes: tail.len() as u64,
            fetched: tail.len() as u64,
            budget: Self::BUDGET,
            ..Blocks::default()
        };
        blocks.timed(tail.len() as u64, began.elapsed().as_secs_f64());
        blocks.kept.insert(at, tail);
        Ok(RemoteFile {
            url: url.to_string(),
            len,
            state: std::sync::Mutex::new(blocks),
            saved: 0,
            answers,
        })
    }

    /// Opens a remote file with the bytes an earlier run read of it ([`RemoteFile::save`] wrote
    /// them to `saved`): reads they cover ask for nothing, and with them not even the opening
    /// request is made. A missing, damaged or oversized save is passed over, as if absent.
    pub fn open_saved(url: &str, saved: &Path) -> Result<RemoteFile, IndexError> {
        match load_ranges(saved) {
            Some((len, kept)) => {
                let kept_bytes = kept.values().map(|b| b.len() as u64).sum();
                Ok(RemoteFile {
                    url: url.to_string(),
                    len,
                    state: std::sync::Mutex::new(Blocks {
                        kept,
                        kept_bytes,
                        budget: Self::BUDGET,
                        ..Blocks::default()
                    }),
                    saved: kept_bytes,
                    answers: None,
                })
            }
            None => Self::open(url),
        }
    }

    /// Makes every range request (but the opening one) `size` bytes, instead of what the link
    /// makes worth it.
    pub fn with_request_size(self, size: Option<u64>) -> RemoteFile {
        if let Ok(mut s) = self.state.lock() {
            s.fixed = size;
        }
        self
    }

    /// Bytes taken from an earlier run's reads.
    pub fn saved_bytes(&self) -> u64 {
        self.saved
    }

    /// Writes the bytes read so far to `path` for a later [`RemoteFile::open_saved`]: through a
    /// temporary created exclusively beside it and renamed into place.
    pub fn save(&self, path: &Path) -> Result<(), IndexError> {
        let cache_err = |source| IndexError::Cache {
            path: path.to_path_buf(),
            source,
        };
        let s = self
            .state
            .lock()
            .map_err(|_| cache_err(std::io::Error::other("a reader panicked")))?;
        let mut out = Vec::with_capacity(32 + s.kept.len() * 16 + s.kept_bytes as usize);
        out.extend_from_slice(RANGES_MAGIC);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&(s.kept.len() as u64).to_le_bytes());
        for (at, b) in &s.kept {
            out.extend_from_slice(&at.to_le_bytes());
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        }
        for b in s.kept.values() {
            out.extend_from_slice(b);
        }
        drop(s);
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(cache_err)?;
        cudist_fs::write_atomic(path, &out, None).map_err(cache_err)?;
        Ok(())
    }

    /// The file's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Range requests made so far.
    pub fn requests(&self) -> u64 {
        self.state.lock().map(|s| s.requests).unwrap_or(0)
    }
}

impl cudist_wheel::ReadAt for RemoteFile {
    fn hint(&self, start: u64, end: u64) {
        if let Ok(mut s) = self.state.lock() {
            if s.member.is_none_or(|(ms, _)| ms != start) {
                s.member = Some((start, end));
            }
            s.hint = Some((start, end));
        }
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let mut s = self
            .state
            .lock()
            .map_err(|_| std::io::Error::other("a reader panicked"))?;
        let hit = s
            .kept
            .range(..=offset)
            .next_back()
            .filter(|(at, b)| offset < **at + b.len() as u64)
            .map(|(at, _)| *at);
        let at = match hit {
            Some(at) => at,
            None => {
                // The gap up to the next kept range, the end of the file, and the member read.
                let mut end = s
                    .kept
                    .range(offset + 1..)
                    .next()
                    .map_or(self.len, |(at, _)| *at);
                // A read starts with one request's worth; inside the span the reader expects to
                // read, sequential reads grow (to twice what a request is worth, so the measured
                // rate can rise). Past it (the reader went on beyond its guess) they start small
                // again, and grow while the reader goes on, up to the member's end.
                let expected = s.hint.filter(|(hs, he)| (*hs..*he).contains(&offset));
                let in_member = s.member.filter(|(ms, me)| (*ms..*me).contains(&offset));
                if let Some((_, he)) = expected.or(in_member) {
                    end = end.min(he);
                }
                let worth = s.worth();
                let sequential = offset == s.last_end;
                let size = if s.fixed.is_some() {
                    worth
                } else if expected.is_none() && s.hint.is_some() {
                    if in_member.is_some() && sequential {
                        (s.last_size * 2).clamp(Self::STEP, Self::MAX_REQUEST.max(2 * worth))
                    } else {
                        Self::STEP
                    }
                } else if sequential {
                    (s.last_size * 2).clamp(worth, Self::MAX_REQUEST.max(2 * worth))
                } else {
                    worth
                }
                .min(end - offset);
                if s.fetched + size > s.budget {
                    return Err(std::io::Error::other(format!(
                        "{}: reading on would fetch more than {} bytes by range requests, {}",
                        self.url,
                        s.budget,
                        if s.budget == Self::BUDGET {
                            "the most for a file whose size the index does not declare"
                        } else {
                            "its budget (the size the index declares)"
                        }
                    )));
                }
                let began = std::time::Instant::now();
                let (_, bytes, _) =
                    fetch_range(&self.url, self.answers.as_ref(), Some(offset), size).map_err(
                        |e| {
                            // The network's fault stays one through the wheel reader.
                            let kind = match &e {
                                IndexError::Network { fault, .. } => fault.kind(),
                                _ => std::io::ErrorKind::Other,
                            };
                            std::io::Error::new(kind, e.to_string())
                        },
                    )?;
                s.timed(size, began.elapsed().as_secs_f64());
                s.requests += 1;
                s.fetched += size;
                s.last_end = offset + size;
                s.last_size = size;
                s.kept_bytes += size;
                s.kept.insert(offset, bytes);
                // Past KEEP, the lowest ranges go, all but the one just fetched.
                while s.kept_bytes > Self::KEEP && s.kept.len() > 1 {
                    let Some(first) = s.kept.keys().copied().find(|&k| k != offset) else {
                        break;
                    };
                    let dropped = s.kept.remove(&first).map_or(0, |b| b.len() as u64);
                    s.kept_bytes -= dropped;
                }
                offset
            }
        };
        let bytes = &s.kept[&at];
        let from = (offset - at) as usize;
        let n = buf.len().min(bytes.len() - from);
        buf[..n].copy_from_slice(&bytes[from..from + n]);
        Ok(n)
    }
}

/// The start of a saved [`RemoteFile`]'s bytes. After it: the file's length, the number of
/// ranges, each range's offset and size (all little-endian u64), then the ranges' bytes in order.
const RANGES_MAGIC: &[u8; 16] = b"cudist-ranges/1\n";

/// A saved [`RemoteFile`]: its length and ranges, when the file is whole and sane (ranges in
/// order, apart, inside the file, at most [`RemoteFile::KEEP`] bytes in all).
fn load_ranges(path: &Path) -> Option<(u64, std::collections::BTreeMap<u64, Vec<u8>>)> {
    const MAX_RANGES: u64 = 1 << 16;
    let size = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())?
        .len();
    if size > 32 + MAX_RANGES * 16 + RemoteFile::KEEP {
        return None;
    }
    let data = std::fs::read(path).ok()?;
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
    };
    if data.get(..16)? != RANGES_MAGIC {
        return None;
    }
    let (len, count) = (word(16)?, word(24)?);
    if count > MAX_RANGES {
        return None;
    }
    let mut at = 32 + count as usize * 16;
    let mut end = 0u64;
    let mut kept = std::collections::BTreeMap::new();
    for i in 0..count as usize {
        let (offset, n) = (word(32 + i * 16)?, word(40 + i * 16)?);
        if offset < end || n == 0 || offset.checked_add(n)? > len {
            return None;
        }
        end = offset + n;
        let bytes = data.get(at..at.checked_add(n as usize)?)?;
        kept.insert(offset, bytes.to_vec());
        at += n as usize;
    }
    (at == data.len()).then_some((len, kept))
}

/// One file of a project, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IndexFile {
    /// Its file name.
    pub filename: String,
    /// Its URL, absolute.
    pub url: String,
    /// Its sha256, hex, when the index gives it.
    pub sha256: Option<String>,
    /// Its size in bytes, when the index gives it (PEP 700 `size` in JSON pages).
    pub size: Option<u64>,
    /// The Python versions it is for (`requires-python` in JSON, `data-requires-python` in HTML,
    /// PEP 503/691), as pip reads them before choosing a release.
    pub requires_python: Option<String>,
    /// Yanked (PEP 592: `yanked` in JSON, `data-yanked` in HTML): pip takes it only when a
    /// requirement pins its version exactly.
    pub yanked: bool,
}

const JSON_TYPE: &str = "application/vnd.pypi.simple.v1+json";

/// The files of `project` on the index at `index` (its simple API root, `…/simple`).
pub fn project_files(
    index: &str,
    project: &str,
    limits: Limits,
) -> Result<Vec<IndexFile>, IndexError> {
    let name = cudist_wheel::installed::normalise(project);
    let url = format!("{}/{name}/", index.trim_end_matches('/'));
    let body = get(
        &url,
        Some(&format!("{JSON_TYPE}, text/html;q=0.1")),
        limits.page,
    )?;
    parse_page(&url, &body)
}

/// Whether a file name from a page is one pip takes: no whitespace or control character
/// anywhere (pip's wheel-name pattern allows none in any part), no path separator, not empty or
/// hidden, at most 255 bytes. Others are left out of the listing, as pip skips such links; a
/// name from an index never reaches the terminal or the cache otherwise.
pub fn plain_file_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 255
        && !n.starts_with('.')
        && !n
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == '\\')
}

/// A project page: PEP 691 JSON, else PEP 503 HTML. Files whose names pip would not take
/// ([`plain_file_name`]) are left out.
pub fn parse_page(url: &str, body: &[u8]) -> Result<Vec<IndexFile>, IndexError> {
    parse_page_all(url, body).map(|files| {
        files
            .into_iter()
            .filter(|f| plain_file_name(&f.filename))
            .collect()
    })
}

fn parse_page_all(url: &str, body: &[u8]) -> Result<Vec<IndexFile>, IndexError> {
    let page_err = |message: String| IndexError::Page {
        url: url.to_string(),
        message,
    };
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let files = v["files"]
            .as_array()
            .ok_or_else(|| page_err("JSON without a `files` list".into()))?;
        return files
            .iter()
            .map(|f| {
                let filename = f["filename"]
                    .as_str()
                    .ok_or_else(|| page_err("a file without `filename`".into()))?;
                let href = f["url"]
                    .as_str()
                    .ok_or_else(|| page_err(format!("{filename} has no `url`")))?;
                Ok(IndexFile {
                    filename: filename.to_string(),
                    url: join(url, href),
                    sha256: f["hashes"]["sha256"].as_str().map(str::to_string),
                    size: f["size"].as_u64(),
                    requires_python: f["requires-python"].as_str().map(str::to_string),
                    // `false`, `true`, or the reason as a string.
                    yanked: match &f["yanked"] {
                        serde_json::Value::Bool(b) => *b,
                        serde_json::Value::String(_) => true,
                        _ => false,
                    },
                })
            })
            .collect();
    }
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("<a ") {
        rest = &rest[i..];
        let Some(end) = rest.find("</a>") else { break };
        let anchor = &rest[..end];
        rest = &rest[end..];
        let Some(h) = anchor.find("href=\"") else {
            continue;
        };
        let href = &anchor[h + 6..];
        let Some(q) = href.find('"') else { continue };
        let href = html_unescape(&href[..q]);
        let filename = anchor.rsplit('>').next().unwrap_or("").trim().to_string();
        let (href, fragment) = href.split_once('#').unwrap_or((&href, ""));
        out.push(IndexFile {
            filename,
            url: join(url, href),
            sha256: fragment.strip_prefix("sha256=").map(str::to_string),
            size: None,
            requires_python: attribute(anchor, "data-requires-python"),
            yanked: has_attribute(anchor, "data-yanked"),
        });
    }
    if out.is_empty() && !text.contains("<a") && !text.trim_start().starts_with('<') {
        return Err(page_err("neither JSON nor HTML".into()));
    }
    Ok(out)
}

/// An HTML attribute's value in an anchor (`data-requires-python="&gt;=3.10"`), unescaped.
fn attribute(anchor: &str, name: &str) -> Option<String> {
    let at = anchor.find(&format!("{name}=\""))? + name.len() + 2;
    let end = anchor[at..].find('"')?;
    Some(html_unescape(&anchor[at..at + end]))
}

/// Whether an anchor carries an attribute, with or without a value (`data-yanked`,
/// `data-yanked=""`, `data-yanked="reason"`).
fn has_attribute(anchor: &str, name: &str) -> bool {
    let head = anchor.split_once('>').map_or(anchor, |(h, _)| h);
    head.match_indices(name).any(|(i, _)| {
        let before = head[..i].chars().next_back();
        let after = head[i + name.len()..].chars().next();
        before.is_some_and(char::is_whitespace)
            && after.is_none_or(|c| c == '=' || c == '/' || c.is_whitespace())
    })
}

fn html_unescape(s: &str) -> String {
    s.replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&#x27;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// A link's absolute URL, from the page it is on.
fn join(page: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_string();
    }
    let scheme_end = page.find("://").map_or(0, |i| i + 3);
    if let Some(abs) = href.strip_prefix('/') {
        let host_end = page[scheme_end..]
            .find('/')
            .map_or(page.len(), |i| scheme_end + i);
        return format!("{}/{abs}", &page[..host_end]);
    }
    let mut base = page[..page.rfind('/').map_or(page.len(), |i| i + 1)].to_string();
    let mut href = href;
    while let Some(up) = href.strip_prefix("../") {
        href = up;
        base.pop();
        if let Some(i) = base.rfind('/').filter(|&i| i >= scheme_end) {
            base.truncate(i + 1);
        }
    }
    format!("{base}{}", href.strip_prefix("./").unwrap_or(href))
}

/// Where a file is kept in `cache`: `<cache>/<sha256 or url digest>/<filename>`. Both parts come
/// from the index: a hex digest and a plain file name, nothing that walks out of the cache.
fn cache_path(file: &IndexFile, cache: &Path) -> Result<PathBuf, IndexError> {
    let key = file
        .sha256
        .clone()
        .unwrap_or_else(|| hex(&Sha256::digest(file.url.as_bytes())));
    if !plain_file_name(&file.filename)
        || !key.bytes().all(|b| b.is_ascii_hexdigit())
        || key.len() != 64
    {
        return Err(IndexError::Page {
            url: file.url.clone(),
            message: format!("{:?} is not a plain file name", file.filename),
        });
    }
    Ok(cache.join(key).join(&file.filename))
}

/// Where an earlier run's range reads of a file are saved ([`RemoteFile::save`]):
/// `<cache>/<sha256>/<filename>.<url digest>.ranges`. Only for a file whose sha256 the index
/// gave, and per URL: bytes one server sent are not taken for another's.
pub fn ranges_path(file: &IndexFile, cache: &Path) -> Option<PathBuf> {
    file.sha256.as_ref()?;
    let path = cache_path(file, cache).ok()?;
    let url = hex(&Sha256::digest(file.url.as_bytes()));
    Some(path.with_file_name(format!("{}.{}.ranges", file.filename, &url[..16])))
}

/// The file's path in `cache` when it is there ([`fetch`] put it there) and its sha256 names it
/// (a file kept by its URL only is asked about again: [`fetch`]).
pub fn cached(file: &IndexFile, cache: &Path) -> Option<PathBuf> {
    cache_path(file, cache)
        .ok()
        .filter(|p| file.sha256.is_some() && p.is_file())
}

/// Fetches a file into `cache` (`<cache>/<sha256 or url digest>/<filename>`), unless it is there;
/// checks its sha256 when the index gave one. Returns its path and whether it was fetched now.
pub fn fetch(
    file: &IndexFile,
    cache: &Path,
    limits: Limits,
) -> Result<(PathBuf, bool), IndexError> {
    let path = cache_path(file, cache)?;
    let dir = path.parent().expect("joined").to_path_buf();
    // Kept by its sha256, a file is the same file for ever; one the index gave no sha256 for is
    // keyed by its URL only, and the server may have put a new build there: as pip does, the
    // server is asked whether it changed (the validators it sent with it), and it is fetched
    // again unless it answers 304; without validators, it is fetched again.
    if path.is_file() && file.sha256.is_some() {
        return Ok((path, false));
    }
    let cache_err = |source| IndexError::Cache {
        path: path.clone(),
        source,
    };
    let sidecar = validators_path(&path);
    let known = path
        .is_file()
        .then(|| cudist_fs::read_bounded(&sidecar, 4096).ok())
        .flatten()
        .and_then(|b| serde_json::from_slice::<Validators>(&b).ok())
        .filter(|v| v.url == file.url && v.any());
    std::fs::create_dir_all(&dir).map_err(cache_err)?;
    // A temporary created exclusively beside the file, filled while hashing, renamed into place;
    // removed on any failure (and on a signal).
    let f = cudist_fs::AtomicFile::new(&path).map_err(cache_err)?;
    struct Hashing(cudist_fs::AtomicFile, Sha256);
    impl Write for Hashing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let n = self.0.write(b)?;
            self.1.update(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.flush()
        }
    }
    let mut sink = Hashing(f, Sha256::new());
    // What the index declared is all that is taken (a longer answer is refused as it comes).
    let limit = file.size.map_or(limits.file, |d| d.min(limits.file));
    let answer = match request(&file.url, None, None, known.as_ref(), limit, &mut sink) {
        Ok(a) if a.not_modified => return Ok((path, false)),
        Ok(a) => Ok(a),
        Err(e) => Err(e),
    };
    let validators = answer.as_ref().ok().map(|a| a.validators.clone());
    let done = answer.map(|a| a.bytes).and_then(|n| {
        if let Some(d) = file.size.filter(|d| *d != n) {
            return Err(IndexError::Transfer {
                url: file.url.clone(),
                message: format!("{n} bytes received, the index declares {d}"),
            });
        }
        let Hashing(f, h) = sink;
        let got = hex(&h.finalize());
        if let Some(want) = file
            .sha256
            .as_ref()
            .filter(|w| !got.eq_ignore_ascii_case(w))
        {
            return Err(IndexError::Hash {
                url: file.url.clone(),
                got,
                want: want.clone(),
            });
        }
        f.commit().map_err(cache_err)
    });
    if let Err(e) = done {
        // The directory made for it, if nothing else is there (a sha mismatch leaves no trace).
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    // A file known by its URL only keeps what identifies its version, for the next run to ask.
    match validators.filter(|v| file.sha256.is_none() && v.any()) {
        Some(v) => {
            let json = serde_json::to_vec(&v).expect("plain strings");
            cudist_fs::write_atomic(&sidecar, &json, None).map_err(cache_err)?;
        }
        None => {
            let _ = std::fs::remove_file(&sidecar);
        }
    }
    Ok((path, true))
}

/// Where the validators of a file cached by its URL are kept: beside it, `<filename>.validators`.
fn validators_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".validators");
    path.with_file_name(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpStream;
    use std::sync::atomic::Ordering;

    #[test]
    fn pages_in_both_formats() {
        let json = br#"{"meta": {"api-version": "1.1"}, "name": "demo", "files": [
            {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
             "hashes": {"sha256": "ab12"}}]}"#;
        let f = parse_page("http://h:1/simple/demo/", json).unwrap();
        assert_eq!(f[0].url, "http://h:1/files/demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].sha256.as_deref(), Some("ab12"));
        let html = b"<html><body><a href=\"/f/demo-1.0-py3-none-any.whl#sha256=cd34\" data-requires-python=\"&gt;=3.10\">demo-1.0-py3-none-any.whl</a><br/></body></html>";
        let f = parse_page("http://h:1/simple/demo/", html).unwrap();
        assert_eq!(f[0].filename, "demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].url, "http://h:1/f/demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].sha256.as_deref(), Some("cd34"));
        assert_eq!(f[0].requires_python.as_deref(), Some(">=3.10"));
        assert!(!f[0].yanked);
        // Yanked files (PEP 592), in both formats, with a reason or without.
        let json = br#"{"files": [
            {"filename": "a-1.0-py3-none-any.whl", "url": "a", "yanked": "broken"},
            {"filename": "a-1.1-py3-none-any.whl", "url": "b", "yanked": true},
            {"filename": "a-1.2-py3-none-any.whl", "url": "c", "yanked": false}]}"#;
        let f = parse_page("http://h:1/simple/a/", json).unwrap();
        assert_eq!(
            f.iter().map(|f| f.yanked).collect::<Vec<_>>(),
            [true, true, false]
        );
        let html = br#"<a href="a" data-yanked="">a-1.0-py3-none-any.whl</a>
            <a href="b" data-yanked>a-1.1-py3-none-any.whl</a>
            <a href="c" data-requires-python="&gt;=3">a-1.2-py3-none-any.whl</a>
            <a href="d">data-yanked-1.3-py3-none-any.whl</a>"#;
        let f = parse_page("http://h:1/simple/a/", html).unwrap();
        assert_eq!(
            f.iter().map(|f| f.yanked).collect::<Vec<_>>(),
            [true, true, false, false]
        );
        assert!(parse_page("http://h/simple/x/", b"just words").is_err());
    }

    /// A one-file HTTP server on loopback for `requests` requests: with `ranges`, it answers
    /// `Range: bytes=a-b` / `bytes=-n` with 206; without, the whole file with 200. Returns its
    /// URL and the (start, end) of every range it sent.
    fn one_file_server(
        data: Vec<u8>,
        ranges: bool,
        requests: usize,
    ) -> (String, std::thread::JoinHandle<Vec<(u64, u64)>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/f.whl", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let mut sent = Vec::new();
            for _ in 0..requests {
                let (stream, _) = listener.accept().unwrap();
                let mut r = BufReader::new(stream.try_clone().unwrap());
                let mut range = None;
                let mut request = String::new();
                r.read_line(&mut request).unwrap();
                if request.is_empty() {
                    continue; // a connection that only unblocks the accept
                }
                loop {
                    let mut l = String::new();
                    r.read_line(&mut l).unwrap();
                    if l.trim().is_empty() {
                        break;
                    }
                    // Header names are case-insensitive (the client writes `range:`).
                    let lower = l.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("range: bytes=") {
                        let (a, b) = v.trim().split_once('-').unwrap();
                        let len = data.len() as u64;
                        range = Some(if a.is_empty() {
                            (len - b.parse::<u64>().unwrap(), len - 1)
                        } else {
                            (a.parse().unwrap(), b.parse::<u64>().unwrap().min(len - 1))
                        });
                    }
                }
                let mut w = stream;
                match range.filter(|_| ranges) {
                    Some((a, b)) => {
                        write!(
                            w,
                            "HTTP/1.1 206 Partial Content\r\nConnection: close\r\nContent-Length: {}\r\nContent-Range: bytes {a}-{b}/{}\r\n\r\n",
                            b - a + 1,
                            data.len()
                        )
                        .unwrap();
                        w.write_all(&data[a as usize..=b as usize]).unwrap();
                        sent.push((a, b));
                    }
                    None => {
                        // The client hangs up once it sees the status: errors are expected.
                        let _ = write!(
                            w,
                            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                            data.len()
                        );
                        let _ = w.write_all(&data);
                    }
                }
            }
            sent
        });
        (url, handle)
    }

    #[test]
    fn a_remote_file_reads_right_and_asks_for_no_byte_twice() {
        use cudist_wheel::ReadAt;
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        // The tail on open, then gaps only: at most a handful of requests.
        let (url, server) = one_file_server(data.clone(), true, 6);
        let f = RemoteFile::open(&url).unwrap();
        assert_eq!(f.len(), data.len() as u64);
        let mut buf = vec![0u8; 40_000];
        for at in [1000u64, 1000, 20_000, 299_000, 250_000] {
            let mut got = Vec::new();
            let want = (data.len() as u64 - at).min(buf.len() as u64) as usize;
            while got.len() < want {
                let n = f
                    .read_at(&mut buf[..want - got.len()], at + got.len() as u64)
                    .unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, data[at as usize..at as usize + want]);
        }
        let requests = f.requests();
        drop(f);
        // Unblock the server's remaining accepts.
        for _ in requests..6 {
            let _ =
                TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/f.whl"));
        }
        let mut sent = server.join().unwrap();
        sent.sort();
        for w in sent.windows(2) {
            assert!(w[0].1 < w[1].0, "ranges overlap: {sent:?}");
        }
    }

    /// Reads `len` bytes at `at` through `ReadAt`, piece by piece.
    fn read_span(f: &RemoteFile, at: u64, len: usize) -> Vec<u8> {
        use cudist_wheel::ReadAt;
        let mut got = vec![0u8; len];
        let mut done = 0;
        while done < len {
            let n = f.read_at(&mut got[done..], at + done as u64).unwrap();
            assert!(n > 0);
            done += n;
        }
        got
    }

    #[test]
    fn saved_reads_are_not_asked_for_again() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("sub").join("f.whl.0123.ranges");
        // First run: the tail, then 1000..41000 in one request of what the opening one
        // measured a request to be worth (its own size, 64 KiB: up to 66536).
        let (url, server) = one_file_server(data.clone(), true, 2);
        let f = RemoteFile::open_saved(&url, &saved).unwrap();
        assert_eq!(read_span(&f, 1000, 40_000), data[1000..41_000]);
        assert_eq!((f.requests(), f.saved_bytes()), (2, 0));
        f.save(&saved).unwrap();
        drop(f);
        assert_eq!(server.join().unwrap(), [(134_464, 199_999), (1000, 66_535)]);
        // Second run: the same reads ask for nothing (no server at all); a read past them only
        // for the gap (16 KiB: nothing measured yet), from a server that answers once.
        let f = RemoteFile::open_saved("http://127.0.0.1:9/f.whl", &saved).unwrap();
        assert_eq!(f.len(), data.len() as u64);
        assert_eq!(read_span(&f, 1000, 40_000), data[1000..41_000]);
        assert_eq!(read_span(&f, 150_000, 50_000), data[150_000..]);
        assert_eq!(f.requests(), 0);
        assert!(f.saved_bytes() >= 40_000 + RemoteFile::TAIL);
        let (url, server) = one_file_server(data.clone(), true, 1);
        let f = RemoteFile::open_saved(&url, &saved).unwrap();
        assert_eq!(read_span(&f, 100_000, 1000), data[100_000..101_000]);
        assert_eq!(f.requests(), 1);
        assert_eq!(server.join().unwrap(), [(100_000, 100_000 + 16_383)]);
        // Nothing is left beside the save but the save.
        let names: Vec<_> = std::fs::read_dir(saved.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [saved.file_name().unwrap()]);
        // A damaged save is passed over: the file is opened afresh.
        let mut bytes = std::fs::read(&saved).unwrap();
        for (cut, what) in [(bytes.len() - 1, "cut short"), (20, "its length cut")] {
            std::fs::write(&saved, &bytes[..cut]).unwrap();
            let (url, server) = one_file_server(data.clone(), true, 1);
            let f = RemoteFile::open_saved(&url, &saved).unwrap();
            assert_eq!((f.requests(), f.saved_bytes()), (1, 0), "{what}");
            server.join().unwrap();
        }
        // Ranges that overlap.
        bytes[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&saved, &bytes).unwrap();
        assert!(load_ranges(&saved).is_none());
    }

    /// A file the index gives no sha256 for is asked about again with the validators it came
    /// with: 304 reuses the cached copy (no body sent), a new version (a new ETag) replaces it.
    #[test]
    fn a_file_without_sha256_is_revalidated_with_its_etag() {
        use std::sync::{Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/demo-1.0-py3-none-any.whl",
            listener.local_addr().unwrap()
        );
        // (version, requests seen, bodies sent)
        let state = Arc::new(Mutex::new((1u32, 0u32, 0u32)));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let mut r = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut asked = None;
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    loop {
                        let mut l = String::new();
                        r.read_line(&mut l).unwrap();
                        if l.trim().is_empty() {
                            break;
                        }
                        if let Some(v) = l.to_ascii_lowercase().strip_prefix("if-none-match:") {
                            asked = Some(v.trim().to_string());
                        }
                    }
                    let mut s = st.lock().unwrap();
                    s.1 += 1;
                    let etag = format!("\"v{}\"", s.0);
                    let mut w = &stream;
                    if asked.as_deref() == Some(etag.as_str()) {
                        write!(w, "HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\n\r\n").unwrap();
                    } else {
                        s.2 += 1;
                        let body = format!("version {}", s.0);
                        write!(
                            w,
                            "HTTP/1.1 200 OK\r\nETag: {etag}\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .unwrap();
                    }
                }
            }
        });
        let file = IndexFile {
            filename: "demo-1.0-py3-none-any.whl".into(),
            url,
            sha256: None,
            size: None,
            requires_python: None,
            yanked: false,
        };
        let cache = tempfile::tempdir().unwrap();
        let (path, fresh) = fetch(&file, cache.path(), Limits::default()).unwrap();
        assert!(fresh);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "version 1");
        // Unchanged: asked about, not sent again.
        let (again, fresh) = fetch(&file, cache.path(), Limits::default()).unwrap();
        assert_eq!((again.as_path(), fresh), (path.as_path(), false));
        assert_eq!(*state.lock().unwrap(), (1, 2, 1));
        // A new build at the same URL: fetched, the copy replaced.
        state.lock().unwrap().0 = 2;
        let (_, fresh) = fetch(&file, cache.path(), Limits::default()).unwrap();
        assert!(fresh);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "version 2");
        assert_eq!(*state.lock().unwrap(), (2, 3, 2));
        // Another URL's validators are not sent for this one.
        let v: Validators =
            serde_json::from_slice(&std::fs::read(validators_path(&path)).unwrap()).unwrap();
        assert_eq!(v.url, file.url);
    }

    #[test]
    fn netrc_entries_are_taken_as_pip_takes_them() {
        let n: netrc::Netrc = "machine pypi.example.com login alice password s3cret\n\
             machine other.example login bob password x\n\
             default login anon password guest\n"
            .parse()
            .unwrap();
        let b64 = |s: &str| {
            use base64::Engine;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert_eq!(
            netrc_authorization(&n, host_name("pypi.example.com:8443")),
            Some(b64("alice:s3cret"))
        );
        assert_eq!(
            netrc_authorization(&n, "elsewhere.example"),
            Some(b64("anon:guest"))
        );
        assert_eq!(host_name("[::1]:8080"), "::1");
        let no_default: netrc::Netrc = "machine a login u password p".parse().unwrap();
        assert_eq!(netrc_authorization(&no_default, "b"), None);
    }

    /// Answers given in advance (the fuzz target's) go through the checks a server's do: a
    /// range other than the one asked for, a body longer than asked or shorter than its
    /// `Content-Range`, and a missing header are refused; good answers read right.
    #[test]
    fn scripted_answers_are_checked_as_a_servers_are() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let n = data.len();
        let tail = n - RemoteFile::TAIL as usize;
        let cr = |a: usize, b: usize| Some(format!("bytes {a}-{b}/{n}"));
        let good = vec![
            (cr(tail, n - 1), data[tail..].to_vec()),
            (cr(0, 16_383), data[..16_384].to_vec()),
        ];
        let f = RemoteFile::scripted("https://x.invalid/f.whl", good).unwrap();
        assert_eq!(f.len(), n as u64);
        assert_eq!(read_span(&f, 0, 1000), data[..1000]);
        for (what, answers) in [
            (
                "a body longer than asked",
                vec![(cr(0, n - 1), data.clone())],
            ),
            (
                "a body shorter than its header",
                vec![(cr(tail, n - 1), data[tail + 1..].to_vec())],
            ),
            ("no header", vec![(None, data[tail..].to_vec())]),
            (
                "a range past the length",
                vec![(
                    Some(format!("bytes {tail}-{n}/{n}")),
                    data[tail - 1..].to_vec(),
                )],
            ),
        ] {
            let opened = RemoteFile::scripted("https://x.invalid/f.whl", answers);
            assert!(opened.is_err(), "{what}");
        }
        // A read at 0 answered with another range than the one asked for.
        use cudist_wheel::ReadAt;
        let f = RemoteFile::scripted(
            "https://x.invalid/f.whl",
            vec![
                (cr(tail, n - 1), data[tail..].to_vec()),
                (cr(16_384, 32_767), data[16_384..32_768].to_vec()),
            ],
        )
        .unwrap();
        let mut buf = [0u8; 100];
        assert!(f.read_at(&mut buf, 0).is_err());
    }

    #[test]
    fn a_reader_past_its_guess_gets_growing_requests() {
        use cudist_wheel::ReadAt;
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let (url, server) = one_file_server(data.clone(), true, 12);
        let f = RemoteFile::open(&url).unwrap();
        // A member of the whole file, whose reader guessed it would stop at 50 000 and reads
        // on to 600 000, 16 KiB at a time (as an inflater asks).
        f.hint(0, data.len() as u64);
        f.hint(0, 50_000);
        let mut at = 0;
        let mut buf = vec![0u8; 16 << 10];
        while at < 600_000 {
            let n = f.read_at(&mut buf, at).unwrap();
            assert_eq!(buf[..n], data[at as usize..at as usize + n]);
            at += n as u64;
        }
        // Past the guess requests double from 16 KiB (34 of 16 KiB before).
        let requests = f.requests();
        assert!(requests <= 9, "{requests} requests");
        drop(f);
        for _ in requests..12 {
            let _ =
                TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/f.whl"));
        }
        let sent = server.join().unwrap();
        assert!(sent.iter().all(|(_, b)| *b < 1_000_000), "{sent:?}");
    }

    #[test]
    fn a_server_without_ranges_is_told_apart() {
        let (url, server) = one_file_server(vec![7u8; 100_000], false, 1);
        assert!(matches!(
            RemoteFile::open(&url),
            Err(IndexError::NoRanges(_))
        ));
        server.join().unwrap();
    }

    #[test]
    fn a_file_name_with_a_path_is_refused() {
        let f = IndexFile {
            filename: "../../etc/x.whl".into(),
            url: "http://h/x.whl".into(),
            sha256: None,
            size: None,
            requires_python: None,
            yanked: false,
        };
        let dir = tempfile::tempdir().unwrap();
        assert!(fetch(&f, dir.path(), Limits::default()).is_err());
        // A "digest" that is a path.
        let g = IndexFile {
            filename: "x.whl".into(),
            url: "http://h/x.whl".into(),
            sha256: Some("..".into()),
            size: None,
            requires_python: None,
            yanked: false,
        };
        assert!(fetch(&g, dir.path(), Limits::default()).is_err());
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    /// File names pip would not take (whitespace, control characters, a path) are left out of
    /// a page, in both formats: a newline or ESC from an index never reaches the terminal.
    #[test]
    fn names_pip_would_not_take_are_left_out() {
        let good = "demo-1.0-py3-none-any.whl";
        for bad in [
            "demo-1.0-py3-none-any.whl\nbest: fake.whl",
            "demo\u{1b}[31m-1.0-py3-none-any.whl",
            "demo 1.0-py3-none-any.whl",
            "../demo-1.0-py3-none-any.whl",
        ] {
            let json = serde_json::json!({"meta": {"api-version": "1.0"}, "name": "demo",
                "files": [{"filename": bad, "url": "x.whl", "hashes": {}},
                          {"filename": good, "url": "y.whl", "hashes": {}}]});
            let files = parse_page("http://h/simple/demo/", json.to_string().as_bytes()).unwrap();
            let names: Vec<&str> = files.iter().map(|f| f.filename.as_str()).collect();
            assert_eq!(names, [good], "{bad:?}");
            let html = format!("<a href=\"x.whl\">{bad}</a><a href=\"y.whl\">{good}</a>");
            let files = parse_page("http://h/simple/demo/", html.as_bytes()).unwrap();
            let names: Vec<&str> = files.iter().map(|f| f.filename.as_str()).collect();
            assert_eq!(names, [good], "{bad:?}");
        }
    }

    /// A server that answers every GET with a new body, counting them.
    fn counting_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/demo-1.0-py3-none-any.whl",
            listener.local_addr().unwrap()
        );
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let c = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap_or(0) == 0 || l.trim().is_empty() {
                        break;
                    }
                }
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                let body = format!("build {n}");
                let mut w = stream;
                let _ = write!(
                    w,
                    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (url, count)
    }

    /// A file the index gives no sha256 for is fetched again (the server may hold a new build at
    /// the same URL); one whose sha256 does not match leaves nothing in the cache, not even its
    /// directory.
    #[test]
    fn files_without_a_sha256_are_fetched_again_and_a_mismatch_leaves_nothing() {
        let (url, count) = counting_server();
        let cache = tempfile::tempdir().unwrap();
        let file = IndexFile {
            filename: "demo-1.0-py3-none-any.whl".into(),
            url: url.clone(),
            sha256: None,
            size: None,
            requires_python: None,
            yanked: false,
        };
        let (p1, fetched1) = fetch(&file, cache.path(), Limits::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&p1).unwrap(), "build 1");
        assert!(cached(&file, cache.path()).is_none());
        let (p2, fetched2) = fetch(&file, cache.path(), Limits::default()).unwrap();
        assert!(fetched1 && fetched2);
        assert_eq!(std::fs::read_to_string(&p2).unwrap(), "build 2");
        assert_eq!(count.load(Ordering::SeqCst), 2);
        let other = tempfile::tempdir().unwrap();
        let wrong = IndexFile {
            sha256: Some("0".repeat(64)),
            ..file
        };
        let e = fetch(&wrong, other.path(), Limits::default()).unwrap_err();
        assert!(matches!(e, IndexError::Hash { .. }), "{e}");
        assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
    }

    /// A URL with a control character or a space is refused before anything is sent; user and
    /// password move into a header and out of what messages show.
    #[test]
    fn urls_are_checked_before_they_are_asked_for() {
        for bad in [
            "http://h/a\r\nHost: evil",
            "http://h/a b",
            "http://h/\u{1b}[2J",
            "file:///etc/passwd",
            "ftp://h/x",
            "http:///nohost",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad:?}");
        }
        let t = Target::parse("https://us%40er:p%3Ass@index.example/simple/").unwrap();
        assert_eq!(t.url, "https://index.example/simple/");
        use base64::Engine;
        let want = base64::engine::general_purpose::STANDARD.encode("us@er:p:ss");
        assert_eq!(t.authorization, Some(format!("Basic {want}")));
        let e = get("http://127.0.0.1:9/a\nb", None, 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\\n") && !e.contains('\n'), "{e}");
    }

    /// A server that claims a file far larger than it is (every range answered with zeros, the
    /// length a lie) cannot make a reader fetch more than its budget, and one whose length is
    /// not what the index declared is not believed at all.
    #[test]
    fn a_lying_length_costs_no_more_than_the_budget() {
        use cudist_wheel::ReadAt;
        let claimed: u64 = 8 << 30;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/f.whl", listener.local_addr().unwrap());
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = sent.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                let mut range = (0u64, 0u64);
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap_or(0) == 0 || l.trim().is_empty() {
                        break;
                    }
                    let lower = l.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("range: bytes=") {
                        let (a, b) = v.trim().split_once('-').unwrap();
                        range = if a.is_empty() {
                            (claimed - b.parse::<u64>().unwrap(), claimed - 1)
                        } else {
                            (a.parse().unwrap(), b.parse().unwrap())
                        };
                    }
                }
                let (a, b) = range;
                let n = b - a + 1;
                counted.fetch_add(n, Ordering::SeqCst);
                let mut w = stream;
                let _ = write!(
                    w,
                    "HTTP/1.1 206 Partial Content\r\nConnection: close\r\nContent-Length: {n}\r\nContent-Range: bytes {a}-{b}/{claimed}\r\n\r\n"
                );
                let _ = w.write_all(&vec![0u8; n as usize]);
            }
        });
        let f = RemoteFile::open(&url).unwrap();
        assert_eq!(f.len(), claimed);
        let e = RemoteFile::open(&url)
            .unwrap()
            .within(Some(1000))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("the index 1000"), "{e}");
        let budget = 2 << 20;
        let f = f.with_budget(budget);
        let mut buf = vec![0u8; 64 << 10];
        let mut at = 0u64;
        let err = loop {
            match f.read_at(&mut buf, at) {
                Ok(0) => panic!("read to the end of an 8 GiB lie"),
                Ok(n) => at += n as u64,
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.contains("more than 2097152 bytes"), "{err}");
        assert!(
            sent.load(Ordering::SeqCst) <= budget + 2 * RemoteFile::TAIL,
            "{}",
            sent.load(Ordering::SeqCst)
        );
    }
}
