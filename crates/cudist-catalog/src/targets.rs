//! GPU targets as people write them, and which GPUs run code built for each.
//!
//! The spellings are the ones build systems already use, so a list can be pasted from a build:
//! `TORCH_CUDA_ARCH_LIST` (`"7.5;8.6;9.0+PTX"`), `CMAKE_CUDA_ARCHITECTURES` (`75;86-real;90a-virtual`),
//! nvcc's `-gencode arch=compute_90,code=[sm_90,compute_90]`, and cuobjdump's `sm_90` /
//! `compute_90`, separated by `;`, `,` or spaces.
//!
//! Hand-written: these are CUDA's compatibility rules, which no crate carries. A cubin runs on
//! GPUs of its major with the same or a higher minor (`sm_80` on 8.0, 8.6, 8.7, 8.9); an
//! arch-specific cubin (`sm_90a`) only on its own SM; a family cubin (`sm_100f`) on its family
//! (same major, same or higher minor). PTX is compiled by the driver for the GPU it runs on, so it
//! runs on every GPU at least as new (`compute_80` on 8.x, 9.0, 10.0, 12.0), except arch-specific
//! and family PTX, which keep the cubins' limits. (CUDA C++ Programming Guide, "Binary
//! Compatibility", "PTX Compatibility" and the arch-/family-specific feature sets; the same rules
//! doctor applies to a file's device code, `runtime::gpu`.)

use serde::Serialize;

/// One target of a list: code for one SM, as a cubin, as PTX, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Target {
    /// The entry as written (`8.6+PTX`, `90a-real`, `arch=compute_90,code=sm_90`).
    pub written: String,
    /// The SM number: 86 for 8.6.
    pub sm: u32,
    /// `a` (arch-specific) or `f` (family), if any.
    pub suffix: Option<char>,
    /// A cubin for this SM is built.
    pub cubin: bool,
    /// PTX for this SM is built.
    pub ptx: bool,
}

impl Target {
    /// `sm_90a`: how cuobjdump and nvcc name the cubin.
    pub fn cubin_name(&self) -> String {
        format!(
            "sm_{}{}",
            self.sm,
            self.suffix.map(String::from).unwrap_or_default()
        )
    }

    /// `compute_90a`: how nvcc names the PTX.
    pub fn ptx_name(&self) -> String {
        format!(
            "compute_{}{}",
            self.sm,
            self.suffix.map(String::from).unwrap_or_default()
        )
    }
}

/// `sm_90a` or `compute_90a` → (90, Some('a')).
pub fn parse_arch_name(arch: &str) -> Option<(u32, Option<char>)> {
    let rest = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    sm_and_suffix(rest)
}

/// `90a` → (90, Some('a')); `86` → (86, None).
fn sm_and_suffix(s: &str) -> Option<(u32, Option<char>)> {
    let (digits, suffix) = match s.chars().last()? {
        c @ ('a' | 'f') => (&s[..s.len() - 1], Some(c)),
        _ => (s, None),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 3 {
        return None;
    }
    let sm: u32 = digits.parse().ok()?;
    (sm >= 10).then_some((sm, suffix))
}

/// Whether code for SM `sm` with `suffix` (a cubin, or PTX when `ptx`) runs on a GPU of SM `gpu`.
pub fn runs_on(sm: u32, suffix: Option<char>, gpu: u32, ptx: bool) -> bool {
    let same_major = sm / 10 == gpu / 10;
    match suffix {
        Some('a') => sm == gpu,
        Some('f') => same_major && gpu % 10 >= sm % 10,
        _ if ptx => sm <= gpu,
        _ => same_major && gpu % 10 >= sm % 10,
    }
}

/// One piece of device code as the runtime chooses among them: a cubin or PTX for an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The SM number (90 for sm_90 / compute_90).
    pub sm: u32,
    /// `a` or `f`, if any.
    pub suffix: Option<char>,
    /// PTX (JIT-compiled), not a cubin.
    pub ptx: bool,
}

/// Which of `codes` (one module's device code) the runtime runs on a GPU of SM `gpu`, as
/// indices: the compatible cubins of the highest SM (several when they tie, `sm_90` and
/// `sm_90a`), else the compatible PTX of the highest SM, JIT-compiled; empty when nothing runs
/// there ("no kernel image is available"). Whether the driver can JIT that PTX depends on the
/// driver, not on the file: doctor judges that.
pub fn pick(codes: &[Code], gpu: u32) -> Vec<usize> {
    for ptx in [false, true] {
        let fits: Vec<usize> = (0..codes.len())
            .filter(|&i| codes[i].ptx == ptx && runs_on(codes[i].sm, codes[i].suffix, gpu, ptx))
            .collect();
        if let Some(best) = fits.iter().map(|&i| codes[i].sm).max() {
            return fits.into_iter().filter(|&i| codes[i].sm == best).collect();
        }
    }
    Vec::new()
}

