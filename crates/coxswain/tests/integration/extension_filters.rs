//! Coxswain's filter resources end to end: the real binary in standalone
//! mode, curl as the client, the files edited while it serves.

use crate::support;

use support::*;

fn guarded_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: guarded
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /guarded}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: IpAccessControl, name: office}}
    backendRefs:
    - name: echo
      port: {echo_port}
  - matches:
    - path: {{type: PathPrefix, value: /missing}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: IpAccessControl, name: nowhere}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn access(allow: &str) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: IpAccessControl
metadata:
  name: office
spec:
  allow: [{allow}]
"
    )
}

#[test]
fn ip_access_control_follows_its_file_and_unresolved_refs_answer_500() {
    let config = TempDir::new("ipaccess");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("guarded.yaml", &guarded_route(echo_port));
    config.write("office.yaml", &access("\"127.0.0.0/8\""));
    let gw = Gateway::start(config, http_port, echo_port);

    assert_eq!(curl_get(&[], &gw.url("/guarded")).0, 200);
    assert_eq!(
        gw.accepted("IpAccessControl", "office").as_deref(),
        Some("True/Accepted")
    );
    // A missing resource is never skipped: its rule refuses.
    assert_eq!(curl_get(&[], &gw.url("/missing")).0, 500);
    // The quickstart's own routes are untouched.
    assert_eq!(curl_get(&[], &gw.url("/hello")).0, 200);

    gw.config
        .write_atomic("office.yaml", &access("\"203.0.113.0/24\""));
    wait_for("the narrowed range to refuse loopback", || {
        curl_get(&[], &gw.url("/guarded")).0 == 403
    });

    // One bad entry: not enforced in part; the rule answers 500 and the
    // resource's status says why.
    gw.config
        .write_atomic("office.yaml", &access("\"127.0.0.0/8\", \"10.0.0.0/99\""));
    wait_for("the invalid resource to refuse everything", || {
        curl_get(&[], &gw.url("/guarded")).0 == 500
    });
    gw.wait_accepted("IpAccessControl", "office", "False/Invalid");

    // Behind one trusted proxy: the forwarded address is judged.
    gw.config.write_atomic(
        "office.yaml",
        &format!(
            "{}  xForwardedFor: {{trustedHops: 1}}\n",
            access("\"203.0.113.0/24\"")
        ),
    );
    let forwarded = |xff: &str| {
        let header = format!("X-Forwarded-For: {xff}");
        curl_get(&["-H", &header], &gw.url("/guarded")).0
    };
    wait_for("the forwarded address to be admitted", || {
        forwarded("203.0.113.7") == 200
    });
    assert_eq!(forwarded("198.51.100.7"), 403);
    assert_eq!(
        curl_get(&[], &gw.url("/guarded")).0,
        403,
        "no header: refused"
    );
}
