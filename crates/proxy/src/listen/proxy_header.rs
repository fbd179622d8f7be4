//! Reading the PROXY protocol header a socket expects, bounded in time (a
//! silent connection cannot hold its slot) and in size (the parser's
//! limits). The header is consumed; what follows it stays in the buffer for
//! the TLS or HTTP reader.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use coxswain_ir::ProxyProtocol;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::proxy_protocol::{HeaderError, Parse, parse};

/// How long a connection may take to send its header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a connection is closed before anything else is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The header started but is invalid.
    Malformed(HeaderError),
    /// No header, and the socket requires one.
    Missing,
    /// The client closed (or the read failed) before the header was whole.
    Closed,
    /// No complete header within [`HEADER_TIMEOUT`].
    TimedOut,
}

/// The connection's client: the header's source, or `peer` for a LOCAL or
/// UNKNOWN header and (when optional) for a connection without one. On
/// return `buf` holds the bytes read after the header.
pub async fn read_proxy_header<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
    peer: SocketAddr,
    setting: ProxyProtocol,
) -> Result<SocketAddr, Refused> {
    let read = async {
        loop {
            match parse(buf) {
                Ok(Parse::Complete(header)) => {
                    let _ = buf.split_to(header.len.min(buf.len()));
                    return Ok(header.source.unwrap_or(peer));
                }
                Ok(Parse::Absent) if setting.optional => return Ok(peer),
                Ok(Parse::Absent) => return Err(Refused::Missing),
                Ok(Parse::NeedMore) => {}
                Err(e) => return Err(Refused::Malformed(e)),
            }
            buf.reserve(512);
            match io.read_buf(buf).await {
                Ok(0) | Err(_) => return Err(Refused::Closed),
                Ok(_) => {}
            }
        }
    };
    match tokio::time::timeout(HEADER_TIMEOUT, read).await {
        Ok(result) => result,
        // A client that speaks only after the server (a TCP route to such
        // a protocol) may be served when the header is optional.
        Err(_) if setting.optional && buf.is_empty() => Ok(peer),
        Err(_) => Err(Refused::TimedOut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    const REQUIRED: ProxyProtocol = ProxyProtocol { optional: false };
    const OPTIONAL: ProxyProtocol = ProxyProtocol { optional: true };

    fn peer() -> SocketAddr {
        "127.0.0.1:5000".parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_times_out() {
        let (mut server, _client) = tokio::io::duplex(64);
        let mut buf = BytesMut::new();
        let started = tokio::time::Instant::now();
        let got = read_proxy_header(&mut server, &mut buf, peer(), REQUIRED).await;
        assert_eq!(got, Err(Refused::TimedOut));
        assert_eq!(started.elapsed(), HEADER_TIMEOUT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_partial_header_times_out_even_when_optional() {
        let (mut server, mut client) = tokio::io::duplex(64);
        client.write_all(b"PROXY TCP4 ").await.unwrap();
        let mut buf = BytesMut::new();
        let got = read_proxy_header(&mut server, &mut buf, peer(), OPTIONAL).await;
        assert_eq!(got, Err(Refused::TimedOut));
    }

    #[tokio::test(start_paused = true)]
    async fn optional_serves_a_silent_client_with_its_peer() {
        let (mut server, _client) = tokio::io::duplex(64);
        let mut buf = BytesMut::new();
        let got = read_proxy_header(&mut server, &mut buf, peer(), OPTIONAL).await;
        assert_eq!(got, Ok(peer()));
    }

    #[tokio::test]
    async fn a_header_split_across_writes_is_consumed_and_the_rest_kept() {
        let (mut server, mut client) = tokio::io::duplex(64);
        tokio::spawn(async move {
            for part in [
                &b"PROXY TCP4 203.0.113.7 "[..],
                b"192.0.2.1 4000 80\r",
                b"\nGET",
            ] {
                client.write_all(part).await.unwrap();
                tokio::task::yield_now().await;
            }
            client
        });
        let mut buf = BytesMut::new();
        let got = read_proxy_header(&mut server, &mut buf, peer(), REQUIRED).await;
        assert_eq!(got, Ok("203.0.113.7:4000".parse().unwrap()));
        while buf.len() < 3 {
            server.read_buf(&mut buf).await.unwrap();
        }
        assert_eq!(&buf[..], b"GET");
    }

    #[tokio::test]
    async fn missing_closed_and_malformed() {
        let (mut server, mut client) = tokio::io::duplex(64);
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let mut buf = BytesMut::new();
        let got = read_proxy_header(&mut server, &mut buf, peer(), REQUIRED).await;
        assert_eq!(got, Err(Refused::Missing));
        let mut buf = BytesMut::from(&b"GET / HTTP/1.1\r\n"[..]);
        let got = read_proxy_header(&mut server, &mut buf, peer(), OPTIONAL).await;
        assert_eq!(got, Ok(peer()));
        assert_eq!(&buf[..], b"GET / HTTP/1.1\r\n", "kept for the HTTP reader");

        let mut buf = BytesMut::from(&b"PROXY TCP9 x\r\n"[..]);
        let got = read_proxy_header(&mut server, &mut buf, peer(), OPTIONAL).await;
        assert_eq!(got, Err(Refused::Malformed(HeaderError::V1Malformed)));

        drop(client);
        let mut buf = BytesMut::from(&b"PROXY"[..]);
        let got = read_proxy_header(&mut server, &mut buf, peer(), REQUIRED).await;
        assert_eq!(got, Err(Refused::Closed));
    }
}
