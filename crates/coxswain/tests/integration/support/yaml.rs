//! Config fragments the end-to-end tests share.

/// The IngressClass that makes Ingresses of class `coxswain` ours.
pub const INGRESS_CLASS: &str = "apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: coxswain
spec:
  controller: coxswain-labs.dev/gateway-controller
";

/// `text` with every line indented by `spaces` (to nest a PEM or a
/// document under a YAML key).
pub fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// A Service without selector whose one EndpointSlice endpoint is
/// 127.0.0.1:`port`; `port_fields` (such as `appProtocol: kubernetes.io/h2c`
/// or `protocol: UDP`) go on both the Service port and the slice port.
pub fn loopback_service(name: &str, port: u16, port_fields: &[&str]) -> String {
    let service_fields: String = port_fields.iter().map(|f| format!("    {f}\n")).collect();
    let slice_fields: String = port_fields.iter().map(|f| format!("  {f}\n")).collect();
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  ports:
  - port: {port}
{service_fields}---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {name}
  labels:
    kubernetes.io/service-name: {name}
addressType: IPv4
ports:
- port: {port}
{slice_fields}endpoints:
- addresses: [127.0.0.1]
  conditions:
    ready: true
"
    )
}
