//! BackendTLSPolicy: TLS from the gateway to a Service (or one of its
//! ports, by `sectionName`), and each policy's status per Gateway that
//! routes to what it targets.
//!
//! Conflicts: policies on the same Service and sectionName — the oldest
//! wins (then namespace/name), the others are `Accepted=False Conflicted`.
//! A policy for a port wins over one for the whole Service (no conflict).

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::gateway_api::apis::standard::backendtlspolicies::{
    BackendTlsPolicyStatus, BackendTlsPolicyStatusAncestors,
    BackendTlsPolicyStatusAncestorsAncestorRef, BackendTlsPolicyValidationSubjectAltNamesType,
};
use coxswain_api::{BackendTlsPolicy, GATEWAY_GROUP, ObjectKey, Snapshot};
use coxswain_ir::{BackendTls, BackendTrust, CaBundle, SubjectAltName, UpstreamTls};

use crate::Options;
use crate::ca_bundle;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::policy::claims::{Claims, PolicyTarget};
use crate::route::ClusterSpec;

/// The well-known CA set `wellKnownCACertificates` may name.
const SYSTEM: &str = "System";

/// The API's limit on `status.ancestors` entries (all controllers').
pub const MAX_ANCESTORS: usize = 16;

/// What one policy resolved to.
#[derive(Clone, Debug)]
struct Resolved {
    tls: Result<BackendTls, Problem>,
    /// A reference problem that does not stop the policy (ResolvedRefs).
    ref_problem: Option<(Reason, String)>,
    /// A targetRef that names no core Service port: the policy is not
    /// Accepted (its valid targets still get TLS, the safe side).
    target_problem: Option<(Reason, String)>,
}

/// Why a policy cannot be applied: the Accepted reason and, when a
/// reference is at fault, the ResolvedRefs reason.
#[derive(Clone, Debug)]
struct Problem {
    accepted: (Reason, String),
    resolved: Option<(Reason, String)>,
}

/// Every BackendTLSPolicy, resolved, and which one applies to each target.
pub struct BackendTlsIndex<'a> {
    policies: BTreeMap<ObjectKey, (&'a BackendTlsPolicy, Resolved)>,
    /// Which policy each Service, or Service port, gets.
    claims: Claims,
}

