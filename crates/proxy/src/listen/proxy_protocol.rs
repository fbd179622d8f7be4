//! The PROXY protocol header (HAProxy's spec, versions 1 and 2) that an L4
//! load balancer puts in front of a connection to name the real client.
//! A pure parser over the bytes read so far: it says whether a header is
//! complete, still arriving, absent, or broken; the caller keeps every byte
//! after the header for the TLS or HTTP reader.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The v2 binary signature.
pub const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
const V1_PREFIX: &[u8] = b"PROXY ";
/// The longest v1 line, CRLF included (the spec's limit).
pub const V1_MAX: usize = 107;
/// The fixed part of a v2 header.
const V2_FIXED: usize = 16;
/// The longest v2 address block accepted (TLVs included): far above what
/// load balancers send, small enough that a client cannot make us buffer
/// much.
pub const V2_MAX_PAYLOAD: usize = 4096;

/// A complete header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The client the header names; `None` when the connection is the
    /// proxy's own (v2 LOCAL, v1 UNKNOWN, v2 AF_UNSPEC): then the socket
    /// peer is the client.
    pub source: Option<SocketAddr>,
    /// Bytes the header takes at the start of the stream.
    pub len: usize,
}

/// What the bytes read so far are.
#[derive(Debug, PartialEq, Eq)]
pub enum Parse {
    Complete(Header),
    /// A header may still be arriving.
    NeedMore,
    /// These bytes do not start a PROXY header.
    Absent,
}

/// Why a header that started is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    V1TooLong,
    V1Malformed,
    V2Version,
    V2Command,
    V2TooLong,
    V2Short,
    V2Unsupported,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            HeaderError::V1TooLong => "v1 header longer than 107 bytes",
            HeaderError::V1Malformed => "malformed v1 header",
            HeaderError::V2Version => "v2 version is not 2",
            HeaderError::V2Command => "v2 command is neither LOCAL nor PROXY",
            HeaderError::V2TooLong => "v2 address block longer than 4096 bytes",
            HeaderError::V2Short => "v2 address block too short for its family",
            HeaderError::V2Unsupported => "v2 family or transport is not TCP over IPv4 or IPv6",
        };
        f.write_str(text)
    }
}

impl std::error::Error for HeaderError {}

/// Parses the start of a connection.
pub fn parse(buf: &[u8]) -> Result<Parse, HeaderError> {
    if starts(buf, V1_PREFIX) {
        return parse_v1(buf);
    }
    if starts(buf, &V2_SIGNATURE) {
        return parse_v2(buf);
    }
    Ok(Parse::Absent)
}

/// Could `buf` be (the start of) something beginning with `prefix`? Empty
/// input could be anything.
fn starts(buf: &[u8], prefix: &[u8]) -> bool {
    let n = buf.len().min(prefix.len());
    buf.get(..n) == prefix.get(..n)
}

fn parse_v1(buf: &[u8]) -> Result<Parse, HeaderError> {
    let window = buf.get(..buf.len().min(V1_MAX)).unwrap_or_default();
    let Some(cr) = window.windows(2).position(|w| w == b"\r\n") else {
        return if buf.len() >= V1_MAX {
            Err(HeaderError::V1TooLong)
        } else {
            Ok(Parse::NeedMore)
        };
    };
    let line = buf
        .get(V1_PREFIX.len()..cr)
        .ok_or(HeaderError::V1Malformed)?;
    let line = std::str::from_utf8(line).map_err(|_| HeaderError::V1Malformed)?;
    let len = cr + 2;
    let mut parts = line.split(' ');
    let source = match parts.next() {
        // The rest of an UNKNOWN line is to be ignored.
        Some("UNKNOWN") => None,
        Some(family @ ("TCP4" | "TCP6")) => {
            let (Some(src), Some(dst), Some(sport), Some(dport), None) = (
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
            ) else {
                return Err(HeaderError::V1Malformed);
            };
            let ip: IpAddr = match family {
                "TCP4" => src.parse::<Ipv4Addr>().map(IpAddr::V4),
                _ => src.parse::<Ipv6Addr>().map(IpAddr::V6),
            }
            .map_err(|_| HeaderError::V1Malformed)?;
            // The destination is checked for form only: we are it.
            let dst_ok = match family {
                "TCP4" => dst.parse::<Ipv4Addr>().is_ok(),
                _ => dst.parse::<Ipv6Addr>().is_ok(),
            };
            if !dst_ok || port(dport).is_none() {
                return Err(HeaderError::V1Malformed);
            }
            Some(SocketAddr::new(
                ip,
                port(sport).ok_or(HeaderError::V1Malformed)?,
            ))
        }
        _ => return Err(HeaderError::V1Malformed),
    };
    Ok(Parse::Complete(Header { source, len }))
}

