//! HTTP/1.1 Upgrade (WebSocket, or any protocol the backend agrees to):
//! the request keeps its `Upgrade` and `Connection: upgrade` (hop-by-hop
//! headers the proxy otherwise strips), and when the backend answers 101
//! both connections are handed over and their bytes relayed as they come,
//! frames never buffered whole, until both sides close or nothing moves
//! for the idle timeout.

use std::fmt::Write;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: taken when a request upgrades and when its connection parks or ends, never per request
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{HeaderMap, HeaderValue, Method, Request, Version};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::access_log::{ClosesOnDrop, TunnelLog};
use crate::http::headers::lists_token;
use crate::l4::splice::{ConnectionBytes, Counters, Sides, splice};

/// Upgraded connections, for `/metrics`.
#[derive(Debug, Default)]
pub struct UpgradeMetrics {
    pub total: AtomicU64,
    pub active: AtomicU64,
    /// Client to backend.
    pub bytes_in: AtomicU64,
    /// Backend to client.
    pub bytes_out: AtomicU64,
}

impl UpgradeMetrics {
    pub fn render(&self, out: &mut String) {
        let lines = [
            (
                "coxswain_proxy_upgrades_total",
                "counter",
                "HTTP connections upgraded (WebSocket and others) after the backend's 101.",
                &self.total,
            ),
            (
                "coxswain_proxy_upgrades_active",
                "gauge",
                "Upgraded connections open now.",
                &self.active,
            ),
            (
                "coxswain_proxy_upgrade_received_bytes_total",
                "counter",
                "Bytes from clients on upgraded connections.",
                &self.bytes_in,
            ),
            (
                "coxswain_proxy_upgrade_sent_bytes_total",
                "counter",
                "Bytes to clients on upgraded connections.",
                &self.bytes_out,
            ),
        ];
        for (name, kind, help, value) in lines {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
    }
}

/// The protocol an HTTP/1.1 request asks to switch to: `Connection` lists
/// `upgrade` and `Upgrade` names it. HTTP/2 has no Upgrade.
pub fn requested<B>(req: &Request<B>) -> Option<HeaderValue> {
    if req.version() != Version::HTTP_11 {
        return None;
    }
    let asks = lists_token(req.headers(), CONNECTION, "upgrade");
    asks.then(|| req.headers().get(UPGRADE).cloned()).flatten()
}

/// The protocol an HTTP/2 extended CONNECT (RFC 8441) asks to tunnel:
/// `:method CONNECT` with a `:protocol` pseudo-header.
pub fn extended_connect<B>(req: &Request<B>) -> Option<HeaderValue> {
    if req.version() != Version::HTTP_2 || req.method() != Method::CONNECT {
        return None;
    }
    let protocol = req.extensions().get::<hyper::ext::Protocol>()?;
    HeaderValue::from_str(protocol.as_str()).ok()
}

/// Turns an extended CONNECT into the HTTP/1.1 upgrade a backend
/// understands (RFC 8441 section 5): `GET` with `Upgrade` and
/// `Connection: upgrade`, and for WebSocket a fresh `Sec-WebSocket-Key`,
/// which HTTP/2 clients do not send.
pub fn connect_as_http1_upgrade(parts: &mut http::request::Parts, protocol: HeaderValue) {
    parts.method = Method::GET;
    parts.extensions.remove::<hyper::ext::Protocol>();
    if protocol.as_bytes().eq_ignore_ascii_case(b"websocket") {
        let key: [u8; 16] = rand::random();
        if let Ok(key) = HeaderValue::from_str(&STANDARD.encode(key)) {
            parts.headers.insert(SEC_WEBSOCKET_KEY, key);
        }
    }
    restore(&mut parts.headers, protocol);
}

/// The backend's 101 as the 200 that opens an extended CONNECT tunnel:
/// the HTTP/1.1 handshake's answer means nothing to an HTTP/2 client.
pub fn as_connect_response(parts: &mut http::response::Parts) {
    parts.status = http::StatusCode::OK;
    parts.headers.remove(SEC_WEBSOCKET_ACCEPT);
    parts.headers.remove(http::header::CONTENT_LENGTH);
}

/// Puts the upgrade back after hop-by-hop stripping (request to the
/// backend, or the backend's 101 to the client).
pub fn restore(headers: &mut HeaderMap, protocol: HeaderValue) {
    headers.insert(UPGRADE, protocol);
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
}

type Relay = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A client connection as its driver hands it over after the 101.
pub trait ClientStream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> ClientStream for T {}
pub type HandedOver = Box<dyn ClientStream>;

#[derive(Default)]
struct Pending {
    relay: Option<Relay>,
    /// Where the relay waits for the client's connection, when the driver
    /// hands it over itself.
    handover: Option<oneshot::Sender<HandedOver>>,
    /// The driver hands the connection over (hyper's own upgrade is not
    /// used on it).
    hands_over: bool,
}

/// Where a request's handler leaves the relay of an upgraded connection.
/// The connection's own task runs it once HTTP is done with the socket, so
/// the connection keeps its place under `--max-connections` and drains
/// with its listener like any other.
#[derive(Clone, Default)]
pub struct UpgradeSlot(Arc<Mutex<Pending>>);

impl std::fmt::Debug for UpgradeSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpgradeSlot")
    }
}

