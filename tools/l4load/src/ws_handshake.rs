//! The WebSocket opening handshake (RFC 6455 §4): keys, the accept value,
//! and reading and checking an HTTP/1.1 head on either side.

use std::io;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::digest::{SHA1_FOR_LEGACY_USE_ONLY, digest};
use ring::rand::{SecureRandom, SystemRandom};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Appended to the key before hashing (RFC 6455 §1.3).
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// A request or response head larger than this is refused.
pub const MAX_HEAD: usize = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("connection closed during the handshake")]
    Eof,
    #[error("head longer than {MAX_HEAD} bytes")]
    HeadTooLarge,
    #[error("head is not UTF-8 text")]
    NotText,
    #[error("malformed start line {0:?}")]
    StartLine(String),
    #[error("malformed header line {0:?}")]
    FieldLine(String),
    #[error("expected 101, got {0:?}")]
    Status(String),
    #[error("missing or wrong {0} header")]
    Header(&'static str),
    #[error("Sec-WebSocket-Accept {got:?}, expected {expected:?}")]
    Accept { got: String, expected: String },
    #[error("no randomness: {0}")]
    Random(&'static str),
}

/// base64(SHA-1(key + GUID)): the server's Sec-WebSocket-Accept for `key`.
pub fn accept_key(key: &str) -> String {
    let mut input = String::with_capacity(key.len() + ACCEPT_GUID.len());
    input.push_str(key);
    input.push_str(ACCEPT_GUID);
    STANDARD.encode(digest(&SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes()))
}

/// A fresh Sec-WebSocket-Key: 16 random bytes, base64.
pub fn new_key(random: &SystemRandom) -> Result<String, HandshakeError> {
    let mut nonce = [0u8; 16];
    random
        .fill(&mut nonce)
        .map_err(|_| HandshakeError::Random("system random source failed"))?;
    Ok(STANDARD.encode(nonce))
}

/// The client's Upgrade request. Origin is optional for non-browser
/// clients, but some servers (Go's x/net/websocket) refuse requests without.
pub fn request(path: &str, host: &str, key: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\nOrigin: http://{host}\r\n\r\n"
    )
}

/// The server's 101 for a request that sent `key`.
pub fn switching_protocols(key: &str) -> String {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    )
}

/// A parsed HTTP/1.1 head: the start line and the header fields in order.
#[derive(Debug)]
pub struct Head {
    pub start: String,
    pub fields: Vec<(String, String)>,
}

impl Head {
    pub fn parse(raw: &[u8]) -> Result<Head, HandshakeError> {
        let text = std::str::from_utf8(raw).map_err(|_| HandshakeError::NotText)?;
        let mut lines = text.split("\r\n").filter(|line| !line.is_empty());
        let start = lines.next().unwrap_or_default().to_owned();
        let mut fields = Vec::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(HandshakeError::FieldLine(line.to_owned()));
            };
            fields.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        Ok(Head { start, fields })
    }

    /// The first value of the field `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether some `name` field lists `token` (comma-separated,
    /// case-insensitive), as Connection: keep-alive, Upgrade may.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// The status code of a response head.
    pub fn status(&self) -> Result<u16, HandshakeError> {
        let mut parts = self.start.split(' ');
        match (parts.next(), parts.next().map(str::parse::<u16>)) {
            (Some(version), Some(Ok(code))) if version.starts_with("HTTP/1.") => Ok(code),
            _ => Err(HandshakeError::StartLine(self.start.clone())),
        }
    }

    /// Checks a server's answer to a request that sent `key`.
    pub fn check_101(&self, key: &str) -> Result<(), HandshakeError> {
        if self.status()? != 101 {
            return Err(HandshakeError::Status(self.start.clone()));
        }
        if !self.has_token("upgrade", "websocket") {
            return Err(HandshakeError::Header("Upgrade"));
        }
        if !self.has_token("connection", "upgrade") {
            return Err(HandshakeError::Header("Connection"));
        }
        let expected = accept_key(key);
        match self.get("sec-websocket-accept") {
            Some(got) if got == expected => Ok(()),
            Some(got) => Err(HandshakeError::Accept {
                got: got.to_owned(),
                expected,
            }),
            None => Err(HandshakeError::Header("Sec-WebSocket-Accept")),
        }
    }

    /// The Sec-WebSocket-Key of a valid client Upgrade request.
    pub fn upgrade_key(&self) -> Result<&str, HandshakeError> {
        if !self.start.starts_with("GET ") || !self.start.ends_with(" HTTP/1.1") {
            return Err(HandshakeError::StartLine(self.start.clone()));
        }
        if !self.has_token("upgrade", "websocket") {
            return Err(HandshakeError::Header("Upgrade"));
        }
        if !self.has_token("connection", "upgrade") {
            return Err(HandshakeError::Header("Connection"));
        }
        if self.get("sec-websocket-version") != Some("13") {
            return Err(HandshakeError::Header("Sec-WebSocket-Version"));
        }
        self.get("sec-websocket-key")
            .filter(|key| STANDARD.decode(key).is_ok_and(|raw| raw.len() == 16))
            .ok_or(HandshakeError::Header("Sec-WebSocket-Key"))
    }
}

