//! `RECORD`: the CSV file that lists every file of a wheel with its hash and size.
//!
//! Read and written with the `csv` crate, as pip reads and writes it with Python's `csv` module: a
//! path holding a comma, a quote or a line break is quoted, never split into a bogus row.

/// One row of a `RECORD` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    pub path: String,
    /// `sha256=<urlsafe base64>`, or empty (RECORD itself, `.pyc` files).
    pub hash: String,
    pub size: Option<u64>,
}

/// Parses a `RECORD` file. Rows with fewer than three fields keep what they have (pip accepts
/// `RECORD,,` and rows without a size); a row that is not CSV at all is an error.
pub fn parse(bytes: &[u8]) -> Result<Vec<RecordRow>, csv::Error> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut out = Vec::new();
    for row in rd.byte_records() {
        let row = row?;
        let field = |i: usize| {
            row.get(i)
                .map(|f| {
                    String::from_utf8_lossy(f)
                        .trim_end_matches('\r')
                        .to_string()
                })
                .unwrap_or_default()
        };
        let path = field(0);
        if path.is_empty() && row.len() <= 1 {
            continue; // a blank line
        }
        out.push(RecordRow {
            path,
            hash: field(1),
            size: field(2).parse().ok(),
        });
    }
    Ok(out)
}

/// Writes rows as `RECORD` text (`\n` line ends, fields quoted where they must be).
pub fn write(rows: &[RecordRow]) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for r in rows {
        let size = r.size.map(|s| s.to_string()).unwrap_or_default();
        // Writing to a Vec cannot fail.
        let _ = w.write_record([r.path.as_str(), r.hash.as_str(), size.as_str()]);
    }
    w.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_with_quotes() {
        let text = "nvidia/cu13/lib/libcudart.so.13,sha256=abc,123\n\"odd,name \"\"x\"\".h\",sha256=d,4\n\"two\nlines.so\",sha256=e,5\nx.dist-info/RECORD,,\n";
        let rows = parse(text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[1].path, "odd,name \"x\".h");
        assert_eq!(rows[2].path, "two\nlines.so");
        assert_eq!(rows[0].size, Some(123));
        assert_eq!(rows[3].size, None);
        assert_eq!(String::from_utf8(write(&rows)).unwrap(), text);
        // A comma in a path comes out quoted, as one row.
        let one = write(&[RecordRow {
            path: "good/a,b.so".into(),
            hash: "sha256=x".into(),
            size: Some(1),
        }]);
        assert_eq!(one, b"\"good/a,b.so\",sha256=x,1\n");
        assert_eq!(parse(&one).unwrap().len(), 1);
    }
}
