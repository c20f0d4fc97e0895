//! Reading a wheel from the front of its members (`artifact::inspect_front`, what `cudist select`
//! does over range requests) against reading it whole (`artifact::inspect_one`): read to the end
//! of each file's loaded bytes, it finds the same device code, entry for entry, and the same
//! NEEDED and SONAME in every shared library; stopped early, what it found is where the whole
//! read starts. On the nvcc fixtures (one wheel holding all of them: LZ4, zstd, uncompressed,
//! several containers, arch-specific and concatenated cubins) and, when the test environment has
//! them, the real cupy wheels.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudist_analysis::artifact::{inspect_front, inspect_one};
use cudist_analysis::model::{Artifact, DeviceEntry};
use cudist_analysis::open::Input;
use cudist_catalog::Catalog;
use cudist_fatbin::SectionKind;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A wheel holding every `.so` fixture under `demo/`.
fn fixture_wheel(dir: &Path) -> PathBuf {
    let path = dir.join("demo-1.0-py3-none-manylinux2014_x86_64.whl");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("tests/fixtures/device")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "so") {
            z.start_file(
                format!("demo/{}", p.file_name().unwrap().to_string_lossy()),
                opts,
            )
            .unwrap();
            z.write_all(&std::fs::read(&p).unwrap()).unwrap();
            n += 1;
        }
    }
    assert!(n >= 5, "the device fixtures are missing");
    // A library as auditwheel leaves it: patchelf gave it a long RPATH, which moves its dynamic
    // strings to a new segment at the end of its loaded bytes, after the dynamic section.
    if let Some(patchelf) = std::env::var_os("CUDIST_PATCHELF") {
        let copy = dir.join("patched.so");
        std::fs::copy(repo().join("tests/fixtures/device/multi.so"), &copy).unwrap();
        let long = format!("$ORIGIN/{}", "x".repeat(300));
        let o = std::process::Command::new(patchelf)
            .args(["--set-rpath", &long])
            .arg(&copy)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        z.start_file("demo/patched.so", opts).unwrap();
        z.write_all(&std::fs::read(&copy).unwrap()).unwrap();
    }
    for (name, text) in [
        (
            "METADATA",
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        ),
        (
            "WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux2014_x86_64\n",
        ),
        ("RECORD", ""),
    ] {
        z.start_file(format!("demo-1.0.dist-info/{name}"), opts)
            .unwrap();
        z.write_all(text.as_bytes()).unwrap();
    }
    z.finish().unwrap();
    path
}

/// Per file: its loaded device code (`.nv_fatbin`), NEEDED and SONAME.
type Reading = Vec<(String, Vec<DeviceEntry>, Vec<String>, Option<String>)>;

fn reading(a: &Artifact) -> Reading {
    let mut out: Reading = a
        .elf_files
        .iter()
        .map(|e| {
            (
                e.path.clone(),
                e.device_code
                    .iter()
                    .filter(|d| d.section == SectionKind::NvFatbin)
                    .cloned()
                    .collect(),
                e.needed.iter().map(|n| n.soname.clone()).collect(),
                e.soname.clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn compare(wheel: &Path, catalog: &Catalog) {
    let name = wheel.file_name().unwrap().to_string_lossy().to_string();
    let whole = reading(&inspect_one(&Input::Wheel(wheel.to_path_buf()), catalog).unwrap());
    let w = cudist_wheel::Wheel::open(wheel).unwrap();
    let (a, read) = inspect_front(&w, &name, &|_| false, catalog).unwrap();
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(read.stopped_early.is_empty());
    // A dynamic section is read from the first 64 MiB kept of a file: only a file whose loaded
    // bytes run past that (cupy-cuda12x's thrust module, 78 MB) goes without.
    for p in &read.dynamic_unread {
        let e = a.elf_files.iter().find(|e| &e.path == p).unwrap();
        assert!(e.size > 64 << 20, "{name}: {p} is {} bytes", e.size);
    }
    let front = reading(&a);
    assert_eq!(front.len(), whole.len(), "{name}");
    let with_code = whole.iter().filter(|f| !f.1.is_empty()).count();
    assert!(with_code > 0, "{name}: no device code to compare");
    for (f, w) in front.iter().zip(&whole) {
        assert_eq!(f.0, w.0);
        assert_eq!(f.1, w.1, "{name}: {}", w.0);
        if !read.dynamic_unread.contains(&f.0) {
            assert_eq!((&f.2, &f.3), (&w.2, &w.3), "{name}: {}", w.0);
        }
    }
    // Stopped at the first sm_90 cubin: what it saw is the start of the whole read.
    let (a, read) = inspect_front(
        &w,
        &name,
        &|d| {
            d.iter()
                .any(|e| e.sm == 90 && e.kind == cudist_fatbin::EntryKind::Cubin)
        },
        catalog,
    )
    .unwrap();
    let stopped = reading(&a);
    for (f, w) in stopped.iter().zip(&whole) {
        assert_eq!(f.1[..], w.1[..f.1.len()], "{name}: {}", w.0);
        if read.stopped_early.contains(&f.0) {
            assert!(f.1.iter().any(|e| e.sm == 90), "{name}: {}", f.0);
        }
    }
}

#[test]
fn front_reads_find_what_whole_reads_find_on_the_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    compare(&fixture_wheel(dir.path()), &Catalog::builtin());
}

#[test]
fn front_reads_find_what_whole_reads_find_in_real_cupy() {
    let Some(dir) = std::env::var_os("CUDIST_REAL_WHEELS").map(PathBuf::from) else {
        return;
    };
    let catalog = Catalog::builtin();
    let mut seen = 0;
    for f in [
        "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
        "cupy_cuda13x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
    ] {
        if dir.join(f).exists() {
            compare(&dir.join(f), &catalog);
            seen += 1;
        }
    }
    assert!(
        seen > 0 || std::env::var_os("CI").is_none(),
        "CI fetches the cupy wheels"
    );
}
