//! Canary Ingresses (ingress-nginx semantics): an Ingress with
//! `canary: "true"` is not served by itself; its backend joins the rule
//! of the main Ingress with the same host and path, chosen by header,
//! then cookie, then weight.

use super::Annotations;
use super::reader::{Read, Reader, boolean};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canary {
    /// Share of the requests no header or cookie decided, out of
    /// `weight_total`.
    pub weight: u32,
    pub weight_total: u32,
    pub header: Option<CanaryHeader>,
    /// A cookie whose value `always` sends to the canary and `never`
    /// to the main backend.
    pub cookie: Option<String>,
}

/// `canary-by-header`: with `value`, a request whose header equals it
/// goes to the canary; else with `pattern`, one whose header matches that
/// regular expression (anywhere in the value); without either, the
/// header's value `always` sends to the canary and `never` to the main
/// backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanaryHeader {
    /// Lower-case.
    pub name: String,
    pub value: Option<String>,
    pub pattern: Option<String>,
}

const DEFAULT_TOTAL: u32 = 100;

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    let on = matches!(
        r.setting("canary", Some("canary"), boolean),
        Read::Valid(true)
    );
    let weight = r.setting("canary-weight", Some("canary-weight"), number);
    let total = r.setting("canary-weight-total", Some("canary-weight-total"), number);
    let header = r.setting("canary-by-header", Some("canary-by-header"), header_name);
    let value = r.setting(
        "canary-by-header-value",
        Some("canary-by-header-value"),
        |v| Ok(v.to_string()),
    );
    let pattern = r.setting(
        "canary-by-header-pattern",
        Some("canary-by-header-pattern"),
        header_pattern,
    );
    let cookie = r.setting("canary-by-cookie", Some("canary-by-cookie"), cookie_name);
    let any =
        set(&weight) || set(&total) || set(&header) || set(&value) || set(&pattern) || set(&cookie);
    if !on {
        if any {
            for name in [
                "canary-weight",
                "canary-weight-total",
                "canary-by-header",
                "canary-by-header-value",
                "canary-by-header-pattern",
                "canary-by-cookie",
            ] {
                let key = r.key_of(name, Some(name));
                if let Some(value) = r.raw(&key) {
                    r.invalid(key, value, "has no effect without canary: \"true\"");
                }
            }
        }
        return;
    }
    let weight = valid(weight).unwrap_or(0);
    let weight_total = valid(total).unwrap_or(DEFAULT_TOTAL);
    if weight_total == 0 || weight > weight_total {
        r.invalid(
            r.key_of("canary-weight", Some("canary-weight")),
            &weight.to_string(),
            format!("must be at most canary-weight-total ({weight_total}), which must be at least 1; the canary takes no share by weight"),
        );
        return finish(
            out,
            (0, weight_total.max(1)),
            header,
            (value, pattern),
            cookie,
            r,
        );
    }
    finish(
        out,
        (weight, weight_total),
        header,
        (value, pattern),
        cookie,
        r,
    )
}

fn finish(
    out: &mut Annotations,
    (weight, weight_total): (u32, u32),
    header: Read<String>,
    (value, pattern): (Read<String>, Read<String>),
    cookie: Read<String>,
    r: &mut Reader<'_>,
) {
    let (value, pattern) = (valid(value), valid(pattern));
    let header = match valid(header) {
        Some(name) => Some(CanaryHeader {
            name,
            value,
            pattern,
        }),
        None => {
            for (name, v) in [
                ("canary-by-header-value", value),
                ("canary-by-header-pattern", pattern),
            ] {
                if let Some(v) = v {
                    r.invalid(
                        r.key_of(name, Some(name)),
                        &v,
                        "has no effect without canary-by-header",
                    );
                }
            }
            None
        }
    };
    out.canary = Some(Canary {
        weight,
        weight_total,
        header,
        cookie: valid(cookie),
    });
}

fn set<T>(read: &Read<T>) -> bool {
    !matches!(read, Read::Unset)
}

fn valid<T>(read: Read<T>) -> Option<T> {
    match read {
        Read::Valid(v) => Some(v),
        Read::Invalid | Read::Unset => None,
    }
}

fn number(value: &str) -> Result<u32, String> {
    value
        .parse()
        .map_err(|_| "not a whole number from 0".to_string())
}

fn header_name(value: &str) -> Result<String, String> {
    if crate::route::http::is_token(value) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err("not a header name".into())
    }
}

fn header_pattern(value: &str) -> Result<String, String> {
    regex::RegexBuilder::new(value)
        .size_limit(coxswain_ir::MAX_REGEX_SIZE)
        .build()
        .map(|_| value.to_string())
        .map_err(|e| format!("not a regular expression: {e}"))
}

fn cookie_name(value: &str) -> Result<String, String> {
    if crate::route::http::is_token(value) {
        Ok(value.to_string())
    } else {
        Err("not a cookie name".into())
    }
}
