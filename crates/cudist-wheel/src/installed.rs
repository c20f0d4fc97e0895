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
    /// The `.dist-info` directory.
    pub dist_info: PathBuf,
    /// The `RECORD` rows, paths relative to the site-packages directory.
    pub record: Vec<RecordRow>,
}

/// One row of a `RECORD` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    pub path: String,
    /// `sha256=<urlsafe base64>`, or empty (RECORD itself, `.pyc` files).
    pub hash: String,
    pub size: Option<u64>,
}

/// Splits one CSV line of a `RECORD` into its fields (quoted fields may hold commas and `""`).
fn csv_fields(line: &str) -> Vec<String> {
    // RECORD is the only CSV cudist reads: three fields, rarely quoted; a small splitter is
    // clearer than a CSV crate's reader for this.
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// Parses a `RECORD` file.
pub fn parse_record(text: &str) -> Vec<RecordRow> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f = csv_fields(l.trim_end_matches('\r'));
            RecordRow {
                path: f.first().cloned().unwrap_or_default(),
                hash: f.get(1).cloned().unwrap_or_default(),
                size: f.get(2).and_then(|s| s.parse().ok()),
            }
        })
        .collect()
}

/// Formats one `RECORD` row, quoting the path when it needs it.
pub fn record_line(row: &RecordRow) -> String {
    let path = if row.path.contains([',', '"', '\n']) {
        format!("\"{}\"", row.path.replace('"', "\"\""))
    } else {
        row.path.clone()
    };
    let size = row.size.map(|s| s.to_string()).unwrap_or_default();
    format!("{path},{},{size}", row.hash)
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
        let Ok(meta) = std::fs::read_to_string(dist_info.join("METADATA")) else {
            continue;
        };
        let mut name = None;
        let mut version = None;
        for (k, v) in header_fields(&meta) {
            match k.as_str() {
                "name" if name.is_none() => name = Some(v),
                "version" if version.is_none() => version = Some(v),
                _ => {}
            }
        }
        let (Some(name), Some(version)) = (name, version) else {
            continue;
        };
        let record = if read_record {
            std::fs::read_to_string(dist_info.join("RECORD"))
                .map(|t| parse_record(&t))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        out.push(Installed {
            name,
            version,
            dist_info,
            record,
        });
    }
    out.sort_by_key(|d| normalise(&d.name));
    Ok(out)
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
    let text = std::fs::read_to_string(&path)?;
    let have: std::collections::HashSet<String> =
        parse_record(&text).into_iter().map(|r| r.path).collect();
    let mut new = text.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    let mut added = 0;
    for r in rows.iter().filter(|r| !have.contains(&r.path)) {
        new.push_str(&record_line(r));
        new.push('\n');
        added += 1;
    }
    if added > 0 {
        let tmp = dist_info.join(".RECORD.cudist-tmp");
        std::fs::write(&tmp, new)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_rows_round_trip_with_quotes() {
        let text = "nvidia/cu13/lib/libcudart.so.13,sha256=abc,123\n\"odd,name \"\"x\"\".h\",sha256=d,4\nx.dist-info/RECORD,,\n";
        let rows = parse_record(text);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].path, "odd,name \"x\".h");
        assert_eq!(rows[0].size, Some(123));
        assert_eq!(rows[2].size, None);
        let again: String = rows.iter().map(|r| record_line(r) + "\n").collect();
        assert_eq!(again, text);
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
