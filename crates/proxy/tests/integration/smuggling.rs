//! A request-smuggling and framing corpus over raw HTTP/1.1: every case is
//! refused (400/431, or the connection closed) or normalised, and the
//! backend never sees more requests than the client really sent.

use crate::common;

use std::sync::atomic::Ordering;

use common::*;

/// One hostile request and how many requests the backend may see for it.
struct Case {
    name: &'static str,
    bytes: &'static str,
    /// Status codes acceptable as the first (or only) response; 0 means the
    /// connection was closed without one.
    statuses: &'static [u16],
    /// Most backend requests this may cause (0: refused before routing).
    max_backend_requests: usize,
    /// Most responses the client may get (a smuggled request never gets one).
    max_responses: usize,
}

const CORPUS: &[Case] = &[
    // Both framing headers: RFC 9112 6.3 — Transfer-Encoding wins, the
    // Content-Length is dropped before forwarding, and the connection is
    // closed after the response, so bytes after the chunked body are never
    // read as a request.
    Case {
        name: "CL.TE: both framing headers, smuggled request after the chunked end",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nContent-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: h.test\r\n\r\n",
        statuses: &[200, 400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "TE.CL: chunked body whose chunk hides a second request",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n2c\r\nGET /admin HTTP/1.1\r\nHost: h.test\r\n\r\n\r\n0\r\n\r\n",
        statuses: &[200, 400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "TE.TE: unknown transfer coding",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: xchunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
        statuses: &[400, 501],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "TE.TE: chunked not last",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked, identity\r\nConnection: close\r\n\r\n0\r\n\r\n",
        statuses: &[400, 501],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "TE.TE: whitespace before the colon",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding : chunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
        statuses: &[400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "duplicate, differing Content-Length",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd",
        statuses: &[400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "Content-Length with a sign",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nContent-Length: +3\r\nConnection: close\r\n\r\nabc",
        statuses: &[400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "obs-fold continuation line",
        bytes: "GET /a HTTP/1.1\r\nHost: h.test\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n",
        statuses: &[400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "NUL in a header value",
        bytes: "GET /a HTTP/1.1\r\nHost: h.test\r\nX-Nul: a\0b\r\nConnection: close\r\n\r\n",
        statuses: &[400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "bare LF line endings in the head",
        bytes: "GET /a HTTP/1.1\nHost: h.test\nConnection: close\n\n",
        // Accepted as one request (RFC 9112 allows LF), never two.
        statuses: &[200, 400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "malformed chunk size",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n",
        statuses: &[400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "chunk extension with a smuggled line",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;\nGET /x\r\nabc\r\n0\r\n\r\n",
        statuses: &[400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "pipelined second request after a Content-Length body",
        bytes: "POST /a HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n",
        // Two real requests, each answered: never more than two upstream.
        statuses: &[200],
        max_backend_requests: 2,
        max_responses: 2,
    },
    Case {
        name: "absolute-form target with a different Host",
        bytes: "GET http://other.test/a HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n",
        statuses: &[200, 400],
        max_backend_requests: 1,
        max_responses: 1,
    },
    Case {
        name: "request line with spaces in the target",
        bytes: "GET /a b HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n",
        // Not a request line: closed without a response (status 0).
        statuses: &[0, 400],
        max_backend_requests: 0,
        max_responses: 1,
    },
    Case {
        name: "headers too large",
        bytes: "",
        statuses: &[431, 400],
        max_backend_requests: 0,
        max_responses: 1,
    },
];

#[tokio::test]
async fn every_case_is_refused_or_normalised() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let big_head = format!(
        "GET /a HTTP/1.1\r\nHost: h.test\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let mut failures = Vec::new();
    for case in CORPUS {
        let before = backend.hits.load(Ordering::SeqCst);
        let bytes = if case.bytes.is_empty() {
            big_head.as_bytes()
        } else {
            case.bytes.as_bytes()
        };
        let response = raw_exchange(port, bytes).await;
        let status = raw_status(&response);
        let seen = backend.hits.load(Ordering::SeqCst) - before;
        if !case.statuses.contains(&status) {
            failures.push(format!(
                "{}: status {status}, want {:?}: {response:?}",
                case.name, case.statuses
            ));
        }
        let responses = response.matches("HTTP/1.1 ").count();
        if responses > case.max_responses {
            failures.push(format!(
                "{}: {responses} responses: {response:?}",
                case.name
            ));
        }
        if seen > case.max_backend_requests {
            failures.push(format!(
                "{}: the backend saw {seen} requests (at most {})",
                case.name, case.max_backend_requests
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CORPUS.len(),
        failures.join("\n")
    );
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains(r#"coxswain_proxy_rejected_requests_total{reason="body_framing"} 2"#),
        "{metrics}"
    );
}

/// The client's framing error is answered 400, not blamed on the backend
/// (502), and the backend keeps serving other clients.
#[tokio::test]
async fn a_broken_client_body_is_400_and_the_backend_keeps_serving() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let broken = "POST /body HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\nnot-a-size\r\n";
    let response = raw_exchange(port, broken.as_bytes()).await;
    assert_eq!(raw_status(&response), 400, "{response}");
    let reply = get(&client(), port, "h.test", "/after").await;
    assert_eq!(reply.status, http::StatusCode::OK);
}
