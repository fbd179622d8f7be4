//! External authorization (CoxswainExternalAuth): one check per request,
//! sent to the authorization service's cluster and turned into a
//! [`Verdict`]. The wire forms live in their own files: [`forward`]
//! (HTTP forward-auth) and [`grpc`] (Envoy's `Authorization/Check`).

pub mod forward;
pub mod grpc;
mod proto;

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use coxswain_ir::ExternalAuth;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use tokio::time::Instant;

use crate::balance::{Pick, RequestKey, Stickiness};
use crate::cluster::ClusterState;
use crate::http::body::ClientBody;
use crate::trace::CheckSpan;
use crate::upstream::{Upstreams, Via, upstream_uri};

/// The most of an authorization answer's body that is read (a denial's
/// body is relayed to the client; an allowing one is discarded).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// A resource as the stage uses it.
#[derive(Debug)]
pub struct CompiledExternalAuth {
    pub auth: ExternalAuth,
    pub timeout: Duration,
    /// Copied from an allowing answer onto the upstream request.
    pub response_headers: Vec<HeaderName>,
}

impl CompiledExternalAuth {
    pub fn compile(auth: &ExternalAuth) -> Self {
        CompiledExternalAuth {
            timeout: Duration::from_millis(auth.timeout_ms),
            response_headers: auth
                .response_headers
                .iter()
                .filter_map(|h| HeaderName::from_bytes(h.as_bytes()).ok())
                .collect(),
            auth: auth.clone(),
        }
    }
}

/// The request a check is about, as the stages have left it.
pub struct Original<'a> {
    pub method: &'a http::Method,
    pub host: &'a str,
    pub path_and_query: &'a str,
    pub headers: &'a HeaderMap,
    pub scheme: &'a str,
    pub client: std::net::IpAddr,
    pub version: Version,
    /// The body, when the resource forwards it.
    pub body: Option<&'a Bytes>,
}

/// What the service decided.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Go on, with these headers set on the upstream request.
    Allow(Vec<(HeaderName, HeaderValue)>),
    /// The client gets this answer.
    Deny {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
}

/// Why there is no verdict.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The cluster has no endpoint (or cannot be reached at all as
    /// configured): denied whatever `failClosed` says.
    NoEndpoint,
    /// Connecting, sending or reading failed, or the answer was not one.
    Failed(String),
    TimedOut,
}

impl CheckError {
    /// The check span's `error.type` and description.
    pub fn span_error(&self) -> (&'static str, String) {
        match self {
            CheckError::NoEndpoint => ("no_endpoint", "no authorization endpoint".into()),
            CheckError::Failed(why) => ("check_failed", why.clone()),
            CheckError::TimedOut => ("timeout", "the check timed out".into()),
        }
    }
}

/// An answer of the service, its body read (at most
/// [`MAX_ANSWER_BYTES`]).
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// gRPC trailers (`grpc-status`), merged with the headers.
    pub trailers: HeaderMap,
}

