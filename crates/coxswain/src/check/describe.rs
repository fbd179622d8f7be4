//! `check -o describe`: each object with its conditions as tables, one per
//! place they sit (the object, each listener, each parent or ancestor), as
//! `kubectl describe` prints them.

use std::fmt::Write;

use coxswain_api::Object;
use coxswain_translate::Output;

use crate::conditions::{Found, conditions};

/// `listener http` -> `Listener http`.
fn title(scope: &str) -> String {
    let mut chars = scope.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn table(out: &mut String, rows: &[&Found], indent: &str) {
    let header = ["Type", "Status", "Reason", "Message"];
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|c| {
            [
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str(),
            ]
        })
        .collect();
    let width = |i: usize| {
        cells
            .iter()
            .filter_map(|row| row.get(i))
            .chain(header.get(i))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let line = |out: &mut String, [a, b, c, d]: [&str; 4]| {
        let _ = writeln!(out, "{indent}{a:<w0$}  {b:<w1$}  {c:<w2$}  {d}");
    };
    line(out, header);
    line(out, ["----", "------", "------", "-------"]);
    for row in cells {
        line(out, row);
    }
}

/// Every object, its conditions grouped by where they sit.
pub fn describe(objects: &[Object], output: &Output) -> String {
    let mut out = String::new();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let key = object.key();
        let _ = writeln!(out, "Kind:       {}", object.kind());
        let _ = writeln!(out, "Name:       {}", key.name);
        if !key.namespace.is_empty() {
            let _ = writeln!(out, "Namespace:  {}", key.namespace);
        }
        let Some(status) = output.statuses.status_json(object.kind(), &key) else {
            let _ = writeln!(
                out,
                "Status:     none (not a kind Coxswain writes status for)"
            );
            continue;
        };
        let found = conditions(&status);
        if found.is_empty() {
            let _ = writeln!(out, "Conditions: none");
            continue;
        }
        // Scopes in the order the status lists them.
        let mut scopes: Vec<&str> = Vec::new();
        for c in &found {
            if !scopes.contains(&c.scope.as_str()) {
                scopes.push(&c.scope);
            }
        }
        for scope in scopes {
            let rows: Vec<&Found> = found.iter().filter(|c| c.scope == scope).collect();
            if scope.is_empty() {
                let _ = writeln!(out, "Conditions:");
                table(&mut out, &rows, "  ");
            } else {
                let _ = writeln!(out, "{}:", title(scope));
                let _ = writeln!(out, "  Conditions:");
                table(&mut out, &rows, "    ");
            }
        }
    }
    out
}
