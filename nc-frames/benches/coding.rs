//! Coding benchmarks: `cargo bench -p nc-frames` (also `make bench`).
//!
//! Criterion measures every case; a summary table at the end re-measures
//! with a fixed-iteration timer and prints every figure with its ratio to
//! the scalar reference and to the best external crate
//! (`reed-solomon-erasure`, GF(2^8)/0x11D, C SIMD), in one run. The AXPY
//! section also prints `rlnc-simdx` (GF2P8MULB, field 0x11B) as a speed
//! reference only: it computes in a different field.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use nc_frames::codec::{Decoder, Encoder};
use nc_frames::coeffs::Coefficients;
use nc_frames::simd::Kernel;
use nc_frames::testrng::Rng;

const SYM: usize = 1200;

/// Keeps glibc from returning freed memory to the kernel between
/// iterations. The owned decode variants free a 4.8 MB trace clone per
/// iteration; with the default dynamic trim threshold the heap shrinks and
/// the next iteration's allocations and frees run `brk` and page-fault
/// inside the timed region (measured: 2-3x slower). A long-running receiver
/// has a warm heap, which is what this models. Same effect as
/// `GLIBC_TUNABLES=glibc.malloc.trim_threshold=...:glibc.malloc.mmap_threshold=...`.
fn keep_heap_warm() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes allocator tuning parameters; it is
            // called before any measurement, from the benchmark's own thread.
            unsafe {
                libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            }
        });
    }
}

fn rse_axpy(dst: &mut [u8], src: &[u8], c: u8) {
    reed_solomon_erasure::galois_8::mul_slice_xor(c, src, dst);
}

fn rand_vec(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill(&mut v);
    v
}

fn bench_axpy(c: &mut Criterion) {
    let mut rng = Rng::new(1);
    let mut g = c.benchmark_group("axpy");
    for len in [SYM, 64 * 1024] {
        let src = rand_vec(&mut rng, len);
        let mut dst = rand_vec(&mut rng, len);
        g.throughput(Throughput::Bytes(len as u64));
        for k in Kernel::available() {
            g.bench_with_input(BenchmarkId::new(k.name(), len), &len, |b, _| {
                b.iter(|| k.axpy(black_box(&mut dst), black_box(&src), black_box(0x57)))
            });
        }
        g.bench_with_input(
            BenchmarkId::new("ext-reed-solomon-erasure", len),
            &len,
            |b, _| b.iter(|| rse_axpy(black_box(&mut dst), black_box(&src), black_box(0x57))),
        );
        g.bench_with_input(
            BenchmarkId::new("other-field-rlnc-simdx-0x11B", len),
            &len,
            |b, _| {
                b.iter(|| {
                    rlnc_simdx::kernel::axpy(black_box(0x57), black_box(&src), black_box(&mut dst))
                })
            },
        );
    }
    g.finish();
}

fn window_encoder(w: usize, k: Kernel) -> Encoder {
    let mut rng = Rng::new(w as u64);
    let mut e = Encoder::new(w, SYM);
    e.set_kernel(k);
    for _ in 0..w {
        e.push(&rand_vec(&mut rng, SYM)).unwrap();
    }
    e
}

fn rse_repair(srcs: &[Vec<u8>], coefs: &[u8], out: &mut [u8]) {
    out.fill(0);
    for (s, &c) in srcs.iter().zip(coefs) {
        rse_axpy(out, s, c);
    }
}

fn bench_repair(c: &mut Criterion) {
    let mut g = c.benchmark_group("repair_1200B");
    for w in [8usize, 16, 32, 64, 128] {
        g.throughput(Throughput::Bytes((w * SYM) as u64));
        for k in [Kernel::scalar(), Kernel::best()] {
            let mut e = window_encoder(w, k);
            let mut out = Vec::with_capacity(SYM + 2);
            let mut key = 0u16;
            g.bench_with_input(BenchmarkId::new(k.name(), w), &w, |b, _| {
                b.iter(|| {
                    key = key.wrapping_add(1);
                    e.encode(
                        0,
                        w,
                        &Coefficients::Seeded {
                            repair_key: key,
                            dt: 15,
                        },
                        &mut out,
                    )
                    .unwrap();
                    black_box(&out);
                })
            });
        }
        let mut rng = Rng::new(9);
        let srcs: Vec<Vec<u8>> = (0..w).map(|_| rand_vec(&mut rng, SYM + 2)).collect();
        let coefs: Vec<u8> = (0..w).map(|_| rng.byte() | 1).collect();
        let mut out = vec![0u8; SYM + 2];
        g.bench_with_input(
            BenchmarkId::new("ext-reed-solomon-erasure", w),
            &w,
            |b, _| b.iter(|| rse_repair(black_box(&srcs), black_box(&coefs), &mut out)),
        );
    }
    g.finish();
}

