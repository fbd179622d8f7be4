//! RequestMirror filters: the mirror's backendRef resolves exactly as a
//! rule's does (ReferenceGrant, Service, port, protocol), and `percent` or
//! `fraction` becomes one sampling fraction.

use coxswain_api::gw::httproutes::{
    HttpRouteRules, HttpRouteRulesFiltersRequestMirror, HttpRouteRulesFiltersType,
};
use coxswain_ir::RouteKind;

use crate::route::backends::{self, ClusterSpec, Lookup, Unresolved};
use crate::route::object::BackendRef;

/// The rule's mirror filters that carry their configuration, in order.
pub fn mirrors(rule: &HttpRouteRules) -> impl Iterator<Item = &HttpRouteRulesFiltersRequestMirror> {
    rule.filters
        .iter()
        .flatten()
        .filter(|f| f.r#type == HttpRouteRulesFiltersType::RequestMirror)
        .filter_map(|f| f.request_mirror.as_ref())
}

/// Resolves the backendRef of every mirror of `rule`, in [`mirrors`] order.
pub fn resolve(
    lookup: &Lookup<'_>,
    kind: RouteKind,
    route_ns: &str,
    rule: &HttpRouteRules,
) -> Vec<Result<ClusterSpec, Unresolved>> {
    mirrors(rule)
        .map(|m| {
            let b = &m.backend_ref;
            let backend = BackendRef {
                group: b.group.as_deref(),
                kind: b.kind.as_deref(),
                name: &b.name,
                namespace: b.namespace.as_deref(),
                port: b.port,
                weight: None,
            };
            backends::resolve(lookup, kind, route_ns, &backend)
        })
        .collect()
}

/// The share of requests mirrored, as `(numerator, denominator)`: all of
/// them unless `percent` or `fraction` says otherwise.
pub fn sample(m: &HttpRouteRulesFiltersRequestMirror) -> Result<(u32, u32), String> {
    let share = |numerator: i32, denominator: i32| {
        let n = u32::try_from(numerator).ok();
        let d = u32::try_from(denominator).ok().filter(|d| *d > 0);
        match (n, d) {
            (Some(n), Some(d)) if n <= d => Ok((n, d)),
            _ => Err(format!(
                "RequestMirror fraction {numerator}/{denominator} is not between 0 and 1"
            )),
        }
    };
    match (m.percent, &m.fraction) {
        (Some(_), Some(_)) => Err("RequestMirror may set percent or fraction, not both".into()),
        (Some(percent), None) => share(percent, 100),
        (None, Some(f)) => share(f.numerator, f.denominator.unwrap_or(100)),
        (None, None) => Ok((1, 1)),
    }
}

#[cfg(test)]
mod tests {
    use coxswain_api::gw::httproutes::HttpRouteRulesFiltersRequestMirrorFraction as Fraction;

    use super::*;

    fn mirror(
        percent: Option<i32>,
        fraction: Option<(i32, Option<i32>)>,
    ) -> HttpRouteRulesFiltersRequestMirror {
        HttpRouteRulesFiltersRequestMirror {
            percent,
            fraction: fraction.map(|(numerator, denominator)| Fraction {
                numerator,
                denominator,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn sampling_from_percent_or_fraction() {
        assert_eq!(sample(&mirror(None, None)), Ok((1, 1)));
        assert_eq!(sample(&mirror(Some(20), None)), Ok((20, 100)));
        assert_eq!(sample(&mirror(Some(0), None)), Ok((0, 100)));
        assert_eq!(sample(&mirror(None, Some((1, Some(5))))), Ok((1, 5)));
        assert_eq!(sample(&mirror(None, Some((33, None)))), Ok((33, 100)));
    }

    #[test]
    fn impossible_shares_are_errors() {
        assert!(sample(&mirror(Some(101), None)).is_err());
        assert!(sample(&mirror(Some(-1), None)).is_err());
        assert!(sample(&mirror(None, Some((2, Some(1))))).is_err());
        assert!(sample(&mirror(None, Some((1, Some(0))))).is_err());
        assert!(sample(&mirror(Some(5), Some((1, Some(2))))).is_err());
    }
}
