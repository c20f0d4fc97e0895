//! Hostile inputs (issue 18): a corpus the tests build — no binary blobs — of wheels, conda
//! packages, tar archives, ELF files, trees and command-line values that try to write outside the
//! output, read host files into it, exhaust memory or disk, hang the process, or be seen one way
//! by cudist and another by pip.
//!
//! Every case runs the real binary in a sandbox (`in/` the inputs, `around/` files that must not
//! change, `tmp/` as `TMPDIR`) and checks:
//! - the exit code, and the message (naming the file and the problem);
//! - nothing created or changed outside the declared output (a snapshot of the whole sandbox,
//!   before and after), the input unchanged, and no output at all when the command fails;
//! - no temporary left anywhere (`TMPDIR` empty, no `.cudist-` names);
//! - peak memory (the child's `ru_maxrss`) under 512 MiB, and no hang (60 s).

mod common;
use common::*;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Peak memory a hostile case may reach.
const MAX_RSS_KIB: i64 = 512 * 1024;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for d in ["in", "around", "tmp"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("around/victim.txt"), "precious\n").unwrap();
        std::fs::write(dir.path().join("around/secret.so"), "host secret\n").unwrap();
        Sandbox { dir }
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn s(&self, rel: &str) -> String {
        self.p(rel).to_str().unwrap().to_string()
    }
}

/// Every path below `root` (links not followed): kind, mode, owner and content digest.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let ft = m.file_type();
            let desc = if ft.is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                format!("dir {:o}", m.mode() & 0o7777)
            } else if ft.is_file() {
                let bytes = std::fs::read(&p).unwrap_or_default();
                format!(
                    "file {:o} {}:{} {} {}",
                    m.mode() & 0o7777,
                    m.uid(),
                    m.gid(),
                    bytes.len(),
                    cudist_wheel::write::record_hash(&bytes)
                )
            } else {
                "special".to_string()
            };
            out.insert(rel, desc);
            if ft.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    maxrss_kib: i64,
}

/// Runs `cudist ARGS` in the sandbox (cwd, `TMPDIR`), measuring the child's peak memory with
/// `wait4`, killing it after `timeout`.
fn run_as(sb: &Sandbox, args: &[&str], prefix: &[&str]) -> Outcome {
    let bin = env!("CARGO_BIN_EXE_cudist");
    let mut cmd = if prefix.is_empty() {
        Command::new(bin)
    } else {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(bin);
        c
    };
    // Reaped with wait4 below (for its peak memory), not through the Child.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd
        .args(args)
        .current_dir(sb.root())
        .env("TMPDIR", sb.p("tmp"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let (code, maxrss_kib) = loop {
        let mut status = 0;
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            break (code, ru.ru_maxrss);
        }
        if start.elapsed() > Duration::from_secs(60) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("cudist {args:?} hangs (killed after 60 s)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        code,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        maxrss_kib,
    }
}

/// What a case must do: its exit code, what stderr (or stdout, for a success) must say, and the
/// one path (file or directory) it may create or change.
struct Want<'a> {
    code: i32,
    says: &'a [&'a str],
    output: Option<&'a str>,
}

fn fails<'a>(says: &'a [&'a str], output: Option<&'a str>) -> Want<'a> {
    Want {
        code: 3,
        says,
        output,
    }
}

/// Runs a case and checks everything the module promises.
fn case(sb: &Sandbox, name: &str, args: &[&str], want: Want) -> Outcome {
    case_as(sb, name, args, want, &[])
}

fn case_as(sb: &Sandbox, name: &str, args: &[&str], want: Want, prefix: &[&str]) -> Outcome {
    let before = snapshot(sb.root());
    let o = run_as(sb, args, prefix);
    let after = snapshot(sb.root());
    let both = format!("{name}\nstdout:\n{}\nstderr:\n{}", o.stdout, o.stderr);
    assert!(!o.stderr.contains("panicked"), "{both}");
    assert_eq!(o.code, Some(want.code), "{both}");
    let text = if want.code == 0 {
        format!("{}{}", o.stdout, o.stderr)
    } else {
        o.stderr.clone()
    };
    for w in want.says {
        assert!(text.contains(w), "{name}: expected {w:?} in:\n{both}");
    }
    let out = want.output.map(|p| p.trim_end_matches('/').to_string());
    let inside = |p: &str| {
        out.as_deref()
            .is_some_and(|o| p == o || p.starts_with(&format!("{o}/")))
    };
    for k in before.keys().chain(after.keys()) {
        if before.get(k) != after.get(k) {
            assert!(
                inside(k),
                "{name}: {k} changed outside the output: {:?} -> {:?}\n{both}",
                before.get(k),
                after.get(k)
            );
        }
    }
    if want.code != 0 {
        // Nothing written: the output holds no file (a directory `-w` created may stay).
        if let Some(o) = &out {
            let written: Vec<&String> = after
                .iter()
                .filter(|(k, v)| {
                    (*k == o || k.starts_with(&format!("{o}/"))) && !v.starts_with("dir")
                })
                .map(|(k, _)| k)
                .filter(|k| before.get(*k) != after.get(*k))
                .collect();
            assert!(written.is_empty(), "{name}: wrote {written:?} on failure");
        }
    }
    let stray: Vec<&String> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .filter(|k| k.starts_with("tmp/") || k.contains(".cudist-") || k.contains("cudist-tmp"))
        .collect();
    assert!(stray.is_empty(), "{name}: left {stray:?}");
    assert!(
        o.maxrss_kib < MAX_RSS_KIB,
        "{name}: peak memory {} MiB",
        o.maxrss_kib / 1024
    );
    o
}

/// A Python snippet with `out` (and more) as arguments: builds one hostile input.
fn py(code: &str, args: &[&str]) {
    python(
        &format!("import sys, os, io, zipfile, tarfile, struct, json, hashlib, base64\n{code}"),
        args,
    );
}

