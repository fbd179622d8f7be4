//! HTTPS listeners: resolves `tls.certificateRefs` to PEM material from
//! core Secrets (type kubernetes.io/tls), honouring ReferenceGrants.

use coxswain_api::gw::gateways::{
    GatewayListeners, GatewayListenersTlsCertificateRefs, GatewayListenersTlsMode,
};
use coxswain_api::{GATEWAY_GROUP, ObjectKey, Secret, Snapshot};
use coxswain_ir::{PrivateKeyPem, TlsCertificate};
use rustls::InconsistentKeys;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::conditions::Reason;
use crate::reference_grant::{From, To, is_permitted};

/// The certificates of an HTTPS listener, or why they are unusable.
pub type TlsOutcome = Result<Vec<TlsCertificate>, (Reason, String)>;

const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// Is `tls.mode` something we can serve on an HTTPS listener? (Passthrough
/// belongs to TLS listeners, which we do not support.)
pub fn mode_error(spec: &GatewayListeners) -> Option<(Reason, String)> {
    let mode = spec.tls.as_ref().and_then(|t| t.mode.as_ref());
    matches!(mode, Some(GatewayListenersTlsMode::Passthrough)).then(|| {
        (
            Reason::UnsupportedValue,
            "tls.mode Passthrough is not supported on HTTPS listeners".to_string(),
        )
    })
}

/// The object whose listener (or backend setting) names a Secret: its kind
/// and namespace decide the default namespace and which ReferenceGrant
/// applies.
#[derive(Clone, Copy, Debug)]
pub struct Referrer<'a> {
    /// `Gateway` or `ListenerSet`.
    pub kind: &'static str,
    pub namespace: &'a str,
}

/// Resolves every certificateRef of a listener `owner` holds.
pub fn resolve(snapshot: &Snapshot, owner: Referrer<'_>, spec: &GatewayListeners) -> TlsOutcome {
    let refs = spec
        .tls
        .as_ref()
        .and_then(|t| t.certificate_refs.as_deref())
        .unwrap_or_default();
    if refs.is_empty() {
        return Err((
            Reason::InvalidCertificateRef,
            "HTTPS listener has no tls.certificateRefs".to_string(),
        ));
    }
    refs.iter()
        .map(|r| resolve_one(snapshot, owner, r))
        .collect()
}

fn resolve_one(
    snapshot: &Snapshot,
    owner: Referrer<'_>,
    r: &GatewayListenersTlsCertificateRefs,
) -> Result<TlsCertificate, (Reason, String)> {
    let reference = SecretRef {
        group: r.group.as_deref(),
        kind: r.kind.as_deref(),
        name: &r.name,
        namespace: r.namespace.as_deref(),
    };
    secret_certificate(snapshot, owner, &reference, Reason::InvalidCertificateRef)
}

/// A reference from a Gateway to a Secret holding a certificate and key.
pub struct SecretRef<'a> {
    pub group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
}

/// The certificate and key of a `kubernetes.io/tls` Secret a Gateway in
/// `owner` refers to; `bad` is the reason for an unusable one.
pub fn secret_certificate(
    snapshot: &Snapshot,
    owner: Referrer<'_>,
    r: &SecretRef<'_>,
    bad: Reason,
) -> Result<TlsCertificate, (Reason, String)> {
    let group = r.group.unwrap_or("");
    let kind = r.kind.unwrap_or("Secret");
    if !group.is_empty() || kind != "Secret" {
        return Err((
            bad,
            format!(
                "certificateRef {group}/{kind} {:?} is not a core Secret",
                r.name
            ),
        ));
    }
    let namespace = r.namespace.unwrap_or(owner.namespace);
    let from = From {
        group: GATEWAY_GROUP,
        kind: owner.kind,
        namespace: owner.namespace,
    };
    let to = To {
        group: "",
        kind: "Secret",
        namespace,
        name: r.name,
    };
    if !is_permitted(&snapshot.reference_grants, from, to) {
        return Err((
            Reason::RefNotPermitted,
            format!(
                "no ReferenceGrant in {namespace} allows this {} to use Secret {:?}",
                owner.kind, r.name
            ),
        ));
    }
    let key = ObjectKey::new(namespace, r.name);
    let Some(secret) = snapshot.secrets.get(&key) else {
        return Err((bad, format!("Secret {key} not found")));
    };
    certificate_from(secret, &key).map_err(|why| (bad, format!("Secret {key}: {why}")))
}

/// A field of the Secret, from `data` or (files written by hand) `stringData`.
fn field(secret: &Secret, name: &str) -> Option<Vec<u8>> {
    let data = secret.data.as_ref().and_then(|d| d.get(name));
    let string_data = || {
        secret
            .string_data
            .as_ref()
            .and_then(|d| d.get(name))
            .map(|s| s.as_bytes().to_vec())
    };
    data.map(|b| b.0.clone()).or_else(string_data)
}

/// Would the proxy serve this pair? The key must be of a type it can sign
/// with, and it must belong to the leaf certificate: a mismatch found only
/// at handshake time would leave a Programmed listener that fails every
/// connection.
fn usable_pair(chain: Vec<CertificateDer<'static>>, key: &PrivateKeyDer<'_>) -> Result<(), String> {
    let signer = rustls::crypto::ring::sign::any_supported_type(key)
        .map_err(|e| format!("tls.key is not a supported private key: {e}"))?;
    match CertifiedKey::new(chain, signer).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(()),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            Err("tls.key does not belong to the certificate in tls.crt".to_string())
        }
        Err(e) => Err(format!("tls.crt: {e}")),
    }
}

pub(crate) fn certificate_from(secret: &Secret, key: &ObjectKey) -> Result<TlsCertificate, String> {
    let kind = secret.type_.as_deref().unwrap_or("Opaque");
    if kind != TLS_SECRET_TYPE {
        return Err(format!("type is {kind:?}, want {TLS_SECRET_TYPE:?}"));
    }
    let cert = field(secret, "tls.crt").ok_or("tls.crt is missing")?;
    let private = field(secret, "tls.key").ok_or("tls.key is missing")?;
    let chain: Vec<_> = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls.crt is not valid PEM: {e}"))?;
    if chain.is_empty() {
        return Err("tls.crt holds no PEM certificate".to_string());
    }
    let private_key = PrivateKeyDer::from_pem_slice(&private)
        .map_err(|e| format!("tls.key holds no usable PEM private key: {e}"))?;
    usable_pair(chain, &private_key)?;
    let cert_chain_pem = String::from_utf8(cert).map_err(|_| "tls.crt is not UTF-8 text")?;
    let key_pem = String::from_utf8(private).map_err(|_| "tls.key is not UTF-8 text")?;
    Ok(TlsCertificate {
        source: key.to_string(),
        cert_chain_pem,
        key_pem: PrivateKeyPem(key_pem.into()),
    })
}
