//! The contract every `--json` output keeps (README, "Exit codes and JSON"): a `schema`
//! (`cudist.<command>/<version>`) and the `cudist_version` that wrote it, on every command; and
//! the JSON Schemas under docs/schema/: generated from the Rust types (a regenerated set must equal
//! the committed one), with one shape per field, and met by real outputs as judged by an
//! independent validator (Python's `jsonschema`, scripts/validate-json.py): outputs for inputs the
//! test builds itself, the nvcc-built fixtures, and the real wheels and CUDA environments
//! scripts/test.sh provides.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

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

    // A tree to relink and split, and a wheel to repair.
    let (tree, wheel) = tree_and_wheel(work.path());
    let t = tree.to_str().unwrap();
    let w = wheel.to_str().unwrap();
    let wheelhouse = work.path().join("wheelhouse");
    let wh = wheelhouse.to_str().unwrap();
    let split_out = work.path().join("split");
    let so = split_out.to_str().unwrap();
    let multi = fixtures.join("multi.so");
    let slim_out = work.path().join("multi-slim.so");
    let profile = write_profile(
        &work.path().join("profile.json"),
        &serde_json::json!({"name": "box", "driver": "580.65.06", "glibc": "2.39",
            "python": "3.11", "gpus": [{"name": "H100", "sm": 90}]}),
    );

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["inspect", "--json", fx], "cudist.inspect/2"),
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
        (vec!["catalog", "gpus", "--json"], "cudist.catalog/1"),
        (vec!["self-check", "--json"], "cudist.self-check/1"),
        (
            vec![
                "slim",
                "--json",
                multi.to_str().unwrap(),
                "--gpu",
                "8.6;9.0+PTX",
                "-o",
                slim_out.to_str().unwrap(),
            ],
            "cudist.slim/1",
        ),
        (
            vec!["select", "--json", "--host", profile.to_str().unwrap(), w],
            "cudist.select/1",
        ),
    ];
    let version = env!("CARGO_PKG_VERSION");
    let mut docs = Documents::new(work.path());
    for (args, schema) in cases {
        let v = json_of(&args);
        assert_eq!(v["schema"], schema, "{args:?}");
        assert_eq!(v["cudist_version"], version, "{args:?}");
        docs.add(&v);
    }
    // The manifest split writes beside its packages is the same document.
    let written: Value =
        serde_json::from_slice(&std::fs::read(split_out.join("split.json")).unwrap()).unwrap();
    assert_eq!(written["schema"], "cudist.split/1");
    assert_eq!(written["cudist_version"], version);
    docs.add(&written);
    // doctor's --host profile, as --write-host writes it for this machine.
    let host = work.path().join("host.json");
    ok(
        &cudist(&["doctor", "--write-host", host.to_str().unwrap()]),
        "doctor --write-host",
    );
    docs.add_file("host", &host);
    docs.validate();
}

/// JSON documents to validate against docs/schema/, each saved as a file with its schema's name.
struct Documents {
    dir: PathBuf,
    files: Vec<(String, PathBuf)>,
}

impl Documents {
    fn new(work: &Path) -> Self {
        let dir = work.join("documents");
        std::fs::create_dir_all(&dir).unwrap();
        Documents { dir, files: vec![] }
    }

    /// A cudist output; its schema file is named by its `schema` field
    /// (`cudist.toolkit.env/1` → `toolkit.env`).
    fn add(&mut self, v: &Value) {
        let id = v["schema"].as_str().expect("a schema field");
        let name = id
            .strip_prefix("cudist.")
            .and_then(|n| n.split_once('/'))
            .map(|(n, _)| n.to_string())
            .unwrap_or_else(|| panic!("schema {id:?}"));
        let path = self.dir.join(format!("{}.json", self.files.len()));
        std::fs::write(&path, serde_json::to_vec(v).unwrap()).unwrap();
        self.files.push((name, path));
    }

    fn add_file(&mut self, name: &str, path: &Path) {
        self.files.push((name.to_string(), path.to_path_buf()));
    }

    /// Validates every document with Python's jsonschema (skipped outside CI without it).
    fn validate(&self) {
        let Some(python) = tool_from_env("CUDIST_JSONSCHEMA_PYTHON") else {
            return;
        };
        let root = repo_root();
        let mut cmd = Command::new(python);
        cmd.arg(root.join("scripts/validate-json.py"))
            .arg(root.join("docs/schema"));
        for (name, path) in &self.files {
            cmd.arg(format!("{name}={}", path.display()));
        }
        let o = cmd.output().expect("run scripts/validate-json.py");
        assert!(
            o.status.success(),
            "outputs that do not meet docs/schema/:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("{} valid, 0 invalid", self.files.len())),
            "{out}"
        );
    }
}