/// Parses a list of targets that may name GPUs or architectures (`H100`, `RTX 4090`, `Ampere`,
/// the catalog's `gpu_name` rows, matched whole and without regard to case): each name stands for
/// its row's targets, written `H100 (9.0)`.
pub fn parse_list_named(spec: &str, names: &[crate::GpuName]) -> Result<Vec<Target>, String> {
    let mut sorted: Vec<&crate::GpuName> = names.iter().collect();
    sorted.sort_by_key(|n| std::cmp::Reverse(n.name.len()));
    let is_sep = |c: char| c == ';' || c == ',' || c.is_whitespace();
    let mut out = Vec::new();
    let mut plain = String::new();
    let mut rest = spec;
    let mut at_boundary = true;
    while let Some(c) = rest.chars().next() {
        let named = at_boundary
            .then(|| {
                sorted.iter().find(|n| {
                    rest.len() >= n.name.len()
                        && rest.is_char_boundary(n.name.len())
                        && rest[..n.name.len()].eq_ignore_ascii_case(&n.name)
                        && rest[n.name.len()..].chars().next().is_none_or(is_sep)
                })
            })
            .flatten();
        if let Some(n) = named {
            if plain.split(is_sep).any(|w| !w.is_empty()) {
                out.extend(parse_list(&plain)?);
            }
            plain.clear();
            for mut t in parse_list(&n.targets)? {
                t.written = format!("{} ({})", n.name, t.written);
                out.push(t);
            }
            rest = &rest[n.name.len()..];
            at_boundary = false;
            continue;
        }
        plain.push(c);
        at_boundary = is_sep(c);
        rest = &rest[c.len_utf8()..];
    }
    if plain.split(is_sep).any(|w| !w.is_empty()) || out.is_empty() {
        out.extend(parse_list(&plain)?);
    }
    Ok(out)
}

/// Parses a list of targets. Errors name the entry and say what was expected.
pub fn parse_list(spec: &str) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    let words: Vec<&str> = spec
        .split(|c: char| c == ';' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        i += 1;
        // nvcc: `-gencode VALUE`, `-gencode=VALUE`, `--generate-code VALUE` (or `=VALUE`).
        let gencode = ["-gencode", "--generate-code"]
            .iter()
            .find_map(|flag| w.strip_prefix(flag));
        let value = match gencode {
            Some("") => match words.get(i) {
                Some(v) => {
                    i += 1;
                    Some(*v)
                }
                None => {
                    return Err(format!(
                        "{w:?}: expected arch=compute_XY,code=sm_XY after it"
                    ))
                }
            },
            Some(rest) => Some(rest.strip_prefix('=').unwrap_or(rest)),
            None if w.starts_with("arch=") => Some(w),
            None => None,
        };
        match value {
            Some(v) => out.extend(parse_gencode(v)?),
            None => {
                for entry in w.split(',').filter(|e| !e.is_empty()) {
                    out.push(parse_entry(entry)?);
                }
            }
        }
    }
    if out.is_empty() {
        return Err("no GPU target given (e.g. 8.6, sm_90, 90a, \"7.5;8.6+PTX\")".into());
    }
    Ok(out)
}

