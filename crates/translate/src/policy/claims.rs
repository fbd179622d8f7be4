//! The policy index: which policy of a kind holds each thing policies of
//! that kind can target (GEP-713). Policies claim their targets oldest
//! first (creationTimestamp, then namespace/name), so of two on the same
//! target the older holds it and the younger is `Conflicted` there.

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::{ApiResource, ObjectKey};

/// What a resolved targetRef names. Names are in the policy's namespace
/// (policies attach within their own namespace). ClientTrafficPolicy keeps
/// claims of its own: a target there claims all of its listeners or none.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PolicyTarget {
    Gateway(ObjectKey),
    Service(ObjectKey),
    /// One port (by sectionName, the port's name) of a Service.
    ServicePort {
        service: ObjectKey,
        port: String,
    },
}

/// The Service `name` in `namespace`, as a target.
pub fn service_target(namespace: &str, name: &str) -> PolicyTarget {
    PolicyTarget::Service(ObjectKey::new(namespace, name))
}

/// The holders of one policy kind's targets.
#[derive(Debug, Default)]
pub struct Claims {
    holders: BTreeMap<PolicyTarget, ObjectKey>,
    /// Each policy that lost a target: the first older policy it lost to.
    lost: BTreeMap<ObjectKey, ObjectKey>,
}

impl Claims {
    /// Claims for `policies`, each naming its targets with `targets` (the
    /// ones a policy of this kind cannot attach to are left out).
    pub fn new<T: ApiResource>(
        policies: &BTreeMap<ObjectKey, Arc<T>>,
        targets: impl Fn(&ObjectKey, &T) -> Vec<PolicyTarget>,
    ) -> Self {
        let mut claims = Claims::default();
        for (key, policy) in super::oldest_first(policies) {
            for target in targets(key, policy) {
                match claims.holders.get(&target) {
                    Some(older) if older != key => {
                        claims
                            .lost
                            .entry(key.clone())
                            .or_insert_with(|| older.clone());
                    }
                    Some(_) => {}
                    None => {
                        claims.holders.insert(target, key.clone());
                    }
                }
            }
        }
        claims
    }

    /// The policy that holds `target`.
    pub fn holder(&self, target: &PolicyTarget) -> Option<&ObjectKey> {
        self.holders.get(target)
    }

    /// The older policy holding `target` that `policy` also names.
    pub fn lost_to(&self, policy: &ObjectKey, target: &PolicyTarget) -> Option<&ObjectKey> {
        self.holder(target).filter(|holder| *holder != policy)
    }

    /// The first older policy `policy` lost any of its targets to.
    pub fn first_loss(&self, policy: &ObjectKey) -> Option<&ObjectKey> {
        self.lost.get(policy)
    }
}

#[cfg(test)]
mod tests {
    use coxswain_api::Service;
    use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use coxswain_api::k8s_openapi::jiff::Timestamp;

    use super::*;

    /// Stands in for a policy: a Service carries the creation time.
    fn policy(name: &str, created: i64) -> (ObjectKey, Arc<Service>) {
        let mut p = Service::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("ns".into());
        p.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created).unwrap()));
        (ObjectKey::new("ns", name), Arc::new(p))
    }

    fn service(name: &str) -> PolicyTarget {
        PolicyTarget::Service(ObjectKey::new("ns", name))
    }

    #[test]
    fn the_oldest_holds_a_target_and_the_others_lost_to_it() {
        let policies: BTreeMap<_, _> =
            [policy("young", 20), policy("old", 10), policy("other", 30)]
                .into_iter()
                .collect();
        let claims = Claims::new(&policies, |key, _| match &*key.name {
            "other" => vec![service("b")],
            // A target named twice by one policy is no conflict.
            _ => vec![service("a"), service("a")],
        });
        let (old, young) = (ObjectKey::new("ns", "old"), ObjectKey::new("ns", "young"));
        assert_eq!(claims.holder(&service("a")), Some(&old));
        assert_eq!(claims.lost_to(&young, &service("a")), Some(&old));
        assert_eq!(claims.lost_to(&old, &service("a")), None);
        assert_eq!(claims.first_loss(&young), Some(&old));
        assert_eq!(claims.first_loss(&old), None);
        assert_eq!(claims.first_loss(&ObjectKey::new("ns", "other")), None);
        assert_eq!(claims.holder(&service("c")), None);
    }

    #[test]
    fn a_tie_in_age_goes_to_the_first_name() {
        let policies: BTreeMap<_, _> = [policy("b", 10), policy("a", 10)].into_iter().collect();
        let claims = Claims::new(&policies, |_, _| vec![service("s")]);
        assert_eq!(
            claims.holder(&service("s")),
            Some(&ObjectKey::new("ns", "a"))
        );
    }
}
