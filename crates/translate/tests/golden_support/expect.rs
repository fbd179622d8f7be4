//! `# expect:` lines: assertions about statuses and the IR that are checked
//! independently of the golden diff (grammar documented in `golden.rs`).

use coxswain_api::ObjectKey;
use coxswain_translate::Output;
use serde_json::Value;

use crate::expect_ir;

pub struct Expectation {
    /// 1-based line in the `.in.yaml`.
    pub line: usize,
    pub text: String,
}

const PREFIX: &str = "# expect:";

pub fn extract(input: &str) -> Vec<Expectation> {
    input
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let text = line.trim().strip_prefix(PREFIX)?.trim();
            Some(Expectation {
                line: i + 1,
                text: text.to_string(),
            })
        })
        .collect()
}

/// Checks one expectation; `Err` says what was found instead.
pub fn check(expectation: &Expectation, output: &Output) -> Result<(), String> {
    let tokens: Vec<&str> = expectation.text.split_whitespace().collect();
    match tokens.as_slice() {
        ["ir", rest @ ..] => expect_ir::check(rest, &expectation.text, &output.ir),
        [kind, key, rest @ ..] => check_status(kind, key, rest, output),
        _ => Err("expectation needs `<Kind> <key> ...` or `ir ...`".into()),
    }
}

/// Selectors that pick the part of a status an assertion is about.
#[derive(Default)]
struct Selectors<'a> {
    parent: Option<&'a str>,
    parent_namespace: Option<&'a str>,
    section: Option<&'a str>,
    port: Option<&'a str>,
    listener: Option<&'a str>,
    ancestor: Option<&'a str>,
}

fn parse_key(kind: &str, key: &str) -> ObjectKey {
    match key.split_once('/') {
        Some((namespace, name)) => ObjectKey::new(namespace, name),
        None if matches!(kind, "GatewayClass" | "Namespace") => ObjectKey::cluster(key),
        None => ObjectKey::new("default", key),
    }
}

fn check_status(kind: &str, key: &str, tokens: &[&str], output: &Output) -> Result<(), String> {
    let key = parse_key(kind, key);
    if kind == "Ingress" && tokens != ["no-status"] {
        return check_ingress(&key, tokens, output);
    }
    let mut selectors = Selectors::default();
    let mut rest = tokens;
    while let [token, tail @ ..] = rest {
        let slot = match token.split_once('=') {
            Some(("parent", v)) => (&mut selectors.parent, v),
            Some(("parentns", v)) => (&mut selectors.parent_namespace, v),
            Some(("section", v)) => (&mut selectors.section, v),
            Some(("port", v)) => (&mut selectors.port, v),
            Some(("listener", v)) => (&mut selectors.listener, v),
            Some(("ancestor", v)) => (&mut selectors.ancestor, v),
            _ => break,
        };
        *slot.0 = Some(slot.1);
        rest = tail;
    }
    let kind_id = coxswain_api::Kind::from_name(kind).ok_or(format!("unknown kind {kind}"))?;
    let status = output.statuses.status_json(kind_id, &key);
    if rest == ["no-status"] {
        let parents = status
            .as_ref()
            .and_then(|s| s.get("parents"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        return match (&status, kind) {
            (None, _) => Ok(()),
            (Some(_), k) if k.ends_with("Route") && parents == 0 => Ok(()),
            (Some(s), _) => Err(format!("has status {s}")),
        };
    }
    let status = status.ok_or_else(|| format!("no status for {kind} {key}"))?;
    if let [count] = rest
        && (count.starts_with("parents=") || count.starts_with("ancestors="))
    {
        return assert_on(&status, rest);
    }
    let scope = select_scope(kind, &key, &status, &selectors)?;
    let Some(scope) = scope else {
        return if rest == ["absent"] {
            Ok(())
        } else {
            Err("selected entry is absent".into())
        };
    };
    assert_on(scope, rest)
}

/// `Ingress <key> lb=<ip>:<port,...>`, `problems=<n>` or
/// `problem=<text without spaces, found in one problem>`.
fn check_ingress(key: &ObjectKey, tokens: &[&str], output: &Output) -> Result<(), String> {
    let outcome = output
        .statuses
        .ingresses
        .get(key)
        .ok_or_else(|| format!("Ingress {key} is not ours"))?;
    let problems: Vec<String> = outcome.problems.iter().map(ToString::to_string).collect();
    let [token] = tokens else {
        return Err("expected one Ingress assertion".into());
    };
    match token.split_once('=') {
        Some(("lb", want)) => {
            let got: Vec<String> = outcome
                .status
                .load_balancer
                .iter()
                .flat_map(|lb| lb.ingress.iter().flatten())
                .map(|i| {
                    let ports: Vec<String> = i
                        .ports
                        .iter()
                        .flatten()
                        .map(|p| p.port.to_string())
                        .collect();
                    format!("{}:{}", i.ip.as_deref().unwrap_or("-"), ports.join(","))
                })
                .collect();
            let got = got.join(" ");
            (got == want).then_some(()).ok_or(format!("lb is {got}"))
        }
        Some(("problems", want)) => (problems.len().to_string() == want)
            .then_some(())
            .ok_or(format!("problems are {problems:?}")),
        Some(("problem", want)) => problems
            .iter()
            .any(|p| p.contains(want))
            .then_some(())
            .ok_or(format!("problems are {problems:?}")),
        _ => Err(format!("unknown Ingress assertion `{token}`")),
    }
}

/// The object the assertion talks about: the whole status, one listener, or
/// one route parent. `Ok(None)` when the selected entry does not exist.
fn select_scope<'a>(
    kind: &str,
    key: &ObjectKey,
    status: &'a Value,
    selectors: &Selectors,
) -> Result<Option<&'a Value>, String> {
    if let Some(listener) = selectors.listener {
        let listeners = status.get("listeners").and_then(Value::as_array);
        return Ok(listeners.and_then(|all| {
            all.iter()
                .find(|l| l.get("name").and_then(Value::as_str) == Some(listener))
        }));
    }
    // A filter resource that is also a policy (CoxswainExternalAuth) has
    // ancestors too, selected by name.
    if kind.ends_with("Policy") || selectors.ancestor.is_some() {
        let ancestors = status
            .get("ancestors")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        return match (selectors.ancestor, ancestors) {
            (None, [only]) => Ok(Some(only)),
            (None, []) => Ok(None),
            (None, _) => Err("several ancestors: say ancestor=<gateway>".into()),
            (Some(name), all) => Ok(all
                .iter()
                .find(|a| a["ancestorRef"]["name"].as_str() == Some(name))),
        };
    }
    if !kind.ends_with("Route") {
        return Ok(Some(status));
    }
    let parents = status
        .get("parents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(name) = selectors.parent else {
        return match parents {
            [only] => Ok(Some(only)),
            [] => Ok(None),
            _ => Err("several parents: say parent=<gateway>".into()),
        };
    };
    let wanted_ns = selectors.parent_namespace.unwrap_or(&key.namespace);
    let found = parents.iter().find(|p| {
        let r = &p["parentRef"];
        let text = |field: &str| {
            r.get(field)
                .map(|v| v.to_string().trim_matches('"').to_string())
        };
        r.get("name").and_then(Value::as_str) == Some(name)
            && text("namespace").as_deref().unwrap_or(wanted_ns) == wanted_ns
            && text("sectionName").as_deref() == selectors.section
            && text("port").as_deref() == selectors.port
    });
    Ok(found)
}

