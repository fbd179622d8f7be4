//! Gateway API `Duration` (GEP-2257): one to four `<1-5 digits><h|m|s|ms>`
//! components, e.g. `10s`, `1h2m3s500ms`. Parsed to milliseconds.

/// Parses a Gateway API duration into milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let invalid =
        || format!("{text:?} is not a Gateway API duration (e.g. \"10s\", \"1m30s\", \"500ms\")");
    let bytes = text.as_bytes();
    let mut total: u64 = 0;
    let mut components = 0;
    let mut i = 0;
    while i < bytes.len() {
        let digits_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = text.get(digits_start..i).ok_or_else(invalid)?;
        if digits.is_empty() || digits.len() > 5 {
            return Err(invalid());
        }
        let value: u64 = digits.parse().map_err(|_| invalid())?;
        let rest = text.get(i..).ok_or_else(invalid)?;
        let (unit_ms, unit_len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('s') {
            (1_000, 1)
        } else {
            return Err(invalid());
        };
        i += unit_len;
        components += 1;
        if components > 4 {
            return Err(invalid());
        }
        total = total.saturating_add(value.saturating_mul(unit_ms));
    }
    if components == 0 {
        return Err(invalid());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn parses_valid_durations() {
        assert_eq!(parse_duration_ms("10s"), Ok(10_000));
        assert_eq!(parse_duration_ms("0s"), Ok(0));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("1h2m3s500ms"), Ok(3_723_500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("99999h"), Ok(99_999 * 3_600_000));
    }

    #[test]
    fn rejects_invalid_durations() {
        for bad in [
            "",
            "s",
            "10",
            "1.5s",
            "10us",
            "-1s",
            "100000s",
            "1h1h1h1h1h",
            "1 s",
            "1S",
        ] {
            assert!(
                parse_duration_ms(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
    }
}
