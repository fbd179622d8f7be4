//! `enable-cors` and the `cors-*` settings onto the HTTPRoute CORS
//! filter's policy, with ingress-nginx's defaults for what is not set.

use coxswain_ir::Cors;

use super::Annotations;
use super::reader::{Read, Reader, boolean, list};

const DEFAULT_METHODS: &str = "GET, PUT, POST, DELETE, PATCH, OPTIONS";
const DEFAULT_HEADERS: &str = "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization";
const DEFAULT_MAX_AGE_S: u32 = 1_728_000;

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    let enabled = matches!(
        r.setting("enable-cors", Some("enable-cors"), boolean),
        Read::Valid(true)
    );
    let mut field = |name: &str| match r.setting(name, Some(name), |v| Ok(v.to_string())) {
        Read::Valid(v) => Some(v),
        Read::Invalid | Read::Unset => None,
    };
    let origins = field("cors-allow-origin");
    let methods = field("cors-allow-methods");
    let headers = field("cors-allow-headers");
    let expose = field("cors-expose-headers");
    let credentials = field("cors-allow-credentials");
    let max_age = field("cors-max-age");
    if !enabled {
        for (name, value) in [
            ("cors-allow-origin", &origins),
            ("cors-allow-methods", &methods),
            ("cors-allow-headers", &headers),
            ("cors-expose-headers", &expose),
            ("cors-allow-credentials", &credentials),
            ("cors-max-age", &max_age),
        ] {
            if let Some(v) = value {
                r.invalid(
                    r.key_of(name, Some(name)),
                    v,
                    "has no effect without enable-cors: \"true\"",
                );
            }
        }
        return;
    }
    let policy = policy(
        origins.as_deref(),
        methods.as_deref(),
        headers.as_deref(),
        expose.as_deref(),
        credentials.as_deref(),
        max_age.as_deref(),
    );
    match policy {
        Ok(cors) => out.cors = Some(cors),
        Err(why) => r.invalid(
            r.key_of("enable-cors", Some("enable-cors")),
            "true",
            format!("{why}; CORS is not enabled"),
        ),
    }
}

fn policy(
    origins: Option<&str>,
    methods: Option<&str>,
    headers: Option<&str>,
    expose: Option<&str>,
    credentials: Option<&str>,
    max_age: Option<&str>,
) -> Result<Cors, String> {
    let allow_credentials = match credentials {
        None => true,
        Some(v) => boolean(v).map_err(|e| format!("cors-allow-credentials: {e}"))?,
    };
    let max_age_s = match max_age {
        None => DEFAULT_MAX_AGE_S,
        Some(v) => v
            .parse()
            .map_err(|_| format!("cors-max-age {v:?} is not a number of seconds"))?,
    };
    let origins = list(origins.unwrap_or("*"));
    let (methods, headers, expose) = (
        list(methods.unwrap_or(DEFAULT_METHODS)),
        list(headers.unwrap_or(DEFAULT_HEADERS)),
        list(expose.unwrap_or("")),
    );
    crate::route::http::cors::validate(Cors {
        allow_origins: origins,
        allow_methods: methods.iter().map(|m| m.to_ascii_uppercase()).collect(),
        allow_headers: headers,
        expose_headers: expose,
        allow_credentials,
        max_age_s,
    })
}
