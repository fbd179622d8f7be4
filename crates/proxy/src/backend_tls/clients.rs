//! What one (cluster, client certificate) pair connects with: the pooled
//! HTTP/1.1 client, HTTP/2 connections per endpoint, and a bare TLS
//! connector for TCP routes.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::ClientConfig;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::ServerName;

use super::connector::TlsConnector;
use super::identity::BackendIdentity;
use crate::h2_pool::H2Pool;
use crate::http::body::ClientBody;

pub type TlsClient = Client<TlsConnector, ClientBody>;

/// Which client certificate is presented (`None`: none). Weak, so a
/// certificate no config uses any more lets its clients go.
pub type IdentityKey = Option<Weak<BackendIdentity>>;

pub struct Clients {
    pub key: IdentityKey,
    /// ALPN `http/1.1`, pooled.
    pub http1: TlsClient,
    /// ALPN `h2` (and `http/1.1` unless the cluster requires HTTP/2):
    /// what the first connection to a cluster offers.
    pub h2_dial: tokio_rustls::TlsConnector,
    pub h2: H2Pool,
    /// No ALPN: the bytes of a TCP route are not HTTP as far as we know.
    pub stream: tokio_rustls::TlsConnector,
}

impl Clients {
    pub fn is_for(&self, identity: Option<&Arc<BackendIdentity>>) -> bool {
        match (&self.key, identity) {
            (None, None) => true,
            (Some(weak), Some(strong)) => std::ptr::eq(weak.as_ptr(), Arc::as_ptr(strong)),
            _ => false,
        }
    }

    pub fn is_live(&self) -> bool {
        self.key.as_ref().is_none_or(|w| w.strong_count() > 0)
    }

    pub fn build(
        verifier: Arc<dyn ServerCertVerifier>,
        server_name: &ServerName<'static>,
        identity: Option<&Arc<BackendIdentity>>,
        h2_only: bool,
        (connect_timeout, idle): (Duration, Duration),
    ) -> Result<Clients, String> {
        let provider: Arc<CryptoProvider> = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some(identity) => {
                let (chain, key) = identity.material()?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("client certificate {}: {e}", identity.source))?
            }
        };
        let with_alpn = |protocols: &[&[u8]]| {
            let mut c = config.clone();
            c.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
            Arc::new(c)
        };
        let offer: &[&[u8]] = if h2_only {
            &[b"h2"]
        } else {
            &[b"h2", b"http/1.1"]
        };
        let connector = TlsConnector::new(
            with_alpn(&[b"http/1.1"]),
            server_name.clone(),
            connect_timeout,
        );
        let http1 = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(idle)
            .set_host(false)
            .build(connector);
        Ok(Clients {
            key: identity.map(Arc::downgrade),
            http1,
            h2_dial: tokio_rustls::TlsConnector::from(with_alpn(offer)),
            h2: H2Pool::default(),
            stream: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }
}
