//! Why each other rule match of the listener does not answer: the
//! conditions it fails (found by the proxy's own matcher), or, when it
//! matches too, why the winner ranks above it.

use std::cmp::Ordering;
use std::sync::Arc;

use coxswain_ir::{HostSpecificity, Hostname, MatchSpecificity, PathMatch, Route, RouteMatch};
use coxswain_proxy::router::{CompiledMatch, MatchError, Mismatch, RequestView};

use super::describe;
use super::model::{Field, NearMiss, Reason};

fn reason(field: Field, message: String) -> Reason {
    Reason { field, message }
}

/// The route hostname the router files `host` under for this route:
/// the exact name, else the longest wildcard covering it; `None` when
/// the route has no hostnames (any host).
fn hostname_for<'r>(route: &'r Route, host: &str) -> Option<Option<&'r Hostname>> {
    if route.hostnames.is_empty() {
        return Some(None);
    }
    if let Some(exact) = route.hostnames.iter().find(|h| h.as_str() == host) {
        return Some(Some(exact));
    }
    route
        .hostnames
        .iter()
        .filter(|h| h.is_wildcard() && h.matches(host))
        .max_by_key(|h| h.as_str().len())
        .map(Some)
}

fn value_seen(found: Option<&str>) -> String {
    match found {
        Some(v) => format!("got {v:?}"),
        None => "absent".to_string(),
    }
}

fn first_query_value<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

fn mismatch_reason(m: &RouteMatch, miss: Mismatch, req: &RequestView<'_>) -> Reason {
    match miss {
        Mismatch::Path => reason(
            Field::Path,
            format!(
                "path {} does not match {}",
                req.path,
                describe::path(&m.path)
            ),
        ),
        Mismatch::Method => reason(
            Field::Method,
            format!(
                "method {} is not {}",
                req.method,
                m.method.as_deref().unwrap_or_default()
            ),
        ),
        Mismatch::Header(i) => {
            let Some(h) = m.headers.get(i) else {
                return reason(Field::Header, format!("header condition {i}"));
            };
            let found = req.headers.get(&h.name).and_then(|v| v.to_str().ok());
            reason(
                Field::Header,
                format!(
                    "header {} {}: {}",
                    h.name,
                    describe::value(&h.value),
                    value_seen(found)
                ),
            )
        }
        Mismatch::Query(i) => {
            let Some(q) = m.query.get(i) else {
                return reason(Field::Query, format!("query condition {i}"));
            };
            let found = first_query_value(req.query, &q.name);
            reason(
                Field::Query,
                format!(
                    "query {} {}: {}",
                    q.name,
                    describe::value(&q.value),
                    value_seen(found)
                ),
            )
        }
    }
}

fn path_rank(p: &PathMatch) -> (u8, &'static str) {
    match p {
        PathMatch::Exact(_) => (0, "an Exact path"),
        PathMatch::Regex(_) => (1, "a RegularExpression path"),
        PathMatch::Prefix(_) => (2, "a PathPrefix"),
    }
}

fn path_len(p: &PathMatch) -> usize {
    match p {
        PathMatch::Exact(v) | PathMatch::Regex(v) => v.len(),
        PathMatch::Prefix(v) => v.trim_end_matches('/').len(),
    }
}

/// The first precedence criterion on which `winner` beats `loser`.
fn why_lower(winner: &RouteMatch, loser: &RouteMatch) -> String {
    let (w, l) = (path_rank(&winner.path), path_rank(&loser.path));
    if winner.grpc != loser.grpc {
        return "the winner names more of the gRPC service and method".to_string();
    }
    if w.0 != l.0 {
        return format!("the winner has {}, which ranks above {}", w.1, l.1);
    }
    if path_len(&winner.path) != path_len(&loser.path) {
        return "the winner's path is longer".to_string();
    }
    if winner.method.is_some() != loser.method.is_some() {
        return "the winner also matches the method".to_string();
    }
    if winner.headers.len() != loser.headers.len() {
        return format!(
            "the winner has more header matches ({} to {})",
            winner.headers.len(),
            loser.headers.len()
        );
    }
    format!(
        "the winner has more query parameter matches ({} to {})",
        winner.query.len(),
        loser.query.len()
    )
}

fn host_text(h: Option<&Hostname>) -> String {
    h.map_or_else(|| "none (any host)".to_string(), |h| h.as_str().to_string())
}

/// Why a match that fully matches ranks below the winner's.
fn precedence(
    (route, m): (&Route, &RouteMatch),
    (winner, winner_match): (&Route, &RouteMatch),
    host: &str,
) -> Reason {
    let mine = hostname_for(route, host).flatten();
    let theirs = hostname_for(winner, host).flatten();
    let by_host = HostSpecificity::of(theirs).cmp(&HostSpecificity::of(mine));
    let message = if by_host == Ordering::Less {
        format!(
            "matches too, but the winner's hostname {} is more specific than this rule's {}",
            host_text(theirs),
            host_text(mine)
        )
    } else if MatchSpecificity::of(winner_match) < MatchSpecificity::of(m) {
        format!(
            "matches too, but ranks lower: {}",
            why_lower(winner_match, m)
        )
    } else {
        "matches too and is as specific, but the winner comes first (older route, then namespace/name, then rule and match order)".to_string()
    };
    reason(Field::Precedence, message)
}

/// Every match of `routes` but the winner's, with why it does not answer.
pub fn near_misses(
    routes: &[Arc<Route>],
    winner: Option<(&Route, usize)>,
    req: &RequestView<'_>,
) -> Vec<NearMiss> {
    let mut out = Vec::new();
    for route in routes {
        let compiled: Result<Vec<CompiledMatch>, MatchError> =
            route.matches.iter().map(CompiledMatch::compile).collect();
        let host_ok = hostname_for(route, req.host).is_some();
        for (match_index, m) in route.matches.iter().enumerate() {
            if winner.is_some_and(|(w, i)| w.id == route.id && i == match_index) {
                continue;
            }
            let mut reasons = Vec::new();
            match &compiled {
                Err(MatchError(why)) => reasons.push(reason(
                    Field::Invalid,
                    format!("the proxy skips this rule: {why}"),
                )),
                Ok(compiled) => {
                    if !host_ok {
                        let names: Vec<&str> = route.hostnames.iter().map(|h| h.as_str()).collect();
                        reasons.push(reason(
                            Field::Hostname,
                            format!(
                                "Host {} is not among the rule's hostnames ({})",
                                req.host,
                                names.join(", ")
                            ),
                        ));
                    }
                    if let Some(c) = compiled.get(match_index) {
                        reasons.extend(
                            c.mismatches(req)
                                .into_iter()
                                .map(|miss| mismatch_reason(m, miss, req)),
                        );
                    }
                    if reasons.is_empty()
                        && let Some((w, i)) = winner
                        && let Some(wm) = w.matches.get(i)
                    {
                        reasons.push(precedence((route, m), (w, wm), req.host));
                    }
                }
            }
            out.push(NearMiss {
                kind: route.id.kind.as_str(),
                namespace: route.id.namespace.clone(),
                name: route.id.name.clone(),
                rule_index: route.id.rule_index,
                rule_name: route.id.rule_name.clone(),
                match_index,
                matched: describe::route_match(m),
                reasons,
            });
        }
    }
    out
}
