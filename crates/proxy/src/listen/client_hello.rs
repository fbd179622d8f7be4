//! Reads a TLS ClientHello off a connection without consuming it for the
//! TLS stack: the bytes read are kept so the handshake (or a passthrough
//! backend) sees them again. Only SNI and ALPN are extracted.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest ClientHello we wait for (several records of handshake data).
pub const MAX_CLIENT_HELLO: usize = 64 * 1024;

const RECORD_HEADER: usize = 5;
const CONTENT_HANDSHAKE: u8 = 22;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
const EXT_SERVER_NAME: u16 = 0;
const EXT_ALPN: u16 = 16;

/// What the proxy needs from a ClientHello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// The `host_name` of the server_name extension, lower-cased, without a
    /// trailing dot.
    pub sni: Option<String>,
    pub alpn: Vec<Vec<u8>>,
}

/// Why a connection's first bytes are not a usable ClientHello.
#[derive(Debug, PartialEq, Eq)]
pub enum HelloError {
    /// Not a TLS handshake record (e.g. plain HTTP on a TLS port).
    NotTls,
    /// A TLS handshake, but not a well-formed ClientHello.
    Malformed,
    /// Larger than [`MAX_CLIENT_HELLO`].
    TooLarge,
    /// The peer closed (or the read failed) before the hello was complete.
    Closed,
}

/// Reads from `io` into `buf` until a whole ClientHello is there, and
/// parses it. `buf` then holds every byte read, to be replayed.
pub async fn read_client_hello<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
) -> Result<ClientHello, HelloError> {
    loop {
        match parse(buf) {
            Err(Incomplete::NeedMore) => {}
            Err(Incomplete::Invalid(e)) => return Err(e),
            Ok(hello) => return Ok(hello),
        }
        if buf.len() >= MAX_CLIENT_HELLO {
            return Err(HelloError::TooLarge);
        }
        buf.reserve(4096);
        match io.read_buf(buf).await {
            Ok(0) | Err(_) => return Err(HelloError::Closed),
            Ok(_) => {}
        }
    }
}

enum Incomplete {
    NeedMore,
    Invalid(HelloError),
}

impl From<HelloError> for Incomplete {
    fn from(e: HelloError) -> Self {
        Incomplete::Invalid(e)
    }
}

/// Parses the ClientHello at the start of `data` (TLS records), which may
/// be split over several handshake records.
fn parse(data: &[u8]) -> Result<ClientHello, Incomplete> {
    let mut handshake = Vec::new();
    let mut rest = data;
    loop {
        if rest.len() < RECORD_HEADER {
            return Err(Incomplete::NeedMore);
        }
        let (header, body) = rest.split_at(RECORD_HEADER);
        let [content_type, major, _minor, len_hi, len_lo] = header else {
            return Err(Incomplete::NeedMore);
        };
        if *content_type != CONTENT_HANDSHAKE || *major != 3 {
            return Err(HelloError::NotTls.into());
        }
        let len = usize::from(*len_hi) << 8 | usize::from(*len_lo);
        if len == 0 || len > 16384 + 2048 {
            return Err(HelloError::Malformed.into());
        }
        if body.len() < len {
            return Err(Incomplete::NeedMore);
        }
        let (fragment, after) = body.split_at(len);
        handshake.extend_from_slice(fragment);
        rest = after;
        if handshake.len() >= 4 {
            let msg_len = u24(handshake.get(1..4).unwrap_or_default());
            if handshake.first() != Some(&HANDSHAKE_CLIENT_HELLO) {
                return Err(HelloError::Malformed.into());
            }
            if msg_len + 4 > MAX_CLIENT_HELLO {
                return Err(HelloError::TooLarge.into());
            }
            if handshake.len() >= msg_len + 4 {
                let body = handshake.get(4..4 + msg_len).ok_or(HelloError::Malformed)?;
                return parse_hello_body(body).ok_or(HelloError::Malformed.into());
            }
        }
    }
}

fn u24(b: &[u8]) -> usize {
    b.iter().fold(0, |acc, &x| acc << 8 | usize::from(x))
}

/// A cursor that fails (returns `None`) instead of reading past the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    fn u16(&mut self) -> Option<u16> {
        let mut b = self.take(2)?;
        Some(b.get_u16())
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
}

fn parse_hello_body(body: &[u8]) -> Option<ClientHello> {
    let mut r = Reader(body);
    r.take(2 + 32)?; // legacy_version, random
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    let mut hello = ClientHello::default();
    if r.0.is_empty() {
        return Some(hello); // no extensions at all
    }
    let mut extensions = Reader(r.vec16()?);
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        match kind {
            EXT_SERVER_NAME => hello.sni = server_name(data)?,
            EXT_ALPN => hello.alpn = alpn(data)?,
            _ => {}
        }
    }
    Some(hello)
}

