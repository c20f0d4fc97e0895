//! Rewriting a wheel: untouched members are copied raw (never recompressed), changed and added
//! members are compressed, `RECORD` is regenerated, and the result is written to a temporary file
//! in the output directory and renamed into place, so a failure leaves nothing half-written.
//!
//! Output is deterministic: members keep their order (additions follow, sorted), changed members
//! keep their timestamps, added ones take `SOURCE_DATE_EPOCH` (or the `WHEEL` file's time).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Cursor, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use crate::record::RecordRow;
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
#[derive(Default)]
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
    /// Inflate every member copied raw once, to refuse one whose CRC is wrong (on by default in
    /// `cudist repair`; its cost is in BENCHMARKS.md).
    pub check_copied: bool,
    /// Members the caller has already read whole through this crate (whose CRC was checked as
    /// they were read): not inflated again.
    pub already_checked: std::collections::HashSet<String>,
    /// Members rewritten by [`Rewrite::transform`] as they are written, one at a time: read,
    /// changed in place, compressed into the output. Memory stays near the largest such member,
    /// where [`Rewrite::replace`] holds every new member at once.
    pub transform_members: std::collections::BTreeSet<String>,
    /// The change for `transform_members`: gets the member's name and bytes, changes the bytes;
    /// an error stops the rewrite (and nothing is written).
    pub transform: Option<Transform>,
}

/// A change applied to a member's bytes as it is written ([`Rewrite::transform`]).
/// The bytes are in memory, or in a temporary file for a member larger than the memory budget.
pub type Transform = Box<dyn Fn(&str, &mut cudist_fs::Buf) -> Result<(), String> + Sync>;

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

/// An error of the archive being written (never the input's).
fn write_zip(e: zip::result::ZipError) -> WheelError {
    WheelError::Write(match e {
        zip::result::ZipError::Io(e) => e,
        e => std::io::Error::other(e),
    })
}

fn zip_err(e: zip::result::ZipError) -> WheelError {
    WheelError::Zip(e)
}

/// Adds requirement and extra lines to METADATA's header, after its last header line of the same
/// kind (or at the end of the header). Every other byte is kept as it is: a METADATA that is not
/// UTF-8, or has `\r\n` line ends, keeps them.
pub fn edit_metadata(text: &[u8], requires: &[String], extras: &[String]) -> Vec<u8> {
    let head_end = text
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| i + 1)
        .or_else(|| {
            text.windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|i| i + 2)
        })
        .unwrap_or(text.len());
    let (head, body) = text.split_at(head_end);
    let crlf = head.windows(2).any(|w| w == b"\r\n");
    let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    // Header lines without their line ends, as bytes.
    let mut lines: Vec<Vec<u8>> = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
        .collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let key_of = |l: &[u8]| -> Option<String> {
        let colon = l.iter().position(|b| *b == b':')?;
        Some(
            String::from_utf8_lossy(&l[..colon])
                .trim()
                .to_ascii_lowercase(),
        )
    };
    let value_of = |l: &[u8]| -> Vec<u8> {
        let colon = l.iter().position(|b| *b == b':').unwrap_or(l.len());
        l.get(colon + 1..).unwrap_or_default().trim_ascii().to_vec()
    };
    for (key, values) in [("Provides-Extra", extras), ("Requires-Dist", requires)] {
        let lower = key.to_ascii_lowercase();
        for v in values {
            if lines
                .iter()
                .any(|l| key_of(l).as_deref() == Some(&lower) && value_of(l) == v.as_bytes())
            {
                continue;
            }
            let at = lines
                .iter()
                .rposition(|l| key_of(l).as_deref() == Some(&lower))
                .map_or(lines.len(), |i| i + 1);
            lines.insert(at, format!("{key}: {v}").into_bytes());
        }
    }
    let mut out = lines.join(eol);
    out.extend_from_slice(eol);
    out.extend_from_slice(body);
    out
}

/// The time stamp for added members: `SOURCE_DATE_EPOCH` if set, else `fallback`.
fn added_time(fallback: DateTime) -> DateTime {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .and_then(zip_time)
        .unwrap_or(fallback)
}

/// The zip time stamp (a civil time, written as UTC) of `epoch` seconds since 1970, clamped to
/// the years zip can hold (1980–2107). Shared with the conda writer, whose `.conda` is a zip too.
pub fn zip_time(epoch: i64) -> Option<DateTime> {
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
    .ok()
}

