//! Rewriting a wheel: untouched members are copied raw (never recompressed), changed and added
//! members are compressed, `RECORD` is regenerated, and the result is written to a temporary file
//! in the output directory and renamed into place, so a failure leaves nothing half-written.
//!
//! Output is deterministic: members keep their order (additions follow, sorted), changed members
//! keep their timestamps, added ones take `SOURCE_DATE_EPOCH` (or the `WHEEL` file's time).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Cursor, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use crate::{Wheel, WheelError};

/// How hard to compress changed and added members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    Fast,
    #[default]
    Default,
    Best,
}

impl Compression {
    fn level(self) -> i64 {
        match self {
            Compression::Fast => 1,
            Compression::Default => 6,
            Compression::Best => 9,
        }
    }
}

/// What happens to a wheel.
#[derive(Debug, Default)]
pub struct Rewrite {
    /// Members whose content changes: name → new bytes.
    pub replace: HashMap<String, Vec<u8>>,
    /// Members to drop.
    pub remove: Vec<String>,
    /// Members to add: name → (bytes, unix mode).
    pub add: BTreeMap<String, (Vec<u8>, u32)>,
    /// Requirements appended to METADATA as `Requires-Dist:` lines.
    pub requires_dist: Vec<String>,
    /// Extras appended to METADATA as `Provides-Extra:` lines (when not already there).
    pub provides_extra: Vec<String>,
    pub compression: Compression,
}

/// What was written.
#[derive(Debug)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub members: usize,
}

