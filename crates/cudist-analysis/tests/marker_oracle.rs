//! `marker::may_hold_on_linux` against pip's own marker evaluator (`packaging`, vendored in pip):
//! for every marker of a generated corpus, pip evaluates it on a grid of Linux environments.
//! cudist may only rule a marker out when pip finds it false on all of them, and must agree
//! exactly for markers that name only the operating system.

use cudist_analysis::marker::may_hold_on_linux;

const OS_ATOMS: &[&str] = &[
    r#"platform_system == "Linux""#,
    r#"platform_system == "Windows""#,
    r#"platform_system != "Linux""#,
    r#"sys_platform == "linux""#,
    r#"sys_platform == 'win32'"#,
    r#"sys_platform != "darwin""#,
    r#"os_name == "nt""#,
    r#"os_name == "posix""#,
    r#"'linux' in sys_platform"#,
    r#"sys_platform not in "win32 cygwin""#,
];
const OTHER_ATOMS: &[&str] = &[
    r#"python_version >= "3.10""#,
    r#"platform_machine == "x86_64""#,
    r#"extra == "cuda""#,
];

#[test]
fn rules_out_only_what_pip_finds_false_on_linux() {
    let python = std::env::var("CUDIST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut corpus: Vec<(String, bool)> = Vec::new();
    let all: Vec<(&str, bool)> = OS_ATOMS
        .iter()
        .map(|a| (*a, true))
        .chain(OTHER_ATOMS.iter().map(|a| (*a, false)))
        .collect();
    for (a, a_os) in &all {
        corpus.push((a.to_string(), *a_os));
        for (b, b_os) in &all {
            for join in ["and", "or"] {
                corpus.push((format!("{a} {join} {b}"), *a_os && *b_os));
                corpus.push((format!("({a} {join} {b}) and {}", OS_ATOMS[1]), false));
            }
        }
    }
    let markers: Vec<&str> = corpus.iter().map(|(m, _)| m.as_str()).collect();
    let script = r#"
import itertools, json, sys
from pip._vendor.packaging.markers import Marker
out = []
for m in json.load(sys.stdin):
    ok = False
    for pv, mach, ex in itertools.product(["3.9", "3.11", "3.13"], ["x86_64", "aarch64"], ["", "cuda"]):
        env = {"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix",
               "python_version": pv, "platform_machine": mach, "extra": ex}
        ok = ok or Marker(m).evaluate(env)
    out.append(ok)
print(json.dumps(out))
"#;
    let mut child = match std::process::Command::new(&python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "no {python} in CI: {e}");
            return;
        }
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&markers).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pip: Vec<bool> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pip.len(), corpus.len());
    let mut ruled_out = 0;
    for ((m, os_only), pip_true) in corpus.iter().zip(pip) {
        let ours = may_hold_on_linux(m);
        if !ours {
            ruled_out += 1;
            assert!(
                !pip_true,
                "cudist rules out {m:?}, pip finds it true on Linux"
            );
        }
        if *os_only {
            assert_eq!(ours, pip_true, "{m:?}");
        }
    }
    assert!(ruled_out > 100, "the corpus rules out {ruled_out} markers");
}
