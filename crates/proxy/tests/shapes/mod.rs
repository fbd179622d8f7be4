//! Route-table shapes shared by the lookup benchmark and allocation test.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use coxswain_ir::{
    BackendTarget, Config, Hostname, Listener, PathMatch, Route, RouteId, RouteKind, RouteMatch,
    Serve, Socket, Timeouts, Transport, WeightedBackend,
};

pub const SOCKET: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

fn rule(i: usize, hostnames: Vec<Hostname>, path: PathMatch) -> Route {
    Route {
        id: RouteId {
            kind: RouteKind::Http,
            namespace: "bench".into(),
            name: format!("r{i}"),
            rule_index: 0,
            rule_name: None,
        },
        hostnames,
        matches: vec![RouteMatch {
            grpc: None,
            path,
            method: None,
            headers: vec![],
            query: vec![],
        }],
        filters: vec![],
        backends: vec![WeightedBackend {
            weight: 1,
            target: BackendTarget::Cluster("c".into()),
            filters: vec![],
        }],
        timeouts: Timeouts::default(),
        retry: None,
        session: None,
    }
}

fn one_socket(routes: Vec<Route>) -> Config {
    let listener = Listener {
        gateway: "bench/gw".into(),
        name: "http".into(),
        hostname: None,
        tls: None,
        serve: Serve::Http(routes.into_iter().map(Arc::new).collect()),
        listener_set: None,
        backend_client_certificate: None,
        access_log: None,
    };
    Config {
        ir_version: coxswain_ir::IR_VERSION,
        sockets: vec![Socket {
            transport: Transport::Tcp,
            proxy_protocol: None,
            address: SOCKET.ip(),
            port: SOCKET.port(),
            listeners: vec![listener],
        }],
        clusters: vec![],
        extensions: vec![],
    }
}

/// Shape (a): `n` routes, each on its own hostname `h<i>.example.com`.
pub fn many_hosts(n: usize) -> Config {
    one_socket(
        (0..n)
            .map(|i| {
                let host = Hostname::parse(&format!("h{i}.example.com")).unwrap();
                rule(i, vec![host], PathMatch::Prefix("/".into()))
            })
            .collect(),
    )
}

/// Shape (b): `n` routes on one hostname with distinct path prefixes
/// `/svc<i>/v1`, plus a few exact paths.
pub fn many_prefixes(n: usize) -> Config {
    let host = Hostname::parse("api.example.com").unwrap();
    one_socket(
        (0..n)
            .map(|i| {
                let path = if i % 10 == 0 {
                    PathMatch::Exact(format!("/exact{i}"))
                } else {
                    PathMatch::Prefix(format!("/svc{i}/v1"))
                };
                rule(i, vec![host.clone()], path)
            })
            .collect(),
    )
}

/// (host, path) that hit and miss in each shape for `n` routes.
pub fn host_hit(n: usize) -> String {
    format!("H{}.Example.com:8080", n / 2)
}

pub fn prefix_hit(n: usize) -> String {
    format!("/svc{}/v1/items/42", (n / 2) | 1)
}

/// The routes of the one listener of a shape.
pub fn routes_mut(config: &mut Config) -> &mut Vec<Arc<Route>> {
    match &mut config.sockets[0].listeners[0].serve {
        Serve::Http(routes) => routes,
        other => panic!("not HTTP: {other:?}"),
    }
}
