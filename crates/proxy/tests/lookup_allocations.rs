//! Route lookup must not allocate: a counting global allocator checks 0
//! allocations per lookup at 10k routes in both table shapes.

mod shapes;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use coxswain_proxy::router::host::{MAX_HOST_LEN, normalize_host};
use coxswain_proxy::router::{RequestView, Router};
use http::{HeaderMap, Method};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Looks up (host, path) `rounds` times; returns (allocations, found).
fn count_lookups(router: &Router, raw_host: &str, path: &str, rounds: usize) -> (usize, bool) {
    let headers = HeaderMap::new();
    let method = Method::GET;
    let mut found = false;
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    for _ in 0..rounds {
        let mut buf = [0u8; MAX_HOST_LEN];
        let host = normalize_host(raw_host, &mut buf);
        let view = RequestView {
            host,
            method: &method,
            path,
            query: None,
            headers: &headers,
        };
        found = std::hint::black_box(router.lookup(shapes::SOCKET, &view)).is_some();
    }
    COUNTING.with(|c| c.set(false));
    (ALLOCATIONS.load(Ordering::SeqCst), found)
}

#[test]
fn lookup_allocates_nothing_at_10k_routes() {
    // The counter itself must see allocations, or a 0 below proves nothing.
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    std::hint::black_box(vec![1u8; 8]);
    COUNTING.with(|c| c.set(false));
    assert!(ALLOCATIONS.load(Ordering::SeqCst) > 0);

    let n = 10_000;
    let hosts = Router::compile(&shapes::many_hosts(n));
    let prefixes = Router::compile(&shapes::many_prefixes(n));
    let cases = [
        (&hosts, shapes::host_hit(n), "/anything".to_string(), true),
        (
            &hosts,
            "nobody.example.com".to_string(),
            "/".to_string(),
            false,
        ),
        (
            &prefixes,
            "api.example.com".to_string(),
            shapes::prefix_hit(n),
            true,
        ),
        (
            &prefixes,
            "api.example.com".to_string(),
            "/exact5000".to_string(),
            true,
        ),
        (
            &prefixes,
            "api.example.com".to_string(),
            "/nope/x".to_string(),
            false,
        ),
    ];
    for (router, host, path, want_found) in cases {
        // Warm-up outside the counted region (lazy thread-locals etc.).
        count_lookups(router, &host, &path, 1);
        let (allocations, found) = count_lookups(router, &host, &path, 1000);
        assert_eq!(found, want_found, "{host}{path}");
        assert_eq!(allocations, 0, "{host}{path} allocated");
    }
}
