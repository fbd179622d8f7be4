//! One Gateway listener: protocol, port, hostname, allowedRoutes.

use coxswain_api::gw::gateways::{
    GatewayListeners, GatewayListenersAllowedRoutesNamespacesFrom, GatewayListenersTlsMode,
};
use coxswain_api::{GATEWAY_GROUP, ObjectKey, Snapshot};
use coxswain_ir::{Hostname, RouteKind};

use crate::conditions::Reason;
use crate::gateway::frontend_tls::FrontendOutcome;
use crate::gateway::tls::{self, TlsOutcome};
use crate::selector::LabelSelector;

/// Which namespaces may attach routes to a listener.
#[derive(Clone, Debug)]
pub enum AllowedNamespaces {
    Same,
    All,
    Selector(LabelSelector),
}

/// A listener protocol Coxswain serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Https,
    /// `TLS` with its `tls.mode` (Terminate when unset).
    Tls(TlsMode),
    Tcp,
    Udp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    Terminate,
    Passthrough,
}

impl Protocol {
    fn of(spec: &GatewayListeners) -> Option<Protocol> {
        let mode = match spec.tls.as_ref().and_then(|t| t.mode.as_ref()) {
            Some(GatewayListenersTlsMode::Passthrough) => TlsMode::Passthrough,
            _ => TlsMode::Terminate,
        };
        Some(match spec.protocol.as_str() {
            "HTTP" => Protocol::Http,
            "HTTPS" => Protocol::Https,
            "TLS" => Protocol::Tls(mode),
            "TCP" => Protocol::Tcp,
            "UDP" => Protocol::Udp,
            _ => return None,
        })
    }

    /// The route kinds this protocol serves, in supportedKinds order.
    pub fn route_kinds(self) -> &'static [RouteKind] {
        match self {
            Protocol::Http | Protocol::Https => &[RouteKind::Http, RouteKind::Grpc],
            Protocol::Tls(_) => &[RouteKind::Tls],
            Protocol::Tcp => &[RouteKind::Tcp],
            Protocol::Udp => &[RouteKind::Udp],
        }
    }

    /// Does TLS end at the gateway (certificateRefs needed)?
    pub fn terminates_tls(self) -> bool {
        matches!(self, Protocol::Https | Protocol::Tls(TlsMode::Terminate))
    }
}

/// Who declared a listener: the Gateway itself or an attached ListenerSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenerOwner {
    Gateway,
    ListenerSet(ObjectKey),
}

/// A listener after validation. `accepted` holds the reason it was rejected.
#[derive(Clone, Debug)]
pub struct ListenerModel {
    pub name: String,
    pub owner: ListenerOwner,
    /// The owner's namespace: `allowedRoutes` `Same` and certificateRefs
    /// are relative to it.
    pub namespace: String,
    pub port: u16,
    /// `spec.protocol` as written (for messages and conflict checks).
    pub protocol_name: String,
    /// `None` for a protocol Coxswain does not serve.
    pub protocol: Option<Protocol>,
    pub hostname: Option<Hostname>,
    pub accepted: Result<(), (Reason, String)>,
    /// Empty, or the protocol's one route kind.
    pub supported_kinds: Vec<RouteKind>,
    /// Message for ResolvedRefs=False/InvalidRouteKinds.
    pub invalid_kinds: Option<String>,
    pub namespaces: AllowedNamespaces,
    /// Set by conflict detection.
    pub conflict: Option<(Reason, String)>,
    /// Number of routes attached; filled in while attaching routes.
    pub attached_routes: i32,
    /// When TLS ends here: the resolved certificates, or why they are
    /// unusable (ResolvedRefs=False; the listener still takes routes but is
    /// not served).
    pub tls: Option<TlsOutcome>,
    /// HTTPS listeners covered by `spec.tls.frontend`: client validation.
    pub frontend: Option<FrontendOutcome>,
}

impl ListenerModel {
    /// Can routes of `kind` attach?
    pub fn is_routable(&self, kind: RouteKind) -> bool {
        self.accepted.is_ok() && self.conflict.is_none() && self.supported_kinds.contains(&kind)
    }

