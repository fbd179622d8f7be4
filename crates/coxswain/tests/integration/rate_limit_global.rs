//! RateLimit's global mode end to end: two `coxswain` processes serving
//! one config directory (on 127.0.0.1 and 127.0.0.2), a real
//! redis-server as their store, curl as the client. They share one
//! budget; with the store gone both refuse (onStoreUnavailable: Deny, the
//! default) and count it. One request per hour, so nothing refills.

use crate::support;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use support::redis::RedisServer;
use support::*;

fn limited_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: limited
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /limited}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: RateLimit, name: fleet}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn fleet_limit(redis: &RedisServer) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RateLimit
metadata:
  name: fleet
spec:
  requests: 1
  unit: Hour
  burst: 3
  key: {{type: Route}}
  global:
    redis: {{address: \"{}\"}}
",
        redis.address()
    )
}

/// A second `coxswain run` on the same config directory, its listeners on
/// 127.0.0.2; killed on drop.
struct Peer {
    child: Child,
    admin: SocketAddr,
}

impl Peer {
    fn start(config: &TempDir) -> Self {
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new(BIN)
            .arg("run")
            .arg("--config")
            .arg(config.path())
            .args(["--bind-address", "127.0.0.2"])
            .args(["--admin-address", &admin.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let peer = Peer { child, admin };
        wait_for("the second proxy's /readyz", || {
            raw_get(peer.admin, "/readyz").is_some_and(|(code, _)| code == 200)
        });
        peer
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_proxies_share_one_budget_and_refuse_while_the_store_is_gone() {
    let mut redis = RedisServer::start(free_port());
    let config = TempDir::new("ratelimit-global");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("limited.yaml", &limited_route(echo_port));
    config.write("fleet.yaml", &fleet_limit(&redis));
    let gw = Gateway::start(config, http_port, echo_port);
    let peer = Peer::start(&gw.config);
    let one = gw.url("/limited");
    let two = format!("http://127.0.0.2:{http_port}/limited");

    let codes: Vec<u16> = [&one, &two, &two, &one, &two]
        .iter()
        .map(|url| curl_get(&[], url).0)
        .collect();
    assert_eq!(
        codes,
        [200, 200, 200, 429, 429],
        "three in all, then 429 from either"
    );
    let headers = String::from_utf8_lossy(&curl(&["-D", "-", "-o", "/dev/null", &one]).stdout)
        .to_ascii_lowercase();
    assert!(headers.contains("retry-after: 3600"), "{headers}");
    assert!(
        headers.contains("ratelimit: \"fleet\";r=0;t=3600"),
        "{headers}"
    );

    redis.stop();
    assert_eq!(curl_get(&[], &one).0, 503);
    assert_eq!(curl_get(&[], &two).0, 503);
    assert!(
        gw.metric("coxswain_proxy_ratelimit_store_errors_total{decision=\"denied\"}")
            .is_some_and(|n| n >= 1)
    );
    let (_, metrics) = raw_get(peer.admin, "/metrics").unwrap();
    assert!(
        !metrics.contains("coxswain_proxy_ratelimit_store_errors_total{decision=\"denied\"} 0"),
        "the second proxy counted its refusal too"
    );
    assert_eq!(
        curl_get(&[], &gw.url("/hello")).0,
        200,
        "other routes unaffected"
    );
}
