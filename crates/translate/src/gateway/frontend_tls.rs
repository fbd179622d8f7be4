//! `Gateway.spec.tls.frontend`: client-certificate validation on HTTPS
//! listeners. `default` covers every HTTPS listener; a `perPort` entry
//! replaces it for the listeners on that port.

use coxswain_api::Gateway;

use crate::conditions::Reason;
use crate::gateway::listeners::ListenerModel;

/// Does client-certificate validation apply to this HTTPS listener?
fn validation_applies(gw: &Gateway, listener: &ListenerModel) -> bool {
    let Some(frontend) = gw.spec.tls.as_ref().and_then(|t| t.frontend.as_ref()) else {
        return false;
    };
    let per_port = frontend
        .per_port
        .iter()
        .flatten()
        .find(|p| p.port == i32::from(listener.port));
    match per_port {
        Some(p) => p.tls.validation.is_some(),
        None => frontend.default.validation.is_some(),
    }
}

/// Client certificates are not verified yet, so a listener asked to verify
/// them must not serve: it would let every client in while looking secure.
pub fn refuse_unenforced(gw: &Gateway, listeners: &mut [ListenerModel]) {
    for l in listeners.iter_mut().filter(|l| l.is_https()) {
        if l.accepted.is_ok() && validation_applies(gw, l) {
            l.accepted = Err((
                Reason::UnsupportedValue,
                "spec.tls.frontend client certificate validation is not supported yet; \
                 the listener does not serve rather than accept unverified clients"
                    .to_string(),
            ));
        }
    }
}
