//! Upstream clients: pooled keep-alive HTTP/1.1 and h2c with prior knowledge.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::http::body::ClientBody;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use coxswain_ir::UpstreamProtocol;

use crate::h2c_pool::H2cPool;

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

pub struct Upstreams {
    http1: Client<HttpConnector, ClientBody>,
    h2c: H2cPool,
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
        }
    }

    /// Sends `req` to `endpoint`. For HTTP/1.1 the URI must name the
    /// endpoint (it picks the pooled connection); for h2c the URI carries
    /// the `:authority` and the endpoint is used only to connect.
    pub async fn send(
        &self,
        protocol: UpstreamProtocol,
        endpoint: SocketAddr,
        req: Request<ClientBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        match protocol {
            UpstreamProtocol::Http1 => self.http1.request(req).await.map_err(|e| {
                let detail = std::error::Error::source(&e)
                    .map(|s| format!("{e}: {s}"))
                    .unwrap_or_else(|| e.to_string());
                UpstreamError {
                    is_connect: e.is_connect(),
                    message: detail,
                }
            }),
            UpstreamProtocol::H2c => self.h2c.send(endpoint, req).await,
        }
    }
}
