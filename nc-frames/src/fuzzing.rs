//! Fuzzing entry points shared by the `cargo fuzz` targets in
//! `nc-frames/fuzz` and by the stable smoke tests (`tests/fuzz_smoke.rs`).
//! Each function must never panic on any input; the only panics are the
//! assertions of properties that must hold.

use crate::codec::Decoder;
use crate::coeffs::Coefficients;
use crate::frames::{Frame, Reader, TransportParams};

/// Parse arbitrary bytes as a sequence of frames; re-encode every frame that
/// parses and check it round-trips.
pub fn frames(data: &[u8]) {
    let mut rest = data;
    while !rest.is_empty() {
        match Frame::parse(rest) {
            Ok((f, used)) => {
                assert!(used > 0 && used <= rest.len());
                let mut v = Vec::new();
                f.encode(&mut v);
                let (g, n) = Frame::parse(&v).expect("re-encoded frame parses");
                assert_eq!(g, f);
                assert_eq!(n, v.len());
                rest = &rest[used..];
            }
            Err(e) => {
                let _ = e.kind();
                break;
            }
        }
    }
    if let Ok(tp) = TransportParams::decode(data) {
        let mut v = Vec::new();
        tp.encode(&mut v);
        assert_eq!(TransportParams::decode(&v), Ok(tp));
    }
}

/// Drive a small decoder with an adversarial sequence of operations decoded
/// from `data`: windows that jump, overlap and exceed limits, all-zero and
/// explicit coefficients, duplicate indexes, abandon requests. Errors are
/// fine; panics and broken invariants are not. Returns the number of
/// innovative arrivals (for coverage checks in the smoke test).
pub fn decoder(data: &[u8]) -> u64 {
    let mut r = Reader::new(data);
    let w = match r.u8() {
        Ok(b) => 1 + (b as usize % 32),
        Err(_) => return 0,
    };
    let max_sym = 64;
    let mut d = Decoder::new(w, max_sym);
    let mut steps = 0;
    while let Ok(op) = r.u8() {
        steps += 1;
        if steps > 512 {
            break;
        }
        let base = d.i_p();
        let res = match op % 4 {
            0 => {
                let Ok(off) = r.u8() else { break };
                let Ok(len) = r.u8() else { break };
                let Ok(payload) = r.bytes((len as usize).min(r.remaining())) else {
                    break;
                };
                d.add_source(base.saturating_sub(4) + off as u64 % 80, payload)
                    .map(|_| ())
            }
            1 | 2 => {
                let Ok(off) = r.u8() else { break };
                let Ok(cnt) = r.u8() else { break };
                let Ok(len) = r.u8() else { break };
                let first = base.saturating_sub(8) + off as u64 % 80;
                let count = cnt as u64 % 40;
                let coefs = if op % 4 == 1 {
                    let Ok(key) = r.u16() else { break };
                    Coefficients::Seeded {
                        repair_key: key,
                        dt: (op >> 4) & 0x1f,
                    }
                } else {
                    let n = (count as usize).min(r.remaining());
                    let Ok(c) = r.bytes(n) else { break };
                    Coefficients::Explicit(c.to_vec())
                };
                let Ok(payload) = r.bytes((len as usize).min(r.remaining())) else {
                    break;
                };
                d.add_repair(first, count, &coefs, payload).map(|_| ())
            }
            _ => {
                let Ok(off) = r.u8() else { break };
                d.abandon_below(base + off as u64 % 40)
            }
        };
        let _ = res;
        d.check_invariants();
        while let Some((i, p)) = d.pop_recovered() {
            assert!(i < d.limit());
            assert!(p.len() <= max_sym);
        }
    }
    d.stats().innovative
}

