//! Freed memory goes back to the OS when a worker goes idle.
//!
//! mimalloc returns a page it no longer uses after a short delay, but only
//! from inside a later allocator call on the same thread: a proxy that has
//! just parked thousands of idle connections (crates/proxy/src/http/park.rs)
//! and then sits quiet never makes that call, and keeps their buffers'
//! pages resident (about 0.6 KiB per idle connection in
//! scripts/bench-memory.sh). A worker about to sleep collects its heap
//! instead, at most every [`EVERY`], so a busy worker that parks between
//! bursts does not pay for it each time.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The shortest time between two collections on one worker.
pub const EVERY: Duration = Duration::from_millis(100);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs before a runtime worker parks (tokio's `on_thread_park`).
pub fn collect_when_idle() {
    if LAST.with(|last| due(last, Instant::now())) {
        // SAFETY: mi_collect takes no pointers and may be called from any
        // thread at any time. `true`: free pages are returned now, not
        // after the delay that only a later allocation would end.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}

/// Whether a collection is due at `now`; if so, `now` becomes the last.
fn due(last: &Cell<Option<Instant>>, now: Instant) -> bool {
    let due = last.get().is_none_or(|at| now.duration_since(at) >= EVERY);
    if due {
        last.set(Some(now));
    }
    due
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_collects_at_most_every_interval() {
        let last = Cell::new(None);
        let start = Instant::now();
        assert!(due(&last, start), "the first park collects");
        assert!(!due(&last, start + EVERY / 2));
        assert!(due(&last, start + EVERY));
        assert!(!due(&last, start + EVERY + EVERY / 2));
        assert!(due(&last, start + EVERY * 3));
    }

    #[test]
    fn collecting_is_safe_to_call_from_any_thread() {
        collect_when_idle();
        std::thread::spawn(collect_when_idle).join().unwrap();
    }
}
