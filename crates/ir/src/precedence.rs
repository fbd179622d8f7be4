//! Gateway API match precedence as plain `Ord` keys, shared by the translator
//! (for stable output) and the proxy (for lookup order). Smaller sorts first.

use std::cmp::{Ordering, Reverse};

use crate::{Hostname, PathMatch, RouteMatch};

/// Orders matches within one host bucket: exact path (longest first), then
/// regular expression (longest pattern first — implementation-specific), then
/// prefix (longest first); then method present; then more header matches; then
/// more query matches. Ties keep IR order (oldest route, namespace/name, rule).
///
/// GRPCRoute matches sort by their service, then method, characters first
/// (more first), as the GRPCRoute spec orders them; HTTPRoute matches have
/// none. The two never compete for one request (an HTTPRoute and a
/// GRPCRoute sharing a hostname on a listener are not both accepted), so
/// where one family sorts against the other only has to be consistent.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MatchSpecificity {
    grpc: Option<(Reverse<u32>, Reverse<u32>)>,
    path_kind: u8,
    path_len: Reverse<usize>,
    method: Reverse<bool>,
    headers: Reverse<usize>,
    query: Reverse<usize>,
}

impl MatchSpecificity {
    pub fn of(m: &RouteMatch) -> Self {
        let (path_kind, len) = match &m.path {
            PathMatch::Exact(p) => (0, p.len()),
            PathMatch::Regex(p) => (1, p.len()),
            PathMatch::Prefix(p) => (2, p.trim_end_matches('/').len()),
        };
        MatchSpecificity {
            grpc: m.grpc.map(|g| (Reverse(g.service), Reverse(g.method))),
            path_kind,
            path_len: Reverse(len),
            method: Reverse(m.method.is_some()),
            headers: Reverse(m.headers.len()),
            query: Reverse(m.query.len()),
        }
    }
}

/// Orders route hostnames for one request host: exact names first, then
/// wildcards with the longest suffix, then routes without hostnames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSpecificity(Option<(bool, usize)>);

impl HostSpecificity {
    pub fn of(hostname: Option<&Hostname>) -> Self {
        HostSpecificity(hostname.map(|h| (h.is_wildcard(), h.as_str().len())))
    }
}

impl Ord for HostSpecificity {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some((aw, al)), Some((bw, bl))) => aw.cmp(bw).then(bl.cmp(al)),
        }
    }
}

impl PartialOrd for HostSpecificity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: PathMatch, method: bool, headers: usize) -> RouteMatch {
        RouteMatch {
            grpc: None,
            path,
            method: method.then(|| "GET".to_string()),
            headers: (0..headers)
                .map(|i| crate::HeaderMatch {
                    name: format!("h{i}"),
                    value: crate::StringMatch::Exact("v".into()),
                })
                .collect(),
            query: vec![],
        }
    }

    #[test]
    fn exact_beats_longer_prefix_and_longer_prefix_beats_shorter() {
        let exact = MatchSpecificity::of(&m(PathMatch::Exact("/a".into()), false, 0));
        let long = MatchSpecificity::of(&m(PathMatch::Prefix("/a/b/c".into()), false, 0));
        let short = MatchSpecificity::of(&m(PathMatch::Prefix("/a".into()), true, 3));
        assert!(exact < long && long < short);
    }

    #[test]
    fn method_then_headers_break_path_ties() {
        let with_method = MatchSpecificity::of(&m(PathMatch::Prefix("/".into()), true, 0));
        let with_headers = MatchSpecificity::of(&m(PathMatch::Prefix("/".into()), false, 2));
        let plain = MatchSpecificity::of(&m(PathMatch::Prefix("/".into()), false, 0));
        assert!(with_method < with_headers && with_headers < plain);
    }

    #[test]
    fn host_specificity_orders_exact_wildcard_none() {
        let exact = Hostname::parse("a.example.com").unwrap();
        let long_wild = Hostname::parse("*.a.example.com").unwrap();
        let wild = Hostname::parse("*.example.com").unwrap();
        let mut keys = [
            HostSpecificity::of(None),
            HostSpecificity::of(Some(&wild)),
            HostSpecificity::of(Some(&exact)),
            HostSpecificity::of(Some(&long_wild)),
        ];
        keys.sort();
        assert_eq!(
            keys,
            [
                HostSpecificity::of(Some(&exact)),
                HostSpecificity::of(Some(&long_wild)),
                HostSpecificity::of(Some(&wild)),
                HostSpecificity::of(None),
            ]
        );
    }
}
