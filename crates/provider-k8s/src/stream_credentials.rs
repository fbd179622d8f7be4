//! Each dedicated Gateway's stream credentials: the Secret
//! `<gateway>-coxswain-stream` (`ca.crt`, `tls.crt`, `tls.key`) its pool
//! mounts, holding a client certificate whose URI SAN names the Gateway.
//! A live Secret from our authority with life left is kept as is; one
//! about to expire (two thirds gone), from another authority, or absent
//! gets a new certificate. Owned by the Gateway, so deleted with it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use coxswain_api::crds::CoxswainGatewayParametersSpec;
use coxswain_api::{Gateway, ObjectKey, Secret, Snapshot};
use coxswain_stream::pki::{CA_FILE, CERT_FILE, KEY_FILE};
use coxswain_stream::{Authority, Credentials, GatewayIdentity};
use k8s_openapi::ByteString;

use crate::pool::{pool_metadata, stream_secret_name};

/// Issues and remembers the pools' credentials.
pub struct ProxyCredentials {
    authority: Arc<Authority>,
    /// Issued but not seen live yet (the watch lags our own write): reused
    /// so each translation does not issue again.
    pending: BTreeMap<ObjectKey, Credentials>,
}

impl ProxyCredentials {
    pub fn new(authority: Arc<Authority>) -> ProxyCredentials {
        ProxyCredentials {
            authority,
            pending: BTreeMap::new(),
        }
    }

    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The Secret each dedicated Gateway's pool should mount.
    pub fn desired<'a>(
        &mut self,
        snapshot: &Snapshot,
        gateways: impl Iterator<
            Item = (
                &'a ObjectKey,
                &'a Gateway,
                &'a CoxswainGatewayParametersSpec,
            ),
        >,
        now: SystemTime,
    ) -> Vec<Secret> {
        let mut secrets = Vec::new();
        let mut pending = BTreeMap::new();
        for (key, gw, spec) in gateways {
            let name = stream_secret_name(&key.name);
            let live = snapshot
                .secrets
                .get(&ObjectKey::new(&*key.namespace, name.clone()))
                .and_then(|secret| credentials(secret))
                .filter(|c| self.fresh(c, now));
            let credentials = match live {
                Some(live) => live,
                None => {
                    let issued = match self.pending.remove(key).filter(|c| self.fresh(c, now)) {
                        Some(pending) => pending,
                        None => match self.issue(key, now) {
                            Some(issued) => issued,
                            None => continue,
                        },
                    };
                    // Not live yet: kept until the watch shows it.
                    pending.insert(key.clone(), issued.clone());
                    issued
                }
            };
            let Some(metadata) = pool_metadata(gw, spec, name) else {
                continue;
            };
            secrets.push(Secret {
                metadata,
                type_: Some("kubernetes.io/tls".to_string()),
                data: Some(data(&credentials)),
                ..Secret::default()
            });
        }
        self.pending = pending;
        secrets
    }

    fn issue(&self, key: &ObjectKey, now: SystemTime) -> Option<Credentials> {
        let identity = GatewayIdentity::new(&key.namespace, &key.name);
        match self.authority.issue_proxy(&identity, now) {
            Ok(issued) => {
                tracing::info!(gateway = %key, "config stream: issued pool credentials");
                Some(issued)
            }
            Err(e) => {
                tracing::error!(gateway = %key, error = %e, "config stream: cannot issue pool credentials");
                None
            }
        }
    }

    fn fresh(&self, credentials: &Credentials, now: SystemTime) -> bool {
        credentials.ca_pem == self.authority.cert_pem()
            && !self.authority.needs_renewal(&credentials.cert_pem, now)
    }
}

/// Does the live Secret hold what we want there?
pub fn secret_up_to_date(live: &Secret, desired: &Secret) -> bool {
    live.data == desired.data && live.metadata.labels == desired.metadata.labels
}

fn credentials(secret: &Secret) -> Option<Credentials> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| {
        data.get(key)
            .map(|value| String::from_utf8_lossy(&value.0).into_owned())
    };
    Some(Credentials {
        ca_pem: text(CA_FILE)?,
        cert_pem: text(CERT_FILE)?,
        key_pem: text(KEY_FILE)?,
    })
}

fn data(credentials: &Credentials) -> BTreeMap<String, ByteString> {
    [
        (CA_FILE, &credentials.ca_pem),
        (CERT_FILE, &credentials.cert_pem),
        (KEY_FILE, &credentials.key_pem),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
    .collect()
}

#[cfg(test)]
#[path = "stream_credentials_tests.rs"]
mod tests;
