//! HTTP forward-auth: the client's method, Host, path and query and its
//! headers (all but the hop-by-hop ones, which are already gone, or only
//! the listed ones) go to the service without a body. A 2xx allows; any
//! other answer is the client's, with its headers and body.

use http::header::{CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue, Request};

use super::{Answer, CompiledExternalAuth, Original, Verdict};
use crate::http::body::ClientBody;
use crate::http::headers::strip_hop_by_hop;

pub fn request(
    auth: &CompiledExternalAuth,
    original: &Original<'_>,
) -> Option<Request<ClientBody>> {
    let mut headers = HeaderMap::new();
    // The body goes as it is (when forwarded, the gateway buffered it:
    // its length is known again).
    for (name, value) in original.headers {
        // The body's framing is the check's own; `Expect` asked the
        // gateway, not the service.
        if name != CONTENT_LENGTH
            && name != TRANSFER_ENCODING
            && name != EXPECT
            && name != HOST
            && auth.auth.sends_header(name.as_str())
        {
            headers.append(name, value.clone());
        }
    }
    headers.insert(HOST, HeaderValue::from_str(original.host).ok()?);
    let body = original.body.cloned().unwrap_or_default();
    let mut request = Request::new(ClientBody::from_bytes(body));
    *request.method_mut() = original.method.clone();
    *request.uri_mut() = original.path_and_query.parse().ok()?;
    *request.headers_mut() = headers;
    Some(request)
}

pub fn verdict(auth: &CompiledExternalAuth, answer: Answer) -> Verdict {
    if answer.status.is_success() {
        return Verdict::Allow(
            auth.response_headers
                .iter()
                .flat_map(|name| {
                    answer
                        .headers
                        .get_all(name)
                        .iter()
                        .map(move |v| (name.clone(), v.clone()))
                })
                .collect(),
        );
    }
    let mut headers = answer.headers;
    strip_hop_by_hop(&mut headers, false);
    headers.remove(CONTENT_LENGTH);
    Verdict::Deny {
        status: answer.status,
        headers,
        body: answer.body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use coxswain_ir::{ExternalAuth, ExternalAuthProtocol};
    use http::{Method, StatusCode};

    fn auth(request_headers: &[&str], response_headers: &[&str]) -> CompiledExternalAuth {
        CompiledExternalAuth::compile(&ExternalAuth {
            protocol: ExternalAuthProtocol::Http,
            cluster: "ns/auth:80".into(),
            timeout_ms: 100,
            fail_closed: true,
            request_headers: request_headers.iter().map(|s| s.to_string()).collect(),
            response_headers: response_headers.iter().map(|s| s.to_string()).collect(),
            body_max_bytes: None,
        })
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn the_check_replays_method_host_path_and_the_chosen_headers() {
        let client = headers(&[
            ("authorization", "Bearer t"),
            ("cookie", "a=b"),
            ("content-length", "5"),
            ("expect", "100-continue"),
            ("host", "other"),
        ]);
        let original = Original {
            method: &Method::POST,
            host: "app.example",
            path_and_query: "/a/b?c=d",
            headers: &client,
            scheme: "http",
            client: "127.0.0.1".parse().unwrap(),
            version: http::Version::HTTP_11,
            body: None,
        };
        let all = request(&auth(&[], &[]), &original).unwrap();
        assert_eq!(all.method(), Method::POST);
        assert_eq!(all.uri(), "/a/b?c=d");
        assert_eq!(all.headers()["host"], "app.example");
        assert_eq!(all.headers()["cookie"], "a=b");
        assert!(all.headers().get("content-length").is_none(), "no body");
        assert!(all.headers().get("expect").is_none());
        let some = request(&auth(&["authorization"], &[]), &original).unwrap();
        assert_eq!(some.headers()["authorization"], "Bearer t");
        assert!(some.headers().get("cookie").is_none());
    }

    #[test]
    fn a_2xx_allows_with_the_listed_headers_anything_else_denies_as_is() {
        let a = auth(&[], &["x-auth-user"]);
        let answer = |status: u16, h: HeaderMap| Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: h,
            body: Bytes::from_static(b"no"),
            trailers: HeaderMap::new(),
        };
        let ok = verdict(
            &a,
            answer(204, headers(&[("x-auth-user", "ann"), ("x-other", "1")])),
        );
        assert_eq!(
            ok,
            Verdict::Allow(vec![(
                http::HeaderName::from_static("x-auth-user"),
                HeaderValue::from_static("ann")
            )])
        );
        let denied = verdict(
            &a,
            answer(
                302,
                headers(&[("location", "/login"), ("connection", "close")]),
            ),
        );
        let Verdict::Deny {
            status,
            headers,
            body,
        } = denied
        else {
            panic!("allowed");
        };
        assert_eq!(status, StatusCode::FOUND);
        assert_eq!(headers["location"], "/login");
        assert!(headers.get("connection").is_none());
        assert_eq!(body, "no");
    }
}
