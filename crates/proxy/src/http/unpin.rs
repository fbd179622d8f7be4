//! Response header values copied out of the buffer they were parsed from,
//! before an HTTP/2 connection's HPACK encoder may keep them.
//!
//! hyper parses an upstream response's header values as slices of its
//! read buffer. h2's encoder keeps indexed values in the connection's
//! dynamic table for as long as the connection lives, and one kept slice
//! holds the whole 8 KiB (or larger) buffer: an idle client connection
//! pinned one upstream buffer per value in its table. One small copy per
//! response (all values in one allocation) bounds that to the values.

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue};

/// Replaces every value in `headers` by a slice of one fresh buffer that
/// holds just the values.
pub fn unpin_values(headers: &mut HeaderMap) {
    let total: usize = headers.values().map(HeaderValue::len).sum();
    if total == 0 {
        return;
    }
    let mut copy = BytesMut::with_capacity(total);
    for value in headers.values() {
        copy.extend_from_slice(value.as_bytes());
    }
    let copy: Bytes = copy.freeze();
    let mut at = 0;
    for value in headers.values_mut() {
        let end = at + value.len();
        // Same bytes, already valid as a value: cannot fail; on the
        // impossible error the original value stays.
        if let Ok(mut fresh) = HeaderValue::from_maybe_shared(copy.slice(at..end)) {
            fresh.set_sensitive(value.is_sensitive());
            *value = fresh;
        }
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_equal_and_stop_sharing_the_parse_buffer() {
        let parsed = Bytes::from(vec![b'x'; 8192]);
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_maybe_shared(parsed.slice(0..10)).unwrap();
        headers.insert("a", value);
        headers.append("b", HeaderValue::from_static("one"));
        headers.append("b", HeaderValue::from_static("two"));
        let mut secret = HeaderValue::from_static("s");
        secret.set_sensitive(true);
        headers.insert("c", secret);
        let before = headers.clone();
        drop(before.clone());
        unpin_values(&mut headers);
        assert_eq!(headers, before);
        assert!(headers.get("c").is_some_and(HeaderValue::is_sensitive));
        // Only `parsed` and `before` hold the 8 KiB buffer now.
        drop(before);
        assert!(
            parsed.is_unique(),
            "a header value still holds the parse buffer"
        );
    }

    #[test]
    fn no_values_no_copy() {
        let mut headers = HeaderMap::new();
        unpin_values(&mut headers);
        assert!(headers.is_empty());
    }
}
