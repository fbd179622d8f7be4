//! HTTP/2 carries the host in `:authority`: moving a request's `Host`
//! header there for an HTTP/2 upstream.

use std::net::SocketAddr;

use http::HeaderMap;
use http::header::HOST;
use http::uri::Authority;

/// The request's `Host` as an authority, removed from `headers`; the
/// endpoint's address when there is no usable `Host`.
pub fn take_host_authority(headers: &mut HeaderMap, endpoint: SocketAddr) -> Option<Authority> {
    let from_host = headers
        .get(HOST)
        .and_then(|h| Authority::try_from(h.as_bytes()).ok());
    match from_host {
        Some(authority) => {
            headers.remove(HOST);
            Some(authority)
        }
        None => Authority::try_from(endpoint.to_string()).ok(),
    }
}
