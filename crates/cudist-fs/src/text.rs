//! Text taken from an input (a URL from an index page, a host profile's GPU name, a file name)
//! made fit to print: an escape sequence in it must not reach the terminal, and a field of
//! megabytes must not fill a report.

/// `s` with its control characters written as escapes (`\u{1b}`, `\n`) and cut after `max`
/// characters, saying how many more there were.
///
/// ```
/// use cudist_fs::printable;
/// assert_eq!(printable("T4\u{1b}[2J", 200), "T4\\u{1b}[2J");
/// assert_eq!(printable("a\r\nb", 200), "a\\r\\nb");
/// assert_eq!(printable("abcdef", 4), "abcd… (2 more characters)");
/// ```
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == max {
            out.push_str(&format!("… ({} more characters)", s.chars().count() - max));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
