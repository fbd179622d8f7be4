//! Fixture: the lock hidden in a grouped import.
use std::sync::{
    Arc,
    Mutex,
};

pub type Shared = Arc<Mutex<u64>>;
