//! Percentiles of the samples, and the controller's own split from its
//! `config applied` log lines.

use std::time::Duration;

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted values.
fn at(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

pub fn line(what: &str, values_ms: &[f64]) -> String {
    let mut sorted = values_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return format!("{what:>28}: no samples");
    }
    format!(
        "{what:>28}: p50 {:>8.2} ms   p99 {:>8.2} ms   max {:>8.2} ms   (n={})",
        at(&sorted, 0.5),
        at(&sorted, 0.99),
        at(&sorted, 1.0),
        sorted.len()
    )
}

pub fn durations(what: &str, samples: &[Duration]) -> String {
    let values: Vec<f64> = samples.iter().copied().map(ms).collect();
    line(what, &values)
}

/// The value of `field=` in each `config applied` line of `log`.
pub fn applied_field(log: &str, field: &str) -> Vec<f64> {
    let key = format!("{field}=");
    log.lines()
        .filter(|l| l.contains("config applied"))
        .filter_map(|l| {
            let rest = l.split(&key).nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

/// The controller's split over the `config applied` lines in `log` (the
/// part of its log written while the changes were measured):
/// `since_change_ms` from the watch event's arrival to the proxy serving,
/// of which `wait_ms` queued and gathering the burst, `translate_ms`,
/// `apply_ms` (proxy router compiled and swapped in).
pub fn controller_split(log: &str) -> Vec<String> {
    let applied = log.lines().filter(|l| l.contains("config applied")).count();
    let mut lines = vec![format!("controller: {applied} configs applied")];
    for field in ["since_change_ms", "wait_ms", "translate_ms", "apply_ms"] {
        let values = applied_field(log, field);
        if !values.is_empty() {
            lines.push(line(&format!("controller {field}"), &values));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_of_applied_lines_only() {
        let log = "2026-12-07T00:55:55Z  INFO coxswain::controller: config applied listeners=1 translate_ms=0.5 since_change_ms=35.6\n\
                   2026-12-07T00:55:56Z  INFO coxswain::other: translate_ms=9 something else\n";
        assert_eq!(applied_field(log, "translate_ms"), [0.5]);
        assert_eq!(applied_field(log, "since_change_ms"), [35.6]);
    }
}
