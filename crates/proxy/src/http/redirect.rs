//! RequestRedirect: builds the `Location` URL with the spec's port rules.

use coxswain_ir::Redirect;

use super::path::apply_modifier;
use crate::router::CompiledMatch;

/// The parts of the incoming request a redirect may keep.
pub struct RedirectInput<'a> {
    pub host: &'a str,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub listener_port: u16,
    /// The scheme the request arrived with; kept when the redirect sets none.
    pub scheme: &'a str,
}

fn well_known_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The `Location` value for `redirect` applied to the request.
pub fn location(redirect: &Redirect, input: &RedirectInput<'_>, matched: &CompiledMatch) -> String {
    let scheme = redirect.scheme.as_deref().unwrap_or(input.scheme);
    let host = redirect.hostname.as_deref().unwrap_or(input.host);
    // Explicit port; else the well-known port of an explicit scheme; else the
    // listener's port.
    let port = redirect
        .port
        .or_else(|| redirect.scheme.as_deref().and_then(well_known_port))
        .unwrap_or(input.listener_port);
    let path = redirect
        .path
        .as_ref()
        .and_then(|m| apply_modifier(m, input.path, matched))
        .unwrap_or_else(|| input.path.to_string());
    let mut out = format!("{scheme}://{host}");
    if well_known_port(scheme) != Some(port) {
        out.push(':');
        out.push_str(&port.to_string());
    }
    out.push_str(&path);
    if let Some(query) = input.query {
        out.push('?');
        out.push_str(query);
    }
    out
}
