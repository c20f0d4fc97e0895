//! Helpers shared by the integration tests: run the binary, build fake CUDA libraries with gcc,
//! pack wheels, and find the real tools CI provides.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn fixtures() -> PathBuf {
    repo_root().join("tests/fixtures/device")
}

/// Runs `cudist ARGS` and returns its output.
pub fn cudist(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cudist"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudist")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `cudist inspect --json ARGS`, asserting exit code `code`, parsed.
pub fn inspect_json(args: &[&str], code: i32) -> Value {
    let mut all = vec!["inspect", "--json"];
    all.extend_from_slice(args);
    let o = cudist(&all);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    assert_eq!(v["schema"], "cudist.inspect/2");
    v
}

/// Writes a `--host` profile (JSON) to `path` and returns the path.
pub fn write_profile(path: &Path, profile: &Value) -> PathBuf {
    std::fs::write(path, profile.to_string()).unwrap();
    path.to_path_buf()
}

/// `cudist doctor --json --ld-library-path "" --host HOST FILE`: the exit code and the report.
pub fn doctor_on_profile(host: &Path, file: &Path) -> (Option<i32>, Value) {
    let o = cudist(&[
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        "--host",
        host.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    (o.status.code(), v)
}

/// Whether the CI run promises the real tools: then a missing tool is a failure, not a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Reports that the running test skips its checks for `reason` (a missing prerequisite): a
/// failure under `CI=true`, where every prerequisite is promised; elsewhere a line on stderr and
/// one in the file `CUDIST_SKIP_LOG` names (scripts/test.sh sets it and lists the skips, with
/// their reasons, after the run: a skipped test is never reported as a plain pass).
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(!in_ci(), "{test}: {reason}; CI promises it");
    eprintln!("skipping: {reason}");
    if let Some(log) = std::env::var_os("CUDIST_SKIP_LOG").filter(|l| !l.is_empty()) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            // One write of the whole line: tests skip in parallel, and appends of one write
            // each do not interleave.
            let line = format!("{} ({}): {reason}\n", test, env!("CARGO_CRATE_NAME"));
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// The path in environment variable `var` (set by scripts/test.sh), or `None` to skip locally.
/// Panics in CI, where scripts/test.sh always sets it.
pub fn tool_from_env(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            // scripts/test.sh provides every variable but cudist's own wheel, whose build
            // (scripts/wheel.sh, about 7 minutes) .ci/run makes first.
            let how = if var == "CUDIST_WHEEL" {
                "build it with `export CUDIST_WHEEL=$(bash scripts/wheel.sh | tail -1)`, as .ci/run does"
            } else {
                "scripts/test.sh sets it"
            };
            skip(&format!("{var} is not set ({how})"));
            None
        }
    }
}

