//! Behaviour of the public sender/receiver API the quiche integration uses.

use std::time::{Duration, Instant};

use nc_frames::frames::Frame;
use nc_frames::{
    Error, Mode, NcReceiver, NcSender, PolicyKind, SenderConfig, SenderEvent, Transmit,
};

fn cfg(mode: Mode, w: usize) -> SenderConfig {
    SenderConfig {
        mode,
        max_window: w,
        max_symbol_size: 100,
        policy: PolicyKind::FixedR(1.5),
        ..SenderConfig::default()
    }
}

#[test]
fn systematic_round_trip_with_repair() {
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 8), t);
    let mut rx = NcReceiver::new(8, 100);
    let data: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 10 + i as usize]).collect();
    let mut repairs = Vec::new();
    for (i, d) in data.iter().enumerate() {
        assert_eq!(tx.poll_transmit(true, t), Some(Transmit::NewData));
        assert_eq!(tx.on_source_sent(d, t).unwrap(), i as u64);
        if tx.poll_transmit(true, t) == Some(Transmit::Repair) {
            repairs.push(tx.write_repair(1200, t).unwrap().1);
        }
    }
    assert_eq!(repairs.len(), 2, "R = 1.5: one repair per two sources");
    // Source 1 and 2 lost; 0 and 3 arrive in clear, then both repairs.
    rx.on_source(0, &data[0], t).unwrap();
    rx.on_source(3, &data[3], t).unwrap();
    for r in &repairs {
        let (f, n) = Frame::parse(r).unwrap();
        assert_eq!(n, r.len());
        rx.on_frame(&f, t).unwrap();
    }
    let mut got: Vec<_> = std::iter::from_fn(|| rx.poll_recovered())
        .map(|s| (s.index, s.payload))
        .collect();
    got.sort();
    assert_eq!(got, vec![(1, data[1].clone()), (2, data[2].clone())]);
    let mut ack = Vec::new();
    rx.write_ack(&mut ack);
    let (Frame::Ack(a), _) = Frame::parse(&ack).unwrap() else {
        panic!()
    };
    assert_eq!((a.i_p, a.i_q, a.diff), (4, 4, 0));
    tx.on_ack(&a, t + Duration::from_millis(50)).unwrap();
    assert_eq!(tx.poll_event(), Some(SenderEvent::Seen(4)));
    assert_eq!(tx.poll_event(), Some(SenderEvent::Decoded(4)));
    assert_eq!(tx.window_len(), 0);
}

#[test]
fn window_limit_and_bad_acks_are_errors() {
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 2), t);
    tx.on_source_sent(b"a", t).unwrap();
    tx.on_source_sent(b"b", t).unwrap();
    assert!(!tx.can_send_source());
    assert_eq!(tx.on_source_sent(b"c", t), Err(Error::WindowFull));
    assert!(tx.on_source_sent(&[0; 101], t).is_err());
    let mut rx = NcReceiver::new(2, 100);
    let mut a = rx.ack();
    a.max_seq = 5;
    a.i_r = 5;
    assert!(
        tx.on_ack(&a, t).is_err(),
        "acknowledging unsent symbols is a violation"
    );
    // The receiver rejects symbols beyond its window.
    assert!(matches!(
        rx.on_source(2, b"x", t),
        Err(Error::WindowExceeded { .. })
    ));
    assert_eq!(Error::WindowFull.quic_code(), None);
    assert_eq!(
        rx.on_source(2, b"x", t).unwrap_err().quic_code(),
        Some(0x0a)
    );
}

#[test]
fn repair_respects_budget() {
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 8), t);
    for i in 0..8u8 {
        tx.on_source_sent(&vec![i; 10 * (i as usize + 1)], t)
            .unwrap();
    }
    let (_, big) = tx.write_repair(1200, t).unwrap();
    let (Frame::Repair(f), _) = Frame::parse(&big).unwrap() else {
        panic!()
    };
    assert_eq!((f.first, f.count), (0, 8));
    let (_, small) = tx.write_repair(50, t).unwrap();
    assert!(small.len() <= 50);
    let (Frame::Repair(f), _) = Frame::parse(&small).unwrap() else {
        panic!()
    };
    assert!(f.count < 8);
    assert!(tx.write_repair(5, t).is_none());
}

