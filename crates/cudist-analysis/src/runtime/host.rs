//! The machine doctor judges for: this one (detected without loading the libraries it checks), or
//! one described by a JSON profile (`--host FILE`, written by `--write-host FILE`), for CI without
//! GPUs and for "will this wheel work on our cluster" questions.

use std::path::Path;

use crate::error::{bad_input, Result, ResultExt};
use cudist_catalog::{driver_version_key, Catalog, CudaVersion};
use serde::{Deserialize, Serialize};

/// A machine, as doctor needs to know it. This is the `--host` profile format.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Free text: where the profile came from.
    #[serde(default)]
    pub name: Option<String>,
    /// The operating system (`Ubuntu 24.04`).
    #[serde(default)]
    pub os: Option<String>,
    /// The glibc version (`2.39`).
    #[serde(default)]
    pub glibc: Option<String>,
    /// The CPU.
    #[serde(default)]
    pub cpu: Option<Cpu>,
    /// The NVIDIA driver version (`570.26`), none when no driver is installed.
    #[serde(default)]
    pub driver: Option<String>,
    /// The newest CUDA the driver supports (`12.8`), as NVML reports it; derived from the driver
    /// version through the catalog when absent.
    #[serde(default)]
    pub driver_cuda: Option<String>,
    /// The GPUs.
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    /// AMD GPUs (read from `/sys/class/kfd`), by their LLVM target (`gfx942`): cudist reads no ROCm
    /// device code, but `select` knows a ROCm build is the one for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub amd_gpus: Vec<AmdGpu>,
    /// The machine architecture as wheel tags name it (`x86_64`, `aarch64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The Python the wheels are for (`3.11`), for `select`'s tag check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// How each value was found (or why it is missing).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A CPU, as far as wheels care.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// Its model name.
    #[serde(default)]
    pub model: Option<String>,
    /// The x86-64 micro-architecture level (1–4), on x86-64.
    #[serde(default)]
    pub x86_64_level: Option<u8>,
}

/// A GPU.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Its name (`NVIDIA H100 80GB HBM3`).
    #[serde(default)]
    pub name: Option<String>,
    /// The compute capability as an SM number: 86 for 8.6, 100 for 10.0, 120 for 12.0.
    pub sm: u32,
    /// Its memory in MiB.
    #[serde(default)]
    pub memory_mib: Option<u64>,
}

/// An AMD GPU.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AmdGpu {
    /// Its LLVM target (`gfx942`, `gfx90a`, `gfx1100`).
    pub gfx: String,
}

/// The AMD GPUs of this machine: each KFD topology node whose `gfx_target_version` is not 0 (the
/// CPU nodes have 0). The version is major·10000 + minor·100 + stepping, and the target name is
/// `gfx` with the major in decimal and minor and stepping in hex (90010 → `gfx90a`).
pub fn amd_gpus(kfd_nodes: &Path) -> Vec<AmdGpu> {
    let Ok(dir) = std::fs::read_dir(kfd_nodes) else {
        return Vec::new();
    };
    let mut nodes: Vec<_> = dir.flatten().map(|e| e.path()).collect();
    nodes.sort();
    nodes
        .iter()
        .filter_map(|n| {
            let text = std::fs::read_to_string(n.join("properties")).ok()?;
            let v: u32 = text
                .lines()
                .find_map(|l| l.strip_prefix("gfx_target_version "))?
                .trim()
                .parse()
                .ok()?;
            (v != 0).then(|| AmdGpu {
                gfx: format!("gfx{}{:x}{:x}", v / 10000, v / 100 % 100, v % 100),
            })
        })
        .collect()
}

