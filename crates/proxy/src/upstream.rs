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

use crate::backend_tls::{Clients, TlsUpstream};
use crate::h2_pool::H2cPool;

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

pub struct Upstreams {
    http1: Client<HttpConnector, ClientBody>,
    h2c: H2cPool,
    pub connect_timeout: Duration,
}

impl Upstreams {
    pub fn new(connect_timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        let http1 = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            // The proxy sets Host itself; never invent one from the endpoint.
            .set_host(false)
            .build(connector);
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
            Via::Tls(upstream, clients) => {
                upstream
                    .send(&clients, endpoint, self.connect_timeout, req)
                    .await
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
