//! `cudist select` against an index served on 127.0.0.1 by the test itself that tries to turn the
//! client against its user: a file URL that would split the request (CR LF in the index's
//! `url`), a server that drips its answer a byte at a time, one that never answers. The client
//! (ureq, issue 35) must refuse the first before any byte is sent, and give up on the others
//! within its time budget (`CUDIST_HTTP_TIMEOUT`), naming the URL.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// How the server answers a request for a file.
#[derive(Clone, Copy)]
enum Files {
    /// Headers promising a megabyte, then one byte a second.
    Drip,
    /// Nothing at all: the connection stays open and silent.
    Stall,
    /// The wheel in [`SMALL_WHEEL`], whole, for every file.
    Small,
}

/// The one wheel a [`Files::Small`] server serves under every name.
static SMALL_WHEEL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// Serves a PEP 691 page for any `/simple/…` path listing `files` (name, url with `{base}` for
/// the server's own address), and answers file requests as `mode` says. Every request's head
/// (request line and headers) is logged.
fn serve(files: Vec<(String, String)>, mode: Files) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let (b, l) = (base.clone(), log.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (b, l, files) = (b.clone(), l.clone(), files.clone());
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line.trim().is_empty() {
                            break;
                        }
                        head.push_str(&line);
                    }
                    l.lock().unwrap().push(head.clone());
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut w = &stream;
                    if path.starts_with("/simple") {
                        let listed: Vec<serde_json::Value> = files
                            .iter()
                            .map(|(name, url)| {
                                serde_json::json!({"filename": name, "url": url.replace("{base}", &b),
                                    "hashes": {}})
                            })
                            .collect();
                        let body = serde_json::json!({"meta": {"api-version": "1.1"},
                            "name": "demo", "files": listed})
                        .to_string();
                        let _ = write!(
                            w,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        continue;
                    }
                    match mode {
                        Files::Drip => {
                            let _ = write!(w, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
                            for _ in 0..1000 {
                                if w.write_all(b"x").is_err() {
                                    return;
                                }
                                std::thread::sleep(Duration::from_secs(1));
                            }
                        }
                        Files::Stall => std::thread::sleep(Duration::from_secs(1000)),
                        Files::Small => {
                            let body = SMALL_WHEEL.get().expect("set by the test");
                            let _ = write!(
                                w,
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                                body.len()
                            );
                            let _ = w.write_all(body);
                            continue;
                        }
                    }
                    return;
                }
            });
        }
    });
    (base, log)
}

fn select_on(base: &str, timeout: &str, fetch: &str) -> (std::process::Output, Duration) {
    let work = tempfile::tempdir().unwrap();
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let start = Instant::now();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["select", "--host"])
        .arg(&host)
        .args(["--index", &format!("{base}/simple"), "--package", "demo"])
        .args(["--fetch", fetch, "--cache-dir"])
        .arg(work.path().join("cache"))
        .env("CUDIST_HTTP_TIMEOUT", timeout)
        .output()
        .unwrap();
    (o, start.elapsed())
}

/// A file URL holding CR LF (a forged `Host:` and a second request) is refused before anything
/// is sent: the server sees the page request and nothing else.
#[test]
fn a_url_that_would_split_the_request_is_never_sent() {
    let forged = "{base}/files/demo-1.0-py3-none-any.whl HTTP/1.1\r\nHost: evil.example\r\n\r\nPOST /admin/delete HTTP/1.1\r\nX-Y: z";
    let (base, log) = serve(
        vec![("demo-1.0-py3-none-any.whl".into(), forged.into())],
        Files::Stall,
    );
    for fetch in ["whole", "front"] {
        let (o, _) = select_on(&base, "20", fetch);
        let heads = log.lock().unwrap().clone();
        assert!(
            heads.iter().all(|h| h.starts_with("GET /simple")),
            "{fetch}: {heads:#?}"
        );
        assert!(
            !heads
                .iter()
                .any(|h| h.contains("evil.example") || h.contains("POST")),
            "{heads:#?}"
        );
        let err = stderr(&o) + &stdout(&o);
        assert!(err.contains("control character"), "{fetch}: {err}");
        // The URL is named with its control characters escaped, never written raw.
        assert!(!err.contains("\r\nPOST"), "{err}");
    }
}

