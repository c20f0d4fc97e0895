//! Finding what `import NAME` would import, without running any of the package's code.
//!
//! `importlib.util.find_spec("pkg.sub")` imports `pkg` (runs `pkg/__init__.py`) to find `sub`, and
//! an interpreter started normally runs the `import` lines of every `.pth` file in site-packages.
//! doctor promises to load nothing, so the interpreter is asked only for its search path, with
//! `-S` (the `site` module's start-up work not done), and the rest is done here, as `site` and the
//! path finder do it: the user and site directories are appended with the path lines of their
//! `.pth` files (the `import` lines are not run), then each entry is searched for a package
//! (`NAME/__init__.py`), a module (`NAME.py`, `NAME.<abi>.so`) or, failing both, a namespace
//! package (a directory), one dotted part at a time.
//!
//! What this cannot see: packages that an import hook installed by a `.pth` `import` line would
//! find (some editable installs), and `__path__` changes made by an `__init__.py` at run time.

use std::path::{Path, PathBuf};

use crate::bail;
use crate::error::{Result, ResultExt};

/// Asks `python -S` for `sys.path` and the site directories `site` would add, in its order, as
/// JSON. `site.venv()` cannot be called for this (it processes the venv's `.pth` files), so its
/// reading of `pyvenv.cfg` is done here: the venv's site-packages first, then the user site
/// (unless the venv hides it), then the prefixes' site-packages. Like `site.venv()`, it points
/// `sys.prefix` at the venv first: under `-S` the prefix is still the base interpreter's, and
/// Debian's and Ubuntu's `site.getsitepackages` list a prefix's `site-packages` only when
/// `sys.prefix != sys.base_prefix` (their own layout is `dist-packages`), so a venv made from the
/// system Python would have no site-packages at all.
const SCRIPT: &str = r#"
import json, os, site, sys
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
venv = os.path.dirname(exe_dir)
conf = next((c for c in (os.path.join(exe_dir, 'pyvenv.cfg'), os.path.join(venv, 'pyvenv.cfg')) if os.path.isfile(c)), None)
prefixes = list(site.PREFIXES)
user = site.check_enableusersite()
dirs = []
if conf:
    system = 'true'
    with open(conf, encoding='utf-8') as f:
        for line in f:
            k, sep, v = line.partition('=')
            if sep and k.strip().lower() == 'include-system-site-packages':
                system = v.strip().lower()
    sys.prefix = sys.exec_prefix = venv
    dirs += site.getsitepackages([venv])
    if system == 'true':
        prefixes.insert(0, venv)
    else:
        prefixes, user = [venv], False
if user:
    dirs.append(site.getusersitepackages())
dirs += site.getsitepackages(prefixes)
print(json.dumps({"path": sys.path, "sites": dirs}))
"#;

/// Starts asking the interpreter for its search path ([`search_path`] collects the answer), so it
/// runs while doctor reads the machine.
pub fn start(python: &Path) -> Result<std::process::Child> {
    std::process::Command::new(python)
        .args(["-S", "-c", SCRIPT])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {} to read its search path", python.display()))
}

