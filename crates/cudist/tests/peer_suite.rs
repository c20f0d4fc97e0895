//! Platform tags against auditwheel, on auditwheel's own test wheels.
//!
//! `shared/peer-suites/auditwheel-bundled-wheels/` (the project's shared facts, `../shared` beside
//! the checkout, or `CUDIST_SHARED`) holds the wheels auditwheel keeps for its
//! tests: one tiny extension built for glibc on nine architectures (two of which no policy
//! covers), for musl on eight, an Android wheel, a pure wheel, and older real wheels (fpectl,
//! UCS2, zlib internals, an aarch64 wheel needing newer glibc). Each test runs `auditwheel`
//! 6.8.2 live (pip-installed by scripts/test.sh) and requires cudist's answer to be the same:
//! the same tag, or both refusing. gcc-built fixtures add what the suite lacks: weak and strong
//! references to a blacklisted symbol, and an x86-64-v3 ISA note.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The suite, in the project's shared facts: `CUDIST_SHARED` (scripts/test.sh sets it; in CI it
/// is always found), else `../shared` beside the repository.
fn suite() -> Option<PathBuf> {
    let shared = std::env::var_os("CUDIST_SHARED")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"));
    let p = shared.join("peer-suites/auditwheel-bundled-wheels");
    if p.is_dir() {
        return Some(p);
    }
    skip(&format!(
        "{} is not here (set CUDIST_SHARED to the project's shared facts)",
        p.display()
    ));
    None
}

