//! Which content coding to answer in, from the client's `Accept-Encoding`
//! (RFC 9110 section 12.5.3): a coding is acceptable when it, or `*`, is
//! listed with a non-zero q (`q=0` excludes it); among the acceptable ones
//! offered, the highest q wins, and a tie goes to the earlier offer. No
//! header, or nothing acceptable, means identity: even `identity;q=0` is
//! answered uncompressed rather than refused. An `identity` listed with a
//! higher q than every offered coding is honoured.

use super::compress::Encoding;

/// A q-value in thousandths (0 to 1000).
type Quality = u16;

/// The coding to answer in, from the `Accept-Encoding` header `values`
/// (all of them, in order), choosing among `offered` (in preference
/// order); `None` for identity.
pub fn negotiate<'a>(
    values: impl Iterator<Item = &'a [u8]>,
    offered: &[Encoding],
) -> Option<Encoding> {
    let mut listed = Listed::default();
    for value in values {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for element in value.split(',') {
            if let Some((coding, q)) = parse_element(element) {
                listed.note(coding, q);
            }
        }
    }
    let mut best: Option<(Encoding, Quality)> = None;
    for &encoding in offered {
        let q = listed.quality(encoding);
        if q > 0 && best.is_none_or(|(_, b)| q > b) {
            best = Some((encoding, q));
        }
    }
    let (encoding, q) = best?;
    match listed.identity {
        Some(identity) if identity > q => None,
        _ => Some(encoding),
    }
}

/// The q-values an `Accept-Encoding` gave (the highest, when a coding is
/// listed twice).
#[derive(Default)]
struct Listed {
    gzip: Option<Quality>,
    br: Option<Quality>,
    zstd: Option<Quality>,
    identity: Option<Quality>,
    any: Option<Quality>,
}

impl Listed {
    fn note(&mut self, coding: &str, q: Quality) {
        let slot = match coding.to_ascii_lowercase().as_str() {
            // RFC 9110 section 8.4.1.3: x-gzip is gzip.
            "gzip" | "x-gzip" => &mut self.gzip,
            "br" => &mut self.br,
            "zstd" => &mut self.zstd,
            "identity" => &mut self.identity,
            "*" => &mut self.any,
            _ => return,
        };
        *slot = Some(slot.map_or(q, |old| old.max(q)));
    }

    fn quality(&self, encoding: Encoding) -> Quality {
        let named = match encoding {
            Encoding::Gzip => self.gzip,
            Encoding::Brotli => self.br,
            Encoding::Zstd => self.zstd,
        };
        named.or(self.any).unwrap_or(0)
    }
}

/// `coding [; q=value] [; other params]`; `None` for an empty element or a
/// malformed q (the element is ignored).
fn parse_element(element: &str) -> Option<(&str, Quality)> {
    let mut parts = element.split(';');
    let coding = parts.next()?.trim();
    if coding.is_empty() {
        return None;
    }
    let mut q = 1000;
    for param in parts {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("q") {
            q = parse_q(value.trim())?;
        }
    }
    Some((coding, q))
}

