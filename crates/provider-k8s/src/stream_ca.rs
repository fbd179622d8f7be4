//! The config stream's certificate authority, shared by every controller
//! replica through the Secret `coxswain-stream-ca` in the controller's
//! namespace: the first replica to start creates it, the others (and later
//! starts) load it, so proxies trust whichever replica leads.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use coxswain_stream::Authority;
use coxswain_stream::pki::{CERT_FILE, KEY_FILE, PkiError};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::{Api, Client};

use crate::labels::{MANAGED_BY, MANAGED_BY_LABEL};

pub const CA_SECRET: &str = "coxswain-stream-ca";
const RETRY: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StreamCaError {
    #[error("Secret {namespace}/{CA_SECRET}: {source}")]
    Api {
        namespace: String,
        source: Box<kube::Error>,
    },
    #[error("Secret {namespace}/{CA_SECRET} has no {key}")]
    Missing {
        namespace: String,
        key: &'static str,
    },
    #[error("Secret {namespace}/{CA_SECRET}: {source}")]
    Pki { namespace: String, source: PkiError },
}

/// Loads the authority, creating it when no replica has yet; retries until
/// the API server answers (pools cannot be fed without it).
pub async fn authority(client: &Client, namespace: &str) -> Authority {
    loop {
        match load_or_create(client, namespace).await {
            Ok(authority) => return authority,
            Err(e) => {
                tracing::error!(error = %e, "config stream: no certificate authority yet; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

async fn load_or_create(client: &Client, namespace: &str) -> Result<Authority, StreamCaError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let api_error = |source| StreamCaError::Api {
        namespace: namespace.to_string(),
        source: Box::new(source),
    };
    if let Some(secret) = api.get_opt(CA_SECRET).await.map_err(api_error)? {
        return from_secret(&secret, namespace);
    }
    let generated =
        Authority::generate(SystemTime::now()).map_err(|source| StreamCaError::Pki {
            namespace: namespace.to_string(),
            source,
        })?;
    match api
        .create(&PostParams::default(), &to_secret(&generated))
        .await
    {
        Ok(_) => {
            tracing::info!(namespace, "config stream: certificate authority created");
            Ok(generated)
        }
        // Another replica created it first: use theirs.
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            let secret = api.get(CA_SECRET).await.map_err(api_error)?;
            from_secret(&secret, namespace)
        }
        Err(e) => Err(api_error(e)),
    }
}

fn from_secret(secret: &Secret, namespace: &str) -> Result<Authority, StreamCaError> {
    let key = |key: &'static str| {
        secret
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .map(|value| String::from_utf8_lossy(&value.0).into_owned())
            .ok_or(StreamCaError::Missing {
                namespace: namespace.to_string(),
                key,
            })
    };
    Authority::load(&key(CERT_FILE)?, &key(KEY_FILE)?).map_err(|source| StreamCaError::Pki {
        namespace: namespace.to_string(),
        source,
    })
}

fn to_secret(authority: &Authority) -> Secret {
    let data = [
        (CERT_FILE, authority.cert_pem()),
        (KEY_FILE, authority.key_pem()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
    .collect::<BTreeMap<_, _>>();
    Secret {
        metadata: ObjectMeta {
            name: Some(CA_SECRET.to_string()),
            labels: Some([(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_string()),
        data: Some(data),
        ..Secret::default()
    }
}
