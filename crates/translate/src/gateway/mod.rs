//! Gateways of our classes: validated listeners and addresses, then status.

mod addresses;
mod conflicts;
mod frontend_tls;
mod listener_sets;
mod listeners;
pub(crate) mod tls;

use listener_sets::AllowedListeners;
pub use listener_sets::{ListenerSetModel, parent_of, status as listener_set_status};
pub use listeners::{ListenerModel, ListenerOwner, Protocol, TlsMode};

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use coxswain_api::gw::gateways::{
    GatewayStatus, GatewayStatusAddresses, GatewayStatusListeners,
    GatewayStatusListenersSupportedKinds,
};
use coxswain_api::{GATEWAY_GROUP, Gateway, ObjectKey, Snapshot};
use coxswain_ir::{RouteKind, TlsCertificate};

use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::{AssignedAddresses, Options};

/// A Gateway we own, after validation.
#[derive(Clone, Debug)]
pub struct GatewayModel {
    pub generation: Option<i64>,
    /// Bind addresses, or why `spec.addresses` is unusable.
    pub addresses: Result<Vec<IpAddr>, String>,
    /// Set when the provider could not give this Gateway a usable address.
    pub unusable: Option<String>,
    /// Set when `spec.infrastructure.parametersRef` cannot be honoured.
    pub invalid_parameters: Option<String>,
    /// Set when the Gateway's class is ours but not accepted.
    pub class_rejected: Option<String>,
    /// A field Coxswain does not implement (the Gateway is not accepted).
    pub unsupported: Option<String>,
    /// Some client validation lets invalid clients in (AllowInsecureFallback).
    pub insecure_fallback: bool,
    /// `spec.tls.backend.clientCertificateRef`: the certificate presented
    /// to TLS backends, or why it is unusable (Gateway ResolvedRefs=False).
    pub backend_client: Option<Result<TlsCertificate, (Reason, String)>>,
    /// Its own listeners, then those of admitted ListenerSets.
    pub listeners: Vec<ListenerModel>,
    pub allowed_listeners: AllowedListeners,
    /// Every ListenerSet naming this Gateway, admitted or not, in merge
    /// order.
    pub listener_sets: Vec<ListenerSetModel>,
}

impl GatewayModel {
    /// May routes of `kind` attach to this listener?
    pub fn listener_routable(&self, listener: &ListenerModel, kind: RouteKind) -> bool {
        self.usable() && listener.is_routable(kind)
    }

    /// Is this listener in the data plane (accepted, certificates resolved)?
    pub fn listener_served(&self, listener: &ListenerModel) -> bool {
        self.usable() && listener.is_served()
    }

    pub fn usable(&self) -> bool {
        self.addresses.is_ok()
            && self.unusable.is_none()
            && self.invalid_parameters.is_none()
            && self.class_rejected.is_none()
            && self.unsupported.is_none()
    }
}

/// Default Gateways (`spec.defaultScope`) are not implemented: such a
/// Gateway is not accepted rather than silently not claiming routes.
fn unsupported_fields(gw: &Gateway) -> Option<String> {
    gw.spec.default_scope.as_ref().map(|scope| {
        format!(
            "defaultScope {scope:?} is not supported: Coxswain Gateways are never default Gateways"
        )
    })
}

/// The Gateway's backend client certificate, when it names one.
fn backend_client_certificate(
    snapshot: &Snapshot,
    gw: &Gateway,
    namespace: &str,
) -> Option<Result<TlsCertificate, (Reason, String)>> {
    let r = gw
        .spec
        .tls
        .as_ref()?
        .backend
        .as_ref()?
        .client_certificate_ref
        .as_ref()?;
    let reference = tls::SecretRef {
        group: r.group.as_deref(),
        kind: r.kind.as_deref(),
        name: &r.name,
        namespace: r.namespace.as_deref(),
    };
    let owner = tls::Referrer {
        kind: "Gateway",
        namespace,
    };
    Some(tls::secret_certificate(
        snapshot,
        owner,
        &reference,
        Reason::InvalidClientCertificateRef,
    ))
}

impl GatewayModel {
    /// The certificate to present to TLS backends, if any and usable.
    pub fn backend_client_certificate(&self) -> Option<TlsCertificate> {
        self.backend_client
            .as_ref()
            .and_then(|c| c.as_ref().ok())
            .cloned()
    }
}

