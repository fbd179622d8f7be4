//! Plain HTTP/1.1 requests sent from inside a network namespace. Each request
//! runs on a fresh thread that joins the namespace (setns affects only the
//! calling thread), so the test process itself stays on the host.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, anyhow};
use nix::sched::{CloneFlags, setns};

const TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    /// The `pod` field of an echo-basic JSON answer.
    pub fn echo_pod(&self) -> Option<String> {
        self.echo_field("pod")
    }

    pub fn echo_field(&self, name: &str) -> Option<String> {
        let value: serde_json::Value = serde_json::from_str(&self.body).ok()?;
        value[name].as_str().map(str::to_string)
    }
}

/// A client bound to one named network namespace (`ip netns` name).
#[derive(Clone, Debug)]
pub struct NetnsHttp {
    pub netns: String,
}

impl NetnsHttp {
    /// GET `path` from `addr`, with extra `headers`.
    pub fn get(
        &self,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Response> {
        let netns = format!("/run/netns/{}", self.netns);
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        std::thread::spawn(move || -> anyhow::Result<Response> {
            let file = File::open(&netns).with_context(|| format!("cannot open {netns}"))?;
            setns(&file, CloneFlags::CLONE_NEWNET).with_context(|| format!("setns {netns}"))?;
            let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)
                .with_context(|| format!("connect {addr}"))?;
            stream.set_read_timeout(Some(TIMEOUT))?;
            stream.set_write_timeout(Some(TIMEOUT))?;
            stream.write_all(request.as_bytes())?;
            let mut raw = Vec::new();
            stream
                .read_to_end(&mut raw)
                .with_context(|| format!("read from {addr}"))?;
            parse(&raw)
        })
        .join()
        .map_err(|_| anyhow!("request thread panicked"))?
    }
}

/// Status and body of a `Connection: close` response (chunked bodies decoded).
fn parse(raw: &[u8]) -> anyhow::Result<Response> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("incomplete response: {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line in {head:?}"))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok(Response { status, body })
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_bodies() {
        let plain = parse(b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno").unwrap();
        assert_eq!((plain.status, plain.body.as_str()), (404, "no"));
        let chunked =
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n2\r\n\"}\r\n0\r\n\r\n").unwrap();
        assert_eq!((chunked.status, chunked.body.as_str()), (200, "{\"a\"}"));
    }
}