fn wheels(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "whl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `auditwheel show --json`: the tag it finds the wheel consistent with, or why it refuses.
fn auditwheel_show(aw: &Path, wheel: &Path) -> Result<String, String> {
    let o = Command::new(aw)
        .args(["show", "--json"])
        .arg(wheel)
        .output()
        .unwrap();
    if let Ok(v) = serde_json::from_slice::<Value>(&o.stdout) {
        if let Some(t) = v["overall_tag"].as_str() {
            return Ok(t.to_string());
        }
        if let Some(e) = v["error"].as_str() {
            return Err(e.to_string());
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    Err(err.lines().last().unwrap_or("").to_string())
}

/// cudist's answer: `POLICY_ARCH`, or why there is none.
fn cudist_tag(wheel: &Path) -> Result<String, String> {
    let v = inspect_json(&[wheel.to_str().unwrap()], 0);
    let p = &v["artifacts"][0]["platform"];
    if let Some(e) = p["error"].as_str() {
        return Err(e.to_string());
    }
    match (p["policy"].as_str(), p["arch"].as_str()) {
        (Some(pol), Some(arch)) => Ok(format!("{pol}_{arch}")),
        _ => Err("no ELF file".into()),
    }
}

#[test]
fn every_wheel_of_auditwheels_suite_gets_the_tag_auditwheel_gives() {
    let Some(dir) = suite() else { return };
    let Some(aw) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let all = wheels(&dir);
    assert!(all.len() >= 25, "{} wheels", all.len());
    let mut table = String::new();
    let mut disagree = Vec::new();
    for w in &all {
        let a = auditwheel_show(&aw, w);
        let c = cudist_tag(w);
        let same = match (&a, &c) {
            (Ok(x), Ok(y)) => x == y,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        let name = w.strip_prefix(&dir).unwrap().display().to_string();
        table.push_str(&format!("{name}\t{a:?}\t{c:?}\n"));
        if !same {
            disagree.push(name);
        }
    }
    eprintln!("{table}");
    assert!(
        disagree.is_empty(),
        "cudist and auditwheel disagree on {} of {}: {disagree:?}\n{table}",
        disagree.len(),
        all.len()
    );
    // The recorded answers (expected-auditwheel-show.tsv) agree with the live ones too.
    let tsv = std::fs::read_to_string(dir.join("expected-auditwheel-show.tsv")).unwrap();
    for line in tsv.lines().skip(1) {
        let (name, want) = line.split_once('\t').unwrap();
        let got = cudist_tag(&dir.join(name));
        let tag_like = want.starts_with("manylinux")
            || want.starts_with("musllinux")
            || want.starts_with("linux");
        if tag_like {
            assert_eq!(got.as_deref(), Ok(want), "{name}");
        } else {
            assert!(
                got.is_err(),
                "{name}: auditwheel refuses ({want}), cudist says {got:?}"
            );
        }
    }
}

/// The manylinux/musllinux tags of a wheel's file name.
fn policy_tags(file: &Path) -> Vec<String> {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let platform = name
        .trim_end_matches(".whl")
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    let mut tags: Vec<String> = platform
        .split('.')
        .filter(|t| !t.starts_with("linux_"))
        .map(str::to_string)
        .collect();
    tags.sort();
    tags
}

#[test]
fn repair_tags_what_auditwheel_repair_tags_or_refuses_with_it() {
    let Some(dir) = suite() else { return };
    let Some(aw) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let Some(patchelf) = tool_from_env("CUDIST_PATCHELF") else {
        return;
    };
    let path = format!(
        "{}:{}",
        patchelf.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for w in wheels(&dir.join("glibc"))
        .into_iter()
        .chain(wheels(&dir.join("musllinux_1_2")))
    {
        let name = w.file_name().unwrap().to_string_lossy().into_owned();
        let a_out = work.path().join(format!("aw-{name}"));
        let c_out = work.path().join(format!("cd-{name}"));
        let o = Command::new(&aw)
            .args(["repair", "-w"])
            .arg(&a_out)
            .arg(&w)
            .env("PATH", &path)
            .output()
            .unwrap();
        let a_wheel = std::fs::read_dir(&a_out)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path());
        let c = cudist(&[
            "repair",
            "-q",
            "-w",
            c_out.to_str().unwrap(),
            w.to_str().unwrap(),
        ]);
        let c_wheel = std::fs::read_dir(&c_out)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path());
        match (a_wheel, c_wheel) {
            (Some(a), Some(c)) => {
                // auditwheel keeps a linux_ tag whose architecture differs from the one it tags
                // (linux_armv6l.musllinux_1_2_armv7l); cudist replaces the platform. The
                // manylinux/musllinux tags must be the same.
                assert_eq!(policy_tags(&c), policy_tags(&a), "{name}");
                assert!(!policy_tags(&c).is_empty(), "{name}");
            }
            (None, None) => {
                // Both refuse; cudist says why, naming the wheel.
                assert_eq!(c.status.code(), Some(3), "{name}: {}", stderr(&c));
                let err = stderr(&c);
                assert!(
                    err.contains(&name) && err.contains("cannot be tagged"),
                    "{err}"
                );
                assert!(!o.status.success(), "{name}");
            }
            (a_wrote, c_wrote) => panic!(
                "{name}: auditwheel wrote {a_wrote:?}, cudist {c_wrote:?}\nauditwheel: {}\ncudist: {}",
                String::from_utf8_lossy(&o.stderr),
                stderr(&c)
            ),
        }
        checked += 1;
    }
    assert!(checked >= 18, "{checked}");
}

/// Packs one shared library as a wheel's extension module.
fn wheel_with(dir: &Path, dist: &str, so: &Path) -> PathBuf {
    let w = dir.join(format!("{dist}-1.0-cp311-cp311-linux_x86_64.whl"));
    write_wheel(
        &w,
        dist,
        &[],
        &[(
            &format!("{dist}/_ext.cpython-311-x86_64-linux-gnu.so"),
            std::fs::read(so).unwrap(),
        )],
    );
    w
}

#[test]
fn weak_references_and_isa_notes_are_judged_as_auditwheel_judges_them() {
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    let Some(aw) = tool_from_env("CUDIST_AUDITWHEEL") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    // __cxa_thread_atexit_impl is on every manylinux policy's blacklist for libc.so.6. Rust's std
    // and much C++ reference it weakly (they look for it at run time): auditwheel checks only
    // strong imports.
    let src = |weak: bool| {
        format!(
            "{}int __cxa_thread_atexit_impl(void (*)(void *), void *, void *);\n\
             int f(void) {{ return __cxa_thread_atexit_impl ? __cxa_thread_atexit_impl(0, 0, 0) : 1; }}\n",
            if weak { "#pragma weak __cxa_thread_atexit_impl\n" } else { "" }
        )
    };
    let weak = gcc_shared(d, "weak.so", None, &src(true), &[]);
    let strong = gcc_shared(d, "strong.so", None, &src(false), &[]);
    // An x86-64-v3 ISA note (`ld -z x86-64-v3`).
    let v3 = gcc_shared(
        d,
        "v3.so",
        None,
        "int g(void) { return 3; }\n",
        &["-Wl,-z,x86-64-v3"],
    );
    let mut rows = Vec::new();
    for (dist, so) in [("weakref", &weak), ("strongref", &strong), ("isav3", &v3)] {
        let w = wheel_with(d, dist, so);
        let a = auditwheel_show(&aw, &w);
        let c = cudist_tag(&w);
        assert_eq!(c, a, "{dist}");
        rows.push((dist, c.unwrap()));
    }
    // The weak reference does not block the policies the strong one does.
    let rank = |t: &str| {
        cudist_catalog::manylinux::policy(t.trim_end_matches("_x86_64")).map_or(0, |p| p.priority)
    };
    assert!(rank(&rows[0].1) > rank(&rows[1].1), "{rows:?}");
    assert_eq!(rows[2].1, "linux_x86_64", "{rows:?}");
    let v = inspect_json(&[wheel_with(d, "isav3b", &v3).to_str().unwrap()], 0);
    let e = &v["artifacts"][0]["elf_files"][0]["abi"];
    assert_eq!(e["isa_level"], "x86_64_v3", "{e}");
    assert_eq!(e["libc"], "glibc");
    assert_eq!(e["python_extension"], Value::Null);
}

#[test]
fn plat_takes_musllinux_and_says_why_a_policy_cannot_be_had() {
    let Some(dir) = suite() else { return };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let musl = dir.join("musllinux_1_2/testsimple-0.0.1-cp312-cp312-linux_x86_64.whl");
    let aarch64 = dir.join("glibc/testsimple-0.0.1-cp313-cp313-linux_aarch64.whl");
    let run = |w: &Path, plat: &str| {
        cudist(&[
            "repair",
            "-q",
            "--plat",
            plat,
            "-w",
            out.to_str().unwrap(),
            w.to_str().unwrap(),
        ])
    };
    // musl has no symbol versions: --plat names an older musllinux policy the wheel then claims.
    let o = run(&musl, "musllinux_1_1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out
        .join("testsimple-0.0.1-cp312-cp312-musllinux_1_1_x86_64.whl")
        .is_file());
    for (w, plat, says) in [
        (
            &musl,
            "manylinux2014",
            "a glibc policy, but the wheel is built for musl",
        ),
        (
            &aarch64,
            "manylinux_2_5",
            "manylinux_2_5 has no aarch64 policy (aarch64 starts at manylinux_2_17)",
        ),
        (
            &aarch64,
            "musllinux_1_2",
            "a musl policy, but the wheel is built for glibc",
        ),
        (&aarch64, "manylinux_9_99", "not a known platform policy"),
    ] {
        let o = run(w, plat);
        assert_ne!(o.status.code(), Some(0), "{plat}");
        assert!(stderr(&o).contains(says), "{plat}: {}", stderr(&o));
    }
    // inspect names the C library.
    let o = cudist(&["inspect", musl.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("Platform: musllinux_1_2_x86_64 (musllinux_1_2, musl)"),
        "{}",
        stdout(&o)
    );
}