/// One entry that is not a gencode flag.
fn parse_entry(e: &str) -> Result<Target, String> {
    let bad = |why: &str| {
        Err(format!(
            "{e:?}: {why} (expected 8.6, 8.6+PTX, sm_86, compute_86, 86, 86-real, 86-virtual, 90a, 100f)"
        ))
    };
    let target = |sm: u32, suffix, cubin, ptx| Target {
        written: e.to_string(),
        sm,
        suffix,
        cubin,
        ptx,
    };
    if let Some(rest) = e.strip_prefix("sm_") {
        return match sm_and_suffix(rest) {
            Some((sm, s)) => Ok(target(sm, s, true, false)),
            None => bad("not an SM"),
        };
    }
    if let Some(rest) = e.strip_prefix("compute_") {
        return match sm_and_suffix(rest) {
            Some((sm, s)) => Ok(target(sm, s, false, true)),
            None => bad("not an SM"),
        };
    }
    if matches!(e, "all" | "all-major" | "native") {
        return bad("CMake's all, all-major and native depend on the toolkit or the machine; name the architectures");
    }
    // TORCH_CUDA_ARCH_LIST: 8.6, 9.0a, 8.6+PTX (a cubin; PTX too with +PTX).
    let (body, plus_ptx) = match e.strip_suffix("+PTX").or_else(|| e.strip_suffix("+ptx")) {
        Some(b) => (b, true),
        None => (e, false),
    };
    if let Some((major, minor)) = body.split_once('.') {
        let (minor, suffix) = match minor.chars().last() {
            Some(c @ ('a' | 'f')) => (&minor[..minor.len() - 1], Some(c)),
            _ => (minor, None),
        };
        let ok = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
        if !ok(major) || minor.len() != 1 || !ok(minor) {
            return bad("not a compute capability");
        }
        let sm = major.parse::<u32>().unwrap() * 10 + minor.parse::<u32>().unwrap();
        return Ok(target(sm, suffix, true, plus_ptx));
    }
    if plus_ptx {
        return bad("+PTX follows a compute capability such as 8.6");
    }
    // CMAKE_CUDA_ARCHITECTURES: 86 (cubin and PTX), 86-real, 86-virtual.
    let (body, cubin, ptx) = if let Some(b) = e.strip_suffix("-real") {
        (b, true, false)
    } else if let Some(b) = e.strip_suffix("-virtual") {
        (b, false, true)
    } else {
        (e, true, true)
    };
    match sm_and_suffix(body) {
        Some((sm, s)) => Ok(target(sm, s, cubin, ptx)),
        None => bad("not a GPU target"),
    }
}

/// `arch=compute_90,code=sm_90`, `arch=compute_90,code=[sm_90,compute_90]`, `arch=sm_90`.
fn parse_gencode(v: &str) -> Result<Vec<Target>, String> {
    let bad = |why: &str| {
        Err(format!(
            "{v:?}: {why} (expected arch=compute_XY,code=sm_XY or code=[sm_XY,compute_XY])"
        ))
    };
    let Some(rest) = v.strip_prefix("arch=") else {
        return bad("no arch=");
    };
    let (arch, code) = match rest.split_once(",code=") {
        Some((a, c)) => (a, Some(c)),
        None => (rest, None),
    };
    let Some((arch_sm, arch_suffix)) = parse_arch_name(arch) else {
        return bad("arch is not compute_XY or sm_XY");
    };
    let codes: Vec<&str> = match code {
        // `arch=sm_90` alone is nvcc's shorthand for code=[sm_90,compute_90].
        None if arch.starts_with("sm_") => vec!["sm", "compute"],
        None => vec!["compute"],
        Some(c) => c
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .filter(|c| !c.is_empty())
            .collect(),
    };
    let mut out: Vec<Target> = Vec::new();
    for c in codes {
        let (sm, suffix, is_ptx) = match c {
            "sm" => (arch_sm, arch_suffix, false),
            "compute" => (arch_sm, arch_suffix, true),
            _ => match parse_arch_name(c) {
                Some((sm, s)) => (sm, s, c.starts_with("compute_")),
                None => return bad("a code is not sm_XY or compute_XY"),
            },
        };
        match out.iter_mut().find(|t| t.sm == sm && t.suffix == suffix) {
            Some(t) if is_ptx => t.ptx = true,
            Some(t) => t.cubin = true,
            None => out.push(Target {
                written: v.to_string(),
                sm,
                suffix,
                cubin: !is_ptx,
                ptx: is_ptx,
            }),
        }
    }
    Ok(out)
}

/// One code of a checked target: what it is, what is wrong with it, and what it runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Checked {
    /// The entry as written.
    pub entry: String,
    /// `sm_86` for a cubin, `compute_86` for PTX.
    pub code: String,
    /// `cubin` or `ptx`.
    pub kind: &'static str,
    /// Why the toolkit cannot build it (empty when it can).
    pub problems: Vec<String>,
    /// The compute capabilities in the catalog it runs on (PTX: compiled by the driver at first
    /// use), as `sm_XY`.
    pub runs_on: Vec<String>,
}

