//! The proxy's neighbours, on threads of their own so that none of their
//! allocations are counted: an origin answering every request with the
//! same 1 KiB body, and the clients (HTTP/1.1 keep-alive, h2c).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use anyhow::{Context, bail, ensure};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};

pub const BODY_LEN: usize = 1024;

/// Starts the origin; returns its address. Each connection gets a thread.
pub fn start_origin() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {BODY_LEN}\r\n\r\n"
    )
    .into_bytes();
    response.resize(response.len() + BODY_LEN, b'x');
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let response = response.clone();
            std::thread::spawn(move || serve_origin(stream, &response));
        }
    });
    Ok(address)
}

/// Answers each bodiless request on `stream` until the peer closes.
fn serve_origin(mut stream: TcpStream, response: &[u8]) {
    let _ = stream.set_nodelay(true);
    let mut buffer = [0u8; 8192];
    let mut filled = 0;
    loop {
        match stream.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => filled += n,
        }
        while let Some(end) = find(&buffer[..filled], b"\r\n\r\n") {
            if stream.write_all(response).is_err() {
                return;
            }
            buffer.copy_within(end + 4..filled, 0);
            filled -= end + 4;
        }
        if filled == buffer.len() {
            return;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One HTTP/1.1 keep-alive connection to the proxy.
pub struct H1Client {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl H1Client {
    pub fn connect(proxy: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(proxy)?;
        stream.set_nodelay(true)?;
        Ok(H1Client {
            stream,
            buffer: vec![0; 16 * 1024],
        })
    }

    /// GET / and read the whole response; fails on anything but a 200
    /// with the origin's body.
    pub fn get(&mut self) -> anyhow::Result<()> {
        self.stream.write_all(
            b"GET / HTTP/1.1\r\nhost: bench.example\r\nuser-agent: request-allocs\r\n\r\n",
        )?;
        let mut filled = 0;
        let head_end = loop {
            let n = self.stream.read(&mut self.buffer[filled..])?;
            ensure!(n > 0, "the proxy closed the connection");
            filled += n;
            if let Some(end) = find(&self.buffer[..filled], b"\r\n\r\n") {
                break end + 4;
            }
            ensure!(filled < self.buffer.len(), "response head too large");
        };
        let head = std::str::from_utf8(&self.buffer[..head_end]).context("response head")?;
        if !head.starts_with("HTTP/1.1 200") {
            bail!("proxy answered {}", head.lines().next().unwrap_or_default());
        }
        let length = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .context("no content-length")?;
        ensure!(length == BODY_LEN, "body of {length} bytes");
        while filled < head_end + length {
            let n = self.stream.read(&mut self.buffer[filled..])?;
            ensure!(n > 0, "the proxy closed the connection mid-body");
            filled += n;
        }
        Ok(())
    }
}

/// One h2c (prior knowledge) connection to the proxy, driven on a runtime
/// of its own thread.
pub struct H2Client {
    runtime: tokio::runtime::Runtime,
    sender: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
}

impl H2Client {
    pub fn connect(proxy: SocketAddr) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let sender = runtime.block_on(async {
            let stream = tokio::net::TcpStream::connect(proxy).await?;
            stream.set_nodelay(true)?;
            let (sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                    .await?;
            tokio::spawn(connection);
            anyhow::Ok(sender)
        })?;
        Ok(H2Client { runtime, sender })
    }

    /// GET / on a new stream; reads the whole body.
    pub fn get(&mut self) -> anyhow::Result<()> {
        let request = hyper::Request::get("http://bench.example/")
            .header("user-agent", "request-allocs")
            .body(Empty::new())?;
        let sender = &mut self.sender;
        self.runtime.block_on(async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            ensure!(
                response.status() == 200,
                "proxy answered {}",
                response.status()
            );
            let body = response.into_body().collect().await?.to_bytes();
            ensure!(body.len() == BODY_LEN, "body of {} bytes", body.len());
            Ok(())
        })
    }
}
