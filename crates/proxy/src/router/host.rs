//! Request host normalisation without allocating: strip the port and any
//! trailing dot, lower-case into a caller-provided stack buffer.

/// Longest host we normalise; valid DNS names are at most 253 bytes.
pub const MAX_HOST_LEN: usize = 256;

/// A stack buffer for [`normalize_host`].
pub type HostBuf = [u8; MAX_HOST_LEN];

/// Removes a `:port` suffix (keeping bracketed IPv6 literals whole).
fn strip_port(raw: &str) -> &str {
    if raw.starts_with('[') {
        return match raw.find(']') {
            Some(end) => &raw[..=end],
            None => raw,
        };
    }
    match raw.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => raw,
    }
}

/// Lower-cases `raw` (without port) into `buf`. Over-long or non-UTF-8-safe
/// hosts normalise to `""`, which matches no hostname-specific entry.
pub fn normalize_host<'b>(raw: &str, buf: &'b mut HostBuf) -> &'b str {
    let host = strip_port(raw.trim());
    let host = host.strip_suffix('.').unwrap_or(host);
    let bytes = host.as_bytes();
    let Some(dest) = buf.get_mut(..bytes.len()) else {
        return "";
    };
    for (d, s) in dest.iter_mut().zip(bytes) {
        *d = s.to_ascii_lowercase();
    }
    // ASCII lower-casing keeps UTF-8 valid; fall back to "" defensively.
    std::str::from_utf8(dest).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_port_and_lowercases() {
        let mut buf = [0u8; MAX_HOST_LEN];
        assert_eq!(
            normalize_host("Foo.Example.COM:8080", &mut buf),
            "foo.example.com"
        );
        assert_eq!(normalize_host("example.com.", &mut buf), "example.com");
        assert_eq!(normalize_host("[::1]:80", &mut buf), "[::1]");
        assert_eq!(normalize_host(&"a".repeat(300), &mut buf), "");
    }
}
