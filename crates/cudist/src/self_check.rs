//! `cudist self-check`: what this cudist is (version, catalog, the platform its binary needs) and
//! which of the tools its readings and judgements are checked against it can reach here. cudist
//! runs without any of them; the report is for CI logs and bug reports, and `--require` turns a
//! missing tool into a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use cudist_catalog::Catalog;
use serde::Serialize;

use crate::util::{outln, Style, Table};

/// The schema identifier of `cudist self-check --json`.
pub const SCHEMA: &str = "cudist.self-check/1";

#[derive(clap::Args)]
pub struct SelfCheckArgs {
    /// Fail (exit 1) unless these tools are found, e.g. `--require cuobjdump,ldd`.
    #[arg(long, value_name = "TOOL,…", value_delimiter = ',', value_parser = [
        "ld.so", "readelf", "cuobjdump", "nvcc", "ldd", "patchelf", "auditwheel", "eu-elflint",
        "cmake", "pkg-config",
    ])]
    require: Vec<String>,
    /// Print the report as JSON (schema cudist.self-check/1).
    #[arg(long)]
    json: bool,
}

/// A tool cudist's results are compared with, and how to find and ask it.
struct Oracle {
    name: &'static str,
    /// What it is the reference for.
    checks: &'static str,
    /// Also looked for in `$CUDA_HOME/bin` and `$CUDA_PATH/bin`.
    cuda_tool: bool,
}

const ORACLES: &[Oracle] = &[
    Oracle {
        name: "readelf",
        checks: "NEEDED, RPATH, SONAME, symbol versions (inspect)",
        cuda_tool: false,
    },
    Oracle {
        name: "cuobjdump",
        checks: "device code listings (inspect --cuobjdump)",
        cuda_tool: true,
    },
    Oracle {
        name: "nvcc",
        checks: "CUDA roots assembled by toolkit",
        cuda_tool: true,
    },
    Oracle {
        name: "ldd",
        checks: "load simulation (doctor)",
        cuda_tool: false,
    },
    Oracle {
        name: "patchelf",
        checks: "RPATH and SONAME edits (repair, relink)",
        cuda_tool: false,
    },
    Oracle {
        name: "auditwheel",
        checks: "platform tags and grafting (repair)",
        cuda_tool: false,
    },
    Oracle {
        name: "eu-elflint",
        checks: "consistency of patched ELF files",
        cuda_tool: false,
    },
    Oracle {
        name: "cmake",
        checks: "FindCUDAToolkit on toolkit roots",
        cuda_tool: false,
    },
    Oracle {
        name: "pkg-config",
        checks: ".pc files of toolkit roots",
        cuda_tool: false,
    },
];

/// The answer of `cudist self-check --json` (schema `cudist.self-check/1`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct Report {
    schema: &'static str,
    cudist_version: &'static str,
    version: &'static str,
    /// What `--version` prints (with this catalog).
    version_line: String,
    /// The newest CUDA release the catalog (with any `--catalog` files) knows of.
    catalog_newest_cuda: Option<String>,
    /// This binary, and the dynamic loader it names.
    binary: Option<String>,
    tools: Vec<Found>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Found {
    name: String,
    checks: &'static str,
    path: Option<String>,
    /// The first line of its version output that says something (or the one naming a release).
    version: Option<String>,
}

