//! What the stages of one request share: the request as the stages have
//! left it so far, and what its response will need.

use std::net::IpAddr;

use http::request::Parts;
use http::{HeaderName, HeaderValue};
use hyper::upgrade::OnUpgrade;

use super::compression::CompressionPlan;
use super::request_body::RequestBody;
use crate::mirror::MirrorFilter;
use crate::router::CompiledMatch;
use crate::trace::TraceScope;
use crate::upstream::Upstreams;

/// An upgrade the client asked for (WebSocket), to be relayed once the
/// backend agrees.
pub struct UpgradeRequest {
    /// The `Upgrade` protocol (or the extended CONNECT's `:protocol`).
    pub protocol: HeaderValue,
    /// The client's side of the tunnel.
    pub client: OnUpgrade,
    /// An HTTP/2 extended CONNECT (RFC 8441), sent upstream as an HTTP/1.1
    /// upgrade.
    pub over_h2: bool,
}

/// One request on its way through a route's stages.
pub struct RequestCtx<'r> {
    /// Method, URI and headers; stages edit the headers in place.
    pub parts: Parts,
    /// The match that took the request (prefix rewrites need it).
    pub matched: &'r CompiledMatch,
    pub client: IpAddr,
    pub listener_port: u16,
    /// The upstream clients, for stages that call a service themselves.
    pub upstreams: &'r Upstreams,
    /// `http` or `https`: how the request arrived.
    pub scheme: &'static str,
    /// The Host the client asked for, normalised.
    pub host: String,
    /// The client's path (normalised) and query.
    pub path: String,
    pub query: Option<String>,
    /// What a URL rewrite made of the host and path.
    pub new_host: Option<String>,
    pub new_path: Option<String>,
    pub upgrade: Option<UpgradeRequest>,
    /// The mirror filters this request was sampled for.
    pub mirrors: Vec<&'r MirrorFilter>,
    /// The most body bytes the request may carry (the smallest of its
    /// rule's RequestSizeLimits).
    pub body_limit: Option<u64>,
    /// The claims of the token a JwtAuth stage verified (the limits phase
    /// keys buckets on them); boxed, most requests have none.
    pub claims: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    /// Unread unless a stage needed it whole.
    pub body: RequestBody,
    pub plan: ResponsePlan,
    /// The request's trace, when tracing is on: calls the stages make
    /// are its child spans.
    pub trace: Option<&'r TraceScope>,
}

/// The request as it goes upstream (and to mirrors), once the stages and
/// the forwarding step are done.
pub struct Outbound<'r> {
    pub parts: Parts,
    pub path_and_query: String,
    pub client: IpAddr,
    pub upgrade: Option<UpgradeRequest>,
    pub mirrors: Vec<&'r MirrorFilter>,
    pub body_limit: Option<u64>,
    pub plan: ResponsePlan,
    pub trace: Option<&'r TraceScope>,
}

/// What the response phase adds to the upstream's answer, decided while
/// the request went through.
#[derive(Default)]
pub struct ResponsePlan {
    /// CORS headers for an allowed origin.
    pub cors: Vec<(HeaderName, HeaderValue)>,
    /// Headers request stages add to the answer (the rate-limit state).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The rule's Compression and the coding this client takes.
    pub compression: Option<CompressionPlan>,
}
