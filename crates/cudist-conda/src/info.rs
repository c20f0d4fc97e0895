//! The `info/` files of a conda package that cudist writes and reads: `index.json`, `paths.json`
//! and `run_exports.json`, as conda and rattler define them.
//!
//! Hand-written rather than taken from rattler_conda_types: that crate brings 94 more crates into
//! the build (URL, regex, YAML and SIMD-JSON parsers among them) for the handful of fields cudist
//! reads, and what cudist writes is checked by an independent reader anyway: the tests install
//! every package cudist writes with py-rattler and conda's own resolver rules. Reading checks what
//! conda requires of these fields (a package name, a version, a build string; paths inside the
//! prefix with a known type and a hex sha256) and keeps every other field out of the way.

use serde::{Deserialize, Serialize};

/// `info/index.json`: what a package is and what it depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexJson {
    pub name: String,
    pub version: String,
    pub build: String,
    #[serde(default)]
    pub build_number: u64,
    #[serde(default)]
    pub depends: Vec<String>,
    #[serde(default)]
    pub constrains: Vec<String>,
    #[serde(default)]
    pub license: Option<String>,
    /// conda's platform directory (`linux-64`); absent for `noarch` packages written by old tools.
    #[serde(default)]
    pub subdir: Option<String>,
    #[serde(default)]
    pub arch: Option<String>,
    #[serde(default)]
    pub platform: Option<String>,
    /// Milliseconds since the epoch (old packages wrote seconds, some as a float; conda reads
    /// them all).
    #[serde(default, deserialize_with = "lenient_timestamp")]
    pub timestamp: Option<u64>,
}

fn lenient_timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n: Option<serde_json::Number> = Option::deserialize(d)?;
    Ok(n.and_then(|n| {
        n.as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    }))
}

/// `info/paths.json`: every path the package installs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathsJson {
    pub paths: Vec<PathsEntry>,
    #[serde(default = "one")]
    pub paths_version: u64,
}

fn one() -> u64 {
    1
}

/// One path of `paths.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathsEntry {
    /// The path relative to the prefix.
    #[serde(rename = "_path")]
    pub path: String,
    pub path_type: PathType,
    /// The file's sha256, lower-case hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_in_bytes: Option<u64>,
    /// Install by copying, never by linking.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_link: bool,
    /// The build prefix written into the file, which installers replace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_placeholder: Option<String>,
    /// `text` or `binary`, with `prefix_placeholder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_mode: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How a path is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathType {
    /// A regular file (installed by hard link or copy).
    Hardlink,
    /// A symbolic link.
    Softlink,
    /// An empty directory.
    Directory,
}

/// `info/run_exports.json`: what a package built against this one must depend on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunExportsJson {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weak: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strong: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noarch: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weak_constrains: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strong_constrains: Vec<String>,
}

/// A sha256 as `paths.json` writes it: 64 hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A package name as conda accepts it: ASCII letters, digits, `_`, `-` and `.`, not starting with
/// `.` or `-` (names are compared lower-cased).
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(['.', '-'])
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A version as conda writes it: letters, digits and `.`, `_`, `+`, `!`, `-`, starting with a
/// letter or digit.
fn valid_version(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'!' | b'-'))
}

/// A build string: letters, digits, `_`, `.` and `+`.
fn valid_build(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+'))
}

impl IndexJson {
    /// Parses `index.json`, checking its name, version and build string.
    pub fn parse(bytes: &[u8]) -> Result<IndexJson, String> {
        let index: IndexJson = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        index.check()?;
        Ok(index)
    }

    /// What conda requires of the fields cudist reads.
    pub fn check(&self) -> Result<(), String> {
        if !valid_name(&self.name) {
            return Err(format!("{:?} is not a conda package name", self.name));
        }
        if !valid_version(&self.version) {
            return Err(format!("{:?} is not a conda version", self.version));
        }
        if !valid_build(&self.build) {
            return Err(format!("{:?} is not a conda build string", self.build));
        }
        Ok(())
    }
}

impl PathsJson {
    /// Parses `paths.json`, checking that every path is a plain path inside the prefix and every
    /// sha256 is 64 hex digits.
    pub fn parse(bytes: &[u8]) -> Result<PathsJson, String> {
        let paths: PathsJson = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        paths.check()?;
        Ok(paths)
    }

    /// What conda requires of each entry.
    pub fn check(&self) -> Result<(), String> {
        for e in &self.paths {
            cudist_fs::member_name(&e.path).map_err(|err| format!("{:?}: {err}", e.path))?;
            if let Some(h) = &e.sha256 {
                if !is_sha256_hex(h) {
                    return Err(format!("{:?}: sha256 {h:?} is not 64 hex digits", e.path));
                }
            }
        }
        Ok(())
    }
}

