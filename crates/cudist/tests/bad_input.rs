//! Bad input: every case exits 3 with a message naming the file and the problem, never a panic.

mod common;

use std::path::Path;

use common::*;

/// Runs `cudist inspect PATH` (human and JSON) and checks exit code 3 and the message.
fn refused(path: &Path, wants: &[&str]) {
    let p = path.to_str().unwrap();
    let o = cudist(&["inspect", p]);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(3),
        "stdout: {}\nstderr: {err}",
        stdout(&o)
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(p), "message must name the file: {err}");
    assert_eq!(err.matches(p).count(), 1, "the file is named once: {err}");
    for w in wants {
        assert!(err.contains(w), "expected {w:?} in: {err}");
    }
    let v = inspect_json(&[p], 3);
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(v["errors"][0]["path"], p);
}

fn copy_fixture(dir: &Path, name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let data = std::fs::read(fixtures().join(name)).unwrap();
    (dir.join(name), data)
}

/// Offset of the first fatbin container in a file (magic 50 ED 55 BA).
fn container_offset(data: &[u8]) -> usize {
    data.windows(4)
        .position(|w| w == [0x50, 0xED, 0x55, 0xBA])
        .expect("fatbin magic")
}

#[test]
fn not_a_zip_and_not_anything() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("broken-1.0-py3-none-any.whl");
    std::fs::write(&p, b"this is not a zip archive at all").unwrap();
    refused(&p, &["not a readable zip archive"]);
    let p = d.path().join("notes.txt");
    std::fs::write(&p, b"hello").unwrap();
    refused(&p, &["neither a wheel"]);
    refused(&d.path().join("missing.whl"), &["cannot read it"]);
}

#[test]
fn truncated_zip() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("t-1.0-py3-none-any.whl");
    let so = std::fs::read(fixtures().join("multi.so")).unwrap();
    write_wheel(&p, "t", &[], &[("t/multi.so", so)]);
    let data = std::fs::read(&p).unwrap();
    std::fs::write(&p, &data[..data.len() / 2]).unwrap();
    refused(&p, &["zip"]);
}

#[test]
fn truncated_elf() {
    let d = tempfile::tempdir().unwrap();
    let (p, data) = copy_fixture(d.path(), "multi.so");
    std::fs::write(&p, &data[..data.len() * 6 / 10]).unwrap();
    refused(&p, &["cannot read ELF", "hint:"]);
}

#[test]
fn fatbin_whose_sizes_lie() {
    let d = tempfile::tempdir().unwrap();
    let (p, mut data) = copy_fixture(d.path(), "nocompress.so");
    let c = container_offset(&data);
    // The container claims far more bytes than its section holds.
    data[c + 8..c + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&p, &data).unwrap();
    refused(&p, &[".nv_fatbin", "truncated", "device-code container"]);

    // An entry's payload runs past its container.
    let (p, mut data) = copy_fixture(d.path(), "nocompress.so");
    let e = container_offset(&data) + 16;
    data[e + 8..e + 16].copy_from_slice(&(1u64 << 30).to_le_bytes());
    std::fs::write(&p, &data).unwrap();
    refused(&p, &[".nv_fatbin", "entry"]);
}

#[test]
fn unknown_compression_codec() {
    let d = tempfile::tempdir().unwrap();
    let (p, mut data) = copy_fixture(d.path(), "nocompress.so");
    let e = container_offset(&data) + 16;
    let flags = u64::from_le_bytes(data[e + 0x28..e + 0x30].try_into().unwrap()) | 0x1000;
    data[e + 0x28..e + 0x30].copy_from_slice(&flags.to_le_bytes());
    std::fs::write(&p, &data).unwrap();
    refused(&p, &["unknown compression"]);
}

