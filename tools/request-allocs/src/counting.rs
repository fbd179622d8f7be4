//! The system allocator, counting allocations made on threads that opted
//! in ([`count_this_thread`]) while counting is on; optionally keeping a
//! backtrace of each, to say which crate asked. While tracking
//! ([`track`]), it also keeps which of those allocations are still live.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static TRACE: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static TRACES: Mutex<Vec<(usize, Backtrace)>> = Mutex::new(Vec::new());
static TRACK: AtomicBool = AtomicBool::new(false);
/// Address -> (size, backtrace) of the counted threads' live allocations.
static LIVE: Mutex<BTreeMap<usize, (usize, Backtrace)>> = Mutex::new(BTreeMap::new());

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

/// From now on, keeps (with a backtrace) every allocation the counted
/// threads make, until it is freed.
pub fn track() {
    lock_live().clear();
    TRACK.store(true, Ordering::SeqCst);
}

/// Stops tracking; returns the tracked allocations still live.
pub fn untrack() -> Vec<(usize, Backtrace)> {
    TRACK.store(false, Ordering::SeqCst);
    std::mem::take(&mut *lock_live()).into_values().collect()
}

fn lock_live() -> std::sync::MutexGuard<'static, BTreeMap<usize, (usize, Backtrace)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with this thread's own allocations passing untracked (the
/// map's nodes, the backtrace), so it cannot re-enter itself.
fn outside(f: impl FnOnce()) {
    if INSIDE.with(Cell::get) {
        return;
    }
    INSIDE.with(|i| i.set(true));
    f();
    INSIDE.with(|i| i.set(false));
}

fn born(ptr: *mut u8, size: usize) {
    if ptr.is_null() || !TRACK.load(Ordering::Relaxed) || !COUNTED.with(Cell::get) {
        return;
    }
    outside(|| {
        let trace = Backtrace::force_capture();
        lock_live().insert(ptr as usize, (size, trace));
    });
}

fn died(ptr: *mut u8) {
    if TRACK.load(Ordering::Relaxed) {
        outside(|| {
            lock_live().remove(&(ptr as usize));
        });
    }
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
        let ptr = unsafe { System.alloc(layout) };
        born(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        let ptr = unsafe { System.alloc_zeroed(layout) };
        born(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        died(ptr);
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        died(ptr);
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        born(moved, new_size);
        moved
    }
}
