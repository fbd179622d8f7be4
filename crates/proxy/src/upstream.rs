//! Pooled upstream clients: keep-alive HTTP/1.1 and prior-knowledge h2c.

use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use coxswain_ir::UpstreamProtocol;

pub type UpstreamClient = Client<HttpConnector, Incoming>;

pub struct Upstreams {
    http1: UpstreamClient,
    h2c: UpstreamClient,
}

fn connector(connect_timeout: Duration) -> HttpConnector {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(connect_timeout));
    connector
}

impl Upstreams {
    pub fn new(connect_timeout: Duration) -> Self {
        let http1 = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            // The proxy sets Host itself; never invent one from the endpoint.
            .set_host(false)
            .build(connector(connect_timeout));
        let h2c = Client::builder(TokioExecutor::new())
            .http2_only(true)
            .set_host(false)
            .build(connector(connect_timeout));
        Upstreams { http1, h2c }
    }

    pub fn for_protocol(&self, protocol: UpstreamProtocol) -> &UpstreamClient {
        match protocol {
            UpstreamProtocol::Http1 => &self.http1,
            UpstreamProtocol::H2c => &self.h2c,
        }
    }
}