/// Every Gateway whose class is ours, keyed by namespace/name.
pub fn build_gateways(
    snapshot: &Snapshot,
    our_classes: &BTreeSet<String>,
    options: &Options,
    assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
) -> BTreeMap<ObjectKey, GatewayModel> {
    snapshot
        .gateways
        .iter()
        .filter(|(_, gw)| our_classes.contains(&gw.spec.gateway_class_name))
        .map(|(key, gw)| {
            let mut listeners: Vec<ListenerModel> = gw
                .spec
                .listeners
                .iter()
                .map(|l| {
                    listeners::build_listener(snapshot, &ListenerOwner::Gateway, &key.namespace, l)
                })
                .collect();
            conflicts::mark_conflicts(&mut listeners);
            let mut addresses =
                addresses::bind_addresses(gw.spec.addresses.as_deref(), options.default_address);
            let mut unusable = None;
            // A provider-assigned address replaces the requested/default one.
            if let (Ok(bind), Some(assignment)) = (&mut addresses, assigned.get(key)) {
                match assignment {
                    Ok(ips) => *bind = ips.clone(),
                    Err(why) => unusable = Some(why.clone()),
                }
            }
            let class_rejected = snapshot
                .gateway_classes
                .get(&ObjectKey::cluster(gw.spec.gateway_class_name.as_str()))
                .and_then(|c| crate::gateway_class::class_problem(snapshot, c, options))
                .map(|why| {
                    format!(
                        "GatewayClass {} is not accepted: {why}",
                        gw.spec.gateway_class_name
                    )
                });
            let invalid_parameters =
                crate::parameters::gateway_parameters(snapshot, key, gw, options).err();
            let mut model = GatewayModel {
                generation: gw.metadata.generation,
                addresses,
                unusable,
                invalid_parameters,
                unsupported: unsupported_fields(gw),
                class_rejected,
                insecure_fallback: frontend_tls::insecure_fallback(gw),
                backend_client: backend_client_certificate(snapshot, gw, &key.namespace),
                listeners,
                allowed_listeners: AllowedListeners::of(gw.spec.allowed_listeners.as_ref()),
                listener_sets: Vec::new(),
            };
            listener_sets::merge(snapshot, key, &mut model);
            // Frontend validation is the Gateway's, per port: it covers
            // ListenerSet listeners on that port too.
            frontend_tls::resolve_all(snapshot, gw, &key.namespace, &mut model.listeners);
            for l in &mut model.listeners {
                if l.accepted.is_ok() && l.frontend.as_ref().is_some_and(|f| f.no_valid_ca) {
                    l.accepted = Err((
                        Reason::NoValidCACertificate,
                        "client certificate validation has no usable CA certificate; the listener does not serve".to_string(),
                    ));
                }
            }
            (key.clone(), model)
        })
        .collect()
}

pub fn gateway_status(model: &GatewayModel, options: &Options) -> GatewayStatus {
    let stamp = Stamp {
        generation: model.generation,
        now: &options.now,
    };
    // The Gateway's status covers its own listeners; ListenerSets report
    // theirs.
    let own: Vec<&ListenerModel> = model
        .listeners
        .iter()
        .filter(|l| l.owner == ListenerOwner::Gateway)
        .collect();
    let total = own.len();
    let valid = own.iter().filter(|l| l.accepted.is_ok()).count();
    let accepted = match &model.addresses {
        _ if model.class_rejected.is_some() => Cond::new(
            ConditionType::Accepted,
            false,
            Reason::Invalid,
            model.class_rejected.clone().unwrap_or_default(),
        ),
        _ if model.invalid_parameters.is_some() => Cond::new(
            ConditionType::Accepted,
            false,
            Reason::InvalidParameters,
            model.invalid_parameters.clone().unwrap_or_default(),
        ),
        _ if model.unsupported.is_some() => Cond::new(
            ConditionType::Accepted,
            false,
            Reason::Invalid,
            model.unsupported.clone().unwrap_or_default(),
        ),
        Err(e) => Cond::new(
            ConditionType::Accepted,
            false,
            Reason::UnsupportedAddress,
            e.clone(),
        ),
        Ok(_) if valid < total => Cond::new(
            ConditionType::Accepted,
            valid > 0,
            Reason::ListenersNotValid,
            format!("{} of {total} listeners are not valid", total - valid),
        ),
        Ok(_) => Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            "Gateway is accepted",
        ),
    };
    let any_served = own.iter().any(|l| model.listener_served(l));
    let any_bound = model.listeners.iter().any(|l| model.listener_served(l));
    let programmed = match (&model.addresses, &model.unusable) {
        _ if model.invalid_parameters.is_some()
            || model.class_rejected.is_some()
            || model.unsupported.is_some() =>
        {
            Cond::new(
                ConditionType::Programmed,
                false,
                Reason::Invalid,
                "Gateway is not accepted",
            )
        }
        (Ok(_), Some(why)) => Cond::new(
            ConditionType::Programmed,
            false,
            Reason::AddressNotUsable,
            why.clone(),
        ),
        (Err(_), _) => Cond::new(
            ConditionType::Programmed,
            false,
            Reason::Invalid,
            "Gateway addresses are not usable",
        ),
        (Ok(_), None) if any_served || total == 0 => Cond::new(
            ConditionType::Programmed,
            true,
            Reason::Programmed,
            "Gateway is programmed",
        ),
        (Ok(_), None) => Cond::new(
            ConditionType::Programmed,
            false,
            Reason::Invalid,
            "no listener of this Gateway can be served",
        ),
    };
    let listeners = own
        .iter()
        .map(|l| listener_status(model, l, &stamp))
        .collect();
    let addresses = match &model.addresses {
        Ok(ips) if any_bound => Some(
            ips.iter()
                .map(|ip| GatewayStatusAddresses {
                    r#type: Some("IPAddress".to_string()),
                    value: ip.to_string(),
                })
                .collect(),
        ),
        _ => None,
    };
    let mut conditions = vec![accepted, programmed];
    match &model.backend_client {
        None => {}
        Some(Ok(_)) => conditions.push(Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        )),
        Some(Err((reason, message))) => conditions.push(Cond::new(
            ConditionType::ResolvedRefs,
            false,
            *reason,
            message.clone(),
        )),
    }
    if model.insecure_fallback {
        conditions.push(Cond::new(
            ConditionType::InsecureFrontendValidationMode,
            true,
            Reason::ConfigurationChanged,
            "client certificate validation lets clients without a valid certificate in (AllowInsecureFallback)",
        ));
    }
    let attached = model
        .listener_sets
        .iter()
        .filter(|set| listener_sets::is_accepted(model, set))
        .count();
    let counts_sets = !model.listener_sets.is_empty()
        || !matches!(model.allowed_listeners, AllowedListeners::None);
    GatewayStatus {
        addresses,
        attached_listener_sets: counts_sets.then(|| i32::try_from(attached).unwrap_or(i32::MAX)),
        conditions: Some(stamp.all(conditions)),
        listeners: Some(listeners),
    }
}

