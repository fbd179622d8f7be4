//! CoxswainExternalAuth as a Gateway policy (`spec.targetRefs`): the
//! resource applies to every route rule on the Gateways it targets, as if
//! each rule listed it first among its filters. So it runs before the
//! rule's own checks (the pipeline keeps spec order within a phase), both
//! must allow, and no rule can leave it out.
//!
//! Two resources targeting one Gateway conflict: the older
//! (creationTimestamp, then namespace/name) wins, the other is
//! `Accepted=False Conflicted` in that Gateway's `status.ancestors` entry.

use coxswain_api::crds::{ExternalAuthTargetRef, PolicyAncestorStatus};
use coxswain_api::{CoxswainExternalAuth, GATEWAY_GROUP, ObjectKey, Snapshot};
use coxswain_ir::{ExtensionKey, ExtensionKind};

use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::policy::claims::{Claims, PolicyTarget};

/// Which resource each Gateway gets.
pub struct GatewayAuthIndex {
    claims: Claims,
}

fn is_gateway(target: &ExternalAuthTargetRef) -> bool {
    target.group == GATEWAY_GROUP && target.kind == "Gateway"
}

impl GatewayAuthIndex {
    pub fn new(snapshot: &Snapshot) -> Self {
        let claims = Claims::new(&snapshot.external_auths, |key, cr| {
            cr.spec
                .target_refs
                .iter()
                .filter(|t| is_gateway(t))
                .map(|t| PolicyTarget::Gateway(ObjectKey::new(&key.namespace, &t.name)))
                .collect()
        });
        GatewayAuthIndex { claims }
    }

    /// The resource every route on `gateway` is checked by.
    pub fn for_gateway(&self, gateway: &ObjectKey) -> Option<ExtensionKey> {
        let holder = self.claims.holder(&PolicyTarget::Gateway(gateway.clone()));
        holder.map(|key| ExtensionKey {
            kind: ExtensionKind::ExternalAuth,
            namespace: key.namespace.to_string(),
            name: key.name.to_string(),
        })
    }

    /// The resource's `status.ancestors`: one entry per targeted Gateway.
    /// `accepted` is the resource's own Accepted condition (an entry that
    /// applies says what the resource is).
    pub fn ancestors(
        &self,
        snapshot: &Snapshot,
        (key, cr): (&ObjectKey, &CoxswainExternalAuth),
        accepted: Option<&Cond>,
        (stamp, controller_name): (&Stamp<'_>, &str),
    ) -> Vec<PolicyAncestorStatus> {
        crate::policy::coxswain_ancestors(
            &cr.spec.target_refs,
            |t| (t.group.as_str(), t.kind.as_str(), t.name.as_str()),
            &key.namespace,
            (stamp, controller_name),
            |target| vec![self.condition(snapshot, key, target, accepted)],
        )
    }

    fn condition(
        &self,
        snapshot: &Snapshot,
        key: &ObjectKey,
        target: &ExternalAuthTargetRef,
        accepted: Option<&Cond>,
    ) -> Cond {
        let rejected =
            |reason, message: String| Cond::new(ConditionType::Accepted, false, reason, message);
        if !is_gateway(target) {
            return rejected(
                Reason::Invalid,
                format!(
                    "targetRef {}/{} {:?}: only Gateways ({GATEWAY_GROUP}) can be targets",
                    target.group, target.kind, target.name
                ),
            );
        }
        let gateway = ObjectKey::new(&key.namespace, &target.name);
        if !snapshot.gateways.contains_key(&gateway) {
            return rejected(
                Reason::TargetNotFound,
                format!("Gateway {gateway} does not exist"),
            );
        }
        match self
            .claims
            .lost_to(key, &PolicyTarget::Gateway(gateway.clone()))
        {
            Some(winner) => rejected(
                Reason::Conflicted,
                format!(
                    "Gateway {gateway} already has CoxswainExternalAuth {winner}, which is older"
                ),
            ),
            _ => match accepted {
                Some(c) if !c.status => c.clone(),
                _ => Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    format!("every route on Gateway {gateway} is checked, before its own filters"),
                ),
            },
        }
    }
}
