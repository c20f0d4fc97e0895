//! The load simulation against glibc itself: for every fixture, each library cudist resolves must
//! be the file `ldd` (glibc's loader in trace mode) reports, and "not found" exactly where ld.so
//! says so. The fixtures cover RPATH vs RUNPATH vs LD_LIBRARY_PATH precedence, RPATH inheritance
//! through an intermediate library, RUNPATH's non-inheritance, `$ORIGIN` at several depths, a
//! missing library, and two libraries with the same SONAME in different directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cudist_elf::loader::{simulate, LoadEnv, Rule};

mod common;
use common::cc;

fn shared(dir: &Path, file: &str, soname: &str, body: &str, args: &[&str]) -> PathBuf {
    let mut all = vec!["-shared", "-fPIC"];
    let so = format!("-Wl,-soname,{soname}");
    all.push(&so);
    all.extend_from_slice(args);
    let p = cc(dir, file, body, &all);
    // The linker name, for -l.
    if let Some(i) = file.find(".so.") {
        let _ = std::os::unix::fs::symlink(file, dir.join(&file[..i + 3]));
    }
    p
}

/// name → path (canonical) or None, from `ldd`.
fn ldd(exe: &Path, ld_library_path: Option<&str>) -> BTreeMap<String, Option<PathBuf>> {
    let mut cmd = Command::new("ldd");
    cmd.arg(exe).env_remove("LD_LIBRARY_PATH");
    if let Some(l) = ld_library_path {
        cmd.env("LD_LIBRARY_PATH", l);
    }
    let o = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.trim().split_once(" => ") else {
            continue;
        };
        let path = if rest.starts_with("not found") {
            None
        } else {
            let p = rest.rsplit_once(" (").map(|(p, _)| p).unwrap_or(rest);
            Some(std::fs::canonicalize(p).unwrap())
        };
        out.insert(name.to_string(), path);
    }
    out
}

/// name → path (canonical) or None, from the simulation (first resolution of each name).
fn simulated(exe: &Path, ld_library_path: Option<&str>) -> BTreeMap<String, Option<PathBuf>> {
    let mut env = LoadEnv::this_machine();
    env.ld_library_path = ld_library_path
        .map(cudist_elf::loader::split_path_list)
        .unwrap_or_default();
    let sim = simulate(exe, &env).unwrap();
    let mut out = BTreeMap::new();
    for r in &sim.resolutions {
        out.entry(r.name.clone())
            .or_insert_with(|| r.path.as_ref().map(|p| std::fs::canonicalize(p).unwrap()));
    }
    out
}

fn agree(exe: &Path, ld_library_path: Option<&str>) -> BTreeMap<String, Option<PathBuf>> {
    let want = ldd(exe, ld_library_path);
    let got = simulated(exe, ld_library_path);
    assert!(!want.is_empty(), "ldd listed nothing for {}", exe.display());
    for (name, path) in &want {
        assert_eq!(
            got.get(name),
            Some(path),
            "{}: {name} (LD_LIBRARY_PATH={ld_library_path:?}): ldd says {path:?}, cudist says {:?}",
            exe.display(),
            got.get(name)
        );
    }
    want
}

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// a/libdep.so.1 and b/libdep.so.1 (one SONAME, two directories), lib/libmid.so.1 needing
    /// libdep.so.1 with no search path of its own.
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        shared(
            &d.join("a"),
            "libdep.so.1",
            "libdep.so.1",
            "int dep(void) { return 1; }\n",
            &[],
        );
        shared(
            &d.join("b"),
            "libdep.so.1",
            "libdep.so.1",
            "int dep(void) { return 2; }\n",
            &[],
        );
        let a = format!("-L{}", d.join("a").display());
        shared(
            &d.join("lib"),
            "libmid.so.1",
            "libmid.so.1",
            "int dep(void); int mid(void) { return dep(); }\n",
            &[&a, "-ldep"],
        );
        Tree { dir }
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// An executable at `rel` needing libmid (and through it libdep) with the given link flags.
    fn main(&self, rel: &str, flags: &[&str]) -> PathBuf {
        let path = self.p(rel);
        let (dir, file) = (
            path.parent().unwrap().to_path_buf(),
            path.file_name().unwrap().to_str().unwrap().to_string(),
        );
        let l = format!("-L{}", self.p("lib").display());
        let la = format!("-Wl,-rpath-link,{}", self.p("a").display());
        let mut args = vec![l.as_str(), la.as_str(), "-lmid"];
        args.extend_from_slice(flags);
        cc(
            &dir,
            &file,
            "int mid(void); int main(void) { return mid(); }\n",
            &args,
        )
    }
}