impl UpgradeSlot {
    /// The slot of a connection whose driver hands the client's socket
    /// over once hyper returns it ([`crate::http::park`]).
    pub fn handing_over() -> Self {
        UpgradeSlot(Arc::new(Mutex::new(Pending {
            hands_over: true,
            ..Pending::default()
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where to hand the client's connection, if a request upgraded it.
    pub fn take_handover(&self) -> Option<oneshot::Sender<HandedOver>> {
        self.lock().handover.take()
    }

    /// Runs the relay, if a request left one.
    pub async fn run(&self) {
        let relay = self.lock().relay.take();
        if let Some(relay) = relay {
            relay.await;
        }
    }
}

/// Leaves in `slot` the relay of the two upgraded connections, which
/// starts once both hand-overs complete.
pub fn tunnel(
    slot: &UpgradeSlot,
    client: OnUpgrade,
    backend: OnUpgrade,
    idle: Duration,
    metrics: Arc<crate::metrics::Metrics>,
    log: Option<TunnelLog>,
) {
    let mut pending = slot.lock();
    let relay = if pending.hands_over {
        let (handover, handed) = oneshot::channel();
        pending.handover = Some(handover);
        let client = async move { handed.await.map_err(|e| e.to_string()) };
        relay(client, backend, idle, metrics, log)
    } else {
        relay(upgraded(client), backend, idle, metrics, log)
    };
    pending.relay = Some(relay);
}

/// hyper's hand-over of an upgraded connection.
async fn upgraded(on: OnUpgrade) -> Result<TokioIo<hyper::upgrade::Upgraded>, String> {
    on.await.map(TokioIo::new).map_err(|e| e.to_string())
}

/// Relays an extended CONNECT tunnel on a task of its own: it is one
/// stream of an HTTP/2 connection that goes on serving others (and keeps
/// the connection's permit while it does), not the connection's last act.
pub fn spawn_tunnel(
    client: OnUpgrade,
    backend: OnUpgrade,
    idle: Duration,
    metrics: Arc<crate::metrics::Metrics>,
    log: Option<TunnelLog>,
) {
    tokio::spawn(relay(upgraded(client), backend, idle, metrics, log));
}

fn relay<C, S>(
    client: C,
    backend: OnUpgrade,
    idle: Duration,
    metrics: Arc<crate::metrics::Metrics>,
    log: Option<TunnelLog>,
) -> Relay
where
    C: Future<Output = Result<S, String>> + Send + 'static,
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    // Built outside the future, so a relay dropped unrun still closes it.
    let log = ClosesOnDrop(log);
    Box::pin(async move {
        let (client, backend) = match tokio::join!(client, upgraded(backend)) {
            (Ok(c), Ok(b)) => (c, b),
            (c, b) => {
                tracing::debug!(client = ?c.err(), backend = ?b.err(), "upgrade hand-over failed");
                return;
            }
        };
        let unlogged = ConnectionBytes::default();
        let m = &metrics.upgrades;
        m.total.fetch_add(1, Ordering::Relaxed);
        m.active.fetch_add(1, Ordering::Relaxed);
        let end = splice(
            client,
            backend,
            idle,
            Counters {
                inbound: &m.bytes_in,
                outbound: &m.bytes_out,
                connection: log.0.as_ref().map_or(&unlogged, TunnelLog::bytes),
            },
            // Upgraded HTTP connections: always shut down explicitly.
            Sides {
                client_raw: false,
                backend_raw: false,
            },
        )
        .await;
        m.active.fetch_sub(1, Ordering::Relaxed);
        tracing::debug!(?end, "upgraded connection closed");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(version: Version, headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().version(version);
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn an_extended_connect_becomes_a_websocket_get() {
        let mut connect = req(Version::HTTP_2, &[("sec-websocket-version", "13")]);
        *connect.method_mut() = Method::CONNECT;
        assert!(extended_connect(&connect).is_none(), "no :protocol");
        connect
            .extensions_mut()
            .insert(hyper::ext::Protocol::from_static("websocket"));
        let protocol = extended_connect(&connect).unwrap();
        let (mut parts, ()) = connect.into_parts();
        connect_as_http1_upgrade(&mut parts, protocol);
        assert_eq!(parts.method, Method::GET);
        assert_eq!(parts.headers["upgrade"], "websocket");
        assert_eq!(parts.headers["connection"], "upgrade");
        assert_eq!(parts.headers["sec-websocket-key"].len(), 24);
        assert_eq!(parts.headers["sec-websocket-version"], "13");
        assert!(parts.extensions.get::<hyper::ext::Protocol>().is_none());
    }

    #[test]
    fn only_http11_with_connection_upgrade_and_upgrade_asks() {
        let ws = [
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ];
        assert_eq!(requested(&req(Version::HTTP_11, &ws)).unwrap(), "websocket");
        assert!(requested(&req(Version::HTTP_2, &ws)).is_none());
        assert!(requested(&req(Version::HTTP_11, &[("upgrade", "websocket")])).is_none());
        assert!(requested(&req(Version::HTTP_11, &[("connection", "upgrade")])).is_none());
    }
}
