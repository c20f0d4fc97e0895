//! What a CUDA root needs and the wheels do not ship: SONAME and linker-name links, the driver
//! stub `lib64/stubs/libcuda.so`, `nvcc.profile`, `version.json`/`version.txt` and pkg-config
//! files.

use std::collections::BTreeMap;

use cudist_analysis::error::{Result, ResultExt};
use cudist_catalog::Catalog;
use serde::Serialize;

use super::plan::{Entry, Item, Plan};
use cudist_analysis::environment::Source;

/// One shared library of `lib64/` and the links made for it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LibRow {
    /// The file in `lib64/`.
    pub file: String,
    /// Its SONAME, when it has one.
    pub soname: Option<String>,
    /// Links made: `libcudart.so` (and the SONAME, where the file has another name).
    pub links: Vec<String>,
    /// The pkg-config files naming it.
    pub pkg_config: Vec<String>,
}

/// The driver stub, when one was made.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StubRow {
    /// Where the stub is (`lib64/stubs/libcuda.so`).
    pub path: String,
    /// Its SONAME (`libcuda.so.1`).
    pub soname: String,
    /// How many driver API functions it defines.
    pub symbols: usize,
    /// `generated from include/cuda.h`, or the package that shipped it.
    pub from: String,
    /// The pkg-config files naming it (`cuda-13.5.pc`, `cuda.pc`).
    pub pkg_config: Vec<String>,
}

/// What [`complete`] added.
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Generated {
    /// The shared libraries of `lib64/` and their links.
    pub libraries: Vec<LibRow>,
    /// The driver stub, when one was made.
    pub stub: Option<StubRow>,
    /// What a user should know about the root (what it lacks, what was guessed).
    pub notes: Vec<String>,
}

