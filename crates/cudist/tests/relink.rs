//! `cudist relink` against glibc: after `--driver-runpath`, `readelf -d` shows the directory and
//! ld.so (`LD_DEBUG=libs`) finds a `libcuda.so.1` placed there; after `--origin`, a moved tree
//! still resolves (`ldd`); `--check` lists references outside the tree.

mod common;
use common::*;

use std::path::Path;
use std::process::Command;

/// An executable built with gcc (link flags as owned strings, as the tests format them).
fn exe(dir: &Path, name: &str, src: &str, args: &[String]) -> std::path::PathBuf {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    gcc(dir, name, src, &args)
}

#[test]
fn driver_runpath_lets_ld_so_find_the_driver() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("out");
    let stubs = work.path().join("stubs");
    let driver = work.path().join("run/opengl-driver/lib");
    std::fs::create_dir_all(&stubs).unwrap();
    std::fs::create_dir_all(&driver).unwrap();
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    // A link-time libcuda, and the "driver's" one that answers 42.
    fake_lib(&stubs, "libcuda.so.1", "libcuda.so.1", "cuInit");
    std::os::unix::fs::symlink("libcuda.so.1", stubs.join("libcuda.so")).unwrap();
    gcc_shared(
        &driver,
        "libcuda.so.1",
        Some("libcuda.so.1"),
        "int cuInit(void *p) { return 42; }\n",
        &[],
    );
    // The runtime dlopens the driver: it gets the path though nothing in it NEEDs libcuda.
    fake_lib(
        &tree.join("lib"),
        "libcudart.so.12",
        "libcudart.so.12",
        "cudaMalloc",
    );
    fake_lib(&tree.join("lib"), "libother.so.1", "libother.so.1", "other");
    let app = exe(
        &tree.join("bin"),
        "app",
        "int cuInit(void *); int main(void) { return cuInit(0) == 42 ? 0 : 1; }\n",
        &[
            format!("-L{}", stubs.display()),
            "-Wl,--no-as-needed".into(),
            "-lcuda".into(),
            "-Wl,--disable-new-dtags".into(),
            "-Wl,-rpath,$ORIGIN/../lib".into(),
        ],
    );
    // Before: ld.so cannot find libcuda.so.1.
    let o = Command::new(&app)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let before_other = std::fs::read(tree.join("lib/libother.so.1")).unwrap();

    let d = driver.to_str().unwrap();
    let o = cudist(&[
        "relink",
        tree.to_str().unwrap(),
        "--driver-runpath",
        d,
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 of 3 ELF files would change"),
        "{}",
        stdout(&o)
    );
    assert!(!readelf_d(&app).contains(d), "--dry-run wrote");

    let o = cudist(&[
        "relink",
        tree.to_str().unwrap(),
        "--driver-runpath",
        d,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["changed"].as_array().unwrap().len(), 2);
    // The executable keeps its DT_RPATH (inheritance unchanged) with the driver appended; the
    // runtime library, which had no search path, gets DT_RUNPATH.
    let app_d = readelf_d(&app);
    assert!(
        app_d.contains(&format!(
            "(RPATH)              Library rpath: [$ORIGIN/../lib:{d}]"
        )),
        "{app_d}"
    );
    let rt_d = readelf_d(&tree.join("lib/libcudart.so.12"));
    assert!(
        rt_d.contains(&format!("(RUNPATH)            Library runpath: [{d}]")),
        "{rt_d}"
    );
    assert_eq!(
        std::fs::read(tree.join("lib/libother.so.1")).unwrap(),
        before_other
    );
    // ld.so now finds the driver there, and the program runs against it.
    let o = Command::new(&app)
        .env_remove("LD_LIBRARY_PATH")
        .env("LD_DEBUG", "libs")
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{trace}");
    assert!(
        trace.contains(&format!("trying file={d}/libcuda.so.1")),
        "{trace}"
    );
    // Executable permissions survive.
    use std::os::unix::fs::PermissionsExt;
    assert!(std::fs::metadata(&app).unwrap().permissions().mode() & 0o111 != 0);
    // --check flags the driver directory unless it is allowed.
    let o = cudist(&["relink", tree.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let o = cudist(&["relink", tree.to_str().unwrap(), "--check", "--allow", d]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // A second run changes nothing.
    let o = cudist(&["relink", tree.to_str().unwrap(), "--driver-runpath", d]);
    assert!(
        stdout(&o).contains("0 of 3 ELF files changed"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn origin_makes_the_tree_relocatable_and_check_lists_outside_references() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("prefix");
    fake_lib(
        &{
            std::fs::create_dir_all(tree.join("lib")).unwrap();
            tree.join("lib")
        },
        "libdep.so.1",
        "libdep.so.1",
        "dep",
    );
    std::os::unix::fs::symlink("libdep.so.1", tree.join("lib/libdep.so")).unwrap();
    let app = exe(
        &tree.join("bin"),
        "app",
        "int dep(void *); int main(void) { return dep(0); }\n",
        &[
            format!("-L{}", tree.join("lib").display()),
            "-ldep".into(),
            format!(
                "-Wl,-rpath,{}:/build/sandbox/lib:/usr/local/cuda/lib64",
                tree.join("lib").display()
            ),
        ],
    );
    // --check: the two outside paths, exit 1, nothing written.
    let before = std::fs::read(&app).unwrap();
    let o = cudist(&["relink", tree.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.contains("/build/sandbox/lib") && text.contains("/usr/local/cuda/lib64"),
        "{text}"
    );
    assert!(
        !text.contains(&format!("runpath {}", tree.join("lib").display())),
        "{text}"
    );
    assert_eq!(std::fs::read(&app).unwrap(), before);

    let o = cudist(&["relink", tree.to_str().unwrap(), "--origin"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        readelf_d(&app).contains("Library runpath: [$ORIGIN/../lib]"),
        "{}",
        readelf_d(&app)
    );
    let o = cudist(&["relink", tree.to_str().unwrap(), "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Moved elsewhere, the program still finds its library (glibc's ldd).
    let moved = work.path().join("elsewhere");
    std::fs::rename(&tree, &moved).unwrap();
    let o = Command::new("ldd")
        .arg(moved.join("bin/app"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&o.stdout);
    let want = format!(
        "libdep.so.1 => {}",
        moved.join("bin/../lib/libdep.so.1").display()
    );
    assert!(ldd.contains(&want), "{ldd}");
}

#[test]
fn bad_input_is_refused() {
    let o = cudist(&["relink", "/nonexistent/tree", "--check"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("/nonexistent/tree"), "{}", stderr(&o));
    let work = tempfile::tempdir().unwrap();
    let o = cudist(&["relink", work.path().to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("nothing to do"), "{}", stderr(&o));
}

/// `--check` judges `$ORIGIN`-relative entries where the loader would expand them: one that
/// climbs out of the tree (`$ORIGIN/../../nvidia/cu13/lib` from `lib/`) is listed with the
/// directory it leads to, one that stays inside is not; `--allow` takes either spelling.
#[test]
fn check_follows_origin_relative_entries_out_of_the_tree() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    gcc_shared(
        &tree.join("lib"),
        "libx.so",
        Some("libx.so"),
        "int f(void) { return 1; }\n",
        &["-Wl,-rpath,$ORIGIN/../../nvidia/cu13/lib:$ORIGIN/../lib:${ORIGIN}"],
    );
    let t = tree.to_str().unwrap();
    let o = cudist(&["relink", "--check", t]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let leads = work.path().join("nvidia/cu13/lib");
    assert!(
        out.contains(&format!(
            "$ORIGIN/../../nvidia/cu13/lib ({})",
            leads.display()
        )),
        "{out}"
    );
    assert!(!out.contains("$ORIGIN/../lib"), "{out}");
    for allow in ["$ORIGIN/../../nvidia/cu13/lib", leads.to_str().unwrap()] {
        let o = cudist(&["relink", "--check", t, "--allow", allow]);
        assert_eq!(o.status.code(), Some(0), "{allow}: {}", stdout(&o));
    }
}
