//! cudist speaks to package indexes through one blocking HTTP client and nothing else: ureq with
//! rustls, in `cudist-index` only (issue 35: a protocol is a library's job). No async runtime,
//! no second HTTP or TLS stack, no binding to the system's curl or OpenSSL may enter its
//! dependency tree (issue 19 kept it offline; issue 35 let exactly this one client in).
//! Cargo.lock lists every crate any build of the workspace can compile, tests included.

mod common;

/// Each package of Cargo.lock with the names of its dependencies.
fn packages(lock: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_deps = false;
    for l in lock.lines() {
        if l == "[[package]]" {
            out.push((String::new(), Vec::new()));
            in_deps = false;
        } else if let Some(n) = l
            .strip_prefix("name = \"")
            .and_then(|l| l.strip_suffix('"'))
        {
            if let Some(p) = out.last_mut() {
                p.0 = n.to_string();
            }
        } else if l.starts_with("dependencies = [") {
            in_deps = true;
        } else if in_deps && l == "]" {
            in_deps = false;
        } else if in_deps {
            let dep = l.trim().trim_matches(|c| c == '"' || c == ',');
            let dep = dep.split(' ').next().unwrap_or(dep);
            if let Some(p) = out.last_mut() {
                p.1.push(dep.to_string());
            }
        }
    }
    out
}

#[test]
fn one_http_client_and_no_other_network_stack_in_the_lock_file() {
    let lock = std::fs::read_to_string(common::repo_root().join("Cargo.lock")).unwrap();
    let pkgs = packages(&lock);
    let names: Vec<&str> = pkgs.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"cudist-conda"), "not a Cargo.lock?");
    let forbidden = [
        "tokio",
        "async-std",
        "hyper",
        "h2",
        "reqwest",
        "native-tls",
        "openssl",
        "openssl-sys",
        "curl",
        "curl-sys",
        "rattler_networking",
    ];
    let found: Vec<&&str> = names.iter().filter(|n| forbidden.contains(n)).collect();
    assert!(found.is_empty(), "network crates in Cargo.lock: {found:?}");
    // The one client, and only where indexes are read.
    assert!(names.contains(&"ureq"), "the HTTP client is ureq");
    let users: Vec<&str> = pkgs
        .iter()
        .filter(|(_, deps)| deps.iter().any(|d| d == "ureq"))
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(users, ["cudist-index"], "crates that use ureq");
}