/// The committed schemas are exactly what the types generate now (`cudist schema --write`).
#[test]
fn committed_schemas_are_what_the_types_generate() {
    let work = tempfile::tempdir().unwrap();
    let fresh = work.path().join("schema");
    ok(
        &cudist(&["schema", "--write", fresh.to_str().unwrap()]),
        "schema --write",
    );
    let committed = repo_root().join("docs/schema");
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let hint = "regenerate them with `cargo run -q -p cudist -- schema --write docs/schema` and \
                describe the change in docs/json-schema.md";
    assert_eq!(names(&fresh), names(&committed), "{hint}");
    for name in names(&fresh) {
        let a = std::fs::read_to_string(fresh.join(&name)).unwrap();
        let b = std::fs::read_to_string(committed.join(&name)).unwrap();
        assert!(a == b, "docs/schema/{name} differs from the types: {hint}");
    }
    // `cudist schema NAME` prints the same document, and the list names them all.
    let listed = stdout(&cudist(&["schema"]));
    for name in names(&fresh) {
        let stem = name.strip_suffix(".json").unwrap();
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(stem)),
            "{stem} not listed: {listed}"
        );
        let printed: Value = serde_json::from_str(&stdout(&cudist(&["schema", stem]))).unwrap();
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(committed.join(&name)).unwrap()).unwrap();
        assert_eq!(printed, file, "{stem}");
    }
    // An unknown name is a usage error.
    assert_eq!(cudist(&["schema", "nonesuch"]).status.code(), Some(2));
}

/// The shape of a schema branch: its JSON type, or that of its `const`/`enum` values, following
/// `$ref`s into `$defs`.
fn shape(branch: &Value, defs: &Value) -> Vec<String> {
    if let Some(r) = branch["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap();
        return shape(&defs[name], defs);
    }
    match &branch["type"] {
        Value::String(t) => return vec![t.clone()],
        Value::Array(ts) => return ts.iter().map(|t| t.as_str().unwrap().to_string()).collect(),
        _ => {}
    }
    let of_value = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    };
    if let Some(c) = branch.get("const") {
        return vec![of_value(c).to_string()];
    }
    if let Some(e) = branch["enum"].as_array() {
        return e.iter().map(|v| of_value(v).to_string()).collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(bs) = branch[key].as_array() {
            return bs.iter().flat_map(|b| shape(b, defs)).collect();
        }
    }
    vec!["any".to_string()]
}

/// Every field has one shape: a sum type is all strings or all objects (with `null` for absent),
/// never a string in one case and an object in another (as `{"other": 16}` beside `"cubin"` was).
#[test]
fn sum_types_have_one_shape() {
    fn walk(v: &Value, defs: &Value, at: &str, bad: &mut Vec<String>) {
        match v {
            Value::Object(obj) => {
                for key in ["oneOf", "anyOf", "type"] {
                    let Some(b) = obj.get(key) else { continue };
                    let mut shapes: Vec<String> = match key {
                        "type" => shape(v, defs),
                        _ => b
                            .as_array()
                            .unwrap()
                            .iter()
                            .flat_map(|b| shape(b, defs))
                            .collect(),
                    };
                    shapes.retain(|s| s != "null");
                    // Integers are numbers.
                    for s in shapes.iter_mut() {
                        if s == "integer" {
                            *s = "number".into();
                        }
                    }
                    shapes.sort();
                    shapes.dedup();
                    if shapes.len() > 1 {
                        bad.push(format!("{at}: {key} {shapes:?}"));
                    }
                }
                for (k, c) in obj {
                    walk(c, defs, &format!("{at}/{k}"), bad);
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate() {
                    walk(c, defs, &format!("{at}[{i}]"), bad);
                }
            }
            _ => {}
        }
    }
    let dir = repo_root().join("docs/schema");
    let mut bad = vec![];
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        walk(&schema, &schema["$defs"], &name, &mut bad);
        seen += 1;
        if name != "host.json" {
            // Every output names its schema (pinned) and the cudist that wrote it.
            let title = schema["title"].as_str().unwrap();
            assert_eq!(schema["properties"]["schema"]["const"], title, "{name}");
            let required = schema["required"].as_array().unwrap();
            for field in ["schema", "cudist_version"] {
                assert!(required.contains(&Value::from(field)), "{name}: {field}");
            }
        }
    }
    assert_eq!(seen, 12, "the schemas under {}", dir.display());
    assert!(
        bad.is_empty(),
        "fields with more than one shape:\n{}",
        bad.join("\n")
    );
}

