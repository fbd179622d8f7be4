//! RESP2 framing: commands out as arrays of bulk strings, replies in.

use bytes::{Buf, BytesMut};

/// A reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    /// `None`: the null bulk string.
    Bulk(Option<Vec<u8>>),
    /// `None`: the null array.
    Array(Option<Vec<Value>>),
}

/// The server sent something that is not RESP (or more than we accept).
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub &'static str);

/// Largest bulk string or array accepted: replies here are a few integers.
const MAX_LEN: usize = 1 << 20;
/// Deepest array nesting accepted.
const MAX_DEPTH: usize = 4;

/// Appends `args` as one command.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Takes one complete reply off the front of `buf`; `Ok(None)` when more
/// bytes are needed.
pub fn decode(buf: &mut BytesMut) -> Result<Option<Value>, ProtocolError> {
    match parse(buf, 0, 0)? {
        Some((value, used)) => {
            buf.advance(used);
            Ok(Some(value))
        }
        None => Ok(None),
    }
}

/// The line starting at `at`, without its CRLF, and the offset after it.
fn line(buf: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    let Some(rest) = buf.get(at..) else {
        return Ok(None);
    };
    match rest.windows(2).position(|w| w == b"\r\n") {
        Some(end) => Ok(rest.get(..end).map(|l| (l, at + end + 2))),
        None if rest.len() > MAX_LEN => Err(ProtocolError("line too long")),
        None => Ok(None),
    }
}

fn number(text: &[u8]) -> Result<i64, ProtocolError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(ProtocolError("bad number"))
}

/// A length: -1 is null (`None`), else 0..=MAX_LEN.
fn length(text: &[u8]) -> Result<Option<usize>, ProtocolError> {
    match number(text)? {
        -1 => Ok(None),
        n => usize::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_LEN)
            .map(Some)
            .ok_or(ProtocolError("bad length")),
    }
}

fn parse(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Value, usize)>, ProtocolError> {
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some((head, next)) = line(buf, at + 1)? else {
        return Ok(None);
    };
    let text = || String::from_utf8_lossy(head).into_owned();
    match kind {
        b'+' => Ok(Some((Value::Simple(text()), next))),
        b'-' => Ok(Some((Value::Error(text()), next))),
        b':' => Ok(Some((Value::Int(number(head)?), next))),
        b'$' => match length(head)? {
            None => Ok(Some((Value::Bulk(None), next))),
            Some(n) => match buf.get(next..next + n + 2) {
                Some(body) if body.ends_with(b"\r\n") => Ok(Some((
                    Value::Bulk(body.get(..n).map(<[u8]>::to_vec)),
                    next + n + 2,
                ))),
                Some(_) => Err(ProtocolError("bulk string without CRLF")),
                None => Ok(None),
            },
        },
        b'*' => {
            if depth >= MAX_DEPTH {
                return Err(ProtocolError("arrays nested too deep"));
            }
            let Some(n) = length(head)? else {
                return Ok(Some((Value::Array(None), next)));
            };
            let mut items = Vec::with_capacity(n.min(16));
            let mut at = next;
            for _ in 0..n {
                match parse(buf, at, depth + 1)? {
                    Some((item, after)) => {
                        items.push(item);
                        at = after;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Value::Array(Some(items)), at)))
        }
        _ => Err(ProtocolError("unknown reply type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> Vec<Value> {
        let mut buf = BytesMut::from(bytes);
        let mut out = Vec::new();
        while let Some(v) = decode(&mut buf).unwrap() {
            out.push(v);
        }
        assert!(buf.is_empty(), "left over: {buf:?}");
        out
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&mut out, &[b"GET", b"k\r\n"]);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$3\r\nk\r\n\r\n");
    }

    #[test]
    fn every_reply_type_decodes() {
        assert_eq!(
            all(b"+OK\r\n-NOSCRIPT x\r\n:-7\r\n$3\r\na\r\n\r\n$-1\r\n*-1\r\n*2\r\n:1\r\n*1\r\n$0\r\n\r\n"),
            vec![
                Value::Simple("OK".into()),
                Value::Error("NOSCRIPT x".into()),
                Value::Int(-7),
                Value::Bulk(Some(b"a\r\n".to_vec())),
                Value::Bulk(None),
                Value::Array(None),
                Value::Array(Some(vec![
                    Value::Int(1),
                    Value::Array(Some(vec![Value::Bulk(Some(Vec::new()))]))
                ])),
            ]
        );
    }

    #[test]
    fn a_partial_reply_waits_for_more_bytes() {
        let whole = b"*3\r\n:1\r\n:250000\r\n$2\r\nab\r\n";
        for cut in 0..whole.len() {
            let mut buf = BytesMut::from(&whole[..cut]);
            assert_eq!(decode(&mut buf), Ok(None), "cut at {cut}");
            assert_eq!(buf.len(), cut, "nothing consumed");
        }
    }

    #[test]
    fn hostile_replies_are_refused() {
        for bad in [
            &b"?x\r\n"[..],
            b":12a\r\n",
            b"$99999999999\r\n",
            b"$-2\r\n",
            b"$1\r\nab\r\n",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
        ] {
            assert!(decode(&mut BytesMut::from(bad)).is_err(), "{bad:?}");
        }
    }
}