/// The SONAME of a shared library on disk (mapped, so a 500 MB library costs only the pages read).
pub fn soname_of(path: &std::path::Path) -> Result<Option<String>> {
    let map =
        cudist_elf::map_file(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !cudist_elf::is_elf(&map) {
        return Ok(None);
    }
    let elf = cudist_elf::ElfFile::parse(&map)
        .with_context(|| format!("{}: malformed ELF", path.display()))?;
    Ok(elf.soname)
}

/// Function names the driver API header declares, plus the names its macros turn calls into
/// (`cuCtxCreate` → `cuCtxCreate_v2`, per-thread-stream `_ptds`/`_ptsz` variants): what a stub
/// `libcuda.so` must export for any program using that header to link.
pub fn driver_api_names(header: &str) -> Vec<String> {
    // cuda.h is regular: declarations are `CUresult CUDAAPI cuName(`, renames are
    // `#define cuName cuName_v2` or `#define cuName __CUDA_API_PTDS(cuName_v2)`. A C preprocessor
    // would need a compiler at run time; this scan needs none and the tests check it against gcc.
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = std::collections::BTreeSet::new();
    let mut rest = header;
    while let Some(i) = rest.find("CUDAAPI") {
        rest = &rest[i + "CUDAAPI".len()..];
        let after = rest.trim_start();
        let name = ident(after);
        if name.starts_with("cu") && after[name.len()..].trim_start().starts_with('(') {
            names.insert(name);
        }
    }
    for line in header.lines() {
        let Some(def) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        let mut parts = def.split_whitespace();
        let (Some(from), Some(to)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !from.starts_with("cu") || parts.next().is_some() {
            continue;
        }
        let target = if let Some(inner) = to
            .strip_prefix("__CUDA_API_PTDS(")
            .and_then(|s| s.strip_suffix(')'))
        {
            format!("{inner}_ptds")
        } else if let Some(inner) = to
            .strip_prefix("__CUDA_API_PTSZ(")
            .and_then(|s| s.strip_suffix(')'))
        {
            format!("{inner}_ptsz")
        } else {
            to.to_string()
        };
        if target.starts_with("cu") && ident(&target) == target {
            names.insert(target);
        }
    }
    names.into_iter().collect()
}

/// The link-time driver stub for an installed `cuda.h`: the shared object (SONAME
/// `libcuda.so.1`, for this machine) and the number of functions it exports.
pub fn driver_stub(header: &str) -> Result<(Vec<u8>, usize)> {
    let names = driver_api_names(header);
    let data = cudist_elf::stub::write_stub("libcuda.so.1", &names, cudist_elf::host_machine())
        .context("writing the libcuda.so stub")?;
    Ok((data, names.len()))
}

/// Adds the generated parts to the plan. `tk_mm` is the toolkit major.minor used in pkg-config
/// file names (`cudart-13.5.pc`).
///
/// `pc_root` is the root's absolute path for pkg-config files; none makes them relocatable
/// (`${pcfiledir}/../..`), for `--copy`.
pub fn complete(
    plan: &mut Plan,
    source: &Source,
    catalog: &Catalog,
    pc_root: Option<&str>,
) -> Result<Generated> {
    let cudaroot = pc_root.unwrap_or("${pcfiledir}/../..").to_string();
    let mut gen = Generated::default();
    let tk_mm = {
        let mut it = plan.version.split('.');
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => format!("{a}.{b}"),
            _ => format!("{}.0", plan.major),
        }
    };

    library_links(plan, source, catalog, &cudaroot, &tk_mm, &mut gen)?;
    driver_stub_entry(plan, &cudaroot, &tk_mm, &mut gen)?;
    nvcc_profile_entry(plan, &mut gen);
    version_files(plan, source, catalog)?;
    Ok(gen)
}

/// The SONAME and linker-name links of every shared library in `lib64/`, and its pkg-config
/// files, as NVIDIA names them (`cudart-13.5.pc`) and unversioned.
fn library_links(
    plan: &mut Plan,
    source: &Source,
    catalog: &Catalog,
    cudaroot: &str,
    tk_mm: &str,
    gen: &mut Generated,
) -> Result<()> {
    let mut by_linker: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    for (dest, e) in &plan.entries {
        let Some(file) = dest.strip_prefix("lib64/") else {
            continue;
        };
        if file.contains('/') {
            continue;
        }
        let Item::File { src, .. } = &e.item else {
            continue;
        };
        if !(file.ends_with(".so") || file.contains(".so.")) {
            continue;
        }
        let soname = soname_of(src)?;
        if let Some(l) = cudist_catalog::linker_name(file) {
            by_linker
                .entry(l)
                .or_default()
                .push((file.to_string(), soname));
        }
    }
    let version_key =
        |s: &str| -> Vec<u32> { s.split('.').filter_map(|p| p.parse().ok()).collect() };
    for (linker, mut files) in by_linker {
        files.sort_by_key(|(f, so)| version_key(so.as_deref().unwrap_or(f)));
        let (file, soname) = files.last().cloned().unwrap();
        if files.len() > 1 {
            gen.notes.push(format!(
                "{linker}: several libraries ({}); the link points at the newest, {}",
                files
                    .iter()
                    .map(|(f, _)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                file
            ));
        }
        let mut row = LibRow {
            file: format!("lib64/{file}"),
            soname: soname.clone(),
            links: Vec::new(),
            pkg_config: Vec::new(),
        };
        let origin = plan.entries[&row.file].origin.clone();
        // SONAME link, where the file carries another name.
        if let Some(so) = &soname {
            let p = format!("lib64/{so}");
            if so != &file && !plan.entries.contains_key(&p) {
                plan.entries.insert(
                    p.clone(),
                    Entry {
                        item: Item::Symlink {
                            target: file.clone(),
                        },
                        origin: "cudist".into(),
                    },
                );
                row.links.push(p);
            }
        }
        let lp = format!("lib64/{linker}");
        if linker != file && !plan.entries.contains_key(&lp) {
            let target = soname
                .clone()
                .filter(|s| s != &linker)
                .unwrap_or(file.clone());
            plan.entries.insert(
                lp.clone(),
                Entry {
                    item: Item::Symlink { target },
                    origin: "cudist".into(),
                },
            );
            row.links.push(lp);
        }
        // pkg-config, as NVIDIA names them (`cudart-13.5.pc`) and unversioned.
        let stem = linker.trim_start_matches("lib").trim_end_matches(".so");
        if !stem.contains("builtins") {
            let description = soname
                .as_deref()
                .and_then(|s| catalog.library_by_soname_hinted(s, Some(plan.major)))
                .map(|m| m.library.description.clone())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| format!("NVIDIA {stem}"));
            let version = source
                .packages
                .iter()
                .find(|p| p.name == origin)
                .map(|p| p.version.clone())
                .unwrap_or(plan.version.clone());
            let pc = pkg_config(cudaroot, stem, &description, &version, "${libdir}", &origin);
            for name in [format!("{stem}-{tk_mm}.pc"), format!("{stem}.pc")] {
                let p = format!("lib64/pkgconfig/{name}");
                if !plan.entries.contains_key(&p) {
                    plan.entries.insert(p.clone(), bytes(pc.clone(), false));
                    row.pkg_config.push(p);
                }
            }
        }
        gen.libraries.push(row);
    }
    Ok(())
}

/// The driver stub `lib64/stubs/libcuda.so` (the package's, or generated from the installed
/// `cuda.h`) and its pkg-config files; a note when there is none.
fn driver_stub_entry(
    plan: &mut Plan,
    cudaroot: &str,
    tk_mm: &str,
    gen: &mut Generated,
) -> Result<()> {
    let stub_path = "lib64/stubs/libcuda.so";
    if let Some(e) = plan.entries.get(stub_path) {
        gen.stub = Some(StubRow {
            path: stub_path.into(),
            soname: "libcuda.so.1".into(),
            symbols: 0,
            from: e.origin.clone(),
            pkg_config: Vec::new(),
        });
    } else if let Some(Entry {
        item: Item::File { src, .. },
        ..
    }) = plan.entries.get("include/cuda.h")
    {
        let header = std::fs::read_to_string(src)
            .with_context(|| format!("cannot read {}", src.display()))?;
        let (data, symbols) = driver_stub(&header)?;
        if symbols < 50 {
            gen.notes.push(format!(
                "{} declares only {} driver functions; no stub written",
                src.display(),
                symbols
            ));
        } else {
            plan.entries.insert(stub_path.into(), bytes(data, false));
            gen.stub = Some(StubRow {
                path: stub_path.into(),
                soname: "libcuda.so.1".into(),
                symbols,
                from: "generated from include/cuda.h".into(),
                pkg_config: Vec::new(),
            });
        }
    } else {
        gen.notes.push(
            "no include/cuda.h (install the runtime wheel, nvidia-cuda-runtime): no libcuda.so stub, -lcuda will not link"
                .into(),
        );
    }
    if let Some(stub) = &mut gen.stub {
        let pc = pkg_config(
            cudaroot,
            "cuda",
            "CUDA driver API (link-time stub; the driver provides libcuda.so.1 at run time)",
            &plan.version,
            "${libdir}/stubs",
            "cudist",
        );
        for name in [format!("cuda-{tk_mm}.pc"), "cuda.pc".to_string()] {
            let p = format!("lib64/pkgconfig/{name}");
            if !plan.entries.contains_key(&p) {
                plan.entries.insert(p.clone(), bytes(pc.clone(), false));
                stub.pkg_config.push(p);
            }
        }
    }
    Ok(())
}

/// `bin/nvcc.profile`, when there is an nvcc to read it; a note when there is none.
fn nvcc_profile_entry(plan: &mut Plan, gen: &mut Generated) {
    if plan.entries.contains_key("bin/nvcc") {
        let cccl = plan.entries.keys().any(|k| k.starts_with("include/cccl/"));
        plan.entries
            .insert("bin/nvcc.profile".into(), bytes(nvcc_profile(cccl), false));
    } else {
        plan.entries.remove("bin/nvcc.profile");
        gen.notes.push(
            "no nvcc: the installed packages hold no nvcc driver (CUDA 12's nvidia-cuda-nvcc-cu12 ships only ptxas and NVVM; \
             for CUDA 13 install nvidia-cuda-nvcc); host code links, .cu files cannot be compiled"
                .into(),
        );
    }
}

/// `version.json` (NVIDIA's form) and `version.txt` (what CMake's FindCUDAToolkit reads when there
/// is no nvcc).
fn version_files(plan: &mut Plan, source: &Source, catalog: &Catalog) -> Result<()> {
    let mut vj = serde_json::Map::new();
    vj.insert(
        "cuda".into(),
        serde_json::json!({"name": "CUDA SDK", "version": plan.version}),
    );
    for p in &source.packages {
        let (key, title) = match catalog.component_by_pip(&p.name) {
            Some((c, _)) => (c.redist.clone(), c.title.clone()),
            None => (
                cudist_wheel::installed::normalise(&p.name)
                    .trim_start_matches("nvidia-")
                    .replace('-', "_"),
                p.name.clone(),
            ),
        };
        vj.entry(key)
            .or_insert(serde_json::json!({"name": title, "version": p.version}));
    }
    let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(vj))?;
    text.push('\n');
    plan.entries
        .insert("version.json".into(), bytes(text.into_bytes(), false));
    plan.entries.insert(
        "version.txt".into(),
        bytes(
            format!("CUDA Version {}\n", plan.version).into_bytes(),
            false,
        ),
    );
    Ok(())
}