#[derive(Clone)]
enum Pkt {
    Src(u64, Vec<u8>),
    Rep(u64, u64, u16, Vec<u8>),
}

/// A systematic trace: sources lost with probability `p`; every 8 sources
/// the (oracle) sender repairs each outstanding loss with one received
/// repair over `[first lost, newest]` (repairs are lost with probability p
/// too and then re-sent).
fn trace(w: usize, p: f64, m: u64) -> (Vec<Pkt>, u64, u64) {
    let mut rng = Rng::new((p * 1000.0) as u64 + w as u64);
    let mut e = Encoder::new(w, SYM);
    // A shadow decoder makes sure every batch is fully repaired (a random
    // dense system is singular with probability ~1/255).
    let mut shadow = Decoder::new(w, SYM);
    let mut out = Vec::new();
    let mut pk = Vec::new();
    let mut lost: Vec<u64> = Vec::new();
    let (mut total, mut recovered) = (0u64, 0u64);
    let mut key = 0u16;
    for i in 0..m {
        if e.len() == w {
            let s = (i + 1 - w as u64).min(lost.first().copied().unwrap_or(u64::MAX));
            e.slide_to(s);
        }
        let pl = rand_vec(&mut rng, SYM);
        total += SYM as u64;
        e.push(&pl).unwrap();
        if rng.unit() < p {
            lost.push(i);
            recovered += SYM as u64;
        } else {
            shadow.add_source(i, &pl).unwrap();
            pk.push(Pkt::Src(i, pl));
        }
        if (i % 8 == 7 || i == m - 1) && !lost.is_empty() {
            let first = lost[0];
            while shadow.i_p() <= i {
                key = key.wrapping_add(1);
                let cnt = i + 1 - first;
                let co = Coefficients::Seeded {
                    repair_key: key,
                    dt: 15,
                };
                e.encode(first, cnt as usize, &co, &mut out).unwrap();
                if rng.unit() >= p {
                    shadow.add_repair(first, cnt, &co, &out).unwrap();
                    pk.push(Pkt::Rep(first, cnt, key, out.clone()));
                }
            }
            while shadow.pop_recovered().is_some() {}
            lost.clear();
        }
    }
    (pk, total, recovered)
}

/// Borrowed path: `add_source(&[u8])` / `add_repair(&[u8])` (the decoder
/// copies every clear payload once).
fn decode_all(w: usize, k: Kernel, pk: &[Pkt], m: u64) -> Decoder {
    let mut d = Decoder::new(w, SYM);
    d.set_kernel(k);
    for p in pk {
        match p {
            Pkt::Src(i, pl) => {
                d.add_source(*i, pl).unwrap();
            }
            Pkt::Rep(f, c, key, data) => {
                d.add_repair(
                    *f,
                    *c,
                    &Coefficients::Seeded {
                        repair_key: *key,
                        dt: 15,
                    },
                    data,
                )
                .unwrap();
            }
        }
        while d.pop_recovered().is_some() {}
    }
    assert_eq!(d.i_p(), m, "trace must fully decode");
    d
}

/// Owned path: the packets are handed over by value (`add_source_owned`,
/// `add_repair_owned`), as a receiver that owns its packet buffers would;
/// recovered payloads are given back for reuse once consumed. The trace is
/// cloned by the caller outside the timed region; everything the decoder
/// does with the buffers (storing, eliminating, recycling, freeing) is
/// timed. Every lost symbol is still recovered by elimination.
///
/// With `recycle`, the receiver asks for a spare buffer after every source
/// (`take_buffer`, as a receiver that reuses the decoder's buffers for its
/// next packets would) and returns them (dropped by the caller, outside the
/// timed region: in that receiver they are reused, not freed). Without, the
/// decoder frees the buffers it is done with once its pool is full.
fn decode_owned(
    w: usize,
    k: Kernel,
    pk: Vec<Pkt>,
    m: u64,
    recycle: bool,
) -> (Decoder, Vec<Vec<u8>>) {
    let mut d = Decoder::new(w, SYM);
    d.set_kernel(k);
    let mut spare = Vec::new();
    for p in pk {
        match p {
            Pkt::Src(i, pl) => {
                d.add_source_owned(i, pl).unwrap();
                if recycle {
                    let b = d.take_buffer();
                    if b.capacity() > 0 {
                        spare.push(b);
                    }
                }
            }
            Pkt::Rep(f, c, key, data) => {
                d.add_repair_owned(
                    f,
                    c,
                    &Coefficients::Seeded {
                        repair_key: key,
                        dt: 15,
                    },
                    data,
                )
                .unwrap();
            }
        }
        while let Some((_, pl)) = d.pop_recovered() {
            black_box(&pl);
            d.recycle_buffer(pl);
        }
    }
    assert_eq!(d.i_p(), m, "trace must fully decode");
    (d, spare)
}

