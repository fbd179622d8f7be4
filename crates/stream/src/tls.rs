//! rustls configurations of both ends: each trusts only the stream's CA,
//! and the server requires a client certificate.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::pki::Credentials;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{0} holds no PEM certificate")]
    NoCertificate(&'static str),
    #[error("tls.key holds no PEM private key")]
    NoKey,
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
    #[error("cannot build the client verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("{0:?} is not a valid server name")]
    ServerName(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certificates(pem: &str, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(what));
    }
    Ok(certs)
}

fn roots(credentials: &Credentials) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(&credentials.ca_pem, "ca.crt")? {
        roots.add(cert)?;
    }
    Ok(roots)
}

fn key(credentials: &Credentials) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(credentials.key_pem.as_bytes()).map_err(|_| TlsError::NoKey)
}

pub fn server_config(credentials: &Credentials) -> Result<Arc<ServerConfig>, TlsError> {
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots(credentials)?), provider())
            .build()?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            certificates(&credentials.cert_pem, "tls.crt")?,
            key(credentials)?,
        )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

pub fn client_config(credentials: &Credentials) -> Result<Arc<ClientConfig>, TlsError> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots(credentials)?)
        .with_client_auth_cert(
            certificates(&credentials.cert_pem, "tls.crt")?,
            key(credentials)?,
        )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

pub fn server_name(name: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(name.to_string()).map_err(|_| TlsError::ServerName(name.to_string()))
}
