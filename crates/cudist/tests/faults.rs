//! Exit code 4: a fault of the machine or the network is never blamed on the input (issue 35).
//! Each fault is made for real: a full device (`/dev/full`, and a tmpfs of a few pages), a
//! read-only file system (a tmpfs remounted read-only, in a mount namespace of the test's own),
//! a refused connection and a server that never answers. The message says which fault it was.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;

/// Asserts exit code 4 and a message naming the fault, and nothing half-written in `out`.
fn assert_machine_fault(o: &Output, says: &str, out: Option<&Path>) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains(says), "{err}");
    assert!(err.contains("not of the input"), "{err}");
    if let Some(out) = out {
        let left: Vec<_> = std::fs::read_dir(out)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// `--json` to a full device: the report cannot be written, and the disk is to blame (4), not
/// the wheel (3) nor cudist (1).
#[test]
fn a_report_written_to_a_full_device_is_the_machines_fault() {
    let work = tempfile::tempdir().unwrap();
    let (_, wheel) = tree_and_wheel(work.path());
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["inspect", "--json"])
        .arg(&wheel)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_machine_fault(&o, "No space left on device", None);
}

/// Whether this machine lets the test make a mount namespace of its own (`unshare -rm`: root, or
/// unprivileged user namespaces).
fn can_mount() -> bool {
    Command::new("unshare")
        .args(["-rm", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs cudist with `args` in a mount namespace where `dir` is a fresh tmpfs of `size` bytes,
/// remounted read-only when `read_only`.
fn cudist_on_tmpfs(dir: &Path, size: &str, read_only: bool, args: &[&str]) -> Output {
    let script = format!(
        "mount -t tmpfs -o size={size} tmpfs \"$1\" && {} shift && exec \"$@\"",
        if read_only {
            "mount -o remount,ro \"$1\" &&"
        } else {
            ""
        }
    );
    Command::new("unshare")
        .args(["-rm", "sh", "-c", &script, "sh"])
        .arg(dir)
        .arg(env!("CARGO_BIN_EXE_cudist"))
        .args(args)
        .output()
        .unwrap()
}

/// repair into a directory on a disk that fills up, and on a read-only file system: exit 4, the
/// fault named, no temporary left (the directory is empty after the run, seen from inside the
/// namespace by the next command).
#[test]
fn a_full_or_read_only_output_directory_is_the_machines_fault() {
    if !can_mount() {
        skip("this machine does not let the test make a mount namespace (unshare -rm fails), so it cannot make a full or read-only file system");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // A wheel larger than the one page the full file system has: its extension and 64 KiB that
    // do not compress.
    let wheel = work.path().join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    let ext = ext_needing(work.path(), "ext", "libcudart.so.13", "cudaMalloc");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    write_wheel(
        &wheel,
        "demo",
        &[],
        &[("demo/ext.so", ext), ("demo/data.bin", noise)],
    );
    let out = work.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let wheel = wheel.to_str().unwrap();
    let out_s = out.to_str().unwrap();
    // One page: the repaired wheel does not fit.
    let full = cudist_on_tmpfs(&out, "4k", false, &["repair", wheel, "-w", out_s]);
    assert_machine_fault(&full, "No space left on device", None);
    assert!(
        stderr(&full).contains("the disk is full"),
        "{}",
        stderr(&full)
    );
    let ro = cudist_on_tmpfs(&out, "1m", true, &["repair", wheel, "-w", out_s]);
    assert_machine_fault(&ro, "Read-only file system", None);
    // The same on schema files, written by another writer.
    let full = cudist_on_tmpfs(&out, "4k", false, &["schema", "--write", out_s]);
    assert_machine_fault(&full, "No space left on device", None);
    // Outside the namespace the directory was never written.
    assert_machine_fault(&full, "No space left on device", Some(&out));
}

/// An index nobody listens at (a port just closed): the network's fault, named with the URL.
#[test]
fn a_refused_connection_is_the_networks_fault() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let work = tempfile::tempdir().unwrap();
    let host = write_profile(
        &work.path().join("host.json"),
        &serde_json::json!({"driver": "535.183.01", "glibc": "2.35", "python": "3.11",
            "gpus": [{"name": "T4", "sm": 75}]}),
    );
    let url = format!("http://127.0.0.1:{port}/simple");
    let o = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(["select", "--host"])
        .arg(&host)
        .args(["--index", &url, "--package", "demo", "--cache-dir"])
        .arg(work.path().join("cache"))
        .output()
        .unwrap();
    assert_machine_fault(&o, &url, None);
    assert!(
        stderr(&o).contains("fault of the network"),
        "{}",
        stderr(&o)
    );
}

/// A file truncated by another process while cudist reads it through a mapping: the next page
/// read raises SIGBUS, which cudist reports (exit 4, a message naming what happened) instead of
/// dying of the signal. The file: a small library whose `.nv_fatbin` header is made to cover 4 GiB
/// of zeros (a sparse extension of the file), which the fatbin walk reads for seconds.
#[test]
fn a_file_truncated_while_mapped_is_reported_not_a_crash() {
    let work = tempfile::tempdir().unwrap();
    let lib = fake_lib(work.path(), "libbig.so", "libbig.so", "f");
    let header = work.path().join("empty.bin");
    // An empty container: magic, version 1, header size 16, no entries.
    let mut c = 0xBA55_ED50u32.to_le_bytes().to_vec();
    c.extend_from_slice(&[1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    std::fs::write(&header, c).unwrap();
    let big = work.path().join("libbig-fat.so");
    with_fatbin_section(&lib, &header, &big);
    python(
        "import struct, sys\n\
         p = sys.argv[1]\n\
         b = bytearray(open(p, 'rb').read())\n\
         shoff, = struct.unpack_from('<Q', b, 0x28)\n\
         size, num, strndx = struct.unpack_from('<HHH', b, 0x3A)\n\
         strtab, = struct.unpack_from('<Q', b, shoff + strndx * size + 0x18)\n\
         for i in range(num):\n\
         \x20   o = shoff + i * size\n\
         \x20   name, = struct.unpack_from('<I', b, o)\n\
         \x20   if b[strtab + name:].startswith(b'.nv_fatbin\\0'):\n\
         \x20       start = (len(b) + 4095) // 4096 * 4096\n\
         \x20       struct.pack_into('<QQ', b, o + 0x18, start, 4 << 30)\n\
         \x20       open(p, 'wb').write(b)\n\
         \x20       open(p, 'r+b').truncate(start + (4 << 30))\n",
        &[big.to_str().unwrap()],
    );
    let child = Command::new(env!("CARGO_BIN_EXE_cudist"))
        .arg("inspect")
        .arg(&big)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(100_000)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("became shorter than its mapping"), "{err}");
}