const M: u64 = 4000;

fn bench_decode(c: &mut Criterion) {
    keep_heap_warm();
    let mut g = c.benchmark_group("decode");
    for w in [32usize, 64] {
        for p in [0.01, 0.05, 0.20] {
            let (pk, total, _rec) = trace(w, p, M);
            g.throughput(Throughput::Bytes(total));
            for k in [Kernel::scalar(), Kernel::best()] {
                g.bench_function(
                    BenchmarkId::new(format!("{}-w{w}", k.name()), format!("{}%", p * 100.0)),
                    |b| {
                        b.iter_batched(
                            || (),
                            |_| black_box(decode_all(w, k, &pk, M)),
                            BatchSize::SmallInput,
                        )
                    },
                );
                // Owned path: the trace is cloned outside the timed region
                // (and criterion drops the routine's output outside it).
                for (tag, recycle) in [("owned-recycled", true), ("owned", false)] {
                    g.bench_function(
                        BenchmarkId::new(
                            format!("{}-{tag}-w{w}", k.name()),
                            format!("{}%", p * 100.0),
                        ),
                        |b| {
                            b.iter_batched(
                                || pk.clone(),
                                |pk| black_box(decode_owned(w, k, pk, M, recycle).1),
                                BatchSize::LargeInput,
                            )
                        },
                    );
                }
            }
        }
    }
    g.finish();
}

/// Best-of-5 mean time per call of `f`, each run lasting about `budget`.
fn time<F: FnMut()>(mut f: F, budget: Duration) -> f64 {
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < budget / 10 {
        f();
        n += 1;
    }
    let per = (budget / 5).as_secs_f64() / (t.elapsed().as_secs_f64() / n as f64);
    let iters = per.max(1.0) as u64;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    best
}

/// As [`time`] for a routine that consumes a fresh input from `setup`:
/// only `f` is timed (each input is prepared before the clock starts, the
/// output is dropped after it stopped).
fn time_batched<I, O, S: FnMut() -> I, F: FnMut(I) -> O>(
    mut setup: S,
    mut f: F,
    budget: Duration,
) -> f64 {
    let mut run = |iters: u64| {
        let mut spent = Duration::ZERO;
        for _ in 0..iters {
            let x = setup();
            let t = Instant::now();
            let o = black_box(f(x));
            spent += t.elapsed();
            drop(o);
        }
        spent
    };
    let mut n = 0u64;
    let mut spent = Duration::ZERO;
    while spent < budget / 10 {
        spent += run(1);
        n += 1;
    }
    let per = (budget / 5).as_secs_f64() / (spent.as_secs_f64() / n as f64);
    let iters = per.max(1.0) as u64;
    let mut best = f64::MAX;
    for _ in 0..5 {
        best = best.min(run(iters).as_secs_f64() / iters as f64);
    }
    best
}

