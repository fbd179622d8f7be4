//! Fixture: a lock the author showed is off the request path.
use std::sync::Mutex; // lock-ok: taken only when a listener is removed

pub static DRAINING: Mutex<Vec<u64>> = Mutex::new(Vec::new());