#[test]
fn hostile_zip_members() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("dotdot", "z.writestr('../x', b'x')", "member \"../x\" has a `..` component"),
        ("abs", "z.writestr('/abs/x', b'x')", "member \"/abs/x\" is an absolute path"),
        (
            "link",
            "i = zipfile.ZipInfo('pkg/link'); i.create_system = 3; i.external_attr = (0o120777 << 16); z.writestr(i, 'target')",
            "symbolic link",
        ),
        ("dup", "z.writestr('pkg/a.py', b'1'); z.writestr('pkg/a.py', b'2')", "more than once"),
    ];
    for (name, body, want) in cases {
        let p = d.path().join(format!("{name}-1.0-py3-none-any.whl"));
        python(
            &format!(
                "import sys, zipfile, warnings\nwarnings.simplefilter('ignore')\nz = zipfile.ZipFile(sys.argv[1], 'w')\n{body}\nz.close()"
            ),
            &[p.to_str().unwrap()],
        );
        refused(&p, &[want]);
    }
}

#[test]
fn zip_member_that_inflates_beyond_its_declared_size() {
    // A member whose central directory claims 100 bytes but whose deflate stream yields 1 MiB.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bomb-1.0-py3-none-any.whl");
    python(
        r#"
import sys, zipfile, struct
data = b'\x7fELF' + b'\0' * (1 << 20)
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('pkg/libbomb.so', data)
    for f in ('METADATA', 'WHEEL', 'RECORD'):
        z.writestr('bomb-1.0.dist-info/' + f, b'Name: bomb\n')
raw = bytearray(open(sys.argv[1], 'rb').read())
# Patch the uncompressed size in the local header and the central directory to 10.
for sig, off in ((b'PK\x03\x04', 22), (b'PK\x01\x02', 24)):
    i = raw.find(sig)
    raw[i + off:i + off + 4] = struct.pack('<I', 100)
open(sys.argv[1], 'wb').write(raw)
"#,
        &[p.to_str().unwrap()],
    );
    let o = cudist(&["inspect", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(stderr(&o).contains("pkg/libbomb.so"), "{}", stderr(&o));
}

#[test]
fn batch_goes_on_after_a_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.whl");
    std::fs::write(&bad, b"nope").unwrap();
    let good = fixtures().join("multi.so");
    let v = inspect_json(&[bad.to_str().unwrap(), good.to_str().unwrap()], 3);
    assert_eq!(v["summary"]["artifacts"], 1);
    assert_eq!(v["summary"]["errors"], 1);
}

#[test]
fn closed_stdout_ends_quietly() {
    // `cudist inspect … | head -1`: the reader goes away; cudist must not panic.
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["inspect", "--json"])
        .arg(fixtures())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
}

