//! Connects the pooled HTTP/1.1 client to a backend over TLS: TCP to the
//! endpoint the URI names, then a handshake with the cluster's SNI and
//! verifier (and the listener's client certificate, if any).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;

use crate::connect_timing::{ConnectTiming, Timed};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Clone)]
pub struct TlsConnector {
    tcp: HttpConnector,
    tls: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    handshake_timeout: Duration,
}

impl TlsConnector {
    pub fn new(
        config: Arc<ClientConfig>,
        server_name: ServerName<'static>,
        connect_timeout: Duration,
    ) -> Self {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        // The URI is `https://endpoint`; TLS is done here, not by hyper.
        tcp.enforce_http(false);
        TlsConnector {
            tcp,
            tls: tokio_rustls::TlsConnector::from(config),
            server_name,
            handshake_timeout: connect_timeout,
        }
    }
}

impl tower_service::Service<Uri> for TlsConnector {
    type Response = Timed<TlsConnection>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Timed<TlsConnection>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let started = Instant::now();
        let connecting = self.tcp.call(uri);
        let tls = self.tls.clone();
        let server_name = self.server_name.clone();
        let timeout = self.handshake_timeout;
        Box::pin(async move {
            let tcp = connecting.await?.into_inner();
            let stream = tokio::time::timeout(timeout, tls.connect(server_name, tcp))
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
            let connection = TlsConnection(TokioIo::new(stream));
            Ok(Timed::new(connection, ConnectTiming::since(started)))
        })
    }
}

/// A TLS connection to a backend, as the pooled client wants it.
pub struct TlsConnection(TokioIo<TlsStream<TcpStream>>);

impl Connection for TlsConnection {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl Read for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl Write for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}