/// Writes `wheel` with `rewrite` applied to `out` (a file path; its directory must exist),
/// through an exclusive temporary beside it that is renamed into place only when complete.
pub fn rewrite(wheel: &Wheel, rw: &Rewrite, out: &Path) -> Result<Written, WheelError> {
    let dist_info = wheel.dist_info()?;
    let record_name = format!("{dist_info}/RECORD");
    let metadata_name = format!("{dist_info}/METADATA");
    let wheel_name = format!("{dist_info}/WHEEL");
    for name in rw.add.keys() {
        cudist_fs::member_name(name).map_err(WheelError::UnsafeName)?;
        if wheel.members().iter().any(|m| &m.name == name) && !rw.remove.contains(name) {
            return Err(WheelError::Duplicate { name: name.clone() });
        }
    }
    let mut tmp = cudist_fs::AtomicFile::new(out).map_err(WheelError::Write)?;
    let members = write_into(
        wheel,
        rw,
        &mut tmp,
        &record_name,
        &metadata_name,
        &wheel_name,
    )?;
    tmp.commit().map_err(WheelError::Write)?;
    let bytes = std::fs::metadata(out).map_err(io)?.len();
    Ok(Written {
        path: out.to_path_buf(),
        bytes,
        members,
    })
}

fn write_into(
    wheel: &Wheel,
    rw: &Rewrite,
    file: &mut cudist_fs::AtomicFile,
    record_name: &str,
    metadata_name: &str,
    wheel_name: &str,
) -> Result<usize, WheelError> {
    let mut zw = ZipWriter::new(BufWriter::with_capacity(1 << 20, file));
    match write_members(wheel, rw, &mut zw, record_name, metadata_name, wheel_name) {
        Ok(count) => {
            let mut w = zw.finish().map_err(write_zip)?;
            w.flush().map_err(WheelError::Write)?;
            Ok(count)
        }
        Err(e) => {
            // The temporary is removed by the caller; dropped, the writer would try to finish
            // the archive into it (and print why it could not). Only its buffer is lost.
            std::mem::forget(zw);
            Err(e)
        }
    }
}