impl Host {
    /// Reads a profile.
    pub fn load(path: &Path) -> Result<Host> {
        let text = cudist_fs::read_bounded(path, cudist_fs::SMALL_FILE)?;
        let text = String::from_utf8_lossy(&text);
        let host: Host = serde_json::from_str(&text).input_context(|| {
            format!(
                "{}: not a host profile (the format `cudist doctor --write-host` writes; docs/doctor.md)",
                path.display()
            )
        })?;
        if let Some(d) = &host.driver {
            if driver_version_key(d).first().is_none_or(|m| *m == 0) {
                return Err(bad_input(format!(
                    "{}: driver {:?} is not a driver version (e.g. 570.26)",
                    path.display(),
                    tame(d)
                )));
            }
        }
        // Fields that are versions or names are checked as such; free text is tamed.
        type Check<'a> = (&'a str, Option<&'a str>, fn(&str) -> bool, &'a str);
        let checks: [Check; 5] = [
            ("glibc", host.glibc.as_deref(), dotted, "2.39"),
            ("python", host.python.as_deref(), dotted, "3.11"),
            ("driver_cuda", host.driver_cuda.as_deref(), dotted, "12.8"),
            ("driver", host.driver.as_deref(), dotted, "570.26"),
            ("arch", host.arch.as_deref(), word, "x86_64"),
        ];
        for (field, value, ok, example) in checks {
            if let Some(v) = value.filter(|v| !ok(v)) {
                return Err(bad_input(format!(
                    "{}: {field} {:?} is not of the form {example}",
                    path.display(),
                    tame(v)
                )));
            }
        }
        if let Some(g) = host.amd_gpus.iter().find(|g| !word(&g.gfx)) {
            return Err(bad_input(format!(
                "{}: amd_gpus {:?} is not an LLVM target (gfx942)",
                path.display(),
                tame(&g.gfx)
            )));
        }
        Ok(host.tamed())
    }

    /// The profile with its free text (name, OS, CPU model, GPU names, notes) tamed for a
    /// terminal and a report: control characters escaped, each field cut to [`TEXT_MAX`]
    /// characters, at most [`NOTES_MAX`] notes. A profile is an input nobody vetted: an escape
    /// sequence in a GPU name must not reach the terminal, nor a 10 MB name the report.
    pub fn tamed(mut self) -> Host {
        let t = |s: &mut Option<String>| {
            if let Some(v) = s.as_mut() {
                *v = tame(v);
            }
        };
        t(&mut self.name);
        t(&mut self.os);
        if let Some(c) = self.cpu.as_mut() {
            t(&mut c.model);
        }
        for g in &mut self.gpus {
            t(&mut g.name);
        }
        self.notes.truncate(NOTES_MAX);
        for n in &mut self.notes {
            *n = tame(n);
        }
        self
    }

    /// The newest CUDA this host's driver runs: the profile's `driver_cuda`, else the newest
    /// toolkit whose minimum driver (catalog) the driver meets.
    pub fn cuda(&self, catalog: &Catalog) -> Option<CudaVersion> {
        if let Some(c) = self.driver_cuda.as_deref().and_then(CudaVersion::parse) {
            return Some(c);
        }
        let d = driver_version_key(self.driver.as_deref()?);
        catalog
            .toolkits
            .iter()
            .filter(|t| driver_version_key(&t.min_driver) <= d)
            .filter_map(|t| CudaVersion::parse(&t.version))
            .max()
    }

    /// Records the Python wheels are for (`select --host` checks their tags against it): the
    /// `major.minor` that `python` reports, with a note saying which interpreter; a note saying
    /// why when it cannot be run.
    pub fn record_python(&mut self, python: &Path) {
        let out = std::process::Command::new(python)
            .args([
                "-I",
                "-c",
                "import sys; print('%d.%d' % sys.version_info[:2])",
            ])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        let version = out
            .as_ref()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|v| dotted(v));
        match version {
            Some(v) => {
                self.notes
                    .push(tame(&format!("python {v} from {}", python.display())));
                self.python = Some(v);
            }
            None => self.notes.push(tame(&format!(
                "python not recorded: {} does not run (select --host then takes any Python)",
                python.display()
            ))),
        }
    }

    /// Detects this machine: OS, glibc, CPU level, and the driver from `/sys/module/nvidia/version`
    /// or `/proc/driver/nvidia/version` (reading files, loading nothing). GPUs need the driver's
    /// NVML, which is opened at run time only when the driver is there.
    pub fn detect() -> Host {
        let mut h = Host {
            name: Some("this machine (cudist doctor)".into()),
            ..Host::default()
        };
        h.os = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_string())
            });
        h.glibc = glibc_version();
        h.cpu = Some(cpu());
        h.arch = Some(std::env::consts::ARCH.to_string());
        h.amd_gpus = amd_gpus(Path::new("/sys/class/kfd/kfd/topology/nodes"));
        let driver = std::fs::read_to_string("/sys/module/nvidia/version")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .map(|v| (v, "/sys/module/nvidia/version"))
            .or_else(|| {
                let t = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
                let line = t.lines().find(|l| l.starts_with("NVRM version:"))?;
                let v = line.split_whitespace().find(|w| {
                    w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.')
                })?;
                Some((v.to_string(), "/proc/driver/nvidia/version"))
            });
        match driver {
            Some((v, from)) => {
                h.notes.push(format!("driver {v} read from {from}"));
                h.driver = Some(v);
                nvml::fill(&mut h);
            }
            None => h.notes.push(
                "no NVIDIA driver: /sys/module/nvidia/version and /proc/driver/nvidia/version are absent".into(),
            ),
        }
        // What the driver and /proc say is printed too: tamed like a profile's.
        h.tamed()
    }
}

