//! HTTPRoute matches -> IR matches, with validation.

use coxswain_api::gw::httproutes::{
    HttpRouteRulesMatches, HttpRouteRulesMatchesHeadersType, HttpRouteRulesMatchesMethod,
    HttpRouteRulesMatchesPathType, HttpRouteRulesMatchesQueryParamsType,
};
use coxswain_ir::{HeaderMatch, PathMatch, QueryMatch, RouteMatch, StringMatch};

/// A rule's matches; a rule without matches gets `PathPrefix /`.
pub fn compile_matches(
    matches: Option<&[HttpRouteRulesMatches]>,
) -> Result<Vec<RouteMatch>, String> {
    let matches = matches.unwrap_or_default();
    if matches.is_empty() {
        return Ok(vec![catch_all()]);
    }
    matches.iter().map(compile_match).collect()
}

fn catch_all() -> RouteMatch {
    RouteMatch {
        grpc: None,
        path: PathMatch::Prefix("/".to_string()),
        method: None,
        headers: Vec::new(),
        query: Vec::new(),
    }
}

fn compile_match(m: &HttpRouteRulesMatches) -> Result<RouteMatch, String> {
    let path = match &m.path {
        None => PathMatch::Prefix("/".to_string()),
        Some(p) => {
            let value = p.value.clone().unwrap_or_else(|| "/".to_string());
            match p
                .r#type
                .as_ref()
                .unwrap_or(&HttpRouteRulesMatchesPathType::PathPrefix)
            {
                HttpRouteRulesMatchesPathType::Exact => PathMatch::Exact(valid_path(value)?),
                HttpRouteRulesMatchesPathType::PathPrefix => PathMatch::Prefix(valid_path(value)?),
                HttpRouteRulesMatchesPathType::RegularExpression => {
                    check_regex(&format!("^(?:{value})$"), &value)?;
                    PathMatch::Regex(value)
                }
            }
        }
    };

    let mut headers: Vec<HeaderMatch> = Vec::new();
    for h in m.headers.iter().flatten() {
        let name = h.name.to_ascii_lowercase();
        if name.is_empty() {
            return Err("header match with an empty name".to_string());
        }
        if !super::is_token(&name) {
            return Err(format!(
                "header match name {:?} is not a valid header name",
                h.name
            ));
        }
        // Equivalent names: only the first entry counts.
        if headers.iter().any(|x| x.name == name) {
            continue;
        }
        let value = match h
            .r#type
            .as_ref()
            .unwrap_or(&HttpRouteRulesMatchesHeadersType::Exact)
        {
            HttpRouteRulesMatchesHeadersType::Exact => StringMatch::Exact(h.value.clone()),
            HttpRouteRulesMatchesHeadersType::RegularExpression => {
                check_regex(&h.value, &h.value)?;
                StringMatch::Regex(h.value.clone())
            }
        };
        headers.push(HeaderMatch { name, value });
    }

    let mut query: Vec<QueryMatch> = Vec::new();
    for q in m.query_params.iter().flatten() {
        if q.name.is_empty() {
            return Err("query parameter match with an empty name".to_string());
        }
        if query.iter().any(|x| x.name == q.name) {
            continue;
        }
        let value = match q
            .r#type
            .as_ref()
            .unwrap_or(&HttpRouteRulesMatchesQueryParamsType::Exact)
        {
            HttpRouteRulesMatchesQueryParamsType::Exact => StringMatch::Exact(q.value.clone()),
            HttpRouteRulesMatchesQueryParamsType::RegularExpression => {
                check_regex(&q.value, &q.value)?;
                StringMatch::Regex(q.value.clone())
            }
        };
        query.push(QueryMatch {
            name: q.name.clone(),
            value,
        });
    }

    Ok(RouteMatch {
        grpc: None,
        path,
        method: m.method.as_ref().map(|x| method_name(x).to_string()),
        headers,
        query,
    })
}

fn valid_path(value: String) -> Result<String, String> {
    if !value.starts_with('/') {
        return Err(format!("path {value:?} must start with '/'"));
    }
    if value
        .chars()
        .any(|c| c.is_ascii_control() || c == ' ' || c == '?' || c == '#')
    {
        return Err(format!(
            "path {value:?} contains characters not allowed in a path"
        ));
    }
    Ok(value)
}

pub fn check_regex(pattern: &str, shown: &str) -> Result<(), String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(coxswain_ir::MAX_REGEX_SIZE)
        .build()
        .map(drop)
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => format!("regular expression {shown:?} is too large"),
            _ => format!("invalid regular expression {shown:?}"),
        })
}

fn method_name(m: &HttpRouteRulesMatchesMethod) -> &'static str {
    match m {
        HttpRouteRulesMatchesMethod::Get => "GET",
        HttpRouteRulesMatchesMethod::Head => "HEAD",
        HttpRouteRulesMatchesMethod::Post => "POST",
        HttpRouteRulesMatchesMethod::Put => "PUT",
        HttpRouteRulesMatchesMethod::Delete => "DELETE",
        HttpRouteRulesMatchesMethod::Connect => "CONNECT",
        HttpRouteRulesMatchesMethod::Options => "OPTIONS",
        HttpRouteRulesMatchesMethod::Trace => "TRACE",
        HttpRouteRulesMatchesMethod::Patch => "PATCH",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_api::gw::httproutes::{HttpRouteRulesMatchesHeaders, HttpRouteRulesMatchesPath};

    fn path(kind: HttpRouteRulesMatchesPathType, value: &str) -> HttpRouteRulesMatches {
        HttpRouteRulesMatches {
            path: Some(HttpRouteRulesMatchesPath {
                r#type: Some(kind),
                value: Some(value.into()),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn no_matches_means_prefix_slash() {
        assert_eq!(compile_matches(None).unwrap(), vec![catch_all()]);
    }

    #[test]
    fn paths_must_start_with_slash_and_regexes_must_compile() {
        assert!(compile_matches(Some(&[path(HttpRouteRulesMatchesPathType::Exact, "a")])).is_err());
        assert!(
            compile_matches(Some(&[path(
                HttpRouteRulesMatchesPathType::RegularExpression,
                "("
            )]))
            .is_err()
        );
        let ok = compile_matches(Some(&[path(
            HttpRouteRulesMatchesPathType::RegularExpression,
            "/v[0-9]+",
        )]));
        assert_eq!(ok.unwrap()[0].path, PathMatch::Regex("/v[0-9]+".into()));
    }

    #[test]
    fn header_names_are_lowercased_and_first_duplicate_wins() {
        let m = HttpRouteRulesMatches {
            headers: Some(vec![
                HttpRouteRulesMatchesHeaders {
                    name: "X-A".into(),
                    r#type: None,
                    value: "1".into(),
                },
                HttpRouteRulesMatchesHeaders {
                    name: "x-a".into(),
                    r#type: None,
                    value: "2".into(),
                },
            ]),
            ..Default::default()
        };
        let got = compile_matches(Some(&[m])).unwrap();
        assert_eq!(
            got[0].headers,
            vec![HeaderMatch {
                name: "x-a".into(),
                value: StringMatch::Exact("1".into())
            }]
        );
    }
}