/// The host name, lower-cased without its one optional trailing dot. A
/// name with an empty label or bytes no DNS name has (controls, spaces,
/// non-ASCII) makes the hello malformed, as TLS libraries treat it.
fn server_name(data: &[u8]) -> Option<Option<String>> {
    let mut list = Reader(Reader(data).vec16()?);
    while !list.0.is_empty() {
        let name_type = list.u8()?;
        let name = list.vec16()?;
        if name_type == 0 {
            let name = std::str::from_utf8(name).ok()?;
            let name = name.strip_suffix('.').unwrap_or(name);
            let plausible = name.split('.').all(|label| {
                !label.is_empty() && label.bytes().all(|b| b.is_ascii_graphic() && b != b'.')
            });
            return plausible.then(|| Some(name.to_ascii_lowercase()));
        }
    }
    Some(None)
}

fn alpn(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut list = Reader(Reader(data).vec16()?);
    let mut out = Vec::new();
    while !list.0.is_empty() {
        out.push(list.vec8()?.to_vec());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello as rustls would send it, captured in memory.
    fn rustls_hello(sni: &str, alpn: &[&[u8]]) -> Vec<u8> {
        use std::sync::Arc;
        let roots = rustls::RootCertStore::empty();
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let name = rustls::pki_types::ServerName::try_from(sni.to_string()).unwrap();
        let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    #[test]
    fn reads_sni_and_alpn_from_a_real_hello() {
        let bytes = rustls_hello("Foo.Example.com", &[b"h2", b"http/1.1"]);
        let hello = match parse(&bytes) {
            Ok(h) => h,
            Err(_) => panic!("not parsed"),
        };
        assert_eq!(hello.sni.as_deref(), Some("foo.example.com"));
        assert_eq!(hello.alpn, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    #[test]
    fn waits_for_every_byte_and_accepts_split_records() {
        let bytes = rustls_hello("a.test", &[]);
        for cut in [0, 3, 5, 40, bytes.len() - 1] {
            assert!(
                matches!(parse(&bytes[..cut]), Err(Incomplete::NeedMore)),
                "{cut}"
            );
        }
        // The same handshake message split over two records.
        let fragment = &bytes[5..];
        let (a, b) = fragment.split_at(fragment.len() / 2);
        let mut split = Vec::new();
        for part in [a, b] {
            split.extend_from_slice(&[22, 3, 1]);
            split.extend_from_slice(&(part.len() as u16).to_be_bytes());
            split.extend_from_slice(part);
        }
        let hello = match parse(&split) {
            Ok(h) => h,
            Err(_) => panic!("split hello not parsed"),
        };
        assert_eq!(hello.sni.as_deref(), Some("a.test"));
    }

    #[test]
    fn plain_http_and_garbage_are_refused() {
        assert!(matches!(
            parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Err(Incomplete::Invalid(HelloError::NotTls))
        ));
        let mut truncated_inside = vec![22, 3, 1, 0, 8, 1, 0, 0, 4, 3, 3, 0, 0];
        truncated_inside.truncate(13);
        assert!(matches!(
            parse(&truncated_inside),
            Err(Incomplete::Invalid(HelloError::Malformed))
        ));
    }

    /// A server_name extension body naming `name`.
    fn sni_extension(name: &[u8]) -> Vec<u8> {
        let len = u16::try_from(name.len()).unwrap();
        let mut entry = vec![0u8];
        entry.extend_from_slice(&len.to_be_bytes());
        entry.extend_from_slice(name);
        let mut body = u16::try_from(entry.len()).unwrap().to_be_bytes().to_vec();
        body.extend_from_slice(&entry);
        body
    }

    #[test]
    fn server_names_with_empty_labels_or_controls_are_malformed() {
        let name = |n: &[u8]| server_name(&sni_extension(n));
        assert_eq!(name(b"A.Test."), Some(Some("a.test".to_string())));
        // Found by fuzzing: only one trailing dot is the root label.
        assert_eq!(name(b"a.."), None);
        assert_eq!(name(b".a"), None);
        assert_eq!(name(b"a\x01b"), None);
        assert_eq!(name(b"a b"), None);
        assert_eq!(name(b""), None);
    }

    #[tokio::test]
    async fn keeps_every_byte_read_for_replay() {
        let bytes = rustls_hello("b.test", &[b"h2"]);
        let mut with_more = bytes.clone();
        with_more.extend_from_slice(b"early data");
        let mut io = std::io::Cursor::new(with_more.clone());
        let mut buf = BytesMut::new();
        let hello = read_client_hello(&mut io, &mut buf).await.unwrap();
        assert_eq!(hello.sni.as_deref(), Some("b.test"));
        assert!(with_more.starts_with(&buf));
        assert!(buf.len() >= bytes.len());
    }
}
