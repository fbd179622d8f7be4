//! The report, as text. Its `key: value` lines are what the smoke test
//! and anyone comparing runs read.

use std::fmt::Write;
use std::time::Duration;

use crate::measure::{mib, ms, percentiles};
use crate::run::{Change, Results};

pub fn render(r: &Results) -> String {
    let mut out = String::new();
    let n = r.proxies.max(1) as f64;
    let changes = r.changes.len();
    let _ = writeln!(
        out,
        "SIMULATION (one machine, loopback, {} proxies in one child process; {} cores)",
        r.proxies,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let _ = writeln!(
        out,
        "world: {} HTTPRoutes -> {} IR routes, {} clusters; {} resources; largest {} ({} bytes)",
        r.settings_routes,
        r.ir_routes,
        r.clusters,
        r.resources,
        r.largest_resource.0,
        r.largest_resource.1
    );
    let _ = writeln!(
        out,
        "initial translate: {:.2} ms; slice + resources: {:.2} ms",
        ms(r.initial_translate),
        ms(r.initial_encode)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "initial sync of {} proxies:", r.proxies);
    let _ = writeln!(
        out,
        "  wall: {:.1} ms (connect, mTLS handshake, full update, ack)",
        ms(r.sync_wall)
    );
    let _ = writeln!(
        out,
        "  controller CPU: {:.1} ms ({:.3} ms per proxy)",
        ms(r.sync_cpu),
        ms(r.sync_cpu) / n
    );
    let delta = r.rss_synced.saturating_sub(r.rss_before) as f64;
    let _ = writeln!(
        out,
        "  controller RSS: {:.1} MiB before, {:.1} MiB synced, {:.1} MiB after the changes",
        mib(r.rss_before as f64),
        mib(r.rss_synced as f64),
        mib(r.rss_end as f64)
    );
    let end_delta = r.rss_end.saturating_sub(r.rss_before) as f64;
    let _ = writeln!(
        out,
        "  memory per connected proxy: {:.1} KiB synced, {:.1} KiB after the changes",
        delta / n / 1024.0,
        end_delta / n / 1024.0
    );
    let _ = writeln!(
        out,
        "  full update: {} bytes per proxy; hub sent {} bytes in all",
        r.full_update_bytes, r.sync_hub_bytes
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "route changes: {changes}, one at a time, each until all {} proxies acked",
        r.proxies
    );
    let column =
        |f: fn(&Change) -> Duration| -> Vec<Duration> { r.changes.iter().map(f).collect() };
    for (label, samples) in [
        ("apply to last ack", column(|c| c.total)),
        ("  translate", column(|c| c.translate)),
        ("  slice + resources", column(|c| c.encode)),
        ("  publish to last ack", column(|c| c.distribute)),
    ] {
        let (p50, p99, max) = percentiles(&samples);
        let _ = writeln!(
            out,
            "{label}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            ms(p50),
            ms(p99),
            ms(max)
        );
    }
    let mean = |f: fn(&Change) -> Duration| -> f64 {
        r.changes.iter().map(|c| ms(f(c))).sum::<f64>() / changes.max(1) as f64
    };
    let _ = writeln!(
        out,
        "controller CPU per change: {:.2} ms translate + encode, {:.2} ms distributing \
         ({:.3} ms per change per proxy)",
        mean(|c| c.cpu_prepare),
        mean(|c| c.cpu_distribute),
        mean(|c| c.cpu_distribute) / n
    );
    let _ = writeln!(
        out,
        "proxies' CPU per change: {:.2} ms for all ({:.3} ms per proxy: TLS, decode, digest check, Resources::apply)",
        mean(|c| c.proxies_cpu),
        mean(|c| c.proxies_cpu) / n
    );
    let avg = |f: fn(&Change) -> u64| -> f64 {
        r.changes.iter().map(f).sum::<u64>() as f64 / changes.max(1) as f64
    };
    let _ = writeln!(
        out,
        "bytes per route change (protobuf payload, before HTTP/2 and TLS framing):"
    );
    let _ = writeln!(
        out,
        "  incremental update: {:.0} bytes per proxy ({:.1} resources upserted)",
        avg(|c| c.incremental_bytes as u64),
        avg(|c| c.upserts as u64)
    );
    let _ = writeln!(
        out,
        "  full update: {:.0} bytes per proxy",
        avg(|c| c.full_bytes as u64)
    );
    let _ = writeln!(
        out,
        "  all proxies: {:.0} bytes (hub counted {:.0} bytes in {:.1} updates)",
        avg(|c| c.incremental_bytes as u64) * r.proxies as f64,
        avg(|c| c.hub_bytes),
        avg(|c| c.hub_updates)
    );
    let _ = writeln!(out);
    let hub_agrees = r.changes.iter().all(|c| c.hub_updates == r.proxies as u64);
    let _ = writeln!(
        out,
        "acks: {n} of {n} proxies acked the initial version and each of the {changes} changes \
         (counted in the proxies' process); hub sent one update per proxy per change: {hub_agrees}; \
         {} stray acks; {} connected at the end; rejected: {}",
        r.stray_acks,
        r.connected,
        r.rejected
            .as_ref()
            .map_or("none".to_string(), |(v, e)| format!("{v}: {e}")),
        n = r.proxies,
    );
    let (_, p99, _) = percentiles(&column(|c| c.total));
    let _ = writeln!(
        out,
        "summary: proxies={} changes={changes} all_acked=true hub_agrees={hub_agrees} \
         stray={} p99_ms={:.3} incremental_bytes={:.0} full_bytes={:.0} \
         cpu_per_change_per_proxy_ms={:.4} memory_per_proxy_kib={:.1}",
        r.proxies,
        r.stray_acks,
        ms(p99),
        avg(|c| c.incremental_bytes as u64),
        avg(|c| c.full_bytes as u64),
        mean(|c| c.cpu_distribute) / n,
        delta / n / 1024.0,
    );
    out
}