/// A decimal port, 0-65535, digits only.
fn port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_v2(buf: &[u8]) -> Result<Parse, HeaderError> {
    let Some(fixed) = buf.get(..V2_FIXED) else {
        // The signature so far matches; check the version byte early.
        if let Some(&ver_cmd) = buf.get(12) {
            check_ver_cmd(ver_cmd)?;
        }
        return Ok(Parse::NeedMore);
    };
    let [.., ver_cmd, fam, hi, lo] = fixed else {
        return Ok(Parse::NeedMore);
    };
    let local = check_ver_cmd(*ver_cmd)?;
    let payload_len = usize::from(u16::from_be_bytes([*hi, *lo]));
    if payload_len > V2_MAX_PAYLOAD {
        return Err(HeaderError::V2TooLong);
    }
    let len = V2_FIXED + payload_len;
    let Some(payload) = buf.get(V2_FIXED..len) else {
        return Ok(Parse::NeedMore);
    };
    if local {
        return Ok(Parse::Complete(Header { source: None, len }));
    }
    let source = match (fam >> 4, fam & 0x0f) {
        // AF_UNSPEC: no address to use (the spec says use the real one).
        (0, _) => None,
        (1, 1) => {
            if payload.len() < 12 {
                return Err(HeaderError::V2Short);
            }
            let (Some(ip), Some(p)) = (payload.get(0..4), payload.get(8..10)) else {
                return Err(HeaderError::V2Short);
            };
            let ip: [u8; 4] = ip.try_into().map_err(|_| HeaderError::V2Short)?;
            let p: [u8; 2] = p.try_into().map_err(|_| HeaderError::V2Short)?;
            Some(SocketAddr::new(IpAddr::from(ip), u16::from_be_bytes(p)))
        }
        (2, 1) => {
            if payload.len() < 36 {
                return Err(HeaderError::V2Short);
            }
            let (Some(ip), Some(p)) = (payload.get(0..16), payload.get(32..34)) else {
                return Err(HeaderError::V2Short);
            };
            let ip: [u8; 16] = ip.try_into().map_err(|_| HeaderError::V2Short)?;
            let p: [u8; 2] = p.try_into().map_err(|_| HeaderError::V2Short)?;
            Some(SocketAddr::new(IpAddr::from(ip), u16::from_be_bytes(p)))
        }
        _ => return Err(HeaderError::V2Unsupported),
    };
    // TLVs after the addresses are skipped (they are inside `len`).
    Ok(Parse::Complete(Header { source, len }))
}

