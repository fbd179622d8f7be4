//! One compiled `RouteMatch`: path, method, headers and query parameters,
//! checked without allocating.

use coxswain_ir::{HeaderMatch, MAX_REGEX_SIZE, PathMatch, QueryMatch, RouteMatch, StringMatch};
use http::HeaderName;
use regex::{Regex, RegexBuilder};

use super::RequestView;

/// One condition of a match a request fails (see [`CompiledMatch::mismatches`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    Path,
    Method,
    /// The match's header condition at this index (IR order).
    Header(usize),
    /// The match's query parameter condition at this index (IR order).
    Query(usize),
}

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

    /// Every condition `req` fails, in the match's own order; empty exactly
    /// when [`CompiledMatch::matches`] holds. Allocates: for tools that
    /// explain a routing decision, never for the request path.
    pub fn mismatches(&self, req: &RequestView<'_>) -> Vec<Mismatch> {
        let mut out = Vec::new();
        if !self.path_matches(req.path) {
            out.push(Mismatch::Path);
        }
        if self.method.as_ref().is_some_and(|m| m != req.method) {
            out.push(Mismatch::Method);
        }
        for (i, (name, want)) in self.headers.iter().enumerate() {
            let found = req.headers.get(name).and_then(|v| v.to_str().ok());
            if !found.is_some_and(|v| want.matches(v)) {
                out.push(Mismatch::Header(i));
            }
        }
        for (i, (name, want)) in self.query.iter().enumerate() {
            let found = req.query.and_then(|q| first_query_value(q, name));
            if !found.is_some_and(|v| want.matches(v)) {
                out.push(Mismatch::Query(i));
            }
        }
        out
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
    fn mismatches_name_every_failed_condition_and_agree_with_matches() {
        let m = CompiledMatch::compile(&RouteMatch {
            path: PathMatch::Prefix("/api".into()),
            method: Some("POST".into()),
            headers: vec![
                HeaderMatch {
                    name: "x-a".into(),
                    value: StringMatch::Exact("1".into()),
                },
                HeaderMatch {
                    name: "x-b".into(),
                    value: StringMatch::Regex("^v[0-9]$".into()),
                },
            ],
            query: vec![QueryMatch {
                name: "q".into(),
                value: StringMatch::Exact("yes".into()),
            }],
            grpc: None,
        })
        .unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("x-b", "v2".parse().unwrap());
        let cases = [
            (
                "/api/x",
                http::Method::POST,
                Some("q=yes"),
                vec![Mismatch::Header(0)],
            ),
            (
                "/apix",
                http::Method::GET,
                None,
                vec![
                    Mismatch::Path,
                    Mismatch::Method,
                    Mismatch::Header(0),
                    Mismatch::Query(0),
                ],
            ),
        ];
        for (path, method, query, want) in cases {
            let req = RequestView {
                host: "h",
                method: &method,
                path,
                query,
                headers: &headers,
            };
            assert_eq!(m.mismatches(&req), want, "{path}");
            assert!(!m.matches(&req));
        }
        headers.insert("x-a", "1".parse().unwrap());
        let req = RequestView {
            host: "h",
            method: &http::Method::POST,
            path: "/api",
            query: Some("q=yes"),
            headers: &headers,
        };
        assert!(m.mismatches(&req).is_empty());
        assert!(m.matches(&req));
    }

    #[test]
    fn query_first_occurrence_wins() {
        assert_eq!(first_query_value("a=1&b=2&a=3", "a"), Some("1"));
        assert_eq!(first_query_value("a", "a"), Some(""));
        assert_eq!(first_query_value("A=1", "a"), None);
    }
}