fn assert_on(scope: &Value, tokens: &[&str]) -> Result<(), String> {
    let (first, reason) = match tokens {
        [first] => (*first, None),
        [first, reason] => (*first, Some(*reason)),
        _ => return Err("expected one assertion, optionally followed by a reason".into()),
    };
    let (name, want) = first
        .split_once('=')
        .ok_or_else(|| format!("`{first}` is not name=value"))?;
    match name {
        "attachedRoutes" | "attachedListenerSets" | "parents" | "ancestors" => {
            let got = match &scope[name] {
                Value::Array(items) => items.len().to_string(),
                other => other.to_string(),
            };
            (got == want)
                .then_some(())
                .ok_or(format!("{name} is {got}"))
        }
        "supportedKinds" => {
            let got: Vec<&str> = scope["supportedKinds"]
                .as_array()
                .map(|kinds| kinds.iter().filter_map(|k| k["kind"].as_str()).collect())
                .unwrap_or_default();
            let got = if got.is_empty() {
                "-".into()
            } else {
                got.join(",")
            };
            (got == want)
                .then_some(())
                .ok_or(format!("supportedKinds is {got}"))
        }
        condition => check_condition(scope, condition, want, reason),
    }
}

fn check_condition(
    scope: &Value,
    type_: &str,
    want: &str,
    reason: Option<&str>,
) -> Result<(), String> {
    let conditions = scope["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let found = conditions
        .iter()
        .find(|c| c["type"].as_str() == Some(type_));
    let summary = || {
        conditions
            .iter()
            .map(|c| {
                format!(
                    "{}={} {}",
                    c["type"].as_str().unwrap_or("?"),
                    c["status"].as_str().unwrap_or("?"),
                    c["reason"].as_str().unwrap_or("?")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (found, want) {
        (None, "absent") => Ok(()),
        (None, _) => Err(format!("no {type_} condition; have [{}]", summary())),
        (Some(_), "absent") => Err(format!("{type_} should be absent; have [{}]", summary())),
        (Some(c), _) => {
            let status_ok = c["status"].as_str() == Some(want);
            let reason_ok = reason.is_none_or(|r| c["reason"].as_str() == Some(r));
            (status_ok && reason_ok)
                .then_some(())
                .ok_or_else(|| format!("have [{}]", summary()))
        }
    }
}
