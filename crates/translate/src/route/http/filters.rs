//! HTTPRoute filters -> IR filters, with validation.

use coxswain_api::gw::httproutes::{
    HttpRouteRulesBackendRefsFilters, HttpRouteRulesBackendRefsFiltersType, HttpRouteRulesFilters,
    HttpRouteRulesFiltersRequestRedirect, HttpRouteRulesFiltersRequestRedirectPath,
    HttpRouteRulesFiltersRequestRedirectPathType, HttpRouteRulesFiltersRequestRedirectScheme,
    HttpRouteRulesFiltersType, HttpRouteRulesFiltersUrlRewrite,
    HttpRouteRulesFiltersUrlRewritePath, HttpRouteRulesFiltersUrlRewritePathType,
};
use coxswain_ir::{
    Filter, Header, HeaderModifier, Hostname, Mirror, PathMatch, PathModifier, Redirect, Rewrite,
    RouteMatch,
};

use super::cors::compile_cors;
use super::mirror;
use crate::route::backends::{ClusterSpec, Unresolved};

/// Rule-level filters, in spec order. `matches` are the rule's compiled
/// matches (ReplacePrefixMatch needs every one of them to be a PathPrefix);
/// `mirrors` the resolved backendRef of each RequestMirror filter, in order.
/// A mirror whose backendRef did not resolve is left out (the route's
/// ResolvedRefs says why); the rule still serves. `extensions` holds what
/// each ExtensionRef filter resolved to, in order.
pub fn compile_rule_filters(
    filters: Option<&[HttpRouteRulesFilters]>,
    matches: &[RouteMatch],
    mirrors: &[Result<ClusterSpec, Unresolved>],
    extensions: &[Filter],
) -> Result<Vec<Filter>, String> {
    let mut out = Vec::new();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut mirrors = mirrors.iter();
    let mut extensions = extensions.iter();
    for f in filters.unwrap_or_default() {
        let (name, filter) = match f.r#type {
            HttpRouteRulesFiltersType::RequestHeaderModifier => {
                let m = f
                    .request_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("requestHeaderModifier"))?;
                let modifier = header_modifier(
                    m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.remove.as_deref(),
                )?;
                ("RequestHeaderModifier", Filter::RequestHeaders(modifier))
            }
            HttpRouteRulesFiltersType::ResponseHeaderModifier => {
                let m = f
                    .response_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("responseHeaderModifier"))?;
                let modifier = header_modifier(
                    m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.remove.as_deref(),
                )?;
                ("ResponseHeaderModifier", Filter::ResponseHeaders(modifier))
            }
            HttpRouteRulesFiltersType::RequestRedirect => {
                let r = f
                    .request_redirect
                    .as_ref()
                    .ok_or_else(|| missing("requestRedirect"))?;
                ("RequestRedirect", Filter::Redirect(redirect(r, matches)?))
            }
            HttpRouteRulesFiltersType::UrlRewrite => {
                let r = f
                    .url_rewrite
                    .as_ref()
                    .ok_or_else(|| missing("urlRewrite"))?;
                ("URLRewrite", Filter::Rewrite(rewrite(r, matches)?))
            }
            HttpRouteRulesFiltersType::RequestMirror => {
                let m = f
                    .request_mirror
                    .as_ref()
                    .ok_or_else(|| missing("requestMirror"))?;
                let (numerator, denominator) = mirror::sample(m)?;
                // Every mirror filter with its configuration has a target.
                if let Some(Ok(spec)) = mirrors.next() {
                    out.push(Filter::Mirror(Mirror {
                        cluster: spec.name.clone(),
                        numerator,
                        denominator,
                    }));
                }
                continue; // may appear more than once per rule
            }
            HttpRouteRulesFiltersType::ExtensionRef => {
                f.extension_ref
                    .as_ref()
                    .ok_or_else(|| missing("extensionRef"))?;
                let resolved = extensions
                    .next()
                    .ok_or_else(|| "ExtensionRef was not resolved".to_string())?;
                out.push(resolved.clone());
                continue; // may appear more than once per rule
            }
            HttpRouteRulesFiltersType::Cors => {
                let c = f.cors.as_ref().ok_or_else(|| missing("cors"))?;
                ("CORS", Filter::Cors(compile_cors(c)?))
            }
            HttpRouteRulesFiltersType::ExternalAuth => return Err(unsupported("ExternalAuth")),
        };
        if seen.contains(&name) {
            return Err(format!("filter {name} may appear only once per rule"));
        }
        seen.push(name);
        out.push(filter);
    }
    Ok(out)
}

