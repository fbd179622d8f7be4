//! `router_lookup`: a small random IR config compiled with
//! `coxswain_proxy::router::Router::compile`, then random requests, each
//! looked up and compared with a reference written from the spec: pick the
//! listener (exact hostname, longest wildcard, hostname-less; first wins),
//! keep the routes whose hostnames cover the host (or that have none), key
//! each match by (most specific covering route hostname, `MatchSpecificity`),
//! stable-sort in IR order, first full match wins. This is the comparison of
//! `crates/proxy/tests/integration/lookup_index.rs`, generalised to hostnames, methods,
//! headers and query parameters, and to buckets large enough (more than 8
//! entries) to use the path index.
//!
//! Routes whose matches do not compile (bad regex, method or header name)
//! are skipped by the router; the reference skips them too, deciding with
//! the `regex`/`http` parsers themselves.

mod reference;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use coxswain_ir::{
    BackendTarget, Config, HeaderMatch, Hostname, Listener, PathMatch, QueryMatch, Route, RouteId,
    RouteKind, RouteMatch, Serve, Socket, StringMatch, Timeouts, Transport, WeightedBackend,
};
use coxswain_proxy::router::host::{HostBuf, MAX_HOST_LEN, normalize_host};
use coxswain_proxy::router::{RequestView, Router};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use reference::{reference_listener, reference_lookup};

const SOCKET: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

const HOSTNAMES: &[&str] = &[
    "example.com",
    "a.example.com",
    "b.example.com",
    "*.example.com",
    "*.a.example.com",
    "other.org",
    "*.org",
];

/// Raw `Host` values a request may carry (normalised before lookup).
const REQUEST_HOSTS: &[&str] = &[
    "example.com",
    "A.Example.COM",
    "a.example.com:8080",
    "x.a.example.com",
    "b.example.com.",
    "c.example.com",
    "other.org",
    "x.other.org",
    "example.net",
    "",
    "[::1]:8080",
    "a..example.com",
    ".example.com",
];

const SEGMENTS: &[&str] = &["a", "b", "ab", "", "c", "a.b", "%2F", "x y", "é"];

const METHODS: &[&str] = &["GET", "POST", "PUT", "get", "BAD METHOD"];

const HEADER_NAMES: &[&str] = &["x-a", "X-B", "x-c", "bad name"];
const HEADER_VALUES: &[&str] = &["1", "2", "", "a b", "10"];
const VALUE_REGEXES: &[&str] = &["^1$", "1", ".", "[", "", "^$", "a|2"];

const QUERY_NAMES: &[&str] = &["q", "r", "Q"];

const REGEX_SUFFIXES: &[&str] = &[".*", "/.*", "[^/]*", "", "(/.*)?", "|/b", "/?", "("];

#[derive(Arbitrary, Debug)]
struct PathSpec {
    segments: Vec<u8>,
    leading_slash: bool,
    trailing_slash: bool,
}

impl PathSpec {
    fn render(&self) -> String {
        let segments: Vec<&str> = self
            .segments
            .iter()
            .take(5)
            .map(|&i| SEGMENTS[usize::from(i) % SEGMENTS.len()])
            .collect();
        let mut path = if self.leading_slash {
            String::from("/")
        } else {
            String::new()
        };
        path.push_str(&segments.join("/"));
        if self.trailing_slash && !path.ends_with('/') {
            path.push('/');
        }
        path
    }
}

#[derive(Arbitrary, Debug)]
enum PathKind {
    Exact(PathSpec),
    Prefix(PathSpec),
    Regex(PathSpec, u8),
    /// A raw pattern: mostly invalid or odd regexes.
    RawRegex(String),
}

#[derive(Arbitrary, Debug)]
enum ValueSpec {
    Exact(u8),
    Regex(u8),
}

impl ValueSpec {
    fn build(&self) -> StringMatch {
        match *self {
            ValueSpec::Exact(i) => StringMatch::Exact(pick(HEADER_VALUES, i).into()),
            ValueSpec::Regex(i) => StringMatch::Regex(pick(VALUE_REGEXES, i).into()),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct MatchSpec {
    path: PathKind,
    method: Option<u8>,
    headers: Vec<(u8, ValueSpec)>,
    query: Vec<(u8, ValueSpec)>,
}

#[derive(Arbitrary, Debug)]
struct RouteSpec {
    listener: u8,
    hostnames: Vec<u8>,
    matches: Vec<MatchSpec>,
}

#[derive(Arbitrary, Debug)]
struct RequestSpec {
    host: u8,
    method: u8,
    path: PathSpec,
    query: Option<Vec<(u8, u8)>>,
    headers: Vec<(u8, u8)>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    listeners: Vec<Option<u8>>,
    routes: Vec<RouteSpec>,
    requests: Vec<RequestSpec>,
}

fn pick<'a>(table: &[&'a str], i: u8) -> &'a str {
    table[usize::from(i) % table.len()]
}

fn hostname(i: u8) -> Hostname {
    Hostname::parse(pick(HOSTNAMES, i)).unwrap_or_else(|e| panic!("bad test hostname: {e}"))
}

