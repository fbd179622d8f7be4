//! Ingress path types onto IR path matches. Prefix is element-wise
//! (`/foo` matches `/foo` and `/foo/bar`, never `/foobar`; a trailing `/`
//! is ignored), which is what the IR's `Prefix` does. ImplementationSpecific
//! means Prefix for Coxswain.

use coxswain_ir::PathMatch;

pub fn path_match(path_type: &str, path: Option<&str>) -> Result<PathMatch, String> {
    let path = path.unwrap_or("/");
    if !path.starts_with('/') {
        return Err(format!("path {path:?} must start with '/'"));
    }
    if path
        .chars()
        .any(|c| c.is_ascii_control() || c == ' ' || c == '?' || c == '#')
    {
        return Err(format!(
            "path {path:?} contains characters not allowed in a path"
        ));
    }
    match path_type {
        "Exact" => Ok(PathMatch::Exact(path.to_string())),
        "Prefix" | "ImplementationSpecific" => Ok(PathMatch::Prefix(path.to_string())),
        other => Err(format!(
            "pathType {other:?} is not one of Exact, Prefix, ImplementationSpecific"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_types() {
        assert_eq!(
            path_match("Exact", Some("/a")),
            Ok(PathMatch::Exact("/a".into()))
        );
        assert_eq!(
            path_match("ImplementationSpecific", None),
            Ok(PathMatch::Prefix("/".into()))
        );
        assert!(path_match("Regex", Some("/a")).is_err());
        assert!(path_match("Prefix", Some("a")).is_err());
        assert!(path_match("Prefix", Some("/a b")).is_err());
    }
}