/// The most characters of a free-text profile field kept ([`Host::tamed`]).
pub const TEXT_MAX: usize = 200;
/// The most notes of a profile kept.
pub const NOTES_MAX: usize = 64;

/// Free text fit for a terminal ([`cudist_fs::printable`]), cut to [`TEXT_MAX`] characters.
///
/// ```
/// use cudist_analysis::runtime::host::tame;
/// assert_eq!(tame("T4\u{1b}[2J"), "T4\\u{1b}[2J");
/// assert!(tame(&"x".repeat(10_000)).ends_with("… (9800 more characters)"));
/// ```
pub fn tame(s: &str) -> String {
    cudist_fs::printable(s, TEXT_MAX)
}

/// A version as profiles write them: numbers joined by dots (`2.39`, `570.26.02`), at most 32
/// characters.
fn dotted(v: &str) -> bool {
    v.len() <= 32
        && !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A name as profiles write machine words (`x86_64`, `gfx90a:sramecc+:xnack-`): ASCII letters,
/// digits and `_-:+.`, at most 64 characters.
fn word(v: &str) -> bool {
    v.len() <= 64
        && !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-:+.".contains(&b))
}

/// glibc's version, from `ld.so --list-diagnostics` (`version.version="2.36"`).
fn glibc_version() -> Option<String> {
    cudist_elf::loader::ld_so_diagnostics()?
        .lines()
        .find_map(|l| {
            l.strip_prefix("version.version=")
                .map(|v| v.trim_matches('"').to_string())
        })
}

/// The CPU model and x86-64 level from `/proc/cpuinfo` flags (levels as defined by the x86-64
/// psABI: v2 adds cx16 lahf_lm popcnt sse3 ssse3 sse4_1 sse4_2; v3 avx avx2 bmi1 bmi2 f16c fma
/// abm(lzcnt) movbe xsave; v4 avx512f/bw/cd/dq/vl).
fn cpu() -> Cpu {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = text
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let flags: std::collections::HashSet<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.split_whitespace().collect())
        .unwrap_or_default();
    let x86_64_level = (std::env::consts::ARCH == "x86_64").then(|| x86_64_level(&flags));
    Cpu {
        model,
        x86_64_level,
    }
}

/// The x86-64 level a set of `/proc/cpuinfo` flags reaches.
pub fn x86_64_level(flags: &std::collections::HashSet<&str>) -> u8 {
    let has = |l: &[&str]| l.iter().all(|f| flags.contains(f));
    let v2 = [
        "cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2",
    ];
    let v3 = [
        "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
    ];
    let v4 = ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];
    if !has(&v2) {
        1
    } else if !has(&v3) {
        2
    } else if !has(&v4) {
        3
    } else {
        4
    }
}

/// GPUs through NVML (`libnvidia-ml.so.1`, opened at run time with libloading, never linked).
mod nvml {
    use super::{Gpu, Host};
    use std::ffi::{c_char, c_int, c_uint, c_void};

