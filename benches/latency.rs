//! What in-band latency recording costs per operation: a vDSO clock reading, a record into a
//! thread's histogram, a stamp taken back out of a payload, and the observer's read of a
//! region. The figures choose each workload's "one in N" (docs/latency.md).
//!
//! `cargo bench --bench latency` (add `-- --quick` for a smoke pass).

use std::hint::black_box;

use criterion::Criterion;
use schedlab::sys::shared::counters::{now_ns, CounterRegion, Sampler};
use schedlab::sys::shared::histogram::Unit;
use schedlab::workload::stamp;

fn bench(c: &mut Criterion) {
    c.bench_function("clock_gettime(CLOCK_MONOTONIC) via the vDSO", |b| {
        b.iter(|| black_box(now_ns()))
    });
    let region = CounterRegion::create_with(4, 64).unwrap();
    let h = region.claim_histogram(Unit::RoundTrip).unwrap();
    // Values spread over a few octaves, as a round trip's are.
    let values: Vec<u64> = (0..1024u64).map(|i| 2_000 + (i * 7919) % 60_000).collect();
    let mut i = 0;
    c.bench_function("record one value into a histogram", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            h.record(black_box(values[i]))
        })
    });
    c.bench_function("time one operation (two readings and a record)", |b| {
        b.iter(|| h.record_since(black_box(now_ns())))
    });
    let mut sampler = Sampler::new(16);
    c.bench_function("decide whether to time (one in 16)", |b| {
        b.iter(|| black_box(sampler.due()))
    });
    let d = region.claim_histogram(Unit::Delivery).unwrap();
    let mut payload = [b'x'; 100];
    stamp::prepare(&mut payload);
    stamp::stamp(&mut payload, now_ns());
    c.bench_function("take a stamp from a received payload", |b| {
        b.iter(|| stamp::take(black_box(&payload), &d))
    });
    c.bench_function("stamp a payload before sending it", |b| {
        b.iter(|| stamp::stamp(black_box(&mut payload), now_ns()))
    });
    // The observer: 64 threads' histograms, each having recorded a few octaves' worth.
    let full = CounterRegion::create_with(4, 64).unwrap();
    for _ in 0..64 {
        let h = full.claim_histogram(Unit::Message).unwrap();
        for v in &values {
            h.record(*v);
        }
    }
    c.bench_function("observer: read 64 histograms, merged", |b| {
        b.iter(|| black_box(full.read_latency()))
    });
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