/// Compiles C source with gcc into `dir/out`, with any gcc arguments.
pub fn gcc(dir: &Path, out: &str, source: &str, args: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = dir.join(format!("{out}.c"));
    std::fs::write(&src, source).unwrap();
    let path = dir.join(out);
    let o = Command::new("gcc")
        .arg("-o")
        .arg(&path)
        .arg(&src)
        .args(args)
        .output()
        .expect("gcc");
    assert!(
        o.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    path
}

/// Compiles C source into a shared library with gcc.
pub fn gcc_shared(
    dir: &Path,
    out: &str,
    soname: Option<&str>,
    source: &str,
    extra: &[&str],
) -> PathBuf {
    let so = soname.map(|s| format!("-Wl,-soname,{s}"));
    let mut args = vec!["-shared", "-fPIC", "-O1"];
    args.extend(so.as_deref());
    args.extend_from_slice(extra);
    gcc(dir, out, source, &args)
}

/// `cudist doctor --json --ld-library-path "" --import MODULE --python PYTHON`: the exit code and
/// the report.
pub fn doctor_import(module: &str, python: &std::path::Path) -> (Option<i32>, Value) {
    doctor_import_with(module, python, &[])
}

/// [`doctor_import`] with more arguments (`--static`, `--strict`).
pub fn doctor_import_with(
    module: &str,
    python: &std::path::Path,
    extra: &[&str],
) -> (Option<i32>, Value) {
    let mut args = vec![
        "doctor",
        "--json",
        "--ld-library-path",
        "",
        "--import",
        module,
        "--python",
        python.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = cudist(&args);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    (o.status.code(), v)
}

/// `cudist doctor --json ARGS`, its exit code asserted to be `code`, its report parsed.
pub fn doctor_json(args: &[&str], code: i32) -> Value {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let o = cudist(&all);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The file-name suffix of extension modules for `python` (`.cpython-311-x86_64-linux-gnu.so`).
pub fn ext_suffix(python: &Path) -> String {
    let o = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
        ])
        .output()
        .unwrap();
    ok(&o, "EXT_SUFFIX");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// C source of a working extension module `name` whose init function runs `body` first. The
/// stable ABI's module definition is declared here (its layout is part of the limited API), so
/// no Python headers are needed: a real import of it succeeds.
pub fn py_extension_source(name: &str, decls: &str, body: &str) -> String {
    format!(
        "typedef struct {{ long refcnt; void *type; void *m_init; long m_index; void *m_copy; }} Base;\n\
         typedef struct {{ Base base; const char *name; const char *doc; long size; void *methods; \
         void *slots; void *traverse; void *clear; void *free; }} Def;\n\
         void *PyModule_Create2(Def *, int);\n{decls}\n\
         static Def def = {{ {{1, 0, 0, 0, 0}}, \"{name}\", 0, -1, 0, 0, 0, 0, 0 }};\n\
         void *PyInit_{name}(void) {{ {body} return PyModule_Create2(&def, 1013); }}\n"
    )
}

/// A fake CUDA library: the SONAME and one exported entry point, as the real one has.
pub fn fake_lib(dir: &Path, file: &str, soname: &str, symbol: &str) -> PathBuf {
    gcc_shared(
        dir,
        file,
        Some(soname),
        &format!("int {symbol}(void *p) {{ return p == 0; }}\n"),
        &[],
    )
}

/// A shared library as [`fake_lib`] that also holds the names it opens at run time as string
/// constants, as real libraries do (cuFile names `libcufile_rdma.so.1`): what a dlopen of them
/// is read from.
pub fn fake_lib_opening(
    dir: &Path,
    file: &str,
    soname: &str,
    symbol: &str,
    opens: &[&str],
) -> PathBuf {
    let names: String = opens.iter().map(|n| format!("\"{n}\", ")).collect();
    gcc_shared(
        dir,
        file,
        Some(soname),
        &format!(
            "const char *opens[] = {{ {names}0 }};\nint {symbol}(void *p) {{ return p == opens[0]; }}\n"
        ),
        &[],
    )
}

/// `lib` copied to `out` with a `.nv_fatbin` section holding the bytes of `section` (objcopy from
/// binutils, which gcc uses): a device-code section of any content, for hostile cases.
pub fn with_fatbin_section(lib: &Path, section: &Path, out: &Path) {
    let st = Command::new("objcopy")
        .arg(format!("--add-section=.nv_fatbin={}", section.display()))
        .arg(lib)
        .arg(out)
        .status()
        .expect("objcopy");
    assert!(st.success(), "objcopy --add-section");
}

/// Writes a wheel with the given members (name, bytes) plus METADATA, WHEEL and a true RECORD.
pub fn write_wheel(path: &Path, dist: &str, requires: &[&str], members: &[(&str, Vec<u8>)]) {
    write_wheel_version(path, dist, "1.0", requires, members)
}

/// [`write_wheel`] at a given version.
pub fn write_wheel_version(
    path: &Path,
    dist: &str,
    version: &str,
    requires: &[&str],
    members: &[(&str, Vec<u8>)],
) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    let mut record = String::new();
    let mut add = |z: &mut zip::ZipWriter<std::fs::File>, name: &str, data: &[u8]| {
        z.start_file(name, opts).unwrap();
        z.write_all(data).unwrap();
        let hash = cudist_wheel::write::record_hash(data);
        record.push_str(&format!("{name},{hash},{}\n", data.len()));
    };
    for (name, data) in members {
        add(&mut z, name, data);
    }
    let di = format!("{dist}-{version}.dist-info");
    let mut md = format!("Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\nLicense: NVIDIA Proprietary Software\n");
    for r in requires {
        md.push_str(&format!("Requires-Dist: {r}\n"));
    }
    add(&mut z, &format!("{di}/METADATA"), md.as_bytes());
    add(
        &mut z,
        &format!("{di}/WHEEL"),
        b"Wheel-Version: 1.0\nGenerator: cudist-tests\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
    );
    record.push_str(&format!("{di}/RECORD,,\n"));
    z.start_file(format!("{di}/RECORD"), opts).unwrap();
    z.write_all(record.as_bytes()).unwrap();
    z.finish().unwrap();
}

/// Inputs every command can run on, in `work`: a toolkit tree (`tree/`: a runtime stand-in
/// `lib64/libcudart.so.13` with its SONAME, `include/cuda_runtime.h`, `version.json`) and a wheel
/// whose extension needs that runtime (`demo-1.0-cp311-cp311-linux_x86_64.whl`).
pub fn tree_and_wheel(work: &Path) -> (PathBuf, PathBuf) {
    let tree = work.join("tree");
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
    let wheel = work.join("demo-1.0-cp311-cp311-linux_x86_64.whl");
    let ext = ext_needing(work, "ext", "libcudart.so.13", "cudaMalloc");
    write_wheel(&wheel, "demo", &[], &[("demo/ext.so", ext)]);
    (tree, wheel)
}

/// `libuser.so`, built in `dir`: a package's library that calls `symbol` of the carried copy
/// `copy` (a file in `libs`, linked by that name, as a repair tool's graft is) and searches
/// `$ORIGIN/../<libs_dir>`, where the wheel carries it.
pub fn user_of_copy(dir: &Path, libs: &Path, copy: &str, symbol: &str, libs_dir: &str) -> Vec<u8> {
    let user = gcc_shared(
        dir,
        "libuser.so",
        Some("libuser.so"),
        &format!("int {symbol}(void);\nint f(void) {{ return {symbol}(); }}\n"),
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            &format!("-l:{copy}"),
            &format!("-Wl,-rpath,$ORIGIN/../{libs_dir}"),
        ],
    );
    std::fs::read(user).unwrap()
}

