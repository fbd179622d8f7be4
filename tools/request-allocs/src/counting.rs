//! The system allocator, counting allocations made on threads that opted
//! in ([`count_this_thread`]) while counting is on; optionally keeping a
//! backtrace of each, to say which crate asked.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static TRACE: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static TRACES: Mutex<Vec<(usize, Backtrace)>> = Mutex::new(Vec::new());

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// Set while a backtrace is taken, so its own allocations pass.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Allocations on the calling thread count from now on.
pub fn count_this_thread() {
    COUNTED.with(|c| c.set(true));
}

/// Allocations and bytes counted since the last call; starts counting
/// again (with backtraces when `trace`).
pub fn restart(trace: bool) {
    ON.store(false, Ordering::SeqCst);
    ALLOCS.store(0, Ordering::SeqCst);
    BYTES.store(0, Ordering::SeqCst);
    take_traces();
    TRACE.store(trace, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
}

/// Stops counting; returns (allocations, bytes) since [`restart`].
pub fn stop() -> (usize, usize) {
    ON.store(false, Ordering::SeqCst);
    (ALLOCS.load(Ordering::SeqCst), BYTES.load(Ordering::SeqCst))
}

/// The sizes and backtraces kept since [`restart`].
pub fn take_traces() -> Vec<(usize, Backtrace)> {
    std::mem::take(&mut *TRACES.lock().unwrap_or_else(|e| e.into_inner()))
}

fn note(size: usize) {
    if !ON.load(Ordering::Relaxed) || !COUNTED.with(Cell::get) || INSIDE.with(Cell::get) {
        return;
    }
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size, Ordering::Relaxed);
    if TRACE.load(Ordering::Relaxed) {
        INSIDE.with(|i| i.set(true));
        let trace = Backtrace::force_capture();
        TRACES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((size, trace));
        INSIDE.with(|i| i.set(false));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
