//! TLS configuration (rustls with ring) and the TLS echo origin.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::cli::ServeTlsArgs;
use crate::serve::{accept, bind, echo};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client trusting the CAs in `cafile`, without session resumption so
/// every connection is a full handshake.
pub fn client_config(cafile: &Path) -> anyhow::Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(cafile)
        .with_context(|| format!("reading {}", cafile.display()))?
    {
        roots.add(cert.with_context(|| format!("parsing {}", cafile.display()))?)?;
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

fn server_config(cert: &Path, key: &Path) -> anyhow::Result<ServerConfig> {
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading {}", key.display()))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    // Clients never resume: do not spend CPU issuing tickets.
    config.send_tls13_tickets = 0;
    Ok(config)
}

pub async fn serve_echo(args: ServeTlsArgs) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(Arc::new(server_config(&args.cert, &args.key)?));
    let listener = bind(&args.serve).await?;
    loop {
        let stream = accept(&listener).await;
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream));
            if let Ok(Ok(mut tls)) = handshake.await {
                let _ = echo(&mut tls).await;
            }
        });
    }
}
