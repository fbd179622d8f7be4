//! The text form of an explanation: one section per decision, in the
//! order the gateway makes them.

use std::fmt::Write;

use super::model::{Explanation, FilterStep, NearMiss};

/// A unit enum's name as the JSON output spells it.
fn name(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn rule_label(
    kind: &str,
    namespace: &str,
    name: &str,
    rule: u32,
    rule_name: Option<&str>,
) -> String {
    match rule_name {
        Some(rule_name) => format!("{kind} {namespace}/{name} rule {rule} ({rule_name})"),
        None => format!("{kind} {namespace}/{name} rule {rule}"),
    }
}

fn filter_line(out: &mut String, n: usize, step: &FilterStep) {
    let answers = step
        .answers
        .map(|s| format!(" [answers {s}]"))
        .unwrap_or_default();
    let detail = if step.detail.is_empty() {
        String::new()
    } else {
        format!(": {}", step.detail)
    };
    let _ = writeln!(
        out,
        "  {n}. {:<10} {}{detail}{answers}",
        step.phase, step.kind
    );
}

fn near_miss(out: &mut String, miss: &NearMiss) {
    let label = rule_label(
        miss.kind,
        &miss.namespace,
        &miss.name,
        miss.rule_index,
        miss.rule_name.as_deref(),
    );
    let _ = writeln!(
        out,
        "  {label}, match {} ({})",
        miss.match_index, miss.matched
    );
    for reason in &miss.reasons {
        let _ = writeln!(out, "    {}: {}", name(reason.field), reason.message);
    }
}

pub fn text(e: &Explanation) -> String {
    let mut out = String::new();
    let r = &e.request;
    let query = r
        .query
        .as_ref()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "request:  {} {}://{}:{}{}{query}",
        r.method, r.scheme, r.host, r.port, r.path
    );
    if let Some(sni) = &r.sni {
        let _ = writeln!(out, "          SNI {sni}");
    }
    if let Some(socket) = &e.socket {
        let tls = if socket.tls { ", TLS" } else { "" };
        let proxy = if socket.proxy_protocol {
            ", PROXY protocol"
        } else {
            ""
        };
        let _ = writeln!(out, "socket:   {}{tls}{proxy}", socket.address);
    }
    if let Some(l) = &e.listener {
        let hostname = l.hostname.as_deref().unwrap_or("no hostname");
        let _ = writeln!(
            out,
            "listener: {}/{} ({hostname}): {}",
            l.gateway, l.name, l.reason
        );
    }
    for miss in &e.other_listeners {
        let _ = writeln!(out, "  not {}/{}: {}", miss.gateway, miss.name, miss.reason);
    }
    if let Some(route) = &e.route {
        let label = rule_label(
            route.kind,
            &route.namespace,
            &route.name,
            route.rule_index,
            route.rule_name.as_deref(),
        );
        let _ = writeln!(
            out,
            "route:    {label}, match {} ({})",
            route.match_index, route.matched
        );
    }
    if !e.filters.is_empty() {
        let _ = writeln!(out, "filters (in the order they run):");
        for (i, step) in e.filters.iter().enumerate() {
            filter_line(&mut out, i + 1, step);
        }
    }
    if !e.response_filters.is_empty() {
        let _ = writeln!(out, "response:");
        for (i, step) in e.response_filters.iter().enumerate() {
            filter_line(&mut out, i + 1, step);
        }
    }
    if !e.backends.is_empty() {
        let _ = writeln!(out, "backends (one chosen by weight per request):");
        for b in &e.backends {
            let name = b.cluster.as_deref().unwrap_or("invalid backendRef");
            let _ = write!(out, "  {name}  weight {} ({}%)", b.weight, b.share_percent);
            if let Some(why) = &b.invalid {
                let _ = write!(out, "  {why}");
            } else if b.endpoints.is_empty() {
                let _ = write!(out, "  no ready endpoints (503)");
            } else {
                let _ = write!(out, "  {}: {}", b.balancer, b.endpoints.join(", "));
            }
            let _ = writeln!(out);
            for f in &b.request_filters {
                let _ = writeln!(out, "    then {f}");
            }
        }
    }
    if !e.near_misses.is_empty() {
        let _ = writeln!(out, "near misses:");
        for miss in &e.near_misses {
            near_miss(&mut out, miss);
        }
    }
    let status = e
        .verdict
        .status
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let outcome = name(e.verdict.outcome);
    let _ = writeln!(out, "verdict:  {outcome}{status}: {}", e.verdict.message);
    out
}
