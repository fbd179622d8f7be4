//! Waiting on conditions with a cap: never sleep to synchronise.

use std::time::{Duration, Instant};

use anyhow::bail;

/// How often conditions are re-checked.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// Calls `check` until it returns `Some`, at most for `cap`. On timeout the
/// error names `what` and the last reason `check` gave (its `Err`).
pub fn until<T>(
    what: &str,
    cap: Duration,
    mut check: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + cap;
    let mut last;
    loop {
        match check() {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => last = "condition not met".into(),
            Err(error) => last = format!("{error:#}"),
        }
        if Instant::now() >= deadline {
            bail!("{what}: not reached within {cap:?} (last: {last})");
        }
        pause(INTERVAL);
    }
}

/// The gap between two checks of a condition. Only ever called from
/// deadline-bounded waits: it paces polling, it does not synchronise.
#[allow(clippy::disallowed_methods)]
pub fn pause(gap: Duration) {
    std::thread::sleep(gap);
}