#[test]
fn one_bad_file_does_not_hide_the_rest_of_a_tree() {
    let d = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixtures().join("multi.so")).unwrap();
    std::fs::write(d.path().join("good.so"), &good).unwrap();
    std::fs::write(d.path().join("cut.so"), &good[..good.len() / 2]).unwrap();
    let v = inspect_json(&[d.path().to_str().unwrap()], 3);
    let a = &v["artifacts"][0];
    assert_eq!(a["elf_files"].as_array().unwrap().len(), 1);
    assert_eq!(a["elf_files"][0]["path"], "good.so");
    assert_eq!(a["problems"][0]["path"], "cut.so");
    assert!(a["problems"][0]["error"]
        .as_str()
        .unwrap()
        .contains("cannot read ELF"));
    assert_eq!(v["summary"]["errors"], 1);
    let o = cudist(&["inspect", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("cut.so: cannot read ELF"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("good.so") || stdout(&o).contains("1 ELF file"),
        "{}",
        stdout(&o)
    );
}

/// One exit-code contract for every command: an input given on the command line that does not exist,
/// or is not what the command reads, exits 3 (not 1, which doctor also uses for "will fail to
/// load"), naming the path.
#[test]
fn every_command_exits_3_for_a_missing_or_wrong_input() {
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("missing");
    let m = missing.to_str().unwrap();
    let bad_profile = work.path().join("host.json");
    std::fs::write(&bad_profile, "{not json").unwrap();
    let b = bad_profile.to_str().unwrap();
    let not_a_root = work.path().join("empty");
    std::fs::create_dir_all(&not_a_root).unwrap();
    let e = not_a_root.to_str().unwrap();
    let out = work.path().join("out");
    let o_ = out.to_str().unwrap();
    // A wheel given to doctor, which judges installed trees.
    let wheel = work.path().join("demo-1.0-py3-none-any.whl");
    write_wheel(&wheel, "demo", &[], &[("demo/__init__.py", Vec::new())]);
    let w = wheel.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["inspect", m],
        vec!["doctor", w],
        vec!["repair", m, "-w", o_],
        vec!["repair", "--build-env", m, "-w", o_, e],
        vec!["doctor", m],
        vec!["doctor", "--host", b, "/bin/sh"],
        vec!["relink", "--check", m],
        vec!["split", m, "-o", o_],
        vec!["toolkit", "env", e],
        vec!["toolkit", "--site-packages", m, "-o", o_],
        vec!["toolkit", "--conda-prefix", m, "-o", o_],
    ];
    for args in cases {
        let o = cudist(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        let named = args
            .iter()
            .skip(1)
            .any(|a| a.starts_with('/') && err.contains(a));
        assert!(named, "{args:?}: the message names the input: {err}");
        assert!(!out.exists(), "{args:?} wrote {o_}");
    }
    let err = stderr(&cudist(&["doctor", w]));
    assert!(
        err.contains("is a package file") && err.contains("cudist doctor --import NAME"),
        "{err}"
    );
}

/// A host profile is an input nobody vetted: an escape sequence in a GPU name or the profile's
/// name never reaches the terminal, a 10 MB name is cut, and a field that must be a version or a
/// machine word is refused (exit 3) when it is not one, named with its control characters
/// escaped.
#[test]
fn host_profiles_are_tamed_and_checked() {
    let work = tempfile::tempdir().unwrap();
    let (_, wheel) = tree_and_wheel(work.path());
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"name": format!("{}\u{1b}[31mRED", "x".repeat(10_000_000)),
            "driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4\u{1b}[2J", "sm": 75}]}),
    );
    let o = cudist(&[
        "select",
        "--host",
        host.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    let out = stdout(&o) + &stderr(&o);
    // Judged (the wheel needs CUDA 13, which driver 535 does not run: "no candidate works", 1).
    assert_eq!(o.status.code(), Some(1), "{}", &out[..out.len().min(2000)]);
    assert!(!out.contains('\u{1b}'), "an escape reached the terminal");
    assert!(out.len() < 10_000, "{} bytes", out.len());
    assert!(out.contains("T4\\u{1b}[2J"), "{out}");
    for (field, value) in [
        ("glibc", "2.35\u{1b}[2J"),
        ("python", "three"),
        ("arch", "x86_64; rm -rf /"),
    ] {
        let mut p = serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]});
        p[field] = serde_json::json!(value);
        let host = write_profile(&work.path().join("bad.json"), &p);
        let o = cudist(&[
            "select",
            "--host",
            host.to_str().unwrap(),
            wheel.to_str().unwrap(),
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{field}: {err}");
        assert!(err.contains(field) && !err.contains('\u{1b}'), "{err}");
    }
}

/// An input whose file name holds a control character is refused, named escaped: printed raw,
/// an ESC sequence would reach the terminal and a newline could forge a report line
/// (`best: evil.whl` under select).
#[test]
fn names_with_control_characters_are_refused_escaped() {
    let d = tempfile::tempdir().unwrap();
    let host = write_profile(
        &d.path().join("host.json"),
        &serde_json::json!({"driver": "580.65.06", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "H100", "sm": 90}]}),
    );
    for name in [
        "demo-1.0-py3-none-any\u{1b}[31m.whl",
        "demo-1.0-py3-none-any.whl\nbest: evil.whl",
    ] {
        let p = d.path().join(name);
        write_wheel(&p, "demo", &[], &[("demo/__init__.py", Vec::new())]);
        for args in [
            vec!["inspect", p.to_str().unwrap()],
            vec!["inspect", d.path().to_str().unwrap()],
            vec![
                "select",
                "--host",
                host.to_str().unwrap(),
                p.to_str().unwrap(),
            ],
        ] {
            let o = cudist(&args);
            let all = stdout(&o) + &stderr(&o);
            assert_eq!(o.status.code(), Some(3), "{args:?}: {all}");
            assert!(!all.contains('\u{1b}') && !all.contains("\nbest:"), "{all}");
            assert!(all.contains("holds a control character"), "{all}");
        }
        std::fs::remove_file(&p).unwrap();
    }
}
