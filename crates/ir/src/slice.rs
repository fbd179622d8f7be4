//! One Gateway's share of a [`Config`]: what a dedicated proxy pool is sent.
//! It holds that Gateway's listeners and only the clusters and filter
//! resources they reference, so a pool never learns another tenant's
//! backends or credentials.

use std::collections::{BTreeSet, HashSet};

use crate::{BackendTarget, Config, ExtensionKey, ExtensionSpec, Filter, Serve, WeightedBackend};

impl Config {
    /// The `namespace/name` of every Gateway with a listener here.
    pub fn gateways(&self) -> BTreeSet<&str> {
        self.sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .map(|l| l.gateway.as_str())
            .collect()
    }

    /// The listeners of `gateway` (`namespace/name`), on their sockets, with
    /// the clusters and extensions they reference (directly, or through an
    /// extension such as ExternalAuth naming its service's cluster).
    pub fn gateway_slice(&self, gateway: &str) -> Config {
        let mut sockets = Vec::new();
        for socket in &self.sockets {
            let listeners: Vec<_> = socket
                .listeners
                .iter()
                .filter(|l| l.gateway == gateway)
                .cloned()
                .collect();
            if !listeners.is_empty() {
                let mut socket = socket.clone();
                socket.listeners = listeners;
                sockets.push(socket);
            }
        }
        // Borrowed names: a slice at 5,000 routes walks 10,000 of them.
        let mut refs = References::default();
        for listener in self
            .sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .filter(|l| l.gateway == gateway)
        {
            match &listener.serve {
                Serve::Http(routes) => {
                    for route in routes {
                        refs.filters(&route.filters);
                        refs.backends(&route.backends);
                    }
                }
                Serve::TlsPassthrough(routes) | Serve::Tcp(routes) | Serve::Udp(routes) => {
                    for route in routes {
                        refs.backends(&route.backends);
                    }
                }
            }
        }
        let extensions: Vec<_> = self
            .extensions
            .iter()
            .filter(|e| refs.extensions.contains(&e.key))
            .collect();
        for extension in &extensions {
            if let ExtensionSpec::ExternalAuth(auth) = &extension.spec {
                refs.clusters.insert(auth.cluster.as_str());
            }
        }
        let clusters = self
            .clusters
            .iter()
            .filter(|c| refs.clusters.contains(c.name.as_str()))
            .cloned()
            .collect();
        Config {
            ir_version: self.ir_version,
            sockets,
            clusters,
            extensions: extensions.into_iter().cloned().collect(),
        }
    }
}

#[derive(Default)]
struct References<'a> {
    clusters: HashSet<&'a str>,
    extensions: HashSet<&'a ExtensionKey>,
}

impl<'a> References<'a> {
    fn backends(&mut self, backends: &'a [WeightedBackend]) {
        for backend in backends {
            if let BackendTarget::Cluster(name) = &backend.target {
                self.clusters.insert(name.as_str());
            }
            self.filters(&backend.filters);
        }
    }

    fn filters(&mut self, filters: &'a [Filter]) {
        for filter in filters {
            match filter {
                Filter::Mirror(mirror) => {
                    self.clusters.insert(mirror.cluster.as_str());
                }
                Filter::Extension(key) => {
                    self.extensions.insert(key);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two Gateways sharing a port, each with its own backend, mirror and
    /// ExternalAuth: each slice holds its own and nothing of the other's.
    fn world() -> Config {
        let clusters: Vec<_> = [
            "a/auth:9000",
            "a/mirror:80",
            "a/svc:80",
            "b/auth:9000",
            "b/dns:53",
            "b/mirror:80",
            "b/svc:80",
            "c/unused:80",
        ]
        .iter()
        .map(|n| serde_json::json!({"name": n, "protocol": "Http1", "endpoints": []}))
        .collect();
        let extensions: Vec<_> = ["a", "b"]
            .iter()
            .map(|ns| {
                serde_json::json!({
                    "key": {"kind": "ExternalAuth", "namespace": ns, "name": "auth"},
                    "spec": {"ExternalAuth": {"cluster": format!("{ns}/auth:9000"),
                             "protocol": "Http", "timeout_ms": 100, "fail_closed": true}}
                })
            })
            .collect();
        let json = serde_json::json!({
            "ir_version": crate::IR_VERSION,
            "sockets": [{
                "transport": "Tcp", "address": "0.0.0.0", "port": 80,
                "listeners": [
                    listener("a/gw", "a", "a/svc:80", "a/mirror:80", "a"),
                    listener("b/gw", "b", "b/svc:80", "b/mirror:80", "b"),
                ]
            }, {
                "transport": "Udp", "address": "0.0.0.0", "port": 53,
                "listeners": [{
                    "gateway": "b/gw", "name": "dns", "hostname": null,
                    "serve": {"Udp": [{
                        "id": {"kind": "UDPRoute", "namespace": "b", "name": "dns",
                               "rule_index": 0, "rule_name": null},
                        "backends": [{"weight": 1, "target": {"Cluster": "b/dns:53"}}]
                    }]}
                }]
            }],
            "clusters": clusters,
            "extensions": extensions,
        });
        match serde_json::from_value(json) {
            Ok(config) => config,
            Err(e) => panic!("test world does not parse: {e}"),
        }
    }

    fn listener(gw: &str, ns: &str, svc: &str, mirror: &str, name: &str) -> serde_json::Value {
        serde_json::json!({
            "gateway": gw, "name": name, "hostname": format!("{name}.example.com"),
            "serve": {"Http": [{
                "id": {"kind": "HTTPRoute", "namespace": ns, "name": "r",
                       "rule_index": 0, "rule_name": null},
                "hostnames": [],
                "matches": [{"path": {"Prefix": "/"}, "headers": [], "query": [], "method": null}],
                "filters": [
                    {"Mirror": {"cluster": mirror, "numerator": 1, "denominator": 1}},
                    {"Extension": {"kind": "ExternalAuth", "namespace": ns, "name": "auth"}}
                ],
                "backends": [{"weight": 1, "target": {"Cluster": svc}}],
                "timeouts": {"request_ms": null, "backend_request_ms": null}
            }]}
        })
    }

    fn names(config: &Config) -> Vec<&str> {
        config.clusters.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn a_slice_holds_its_gateways_listeners_and_references_only() {
        let world = world();
        assert_eq!(
            world.gateways().into_iter().collect::<Vec<_>>(),
            ["a/gw", "b/gw"]
        );
        let a = world.gateway_slice("a/gw");
        assert_eq!(a.sockets.len(), 1, "b's UDP socket is not a's");
        assert_eq!(a.sockets[0].listeners.len(), 1);
        assert_eq!(a.sockets[0].listeners[0].gateway, "a/gw");
        assert_eq!(names(&a), ["a/auth:9000", "a/mirror:80", "a/svc:80"]);
        assert_eq!(a.extensions.len(), 1);
        assert_eq!(a.extensions[0].key.namespace, "a");

        let b = world.gateway_slice("b/gw");
        assert_eq!(b.sockets.len(), 2);
        assert_eq!(
            names(&b),
            ["b/auth:9000", "b/dns:53", "b/mirror:80", "b/svc:80"]
        );
    }

    #[test]
    fn an_unknown_gateway_gets_an_empty_slice() {
        let empty = world().gateway_slice("c/none");
        assert!(empty.sockets.is_empty() && empty.clusters.is_empty());
        assert!(empty.extensions.is_empty());
    }
}