/// Real outputs meet their schemas: inspect on the nvcc-built fixtures and on every real wheel
/// scripts/test.sh downloads (cupy, faiss, RAPIDS, bitsandbytes, NVIDIA's runtime wheels), repair
/// of bitsandbytes (variants, another vendor's runtimes) and of faiss, doctor on an environment of
/// real CUDA wheels, and toolkit (dry run and env) on it.
#[test]
fn real_outputs_meet_their_schemas() {
    let (Some(wheels), Some(fresh), Some(tk)) = (
        tool_from_env("CUDIST_REAL_WHEELS"),
        tool_from_env("CUDIST_FRESH_FIXTURES"),
        tool_from_env("CUDIST_TK_CU13"),
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut docs = Documents::new(work.path());
    let mut run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = cudist(&args);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stderr(&o)));
        docs.add(&v);
        v
    };
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let mut real: Vec<PathBuf> = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    real.sort();
    assert!(real.len() >= 7, "{real:?}");
    let mut args = vec!["inspect".into(), "--json".into(), s(&fresh)];
    args.extend(real.iter().map(|p| s(p)));
    let report = run(args);
    assert_eq!(
        report["artifacts"].as_array().unwrap().len(),
        real.len() + 1,
        "{}",
        report["errors"]
    );
    let wh = work.path().join("wheelhouse");
    for prefix in ["bitsandbytes-0.50.2", "faiss_gpu_cu12-1.14.1.post1"] {
        let w = find_wheel(&wheels, prefix);
        run(vec![
            "repair".into(),
            "--json".into(),
            "-w".into(),
            s(&wh),
            s(&w),
        ]);
    }
    // slim of the cupy wheel (planned, not written).
    let cupy = find_wheel(&wheels, "cupy_cuda12x-14.2.0");
    let v = run(vec![
        "slim".into(),
        "--json".into(),
        "--dry-run".into(),
        s(&cupy),
        "--gpu".into(),
        "8.6;9.0+PTX".into(),
    ]);
    assert_eq!(
        v["inputs"][0]["files"].as_array().unwrap().len(),
        3,
        "{v:#}"
    );
    let site = site_of(&tk);
    let nvidia = site.join("nvidia");
    run(vec![
        "doctor".into(),
        "--json".into(),
        "--ld-library-path".into(),
        String::new(),
        s(&nvidia),
    ]);
    let root = work.path().join("cuda");
    run(vec![
        "toolkit".into(),
        "--json".into(),
        "--dry-run".into(),
        "--site-packages".into(),
        s(&site),
        "-o".into(),
        s(&root),
    ]);
    run(vec![
        "toolkit".into(),
        "env".into(),
        "--json".into(),
        "--site-packages".into(),
        s(&site),
    ]);
    docs.validate();
}

/// The JSON examples in the docs are outputs as cudist writes them: every ```json block that names
/// a schema (inspect's `multi.so` example, catalog's, toolkit's, split's manifest) meets it, and so
/// does doctor.md's host profile.
#[test]
fn docs_json_examples_meet_their_schemas() {
    let work = tempfile::tempdir().unwrap();
    let mut docs = Documents::new(work.path());
    let root = repo_root();
    let mut named = 0;
    for page in [
        "README.md",
        "docs/json-schema.md",
        "docs/doctor.md",
        "docs/split.md",
        "docs/toolkit.md",
        "docs/repair.md",
        "docs/relink.md",
    ] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        for block in text.split("```json\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let Ok(v) = serde_json::from_str::<Value>(block) else {
                continue;
            };
            if v.get("schema").is_some() {
                docs.add(&v);
                named += 1;
            } else if page == "docs/doctor.md" && v.get("gpus").is_some() {
                let path = work.path().join("doctor-md-host.json");
                std::fs::write(&path, block).unwrap();
                docs.add_file("host", &path);
            }
        }
    }
    assert!(named >= 5, "{named} examples name a schema");
    docs.validate();
}
