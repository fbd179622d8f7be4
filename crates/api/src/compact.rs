//! Returns the spare room decoding leaves in a route's lists.
//!
//! Neither YAML nor JSON says a list's length up front, so a decoded
//! one-element list keeps room for four, and route structs are large (an
//! HTTPRoute rule is 288 bytes): one small HTTPRoute carried about 2 KiB of
//! room for rules, matches and refs it did not have. Routes are the objects
//! that come by the thousand, so those are the ones compacted.

use std::sync::Arc;

use crate::Object;
use crate::gw::{grpcroutes, httproutes};

/// The lists TLS, TCP and UDP routes share (each kind its own types).
macro_rules! l4_route {
    ($spec:expr) => {{
        shrink_some(&mut $spec.parent_refs);
        $spec.rules.shrink_to_fit();
        for rule in &mut $spec.rules {
            rule.backend_refs.shrink_to_fit();
        }
    }};
}

/// Shrinks the lists of a freshly decoded route to their length. Objects
/// already shared (another `Arc` holds them) and other kinds are left as
/// they are.
pub fn compact(object: &mut Object) {
    match object {
        Object::HttpRoute(route) => {
            if let Some(route) = Arc::get_mut(route) {
                http_route(&mut route.spec);
            }
        }
        Object::GrpcRoute(route) => {
            if let Some(route) = Arc::get_mut(route) {
                grpc_route(&mut route.spec);
            }
        }
        Object::TlsRoute(route) => {
            if let Some(route) = Arc::get_mut(route) {
                route.spec.hostnames.shrink_to_fit();
                l4_route!(route.spec);
            }
        }
        Object::TcpRoute(route) => {
            if let Some(route) = Arc::get_mut(route) {
                l4_route!(route.spec);
            }
        }
        Object::UdpRoute(route) => {
            if let Some(route) = Arc::get_mut(route) {
                l4_route!(route.spec);
            }
        }
        _ => {}
    }
}

fn http_route(spec: &mut httproutes::HttpRouteSpec) {
    shrink_some(&mut spec.hostnames);
    shrink_some(&mut spec.parent_refs);
    shrink_some(&mut spec.rules);
    for rule in spec.rules.iter_mut().flatten() {
        shrink_some(&mut rule.filters);
        shrink_some(&mut rule.matches);
        for m in rule.matches.iter_mut().flatten() {
            shrink_some(&mut m.headers);
            shrink_some(&mut m.query_params);
        }
        shrink_some(&mut rule.backend_refs);
        for backend in rule.backend_refs.iter_mut().flatten() {
            shrink_some(&mut backend.filters);
        }
    }
}

fn grpc_route(spec: &mut grpcroutes::GrpcRouteSpec) {
    shrink_some(&mut spec.hostnames);
    shrink_some(&mut spec.parent_refs);
    shrink_some(&mut spec.rules);
    for rule in spec.rules.iter_mut().flatten() {
        shrink_some(&mut rule.filters);
        shrink_some(&mut rule.matches);
        for m in rule.matches.iter_mut().flatten() {
            shrink_some(&mut m.headers);
        }
        shrink_some(&mut rule.backend_refs);
        for backend in rule.backend_refs.iter_mut().flatten() {
            shrink_some(&mut backend.filters);
        }
    }
}

fn shrink_some<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list {
        list.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoded_http_route_keeps_no_spare_room() {
        // JSON, like YAML, gives no list length up front.
        let json = r#"{
  "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
  "metadata": {"name": "r", "namespace": "default"},
  "spec": {
    "parentRefs": [{"name": "gw"}],
    "hostnames": ["a.example.com"],
    "rules": [{
      "matches": [{"path": {"type": "PathPrefix", "value": "/a"}, "headers": [{"name": "x", "value": "y"}]}],
      "backendRefs": [{"name": "svc", "port": 80, "filters": [
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "a", "value": "b"}]}}]}]
    }]
  }
}"#;
        let route: crate::HttpRoute = serde_json::from_str(json).unwrap();
        let rules = |o: &Object| match o {
            Object::HttpRoute(r) => r.spec.rules.as_ref().unwrap().capacity(),
            _ => unreachable!(),
        };
        let mut object = Object::HttpRoute(Arc::new(route));
        // Without this the test proves nothing: decoding does leave room.
        assert!(rules(&object) > 1);
        compact(&mut object);
        let Object::HttpRoute(route) = &object else {
            unreachable!()
        };
        let spec = &route.spec;
        let rule = &spec.rules.as_ref().unwrap()[0];
        let backend = &rule.backend_refs.as_ref().unwrap()[0];
        let capacities = [
            spec.rules.as_ref().unwrap().capacity(),
            spec.parent_refs.as_ref().unwrap().capacity(),
            spec.hostnames.as_ref().unwrap().capacity(),
            rule.matches.as_ref().unwrap().capacity(),
            rule.matches.as_ref().unwrap()[0]
                .headers
                .as_ref()
                .unwrap()
                .capacity(),
            rule.backend_refs.as_ref().unwrap().capacity(),
            backend.filters.as_ref().unwrap().capacity(),
        ];
        assert_eq!(capacities, [1; 7]);
    }
}
