//! Compression: decided in the transforms phase from the request (which
//! coding the client accepts best), applied in the response phase to the
//! upstream's answer when it qualifies.
//!
//! Never compressed: a HEAD request's answer, an upgrade, a gRPC response
//! (`application/grpc…`, whatever `types` says), one that already has a
//! `Content-Encoding`, `Cache-Control: no-transform`, statuses 1xx, 204,
//! 206 and 304, a known length below `minSize`, a media type not listed.
//! A response that qualifies gets `Vary: Accept-Encoding` whether or not
//! this client accepted a coding, so caches keep the variants apart; one
//! that is compressed loses `Content-Length` and `Accept-Ranges` (the
//! offsets were the identity's) and its strong `ETag` becomes weak.
//! With several Compression filters on one rule, the first applies.

use std::sync::Arc;

use http::header::{
    ACCEPT_ENCODING, ACCEPT_RANGES, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE,
    ETAG, VARY,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode, response};
use http_body::Body as _;
use http_body_util::BodyExt;

use super::Flow;
use super::context::RequestCtx;
use crate::http::accept_encoding::negotiate;
use crate::http::body::ProxyBody;
use crate::http::compress::{CompressBody, Encoder, Encoding};

/// A Compression resource as the stages use it.
#[derive(Debug)]
pub struct CompressionPolicy {
    ir: coxswain_ir::Compression,
    /// The enabled encodings, in the order a tie prefers them.
    offered: Vec<Encoding>,
}

impl CompressionPolicy {
    pub fn new(ir: &coxswain_ir::Compression) -> Self {
        let offered = [
            (ir.brotli, Encoding::Brotli),
            (ir.zstd, Encoding::Zstd),
            (ir.gzip, Encoding::Gzip),
        ]
        .into_iter()
        .filter_map(|(on, e)| on.then_some(e))
        .collect();
        CompressionPolicy {
            ir: ir.clone(),
            offered,
        }
    }
}

/// What the response phase does for one request.
pub struct CompressionPlan {
    policy: Arc<CompressionPolicy>,
    /// `None`: the client takes no coding offered (or asked with HEAD);
    /// a qualifying response still gets its `Vary`.
    encoding: Option<Encoding>,
}

/// The transforms-phase stage: records the coding for the response.
pub fn plan(policy: &Arc<CompressionPolicy>, ctx: &mut RequestCtx<'_>) -> Flow {
    if ctx.plan.compression.is_some() || ctx.upgrade.is_some() {
        return Flow::Next;
    }
    let encoding = match ctx.parts.method {
        Method::HEAD => None,
        _ => negotiate(
            ctx.parts
                .headers
                .get_all(ACCEPT_ENCODING)
                .iter()
                .map(HeaderValue::as_bytes),
            &policy.offered,
        ),
    };
    ctx.plan.compression = Some(CompressionPlan {
        policy: policy.clone(),
        encoding,
    });
    Flow::Next
}

/// The response phase: `body` compressed and `parts` edited to match, or
/// both left as they are.
pub fn apply(plan: CompressionPlan, parts: &mut response::Parts, body: ProxyBody) -> ProxyBody {
    let length = content_length(&parts.headers).or(body.size_hint().exact());
    if !qualifies(&plan.policy.ir, parts.status, &parts.headers, length) {
        return body;
    }
    add_vary(&mut parts.headers);
    let Some(encoding) = plan.encoding else {
        return body;
    };
    let encoder = match Encoder::new(encoding, plan.policy.ir.level) {
        Ok(encoder) => encoder,
        Err(e) => {
            tracing::warn!(error = %e, "no memory for a compressor; sent uncompressed");
            return body;
        }
    };
    let headers = &mut parts.headers;
    headers.insert(CONTENT_ENCODING, encoding.header_value());
    headers.remove(CONTENT_LENGTH);
    headers.remove(ACCEPT_RANGES);
    weaken_etag(headers);
    CompressBody::new(body, encoder).boxed_unsync()
}

/// Whether a response may be compressed (see the module docs).
pub fn qualifies(
    policy: &coxswain_ir::Compression,
    status: StatusCode,
    headers: &HeaderMap,
    length: Option<u64>,
) -> bool {
    if status.is_informational()
        || matches!(
            status,
            StatusCode::NO_CONTENT | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED
        )
        || headers.contains_key(CONTENT_ENCODING)
        || has_directive(headers, "no-transform")
        || length.is_some_and(|n| n < policy.min_size)
    {
        return false;
    }
    let Some(content_type) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let grpc = content_type
        .trim_start()
        .get(..16)
        .is_some_and(|p| p.eq_ignore_ascii_case("application/grpc"));
    !grpc && policy.compresses_type(content_type)
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A `Cache-Control` directive, in any of the header's values.
fn has_directive(headers: &HeaderMap, directive: &str) -> bool {
    headers
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| {
            let name = d.split('=').next().unwrap_or("").trim();
            name.eq_ignore_ascii_case(directive)
        })
}