/// Runs a Python snippet with `python3` (used to craft hostile zips the zip crate will not write).
pub fn python(code: &str, args: &[&str]) {
    let o = Command::new("python3")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Finds the artifact with this path suffix in a report.
pub fn artifact<'a>(report: &'a Value, suffix: &str) -> &'a Value {
    report["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no artifact {suffix} in {report:#}"))
}

/// `cudist repair --json -w OUT WHEEL`, which must succeed: its report.
pub fn repair_json(wheel: &Path, out: &Path) -> Value {
    let o = cudist(&[
        "repair",
        "--json",
        "-w",
        out.to_str().unwrap(),
        wheel.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The lines of an artifact's verdict in inspect's JSON.
pub fn verdict_lines(a: &Value) -> Vec<String> {
    a["verdict"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

/// The `cuda_needed` row for a SONAME.
pub fn needed<'a>(artifact: &'a Value, soname: &str) -> &'a Value {
    artifact["cuda_needed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["soname"] == soname)
        .unwrap_or_else(|| panic!("{soname} not needed in {artifact:#}"))
}

/// The wheel in `dir` whose file name starts with `prefix`.
pub fn find_wheel(dir: &Path, prefix: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* in {}", dir.display()))
}

/// Extracts members of a wheel into `into` with Python's zipfile (a reader cudist does not share).
pub fn extract(wheel: &Path, members: &[&str], into: &Path) {
    let mut args = vec![wheel.to_str().unwrap(), into.to_str().unwrap()];
    args.extend_from_slice(members);
    python(
        "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor m in sys.argv[3:]: z.extract(m, sys.argv[2])",
        &args,
    );
}

/// A fake library (`lib<stem>.so` with SONAME `soname`, defining `symbol`) in `dir`, and the bytes
/// of an extension linked against it (NEEDED `soname`, no search path).
pub fn ext_needing(dir: &Path, stem: &str, soname: &str, symbol: &str) -> Vec<u8> {
    fake_lib(dir, &format!("lib{stem}.so"), soname, symbol);
    let ext = gcc_shared(
        dir,
        &format!("ext-{stem}.so"),
        None,
        &format!("int {symbol}(void *); int f(void) {{ return {symbol}(0); }}\n"),
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", dir.display()),
            &format!("-l{stem}"),
        ],
    );
    std::fs::read(ext).unwrap()
}

/// The site-packages directory of a venv (`lib/python3.X/site-packages`).
pub fn site_of(venv: &Path) -> PathBuf {
    let py = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("a python3.X directory in the venv");
    py.path().join("site-packages")
}

/// The fenced code block of `lang` in the repo's `doc` (`docs/recipes.md`) whose first line is
/// `first_line`: the tests run the recipes of the docs as they are written there.
pub fn doc_block(doc: &str, lang: &str, first_line: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
    let fence = format!("```{lang}\n{first_line}\n");
    let start = text
        .find(&fence)
        .unwrap_or_else(|| panic!("no {fence:?} block in {doc}"))
        + lang.len()
        + 4;
    let len = text[start..].find("```").unwrap();
    text[start..start + len].to_string()
}

/// The tag `auditwheel show` reports: "consistent with" when no external library is missing,
/// else the tag the symbol versions "constrain" it to.
pub fn auditwheel_tag(auditwheel: &Path, wheel: &Path) -> (String, Option<String>) {
    let o = Command::new(auditwheel)
        .arg("show")
        .arg(wheel)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).replace('\n', " ");
    let grab = |after: &str| {
        text.split(after)
            .nth(1)
            .and_then(|r| r.split('"').nth(1))
            .map(str::to_string)
    };
    (
        grab("consistent with the following platform tag:").unwrap_or_else(|| panic!("{text}")),
        grab("constrains the platform tag to"),
    )
}

/// A conda package `myext-1.0-h0_0` written into `dir`, whose `lib/libmyext.so` links cuBLAS and
/// the CUDA runtime (gcc stand-ins built under `work/libs`), with these `depends`.
pub fn conda_package_linking_cublas(work: &Path, dir: &Path, depends: &[&str]) -> PathBuf {
    let libs = work.join("libs");
    fake_lib(&libs, "libcublas.so", "libcublas.so.13", "cublasCreate_v2");
    fake_lib(&libs, "libcudart.so", "libcudart.so.13", "cudaMalloc");
    let ext = gcc_shared(
        &libs,
        "libmyext.so",
        Some("libmyext.so"),
        "int cublasCreate_v2(void *); int cudaMalloc(void *);\nint f(void) { return cublasCreate_v2(0) + cudaMalloc(0); }\n",
        &[
            "-Wl,--no-as-needed",
            &format!("-L{}", libs.display()),
            "-lcublas",
            "-lcudart",
        ],
    );
    let pkg = cudist_conda::NewPackage {
        name: "myext".into(),
        version: "1.0".into(),
        build: "h0_0".into(),
        build_number: 0,
        subdir: cudist_conda::host_subdir().0.into(),
        depends: depends.iter().map(|d| d.to_string()).collect(),
        constrains: vec![],
        license: Some("MIT".into()),
        run_exports: None,
        files: vec![cudist_conda::Entry {
            path: "lib/libmyext.so".into(),
            content: cudist_conda::Content::File(ext),
            known: None,
        }],
        licenses: vec![],
    };
    let opts = cudist_conda::WriteOptions {
        zstd_level: 1,
        timestamp: 1_700_000_000,
        threads: 1,
    };
    std::fs::create_dir_all(dir).unwrap();
    cudist_conda::write_conda(&pkg, dir, &opts).unwrap()
}

/// Asserts that a command `o` of what it ran (`what`) succeeded, showing its output if not.
pub fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `readelf -dW FILE`: the dynamic section as binutils prints it.
pub fn readelf_d(p: &Path) -> String {
    let o = Command::new("readelf").arg("-dW").arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The directory of the cudist binary under test, to put on `PATH` as a build image would.
pub fn cudist_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cudist")).parent().unwrap()
}

/// A venv at `dir`, without pip of its own (`python3 -m venv --without-pip`). Returns its python.
pub fn venv_without_pip(dir: &Path) -> PathBuf {
    ok(
        &Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(dir)
            .output()
            .unwrap(),
        "venv",
    );
    dir.join("bin/python")
}

/// Installs `what` (wheel files or names found in `deps`) into the environment of `python`,
/// offline and without their dependencies, with the pip of the interpreter that runs the tests.
pub fn pip_install_offline(python: &Path, deps: &Path, what: &[&std::ffi::OsStr]) {
    ok(
        &Command::new("python3")
            .args(["-m", "pip", "--python"])
            .arg(python)
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-index",
                "--no-deps",
                "--find-links",
            ])
            .arg(deps)
            .args(what)
            .output()
            .unwrap(),
        "pip install",
    );
}