#[test]
fn fully_coded_every_transmission_is_a_combination() {
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::FullyCoded, 8), t);
    let mut rx = NcReceiver::new(8, 100);
    for i in 0..5u8 {
        tx.on_source_sent(&[i; 7], t).unwrap();
        let (_, b) = tx.write_repair(1200, t).unwrap();
        let (f, _) = Frame::parse(&b).unwrap();
        let Frame::Repair(r) = &f else { panic!() };
        assert_eq!(r.first + r.count, i as u64 + 1, "covers the new symbol");
        let a = rx.on_frame(&f, t).unwrap().unwrap();
        assert!(a.innovative);
    }
    let got: Vec<_> = std::iter::from_fn(|| rx.poll_recovered()).collect();
    assert_eq!(got.len(), 5);
    assert_eq!(tx.stats().coded_new, 5);
    // The coded new-data frame is never shrunk into a redundant one.
    tx.on_source_sent(&[9; 50], t).unwrap();
    assert!(tx.write_repair(30, t).is_none());
    let (_, b) = tx.write_repair(1200, t).unwrap();
    let (Frame::Repair(r), _) = Frame::parse(&b).unwrap() else {
        panic!()
    };
    assert_eq!(r.first + r.count, 6);
    assert_eq!(tx.stats().coded_new, 6);
}

#[test]
fn abandonment_reports_lost_and_moves_peer() {
    let t = Instant::now();
    let mut c = cfg(Mode::Systematic, 8);
    c.abandon_after = Duration::from_secs(1);
    c.policy = PolicyKind::Fnc;
    let mut tx = NcSender::new(c, t);
    let mut rx = NcReceiver::new(8, 100);
    for i in 0..3u8 {
        tx.on_source_sent(&[i], t).unwrap();
    }
    rx.on_source(2, &[2], t).unwrap();
    tx.on_source_acked(2, t);
    let a = rx.ack();
    tx.on_ack(&a, t + Duration::from_millis(10)).unwrap();
    // Drive the timer: stall probes first, then the abandonment deadline.
    let mut deadline = t;
    let mut probes = 0;
    while deadline < t + Duration::from_secs(1) {
        let next = tx.timeout().unwrap();
        assert!(next >= deadline, "timer goes forward");
        deadline = next;
        tx.on_timeout(deadline);
        if tx.poll_transmit(false, deadline) == Some(Transmit::Repair) {
            tx.write_repair(1200, deadline).unwrap();
            probes += 1;
        }
    }
    assert_eq!(deadline, t + Duration::from_secs(1));
    assert!(probes >= 1, "a stalled sender probes");
    let ev: Vec<_> = std::iter::from_fn(|| tx.poll_event()).collect();
    assert_eq!(
        ev,
        vec![SenderEvent::Lost(0), SenderEvent::Lost(1)],
        "2 was acked in clear"
    );
    let w = tx.poll_window_frame(deadline).unwrap();
    let (f, _) = Frame::parse(&w).unwrap();
    assert_eq!(f, Frame::Window { abandon_below: 3 });
    rx.on_frame(&f, deadline).unwrap();
    assert_eq!(rx.decoder().i_p(), 3);
    let a = rx.ack();
    tx.on_ack(&a, deadline).unwrap();
    assert!(tx
        .poll_window_frame(deadline + Duration::from_secs(5))
        .is_none());
    assert!(tx.can_send_source());
}

/// Send `n` sources of distinct bytes; returns their payloads.
fn send_sources(tx: &mut NcSender, n: usize, t: Instant) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let d = vec![i as u8 + 1; 5 + i % 7];
            assert_eq!(tx.poll_transmit(true, t), Some(Transmit::NewData));
            tx.on_source_sent(&d, t).unwrap();
            d
        })
        .collect()
}

