//! RequestSizeLimit: `maxSize` as a byte count.
//!
//! A size that does not parse fails open, as the user guide says (a size
//! limit guards capacity, not access): the rules serve without a limit and
//! the resource says `Accepted=False Invalid`.

use coxswain_api::RequestSizeLimit;
use coxswain_ir::ExtensionSpec;

use super::{Resolved, accepted, invalid};

pub fn resolve(cr: &RequestSizeLimit) -> Resolved {
    match parse_size(&cr.spec.max_size) {
        Ok(max_bytes) => Resolved {
            spec: ExtensionSpec::SizeLimit { max_bytes },
            conditions: accepted(),
        },
        Err(message) => {
            let message = format!("spec.maxSize: {message}; no limit is enforced");
            Resolved {
                spec: ExtensionSpec::Inactive {
                    reason: message.clone(),
                },
                conditions: invalid(message),
            }
        }
    }
}

/// `123`, `512k`, `8M`, `1g`: bytes, or binary kibi/mebi/gibibytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let invalid = || format!("{text:?} is not a size (e.g. \"1048576\", \"512k\", \"8m\", \"1g\")");
    let (digits, shift) = match text.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&text[..text.len() - 1], 10),
        Some(b'm') => (&text[..text.len() - 1], 20),
        Some(b'g') => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let value: u64 = digits.parse().map_err(|_| invalid())?;
    value.checked_mul(1 << shift).ok_or_else(invalid)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_suffixes_in_either_case() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("3G"), Ok(3 << 30));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "k",
            "-1",
            "1.5m",
            "8mb",
            " 8m",
            "8 m",
            "1t",
            "99999999999999999999",
            "17179869184g",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }
}
