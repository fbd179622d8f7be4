//! ClientTrafficPolicy: PROXY protocol and access-log settings on the
//! Gateway listeners it targets.
//!
//! - `accessLog` applies per listener; an invalid stanza (an unknown field
//!   name, a ratio outside 0..1) refuses the whole policy (`Invalid`).
//! - It attaches to Gateways in its own namespace, or one listener of one
//!   (`sectionName`); a whole-Gateway target covers the Gateway's own
//!   listeners, not those of ListenerSets.
//! - PROXY protocol is a property of a socket, which listeners of several
//!   Gateways (and ListenerSets) may share. It is enabled on a socket only
//!   when every listener there is covered and all agree on the setting;
//!   otherwise it is enabled nowhere on that socket and the policies that
//!   asked get `Accepted=False`: enabling it for an untargeted listener
//!   would let that listener's clients claim any address.
//! - UDP listeners cannot carry it (`Accepted=False Invalid`).
//! - Conflicts: the oldest policy on a listener wins (then by name); a
//!   younger one gets `Accepted=False Conflicted` for that Gateway.
//! - Status: one ancestor entry per targeted Gateway.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use coxswain_api::{
    ClientTrafficPolicy, ObjectKey, Snapshot,
    crds::{
        ClientTrafficPolicyStatus, ClientTrafficTargetRef, PolicyAncestorRef, PolicyAncestorStatus,
    },
};
use coxswain_ir::{AccessLogPolicy, ProxyProtocol, Transport};

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::gateway::{GatewayModel, ListenerOwner, Protocol};
use crate::policy::backend_tls::MAX_ANCESTORS;
use crate::policy::client_access_log::{access_log, describe};

const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// A Gateway's own listener: (Gateway, listener name).
type ListenerId = (ObjectKey, String);
/// A bound socket, as the IR keys it.
type SocketId = (Transport, IpAddr, u16);
/// Why a policy's target (or part of it) is not applied.
type Refusal = (Reason, String);

/// Which sockets get PROXY protocol, and every policy's status.
pub struct ClientTrafficIndex {
    sockets: BTreeMap<SocketId, ProxyProtocol>,
    /// Access-log settings by Gateway listener.
    access_logs: BTreeMap<ListenerId, AccessLogPolicy>,
    statuses: BTreeMap<ObjectKey, ClientTrafficPolicyStatus>,
}

/// The listener a policy claimed, and what it asked for.
struct Claim {
    policy: ObjectKey,
    /// Position in age order: lower is older.
    age: usize,
    setting: Option<ProxyProtocol>,
    access_log: Option<AccessLogPolicy>,
}

/// A served listener on a socket, for coverage checks and messages.
struct Member {
    id: Option<ListenerId>,
    label: String,
}

impl ClientTrafficIndex {
    pub fn new(
        snapshot: &Snapshot,
        gateways: &BTreeMap<ObjectKey, GatewayModel>,
        options: &Options,
    ) -> Self {
        let by_age = super::oldest_first(&snapshot.client_traffic_policies);
        let mut claims: BTreeMap<ListenerId, Claim> = BTreeMap::new();
        // (policy, target index) -> the listeners it claimed, or why not.
        let mut outcomes: BTreeMap<(ObjectKey, usize), Result<Vec<ListenerId>, Refusal>> =
            BTreeMap::new();
        for (age, (key, policy)) in by_age.iter().enumerate() {
            let setting = setting(policy);
            let log = access_log(policy);
            for (i, target) in policy.spec.target_refs.iter().enumerate() {
                let checked = match &log {
                    Ok(_) => Ok(()),
                    Err(why) => Err((Reason::Invalid, why.clone())),
                };
                let outcome = checked.and_then(|()| resolve(key, target, gateways, setting.is_some())).and_then(|ids| {
                    // A policy naming a listener twice does not conflict with itself.
                    let older = ids
                        .iter()
                        .find_map(|id| claims.get(id).filter(|c| c.policy != **key).map(|c| (id, c)));
                    match older {
                        Some((id, older)) => Err((
                            Reason::Conflicted,
                            format!(
                                "ClientTrafficPolicy {} targets listener {} of Gateway {} too and is older",
                                older.policy, id.1, id.0
                            ),
                        )),
                        None => Ok(ids),
                    }
                });
                if let Ok(ids) = &outcome {
                    for id in ids {
                        claims.entry(id.clone()).or_insert(Claim {
                            policy: (*key).clone(),
                            age,
                            setting,
                            access_log: log.clone().ok().flatten(),
                        });
                    }
                }
                outcomes.insert(((*key).clone(), i), outcome);
            }
        }
        let (sockets, problems) = decide_sockets(gateways, &claims);
        let access_logs = claims
            .iter()
            .filter_map(|(id, c)| Some((id.clone(), c.access_log.clone()?)))
            .collect();
        let statuses = by_age
            .iter()
            .map(|(key, policy)| {
                let status = status(key, policy, &outcomes, &problems, options);
                ((*key).clone(), status)
            })
            .collect();
        ClientTrafficIndex {
            sockets,
            access_logs,
            statuses,
        }
    }