/// Version 2, and whether the command is LOCAL.
fn check_ver_cmd(ver_cmd: u8) -> Result<bool, HeaderError> {
    if ver_cmd >> 4 != 2 {
        return Err(HeaderError::V2Version);
    }
    match ver_cmd & 0x0f {
        0 => Ok(true),
        1 => Ok(false),
        _ => Err(HeaderError::V2Command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(ver_cmd: u8, fam: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = V2_SIGNATURE.to_vec();
        out.push(ver_cmd);
        out.push(fam);
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn v2_inet(src: [u8; 4], sport: u16) -> Vec<u8> {
        let mut p = src.to_vec();
        p.extend_from_slice(&[192, 0, 2, 1]);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&443u16.to_be_bytes());
        v2(0x21, 0x11, &p)
    }

    fn complete(buf: &[u8]) -> Header {
        match parse(buf) {
            Ok(Parse::Complete(h)) => h,
            other => panic!("{other:?} for {buf:?}"),
        }
    }

    #[test]
    fn v1_tcp4_tcp6_and_unknown() {
        let line = b"PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\nGET / HTTP/1.1\r\n";
        let h = complete(line);
        assert_eq!(h.source, Some("203.0.113.7:56324".parse().unwrap()));
        assert_eq!(&line[h.len..], b"GET / HTTP/1.1\r\n");
        let h = complete(b"PROXY TCP6 2001:db8::7 2001:db8::1 1 65535\r\n");
        assert_eq!(h.source, Some("[2001:db8::7]:1".parse().unwrap()));
        let h = complete(b"PROXY UNKNOWN ffff::1 whatever\r\nrest");
        assert_eq!((h.source, h.len), (None, 32));
        assert_eq!(complete(b"PROXY UNKNOWN\r\n").source, None);
    }

    #[test]
    fn v1_malformed() {
        for bad in [
            &b"PROXY TCP4 203.0.113.7 192.0.2.1 56324\r\n"[..],
            b"PROXY TCP4 2001:db8::7 192.0.2.1 1 2\r\n",
            b"PROXY TCP6 203.0.113.7 2001:db8::1 1 2\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 65536 443\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 +1 443\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 1 443 extra\r\n",
            b"PROXY TCP4  203.0.113.7 192.0.2.1 1 443\r\n",
            b"PROXY UDP4 203.0.113.7 192.0.2.1 1 443\r\n",
            b"PROXY \xff\r\n",
        ] {
            assert_eq!(
                parse(bad),
                Err(HeaderError::V1Malformed),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn v1_truncated_waits_and_oversize_fails() {
        let line = b"PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\n";
        for cut in 0..line.len() {
            assert_eq!(parse(&line[..cut]), Ok(Parse::NeedMore), "cut at {cut}");
        }
        let mut long = b"PROXY UNKNOWN ".to_vec();
        long.resize(V1_MAX, b'a');
        assert_eq!(parse(&long), Err(HeaderError::V1TooLong));
        // 107 bytes with CRLF at the very end is still a header.
        long.truncate(V1_MAX - 2);
        long.extend_from_slice(b"\r\n");
        assert_eq!(complete(&long).len, V1_MAX);
    }

    #[test]
    fn v2_inet_inet6_local_unspec() {
        let mut buf = v2_inet([203, 0, 113, 7], 40000);
        let header_len = buf.len();
        buf.extend_from_slice(b"GET /");
        let h = complete(&buf);
        assert_eq!(h.source, Some("203.0.113.7:40000".parse().unwrap()));
        assert_eq!(h.len, header_len);

        let mut p = [0u8; 36];
        p[..16].copy_from_slice(&"2001:db8::7".parse::<Ipv6Addr>().unwrap().octets());
        p[32..34].copy_from_slice(&8080u16.to_be_bytes());
        let h = complete(&v2(0x21, 0x21, &p));
        assert_eq!(h.source, Some("[2001:db8::7]:8080".parse().unwrap()));

        // LOCAL: health checks of the balancer itself; addresses ignored.
        let local = v2(0x20, 0x00, &[]);
        assert_eq!(
            complete(&local),
            Header {
                source: None,
                len: 16
            }
        );
        let local = v2(0x20, 0x11, &[1; 12]);
        assert_eq!(complete(&local).source, None);
        assert_eq!(complete(&v2(0x21, 0x00, &[])).source, None);
    }

    #[test]
    fn v2_tlvs_are_skipped() {
        let mut p = vec![203, 0, 113, 7, 192, 0, 2, 1, 0, 80, 1, 187];
        // PP2_TYPE_AUTHORITY "a.example"
        p.extend_from_slice(&[0x02, 0, 9]);
        p.extend_from_slice(b"a.example");
        let buf = v2(0x21, 0x11, &p);
        let h = complete(&buf);
        assert_eq!(h.len, buf.len());
        assert_eq!(h.source, Some("203.0.113.7:80".parse().unwrap()));
    }

    #[test]
    fn v2_truncated_waits() {
        let buf = v2_inet([203, 0, 113, 7], 1);
        for cut in 0..buf.len() {
            assert_eq!(parse(&buf[..cut]), Ok(Parse::NeedMore), "cut at {cut}");
        }
    }

    #[test]
    fn v2_errors() {
        assert_eq!(
            parse(&v2(0x11, 0x11, &[0; 12])),
            Err(HeaderError::V2Version)
        );
        assert_eq!(
            parse(&v2(0x22, 0x11, &[0; 12])),
            Err(HeaderError::V2Command)
        );
        assert_eq!(parse(&v2(0x21, 0x11, &[0; 11])), Err(HeaderError::V2Short));
        assert_eq!(parse(&v2(0x21, 0x21, &[0; 35])), Err(HeaderError::V2Short));
        assert_eq!(
            parse(&v2(0x21, 0x12, &[0; 12])),
            Err(HeaderError::V2Unsupported)
        );
        assert_eq!(
            parse(&v2(0x21, 0x31, &[0; 216])),
            Err(HeaderError::V2Unsupported)
        );
        // Oversize is refused from the length field, before the payload.
        let mut big = V2_SIGNATURE.to_vec();
        big.extend_from_slice(&[0x21, 0x11]);
        big.extend_from_slice(&((V2_MAX_PAYLOAD + 1) as u16).to_be_bytes());
        assert_eq!(parse(&big), Err(HeaderError::V2TooLong));
        // A bad version is seen as soon as its byte arrives.
        let mut early = V2_SIGNATURE.to_vec();
        early.push(0x31);
        assert_eq!(parse(&early), Err(HeaderError::V2Version));
    }

    #[test]
    fn other_protocols_are_absent() {
        for other in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"PRI * HTTP/2.0\r\n",
            b"\x16\x03\x01\x02\x00",
            b"PROXZ",
            b"\r\n\r\nX",
            b"POST",
        ] {
            assert_eq!(parse(other), Ok(Parse::Absent), "{other:?}");
        }
        assert_eq!(parse(b""), Ok(Parse::NeedMore));
        assert_eq!(parse(b"PRO"), Ok(Parse::NeedMore));
    }
}
