//! BasicAuth end to end: the real binary in standalone mode, curl with good
//! and bad credentials, the htpasswd Secret rotated while it serves.

use crate::support;

use std::process::Command;

use support::*;

fn guarded_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: office
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /office}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: BasicAuth, name: office}}
    backendRefs:
    - name: echo
      port: {echo_port}
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: BasicAuth
metadata:
  name: office
spec:
  secretRef: {{name: office-htpasswd}}
  realm: Office
"
    )
}

/// The htpasswd Secret with one APR1 user, hashed by openssl.
fn htpasswd_secret(user: &str, password: &str) -> String {
    let out = Command::new("openssl")
        .args(["passwd", "-apr1", password])
        .output()
        .unwrap();
    let hash = String::from_utf8(out.stdout).unwrap();
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: office-htpasswd
  labels:
    ingress.coxswain-labs.dev/auth-basic: \"true\"
stringData:
  auth: '{user}:{}'
",
        hash.trim()
    )
}

#[test]
fn credentials_are_checked_and_a_rotated_secret_takes_effect() {
    let config = TempDir::new("basicauth");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("office.yaml", &guarded_route(echo_port));
    config.write("secret.yaml", &htpasswd_secret("alice", "first"));
    let gw = Gateway::start(config, http_port, echo_port);
    let url = gw.url("/office");
    let as_user = |credentials: &str| curl_get(&["-u", credentials], &url);

    let (code, body) = as_user("alice:first");
    assert_eq!(code, 200, "{body}");
    assert!(
        echo_json(&body)["headers"].get("authorization").is_none(),
        "credentials are not forwarded: {body}"
    );
    assert_eq!(as_user("alice:wrong").0, 401);
    let out = curl(&["-s", "-o", "/dev/null", "-D", "-", &url]);
    let headers = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(
        headers.contains("www-authenticate: basic realm=\"office\""),
        "{headers}"
    );

    gw.config
        .write_atomic("secret.yaml", &htpasswd_secret("alice", "second"));
    wait_for("the rotated password to be accepted", || {
        as_user("alice:second").0 == 200
    });
    assert_eq!(as_user("alice:first").0, 401, "the old password is gone");

    // A Secret without the label is not used: fail closed.
    let unlabelled = htpasswd_secret("alice", "second").replace(
        "  labels:\n    ingress.coxswain-labs.dev/auth-basic: \"true\"\n",
        "",
    );
    gw.config.write_atomic("secret.yaml", &unlabelled);
    wait_for("the unlabelled Secret to refuse", || {
        as_user("alice:second").0 == 503
    });
}
