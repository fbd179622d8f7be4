//! RequestSizeLimit end to end: the real binary in standalone mode, curl
//! uploading up to 1 GiB over HTTP/1.1 (declared length and chunked), and
//! an HTTP/2 client streaming 1 GiB over h2c with no declared length, cut
//! off at the limit with 413.
//!
//! The h2c leg is not curl: curl 7.88 (Debian bookworm) drops an HTTP/2
//! response that ends before its upload does, although the gateway sends
//! it as RFC 9113 section 8.1 says (HEADERS, DATA with END_STREAM, then
//! RST_STREAM NO_ERROR).

use crate::support;

use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;

use support::*;

fn limited_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: uploads
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /upload}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: RequestSizeLimit, name: small}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn limit(size: &str) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RequestSizeLimit
metadata:
  name: small
spec:
  maxSize: \"{size}\"
"
    )
}

/// `curl -T -` (a PUT of unknown length: chunked on HTTP/1.1) fed up to
/// `total` bytes on its standard input; the status code it saw.
fn streamed_upload(url: &str, extra: &[&str], total: u64) -> u16 {
    let mut child = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-T", "-"])
        .args(extra)
        .arg(url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        // Ends when curl stops reading (it got its answer) or at `total`.
        while sent < total {
            let n = chunk.len().min((total - sent) as usize);
            if stdin.write_all(&chunk[..n]).is_err() {
                break;
            }
            sent += n as u64;
        }
        sent
    });
    let out = child.wait_with_output().unwrap();
    let sent = writer.join().unwrap();
    assert!(sent <= total);
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// A body of `chunks` 64 KiB chunks with no declared length, made as it
/// is read.
struct Chunks(u64);

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        if self.0 == 0 {
            return Poll::Ready(None);
        }
        self.0 -= 1;
        let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
        Poll::Ready(Some(Ok(hyper::body::Frame::data(chunk))))
    }
}

/// Two uploads on one h2c connection: `first` chunks, then `second`; the
/// status of each.
fn h2c_uploads(port: u16, first: u64, second: u64) -> (u16, u16) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        let mut statuses = Vec::new();
        for chunks in [first, second] {
            let request = http::Request::put(format!("http://127.0.0.1:{port}/upload"))
                .body(Chunks(chunks))
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            statuses.push(response.status().as_u16());
            let _ = response.into_body().collect().await;
        }
        (statuses[0], statuses[1])
    })
}

#[test]
fn uploads_past_the_limit_get_413_over_http1_and_h2c() {
    const GIB: u64 = 1 << 30;
    let config = TempDir::new("sizelimit");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("uploads.yaml", &limited_route(echo_port));
    config.write("small.yaml", &limit("64k"));
    let gw = Gateway::start(config, http_port, echo_port);
    let url = gw.url("/upload");

    // Declared lengths: refused up front, or served whole.
    let file = gw.config.write("body.bin", &"x".repeat(65 * 1024));
    let data = format!("@{}", file.display());
    let post = |size_ok: bool| {
        let path = if size_ok { "/hello" } else { "/upload" };
        curl_get(&["--data-binary", &data], &gw.url(path)).0
    };
    assert_eq!(post(false), 413);
    assert_eq!(post(true), 200, "other routes have no limit");

    // Streams of unknown length, 1 GiB offered: cut at 64 KiB.
    assert_eq!(streamed_upload(&url, &[], GIB), 413, "HTTP/1.1 chunked");
    // h2c: the stream is cut, the connection serves on.
    assert_eq!(h2c_uploads(gw.http_port, GIB / (64 * 1024), 1), (413, 200));
    assert_eq!(
        streamed_upload(&url, &[], 32 * 1024),
        200,
        "under the limit"
    );
    assert!(
        gw.metric("coxswain_proxy_rejected_requests_total{reason=\"body_too_large\"}")
            .is_some_and(|n| n >= 2)
    );

    // An unparseable size fails open and says so.
    gw.config.write_atomic("small.yaml", &limit("64 kilobytes"));
    wait_for("the invalid limit to stop limiting", || {
        streamed_upload(&url, &[], 256 * 1024) == 200
    });
    let status = gw.status_of("RequestSizeLimit", "small").unwrap();
    assert_eq!(status["conditions"][0]["reason"], "Invalid", "{status}");
}
