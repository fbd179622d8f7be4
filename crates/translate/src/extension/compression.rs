//! Compression: the encodings, level, size floor and media types.
//!
//! Compression guards nothing, so a resource that cannot be applied as
//! written fails open: its rules serve uncompressed, its status says
//! `Accepted=False Invalid` (the proxy logs a warning). One with no
//! encoding enabled is valid and does nothing; its status says so.

use coxswain_api::Compression as CompressionCr;
use coxswain_api::crds::CompressionSpec;
use coxswain_ir::{Compression, ExtensionSpec};

use super::{Resolved, accepted, accepted_with, invalid};

pub fn resolve(cr: &CompressionCr) -> Resolved {
    match parse(&cr.spec) {
        Ok(c) if !c.enabled() => Resolved {
            spec: ExtensionSpec::Compression(c),
            conditions: accepted_with(
                "no encoding is enabled (gzip, brotli and zstd are all false): nothing is compressed",
            ),
        },
        Ok(c) => Resolved {
            spec: ExtensionSpec::Compression(c),
            conditions: accepted(),
        },
        Err(message) => {
            let message = format!("{message}; responses are sent uncompressed");
            Resolved {
                spec: ExtensionSpec::Inactive {
                    reason: message.clone(),
                },
                conditions: invalid(message),
            }
        }
    }
}

fn parse(spec: &CompressionSpec) -> Result<Compression, String> {
    let level = match spec.level {
        None => Compression::DEFAULT_LEVEL,
        Some(n @ 1..=9) => n as u8,
        Some(n) => return Err(format!("spec.level: {n} is not between 1 and 9")),
    };
    let types = match &spec.types {
        None => Compression::DEFAULT_TYPES
            .iter()
            .map(|t| t.to_string())
            .collect(),
        Some(list) if list.is_empty() => {
            return Err("spec.types: names no media type".into());
        }
        Some(list) => list
            .iter()
            .map(|t| media_type(t).map_err(|e| format!("spec.types: {t:?} {e}")))
            .collect::<Result<_, _>>()?,
    };
    Ok(Compression {
        gzip: spec.gzip,
        brotli: spec.brotli,
        zstd: spec.zstd,
        level,
        min_size: spec.min_size.unwrap_or(Compression::DEFAULT_MIN_SIZE),
        types,
    })
}

/// An RFC 9110 token.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
}

/// `type/subtype` or `type/*`, lower-cased.
fn media_type(text: &str) -> Result<String, &'static str> {
    if text.contains(';') {
        return Err("has parameters; list the media type alone");
    }
    let (kind, subtype) = text
        .split_once('/')
        .ok_or("is not a media type (type/subtype)")?;
    if !is_token(kind) || !(subtype == "*" || is_token(subtype)) {
        return Err("is not a media type (type/subtype, or type/*)");
    }
    Ok(text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(level: Option<u32>, types: Option<&[&str]>) -> CompressionSpec {
        CompressionSpec {
            gzip: true,
            level,
            types: types.map(|t| t.iter().map(|s| s.to_string()).collect()),
            ..CompressionSpec::default()
        }
    }

    #[test]
    fn unset_fields_take_the_defaults() {
        let c = parse(&spec(None, None)).unwrap();
        assert_eq!((c.level, c.min_size), (6, 1024));
        assert_eq!(c.types, Compression::DEFAULT_TYPES);
        assert!(c.gzip && !c.brotli && !c.zstd);
    }

    #[test]
    fn media_types_are_lower_cased_and_may_end_in_a_wildcard() {
        let c = parse(&spec(
            Some(1),
            Some(&["Text/HTML", "image/svg+xml", "text/*"]),
        ))
        .unwrap();
        assert_eq!(c.types, ["text/html", "image/svg+xml", "text/*"]);
        assert_eq!(c.level, 1);
    }

    #[test]
    fn bad_values_are_refused_with_the_field_named() {
        for (bad, field) in [
            (spec(Some(0), None), "spec.level"),
            (spec(Some(10), None), "spec.level"),
            (spec(None, Some(&[])), "spec.types"),
            (spec(None, Some(&["html"])), "spec.types"),
            (
                spec(None, Some(&["text/html; charset=utf-8"])),
                "spec.types",
            ),
            (spec(None, Some(&["*/*"])), "spec.types"),
            (spec(None, Some(&["text/"])), "spec.types"),
            (spec(None, Some(&["text /html"])), "spec.types"),
        ] {
            let e = parse(&bad).unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
    }
}
