//! The simulation, small: 50 routes, 3 proxies, 5 changes. Every proxy
//! must ack every version, and a change must send less than the whole
//! config.

use std::collections::BTreeMap;
use std::process::Command;

fn summary(report: &str) -> BTreeMap<String, String> {
    let line = report
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{report}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn number(summary: &BTreeMap<String, String>, key: &str) -> f64 {
    summary
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} missing or not a number in {summary:?}"))
}

#[test]
fn three_proxies_ack_every_change_and_changes_are_incremental() {
    let output = Command::new(env!("CARGO_BIN_EXE_coxswain-stream-sim"))
        .args(["--routes", "50", "--proxies", "3", "--changes", "5"])
        .args(["--timeout-secs", "30"])
        .output()
        .expect("the simulation runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{report}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.starts_with("SIMULATION (one machine, loopback, 3 proxies"));
    let s = summary(&report);
    assert_eq!(s.get("proxies").map(String::as_str), Some("3"));
    assert_eq!(s.get("changes").map(String::as_str), Some("5"));
    assert_eq!(s.get("all_acked").map(String::as_str), Some("true"));
    assert_eq!(
        s.get("hub_agrees").map(String::as_str),
        Some("true"),
        "{report}"
    );
    assert_eq!(s.get("stray").map(String::as_str), Some("0"), "{report}");
    let (incremental, full) = (number(&s, "incremental_bytes"), number(&s, "full_bytes"));
    assert!(incremental > 0.0, "{report}");
    assert!(incremental < full, "{report}");
    assert!(number(&s, "p99_ms") > 0.0, "{report}");
    assert!(number(&s, "cpu_per_change_per_proxy_ms") >= 0.0, "{report}");
    assert!(
        report.contains("acks: 3 of 3 proxies acked the initial version and each of the 5 changes"),
        "{report}"
    );
    assert!(report.contains("rejected: none"), "{report}");
}
