//! The contract every `--json` output keeps (README, "Exit codes and JSON"): a `schema`
//! (`cudist.<command>/<version>`) and the `cudist_version` that wrote it, on every command, for
//! inputs the test builds itself.

mod common;

use common::*;
use serde_json::Value;

fn json_of(args: &[&str]) -> Value {
    let o = cudist(args);
    let text = stdout(&o);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}\n{}", stderr(&o)))
}

#[test]
fn every_json_output_names_its_schema_and_the_cudist_version() {
    let work = tempfile::tempdir().unwrap();
    let fixtures = fixtures();
    let fx = fixtures.to_str().unwrap();

    // A tree to relink and split: a runtime stand-in with its SONAME, and a header.
    let tree = work.path().join("tree");
    std::fs::create_dir_all(tree.join("lib64")).unwrap();
    std::fs::create_dir_all(tree.join("include")).unwrap();
    fake_lib(
        &tree.join("lib64"),
        "libcudart.so.13",
        "libcudart.so.13",
        "cudaMalloc",
    );
    std::fs::write(
        tree.join("include/cuda_runtime.h"),
        "int cudaMalloc(void);\n",
    )
    .unwrap();
    std::fs::write(tree.join("version.json"), "{}").unwrap();
    let t = tree.to_str().unwrap();
    // A wheel to repair: an extension linked against that runtime.
    let wheel = work.path().join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    let ext = ext_needing(work.path(), "ext", "libcudart.so.13", "cudaMalloc");
    write_wheel(&wheel, "demo", &[], &[("demo/ext.so", ext)]);
    let w = wheel.to_str().unwrap();
    let wheelhouse = work.path().join("wheelhouse");
    let wh = wheelhouse.to_str().unwrap();
    let split_out = work.path().join("split");
    let so = split_out.to_str().unwrap();

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["inspect", "--json", fx], "cudist.inspect/1"),
        (vec!["repair", "--json", "-w", wh, w], "cudist.repair/1"),
        (
            vec!["doctor", "--json", "--ld-library-path", "", fx],
            "cudist.doctor/1",
        ),
        (vec!["relink", "--json", "--check", t], "cudist.relink/1"),
        (vec!["split", "--json", t, "-o", so], "cudist.split/1"),
        (vec!["toolkit", "env", "--json", t], "cudist.toolkit.env/1"),
        (
            vec!["catalog", "lib", "libcublas.so.12", "--json"],
            "cudist.catalog/1",
        ),
        (vec!["catalog", "sm", "--json"], "cudist.catalog/1"),
        (
            vec!["catalog", "driver", "12.8", "--json"],
            "cudist.catalog/1",
        ),
        (vec!["catalog", "list", "--json"], "cudist.catalog/1"),
        (vec!["self-check", "--json"], "cudist.self-check/1"),
    ];
    let version = env!("CARGO_PKG_VERSION");
    for (args, schema) in cases {
        let v = json_of(&args);
        assert_eq!(v["schema"], schema, "{args:?}");
        assert_eq!(v["cudist_version"], version, "{args:?}");
    }
    // The manifest split writes beside its packages is the same document.
    let written: Value =
        serde_json::from_slice(&std::fs::read(split_out.join("split.json")).unwrap()).unwrap();
    assert_eq!(written["schema"], "cudist.split/1");
    assert_eq!(written["cudist_version"], version);
}
