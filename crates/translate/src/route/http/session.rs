//! HTTPRoute (and GRPCRoute) rule `sessionPersistence` (GEP-1619): which
//! cookie or header carries the session token, and when a session ends.
//! Values the CRD would refuse drop the rule (`UnsupportedValue`).

use coxswain_api::gw::httproutes::{
    HttpRouteRulesSessionPersistence, HttpRouteRulesSessionPersistenceCookieConfigLifetimeType,
    HttpRouteRulesSessionPersistenceType,
};
use coxswain_ir::{RouteSession, SessionCarrier};

use crate::duration::parse_duration_ms;

/// The cookie a rule's sessions use when it names none.
pub const DEFAULT_COOKIE: &str = "__coxswain_session";
/// The header a rule's sessions use when it names none.
pub const DEFAULT_HEADER: &str = "x-coxswain-session";

pub fn compile_session(
    s: Option<&HttpRouteRulesSessionPersistence>,
) -> Result<Option<RouteSession>, String> {
    let Some(s) = s else {
        return Ok(None);
    };
    let timeout = |field: &str, value: Option<&str>| -> Result<Option<u64>, String> {
        match value {
            None => Ok(None),
            Some(text) => match parse_duration_ms(text) {
                Ok(0) => Err(format!("sessionPersistence.{field} must be longer than 0")),
                Ok(ms) => Ok(Some(ms)),
                Err(e) => Err(format!("sessionPersistence.{field}: {e}")),
            },
        }
    };
    let absolute_timeout_ms = timeout("absoluteTimeout", s.absolute_timeout.as_deref())?;
    let idle_timeout_ms = timeout("idleTimeout", s.idle_timeout.as_deref())?;
    let lifetime = s
        .cookie_config
        .as_ref()
        .and_then(|c| c.lifetime_type.clone());
    let header = s.r#type == Some(HttpRouteRulesSessionPersistenceType::Header);
    let carrier = match (header, lifetime) {
        (true, Some(_)) => {
            return Err("sessionPersistence.cookieConfig is for Cookie sessions only".into());
        }
        (true, None) => SessionCarrier::Header,
        (false, Some(HttpRouteRulesSessionPersistenceCookieConfigLifetimeType::Permanent)) => {
            if absolute_timeout_ms.is_none() {
                return Err(
                    "sessionPersistence: a Permanent cookie needs absoluteTimeout for its Max-Age"
                        .into(),
                );
            }
            SessionCarrier::Cookie { permanent: true }
        }
        (false, _) => SessionCarrier::Cookie { permanent: false },
    };
    let name = match s.session_name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) if token(n) => {
            if header {
                n.to_ascii_lowercase()
            } else {
                n.to_string()
            }
        }
        Some(n) => {
            return Err(format!(
                "sessionPersistence.sessionName {n:?} is not a valid {} name",
                if header { "header" } else { "cookie" }
            ));
        }
        None if header => DEFAULT_HEADER.to_string(),
        None => DEFAULT_COOKIE.to_string(),
    };
    Ok(Some(RouteSession {
        name,
        carrier,
        absolute_timeout_ms,
        idle_timeout_ms,
    }))
}

/// An RFC 9110 token (header and cookie names).
fn token(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_api::gw::httproutes::HttpRouteRulesSessionPersistenceCookieConfig;

    fn sp(
        name: Option<&str>,
        header: bool,
        absolute: Option<&str>,
        permanent: Option<bool>,
    ) -> HttpRouteRulesSessionPersistence {
        HttpRouteRulesSessionPersistence {
            session_name: name.map(str::to_string),
            r#type: header.then_some(HttpRouteRulesSessionPersistenceType::Header),
            absolute_timeout: absolute.map(str::to_string),
            cookie_config: permanent.map(|p| HttpRouteRulesSessionPersistenceCookieConfig {
                lifetime_type: Some(if p {
                    HttpRouteRulesSessionPersistenceCookieConfigLifetimeType::Permanent
                } else {
                    HttpRouteRulesSessionPersistenceCookieConfigLifetimeType::Session
                }),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_and_carriers() {
        let cookie = compile_session(Some(&sp(None, false, None, None)))
            .unwrap()
            .unwrap();
        assert_eq!(cookie.name, DEFAULT_COOKIE);
        assert_eq!(cookie.carrier, SessionCarrier::Cookie { permanent: false });
        let header = compile_session(Some(&sp(Some("X-Session"), true, Some("1h"), None)))
            .unwrap()
            .unwrap();
        assert_eq!(
            (header.name.as_str(), header.carrier),
            ("x-session", SessionCarrier::Header)
        );
        assert_eq!(header.absolute_timeout_ms, Some(3_600_000));
        let permanent = compile_session(Some(&sp(Some("s"), false, Some("10m"), Some(true))))
            .unwrap()
            .unwrap();
        assert_eq!(
            permanent.carrier,
            SessionCarrier::Cookie { permanent: true }
        );
    }

    #[test]
    fn what_the_crd_would_refuse() {
        for bad in [
            sp(None, false, None, Some(true)),
            sp(None, true, None, Some(false)),
            sp(Some("a b"), false, None, None),
            sp(None, false, Some("soon"), None),
            sp(None, false, Some("0s"), None),
        ] {
            assert!(compile_session(Some(&bad)).is_err(), "{bad:?}");
        }
    }
}