impl RunExportsJson {
    /// Parses `run_exports.json`.
    pub fn parse(bytes: &[u8]) -> Result<RunExportsJson, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_json_as_conda_forge_writes_it() {
        // The shape of conda-forge's libcublas-12.9.1.4-h9ab20c4_1 index.json (fields abridged).
        let text = br#"{"arch": "x86_64", "build": "h9ab20c4_1", "build_number": 1,
            "depends": ["__glibc >=2.17,<3.0.a0", "cuda-nvrtc", "cuda-version >=12.9,<12.10.0a0"],
            "license": "LicenseRef-NVIDIA-End-User-License-Agreement", "name": "libcublas",
            "platform": "linux", "subdir": "linux-64", "timestamp": 1748392712345,
            "version": "12.9.1.4"}"#;
        let i = IndexJson::parse(text).unwrap();
        assert_eq!(i.name, "libcublas");
        assert_eq!(i.version, "12.9.1.4");
        assert_eq!(i.subdir.as_deref(), Some("linux-64"));
        assert_eq!(i.depends.len(), 3);
        assert_eq!(i.timestamp, Some(1748392712345));
        assert!(i.constrains.is_empty());
    }

    #[test]
    fn bad_index_json_is_refused() {
        for (text, says) in [
            (
                &br#"{"version": "1", "build": "0"}"#[..],
                "missing field `name`",
            ),
            (
                br#"{"name": "a b", "version": "1", "build": "0"}"#,
                "not a conda package name",
            ),
            (
                br#"{"name": "a", "version": "", "build": "0"}"#,
                "not a conda version",
            ),
            (
                br#"{"name": "a", "version": "1 2", "build": "0"}"#,
                "not a conda version",
            ),
            (
                br#"{"name": "a", "version": "1", "build": "a/b"}"#,
                "not a conda build string",
            ),
            (
                br#"{"name": "a", "version": "1", "build": "0", "build_number": -1}"#,
                "invalid value",
            ),
        ] {
            let e = IndexJson::parse(text).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn paths_json_round_trips_and_refuses_escapes() {
        let p = PathsJson {
            paths: vec![
                PathsEntry {
                    path: "lib/libcudart.so.13".into(),
                    path_type: PathType::Hardlink,
                    sha256: Some("ab".repeat(32)),
                    size_in_bytes: Some(10),
                    no_link: false,
                    prefix_placeholder: None,
                    file_mode: None,
                },
                PathsEntry {
                    path: "lib/libcudart.so".into(),
                    path_type: PathType::Softlink,
                    sha256: None,
                    size_in_bytes: None,
                    no_link: false,
                    prefix_placeholder: None,
                    file_mode: None,
                },
            ],
            paths_version: 1,
        };
        let text = serde_json::to_string(&p).unwrap();
        // The keys conda writes, and none it leaves out.
        assert!(text.contains(r#""_path":"lib/libcudart.so""#), "{text}");
        assert!(text.contains(r#""path_type":"softlink""#), "{text}");
        assert!(
            !text.contains("no_link") && !text.contains("prefix_placeholder"),
            "{text}"
        );
        assert_eq!(PathsJson::parse(text.as_bytes()).unwrap(), p);
        for bad in [
            r#"{"paths": [{"_path": "../etc/passwd", "path_type": "hardlink"}]}"#,
            r#"{"paths": [{"_path": "/etc/passwd", "path_type": "hardlink"}]}"#,
            r#"{"paths": [{"_path": "lib/a", "path_type": "fifo"}]}"#,
            r#"{"paths": [{"_path": "lib/a", "path_type": "hardlink", "sha256": "xyz"}]}"#,
        ] {
            assert!(PathsJson::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn run_exports_json_reads_every_kind() {
        let r = RunExportsJson::parse(
            br#"{"weak": ["libcublas >=12.9.1.4,<13.0a0"], "strong_constrains": ["x"]}"#,
        )
        .unwrap();
        assert_eq!(r.weak, vec!["libcublas >=12.9.1.4,<13.0a0"]);
        assert_eq!(r.strong_constrains, vec!["x"]);
        assert!(r.strong.is_empty());
        assert_eq!(
            serde_json::to_string(&RunExportsJson {
                weak: vec!["a".into()],
                ..Default::default()
            })
            .unwrap(),
            r#"{"weak":["a"]}"#
        );
    }
}