/// backendRef-level filters: only header modifiers are supported.
pub fn compile_backend_filters(
    filters: Option<&[HttpRouteRulesBackendRefsFilters]>,
) -> Result<Vec<Filter>, String> {
    let mut out = Vec::new();
    for f in filters.unwrap_or_default() {
        let filter = match &f.r#type {
            HttpRouteRulesBackendRefsFiltersType::RequestHeaderModifier => {
                let m = f
                    .request_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("requestHeaderModifier"))?;
                Filter::RequestHeaders(header_modifier(
                    m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.remove.as_deref(),
                )?)
            }
            HttpRouteRulesBackendRefsFiltersType::ResponseHeaderModifier => {
                let m = f
                    .response_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("responseHeaderModifier"))?;
                Filter::ResponseHeaders(header_modifier(
                    m.set.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.add.iter().flatten().map(|h| (&h.name, &h.value)),
                    m.remove.as_deref(),
                )?)
            }
            other => {
                return Err(format!(
                    "backendRef filter {other:?} is not supported; only header modifiers are"
                ));
            }
        };
        out.push(filter);
    }
    Ok(out)
}

fn missing(field: &str) -> String {
    format!("filter is missing its {field} configuration")
}

fn unsupported(kind: &str) -> String {
    format!("filter {kind} is not supported")
}

fn header_modifier<'a>(
    set: impl IntoIterator<Item = (&'a String, &'a String)>,
    add: impl IntoIterator<Item = (&'a String, &'a String)>,
    remove: Option<&[String]>,
) -> Result<HeaderModifier, String> {
    let remove = remove
        .unwrap_or_default()
        .iter()
        .map(|n| header_name(n))
        .collect::<Result<_, _>>()?;
    Ok(HeaderModifier {
        set: headers(set)?,
        add: headers(add)?,
        remove,
    })
}

fn headers<'a>(
    pairs: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<Vec<Header>, String> {
    pairs
        .into_iter()
        .map(|(name, value)| {
            Ok(Header {
                name: header_name(name)?,
                value: header_value(name, value)?,
            })
        })
        .collect()
}

/// Headers that frame the message or manage the connection: the proxy
/// owns them on each hop, so a route may not set, add or remove them.
const HOP_HEADERS: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

fn header_name(name: &str) -> Result<String, String> {
    if !super::is_token(name) {
        return Err(format!("{name:?} is not a valid header name"));
    }
    let lower = name.to_ascii_lowercase();
    if HOP_HEADERS.contains(&lower.as_str()) {
        return Err(format!(
            "header {name:?} frames the message or manages the connection; routes cannot modify it"
        ));
    }
    Ok(lower)
}

/// A value the proxy can send as it is: no CR, LF or NUL (which would
/// split or truncate the header), nor other control characters.
fn header_value(name: &str, value: &str) -> Result<String, String> {
    let valid = value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if valid {
        Ok(value.to_string())
    } else {
        Err(format!(
            "the value of header {name:?} contains a control character (CR, LF, NUL, ...)"
        ))
    }
}

fn redirect(
    r: &HttpRouteRulesFiltersRequestRedirect,
    matches: &[RouteMatch],
) -> Result<Redirect, String> {
    let status_code = match r.status_code {
        None => 302,
        Some(code @ (301 | 302 | 303 | 307 | 308)) => code as u16,
        Some(other) => return Err(format!("redirect status code {other} is not supported")),
    };
    let port = r
        .port
        .map(|p| {
            u16::try_from(p)
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("redirect port {p} is out of range"))
        })
        .transpose()?;
    let scheme = r.scheme.as_ref().map(|s| match s {
        HttpRouteRulesFiltersRequestRedirectScheme::Http => "http".to_string(),
        HttpRouteRulesFiltersRequestRedirectScheme::Https => "https".to_string(),
    });
    Ok(Redirect {
        scheme,
        hostname: r.hostname.as_deref().map(precise_hostname).transpose()?,
        port,
        path: r
            .path
            .as_ref()
            .map(|p| redirect_path(p, matches))
            .transpose()?,
        status_code,
    })
}

fn redirect_path(
    p: &HttpRouteRulesFiltersRequestRedirectPath,
    matches: &[RouteMatch],
) -> Result<PathModifier, String> {
    match p.r#type {
        HttpRouteRulesFiltersRequestRedirectPathType::ReplaceFullPath => {
            path_modifier(p.replace_full_path.as_deref(), false, matches)
        }
        HttpRouteRulesFiltersRequestRedirectPathType::ReplacePrefixMatch => {
            path_modifier(p.replace_prefix_match.as_deref(), true, matches)
        }
    }
}

fn rewrite(r: &HttpRouteRulesFiltersUrlRewrite, matches: &[RouteMatch]) -> Result<Rewrite, String> {
    Ok(Rewrite {
        hostname: r.hostname.as_deref().map(precise_hostname).transpose()?,
        path: r
            .path
            .as_ref()
            .map(|p| rewrite_path(p, matches))
            .transpose()?,
    })
}

fn rewrite_path(
    p: &HttpRouteRulesFiltersUrlRewritePath,
    matches: &[RouteMatch],
) -> Result<PathModifier, String> {
    match p.r#type {
        HttpRouteRulesFiltersUrlRewritePathType::ReplaceFullPath => {
            path_modifier(p.replace_full_path.as_deref(), false, matches)
        }
        HttpRouteRulesFiltersUrlRewritePathType::ReplacePrefixMatch => {
            path_modifier(p.replace_prefix_match.as_deref(), true, matches)
        }
    }
}

