//! HTTPRoute `retry` -> IR retry policy, with validation.

use coxswain_api::gw::httproutes::HttpRouteRulesRetry;
use coxswain_ir::Retry;

use crate::duration::parse_duration_ms;

/// Retries when `attempts` is unset (the spec leaves it to implementations).
const DEFAULT_ATTEMPTS: u32 = 1;
/// The wait before a first retry when `backoff` is unset.
const DEFAULT_BACKOFF_MS: u64 = 25;
/// More retries than this is a misconfiguration, not a policy.
const MAX_ATTEMPTS: i64 = 10;

pub fn compile_retry(r: Option<&HttpRouteRulesRetry>) -> Result<Option<Retry>, String> {
    let Some(r) = r else { return Ok(None) };
    let attempts = match r.attempts {
        None => DEFAULT_ATTEMPTS,
        Some(n @ 0..=MAX_ATTEMPTS) => u32::try_from(n).unwrap_or(DEFAULT_ATTEMPTS),
        Some(n) => {
            return Err(format!(
                "retry.attempts {n} is not between 0 and {MAX_ATTEMPTS}"
            ));
        }
    };
    let codes = r
        .codes
        .iter()
        .flatten()
        .map(|&code| match u16::try_from(code) {
            Ok(c @ 400..=599) => Ok(c),
            _ => Err(format!(
                "retry.codes: {code} is not an error status (400-599)"
            )),
        })
        .collect::<Result<Vec<u16>, String>>()?;
    let backoff_ms = match r.backoff.as_deref() {
        None => DEFAULT_BACKOFF_MS,
        Some(d) => parse_duration_ms(d).map_err(|e| format!("retry.backoff: {e}"))?,
    };
    Ok(Some(Retry {
        codes,
        attempts,
        backoff_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(attempts: Option<i64>, codes: &[i64], backoff: Option<&str>) -> HttpRouteRulesRetry {
        HttpRouteRulesRetry {
            attempts,
            codes: Some(codes.to_vec()),
            backoff: backoff.map(str::to_string),
        }
    }

    #[test]
    fn fields_and_defaults() {
        assert_eq!(compile_retry(None), Ok(None));
        let got = compile_retry(Some(&retry(Some(3), &[500, 503], Some("100ms"))));
        let want = Retry {
            codes: vec![500, 503],
            attempts: 3,
            backoff_ms: 100,
        };
        assert_eq!(got, Ok(Some(want)));
        let defaults = compile_retry(Some(&HttpRouteRulesRetry::default()))
            .unwrap()
            .unwrap();
        assert_eq!((defaults.attempts, defaults.backoff_ms), (1, 25));
        assert!(defaults.codes.is_empty());
    }

    #[test]
    fn impossible_values_are_errors() {
        assert!(compile_retry(Some(&retry(Some(-1), &[], None))).is_err());
        assert!(compile_retry(Some(&retry(Some(11), &[], None))).is_err());
        assert!(compile_retry(Some(&retry(None, &[200], None))).is_err());
        assert!(compile_retry(Some(&retry(None, &[600], None))).is_err());
        assert!(compile_retry(Some(&retry(None, &[], Some("soon")))).is_err());
    }
}