#[test]
fn rpath_is_inherited_through_an_intermediate_library() {
    let t = Tree::new();
    let exe = t.main(
        "main",
        &[
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/lib:$ORIGIN/a",
        ],
    );
    let r = agree(&exe, None);
    assert_eq!(
        r["libdep.so.1"],
        Some(std::fs::canonicalize(t.p("a/libdep.so.1")).unwrap())
    );
    // And the simulation says why: the main object's RPATH, though libmid needed it.
    let mut env = LoadEnv::this_machine();
    env.ld_library_path.clear();
    let sim = simulate(&exe, &env).unwrap();
    let dep = sim
        .resolutions
        .iter()
        .find(|r| r.name == "libdep.so.1")
        .unwrap();
    assert!(dep.needed_by.ends_with("lib/libmid.so.1"));
    assert_eq!(
        dep.rule,
        Some(Rule::Rpath {
            owner: std::path::absolute(&exe).unwrap()
        })
    );
    // RPATH comes before LD_LIBRARY_PATH.
    let r = agree(&exe, Some(t.p("b").to_str().unwrap()));
    assert_eq!(
        r["libdep.so.1"],
        Some(std::fs::canonicalize(t.p("a/libdep.so.1")).unwrap())
    );
}

#[test]
fn runpath_is_not_inherited_and_comes_after_ld_library_path() {
    let t = Tree::new();
    let exe = t.main(
        "main",
        &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib:$ORIGIN/a"],
    );
    // libmid is found through main's RUNPATH; libdep, needed by libmid, is not.
    let r = agree(&exe, None);
    assert!(r["libmid.so.1"].is_some());
    assert_eq!(r["libdep.so.1"], None);
    // LD_LIBRARY_PATH reaches it.
    let r = agree(&exe, Some(t.p("b").to_str().unwrap()));
    assert_eq!(
        r["libdep.so.1"],
        Some(std::fs::canonicalize(t.p("b/libdep.so.1")).unwrap())
    );
    // For the object's own needs, LD_LIBRARY_PATH comes before RUNPATH: a second libmid there wins.
    let other = shared(
        &t.p("c"),
        "libmid.so.1",
        "libmid.so.1",
        "int mid(void) { return 7; }\n",
        &[],
    );
    let r = agree(&exe, Some(t.p("c").to_str().unwrap()));
    assert_eq!(
        r["libmid.so.1"],
        Some(std::fs::canonicalize(other).unwrap())
    );
}

#[test]
fn origin_at_several_depths_and_a_missing_library() {
    let t = Tree::new();
    let exe = t.main(
        "x/y/z/main",
        &[
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../../../lib:${ORIGIN}/../../../b",
        ],
    );
    let r = agree(&exe, None);
    assert_eq!(
        r["libdep.so.1"],
        Some(std::fs::canonicalize(t.p("b/libdep.so.1")).unwrap())
    );
    // A library nobody provides.
    let gone = shared(
        &t.p("tmp"),
        "libgone.so.3",
        "libgone.so.3",
        "int gone(void) { return 0; }\n",
        &[],
    );
    let lg = format!("-L{}", t.p("tmp").display());
    let exe = t.main(
        "m2/main",
        &[
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/../lib:$ORIGIN/../a",
            "-Wl,--no-as-needed",
            &lg,
            "-lgone",
        ],
    );
    std::fs::remove_file(gone).unwrap();
    let r = agree(&exe, None);
    assert_eq!(r["libgone.so.3"], None);
    let mut env = LoadEnv::this_machine();
    env.ld_library_path.clear();
    let sim = simulate(&exe, &env).unwrap();
    let miss: Vec<&str> = sim.missing().map(|m| m.name.as_str()).collect();
    assert_eq!(miss, vec!["libgone.so.3"]);
    // The directories tried are listed, RPATH entries first.
    let m = sim.missing().next().unwrap();
    assert!(
        m.tried[0].ends_with("m2/../lib/libgone.so.3"),
        "{:?}",
        m.tried
    );
}

#[test]
fn an_intermediate_library_with_its_own_runpath() {
    let t = Tree::new();
    // libmid2 has RUNPATH to b: its RPATH chain is not consulted, its RUNPATH is.
    let b = format!("-L{}", t.p("b").display());
    let rp = format!("-Wl,-rpath,{}", t.p("b").display());
    shared(
        &t.p("lib2"),
        "libmid.so.1",
        "libmid.so.1",
        "int dep(void); int mid(void) { return dep(); }\n",
        &[&b, "-ldep", "-Wl,--enable-new-dtags", &rp],
    );
    let exe = t.main(
        "main",
        &[
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,$ORIGIN/lib2:$ORIGIN/a",
        ],
    );
    let r = agree(&exe, None);
    assert_eq!(
        r["libdep.so.1"],
        Some(std::fs::canonicalize(t.p("b/libdep.so.1")).unwrap())
    );
}
