//! One compiled `RouteMatch`: path, method, headers and query parameters,
//! checked without allocating.

use coxswain_ir::{HeaderMatch, MAX_REGEX_SIZE, PathMatch, QueryMatch, RouteMatch, StringMatch};
use http::HeaderName;
use regex::{Regex, RegexBuilder};

use super::RequestView;

/// Why a match could not be compiled (the whole route is skipped).
#[derive(Debug)]
pub struct MatchError(pub String);

#[derive(Debug)]
pub enum CompiledPath {
    Exact(String),
    /// Stored without trailing slashes; `""` is the root prefix `/`.
    Prefix(String),
    Regex(Regex),
}

#[derive(Debug)]
pub enum CompiledValue {
    Exact(String),
    Regex(Regex),
}

#[derive(Debug)]
pub struct CompiledMatch {
    pub path: CompiledPath,
    method: Option<http::Method>,
    headers: Vec<(HeaderName, CompiledValue)>,
    query: Vec<(String, CompiledValue)>,
}

fn build_regex(pattern: &str) -> Result<Regex, MatchError> {
    RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_SIZE)
        .build()
        .map_err(|e| MatchError(format!("regex {pattern:?}: {e}")))
}

fn compile_value(value: &StringMatch) -> Result<CompiledValue, MatchError> {
    Ok(match value {
        StringMatch::Exact(v) => CompiledValue::Exact(v.clone()),
        StringMatch::Regex(r) => CompiledValue::Regex(build_regex(r)?),
    })
}

fn compile_header(h: &HeaderMatch) -> Result<(HeaderName, CompiledValue), MatchError> {
    let name = HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes())
        .map_err(|e| MatchError(format!("header name {:?}: {e}", h.name)))?;
    Ok((name, compile_value(&h.value)?))
}

fn compile_query(q: &QueryMatch) -> Result<(String, CompiledValue), MatchError> {
    Ok((q.name.clone(), compile_value(&q.value)?))
}

impl CompiledValue {
    fn matches(&self, value: &str) -> bool {
        match self {
            CompiledValue::Exact(v) => v == value,
            CompiledValue::Regex(r) => r.is_match(value),
        }
    }
}

/// Does `path` match the segment prefix `prefix` (already without trailing `/`)?
pub fn prefix_matches(prefix: &str, path: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// The value of the first `name` parameter in a raw query string.
fn first_query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

impl CompiledMatch {
    pub fn compile(m: &RouteMatch) -> Result<Self, MatchError> {
        let path = match &m.path {
            PathMatch::Exact(p) => CompiledPath::Exact(p.clone()),
            PathMatch::Prefix(p) => CompiledPath::Prefix(p.trim_end_matches('/').to_string()),
            PathMatch::Regex(r) => CompiledPath::Regex(build_regex(&format!("^(?:{r})$"))?),
        };
        let method = match &m.method {
            Some(name) => Some(
                http::Method::from_bytes(name.as_bytes())
                    .map_err(|e| MatchError(format!("method {name:?}: {e}")))?,
            ),
            None => None,
        };
        Ok(CompiledMatch {
            path,
            method,
            headers: m
                .headers
                .iter()
                .map(compile_header)
                .collect::<Result<_, _>>()?,
            query: m
                .query
                .iter()
                .map(compile_query)
                .collect::<Result<_, _>>()?,
        })
    }

    pub fn path_matches(&self, path: &str) -> bool {
        match &self.path {
            CompiledPath::Exact(p) => p == path,
            CompiledPath::Prefix(p) => prefix_matches(p, path),
            CompiledPath::Regex(r) => r.is_match(path),
        }
    }

    pub fn matches(&self, req: &RequestView<'_>) -> bool {
        if !self.path_matches(req.path) {
            return false;
        }
        if let Some(method) = &self.method
            && method != req.method
        {
            return false;
        }
        let headers_ok = self.headers.iter().all(|(name, want)| {
            req.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| want.matches(v))
        });
        if !headers_ok {
            return false;
        }
        self.query.iter().all(|(name, want)| {
            req.query
                .and_then(|q| first_query_value(q, name))
                .is_some_and(|v| want.matches(v))
        })
    }

    /// The prefix `ReplacePrefixMatch` replaces: the matched prefix, or the
    /// whole path for an exact match. `None` for regex matches.
    pub fn replaceable_prefix(&self) -> Option<&str> {
        match &self.path {
            CompiledPath::Exact(p) | CompiledPath::Prefix(p) => Some(p),
            CompiledPath::Regex(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_matches_whole_segments() {
        assert!(prefix_matches("/foo", "/foo"));
        assert!(prefix_matches("/foo", "/foo/"));
        assert!(prefix_matches("/foo", "/foo/bar"));
        assert!(!prefix_matches("/foo", "/foobar"));
        assert!(prefix_matches("", "/anything"));
    }

    #[test]
    fn query_first_occurrence_wins() {
        assert_eq!(first_query_value("a=1&b=2&a=3", "a"), Some("1"));
        assert_eq!(first_query_value("a", "a"), Some(""));
        assert_eq!(first_query_value("A=1", "a"), None);
    }
}
