//! W3C Trace Context (`traceparent`, `tracestate`): strict parsing of what
//! a client sent, and the header the gateway forwards in its place.
//!
//! A `traceparent` that is not exactly well-formed (wrong length or case,
//! an all-zero id, version `ff`, two of them) is no parent: the request
//! starts a new trace, and its `tracestate` goes with the bad parent.

use http::{HeaderMap, HeaderName, HeaderValue};

pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The sampled bit of the trace flags.
pub const SAMPLED: u8 = 0x01;

/// Length of a version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
const LEN: usize = 55;

/// The most `tracestate` bytes kept (the spec lets a vendor drop the
/// whole header beyond 512 characters).
const MAX_TRACESTATE: usize = 512;

/// The most list members a `tracestate` may have.
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A remote parent: the span a client named in its `traceparent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
}

impl Parent {
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
}

/// The parent a request's headers name, if exactly one valid
/// `traceparent` is present.
pub fn extract(headers: &HeaderMap) -> Option<Parent> {
    let mut all = headers.get_all(TRACEPARENT).iter();
    let value = all.next()?;
    if all.next().is_some() {
        return None;
    }
    parse_traceparent(value.as_bytes())
}

/// Parses one `traceparent` value. Versions above 00 are read as 00 (the
/// spec's forward compatibility): their first 55 bytes, then nothing or a
/// `-` and more.
pub fn parse_traceparent(value: &[u8]) -> Option<Parent> {
    let head = value.get(..LEN)?;
    let version = hex_byte(head.get(0..2)?)?;
    match (version, value.len()) {
        (0xff, _) => return None,
        (0, LEN) => {}
        (0, _) => return None,
        (_, LEN) => {}
        (_, _) if value.get(LEN) == Some(&b'-') => {}
        _ => return None,
    }
    if head.get(2) != Some(&b'-') || head.get(35) != Some(&b'-') || head.get(52) != Some(&b'-') {
        return None;
    }
    let trace_id: [u8; 16] = hex_array(head.get(3..35)?)?;
    let span_id: [u8; 8] = hex_array(head.get(36..52)?)?;
    let flags = hex_byte(head.get(53..55)?)?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(Parent {
        trace_id,
        span_id,
        // Flags a later version defines mean nothing to version 00.
        flags: if version == 0 { flags } else { flags & SAMPLED },
    })
}

/// The `tracestate` to forward with a valid parent: several headers
/// joined into one list, or nothing when the result is too long, has too
/// many members or a malformed one.
pub fn tracestate(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut all = headers.get_all(TRACESTATE).iter();
    let first = all.next()?;
    let Some(second) = all.next() else {
        return valid_tracestate(first.as_bytes()).then(|| first.clone());
    };
    let mut joined = Vec::with_capacity(first.len() + second.len() + 1);
    for value in [first, second].into_iter().chain(all) {
        if !joined.is_empty() {
            joined.push(b',');
        }
        joined.extend_from_slice(value.as_bytes());
        if joined.len() > MAX_TRACESTATE {
            return None;
        }
    }
    if !valid_tracestate(&joined) {
        return None;
    }
    HeaderValue::from_bytes(&joined).ok()
}

/// A `tracestate` list: at most 32 `key=value` members (empty ones, from
/// stray commas, allowed), keys unique, within the length cap.
fn valid_tracestate(value: &[u8]) -> bool {
    if value.len() > MAX_TRACESTATE {
        return false;
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    for member in value.split(|&b| b == b',') {
        let member = member.trim_ascii();
        if member.is_empty() {
            continue;
        }
        let Some(eq) = member.iter().position(|&b| b == b'=') else {
            return false;
        };
        let (key, value) = (member.get(..eq), member.get(eq + 1..));
        let (Some(key), Some(value)) = (key, value) else {
            return false;
        };
        if !valid_key(key) || !valid_value(value) || keys.contains(&key) {
            return false;
        }
        keys.push(key);
        if keys.len() > MAX_TRACESTATE_MEMBERS {
            return false;
        }
    }
    true
}

/// `simple-key` or `tenant@system`: lowercase letters, digits and
/// `_-*/`, starting with a letter (a tenant may start with a digit).
fn valid_key(key: &[u8]) -> bool {
    let part = |p: &[u8], max: usize, digit_first: bool| {
        let first_ok = p
            .first()
            .is_some_and(|c| c.is_ascii_lowercase() || (digit_first && c.is_ascii_digit()));
        first_ok
            && p.len() <= max
            && p.iter().all(|&c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/')
            })
    };
    match key.iter().position(|&b| b == b'@') {
        None => part(key, 256, false),
        Some(at) => match (key.get(..at), key.get(at + 1..)) {
            (Some(tenant), Some(system)) => part(tenant, 241, true) && part(system, 14, false),
            _ => false,
        },
    }
}

/// Printable ASCII without `,` and `=`, not ending in a space, at most
/// 256 bytes.
fn valid_value(value: &[u8]) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && value.last() != Some(&b' ')
        && value
            .iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

/// `00-<trace id>-<span id>-<flags>`.
pub fn traceparent(trace_id: &[u8; 16], span_id: &[u8; 8], flags: u8) -> HeaderValue {
    let mut out = [0u8; LEN];
    let mut at = 0;
    let mut put = |bytes: &[u8], dash: bool| {
        for b in bytes {
            for nibble in [b >> 4, b & 0x0f] {
                if let Some(slot) = out.get_mut(at) {
                    *slot = hex_digit(nibble);
                }
                at += 1;
            }
        }
        if dash {
            if let Some(slot) = out.get_mut(at) {
                *slot = b'-';
            }
            at += 1;
        }
    };
    put(&[0], true);
    put(trace_id, true);
    put(span_id, true);
    put(&[flags], false);
    // Lowercase hex and dashes only: always a valid header value.
    HeaderValue::from_bytes(&out).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(hex_digit(b >> 4)));
        s.push(char::from(hex_digit(b & 0x0f)));
    }
    s
}

/// The lowercase hex digit of a nibble (`n` below 16).
fn hex_digit(n: u8) -> u8 {
    match n {
        0..=9 => b'0' + n,
        _ => b'a' + (n & 0x0f) - 10,
    }
}

/// A lowercase hex digit's value (uppercase is invalid in `traceparent`).
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    match two {
        [hi, lo] => Some((nibble(*hi)? << 4) | nibble(*lo)?),
        _ => None,
    }
}

fn hex_array<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *slot = hex_byte(pair)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn parse(s: &str) -> Option<Parent> {
        parse_traceparent(s.as_bytes())
    }

    #[test]
    fn a_valid_traceparent_is_read() {
        let p = parse(VALID).unwrap();
        assert_eq!(hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&p.span_id), "00f067aa0ba902b7");
        assert!(p.sampled());
        assert!(
            !parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
                .unwrap()
                .sampled()
        );
    }

    #[test]
    fn malformed_traceparents_are_no_parent() {
        for bad in [
            "",
            "00",
            // Uppercase hex.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            // All-zero trace id, all-zero span id.
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // Version ff is forbidden; version 00 has nothing after the flags.
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            // Wrong separators, short fields, non-hex.
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // A later version followed by something other than a dash.
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_as_version_00() {
        let p = parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-more").unwrap();
        assert_eq!(p.flags, SAMPLED, "unknown flags dropped");
        assert!(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_some());
    }

    #[test]
    fn two_traceparent_headers_are_no_parent() {
        let mut headers = HeaderMap::new();
        headers.append(TRACEPARENT, HeaderValue::from_static(VALID));
        assert!(extract(&headers).is_some());
        headers.append(TRACEPARENT, HeaderValue::from_static(VALID));
        assert_eq!(extract(&headers), None);
    }

    #[test]
    fn traceparent_round_trips() {
        let p = parse(VALID).unwrap();
        let written = traceparent(&p.trace_id, &p.span_id, p.flags);
        assert_eq!(written, VALID);
    }

    #[test]
    fn tracestate_is_kept_joined_or_dropped() {
        let mut headers = HeaderMap::new();
        assert_eq!(tracestate(&headers), None);
        headers.append(TRACESTATE, HeaderValue::from_static("congo=t61rcWkgMzE"));
        assert_eq!(tracestate(&headers).unwrap(), "congo=t61rcWkgMzE");
        headers.append(
            TRACESTATE,
            HeaderValue::from_static("rojo=00f067aa0ba902b7,t@vendor=1"),
        );
        assert_eq!(
            tracestate(&headers).unwrap(),
            "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7,t@vendor=1"
        );
        for bad in ["Upper=1", "novalue", "a=1,a=2", "a=x=y", "1abc=2"] {
            let mut headers = HeaderMap::new();
            headers.insert(TRACESTATE, HeaderValue::from_static(bad));
            assert_eq!(tracestate(&headers), None, "{bad:?}");
        }
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        let mut headers = HeaderMap::new();
        headers.insert(TRACESTATE, HeaderValue::from_str(&many.join(",")).unwrap());
        assert_eq!(tracestate(&headers), None, "33 members");
    }
}
