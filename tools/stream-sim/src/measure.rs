//! What this process costs: resident memory and CPU time, and the
//! percentiles of a set of durations.

use std::time::Duration;

use anyhow::Context;
use nix::sys::resource::{UsageWho, getrusage};

/// CPU time (user + system, all threads) this process has used.
pub fn cpu() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).context("getrusage")?;
    Ok(timeval(usage.user_time()) + timeval(usage.system_time()))
}

fn timeval(t: nix::sys::time::TimeVal) -> Duration {
    let secs = u64::try_from(t.tv_sec()).unwrap_or(0);
    let micros = u64::try_from(t.tv_usec()).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// Resident set size in bytes (`VmRSS` of /proc/self/status).
pub fn rss() -> anyhow::Result<u64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .context("/proc/self/status has no VmRSS")?;
    let kib: u64 = line
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .with_context(|| format!("VmRSS {line:?}"))?;
    Ok(kib * 1024)
}

/// p50, p99 and max (nearest rank) of `samples`; zeros when empty.
pub fn percentiles(samples: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = |p: f64| -> Duration {
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted.get(index).copied().unwrap_or_default()
    };
    (rank(0.50), rank(0.99), rank(1.0))
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let (p50, p99, max) = percentiles(&samples);
        assert_eq!(
            (p50, p99, max),
            (
                Duration::from_millis(50),
                Duration::from_millis(99),
                Duration::from_millis(100)
            )
        );
        assert_eq!(percentiles(&[]).2, Duration::ZERO);
    }
}
