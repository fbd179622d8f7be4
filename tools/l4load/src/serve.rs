//! The plain origins: a TCP echo server and a UDP echo server.

use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

use crate::cli::ServeArgs;

pub async fn tcp_echo(args: ServeArgs) -> anyhow::Result<()> {
    let listener = bind(&args).await?;
    loop {
        let stream = accept(&listener).await;
        tokio::spawn(async move {
            let mut stream = stream;
            // The peer going away mid-echo is normal at the end of a run.
            let _ = echo(&mut stream).await;
        });
    }
}

pub async fn udp_echo(args: ServeArgs) -> anyhow::Result<()> {
    let socket = UdpSocket::bind(args.listen)
        .await
        .with_context(|| format!("binding udp {}", args.listen))?;
    eprintln!("udp echo on {}", args.listen);
    let mut buf = vec![0u8; 65_536];
    loop {
        // A failed receive or send loses one datagram, as UDP may.
        if let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let _ = socket.send_to(&buf[..n], from).await;
        }
    }
}

pub async fn bind(args: &ServeArgs) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding tcp {}", args.listen))?;
    eprintln!("tcp listening on {}", args.listen);
    Ok(listener)
}

/// The next connection, with Nagle off; accept errors (such as running out
/// of file descriptors) are reported and retried after a pause.
pub async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                return stream;
            }
            Err(e) => {
                eprintln!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Writes back everything read; on EOF, closes the write side.
pub async fn echo<S>(stream: &mut S) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return stream.shutdown().await;
        }
        stream.write_all(&buf[..n]).await?;
    }
}
