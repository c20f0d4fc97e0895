//! Whether a requirement's environment marker can hold on Linux, where every artifact cudist
//! repairs or judges runs: `Requires-Dist: nvidia-cublas-cu12; platform_system == "Windows"` does
//! not declare cuBLAS for a Linux wheel, `cuda-toolkit[cublas]==13.*; platform_system == "Linux"`
//! does.
//!
//! Hand-written on purpose: a PEP 508 evaluator (pep508_rs) needs a complete target environment
//! (Python version, implementation, machine), which a wheel does not name; here only the variables
//! that say the operating system are known (`platform_system` = `Linux`, `sys_platform` = `linux`,
//! `os_name` = `posix`) and every other comparison is unknown. Evaluation is three-valued, so a
//! marker is ruled out only when it is false whatever the unknown variables are.

/// `true`, `false`, or unknown (`None`).
type Truth = Option<bool>;

/// Whether the marker (the text after `;`) can be true on Linux. A marker that cannot be parsed
/// can be: nothing is ruled out on a guess.
///
/// ```
/// use cudist_analysis::marker::may_hold_on_linux;
/// assert!(may_hold_on_linux(r#"platform_system == "Linux" and python_version >= "3.9""#));
/// assert!(!may_hold_on_linux(r#"platform_system == "Windows""#));
/// assert!(!may_hold_on_linux(r#"sys_platform == 'win32' or sys_platform == 'darwin'"#));
/// assert!(may_hold_on_linux(r#"extra == "cuda""#));
/// ```
pub fn may_hold_on_linux(marker: &str) -> bool {
    let tokens = tokenize(marker);
    let mut p = Parser { tokens, at: 0 };
    match p.or() {
        Some(t) if p.at == p.tokens.len() => t != Some(false),
        _ => true,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Op(String),
    Open,
    Close,
}

fn tokenize(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Token::Open);
            i += 1;
        } else if c == ')' {
            out.push(Token::Close);
            i += 1;
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .map_or(chars.len(), |p| i + 1 + p);
            out.push(Token::Str(chars[i + 1..end].iter().collect()));
            i = end + 1;
        } else if "<>=!~".contains(c) {
            let start = i;
            while i < chars.len() && "<>=!~".contains(chars[i]) {
                i += 1;
            }
            out.push(Token::Op(chars[start..i].iter().collect()));
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !"()\"'<>=!~".contains(chars[i]) {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        }
    }
    out
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(x)) if x == w)
    }

    fn or(&mut self) -> Option<Truth> {
        let mut acc = self.and()?;
        while self.peek_word("or") {
            self.at += 1;
            let rhs = self.and()?;
            acc = match (acc, rhs) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
        }
        Some(acc)
    }

    fn and(&mut self) -> Option<Truth> {
        let mut acc = self.atom()?;
        while self.peek_word("and") {
            self.at += 1;
            let rhs = self.atom()?;
            acc = match (acc, rhs) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
        }
        Some(acc)
    }

    fn atom(&mut self) -> Option<Truth> {
        if self.tokens.get(self.at) == Some(&Token::Open) {
            self.at += 1;
            let t = self.or()?;
            if self.tokens.get(self.at) != Some(&Token::Close) {
                return None;
            }
            self.at += 1;
            return Some(t);
        }
        let lhs = self.value()?;
        let op = match self.tokens.get(self.at)? {
            Token::Op(o) => o.clone(),
            Token::Word(w) if w == "in" => "in".to_string(),
            Token::Word(w) if w == "not" => {
                self.at += 1;
                if !self.peek_word("in") {
                    return None;
                }
                "not in".to_string()
            }
            _ => return None,
        };
        self.at += 1;
        let rhs = self.value()?;
        Some(compare(&lhs, &op, &rhs))
    }

    fn value(&mut self) -> Option<Value> {
        let v = match self.tokens.get(self.at)? {
            Token::Str(s) => Value::Literal(s.clone()),
            Token::Word(w) => Value::Variable(w.clone()),
            _ => return None,
        };
        self.at += 1;
        Some(v)
    }
}

enum Value {
    Variable(String),
    Literal(String),
}

/// The value of a marker variable on Linux, when the operating system alone decides it.
fn on_linux(variable: &str) -> Option<&'static str> {
    match variable {
        "platform_system" => Some("Linux"),
        "sys_platform" => Some("linux"),
        "os_name" => Some("posix"),
        _ => None,
    }
}

fn compare(lhs: &Value, op: &str, rhs: &Value) -> Truth {
    let known = |v: &Value| match v {
        Value::Literal(s) => Some(s.clone()),
        Value::Variable(name) => on_linux(name).map(str::to_string),
    };
    let (a, b) = (known(lhs)?, known(rhs)?);
    match op {
        "==" | "===" => Some(a == b),
        "!=" => Some(a != b),
        "in" => Some(b.contains(&a)),
        "not in" => Some(!b.contains(&a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::may_hold_on_linux as linux;

    #[test]
    fn only_markers_false_on_linux_whatever_the_rest_are_ruled_out() {
        for m in [
            r#"platform_system == "Linux""#,
            r#"platform_system == "Linux" and platform_machine == "x86_64""#,
            r#"sys_platform == "linux" or sys_platform == "win32""#,
            r#"platform_system != "Windows""#,
            r#"python_version >= "3.10""#,
            r#"extra == "cuda12""#,
            r#"(platform_system == "Linux" or platform_system == "Darwin") and extra == "gpu""#,
            r#"'linux' in sys_platform"#,
            r#"this is not a marker"#,
        ] {
            assert!(linux(m), "{m}");
        }
        for m in [
            r#"platform_system == "Windows""#,
            r#"platform_system == "Darwin" and python_version >= "3.9""#,
            r#"sys_platform == "win32" or sys_platform == "darwin""#,
            r#"os_name == "nt""#,
            r#"platform_system != "Linux""#,
            r#"(sys_platform == "win32") and extra == "cuda""#,
            r#"sys_platform not in "linux""#,
        ] {
            assert!(!linux(m), "{m}");
        }
    }
}
