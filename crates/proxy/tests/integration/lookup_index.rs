//! The path index of large buckets must pick exactly what a linear scan in
//! precedence order picks.

use crate::shapes;

use coxswain_ir::{Config, MatchSpecificity, PathMatch, RouteMatch};
use coxswain_proxy::router::{RequestView, Router};
use http::{HeaderMap, Method};

/// A table of overlapping exact, prefix and regex matches, some with methods.
fn overlapping_config() -> Config {
    let paths = ["/", "/a", "/a/", "/a/b", "/a/b/c", "/ab", "/b", "/a//b"];
    let mut config = shapes::many_prefixes(0);
    let routes = shapes::routes_mut(&mut config);
    let template = shapes::routes_mut(&mut shapes::many_prefixes(1))[0].clone();
    let mut i = 0;
    for p in paths {
        for kind in 0..3 {
            for method in [None, Some("POST")] {
                let mut r = (*template).clone();
                r.id.name = format!("r{i}");
                let path = match kind {
                    0 => PathMatch::Exact(p.into()),
                    1 => PathMatch::Prefix(p.into()),
                    _ => PathMatch::Regex(format!("{p}.*")),
                };
                r.matches = vec![RouteMatch {
                    grpc: None,
                    path,
                    method: method.map(Into::into),
                    headers: vec![],
                    query: vec![],
                }];
                routes.push(std::sync::Arc::new(r));
                i += 1;
            }
        }
    }
    config
}

fn reference_matches(m: &RouteMatch, method: &Method, path: &str) -> bool {
    if m.method
        .as_deref()
        .is_some_and(|want| want != method.as_str())
    {
        return false;
    }
    match &m.path {
        PathMatch::Exact(p) => p == path,
        PathMatch::Prefix(p) => {
            let p = p.trim_end_matches('/');
            path.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        }
        PathMatch::Regex(r) => regex::Regex::new(&format!("^(?:{r})$"))
            .unwrap()
            .is_match(path),
    }
}

#[test]
fn indexed_lookup_agrees_with_linear_precedence_scan() {
    let config = overlapping_config();
    let routes = config.sockets[0].listeners[0].http_routes().unwrap();
    let mut order: Vec<usize> = (0..routes.len()).collect();
    order.sort_by_key(|&i| MatchSpecificity::of(&routes[i].matches[0]));
    let router = Router::compile(&config);
    let headers = HeaderMap::new();
    let requests = [
        "/", "/a", "/a/", "/a/b", "/a/b/", "/a/b/c/d", "/ab", "/abc", "/b/x", "/a//b", "/a//b/c",
        "/zzz", "x",
    ];
    for path in requests {
        for method in [Method::GET, Method::POST] {
            let expected = order
                .iter()
                .find(|&&i| reference_matches(&routes[i].matches[0], &method, path))
                .map(|&i| routes[i].id.name.clone());
            let view = RequestView {
                host: "api.example.com",
                method: &method,
                path,
                query: None,
                headers: &headers,
            };
            let got = router
                .lookup(shapes::SOCKET, &view)
                .map(|hit| hit.route.id.name.clone());
            assert_eq!(got, expected, "{method} {path}");
        }
    }
}
