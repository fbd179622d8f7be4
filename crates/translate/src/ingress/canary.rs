//! Canary Ingresses joined to the rules they shadow (ingress-nginx
//! semantics): a canary's rule for a host and path adds its backend to the
//! older non-canary rule with the same host and path. A request is sent to
//! the canary by header first, then by cookie, then by weight. The rules
//! added for the header and cookie carry the main rule's filters, so the
//! canary is protected exactly like the main backend.

use coxswain_api::ObjectKey;
use coxswain_ir::{HeaderMatch, Route, StringMatch, WeightedBackend};

use super::annotate::Served;
use super::annotations::Canary;
use super::problem::IngressProblem;

/// A canary Ingress's rules, to be joined to the main rules.
pub struct CanaryIngress {
    pub key: ObjectKey,
    pub canary: Canary,
    pub routes: Vec<Route>,
}

/// Joins every canary (oldest first) to the main rules in `routes`.
/// Problems are returned by the canary Ingress they concern.
pub fn join(
    routes: &mut Vec<Served>,
    canaries: Vec<CanaryIngress>,
) -> Vec<(ObjectKey, IngressProblem)> {
    let mut problems = Vec::new();
    let mut taken = vec![false; routes.len()];
    for c in canaries {
        for rule in c.routes {
            let main = routes.iter().zip(&taken).position(|(s, t)| {
                !t && s.route.id.rule_name.is_none()
                    && s.route.hostnames == rule.hostnames
                    && s.route.matches == rule.matches
            });
            let Some(i) = main else {
                problems.push((
                    c.key.clone(),
                    IngressProblem::AnnotationEffect {
                        annotation: format!("{}canary", super::annotations::COXSWAIN_PREFIX),
                        why: format!(
                            "rule {}: no older non-canary Ingress serves this host and path (or another canary has it); it is not served",
                            rule.id.rule_index
                        ),
                    },
                ));
                continue;
            };
            let added = joined(routes, i, &c.canary, rule.backends);
            taken.splice(i..i, std::iter::repeat_n(true, added));
            if let Some(t) = taken.get_mut(i + added) {
                *t = true;
            }
        }
    }
    problems
}

/// Puts the canary's `backends` into the rule at `i`, inserting the header
/// and cookie rules before it; returns how many rules were inserted.
fn joined(
    routes: &mut Vec<Served>,
    i: usize,
    canary: &Canary,
    backends: Vec<WeightedBackend>,
) -> usize {
    let Some(main) = routes.get_mut(i) else {
        return 0;
    };
    let redirect = main.redirect;
    let original = main.route.clone();
    let main_backends = original.backends.clone();
    let mut extra = Vec::new();
    let with = |name: &str, header: HeaderMatch, to: &[WeightedBackend]| {
        let mut r = original.clone();
        r.id.rule_name = Some(name.to_string());
        for m in &mut r.matches {
            m.headers.push(header.clone());
        }
        r.backends = to.to_vec();
        Served { route: r, redirect }
    };
    if let Some(h) = &canary.header {
        let exact = |v: &str| HeaderMatch {
            name: h.name.clone(),
            value: StringMatch::Exact(v.to_string()),
        };
        match (&h.value, &h.pattern) {
            (Some(v), _) => extra.push(with("canary-by-header", exact(v), &backends)),
            (None, Some(p)) => {
                let matching = HeaderMatch {
                    name: h.name.clone(),
                    value: StringMatch::Regex(p.clone()),
                };
                extra.push(with("canary-by-header", matching, &backends));
            }
            (None, None) => {
                extra.push(with("canary-by-header", exact("always"), &backends));
                extra.push(with(
                    "canary-by-header-never",
                    exact("never"),
                    &main_backends,
                ));
            }
        }
    }
    if let Some(cookie) = &canary.cookie {
        let cookie_is = |v: &str| HeaderMatch {
            name: "cookie".into(),
            value: StringMatch::Regex(format!(r"(^|;\s*){}={v}(;|$)", regex::escape(cookie))),
        };
        extra.push(with("canary-by-cookie", cookie_is("always"), &backends));
        extra.push(with(
            "canary-by-cookie-never",
            cookie_is("never"),
            &main_backends,
        ));
    }
    let main_share = canary.weight_total.saturating_sub(canary.weight);
    main.route.backends = main_backends
        .into_iter()
        .map(|b| WeightedBackend {
            weight: b.weight.saturating_mul(main_share),
            ..b
        })
        .chain(backends.into_iter().map(|b| WeightedBackend {
            weight: b.weight.saturating_mul(canary.weight),
            ..b
        }))
        .collect();
    let added = extra.len();
    routes.splice(i..i, extra);
    added
}
