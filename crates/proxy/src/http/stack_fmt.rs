//! Formatting short values (addresses) on the stack, so that turning one
//! into a header value or authority costs one allocation, not three.

use std::fmt::Display;
use std::io::Write;

/// Room for any IPv6 socket address with a zone (`[...%zone]:65535`).
const ROOM: usize = 96;

/// `value` rendered into a stack buffer and handed to `f`; `None` when it
/// does not fit.
pub fn with_formatted<T: Display, R>(value: &T, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    let mut buffer = [0u8; ROOM];
    let mut rest: &mut [u8] = &mut buffer;
    write!(rest, "{value}").ok()?;
    let len = ROOM - rest.len();
    buffer.get(..len).map(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn renders_addresses_and_refuses_what_does_not_fit() {
        let address: SocketAddr = "[2001:db8::1]:8080".parse().unwrap();
        assert_eq!(
            with_formatted(&address, |b| b.to_vec()),
            Some(b"[2001:db8::1]:8080".to_vec())
        );
        assert_eq!(with_formatted(&"x".repeat(ROOM + 1), |b| b.len()), None);
    }
}
