//! Envoy's `Authorization/Check` over gRPC (h2c or TLS to the service's
//! cluster): the request's attributes as a CheckRequest, the CheckResponse
//! as a verdict. OK allows, copying the resource's allowed headers from
//! `ok_response`; any other status denies with `denied_response` (its
//! HTTP status, default 403, its headers and body).

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HOST, TE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Version};
use prost::Message;

use super::proto::{
    Address, AttributeContext, AttributeRequest, CheckRequest, CheckResponse, HeaderValueOption,
    HttpRequest, Peer, SocketAddress,
};
use super::{Answer, CheckError, CompiledExternalAuth, Original, Verdict};
use crate::http::body::ClientBody;

pub const CHECK_PATH: &str = "/envoy.service.auth.v3.Authorization/Check";

/// gRPC's OK.
const OK: i32 = 0;

pub fn request(
    auth: &CompiledExternalAuth,
    original: &Original<'_>,
) -> Option<Request<ClientBody>> {
    let message = check_request(auth, original).encode_to_vec();
    let mut framed = BytesMut::with_capacity(5 + message.len());
    // Uncompressed, then the length: gRPC's length-prefixed message.
    framed.put_u8(0);
    framed.put_u32(u32::try_from(message.len()).ok()?);
    framed.put_slice(&message);
    let mut request = Request::new(ClientBody::from_bytes(framed.freeze()));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = http::Uri::from_static(CHECK_PATH);
    let headers = request.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    let timeout = format!("{}m", auth.timeout.as_millis());
    headers.insert("grpc-timeout", HeaderValue::from_str(&timeout).ok()?);
    Some(request)
}

fn check_request(auth: &CompiledExternalAuth, original: &Original<'_>) -> CheckRequest {
    let mut headers = std::collections::BTreeMap::new();
    for name in original.headers.keys() {
        if name == HOST || !auth.auth.sends_header(name.as_str()) {
            continue;
        }
        // Several values of one header: one comma-separated value, as
        // HTTP allows and Envoy sends.
        let joined: Vec<String> = original
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        headers.insert(name.as_str().to_string(), joined.join(","));
    }
    headers.insert(":authority".into(), original.host.to_string());
    headers.insert(":method".into(), original.method.as_str().to_string());
    headers.insert(":path".into(), original.path_and_query.to_string());
    headers.insert(":scheme".into(), original.scheme.to_string());
    let (body, raw_body) = match original.body {
        Some(b) => match std::str::from_utf8(b) {
            Ok(text) => (text.to_string(), Vec::new()),
            Err(_) => (String::new(), b.to_vec()),
        },
        None => (String::new(), Vec::new()),
    };
    let size = original
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .or_else(|| original.body.and_then(|b| i64::try_from(b.len()).ok()))
        .unwrap_or(-1);
    CheckRequest {
        attributes: Some(AttributeContext {
            source: Some(Peer {
                address: Some(Address {
                    socket_address: Some(SocketAddress {
                        address: original.client.to_string(),
                        port_value: 0,
                    }),
                }),
            }),
            destination: None,
            request: Some(AttributeRequest {
                http: Some(HttpRequest {
                    id: original
                        .headers
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string(),
                    method: original.method.as_str().to_string(),
                    headers,
                    path: original.path_and_query.to_string(),
                    host: original.host.to_string(),
                    scheme: original.scheme.to_string(),
                    size,
                    protocol: match original.version {
                        Version::HTTP_2 => "HTTP/2",
                        Version::HTTP_10 => "HTTP/1.0",
                        _ => "HTTP/1.1",
                    }
                    .to_string(),
                    body,
                    raw_body,
                }),
            }),
        }),
    }
}

