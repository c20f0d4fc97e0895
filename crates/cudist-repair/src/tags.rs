//! The platform tags of a repaired wheel: chosen from the policies it satisfies (or `--plat`), and
//! written into its file name and its `WHEEL` file.

use cudist_analysis::bail;
use cudist_analysis::error::Result;

/// The platform tags to write: `--plat`'s if the wheel satisfies that policy, else the most
/// compatible satisfied one.
pub fn choose_tags(
    p: &cudist_analysis::model::Platform,
    plat: Option<&str>,
) -> Result<Vec<String>> {
    let arch = p.arch.clone().unwrap_or_else(|| "x86_64".into());
    let Some(want) = plat else {
        return Ok(p.tags.clone());
    };
    let name = want.strip_suffix(&format!("_{arch}")).unwrap_or(want);
    let Some(policy) = cudist_catalog::manylinux::policy(name) else {
        bail!(
            "--plat {want}: not a known platform policy (e.g. manylinux_2_28, manylinux2014, \
             musllinux_1_2)"
        );
    };
    if !policy.covers(&arch) {
        let first = p
            .libc
            .as_deref()
            .and_then(|l| {
                cudist_catalog::manylinux::policies_for(l, &arch)
                    .first()
                    .copied()
            })
            .map_or(String::new(), |f| format!(" ({arch} starts at {})", f.name));
        bail!("--plat {want}: {} has no {arch} policy{first}", policy.name);
    }
    if policy.priority > 0 && policy.libc != p.libc {
        bail!(
            "--plat {want}: a {} policy, but the wheel is built for {}",
            policy.libc.as_deref().unwrap_or("?"),
            p.libc.as_deref().unwrap_or("an unknown C library")
        );
    }
    // musl has no symbol versions: every musllinux policy allows what the evaluated one allows.
    let judged = if policy.libc.as_deref() == Some("musl") {
        p.blocked
            .iter()
            .find(|b| b.policy.starts_with("musllinux_"))
    } else {
        p.blocked.iter().find(|b| b.policy == policy.name)
    };
    if let Some(b) = judged {
        bail!(
            "cannot be tagged {}: {} {}",
            policy.tags(&arch).join("/"),
            b.file,
            b.reason
        );
    }
    Ok(policy.tags(&arch))
}

/// `Tag:` values with their platform replaced by each of `plats` (`cp311-cp311-linux_x86_64` →
/// `cp311-cp311-manylinux_2_24_x86_64`), in order, without duplicates.
pub fn retag_lines(tags: &[String], plats: &[String]) -> Vec<String> {
    // No platform decided (a wheel without ELF files, tritonclient's): its tags stay. A WHEEL
    // file without a `Tag:` line is no wheel.
    if plats.is_empty() {
        return tags.to_vec();
    }
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let Some((head, _)) = t.rsplit_once('-') else {
            continue;
        };
        for p in plats {
            let tag = format!("{head}-{p}");
            if !out.contains(&tag) {
                out.push(tag);
            }
        }
    }
    out
}

/// The WHEEL file with its `Tag:` lines replaced (at the place of the first one).
pub fn rewrite_wheel_tags(text: &str, tags: &[String]) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in text.lines() {
        if line
            .split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("tag"))
        {
            if !done {
                for t in tags {
                    out.push_str(&format!("Tag: {t}\n"));
                }
                done = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !done {
        for t in tags {
            out.push_str(&format!("Tag: {t}\n"));
        }
    }
    out
}

/// The wheel file name with its platform part replaced by the (compressed) tag set.
pub fn retag_file_name(name: &str, plats: &[String]) -> String {
    match (name.strip_suffix(".whl"), plats.is_empty()) {
        (Some(stem), false) => match stem.rsplit_once('-') {
            Some((head, _)) => format!("{head}-{}.whl", plats.join(".")),
            None => name.to_string(),
        },
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_platform_keeps_the_tags() {
        let tags = vec!["py3-none-manylinux1_x86_64".to_string()];
        assert_eq!(retag_lines(&tags, &[]), tags);
        assert_eq!(
            retag_file_name("t-1.0-py3-none-manylinux1_x86_64.whl", &[]),
            "t-1.0-py3-none-manylinux1_x86_64.whl"
        );
    }

    #[test]
    fn retagging() {
        let plats = vec![
            "manylinux2014_x86_64".to_string(),
            "manylinux_2_17_x86_64".to_string(),
        ];
        assert_eq!(
            retag_file_name("cupy_cuda12x-14.2.0-cp311-cp311-linux_x86_64.whl", &plats),
            "cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
        );
        assert_eq!(
            retag_lines(&["cp311-cp311-linux_x86_64".into()], &plats),
            vec![
                "cp311-cp311-manylinux2014_x86_64",
                "cp311-cp311-manylinux_2_17_x86_64"
            ]
        );
        assert_eq!(
            rewrite_wheel_tags(
                "Wheel-Version: 1.0\nTag: a-b-c\nBuild: 1\n",
                &["a-b-x".into()]
            ),
            "Wheel-Version: 1.0\nTag: a-b-x\nBuild: 1\n"
        );
    }
}
