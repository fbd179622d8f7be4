//! Fixture: a proxy crate that obeys the source rule. Prose about
//! std::sync::Mutex in a comment is not a finding, nor are other types.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed); // not a std::sync::Mutex
    }
}
