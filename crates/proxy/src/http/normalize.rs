//! Request path normalisation, done once before route matching; the
//! normalised path is also what the upstream receives, so the router and the
//! backend never disagree about which resource was asked for.
//!
//! Steps, in order: percent-decode the unreserved characters (RFC 3986
//! section 2.3) and upper-case the hex of every other escape; refuse an
//! encoded NUL, a malformed escape, and (when configured) an encoded `/` or
//! `\`; remove dot segments (section 5.2.4); optionally merge repeated
//! slashes. The query is not touched. A path that needs none of this is
//! returned borrowed, without allocating.

use std::borrow::Cow;
use std::fmt;

/// What to do with `%2F` and `%5C` in a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EscapedSlashes {
    /// Forward unchanged (they never split segments for matching).
    #[default]
    Keep,
    /// Answer 400.
    Reject,
}

/// Path normalisation settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathOptions {
    pub escaped_slashes: EscapedSlashes,
    /// Collapse `//` into `/` (off by default, as in Envoy).
    pub merge_slashes: bool,
}

/// Why a path was refused (400).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// `%` not followed by two hex digits.
    MalformedEscape,
    /// `%00`, or a raw NUL or `#`.
    ForbiddenCharacter,
    /// `%2F` or `%5C` while [`EscapedSlashes::Reject`].
    EscapedSlash,
}

impl PathError {
    /// Short label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            PathError::MalformedEscape => "malformed_escape",
            PathError::ForbiddenCharacter => "forbidden_character",
            PathError::EscapedSlash => "escaped_slash",
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Normalises an origin-form path (`/...`). Anything else (`*`) is returned
/// as it is.
pub fn normalize_path<'p>(path: &'p str, options: &PathOptions) -> Result<Cow<'p, str>, PathError> {
    if !path.starts_with('/') {
        return Ok(Cow::Borrowed(path));
    }
    let bytes = path.as_bytes();
    if bytes.iter().any(|&b| b == 0 || b == b'#') {
        return Err(PathError::ForbiddenCharacter);
    }
    let has_escape = bytes.contains(&b'%');
    let merges = options.merge_slashes && path.contains("//");
    if !(has_escape || merges || has_dot_segment(path)) {
        return Ok(Cow::Borrowed(path));
    }
    let decoded = if has_escape {
        Cow::Owned(decode_unreserved(bytes, options.escaped_slashes)?)
    } else {
        Cow::Borrowed(path)
    };
    let cleaned = remove_dot_segments(&decoded, options.merge_slashes);
    if cleaned == path {
        return Ok(Cow::Borrowed(path));
    }
    Ok(Cow::Owned(cleaned))
}

/// Is any segment `.` or `..`?
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|s| s == "." || s == "..")
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";

fn decode_unreserved(bytes: &[u8], slashes: EscapedSlashes) -> Result<String, PathError> {
    // Bytes, not chars: a multi-byte UTF-8 character is copied byte by
    // byte and must come out as the same character.
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != b'%' {
            out.push(b);
            i += 1;
            continue;
        }
        let hi = bytes.get(i + 1).copied().and_then(hex_value);
        let lo = bytes.get(i + 2).copied().and_then(hex_value);
        let (Some(hi), Some(lo)) = (hi, lo) else {
            return Err(PathError::MalformedEscape);
        };
        let value = hi << 4 | lo;
        if value == 0 {
            return Err(PathError::ForbiddenCharacter);
        }
        if matches!(value, b'/' | b'\\') && slashes == EscapedSlashes::Reject {
            return Err(PathError::EscapedSlash);
        }
        if is_unreserved(value) {
            out.push(value);
        } else {
            out.push(b'%');
            for nibble in [hi, lo] {
                out.push(UPPER_HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'));
            }
        }
        i += 3;
    }
    // Valid: the input was UTF-8 and only ASCII was decoded or added.
    String::from_utf8(out).map_err(|_| PathError::MalformedEscape)
}