fn path_modifier(
    value: Option<&str>,
    prefix: bool,
    matches: &[RouteMatch],
) -> Result<PathModifier, String> {
    let field = if prefix {
        "replacePrefixMatch"
    } else {
        "replaceFullPath"
    };
    let value = value.ok_or_else(|| format!("path modifier is missing {field}"))?;
    if !value.starts_with('/') {
        return Err(format!("{field} {value:?} must start with '/'"));
    }
    if !prefix {
        return Ok(PathModifier::ReplaceFullPath(value.to_string()));
    }
    if !matches
        .iter()
        .all(|m| matches!(m.path, PathMatch::Prefix(_)))
    {
        return Err(
            "ReplacePrefixMatch requires every match of the rule to be a PathPrefix match"
                .to_string(),
        );
    }
    Ok(PathModifier::ReplacePrefixMatch(value.to_string()))
}

fn precise_hostname(value: &str) -> Result<String, String> {
    let host = Hostname::parse(value).map_err(|e| e.to_string())?;
    if host.is_wildcard() {
        return Err(format!("hostname {value:?} must not be a wildcard"));
    }
    Ok(host.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_api::gw::httproutes::{
        HttpRouteRulesFiltersRequestHeaderModifier, HttpRouteRulesFiltersRequestHeaderModifierSet,
    };

    fn prefix_match() -> Vec<RouteMatch> {
        vec![RouteMatch {
            grpc: None,
            path: PathMatch::Prefix("/api".into()),
            method: None,
            headers: vec![],
            query: vec![],
        }]
    }

    fn redirect_filter(code: Option<i64>, prefix: Option<&str>) -> HttpRouteRulesFilters {
        HttpRouteRulesFilters {
            r#type: HttpRouteRulesFiltersType::RequestRedirect,
            request_redirect: Some(HttpRouteRulesFiltersRequestRedirect {
                status_code: code,
                path: prefix.map(|p| HttpRouteRulesFiltersRequestRedirectPath {
                    r#type: HttpRouteRulesFiltersRequestRedirectPathType::ReplacePrefixMatch,
                    replace_prefix_match: Some(p.into()),
                    replace_full_path: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn redirect_defaults_to_302_and_rejects_other_codes() {
        let got = compile_rule_filters(
            Some(&[redirect_filter(None, None)]),
            &prefix_match(),
            &[],
            &[],
        )
        .unwrap();
        assert!(matches!(&got[0], Filter::Redirect(r) if r.status_code == 302));
        for code in [301, 303, 307, 308] {
            assert!(
                compile_rule_filters(Some(&[redirect_filter(Some(code), None)]), &[], &[], &[])
                    .is_ok()
            );
        }
        assert!(
            compile_rule_filters(Some(&[redirect_filter(Some(304), None)]), &[], &[], &[]).is_err()
        );
    }

    #[test]
    fn replace_prefix_match_needs_prefix_matches() {
        let f = [redirect_filter(None, Some("/v2"))];
        assert!(compile_rule_filters(Some(&f), &prefix_match(), &[], &[]).is_ok());
        let exact = vec![RouteMatch {
            grpc: None,
            path: PathMatch::Exact("/api".into()),
            ..prefix_match().remove(0)
        }];
        assert!(compile_rule_filters(Some(&f), &exact, &[], &[]).is_err());
    }

    #[test]
    fn header_modifier_lowercases_names_and_rejects_bad_ones() {
        let f = |name: &str| HttpRouteRulesFilters {
            r#type: HttpRouteRulesFiltersType::RequestHeaderModifier,
            request_header_modifier: Some(HttpRouteRulesFiltersRequestHeaderModifier {
                set: Some(vec![HttpRouteRulesFiltersRequestHeaderModifierSet {
                    name: name.into(),
                    value: "v".into(),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let got = compile_rule_filters(Some(&[f("X-Foo")]), &[], &[], &[]).unwrap();
        assert!(matches!(&got[0], Filter::RequestHeaders(m) if m.set[0].name == "x-foo"));
        assert!(compile_rule_filters(Some(&[f("bad header")]), &[], &[], &[]).is_err());
        assert!(compile_rule_filters(Some(&[f("Transfer-Encoding")]), &[], &[], &[]).is_err());
        assert!(compile_rule_filters(Some(&[f("connection")]), &[], &[], &[]).is_err());
    }

    #[test]
    fn header_values_with_control_characters_are_rejected() {
        for bad in ["a\r\nb", "a\nb", "a\0b", "a\x7fb"] {
            assert!(header_value("x", bad).is_err(), "{bad:?}");
        }
        for good in ["plain", "tab\tok", "ünïcödé", ""] {
            assert!(header_value("x", good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn unsupported_or_unconfigured_filters_are_errors() {
        let external = HttpRouteRulesFilters {
            r#type: HttpRouteRulesFiltersType::ExternalAuth,
            ..Default::default()
        };
        assert!(compile_rule_filters(Some(&[external]), &[], &[], &[]).is_err());
        let mirror = HttpRouteRulesFilters {
            r#type: HttpRouteRulesFiltersType::RequestMirror,
            ..Default::default()
        };
        assert!(compile_rule_filters(Some(&[mirror]), &[], &[], &[]).is_err());
    }
}