/// A sender whose repairs come from `policy` alone (no tail protection:
/// these tests poll with no new data to isolate the policies' rules).
fn policy_cfg(policy: PolicyKind) -> SenderConfig {
    SenderConfig {
        policy,
        tail_protection: false,
        ..cfg(Mode::Systematic, 16)
    }
}

/// Adaptive default: a transport-declared loss of a source the peer has not
/// reported yet is repaired at once, exactly once: neither a repeated loss
/// signal nor the NC_ACK that later reports the loss (DIFF = 1 while the
/// repair is in flight) causes a second repair.
#[test]
fn source_loss_triggers_one_adaptive_repair() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::ADAPTIVE), t);
    let mut rx = NcReceiver::new(16, 100);
    let data = send_sources(&mut tx, 4, t);
    rx.on_source(0, &data[0], t).unwrap();
    rx.on_source(1, &data[1], t).unwrap();
    let a = rx.ack();
    let t1 = t + Duration::from_millis(5);
    tx.on_ack(&a, t1).unwrap();
    assert_eq!(tx.poll_transmit(false, t1), None, "nothing lost yet");
    assert_eq!(tx.loss_estimate(), 0.0);

    // Source 2 is declared lost by the transport before the peer reports it.
    tx.on_source_lost(2, t1);
    assert!(tx.loss_estimate() > 0.0, "the loss feeds the estimator");
    assert_eq!(tx.poll_transmit(false, t1), Some(Transmit::Repair));
    let (_, bytes) = tx.write_repair(1200, t1).unwrap();
    let (Frame::Repair(r), _) = Frame::parse(&bytes).unwrap() else {
        panic!("not a REPAIR")
    };
    assert!(r.first <= 2 && 2 < r.first + r.count, "repair reaches 2");
    tx.on_source_lost(2, t1);
    assert_eq!(
        tx.poll_transmit(false, t1),
        None,
        "duplicate signal ignored"
    );

    // The peer then receives 3 and reports DIFF = 1: the repair in flight
    // covers it.
    rx.on_source(3, &data[3], t1).unwrap();
    let a = rx.ack();
    assert_eq!(a.diff, 1);
    tx.on_ack(&a, t1 + Duration::from_millis(1)).unwrap();
    assert_eq!(tx.poll_transmit(false, t1 + Duration::from_millis(1)), None);

    // The repair arrives and recovers 2.
    rx.on_repair(&r, t1).unwrap();
    let got = rx.poll_recovered().unwrap();
    assert_eq!((got.index, got.payload), (2, data[2].clone()));
    assert_eq!(rx.ack().i_p, 4);
}

/// Unknown, already seen and acknowledged indexes are not losses.
#[test]
fn bogus_source_loss_signals_are_ignored() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::ADAPTIVE), t);
    let mut rx = NcReceiver::new(16, 100);
    let data = send_sources(&mut tx, 3, t);
    rx.on_source(0, &data[0], t).unwrap();
    tx.on_ack(&rx.ack(), t).unwrap();
    tx.on_source_acked(1, t);
    for idx in [0, 1, 3, 1000, u64::MAX] {
        tx.on_source_lost(idx, t);
    }
    tx.on_repair_lost(0, t); // no repair sent yet
    assert_eq!(tx.loss_estimate(), 0.0);
    assert_eq!(tx.poll_transmit(false, t), None);
}

/// FNC: the transport's loss declaration replaces the fourth uninterrupted
/// DIFF, and the NC_ACKs that then report the same DIFF within an RTT do not
/// trigger more repairs.
#[test]
fn source_loss_triggers_fnc_repair_without_four_acks() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::Fnc), t);
    tx.set_rtt(Duration::from_millis(50), Duration::from_millis(5));
    let mut rx = NcReceiver::new(16, 100);
    let data = send_sources(&mut tx, 4, t);
    rx.on_source(0, &data[0], t).unwrap();
    tx.on_ack(&rx.ack(), t).unwrap();
    tx.on_source_lost(1, t);
    assert_eq!(tx.poll_transmit(false, t), Some(Transmit::Repair));
    tx.write_repair(1200, t).unwrap();
    assert_eq!(tx.poll_transmit(false, t), None);
    rx.on_source(2, &data[2], t).unwrap();
    rx.on_source(3, &data[3], t).unwrap();
    for k in 1..=5 {
        let a = rx.ack();
        assert_eq!(a.diff, 1);
        let tk = t + Duration::from_millis(k);
        tx.on_ack(&a, tk).unwrap();
        assert_eq!(tx.poll_transmit(false, tk), None, "ack {k}");
    }
    // More than an RTT later the DIFF persists: FNC repeats (T_last rule).
    let late = t + Duration::from_millis(200);
    tx.on_ack(&rx.ack(), late).unwrap();
    assert_eq!(tx.poll_transmit(false, late), Some(Transmit::Repair));
}