impl MatchSpec {
    fn build(&self) -> RouteMatch {
        let path = match &self.path {
            PathKind::Exact(p) => PathMatch::Exact(p.render()),
            PathKind::Prefix(p) => PathMatch::Prefix(p.render()),
            PathKind::Regex(p, s) => {
                PathMatch::Regex(format!("{}{}", p.render(), pick(REGEX_SUFFIXES, *s)))
            }
            PathKind::RawRegex(r) => PathMatch::Regex(r.chars().take(12).collect()),
        };
        RouteMatch {
            grpc: None,
            path,
            method: self.method.map(|m| pick(METHODS, m).to_string()),
            headers: self
                .headers
                .iter()
                .take(3)
                .map(|(n, v)| HeaderMatch {
                    name: pick(HEADER_NAMES, *n).into(),
                    value: v.build(),
                })
                .collect(),
            query: self
                .query
                .iter()
                .take(2)
                .map(|(n, v)| QueryMatch {
                    name: pick(QUERY_NAMES, *n).into(),
                    value: v.build(),
                })
                .collect(),
        }
    }
}

fn build_config(input: &Input) -> (Config, Vec<Option<Hostname>>) {
    let listener_hosts: Vec<Option<Hostname>> = if input.listeners.is_empty() {
        vec![None]
    } else {
        input
            .listeners
            .iter()
            .take(3)
            .map(|h| h.map(hostname))
            .collect()
    };
    let mut per_listener: Vec<Vec<Arc<Route>>> = vec![Vec::new(); listener_hosts.len()];
    for (i, spec) in input.routes.iter().take(24).enumerate() {
        let mut matches: Vec<RouteMatch> =
            spec.matches.iter().take(3).map(MatchSpec::build).collect();
        if matches.is_empty() {
            matches.push(RouteMatch {
                grpc: None,
                path: PathMatch::Prefix("/".into()),
                method: None,
                headers: vec![],
                query: vec![],
            });
        }
        let route = Route {
            id: RouteId {
                kind: RouteKind::Http,
                namespace: "fuzz".into(),
                name: format!("r{i}"),
                rule_index: 0,
                rule_name: None,
            },
            hostnames: spec
                .hostnames
                .iter()
                .take(3)
                .map(|&h| hostname(h))
                .collect(),
            matches,
            filters: vec![],
            backends: vec![WeightedBackend {
                weight: 1,
                target: BackendTarget::Cluster("c".into()),
                filters: vec![],
            }],
            timeouts: Timeouts::default(),
            retry: None,
            session: None,
        };
        let l = usize::from(spec.listener) % listener_hosts.len();
        per_listener[l].push(Arc::new(route));
    }
    let listeners = listener_hosts
        .iter()
        .zip(per_listener)
        .enumerate()
        .map(|(i, (h, routes))| Listener {
            gateway: "fuzz/gw".into(),
            name: format!("l{i}"),
            hostname: h.clone(),
            tls: None,
            serve: Serve::Http(routes),
            listener_set: None,
            backend_client_certificate: None,
            access_log: None,
        })
        .collect();
    let config = Config {
        ir_version: coxswain_ir::IR_VERSION,
        sockets: vec![Socket {
            transport: Transport::Tcp,
            proxy_protocol: None,
            address: SOCKET.ip(),
            port: SOCKET.port(),
            listeners,
        }],
        clusters: vec![],
        extensions: Vec::new(),
    };
    (config, listener_hosts)
}

fn check_host(raw: &str, host: &str) {
    assert!(
        !host.bytes().any(|b| b.is_ascii_uppercase()),
        "normalize_host left upper case: {raw:?} -> {host:?}"
    );
    assert!(
        !host.ends_with('.') || host == ".",
        "trailing dot kept: {raw:?} -> {host:?}"
    );
    assert!(host.len() <= MAX_HOST_LEN);
}

pub fn check(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let (config, hosts) = build_config(&input);
    let router = Router::compile(&config);
    assert!(router.has_socket(SOCKET));
    for spec in input.requests.iter().take(16) {
        let raw_host = pick(REQUEST_HOSTS, spec.host);
        let mut buf: HostBuf = [0; MAX_HOST_LEN];
        let host = normalize_host(raw_host, &mut buf);
        check_host(raw_host, host);
        let method =
            Method::from_bytes(pick(METHODS, spec.method).as_bytes()).unwrap_or(Method::GET);
        let path = spec.path.render();
        let query = spec.query.as_ref().map(|pairs| {
            pairs
                .iter()
                .take(3)
                .map(|&(n, v)| format!("{}={}", pick(QUERY_NAMES, n), pick(HEADER_VALUES, v)))
                .collect::<Vec<_>>()
                .join("&")
        });
        let mut headers = HeaderMap::new();
        for &(n, v) in spec.headers.iter().take(4) {
            let name = pick(HEADER_NAMES, n).to_ascii_lowercase();
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(pick(HEADER_VALUES, v)),
            ) {
                headers.append(name, value);
            }
        }
        let view = RequestView {
            host,
            method: &method,
            path: &path,
            query: query.as_deref(),
            headers: &headers,
        };
        let expected = reference_lookup(&config, &hosts, &view);
        let got = router.lookup(SOCKET, &view).map(|hit| {
            let index = hit
                .route
                .matches
                .iter()
                .position(|m| std::ptr::eq(m, hit.matched))
                .unwrap_or(usize::MAX);
            (hit.listener, hit.route.id.name.clone(), index)
        });
        assert_eq!(
            got, expected,
            "lookup disagrees with the precedence scan for {method} {raw_host:?} {path:?} ?{query:?} {headers:?}\nconfig: {config:#?}"
        );
        assert_eq!(
            router.listener(SOCKET, host),
            reference_listener(&hosts, host),
            "listener selection for {host:?}"
        );
    }
}
