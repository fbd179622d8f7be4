//! Plain HTTP sockets carry HTTP/1.1 or HTTP/2 with prior knowledge. Before
//! handing a connection to the HTTP server, its first line is read (and
//! then replayed to the server): bytes that are neither an HTTP/1 request
//! line nor the HTTP/2 preface close the connection without a response, as
//! an HTTP/2 endpoint must for an invalid preface (RFC 9113 3.4).

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const H2_PREFACE_LINE: &[u8] = b"PRI * HTTP/2.0\r\n";
/// Enough for a request line up to the default request-target limit; a
/// longer one is left to the HTTP server (which answers 414 or 400).
const LIMIT: usize = 9 * 1024;

/// Reads into `buf` until the first line (or `LIMIT` bytes) is there and
/// judges it. Everything read stays in `buf`, to be replayed.
pub async fn plausible_start<R: AsyncRead + Unpin>(stream: &mut R, buf: &mut BytesMut) -> bool {
    loop {
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            return plausible_line(buf.get(..=end).unwrap_or_default());
        }
        if buf.len() >= LIMIT || !could_start(buf) {
            return could_start(buf);
        }
        buf.reserve(1024);
        match stream.read_buf(buf).await {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Could these bytes still become a request line (method token first)?
fn could_start(bytes: &[u8]) -> bool {
    let method_len = bytes.iter().take_while(|&&b| is_token(b)).count();
    match bytes.get(method_len) {
        None => true,
        Some(b' ') => method_len > 0,
        Some(_) => false,
    }
}

/// `METHOD SP target SP HTTP/d.d (CR)LF`, or the HTTP/2 preface line.
fn plausible_line(line: &[u8]) -> bool {
    if line == H2_PREFACE_LINE {
        return true;
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !method.is_empty()
        && method.iter().all(|&b| is_token(b))
        && !target.is_empty()
        && version.len() == 8
        && version.starts_with(b"HTTP/")
        && version.get(5).is_some_and(u8::is_ascii_digit)
        && version.get(6) == Some(&b'.')
        && version.get(7).is_some_and(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_and_the_preface_pass_garbage_does_not() {
        for good in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"OPTIONS * HTTP/1.1\r\n",
            b"POST /a?b=c HTTP/1.0\n",
            b"PRI * HTTP/2.0\r\n",
        ] {
            assert!(plausible_line(good), "{:?}", String::from_utf8_lossy(good));
        }
        for bad in [
            &b"INVALID CONNECTION PREFACE\r\n"[..],
            b"GET /\r\n",
            b"GET  / HTTP/1.1\r\n",
            b"\x16\x03\x01\x00\x05hello\n",
            b"GET / HTTP/1.1 extra\r\n",
        ] {
            assert!(!plausible_line(bad), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_partial_line_is_judged_by_its_method() {
        assert!(could_start(b"GE"));
        assert!(could_start(b"GET /par"));
        assert!(!could_start(b"\x16\x03"));
        assert!(!could_start(b" GET"));
    }
}