/// The NC_ACK loss estimate is unbiased from the first samples: 10% loss
/// (every tenth source) reads about 10% after 96 packets in batches of 16
/// (an EWMA of the samples started at zero read 7.4%), and later samples move it by the
/// packets they cover, with a memory of a few hundred packets.
#[test]
fn loss_estimate_counts_packets_from_the_start() {
    let t = Instant::now();
    let cfg = SenderConfig {
        max_window: 4096,
        ..policy_cfg(PolicyKind::FixedR(1.0))
    };
    let mut tx = NcSender::new(cfg, t);
    let mut rx = NcReceiver::new(4096, 100);
    let mut next = 0u64;
    let mut batch = |tx: &mut NcSender, rx: &mut NcReceiver, n: u64, every: u64| {
        for _ in 0..n {
            tx.on_source_sent(b"abc", t).unwrap();
            if next % every != every - 1 {
                rx.on_source(next, b"abc", t).unwrap();
            }
            next += 1;
        }
        tx.on_ack(&rx.ack(), t).unwrap();
        tx.loss_estimate()
    };
    for _ in 0..6 {
        batch(&mut tx, &mut rx, 16, 10);
    }
    let p = tx.loss_estimate();
    assert!((p - 0.1).abs() < 0.012, "{p}");
    // 1000 loss-free packets: the 10% is mostly forgotten.
    for _ in 0..(1000 / 20) {
        batch(&mut tx, &mut rx, 20, u64::MAX);
    }
    let p = tx.loss_estimate();
    assert!(p > 0.0 && p < 0.02, "{p}");
}

/// Fixed R only learns the loss rate; the transport's losses count until an
/// NC_ACK sample covers them and are then not counted a second time.
#[test]
fn source_loss_estimate_is_not_counted_twice() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::FixedR(1.0)), t);
    let mut rx = NcReceiver::new(16, 100);
    let data = send_sources(&mut tx, 16, t);
    for (i, d) in data.iter().enumerate() {
        if i != 5 {
            rx.on_source(i as u64, d, t).unwrap();
        }
    }
    tx.on_source_lost(5, t);
    // Fresh estimate: prior 0 over 64 packets, 1 loss in 16 uncovered.
    let fresh = 1.0 / (64.0 + 16.0);
    assert!((tx.loss_estimate() - fresh).abs() < 1e-12);
    assert_eq!(tx.poll_transmit(false, t), None, "fixed R sends no extra");
    let a = rx.ack();
    assert_eq!((a.max_seq, a.rx_source, a.diff), (16, 15, 1));
    tx.on_ack(&a, t + Duration::from_millis(1)).unwrap();
    // The NC_ACK sample (1 lost of 16 sent) now carries the loss.
    let counted = 1.0 - 15.0 / 16.0;
    assert!(
        (tx.loss_estimate() - counted).abs() < 1e-12,
        "{}",
        tx.loss_estimate()
    );
}