    /// Accepted, not conflicted, serving some kind, and with usable
    /// certificates where TLS ends here.
    pub fn is_served(&self) -> bool {
        self.accepted.is_ok()
            && self.conflict.is_none()
            && !self.supported_kinds.is_empty()
            && !matches!(self.tls, Some(Err(_)))
    }

    pub fn is_https(&self) -> bool {
        self.protocol == Some(Protocol::Https)
    }

    /// May a route in `route_ns` attach (`Same` is the owner's namespace)?
    pub fn allows_namespace(&self, snapshot: &Snapshot, route_ns: &str) -> bool {
        match &self.namespaces {
            AllowedNamespaces::Same => self.namespace == route_ns,
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
    owner: &ListenerOwner,
    namespace: &str,
    spec: &GatewayListeners,
) -> ListenerModel {
    let protocol = Protocol::of(spec);
    let port = u16::try_from(spec.port).ok().filter(|p| *p != 0);
    let hostname = spec
        .hostname
        .as_deref()
        .filter(|h| !h.is_empty())
        .map(Hostname::parse);
    let namespaces = allowed_namespaces(spec);
    let (supported_kinds, invalid_kinds) = match protocol {
        Some(p) => route_kinds(spec, p.route_kinds()),
        None => (Vec::new(), None),
    };

    let accepted = if protocol.is_none() {
        Err((
            Reason::UnsupportedProtocol,
            format!(
                "protocol {:?} is not supported; HTTP, HTTPS, TLS, TCP and UDP are",
                spec.protocol
            ),
        ))
    } else if let Some(e) = (protocol == Some(Protocol::Https))
        .then(|| tls::mode_error(spec))
        .flatten()
    {
        Err(e)
    } else if let Some(keys) = tls_options(spec) {
        Err((
            Reason::UnsupportedValue,
            format!("tls.options {keys} are not supported; the listener does not serve"),
        ))
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
    let referrer = tls::Referrer {
        kind: match owner {
            ListenerOwner::Gateway => "Gateway",
            ListenerOwner::ListenerSet(_) => "ListenerSet",
        },
        namespace,
    };
    ListenerModel {
        name: spec.name.clone(),
        owner: owner.clone(),
        namespace: namespace.to_string(),
        port: port.unwrap_or(0),
        protocol_name: spec.protocol.clone(),
        protocol,
        hostname: hostname.and_then(Result::ok),
        accepted,
        supported_kinds,
        invalid_kinds,
        namespaces: namespaces.unwrap_or(AllowedNamespaces::Same),
        conflict: None,
        attached_routes: 0,
        tls: protocol
            .filter(|p| p.terminates_tls())
            .map(|_| tls::resolve(snapshot, referrer, spec)),
        frontend: None,
    }
}

/// The keys of a non-empty `tls.options`: none is implemented, and an
/// option such as a minimum TLS version must not be silently ignored.
fn tls_options(spec: &GatewayListeners) -> Option<String> {
    let options = spec.tls.as_ref()?.options.as_ref()?;
    (!options.is_empty()).then(|| {
        let keys: Vec<&str> = options.keys().map(String::as_str).collect();
        keys.join(", ")
    })
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

/// Splits allowedRoutes.kinds into the kind the protocol serves and a
/// message naming the rest. Unset kinds mean the protocol's kind.
fn route_kinds(spec: &GatewayListeners, served: &[RouteKind]) -> (Vec<RouteKind>, Option<String>) {
    let requested = spec.allowed_routes.as_ref().and_then(|a| a.kinds.as_ref());
    let Some(requested) = requested.filter(|k| !k.is_empty()) else {
        return (served.to_vec(), None);
    };
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for k in requested {
        let group = k.group.as_deref().unwrap_or(GATEWAY_GROUP);
        let kind = served
            .iter()
            .find(|s| group == GATEWAY_GROUP && k.kind == s.as_str());
        match kind {
            Some(kind) if !valid.contains(kind) => valid.push(*kind),
            Some(_) => {}
            None => invalid.push(format!("{group}/{}", k.kind)),
        }
    }
    let message =
        (!invalid.is_empty()).then(|| format!("unsupported route kinds: {}", invalid.join(", ")));
    (valid, message)
}
