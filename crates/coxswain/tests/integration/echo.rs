//! `coxswain echo` on its own: HTTP/1.1 and h2c, identity from flags/env.

use crate::support;

use std::process::{Command, Stdio};

use support::{BIN, Echo, curl_get, echo_json, free_port, wait_for};

#[test]
fn echo_reports_request_over_both_protocols() {
    let port = free_port();
    let _echo = Echo(
        Command::new(BIN)
            .args([
                "echo",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--name",
                "pod-a",
            ])
            .env("NAMESPACE", "ns-a")
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}/p/q?a=1&a=2");
    wait_for("echo to listen", || curl_get(&[], &url).0 == 200);

    let (_, body) = curl_get(&["-H", "X-Test: one", "-H", "x-test: two"], &url);
    let echo = echo_json(&body);
    assert_eq!(echo["path"], "/p/q");
    assert_eq!(echo["query"], "a=1&a=2");
    assert_eq!(echo["proto"], "HTTP/1.1");
    assert_eq!(echo["pod"], "pod-a");
    assert_eq!(echo["namespace"], "ns-a");
    assert_eq!(echo["headers"]["X-Test"], serde_json::json!(["one", "two"]));

    let (code, body) = curl_get(&["--http2-prior-knowledge", "-X", "POST"], &url);
    assert_eq!(code, 200);
    let echo = echo_json(&body);
    assert_eq!(echo["proto"], "HTTP/2.0");
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["host"], format!("127.0.0.1:{port}"));
}
