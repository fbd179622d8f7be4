//! Listener conflicts within one Gateway (same port: incompatible protocols,
//! or the same hostname twice).

use std::collections::BTreeMap;

use crate::conditions::Reason;
use crate::gateway::listeners::{ListenerModel, Protocol};

/// Protocols that can share a port when hostnames differ.
fn protocol_family(protocol: &str) -> &str {
    match protocol {
        "HTTPS" | "TLS" => "tls",
        other => other,
    }
}

/// Marks conflicted listeners (`ListenerModel::conflict`). A conflicted
/// listener's port is not configured, so it is not Accepted either (the spec
/// accepts a listener only when it yields some data-plane configuration).
pub fn mark_conflicts(listeners: &mut [ListenerModel]) {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        // One already conflicted (with an earlier listener) holds nothing.
        if l.port != 0 && l.conflict.is_none() {
            by_port.entry(l.port).or_default().push(i);
        }
    }
    let mut conflicts: Vec<(usize, Reason, String)> = Vec::new();
    for (port, indices) in &by_port {
        // UDP has its own port space; every other protocol shares TCP ports.
        let tcp: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|i| listeners.get(*i).is_some_and(|l| l.protocol_name != "UDP"))
            .collect();
        let families: Vec<&str> = tcp
            .iter()
            .filter_map(|i| listeners.get(*i))
            .map(|l| protocol_family(&l.protocol_name))
            .collect();
        let mixed = families.windows(2).any(|w| w.first() != w.get(1));
        if mixed {
            for i in &tcp {
                conflicts.push((
                    *i,
                    Reason::ProtocolConflict,
                    format!("port {port} is used with incompatible protocols"),
                ));
            }
            continue;
        }
        for group in [tcp, udp_indices(listeners, indices)] {
            for (a_pos, a) in group.iter().enumerate() {
                let clash = group.iter().enumerate().any(|(b_pos, b)| {
                    a_pos != b_pos
                        && listeners.get(*a).map(dispatch_hostname)
                            == listeners.get(*b).map(dispatch_hostname)
                });
                if clash {
                    conflicts.push((
                        *a,
                        Reason::HostnameConflict,
                        format!("another listener on port {port} has the same hostname"),
                    ));
                }
            }
        }
    }
    for (i, reason, message) in conflicts {
        if let Some(l) = listeners.get_mut(i) {
            if l.accepted.is_ok() {
                l.accepted = Err((reason, message.clone()));
            }
            l.conflict = Some((reason, message));
        }
    }
}

/// Marks the listeners of `later` (one ListenerSet) that clash with any in
/// `earlier` (the Gateway's own, then older ListenerSets'): the merged
/// list's precedence lets the earlier listener keep the port.
pub fn mark_against_earlier(earlier: &[ListenerModel], later: &mut [ListenerModel]) {
    for l in later.iter_mut() {
        if l.port == 0 || l.conflict.is_some() {
            continue;
        }
        let udp = l.protocol_name == "UDP";
        // An earlier listener that is itself conflicted holds nothing.
        let same_space = earlier.iter().filter(|e| {
            e.conflict.is_none() && e.port == l.port && (e.protocol_name == "UDP") == udp
        });
        let mut found = None;
        for e in same_space {
            if protocol_family(&e.protocol_name) != protocol_family(&l.protocol_name) {
                found = Some((
                    Reason::ProtocolConflict,
                    format!(
                        "port {} is already used with protocol {} by an earlier listener",
                        l.port, e.protocol_name
                    ),
                ));
                break;
            }
            if dispatch_hostname(e) == dispatch_hostname(l) {
                found = Some((
                    Reason::HostnameConflict,
                    format!(
                        "an earlier listener on port {} has the same hostname",
                        l.port
                    ),
                ));
            }
        }
        if let Some((reason, message)) = found {
            if l.accepted.is_ok() {
                l.accepted = Err((reason, message.clone()));
            }
            l.conflict = Some((reason, message));
        }
    }
}

/// The hostname that tells a listener's connections apart from another's
/// on the same port. TCP and UDP carry none, so two of them always clash.
fn dispatch_hostname(l: &ListenerModel) -> Option<&coxswain_ir::Hostname> {
    match l.protocol {
        Some(Protocol::Tcp | Protocol::Udp) => None,
        _ => l.hostname.as_ref(),
    }
}

fn udp_indices(listeners: &[ListenerModel], indices: &[usize]) -> Vec<usize> {
    indices
        .iter()
        .copied()
        .filter(|i| listeners.get(*i).is_some_and(|l| l.protocol_name == "UDP"))
        .collect()
}