    /// The access-log settings of `listener` of Gateway `gateway`.
    pub fn access_log(&self, gateway: &ObjectKey, listener: &str) -> Option<AccessLogPolicy> {
        self.access_logs
            .get(&(gateway.clone(), listener.to_string()))
            .cloned()
    }

    /// The PROXY protocol setting of one IR socket.
    pub fn proxy_protocol(
        &self,
        transport: Transport,
        address: IpAddr,
        port: u16,
    ) -> Option<ProxyProtocol> {
        self.sockets.get(&(transport, address, port)).copied()
    }

    pub fn statuses(self) -> BTreeMap<ObjectKey, ClientTrafficPolicyStatus> {
        self.statuses
    }
}

fn setting(policy: &ClientTrafficPolicy) -> Option<ProxyProtocol> {
    let pp = policy.spec.proxy_protocol.as_ref()?;
    Some(ProxyProtocol {
        optional: pp.optional.unwrap_or(false),
    })
}

/// The Gateway listeners a target names.
fn resolve(
    policy: &ObjectKey,
    target: &ClientTrafficTargetRef,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    proxy_protocol: bool,
) -> Result<Vec<ListenerId>, Refusal> {
    if target.group != GATEWAY_GROUP || target.kind != "Gateway" {
        return Err((
            Reason::Invalid,
            format!(
                "targetRef {}/{} {:?}: only Gateways ({GATEWAY_GROUP}) can be targets",
                target.group, target.kind, target.name
            ),
        ));
    }
    let key = ObjectKey::new(&policy.namespace, &target.name);
    let Some(gw) = gateways.get(&key) else {
        return Err((
            Reason::TargetNotFound,
            format!("Gateway {key} does not exist (or is not of a class of ours)"),
        ));
    };
    let listeners: Vec<_> = gw
        .listeners
        .iter()
        .filter(|l| matches!(l.owner, ListenerOwner::Gateway))
        .filter(|l| target.section_name.as_ref().is_none_or(|s| *s == l.name))
        .collect();
    if let Some(section) = &target.section_name
        && listeners.is_empty()
    {
        return Err((
            Reason::TargetNotFound,
            format!("Gateway {key} has no listener {section:?}"),
        ));
    }
    if proxy_protocol
        && let Some(udp) = listeners
            .iter()
            .find(|l| matches!(l.protocol, Some(Protocol::Udp)))
    {
        return Err((
            Reason::Invalid,
            format!(
                "listener {} of Gateway {key} is UDP: PROXY protocol is a header on a TCP stream (target the TCP listeners by sectionName)",
                udp.name
            ),
        ));
    }
    Ok(listeners
        .into_iter()
        .map(|l| (key.clone(), l.name.clone()))
        .collect())
}

/// Every served listener, by the socket it binds (as the IR groups them).
fn socket_members(gateways: &BTreeMap<ObjectKey, GatewayModel>) -> BTreeMap<SocketId, Vec<Member>> {
    let mut members: BTreeMap<SocketId, Vec<Member>> = BTreeMap::new();
    for (key, gw) in gateways {
        let Ok(addresses) = &gw.addresses else {
            continue;
        };
        for l in gw.listeners.iter().filter(|l| gw.listener_served(l)) {
            let Some(protocol) = l.protocol else { continue };
            let transport = match protocol {
                Protocol::Udp => Transport::Udp,
                _ => Transport::Tcp,
            };
            let (id, label) = match &l.owner {
                ListenerOwner::Gateway => (
                    Some((key.clone(), l.name.clone())),
                    format!("{} of Gateway {key}", l.name),
                ),
                ListenerOwner::ListenerSet(set) => {
                    (None, format!("{} of ListenerSet {set}", l.name))
                }
            };
            for address in addresses {
                members
                    .entry((transport, *address, l.port))
                    .or_default()
                    .push(Member {
                        id: id.clone(),
                        label: label.clone(),
                    });
            }
        }
    }
    members
}