/// `0`, `0.5`, `1`, `1.000`: at most three decimals, at most 1.
fn parse_q(text: &str) -> Option<Quality> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = fraction
        .bytes()
        .fold(0, |n: Quality, b| n * 10 + Quality::from(b - b'0'));
    let thousandths = digits * (10 as Quality).pow(3 - fraction.len() as u32);
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Encoding::{Brotli, Gzip, Zstd};

    const ALL: &[Encoding] = &[Brotli, Zstd, Gzip];

    fn pick(header: &str, offered: &[Encoding]) -> Option<Encoding> {
        negotiate(std::iter::once(header.as_bytes()), offered)
    }

    #[test]
    fn equal_q_prefers_brotli_then_zstd_then_gzip() {
        assert_eq!(pick("gzip, deflate, br, zstd", ALL), Some(Brotli));
        assert_eq!(pick("gzip, zstd", ALL), Some(Zstd));
        assert_eq!(pick("gzip", ALL), Some(Gzip));
        assert_eq!(
            pick("gzip, br", &[Zstd, Gzip]),
            Some(Gzip),
            "br not offered"
        );
        assert_eq!(pick("BR;Q=1, GZip", ALL), Some(Brotli), "case-insensitive");
    }

    #[test]
    fn the_highest_q_wins_and_q_zero_excludes() {
        assert_eq!(pick("br;q=0.5, gzip;q=0.8", ALL), Some(Gzip));
        assert_eq!(pick("br;q=0, gzip", ALL), Some(Gzip));
        assert_eq!(pick("br;q=0, zstd;q=0.0, gzip;q=0.000", ALL), None);
        assert_eq!(pick("gzip;q=0.001", ALL), Some(Gzip));
        assert_eq!(pick("zstd;q=0.9;level=3, br ; q=0.4", ALL), Some(Zstd));
    }

    #[test]
    fn a_star_covers_what_is_not_named() {
        assert_eq!(pick("*", ALL), Some(Brotli));
        assert_eq!(pick("*", &[Gzip]), Some(Gzip));
        assert_eq!(pick("br;q=0, *", ALL), Some(Zstd));
        assert_eq!(pick("*;q=0", ALL), None);
        assert_eq!(pick("*;q=0, gzip", ALL), Some(Gzip));
        assert_eq!(pick("gzip;q=0.5, *;q=0.7", ALL), Some(Brotli));
    }

    #[test]
    fn identity_is_the_fallback_and_never_an_error() {
        assert_eq!(pick("", ALL), None);
        assert_eq!(pick("identity", ALL), None);
        assert_eq!(pick("identity;q=0", ALL), None);
        assert_eq!(pick("deflate, compress", ALL), None, "none we offer");
        assert_eq!(pick("identity;q=0, gzip", ALL), Some(Gzip));
        assert_eq!(pick("identity, gzip", ALL), Some(Gzip), "equal q: compress");
        assert_eq!(
            pick("gzip;q=0.5, identity", ALL),
            None,
            "identity preferred"
        );
        assert_eq!(pick("x-gzip", ALL), Some(Gzip));
        assert_eq!(negotiate(std::iter::empty(), ALL), None, "no header");
    }

    #[test]
    fn malformed_elements_are_ignored_and_headers_combine() {
        assert_eq!(pick("br;q=2, gzip", ALL), Some(Gzip));
        assert_eq!(pick("br;q=abc, gzip", ALL), Some(Gzip));
        assert_eq!(pick("br;q=0.1234, gzip", ALL), Some(Gzip));
        assert_eq!(pick("br;q=-1, gzip;q=1.", ALL), Some(Gzip));
        assert_eq!(pick(" , ;q=1, gzip", ALL), Some(Gzip));
        let two: [&[u8]; 3] = [b"gzip;q=0.2", b"\xff\xfe", b"zstd;q=0.3"];
        assert_eq!(negotiate(two.into_iter(), ALL), Some(Zstd));
        assert_eq!(
            pick("gzip;q=0, gzip;q=0.5", ALL),
            Some(Gzip),
            "highest kept"
        );
    }

    #[test]
    fn q_values_parse_to_thousandths() {
        for (text, q) in [("1", 1000), ("1.0", 1000), ("1.000", 1000), ("0", 0)] {
            assert_eq!(parse_q(text), Some(q), "{text}");
        }
        assert_eq!(parse_q("0.5"), Some(500));
        assert_eq!(parse_q("0.05"), Some(50));
        assert_eq!(parse_q("0.123"), Some(123));
        for bad in ["", "1.001", "2", "0.1234", ".5", "0.x", "01"] {
            assert_eq!(parse_q(bad), None, "{bad}");
        }
    }
}