/// Checks each target against the catalog, for the CUDA toolkit `cuda` when given: an SM the
/// catalog does not know, one the toolkit cannot target (too new, or dropped), an `a` or `f`
/// variant the SM does not have or the toolkit predates.
pub fn check(
    targets: &[Target],
    cuda: Option<crate::CudaVersion>,
    catalog: &crate::Catalog,
) -> Vec<Checked> {
    let v = |s: &str| crate::CudaVersion::parse(s);
    let mut archs: Vec<u32> = catalog.archs.iter().map(|a| a.sm).collect();
    archs.sort();
    let mut out = Vec::new();
    for t in targets {
        let arch = catalog.archs.iter().find(|a| a.sm == t.sm);
        let mut problems = Vec::new();
        match arch {
            None => problems.push(format!(
                "compute capability {}.{} is not in the catalog (`cudist catalog sm` lists them)",
                t.sm / 10,
                t.sm % 10
            )),
            Some(a) => {
                if let Some(c) = cuda {
                    if v(&a.first_cuda).is_some_and(|first| c < first) {
                        problems.push(format!(
                            "CUDA {c} cannot target sm_{}: its first toolkit is CUDA {}",
                            t.sm, a.first_cuda
                        ));
                    }
                    if let Some(last) = a.last_cuda.as_deref().and_then(v) {
                        if c > last {
                            problems.push(format!(
                                "CUDA {c} cannot target sm_{}: CUDA {last} was the last toolkit that could",
                                t.sm
                            ));
                        }
                    }
                }
                let (variant, from) = match t.suffix {
                    Some('a') => ("arch-specific (a)", a.arch_specific_from.as_deref()),
                    Some('f') => ("family (f)", a.family_from.as_deref()),
                    _ => ("", None),
                };
                if t.suffix.is_some() {
                    match (from.and_then(v), cuda) {
                        (None, _) => problems.push(format!(
                            "sm_{} has no {variant} variant in any CUDA release the catalog knows",
                            t.sm
                        )),
                        (Some(from), Some(c)) if c < from => problems.push(format!(
                            "CUDA {c} cannot build the {variant} variant of sm_{}: it first came with CUDA {from}",
                            t.sm
                        )),
                        _ => {}
                    }
                }
            }
        }
        for (is, ptx) in [(t.cubin, false), (t.ptx, true)] {
            if !is {
                continue;
            }
            out.push(Checked {
                entry: t.written.clone(),
                code: if ptx { t.ptx_name() } else { t.cubin_name() },
                kind: if ptx { "ptx" } else { "cubin" },
                problems: problems.clone(),
                runs_on: archs
                    .iter()
                    .filter(|&&gpu| runs_on(t.sm, t.suffix, gpu, ptx))
                    .map(|gpu| format!("sm_{gpu}"))
                    .collect(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_gpu_name_stands_for_known_sms_with_sources() {
        let cat = crate::Catalog::builtin();
        assert!(cat.gpu_names.len() >= 25, "{}", cat.gpu_names.len());
        for g in &cat.gpu_names {
            assert!(!g.sources.is_empty(), "{}: no source", g.name);
            for t in parse_list(&g.targets).unwrap() {
                assert!(
                    cat.archs.iter().any(|a| a.sm == t.sm),
                    "{}: sm_{} is not in the catalog's architectures",
                    g.name,
                    t.sm
                );
            }
        }
    }

    #[test]
    fn names_stand_for_their_targets() {
        let cat = crate::Catalog::builtin();
        let t = parse_list_named("H100;rtx 4090, 7.5 Ampere", &cat.gpu_names).unwrap();
        let got: Vec<(String, u32, bool)> =
            t.iter().map(|t| (t.written.clone(), t.sm, t.ptx)).collect();
        assert_eq!(
            got,
            vec![
                ("H100 (9.0)".to_string(), 90, false),
                ("RTX 4090 (8.9)".to_string(), 89, false),
                ("7.5".to_string(), 75, false),
                ("Ampere (8.0)".to_string(), 80, false),
                ("Ampere (8.6+PTX)".to_string(), 86, true),
            ]
        );
        // Whole entries only: A100 is not A10 followed by 0, L40S not L40.
        assert_eq!(parse_list_named("A100", &cat.gpu_names).unwrap()[0].sm, 80);
        assert_eq!(parse_list_named("L40S", &cat.gpu_names).unwrap()[0].sm, 89);
        assert!(parse_list_named("H1000", &cat.gpu_names).is_err());
        // Without names, the same as parse_list.
        assert_eq!(
            parse_list_named("75,86", &cat.gpu_names).unwrap(),
            parse_list("75,86").unwrap()
        );
    }

    use super::*;

    fn short(spec: &str) -> Vec<String> {
        parse_list(spec)
            .unwrap()
            .iter()
            .flat_map(|t| {
                let mut v = vec![];
                if t.cubin {
                    v.push(t.cubin_name());
                }
                if t.ptx {
                    v.push(t.ptx_name());
                }
                v
            })
            .collect()
    }

    #[test]
    fn every_spelling_builds_use() {
        // TORCH_CUDA_ARCH_LIST
        assert_eq!(
            short("7.5;8.6;9.0+PTX"),
            ["sm_75", "sm_86", "sm_90", "compute_90"]
        );
        assert_eq!(short("8.0 8.6 9.0a"), ["sm_80", "sm_86", "sm_90a"]);
        // CMAKE_CUDA_ARCHITECTURES
        assert_eq!(
            short("75;86-real;90a-virtual"),
            ["sm_75", "compute_75", "sm_86", "compute_90a"]
        );
        // comma lists, cuobjdump names
        assert_eq!(
            short("75,86,sm_100f,compute_120"),
            [
                "sm_75",
                "compute_75",
                "sm_86",
                "compute_86",
                "sm_100f",
                "compute_120"
            ]
        );
        // nvcc -gencode, every form
        assert_eq!(
            short("-gencode arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=[sm_90,compute_90] --generate-code=arch=compute_100a,code=sm_100a"),
            ["sm_80", "sm_90", "compute_90", "sm_100a"]
        );
        assert_eq!(short("-gencode arch=sm_86"), ["sm_86", "compute_86"]);
    }

    #[test]
    fn bad_entries_are_named() {
        for (spec, says) in [
            ("8.x", "\"8.x\": not a compute capability"),
            ("sm_", "\"sm_\": not an SM"),
            ("all", "name the architectures"),
            ("86+PTX", "+PTX follows"),
            ("H100", "not a GPU target"),
            ("-gencode", "expected arch="),
            ("-gencode arch=compute_90,code=sm_9x", "a code is not"),
            ("", "no GPU target"),
        ] {
            let e = parse_list(spec).unwrap_err();
            assert!(e.contains(says), "{spec:?}: {e}");
        }
    }

    #[test]
    fn a_list_checked_against_a_toolkit() {
        let catalog = crate::Catalog::builtin();
        let cuda = crate::CudaVersion::parse("13.0");
        let rows = check(
            &parse_list("5.0;8.6;9.0a;8.6a;12.0+PTX").unwrap(),
            cuda,
            &catalog,
        );
        let row = |code: &str| rows.iter().find(|r| r.code == code).unwrap();
        // sm_50 was dropped after CUDA 12.9 (catalog: last_cuda 12.9).
        assert!(
            row("sm_50").problems[0].contains("CUDA 12.9 was the last"),
            "{rows:?}"
        );
        assert!(row("sm_86").problems.is_empty());
        assert_eq!(row("sm_86").runs_on, ["sm_86", "sm_87", "sm_88", "sm_89"]);
        assert!(row("sm_90a").problems.is_empty());
        assert_eq!(row("sm_90a").runs_on, ["sm_90"]);
        assert!(row("sm_86a").problems[0].contains("no arch-specific (a) variant"));
        // PTX for 12.0 runs on 12.0 and 12.1, and nothing older.
        assert_eq!(row("compute_120").runs_on, ["sm_120", "sm_121"]);
        // Without a toolkit, only what no toolkit can build is a problem.
        let rows = check(&parse_list("5.0").unwrap(), None, &catalog);
        assert!(rows[0].problems.is_empty());
    }

    #[test]
    fn compatibility_rules() {
        // A cubin: its major, same or higher minor.
        assert!(runs_on(80, None, 86, false));
        assert!(!runs_on(86, None, 80, false));
        assert!(!runs_on(80, None, 90, false));
        // PTX: every newer GPU.
        assert!(runs_on(80, None, 120, true));
        // arch-specific: its own SM only, PTX too.
        assert!(runs_on(90, Some('a'), 90, false));
        assert!(!runs_on(100, Some('a'), 103, false));
        assert!(!runs_on(90, Some('a'), 100, true));
        // family: the family.
        assert!(runs_on(100, Some('f'), 103, false));
        assert!(!runs_on(100, Some('f'), 120, true));
        assert_eq!(parse_arch_name("compute_100f"), Some((100, Some('f'))));
        assert_eq!(parse_arch_name("sm_x"), None);
    }
}
