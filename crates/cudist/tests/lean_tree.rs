//! cudist is an offline tool: no crate of a network stack may enter its dependency tree (issue 19).
//! Cargo.lock lists every crate any build of the workspace can compile, tests included.

mod common;

#[test]
fn no_network_crates_in_the_lock_file() {
    let lock = std::fs::read_to_string(common::repo_root().join("Cargo.lock")).unwrap();
    let names: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .collect();
    assert!(names.contains(&"cudist-conda"), "not a Cargo.lock?");
    let network = [
        "tokio",
        "hyper",
        "h2",
        "reqwest",
        "rustls",
        "native-tls",
        "openssl",
        "ureq",
        "curl",
        "rattler_networking",
    ];
    let found: Vec<&&str> = names.iter().filter(|n| network.contains(n)).collect();
    assert!(found.is_empty(), "network crates in Cargo.lock: {found:?}");
}
