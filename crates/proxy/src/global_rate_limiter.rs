//! RateLimit's global mode: the same GCRA as [`crate::rate_limiter`], run
//! atomically in Redis by a Lua script on the server's clock (`TIME`), so
//! every proxy sharing the store shares each bucket whatever its own
//! clock says. A bucket's key expires once the bucket is full again.

use std::time::Duration;

use tokio::time::Instant;

use crate::rate_limiter::Decision;
use crate::redis::{Client, StoreError, Value};

/// How long a request waits for the store before `onStoreUnavailable`
/// decides.
pub const STORE_TIMEOUT: Duration = Duration::from_millis(100);

/// KEYS[1]: the bucket. ARGV: one token's worth of microseconds, and how
/// far ahead of now the bucket may run. Returns {1, until full (µs),
/// remaining} or {0, retry after (µs), 0}.
const SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local ahead = tat - now
if ahead > tolerance then
  return {0, ahead - tolerance, 0}
end
local nxt = tat + interval
local used = nxt - now
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil(used / 1000) + 1)
return {1, used, math.floor((tolerance + interval - used) / interval)}
";

/// One RateLimit's view of its store.
#[derive(Debug)]
pub struct GlobalRateLimiter {
    client: Client,
    sha: String,
    interval_us: String,
    tolerance_us: String,
}

impl GlobalRateLimiter {
    /// `requests` per `period`, `burst` at once, counted through `client`.
    pub fn new(client: Client, requests: u32, period: Duration, burst: u32) -> Self {
        let interval_us = (period.as_micros() as u64 / u64::from(requests.max(1))).max(1);
        let tolerance_us = interval_us.saturating_mul(u64::from(burst.max(1)) - 1);
        GlobalRateLimiter {
            client,
            sha: script_sha(),
            interval_us: interval_us.to_string(),
            tolerance_us: tolerance_us.to_string(),
        }
    }

    pub fn address(&self) -> &str {
        self.client.address()
    }

    /// Takes a token from the bucket at `key` if it has one. The script
    /// is sent by its digest; a server that does not know it yet (new, or
    /// restarted) gets it whole once.
    pub async fn check(&self, key: &[u8]) -> Result<Decision, StoreError> {
        let deadline = Instant::now() + STORE_TIMEOUT;
        let call = |first: &'static [u8], script: &[u8]| {
            let args: [&[u8]; 6] = [
                first,
                script,
                b"1",
                key,
                self.interval_us.as_bytes(),
                self.tolerance_us.as_bytes(),
            ];
            self.client.call(&args, deadline)
        };
        let reply = match call(b"EVALSHA", self.sha.as_bytes()).await? {
            Value::Error(e) if e.starts_with("NOSCRIPT") => {
                call(b"EVAL", SCRIPT.as_bytes()).await?
            }
            reply => reply,
        };
        decision(reply)
    }
}

fn script_sha() -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, SCRIPT.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn decision(reply: Value) -> Result<Decision, StoreError> {
    let micros = |n: i64| Duration::from_micros(u64::try_from(n).unwrap_or(0));
    match reply {
        Value::Array(Some(items)) => match items.as_slice() {
            [Value::Int(1), Value::Int(used), Value::Int(remaining)] => Ok(Decision::Allowed {
                remaining: u64::try_from(*remaining).unwrap_or(0),
                full_in: micros(*used),
            }),
            [Value::Int(0), Value::Int(retry), _] => Ok(Decision::Limited {
                retry_after: micros(*retry),
            }),
            _ => Err(StoreError::BadReply),
        },
        _ => Err(StoreError::BadReply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_map_to_decisions() {
        let int = Value::Int;
        assert_eq!(
            decision(Value::Array(Some(vec![int(1), int(2_000_000), int(3)]))),
            Ok(Decision::Allowed {
                remaining: 3,
                full_in: Duration::from_secs(2)
            })
        );
        assert_eq!(
            decision(Value::Array(Some(vec![int(0), int(500), int(0)]))),
            Ok(Decision::Limited {
                retry_after: Duration::from_micros(500)
            })
        );
        for bad in [
            Value::Error("ERR".into()),
            Value::Array(Some(vec![int(2), int(0), int(0)])),
            Value::Array(None),
        ] {
            assert_eq!(decision(bad), Err(StoreError::BadReply));
        }
    }

    #[test]
    fn the_digest_is_sha1_hex() {
        let sha = script_sha();
        assert_eq!(sha.len(), 40);
        assert!(sha.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
