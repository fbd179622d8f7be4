//! The quickstart serves over HTTP/1.1 and h2c, and the admin endpoint
//! reports what is serving.

use crate::support;

use support::{Gateway, curl_get, echo_json, route_tag};

#[test]
fn quickstart_serves_http1_and_h2c() {
    let gateway = Gateway::quickstart("qs");

    let (code, body) = curl_get(&[], &gateway.url("/hello?x=1"));
    assert_eq!(code, 200, "{body}");
    let echo = echo_json(&body);
    assert_eq!(echo["path"], "/hello");
    assert_eq!(echo["query"], "x=1");
    assert_eq!(echo["method"], "GET");
    assert_eq!(route_tag(&echo), None);

    let (code, body) = curl_get(&["--http2-prior-knowledge"], &gateway.url("/hello"));
    assert_eq!(code, 200, "{body}");
    assert_eq!(echo_json(&body)["path"], "/hello");

    // The /api route needs its header; with it, the filter tags the request.
    let (code, body) = curl_get(&["-H", "x-api-version: v1"], &gateway.url("/api/users"));
    assert_eq!(code, 200);
    assert_eq!(route_tag(&echo_json(&body)).as_deref(), Some("api-v1"));
    let (_, body) = curl_get(&[], &gateway.url("/api/users"));
    assert_eq!(
        route_tag(&echo_json(&body)),
        None,
        "no header: the catch-all route"
    );
    let (_, body) = curl_get(
        &["--http2-prior-knowledge", "-H", "x-api-version: v1"],
        &gateway.url("/api"),
    );
    assert_eq!(route_tag(&echo_json(&body)).as_deref(), Some("api-v1"));
}

#[test]
fn admin_endpoints_report_the_live_state() {
    let gateway = Gateway::quickstart("admin");
    for _ in 0..3 {
        assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
    }
    assert_eq!(gateway.admin_get("/healthz").unwrap().0, 200);
    assert_eq!(gateway.admin_get("/readyz").unwrap().0, 200);
    assert_eq!(gateway.admin_get("/nope").unwrap().0, 404);

    let (code, config) = gateway.admin_get("/config").unwrap();
    assert_eq!(code, 200);
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["sockets"][0]["port"], gateway.http_port);

    let (code, status) = gateway.admin_get("/status").unwrap();
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let kinds: Vec<_> = status
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"Gateway") && kinds.contains(&"HTTPRoute"),
        "{kinds:?}"
    );

    let (code, metrics) = gateway.admin_get("/metrics").unwrap();
    assert_eq!(code, 200);
    let requests = metrics
        .lines()
        .find(|l| l.starts_with("coxswain_proxy_requests_total{") && l.contains("default/echo"))
        .unwrap_or_else(|| panic!("no request counter in:\n{metrics}"));
    assert!(requests.ends_with(" 3"), "{requests}");
    assert!(metrics.contains("coxswain_config_ready 1"), "{metrics}");
    assert!(
        metrics.contains("coxswain_config_reloads_total{result=\"success\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("coxswain_config_load_errors 0"));
    assert!(metrics.contains("coxswain_translate_duration_seconds "));
}
