use serde::{Deserialize, Serialize};

use crate::{Filter, Hostname};

/// One HTTPRoute rule as attached to one Gateway listener.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub id: RouteId,
    /// Effective hostnames (route ∩ listener). Empty matches every Host the
    /// listener accepts.
    pub hostnames: Vec<Hostname>,
    /// Never empty: a rule without matches gets `PathPrefix /`.
    pub matches: Vec<RouteMatch>,
    /// Rule-level filters in spec order.
    pub filters: Vec<Filter>,
    /// Empty (or all weights 0) with no redirect answers 500.
    pub backends: Vec<WeightedBackend>,
    pub timeouts: Timeouts,
    /// HTTPRoute `retry`. Without it only a refused connection of a
    /// bodiless request is retried (once, on the next endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// HTTPRoute rule `sessionPersistence`: clients pinned to one endpoint
    /// of the rule's backends by a token the gateway issues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<RouteSession>,
}

/// Session persistence of one route rule (GEP-1619).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteSession {
    /// The cookie or header carrying the token.
    pub name: String,
    pub carrier: SessionCarrier,
    /// A session is void this long after it began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absolute_timeout_ms: Option<u64>,
    /// A session unused this long is void (each answer renews its token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionCarrier {
    /// `Set-Cookie`; `permanent` gives it a `Max-Age` of the absolute timeout.
    Cookie { permanent: bool },
    /// A response header the client sends back as a request header.
    Header,
}

/// HTTPRoute `retry`: which failed attempts are tried again, how often and
/// how soon. Connection errors and backend-request timeouts are retried as
/// well as the listed response codes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retry {
    /// Response status codes that are retried.
    pub codes: Vec<u16>,
    /// Retries after the first attempt.
    pub attempts: u32,
    /// Minimum wait before the first retry; it doubles for each further one.
    pub backoff_ms: u64,
}

/// Where a route came from: used for metrics labels, logs and `/config`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteId {
    pub kind: RouteKind,
    pub namespace: String,
    pub name: String,
    pub rule_index: u32,
    pub rule_name: Option<String>,
}

/// The route kind a rule came from (a Gateway API route, or an Ingress).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RouteKind {
    #[serde(rename = "HTTPRoute")]
    Http,
    /// Lowered onto the HTTP rule type: one router, two front doors.
    #[serde(rename = "GRPCRoute")]
    Grpc,
    #[serde(rename = "TLSRoute")]
    Tls,
    #[serde(rename = "TCPRoute")]
    Tcp,
    #[serde(rename = "UDPRoute")]
    Udp,
    /// A classic `networking.k8s.io/v1` Ingress rule, lowered onto the
    /// HTTP rule type. Its wildcard hostnames match exactly one label.
    #[serde(rename = "Ingress")]
    Ingress,
}

impl RouteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
            RouteKind::Tls => "TLSRoute",
            RouteKind::Tcp => "TCPRoute",
            RouteKind::Udp => "UDPRoute",
            RouteKind::Ingress => "Ingress",
        }
    }

    /// Does a wildcard hostname of this kind's rules match exactly one
    /// label (`*.example.com`: `a.example.com`, never `a.b.example.com`)?
    /// Classic Ingress says so; Gateway API wildcards match one or more.
    pub fn single_label_wildcards(self) -> bool {
        self == RouteKind::Ingress
    }
}

/// One TLSRoute, TCPRoute or UDPRoute rule on one listener: where a
/// connection (or UDP session) goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct L4Route {
    pub id: RouteId,
    /// TLSRoute only: effective SNI hostnames (route ∩ listener). Empty
    /// matches every name the listener accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<Hostname>,
    /// Chosen by weight once per connection (or session). Empty (or all
    /// weights 0) refuses the connection.
    pub backends: Vec<WeightedBackend>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteMatch {
    pub path: PathMatch,
    /// Upper-case HTTP method.
    pub method: Option<String>,
    /// All must match. Names are lower-case.
    pub headers: Vec<HeaderMatch>,
    /// All must match. Names are case-sensitive.
    pub query: Vec<QueryMatch>,
    /// Set on a GRPCRoute's match (lowered onto the path): its precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcMethodChars>,
}

/// A GRPCRoute match's precedence: characters in the matching service,
/// then in the matching method (more first), as the spec orders them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GrpcMethodChars {
    pub service: u32,
    pub method: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PathMatch {
    Exact(String),
    /// Matches whole path segments: `/foo` matches `/foo` and `/foo/bar`,
    /// never `/foobar`. A trailing `/` in the value is ignored except for `/`.
    Prefix(String),
    /// Anchored to the full path (`^(?:re)$`), Rust `regex` syntax.
    Regex(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeaderMatch {
    pub name: String,
    pub value: StringMatch,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryMatch {
    pub name: String,
    pub value: StringMatch,
}

/// Exact compares the whole value; Regex is unanchored (matches anywhere).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StringMatch {
    Exact(String),
    Regex(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightedBackend {
    pub weight: u32,
    pub target: BackendTarget,
    /// backendRef-level filters (header modifiers only; none on L4 routes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Filter>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum BackendTarget {
    /// Name of a [`crate::Cluster`] in the same config.
    Cluster(String),
    /// A backendRef that did not resolve: its share of traffic gets 500.
    Invalid { reason: String },
}

/// HTTPRoute `timeouts`, in milliseconds. `None` means no timeout.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    pub request_ms: Option<u64>,
    pub backend_request_ms: Option<u64>,
}