impl<'a> BackendTlsIndex<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let claims = Claims::new(&snapshot.backend_tls_policies, |key, policy| {
            policy
                .spec
                .target_refs
                .iter()
                .filter(|t| is_service(&t.group, &t.kind))
                .map(|t| {
                    let service = ObjectKey::new(&key.namespace, &t.name);
                    match t.section_name.clone().filter(|s| !s.is_empty()) {
                        Some(port) => PolicyTarget::ServicePort { service, port },
                        None => PolicyTarget::Service(service),
                    }
                })
                .collect()
        });
        let policies = snapshot
            .backend_tls_policies
            .iter()
            .map(|(key, policy)| {
                let mut resolved = resolve(snapshot, key, policy);
                resolved.target_problem = target_problem(snapshot, key, policy);
                (key.clone(), (policy.as_ref(), resolved))
            })
            .collect();
        BackendTlsIndex { policies, claims }
    }

    /// The policy that applies to a Service port: one naming the port wins
    /// over one for the whole Service.
    fn policy_for(&self, spec: &ClusterSpec) -> Option<&ObjectKey> {
        let service = ObjectKey::new(&spec.namespace, &spec.service);
        let by_port = spec.port_name.clone().and_then(|port| {
            self.claims.holder(&PolicyTarget::ServicePort {
                service: service.clone(),
                port,
            })
        });
        by_port.or_else(|| self.claims.holder(&PolicyTarget::Service(service)))
    }

    /// TLS for a cluster, if a policy targets its Service port.
    pub fn cluster_tls(&self, spec: &ClusterSpec) -> Option<UpstreamTls> {
        let key = self.policy_for(spec)?;
        let (_, resolved) = self.policies.get(key)?;
        Some(match &resolved.tls {
            Ok(tls) => UpstreamTls::Verify(tls.clone()),
            Err(problem) => UpstreamTls::Invalid {
                reason: format!("BackendTLSPolicy {key}: {}", problem.accepted.1),
            },
        })
    }

    /// Each policy's status: one ancestor entry per Gateway of ours that
    /// routes to a Service the policy targets. `gateways_by_service` maps
    /// (namespace, service) to those Gateways.
    pub fn statuses(
        &self,
        gateways_by_service: &BTreeMap<(String, String), BTreeSet<ObjectKey>>,
        options: &Options,
    ) -> BTreeMap<ObjectKey, BackendTlsPolicyStatus> {
        let mut out = BTreeMap::new();
        for (key, (policy, resolved)) in &self.policies {
            let names = policy.spec.target_refs.iter().map(|t| t.name.as_str());
            let gateways = super::ancestor_gateways(&key.namespace, names, gateways_by_service);
            if gateways.is_empty() {
                continue;
            }
            let stamp = Stamp {
                generation: policy.metadata.generation,
                now: &options.now,
            };
            let conditions = self.conditions(key, resolved);
            let ancestors = gateways
                .into_iter()
                .map(|gw| BackendTlsPolicyStatusAncestors {
                    ancestor_ref: BackendTlsPolicyStatusAncestorsAncestorRef {
                        group: Some(GATEWAY_GROUP.to_string()),
                        kind: Some("Gateway".to_string()),
                        name: gw.name.to_string(),
                        namespace: Some(gw.namespace.to_string()),
                        port: None,
                        section_name: None,
                    },
                    conditions: stamp.all(conditions.clone()),
                    controller_name: options.controller_name.to_string(),
                })
                .take(MAX_ANCESTORS)
                .collect();
            out.insert(key.clone(), BackendTlsPolicyStatus { ancestors });
        }
        out
    }

    fn conditions(&self, key: &ObjectKey, resolved: &Resolved) -> Vec<Cond> {
        let resolved_ok = Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        );
        let resolved_cond = |problem: &Option<(Reason, String)>| match problem {
            Some((reason, msg)) => {
                Cond::new(ConditionType::ResolvedRefs, false, *reason, msg.clone())
            }
            None => resolved_ok.clone(),
        };
        if let Some((reason, message)) = &resolved.target_problem {
            return vec![
                Cond::new(ConditionType::Accepted, false, *reason, message.clone()),
                resolved_cond(&resolved.ref_problem),
            ];
        }
        if let Some(older) = self.claims.first_loss(key) {
            return vec![
                Cond::new(
                    ConditionType::Accepted,
                    false,
                    Reason::Conflicted,
                    format!("BackendTLSPolicy {older} targets the same backend and is older"),
                ),
                resolved_cond(&resolved.ref_problem),
            ];
        }
        match &resolved.tls {
            Ok(_) => vec![
                Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    "policy is accepted",
                ),
                resolved_cond(&resolved.ref_problem),
            ],
            Err(problem) => {
                let (reason, msg) = &problem.accepted;
                vec![
                    Cond::new(ConditionType::Accepted, false, *reason, msg.clone()),
                    resolved_cond(&problem.resolved.clone().or(resolved.ref_problem.clone())),
                ]
            }
        }
    }
}

fn invalid(message: impl Into<String>) -> Problem {
    Problem {
        accepted: (Reason::Invalid, message.into()),
        resolved: None,
    }
}