fn summary(_c: &mut Criterion) {
    keep_heap_warm();
    let budget = Duration::from_millis(300);
    let mut rng = Rng::new(3);
    println!("\n=== nc-frames summary (ratios: vs scalar reference, vs reed-solomon-erasure) ===");
    println!("best kernel: {}", Kernel::best().name());
    println!("\nAXPY (GB/s)");
    for len in [SYM, 64 * 1024] {
        let src = rand_vec(&mut rng, len);
        let mut dst = rand_vec(&mut rng, len);
        let gbs = |s: f64| len as f64 / s / 1e9;
        let ext = gbs(time(
            || rse_axpy(black_box(&mut dst), black_box(&src), 0x57),
            budget,
        ));
        let other = gbs(time(
            || rlnc_simdx::kernel::axpy(0x57, black_box(&src), black_box(&mut dst)),
            budget,
        ));
        println!(
            "  len {len:>6}: other field: rlnc-simdx (0x11B, {}) {other:7.2}  (speed reference only)",
            rlnc_simdx::active_kernel()
        );
        let sc = gbs(time(
            || Kernel::scalar().axpy(black_box(&mut dst), black_box(&src), 0x57),
            budget,
        ));
        println!("  len {len:>6}: ext-reed-solomon-erasure {ext:7.2}");
        for k in Kernel::available() {
            let v = gbs(time(
                || k.axpy(black_box(&mut dst), black_box(&src), 0x57),
                budget,
            ));
            println!(
                "  len {len:>6}: {:<12} {v:7.2}  x{:5.2} scalar  x{:5.2} ext",
                k.name(),
                v / sc,
                v / ext
            );
        }
    }
    println!("\nRepair symbol of 1200 B (us)");
    for w in [8usize, 16, 32, 64, 128] {
        let mut r = Rng::new(9);
        let srcs: Vec<Vec<u8>> = (0..w).map(|_| rand_vec(&mut r, SYM + 2)).collect();
        let coefs: Vec<u8> = (0..w).map(|_| r.byte() | 1).collect();
        let mut o = vec![0u8; SYM + 2];
        let ext = time(|| rse_repair(black_box(&srcs), &coefs, &mut o), budget) * 1e6;
        let mut res = Vec::new();
        for k in [Kernel::scalar(), Kernel::best()] {
            let mut e = window_encoder(w, k);
            let mut out = Vec::new();
            let mut key = 0u16;
            res.push(
                time(
                    || {
                        key = key.wrapping_add(1);
                        e.encode(
                            0,
                            w,
                            &Coefficients::Seeded {
                                repair_key: key,
                                dt: 15,
                            },
                            &mut out,
                        )
                        .unwrap();
                    },
                    budget,
                ) * 1e6,
            );
        }
        println!(
            "  W={w:>3}: scalar {:7.2}  {} {:6.2}  ext {:6.2}   speedup x{:5.2} scalar  x{:5.2} ext",
            res[0],
            Kernel::best().name(),
            res[1],
            ext,
            res[0] / res[1],
            ext / res[1]
        );
    }
    println!("\nDecode (GB/s of delivered source data; recovered-only GB/s in brackets;");
    println!(
        "first line: borrowed add_source(&[u8]); second line: owned add_source_owned(Vec<u8>),"
    );
    println!(
        "trace cloned outside the timed region; 'owned': the decoder frees the buffers it is done"
    );
    println!("with; 'owned+recycled': the receiver takes one spare buffer back per source, see decode_owned)");
    for w in [32usize, 64] {
        for p in [0.01, 0.05, 0.20] {
            let (pk, total, rec) = trace(w, p, M);
            let ts = time(|| drop(decode_all(w, Kernel::scalar(), &pk, M)), budget);
            let tb = time(|| drop(decode_all(w, Kernel::best(), &pk, M)), budget);
            // Recycled first: the freeing variant leaves the allocator's
            // free lists fragmented, which measurably slows down whatever
            // clones and decodes after it in the same process.
            let tr = time_batched(
                || pk.clone(),
                |pk| decode_owned(w, Kernel::best(), pk, M, true).1,
                budget,
            );
            let to = time_batched(
                || pk.clone(),
                |pk| decode_owned(w, Kernel::best(), pk, M, false).1,
                budget,
            );
            println!(
                "  W={w:>2} loss {:>4.0}%: scalar {:6.2} [{:5.3}]  {} {:6.2} [{:5.3}]  x{:5.2} scalar  (ext: no 0x11D sliding-window decoder)",
                p * 100.0,
                total as f64 / ts / 1e9,
                rec as f64 / ts / 1e9,
                Kernel::best().name(),
                total as f64 / tb / 1e9,
                rec as f64 / tb / 1e9,
                ts / tb
            );
            println!(
                "           owned: {} {:6.2} [{:5.3}] {:6.1} us/trace x{:5.2} borrowed;  owned+recycled {:6.2} [{:5.3}] {:6.1} us/trace x{:5.2} borrowed",
                Kernel::best().name(),
                total as f64 / to / 1e9,
                rec as f64 / to / 1e9,
                to * 1e6,
                tb / to,
                total as f64 / tr / 1e9,
                rec as f64 / tr / 1e9,
                tr * 1e6,
                tb / tr
            );
            // Floor of any decoder that keeps the clear symbols it gets as
            // borrowed slices: copying each clear payload (with its length
            // prefix) once into one of 2W rotating buffers, nothing else.
            let mut ring: Vec<Vec<u8>> = (0..2 * w).map(|_| Vec::with_capacity(SYM + 2)).collect();
            let tc = time(
                || {
                    for (j, p) in pk.iter().enumerate() {
                        if let Pkt::Src(_, pl) = p {
                            let b = &mut ring[j % (2 * w)];
                            b.clear();
                            b.extend_from_slice(&(pl.len() as u16).to_be_bytes());
                            b.extend_from_slice(pl);
                        }
                    }
                    black_box(&ring);
                },
                budget,
            );
            println!(
                "           copy floor: {:6.1} us/trace = {:5.1}% of the {} borrowed decode time; recovered-only cap {:5.3} GB/s",
                tc * 1e6,
                100.0 * tc / tb,
                Kernel::best().name(),
                rec as f64 / tc / 1e9
            );
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! { name = benches; config = config(); targets = bench_axpy, bench_repair, bench_decode, summary }
criterion_main!(benches);
