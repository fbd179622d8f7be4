//! One Gateway listener: protocol, port, hostname, allowedRoutes.

use coxswain_api::gw::gateways::{GatewayListeners, GatewayListenersAllowedRoutesNamespacesFrom};
use coxswain_api::{GATEWAY_GROUP, Snapshot};
use coxswain_ir::Hostname;

use crate::conditions::Reason;
use crate::gateway::tls::{self, TlsOutcome};
use crate::selector::LabelSelector;

/// Which namespaces may attach routes to a listener.
#[derive(Clone, Debug)]
pub enum AllowedNamespaces {
    Same,
    All,
    Selector(LabelSelector),
}

/// A route kind a listener accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteKind {
    pub group: String,
    pub kind: String,
}

/// A listener after validation. `accepted` holds the reason it was rejected.
#[derive(Clone, Debug)]
pub struct ListenerModel {
    pub name: String,
    pub port: u16,
    pub protocol: String,
    pub hostname: Option<Hostname>,
    pub accepted: Result<(), (Reason, String)>,
    pub supported_kinds: Vec<RouteKind>,
    /// Message for ResolvedRefs=False/InvalidRouteKinds.
    pub invalid_kinds: Option<String>,
    pub namespaces: AllowedNamespaces,
    /// Set by conflict detection.
    pub conflict: Option<(Reason, String)>,
    /// Number of routes attached; filled in while attaching routes.
    pub attached_routes: i32,
    /// HTTPS only: the resolved certificates, or why they are unusable
    /// (ResolvedRefs=False; the listener still takes routes but is not served).
    pub tls: Option<TlsOutcome>,
}

impl ListenerModel {
    /// Can HTTPRoutes attach and will the listener be served?
    pub fn is_routable(&self) -> bool {
        self.accepted.is_ok() && self.conflict.is_none() && self.accepts_http_routes()
    }

    /// Routable and, for HTTPS, with usable certificates.
    pub fn is_served(&self) -> bool {
        self.is_routable() && !matches!(self.tls, Some(Err(_)))
    }

    pub fn is_https(&self) -> bool {
        self.protocol == "HTTPS"
    }

    pub fn accepts_http_routes(&self) -> bool {
        self.supported_kinds
            .iter()
            .any(|k| k.kind == "HTTPRoute" && k.group == GATEWAY_GROUP)
    }

    /// May a route in `route_ns` attach, given the Gateway lives in `gateway_ns`?
    pub fn allows_namespace(&self, snapshot: &Snapshot, gateway_ns: &str, route_ns: &str) -> bool {
        match &self.namespaces {
            AllowedNamespaces::Same => gateway_ns == route_ns,
            AllowedNamespaces::All => true,
            AllowedNamespaces::Selector(selector) => {
                let key = coxswain_api::ObjectKey::cluster(route_ns);
                let labels = snapshot
                    .namespaces
                    .get(&key)
                    .and_then(|ns| ns.metadata.labels.clone())
                    .unwrap_or_default();
                selector.matches(&labels)
            }
        }
    }
}

pub fn build_listener(
    snapshot: &Snapshot,
    gateway_ns: &str,
    spec: &GatewayListeners,
) -> ListenerModel {
    let is_https = spec.protocol == "HTTPS";
    let is_http = spec.protocol == "HTTP" || is_https;
    let port = u16::try_from(spec.port).ok().filter(|p| *p != 0);
    let hostname = spec
        .hostname
        .as_deref()
        .filter(|h| !h.is_empty())
        .map(Hostname::parse);
    let namespaces = allowed_namespaces(spec);
    let (supported_kinds, invalid_kinds) = if is_http {
        route_kinds(spec)
    } else {
        (Vec::new(), None)
    };

    let accepted = if !is_http {
        Err((
            Reason::UnsupportedProtocol,
            format!(
                "protocol {:?} is not supported; only HTTP and HTTPS are",
                spec.protocol
            ),
        ))
    } else if let Some(e) = is_https.then(|| tls::mode_error(spec)).flatten() {
        Err(e)
    } else if port.is_none() {
        Err((
            Reason::PortUnavailable,
            format!("port {} is out of range", spec.port),
        ))
    } else if let Some(Err(e)) = &hostname {
        Err((Reason::Invalid, e.to_string()))
    } else if let Err(e) = &namespaces {
        Err((Reason::Invalid, e.clone()))
    } else {
        Ok(())
    };

    ListenerModel {
        name: spec.name.clone(),
        port: port.unwrap_or(0),
        protocol: spec.protocol.clone(),
        hostname: hostname.and_then(Result::ok),
        accepted,
        supported_kinds,
        invalid_kinds,
        namespaces: namespaces.unwrap_or(AllowedNamespaces::Same),
        conflict: None,
        attached_routes: 0,
        tls: is_https.then(|| tls::resolve(snapshot, gateway_ns, spec)),
    }
}

fn allowed_namespaces(spec: &GatewayListeners) -> Result<AllowedNamespaces, String> {
    let Some(ns) = spec
        .allowed_routes
        .as_ref()
        .and_then(|a| a.namespaces.as_ref())
    else {
        return Ok(AllowedNamespaces::Same);
    };
    match ns.from {
        None | Some(GatewayListenersAllowedRoutesNamespacesFrom::Same) => {
            Ok(AllowedNamespaces::Same)
        }
        Some(GatewayListenersAllowedRoutesNamespacesFrom::All) => Ok(AllowedNamespaces::All),
        Some(GatewayListenersAllowedRoutesNamespacesFrom::Selector) => {
            let Some(sel) = &ns.selector else {
                return Err(
                    "allowedRoutes.namespaces.from is Selector but no selector is set".into(),
                );
            };
            let exprs = sel
                .match_expressions
                .iter()
                .flatten()
                .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_deref()));
            LabelSelector::parse(sel.match_labels.as_ref(), exprs)
                .map(AllowedNamespaces::Selector)
                .map_err(|e| format!("invalid allowedRoutes namespace selector: {e}"))
        }
    }
}

/// Splits allowedRoutes.kinds into the kinds we serve and a message naming the rest.
fn route_kinds(spec: &GatewayListeners) -> (Vec<RouteKind>, Option<String>) {
    let http_route = || RouteKind {
        group: GATEWAY_GROUP.to_string(),
        kind: "HTTPRoute".to_string(),
    };
    let requested = spec.allowed_routes.as_ref().and_then(|a| a.kinds.as_ref());
    let Some(requested) = requested.filter(|k| !k.is_empty()) else {
        return (vec![http_route()], None);
    };
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for k in requested {
        let group = k.group.as_deref().unwrap_or(GATEWAY_GROUP);
        if group == GATEWAY_GROUP && k.kind == "HTTPRoute" {
            if !valid.contains(&http_route()) {
                valid.push(http_route());
            }
        } else {
            invalid.push(format!("{group}/{}", k.kind));
        }
    }
    let message =
        (!invalid.is_empty()).then(|| format!("unsupported route kinds: {}", invalid.join(", ")));
    (valid, message)
}