pub fn listener_status(
    model: &GatewayModel,
    l: &ListenerModel,
    stamp: &Stamp<'_>,
) -> GatewayStatusListeners {
    let accepted = match &l.accepted {
        Ok(()) => Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            "listener is accepted",
        ),
        Err((reason, msg)) => Cond::new(ConditionType::Accepted, false, *reason, msg.clone()),
    };
    let ca_problem = l.frontend.as_ref().and_then(|f| f.problem.as_ref());
    let resolved = match (&l.tls, &l.invalid_kinds) {
        (Some(Err((reason, msg))), _) => {
            Cond::new(ConditionType::ResolvedRefs, false, *reason, msg.clone())
        }
        _ if ca_problem.is_some() => {
            let (reason, msg) = ca_problem
                .cloned()
                .unwrap_or((Reason::InvalidCACertificateRef, String::new()));
            Cond::new(ConditionType::ResolvedRefs, false, reason, msg)
        }
        (_, None) => Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        ),
        (_, Some(msg)) => Cond::new(
            ConditionType::ResolvedRefs,
            false,
            Reason::InvalidRouteKinds,
            msg.clone(),
        ),
    };
    let conflicted = match &l.conflict {
        None => Cond::new(
            ConditionType::Conflicted,
            false,
            Reason::NoConflicts,
            "no conflicts",
        ),
        Some((reason, msg)) => Cond::new(ConditionType::Conflicted, true, *reason, msg.clone()),
    };
    let programmed = if model.listener_served(l) {
        Cond::new(
            ConditionType::Programmed,
            true,
            Reason::Programmed,
            "listener is programmed",
        )
    } else if let Some((reason, msg)) = &l.conflict {
        // A conflicted listener's port is not configured for it: the
        // conflict is why it is not programmed.
        Cond::new(ConditionType::Programmed, false, *reason, msg.clone())
    } else {
        Cond::new(
            ConditionType::Programmed,
            false,
            Reason::Invalid,
            "listener is not served",
        )
    };
    // A listener that is not accepted supports no kind.
    let supported_kinds = l
        .supported_kinds
        .iter()
        .filter(|_| l.accepted.is_ok())
        .map(|k| GatewayStatusListenersSupportedKinds {
            group: Some(GATEWAY_GROUP.to_string()),
            kind: k.as_str().to_string(),
        })
        .collect();
    GatewayStatusListeners {
        attached_routes: l.attached_routes,
        conditions: stamp.all(vec![accepted, programmed, resolved, conflicted]),
        name: l.name.clone(),
        supported_kinds: Some(supported_kinds),
    }
}

#[cfg(test)]
mod assigned_tests;
