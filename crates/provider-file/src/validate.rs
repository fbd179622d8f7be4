//! Schema checks the Gateway API CRDs enforce at admission time but serde
//! cannot see (ranges, formats, uniqueness, list sizes). Each problem is
//! located in the document text as well as we cheaply can.

use std::collections::BTreeSet;

use coxswain_api::gw::gateways::{GatewayListeners, GatewayListenersTlsMode};
use coxswain_api::gw::httproutes::{HttpRouteRules, HttpRouteRulesFilters, HttpRouteRulesMatches};
use coxswain_api::{Gateway, HttpRoute, Object};
use coxswain_ir::Hostname;

use crate::locate::{Locator, Position};

const MAX_LISTENERS: usize = 64;
const MAX_PARENT_REFS: usize = 32;
const MAX_HOSTNAMES: usize = 16;
const MAX_RULES: usize = 16;
const MAX_MATCHES: usize = 64;
const MAX_FILTERS: usize = 16;
const MAX_BACKEND_REFS: usize = 16;
const MAX_HEADER_MATCHES: usize = 16;
const MAX_WEIGHT: i32 = 1_000_000;
const REDIRECT_CODES: [i64; 5] = [301, 302, 303, 307, 308];

type Problems = Vec<(Position, String)>;

pub fn validate(object: &Object, locator: &Locator<'_>) -> Problems {
    let mut problems = Vec::new();
    match object {
        Object::Gateway(gateway) => check_gateway(gateway, locator, &mut problems),
        Object::HttpRoute(route) => check_route(route, locator, &mut problems),
        _ => {}
    }
    problems
}