fn bytes(data: Vec<u8>, exec: bool) -> Entry {
    Entry {
        item: Item::Bytes { data, exec },
        origin: "cudist".into(),
    }
}

/// A pkg-config file in the shape of NVIDIA's.
fn pkg_config(
    cudaroot: &str,
    stem: &str,
    description: &str,
    version: &str,
    libdir: &str,
    origin: &str,
) -> Vec<u8> {
    format!(
        "# Written by cudist toolkit for {origin}.\n\
         cudaroot={cudaroot}\n\
         libdir=${{cudaroot}}/lib64\n\
         includedir=${{cudaroot}}/include\n\
         \n\
         Name: {stem}\n\
         Description: {description}\n\
         Version: {version}\n\
         Libs: -L{libdir} -l{stem}\n\
         Cflags: -I${{includedir}}\n"
    )
    .into_bytes()
}

/// The profile nvcc reads from its own directory: this root's nvvm/, include/ and lib64/.
fn nvcc_profile(cccl: bool) -> Vec<u8> {
    let mut s = String::from(
        "# Written by cudist toolkit: nvcc finds NVVM, headers and libraries in this root.\n\
         TOP              = $(_HERE_)/..\n\
         \n\
         CICC_PATH        = $(TOP)/nvvm/bin\n\
         NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice\n\
         \n\
         LD_LIBRARY_PATH += $(TOP)/lib64:\n\
         PATH            += $(CICC_PATH):$(_HERE_):\n\
         \n\
         INCLUDES        +=  \"-I$(TOP)/include\" $(_SPACE_)\n",
    );
    if cccl {
        s.push_str("SYSTEM_INCLUDES +=  \"-isystem\" \"$(TOP)/include/cccl\" $(_SPACE_)\n");
    }
    s.push_str(
        "\n\
         LIBRARIES        =+ $(_SPACE_) \"-L$(TOP)/lib64/stubs\" \"-L$(TOP)/lib64\"\n\
         \n\
         CUDAFE_FLAGS    +=\n\
         PTXAS_FLAGS     +=\n",
    );
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_api_names_follow_the_header_macros() {
        let h = "#define CUDAAPI\n\
                 #define cuCtxCreate cuCtxCreate_v2\n\
                 #define cuMemcpyHtoD __CUDA_API_PTDS(cuMemcpyHtoD_v2)\n\
                 #define cuStreamQuery __CUDA_API_PTSZ(cuStreamQuery)\n\
                 #define CU_LAUNCH_PARAM_END ((void*)0x00)\n\
                 #define cuFoo(x) x\n\
                 CUresult CUDAAPI cuInit(unsigned int Flags);\n\
                 __CUDA_DEPRECATED CUresult CUDAAPI\n  cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);\n\
                 typedef CUresult (CUDAAPI *PFN_cuInit)(unsigned int);\n";
        assert_eq!(
            driver_api_names(h),
            vec![
                "cuCtxCreate",
                "cuCtxCreate_v2",
                "cuInit",
                "cuMemcpyHtoD_v2_ptds",
                "cuStreamQuery_ptsz"
            ]
        );
    }
}
