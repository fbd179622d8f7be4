//! `Gateway.spec.tls.frontend`: client-certificate validation on HTTPS
//! listeners. `default` covers every HTTPS listener whose port has no
//! `perPort` entry; a `perPort` entry covers the HTTPS listeners on its port.
//! CA certificates come from ConfigMaps (core) or Secrets (an extension),
//! key `ca.crt`, across namespaces only with a ReferenceGrant.

use coxswain_api::gw::gateways::{
    GatewayTlsFrontendDefaultValidationMode, GatewayTlsFrontendPerPortTlsValidationMode,
};
use coxswain_api::{GATEWAY_GROUP, Gateway, ObjectKey, Snapshot};
use coxswain_ir::{CaBundle, ClientValidation, ClientValidationMode};

use crate::ca_bundle;
use crate::conditions::Reason;
use crate::gateway::listeners::ListenerModel;
use crate::reference_grant::{From, To, is_permitted};

/// What the validation settings of one listener resolved to.
#[derive(Clone, Debug, Default)]
pub struct FrontendOutcome {
    /// The usable CAs, if any; `None` also when no validation applies.
    pub validation: Option<ClientValidation>,
    /// The first unusable reference (ResolvedRefs=False).
    pub problem: Option<(Reason, String)>,
    /// Validation applies but no CA is usable (Accepted=False
    /// NoValidCACertificate: the listener must not serve).
    pub no_valid_ca: bool,
}

/// One CA reference, whatever field it came from.
struct CaRef<'a> {
    group: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
}

/// The validation settings that cover a listener on `port`, if any:
/// (CA references, mode).
fn settings(gw: &Gateway, port: u16) -> Option<(Vec<CaRef<'_>>, ClientValidationMode)> {
    let frontend = gw.spec.tls.as_ref()?.frontend.as_ref()?;
    let per_port = frontend
        .per_port
        .iter()
        .flatten()
        .find(|p| p.port == i32::from(port));
    if let Some(p) = per_port {
        let v = p.tls.validation.as_ref()?;
        let mode = match v.mode {
            Some(GatewayTlsFrontendPerPortTlsValidationMode::AllowInsecureFallback) => {
                ClientValidationMode::AllowInsecureFallback
            }
            _ => ClientValidationMode::AllowValidOnly,
        };
        let refs = v.ca_certificate_refs.iter().map(|r| CaRef {
            group: &r.group,
            kind: &r.kind,
            name: &r.name,
            namespace: r.namespace.as_deref(),
        });
        return Some((refs.collect(), mode));
    }
    let v = frontend.default.validation.as_ref()?;
    let mode = match v.mode {
        Some(GatewayTlsFrontendDefaultValidationMode::AllowInsecureFallback) => {
            ClientValidationMode::AllowInsecureFallback
        }
        _ => ClientValidationMode::AllowValidOnly,
    };
    let refs = v.ca_certificate_refs.iter().map(|r| CaRef {
        group: &r.group,
        kind: &r.kind,
        name: &r.name,
        namespace: r.namespace.as_deref(),
    });
    Some((refs.collect(), mode))
}

/// Does any validation setting of the Gateway let invalid clients in?
pub fn insecure_fallback(gw: &Gateway) -> bool {
    let Some(frontend) = gw.spec.tls.as_ref().and_then(|t| t.frontend.as_ref()) else {
        return false;
    };
    let default = frontend.default.validation.as_ref().is_some_and(|v| {
        v.mode == Some(GatewayTlsFrontendDefaultValidationMode::AllowInsecureFallback)
    });
    let per_port = frontend.per_port.iter().flatten().any(|p| {
        p.tls.validation.as_ref().is_some_and(|v| {
            v.mode == Some(GatewayTlsFrontendPerPortTlsValidationMode::AllowInsecureFallback)
        })
    });
    default || per_port
}

/// Resolves client validation for every HTTPS listener of `gw`.
pub fn resolve_all(
    snapshot: &Snapshot,
    gw: &Gateway,
    gateway_ns: &str,
    listeners: &mut [ListenerModel],
) {
    for l in listeners.iter_mut().filter(|l| l.is_https()) {
        let Some((refs, mode)) = settings(gw, l.port) else {
            continue;
        };
        let mut outcome = FrontendOutcome::default();
        let mut bundles = Vec::new();
        for r in &refs {
            match resolve_one(snapshot, gateway_ns, r) {
                Ok(bundle) => bundles.push(bundle),
                Err(problem) => {
                    outcome.problem.get_or_insert(problem);
                }
            }
        }
        if bundles.is_empty() {
            outcome.no_valid_ca = true;
        } else {
            outcome.validation = Some(ClientValidation {
                ca_bundles: bundles,
                mode,
            });
        }
        l.frontend = Some(outcome);
    }
}

fn invalid(message: String) -> (Reason, String) {
    (Reason::InvalidCACertificateRef, message)
}

fn resolve_one(
    snapshot: &Snapshot,
    gateway_ns: &str,
    r: &CaRef<'_>,
) -> Result<CaBundle, (Reason, String)> {
    let Some(kind) = ca_bundle::holder_kind(r.group, r.kind) else {
        return Err((
            Reason::InvalidCACertificateKind,
            format!(
                "caCertificateRef {}/{} {:?}: only core ConfigMaps and Secrets hold CA certificates",
                r.group, r.kind, r.name
            ),
        ));
    };
    let namespace = r.namespace.unwrap_or(gateway_ns);
    let from = From {
        group: GATEWAY_GROUP,
        kind: "Gateway",
        namespace: gateway_ns,
    };
    let to = To {
        group: "",
        kind,
        namespace,
        name: r.name,
    };
    if !is_permitted(&snapshot.reference_grants, from, to) {
        return Err((
            Reason::RefNotPermitted,
            format!(
                "no ReferenceGrant in {namespace} allows this Gateway to use {kind} {:?}",
                r.name
            ),
        ));
    }
    let key = ObjectKey::new(namespace, r.name);
    ca_bundle::load(snapshot, kind, &key).map_err(invalid)
}
