//! Reading a Python package index and fetching wheels from it, for `cudist select --index`.
//!
//! - [`project_files`]: a project's files from the index's simple API, as JSON (PEP 691, asked for
//!   with `Accept: application/vnd.pypi.simple.v1+json`) or HTML (PEP 503 anchors), with their
//!   sha256 where the index gives it;
//! - [`fetch`]: one file into a cache directory, by its sha256 (checked) or its URL, written
//!   through a temporary and renamed; a cached file is not fetched again.
//!
//! cudist is an offline tool and carries no network stack: `http://` URLs (a local mirror, the
//! tests' loopback server) are spoken to with the few lines of HTTP/1.1 below, and `https://` URLs
//! are handed to the system's `curl`. Every response is bounded ([`Limits`]); the bytes received
//! are counted ([`received`]) so a caller can say what it cost.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
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
    /// The connection or the transfer failed.
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
    let n = if let Some(rest) = url.strip_prefix("http://") {
        http_get(url, rest, accept, limit, sink)?
    } else if url.starts_with("https://") {
        curl_get(url, accept, limit, sink)?
    } else {
        return Err(IndexError::Scheme(url.to_string()));
    };
    RECEIVED.fetch_add(n, Ordering::Relaxed);
    Ok(n)
}

/// Copies at most `limit` bytes from `from` to `to`; more is an error.
fn bounded_copy(
    url: &str,
    from: &mut dyn Read,
    to: &mut dyn Write,
    limit: u64,
) -> Result<u64, IndexError> {
    let n = std::io::copy(&mut from.take(limit + 1), to).map_err(|e| IndexError::Transfer {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    if n > limit {
        return Err(IndexError::TooLarge {
            url: url.to_string(),
            limit,
        });
    }
    Ok(n)
}

/// HTTP/1.1 over a plain TCP connection: one request, `Connection: close`, a body framed by
/// Content-Length, chunked encoding or the end of the connection. Redirects are not followed.
fn http_get(
    url: &str,
    rest: &str,
    accept: Option<&str>,
    limit: u64,
    sink: &mut dyn Write,
) -> Result<u64, IndexError> {
    let err = |message: String| IndexError::Transfer {
        url: url.to_string(),
        message,
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let mut stream = TcpStream::connect(&addr).map_err(|e| err(e.to_string()))?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: cudist/{}\r\nConnection: close\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(a) = accept {
        req.push_str(&format!("Accept: {a}\r\n"));
    }
    req.push_str("\r\n");
    stream
        .write_all(req.as_bytes())
        .map_err(|e| err(e.to_string()))?;
    let mut r = BufReader::new(stream);
    // A header line, bounded.
    let line = |r: &mut BufReader<TcpStream>| -> Result<String, IndexError> {
        let mut l = String::new();
        (&mut *r)
            .take(16 << 10)
            .read_line(&mut l)
            .map_err(|e| err(e.to_string()))?;
        Ok(l)
    };
    let status_line = line(&mut r)?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| err(format!("not an HTTP answer: {:?}", status_line.trim())))?;
    let mut length = None;
    let mut chunked = false;
    for _ in 0..256 {
        let l = line(&mut r)?;
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse::<u64>().ok(),
                "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
        }
    }
    if !(200..300).contains(&status) {
        return Err(IndexError::Status {
            url: url.to_string(),
            status,
        });
    }
    if length.is_some_and(|n| n > limit) {
        return Err(IndexError::TooLarge {
            url: url.to_string(),
            limit,
        });
    }
    if !chunked {
        let n = bounded_copy(url, &mut r, sink, limit)?;
        if length.is_some_and(|want| want != n) {
            return Err(err(format!(
                "{n} of {} bytes received",
                length.unwrap_or(0)
            )));
        }
        return Ok(n);
    }
    let mut total = 0u64;
    loop {
        let size = line(&mut r)?;
        let n = u64::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| err(format!("bad chunk size {:?}", size.trim())))?;
        if n == 0 {
            return Ok(total);
        }
        if total.saturating_add(n) > limit {
            return Err(IndexError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        let got = bounded_copy(url, &mut (&mut r).take(n), sink, n)?;
        if got != n {
            return Err(err("the connection ended inside a chunk".into()));
        }
        total += n;
        let _ = line(&mut r)?;
    }
}

/// The system's curl for https: `--fail`, redirects followed, the size bounded, the body streamed.
fn curl_get(
    url: &str,
    accept: Option<&str>,
    limit: u64,
    sink: &mut dyn Write,
) -> Result<u64, IndexError> {
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sS", "--fail", "-L", "--max-filesize"])
        .arg(limit.to_string());
    if let Some(a) = accept {
        cmd.arg("-H").arg(format!("Accept: {a}"));
    }
    let mut child = cmd
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| IndexError::Transfer {
            url: url.to_string(),
            message: format!("https is read through curl, which cannot be run here: {e}"),
        })?;
    let mut out = child.stdout.take().expect("piped");
    let copied = bounded_copy(url, &mut out, sink, limit);
    drop(out);
    if copied.is_err() {
        let _ = child.kill();
    }
    let done = child.wait_with_output().map_err(|e| IndexError::Transfer {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    let n = copied?;
    if !done.status.success() {
        return Err(IndexError::Transfer {
            url: url.to_string(),
            message: String::from_utf8_lossy(&done.stderr).trim().to_string(),
        });
    }
    Ok(n)
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

/// A project page: PEP 691 JSON, else PEP 503 HTML.
pub fn parse_page(url: &str, body: &[u8]) -> Result<Vec<IndexFile>, IndexError> {
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
        });
    }
    if out.is_empty() && !text.contains("<a") && !text.trim_start().starts_with('<') {
        return Err(page_err("neither JSON nor HTML".into()));
    }
    Ok(out)
}

fn html_unescape(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&#x27;", "'")
        .replace("&quot;", "\"")
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

/// Fetches a file into `cache` (`<cache>/<sha256 or url digest>/<filename>`), unless it is there;
/// checks its sha256 when the index gave one. Returns its path and whether it was fetched now.
pub fn fetch(
    file: &IndexFile,
    cache: &Path,
    limits: Limits,
) -> Result<(PathBuf, bool), IndexError> {
    let key = file
        .sha256
        .clone()
        .unwrap_or_else(|| hex(&Sha256::digest(file.url.as_bytes())));
    // Both come from the index: a hex digest and a plain file name, nothing that walks out of
    // the cache.
    let plain = |n: &str| {
        !n.is_empty() && !n.starts_with('.') && !n.contains(['/', '\\', '\0']) && n.len() <= 255
    };
    if !plain(&file.filename) || !key.bytes().all(|b| b.is_ascii_hexdigit()) || key.len() != 64 {
        return Err(IndexError::Page {
            url: file.url.clone(),
            message: format!("{:?} is not a plain file name", file.filename),
        });
    }
    let dir = cache.join(&key);
    let path = dir.join(&file.filename);
    if path.is_file() {
        return Ok((path, false));
    }
    let cache_err = |source| IndexError::Cache {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(cache_err)?;
    // A temporary created exclusively beside the file, filled while hashing, renamed into place;
    // removed on any failure.
    let tmp = dir.join(format!(".{}.{}.part", file.filename, std::process::id()));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(cache_err)?;
    struct Hashing(std::fs::File, Sha256);
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
    let done = transfer(&file.url, None, limits.file, &mut sink).and_then(|_| {
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
        f.sync_all().map_err(cache_err)?;
        std::fs::rename(&tmp, &path).map_err(cache_err)
    });
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok((path, true))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_in_both_formats() {
        let json = br#"{"meta": {"api-version": "1.1"}, "name": "demo", "files": [
            {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
             "hashes": {"sha256": "ab12"}}]}"#;
        let f = parse_page("http://h:1/simple/demo/", json).unwrap();
        assert_eq!(f[0].url, "http://h:1/files/demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].sha256.as_deref(), Some("ab12"));
        let html = b"<html><body><a href=\"/f/demo-1.0-py3-none-any.whl#sha256=cd34\" data-x=\"1\">demo-1.0-py3-none-any.whl</a><br/></body></html>";
        let f = parse_page("http://h:1/simple/demo/", html).unwrap();
        assert_eq!(f[0].filename, "demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].url, "http://h:1/f/demo-1.0-py3-none-any.whl");
        assert_eq!(f[0].sha256.as_deref(), Some("cd34"));
        assert!(parse_page("http://h/simple/x/", b"just words").is_err());
    }

    #[test]
    fn a_file_name_with_a_path_is_refused() {
        let f = IndexFile {
            filename: "../../etc/x.whl".into(),
            url: "http://h/x.whl".into(),
            sha256: None,
        };
        let dir = tempfile::tempdir().unwrap();
        assert!(fetch(&f, dir.path(), Limits::default()).is_err());
        // A "digest" that is a path.
        let g = IndexFile {
            filename: "x.whl".into(),
            url: "http://h/x.whl".into(),
            sha256: Some("..".into()),
        };
        assert!(fetch(&g, dir.path(), Limits::default()).is_err());
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}