/// End-to-end: an [`crate::NcSender`] and [`crate::NcReceiver`] connected by a
/// channel whose fate for every packet (drop, delay, ACK drop) is read from
/// `data`; once `data` is exhausted the channel becomes perfect. Checks that
/// every symbol is delivered exactly once with its exact bytes and that the
/// pair completes. Returns the number of packets sent.
pub fn session(data: &[u8]) -> u64 {
    use crate::frames::Frame;
    use crate::sender::{Mode, NcSender, SenderConfig, Transmit};
    use crate::{NcReceiver, PolicyKind};
    use std::time::{Duration, Instant};

    let mut r = Reader::new(data);
    let Ok(hdr) = r.u8() else { return 0 };
    let mode = if hdr & 1 == 0 {
        Mode::Systematic
    } else {
        Mode::FullyCoded
    };
    let policy = match (hdr >> 1) % 5 {
        0 => PolicyKind::FixedR(1.25),
        1 => PolicyKind::CtcpBlock { n: 8 },
        2 => PolicyKind::Von,
        3 => PolicyKind::Fnc,
        _ => PolicyKind::ADAPTIVE,
    };
    let w = 2 + (hdr as usize >> 4);
    let n: u64 = 40;
    let t0 = Instant::now();
    let cfg = SenderConfig {
        mode,
        policy,
        max_window: w,
        max_symbol_size: 32,
        initial_rtt: Duration::from_millis(20),
        abandon_after: Duration::from_secs(3600),
        ..SenderConfig::default()
    };
    let mut tx = NcSender::new(cfg, t0);
    let mut rx = NcReceiver::new(w, 32);
    let payload = |i: u64| -> Vec<u8> { (0..(i % 33) as u8).map(|b| b ^ i as u8).collect() };
    // (due, bytes, is_ack)
    // (due, bytes, is an NC_ACK, offset of the SOURCE_SYMBOL_ID frame)
    let mut wire: Vec<(Instant, Vec<u8>, bool, usize)> = Vec::new();
    let mut got = vec![false; n as usize];
    let mut next = 0u64;
    let mut sent = 0u64;
    let mut now = t0;
    let step = Duration::from_millis(1);
    for _ in 0..200_000 {
        if got.iter().all(|&g| g) {
            break;
        }
        // Deliver everything due, in due order.
        wire.sort_by_key(|x| x.0);
        while wire.first().is_some_and(|x| x.0 <= now) {
            let (_, bytes, is_ack, tag) = wire.remove(0);
            let (f, _) = Frame::parse(&bytes[tag..]).expect("own frames parse");
            if is_ack {
                if let Frame::Ack(a) = f {
                    tx.on_ack(&a, now).expect("valid ack");
                }
                continue;
            }
            match f {
                Frame::SourceSymbolId { index, length } => {
                    let p = &bytes[tag - length as usize..tag];
                    assert_eq!(p, payload(index).as_slice());
                    let a = rx.on_source(index, p, now).expect("valid source");
                    if !a.stale && rx.decoder().is_decoded(index) && !got[index as usize] {
                        got[index as usize] = true;
                    }
                }
                other => {
                    rx.on_frame(&other, now).expect("valid repair");
                }
            }
            while let Some(s) = rx.poll_recovered() {
                assert!(!got[s.index as usize], "delivered twice");
                assert_eq!(s.payload, payload(s.index));
                got[s.index as usize] = true;
            }
            let fate = r.u8().unwrap_or(0);
            if fate & 0x80 == 0 {
                let mut ack = Vec::new();
                rx.write_ack(&mut ack);
                wire.push((
                    now + Duration::from_millis(10 + (fate & 0x0f) as u64),
                    ack,
                    true,
                    0,
                ));
            }
        }
        while tx.poll_event().is_some() {}
        if tx.timeout().is_some_and(|t| t <= now) {
            tx.on_timeout(now);
        }
        let pkt = match tx.poll_transmit(next < n, now) {
            Some(Transmit::NewData) => {
                let p = payload(next);
                let idx = tx.on_source_sent(&p, now).expect("can send");
                assert_eq!(idx, next);
                next += 1;
                match mode {
                    Mode::Systematic => {
                        let mut b = p.clone();
                        Frame::SourceSymbolId {
                            index: idx,
                            length: p.len() as u64,
                        }
                        .encode(&mut b);
                        Some((b, p.len()))
                    }
                    Mode::FullyCoded => tx.write_repair(200, now).map(|x| (x.1, 0)),
                }
            }
            Some(Transmit::Repair) => tx.write_repair(200, now).map(|x| (x.1, 0)),
            None => None,
        };
        if let Some((b, tag)) = pkt {
            sent += 1;
            let fate = r.u8().unwrap_or(0);
            if fate & 0x80 == 0 {
                wire.push((
                    now + Duration::from_millis(10 + (fate & 0x1f) as u64),
                    b,
                    false,
                    tag,
                ));
            }
        }
        now += step;
    }
    assert!(got.iter().all(|&g| g), "session did not complete");
    sent
}