/// The receiver's advertised I_p is its delivery point: recovered symbols
/// the application has not polled hold the sender's window, polling them
/// asks for an NC_ACK, and the session then continues.
#[test]
fn unpolled_recovered_symbols_flow_control_the_sender() {
    let t = Instant::now();
    let c = SenderConfig {
        policy: PolicyKind::FixedR(2.0),
        ..cfg(Mode::Systematic, 4)
    };
    let mut tx = NcSender::new(c, t);
    let mut rx = NcReceiver::new(4, 100);
    // Every source lost, every repair received: all data is recovered.
    let mut sent = 0u64;
    // (Bounded: without flow control the sender would never stop.)
    for _ in 0..100 {
        if !tx.can_send_source() {
            break;
        }
        assert_eq!(tx.poll_transmit(true, t), Some(Transmit::NewData));
        tx.on_source_sent(&[sent as u8; 9], t).unwrap();
        sent += 1;
        assert_eq!(tx.poll_transmit(true, t), Some(Transmit::Repair));
        let (_, b) = tx.write_repair(1200, t).unwrap();
        rx.on_frame(&Frame::parse(&b).unwrap().0, t).unwrap();
        tx.on_ack(&rx.ack(), t).unwrap();
    }
    // Decoded all four, but none polled: the sender is held at 4.
    assert_eq!((sent, rx.decoder().i_p()), (4, 4));
    assert_eq!(rx.ack().i_p, 0);
    assert!(!tx.can_send_source());
    assert!(!rx.wants_ack());
    assert!(rx.memory().recovered == 4 && rx.memory().total_bytes() > 0);
    assert_eq!(rx.poll_recovered().unwrap().index, 0);
    assert!(rx.wants_ack(), "window update due");
    tx.on_ack(&rx.ack(), t).unwrap();
    assert!(tx.can_send_source());
    assert_eq!(tx.on_source_sent(b"next", t).unwrap(), 4);
}

/// NC_ACKs cannot grow the event queue of an application that never polls
/// it: progress events are coalesced.
#[test]
fn progress_events_are_coalesced() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::FixedR(1.0)), t);
    let mut rx = NcReceiver::new(16, 100);
    for i in 0..200u64 {
        while !tx.can_send_source() {
            tx.on_ack(&rx.ack(), t).unwrap();
        }
        tx.on_source_sent(&[i as u8], t).unwrap();
        rx.on_source(i, &[i as u8], t).unwrap();
        tx.on_ack(&rx.ack(), t).unwrap();
    }
    let ev: Vec<_> = std::iter::from_fn(|| tx.poll_event()).collect();
    assert_eq!(ev, vec![SenderEvent::Seen(200), SenderEvent::Decoded(200)]);
}

/// A repair loss counts once in the estimate, however often it is reported,
/// and leaves the fresh part once an NC_ACK sample covers it.
#[test]
fn repair_loss_feeds_the_estimate_once() {
    let t = Instant::now();
    let mut tx = NcSender::new(policy_cfg(PolicyKind::FixedR(2.0)), t);
    let mut rx = NcReceiver::new(16, 100);
    let data = send_sources(&mut tx, 1, t);
    let mut seqs = Vec::new();
    for _ in 0..3 {
        assert_eq!(tx.poll_transmit(false, t), Some(Transmit::Repair));
        let (q, _) = tx.write_repair(1200, t).unwrap();
        seqs.push(q);
        tx.on_source_sent(&data[0], t).unwrap();
    }
    for _ in 0..3 {
        tx.on_repair_lost(seqs[1], t);
    }
    tx.on_repair_lost(99, t); // never sent
                              // 4 sources + 3 repairs uncovered, 1 loss.
    let fresh = 1.0 / (64.0 + 7.0);
    assert!(
        (tx.loss_estimate() - fresh).abs() < 1e-12,
        "{}",
        tx.loss_estimate()
    );
    for i in 0..4u64 {
        rx.on_source(i, &data[0], t).unwrap();
    }
    let mut a = rx.ack();
    a.repair_seq_end = 3;
    a.rx_repair = 2;
    // Below the 16-packet sample size: no sample, the fresh part stays.
    tx.on_ack(&a, t).unwrap();
    assert!((tx.loss_estimate() - fresh).abs() < 1e-12);
    tx.on_repair_lost(seqs[1], t);
    assert!((tx.loss_estimate() - fresh).abs() < 1e-12, "still once");
}

