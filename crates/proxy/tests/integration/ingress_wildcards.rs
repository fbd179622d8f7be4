//! Ingress rules (`RouteKind::Ingress`) keep classic Ingress wildcard
//! semantics in the router: `*.example.com` stands for exactly one label,
//! while a Gateway API wildcard on the same listener matches any number.

use crate::shapes;

use coxswain_ir::{Hostname, RouteKind};
use coxswain_proxy::router::{RequestView, Router};
use http::{HeaderMap, Method};

fn lookup(router: &Router, host: &str) -> Option<String> {
    let headers = HeaderMap::new();
    let view = RequestView {
        host,
        method: &Method::GET,
        path: "/",
        query: None,
        headers: &headers,
    };
    router
        .lookup(shapes::SOCKET, &view)
        .map(|hit| hit.route.id.name.clone())
}

#[test]
fn ingress_wildcard_matches_one_label_gateway_wildcard_many() {
    let mut config = shapes::many_hosts(2);
    let routes = shapes::routes_mut(&mut config);
    let mut ingress = (*routes[0]).clone();
    ingress.id.kind = RouteKind::Ingress;
    ingress.id.name = "ingress".into();
    ingress.hostnames = vec![Hostname::parse("*.one.test").unwrap()];
    let mut gateway = (*routes[1]).clone();
    gateway.id.name = "gateway".into();
    gateway.hostnames = vec![Hostname::parse("*.many.test").unwrap()];
    *routes = vec![std::sync::Arc::new(ingress), std::sync::Arc::new(gateway)];
    let router = Router::compile(&config);

    assert_eq!(lookup(&router, "a.one.test").as_deref(), Some("ingress"));
    assert_eq!(lookup(&router, "a.b.one.test"), None);
    assert_eq!(lookup(&router, "one.test"), None);
    assert_eq!(lookup(&router, "a.many.test").as_deref(), Some("gateway"));
    assert_eq!(lookup(&router, "a.b.many.test").as_deref(), Some("gateway"));
}
