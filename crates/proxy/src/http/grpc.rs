//! gRPC requests the gateway answers itself (no route, no healthy
//! endpoint, a timeout, a limit): gRPC clients read `grpc-status` from
//! headers or trailers, not an HTTP status or a text body, so such an
//! answer is a trailers-only response: HTTP 200, `content-type:
//! application/grpc`, `grpc-status` and `grpc-message`, no body.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};

use crate::http::body::ProxyBody;

/// Marks a response the proxy generated (see [`crate::http::body::plain`]),
/// with its text: only these are rewritten for gRPC clients.
#[derive(Clone, Copy, Debug)]
pub struct LocalReply(pub &'static str);

/// `content-type: application/grpc`, `application/grpc+proto`, ...
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("application/grpc"))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['+', ';']))
}

/// A gRPC request's `grpc-timeout` (1 to 8 digits and a unit: `H`, `M`,
/// `S`, `m`, `u`, `n`); `None` when absent, malformed or not gRPC.
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    if !is_grpc(headers) {
        return None;
    }
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let digits = value.get(..value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match value.as_bytes().last()? {
        b'H' => Duration::from_secs(n.checked_mul(3600)?),
        b'M' => Duration::from_secs(n.checked_mul(60)?),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The gRPC status code for a local answer's HTTP status (gRPC's own
/// HTTP-to-gRPC table, with timeouts as DEADLINE_EXCEEDED and size and
/// rate limits as RESOURCE_EXHAUSTED, which say more than it does).
pub fn code_for(status: StatusCode) -> u16 {
    const INTERNAL: u16 = 13;
    match status {
        StatusCode::BAD_REQUEST | StatusCode::INTERNAL_SERVER_ERROR => INTERNAL,
        StatusCode::UNAUTHORIZED => 16,
        StatusCode::FORBIDDEN => 7,
        StatusCode::NOT_FOUND => 12,
        StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => 4,
        StatusCode::PAYLOAD_TOO_LARGE
        | StatusCode::URI_TOO_LONG
        | StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        | StatusCode::TOO_MANY_REQUESTS => 8,
        StatusCode::MISDIRECTED_REQUEST
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE => 14,
        _ => 2, // UNKNOWN
    }
}

/// A local error answer in gRPC form; anything else unchanged (upstream
/// responses, and local redirects, which are not errors).
pub fn into_grpc(response: Response<ProxyBody>) -> Response<ProxyBody> {
    let Some(LocalReply(text)) = response.extensions().get::<LocalReply>().copied() else {
        return response;
    };
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let body = Full::new(Bytes::new()).map_err(|never| match never {});
    let mut grpc = Response::new(body.boxed_unsync());
    let headers = grpc.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", HeaderValue::from(code_for(status)));
    if let Ok(message) = HeaderValue::from_str(&grpc_message(text.trim_end())) {
        headers.insert("grpc-message", message);
    }
    grpc.extensions_mut().insert(LocalReply(text));
    grpc
}

/// gRPC's percent-encoding of `grpc-message`: bytes outside printable
/// ASCII, and `%`, as `%XX`.
fn grpc_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body::plain;

    fn grpc_request_headers(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn recognises_grpc_content_types() {
        for yes in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc;x=1",
        ] {
            assert!(is_grpc(&grpc_request_headers(yes)), "{yes}");
        }
        for no in ["application/grpc-web", "application/grpcx", "text/plain"] {
            assert!(!is_grpc(&grpc_request_headers(no)), "{no}");
        }
        assert!(!is_grpc(&HeaderMap::new()));
    }

    #[test]
    fn local_errors_become_trailers_only_responses() {
        let r = into_grpc(plain(StatusCode::NOT_FOUND, "no route matched\n"));
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "application/grpc");
        assert_eq!(r.headers()["grpc-status"], "12");
        assert_eq!(r.headers()["grpc-message"], "no route matched");
        assert!(http_body::Body::is_end_stream(r.body()));
        let cases = [
            (StatusCode::UNAUTHORIZED, "16"),
            (StatusCode::SERVICE_UNAVAILABLE, "14"),
            (StatusCode::BAD_GATEWAY, "14"),
            (StatusCode::GATEWAY_TIMEOUT, "4"),
            (StatusCode::PAYLOAD_TOO_LARGE, "8"),
            (StatusCode::TOO_MANY_REQUESTS, "8"),
            (StatusCode::BAD_REQUEST, "13"),
        ];
        for (status, code) in cases {
            let r = into_grpc(plain(status, "x"));
            assert_eq!(r.headers()["grpc-status"], code, "{status}");
        }
    }

    #[test]
    fn other_responses_are_left_alone() {
        let redirect = into_grpc(plain(StatusCode::FOUND, "redirecting\n"));
        assert_eq!(redirect.status(), StatusCode::FOUND);
        let mut upstream = Response::new(
            Full::new(Bytes::new())
                .map_err(|never| match never {})
                .boxed_unsync(),
        );
        *upstream.status_mut() = StatusCode::NOT_FOUND;
        assert_eq!(into_grpc(upstream).status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn grpc_timeouts_parse_with_every_unit() {
        let t = |v: &'static str| {
            let mut h = grpc_request_headers("application/grpc");
            h.insert("grpc-timeout", HeaderValue::from_static(v));
            timeout(&h)
        };
        assert_eq!(t("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(t("3M"), Some(Duration::from_secs(180)));
        assert_eq!(t("4S"), Some(Duration::from_secs(4)));
        assert_eq!(t("250m"), Some(Duration::from_millis(250)));
        assert_eq!(t("7u"), Some(Duration::from_micros(7)));
        assert_eq!(t("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "S", "123456789S", "1x", "-1S", "1.5S", " 1S"] {
            assert_eq!(t(bad), None, "{bad:?}");
        }
        let mut plain = HeaderMap::new();
        plain.insert("grpc-timeout", HeaderValue::from_static("1S"));
        assert_eq!(timeout(&plain), None);
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(grpc_message("a%b é"), "a%25b %C3%A9");
    }
}