#[test]
fn nc_ack_for_unsent_symbols_is_a_protocol_violation() {
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 4), t);
    tx.on_source_sent(b"a", t).unwrap();
    let mut a = NcReceiver::new(4, 100).ack();
    a.repair_seq_end = 1; // no repair was sent
    let e = tx.on_ack(&a, t).unwrap_err();
    assert_eq!(e, Error::UnsentAcknowledged);
    assert_eq!(e.quic_code(), Some(0x0a), "PROTOCOL_VIOLATION, not 0x07");
}

#[test]
fn repair_written_in_place_is_the_same_frame() {
    let t = Instant::now();
    let mk = || {
        let mut tx = NcSender::new(cfg(Mode::Systematic, 16), t);
        for i in 0..9u8 {
            tx.on_source_sent(&vec![i; 3 + 7 * i as usize], t).unwrap();
        }
        tx
    };
    for budget in [20usize, 40, 70, 200, 1200] {
        let (mut a, mut b) = (mk(), mk());
        let owned = a.write_repair(budget, t);
        let mut buf = vec![0xeeu8; budget];
        let w = b.write_repair_into(&mut buf, t);
        match (owned, w) {
            (None, None) => {}
            (Some((seq, bytes)), Some(w)) => {
                assert_eq!((seq, bytes.len()), (w.seq, w.len), "budget {budget}");
                assert_eq!(&buf[..w.len], &bytes[..], "budget {budget}");
                let (Frame::Repair(f), n) = Frame::parse(&bytes).unwrap() else {
                    panic!()
                };
                assert_eq!((f.first, f.count, n), (w.first, w.count, bytes.len()));
                assert!(w.len <= budget);
            }
            other => panic!("budget {budget}: {other:?}"),
        }
    }
}

#[test]
fn repair_pending_agrees_with_poll_transmit() {
    // Random operation sequences: the read-only query must predict what
    // poll_transmit decides at the same moment.
    let mut seed = 0x1234_5678_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for policy in [
        PolicyKind::ADAPTIVE,
        PolicyKind::FixedR(1.3),
        PolicyKind::Von,
        PolicyKind::Fnc,
        PolicyKind::CtcpBlock { n: 8 },
    ] {
        let t0 = Instant::now();
        let mut t = t0;
        let mut tx = NcSender::new(
            SenderConfig {
                policy,
                max_window: 32,
                max_symbol_size: 100,
                ..SenderConfig::default()
            },
            t,
        );
        let mut rx = NcReceiver::new(32, 100);
        for _ in 0..2000 {
            t += Duration::from_millis(next() % 7);
            let has_data = next() % 4 != 0;
            let pending = tx.repair_pending(has_data, t);
            let got = tx.poll_transmit(has_data, t);
            assert_eq!(pending, got == Some(Transmit::Repair), "{policy:?}");
            match got {
                Some(Transmit::NewData) => {
                    let idx = tx.on_source_sent(&[7; 40], t).unwrap();
                    if next() % 10 < 8 {
                        rx.on_source(idx, &[7; 40], t).unwrap();
                    } else if next() % 2 == 0 {
                        tx.on_source_lost(idx, t);
                    }
                }
                Some(Transmit::Repair) => {
                    if let Some((_, b)) = tx.write_repair(300, t) {
                        if next() % 10 < 8 {
                            let (f, _) = Frame::parse(&b).unwrap();
                            rx.on_frame(&f, t).unwrap();
                        }
                    }
                }
                None => {}
            }
            while rx.poll_recovered().is_some() {}
            if next() % 3 == 0 {
                tx.on_ack(&rx.ack(), t).unwrap();
            }
            if tx.timeout().is_some_and(|d| d <= t) {
                tx.on_timeout(t);
            }
        }
    }
}

