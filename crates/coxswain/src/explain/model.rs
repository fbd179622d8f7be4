//! What `coxswain explain` found, in the shape `-o json` prints (documented
//! in docs/explain.md: fields are only ever added).

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Explanation {
    pub request: RequestSummary,
    pub verdict: Verdict,
    /// The socket (address and port) that takes the connection.
    pub socket: Option<SocketChoice>,
    /// The Gateway listener that takes the request, and why.
    pub listener: Option<ListenerChoice>,
    /// The other listeners sharing the socket, and why they do not.
    pub other_listeners: Vec<ListenerMiss>,
    /// The rule (and its match) that answers.
    pub route: Option<RouteChoice>,
    /// The rule's request filters, in the order the proxy runs them.
    pub filters: Vec<FilterStep>,
    /// Edits made to the response: the rule's, then the backendRef's.
    pub response_filters: Vec<FilterStep>,
    /// Where the request may go, chosen by weight per request.
    pub backends: Vec<BackendChoice>,
    /// Every other rule match on the listener, and why it does not answer.
    pub near_misses: Vec<NearMiss>,
}

#[derive(Debug, Serialize)]
pub struct RequestSummary {
    pub method: String,
    pub url: String,
    pub scheme: &'static str,
    /// The Host routed on (lower-case, without port).
    pub host: String,
    pub port: u16,
    /// The path after the proxy's normalisation.
    pub path: String,
    pub query: Option<String>,
    pub sni: Option<String>,
    /// `[name, value]` pairs, Host included.
    pub headers: Vec<[String; 2]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A rule takes the request.
    Routed,
    /// The path is refused before routing (400).
    BadPath,
    /// Nothing listens on the port: the connection is refused.
    NoSocket,
    /// Plain HTTP to a TLS socket, or TLS to a plain one: closed.
    TlsMismatch,
    /// No listener owns the SNI (the handshake is refused) or the Host.
    NoListener,
    /// The listener the SNI picked does not serve HTTP.
    NotHttp,
    /// The Host belongs to another listener than the SNI picked (421).
    Misdirected,
    /// No rule of the listener matches (404).
    NoRoute,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    pub outcome: Outcome,
    /// The status the gateway itself answers with, when it does (a 404,
    /// a redirect, a refusing filter); `None` when a backend answers or
    /// no HTTP answer is given at all.
    pub status: Option<u16>,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct SocketChoice {
    pub address: String,
    pub tls: bool,
    pub proxy_protocol: bool,
}

#[derive(Debug, Serialize)]
pub struct ListenerChoice {
    /// `namespace/name` of the Gateway.
    pub gateway: String,
    pub name: String,
    pub listener_set: Option<String>,
    pub hostname: Option<String>,
    /// Position among the socket's listeners.
    pub index: usize,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct ListenerMiss {
    pub gateway: String,
    pub name: String,
    pub hostname: Option<String>,
    pub index: usize,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct RouteChoice {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub rule_index: u32,
    pub rule_name: Option<String>,
    /// Position of the match within the rule.
    pub match_index: usize,
    #[serde(rename = "match")]
    pub matched: String,
    /// The rule's effective hostnames on this listener (empty: any).
    pub hostnames: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct FilterStep {
    /// `network`, `admission`, `authn`, `authz`, `limits`, `transforms`,
    /// or `response`.
    pub phase: &'static str,
    /// Position of the filter in the rule's filter list (or the
    /// backendRef's, for its response edits).
    pub filter_index: usize,
    pub kind: String,
    pub detail: String,
    /// The status the filter answers with itself (a redirect, a filter
    /// that cannot be applied); `None` when it lets the request go on
    /// (an auth or limit filter answers only the requests it refuses).
    pub answers: Option<u16>,
}

#[derive(Debug, Serialize)]
pub struct BackendChoice {
    /// `namespace/service:port`, or `None` for a backendRef that did not
    /// resolve (its share is answered 500).
    pub cluster: Option<String>,
    pub invalid: Option<String>,
    pub weight: u32,
    /// Share of requests, in percent of the rule's total weight.
    pub share_percent: f64,
    pub endpoints: Vec<String>,
    /// How an endpoint is picked: `RoundRobin`, `LeastConn`, `Ewma`, `Hash`.
    pub balancer: String,
    /// Edits of the request by this backendRef's own filters.
    pub request_filters: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Hostname,
    Path,
    Method,
    Header,
    Query,
    /// It matches too, but ranks below the winner.
    Precedence,
    /// The proxy could not compile the match and skips the rule.
    Invalid,
}

#[derive(Debug, Serialize)]
pub struct Reason {
    pub field: Field,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct NearMiss {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub rule_index: u32,
    pub rule_name: Option<String>,
    pub match_index: usize,
    #[serde(rename = "match")]
    pub matched: String,
    pub reasons: Vec<Reason>,
}
