//! Compression end to end: the real binary in standalone mode, curl as the
//! client decoding gzip, br and zstd, the resource edited while it serves.
//! The rule removes `Accept-Encoding` after Compression has read it, so
//! the echo's JSON (which lists the request headers) is the same bytes
//! whatever the client accepts.

use crate::support;

use support::*;

fn squeezed_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: squeezed
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /squeezed}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: Compression, name: text}}
    - type: RequestHeaderModifier
      requestHeaderModifier: {{remove: [Accept-Encoding]}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn compression(level: u32) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: Compression
metadata:
  name: text
spec:
  gzip: true
  brotli: true
  zstd: true
  level: {level}
"
    )
}

/// The response headers (lower-cased names) and body of a curl GET.
fn fetch(args: &[&str], url: &str) -> (Vec<(String, String)>, String) {
    let dir = TempDir::new("compression-headers");
    let headers_file = dir.path().join("headers");
    // One request id for every fetch: the echoed bodies are compared.
    let mut all = vec![
        "-D",
        headers_file.to_str().unwrap(),
        "-H",
        "x-request-id: compression",
    ];
    all.extend_from_slice(args);
    all.push(url);
    let out = curl(&all);
    assert!(out.status.success(), "curl {args:?} failed: {out:?}");
    let text = std::fs::read_to_string(&headers_file).unwrap();
    let headers = text
        .lines()
        .filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    (headers, String::from_utf8(out.stdout).unwrap())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn curl_decodes_each_coding_to_the_uncompressed_body() {
    let config = TempDir::new("compression");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("squeezed.yaml", &squeezed_route(echo_port));
    config.write("text.yaml", &compression(6));
    let gw = Gateway::start(config, http_port, echo_port);
    // The echo answers JSON listing the request headers: a long one makes
    // the body pass the default minSize (1024 bytes).
    let pad = format!("x-pad: {}", "abcdefgh".repeat(200));
    let url = gw.url("/squeezed/page");

    let (plain_headers, plain) = fetch(&["-H", &pad], &url);
    assert!(plain.len() > 1700, "{plain}");
    assert_eq!(header(&plain_headers, "content-encoding"), None);
    assert_eq!(header(&plain_headers, "vary"), Some("Accept-Encoding"));
    assert_eq!(
        header(&plain_headers, "content-type"),
        Some("application/json")
    );

    for (accept, coding) in [
        (None, "br"),
        (Some("gzip"), "gzip"),
        (Some("br"), "br"),
        (Some("zstd"), "zstd"),
    ] {
        let accept_header = accept.map(|a| format!("Accept-Encoding: {a}"));
        let mut args = vec!["--compressed", "-H", &pad];
        if let Some(a) = &accept_header {
            args.extend(["-H", a]);
        }
        let (headers, body) = fetch(&args, &url);
        assert_eq!(
            header(&headers, "content-encoding"),
            Some(coding),
            "{accept:?}"
        );
        assert_eq!(header(&headers, "content-length"), None, "{accept:?}");
        assert_eq!(body, plain, "{accept:?}");
    }

    // Below minSize: sent as it is, Content-Length kept.
    let (small_headers, small) = fetch(&["--compressed"], &url);
    assert!(small.len() < 1024, "{small}");
    assert_eq!(header(&small_headers, "content-encoding"), None);
    assert_eq!(
        header(&small_headers, "content-length"),
        Some(small.len().to_string().as_str())
    );

    // An invalid level fails open: served, uncompressed, and the status
    // says why.
    gw.config.write_atomic("text.yaml", &compression(12));
    wait_for("the invalid resource to show in its status", || {
        gw.status_of("Compression", "text")
            .is_some_and(|s| s["conditions"][0]["reason"] == "Invalid")
    });
    wait_for("responses to go uncompressed", || {
        let (headers, body) = fetch(&["--compressed", "-H", &pad], &url);
        header(&headers, "content-encoding").is_none() && body == plain
    });
    let status = gw.status_of("Compression", "text").unwrap();
    assert_eq!(status["conditions"][0]["status"], "False", "{status}");
    let logs = gw.stderr();
    assert!(
        logs.contains("filter resource invalid; not applied") && logs.contains("spec.level"),
        "{logs}"
    );
}
