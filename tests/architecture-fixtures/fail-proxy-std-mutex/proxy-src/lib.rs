//! Fixture: a lock on the data plane.

use std::sync::Mutex;

pub static HITS: Mutex<u64> = Mutex::new(0);
