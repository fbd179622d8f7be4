//! Compression: which encodings a rule's responses may be sent in, and
//! which responses qualify by size and media type.

use serde::{Deserialize, Serialize};

/// A Compression resource as the proxy applies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compression {
    pub gzip: bool,
    pub brotli: bool,
    pub zstd: bool,
    /// 1 (fastest) to 9 (smallest); each encoder maps it onto its scale.
    pub level: u8,
    /// A response whose `Content-Length` is below this is sent as it is.
    pub min_size: u64,
    /// Lower-case `type/subtype` (or `type/*`), without parameters.
    pub types: Vec<String>,
}

impl Compression {
    pub const DEFAULT_LEVEL: u8 = 6;
    pub const DEFAULT_MIN_SIZE: u64 = 1024;
    pub const DEFAULT_TYPES: &'static [&'static str] = &[
        "text/html",
        "text/plain",
        "text/css",
        "application/json",
        "application/javascript",
    ];

    /// Whether any encoding is enabled (else the resource does nothing).
    pub fn enabled(&self) -> bool {
        self.gzip || self.brotli || self.zstd
    }

    /// Whether a response of this `Content-Type` value is compressed:
    /// its media type, parameters dropped, compared case-insensitively.
    pub fn compresses_type(&self, content_type: &str) -> bool {
        let media = content_type.split(';').next().unwrap_or("").trim();
        let Some((kind, _)) = media.split_once('/') else {
            return false;
        };
        self.types.iter().any(|t| match t.strip_suffix("/*") {
            Some(any_of) => any_of.eq_ignore_ascii_case(kind),
            None => t.eq_ignore_ascii_case(media),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_types(types: &[&str]) -> Compression {
        Compression {
            gzip: true,
            brotli: false,
            zstd: false,
            level: 6,
            min_size: 0,
            types: types.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn media_types_compare_without_parameters_or_case() {
        let c = with_types(&["text/html", "application/json"]);
        assert!(c.compresses_type("text/html"));
        assert!(c.compresses_type("Text/HTML; charset=utf-8"));
        assert!(c.compresses_type(" application/json ;charset=UTF-8"));
        assert!(!c.compresses_type("text/htmlx"));
        assert!(!c.compresses_type("text/plain"));
        assert!(!c.compresses_type("image/png"));
        assert!(!c.compresses_type(""));
        assert!(!c.compresses_type("html"));
    }

    #[test]
    fn a_wildcard_subtype_takes_the_whole_type() {
        let c = with_types(&["text/*"]);
        assert!(c.compresses_type("text/csv"));
        assert!(c.compresses_type("TEXT/event-stream"));
        assert!(!c.compresses_type("texts/plain"));
        assert!(!c.compresses_type("application/text"));
    }
}