pub fn run(args: SelfCheckArgs, catalog: &Catalog) -> Result<ExitCode> {
    let exe = std::env::current_exe().ok();
    let interp = exe.as_deref().and_then(loader_of);
    let mut tools = Vec::new();
    if let Some(ld) = &interp {
        tools.push(Found {
            name: "ld.so".into(),
            checks: "the search order doctor simulates (cudist's own loader)",
            path: Some(ld.display().to_string()),
            version: version_of(ld),
        });
    }
    // The tools are independent: ask them at once.
    let spinner = crate::util::Spinner::start("asking the tools their versions");
    let found: Vec<Found> = std::thread::scope(|s| {
        let handles: Vec<_> = ORACLES
            .iter()
            .map(|o| {
                s.spawn(move || {
                    let path = locate(o);
                    Found {
                        name: o.name.into(),
                        checks: o.checks,
                        version: path.as_deref().and_then(version_of),
                        path: path.map(|p| p.display().to_string()),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("self-check worker"))
            .collect()
    });
    drop(spinner);
    tools.extend(found);
    let report = Report {
        schema: SCHEMA,
        cudist_version: env!("CARGO_PKG_VERSION"),
        version: env!("CARGO_PKG_VERSION"),
        version_line: version_line_of(catalog),
        catalog_newest_cuda: catalog.newest_cuda().map(|v| v.to_string()),
        binary: exe.map(|p| p.display().to_string()),
        tools,
    };
    let missing: Vec<&String> = args
        .require
        .iter()
        .filter(|r| {
            !report
                .tools
                .iter()
                .any(|t| &t.name == *r && t.path.is_some())
        })
        .collect();
    if args.json {
        crate::util::print_json(&report)?;
    } else {
        print_human(&report);
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        eprintln!("error: required tools not found: {}", names.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_human(r: &Report) {
    let style = Style::detect();
    outln!("{}", r.version_line);
    if let Some(b) = &r.binary {
        outln!("binary: {b}");
    }
    outln!(
        "\n{}",
        style.bold("Tools cudist's results are checked against (cudist runs without them)")
    );
    let mut t = Table::new(&["TOOL", "PATH", "VERSION", "REFERENCE FOR"]);
    for f in &r.tools {
        let path = match &f.path {
            Some(p) => p.clone(),
            None => style.dim("not found"),
        };
        t.row(vec![
            f.name.clone(),
            path,
            f.version.clone().unwrap_or_else(|| "-".into()),
            f.checks.into(),
        ]);
    }
    crate::util::emit(&t.render(2, style));
}

/// `cudist 0.1.0 (catalog: CUDA through 13.5)`: what `--version` prints, for the built-in
/// catalog.
pub fn version_line() -> String {
    version_line_of(&Catalog::builtin())
}

fn version_line_of(catalog: &Catalog) -> String {
    let v = env!("CARGO_PKG_VERSION");
    match catalog.newest_cuda() {
        Some(newest) => format!("cudist {v} (catalog: CUDA through {newest})"),
        None => format!("cudist {v}"),
    }
}

/// The dynamic loader an ELF executable names (PT_INTERP).
fn loader_of(exe: &Path) -> Option<PathBuf> {
    let data = cudist_fs::read_bounded(exe, 1 << 30).ok()?;
    let elf = cudist_elf::ElfFile::parse(&data).ok()?;
    elf.interpreter.map(PathBuf::from)
}

/// The tool's executable on PATH (CUDA tools also under `$CUDA_HOME/bin`, `$CUDA_PATH/bin`).
fn locate(o: &Oracle) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if o.cuda_tool {
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(root) = std::env::var_os(var) {
                dirs.push(PathBuf::from(root).join("bin"));
            }
        }
    }
    dirs.into_iter()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(o.name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The telling line of `TOOL --version`: the one naming a CUDA release, else the first that is
/// not empty. A tool that does not answer within 10 seconds gets none.
fn version_of(tool: &Path) -> Option<String> {
    let mut child = Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Read at most 64 KiB of its output beside the wait, so a chatty tool cannot block on a full
    // pipe; closing the pipe after that ends whatever it still writes.
    let stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(stdout, 64 << 10), &mut buf);
        let _ = tx.send(buf);
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    // A process it started may hold the pipe open after it exits: wait for the output no longer
    // than the deadline either.
    let out = rx
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()?;
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find(|l| l.contains("compilation tools, release"))
        .or(lines.first())?;
    Some(line.chars().take(120).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool `--require` accepts is one the report looks for.
    #[test]
    fn require_names_are_the_oracles() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            a: SelfCheckArgs,
        }
        let cmd = Cmd::command();
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "require")
            .unwrap();
        let mut accepted: Vec<String> = arg
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect();
        let mut known: Vec<String> = ORACLES.iter().map(|o| o.name.to_string()).collect();
        known.push("ld.so".into());
        accepted.sort();
        known.sort();
        assert_eq!(accepted, known);
    }
}