/// The interpreter's module search path as `import` sees it after start-up.
pub fn search_path(child: std::process::Child, python: &Path) -> Result<Vec<PathBuf>> {
    let out = child
        .wait_with_output()
        .with_context(|| format!("cannot run {} to read its search path", python.display()))?;
    if !out.status.success() {
        bail!(
            "{} could not report its search path: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    #[derive(serde::Deserialize)]
    struct Paths {
        path: Vec<String>,
        sites: Vec<String>,
    }
    let p: Paths = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{} answered something else than JSON", python.display()))?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut path: Vec<PathBuf> = p
        .path
        .iter()
        .map(|e| if e.is_empty() { cwd.clone() } else { e.into() })
        .collect();
    for dir in &p.sites {
        add_site_dir(Path::new(dir), &mut path);
    }
    Ok(path)
}

/// What `site.addsitedir` does, less running code: the directory, then the path lines of its
/// `.pth` files in name order (existing directories only, each once).
fn add_site_dir(dir: &Path, path: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    if !path.iter().any(|p| p == dir) {
        path.push(dir.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut pth: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pth"))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    pth.sort();
    for f in pth {
        let Ok(text) = cudist_fs::read_bounded(&f, cudist_fs::SMALL_FILE) else {
            continue;
        };
        for line in String::from_utf8_lossy(&text).lines() {
            let line = line.trim_end();
            // `import` lines are code: site runs them, doctor does not.
            if line.is_empty()
                || line.starts_with('#')
                || line.starts_with("import ")
                || line.starts_with("import\t")
            {
                continue;
            }
            let p = dir.join(line);
            if p.is_dir() && !path.contains(&p) {
                path.push(p);
            }
        }
    }
}

/// Where `import name` would find `name` (a dotted name) on `path`: a package's directory, or a
/// module's file.
pub fn find(path: &[PathBuf], name: &str) -> Option<PathBuf> {
    let mut locations: Vec<PathBuf> = path.to_vec();
    let mut found = None;
    for part in name.split('.') {
        if part.is_empty() || part.contains('/') {
            return None;
        }
        let (hit, namespace) = find_in(&locations, part);
        match hit {
            Some(Found::Package(dir)) => {
                locations = vec![dir.clone()];
                found = Some(dir);
            }
            Some(Found::Module(file)) => {
                locations = Vec::new();
                found = Some(file);
            }
            None if !namespace.is_empty() => {
                found = Some(namespace[0].clone());
                locations = namespace;
            }
            None => return None,
        }
    }
    found
}

enum Found {
    Package(PathBuf),
    Module(PathBuf),
}

/// The first location holding `part` as a regular package or a module, and the directories that
/// would make it a namespace package (used when no location holds either).
fn find_in(locations: &[PathBuf], part: &str) -> (Option<Found>, Vec<PathBuf>) {
    let mut namespace = Vec::new();
    for loc in locations {
        let dir = loc.join(part);
        if dir.join("__init__.py").is_file() || has_init_extension(&dir) {
            return (Some(Found::Package(dir)), namespace);
        }
        if let Some(m) = module_file(loc, part) {
            return (Some(Found::Module(m)), namespace);
        }
        if dir.is_dir() {
            namespace.push(dir);
        }
    }
    (None, namespace)
}

/// A package whose `__init__` is an extension module (`__init__.cpython-311-x86_64-linux-gnu.so`).
fn has_init_extension(dir: &Path) -> bool {
    module_file(dir, "__init__").is_some_and(|p| p.extension().is_some_and(|x| x == "so"))
}

/// `part.py`, `part.<tag>.so` or `part.so` in `dir`, in the order the path finder tries them
/// (extension modules first).
fn module_file(dir: &Path, part: &str) -> Option<PathBuf> {
    let mut ext: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.strip_prefix(part).is_some_and(|rest| {
                rest == ".so" || (rest.starts_with('.') && rest.ends_with(".so"))
            })
        })
        .filter(|p| p.is_file())
        .collect();
    ext.sort();
    if let Some(e) = ext.into_iter().next() {
        return Some(e);
    }
    let py = dir.join(format!("{part}.py"));
    py.is_file().then_some(py)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packages_modules_namespaces_and_pth_paths() {
        let d = tempfile::tempdir().unwrap();
        let site = d.path().join("site");
        let extra = d.path().join("extra");
        std::fs::create_dir_all(site.join("pkg/sub")).unwrap();
        std::fs::write(site.join("pkg/__init__.py"), "raise SystemExit('ran')").unwrap();
        std::fs::write(site.join("pkg/sub/__init__.py"), "").unwrap();
        std::fs::write(site.join("pkg/mod.cpython-311-x86_64-linux-gnu.so"), "").unwrap();
        std::fs::write(site.join("single.py"), "").unwrap();
        std::fs::create_dir_all(site.join("ns/part")).unwrap();
        std::fs::create_dir_all(extra.join("fromext")).unwrap();
        std::fs::write(extra.join("fromext/__init__.py"), "").unwrap();
        std::fs::write(
            site.join("a.pth"),
            format!(
                "# comment\nimport os; os.system('touch /tmp/pwned')\n{}\n",
                extra.display()
            ),
        )
        .unwrap();
        let mut path = Vec::new();
        add_site_dir(&site, &mut path);
        assert_eq!(path, vec![site.clone(), extra.clone()]);
        assert_eq!(find(&path, "pkg"), Some(site.join("pkg")));
        assert_eq!(find(&path, "pkg.sub"), Some(site.join("pkg/sub")));
        assert_eq!(
            find(&path, "pkg.mod"),
            Some(site.join("pkg/mod.cpython-311-x86_64-linux-gnu.so"))
        );
        assert_eq!(find(&path, "single"), Some(site.join("single.py")));
        assert_eq!(find(&path, "ns.part"), Some(site.join("ns/part")));
        assert_eq!(find(&path, "fromext"), Some(extra.join("fromext")));
        assert_eq!(find(&path, "missing"), None);
        assert_eq!(find(&path, "single.x"), None);
    }
}
