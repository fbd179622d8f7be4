//! Path rewriting shared by URLRewrite and RequestRedirect.

use coxswain_ir::PathModifier;

use crate::router::CompiledMatch;

/// Replaces the matched `prefix` (without trailing `/`) of `path` with
/// `replacement`, following the spec table: `/foo` + `/bar` maps `/foo` to
/// `/bar`, `/foo/` to `/bar/`, `/foo/x` to `/bar/x`; a replacement of `/`
/// gives `/x`, never `//x`.
pub fn replace_prefix(path: &str, prefix: &str, replacement: &str) -> String {
    let rest = path.strip_prefix(prefix).unwrap_or(path);
    let replacement = replacement.trim_end_matches('/');
    let joined = format!("{replacement}{rest}");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

/// The path after applying `modifier`, or `None` when it does not apply
/// (a prefix replacement on a regex match keeps the path).
pub fn apply_modifier(
    modifier: &PathModifier,
    path: &str,
    matched: &CompiledMatch,
) -> Option<String> {
    match modifier {
        PathModifier::ReplaceFullPath(full) => Some(full.clone()),
        PathModifier::ReplacePrefixMatch(replacement) => matched
            .replaceable_prefix()
            .map(|prefix| replace_prefix(path, prefix, replacement)),
    }
}

#[cfg(test)]
mod tests {
    use super::replace_prefix;

    #[test]
    fn spec_prefix_table() {
        let cases = [
            ("/foo/bar", "/foo", "/xyz", "/xyz/bar"),
            ("/foo/bar", "/foo", "/xyz/", "/xyz/bar"),
            ("/foo", "/foo", "/xyz", "/xyz"),
            ("/foo/", "/foo", "/xyz", "/xyz/"),
            ("/foo/bar", "/foo", "", "/bar"),
            ("/foo/bar", "/foo", "/", "/bar"),
            ("/foo", "/foo", "/", "/"),
            ("/foo", "/foo", "", "/"),
            ("/foo/", "/foo", "/", "/"),
            ("/a", "", "/bar", "/bar/a"),
        ];
        for (path, prefix, replacement, want) in cases {
            assert_eq!(
                replace_prefix(path, prefix, replacement),
                want,
                "{path} {prefix} {replacement}"
            );
        }
    }
}