#[test]
fn tail_protection_repairs_a_burst_end_at_once() {
    let t = Instant::now();
    let mk = |tail: bool| {
        NcSender::new(
            SenderConfig {
                policy: PolicyKind::ADAPTIVE,
                max_window: 64,
                max_symbol_size: 100,
                tail_protection: tail,
                ..SenderConfig::default()
            },
            t,
        )
    };
    // Without a loss estimate there is nothing to protect against.
    let mut tx = mk(true);
    tx.on_source_sent(b"x", t).unwrap();
    assert_eq!(tx.poll_transmit(false, t), None);
    // With some loss measured, a three-packet burst has credit 3 * 1.25 *
    // p / (1 - p) < 1: no repair is due by the policy, but the tail gets
    // one as soon as the application has nothing more.
    for tail in [true, false] {
        let mut tx = mk(tail);
        let mut rx = NcReceiver::new(64, 100);
        // Teach the loss estimate: 40 sources of which 1 is lost.
        for i in 0..40u64 {
            tx.on_source_sent(b"abc", t).unwrap();
            if i != 3 {
                rx.on_source(i, b"abc", t).unwrap();
            }
        }
        tx.on_ack(&rx.ack(), t).unwrap();
        while tx.poll_transmit(true, t) == Some(Transmit::Repair) {
            let (_, b) = tx.write_repair(1200, t).unwrap();
            let (f, _) = Frame::parse(&b).unwrap();
            rx.on_frame(&f, t).unwrap();
        }
        tx.on_ack(&rx.ack(), t).unwrap();
        assert!(tx.loss_estimate() > 0.0, "{}", tx.loss_estimate());
        for _ in 0..3 {
            assert_eq!(tx.poll_transmit(true, t), Some(Transmit::NewData));
            tx.on_source_sent(b"def", t).unwrap();
        }
        let before = tx.stats().repairs;
        let got = tx.poll_transmit(false, t);
        if tail {
            assert_eq!(got, Some(Transmit::Repair));
            let w = tx.write_repair_into(&mut [0u8; 200], t).unwrap();
            assert!(w.tail);
            assert_eq!(tx.stats().tail_repairs, 1);
            assert_eq!(tx.stats().repairs, before + 1);
            // The advance is paid back: no second tail repair for the same
            // burst, and none for the next source either.
            assert_eq!(tx.poll_transmit(false, t), None);
            tx.on_source_sent(b"ghi", t).unwrap();
            assert_eq!(tx.poll_transmit(false, t), None);
        } else {
            assert_eq!(got, None);
        }
    }
}

#[test]
fn constructors_clamp_what_the_wire_cannot_carry() {
    let t = Instant::now();
    let mut rx = NcReceiver::new(usize::MAX, usize::MAX);
    assert!(rx.on_source(0, b"a", t).is_ok());
    assert!(rx.decoder().limit() <= 4096 + 1);
    let tx = NcSender::new(
        SenderConfig {
            max_window: usize::MAX,
            max_symbol_size: usize::MAX,
            ..SenderConfig::default()
        },
        t,
    );
    assert_eq!(tx.config().max_window, 4096);
    assert_eq!(tx.config().max_symbol_size, 65535);
}

#[test]
fn work_budget_sheds_repairs_beyond_its_rate() {
    use nc_frames::WorkBudget;
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 16), t);
    let mut rx = NcReceiver::new(16, 100);
    rx.set_work_budget(WorkBudget {
        per_second: 100.0,
        burst: 32.0,
    });
    for _ in 0..16 {
        tx.on_source_sent(&[1; 50], t).unwrap();
    }
    // Full-window repairs cost 16 tokens each: two fit the burst.
    let mut shed = 0;
    for _ in 0..4 {
        let (_, b) = tx.write_repair(1200, t).unwrap();
        let (f, _) = Frame::parse(&b).unwrap();
        let a = rx.on_frame(&f, t).unwrap().unwrap();
        shed += a.shed as u64;
    }
    assert_eq!((shed, rx.shed()), (2, 2));
    // Tokens come back with time (100 per second).
    let (_, b) = tx.write_repair(1200, t).unwrap();
    let (f, _) = Frame::parse(&b).unwrap();
    let later = t + Duration::from_millis(200);
    assert!(!rx.on_frame(&f, later).unwrap().unwrap().shed);
    // Shed or not, an out-of-window repair is still a violation.
    let mut bad = f.clone();
    if let Frame::Repair(r) = &mut bad {
        r.first = 100;
    }
    assert!(rx.on_frame(&bad, later).is_err());
}