/// A server that drips its answer, or never answers, is given up on within the time budget,
/// and the error names the URL and the timeout.
#[test]
fn dripping_and_stalled_servers_are_given_up_on() {
    for mode in [Files::Drip, Files::Stall] {
        let (base, _log) = serve(
            vec![(
                "demo-1.0-py3-none-any.whl".into(),
                "{base}/files/demo-1.0-py3-none-any.whl".into(),
            )],
            mode,
        );
        let (o, took) = select_on(&base, "3", "whole");
        let err = stderr(&o) + &stdout(&o);
        assert!(took < Duration::from_secs(30), "{took:?}: {err}");
        assert!(err.contains("timed out"), "{err}");
        assert!(err.contains("/files/demo-1.0-py3-none-any.whl"), "{err}");
        // A time-out is the network's or the server's fault, not a bad input (3).
        assert_eq!(o.status.code(), Some(4), "{err}");
    }
}

/// https is verified against the system's trust store, as pip verifies it: a loopback server
/// whose certificate a test-only CA signed (tests/fixtures/tls) is trusted where `SSL_CERT_FILE`
/// names that CA, and refused, before any page is read, where the store holds another
/// certificate (the server's own, which no CA in the store signed).
#[test]
fn https_is_verified_against_the_trust_store_the_system_names() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("www");
    std::fs::create_dir_all(root.join("simple/demo")).unwrap();
    std::fs::create_dir_all(root.join("files")).unwrap();
    let name = "demo-1.0-py3-none-any.whl";
    write_wheel(
        &root.join("files").join(name),
        "demo",
        &[],
        &[("demo/__init__.py", b"".to_vec())],
    );
    std::fs::write(
        root.join("simple/demo/index.html"),
        format!("<html><body><a href=\"../../files/{name}\">{name}</a></body></html>\n"),
    )
    .unwrap();
    let tls = repo_root().join("tests/fixtures/tls");
    let server = "import http.server, ssl, sys, functools\n\
        h = http.server.HTTPServer(('127.0.0.1', 0), functools.partial(\
        http.server.SimpleHTTPRequestHandler, directory=sys.argv[1]))\n\
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
        c.load_cert_chain(sys.argv[2], sys.argv[3])\n\
        h.socket = c.wrap_socket(h.socket, server_side=True)\n\
        print(h.server_address[1], flush=True)\n\
        h.serve_forever()\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", server])
        .arg(&root)
        .arg(tls.join("server.pem"))
        .arg(tls.join("server.key"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut port)
        .unwrap();
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let empty = work.path().join("no-certs");
    std::fs::create_dir_all(&empty).unwrap();
    let run = |ca: &std::path::Path| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"));
        cmd.args(["select", "--host"])
            .arg(&host)
            .args([
                "--index",
                &format!("https://127.0.0.1:{}/simple", port.trim()),
                "--package",
                "demo",
                "--cache-dir",
            ])
            .arg(work.path().join("cache"))
            // Only what the test names is trusted: no directory of the machine's.
            .env("SSL_CERT_DIR", &empty)
            .env("SSL_CERT_FILE", ca);
        cmd.output().unwrap()
    };
    let trusted = run(&tls.join("ca.pem"));
    let refused = run(&tls.join("server.pem"));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    assert!(
        stdout(&trusted).contains(&format!("best: {name}")),
        "{}",
        stdout(&trusted)
    );
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        stderr(&refused).contains("invalid peer certificate"),
        "{}",
        stderr(&refused)
    );
}

/// Every `.cudist-tmp` file below `dir`.
fn temporaries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.to_string_lossy().ends_with(".cudist-tmp") {
                out.push(p);
            }
        }
    }
    out
}

