//! Distributions as installed in a `site-packages` directory: the `.dist-info` directories that
//! pip writes (name and version from `METADATA`, the installed files from `RECORD`).
//!
//! `cudist toolkit` reads the CUDA wheels of an environment this way, so it knows which package
//! put each file there, and `cudist repair --build-env` reads the versions it was built against.

use std::io;
use std::path::{Path, PathBuf};

use crate::header_fields;

/// One installed distribution.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The name as `METADATA` spells it.
    pub name: String,
    pub version: String,
    /// The distributions its `Requires-Dist` names (normalised, markers and extras not
    /// weighed): what the package says it needs.
    pub requires: Vec<String>,
    /// The requirements its `Requires-Dist` makes only under an extra (`cuda-toolkit[cublas,
    /// cufft]==12.*; extra == "ctk"`), for advice such as `pip install "cupy-cuda12x[ctk]"`.
    pub requires_in_extra: Vec<ExtraRequirement>,
    /// The `.dist-info` directory.
    pub dist_info: PathBuf,
    /// The `RECORD` rows, paths relative to the site-packages directory.
    pub record: Vec<RecordRow>,
}

pub use crate::record::RecordRow;

/// A `Requires-Dist` entry that applies only with one of the distribution's extras.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraRequirement {
    /// The distribution required (normalised).
    pub name: String,
    /// The extras asked of it (`cuda-toolkit[cublas,cufft]`: `cublas`, `cufft`), normalised.
    pub with: Vec<String>,
    /// The extra of this distribution that brings it (`ctk`).
    pub extra: String,
}

/// Parses a `RECORD` file (a row that is not CSV ends the rows read).
pub fn parse_record(text: &str) -> Vec<RecordRow> {
    crate::record::parse(text.as_bytes()).unwrap_or_default()
}

/// Every distribution installed in `site` (sorted by name). Unreadable or incomplete `.dist-info`
/// directories are skipped, as pip skips them; a missing `site` is an error.
pub fn scan(site: &Path) -> io::Result<Vec<Installed>> {
    scan_with(site, true)
}

/// [`scan`] without reading the `RECORD` files (their `record` is empty): for questions about
/// names and versions only.
pub fn scan_names(site: &Path) -> io::Result<Vec<Installed>> {
    scan_with(site, false)
}

fn scan_with(site: &Path, read_record: bool) -> io::Result<Vec<Installed>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(site)? {
        let e = e?;
        let dir_name = e.file_name().to_string_lossy().into_owned();
        if !dir_name.ends_with(".dist-info") {
            continue;
        }
        let dist_info = e.path();
        let Ok(meta) = cudist_fs::read_bounded(&dist_info.join("METADATA"), cudist_fs::SMALL_FILE)
        else {
            continue;
        };
        let meta = String::from_utf8_lossy(&meta);
        let mut name = None;
        let mut version = None;
        let mut requires = Vec::new();
        let mut requires_in_extra = Vec::new();
        for (k, v) in header_fields(&meta) {
            match k.as_str() {
                "name" if name.is_none() => name = Some(v),
                "version" if version.is_none() => version = Some(v),
                "requires-dist" => {
                    let end = v
                        .find(|c: char| !(c.is_alphanumeric() || "-_.".contains(c)))
                        .unwrap_or(v.len());
                    requires.push(normalise(&v[..end]));
                    if let Some(extra) = v.split_once(';').and_then(|(_, m)| marker_extra(m)) {
                        let with = v[end..]
                            .trim_start()
                            .strip_prefix('[')
                            .and_then(|r| r.split_once(']'))
                            .map(|(inside, _)| inside.split(',').map(normalise).collect())
                            .unwrap_or_default();
                        requires_in_extra.push(ExtraRequirement {
                            name: normalise(&v[..end]),
                            with,
                            extra,
                        });
                    }
                }
                _ => {}
            }
        }
        let (Some(name), Some(version)) = (name, version) else {
            continue;
        };
        let record = if read_record {
            cudist_fs::read_bounded(&dist_info.join("RECORD"), cudist_fs::SMALL_FILE)
                .ok()
                .and_then(|t| crate::record::parse(&t).ok())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        out.push(Installed {
            name,
            version,
            requires,
            requires_in_extra,
            dist_info,
            record,
        });
    }
    out.sort_by_key(|d| normalise(&d.name));
    Ok(out)
}

/// One entry point an installed distribution registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPoint {
    /// The distribution's name as `METADATA` spells it.
    pub dist: String,
    /// The entry point's name (`xla_cuda13`).
    pub name: String,
    /// The module its object is in (`jax_plugins.xla_cuda13` for
    /// `jax_plugins.xla_cuda13:initialize`).
    pub module: String,
}

/// The entry points of `group` that the distributions installed in `site` register, in the
/// order of [`scan_names`]. The file is `entry_points.txt` in the `.dist-info` directory, in the
/// format of the PyPA entry points specification
/// (packaging.python.org/en/latest/specifications/entry-points/): INI sections named by group,
/// `name = module[:attr] [extras]` lines, `#` and `;` comments. A line that is not one is
/// skipped (importlib.metadata raises on it, and the package's own discovery then fails); an
/// unreadable file gives none.
pub fn entry_points(site: &Path, group: &str) -> io::Result<Vec<EntryPoint>> {
    let mut out = Vec::new();
    for d in scan_names(site)? {
        let Ok(text) =
            cudist_fs::read_bounded(&d.dist_info.join("entry_points.txt"), cudist_fs::SMALL_FILE)
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let mut section = "";
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = s.trim();
                continue;
            }
            if section != group {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                continue;
            };
            let module = value
                .split(['[', ':'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let valid = !module.is_empty()
                && module
                    .split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'));
            if valid {
                out.push(EntryPoint {
                    dist: d.name.clone(),
                    name: name.trim().to_string(),
                    module,
                });
            }
        }
    }
    Ok(out)
}

