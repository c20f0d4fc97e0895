//! Will the device code run on each GPU, and is the driver new enough for the CUDA the file needs.
//!
//! The rules, as the CUDA runtime applies them when it loads a module:
//! - a cubin for `sm_XY` runs on a GPU of the same major with minor ≥ Y (`sm_80` runs on 8.6, not
//!   on 9.0); an architecture-specific cubin (`sm_90a`) only on exactly that SM; a family cubin
//!   (`sm_100f`) on the same major with minor ≥ Y;
//! - otherwise PTX for `compute_XY` with XY ≤ the GPU's SM (same rules for `a`/`f` PTX) is compiled
//!   by the driver at first use, if the driver knows that PTX ISA version (the toolkit that
//!   introduced it must not be newer than the driver's CUDA);
//! - else the kernel launch fails: "no kernel image is available for execution on the device".
//! - A file linked against the CUDA N runtime needs a driver at least at CUDA N's minor-version
//!   compatibility floor (catalog `minor_compat`).

use cudist_catalog::{driver_version_key, Catalog, CudaVersion};
use cudist_fatbin::EntryKind;
use serde::Serialize;

use crate::model::DeviceEntry;

use super::host::Host;

/// What one GPU will do with one file's device code.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GpuResult {
    /// The GPU, as the host names it.
    pub gpu: String,
    /// Its compute capability as an SM number (86 for 8.6).
    pub sm: u32,
    /// `cubin`, `jit`, `ptx-too-new` or `no-kernel-image`.
    pub status: &'static str,
    /// What happens, in words.
    pub detail: String,
}

// CUDA's compatibility rules live with the catalog, where `catalog sm --check` and slim use them too.
use cudist_catalog::targets::{parse_arch_name as parse_arch, runs_on};

fn sm_text(sm: u32) -> String {
    format!("{}.{}", sm / 10, sm % 10)
}

/// The verdict of each GPU of `host` for a file's device code (empty when it has none).
pub fn check_gpus(entries: &[DeviceEntry], host: &Host, catalog: &Catalog) -> Vec<GpuResult> {
    if entries.is_empty() {
        return Vec::new();
    }
    let driver_cuda = host.cuda(catalog);
    let mut out = Vec::new();
    for g in &host.gpus {
        let label = format!(
            "{} (sm_{})",
            g.name.clone().unwrap_or_else(|| "GPU".into()),
            g.sm
        );
        let cubins: Vec<&str> = entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Cubin))
            .filter(|e| parse_arch(&e.arch).is_some_and(|(sm, suf)| runs_on(sm, suf, g.sm, false)))
            .map(|e| e.arch.as_str())
            .collect();
        if let Some(best) = cubins.iter().max_by_key(|a| parse_arch(a).map(|(s, _)| s)) {
            out.push(GpuResult {
                gpu: label,
                sm: g.sm,
                status: "cubin",
                detail: format!("runs the {best} cubin"),
            });
            continue;
        }
        // The PTX the driver would compile: of the highest SM that fits (as
        // `targets::pick` chooses, and slim keeps), else the next the driver can compile.
        let mut ptx: Vec<&DeviceEntry> = entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Ptx))
            .filter(|e| parse_arch(&e.arch).is_some_and(|(sm, suf)| runs_on(sm, suf, g.sm, true)))
            .collect();
        ptx.sort_by_key(|e| std::cmp::Reverse(parse_arch(&e.arch).map(|(sm, _)| sm)));
        let isa_cuda = |e: &DeviceEntry| {
            CudaVersion::parse(&e.version).and_then(|isa| catalog.cuda_for_ptx_isa(isa))
        };
        let jittable = ptx.iter().find(|e| match (isa_cuda(e), driver_cuda) {
            (Some(need), Some(have)) => need <= have,
            (None, _) => true,
            (Some(_), None) => true,
        });
        // In SM order (sm_70 before sm_100), each once.
        let mut natives: Vec<&str> = entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Cubin))
            .map(|e| e.arch.as_str())
            .collect();
        natives.sort_by_key(|a| (parse_arch(a).map(|(sm, _)| sm), *a));
        natives.dedup();
        let result = if let Some(e) = jittable {
            GpuResult {
                gpu: label,
                sm: g.sm,
                status: "jit",
                detail: format!(
                    "no cubin for sm_{}: the driver compiles the {} PTX (ISA {}) at first use, which can take minutes",
                    g.sm, e.arch, e.version
                ),
            }
        } else if let Some(e) = ptx.first() {
            GpuResult {
                gpu: label,
                sm: g.sm,
                status: "ptx-too-new",
                detail: format!(
                    "no cubin for sm_{}, and the {} PTX (ISA {}, CUDA {}) is newer than the driver's CUDA {}: \
                     \"the provided PTX was compiled with an unsupported toolchain\"; update the driver",
                    g.sm,
                    e.arch,
                    e.version,
                    isa_cuda(e).map(|c| c.to_string()).unwrap_or("?".into()),
                    driver_cuda.map(|c| c.to_string()).unwrap_or("?".into())
                ),
            }
        } else {
            GpuResult {
                gpu: label,
                sm: g.sm,
                status: "no-kernel-image",
                detail: format!(
                    "\"no kernel image is available for execution on the device\": compute capability {} has no cubin \
                     and no usable PTX here (cubins: {})",
                    sm_text(g.sm),
                    if natives.is_empty() { "none".to_string() } else { natives.join(", ") }
                ),
            }
        };
        out.push(result);
    }
    out
}

/// The driver against the CUDA runtime majors a file needs (`libcudart.so.12` → 12).
pub fn check_driver(cuda_majors: &[u32], host: &Host, catalog: &Catalog) -> Vec<String> {
    let Some(driver) = host.driver.as_deref() else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for &major in cuda_majors {
        if let Some(floor) = catalog.minor_compat_floor(major) {
            if driver_version_key(driver) < driver_version_key(&floor.min_driver) {
                problems.push(format!(
                    "driver {driver} is too old for CUDA {major}: it needs at least {} (\"CUDA driver version is \
                     insufficient for CUDA runtime version\"); update the driver or use a CUDA {} build",
                    floor.min_driver,
                    major.saturating_sub(1)
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_rules() {
        assert_eq!(parse_arch("sm_90a"), Some((90, Some('a'))));
        assert_eq!(parse_arch("sm_120f"), Some((120, Some('f'))));
        assert_eq!(parse_arch("sm_80"), Some((80, None)));
        // Cubins: same major, minor not lower.
        assert!(runs_on(80, None, 86, false));
        assert!(!runs_on(86, None, 80, false));
        assert!(!runs_on(80, None, 90, false));
        assert!(runs_on(100, None, 103, false));
        assert!(!runs_on(90, Some('a'), 100, false));
        assert!(runs_on(90, Some('a'), 90, false));
        assert!(runs_on(100, Some('f'), 103, false));
        assert!(!runs_on(100, Some('f'), 120, false));
        // PTX: any newer SM, but a/f PTX keeps its restriction.
        assert!(runs_on(80, None, 120, true));
        assert!(!runs_on(90, None, 86, true));
        assert!(!runs_on(100, Some('a'), 103, true));
        assert!(runs_on(120, Some('f'), 121, true));
    }
}