/// Starts `select --fetch whole` on a dripping server and waits until its download temporary
/// exists in `cache` (one that was not there before).
fn select_downloading(base: &str, work: &std::path::Path) -> std::process::Child {
    let host = write_profile(
        &work.join("host.json"),
        &serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let before = temporaries(&work.join("cache"));
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["select", "--host"])
        .arg(&host)
        .args(["--index", &format!("{base}/simple"), "--package", "demo"])
        .args(["--fetch", "whole", "--cache-dir"])
        .arg(work.join("cache"))
        .env("CUDIST_HTTP_TIMEOUT", "60")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while temporaries(&work.join("cache"))
        .iter()
        .all(|t| before.contains(t))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no download temporary appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// SIGTERM and SIGINT in the middle of a download: cudist removes its temporary and ends with
/// 128 + the signal's number, as a program killed by it would report.
#[test]
fn an_interrupted_run_removes_its_temporaries() {
    let (base, _log) = serve(
        vec![(
            "demo-1.0-py3-none-any.whl".into(),
            "{base}/files/demo-1.0-py3-none-any.whl".into(),
        )],
        Files::Drip,
    );
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let work = tempfile::tempdir().unwrap();
        let child = select_downloading(&base, work.path());
        // SAFETY: a signal to the child this test started.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(128 + sig), "{}", stderr(&o));
        assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
        let left = temporaries(work.path());
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// A run killed outright (SIGKILL: no handler runs) leaves its temporary; the next run writing to
/// that directory recognises it (its exclusive name, and no live process holds its lock),
/// removes it and says so, while a temporary a live process holds is left alone.
#[test]
fn what_a_killed_run_left_is_removed_by_the_next_run() {
    let (base, _log) = serve(
        vec![(
            "demo-1.0-py3-none-any.whl".into(),
            "{base}/files/demo-1.0-py3-none-any.whl".into(),
        )],
        Files::Drip,
    );
    let work = tempfile::tempdir().unwrap();
    let mut killed = select_downloading(&base, work.path());
    killed.kill().unwrap();
    killed.wait().unwrap();
    let left = temporaries(work.path());
    assert_eq!(left.len(), 1, "{left:?}");
    // A live run's temporary in the same directory, with its lock held.
    let live = select_downloading(&base, work.path());
    // Leftovers younger than a second are spared (their maker may not have locked them yet).
    std::thread::sleep(Duration::from_millis(1200));
    let next = select_downloading(&base, work.path());
    let mut pids = [live, next];
    for c in &mut pids {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    let [_, next] = pids;
    let err = {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut next.stderr.unwrap(), &mut s).unwrap();
        s
    };
    assert!(
        err.contains("removed what an interrupted cudist run left"),
        "{err}"
    );
    let name = left[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains(&name), "{err}");
    assert!(!left[0].exists());
    // The live run's temporary (and the two just killed) were not the next run's to take: the
    // next run named only the first.
    assert_eq!(err.matches(".cudist-tmp").count(), 1, "{err}");
}

/// Amplification: a page listing 5,000 builds of one release that its names cannot tell apart.
/// cudist reads at most 64 of one project from one index (the highest build tags first), counts
/// the rest, and sends one request per wheel read plus the page's.
#[test]
fn a_page_of_thousands_of_builds_costs_a_bounded_number_of_requests() {
    let work = tempfile::tempdir().unwrap();
    let wheel = work.path().join("demo-1.0-py3-none-any.whl");
    write_wheel(&wheel, "demo", &[], &[("demo/__init__.py", b"".to_vec())]);
    SMALL_WHEEL.get_or_init(|| std::fs::read(&wheel).unwrap());
    let files = (0..5000)
        .map(|n| {
            let name = format!("demo-1.0-{n}-py3-none-any.whl");
            let url = format!("{{base}}/files/{name}");
            (name, url)
        })
        .collect();
    let (base, log) = serve(files, Files::Small);
    let (o, _) = select_on(&base, "20", "whole");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}{out}", stderr(&o));
    let heads = log.lock().unwrap().clone();
    let file_requests: Vec<&String> = heads
        .iter()
        .filter(|h| h.starts_with("GET /files/"))
        .collect();
    assert_eq!(file_requests.len(), 64, "{} requests", heads.len());
    assert_eq!(heads.len(), 65);
    // The highest build tags were the ones read.
    assert!(file_requests.iter().any(|h| h.contains("demo-1.0-4999-")));
    assert!(!file_requests.iter().any(|h| h.contains("demo-1.0-0-")));
    assert!(out.contains("4936 more wheel(s) not read"), "{out}");
}

/// Credentials come from the netrc `NETRC` names, as pip takes them (the host's entry, sent as
/// Basic authorization), and never appear in the URLs cudist prints.
#[test]
fn netrc_credentials_are_sent_to_their_host() {
    let (base, log) = serve(Vec::new(), Files::Stall);
    let work = tempfile::tempdir().unwrap();
    let netrc = work.path().join("netrc");
    std::fs::write(
        &netrc,
        "machine 127.0.0.1\n  login alice\n  password s3cret\nmachine other.example login bob password x\n",
    )
    .unwrap();
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["select", "--host"])
        .arg(&host)
        .args([
            "--index",
            &format!("{base}/simple"),
            "--package",
            "demo",
            "--cache-dir",
        ])
        .arg(work.path().join("cache"))
        .env("NETRC", &netrc)
        .output()
        .unwrap();
    let heads = log.lock().unwrap().clone();
    let page = heads
        .iter()
        .find(|h| h.starts_with("GET /simple"))
        .expect("the page was asked for");
    // base64("alice:s3cret")
    assert!(
        page.to_ascii_lowercase()
            .contains("authorization: basic ywxpy2u6cznjcmv0"),
        "{page}"
    );
    let said = stdout(&o) + &stderr(&o);
    assert!(!said.contains("s3cret"), "{said}");
}
