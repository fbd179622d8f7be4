//! One-line descriptions of IR matches and filters, as users wrote them.

use coxswain_ir::{
    Config, ExtensionSpec, Filter, HeaderModifier, PathMatch, PathModifier, RouteMatch, StringMatch,
};

pub fn path(p: &PathMatch) -> String {
    match p {
        PathMatch::Exact(v) => format!("Exact {v}"),
        PathMatch::Prefix(v) => format!("PathPrefix {v}"),
        PathMatch::Regex(v) => format!("RegularExpression {v}"),
    }
}

pub fn value(v: &StringMatch) -> String {
    match v {
        StringMatch::Exact(v) => format!("= {v:?}"),
        StringMatch::Regex(r) => format!("~ /{r}/"),
    }
}

/// `PathPrefix /api, method POST, header x-v = "2", query q ~ /^a/`.
pub fn route_match(m: &RouteMatch) -> String {
    let mut parts = vec![path(&m.path)];
    if let Some(method) = &m.method {
        parts.push(format!("method {method}"));
    }
    for h in &m.headers {
        parts.push(format!("header {} {}", h.name, value(&h.value)));
    }
    for q in &m.query {
        parts.push(format!("query {} {}", q.name, value(&q.value)));
    }
    parts.join(", ")
}

fn headers(m: &HeaderModifier) -> String {
    let mut parts = Vec::new();
    for h in &m.set {
        parts.push(format!("set {}: {}", h.name, h.value));
    }
    for h in &m.add {
        parts.push(format!("add {}: {}", h.name, h.value));
    }
    for name in &m.remove {
        parts.push(format!("remove {name}"));
    }
    parts.join(", ")
}

fn path_modifier(p: &PathModifier) -> String {
    match p {
        PathModifier::ReplaceFullPath(v) => format!("path {v}"),
        PathModifier::ReplacePrefixMatch(v) => format!("prefix -> {v}"),
    }
}

fn extension(spec: &ExtensionSpec) -> String {
    match spec {
        ExtensionSpec::IpAccess(a) => {
            format!("{} allow, {} deny range(s)", a.allow.len(), a.deny.len())
        }
        ExtensionSpec::BasicAuth(_) => "credentials checked (401 otherwise)".to_string(),
        ExtensionSpec::Compression(_) => "responses encoded as the client accepts".to_string(),
        ExtensionSpec::JwtAuth(_) => "bearer token verified (401 otherwise)".to_string(),
        ExtensionSpec::ExternalAuth(a) => {
            format!("asks {} (timeout {} ms)", a.cluster, a.timeout_ms)
        }
        ExtensionSpec::PathRewrite {
            pattern,
            substitution,
        } => format!("path /{pattern}/ -> {substitution}"),
        ExtensionSpec::RateLimit(r) => format!(
            "{} request(s) per {} ms, burst {}{}",
            r.requests,
            r.period_ms,
            r.burst,
            if r.global.is_some() { ", global" } else { "" }
        ),
        ExtensionSpec::SizeLimit { max_bytes } => format!("bodies up to {max_bytes} bytes"),
        ExtensionSpec::Inactive { reason } => format!("inactive, does nothing: {reason}"),
        ExtensionSpec::Broken { status, reason } => format!("answers {status}: {reason}"),
    }
}

/// The status a filter that cannot be applied answers: an error status
/// as configured, else 500 (as the proxy does).
fn refusal(status: u16) -> u16 {
    if (400..=599).contains(&status) {
        status
    } else {
        500
    }
}

/// (kind, detail, the status it answers every request with).
pub fn filter(f: &Filter, config: &Config) -> (String, String, Option<u16>) {
    match f {
        Filter::RequestHeaders(m) => ("RequestHeaderModifier".into(), headers(m), None),
        Filter::ResponseHeaders(m) => ("ResponseHeaderModifier".into(), headers(m), None),
        Filter::Redirect(r) => {
            let mut parts = vec![format!("status {}", r.status_code)];
            parts.extend(r.scheme.as_ref().map(|s| format!("scheme {s}")));
            parts.extend(r.hostname.as_ref().map(|h| format!("hostname {h}")));
            parts.extend(r.port.map(|p| format!("port {p}")));
            parts.extend(r.path.as_ref().map(path_modifier));
            (
                "RequestRedirect".into(),
                parts.join(", "),
                Some(r.status_code),
            )
        }
        Filter::Rewrite(r) => {
            let mut parts = Vec::new();
            parts.extend(r.hostname.as_ref().map(|h| format!("hostname {h}")));
            parts.extend(r.path.as_ref().map(path_modifier));
            ("URLRewrite".into(), parts.join(", "), None)
        }
        Filter::Mirror(m) => (
            "RequestMirror".into(),
            format!(
                "to {} ({}/{} of requests)",
                m.cluster, m.numerator, m.denominator
            ),
            None,
        ),
        Filter::Cors(c) => (
            "CORS".into(),
            format!("origins {}", c.allow_origins.join(" ")),
            None,
        ),
        Filter::Extension(key) => match config.extension(key) {
            Some(e) => {
                let answers = match &e.spec {
                    ExtensionSpec::Broken { status, .. } => Some(refusal(*status)),
                    _ => None,
                };
                (format!("ExtensionRef {key}"), extension(&e.spec), answers)
            }
            None => (
                format!("ExtensionRef {key}"),
                "missing from the config: answers 500".into(),
                Some(500),
            ),
        },
        Filter::Deny { status, reason } => (
            "unresolved filter".into(),
            format!("answers {}: {reason}", refusal(*status)),
            Some(refusal(*status)),
        ),
    }
}
