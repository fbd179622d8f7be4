//! Upstream HTTP/2 connections, one multiplexed connection per endpoint:
//! h2c with prior knowledge, and h2 over TLS when a backend picks it by
//! ALPN. Unlike the pooled legacy client this lets `:authority` carry the
//! request's host while the socket goes to the chosen endpoint.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError}; // lock-ok: held only for a map lookup or insert, never across an await or I/O
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http2::{self, SendRequest};
use hyper::rt::{Read, Write};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::connect_timing::ConnectTiming;
use crate::http::body::ClientBody;
use crate::upstream::UpstreamError;

/// Live HTTP/2 connections by endpoint.
#[derive(Default)]
pub struct H2Pool {
    /// Held only to clone or replace a sender, never across an await.
    senders: Mutex<HashMap<SocketAddr, SendRequest<ClientBody>>>,
}

impl H2Pool {
    /// The endpoint's connection if it is still open.
    pub fn cached(&self, endpoint: SocketAddr) -> Option<SendRequest<ClientBody>> {
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

    /// Starts HTTP/2 on `io` (already connected to `endpoint`) and keeps
    /// the connection for later requests.
    pub async fn handshake<IO>(
        &self,
        endpoint: SocketAddr,
        io: IO,
    ) -> Result<SendRequest<ClientBody>, UpstreamError>
    where
        IO: Read + Write + Unpin + Send + 'static,
    {
        let (sender, connection) = http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(UpstreamError::connect)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%endpoint, error = %e, "HTTP/2 upstream connection ended");
            }
        });
        self.senders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(endpoint, sender.clone());
        Ok(sender)
    }

    /// Sends `req` on the endpoint's connection, opening one with `connect`
    /// when there is none or the cached one died.
    pub async fn send<C, F>(
        &self,
        endpoint: SocketAddr,
        req: Request<ClientBody>,
        connect: C,
    ) -> Result<Response<Incoming>, UpstreamError>
    where
        C: Fn() -> F,
        F: Future<Output = Result<SendRequest<ClientBody>, UpstreamError>>,
    {
        // Connecting is rare and its future large: boxed, so that every
        // request's future (moved on each spawn) stays small.
        let mut fresh = None;
        let mut sender = match self.cached(endpoint) {
            Some(sender) => sender,
            None => {
                let started = Instant::now();
                let sender = Box::pin(connect()).await?;
                fresh = Some(ConnectTiming::since(started));
                sender
            }
        };
        if sender.ready().await.is_err() {
            // The cached connection died between checks: reconnect once.
            let started = Instant::now();
            sender = Box::pin(connect()).await?;
            fresh = Some(ConnectTiming::since(started));
            sender.ready().await.map_err(UpstreamError::request)?;
        }
        let mut response = sender
            .send_request(req)
            .await
            .map_err(UpstreamError::request)?;
        // Only this request waited for the connection; later ones share it.
        if let Some(timing) = fresh {
            response.extensions_mut().insert(timing);
        }
        Ok(response)
    }
}

/// A TCP connection with a timeout and Nagle off.
pub async fn tcp_connect(
    endpoint: SocketAddr,
    timeout: Duration,
) -> Result<TcpStream, UpstreamError> {
    let stream = tokio::time::timeout(timeout, TcpStream::connect(endpoint))
        .await
        .map_err(|_| UpstreamError::connect("connect timed out"))?
        .map_err(UpstreamError::connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// h2c with prior knowledge.
pub struct H2cPool {
    connect_timeout: Duration,
    pool: H2Pool,
}

impl H2cPool {
    pub fn new(connect_timeout: Duration) -> Self {
        H2cPool {
            connect_timeout,
            pool: H2Pool::default(),
        }
    }

    pub async fn send(
        &self,
        endpoint: SocketAddr,
        req: Request<ClientBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let connect = || async {
            let stream = tcp_connect(endpoint, self.connect_timeout).await?;
            self.pool.handshake(endpoint, TokioIo::new(stream)).await
        };
        self.pool.send(endpoint, req, connect).await
    }
}
