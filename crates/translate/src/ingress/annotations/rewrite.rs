//! Path rewriting, regex paths and the redirect of plain HTTP to HTTPS.

use super::Annotations;
use super::reader::{Read, Reader, boolean};

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    if let Read::Valid(t) = r.setting("rewrite-target", Some("rewrite-target"), target) {
        out.rewrite_target = Some(t);
    }
    if let Read::Valid(b) = r.setting("use-regex", Some("use-regex"), boolean) {
        out.use_regex = b;
    }
    if let Read::Valid(b) = r.setting("ssl-redirect", Some("ssl-redirect"), boolean) {
        out.ssl_redirect = b;
    }
    if let Read::Valid(b) = r.setting("force-ssl-redirect", Some("force-ssl-redirect"), boolean) {
        out.force_ssl_redirect = b;
    }
}

/// The path requests are sent with: it replaces the whole path (as
/// ingress-nginx's `rewrite` does), `$1`…`$9` standing for the groups
/// the path's regular expression captured.
fn target(value: &str) -> Result<String, String> {
    if !value.starts_with('/') && !value.starts_with('$') {
        return Err("must be a path starting with / (or with a capture group like $1)".into());
    }
    if value
        .chars()
        .any(|c| c.is_ascii_control() || c == ' ' || c == '?' || c == '#')
    {
        return Err("contains characters not allowed in a path".into());
    }
    let mut bytes = value.bytes().peekable();
    while let Some(b) = bytes.next() {
        if b == b'$' && !bytes.peek().is_some_and(|n| n.is_ascii_digit()) {
            return Err("a $ must be followed by a capture group number ($1 to $9)".into());
        }
    }
    Ok(value.to_string())
}

/// Whether a rewrite target names capture groups.
pub fn has_captures(target: &str) -> bool {
    target.contains('$')
}

/// The target in the substitution syntax of Rust's `regex` (`${1}`, so
/// that `$1abc` is group 1 followed by `abc`).
pub fn substitution(target: &str) -> String {
    let mut out = String::with_capacity(target.len() + 8);
    let mut chars = target.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            out.push_str(&format!("${{{digits}}}"));
        } else {
            out.push(c);
        }
    }
    out
}