fn write_members(
    wheel: &Wheel,
    rw: &Rewrite,
    zw: &mut ZipWriter<BufWriter<&mut cudist_fs::AtomicFile>>,
    record_name: &str,
    metadata_name: &str,
    wheel_name: &str,
) -> Result<usize, WheelError> {
    let mut records: Vec<RecordRow> = Vec::new();
    let old_record: HashMap<String, RecordRow> =
        match wheel.members().iter().find(|m| m.name == record_name) {
            Some(m) if m.size > cudist_fs::SMALL_FILE => {
                return Err(WheelError::Layout(format!(
                    "{record_name} is {} bytes, over the {}-byte limit for metadata files",
                    m.size,
                    cudist_fs::SMALL_FILE
                )))
            }
            Some(m) => crate::record::parse(&wheel.read_member(m.index)?)
                .map_err(WheelError::Record)?
                .into_iter()
                .map(|r| (r.path.clone(), r))
                .collect(),
            None => HashMap::new(),
        };
    let row = |name: &str, bytes: &[u8]| RecordRow {
        path: name.to_string(),
        hash: record_hash(bytes),
        size: Some(bytes.len() as u64),
    };
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
    // Members copied raw (never recompressed) are inflated once first, on all cores, so that one
    // whose CRC or size is wrong (pip would refuse to install it) is not passed on.
    if rw.check_copied {
        wheel
            .members()
            .par_iter()
            .with_max_len(1)
            .filter(|m| !m.is_dir && m.name != record_name && !rw.remove.contains(&m.name))
            .filter(|m| !rw.replace.contains_key(&m.name) && m.name != metadata_name)
            .filter(|m| !rw.transform_members.contains(&m.name))
            .filter(|m| !rw.already_checked.contains(&m.name))
            .try_for_each(|m| wheel.check_member(m.index))?;
    }
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
            zw.raw_copy_file(one.by_index_raw(0).map_err(write_zip)?)
                .map_err(zip_err)?;
            records.push(row(&m.name, bytes));
            continue;
        }
        let new_bytes = if let (Some(transform), true) =
            (&rw.transform, rw.transform_members.contains(&m.name))
        {
            // Read whole (its CRC checked), changed in place, deflated straight into the output;
            // one larger than the memory budget is held in a temporary file.
            let in_memory = cudist_fs::limits().in_memory_member(1);
            let mut bytes = wheel.read_member_buf(m.index, in_memory)?;
            transform(&m.name, &mut bytes)
                .map_err(|e| WheelError::Layout(format!("{}: {e}", m.name)))?;
            Some(bytes)
        } else if m.name == metadata_name
            && !(rw.requires_dist.is_empty() && rw.provides_extra.is_empty())
        {
            let bytes = wheel
                .dist_info_file(
                    metadata_name.rsplit_once('/').map_or("", |p| p.0),
                    "METADATA",
                )?
                .unwrap_or_default();
            Some(cudist_fs::Buf::Heap(edit_metadata(
                &bytes,
                &rw.requires_dist,
                &rw.provides_extra,
            )))
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
                zw.start_file(m.name.as_str(), opts).map_err(write_zip)?;
                zw.write_all(&bytes).map_err(WheelError::Write)?;
                records.push(row(&m.name, &bytes));
            }
            None => {
                let f = archive.by_index_raw(m.index).map_err(zip_err)?;
                zw.raw_copy_file(f).map_err(write_zip)?;
                if m.is_dir {
                    continue;
                }
                records.push(match old_record.get(&m.name) {
                    Some(r) => r.clone(),
                    // No RECORD row to carry over: hash the member now.
                    None => row(&m.name, &wheel.read_member_mapped(m.index)?),
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
        zw.start_file(name.as_str(), opts).map_err(write_zip)?;
        zw.write_all(bytes).map_err(WheelError::Write)?;
        records.push(row(name, bytes));
    }
    records.push(RecordRow {
        path: record_name.to_string(),
        hash: String::new(),
        size: None,
    });
    let record = crate::record::write(&records);
    let opts = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(rw.compression.level()))
        .last_modified_time(fallback_time)
        .unix_permissions(0o644);
    zw.start_file(record_name, opts).map_err(write_zip)?;
    zw.write_all(&record).map_err(WheelError::Write)?;
    count += 1;
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
    zw.start_file(name, opts).map_err(write_zip)?;
    zw.write_all(bytes).map_err(WheelError::Write)?;
    Ok(zw.finish().map_err(write_zip)?.into_inner())
}

/// Checks every member against the wheel's RECORD (hash and size): the `--verify` of repair.
/// Returns the mismatches as `(member, problem)`.
pub fn verify_record(wheel: &Wheel) -> Result<Vec<(String, String)>, WheelError> {
    let dist_info = wheel.dist_info()?;
    let record_name = format!("{dist_info}/RECORD");
    let Some(bytes) = wheel.dist_info_file(&dist_info, "RECORD")? else {
        return Ok(vec![(record_name, "missing".into())]);
    };
    let expected: HashMap<String, (String, String)> = crate::record::parse(&bytes)
        .map_err(WheelError::Record)?
        .into_iter()
        .map(|r| {
            (
                r.path,
                (r.hash, r.size.map(|s| s.to_string()).unwrap_or_default()),
            )
        })
        .collect();
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
        let bytes = wheel.read_member_mapped(m.index)?;
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
            md.as_bytes(),
            &["nvidia-cublas-cu12<13,>=12".into(), "numpy".into()],
            &["cuda".into()],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Metadata-Version: 2.1\nName: x\nRequires-Dist: numpy\nRequires-Dist: nvidia-cublas-cu12<13,>=12\nProvides-Extra: test\nProvides-Extra: cuda\n\nLong description.\nRequires-Dist: not a header\n"
        );
    }

    #[test]
    fn metadata_bytes_that_are_not_utf8_are_kept() {
        // Latin-1 in the header and the body, CRLF line ends: only the new line is added.
        let md = b"Metadata-Version: 2.1\r\nName: x\r\nAuthor: Jos\xe9\r\n\r\nBody \xff\r\n";
        let out = edit_metadata(md, &["numpy".into()], &[]);
        assert_eq!(
            out,
            b"Metadata-Version: 2.1\r\nName: x\r\nAuthor: Jos\xe9\r\nRequires-Dist: numpy\r\n\r\nBody \xff\r\n"
        );
        // No body at all.
        let out = edit_metadata(b"Name: x\n", &["numpy".into()], &[]);
        assert_eq!(out, b"Name: x\nRequires-Dist: numpy\n");
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
