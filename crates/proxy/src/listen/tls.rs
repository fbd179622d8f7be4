//! TCP sockets that carry TLS: the ClientHello's SNI picks the listener
//! (exact hostname, then the longest wildcard, then the hostname-less one;
//! a hello without SNI only reaches a hostname-less listener). A name no
//! listener owns is refused: a connection never falls through to another
//! listener's certificate or backends.

use std::fmt;
use std::sync::Arc;

use coxswain_ir::{ClientValidationMode, Hostname, Listener, Serve, Socket, TlsTermination};

use super::certificates::Certificates;
use super::client_identity::ClientIdentity;
use crate::backend_tls::BackendIdentity;
use crate::l4::{BackendTlsUse, L4Context, L4Table};
use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls::pki_types::UnixTime;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// A TLS socket's listeners, in the IR's hostname-specificity order.
#[derive(Debug)]
pub struct TlsSocket {
    listeners: Vec<TlsListener>,
}

/// One listener of a TLS socket.
#[derive(Debug)]
pub struct TlsListener {
    hostname: Option<Hostname>,
    /// Position in the IR socket's listener list.
    pub index: usize,
    pub action: TlsAction,
}

/// What happens to a connection whose SNI picked this listener.
#[derive(Debug)]
pub enum TlsAction {
    /// Terminate, then serve HTTP/1.1 or HTTP/2 (ALPN).
    Http(HttpTls),
    /// Terminate, then splice the decrypted stream to a TCP backend.
    Tcp(Arc<ServerConfig>, Arc<L4Table>),
    /// Splice the encrypted stream (ClientHello included) to a backend
    /// chosen by SNI; the gateway holds no key.
    Passthrough(Arc<L4Table>),
    /// No usable certificate: close the connection.
    Refuse,
}

/// An HTTPS listener's TLS.
#[derive(Debug)]
pub struct HttpTls {
    pub config: Arc<ServerConfig>,
    /// AllowInsecureFallback lets any certificate through the handshake:
    /// this strict verifier decides whether it is an identity.
    pub recheck: Option<Arc<dyn ClientCertVerifier>>,
}

impl HttpTls {
    /// The verified client certificate's identity, if the connection
    /// presented one that verifies.
    pub fn client_identity(&self, session: &rustls::ServerConnection) -> Option<ClientIdentity> {
        let (end_entity, intermediates) = session.peer_certificates()?.split_first()?;
        if let Some(strict) = &self.recheck {
            strict
                .verify_client_cert(end_entity, intermediates, UnixTime::now())
                .ok()?;
        }
        ClientIdentity::of(end_entity)
    }
}

impl TlsSocket {
    pub fn new(socket: &Socket, ctx: &L4Context<'_>) -> Self {
        let listeners = socket
            .listeners
            .iter()
            .enumerate()
            .map(|(index, l)| TlsListener {
                hostname: l.hostname.clone(),
                index,
                action: action(l, ctx, ctx.identities.get(index).cloned().flatten()),
            })
            .collect();
        TlsSocket { listeners }
    }

    /// The listener that owns `sni`, if any.
    pub fn pick(&self, sni: Option<&str>) -> Option<&TlsListener> {
        self.listeners
            .iter()
            .find(|l| owns_sni(l.hostname.as_ref(), sni))
    }
}

/// Does a listener of this hostname take a ClientHello naming `sni`
/// (lower-case, without trailing dot)?
fn owns_sni(hostname: Option<&Hostname>, sni: Option<&str>) -> bool {
    match (hostname, sni) {
        (None, _) => true,
        (Some(h), Some(name)) => h.matches(name),
        (Some(_), None) => false,
    }
}

/// The listener (index on `socket`) a ClientHello naming `sni` reaches:
/// the choice [`TlsSocket::pick`] makes, without building the socket.
pub fn sni_listener(socket: &Socket, sni: Option<&str>) -> Option<usize> {
    socket
        .listeners
        .iter()
        .position(|l| owns_sni(l.hostname.as_ref(), sni))
}

fn action(
    listener: &Listener,
    ctx: &L4Context<'_>,
    identity: Option<Arc<BackendIdentity>>,
) -> TlsAction {
    let table = |routes, tls| Arc::new(L4Table::compile(listener, routes, ctx, tls));
    let config = |alpn: &[&[u8]]| {
        let tls = listener.tls.as_ref()?;
        server_config(&listener.name, tls, alpn, ctx.certificates)
    };
    match &listener.serve {
        Serve::TlsPassthrough(routes) => TlsAction::Passthrough(table(routes, BackendTlsUse::AsIs)),
        Serve::Http(_) => match config(&[b"h2", b"http/1.1"]) {
            Some(config) => {
                let recheck = listener
                    .tls
                    .as_ref()
                    .and_then(|t| t.client_validation.as_ref())
                    .filter(|v| v.mode == ClientValidationMode::AllowInsecureFallback)
                    .map(|v| ctx.certificates.verifier(&v.strict()));
                match recheck {
                    Some(Err(e)) => {
                        tracing::error!(listener = %listener.name, error = %e, "client certificate validation; refusing connections");
                        TlsAction::Refuse
                    }
                    recheck => TlsAction::Http(HttpTls {
                        config,
                        recheck: recheck.and_then(Result::ok),
                    }),
                }
            }
            None => TlsAction::Refuse,
        },
        Serve::Tcp(routes) => match config(&[]) {
            Some(config) => {
                TlsAction::Tcp(config, table(routes, BackendTlsUse::Originate(identity)))
            }
            None => TlsAction::Refuse,
        },
        Serve::Udp(_) => TlsAction::Refuse,
    }
}

/// Always presents one certificate: the listener was already chosen by SNI.
struct OneCertificate(Arc<CertifiedKey>);

impl fmt::Debug for OneCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OneCertificate")
    }
}

impl ResolvesServerCert for OneCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A server config presenting the listener's first usable certificate, or
/// `None` when none is usable (the listener then refuses connections).
fn server_config(
    listener: &str,
    tls: &TlsTermination,
    alpn: &[&[u8]],
    certificates: &Certificates,
) -> Option<Arc<ServerConfig>> {
    let key = tls
        .certificates
        .iter()
        .find_map(|c| match certificates.key(c) {
            Ok(key) => Some(key),
            Err(e) => {
                tracing::warn!(secret = %c.source, %listener, error = %e, "unusable certificate");
                None
            }
        })?;
    let builder = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions();
    let builder = match builder {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(%listener, error = %e, "TLS config");
            return None;
        }
    };
    let builder = match &tls.client_validation {
        None => builder.with_no_client_auth(),
        Some(validation) => match certificates.verifier(validation) {
            Ok(verifier) => builder.with_client_cert_verifier(verifier),
            Err(e) => {
                // Never serve without the validation that was asked for.
                tracing::error!(%listener, error = %e, "client certificate validation; refusing connections");
                return None;
            }
        },
    };
    let mut config = builder.with_cert_resolver(Arc::new(OneCertificate(key)));
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Some(Arc::new(config))
}