/// `Vary: Accept-Encoding`, unless the response already varies on it (or
/// on everything).
fn add_vary(headers: &mut HeaderMap) {
    let covered = headers
        .get_all(VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|name| name == "*" || name.eq_ignore_ascii_case("accept-encoding"));
    if !covered {
        headers.append(VARY, HeaderValue::from_static("Accept-Encoding"));
    }
}

/// A strong validator names the identity's bytes: the compressed ones
/// are only semantically equivalent (RFC 9110 section 8.8.1).
fn weaken_etag(headers: &mut HeaderMap) {
    let Some(etag) = headers.get(ETAG) else {
        return;
    };
    if etag.as_bytes().starts_with(b"\"") {
        let mut weak = b"W/".to_vec();
        weak.extend_from_slice(etag.as_bytes());
        if let Ok(weak) = HeaderValue::from_bytes(&weak) {
            headers.insert(ETAG, weak);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> coxswain_ir::Compression {
        coxswain_ir::Compression {
            gzip: true,
            brotli: true,
            zstd: true,
            level: 6,
            min_size: 1024,
            types: coxswain_ir::Compression::DEFAULT_TYPES
                .iter()
                .map(|t| t.to_string())
                .collect(),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| {
                (
                    http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    fn html(extra: &[(&str, &str)]) -> HeaderMap {
        let mut h = headers(&[("content-type", "text/html; charset=utf-8")]);
        h.extend(headers(extra));
        h
    }

    #[test]
    fn a_listed_type_of_unknown_or_enough_length_qualifies() {
        let p = policy();
        assert!(qualifies(&p, StatusCode::OK, &html(&[]), None));
        assert!(qualifies(&p, StatusCode::OK, &html(&[]), Some(1024)));
        assert!(qualifies(&p, StatusCode::NOT_FOUND, &html(&[]), Some(5000)));
        let json = headers(&[("content-type", "Application/JSON")]);
        assert!(qualifies(&p, StatusCode::OK, &json, None));
    }

    #[test]
    fn what_is_never_compressed() {
        let p = policy();
        let ok = StatusCode::OK;
        assert!(!qualifies(&p, ok, &html(&[]), Some(1023)), "below minSize");
        for status in [101, 204, 206, 304] {
            let status = StatusCode::from_u16(status).unwrap();
            assert!(!qualifies(&p, status, &html(&[]), None), "{status}");
        }
        let encoded = html(&[("content-encoding", "gzip")]);
        assert!(!qualifies(&p, ok, &encoded, None));
        for cc in [
            "no-transform",
            "public, No-Transform",
            "max-age=60,no-transform",
        ] {
            let h = html(&[("cache-control", cc)]);
            assert!(!qualifies(&p, ok, &h, None), "{cc}");
        }
        let h = html(&[("cache-control", "no-store, no-transformer")]);
        assert!(qualifies(&p, ok, &h, None), "only the directive itself");
        let png = headers(&[("content-type", "image/png")]);
        assert!(!qualifies(&p, ok, &png, None), "type not listed");
        assert!(!qualifies(&p, ok, &HeaderMap::new(), None), "no type");
    }

    #[test]
    fn grpc_is_never_compressed_whatever_types_says() {
        let mut p = policy();
        p.types = vec!["application/*".into()];
        for ct in [
            "application/grpc",
            "application/grpc+proto",
            "Application/GRPC-Web",
        ] {
            let h = headers(&[("content-type", ct)]);
            assert!(!qualifies(&p, StatusCode::OK, &h, None), "{ct}");
        }
        let h = headers(&[("content-type", "application/xml")]);
        assert!(qualifies(&p, StatusCode::OK, &h, None));
    }

    #[test]
    fn vary_is_added_once() {
        let mut h = headers(&[("vary", "Origin")]);
        add_vary(&mut h);
        let vary: Vec<_> = h.get_all(VARY).iter().collect();
        assert_eq!(vary, ["Origin", "Accept-Encoding"]);
        for already in ["accept-encoding", "Origin, Accept-Encoding", "*"] {
            let mut h = headers(&[("vary", already)]);
            add_vary(&mut h);
            assert_eq!(h.get_all(VARY).iter().count(), 1, "{already}");
        }
    }

    #[test]
    fn a_strong_etag_is_weakened_and_a_weak_one_kept() {
        let mut h = headers(&[("etag", "\"v1\"")]);
        weaken_etag(&mut h);
        assert_eq!(h[ETAG], "W/\"v1\"");
        weaken_etag(&mut h);
        assert_eq!(h[ETAG], "W/\"v1\"");
    }

    #[test]
    fn offers_follow_the_tie_order_and_the_enabled_set() {
        let mut ir = policy();
        let all = CompressionPolicy::new(&ir);
        assert_eq!(
            all.offered,
            [Encoding::Brotli, Encoding::Zstd, Encoding::Gzip]
        );
        ir.brotli = false;
        assert_eq!(
            CompressionPolicy::new(&ir).offered,
            [Encoding::Zstd, Encoding::Gzip]
        );
    }
}
