//! Route lookup latency at 1, 1k and 10k routes in two shapes: routes on
//! distinct hostnames, and distinct path prefixes on one hostname; each with
//! a hit and a miss.

#[path = "../tests/shapes/mod.rs"]
mod shapes;

use coxswain_proxy::router::host::{MAX_HOST_LEN, normalize_host};
use coxswain_proxy::router::{RequestView, Router};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, Method};

fn lookup(router: &Router, raw_host: &str, path: &str, headers: &HeaderMap) -> bool {
    let mut buf = [0u8; MAX_HOST_LEN];
    let host = normalize_host(raw_host, &mut buf);
    let view = RequestView {
        host,
        method: &Method::GET,
        path,
        query: None,
        headers,
    };
    router.lookup(shapes::SOCKET, &view).is_some()
}

fn bench_shapes(c: &mut Criterion) {
    let headers = HeaderMap::new();
    let mut group = c.benchmark_group("route_lookup");
    for n in [1usize, 1_000, 10_000] {
        let hosts = Router::compile(&shapes::many_hosts(n));
        let prefixes = Router::compile(&shapes::many_prefixes(n));
        let cases = [
            (
                "hosts/hit",
                &hosts,
                shapes::host_hit(n),
                "/x".to_string(),
                true,
            ),
            (
                "hosts/miss",
                &hosts,
                "nobody.example.com".to_string(),
                "/x".to_string(),
                false,
            ),
            (
                "prefixes/hit",
                &prefixes,
                "api.example.com".to_string(),
                shapes::prefix_hit(n.max(2)),
                n > 1,
            ),
            (
                "prefixes/miss",
                &prefixes,
                "api.example.com".to_string(),
                "/nope/x".to_string(),
                false,
            ),
        ];
        for (name, router, host, path, expected) in cases {
            assert_eq!(
                lookup(router, &host, &path, &headers),
                expected,
                "{name} n={n}"
            );
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    lookup(
                        router,
                        std::hint::black_box(&host),
                        std::hint::black_box(&path),
                        &headers,
                    )
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_shapes);
criterion_main!(benches);