/// A venv (without pip of its own) at `dir` holding `cupy_wheel`, numpy and cuda-pathfinder from
/// `deps` (no NVIDIA wheel), installed offline. Returns its python.
pub fn cupy_venv(dir: &Path, cupy_wheel: &Path, deps: &Path) -> PathBuf {
    let python = venv_without_pip(dir);
    pip_install_offline(
        &python,
        deps,
        &[
            cupy_wheel.as_os_str(),
            "numpy".as_ref(),
            "cuda-pathfinder".as_ref(),
        ],
    );
    python
}

/// The `.so` files below `site-packages/<under>` that the real `import <module>` maps (read from
/// the process's `/proc/self/maps`), as full paths, sorted.
pub fn mapped_by_import(python: &Path, module: &str, under: &str) -> Vec<String> {
    let o = Command::new(python)
        .args([
            "-c",
            &format!(
                "import {module}\nfor l in open('/proc/self/maps'):\n    p = l.split()[-1]\n    if p.endswith('.so') and '/site-packages/{under}' in p: print(p)"
            ),
        ])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    ok(&o, &format!("import {module}"));
    let mut v: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    v.sort();
    v.dedup();
    v
}

/// Builds extension module `module` (a working one, whose init runs `body` after `decls`:
/// [`py_extension_source`]) with gcc and `args` in `build`, and installs it in `into` under
/// `python`'s extension suffix. Its installed path.
pub fn install_extension(
    build: &Path,
    python: &Path,
    into: &Path,
    module: &str,
    decls: &str,
    body: &str,
    args: &[&str],
) -> PathBuf {
    let built = gcc_shared(
        build,
        &format!("{module}.so"),
        None,
        &py_extension_source(module, decls, body),
        args,
    );
    std::fs::create_dir_all(into).unwrap();
    let path = into.join(format!("{module}{}", ext_suffix(python)));
    std::fs::copy(built, &path).unwrap();
    path
}

/// Copies `files` (path under `root`, source) into an installed tree at `root`, making the
/// directories: the tree a loader oracle then loads from.
pub fn install_files(root: &Path, files: &[(&str, &Path)]) {
    for (rel, src) in files {
        let to = root.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src, &to).unwrap();
    }
}

/// glibc's loader as the oracle: a Python process that loads `paths` in order with ctypes
/// (`RTLD_GLOBAL`, as a package's own loader does), without `LD_LIBRARY_PATH`. It succeeds when
/// every load does.
pub fn ctypes_load(paths: &[&Path]) -> Output {
    Command::new("python3")
        .args([
            "-c",
            "import ctypes, sys\nfor p in sys.argv[1:]:\n    ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n",
        ])
        .args(paths)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap()
}

/// Removes the C sources a build left in `dir` (gcc's helpers write `X.c` beside `X`), so that
/// the directory holds what a package would.
pub fn remove_c_sources(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "c") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
}
