//! HTTPRoute CORS filter -> IR CORS policy, with validation.

use coxswain_api::gw::httproutes::HttpRouteRulesFiltersCors;
use coxswain_ir::Cors;

use super::is_token;

/// The spec's default `maxAge`.
const DEFAULT_MAX_AGE_S: u32 = 5;

pub fn compile_cors(c: &HttpRouteRulesFiltersCors) -> Result<Cors, String> {
    let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
    let allow_origins = list(&c.allow_origins);
    if let Some(bad) = allow_origins.iter().find(|o| !valid_origin(o)) {
        return Err(format!(
            "CORS allowOrigins {bad:?} is not * or scheme://host[:port] (http or https)"
        ));
    }
    let (allow_methods, allow_headers, expose_headers) = (
        list(&c.allow_methods),
        list(&c.allow_headers),
        list(&c.expose_headers),
    );
    for (field, values) in [
        ("allowMethods", &allow_methods),
        ("allowHeaders", &allow_headers),
        ("exposeHeaders", &expose_headers),
    ] {
        if let Some(bad) = values.iter().find(|v| *v != "*" && !is_token(v)) {
            return Err(format!("CORS {field} {bad:?} is not a token or *"));
        }
    }
    let max_age_s = match c.max_age {
        None => DEFAULT_MAX_AGE_S,
        Some(age) => u32::try_from(age).map_err(|_| format!("CORS maxAge {age} is negative"))?,
    };
    Ok(normalised(Cors {
        allow_origins,
        allow_methods,
        allow_headers,
        expose_headers,
        allow_credentials: c.allow_credentials.unwrap_or(false),
        max_age_s,
    }))
}

/// Header names lower-case, as the IR wants them.
fn normalised(mut cors: Cors) -> Cors {
    for h in cors
        .allow_headers
        .iter_mut()
        .chain(cors.expose_headers.iter_mut())
    {
        *h = h.to_ascii_lowercase();
    }
    cors
}

/// A policy built from elsewhere (Ingress annotations), checked by the
/// same rules as the HTTPRoute filter.
pub(crate) fn validate(cors: Cors) -> Result<Cors, String> {
    if let Some(bad) = cors.allow_origins.iter().find(|o| !valid_origin(o)) {
        return Err(format!(
            "CORS origin {bad:?} is not * or scheme://host[:port] (http or https)"
        ));
    }
    for (field, values) in [
        ("methods", &cors.allow_methods),
        ("headers", &cors.allow_headers),
        ("expose headers", &cors.expose_headers),
    ] {
        if let Some(bad) = values.iter().find(|v| *v != "*" && !is_token(v)) {
            return Err(format!("CORS {field} {bad:?} is not a token or *"));
        }
    }
    Ok(normalised(cors))
}

/// `*`, or `http(s)://host[:port]` where host may start with `*`.
fn valid_origin(origin: &str) -> bool {
    if origin == "*" {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    let host = host.strip_prefix('*').unwrap_or(host);
    let host_ok = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !host.contains("..");
    matches!(scheme, "http" | "https") && port_ok && host_ok && !rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cors(origins: &[&str]) -> HttpRouteRulesFiltersCors {
        HttpRouteRulesFiltersCors {
            allow_origins: Some(origins.iter().map(|o| o.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn origins_are_checked() {
        for good in [
            "*",
            "https://www.foo.com",
            "https://*.bar.com",
            "http://a.b:8080",
        ] {
            assert!(compile_cors(&cors(&[good])).is_ok(), "{good}");
        }
        for bad in [
            "ftp://a.com",
            "www.foo.com",
            "https://a.com:0",
            "https://a..com",
            "https://a b",
        ] {
            assert!(compile_cors(&cors(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_and_lists() {
        let got = compile_cors(&HttpRouteRulesFiltersCors {
            allow_methods: Some(vec!["GET".into(), "*".into()]),
            allow_headers: Some(vec!["X-Token".into()]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(got.max_age_s, 5);
        assert!(!got.allow_credentials);
        assert_eq!(got.allow_headers, ["x-token"]);
        let bad = HttpRouteRulesFiltersCors {
            max_age: Some(-1),
            ..Default::default()
        };
        assert!(compile_cors(&bad).is_err());
    }
}
