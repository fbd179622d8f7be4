use super::*;

fn config(max_open_ms: Option<u64>) -> coxswain_ir::Breaker {
    coxswain_ir::Breaker {
        threshold_percent: 50,
        window_ms: 1_000,
        open_ms: 100,
        min_requests: 4,
        max_open_ms,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn to(state: BreakerState) -> Option<Transition> {
    Some(Transition { to: state })
}

/// Records `n` outcomes at `at`; returns the transitions reported.
fn record_n(b: &CircuitBreaker, at: Instant, n: usize, success: bool) -> Vec<Transition> {
    (0..n)
        .filter_map(|_| b.record(at, success, false))
        .collect()
}

/// Opens a breaker at `at` with four failures.
fn open(b: &CircuitBreaker, at: Instant) {
    assert_eq!(
        record_n(b, at, 4, false),
        vec![Transition {
            to: BreakerState::Open
        }]
    );
}

#[test]
fn state_gauge_and_label() {
    assert_eq!(BreakerState::Closed.gauge(), 0);
    assert_eq!(BreakerState::Open.gauge(), 1);
    assert_eq!(BreakerState::HalfOpen.gauge(), 2);
    assert_eq!(BreakerState::Closed.label(), "closed");
    assert_eq!(BreakerState::Open.label(), "open");
    assert_eq!(BreakerState::HalfOpen.label(), "half_open");
}

#[test]
fn stays_closed_below_min_requests() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    assert!(record_n(&b, t0, 3, false).is_empty());
    assert_eq!(b.state(), BreakerState::Closed);
    assert_eq!(b.admit(t0), (Admission::Allowed, None));
}

#[test]
fn opens_at_threshold() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    // 1 failure in 3: below 50% (and below min_requests).
    assert!(record_n(&b, t0, 2, true).is_empty());
    assert_eq!(b.record(t0, false, false), None);
    // 2 failures in 4: exactly 50%.
    assert_eq!(b.record(t0 + ms(10), false, false), to(BreakerState::Open));
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn stays_closed_under_threshold() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    assert!(record_n(&b, t0, 6, true).is_empty());
    assert!(record_n(&b, t0, 5, false).is_empty());
    assert_eq!(b.state(), BreakerState::Closed);
}

#[test]
fn rejects_while_open() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    open(&b, t0);
    assert_eq!(b.admit(t0), (Admission::Rejected, None));
    assert_eq!(b.admit(t0 + ms(99)), (Admission::Rejected, None));
    // Late outcomes of requests admitted before opening change nothing.
    assert_eq!(b.record(t0 + ms(50), true, false), None);
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn one_probe_after_open_time() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    open(&b, t0);
    assert_eq!(
        b.admit(t0 + ms(100)),
        (Admission::Probe, to(BreakerState::HalfOpen))
    );
    assert_eq!(b.state(), BreakerState::HalfOpen);
    assert_eq!(b.admit(t0 + ms(100)), (Admission::Rejected, None));
    assert_eq!(b.admit(t0 + ms(150)), (Admission::Rejected, None));
}

#[test]
fn probe_success_closes_and_clears_window() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    open(&b, t0);
    let t1 = t0 + ms(100);
    assert_eq!(b.admit(t1).0, Admission::Probe);
    assert_eq!(b.record(t1, true, true), to(BreakerState::Closed));
    assert_eq!(b.state(), BreakerState::Closed);
    assert_eq!(b.admit(t1), (Admission::Allowed, None));
    // The failures that opened it are gone: three more do not reopen it.
    assert!(record_n(&b, t1, 3, false).is_empty());
    assert_eq!(b.record(t1, false, false), to(BreakerState::Open));
}