/// The `RECORD` hash of some bytes: `sha256=` and the urlsafe base64 digest without padding.
pub fn record_hash(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

fn io(e: std::io::Error) -> WheelError {
    WheelError::Io(e)
}

fn zip_err(e: zip::result::ZipError) -> WheelError {
    WheelError::Zip(e)
}

/// Adds requirement and extra lines to METADATA's header, after its last header line of the same
/// kind (or at the end of the header).
pub fn edit_metadata(text: &str, requires: &[String], extras: &[String]) -> String {
    let (head, body) = match text.find("\n\n") {
        Some(i) => (&text[..i + 1], &text[i + 1..]),
        None => (text, ""),
    };
    let mut lines: Vec<String> = head.lines().map(str::to_string).collect();
    let has = |lines: &[String], key: &str, v: &str| {
        lines.iter().any(|l| {
            l.split_once(':')
                .is_some_and(|(k, val)| k.eq_ignore_ascii_case(key) && val.trim() == v)
        })
    };
    for (key, values) in [("Provides-Extra", extras), ("Requires-Dist", requires)] {
        for v in values {
            if has(&lines, key, v) {
                continue;
            }
            let at = lines
                .iter()
                .rposition(|l| {
                    l.split_once(':')
                        .is_some_and(|(k, _)| k.eq_ignore_ascii_case(key))
                })
                .map_or(lines.len(), |i| i + 1);
            lines.insert(at, format!("{key}: {v}"));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(body);
    out
}

/// The time stamp for added members: `SOURCE_DATE_EPOCH` if set, else `fallback`.
fn added_time(fallback: DateTime) -> DateTime {
    let Some(epoch) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    else {
        return fallback;
    };
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm); zip needs >= 1980.
    let secs = epoch.max(315_532_800);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    DateTime::from_date_and_time(
        year.min(2107) as u16,
        month as u8,
        day as u8,
        (rem / 3600) as u8,
        (rem % 3600 / 60) as u8,
        (rem % 60) as u8,
    )
    .unwrap_or(fallback)
}

/// Writes `wheel` with `rewrite` applied to `out` (a file path; its directory must exist).
pub fn rewrite(wheel: &Wheel, rw: &Rewrite, out: &Path) -> Result<Written, WheelError> {
    let md = wheel.metadata()?;
    let record_name = format!("{}/RECORD", md.dist_info);
    let metadata_name = format!("{}/METADATA", md.dist_info);
    let wheel_name = format!("{}/WHEEL", md.dist_info);
    let dir = out.parent().unwrap_or(Path::new("."));
    let tmp = tempfile_in(dir, out)?;
    let result = write_into(wheel, rw, &tmp.1, &record_name, &metadata_name, &wheel_name);
    match result {
        Ok(members) => {
            std::fs::rename(&tmp.0, out).map_err(io)?;
            let bytes = std::fs::metadata(out).map_err(io)?.len();
            Ok(Written {
                path: out.to_path_buf(),
                bytes,
                members,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp.0);
            Err(e)
        }
    }
}

/// A new temporary file beside `out`.
fn tempfile_in(dir: &Path, out: &Path) -> Result<(PathBuf, File), WheelError> {
    let base = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for i in 0..1000u32 {
        let p = dir.join(format!(".{base}.{}.{i}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(e)),
        }
    }
    Err(io(std::io::Error::other("no temporary file name is free")))
}

fn write_into(
    wheel: &Wheel,
    rw: &Rewrite,
    file: &File,
    record_name: &str,
    metadata_name: &str,
    wheel_name: &str,
) -> Result<usize, WheelError> {
    let mut zw = ZipWriter::new(BufWriter::with_capacity(
        1 << 20,
        file.try_clone().map_err(io)?,
    ));
    let mut records: Vec<String> = Vec::new();
    let old_record: HashMap<String, String> = wheel
        .members()
        .iter()
        .find(|m| m.name == record_name)
        .map(|m| wheel.read_member(m.index))
        .transpose()?
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|l| {
                    l.split_once(',')
                        .map(|(n, _)| (n.to_string(), l.to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut archive = wheel.archive.clone();
    // Changed members are compressed in parallel, each into a one-entry zip in memory that is then
    // raw-copied into the output: the writer itself only copies bytes.
    let level = rw.compression.level();
    let mut jobs: Vec<(String, &[u8], DateTime, u32)> = Vec::new();
    for m in wheel.members() {
        if let Some(bytes) = rw.replace.get(&m.name) {
            let f = archive.by_index_raw(m.index).map_err(zip_err)?;
            jobs.push((
                m.name.clone(),
                bytes.as_slice(),
                f.last_modified().unwrap_or_default(),
                f.unix_mode().unwrap_or(0o644),
            ));
        }
    }
    let compressed: HashMap<String, Vec<u8>> = jobs
        .into_par_iter()
        .with_max_len(1)
        .map(|(name, bytes, time, mode)| {
            single_entry_zip(&name, bytes, time, mode, level).map(|z| (name, z))
        })
        .collect::<Result<_, WheelError>>()?;
    let mut fallback_time = DateTime::default();
    let mut count = 0;
    for m in wheel.members() {
        if m.name == record_name || rw.remove.contains(&m.name) {
            continue;
        }
        count += 1;
        let f = archive.by_index_raw(m.index).map_err(zip_err)?;
        let time = f.last_modified().unwrap_or_default();
        if m.name == wheel_name {
            fallback_time = time;
        }
        let mode = f.unix_mode().unwrap_or(0o644);
        drop(f);
        if let (Some(zipped), Some(bytes)) = (compressed.get(&m.name), rw.replace.get(&m.name)) {
            let mut one = ZipArchive::new(Cursor::new(zipped.as_slice())).map_err(zip_err)?;
            zw.raw_copy_file(one.by_index_raw(0).map_err(zip_err)?)
                .map_err(zip_err)?;
            records.push(format!("{},{},{}", m.name, record_hash(bytes), bytes.len()));
            continue;
        }
        let new_bytes = if m.name == metadata_name
            && !(rw.requires_dist.is_empty() && rw.provides_extra.is_empty())
        {
            let text = String::from_utf8_lossy(&wheel.read_member(m.index)?).into_owned();
            Some(edit_metadata(&text, &rw.requires_dist, &rw.provides_extra).into_bytes())
        } else {
            None
        };
        match new_bytes {
            Some(bytes) => {
                let opts = SimpleFileOptions::default()
                    .compression_method(CompressionMethod::Deflated)
                    .compression_level(Some(rw.compression.level()))
                    .last_modified_time(time)
                    .unix_permissions(mode)
                    .large_file(bytes.len() as u64 >= u32::MAX as u64);
                zw.start_file(m.name.as_str(), opts).map_err(zip_err)?;
                zw.write_all(&bytes).map_err(io)?;
                records.push(format!(
                    "{},{},{}",
                    m.name,
                    record_hash(&bytes),
                    bytes.len()
                ));
            }
            None => {
                let f = archive.by_index_raw(m.index).map_err(zip_err)?;
                zw.raw_copy_file(f).map_err(zip_err)?;
                records.push(match old_record.get(&m.name) {
                    Some(line) if !m.is_dir => line.clone(),
                    _ if m.is_dir => continue,
                    // No RECORD line to carry over: hash the member now.
                    _ => {
                        let bytes = wheel.read_member(m.index)?;
                        format!("{},{},{}", m.name, record_hash(&bytes), bytes.len())
                    }
                });
            }
        }
    }
    let time = added_time(fallback_time);
    for (name, (bytes, mode)) in &rw.add {
        count += 1;
        let opts = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(rw.compression.level()))
            .last_modified_time(time)
            .unix_permissions(*mode);
        zw.start_file(name.as_str(), opts).map_err(zip_err)?;
        zw.write_all(bytes).map_err(io)?;
        records.push(format!("{name},{},{}", record_hash(bytes), bytes.len()));
    }
    records.push(format!("{record_name},,"));
    let record = records.join("\n") + "\n";
    let opts = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(rw.compression.level()))
        .last_modified_time(fallback_time)
        .unix_permissions(0o644);
    zw.start_file(record_name, opts).map_err(zip_err)?;
    zw.write_all(record.as_bytes()).map_err(io)?;
    count += 1;
    let mut w = zw.finish().map_err(zip_err)?;
    w.flush().map_err(io)?;
    w.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    Ok(count)
}

/// `bytes` deflated as the only member of an in-memory zip (compressed on the calling thread).
fn single_entry_zip(
    name: &str,
    bytes: &[u8],
    time: DateTime,
    mode: u32,
    level: i64,
) -> Result<Vec<u8>, WheelError> {
    let mut zw = ZipWriter::new(Cursor::new(Vec::with_capacity(bytes.len() / 2 + 1024)));
    let opts = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(level))
        .last_modified_time(time)
        .unix_permissions(mode)
        .large_file(bytes.len() as u64 >= u32::MAX as u64);
    zw.start_file(name, opts).map_err(zip_err)?;
    zw.write_all(bytes).map_err(io)?;
    Ok(zw.finish().map_err(zip_err)?.into_inner())
}

/// Checks every member against the wheel's RECORD (hash and size): the `--verify` of repair.
/// Returns the mismatches as `(member, problem)`.
pub fn verify_record(wheel: &Wheel) -> Result<Vec<(String, String)>, WheelError> {
    let md = wheel.metadata()?;
    let record_name = format!("{}/RECORD", md.dist_info);
    let Some(rec) = wheel.members().iter().find(|m| m.name == record_name) else {
        return Ok(vec![(record_name, "missing".into())]);
    };
    let text = String::from_utf8_lossy(&wheel.read_member(rec.index)?).into_owned();
    let mut expected: HashMap<String, (String, String)> = HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let mut parts = line.rsplitn(3, ',');
        let size = parts.next().unwrap_or_default().to_string();
        let hash = parts.next().unwrap_or_default().to_string();
        let name = parts.next().unwrap_or_default().to_string();
        expected.insert(name, (hash, size));
    }
    let mut problems = Vec::new();
    for m in wheel
        .members()
        .iter()
        .filter(|m| !m.is_dir && m.name != record_name)
    {
        let Some((hash, size)) = expected.get(&m.name) else {
            problems.push((m.name.clone(), "not listed in RECORD".into()));
            continue;
        };
        let bytes = wheel.read_member(m.index)?;
        let got = record_hash(&bytes);
        if &got != hash {
            problems.push((
                m.name.clone(),
                format!("RECORD says {hash}, content is {got}"),
            ));
        } else if size != &bytes.len().to_string() {
            problems.push((
                m.name.clone(),
                format!("RECORD says {size} bytes, content is {}", bytes.len()),
            ));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_like_pip() {
        // sha256 of the empty string, urlsafe base64 without padding.
        assert_eq!(
            record_hash(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    #[test]
    fn metadata_lines_go_after_their_kind() {
        let md = "Metadata-Version: 2.1\nName: x\nRequires-Dist: numpy\nProvides-Extra: test\n\nLong description.\nRequires-Dist: not a header\n";
        let out = edit_metadata(
            md,
            &["nvidia-cublas-cu12<13,>=12".into(), "numpy".into()],
            &["cuda".into()],
        );
        assert_eq!(
            out,
            "Metadata-Version: 2.1\nName: x\nRequires-Dist: numpy\nRequires-Dist: nvidia-cublas-cu12<13,>=12\nProvides-Extra: test\nProvides-Extra: cuda\n\nLong description.\nRequires-Dist: not a header\n"
        );
    }

    #[test]
    fn source_date_epoch() {
        std::env::set_var("SOURCE_DATE_EPOCH", "1700000000"); // 2023-11-14 22:13:20 UTC
        let t = added_time(DateTime::default());
        std::env::remove_var("SOURCE_DATE_EPOCH");
        assert_eq!(
            (t.year(), t.month(), t.day(), t.hour(), t.minute()),
            (2023, 11, 14, 22, 13)
        );
    }
}
