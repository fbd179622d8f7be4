//! The listeners our Ingresses are served on: one plain HTTP listener with
//! every rule, and on the HTTPS port one listener per certificate, picked
//! by SNI, with the rules its hostname can reach.

use std::sync::Arc;

use coxswain_ir::{Hostname, Listener, Route, Serve, TlsTermination};

use super::IngressModel;

/// `Listener::gateway` of the listeners synthesised for Ingresses (never a
/// Gateway's `namespace/name`, which always has a `/`).
pub const INGRESS_OWNER: &str = "Ingress";

/// (port, listener) for every listener the model needs; none when no
/// Ingress is ours.
pub fn listeners(model: &IngressModel, http_port: u16, https_port: u16) -> Vec<(u16, Listener)> {
    if model.ours.is_empty() {
        return Vec::new();
    }
    let mut out = vec![(
        http_port,
        listener("http", None, None, model.plain_routes.clone()),
    )];
    for (hostname, (certificate, _)) in &model.certificates {
        let name = match hostname {
            Some(h) => format!("https:{h}"),
            None => "https".to_string(),
        };
        let tls = TlsTermination {
            certificates: vec![certificate.clone()],
            client_validation: None,
        };
        let routes = model
            .routes
            .iter()
            .filter_map(|r| on_hostname(r, hostname.as_ref()))
            .collect();
        out.push((
            https_port,
            listener(&name, hostname.clone(), Some(tls), routes),
        ));
    }
    out
}

fn listener(
    name: &str,
    hostname: Option<Hostname>,
    tls: Option<TlsTermination>,
    routes: Vec<Arc<Route>>,
) -> Listener {
    Listener {
        gateway: INGRESS_OWNER.to_string(),
        name: name.to_string(),
        hostname,
        tls,
        serve: Serve::Http(routes),
        listener_set: None,
        backend_client_certificate: None,
        // Ingresses have no ClientTrafficPolicy: the flags decide.
        access_log: None,
    }
}

/// `route` as seen by an HTTPS listener for `listener` (an SNI name):
/// its hostnames that listener can be reached with, or `None` when there
/// are none. Routes without hostnames go everywhere.
fn on_hostname(route: &Arc<Route>, listener: Option<&Hostname>) -> Option<Arc<Route>> {
    let Some(listener) = listener else {
        return Some(route.clone());
    };
    if route.hostnames.is_empty() {
        return Some(route.clone());
    }
    let reachable: Vec<Hostname> = route
        .hostnames
        .iter()
        .filter_map(|h| reachable(listener, h))
        .collect();
    if reachable.is_empty() {
        return None;
    }
    if reachable == route.hostnames {
        return Some(route.clone());
    }
    let mut narrowed = (**route).clone();
    narrowed.hostnames = reachable;
    Some(Arc::new(narrowed))
}

/// The part of Ingress host `rule` that a request picking the TLS
/// listener for SNI `listener` can have.
fn reachable(listener: &Hostname, rule: &Hostname) -> Option<Hostname> {
    match (listener.is_wildcard(), rule.is_wildcard()) {
        (false, false) => (listener == rule).then(|| rule.clone()),
        // An Ingress wildcard stands for one label.
        (false, true) => rule
            .matches_one_label(listener.as_str())
            .then(|| listener.clone()),
        (true, false) => listener.matches(rule.as_str()).then(|| rule.clone()),
        (true, true) => {
            let covered = listener == rule
                || rule
                    .wildcard_suffix()
                    .is_some_and(|s| listener.matches(s.trim_start_matches('.')));
            covered.then(|| rule.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn reachable_hosts() {
        assert_eq!(reachable(&h("a.x.com"), &h("a.x.com")), Some(h("a.x.com")));
        assert_eq!(reachable(&h("a.x.com"), &h("b.x.com")), None);
        assert_eq!(reachable(&h("a.x.com"), &h("*.x.com")), Some(h("a.x.com")));
        assert_eq!(reachable(&h("a.b.x.com"), &h("*.x.com")), None);
        assert_eq!(reachable(&h("*.x.com"), &h("a.x.com")), Some(h("a.x.com")));
        assert_eq!(reachable(&h("*.x.com"), &h("*.x.com")), Some(h("*.x.com")));
        assert_eq!(
            reachable(&h("*.x.com"), &h("*.a.x.com")),
            Some(h("*.a.x.com"))
        );
        assert_eq!(reachable(&h("*.a.x.com"), &h("*.x.com")), None);
    }
}
