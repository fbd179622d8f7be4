//! One kept-alive HTTP/1.1 connection to the Gateway, polled until a path
//! answers 200. Must be used from a thread inside the node's network
//! namespace (the Gateway's address exists only there).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

type Body = Empty<bytes::Bytes>;

/// Gap between two requests while polling (each request itself takes
/// about 0.1-0.2 ms on this loopback path).
const POLL_GAP: Duration = Duration::from_micros(200);

pub struct GatewayClient {
    address: SocketAddr,
    sender: SendRequest<Body>,
    /// Connections opened again after the Gateway closed one.
    pub reconnects: u64,
}

impl GatewayClient {
    pub async fn connect(address: SocketAddr) -> anyhow::Result<Self> {
        Ok(Self {
            address,
            sender: open(address).await?,
            reconnects: 0,
        })
    }

    /// GET `path` with `Host: host`; the status. A closed connection is
    /// opened again once.
    pub async fn status(&mut self, host: &str, path: &str) -> anyhow::Result<u16> {
        match get(&mut self.sender, host, path).await {
            Ok(status) => Ok(status),
            Err(_) => {
                self.sender = open(self.address).await?;
                self.reconnects += 1;
                get(&mut self.sender, host, path).await
            }
        }
    }

    /// Polls until `host` + `path` answers 200, at most `cap`.
    pub async fn wait_for_200(
        &mut self,
        host: &str,
        path: &str,
        cap: Duration,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + cap;
        loop {
            let status = self.status(host, path).await.unwrap_or(0);
            if status == 200 {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "http://{host}{path} not 200 within {cap:?} (last: {status})"
            );
            // Deadline-bounded pacing of the poll, not synchronisation.
            coxswain_k8s_tests::poll::pause(POLL_GAP);
        }
    }
}

async fn open(address: SocketAddr) -> anyhow::Result<SendRequest<Body>> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

async fn get(sender: &mut SendRequest<Body>, host: &str, path: &str) -> anyhow::Result<u16> {
    sender.ready().await?;
    let request = http::Request::get(path)
        .header(http::header::HOST, host)
        .body(Empty::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}