/// Sends `request` (its URI only a path; `Host` in its headers) to one of
/// `cluster`'s endpoints and reads the answer, all within `timeout`.
pub async fn exchange(
    upstreams: &Upstreams,
    cluster: &ClusterState,
    request: Request<ClientBody>,
    timeout: Duration,
    client: IpAddr,
    span: &mut CheckSpan<'_>,
) -> Result<Answer, CheckError> {
    // The service's endpoint is chosen like any backend's: its Service's
    // balancer, skipping endpoints whose breaker is open.
    let key = RequestKey {
        headers: request.headers(),
        path_and_query: request.uri().path_and_query().map_or("/", |p| p.as_str()),
        client,
    };
    let mut chosen = match cluster.pick(&key, &[], Stickiness::Policy, Instant::now()) {
        Pick::Chosen(chosen) => chosen,
        Pick::Empty | Pick::AllOpen => return Err(CheckError::NoEndpoint),
    };
    let endpoint = chosen.attempt.endpoint.address;
    span.endpoint(endpoint);
    let via = Via::for_cluster(
        cluster,
        None,
        cluster.connect_timeout(upstreams.connect_timeout),
    )
    .map_err(|_| CheckError::NoEndpoint)?;
    let (mut parts, body) = request.into_parts();
    span.inject(&mut parts.headers);
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let uri = upstream_uri(&via, endpoint, &mut parts.headers, path)
        .ok_or_else(|| CheckError::Failed("invalid check request".into()))?;
    parts.uri = uri;
    parts.version = match via {
        Via::H2c => Version::HTTP_2,
        Via::Http1 | Via::Tls(..) => Version::HTTP_11,
    };
    let request = Request::from_parts(parts, body);
    let call = async {
        let response = cluster
            .upstreams(upstreams)
            .send(via, endpoint, request, false)
            .await
            .map_err(|e| CheckError::Failed(e.to_string()))?;
        read(response).await
    };
    let answer = tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| CheckError::TimedOut)
        .and_then(|answer| answer);
    if let Ok(a) = &answer {
        let grpc_status = a
            .trailers
            .get("grpc-status")
            .or_else(|| a.headers.get("grpc-status"))
            .and_then(|v| v.to_str().ok()?.parse().ok());
        span.answered(a.status, grpc_status);
    }
    let healthy = answer.as_ref().is_ok_and(|a| !a.status.is_server_error());
    chosen.attempt.record(healthy, Instant::now());
    answer
}

async fn read(response: Response<Incoming>) -> Result<Answer, CheckError> {
    let (parts, body) = response.into_parts();
    let collected = Limited::new(body, MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| CheckError::Failed(format!("reading the answer: {e}")))?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body: collected.to_bytes(),
        trailers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_ir::{Cluster, Config, Endpoint, IR_VERSION, UpstreamProtocol};

    use crate::breaker_metrics::BreakerMetrics;
    use crate::cluster::ClusterSet;

    const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn clusters(endpoints: Vec<std::net::SocketAddr>) -> ClusterSet {
        let config = Config {
            ir_version: IR_VERSION,
            sockets: Vec::new(),
            clusters: vec![std::sync::Arc::new(Cluster {
                name: "auth".into(),
                protocol: UpstreamProtocol::Http1,
                endpoints: endpoints
                    .into_iter()
                    .map(|address| Endpoint { address })
                    .collect(),
                tls: None,
                policy: None,
                retry_budget: None,
            })],
            extensions: Vec::new(),
        };
        ClusterSet::compile(&config, None, &BreakerMetrics::default())
    }

    fn check() -> Request<ClientBody> {
        let mut request = Request::new(ClientBody::from_bytes(Bytes::new()));
        *request.uri_mut() = http::Uri::from_static("/");
        request
    }

    /// A service that takes the connection and never answers: the check's
    /// own timeout ends it (paused time: the runtime jumps to it once
    /// nothing else can happen).
    #[tokio::test(start_paused = true)]
    async fn a_service_that_never_answers_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                open.push(stream);
            }
        });
        let set = clusters(vec![addr]);
        let cluster = set.get("auth").unwrap();
        let upstreams = Upstreams::new(Duration::from_secs(60));
        let started = tokio::time::Instant::now();
        let timeout = Duration::from_secs(30);
        let outcome = exchange(
            &upstreams,
            cluster,
            check(),
            timeout,
            LOCALHOST,
            &mut CheckSpan::off(),
        )
        .await;
        assert!(
            matches!(outcome, Err(CheckError::TimedOut)),
            "{:?}",
            outcome.err()
        );
        assert!(started.elapsed() >= timeout);
    }

    #[tokio::test]
    async fn a_cluster_without_endpoints_has_no_answer() {
        let set = clusters(Vec::new());
        let upstreams = Upstreams::new(Duration::from_secs(1));
        let outcome = exchange(
            &upstreams,
            set.get("auth").unwrap(),
            check(),
            Duration::from_secs(1),
            LOCALHOST,
            &mut CheckSpan::off(),
        )
        .await;
        assert!(matches!(outcome, Err(CheckError::NoEndpoint)));
    }
}
