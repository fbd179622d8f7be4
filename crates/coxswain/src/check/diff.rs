//! `check --diff DIR_A DIR_B`: what the gateway would serve differently
//! with B than with A: listeners, route rules (matches, filters, backends),
//! clusters (endpoints, TLS, policies) and object conditions, each added,
//! removed or changed.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

use coxswain_ir::{BackendTarget, Config, Listener, Serve, WeightedBackend};
use coxswain_translate::Output;

use crate::cli::CheckArgs;
use crate::conditions::{all_statuses, conditions};
use crate::explain::describe;

const EXIT_DIFFERENT: u8 = 1;
const EXIT_LOAD_FAILED: u8 = 2;

/// Named facts about one thing, compared field by field.
type Fields = BTreeMap<&'static str, String>;

pub fn run(a: &Path, b: &Path, args: &CheckArgs) -> ExitCode {
    let (Some((_, before)), Some((_, after))) = (
        super::load_and_translate(a, args),
        super::load_and_translate(b, args),
    ) else {
        return ExitCode::from(EXIT_LOAD_FAILED);
    };
    let (report, changes) = report(&before, &after);
    print!("{report}");
    if changes == 0 {
        println!("no differences");
        ExitCode::SUCCESS
    } else {
        println!("{changes} difference(s)");
        ExitCode::from(EXIT_DIFFERENT)
    }
}

/// The text report and how many things differ.
pub fn report(before: &Output, after: &Output) -> (String, usize) {
    let mut out = String::new();
    let mut changes = 0;
    changes += section(
        &mut out,
        "listeners",
        &listeners(&before.ir),
        &listeners(&after.ir),
    );
    changes += route_section(&mut out, &routes(&before.ir), &routes(&after.ir));
    changes += section(
        &mut out,
        "clusters",
        &clusters(&before.ir),
        &clusters(&after.ir),
    );
    changes += section(&mut out, "conditions", &statuses(before), &statuses(after));
    (out, changes)
}

fn backend(b: &WeightedBackend) -> String {
    let target = match &b.target {
        BackendTarget::Cluster(name) => name.clone(),
        BackendTarget::Invalid { reason } => format!("invalid ({reason})"),
    };
    format!("{target} weight {}", b.weight)
}

fn list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join("; ")
    }
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn listener_key(l: &Listener) -> String {
    match &l.listener_set {
        Some(set) => format!("{}/{} (ListenerSet {set})", l.gateway, l.name),
        None => format!("{}/{}", l.gateway, l.name),
    }
}

fn listeners(config: &Config) -> BTreeMap<String, Fields> {
    let mut out = BTreeMap::new();
    for socket in &config.sockets {
        for l in &socket.listeners {
            let serves = match &l.serve {
                Serve::Http(_) if l.tls.is_some() => "HTTPS",
                Serve::Http(_) => "HTTP",
                Serve::TlsPassthrough(_) => "TLS passthrough",
                Serve::Tcp(_) if l.tls.is_some() => "TLS terminate",
                Serve::Tcp(_) => "TCP",
                Serve::Udp(_) => "UDP",
            };
            let mut fields = Fields::new();
            fields.insert(
                "socket",
                format!("{:?} {}", socket.transport, socket.addr()),
            );
            fields.insert("protocol", serves.to_string());
            fields.insert(
                "hostname",
                l.hostname
                    .as_ref()
                    .map_or("none", |h| h.as_str())
                    .to_string(),
            );
            let certificates = l.tls.iter().flat_map(|t| &t.certificates);
            fields.insert("certificates", list(certificates.map(|c| c.source.clone())));
            out.insert(listener_key(l), fields);
        }
    }
    out
}

/// Route key (`HTTPRoute ns/name`) -> rule index -> fields.
type Rules = BTreeMap<String, BTreeMap<u32, Fields>>;

fn add_listener(fields: &mut Fields, key: &'static str, value: String) {
    let entry = fields.entry(key).or_default();
    if !entry.split("; ").any(|v| v == value) {
        if !entry.is_empty() {
            entry.push_str("; ");
        }
        entry.push_str(&value);
    }
}

/// The fields of one rule, noting that it is served on listener `on`.
fn rule_fields<'o>(
    out: &'o mut Rules,
    id: &coxswain_ir::RouteId,
    hostnames: &[coxswain_ir::Hostname],
    on: &str,
) -> &'o mut Fields {
    let key = format!("{} {}/{}", id.kind.as_str(), id.namespace, id.name);
    let fields = out
        .entry(key)
        .or_default()
        .entry(id.rule_index)
        .or_default();
    add_listener(fields, "listeners", on.to_string());
    let names: Vec<&str> = hostnames.iter().map(|h| h.as_str()).collect();
    let names = if names.is_empty() {
        "any".to_string()
    } else {
        names.join(" ")
    };
    add_listener(fields, "hostnames", format!("{on}: {names}"));
    fields
}

