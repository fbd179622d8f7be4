//! The measured config: one Gateway with an HTTP listener on a free
//! loopback port, one HTTPRoute for `/` to a Service whose one endpoint is
//! the origin.

use std::net::SocketAddr;
use std::path::Path;

pub const CONTROLLER: &str = "coxswain-labs.dev/gateway-controller";

/// Writes the config directory `dir`; returns where the proxy will listen.
pub fn write(dir: &Path, origin: SocketAddr) -> anyhow::Result<SocketAddr> {
    std::fs::create_dir_all(dir)?;
    // A port free now; the proxy binds it a moment later.
    let listen = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let (port, origin_port) = (listen.port(), origin.port());
    let text = format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: coxswain}}
spec: {{controllerName: {CONTROLLER}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: bench, namespace: default}}
spec:
  gatewayClassName: coxswain
  addresses: [{{type: IPAddress, value: 127.0.0.1}}]
  listeners: [{{name: http, port: {port}, protocol: HTTP}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: origin, namespace: default}}
spec:
  parentRefs: [{{name: bench}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /}}}}]
    backendRefs: [{{name: origin, port: 80}}]
---
apiVersion: v1
kind: Service
metadata: {{name: origin, namespace: default}}
spec:
  ports: [{{name: http, port: 80, protocol: TCP}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: origin-1
  namespace: default
  labels: {{kubernetes.io/service-name: origin}}
addressType: IPv4
ports: [{{name: http, port: {origin_port}, protocol: TCP}}]
endpoints:
- addresses: [127.0.0.1]
  conditions: {{ready: true}}
"
    );
    std::fs::write(dir.join("config.yaml"), text)?;
    Ok(listen)
}
