//! Upstream clients: pooled keep-alive HTTP/1.1 and h2c with prior knowledge.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::http::body::ClientBody;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use coxswain_ir::UpstreamProtocol;

use http::Uri;
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::uri::Authority;
use http::{HeaderMap, HeaderValue, Method};

use crate::backend_tls::{BackendIdentity, Clients, ClusterTls, TlsUpstream};
use crate::cluster::ClusterState;
use crate::connect_timing::TimedHttpConnector;
use crate::h2_pool::H2cPool;
use crate::http::authority::take_host_authority;

/// Why an upstream call failed; connect failures are counted separately.
#[derive(Debug)]
pub struct UpstreamError {
    pub is_connect: bool,
    message: String,
}

impl UpstreamError {
    pub fn connect(e: impl fmt::Display) -> Self {
        UpstreamError {
            is_connect: true,
            message: e.to_string(),
        }
    }

    pub fn request(e: impl fmt::Display) -> Self {
        UpstreamError {
            is_connect: false,
            message: e.to_string(),
        }
    }
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// How one request reaches its endpoint.
pub enum Via {
    Http1,
    H2c,
    /// TLS to a BackendTLSPolicy's backend, with the clients for the
    /// listener's client certificate.
    Tls(Arc<TlsUpstream>, Arc<Clients>),
}

impl Via {
    /// Plain text in the cluster's protocol.
    pub fn plain(protocol: UpstreamProtocol) -> Via {
        match protocol {
            UpstreamProtocol::Http1 => Via::Http1,
            UpstreamProtocol::H2c => Via::H2c,
        }
    }
}

impl Via {
    /// How requests reach `cluster`'s endpoints: plain text in its
    /// protocol, or TLS with the listener's client certificate `identity`.
    pub fn for_cluster(
        cluster: &ClusterState,
        identity: Option<&Arc<BackendIdentity>>,
        connect_timeout: Duration,
    ) -> Result<Via, ViaError> {
        match &cluster.tls {
            None => Ok(Via::plain(cluster.protocol)),
            Some(ClusterTls::Verify(tls)) => match tls.clients(identity, connect_timeout) {
                Ok(clients) => Ok(Via::Tls(tls.clone(), clients)),
                Err(reason) => Err(ViaError::Clients(reason.to_string())),
            },
            Some(ClusterTls::Invalid(reason)) => Err(ViaError::Policy(reason.clone())),
        }
    }
}

/// Why a cluster cannot be reached over TLS.
#[derive(Debug)]
pub enum ViaError {
    /// The TLS clients for the listener's client certificate failed.
    Clients(String),
    /// The cluster's BackendTLSPolicy cannot be honoured.
    Policy(String),
}

impl fmt::Display for ViaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViaError::Clients(reason) => write!(f, "backend TLS client: {reason}"),
            ViaError::Policy(reason) => write!(f, "backend TLS policy unusable: {reason}"),
        }
    }
}

/// `ip:port` as an authority, with one allocation.
fn endpoint_authority(endpoint: SocketAddr) -> Option<Authority> {
    crate::http::stack_fmt::with_formatted(&endpoint, |b| Authority::try_from(b))?.ok()
}

/// The upstream URI. HTTP/1.1 addresses the endpoint (the pool key) and
/// keeps `Host`; h2c moves the host into `:authority`, as HTTP/2 expects.
pub fn upstream_uri(
    via: &Via,
    endpoint: SocketAddr,
    headers: &mut HeaderMap,
    path_and_query: String,
) -> Option<Uri> {
    let (scheme, authority) = match via {
        Via::Http1 => ("http", endpoint_authority(endpoint)?),
        // HTTP/1.1 or HTTP/2 as the backend chooses: the TLS layer moves
        // Host into `:authority` when it is HTTP/2.
        Via::Tls(..) => ("https", endpoint_authority(endpoint)?),
        Via::H2c => ("http", take_host_authority(headers, endpoint)?),
    };
    Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query(path_and_query)
        .build()
        .ok()
}

/// Marks an unsized request body as chunked where hyper's HTTP/1 client
/// would otherwise send none: it drops a GET's or HEAD's body of unknown
/// length. An HTTP/2 client may send one (HEADERS without END_STREAM); the
/// backend gets it as it came, instead of an answer racing the rest of it.
pub fn frame_unsized_body(method: &Method, headers: &mut HeaderMap, body_ends_here: bool) {
    let bodiless_by_default = *method == Method::GET || *method == Method::HEAD;
    if bodiless_by_default && !body_ends_here && !headers.contains_key(CONTENT_LENGTH) {
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    }
}

impl fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstreams")
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

pub struct Upstreams {
    http1: Client<TimedHttpConnector, ClientBody>,
    h2c: H2cPool,
    pub connect_timeout: Duration,
}

impl Upstreams {
    pub fn new(connect_timeout: Duration) -> Self {
        Upstreams::with_idle(connect_timeout, crate::cluster::DEFAULT_IDLE)
    }

    /// Clients that give up connecting after `connect_timeout` and close
    /// pooled HTTP/1.1 connections idle for `idle`.
    pub fn with_idle(connect_timeout: Duration, idle: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        let http1 = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(idle)
            // The proxy sets Host itself; never invent one from the endpoint.
            .set_host(false)
            .build(TimedHttpConnector(connector));
        Upstreams {
            http1,
            h2c: H2cPool::new(connect_timeout),
            connect_timeout,
        }
    }

    /// Sends `req` to `endpoint`. For HTTP/1.1 (plain or TLS) the URI must
    /// name the endpoint (it picks the pooled connection); for h2c the URI
    /// carries the `:authority` and the endpoint is used only to connect.
    pub async fn send(
        &self,
        via: Via,
        endpoint: SocketAddr,
        req: Request<ClientBody>,
        upgrade: bool,
    ) -> Result<Response<Incoming>, UpstreamError> {
        match via {
            Via::Http1 => self.http1.request(req).await.map_err(pooled_error),
            // Upgrade is HTTP/1.1 only: never the backend's HTTP/2.
            Via::Tls(_, clients) if upgrade => {
                clients.http1.request(req).await.map_err(pooled_error)
            }
            // Boxed: its TLS handshake makes a large future, which would
            // otherwise size every request's future.
            Via::Tls(upstream, clients) => {
                Box::pin(upstream.send(&clients, endpoint, self.connect_timeout, req)).await
            }
            Via::H2c => self.h2c.send(endpoint, req).await,
        }
    }
}

pub fn pooled_error(e: hyper_util::client::legacy::Error) -> UpstreamError {
    // The cause (refused, certificate not valid, ...) is in the source.
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    UpstreamError {
        is_connect: e.is_connect(),
        message,
    }
}
