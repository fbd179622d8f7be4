//! Request limits and access: body size, client address lists and the
//! proxies trusted to say who the client is, and response compression.

use coxswain_ir::IpCidr;

use super::Annotations;
use super::problem::AnnotationProblem;
use super::reader::{Read, Reader, boolean, list, object_name};

/// The largest request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLimit {
    /// `"0"` (nginx's meaning): no limit.
    Unlimited,
    Bytes(u64),
}

/// Response compression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompressionAnnotation {
    /// `"true"`: gzip and brotli with Compression's defaults (level 6,
    /// at least 1024 bytes, the default content types).
    Defaults,
    /// The name of a Compression resource in the Ingress's namespace.
    Resource(String),
}

/// Who may send requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpAccessAnnotation {
    /// The name of an IpAccessControl resource in the Ingress's namespace.
    Resource(String),
    /// The client must be in no `deny` range and, when `allow` is not
    /// empty, in one of its ranges; else 403.
    Ranges {
        allow: Vec<IpCidr>,
        deny: Vec<IpCidr>,
    },
}

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    if let Read::Valid(limit) = r.setting("max-body-size", Some("proxy-body-size"), body_limit) {
        out.max_body_size = Some(limit);
    }
    match r.setting("compression", None, compression) {
        Read::Valid(c) => out.compression = Some(c),
        Read::Invalid | Read::Unset => {}
    }
    ip_access(r, out);
    if let Read::Valid(hops) = r.setting("trust-forwarded-for", None, trusted_hops) {
        out.trust_forwarded_for = Some(hops);
    }
}

/// A byte count with an optional binary `k`/`m`/`g` suffix
/// (RequestSizeLimit's parser); `"0"` is no limit.
pub fn body_limit(value: &str) -> Result<BodyLimit, String> {
    match crate::extension::parse_size(value)? {
        0 => Ok(BodyLimit::Unlimited),
        n => Ok(BodyLimit::Bytes(n)),
    }
}

fn compression(value: &str) -> Result<CompressionAnnotation, String> {
    match value {
        "true" => Ok(CompressionAnnotation::Defaults),
        "false" => Err("to turn compression off, remove the annotation".into()),
        name => object_name(name)
            .map(CompressionAnnotation::Resource)
            .map_err(|_| "not \"true\" or the name of a Compression resource".into()),
    }
}

/// `"true"` is one proxy; else 1 to 16.
fn trusted_hops(value: &str) -> Result<u8, String> {
    if boolean(value) == Ok(true) {
        return Ok(1);
    }
    match value.parse::<u8>() {
        Ok(n) if (1..=16).contains(&n) => Ok(n),
        _ => Err("not \"true\" or a number of proxies from 1 to 16".into()),
    }
}

fn cidrs(value: &str) -> Result<Vec<IpCidr>, String> {
    let ranges = list(value);
    if ranges.is_empty() {
        return Err("no CIDR range".into());
    }
    ranges
        .iter()
        .map(|c| c.parse::<IpCidr>().map_err(|e| e.to_string()))
        .collect()
}

fn ip_access(r: &mut Reader<'_>, out: &mut Annotations) {
    let resource = r.setting("ip-access-control", None, object_name);
    let mut allow = r.setting(
        "allowlist-source-range",
        Some("allowlist-source-range"),
        cidrs,
    );
    if let Read::Unset = allow {
        // ingress-nginx's older spelling.
        allow = r.setting(
            "whitelist-source-range",
            Some("whitelist-source-range"),
            cidrs,
        );
    }
    let deny = r.setting(
        "denylist-source-range",
        Some("denylist-source-range"),
        cidrs,
    );
    let mut broken: Vec<String> = Vec::new();
    let allow_key = match r.key_of("allowlist-source-range", Some("allowlist-source-range")) {
        k if r.has(&k) => k,
        _ => r.key_of("whitelist-source-range", Some("whitelist-source-range")),
    };
    let deny_key = r.key_of("denylist-source-range", Some("denylist-source-range"));
    let resource_key = r.key_of("ip-access-control", None);
    let mut ranges = |read: Read<Vec<IpCidr>>, name: &String| match read {
        Read::Valid(v) => Some(v),
        Read::Invalid => {
            broken.push(name.clone());
            None
        }
        Read::Unset => None,
    };
    let (allow, deny) = (ranges(allow, &allow_key), ranges(deny, &deny_key));
    let has_ranges = allow.is_some() || deny.is_some();
    match resource {
        Read::Valid(name) => {
            if has_ranges {
                r.problems.push(AnnotationProblem::Invalid {
                    name: format!("{}ip-access-control", super::COXSWAIN_PREFIX),
                    value: name.clone(),
                    why:
                        "the source-range annotations are set too; only the IpAccessControl is used"
                            .into(),
                });
            }
            out.ip_access = Some(IpAccessAnnotation::Resource(name));
        }
        Read::Invalid => broken.push(resource_key),
        Read::Unset if has_ranges => {
            out.ip_access = Some(IpAccessAnnotation::Ranges {
                allow: allow.unwrap_or_default(),
                deny: deny.unwrap_or_default(),
            });
        }
        Read::Unset => {}
    }
    // An address list that cannot be read must not let everyone in.
    out.unenforceable.extend(broken);
}