    type Init = unsafe extern "C" fn() -> c_int;
    type Count = unsafe extern "C" fn(*mut c_uint) -> c_int;
    type Handle = unsafe extern "C" fn(c_uint, *mut *mut c_void) -> c_int;
    type Name = unsafe extern "C" fn(*mut c_void, *mut c_char, c_uint) -> c_int;
    type Cc = unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_int) -> c_int;
    type CudaVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    #[repr(C)]
    struct Memory {
        total: u64,
        free: u64,
        used: u64,
    }
    type Mem = unsafe extern "C" fn(*mut c_void, *mut Memory) -> c_int;

    /// Adds the GPUs and the driver's CUDA version; notes why when NVML cannot say.
    pub fn fill(h: &mut Host) {
        // SAFETY: NVML's documented C API; every pointer passed is valid for the call, strings are
        // read within the buffer given, and the library stays loaded while its functions are used.
        let r = unsafe { read() };
        match r {
            Ok((cuda, gpus)) => {
                h.notes.push(format!(
                    "{} GPU(s) and the driver's CUDA version from NVML",
                    gpus.len()
                ));
                h.driver_cuda = cuda;
                h.gpus = gpus;
            }
            Err(e) => h.notes.push(format!("NVML: {e}; GPUs unknown")),
        }
    }

    unsafe fn read() -> Result<(Option<String>, Vec<Gpu>), String> {
        let lib = libloading::Library::new("libnvidia-ml.so.1").map_err(|e| e.to_string())?;
        let sym = |n: &[u8]| -> Result<*const (), String> {
            lib.get::<*const ()>(n)
                .map(|s| *s)
                .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(n)))
        };
        let init: Init = std::mem::transmute(sym(b"nvmlInit_v2\0")?);
        let count: Count = std::mem::transmute(sym(b"nvmlDeviceGetCount_v2\0")?);
        let handle: Handle = std::mem::transmute(sym(b"nvmlDeviceGetHandleByIndex_v2\0")?);
        let name: Name = std::mem::transmute(sym(b"nvmlDeviceGetName\0")?);
        let cc: Cc = std::mem::transmute(sym(b"nvmlDeviceGetCudaComputeCapability\0")?);
        let mem: Mem = std::mem::transmute(sym(b"nvmlDeviceGetMemoryInfo\0")?);
        let cuda: CudaVersion = std::mem::transmute(sym(b"nvmlSystemGetCudaDriverVersion_v2\0")?);
        if init() != 0 {
            return Err("nvmlInit failed".into());
        }
        let mut v: c_int = 0;
        let cuda_v =
            (cuda(&mut v) == 0 && v > 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10));
        let mut n: c_uint = 0;
        if count(&mut n) != 0 {
            return Err("nvmlDeviceGetCount failed".into());
        }
        let mut gpus = Vec::new();
        for i in 0..n {
            let mut d: *mut c_void = std::ptr::null_mut();
            if handle(i, &mut d) != 0 {
                continue;
            }
            let mut buf = [0 as c_char; 96];
            let gpu_name = (name(d, buf.as_mut_ptr(), buf.len() as c_uint) == 0).then(|| {
                std::ffi::CStr::from_ptr(buf.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            });
            let (mut major, mut minor) = (0, 0);
            if cc(d, &mut major, &mut minor) != 0 {
                continue;
            }
            let mut m = Memory {
                total: 0,
                free: 0,
                used: 0,
            };
            let memory_mib = (mem(d, &mut m) == 0).then_some(m.total / (1024 * 1024));
            gpus.push(Gpu {
                name: gpu_name,
                sm: (major * 10 + minor) as u32,
                memory_mib,
            });
        }
        Ok((cuda_v, gpus))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_driver_cuda() {
        let v3: std::collections::HashSet<&str> = "cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
            .split(' ')
            .collect();
        assert_eq!(x86_64_level(&v3), 3);
        assert_eq!(x86_64_level(&["sse2"].into_iter().collect()), 1);
        let cat = Catalog::builtin();
        let h = Host {
            driver: Some("570.26".into()),
            ..Host::default()
        };
        assert_eq!(h.cuda(&cat), CudaVersion::parse("12.8"));
        let h = Host {
            driver: Some("525.60.13".into()),
            ..Host::default()
        };
        assert_eq!(h.cuda(&cat), CudaVersion::parse("12.0"));
        let h = Host {
            driver: Some("570.26".into()),
            driver_cuda: Some("12.9".into()),
            ..Host::default()
        };
        assert_eq!(h.cuda(&cat), CudaVersion::parse("12.9"));
        assert_eq!(Host::default().cuda(&cat), None);
    }
}
