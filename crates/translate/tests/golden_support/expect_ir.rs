//! `# expect: ir ...` assertions about the translated IR.

use coxswain_ir::{Config, Listener, MatchSpecificity, Route, Serve, Socket, Transport};
use serde_json::Value;

pub fn check(tokens: &[&str], text: &str, ir: &Config) -> Result<(), String> {
    let Some((first, rest)) = tokens.split_first() else {
        return Err("empty ir expectation".into());
    };
    let (selector, value) = first.split_once('=').unwrap_or((first, ""));
    match selector {
        "sockets" | "routes" | "clusters" => counts(tokens, ir),
        "cluster" => {
            let cluster = ir.clusters.iter().find(|c| c.name == value);
            match (cluster, rest) {
                (None, ["absent"]) => Ok(()),
                (None, _) => Err(format!("no cluster {value}; have {:?}", cluster_names(ir))),
                (Some(_), ["absent"]) => Err(format!("cluster {value} should be absent")),
                (Some(c), _) => check_fields(&to_json(c), rest, text),
            }
        }
        "extension" => {
            // `extension=<Kind>/<namespace>/<name>`
            let found = ir.extensions.iter().find(|e| {
                format!("{}/{}/{}", e.key.kind.as_str(), e.key.namespace, e.key.name) == value
            });
            match (found, rest) {
                (None, ["absent"]) => Ok(()),
                (None, _) => Err(format!("no extension {value} in the IR")),
                (Some(_), ["absent"]) => Err(format!("extension {value} should be absent")),
                (Some(e), _) => check_fields(&to_json(&e.spec), rest, text),
            }
        }
        "socket" => {
            let socket = ir.sockets.iter().find(|s| socket_id(s) == value);
            match (socket, rest) {
                (None, ["absent"]) => Ok(()),
                (None, _) => Err(format!("no socket {value}")),
                (Some(_), ["absent"]) => Err(format!("socket {value} should be absent")),
                (Some(s), _) => {
                    let ids: Vec<String> = s.listeners.iter().map(listener_id).collect();
                    let serves: Vec<&str> = s.listeners.iter().map(serves).collect();
                    let mut json = to_json(s);
                    json["ids"] = Value::String(ids.join(","));
                    json["serves"] = Value::String(serves.join(","));
                    check_fields(&json, rest, text)
                }
            }
        }
        "on" => {
            let listener = gateway_listeners(ir)
                .find(|l| listener_id(l) == value)
                .ok_or_else(|| {
                    format!(
                        "no gateway listener {value}; have {:?}",
                        gateway_listeners(ir).map(listener_id).collect::<Vec<_>>()
                    )
                })?;
            let mut json = to_json(listener);
            json["order"] = Value::String(join_ids(http_routes(listener).map(|r| r.as_ref())));
            json["routes"] = Value::from(http_routes(listener).count());
            json["ranking"] = Value::String(ranking(listener));
            check_fields(&json, rest, text)
        }
        "route" => {
            let (on, rest) = match rest.split_first() {
                Some((on, tail)) if on.starts_with("on=") => (on.strip_prefix("on="), tail),
                _ => (None, rest),
            };
            let route = gateway_listeners(ir)
                .filter(|l| on.is_none_or(|on| listener_id(l) == on))
                .flat_map(http_routes)
                .find(|r| match value.split_once('@') {
                    // `ns/route#rule@name`: the rule of that name (`@`: unnamed).
                    Some((id, name)) => {
                        route_id(r) == id && r.id.rule_name.as_deref().unwrap_or_default() == name
                    }
                    None => route_id(r) == value,
                });
            match (route, rest) {
                (None, ["absent"]) => Ok(()),
                (None, _) => Err(format!("no route {value} in the IR")),
                (Some(_), ["absent"]) => Err(format!("route {value} should be absent")),
                (Some(r), _) => check_fields(&to_json(r), rest, text),
            }
        }
        _ => Err(format!("unknown ir selector `{first}`")),
    }
}

fn counts(tokens: &[&str], ir: &Config) -> Result<(), String> {
    let routes: usize = gateway_listeners(ir).map(|l| http_routes(l).count()).sum();
    let have = format!(
        "sockets={} routes={routes} clusters={}",
        ir.sockets.len(),
        ir.clusters.len()
    );
    let all_match = tokens
        .iter()
        .all(|t| have.split_whitespace().any(|h| h == *t));
    all_match.then_some(()).ok_or(have)
}

