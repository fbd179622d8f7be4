//! The measured config: one Gateway, one Service, N HTTPRoutes.

use std::fmt::Write as _;
use std::path::Path;

pub const CONTROLLER: &str = "coxswain-labs.dev/gateway-controller";

/// Writes the config directory `dir` with `routes` HTTPRoutes.
pub fn write(dir: &Path, routes: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    // A port free now; the proxy binds it a moment later.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    std::fs::write(dir.join("gateway.yaml"), gateway(port))?;
    let mut text = String::with_capacity(routes * 320);
    for i in 0..routes {
        let _ = write!(
            text,
            "---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r{i}
  namespace: default
spec:
  parentRefs:
  - name: bench
  hostnames: [\"h{i}.example.com\"]
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /r{i}}}
    backendRefs:
    - {{name: origin, port: 80}}
"
        );
    }
    std::fs::write(dir.join("routes.yaml"), text)?;
    Ok(())
}

fn gateway(port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: {CONTROLLER}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: bench
  namespace: default
spec:
  gatewayClassName: coxswain
  addresses:
  - type: IPAddress
    value: 127.0.0.1
  listeners:
  - name: http
    port: {port}
    protocol: HTTP
---
apiVersion: v1
kind: Service
metadata:
  name: origin
  namespace: default
spec:
  ports:
  - name: http
    port: 80
    protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: origin-1
  namespace: default
  labels:
    kubernetes.io/service-name: origin
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses: [127.0.0.1]
"
    )
}