#[test]
fn a_due_probe_does_not_keep_the_timer_in_the_past() {
    // The stall probe falls due while no packet can be sent (e.g. the
    // congestion window is full): after on_timeout the deadline must not
    // be reported again, or the event loop spins; the probe stays pending
    // for the next send opportunity.
    let t = Instant::now();
    let mut tx = NcSender::new(cfg(Mode::Systematic, 4), t);
    tx.on_source_sent(b"a", t).unwrap();
    let d = tx.timeout().expect("probe deadline");
    tx.on_timeout(d);
    assert!(tx.timeout().is_none_or(|x| x > d), "{:?}", tx.timeout());
    assert!(tx.repair_pending(false, d));
    assert_eq!(tx.poll_transmit(false, d), Some(Transmit::Repair));
    let next = tx.timeout().expect("next probe deadline after a send");
    assert!(next > d);
}

#[test]
fn a_full_window_is_probed_until_progress() {
    // FNC stops at its e*N repair cap; with the window full and the peer
    // still missing symbols, only stall probes make progress. They must
    // keep coming, with a bounded back-off, whatever NC_ACKs arrive.
    let t0 = Instant::now();
    let mut tx = NcSender::new(
        SenderConfig {
            policy: PolicyKind::Fnc,
            max_window: 16,
            max_symbol_size: 100,
            tail_protection: false,
            ..SenderConfig::default()
        },
        t0,
    );
    let mut rx = NcReceiver::new(16, 100);
    for i in 0..16u64 {
        tx.on_source_sent(&[i as u8; 10], t0).unwrap();
        if i % 3 != 0 {
            rx.on_source(i, &[i as u8; 10], t0).unwrap();
        }
    }
    assert!(!tx.can_send_source());
    let mut t = t0;
    let mut probes = 0;
    for step in 0..2000 {
        t += Duration::from_millis(5);
        // An NC_ACK now and then, showing no progress.
        if step % 7 == 0 {
            tx.on_ack(&rx.ack(), t).unwrap();
        }
        if tx.timeout().is_some_and(|d| d <= t) {
            tx.on_timeout(t);
        }
        // A send opportunity every step (ACKs arrive, quiche sends).
        if tx.poll_transmit(true, t) == Some(Transmit::Repair) {
            probes += 1;
            // Every repair is lost.
            let _ = tx.write_repair(1200, t).unwrap();
        }
    }
    // 10 s of no progress: probes back off to at most 2 s apart.
    assert!(probes >= 8, "only {probes} probes in 10 s");
}

#[test]
fn a_symbol_sized_by_source_reserve_always_fits_a_repair() {
    // A packet of `room` bytes carries a symbol of `room - source_reserve`
    // bytes; later, with the repair sequence and the window start grown
    // past varint boundaries, a repair over it must still fit `room`.
    let t = Instant::now();
    let room = 1300;
    let mut tx = NcSender::new(
        SenderConfig {
            max_window: 4096,
            max_symbol_size: 1500,
            ..SenderConfig::default()
        },
        t,
    );
    let mut rx = NcReceiver::new(4096, 1500);
    let len = room - tx.source_reserve();
    tx.on_source_sent(&vec![1u8; len], t).unwrap();
    // Grow the repair sequence past 63 and 16383, with the big symbol
    // still in the window.
    for _ in 0..20_000 {
        assert!(tx.write_repair(room, t).is_some(), "repair does not fit");
    }
    // And the window start past 16383: the peer decodes everything, then
    // a new symbol is sized with the new reserve.
    for i in 1..20_000u64 {
        tx.on_source_sent(b"x", t).unwrap();
        rx.on_source(i, b"x", t).unwrap();
        if i % 1000 == 0 {
            rx.on_source(0, &vec![1u8; len], t).unwrap();
            tx.on_ack(&rx.ack(), t).unwrap();
        }
    }
    let len = room - tx.source_reserve();
    tx.on_source_sent(&vec![2u8; len], t).unwrap();
    for _ in 0..100 {
        assert!(tx.write_repair(room, t).is_some(), "repair does not fit");
    }
}