/// The call's outcome: a failed call (not HTTP 200, a gRPC error status,
/// no or a malformed message) is no verdict.
pub fn verdict(auth: &CompiledExternalAuth, answer: Answer) -> Result<Verdict, CheckError> {
    if answer.status != StatusCode::OK {
        return Err(CheckError::Failed(format!("HTTP {}", answer.status)));
    }
    let grpc_status = answer
        .trailers
        .get("grpc-status")
        .or_else(|| answer.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if grpc_status != "0" {
        return Err(CheckError::Failed(format!("grpc-status {grpc_status:?}")));
    }
    let message = unframe(&answer.body)
        .ok_or_else(|| CheckError::Failed("no CheckResponse message".into()))?;
    let response = CheckResponse::decode(message)
        .map_err(|e| CheckError::Failed(format!("CheckResponse: {e}")))?;
    let code = response.status.as_ref().map_or(OK, |s| s.code);
    if code == OK {
        let ok = response.ok_response.unwrap_or_default();
        let allowed = header_pairs(&ok.headers)
            .filter(|(name, _)| auth.response_headers.contains(name))
            .collect();
        return Ok(Verdict::Allow(allowed));
    }
    let denied = response.denied_response.unwrap_or_default();
    let status = denied
        .status
        .and_then(|s| u16::try_from(s.code).ok())
        .and_then(|c| StatusCode::from_u16(c).ok())
        .unwrap_or(StatusCode::FORBIDDEN);
    let mut headers = HeaderMap::new();
    for (name, value) in header_pairs(&denied.headers) {
        headers.append(name, value);
    }
    Ok(Verdict::Deny {
        status,
        headers,
        body: Bytes::from(denied.body),
    })
}

/// The one message of a unary answer: flag byte, length, message.
fn unframe(body: &[u8]) -> Option<&[u8]> {
    let (&compressed, rest) = body.split_first()?;
    if compressed != 0 {
        return None;
    }
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    rest.get(4..4 + usize::try_from(len).ok()?)
}

/// The headers that are valid HTTP (others are dropped).
fn header_pairs(
    options: &[HeaderValueOption],
) -> impl Iterator<Item = (HeaderName, HeaderValue)> + '_ {
    options.iter().filter_map(|o| {
        let h = o.header.as_ref()?;
        let name = HeaderName::from_bytes(h.key.to_ascii_lowercase().as_bytes()).ok()?;
        let value = if h.raw_value.is_empty() {
            HeaderValue::from_str(&h.value).ok()?
        } else {
            HeaderValue::from_bytes(&h.raw_value).ok()?
        };
        Some((name, value))
    })
}

#[cfg(test)]
mod tests {
    use super::super::proto::{DeniedHttpResponse, HeaderValue as ProtoHeader, HttpStatus};
    use super::super::proto::{OkHttpResponse, RpcStatus};
    use super::*;
    use coxswain_ir::{ExternalAuth, ExternalAuthProtocol};

    fn auth() -> CompiledExternalAuth {
        CompiledExternalAuth::compile(&ExternalAuth {
            protocol: ExternalAuthProtocol::Grpc,
            cluster: "ns/authz:9001/h2c".into(),
            timeout_ms: 250,
            fail_closed: true,
            request_headers: Vec::new(),
            response_headers: vec!["x-auth-user".into()],
            body_max_bytes: None,
        })
    }

    fn option(key: &str, value: &str) -> HeaderValueOption {
        HeaderValueOption {
            header: Some(ProtoHeader {
                key: key.into(),
                value: value.into(),
                raw_value: Vec::new(),
            }),
        }
    }