/// The extra a `Requires-Dist` marker names (`extra == "ctk"`, `python_version >= "3.9" and
/// extra == 'ctk'`), normalised. Only the `extra == <quoted>` form is read: the form every build
/// backend writes (PEP 685).
fn marker_extra(marker: &str) -> Option<String> {
    let at = marker.find("extra")?;
    let rest = marker[at + 5..]
        .trim_start()
        .strip_prefix("==")?
        .trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &rest[1..];
    let end = body.find(quote)?;
    let name = normalise(&body[..end]);
    (!name.is_empty()).then_some(name)
}

/// The PEP 503 normal form of a distribution name (`Nvidia_CUDA.Runtime` → `nvidia-cuda-runtime`):
/// runs of `-`, `_`, `.` become one `-`, letters are lowercased; separators at either end, which
/// no valid name has, are dropped.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Appends rows to a distribution's `RECORD` (so `pip uninstall` removes the files too); rows
/// whose path is already listed are skipped. Written to a temporary file and renamed.
pub fn append_record(dist_info: &Path, rows: &[RecordRow]) -> io::Result<usize> {
    let path = dist_info.join("RECORD");
    let mut bytes = cudist_fs::read_bounded(&path, cudist_fs::SMALL_FILE)
        .map_err(cudist_fs::ReadError::into_io)?;
    let have: std::collections::HashSet<String> = crate::record::parse(&bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
        .into_iter()
        .map(|r| r.path)
        .collect();
    let new: Vec<RecordRow> = rows
        .iter()
        .filter(|r| !have.contains(&r.path))
        .cloned()
        .collect();
    if !new.is_empty() {
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend(crate::record::write(&new));
        // An exclusive temporary beside RECORD, renamed over it: never written through a link.
        cudist_fs::write_atomic(&path, &bytes, Some(0o644))?;
    }
    Ok(new.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extra_of_a_marker() {
        assert_eq!(marker_extra(" extra == \"ctk\"").as_deref(), Some("ctk"));
        assert_eq!(
            marker_extra(" python_version >= '3.9' and extra == 'CUDA_12'").as_deref(),
            Some("cuda-12")
        );
        assert_eq!(marker_extra(" platform_system == \"Linux\""), None);
        assert_eq!(marker_extra(" extra == "), None);
        assert_eq!(marker_extra(" extra == \"unterminated"), None);
    }

    /// The entry points read equal importlib.metadata's for the same site, on a file with
    /// comments, extras, attributes, spaces and other groups.
    #[test]
    fn entry_points_are_those_importlib_metadata_reads() {
        let d = tempfile::tempdir().unwrap();
        for (dist, eps) in [
            (
                "jax_cuda13_pjrt-0.10.2",
                "[jax_plugins]\nxla_cuda13 = jax_plugins.xla_cuda13\n",
            ),
            (
                "other-1.0",
                "# c\n[console_scripts]\nrun = other.cli:main\n\n[jax_plugins]\n# c\nmine = other.plugin:init [gpu]\n  spaced  =  other.sp  \n",
            ),
        ] {
            let di = d.path().join(format!("{dist}.dist-info"));
            std::fs::create_dir(&di).unwrap();
            let (name, version) = dist.rsplit_once('-').unwrap();
            std::fs::write(
                di.join("METADATA"),
                format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
            )
            .unwrap();
            std::fs::write(di.join("entry_points.txt"), eps).unwrap();
        }
        let mut got: Vec<(String, String)> = entry_points(d.path(), "jax_plugins")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.module))
            .collect();
        got.sort();
        let o = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, importlib.metadata as m\nfor e in sorted(m.entry_points(group='jax_plugins', path=[sys.argv[1]]) if sys.version_info >= (3, 12) else [e for d in m.distributions(path=[sys.argv[1]]) for e in d.entry_points if e.group == 'jax_plugins'], key=lambda e: e.name): print(e.name, e.module)",
            ])
            .arg(d.path())
            .output()
            .expect("python3 runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let want: Vec<(String, String)> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(want.len(), 3, "{want:?}");
    }

    #[test]
    fn scan_reads_names_versions_records_and_appends() {
        let d = tempfile::tempdir().unwrap();
        let di = d.path().join("nvidia_curand-10.4.5.25.dist-info");
        std::fs::create_dir(&di).unwrap();
        std::fs::write(
            di.join("METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-curand\nVersion: 10.4.5.25\n\nbody: x\n",
        )
        .unwrap();
        std::fs::write(
            di.join("RECORD"),
            "nvidia/cu13/lib/libcurand.so.10,sha256=x,10\n",
        )
        .unwrap();
        // Incomplete dist-info directories are skipped.
        std::fs::create_dir(d.path().join("broken-1.0.dist-info")).unwrap();
        let got = scan(d.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].name.as_str(), got[0].version.as_str()),
            ("nvidia-curand", "10.4.5.25")
        );
        assert_eq!(got[0].record[0].path, "nvidia/cu13/lib/libcurand.so.10");
        let row = RecordRow {
            path: "nvidia/cu13/lib/libcurand.so".into(),
            hash: String::new(),
            size: None,
        };
        assert_eq!(
            append_record(&di, &[row.clone(), got[0].record[0].clone()]).unwrap(),
            1
        );
        assert_eq!(append_record(&di, &[row]).unwrap(), 0);
        assert_eq!(scan(d.path()).unwrap()[0].record.len(), 2);
        assert!(scan(&d.path().join("missing")).is_err());
        assert_eq!(normalise("Nvidia_CUDA..Runtime"), "nvidia-cuda-runtime");
    }
}