/// Python: `wheel(path, members, dist='w', version='1.0')` writes a wheel whose members are
/// `(name, bytes)` pairs, with a dist-info (METADATA, WHEEL, true RECORD) unless told otherwise.
const WHEEL_PY: &str = r#"
def rec_hash(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
def wheel(path, members, dist='w', version='1.0', dist_info=True, metadata=None, record=None):
    import warnings
    warnings.simplefilter('ignore')
    import csv
    z = zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED)
    rows = []
    for name, data in members:
        z.writestr(name, data)
        rows.append((name, rec_hash(data), len(data)))
    if dist_info:
        di = '%s-%s.dist-info' % (dist, version)
        md = metadata if metadata is not None else ('Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (dist, version)).encode()
        wh = b'Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n'
        for n, d in (('METADATA', md), ('WHEEL', wh)):
            z.writestr(di + '/' + n, d)
            rows.append((di + '/' + n, rec_hash(d), len(d)))
        rows.append((di + '/RECORD', '', ''))
        text = io.StringIO()
        csv.writer(text, lineterminator='\n').writerows(rows)
        z.writestr(di + '/RECORD', record if record is not None else text.getvalue())
    z.close()
"#;

fn wheel_py(code: &str, args: &[&str]) {
    py(&format!("{WHEEL_PY}\n{code}"), args);
}

/// The bytes of a small shared library built by gcc (an ELF member).
fn small_so(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(fake_lib(dir, name, name, "f")).unwrap()
}

#[test]
fn hostile_wheels() {
    let sb = Sandbox::new();
    let so = small_so(&sb.p("tmp-build"), "libok.so.1");
    std::fs::write(sb.p("in/libok.so"), &so).unwrap();
    std::fs::remove_dir_all(sb.p("tmp-build")).unwrap();
    let so_path = sb.s("in/libok.so");
    let mut n = 0;
    let mut inspect_refuses = |file: &str, builder: &str, says: &[&str]| {
        let path = sb.s(&format!("in/{file}"));
        wheel_py(builder, &[&path, &so_path]);
        let mut all = vec![file];
        all.extend_from_slice(says);
        case(&sb, file, &["inspect", &path], fails(&all, None));
        n += 1;
    };
    inspect_refuses(
        "slip-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('../../around/x', b'x')], dist='slip')",
        &["has a `..` component"],
    );
    inspect_refuses(
        "abs-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('/etc/evil', b'x')], dist='abs')",
        &["is an absolute path"],
    );
    inspect_refuses(
        "dot-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('./pkg/a.py', b'x')], dist='dot')",
        &["`.` component"],
    );
    inspect_refuses(
        "slash-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('pkg//a.py', b'x')], dist='slash')",
        &["two spellings of one path"],
    );
    inspect_refuses(
        "bslash-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('pkg\\\\..\\\\..\\\\x', b'x')], dist='bslash')",
        &["backslash"],
    );
    inspect_refuses(
        "link-1.0-py3-none-any.whl",
        "i = zipfile.ZipInfo('pkg/link'); i.create_system = 3; i.external_attr = (0o120777 << 16)\n\
         z = zipfile.ZipFile(sys.argv[1], 'w'); z.writestr(i, '/etc/shadow'); z.close()",
        &["symbolic link"],
    );
    inspect_refuses(
        "dup-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('pkg/a.py', b'1'), ('pkg/a.py', b'2')], dist='dup')",
        &["member \"pkg/a.py\" appears more than once"],
    );
    // The end record says two members fewer than the directory holds: libcuda.so.1 hidden.
    inspect_refuses(
        "hide-1.0-py3-none-any.whl",
        "so = open(sys.argv[2], 'rb').read()\n\
         wheel(sys.argv[1], [('pkg/a.py', b'1'), ('pkg/libcuda.so.1', so), ('pkg/b.py', b'2')], dist='hide')\n\
         raw = bytearray(open(sys.argv[1], 'rb').read())\n\
         i = raw.rfind(b'PK\\x05\\x06')\n\
         for off in (8, 10): raw[i+off:i+off+2] = struct.pack('<H', struct.unpack('<H', raw[i+off:i+off+2])[0] - 2)\n\
         open(sys.argv[1], 'wb').write(raw)",
        &["but its end record says", "pip sees"],
    );
    inspect_refuses(
        "nodi-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('pkg/a.py', b'1')], dist='nodi', dist_info=False)",
        &["no .dist-info directory"],
    );
    inspect_refuses(
        "twodi-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('other-2.0.dist-info/METADATA', b'Name: other\\n')], dist='twodi')",
        &["2 .dist-info directories"],
    );
    inspect_refuses(
        "named-1.0-py3-none-any.whl",
        "wheel(sys.argv[1], [('pkg/a.py', b'1')], dist='other')",
        &["does not match the file name (named-1.0)"],
    );
    inspect_refuses(
        "nowheel-1.0-py3-none-any.whl",
        "z = zipfile.ZipFile(sys.argv[1], 'w')\n\
         z.writestr('nowheel-1.0.dist-info/METADATA', 'Name: nowheel\\n')\n\
         z.writestr('nowheel-1.0.dist-info/RECORD', '')\n\
         z.close()",
        &["has no WHEEL"],
    );
    // An ELF member whose CRC is wrong (its bytes changed, not its header).
    inspect_refuses(
        "crc-1.0-py3-none-any.whl",
        "so = open(sys.argv[2], 'rb').read()\n\
         z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED)\n\
         z.writestr('pkg/libok.so', so)\n\
         for f in ('METADATA', 'WHEEL', 'RECORD'): z.writestr('crc-1.0.dist-info/' + f, 'Name: crc\\n')\n\
         z.close()\n\
         raw = bytearray(open(sys.argv[1], 'rb').read())\n\
         i = raw.find(so[:64]) + 200\n\
         raw[i] ^= 0xff\n\
         open(sys.argv[1], 'wb').write(raw)",
        &["pkg/libok.so"],
    );
    // A member that inflates past its declared size.
    inspect_refuses(
        "grows-1.0-py3-none-any.whl",
        "data = b'\\x7fELF' + b'\\0' * (1 << 20)\n\
         wheel(sys.argv[1], [('pkg/libgrow.so', data)], dist='grows')\n\
         raw = bytearray(open(sys.argv[1], 'rb').read())\n\
         for sig, off in ((b'PK\\x03\\x04', 22), (b'PK\\x01\\x02', 24)):\n\
         \x20   i = raw.find(sig); raw[i+off:i+off+4] = struct.pack('<I', 100)\n\
         open(sys.argv[1], 'wb').write(raw)",
        &["pkg/libgrow.so", "inflates beyond its declared size"],
    );
    // Unpacked size over the limit: refused before anything is inflated.
    let big = sb.s("in/big-1.0-py3-none-any.whl");
    wheel_py(
        "wheel(sys.argv[1], [('pkg/zeros.bin', b'\\0' * (4 << 20))], dist='big')",
        &[&big],
    );
    case(
        &sb,
        "unpacked over --max-unpacked",
        &["inspect", "--max-unpacked", "1M", &big],
        fails(
            &["big-1.0-py3-none-any.whl", "over the 1048576-byte limit"],
            None,
        ),
    );
    n += 1;
    // A 256 MiB ELF-headed member from a 256 KiB wheel, with a 32 MiB memory budget: inflated to
    // a temporary file (removed), memory stays bounded, the damaged ELF is reported.
    let bomb = sb.s("in/bomb-1.0-py3-none-any.whl");
    wheel_py(
        "z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED)\n\
         with z.open('pkg/libbomb.so', 'w', force_zip64=True) as f:\n\
         \x20   f.write(b'\\x7fELF\\x02\\x01\\x01')\n\
         \x20   for _ in range(256): f.write(b'\\0' * (1 << 20))\n\
         for n in ('METADATA', 'WHEEL', 'RECORD'): z.writestr('bomb-1.0.dist-info/' + n, 'Name: bomb\\n')\n\
         z.close()",
        &[&bomb],
    );
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let o = case(
        &sb,
        "deflate bomb",
        &["inspect", "--max-memory", "32M", &bomb],
        Want {
            code: 0,
            says: &["bomb-1.0-py3-none-any.whl", "1 ELF file"],
            output: None,
        },
    );
    assert!(o.maxrss_kib < 160 * 1024, "{} KiB", o.maxrss_kib);
    n += 1;
    // A sparse 3 GiB file, 4 KiB on disk, whose zip64 end record claims a 3 GiB central
    // directory: refused before anything that size is allocated. It lies outside the sandbox,
    // whose snapshot would read it whole (and a forked child starts with its parent's peak).
    let outside = tempfile::tempdir().unwrap();
    let sparse = outside
        .path()
        .join("sparse-1.0-py3-none-any.whl")
        .display()
        .to_string();
    py(
        "import struct, sys\n\
         size = 3 << 30\n\
         f = open(sys.argv[1], 'wb'); f.truncate(size)\n\
         rec = b'PK\\x06\\x06' + struct.pack('<QHHIIQQQQ', 44, 45, 45, 0, 0, 1, 1, size - 200, 0)\n\
         end = b'PK\\x05\\x06' + struct.pack('<HHHHIIH', 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)\n\
         at = size - len(end) - 20 - len(rec)\n\
         loc = b'PK\\x06\\x07' + struct.pack('<IQI', 0, at, 1)\n\
         f.seek(at); f.write(rec + loc + end); f.close()",
        &[&sparse],
    );
    let o = case(
        &sb,
        "sparse file claiming a 3 GiB central directory",
        &["inspect", &sparse],
        fails(
            &[
                "sparse-1.0-py3-none-any.whl",
                "central directory is said to be",
            ],
            None,
        ),
    );
    assert!(o.maxrss_kib < 64 * 1024, "{} KiB", o.maxrss_kib);
    n += 1;
    // A fatbin of a million bare 64-byte entry headers (64 MiB, 0.5 MiB zipped): its rows would
    // cost 400 MB; under --max-memory 64M they stop at the budget's share, and the file is named.
    let fat_bin = sb.p("tmp/fat.bin");
    py(
        "n = 1000000\n\
         h = bytearray(64)\n\
         struct.pack_into('<HHIQ', h, 0, 2, 0x0101, 0x40, 0)\n\
         struct.pack_into('<HHIIIQ', h, 0x18, 5, 9, 80, 0, 0, 0x11)\n\
         body = bytes(h) * n\n\
         open(sys.argv[1], 'wb').write(struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(body)) + body)",
        &[fat_bin.to_str().unwrap()],
    );
    let libfat = sb.p("tmp/libfat.so");
    with_fatbin_section(Path::new(&so_path), &fat_bin, &libfat);
    let many = sb.s("in/many-1.0-py3-none-any.whl");
    wheel_py(
        "wheel(sys.argv[1], [('many/libfat.so', open(sys.argv[2], 'rb').read())], dist='many')",
        &[&many, libfat.to_str().unwrap()],
    );
    std::fs::remove_file(&fat_bin).unwrap();
    std::fs::remove_file(&libfat).unwrap();
    let o = case(
        &sb,
        "a million fatbin entries",
        &["inspect", "--max-memory", "64M", &many],
        fails(
            &[
                "many/libfat.so",
                "entries, more than the memory budget holds",
            ],
            None,
        ),
    );
    assert!(o.maxrss_kib < 160 * 1024, "{} KiB", o.maxrss_kib);
    n += 1;
    // Python nested past any stack (1 MiB of brackets, of unary minus): the file is not read,
    // the rest is, nothing crashes and the memory stays that of an ordinary wheel.
    let deep = sb.s("in/deep-1.0-py3-none-any.whl");
    wheel_py(
        "n = 400000\n\
         wheel(sys.argv[1], [('deep/__init__.py', b'x = ' + b'(' * n + b'1' + b')' * n + b'\\n'),\n\
         \x20   ('deep/minus.py', b'x = ' + b'-' * ((1 << 20) - 16) + b'1\\n'),\n\
         \x20   ('deep/libok.so', open(sys.argv[2], 'rb').read())], dist='deep')",
        &[&deep, &so_path],
    );
    let o = case(
        &sb,
        "Python nested past any stack",
        &["inspect", &deep],
        Want {
            code: 0,
            says: &["deep-1.0-py3-none-any.whl", "1 ELF file"],
            output: None,
        },
    );
    assert!(o.maxrss_kib < 256 * 1024, "{} KiB", o.maxrss_kib);
    n += 1;
    for (what, dev) in [("FIFO", "in/fifo.whl"), ("character device", "/dev/zero")] {
        let path = if dev.starts_with('/') {
            dev.to_string()
        } else {
            let p = sb.s(dev);
            let c = std::ffi::CString::new(p.clone()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            p
        };
        case(
            &sb,
            what,
            &["inspect", &path],
            fails(&[&path, "not a regular file"], None),
        );
        case(
            &sb,
            what,
            &["repair", &path, "-w", &sb.s("out")],
            fails(&[&path, "not a regular file"], Some("out")),
        );
        n += 2;
    }
    assert!(n >= 20, "{n}");
}

#[test]
fn hostile_wheels_through_repair() {
    let sb = Sandbox::new();
    let build = sb.p("build");
    let so = small_so(&build, "libok.so.1");
    let so_path = build.join("libok.so.1");
    // A library that needs a path: ../../../../around/secret.so and /proc/self/exe.
    let needs_path = |name: &str, needed: &str| -> PathBuf {
        let dep = build.join("dep.so");
        gcc_shared(
            &build,
            "dep.so",
            Some(needed),
            "int dep(void) { return 1; }\n",
            &[],
        );
        gcc_shared(
            &build,
            name,
            Some(name),
            "int dep(void); int f(void) { return dep(); }\n",
            &["-Wl,--no-as-needed", dep.to_str().unwrap()],
        )
    };
    let escaping = std::fs::read(needs_path("libesc.so", "../../../../around/secret.so")).unwrap();
    let proc_self = std::fs::read(needs_path("libproc.so", "/proc/self/exe")).unwrap();
    std::fs::write(sb.p("in/libesc.so"), &escaping).unwrap();
    std::fs::write(sb.p("in/libproc.so"), &proc_self).unwrap();
    std::fs::remove_dir_all(&build).unwrap();
    let _ = (so, so_path);

    // NEEDED entries that name paths are never grafted: the repair succeeds, the wheel holds no
    // host file and no member outside it, and the report says why.
    for (file, lib) in [("esc", "in/libesc.so"), ("proc", "in/libproc.so")] {
        let w = sb.s(&format!("in/{file}-1.0-cp311-cp311-linux_x86_64.whl"));
        wheel_py(
            &format!("wheel(sys.argv[1], [('{file}/lib{file}.so', open(sys.argv[2], 'rb').read())], dist='{file}')"),
            &[&w, &sb.s(lib)],
        );
        let out = format!("out-{file}");
        let o = case(
            &sb,
            file,
            &["repair", &w, "-w", &sb.s(&out)],
            Want {
                code: 0,
                says: &["a NEEDED entry that names a path"],
                output: Some(&out),
            },
        );
        let _ = o;
        let repaired = find_wheel(&sb.p(&out), file);
        let z = zip::ZipArchive::new(std::fs::File::open(&repaired).unwrap()).unwrap();
        let names: Vec<&str> = z.file_names().collect();
        assert!(
            names
                .iter()
                .all(|n| !n.contains("..") && !n.contains(".libs/")),
            "{names:?}"
        );
    }

    // --loader with a METADATA name that tries to end the docstring and run code: the module
    // parses and imports, and runs nothing but its own code.
    let ext_dir = sb.p("extb");
    let ext = ext_needing(&ext_dir, "cudart", "libcudart.so.12", "cudaMalloc");
    std::fs::remove_dir_all(&ext_dir).unwrap();
    std::fs::write(sb.p("in/ext.so"), &ext).unwrap();
    let marker = sb.p("around/pwned");
    // The Name closes the loader's docstring and string literals every way Python has, then
    // calls open() on a marker.
    let name = format!(
        "x\"\"\"'''\"'+open({:?},'w').name+'\"\"\"\\\",\")#",
        marker.display()
    );
    let md = sb.p("in/inj.METADATA");
    std::fs::write(
        &md,
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"),
    )
    .unwrap();
    let w = sb.s("in/inj-1.0-cp311-cp311-linux_x86_64.whl");
    wheel_py(
        "wheel(sys.argv[1], [('inj/_ext.so', open(sys.argv[2], 'rb').read())], dist='inj', metadata=open(sys.argv[3], 'rb').read())",
        &[&w, &sb.s("in/ext.so"), md.to_str().unwrap()],
    );
    case(
        &sb,
        "loader injection",
        &["repair", "--loader", &w, "-w", &sb.s("out-inj")],
        Want {
            code: 0,
            says: &["loader"],
            output: Some("out-inj"),
        },
    );
    let repaired = find_wheel(&sb.p("out-inj"), "inj");
    let x = sb.p("out-inj/x");
    extract(&repaired, &["inj/_cudist_cuda.py"], &x);
    let o = Command::new("python3")
        .arg("-c")
        .arg("import sys; sys.path.insert(0, sys.argv[1]); import inj._cudist_cuda as l; print(l.missing)")
        .arg(&x)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!marker.exists(), "the generated loader ran injected code");

    // A module of the package's own at the loader's path: refused, saying why.
    let w = sb.s("in/own-1.0-cp311-cp311-linux_x86_64.whl");
    wheel_py(
        "wheel(sys.argv[1], [('own/_ext.so', open(sys.argv[2], 'rb').read()), ('own/_cudist_cuda.py', b'print(1)')], dist='own')",
        &[&w, &sb.s("in/ext.so")],
    );
    case(
        &sb,
        "loader over the package's own module",
        &["repair", "--loader", &w, "-w", &sb.s("out-own")],
        fails(&["own-1.0", "cudist did not write"], Some("out-own")),
    );

    // RECORD rows with commas, quotes and a non-UTF-8 METADATA: the repaired wheel's RECORD reads
    // back with Python's csv as one row per member, and METADATA keeps its bytes.
    let w = sb.s("in/odd-1.0-cp311-cp311-linux_x86_64.whl");
    wheel_py(
        "md = b'Metadata-Version: 2.1\\nName: odd\\nVersion: 1.0\\nAuthor: Jos\\xe9\\n\\nDescription \\xff\\n'\n\
         wheel(sys.argv[1], [('odd/_ext.so', open(sys.argv[2], 'rb').read()), ('odd/a,b \"c\".txt', b'x')], dist='odd', metadata=md)",
        &[&w, &sb.s("in/ext.so")],
    );
    case(
        &sb,
        "odd names",
        &["repair", &w, "-w", &sb.s("out-odd")],
        Want {
            code: 0,
            says: &[],
            output: Some("out-odd"),
        },
    );
    let repaired = find_wheel(&sb.p("out-odd"), "odd");
    py(
        "import csv\n\
         z = zipfile.ZipFile(sys.argv[1])\n\
         rows = list(csv.reader(io.StringIO(z.read('odd-1.0.dist-info/RECORD').decode())))\n\
         names = sorted(r[0] for r in rows)\n\
         assert names == sorted(z.namelist()), (names, z.namelist())\n\
         md = z.read('odd-1.0.dist-info/METADATA')\n\
         assert b'Author: Jos\\xe9\\n' in md and b'Description \\xff' in md, md\n\
         assert b'Requires-Dist: nvidia-cuda-runtime-cu12' in md, md",
        &[repaired.to_str().unwrap()],
    );

    // A raw-copied member with a wrong CRC: repair refuses rather than pass it on.
    let w = sb.s("in/badcrc-1.0-cp311-cp311-linux_x86_64.whl");
    wheel_py(
        "z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED)\n\
         z.writestr('badcrc/data.txt', b'A' * 4096)\n\
         z.writestr('badcrc/_ext.so', open(sys.argv[2], 'rb').read())\n\
         for f in ('METADATA', 'WHEEL', 'RECORD'): z.writestr('badcrc-1.0.dist-info/' + f, 'Name: badcrc\\nVersion: 1.0\\n')\n\
         z.close()\n\
         raw = bytearray(open(sys.argv[1], 'rb').read())\n\
         i = raw.find(b'A' * 4096)\n\
         raw[i + 100] = ord('B')\n\
         open(sys.argv[1], 'wb').write(raw)",
        &[&w, &sb.s("in/ext.so")],
    );
    case(
        &sb,
        "bad CRC",
        &["repair", &w, "-w", &sb.s("out-crc")],
        fails(&["badcrc-1.0", "badcrc/data.txt"], Some("out-crc")),
    );

    // The output path is a link planted at a victim: it is replaced, the victim untouched.
    let w = sb.s("in/plant-1.0-cp311-cp311-linux_x86_64.whl");
    wheel_py(
        "wheel(sys.argv[1], [('plant/_ext.so', open(sys.argv[2], 'rb').read())], dist='plant')",
        &[&w, &sb.s("in/ext.so")],
    );
    let dry = run_as(
        &sb,
        &[
            "repair",
            &w,
            "-w",
            &sb.s("out-plant"),
            "--dry-run",
            "--json",
        ],
        &[],
    );
    let plan: serde_json::Value = serde_json::from_str(&dry.stdout).unwrap();
    let target = PathBuf::from(plan["wheels"][0]["output"].as_str().unwrap());
    std::fs::create_dir(sb.p("out-plant")).unwrap();
    std::os::unix::fs::symlink(sb.p("around/victim.txt"), &target).unwrap();
    case(
        &sb,
        "planted output link",
        &["repair", &w, "-w", &sb.s("out-plant")],
        Want {
            code: 0,
            says: &[],
            output: Some("out-plant"),
        },
    );
    assert_eq!(
        std::fs::read_to_string(sb.p("around/victim.txt")).unwrap(),
        "precious\n"
    );
    assert!(std::fs::symlink_metadata(&target).unwrap().is_file());
}

/// A tar stream of `(name, kind, data)` members with names written as they are (the tar crate's
/// path setters refuse `..`, which these cases need). kind: `f` file, `l` symlink (data is the
/// target), `h` hard link, `d` directory.
fn raw_tar(members: &[(&str, char, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, data) in members {
        let mut h = tar::Header::new_gnu();
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        let (t, size) = match kind {
            'f' => (tar::EntryType::Regular, data.len()),
            'l' => (tar::EntryType::Symlink, 0),
            'h' => (tar::EntryType::Link, 0),
            _ => (tar::EntryType::Directory, 0),
        };
        if matches!(kind, 'l' | 'h') {
            gnu.linkname[..data.len()].copy_from_slice(data);
        }
        h.set_entry_type(t);
        h.set_size(size as u64);
        h.set_mode(0o644);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        if *kind == 'f' {
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// A `.conda` package: a stored zip of `info-STEM.tar.zst` and `pkg-STEM.tar.zst`.
fn conda_of(path: &Path, info: &[u8], pkg: Option<&[u8]>) {
    let stem = path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".conda")
        .to_string();
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("metadata.json", opts).unwrap();
    z.write_all(br#"{"conda_pkg_format_version": 2}"#).unwrap();
    let mut parts = vec![("info", info)];
    if let Some(p) = pkg {
        parts.push(("pkg", p));
    }
    for (part, tar) in parts {
        z.start_file(format!("{part}-{stem}.tar.zst"), opts)
            .unwrap();
        z.write_all(&zstd::encode_all(tar, 1).unwrap()).unwrap();
    }
    z.finish().unwrap();
}

const INDEX: &[u8] =
    br#"{"name": "evil", "version": "1.0", "build": "h0_0", "build_number": 0, "depends": [], "subdir": "linux-64"}"#;

#[test]
fn hostile_conda_packages() {
    let sb = Sandbox::new();
    let info = raw_tar(&[("info/index.json", 'f', INDEX)]);
    let mut n = 0;
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        (
            "slip",
            raw_tar(&[("../../around/x", 'f', b"x")]),
            &["has a `..` component"],
        ),
        (
            "abs",
            raw_tar(&[("/etc/evil", 'f', b"x")]),
            &["is an absolute path"],
        ),
        (
            "dup",
            raw_tar(&[("lib/a", 'f', b"1"), ("lib/a", 'f', b"2")]),
            &["lib/a is given twice"],
        ),
        (
            "garbage",
            b"not a tar at all, not even close".repeat(40),
            &["tar stream"],
        ),
    ];
    for (name, pkg, says) in &cases {
        let path = sb.p(&format!("in/{name}-1.0-h0_0.conda"));
        conda_of(&path, &info, Some(pkg));
        let p = path.to_str().unwrap();
        let mut all = vec![p];
        all.extend_from_slice(says);
        case(&sb, name, &["inspect", p], fails(&all, None));
        n += 1;
    }
    // No pkg part: the message says which part is missing.
    let path = sb.s("in/nopkg-1.0-h0_0.conda");
    conda_of(Path::new(&path), &info, None);
    case(
        &sb,
        "no pkg part",
        &["inspect", &path],
        fails(&[&path, "no pkg-*.tar.zst member"], None),
    );
    // A member that unpacks past the limit: refused at its header, nothing written anywhere.
    let path = sb.s("in/bomb-1.0-h0_0.conda");
    let zeros = vec![0u8; 3 << 20];
    conda_of(
        Path::new(&path),
        &info,
        Some(&raw_tar(&[("lib/zeros.bin", 'f', &zeros)])),
    );
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
    case(
        &sb,
        "conda bomb",
        &["inspect", "--max-unpacked", "1M", &path],
        fails(&[&path, "1048576-byte limit"], None),
    );
    // An index.json over the metadata limit.
    let big = vec![b' '; 17 << 20];
    let path = sb.s("in/fatinfo-1.0-h0_0.conda");
    conda_of(
        Path::new(&path),
        &raw_tar(&[("info/index.json", 'f', &big)]),
        Some(&raw_tar(&[])),
    );
    case(
        &sb,
        "huge index.json",
        &["inspect", &path],
        fails(&[&path, "info/index.json is 17825792 bytes"], None),
    );
    // A link member out of the prefix, then a file "through" it: read, never written.
    let path = sb.s("in/linky-1.0-h0_0.conda");
    let around = sb.s("around");
    conda_of(
        Path::new(&path),
        &info,
        Some(&raw_tar(&[
            ("lib", 'l', around.as_bytes()),
            ("lib/victim.txt", 'f', b"overwritten"),
        ])),
    );
    case(
        &sb,
        "link then file through it",
        &["inspect", &path],
        Want {
            code: 0,
            says: &["linky-1.0-h0_0.conda", "0 ELF files"],
            output: None,
        },
    );
    // .tar.bz2: a FIFO of that name, and garbage.
    let fifo = sb.s("in/fifo-1.0-h0_0.tar.bz2");
    let c = std::ffi::CString::new(fifo.clone()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    case(
        &sb,
        "conda FIFO",
        &["inspect", &fifo],
        fails(&[&fifo, "not a regular file"], None),
    );
    n += 5;
    assert!(n >= 9, "{n}");
}

/// NVIDIA's archive name for this machine's platform.
fn archive_name(component: &str) -> String {
    let plat = match std::env::consts::ARCH {
        "aarch64" => "linux-sbsa",
        _ => "linux-x86_64",
    };
    format!("{component}-{plat}-13.0.1-archive")
}

#[test]
fn hostile_archives_through_split() {
    let sb = Sandbox::new();
    let victim = sb.s("around/victim.txt");
    let dir_name = archive_name("cuda_cudart");
    let top = |m: &str| format!("{dir_name}/{m}");
    let mk = |name: &str, members: Vec<(String, char, Vec<u8>)>| -> String {
        let dir = sb.p(&format!("in/{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let refs: Vec<(&str, char, &[u8])> = members
            .iter()
            .map(|(a, b, c)| (a.as_str(), *b, c.as_slice()))
            .collect();
        let tar = raw_tar(&refs);
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&tar).unwrap();
        std::fs::write(dir.join(format!("{dir_name}.tar.xz")), xz.finish().unwrap()).unwrap();
        dir.to_str().unwrap().to_string()
    };
    let ok = |m: &str| (top(m), 'f', b"int x;\n".to_vec());
    type Members = Vec<(String, char, Vec<u8>)>;
    let cases: Vec<(&str, Members, &[&str])> = vec![
        (
            "slip",
            vec![
                ok("include/a.h"),
                (top("../../../around/x"), 'f', b"x".to_vec()),
            ],
            &["has a `..` component"],
        ),
        (
            "abs",
            vec![("/tmp/evil".into(), 'f', b"x".to_vec())],
            &["is an absolute path"],
        ),
        (
            "link-out",
            vec![
                ok("include/a.h"),
                (top("include/evil.h"), 'l', victim.as_bytes().to_vec()),
            ],
            &["include/evil.h", "leads out of"],
        ),
        (
            "dir-link-then-file",
            vec![
                (top("include"), 'l', b"../../../../around".to_vec()),
                (top("include/victim.txt"), 'f', b"overwritten".to_vec()),
            ],
            &["leads out of"],
        ),
        (
            "hard-link-out",
            vec![
                ok("include/a.h"),
                (top("include/h.h"), 'h', victim.as_bytes().to_vec()),
            ],
            &["is a hard link to", "not a file unpacked before it"],
        ),
    ];
    let mut n = 0;
    for (name, members, says) in cases {
        let input = mk(name, members);
        let out = format!("out-{name}");
        let mut all = vec![".tar.xz"];
        all.extend_from_slice(says);
        case(
            &sb,
            name,
            &["split", &input, "-o", &sb.s(&out)],
            fails(&all, Some(&out)),
        );
        n += 1;
    }
    // Over the unpack limit.
    let input = mk(
        "bomb",
        vec![(top("lib/zeros.bin"), 'f', vec![0u8; 3 << 20])],
    );
    case(
        &sb,
        "tar bomb",
        &[
            "split",
            &input,
            "-o",
            &sb.s("out-bomb"),
            "--max-unpacked",
            "1M",
        ],
        fails(&[".tar.xz", "1048576-byte limit"], Some("out-bomb")),
    );
    // --manifest: a device, a FIFO, a relative_path that climbs out.
    let fifo = sb.s("in/manifest.fifo");
    let c = std::ffi::CString::new(fifo.clone()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (what, m, says) in [
        (
            "manifest device",
            "/dev/zero".to_string(),
            "a character device",
        ),
        ("manifest FIFO", fifo.clone(), "a FIFO"),
    ] {
        case(
            &sb,
            what,
            &[
                "split",
                &sb.s("in/slip"),
                "--manifest",
                &m,
                "-o",
                &sb.s("out-m"),
            ],
            fails(&[&m, says], Some("out-m")),
        );
        n += 1;
    }
    let manifest = sb.s("in/redistrib.json");
    std::fs::write(
        &manifest,
        format!(
            r#"{{"release_label": "13.0.1", "cuda_cudart": {{"version": "13.0.1", "{}": {{"relative_path": "../../around/victim.txt", "sha256": "00", "size": "9"}}}}}}"#,
            if std::env::consts::ARCH == "aarch64" {
                "linux-sbsa"
            } else {
                "linux-x86_64"
            }
        ),
    )
    .unwrap();
    case(
        &sb,
        "manifest relative_path out",
        &[
            "split",
            &sb.s("in/slip"),
            "--manifest",
            &manifest,
            "-o",
            &sb.s("out-m"),
        ],
        fails(&["relative_path", "climbs out of its root"], Some("out-m")),
    );
    // An unpacked archive directory with a link out: not read, listed as skipped.
    let unpacked = sb.p(&format!("in/unpacked/{dir_name}"));
    std::fs::create_dir_all(unpacked.join("include")).unwrap();
    std::fs::write(unpacked.join("include/a.h"), "int a;\n").unwrap();
    std::os::unix::fs::symlink(&victim, unpacked.join("include/evil.h")).unwrap();
    let o = case(
        &sb,
        "unpacked archive with a link out",
        &[
            "split",
            &sb.s("in/unpacked"),
            "-o",
            &sb.s("out-unpacked"),
            "--format",
            "dirs",
        ],
        Want {
            code: 0,
            says: &["not read: include/evil.h"],
            output: Some("out-unpacked"),
        },
    );
    let _ = o;
    let copied: Vec<String> = snapshot(&sb.p("out-unpacked")).into_keys().collect();
    assert!(copied.iter().all(|p| !p.ends_with("evil.h")), "{copied:?}");
    n += 3;
    assert!(n >= 10, "{n}");
}

#[test]
fn hostile_environments_and_trees() {
    let sb = Sandbox::new();
    // A site-packages whose CUDA package lists a file outside it.
    let site = sb.p("in/site");
    let di = site.join("nvidia_cuda_runtime-13.0.1.dist-info");
    std::fs::create_dir_all(&di).unwrap();
    std::fs::create_dir_all(site.join("nvidia/cu13/include")).unwrap();
    std::fs::write(site.join("nvidia/cu13/include/cuda.h"), "int x;\n").unwrap();
    std::fs::write(
        di.join("METADATA"),
        "Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.0.1\n",
    )
    .unwrap();
    let record = |rows: &str| std::fs::write(di.join("RECORD"), rows).unwrap();
    record("nvidia/cu13/include/cuda.h,,\nnvidia/cu13/include/../../../../around/victim.txt,,\n");
    let mut n = 0;
    for (what, args) in [
        (
            "toolkit",
            vec![
                "toolkit",
                "--site-packages",
                "in/site",
                "--out",
                "out-tk",
                "--copy",
            ],
        ),
        ("split", vec!["split", "in/site", "-o", "out-tk"]),
    ] {
        case(
            &sb,
            what,
            &args,
            fails(&["RECORD", "climbs out of its root"], Some("out-tk")),
        );
        n += 1;
    }
    // A file of the package that is a link out of site-packages.
    record("nvidia/cu13/include/cuda.h,,\nnvidia/cu13/include/evil.h,,\n");
    std::os::unix::fs::symlink(
        sb.p("around/victim.txt"),
        site.join("nvidia/cu13/include/evil.h"),
    )
    .unwrap();
    for (what, args) in [
        (
            "toolkit link out",
            vec![
                "toolkit",
                "--site-packages",
                "in/site",
                "--out",
                "out-tk",
                "--copy",
            ],
        ),
        (
            "split link out",
            vec!["split", "in/site", "-o", "out-tk", "--format", "dirs"],
        ),
        (
            "in-place link out",
            vec!["toolkit", "--site-packages", "in/site", "--in-place"],
        ),
    ] {
        case(
            &sb,
            what,
            &args,
            fails(&["evil.h", "leads out of"], Some("out-tk")),
        );
        n += 1;
    }
    // A conda prefix whose record lists a file outside it; one whose record is a FIFO.
    let prefix = sb.p("in/prefix");
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    std::fs::write(
        prefix.join("conda-meta/cuda-cudart-13.0.1-h0_0.json"),
        r#"{"name": "cuda-cudart", "version": "13.0.1", "files": ["../../around/victim.txt"]}"#,
    )
    .unwrap();
    case(
        &sb,
        "conda-meta out",
        &["toolkit", "--conda-prefix", "in/prefix", "--out", "out-tk"],
        fails(
            &["cuda-cudart-13.0.1-h0_0.json", "climbs out of its root"],
            Some("out-tk"),
        ),
    );
    std::fs::remove_file(prefix.join("conda-meta/cuda-cudart-13.0.1-h0_0.json")).unwrap();
    let fifo = prefix.join("conda-meta/cuda-nvrtc-13.0.1-h0_0.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    case(
        &sb,
        "conda-meta FIFO",
        &["toolkit", "--conda-prefix", "in/prefix", "--out", "out-tk"],
        fails(
            &["cuda-nvrtc-13.0.1-h0_0.json", "not a regular file"],
            Some("out-tk"),
        ),
    );
    n += 2;
    // A toolkit tree with a header linked to a host file, and a FIFO: split reads neither.
    let tree = sb.p("in/tree");
    std::fs::create_dir_all(tree.join("include")).unwrap();
    std::fs::write(tree.join("include/cuda_runtime_api.h"), "int y;\n").unwrap();
    std::os::unix::fs::symlink(sb.p("around/victim.txt"), tree.join("include/evil.h")).unwrap();
    let c = std::ffi::CString::new(tree.join("include/pipe.h").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A forged marker naming the sandbox as an environment vouches for nothing.
    std::fs::write(
        tree.join(".cudist-toolkit"),
        format!(
            "CUDA 13 root\nsite-packages: {}\n",
            sb.p("around").display()
        ),
    )
    .unwrap();
    case(
        &sb,
        "tree with a link out and a FIFO",
        &["split", "in/tree", "-o", "out-tree", "--format", "dirs"],
        Want {
            code: 0,
            says: &["not read: include/evil.h"],
            output: Some("out-tree"),
        },
    );
    let copied: Vec<String> = snapshot(&sb.p("out-tree")).into_keys().collect();
    assert!(
        copied
            .iter()
            .all(|p| !p.ends_with("evil.h") && !p.ends_with("pipe.h")),
        "{copied:?}"
    );
    n += 1;
    assert!(n >= 7, "{n}");
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A tree for relink: a library that needs the driver, and an executable.
fn relink_tree(dir: &Path) {
    let lib = dir.join("lib");
    fake_lib(&lib, "libcudart.so.12", "libcudart.so.12", "cudaMalloc");
    fake_lib(&lib, "libother.so.1", "libother.so.1", "other");
}

#[test]
fn hostile_trees_through_relink() {
    let sb = Sandbox::new();
    let mut n = 0;
    let args = |t: &str| -> Vec<String> {
        vec![
            "relink".into(),
            t.into(),
            "--driver-runpath".into(),
            "/run/opengl-driver/lib".into(),
        ]
    };
    // A damaged ELF among good ones: nothing changes, and the message says so.
    relink_tree(&sb.p("in/t1"));
    let good = std::fs::read(sb.p("in/t1/lib/libcudart.so.12")).unwrap();
    std::fs::write(sb.p("in/t1/lib/libzz.so.9"), &good[..good.len() / 3]).unwrap();
    let a = args("in/t1");
    case(
        &sb,
        "damaged ELF in a tree",
        &refs(&a),
        fails(&["libzz.so.9", "changed nothing"], None),
    );
    n += 1;
    // Headers that lie (PT_NOTE moved 2 GiB out; PT_DYNAMIC 4 GiB long): refused unchanged.
    for (what, field, add) in [
        ("PT_NOTE", 8usize, 2u64 << 30),
        ("PT_DYNAMIC", 0x20, 1 << 32),
    ] {
        let t = format!("in/t-{what}");
        relink_tree(&sb.p(&t));
        let f = sb.p(&format!("{t}/lib/libcudart.so.12"));
        let mut d = std::fs::read(&f).unwrap();
        let phoff = u64::from_le_bytes(d[0x20..0x28].try_into().unwrap()) as usize;
        let nph = u16::from_le_bytes([d[0x38], d[0x39]]) as usize;
        let want = if what == "PT_NOTE" { 4u32 } else { 2 };
        let at = (0..nph)
            .map(|i| phoff + i * 56)
            .find(|&a| u32::from_le_bytes(d[a..a + 4].try_into().unwrap()) == want)
            .unwrap()
            + field;
        let v = u64::from_le_bytes(d[at..at + 8].try_into().unwrap()) + add;
        d[at..at + 8].copy_from_slice(&v.to_le_bytes());
        std::fs::write(&f, &d).unwrap();
        let a = args(&t);
        case(
            &sb,
            what,
            &refs(&a),
            fails(
                &[
                    "libcudart.so.12",
                    "lies outside the file",
                    "changed nothing",
                ],
                None,
            ),
        );
        n += 1;
    }
    // A link planted at the name the old writer used for its temporary: ignored, victim intact.
    relink_tree(&sb.p("in/t2"));
    std::os::unix::fs::symlink(
        sb.p("around/victim.txt"),
        sb.p("in/t2/lib/.libcudart.so.12.cudist-tmp"),
    )
    .unwrap();
    let a = args("in/t2");
    case(
        &sb,
        "planted temporary link",
        &refs(&a),
        Want {
            code: 0,
            says: &["1 of 2 ELF files changed"],
            output: Some("in/t2/lib/libcudart.so.12"),
        },
    );
    n += 1;
    // Running as root: a set-user-ID file of another user keeps its owner and mode.
    if unsafe { libc::geteuid() } == 0 {
        relink_tree(&sb.p("in/t3"));
        let f = sb.p("in/t3/lib/libcudart.so.12");
        std::os::unix::fs::chown(&f, Some(1234), Some(1234)).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let a = args("in/t3");
        case(
            &sb,
            "setuid file of another user, as root",
            &refs(&a),
            Want {
                code: 0,
                says: &[],
                output: Some("in/t3/lib/libcudart.so.12"),
            },
        );
        let m = std::fs::metadata(&f).unwrap();
        assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (1234, 1234, 0o4755));
        // Not root (nobody): a file it cannot give back to its owner is refused, and an
        // unreadable one too; nothing in either tree changes.
        let setpriv = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ];
        if Command::new("setpriv").arg("--version").output().is_ok() {
            for d in [sb.root().to_path_buf(), sb.p("in"), sb.p("tmp")] {
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
            }
            for t in ["in/t4", "in/t5"] {
                relink_tree(&sb.p(t));
                for d in [sb.p(t), sb.p(&format!("{t}/lib"))] {
                    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
                }
                for e in std::fs::read_dir(sb.p(&format!("{t}/lib")))
                    .unwrap()
                    .flatten()
                {
                    std::os::unix::fs::chown(e.path(), Some(65534), Some(65534)).unwrap();
                }
            }
            let f = sb.p("in/t4/lib/libcudart.so.12");
            std::os::unix::fs::chown(&f, Some(1234), Some(1234)).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).unwrap();
            let a = args(&sb.s("in/t4"));
            case_as(
                &sb,
                "setuid file of another user, as nobody",
                &refs(&a),
                Want {
                    code: 1,
                    says: &[
                        "libcudart.so.12",
                        "owned by uid 1234",
                        "would run as someone else",
                        "changed nothing",
                    ],
                    output: None,
                },
                &setpriv,
            );
            let f = sb.p("in/t5/lib/libother.so.1");
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
            let a = args(&sb.s("in/t5"));
            case_as(
                &sb,
                "unreadable file, as nobody",
                &refs(&a),
                fails(
                    &["libother.so.1", "cannot be read", "changed nothing"],
                    None,
                ),
                &setpriv,
            );
            n += 2;
        }
        n += 1;
    }
    assert!(n >= 5, "{n}");
}

#[test]
fn hostile_command_line_values() {
    let sb = Sandbox::new();
    let fifo = sb.s("in/fifo");
    let c = std::ffi::CString::new(fifo.clone()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let elf = fixtures().join("multi.so");
    let elf = elf.to_str().unwrap();
    let mut n = 0;
    for (what, src, says) in [
        ("catalog device", "/dev/zero", "a character device"),
        ("catalog FIFO", fifo.as_str(), "a FIFO"),
    ] {
        case(
            &sb,
            what,
            &["inspect", "--catalog", src, elf],
            fails(&[src, says], None),
        );
        n += 1;
    }
    for (what, body, says) in [
        (
            "pip_dir out",
            "pip = \"x\"\npip_dir = \"../../../../tmp/x\"",
            "has a `..` component",
        ),
        (
            "pip newline",
            "pip = \"x\\nRequires-Dist: evil\"\npip_dir = \"x/lib\"",
            "is not a distribution name",
        ),
    ] {
        let cat = sb.s(&format!("in/{}.toml", what.replace(' ', "-")));
        std::fs::write(
            &cat,
            format!(
                "schema = 1\n[[library]]\nid = \"x\"\nstem = \"libx\"\nkind = \"external\"\n\
                 [[library.cuda]]\nmajor = 12\nsonames = [\"libx.so.1\"]\npolicy = \"major\"\n{body}\n"
            ),
        )
        .unwrap();
        case(
            &sb,
            what,
            &["inspect", "--catalog", &cat, elf],
            fails(&[&cat, says], None),
        );
        n += 1;
    }
    for (what, src, says) in [
        ("host device", "/dev/zero", "a character device"),
        ("host FIFO", fifo.as_str(), "a FIFO"),
    ] {
        case(
            &sb,
            what,
            &["doctor", elf, "--host", src],
            fails(&[src, says], None),
        );
        n += 1;
    }
    case(
        &sb,
        "inspect FIFO",
        &["inspect", &fifo],
        fails(&[&fifo, "not a regular file"], None),
    );
    n += 1;
    // --write-host at a planted link: the link is replaced, the victim untouched.
    std::os::unix::fs::symlink(sb.p("around/victim.txt"), sb.p("in/host.json")).unwrap();
    case(
        &sb,
        "write-host over a link",
        &["doctor", "--write-host", &sb.s("in/host.json")],
        Want {
            code: 0,
            says: &["wrote"],
            output: Some("in/host.json"),
        },
    );
    assert!(!std::fs::symlink_metadata(sb.p("in/host.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    n += 1;
    // doctor --import finds a subpackage without running its parent's __init__.py, nor the
    // `import` lines of a .pth file in the environment's site-packages.
    let st = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(sb.p("in/venv"))
        .status()
        .unwrap();
    assert!(st.success());
    let site = site_of(&sb.p("in/venv"));
    std::fs::create_dir_all(site.join("evilpkg/sub")).unwrap();
    let marker = sb.p("around/ran");
    std::fs::write(
        site.join("evilpkg/__init__.py"),
        format!("open({:?}, 'w')\n", marker.display()),
    )
    .unwrap();
    std::fs::write(site.join("evilpkg/sub/__init__.py"), "").unwrap();
    std::fs::copy(fixtures().join("multi.so"), site.join("evilpkg/sub/m.so")).unwrap();
    std::fs::write(
        site.join("zz.pth"),
        format!("import os; open({:?}, 'w')\n", marker.display()),
    )
    .unwrap();
    let python = sb.s("in/venv/bin/python");
    let o = run_as(
        &sb,
        &[
            "doctor",
            "--import",
            "evilpkg.sub",
            "--static",
            "--python",
            &python,
            "--json",
        ],
        &[],
    );
    // --static judges from the files alone: not even a `.pth` line runs. (Without it doctor
    // runs the import, as the user's own `import` would: tests/doctor.rs.)
    assert!(
        !marker.exists(),
        "doctor --import --static ran package code: {}",
        o.stderr
    );
    assert!(
        o.stdout.contains("evilpkg/sub/m.so"),
        "{}\n{}",
        o.stdout,
        o.stderr
    );
    n += 1;
    assert!(n >= 9, "{n}");
}
