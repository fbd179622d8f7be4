//! Upstream h2c (prior knowledge) connections, one multiplexed connection
//! per endpoint. Unlike the pooled legacy client this lets `:authority`
//! carry the request's host while the socket goes to the chosen endpoint.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError}; // lock-ok: held only for a map lookup or insert, never across an await or I/O
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::http::body::ClientBody;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::upstream::UpstreamError;

pub struct H2cPool {
    connect_timeout: Duration,
    /// Held only to clone or replace a sender, never across an await.
    senders: Mutex<HashMap<SocketAddr, SendRequest<ClientBody>>>,
}

impl H2cPool {
    pub fn new(connect_timeout: Duration) -> Self {
        H2cPool {
            connect_timeout,
            senders: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, endpoint: SocketAddr) -> Option<SendRequest<ClientBody>> {
        let mut senders = self.senders.lock().unwrap_or_else(PoisonError::into_inner);
        match senders.get(&endpoint) {
            Some(s) if !s.is_closed() => Some(s.clone()),
            Some(_) => {
                senders.remove(&endpoint);
                None
            }
            None => None,
        }
    }

    async fn connect(
        &self,
        endpoint: SocketAddr,
    ) -> Result<SendRequest<ClientBody>, UpstreamError> {
        let stream = tokio::time::timeout(self.connect_timeout, TcpStream::connect(endpoint))
            .await
            .map_err(|_| UpstreamError::connect("connect timed out"))?
            .map_err(UpstreamError::connect)?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(UpstreamError::connect)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%endpoint, error = %e, "h2c upstream connection ended");
            }
        });
        self.senders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(endpoint, sender.clone());
        Ok(sender)
    }

    pub async fn send(
        &self,
        endpoint: SocketAddr,
        req: Request<ClientBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut sender = match self.cached(endpoint) {
            Some(sender) => sender,
            None => self.connect(endpoint).await?,
        };
        if sender.ready().await.is_err() {
            // The cached connection died between checks: reconnect once.
            sender = self.connect(endpoint).await?;
            sender.ready().await.map_err(UpstreamError::request)?;
        }
        sender
            .send_request(req)
            .await
            .map_err(UpstreamError::request)
    }
}
