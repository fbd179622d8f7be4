//! `x-request-id`: the client's own when it is a plausible id, otherwise
//! a new random one, set on the request before any stage sees it (so
//! backends, the authorization service and the access log share it).

use http::{HeaderMap, HeaderValue};

use crate::access_log::X_REQUEST_ID;

/// The longest client id kept.
pub const MAX_LEN: usize = 128;

/// The request's id, made the only `x-request-id` in `headers`.
pub fn ensure(headers: &mut HeaderMap) -> HeaderValue {
    let mut sent = headers.get_all(&X_REQUEST_ID).iter();
    let kept = match (sent.next(), sent.next()) {
        (Some(one), None) if valid(one.as_bytes()) => Some(one.clone()),
        _ => None,
    };
    match kept {
        Some(id) => id,
        None => {
            let id = generate();
            headers.insert(X_REQUEST_ID, id.clone());
            id
        }
    }
}

/// 1 to [`MAX_LEN`] visible ASCII characters.
fn valid(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= MAX_LEN && id.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// 128 random bits as 32 lowercase hex digits.
pub fn generate() -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits: u128 = rand::random();
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        let nibble = (bits >> (124 - 4 * i)) & 0xf;
        *byte = HEX.get(nibble as usize).copied().unwrap_or(b'0');
    }
    // Hex digits are always a valid header value.
    HeaderValue::from_bytes(&out).unwrap_or(HeaderValue::from_static("0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_client_id_is_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(X_REQUEST_ID, HeaderValue::from_static("abc-123"));
        assert_eq!(ensure(&mut headers), "abc-123");
        assert_eq!(headers.get_all(X_REQUEST_ID).iter().count(), 1);
    }

    #[test]
    fn a_missing_empty_repeated_or_odd_id_is_replaced() {
        let long = "a".repeat(MAX_LEN + 1);
        for sent in [
            vec![],
            vec![""],
            vec!["a", "b"],
            vec!["has space"],
            vec![long.as_str()],
        ] {
            let mut headers = HeaderMap::new();
            for v in &sent {
                headers.append(X_REQUEST_ID, HeaderValue::from_str(v).unwrap());
            }
            let id = ensure(&mut headers);
            assert_eq!(id.len(), 32, "{sent:?}");
            assert!(id.as_bytes().iter().all(u8::is_ascii_hexdigit));
            let all: Vec<_> = headers.get_all(X_REQUEST_ID).iter().collect();
            assert_eq!(all, [&id], "one id goes on: {sent:?}");
        }
    }

    #[test]
    fn generated_ids_differ() {
        assert_ne!(generate(), generate());
    }
}
