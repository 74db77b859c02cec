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
