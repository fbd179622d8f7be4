//! The reference `router_lookup` compares the router with: the spec's
//! precedence written as a linear scan, and the proxy's compile rules
//! (which matches it skips) decided with the `regex`/`http` parsers.

use std::cell::RefCell;
use std::collections::HashMap;

use coxswain_ir::{
    Config, HostSpecificity, Hostname, MAX_REGEX_SIZE, MatchSpecificity, PathMatch, RouteMatch,
    StringMatch,
};
use coxswain_proxy::router::{RequestView, prefix_matches};
use http::{HeaderName, Method};

/// The pattern compiled as the proxy compiles it (cached: the reference
/// asks for the same few patterns over and over).
fn regex_ok(pattern: &str) -> Option<regex::Regex> {
    thread_local! {
        static CACHE: RefCell<HashMap<String, Option<regex::Regex>>> = RefCell::default();
    }
    CACHE.with_borrow_mut(|cache| {
        if cache.len() > 4096 {
            cache.clear();
        }
        cache
            .entry(pattern.to_string())
            .or_insert_with(|| {
                regex::RegexBuilder::new(pattern)
                    .size_limit(MAX_REGEX_SIZE)
                    .build()
                    .ok()
            })
            .clone()
    })
}

/// Would the proxy compile this match? (The route is skipped if not.)
fn compiles(m: &RouteMatch) -> bool {
    let path_ok = match &m.path {
        PathMatch::Regex(r) => regex_ok(&format!("^(?:{r})$")).is_some(),
        _ => true,
    };
    let method_ok = m
        .method
        .as_ref()
        .is_none_or(|x| Method::from_bytes(x.as_bytes()).is_ok());
    let value_ok = |v: &StringMatch| match v {
        StringMatch::Exact(_) => true,
        StringMatch::Regex(r) => regex_ok(r).is_some(),
    };
    let headers_ok = m.headers.iter().all(|h| {
        HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes()).is_ok() && value_ok(&h.value)
    });
    let query_ok = m.query.iter().all(|q| value_ok(&q.value));
    path_ok && method_ok && headers_ok && query_ok
}

fn value_matches(want: &StringMatch, value: &str) -> bool {
    match want {
        StringMatch::Exact(v) => v == value,
        StringMatch::Regex(r) => regex_ok(r).is_some_and(|re| re.is_match(value)),
    }
}

fn first_query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    for pair in query.split('&') {
        let (k, v) = match pair.find('=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, ""),
        };
        if k == name {
            return Some(v);
        }
    }
    None
}

fn reference_matches(m: &RouteMatch, req: &RequestView<'_>) -> bool {
    let path_ok = match &m.path {
        PathMatch::Exact(p) => p == req.path,
        PathMatch::Prefix(p) => prefix_matches(p.trim_end_matches('/'), req.path),
        PathMatch::Regex(r) => {
            regex_ok(&format!("^(?:{r})$")).is_some_and(|re| re.is_match(req.path))
        }
    };
    if !path_ok {
        return false;
    }
    if m.method
        .as_deref()
        .is_some_and(|w| w != req.method.as_str())
    {
        return false;
    }
    let headers_ok = m.headers.iter().all(|h| {
        let name = h.name.to_ascii_lowercase();
        req.headers
            .get(name.as_str())
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| value_matches(&h.value, v))
    });
    if !headers_ok {
        return false;
    }
    m.query.iter().all(|q| {
        req.query
            .and_then(|qs| first_query_value(qs, &q.name))
            .is_some_and(|v| value_matches(&q.value, v))
    })
}

/// The listener the Host picks: exact name, longest wildcard, none; the
/// first listener wins among equals.
pub(super) fn reference_listener(hosts: &[Option<Hostname>], host: &str) -> Option<usize> {
    hosts
        .iter()
        .enumerate()
        .filter(|(_, h)| h.as_ref().is_none_or(|h| h.matches(host)))
        .min_by_key(|(i, h)| (HostSpecificity::of(h.as_ref()), *i))
        .map(|(i, _)| i)
}

/// (route name, match index) a linear scan in precedence order picks.
pub(super) fn reference_lookup(
    config: &Config,
    hosts: &[Option<Hostname>],
    req: &RequestView<'_>,
) -> Option<(usize, String, usize)> {
    let listener = reference_listener(hosts, req.host)?;
    let routes = config.sockets[0].listeners[listener].http_routes()?;
    let mut entries = Vec::new();
    for route in routes {
        if !route.matches.iter().all(compiles) {
            continue;
        }
        let host_key = if route.hostnames.is_empty() {
            HostSpecificity::of(None)
        } else {
            match route
                .hostnames
                .iter()
                .filter(|h| h.matches(req.host))
                .map(|h| HostSpecificity::of(Some(h)))
                .min()
            {
                Some(k) => k,
                None => continue,
            }
        };
        for (i, m) in route.matches.iter().enumerate() {
            entries.push(((host_key.clone(), MatchSpecificity::of(m)), route, i));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
        .into_iter()
        .find(|(_, route, i)| reference_matches(&route.matches[*i], req))
        .map(|(_, route, i)| (listener, route.id.name.clone(), i))
}
