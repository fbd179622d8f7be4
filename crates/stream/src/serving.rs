//! The controller's serving certificate: issued from the stream's
//! authority for the name the proxies dial, and issued again when two
//! thirds of its life are gone (new connections use the new one).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::ServerConfig;
use tokio::sync::watch;

use crate::pki::{Authority, LEAF_LIFETIME, PkiError};
use crate::tls::{TlsError, server_config};

/// How often the certificate's age is checked.
const RENEWAL_CHECK: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    #[error("cannot issue the stream's serving certificate: {0}")]
    Pki(#[from] PkiError),
    #[error("{0}")]
    Tls(#[from] TlsError),
}

/// A server configuration presenting a fresh certificate for `server_name`.
pub fn serving_config(
    authority: &Authority,
    server_name: &str,
    now: SystemTime,
) -> Result<Arc<ServerConfig>, ServingError> {
    Ok(server_config(&authority.issue_server(server_name, now)?)?)
}

/// Keeps `tls` presenting a certificate with life left; runs until the
/// receivers are gone.
pub async fn renew(
    authority: Arc<Authority>,
    server_name: String,
    tls: watch::Sender<Arc<ServerConfig>>,
) {
    let mut issued = SystemTime::now();
    loop {
        tokio::time::sleep(RENEWAL_CHECK).await;
        if tls.is_closed() {
            return;
        }
        let now = SystemTime::now();
        let age = now.duration_since(issued).unwrap_or(Duration::ZERO);
        if age < LEAF_LIFETIME * 2 / 3 {
            continue;
        }
        match serving_config(&authority, &server_name, now) {
            Ok(config) => {
                tls.send_replace(config);
                issued = now;
                tracing::info!("config stream: serving certificate renewed");
            }
            Err(e) => {
                tracing::error!(error = %e, "config stream: cannot renew the serving certificate")
            }
        }
    }
}
