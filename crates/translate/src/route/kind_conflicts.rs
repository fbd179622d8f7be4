//! An HTTPRoute and a GRPCRoute on one listener with intersecting
//! hostnames: the spec accepts exactly one of the two, the older (then the
//! first by namespace/name), and the other gets `Accepted=False` on that
//! parent. Routes of the same kind never conflict this way (their rules
//! merge by precedence).
//!
//! Runs after every route's own outcome is known (the memoised per-route
//! work never looks at other routes), in rank order.

use std::collections::BTreeMap;

use coxswain_api::ObjectKey;
use coxswain_ir::{Hostname, RouteKind};

use crate::route::IrRules;
use crate::route::attach::RouteOutcome;
use crate::route::object::RouteKey;

/// A listener entry a route lost, and to whom.
#[derive(Clone, Debug, PartialEq)]
pub struct Lost {
    /// Index into the loser's `RouteOutcome::listeners`.
    pub entry: usize,
    pub winner: RouteKey,
}

/// The HTTP-family kinds that exclude each other on shared hostnames.
fn rival(kind: RouteKind) -> Option<RouteKind> {
    match kind {
        RouteKind::Http => Some(RouteKind::Grpc),
        RouteKind::Grpc => Some(RouteKind::Http),
        _ => None,
    }
}

/// Do two effective hostname lists share a name? Empty means every name
/// the listener accepts.
fn overlap(a: &[Hostname], b: &[Hostname]) -> bool {
    a.is_empty()
        || b.is_empty()
        || a.iter().any(|x| {
            b.iter().any(|y| {
                Hostname::intersect(x, y)
                    .or_else(|| Hostname::intersect(y, x))
                    .is_some()
            })
        })
}

fn hostnames(rules: &IrRules) -> Option<&[Hostname]> {
    match rules {
        IrRules::Http(routes) => routes.first().map(|r| r.hostnames.as_slice()),
        IrRules::L4(_) => None,
    }
}

/// A route kept on a listener, with its effective hostnames there.
type Kept<'a> = (&'a RouteKey, &'a [Hostname]);

/// The entries each route loses, for routes given oldest first.
pub fn resolve<'a>(
    ranked: impl Iterator<Item = (&'a RouteKey, &'a RouteOutcome)>,
) -> BTreeMap<RouteKey, Vec<Lost>> {
    // Per listener: the routes kept there, with their hostnames.
    // Per listener and kind, so a route is compared with its rivals only
    // (not with every route of its own kind: quadratic at 5,000 routes).
    let mut kept: BTreeMap<(&ObjectKey, usize, RouteKind), Vec<Kept<'_>>> = BTreeMap::new();
    let mut lost: BTreeMap<RouteKey, Vec<Lost>> = BTreeMap::new();
    for (key, outcome) in ranked {
        let Some(rival) = rival(key.0) else {
            continue;
        };
        for (entry, attached) in outcome.listeners.iter().enumerate() {
            let Some(names) = hostnames(&attached.rules) else {
                continue;
            };
            let winner = kept
                .get(&(&attached.gateway, attached.listener, rival))
                .and_then(|rivals| rivals.iter().find(|(_, theirs)| overlap(names, theirs)));
            match winner {
                Some((winner, _)) => lost.entry(key.clone()).or_default().push(Lost {
                    entry,
                    winner: (*winner).clone(),
                }),
                None => kept
                    .entry((&attached.gateway, attached.listener, key.0))
                    .or_default()
                    .push((key, names)),
            }
        }
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn hostnames_overlap_by_wildcard_or_emptiness() {
        assert!(overlap(&[], &[h("a.com")]));
        assert!(overlap(&[h("*.a.com")], &[h("x.a.com")]));
        assert!(overlap(&[h("x.a.com")], &[h("*.a.com")]));
        assert!(overlap(&[h("*.a.com")], &[h("*.x.a.com")]));
        assert!(!overlap(&[h("a.com")], &[h("b.com")]));
        assert!(!overlap(&[h("*.a.com")], &[h("a.com")]));
    }
}