/// RFC 3986 section 5.2.4 on a path starting with `/`: `.` segments go,
/// `..` removes the segment before it (never above the root); a path that
/// ended in a dot segment keeps its trailing slash.
fn remove_dot_segments(path: &str, merge_slashes: bool) -> String {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let mut out: Vec<&str> = Vec::new();
    let mut segments = rest.split('/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        match segment {
            "." => {}
            ".." => {
                out.pop();
            }
            "" if merge_slashes && !last => continue,
            other => {
                out.push(other);
                continue;
            }
        }
        if last {
            out.push("");
        }
    }
    let mut normalised = String::with_capacity(path.len());
    for segment in &out {
        normalised.push('/');
        normalised.push_str(segment);
    }
    if normalised.is_empty() {
        normalised.push('/');
    }
    normalised
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(path: &str) -> Result<String, PathError> {
        normalize_path(path, &PathOptions::default()).map(Cow::into_owned)
    }

    #[test]
    fn removes_dot_segments() {
        let cases = [
            ("/public/../admin/secret", "/admin/secret"),
            ("/a/./b", "/a/b"),
            ("/a/b/..", "/a/"),
            ("/a/b/.", "/a/b/"),
            ("/..", "/"),
            ("/../../etc/passwd", "/etc/passwd"),
            ("/.", "/"),
            ("/", "/"),
            ("/a/", "/a/"),
            ("/a//b", "/a//b"),
            ("/.hidden/..x", "/.hidden/..x"),
            ("/a/.../b", "/a/.../b"),
        ];
        for (raw, want) in cases {
            assert_eq!(norm(raw).unwrap(), want, "{raw}");
        }
    }

    #[test]
    fn decodes_unreserved_and_uppercases_the_rest() {
        let cases = [
            ("/%2e%2e/admin", "/admin"),
            ("/public/%2E%2E/admin", "/admin"),
            ("/public/.%2e/admin", "/admin"),
            ("/%41%62c", "/Abc"),
            ("/a%7eb", "/a~b"),
            ("/a%2fb", "/a%2Fb"),
            ("/a%20b", "/a%20b"),
            ("/a%3ab", "/a%3Ab"),
            ("/q%3fx", "/q%3Fx"),
            ("/pct%25", "/pct%25"),
            // Multi-byte characters survive decoding around them (found by
            // fuzzing: they used to come out as Latin-1 pairs).
            ("/é/%41", "/é/A"),
            ("/日本/%7e", "/日本/~"),
        ];
        for (raw, want) in cases {
            assert_eq!(norm(raw).unwrap(), want, "{raw}");
        }
    }

    #[test]
    fn refuses_bad_escapes_nul_and_fragments() {
        assert_eq!(norm("/a%2"), Err(PathError::MalformedEscape));
        assert_eq!(norm("/a%zz"), Err(PathError::MalformedEscape));
        assert_eq!(norm("/a%00b"), Err(PathError::ForbiddenCharacter));
        assert_eq!(norm("/a#b"), Err(PathError::ForbiddenCharacter));
    }

    #[test]
    fn escaped_slashes_keep_or_reject() {
        let reject = PathOptions {
            escaped_slashes: EscapedSlashes::Reject,
            merge_slashes: false,
        };
        assert_eq!(norm("/a%2Fb").unwrap(), "/a%2Fb");
        assert_eq!(norm("/a%5cb").unwrap(), "/a%5Cb");
        assert_eq!(
            normalize_path("/a%2fb", &reject),
            Err(PathError::EscapedSlash)
        );
        assert_eq!(
            normalize_path("/a%5Cb", &reject),
            Err(PathError::EscapedSlash)
        );
    }

    #[test]
    fn merges_slashes_when_asked() {
        let merge = PathOptions {
            merge_slashes: true,
            ..PathOptions::default()
        };
        let cases = [("//a///b/", "/a/b/"), ("//", "/"), ("/a//../b", "/b")];
        for (raw, want) in cases {
            assert_eq!(normalize_path(raw, &merge).unwrap(), want, "{raw}");
        }
    }

    #[test]
    fn unchanged_paths_are_borrowed() {
        for raw in ["/", "/api/users", "/a/b/", "*", "/.well-known/x"] {
            let out = normalize_path(raw, &PathOptions::default()).unwrap();
            assert!(matches!(out, Cow::Borrowed(_)), "{raw}");
        }
    }
}