fn check_gateway(gateway: &Gateway, loc: &Locator<'_>, out: &mut Problems) {
    let listeners = &gateway.spec.listeners;
    if listeners.is_empty() || listeners.len() > MAX_LISTENERS {
        out.push((
            loc.find("listeners", "", 0),
            format!(
                "spec.listeners must have 1 to {MAX_LISTENERS} entries, found {}",
                listeners.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, listener) in listeners.iter().enumerate() {
        let at = format!("spec.listeners[{i}]");
        if !seen.insert(listener.name.as_str()) {
            out.push((
                loc.find("name:", &listener.name, 1),
                format!("{at}.name: duplicate listener name {:?}", listener.name),
            ));
        }
        check_port(listener.port, &format!("{at}.port"), loc, out);
        if let Some(hostname) = &listener.hostname {
            check_hostname(hostname, &format!("{at}.hostname"), loc, out);
        }
        check_listener_tls(listener, &at, loc, out);
    }
}

/// The CRD's rules on `tls`: forbidden for HTTP/TCP/UDP, required for
/// HTTPS (mode Terminate, with certificateRefs or options) and TLS.
fn check_listener_tls(
    listener: &GatewayListeners,
    at: &str,
    loc: &Locator<'_>,
    out: &mut Problems,
) {
    let protocol = listener.protocol.as_str();
    let tls = listener.tls.as_ref();
    let mut problem = |message: String| out.push((loc.find("protocol:", protocol, 0), message));
    match (protocol, tls) {
        ("HTTP" | "TCP" | "UDP", Some(_)) => {
            problem(format!("{at}.tls must not be set for protocol {protocol}"));
        }
        ("HTTPS" | "TLS", None) => problem(format!("{at}.tls is required for protocol {protocol}")),
        ("HTTPS", Some(tls)) => {
            if matches!(tls.mode, Some(GatewayListenersTlsMode::Passthrough)) {
                problem(format!(
                    "{at}.tls.mode must be Terminate for protocol HTTPS"
                ));
            }
            let refs = tls.certificate_refs.as_ref().map_or(0, Vec::len);
            let options = tls.options.as_ref().map_or(0, |o| o.len());
            if !matches!(tls.mode, Some(GatewayListenersTlsMode::Passthrough))
                && refs == 0
                && options == 0
            {
                problem(format!(
                    "{at}.tls.certificateRefs or options must be set when mode is Terminate"
                ));
            }
        }
        _ => {}
    }
}

fn check_route(route: &HttpRoute, loc: &Locator<'_>, out: &mut Problems) {
    let spec = &route.spec;
    let parents = spec.parent_refs.as_deref().unwrap_or_default();
    check_len(
        parents.len(),
        MAX_PARENT_REFS,
        "spec.parentRefs",
        "parentRefs",
        loc,
        out,
    );
    for (i, parent) in parents.iter().enumerate() {
        if let Some(port) = parent.port {
            check_port(port, &format!("spec.parentRefs[{i}].port"), loc, out);
        }
    }
    let hostnames = spec.hostnames.as_deref().unwrap_or_default();
    check_len(
        hostnames.len(),
        MAX_HOSTNAMES,
        "spec.hostnames",
        "hostnames",
        loc,
        out,
    );
    for (i, hostname) in hostnames.iter().enumerate() {
        check_hostname(hostname, &format!("spec.hostnames[{i}]"), loc, out);
    }
    let rules = spec.rules.as_deref().unwrap_or_default();
    check_len(rules.len(), MAX_RULES, "spec.rules", "rules", loc, out);
    for (i, rule) in rules.iter().enumerate() {
        check_rule(rule, &format!("spec.rules[{i}]"), loc, out);
    }
}

fn check_rule(rule: &HttpRouteRules, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    let matches = rule.matches.as_deref().unwrap_or_default();
    check_len(
        matches.len(),
        MAX_MATCHES,
        &format!("{at}.matches"),
        "matches",
        loc,
        out,
    );
    for (i, m) in matches.iter().enumerate() {
        check_match(m, &format!("{at}.matches[{i}]"), loc, out);
    }
    let filters = rule.filters.as_deref().unwrap_or_default();
    check_len(
        filters.len(),
        MAX_FILTERS,
        &format!("{at}.filters"),
        "filters",
        loc,
        out,
    );
    for (i, f) in filters.iter().enumerate() {
        check_filter(f, &format!("{at}.filters[{i}]"), loc, out);
    }
    let backends = rule.backend_refs.as_deref().unwrap_or_default();
    check_len(
        backends.len(),
        MAX_BACKEND_REFS,
        &format!("{at}.backendRefs"),
        "backendRefs",
        loc,
        out,
    );
    for (i, backend) in backends.iter().enumerate() {
        let at = format!("{at}.backendRefs[{i}]");
        if let Some(port) = backend.port {
            check_port(port, &format!("{at}.port"), loc, out);
        }
        if let Some(weight) = backend.weight
            && !(0..=MAX_WEIGHT).contains(&weight)
        {
            out.push((
                loc.find("weight:", &weight.to_string(), 0),
                format!("{at}.weight: {weight} is outside 0..={MAX_WEIGHT}"),
            ));
        }
    }
}

fn check_match(m: &HttpRouteRulesMatches, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    use coxswain_api::gw::httproutes::HttpRouteRulesMatchesPathType as T;
    if let Some(path) = &m.path {
        let is_regex = matches!(path.r#type, Some(T::RegularExpression));
        if let Some(value) = &path.value
            && !is_regex
        {
            check_path(value, &format!("{at}.path.value"), loc, out);
        }
    }
    let headers = m.headers.as_deref().unwrap_or_default();
    check_len(
        headers.len(),
        MAX_HEADER_MATCHES,
        &format!("{at}.headers"),
        "headers",
        loc,
        out,
    );
    for (i, h) in headers.iter().enumerate() {
        check_header_name(&h.name, &format!("{at}.headers[{i}].name"), loc, out);
    }
    let query = m.query_params.as_deref().unwrap_or_default();
    check_len(
        query.len(),
        MAX_HEADER_MATCHES,
        &format!("{at}.queryParams"),
        "queryParams",
        loc,
        out,
    );
}

fn check_filter(f: &HttpRouteRulesFilters, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    if let Some(redirect) = &f.request_redirect {
        if let Some(code) = redirect.status_code
            && !REDIRECT_CODES.contains(&code)
        {
            out.push((
                loc.find("statusCode:", &code.to_string(), 0),
                format!(
                    "{at}.requestRedirect.statusCode: {code} is not one of 301, 302, 303, 307, 308"
                ),
            ));
        }
        if let Some(port) = redirect.port {
            check_port(port, &format!("{at}.requestRedirect.port"), loc, out);
        }
        if let Some(hostname) = &redirect.hostname {
            check_hostname(
                hostname,
                &format!("{at}.requestRedirect.hostname"),
                loc,
                out,
            );
        }
        if let Some(path) = &redirect.path {
            let at = format!("{at}.requestRedirect.path");
            for value in [&path.replace_full_path, &path.replace_prefix_match]
                .into_iter()
                .flatten()
            {
                check_path(value, &at, loc, out);
            }
        }
    }
    if let Some(rewrite) = &f.url_rewrite {
        if let Some(hostname) = &rewrite.hostname {
            check_hostname(hostname, &format!("{at}.urlRewrite.hostname"), loc, out);
        }
        if let Some(path) = &rewrite.path {
            let at = format!("{at}.urlRewrite.path");
            for value in [&path.replace_full_path, &path.replace_prefix_match]
                .into_iter()
                .flatten()
            {
                check_path(value, &at, loc, out);
            }
        }
    }
    for modifier in [&f.request_header_modifier].into_iter().flatten() {
        let names = modifier.add.iter().flatten().map(|h| &h.name);
        let names = names.chain(modifier.set.iter().flatten().map(|h| &h.name));
        let names = names.chain(modifier.remove.iter().flatten());
        for name in names {
            check_header_name(name, &format!("{at}.requestHeaderModifier"), loc, out);
        }
    }
    for modifier in [&f.response_header_modifier].into_iter().flatten() {
        let names = modifier.add.iter().flatten().map(|h| &h.name);
        let names = names.chain(modifier.set.iter().flatten().map(|h| &h.name));
        let names = names.chain(modifier.remove.iter().flatten());
        for name in names {
            check_header_name(name, &format!("{at}.responseHeaderModifier"), loc, out);
        }
    }
}

fn check_len(len: usize, max: usize, at: &str, key: &str, loc: &Locator<'_>, out: &mut Problems) {
    if len > max {
        out.push((
            loc.find(key, "", 0),
            format!("{at}: at most {max} entries allowed, found {len}"),
        ));
    }
}

fn check_port(port: i32, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    if !(1..=65535).contains(&port) {
        out.push((
            loc.find("port:", &port.to_string(), 0),
            format!("{at}: port {port} is outside 1..=65535"),
        ));
    }
}

fn check_hostname(hostname: &str, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    if let Err(e) = Hostname::parse(hostname) {
        out.push((loc.find("", hostname, 0), format!("{at}: {e}")));
    }
}

fn check_path(path: &str, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    if !path.starts_with('/') {
        out.push((
            loc.find("", path, 0),
            format!("{at}: path {path:?} must start with '/'"),
        ));
    }
}

/// RFC 7230 token: what the CRD's header-name pattern allows.
fn check_header_name(name: &str, at: &str, loc: &Locator<'_>, out: &mut Problems) {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || name.len() > 256 || !name.bytes().all(token) {
        out.push((
            loc.find("name:", name, 0),
            format!("{at}: {name:?} is not a valid header name"),
        ));
    }
}