fn resolve(snapshot: &Snapshot, key: &ObjectKey, policy: &BackendTlsPolicy) -> Resolved {
    let v = &policy.spec.validation;
    let refs = v.ca_certificate_refs.as_deref().unwrap_or_default();
    let well_known = v
        .well_known_ca_certificates
        .as_deref()
        .filter(|w| !w.is_empty());
    let options = policy.spec.options.as_ref().is_some_and(|o| !o.is_empty());
    let sans = v
        .subject_alt_names
        .iter()
        .flatten()
        .map(|s| match s.r#type {
            BackendTlsPolicyValidationSubjectAltNamesType::Hostname => {
                s.hostname.clone().map(SubjectAltName::Hostname)
            }
            BackendTlsPolicyValidationSubjectAltNamesType::Uri => {
                s.uri.clone().map(SubjectAltName::Uri)
            }
        });
    let subject_alt_names: Option<Vec<SubjectAltName>> = sans.collect();
    let mut ref_problem = None;
    let trust = if options {
        Err(invalid("options are not supported"))
    } else if subject_alt_names.is_none() {
        Err(invalid("a subjectAltName lacks the value its type names"))
    } else {
        match (refs.is_empty(), well_known) {
            (false, Some(_)) => Err(invalid(
                "caCertificateRefs and wellKnownCACertificates are mutually exclusive",
            )),
            (true, None) => Err(invalid(
                "neither caCertificateRefs nor wellKnownCACertificates is set",
            )),
            (true, Some(SYSTEM)) => Ok(BackendTrust::System),
            (true, Some(other)) => Err(invalid(format!(
                "wellKnownCACertificates {other:?} is not supported; only {SYSTEM:?} is"
            ))),
            (false, None) => {
                let mut bundles = Vec::new();
                for r in refs {
                    match ca_bundle(snapshot, &key.namespace, &r.group, &r.kind, &r.name) {
                        Ok(b) => bundles.push(b),
                        Err(p) => {
                            ref_problem.get_or_insert(p);
                        }
                    }
                }
                if bundles.is_empty() {
                    Err(Problem {
                        accepted: (
                            Reason::NoValidCACertificate,
                            "no caCertificateRef holds a usable CA certificate".to_string(),
                        ),
                        resolved: ref_problem.clone(),
                    })
                } else {
                    Ok(BackendTrust::CaBundles(bundles))
                }
            }
        }
    };
    let tls = trust.map(|trust| BackendTls {
        sni: v.hostname.clone(),
        trust,
        subject_alt_names: subject_alt_names.unwrap_or_default(),
        policy: key.to_string(),
    });
    Resolved {
        tls,
        ref_problem,
        target_problem: None,
    }
}

fn is_service(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Service"
}

/// The first targetRef that is not a core Service, or names a port the
/// Service does not have.
fn target_problem(
    snapshot: &Snapshot,
    key: &ObjectKey,
    policy: &BackendTlsPolicy,
) -> Option<(Reason, String)> {
    policy.spec.target_refs.iter().find_map(|t| {
        if !is_service(&t.group, &t.kind) {
            return Some((
                Reason::Invalid,
                format!(
                    "targetRef {}/{} {:?}: only core Services can be targets",
                    t.group, t.kind, t.name
                ),
            ));
        }
        let section = t.section_name.as_deref().filter(|s| !s.is_empty())?;
        let service = snapshot
            .services
            .get(&ObjectKey::new(&key.namespace, &t.name))?;
        let has_port = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .is_some_and(|ports| ports.iter().any(|p| p.name.as_deref() == Some(section)));
        (!has_port).then(|| {
            (
                Reason::TargetNotFound,
                format!(
                    "Service {}/{} has no port named {section:?}",
                    key.namespace, t.name
                ),
            )
        })
    })
}

fn ca_bundle(
    snapshot: &Snapshot,
    namespace: &str,
    group: &str,
    kind: &str,
    name: &str,
) -> Result<CaBundle, (Reason, String)> {
    let Some(holder) = ca_bundle::holder_kind(group, kind) else {
        return Err((
            Reason::InvalidKind,
            format!(
                "caCertificateRef {group}/{kind} {name:?}: only core ConfigMaps and Secrets hold CA certificates"
            ),
        ));
    };
    ca_bundle::load(snapshot, holder, &ObjectKey::new(namespace, name))
        .map_err(|message| (Reason::InvalidCACertificateRef, message))
}