/// The sockets that get PROXY protocol, and per (policy, listener) why a
/// claim could not be honoured on its socket.
fn decide_sockets(
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    claims: &BTreeMap<ListenerId, Claim>,
) -> (
    BTreeMap<SocketId, ProxyProtocol>,
    BTreeMap<(ObjectKey, ListenerId), Refusal>,
) {
    let mut sockets = BTreeMap::new();
    let mut problems = BTreeMap::new();
    for (socket, members) in socket_members(gateways) {
        // Only what a policy says of PROXY protocol matters here: one that
        // sets only an access log leaves its listener uncovered.
        let claims_pp = |id: &ListenerId| claims.get(id).filter(|c| c.setting.is_some());
        let claimed: Vec<(&ListenerId, &Claim)> = members
            .iter()
            .filter_map(|m| m.id.as_ref())
            .filter_map(|id| claims_pp(id).map(|c| (id, c)))
            .collect();
        let Some(oldest) = claimed.iter().map(|(_, c)| c).min_by_key(|c| c.age) else {
            continue;
        };
        let place = format!("port {} on {}", socket.2, socket.1);
        let uncovered: Vec<&str> = members
            .iter()
            .filter(|m| m.id.as_ref().is_none_or(|id| claims_pp(id).is_none()))
            .map(|m| m.label.as_str())
            .collect();
        let disagree = claimed.iter().any(|(_, c)| c.setting != oldest.setting);
        let refusal = if disagree {
            let policies: BTreeSet<String> =
                claimed.iter().map(|(_, c)| c.policy.to_string()).collect();
            Some((
                Reason::Conflicted,
                format!(
                    "{place} is one socket for listeners whose ClientTrafficPolicies ({}) set proxyProtocol differently: not enabled there",
                    policies.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ))
        } else if oldest.setting.is_some() && !uncovered.is_empty() {
            Some((
                Reason::Invalid,
                format!(
                    "{place} is one socket shared with listeners no ClientTrafficPolicy covers ({}): PROXY protocol would let their clients claim any address, so it is not enabled there",
                    uncovered.join(", ")
                ),
            ))
        } else {
            None
        };
        match refusal {
            Some(refusal) => {
                for (id, claim) in &claimed {
                    problems
                        .entry((claim.policy.clone(), (*id).clone()))
                        .or_insert_with(|| refusal.clone());
                }
            }
            None => {
                if let Some(setting) = oldest.setting {
                    sockets.insert(socket, setting);
                }
            }
        }
    }
    (sockets, problems)
}

/// One ancestor entry per targeted Gateway: refused when any of its
/// targets is.
fn status(
    key: &ObjectKey,
    policy: &ClientTrafficPolicy,
    outcomes: &BTreeMap<(ObjectKey, usize), Result<Vec<ListenerId>, Refusal>>,
    problems: &BTreeMap<(ObjectKey, ListenerId), Refusal>,
    options: &Options,
) -> ClientTrafficPolicyStatus {
    let stamp = Stamp {
        generation: policy.metadata.generation,
        now: &options.now,
    };
    // (group, kind, name) -> the refusals of its targets, in spec order.
    let mut by_ancestor: BTreeMap<(String, String, String), Vec<Refusal>> = BTreeMap::new();
    let mut order = Vec::new();
    for (i, target) in policy.spec.target_refs.iter().enumerate() {
        let ancestor = (
            target.group.clone(),
            target.kind.clone(),
            target.name.clone(),
        );
        if !by_ancestor.contains_key(&ancestor) {
            order.push(ancestor.clone());
        }
        let refusals = by_ancestor.entry(ancestor).or_default();
        match outcomes.get(&(key.clone(), i)) {
            Some(Err(refusal)) => refusals.push(refusal.clone()),
            Some(Ok(ids)) => refusals.extend(
                ids.iter()
                    .filter_map(|id| problems.get(&(key.clone(), id.clone())).cloned()),
            ),
            None => {}
        }
    }
    let ancestors = order
        .into_iter()
        .take(MAX_ANCESTORS)
        .map(|(group, kind, name)| {
            let refusals = by_ancestor
                .remove(&(group.clone(), kind.clone(), name.clone()))
                .unwrap_or_default();
            let cond = match refusals.first() {
                Some((reason, _)) => {
                    let mut messages: Vec<String> = Vec::new();
                    for (_, m) in &refusals {
                        if !messages.contains(m) {
                            messages.push(m.clone());
                        }
                    }
                    Cond::new(ConditionType::Accepted, false, *reason, messages.join("; "))
                }
                None => Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    accepted_message(policy),
                ),
            };
            PolicyAncestorStatus {
                ancestor_ref: PolicyAncestorRef {
                    group,
                    kind,
                    name,
                    namespace: Some(key.namespace.to_string()),
                },
                controller_name: options.controller_name.to_string(),
                conditions: stamp.all(vec![cond]),
            }
        })
        .collect();
    ClientTrafficPolicyStatus { ancestors }
}

fn accepted_message(policy: &ClientTrafficPolicy) -> String {
    let proxy = proxy_protocol_message(policy);
    match (access_log(policy), proxy) {
        (Ok(Some(log)), None) => describe(&log),
        (Ok(Some(log)), Some(proxy)) => format!("{proxy}; {}", describe(&log)),
        (_, Some(proxy)) => proxy,
        (_, None) => "no setting to apply".to_string(),
    }
}

fn proxy_protocol_message(policy: &ClientTrafficPolicy) -> Option<String> {
    Some(match setting(policy)? {
        ProxyProtocol { optional: false } => {
            "PROXY protocol required: a connection without a valid header is closed".to_string()
        }
        ProxyProtocol { optional: true } => {
            "PROXY protocol optional: a connection without a header is served with the socket peer"
                .to_string()
        }
    })
}