    fn answer(response: &CheckResponse, grpc_status: &'static str) -> Answer {
        let message = response.encode_to_vec();
        let mut body = vec![0];
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static(grpc_status));
        Answer {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: Bytes::from(body),
            trailers,
        }
    }

    #[test]
    fn the_check_request_carries_the_request_attributes() {
        let mut headers = HeaderMap::new();
        headers.append("x-test-auth", HeaderValue::from_static("allow"));
        headers.append("accept", HeaderValue::from_static("a"));
        headers.append("accept", HeaderValue::from_static("b"));
        let body = Bytes::from_static(b"hello");
        let original = Original {
            method: &Method::PUT,
            host: "app.test",
            path_and_query: "/x?y=1",
            headers: &headers,
            scheme: "https",
            client: "192.0.2.7".parse().unwrap(),
            version: Version::HTTP_2,
            body: Some(&body),
        };
        let req = request(&auth(), &original).unwrap();
        assert_eq!(req.uri(), CHECK_PATH);
        assert_eq!(req.headers()["grpc-timeout"], "250m");
        let check = check_request(&auth(), &original);
        let http = check
            .attributes
            .as_ref()
            .unwrap()
            .request
            .as_ref()
            .unwrap()
            .http
            .as_ref()
            .unwrap();
        assert_eq!(http.method, "PUT");
        assert_eq!(http.path, "/x?y=1");
        assert_eq!(http.host, "app.test");
        assert_eq!(http.scheme, "https");
        assert_eq!(http.protocol, "HTTP/2");
        assert_eq!(http.body, "hello");
        assert_eq!(http.size, 5);
        assert_eq!(http.headers["accept"], "a,b");
        assert_eq!(http.headers[":path"], "/x?y=1");
        let source = check.attributes.unwrap().source.unwrap();
        assert_eq!(
            source.address.unwrap().socket_address.unwrap().address,
            "192.0.2.7"
        );
        // Field numbers as external_auth.proto has them: attributes = 1,
        // and inside it request = 4, http = 2, method = 2 ("PUT").
        let wire = CheckRequest::encode_to_vec(&check_request(&auth(), &original));
        assert_eq!(
            wire[0], 0x0a,
            "CheckRequest.attributes: field 1, length-delimited"
        );
        let needle = [0x12, 3, b'P', b'U', b'T'];
        assert!(wire.windows(needle.len()).any(|w| w == needle));
    }

    #[test]
    fn ok_allows_with_only_the_listed_headers_and_a_denial_keeps_its_answer() {
        let ok = CheckResponse {
            status: Some(RpcStatus {
                code: 0,
                message: String::new(),
            }),
            ok_response: Some(OkHttpResponse {
                headers: vec![option("X-Auth-User", "ann"), option("x-other", "1")],
                headers_to_remove: Vec::new(),
            }),
            ..CheckResponse::default()
        };
        assert_eq!(
            verdict(&auth(), answer(&ok, "0")),
            Ok(Verdict::Allow(vec![(
                HeaderName::from_static("x-auth-user"),
                HeaderValue::from_static("ann")
            )]))
        );
        let denied = CheckResponse {
            status: Some(RpcStatus {
                code: 16,
                message: String::new(),
            }),
            denied_response: Some(DeniedHttpResponse {
                status: Some(HttpStatus { code: 401 }),
                headers: vec![option("www-authenticate", "Bearer")],
                body: "no\n".into(),
            }),
            ..CheckResponse::default()
        };
        let Ok(Verdict::Deny {
            status,
            headers,
            body,
        }) = verdict(&auth(), answer(&denied, "0"))
        else {
            panic!("not denied");
        };
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(headers["www-authenticate"], "Bearer");
        assert_eq!(body, "no\n");
        let bare = CheckResponse {
            status: Some(RpcStatus {
                code: 7,
                message: String::new(),
            }),
            ..CheckResponse::default()
        };
        assert!(matches!(
            verdict(&auth(), answer(&bare, "0")),
            Ok(Verdict::Deny {
                status: StatusCode::FORBIDDEN,
                ..
            })
        ));
    }

    #[test]
    fn a_failed_call_is_no_verdict() {
        let ok = CheckResponse::default();
        assert!(verdict(&auth(), answer(&ok, "14")).is_err());
        let mut truncated = answer(&ok, "0");
        truncated.body = Bytes::from_static(&[0, 0, 0, 0, 9, 1]);
        assert!(verdict(&auth(), truncated).is_err());
        let mut not_200 = answer(&ok, "0");
        not_200.status = StatusCode::BAD_GATEWAY;
        assert!(verdict(&auth(), not_200).is_err());
    }
}
