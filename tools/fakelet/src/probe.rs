//! Readiness probes (httpGet and tcpSocket) against the pod IP.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Probes run at most this far apart, whatever periodSeconds says, so tests
/// see readiness quickly.
const MAX_PERIOD: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    Http { port: u16, path: String },
    Tcp { port: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub check: Check,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

fn port_of(port: &IntOrString, container: &Container) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

fn secs(value: Option<i32>, default: u64) -> Duration {
    Duration::from_secs(value.and_then(|v| u64::try_from(v).ok()).unwrap_or(default))
}

/// The container's readiness probe, if it has one this tool can run.
/// (exec and grpc probes are not supported: the container counts as ready.)
pub fn readiness_of(container: &Container) -> Option<Readiness> {
    let probe: &Probe = container.readiness_probe.as_ref()?;
    let check = if let Some(http) = &probe.http_get {
        Check::Http {
            port: port_of(&http.port, container)?,
            path: http.path.clone().unwrap_or_else(|| "/".to_string()),
        }
    } else if let Some(tcp) = &probe.tcp_socket {
        Check::Tcp {
            port: port_of(&tcp.port, container)?,
        }
    } else {
        return None;
    };
    Some(Readiness {
        check,
        initial_delay: secs(probe.initial_delay_seconds, 0),
        period: secs(probe.period_seconds, 10).min(MAX_PERIOD),
        timeout: secs(probe.timeout_seconds, 1),
        success_threshold: probe.success_threshold.map_or(1, |v| v.max(1) as u32),
        failure_threshold: probe.failure_threshold.map_or(3, |v| v.max(1) as u32),
    })
}

/// One probe attempt. httpGet passes on a 2xx or 3xx status.
pub async fn probe_once(ip: Ipv4Addr, check: &Check, timeout: Duration) -> bool {
    let attempt = async {
        match check {
            Check::Tcp { port } => TcpStream::connect(SocketAddr::from((ip, *port)))
                .await
                .is_ok(),
            Check::Http { port, path } => http_ok(ip, *port, path).await.unwrap_or(false),
        }
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or(false)
}

async fn http_ok(ip: Ipv4Addr, port: u16, path: &str) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(SocketAddr::from((ip, port))).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: kube-probe/fakelet\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut head = [0u8; 16];
    let mut filled = 0;
    while filled < head.len() {
        let n = stream.read(&mut head[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(status_is_success(&head[..filled]))
}

/// True for an HTTP status line with a 2xx or 3xx code.
pub fn status_is_success(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut parts = text.split(' ');
    let version_ok = parts.next().is_some_and(|v| v.starts_with("HTTP/"));
    let code: Option<u16> = parts
        .next()
        .and_then(|c| c.get(..3))
        .and_then(|c| c.parse().ok());
    version_ok && code.is_some_and(|c| (200..400).contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction, TCPSocketAction};
    use tokio::net::TcpListener;

    fn container_with(probe: Probe) -> Container {
        Container {
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 3000,
                ..Default::default()
            }]),
            readiness_probe: Some(probe),
            ..Default::default()
        }
    }

    #[test]
    fn resolves_named_ports_and_defaults() {
        let probe = Probe {
            http_get: Some(HTTPGetAction {
                port: IntOrString::String("http".into()),
                path: Some("/healthz".into()),
                ..Default::default()
            }),
            period_seconds: Some(30),
            ..Default::default()
        };
        let readiness = readiness_of(&container_with(probe)).unwrap();
        assert_eq!(
            readiness.check,
            Check::Http {
                port: 3000,
                path: "/healthz".into()
            }
        );
        assert_eq!(readiness.period, MAX_PERIOD);
        assert_eq!(readiness.failure_threshold, 3);
        let unknown_port = Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::String("nope".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(readiness_of(&container_with(unknown_port)).is_none());
        assert!(readiness_of(&Container::default()).is_none());
    }

    #[test]
    fn status_lines() {
        assert!(status_is_success(b"HTTP/1.1 200 OK\r\n"));
        assert!(status_is_success(b"HTTP/1.0 302 Found"));
        assert!(!status_is_success(b"HTTP/1.1 503 Unavailable"));
        assert!(!status_is_success(b"garbage"));
        assert!(!status_is_success(b""));
    }

    #[tokio::test]
    async fn probes_a_real_socket_on_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 512];
            let _ = socket.read(&mut buf).await.unwrap();
            socket
                .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
                .await
                .unwrap();
        });
        let lo = Ipv4Addr::LOCALHOST;
        let http = Check::Http {
            port,
            path: "/".into(),
        };
        assert!(probe_once(lo, &http, Duration::from_secs(5)).await);
        server.await.unwrap();
        // Nothing listens any more: both kinds fail.
        assert!(!probe_once(lo, &Check::Tcp { port }, Duration::from_secs(5)).await);
        assert!(!probe_once(lo, &http, Duration::from_secs(5)).await);
    }
}