/// Reads one head up to and including the blank line; the bytes after it
/// (the first frames) stay in the reader's buffer.
pub async fn read_head<R>(reader: &mut R) -> Result<Head, HandshakeError>
where
    R: AsyncBufRead + Unpin,
{
    let mut head = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Err(HandshakeError::Eof);
        }
        // The blank line may straddle two reads: search from 3 bytes back.
        let searched_from = head.len().saturating_sub(3);
        let had = head.len();
        head.extend_from_slice(buf);
        match find_blank_line(&head[searched_from..]) {
            Some(at) => {
                let end = searched_from + at + 4;
                reader.consume(end - had);
                head.truncate(end);
                return Head::parse(&head);
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
        if head.len() > MAX_HEAD {
            return Err(HandshakeError::HeadTooLarge);
        }
    }
}

fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, BufReader};

    #[test]
    fn accept_key_matches_the_rfc_example() {
        // RFC 6455 §1.3 / §4.2.2 (28 characters: base64 of a 20-byte SHA-1).
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn new_keys_are_16_random_bytes() {
        let random = SystemRandom::new();
        let a = new_key(&random).unwrap();
        let b = new_key(&random).unwrap();
        assert_ne!(a, b);
        assert_eq!(STANDARD.decode(&a).unwrap().len(), 16);
    }

    #[test]
    fn request_and_101_agree() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let req = Head::parse(request("/ws", "ws.test", key).as_bytes()).unwrap();
        assert_eq!(req.start, "GET /ws HTTP/1.1");
        assert_eq!(req.get("host"), Some("ws.test"));
        assert_eq!(req.upgrade_key().unwrap(), key);
        let resp = Head::parse(switching_protocols(key).as_bytes()).unwrap();
        resp.check_101(key).unwrap();
        assert!(matches!(
            resp.check_101("AAAAAAAAAAAAAAAAAAAAAA=="),
            Err(HandshakeError::Accept { .. })
        ));
    }

    #[test]
    fn bad_answers_are_named() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let not_101 = Head::parse(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        assert!(matches!(
            not_101.unwrap().check_101(key),
            Err(HandshakeError::Status(_))
        ));
        let no_upgrade =
            Head::parse(b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n");
        assert!(matches!(
            no_upgrade.unwrap().check_101(key),
            Err(HandshakeError::Header("Upgrade"))
        ));
        let tokens = Head::parse(
            b"GET / HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\
              Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: x\r\n\r\n",
        )
        .unwrap();
        assert!(tokens.has_token("CONNECTION", "upgrade"));
        assert!(matches!(
            tokens.upgrade_key(),
            Err(HandshakeError::Header("Sec-WebSocket-Key"))
        ));
    }

    #[tokio::test]
    async fn read_head_leaves_the_frames_behind() {
        let wire: &[u8] =
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x82\x01z";
        // A 5-byte buffer makes the blank line straddle reads.
        let mut reader = BufReader::with_capacity(5, wire);
        let head = read_head(&mut reader).await.unwrap();
        assert_eq!(head.status().unwrap(), 101);
        assert_eq!(head.get("upgrade"), Some("websocket"));
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"\x82\x01z");
    }

    #[tokio::test]
    async fn read_head_is_bounded() {
        let wire = vec![b'a'; MAX_HEAD + 100];
        let mut reader = BufReader::new(wire.as_slice());
        assert!(matches!(
            read_head(&mut reader).await,
            Err(HandshakeError::HeadTooLarge)
        ));
        let mut reader = BufReader::new(&b"HTTP/1.1 101 OK\r\n"[..]);
        assert!(matches!(
            read_head(&mut reader).await,
            Err(HandshakeError::Eof)
        ));
    }
}
