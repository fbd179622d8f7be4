//! TLS termination for HTTPS sockets: one rustls config per socket whose
//! certificate is chosen by SNI with the listener-hostname rules (exact,
//! then wildcard, then the listener without a hostname).

use std::fmt;
use std::sync::Arc;

use coxswain_ir::{Hostname, Listener, ListenerProtocol, TlsCertificate};
use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The certificate of one Gateway listener on the socket.
struct Entry {
    hostname: Option<Hostname>,
    key: Arc<CertifiedKey>,
}

/// Picks a certificate by SNI, in the IR's hostname-specificity order.
struct SniResolver {
    entries: Vec<Entry>,
}

impl fmt::Debug for SniResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SniResolver")
            .field("certificates", &self.entries.len())
            .finish()
    }
}

impl SniResolver {
    fn pick(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let by_name = sni.map(str::to_ascii_lowercase).and_then(|name| {
            self.entries.iter().find(|e| {
                e.hostname
                    .as_ref()
                    .is_some_and(|h| h.matches(name.trim_end_matches('.')))
            })
        });
        // No SNI or no hostname matched: the catch-all listener, else the
        // first certificate (clients that connect by IP still get one).
        by_name
            .or_else(|| self.entries.iter().find(|e| e.hostname.is_none()))
            .or_else(|| self.entries.first())
            .map(|e| e.key.clone())
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.pick(hello.server_name())
    }
}

fn certified_key(cert: &TlsCertificate) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert.cert_chain_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("certificate chain: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.0.as_bytes())
        .map_err(|e| format!("private key: {e}"))?;
    let signer = ring::default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("private key: {e}"))?;
    Ok(CertifiedKey::new(chain, signer))
}

/// How a socket treats new connections.
#[derive(Clone, Debug)]
pub enum SocketTls {
    /// Plain HTTP (HTTP/1.1 or h2c).
    Plain,
    /// Terminate TLS with this config, then serve HTTP over it.
    Terminate(Arc<ServerConfig>),
    /// HTTPS whose TLS config could not be built: close connections.
    Refuse,
}

/// What an IR socket needs: plain for HTTP, a rustls config for HTTPS.
pub fn socket_tls(listener: &Listener) -> SocketTls {
    if listener.protocol != ListenerProtocol::Https {
        return SocketTls::Plain;
    }
    match server_config(listener) {
        Ok(config) => SocketTls::Terminate(config),
        Err(e) => {
            tracing::error!(error = %e, "TLS config; refusing connections");
            SocketTls::Refuse
        }
    }
}

fn server_config(listener: &Listener) -> Result<Arc<ServerConfig>, rustls::Error> {
    let mut entries = Vec::new();
    for gl in &listener.gateway_listeners {
        // The first usable certificate of each Gateway listener.
        let key = gl.certificates.iter().find_map(|c| match certified_key(c) {
            Ok(key) => Some(key),
            Err(e) => {
                tracing::warn!(secret = %c.source, listener = %gl.name, error = %e, "unusable certificate");
                None
            }
        });
        if let Some(key) = key {
            entries.push(Entry {
                hostname: gl.hostname.clone(),
                key: Arc::new(key),
            });
        }
    }
    let resolver = Arc::new(SniResolver { entries });
    // With no usable certificate the resolver finds none and every
    // handshake fails: the socket never falls back to plain HTTP.
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