#[test]
fn probe_failure_reopens_with_doubling_capped() {
    let b = CircuitBreaker::new(&config(Some(300)));
    let t0 = Instant::now();
    open(&b, t0);
    // Open 100 ms, then 200, then 300 (capped), then 300 again.
    let mut at = t0;
    for open_for in [100, 200, 300, 300] {
        assert_eq!(b.admit(at + ms(open_for - 1)), (Admission::Rejected, None));
        at += ms(open_for);
        assert_eq!(b.admit(at), (Admission::Probe, to(BreakerState::HalfOpen)));
        assert_eq!(b.record(at, false, true), to(BreakerState::Open));
    }
    // A successful probe resets the open time.
    at += ms(300);
    assert_eq!(b.admit(at).0, Admission::Probe);
    assert_eq!(b.record(at, true, true), to(BreakerState::Closed));
    open(&b, at);
    assert_eq!(b.admit(at + ms(99)), (Admission::Rejected, None));
    assert_eq!(b.admit(at + ms(100)).0, Admission::Probe);
}

#[test]
fn probe_failure_reopens_for_constant_time_without_max() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    open(&b, t0);
    let mut at = t0;
    for _ in 0..3 {
        assert_eq!(b.admit(at + ms(99)), (Admission::Rejected, None));
        at += ms(100);
        assert_eq!(b.admit(at), (Admission::Probe, to(BreakerState::HalfOpen)));
        assert_eq!(b.record(at, false, true), to(BreakerState::Open));
    }
}

#[test]
fn old_outcomes_expire() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    assert!(record_n(&b, t0, 3, false).is_empty());
    // A window later, those three no longer count.
    let t1 = t0 + ms(1_000);
    assert!(record_n(&b, t1, 3, false).is_empty());
    assert_eq!(b.state(), BreakerState::Closed);
    // Within the window they do.
    assert_eq!(b.record(t1 + ms(500), false, false), to(BreakerState::Open));
}

#[test]
fn old_successes_expire_too() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    assert!(record_n(&b, t0, 20, true).is_empty());
    let t1 = t0 + ms(1_500);
    assert!(record_n(&b, t1, 3, false).is_empty());
    assert_eq!(b.record(t1, false, false), to(BreakerState::Open));
}

#[test]
fn lost_probe_is_replaced() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    open(&b, t0);
    let t1 = t0 + ms(100);
    assert_eq!(b.admit(t1), (Admission::Probe, to(BreakerState::HalfOpen)));
    // The probe never reports back.
    assert_eq!(b.admit(t1 + ms(99)), (Admission::Rejected, None));
    let t2 = t1 + ms(100);
    assert_eq!(b.admit(t2), (Admission::Probe, None));
    assert_eq!(b.admit(t2), (Admission::Rejected, None));
    assert_eq!(b.record(t2, true, true), to(BreakerState::Closed));
    // The lost probe reporting late counts as an ordinary outcome.
    assert_eq!(b.record(t2, false, true), None);
    assert_eq!(b.state(), BreakerState::Closed);
}

#[test]
fn transitions_reported_once() {
    let b = CircuitBreaker::new(&config(None));
    let t0 = Instant::now();
    let opened: Vec<_> = (0..10).filter_map(|_| b.record(t0, false, false)).collect();
    assert_eq!(
        opened,
        vec![Transition {
            to: BreakerState::Open
        }]
    );
    let t1 = t0 + ms(100);
    let admits: Vec<_> = (0..5).map(|_| b.admit(t1)).collect();
    assert_eq!(admits.iter().filter_map(|(_, t)| *t).count(), 1);
    assert_eq!(
        admits
            .iter()
            .filter(|(a, _)| *a == Admission::Probe)
            .count(),
        1
    );
    assert_eq!(b.record(t1, true, true), to(BreakerState::Closed));
    // A second report for the same probe changes nothing.
    assert_eq!(b.record(t1, true, true), None);
}

#[test]
fn concurrent_admits_let_one_probe_through() {
    use std::sync::Arc;
    let b = Arc::new(CircuitBreaker::new(&config(None)));
    let t0 = Instant::now();
    open(&b, t0);
    let t1 = t0 + ms(100);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.admit(t1))
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let probes = results
        .iter()
        .filter(|(a, _)| *a == Admission::Probe)
        .count();
    let transitions = results.iter().filter(|(_, t)| t.is_some()).count();
    assert_eq!((probes, transitions), (1, 1));
}