/// `field=value` pairs on a JSON view; a field starting with `/` is a JSON
/// pointer whose value (JSON, or else a plain string) runs to the line's end.
fn check_fields(json: &Value, tokens: &[&str], text: &str) -> Result<(), String> {
    let mut rest = tokens;
    while let [token, tail @ ..] = rest {
        if token.starts_with('/') {
            let start = text.find(*token).unwrap_or_default();
            let (pointer, want) = text[start..]
                .split_once('=')
                .ok_or_else(|| format!("`{token}` needs =value"))?;
            return check_pointer(json, pointer, want.trim());
        }
        let (field, want) = token
            .split_once('=')
            .ok_or_else(|| format!("`{token}` is not field=value"))?;
        let got = match json.get(field) {
            None => return Err(format!("no field {field}")),
            Some(Value::Array(items)) => items.len().to_string(),
            Some(Value::String(s)) if s.is_empty() => "-".into(),
            Some(Value::Null) => "-".into(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        if got != want {
            return Err(format!("{field} is {got}"));
        }
        rest = tail;
    }
    Ok(())
}

fn check_pointer(json: &Value, pointer: &str, want: &str) -> Result<(), String> {
    let got = json.pointer(pointer);
    if want == "absent" {
        return match got {
            None | Some(Value::Null) => Ok(()),
            Some(v) => Err(format!("{pointer} is {v}")),
        };
    }
    // `1` matches the number 1 and the string "1"; quote to be strict.
    let want_value = serde_json::from_str(want).unwrap_or_else(|_| Value::String(want.into()));
    match got {
        Some(v) if *v == want_value || v.as_str() == Some(want) => Ok(()),
        Some(v) => Err(format!("{pointer} is {v}")),
        None => Err(format!("{pointer} is missing")),
    }
}

fn gateway_listeners(ir: &Config) -> impl Iterator<Item = &Listener> {
    ir.sockets.iter().flat_map(|s| s.listeners.iter())
}

fn http_routes(l: &Listener) -> impl Iterator<Item = &std::sync::Arc<Route>> {
    l.http_routes().unwrap_or_default().iter()
}

/// `addr:port` for TCP sockets, `addr:port/udp` for UDP ones.
fn socket_id(s: &Socket) -> String {
    match s.transport {
        Transport::Tcp => s.addr().to_string(),
        Transport::Udp => format!("{}/udp", s.addr()),
    }
}

/// What a listener serves, as its Gateway protocol would name it.
fn serves(l: &Listener) -> &'static str {
    match (&l.serve, l.tls.is_some()) {
        (Serve::Http(_), false) => "HTTP",
        (Serve::Http(_), true) => "HTTPS",
        (Serve::TlsPassthrough(_), _) => "TLS-Passthrough",
        (Serve::Tcp(_), true) => "TLS-Terminate",
        (Serve::Tcp(_), false) => "TCP",
        (Serve::Udp(_), _) => "UDP",
    }
}

/// `ns/gateway/listener`, or `ns/gateway+setns/set/listener` for a
/// ListenerSet's listener.
fn listener_id(l: &Listener) -> String {
    match &l.listener_set {
        None => format!("{}/{}", l.gateway, l.name),
        Some(set) => format!("{}+{set}/{}", l.gateway, l.name),
    }
}

fn route_id(r: &Route) -> String {
    format!("{}/{}#{}", r.id.namespace, r.id.name, r.id.rule_index)
}

fn join_ids<'a>(routes: impl Iterator<Item = &'a Route>) -> String {
    let mut ids: Vec<String> = Vec::new();
    for id in routes.map(route_id) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.join(",")
}

/// Rules in the order the proxy would try them for one host: every match
/// stable-sorted by specificity, each rule listed at its first match.
fn ranking(listener: &Listener) -> String {
    let mut matches: Vec<(MatchSpecificity, &Route)> = http_routes(listener)
        .map(|r| r.as_ref())
        .flat_map(|r| r.matches.iter().map(move |m| (MatchSpecificity::of(m), r)))
        .collect();
    matches.sort_by(|a, b| a.0.cmp(&b.0));
    join_ids(matches.into_iter().map(|(_, r)| r))
}

fn cluster_names(ir: &Config) -> Vec<&str> {
    ir.clusters.iter().map(|c| c.name.as_str()).collect()
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
