//! SIGTERM: stop accepting, let the in-flight request finish, exit 0.

use crate::support;

use std::process::{Command, Stdio};

use support::{Gateway, echo_json, wait_for};

#[test]
fn sigterm_drains_an_in_flight_request_and_exits_zero() {
    let mut gateway = Gateway::quickstart("drain");
    let slow = Command::new("curl")
        .args([
            "-s",
            "-w",
            "\n%{http_code}",
            &gateway.url("/slow?delay_ms=1000"),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The echo backend logs when it starts holding the request.
    wait_for("the slow request to reach the backend", || {
        gateway.stderr().contains("echo holding request")
    });
    gateway.signal("TERM");
    let out = slow.wait_with_output().unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    let (body, code) = out.rsplit_once('\n').unwrap();
    assert_eq!(code, "200", "{out}");
    assert_eq!(echo_json(body)["path"], "/slow");
    let status = gateway.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", gateway.stderr());
    assert!(gateway.stderr().contains("shutdown complete"));
}