fn routes(config: &Config) -> Rules {
    let mut out = Rules::new();
    for socket in &config.sockets {
        for l in &socket.listeners {
            let on = listener_key(l);
            match &l.serve {
                Serve::Http(routes) => {
                    for r in routes {
                        let fields = rule_fields(&mut out, &r.id, &r.hostnames, &on);
                        fields.insert("matches", list(r.matches.iter().map(describe::route_match)));
                        let filters = r.filters.iter().map(|f| {
                            let (kind, detail, _) = describe::filter(f, config);
                            format!("{kind} {detail}")
                        });
                        fields.insert("filters", list(filters));
                        fields.insert("backends", list(r.backends.iter().map(backend)));
                        fields.insert("timeouts", json(&r.timeouts));
                        fields.insert("retry", json(&r.retry));
                        fields.insert("session", json(&r.session));
                    }
                }
                Serve::TlsPassthrough(routes) | Serve::Tcp(routes) | Serve::Udp(routes) => {
                    for r in routes {
                        let fields = rule_fields(&mut out, &r.id, &r.hostnames, &on);
                        fields.insert("backends", list(r.backends.iter().map(backend)));
                    }
                }
            }
        }
    }
    out
}

fn clusters(config: &Config) -> BTreeMap<String, Fields> {
    config
        .clusters
        .iter()
        .map(|c| {
            let mut fields = Fields::new();
            fields.insert(
                "endpoints",
                list(c.endpoints.iter().map(|e| e.address.to_string())),
            );
            fields.insert("protocol", format!("{:?}", c.protocol));
            fields.insert("tls", json(&c.tls));
            fields.insert("policy", json(&c.policy));
            fields.insert("retry budget", json(&c.retry_budget));
            (c.name.clone(), fields)
        })
        .collect()
}

fn statuses(output: &Output) -> BTreeMap<String, Fields> {
    all_statuses(&output.statuses)
        .into_iter()
        .map(|(kind, key, status)| {
            let described = conditions(&status)
                .iter()
                .map(|c| c.describe())
                .collect::<Vec<_>>();
            let mut fields = Fields::new();
            fields.insert("conditions", list(described));
            (format!("{kind} {key}"), fields)
        })
        .collect()
}

fn field_changes(out: &mut String, indent: &str, a: &Fields, b: &Fields) {
    for (field, after) in b {
        let before = a.get(field).map_or("none", String::as_str);
        if before != after {
            let _ = writeln!(out, "{indent}{field}: {before} -> {after}");
        }
    }
    for (field, before) in a {
        if !b.contains_key(field) {
            let _ = writeln!(out, "{indent}{field}: {before} -> none");
        }
    }
}

fn summary(fields: &Fields) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints `+`, `-` and `~` lines for one kind of thing; returns the count.
fn section(
    out: &mut String,
    title: &str,
    a: &BTreeMap<String, Fields>,
    b: &BTreeMap<String, Fields>,
) -> usize {
    let mut body = String::new();
    let mut changes = 0;
    for (key, before) in a {
        match b.get(key) {
            None => {
                changes += 1;
                let _ = writeln!(body, "  - {key}");
            }
            Some(after) if after != before => {
                changes += 1;
                let _ = writeln!(body, "  ~ {key}");
                field_changes(&mut body, "      ", before, after);
            }
            Some(_) => {}
        }
    }
    for (key, after) in b {
        if !a.contains_key(key) {
            changes += 1;
            let _ = writeln!(body, "  + {key}: {}", summary(after));
        }
    }
    if changes > 0 {
        let _ = writeln!(out, "{title}:");
        out.push_str(&body);
    }
    changes
}

fn route_section(out: &mut String, a: &Rules, b: &Rules) -> usize {
    let mut body = String::new();
    let mut changes = 0;
    let empty = BTreeMap::new();
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        let (before, after) = (a.get(key), b.get(key));
        if before == after {
            continue;
        }
        changes += 1;
        match (before, after) {
            (None, Some(rules)) => {
                let _ = writeln!(body, "  + {key}");
                for (i, fields) in rules {
                    let _ = writeln!(body, "      rule {i}: {}", summary(fields));
                }
            }
            (Some(_), None) => {
                let _ = writeln!(body, "  - {key}");
            }
            _ => {
                let _ = writeln!(body, "  ~ {key}");
                let (before, after) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
                let indices: std::collections::BTreeSet<&u32> =
                    before.keys().chain(after.keys()).collect();
                for i in indices {
                    match (before.get(i), after.get(i)) {
                        (None, Some(fields)) => {
                            let _ = writeln!(body, "      + rule {i}: {}", summary(fields));
                        }
                        (Some(_), None) => {
                            let _ = writeln!(body, "      - rule {i}");
                        }
                        (Some(x), Some(y)) if x != y => {
                            let _ = writeln!(body, "      ~ rule {i}");
                            field_changes(&mut body, "          ", x, y);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    if changes > 0 {
        let _ = writeln!(out, "routes:");
        out.push_str(&body);
    }
    changes
}
