//! `path_normalize`: `coxswain_proxy::http::normalize::normalize_path` under
//! every option combination.
//!
//! Input: the raw bytes as the request path (lossily made UTF-8: `http`
//! hands the proxy `&str` paths, which may hold non-ASCII UTF-8).
//!
//! Properties, for each of the four `PathOptions`:
//! - never panics;
//! - a path not starting with `/` comes back unchanged;
//! - the output starts with `/`, holds no `.`/`..` segment, no NUL or `#`,
//!   and only upper-case escapes of reserved bytes (`%XX`, XX not unreserved);
//! - `merge_slashes` leaves no `//`;
//! - with `EscapedSlashes::Reject` there is no `%2F`/`%5C`;
//! - idempotent: normalising the output again gives the output;
//! - non-ASCII characters survive as they were (the output's are a
//!   subsequence of the input's: segments may go, bytes are not re-coded);
//! - errors do not depend on `merge_slashes`; `Keep` never answers
//!   `EscapedSlash`; `Reject` does only when an escaped slash is there, and
//!   otherwise agrees with `Keep`.

use std::borrow::Cow;

use coxswain_proxy::http::normalize::{EscapedSlashes, PathError, PathOptions, normalize_path};

const ALL_OPTIONS: [PathOptions; 4] = [
    PathOptions {
        escaped_slashes: EscapedSlashes::Keep,
        merge_slashes: false,
    },
    PathOptions {
        escaped_slashes: EscapedSlashes::Keep,
        merge_slashes: true,
    },
    PathOptions {
        escaped_slashes: EscapedSlashes::Reject,
        merge_slashes: false,
    },
    PathOptions {
        escaped_slashes: EscapedSlashes::Reject,
        merge_slashes: true,
    },
];

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn has_escaped_slash(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.contains("%2f") || lower.contains("%5c")
}

/// Is `small` a subsequence of `big`?
fn is_subsequence(small: &[char], big: &[char]) -> bool {
    let mut it = big.iter();
    small.iter().all(|c| it.any(|b| b == c))
}

fn non_ascii(s: &str) -> Vec<char> {
    s.chars().filter(|c| !c.is_ascii()).collect()
}

fn check_output(input: &str, out: &str, options: &PathOptions) {
    let ctx = || format!("input {input:?} options {options:?} output {out:?}");
    assert!(out.starts_with('/'), "output lost its leading /: {}", ctx());
    let body = out.strip_prefix('/').unwrap_or(out);
    for segment in body.split('/') {
        assert!(
            segment != "." && segment != "..",
            "dot segment left: {}",
            ctx()
        );
    }
    assert!(
        !out.contains('\0') && !out.contains('#'),
        "NUL or # in output: {}",
        ctx()
    );
    if options.merge_slashes {
        assert!(!out.contains("//"), "merge_slashes left //: {}", ctx());
    }
    if options.escaped_slashes == EscapedSlashes::Reject {
        assert!(!has_escaped_slash(out), "escaped slash passed: {}", ctx());
    }
    // Every escape is well formed, upper-case, and not an unreserved byte.
    let bytes = out.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).copied();
            let lo = bytes.get(i + 2).copied();
            let ok = match (hi, lo) {
                (Some(h), Some(l)) => {
                    let upper = |b: u8| b.is_ascii_digit() || (b'A'..=b'F').contains(&b);
                    upper(h)
                        && upper(l)
                        && !is_unreserved(hex(h).unwrap_or(0) << 4 | hex(l).unwrap_or(0))
                }
                _ => false,
            };
            assert!(ok, "bad escape at byte {i}: {}", ctx());
            i += 3;
        } else {
            i += 1;
        }
    }
    assert!(
        is_subsequence(&non_ascii(out), &non_ascii(input)),
        "non-ASCII characters changed: {}",
        ctx()
    );
    match normalize_path(out, options) {
        Ok(again) => assert_eq!(again, out, "not idempotent: {}", ctx()),
        Err(e) => panic!("output refused on second pass ({e:?}): {}", ctx()),
    }
}

/// One input through all four option combinations.
pub fn check_path(path: &str) {
    let results: Vec<Result<Cow<'_, str>, PathError>> = ALL_OPTIONS
        .iter()
        .map(|options| normalize_path(path, options))
        .collect();
    for (options, result) in ALL_OPTIONS.iter().zip(&results) {
        if !path.starts_with('/') {
            assert_eq!(
                result.as_deref(),
                Ok(path),
                "non-origin-form path changed: {path:?} {options:?}"
            );
            continue;
        }
        if let Ok(out) = result {
            check_output(path, out, options);
        }
    }
    let [keep, keep_merge, reject, reject_merge] = &results[..] else {
        unreachable!()
    };
    assert_eq!(
        keep.as_ref().err(),
        keep_merge.as_ref().err(),
        "merge_slashes changed the error: {path:?}"
    );
    assert_eq!(
        reject.as_ref().err(),
        reject_merge.as_ref().err(),
        "merge_slashes changed the error: {path:?}"
    );
    assert_ne!(
        keep.as_ref().err(),
        Some(&PathError::EscapedSlash),
        "Keep refused an escaped slash: {path:?}"
    );
    if reject.as_ref().err() == Some(&PathError::EscapedSlash) {
        assert!(
            has_escaped_slash(path),
            "EscapedSlash without one: {path:?}"
        );
    }
    if !has_escaped_slash(path) {
        assert_eq!(
            keep, reject,
            "Reject differs without escaped slashes: {path:?}"
        );
        assert_eq!(keep_merge, reject_merge, "Reject differs: {path:?}");
    }
}

/// The fuzz entry point.
pub fn check(data: &[u8]) {
    check_path(&String::from_utf8_lossy(data));
}
