//! Tests of the quiche hook series (patches/quiche/) on an in-memory pair:
//! the external congestion controller and the transport extension.

use std::collections::HashMap;
use std::collections::HashSet;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use quic_nc_tests::config;
use quic_nc_tests::Pair;
use quic_nc_tests::Side;
use quiche::cc;
use quiche::extension::FrameSpan;
use quiche::extension::FrameType;
use quiche::extension::SendContext;
use quiche::extension::SendStage;
use quiche::extension::StreamAction;
use quiche::extension::TransportExtension;

// ---------------------------------------------------------------------------
// External congestion controller

#[derive(Debug, Default)]
struct CcLog {
    created: usize,
    sent: usize,
    /// Send time the controller was given for each packet.
    sent_times: Vec<Instant>,
    events: usize,
    acked: usize,
    lost: usize,
}

#[derive(Debug)]
struct FixedWindow {
    cwnd: usize,
    rate: u64,
    log: Arc<Mutex<CcLog>>,
}

impl cc::CongestionController for FixedWindow {
    fn on_packet_sent(&mut self, t: Instant, _: usize, _: u64, _: usize, _: bool) {
        let mut l = self.log.lock().unwrap();
        l.sent += 1;
        l.sent_times.push(t);
    }

    fn on_congestion_event(&mut self, ev: &cc::CongestionEvent) {
        let mut l = self.log.lock().unwrap();
        l.events += 1;
        l.acked += ev.acked.len();
        l.lost += ev.lost.len();
    }

    fn congestion_window(&self) -> usize {
        self.cwnd
    }

    fn pacing_rate(&self, _: usize, _: &cc::RttEstimates) -> u64 {
        self.rate
    }
}

#[derive(Debug)]
struct FixedFactory {
    cwnd: usize,
    rate: u64,
    log: Arc<Mutex<CcLog>>,
}

impl cc::CongestionControllerFactory for FixedFactory {
    fn new_controller(&self, _: &cc::ControllerInit) -> Box<dyn cc::CongestionController> {
        self.log.lock().unwrap().created += 1;
        Box::new(FixedWindow {
            cwnd: self.cwnd,
            rate: self.rate,
            log: self.log.clone(),
        })
    }
}

/// One datagram of [`one_flight`]: its size, its release time, and the
/// instants just before and after `send()` returned it.
struct Datagram {
    len: usize,
    at: Instant,
    before: Instant,
    after: Instant,
}

/// Sends as much as the client may without any ack.
fn one_flight(pair: &mut Pair) -> Vec<Datagram> {
    let mut buf = [0u8; 65535];
    let mut out = Vec::new();
    loop {
        let before = Instant::now();
        match pair.client.send(&mut buf) {
            Ok((len, info)) => out.push(Datagram {
                len,
                at: info.at,
                before,
                after: Instant::now(),
            }),
            Err(quiche::Error::Done) => return out,
            Err(e) => panic!("{e:?}"),
        }
    }
}

/// Window and pacing rate of [`paced_pair`]'s client: 1.2 ms per
/// 1200-byte datagram.
const PACED_CWND: usize = 40 * 1200;
const PACED_RATE: u64 = 1_000_000;

/// A pair after its handshake whose client has a fixed window and pacing
/// rate ([`FixedFactory`]), quiche's pacing on with `slack`
/// (`Config::set_pacing_slack`), and 1 MB queued on stream 4.
fn paced_pair(slack: Duration) -> (Pair, Arc<Mutex<CcLog>>) {
    let log = Arc::new(Mutex::new(CcLog::default()));
    let mut ccfg = config(false);
    ccfg.set_external_congestion_control(Arc::new(FixedFactory {
        cwnd: PACED_CWND,
        rate: PACED_RATE,
        log: log.clone(),
    }));
    ccfg.enable_pacing(true);
    ccfg.set_pacing_slack(slack);
    let mut scfg = config(true);
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |_, _| {});
    pair.handshake();
    pair.client
        .stream_send(4, &vec![7u8; 1_000_000], true)
        .unwrap();
    (pair, log)
}

#[test]
fn external_controller_window_and_pacing_govern_sending() {
    const CWND: usize = PACED_CWND;
    const RATE: u64 = PACED_RATE;
    let (mut pair, log) = paced_pair(Duration::ZERO);
    assert!(log.lock().unwrap().created >= 1);
    assert!(log.lock().unwrap().events >= 1, "acks reach the controller");

    let flight = one_flight(&mut pair);
    let bytes: usize = flight.iter().map(|f| f.len).sum();
    // quiche's own CUBIC would stop at its 10-packet initial window.
    assert!(bytes <= CWND, "flight {bytes} exceeds the window {CWND}");
    assert!(
        bytes + 1500 > CWND,
        "flight {bytes} does not fill the window {CWND}"
    );

    // Past the initial burst, release times are spaced at the pacing rate.
    let burst = 10;
    let paced = &flight[burst..];
    let span = paced.last().unwrap().at - paced[0].at;
    let paced_bytes: usize = paced[..paced.len() - 1].iter().map(|f| f.len).sum();
    let expect = Duration::from_secs_f64(paced_bytes as f64 / RATE as f64);
    assert!(
        span >= expect.mul_f64(0.9) && span <= expect.mul_f64(1.1),
        "paced span {span:?}, expected about {expect:?}"
    );
    assert!(log.lock().unwrap().sent >= flight.len());
    // A datagram is released at the time the controller was told it was
    // sent (the time its RTT samples start from), not a pacing interval
    // later.
    let l = log.lock().unwrap();
    let times = &l.sent_times[l.sent_times.len() - flight.len()..];
    for (i, (d, sent)) in flight.iter().zip(times).enumerate() {
        let gap = if d.at > *sent {
            d.at - *sent
        } else {
            *sent - d.at
        };
        assert!(
            gap < Duration::from_micros(100),
            "datagram {i}: released {gap:?} from its send time"
        );
    }
}

/// `Config::set_pacing_slack` (patch 0014): an application that may send a
/// paced datagram up to the slack before its `SendInfo::at` gets each packet
/// recorded as sent at `max(now, at - slack)`, the earliest time it can
/// leave, while `at` keeps the pacer's spacing. Without it a datagram sent
/// early reads a shorter RTT (up to the slack: about 1 ms below the path's
/// floor with the tools' 1 ms release quantum on the emulated link).
#[test]
fn pacing_slack_records_the_earliest_release() {
    const SLACK: Duration = Duration::from_millis(5);
    let (mut pair, log) = paced_pair(SLACK);
    let flight = one_flight(&mut pair);
    assert!(flight.len() >= 30, "{} datagrams", flight.len());
    let l = log.lock().unwrap();
    let times = &l.sent_times[l.sent_times.len() - flight.len()..];
    let mut early = 0;
    for (i, (d, sent)) in flight.iter().zip(times).enumerate() {
        let earliest = d.at.checked_sub(SLACK).unwrap_or(d.before);
        let lo = earliest.max(d.before);
        let hi = earliest.max(d.after);
        assert!(
            *sent >= lo && *sent <= hi,
            "datagram {i}: recorded {:?} after the earliest release, {:?} before at",
            sent.saturating_duration_since(lo),
            d.at.saturating_duration_since(*sent)
        );
        if d.at > d.after + SLACK {
            early += 1;
            // Paced beyond the slack: recorded exactly `SLACK` before `at`.
            assert_eq!(d.at - *sent, SLACK, "datagram {i}");
        }
    }
    // 40 datagrams 1.2 ms apart: most are paced more than 5 ms ahead.
    assert!(early >= 20, "{early} datagrams paced beyond the slack");
    // The pacer's spacing is unchanged: release times 1.2 ms apart.
    let (first, last) = (&flight[10], &flight[flight.len() - 1]);
    let bytes: usize = flight[10..flight.len() - 1].iter().map(|f| f.len).sum();
    let expect = Duration::from_secs_f64(bytes as f64 / PACED_RATE as f64);
    let span = last.at - first.at;
    assert!(
        span >= expect.mul_f64(0.9) && span <= expect.mul_f64(1.1),
        "paced span {span:?}, expected about {expect:?}"
    );
}

/// Window of [`fixed_window_pair`]'s client.
const FIXED_CWND: usize = 20 * 1200;

/// A pair after its handshake, the client's controller a fixed window of
/// [`FIXED_CWND`] bytes (pacing far above what the tests send).
fn fixed_window_pair() -> Pair {
    let log = Arc::new(Mutex::new(CcLog::default()));
    let mut ccfg = config(false);
    ccfg.set_external_congestion_control(Arc::new(FixedFactory {
        cwnd: FIXED_CWND,
        rate: 100_000_000,
        log,
    }));
    let mut scfg = config(true);
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |_, _| {});
    pair.handshake();
    pair
}

#[test]
fn send_capacity_is_what_stream_send_accepts() {
    let mut pair = fixed_window_pair();
    let cap = pair.client.send_capacity();
    assert!(
        cap > 0 && cap <= FIXED_CWND,
        "capacity {cap} after the handshake"
    );
    // No stream exists yet, and the capacity is exactly what one accepts.
    let written = pair
        .client
        .stream_send(4, &vec![7u8; 10 * FIXED_CWND], false)
        .unwrap();
    assert_eq!(written, cap);
    assert_eq!(pair.client.send_capacity(), 0);
    assert_eq!(
        pair.client.stream_send(8, b"x", false),
        Err(quiche::Error::Done)
    );
    // Once the data is sent and acknowledged, the window has room again.
    pair.advance();
    assert!(pair.client.send_capacity() > 0, "acks reopen the capacity");
}

#[test]
fn send_buffered_is_the_stream_data_waiting_to_be_sent() {
    // Patch 0013.
    let mut pair = fixed_window_pair();
    assert_eq!(pair.client.send_buffered(), 0);
    let data = vec![7u8; 10 * FIXED_CWND];
    let w1 = pair.client.stream_send(4, &data, false).unwrap();
    assert!(w1 > 0);
    assert_eq!(pair.client.send_buffered(), w1);
    // A packet from the server makes the client recompute its capacity.
    // Nothing was sent, so the window's free space is what it was, and
    // send_capacity() offers it again although w1 bytes still wait:
    // only send_buffered() shows the backlog.
    pair.server.send_ack_eliciting().unwrap();
    let mut buf = vec![0u8; 65535];
    let (n, _) = pair.server.send(&mut buf).unwrap();
    let info = quiche::RecvInfo {
        from: "127.0.0.1:4321".parse().unwrap(),
        to: "127.0.0.1:1234".parse().unwrap(),
    };
    pair.client.recv(&mut buf[..n], info).unwrap();
    let w2 = pair.client.stream_send(4, &data, false).unwrap();
    assert_eq!(w2, w1, "the same free space is offered again");
    assert_eq!(pair.client.send_buffered(), w1 + w2);
    // Packets carry the backlog away as the window lets them.
    let mut sent = 0;
    let to_server = quiche::RecvInfo {
        from: info.to,
        to: info.from,
    };
    while let Ok((n, _)) = pair.client.send(&mut buf) {
        sent += n;
        pair.server.recv(&mut buf[..n], to_server).unwrap();
    }
    let left = pair.client.send_buffered();
    assert!(sent > 0 && left < w1 + w2, "{left} of {} left", w1 + w2);
    // Once the server reads (flow control), all of it leaves.
    for _ in 0..20 {
        pair.advance();
        while pair.server.stream_recv(4, &mut buf).is_ok() {}
    }
    assert_eq!(pair.client.send_buffered(), 0, "all of it sent");
}

#[test]
fn the_stamped_budget_leaves_out_the_backlog() {
    // What qnc-server builds on patch 0013: a stamped bulk body may write
    // the window's free space less the stream data still waiting, where
    // send_capacity() alone would offer the free space again.
    use quic_nc_examples::server::bulk_budget;
    let mut pair = fixed_window_pair();
    let budget = bulk_budget(&pair.client);
    assert!(budget > 0 && budget == pair.client.send_capacity().min(FIXED_CWND));
    let w1 = pair
        .client
        .stream_send(4, &vec![7u8; budget], false)
        .unwrap();
    assert_eq!(w1, budget);
    assert_eq!(bulk_budget(&pair.client), 0);
    // A packet from the server: quiche offers the same free space again,
    // the budget still nothing.
    pair.server.send_ack_eliciting().unwrap();
    let mut buf = vec![0u8; 65535];
    let (n, info) = pair.server.send(&mut buf).unwrap();
    let to_client = quiche::RecvInfo {
        from: info.from,
        to: info.to,
    };
    pair.client.recv(&mut buf[..n], to_client).unwrap();
    assert_eq!(pair.client.send_capacity(), w1);
    assert_eq!(bulk_budget(&pair.client), 0);
    // Once the backlog has left and been acknowledged, the window is free.
    for _ in 0..20 {
        pair.advance();
        while pair.server.stream_recv(4, &mut buf).is_ok() {}
    }
    assert_eq!(pair.client.send_buffered(), 0);
    assert!(bulk_budget(&pair.client) > 0);
}

#[test]
fn a_repeated_retire_connection_id_is_not_an_error() {
    // Patch 0006. The server retires the client's first connection ID; the
    // client's acknowledgements are lost, so the server's probes carry the
    // frame again. The client, left with one ID, must ignore the repeats.
    let mut ccfg = config(false);
    let mut scfg = config(true);
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |_, _| {});
    pair.handshake();
    let spare = quiche::ConnectionId::from_ref(&[0xc2; 16]);
    assert_eq!(pair.client.new_scid(&spare, 0x1234, false), Ok(1));
    pair.advance();
    assert_eq!(pair.server.retire_dcid(0), Ok(()));
    // Stream data in the same packet makes the probes repeat its frames.
    assert_eq!(pair.server.stream_send(1, b"data", false), Ok(4));
    // The client gets the RETIRE_CONNECTION_ID; its acknowledgements are lost.
    pair.advance_with(&mut |side, _, _| side == Side::Client);
    assert_eq!(pair.client.source_ids().count(), 1);
    // The server's probe timeout fires and its probe repeats the frame.
    let sent_before = pair.sent.1;
    for _ in 0..3 {
        pair.fire_timers(true);
        pair.advance_with(&mut |side, _, _| side == Side::Client);
    }
    assert!(pair.sent.1 > sent_before);
    assert!(
        pair.client.local_error().is_none(),
        "{:?}",
        pair.client.local_error()
    );
    assert!(!pair.client.is_closed());
}

#[test]
fn external_algorithm_without_factory_falls_back_to_cubic() {
    let mut ccfg = config(false);
    ccfg.set_cc_algorithm_name("external").unwrap();
    let mut scfg = config(true);
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |_, _| {});
    pair.handshake();
    pair.client
        .stream_send(4, &vec![7u8; 100_000], true)
        .unwrap();
    let bytes: usize = one_flight(&mut pair).iter().map(|f| f.len).sum();
    assert!(
        bytes > 0 && bytes <= 20_000,
        "CUBIC initial window, got {bytes}"
    );
}

#[test]
fn per_connection_controller_only_before_data_is_in_flight() {
    let log = Arc::new(Mutex::new(CcLog::default()));
    let factory = Arc::new(FixedFactory {
        cwnd: 20_000,
        rate: 10_000_000,
        log: log.clone(),
    });
    let mut ccfg = config(false);
    let mut scfg = config(true);
    let f2 = factory.clone();
    let mut pair = Pair::new(&mut ccfg, &mut scfg, move |side, c| {
        if side == Side::Client {
            c.set_external_congestion_control(f2.clone()).unwrap();
        }
    });
    assert_eq!(log.lock().unwrap().created, 1);
    pair.handshake();
    pair.client
        .stream_send(4, &vec![1u8; 100_000], true)
        .unwrap();
    let _ = one_flight(&mut pair);
    assert_eq!(
        pair.client.set_external_congestion_control(factory),
        Err(quiche::Error::InvalidState)
    );
}

// ---------------------------------------------------------------------------
// A toy transport extension: a repetition code. Every packet carrying STREAM
// data gets a SRC frame with an id; the next packet repeats those STREAM
// frames in a REPAIR frame. A receiver missing a source but holding its
// repair hands the copy back to quiche as a recovered packet.

const SRC: u64 = 0x3f00_0001;
const REPAIR: u64 = 0x3f00_0002;
const BAD: u64 = 0x3f00_0003;
const TP: u64 = 0x3f00_00aa;

#[derive(Debug, Default)]
struct ToyLog {
    negotiated: Option<bool>,
    peer_tp: Option<Vec<u8>>,
    frames_sent: usize,
    frames_received: usize,
    acked: Vec<(u64, u64)>,
    lost: Vec<(u64, u64)>,
    recovered: usize,
    deferred: usize,
    actions: Vec<StreamAction>,
    /// (SRC id, REPAIR id) written in the packet built last.
    last_built: (Option<u64>, Option<u64>),
}

/// A STREAM range: (stream id, offset, length, fin).
type Range = (u64, u64, usize, bool);

#[derive(Default)]
struct Toy {
    advertise: bool,
    /// Send frames even if the peer did not negotiate (for error tests).
    force: bool,
    send_bad: bool,
    /// Sources that must follow a source before its repair is sent.
    lag: usize,
    /// Send pending repairs regardless of `lag` (stream data ran out).
    flush: bool,
    negotiated: bool,
    next_id: u64,
    pending_repairs: VecDeque<u64>,
    /// id -> (stream frames, ranges in them)
    sources: HashMap<u64, (Vec<u8>, Vec<Range>)>,
    repair_state: HashMap<u64, bool>, // true = acked, false = lost
    deferred: HashMap<u64, Vec<Range>>,
    actions: VecDeque<StreamAction>,
    // receiver
    seen: HashSet<u64>,
    recovered: VecDeque<Vec<u8>>,
    log: Arc<Mutex<ToyLog>>,
}

fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 8];
    let n = octets_len(v);
    let mut o = octets::OctetsMut::with_slice(&mut b);
    o.put_varint_with_len(v, n).unwrap();
    out.extend_from_slice(&b[..n]);
}

fn octets_len(v: u64) -> usize {
    octets::varint_len(v)
}

fn get_varint(b: &[u8], off: &mut usize) -> Option<u64> {
    let mut o = octets::Octets::with_slice(b.get(*off..)?);
    let v = o.get_varint().ok()?;
    *off += o.off();
    Some(v)
}

/// Parses quiche's STREAM frames (type 0x08..0x0f, offset and length
/// always present) into (stream_id, offset, len, fin).
fn stream_ranges(frames: &[u8]) -> Vec<Range> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < frames.len() {
        let ty = get_varint(frames, &mut off).unwrap();
        assert!((0x08..=0x0f).contains(&ty), "unexpected frame {ty:#x}");
        let id = get_varint(frames, &mut off).unwrap();
        let so = if ty & 0x04 != 0 {
            get_varint(frames, &mut off).unwrap()
        } else {
            0
        };
        let len = get_varint(frames, &mut off).unwrap() as usize;
        off += len;
        out.push((id, so, len, ty & 0x01 != 0));
    }
    out
}

impl Toy {
    fn new(advertise: bool, log: Arc<Mutex<ToyLog>>) -> Toy {
        Toy {
            advertise,
            log,
            ..Default::default()
        }
    }

    fn active(&self) -> bool {
        self.negotiated || self.force
    }

    fn resolve(&mut self, id: u64, acked: bool) {
        for (stream_id, offset, len, fin) in self.deferred.remove(&id).unwrap_or_default() {
            let a = if acked {
                StreamAction::Acked {
                    stream_id,
                    offset,
                    len,
                }
            } else {
                StreamAction::Retransmit {
                    stream_id,
                    offset,
                    len,
                    fin,
                }
            };
            self.log.lock().unwrap().actions.push(a);
            self.actions.push_back(a);
        }
    }
}

impl TransportExtension for Toy {
    fn frame_types(&self) -> Vec<FrameType> {
        vec![
            FrameType {
                frame_type: SRC,
                ack_eliciting: true,
            },
            FrameType {
                frame_type: REPAIR,
                ack_eliciting: true,
            },
            FrameType {
                frame_type: BAD,
                ack_eliciting: true,
            },
        ]
    }

    fn frame_body_len(&self, frame_type: u64, body: &[u8]) -> Option<usize> {
        let mut off = 0;
        match frame_type {
            SRC => {
                get_varint(body, &mut off)?;
                Some(off)
            }
            REPAIR => {
                get_varint(body, &mut off)?;
                let len = get_varint(body, &mut off)? as usize;
                Some(off + len)
            }
            _ => None,
        }
    }

    fn local_transport_params(&self) -> Vec<(u64, Vec<u8>)> {
        if self.advertise {
            vec![(TP, vec![1])]
        } else {
            vec![]
        }
    }

    fn on_peer_transport_params(&mut self, params: &quiche::TransportParams) -> quiche::Result<()> {
        let tp = params
            .unknown_params
            .as_ref()
            .and_then(|u| u.into_iter().find(|p| p.id == TP).map(|p| p.value.clone()));
        self.negotiated = self.advertise && tp.is_some();
        let mut l = self.log.lock().unwrap();
        l.negotiated = Some(self.negotiated);
        l.peer_tp = tp;
        Ok(())
    }

    fn on_packet_received(
        &mut self,
        _pn: u64,
        _now: Instant,
        payload: &[u8],
        frames: &[FrameSpan],
    ) -> quiche::Result<()> {
        for f in frames {
            self.log.lock().unwrap().frames_received += 1;
            let body = &payload[f.range.clone()];
            let mut off = octets_len(f.frame_type);
            let id = get_varint(body, &mut off).ok_or(quiche::Error::InvalidFrame)?;
            match f.frame_type {
                SRC => {
                    self.seen.insert(id);
                }
                REPAIR => {
                    let len = get_varint(body, &mut off).unwrap() as usize;
                    if self.seen.insert(id) {
                        self.recovered.push_back(body[off..off + len].to_vec());
                        self.log.lock().unwrap().recovered += 1;
                    }
                }
                _ => return Err(quiche::Error::InvalidPacket),
            }
        }
        Ok(())
    }

    fn next_recovered(&mut self) -> Option<Vec<u8>> {
        self.recovered.pop_front()
    }

    fn wants_to_send(&self, _now: Instant, _data_pending: bool) -> bool {
        !self.pending_repairs.is_empty() || self.send_bad
    }

    fn on_send(&mut self, ctx: &mut SendContext) {
        if !self.active() {
            return;
        }
        match ctx.stage() {
            SendStage::AfterAck => self.log.lock().unwrap().last_built = (None, None),
            SendStage::BeforeStream => {
                if self.send_bad {
                    let mut f = Vec::new();
                    put_varint(&mut f, BAD);
                    f.push(0);
                    if ctx.push_frame(&f, BAD, 0, true, false) {
                        self.send_bad = false;
                    }
                }
                let due = self.pending_repairs.len() > self.lag || self.flush;
                if let Some(&id) = self.pending_repairs.front().filter(|_| due) {
                    let data = &self.sources[&id].0;
                    let mut f = Vec::new();
                    put_varint(&mut f, REPAIR);
                    put_varint(&mut f, id);
                    put_varint(&mut f, data.len() as u64);
                    f.extend_from_slice(data);
                    if ctx.push_frame(&f, REPAIR, id, true, true) {
                        self.pending_repairs.pop_front();
                        let mut l = self.log.lock().unwrap();
                        l.frames_sent += 1;
                        l.last_built.1 = Some(id);
                    }
                }
                ctx.reserve_after_stream(16);
            }
            SendStage::AfterStream => {
                self.flush = ctx.stream_frames().is_empty();
                if self.flush {
                    return;
                }
                let id = self.next_id;
                let mut f = Vec::new();
                put_varint(&mut f, SRC);
                put_varint(&mut f, id);
                let frames = ctx.stream_frames().to_vec();
                if ctx.push_frame(&f, SRC, id, true, false) {
                    self.next_id += 1;
                    let ranges = stream_ranges(&frames);
                    self.sources.insert(id, (frames, ranges));
                    self.pending_repairs.push_back(id);
                    let mut l = self.log.lock().unwrap();
                    l.frames_sent += 1;
                    l.last_built.0 = Some(id);
                }
            }
        }
    }

    fn on_frame_acked(&mut self, frame_type: u64, token: u64, _now: Instant) {
        self.log.lock().unwrap().acked.push((frame_type, token));
        if frame_type == REPAIR {
            self.repair_state.insert(token, true);
            self.resolve(token, true);
        }
    }

    fn on_frame_lost(&mut self, frame_type: u64, token: u64, _now: Instant) {
        self.log.lock().unwrap().lost.push((frame_type, token));
        if frame_type == REPAIR {
            self.repair_state.insert(token, false);
            self.resolve(token, false);
        }
    }

    fn on_stream_data_lost(
        &mut self,
        stream_id: u64,
        offset: u64,
        len: usize,
        fin: bool,
        _now: Instant,
    ) -> bool {
        let range = (stream_id, offset, len, fin);
        let id = match self.sources.iter().find(|(_, s)| s.1.contains(&range)) {
            Some((id, _)) => *id,
            None => return false,
        };
        match self.repair_state.get(&id) {
            Some(false) => false,
            state => {
                self.log.lock().unwrap().deferred += 1;
                self.deferred.entry(id).or_default().push(range);
                if state == Some(&true) {
                    self.resolve(id, true);
                }
                true
            }
        }
    }

    fn next_stream_action(&mut self) -> Option<StreamAction> {
        self.actions.pop_front()
    }
}

fn toy_pair(
    client_ext: Option<(bool, bool, bool)>,
    server_ext: Option<bool>,
) -> (Pair, Arc<Mutex<ToyLog>>, Arc<Mutex<ToyLog>>) {
    toy_pair_lag(client_ext, server_ext, 0)
}

fn toy_pair_lag(
    client_ext: Option<(bool, bool, bool)>,
    server_ext: Option<bool>,
    lag: usize,
) -> (Pair, Arc<Mutex<ToyLog>>, Arc<Mutex<ToyLog>>) {
    let clog = Arc::new(Mutex::new(ToyLog::default()));
    let slog = Arc::new(Mutex::new(ToyLog::default()));
    let (c2, s2) = (clog.clone(), slog.clone());
    let mut ccfg = config(false);
    let mut scfg = config(true);
    let pair = Pair::new(&mut ccfg, &mut scfg, move |side, conn| match side {
        Side::Client => {
            if let Some((adv, force, bad)) = client_ext {
                let mut t = Toy::new(adv, c2.clone());
                t.force = force;
                t.send_bad = bad;
                t.lag = lag;
                conn.set_extension(Box::new(t)).unwrap();
            }
        }
        Side::Server => {
            if let Some(adv) = server_ext {
                conn.set_extension(Box::new(Toy::new(adv, s2.clone())))
                    .unwrap();
            }
        }
    });
    (pair, clog, slog)
}

/// Sends `len` bytes client -> server on stream 4, dropping the client's
/// datagrams for which `drop` is true, firing timers until the server has
/// them all. Returns the bytes read.
fn transfer(pair: &mut Pair, len: usize, drop: &mut dyn FnMut(u64, &[u8]) -> bool) -> Vec<u8> {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let mut written = 0;
    let mut got = Vec::new();
    for _ in 0..400 {
        // quiche buffers at most about a window of stream data at a time.
        if written < len {
            written += pair
                .client
                .stream_send(4, &data[written..], true)
                .unwrap_or(0);
        }
        pair.advance_with(&mut |side, idx, d| side == Side::Client && drop(idx, d));
        if pair.server_read(4, &mut got) {
            assert_eq!(got, data, "data corrupted");
            return got;
        }
        assert!(
            pair.server.local_error().is_none(),
            "{:?}",
            pair.server.local_error()
        );
        if written == len {
            pair.fire_timers(true);
        }
    }
    panic!("transfer did not complete: {} of {len} bytes", got.len());
}

#[test]
fn extension_negotiates_and_sees_peer_parameter() {
    let (mut pair, clog, slog) = toy_pair(Some((true, false, false)), Some(true));
    pair.handshake();
    assert_eq!(clog.lock().unwrap().negotiated, Some(true));
    assert_eq!(slog.lock().unwrap().negotiated, Some(true));
    assert_eq!(slog.lock().unwrap().peer_tp.as_deref(), Some(&[1u8][..]));
}

#[test]
fn extension_frames_round_trip_and_are_acked() {
    let (mut pair, clog, slog) = toy_pair(Some((true, false, false)), Some(true));
    pair.handshake();
    transfer(&mut pair, 50_000, &mut |_, _| false);
    pair.advance();
    let c = clog.lock().unwrap();
    let s = slog.lock().unwrap();
    assert!(c.frames_sent > 40);
    assert_eq!(s.frames_received, c.frames_sent);
    assert_eq!(
        c.acked.len(),
        c.frames_sent,
        "every extension frame acked once"
    );
    assert!(c.lost.is_empty());
    assert_eq!(s.recovered, 0);
}

#[test]
fn lost_source_is_recovered_without_retransmission() {
    let (mut pair, clog, slog) = toy_pair(Some((true, false, false)), Some(true));
    pair.handshake();
    // Drop the datagram that carries SRC 3.
    let log = clog.clone();
    transfer(&mut pair, 30_000, &mut |_, _| {
        log.lock().unwrap().last_built.0 == Some(3)
    });
    pair.advance();
    let c = clog.lock().unwrap();
    assert_eq!(
        slog.lock().unwrap().recovered,
        1,
        "the receiver recovered the packet"
    );
    assert!(c.deferred >= 1, "the loss was deferred");
    assert!(c
        .actions
        .iter()
        .all(|a| matches!(a, StreamAction::Acked { .. })));
    assert!(!c.actions.is_empty());
    assert!(
        c.lost.iter().any(|l| l.0 == SRC),
        "the SRC frame was reported lost"
    );
    let stats = pair.client.stats();
    assert_eq!(stats.stream_retrans_bytes, 0, "nothing was retransmitted");
}

#[test]
fn lost_source_and_repair_are_retransmitted() {
    // Repairs trail their sources by 4 packets, so the source's loss is
    // declared (and deferred) before its repair's.
    let (mut pair, clog, _slog) = toy_pair_lag(Some((true, false, false)), Some(true), 4);
    pair.handshake();
    let log = clog.clone();
    transfer(&mut pair, 30_000, &mut |_, _| {
        let l = log.lock().unwrap().last_built;
        l.0 == Some(3) || l.1 == Some(3)
    });
    let c = clog.lock().unwrap();
    assert!(c.deferred >= 1, "the source's loss was deferred");
    assert!(
        c.actions
            .iter()
            .any(|a| matches!(a, StreamAction::Retransmit { .. })),
        "a Retransmit action resolved the deferral: {:?}",
        *c
    );
    assert!(pair.client.stats().stream_retrans_bytes > 0);
}

#[test]
fn extension_is_inert_without_peer_parameter() {
    // Client has no extension: the server's must stay silent.
    let (mut pair, _clog, slog) = toy_pair(None, Some(true));
    pair.handshake();
    assert_eq!(slog.lock().unwrap().negotiated, Some(false));
    transfer(&mut pair, 20_000, &mut |_, _| false);
    // Server sends data back too.
    pair.server.stream_send(1, b"", false).ok();
    pair.advance();
    assert_eq!(slog.lock().unwrap().frames_sent, 0);
    assert!(pair.client.local_error().is_none());
}

#[test]
fn unregistered_extension_frame_is_frame_encoding_error() {
    // The client forces SRC frames on a server without the extension.
    let (mut pair, _clog, _slog) = toy_pair(Some((false, true, false)), None);
    pair.handshake();
    pair.client.stream_send(4, &[1u8; 5000], true).unwrap();
    pair.advance();
    let err = pair
        .server
        .local_error()
        .expect("server closed the connection");
    assert!(!err.is_app);
    assert_eq!(err.error_code, 0x7, "FRAME_ENCODING_ERROR");
}

#[test]
fn malformed_extension_frame_is_frame_encoding_error() {
    let (mut pair, _clog, _slog) = toy_pair(Some((true, false, true)), Some(true));
    pair.handshake();
    pair.client.stream_send(4, &[1u8; 100], true).unwrap();
    pair.advance();
    let err = pair
        .server
        .local_error()
        .expect("server closed the connection");
    assert!(!err.is_app);
    assert_eq!(err.error_code, 0x7, "FRAME_ENCODING_ERROR");
}

// ---------------------------------------------------------------------------
// A second toy: it holds data back for the first packets and then replaces
// every packet's data frames by one SCRAMBLED frame (the same bytes XORed
// with a constant), written in place. The peer unscrambles them into
// recovered packets. quiche keeps tracking the replaced STREAM frames, so
// their losses are retransmitted as usual.

const SCR: u64 = 0x3f00_0010;
const SCR_TP: u64 = 0x3f00_00ab;

#[derive(Debug, Default)]
struct ScrLog {
    /// Per built 1-RTT packet (AfterStream): data bytes before replacing.
    data_per_packet: Vec<usize>,
    /// data_pending as seen in BeforeStream while data was held.
    pending_while_held: Vec<bool>,
    replaced: usize,
    lost_ranges: usize,
    recovered: usize,
}

struct Scrambler {
    hold_first: usize,
    built: usize,
    negotiated: bool,
    recovered: VecDeque<Vec<u8>>,
    log: Arc<Mutex<ScrLog>>,
}

impl TransportExtension for Scrambler {
    fn frame_types(&self) -> Vec<FrameType> {
        vec![FrameType {
            frame_type: SCR,
            ack_eliciting: true,
        }]
    }

    fn frame_body_len(&self, _: u64, body: &[u8]) -> Option<usize> {
        let mut off = 0;
        let len = get_varint(body, &mut off)? as usize;
        Some(off + len)
    }

    fn local_transport_params(&self) -> Vec<(u64, Vec<u8>)> {
        vec![(SCR_TP, vec![])]
    }

    fn on_peer_transport_params(&mut self, p: &quiche::TransportParams) -> quiche::Result<()> {
        self.negotiated = p
            .unknown_params
            .as_ref()
            .is_some_and(|u| u.into_iter().any(|x| x.id == SCR_TP));
        Ok(())
    }

    fn on_packet_received(
        &mut self,
        _: u64,
        _: Instant,
        payload: &[u8],
        frames: &[FrameSpan],
    ) -> quiche::Result<()> {
        for f in frames {
            let body = &payload[f.range.clone()];
            let mut off = octets_len(SCR);
            let len = get_varint(body, &mut off).ok_or(quiche::Error::InvalidFrame)? as usize;
            let data: Vec<u8> = body[off..off + len].iter().map(|b| b ^ 0x5a).collect();
            self.recovered.push_back(data);
            self.log.lock().unwrap().recovered += 1;
        }
        Ok(())
    }

    fn next_recovered(&mut self) -> Option<Vec<u8>> {
        self.recovered.pop_front()
    }

    fn on_send(&mut self, ctx: &mut SendContext) {
        if !self.negotiated {
            return;
        }
        match ctx.stage() {
            SendStage::BeforeStream => {
                if self.built < self.hold_first {
                    self.log
                        .lock()
                        .unwrap()
                        .pending_while_held
                        .push(ctx.data_pending());
                    ctx.hold_data();
                }
                // Frame type (4 bytes) and a 2-byte length.
                ctx.reserve_after_stream(6);
            }
            SendStage::AfterStream => {
                self.built += 1;
                let n = ctx.stream_frames().len();
                self.log.lock().unwrap().data_per_packet.push(n);
                if n == 0 {
                    return;
                }
                let data: Vec<u8> = ctx.stream_frames().iter().map(|b| b ^ 0x5a).collect();
                assert!(ctx.replace_data_frames());
                assert!(ctx.stream_frames().is_empty());
                assert!(!ctx.replace_data_frames(), "only once");
                let ok = ctx.write_frame(SCR, 0, true, true, |buf| {
                    let mut f = Vec::new();
                    put_varint(&mut f, SCR);
                    put_varint(&mut f, data.len() as u64);
                    f.extend_from_slice(&data);
                    if f.len() > buf.len() {
                        return 0;
                    }
                    buf[..f.len()].copy_from_slice(&f);
                    f.len()
                });
                assert!(ok, "the reserved room fits the frame header");
                self.log.lock().unwrap().replaced += 1;
            }
            SendStage::AfterAck => {}
        }
    }

    fn on_stream_data_lost(&mut self, _: u64, _: u64, _: usize, _: bool, _: Instant) -> bool {
        self.log.lock().unwrap().lost_ranges += 1;
        false
    }
}

fn scrambler_pair(hold_first: usize) -> (Pair, Arc<Mutex<ScrLog>>, Arc<Mutex<ScrLog>>) {
    let clog = Arc::new(Mutex::new(ScrLog::default()));
    let slog = Arc::new(Mutex::new(ScrLog::default()));
    let (c2, s2) = (clog.clone(), slog.clone());
    let mut ccfg = config(false);
    let mut scfg = config(true);
    let pair = Pair::new(&mut ccfg, &mut scfg, move |side, conn| {
        let (log, hold) = match side {
            Side::Client => (c2.clone(), hold_first),
            Side::Server => (s2.clone(), 0),
        };
        conn.set_extension(Box::new(Scrambler {
            hold_first: hold,
            built: 0,
            negotiated: false,
            recovered: VecDeque::new(),
            log,
        }))
        .unwrap();
    });
    (pair, clog, slog)
}

#[test]
fn replaced_data_frames_travel_only_in_the_extension_frame() {
    let (mut pair, clog, slog) = scrambler_pair(0);
    pair.handshake();
    let before = pair.client.stats().sent_bytes;
    transfer(&mut pair, 60_000, &mut |_, _| false);
    let sent = pair.client.stats().sent_bytes - before;
    let c = clog.lock().unwrap();
    assert!(c.replaced > 40, "{}", c.replaced);
    assert_eq!(slog.lock().unwrap().recovered, c.replaced);
    // Had the STREAM frames stayed on the wire, the client would have sent
    // the data twice.
    assert!(sent < 70_000, "client sent {sent} bytes for 60000");
}

#[test]
fn replaced_data_frames_are_still_tracked_for_loss() {
    let (mut pair, clog, _slog) = scrambler_pair(0);
    pair.handshake();
    transfer(&mut pair, 60_000, &mut |idx, _| idx % 7 == 3);
    let c = clog.lock().unwrap();
    assert!(
        c.lost_ranges > 0,
        "quiche reported the replaced STREAM frames lost"
    );
    assert!(pair.client.stats().stream_retrans_bytes > 0);
}

#[test]
fn held_data_waits_and_data_pending_reports_it() {
    let (mut pair, clog, _slog) = scrambler_pair(4);
    pair.handshake();
    transfer(&mut pair, 30_000, &mut |_, _| false);
    let c = clog.lock().unwrap();
    assert!(c.data_per_packet.len() > 4);
    // The first built packets carried no data although data was pending.
    assert!(
        c.pending_while_held.iter().any(|&p| p),
        "{:?}",
        c.pending_while_held
    );
    let first_data = c.data_per_packet.iter().position(|&n| n > 0).unwrap();
    assert!(
        first_data >= c.pending_while_held.len().min(1),
        "{:?}",
        c.data_per_packet
    );
    assert!(c.data_per_packet[..c.pending_while_held.len()]
        .iter()
        .all(|&n| n == 0));
}

/// quiche's two recovery implementations: CUBIC runs on the legacy one,
/// BBRv2 on gcongestion.
const RECOVERIES: [&str; 2] = ["cubic", "bbr2_gcongestion"];

/// A pair whose both sides use `algo`, optionally with an initial RTT.
fn recovery_pair(algo: &str, initial_rtt: Option<Duration>) -> Pair {
    let mut ccfg = config(false);
    let mut scfg = config(true);
    for c in [&mut ccfg, &mut scfg] {
        c.set_cc_algorithm_name(algo).unwrap();
        if let Some(rtt) = initial_rtt {
            c.set_initial_rtt(rtt);
        }
    }
    Pair::new(&mut ccfg, &mut scfg, |_, _| {})
}

#[test]
fn a_repeated_client_initial_makes_the_server_send_its_flight_again() {
    // Patch 0008 (RFC 9002 §6.2.3). The server's whole first flight is
    // lost; the client's probe timeout repeats its Initial. The server must
    // answer with its Initial and Handshake data at once, not with an ACK
    // only: the handshake then completes before any server timer fires
    // (this test never fires the server's). Both recovery implementations.
    for algo in RECOVERIES {
        let mut pair = recovery_pair(algo, Some(Duration::from_millis(10)));
        pair.advance_with(&mut |side, _, _| side == Side::Server);
        let first_flight = pair.sent.1;
        assert!(first_flight > 0 && !pair.client.is_established());
        let t = pair.client.timeout_instant().expect("client probe timer");
        std::thread::sleep(t.saturating_duration_since(Instant::now()));
        pair.client.on_timeout();
        pair.advance();
        assert!(
            pair.client.is_established() && pair.server.is_established(),
            "{algo}: the server answered the repeated Initial with {} \
             datagrams and the handshake did not complete",
            pair.sent.1 - first_flight
        );
    }
}

#[test]
fn an_application_ping_carries_the_ack_the_peer_missed() {
    // Patch 0009. The server's first packet is lost, its second arrives,
    // and the client's ACK of it is lost: the server knows nothing and its
    // probe timer may be far away. A PING the client's application asks
    // for (send_ack_eliciting) with send_ack must carry the ACK again, in
    // one packet, so the server learns that B arrived (and can then find A
    // lost). Both recovery implementations.
    for algo in RECOVERIES {
        let mut pair = recovery_pair(algo, None);
        pair.handshake();
        let (to_server, to_client) = recv_infos(&pair);
        let mut buf = [0u8; 65535];
        // Packet A: lost.
        assert_eq!(pair.server.stream_send(1, b"first", false), Ok(5));
        while pair.server.send(&mut buf).is_ok() {}
        // Packet B: arrives; the client's ACK of it is lost.
        assert_eq!(pair.server.stream_send(1, b"second", false), Ok(6));
        while let Ok((n, _)) = pair.server.send(&mut buf) {
            pair.client.recv(&mut buf[..n], to_client).unwrap();
        }
        let mut acks = 0;
        while pair.client.send(&mut buf).is_ok() {
            acks += 1;
        }
        assert!(acks > 0, "the client acknowledges B");
        let acked_before = pair.server.stats().acked_bytes;
        pair.client.send_ack_eliciting().unwrap();
        pair.client.send_ack().unwrap();
        let mut pings = 0;
        while let Ok((n, _)) = pair.client.send(&mut buf) {
            pings += 1;
            pair.server.recv(&mut buf[..n], to_server).unwrap();
        }
        assert_eq!(pings, 1, "{algo}: one ack-eliciting packet");
        assert!(
            pair.server.stats().acked_bytes > acked_before,
            "{algo}: the client's PING did not tell the server that B arrived"
        );
    }
}

/// A pair on `algo` whose client completed the handshake but whose
/// Finished was lost (everything the client sent once the server had
/// answered), after the client's probe timer fired.
fn finished_lost_and_probe_timer_fired(algo: &str) -> Pair {
    let mut pair = recovery_pair(algo, None);
    let mut answered = false;
    pair.advance_with(&mut |side, _, _| {
        answered |= side == Side::Server;
        side == Side::Client && answered
    });
    assert!(pair.client.is_established(), "{algo}");
    assert!(
        !pair.server.is_established(),
        "{algo}: the Finished was lost"
    );
    let t = pair.client.timeout_instant().expect("client probe timer");
    std::thread::sleep(t.saturating_duration_since(Instant::now()));
    pair.client.on_timeout();
    pair
}

#[test]
fn closing_before_the_handshake_is_confirmed_sends_the_close_and_stops() {
    // Patch 0010. The client's Finished is lost, so the server never
    // confirms the handshake; the client's probe timer fires and queues the
    // Finished again. The application then closes (all its responses came
    // in 0.5-RTT). While closing quiche sends no CRYPTO data, so that data
    // must not keep choosing the Handshake space: the client must send its
    // close and stop, not ACK-only Handshake packets without end.
    for algo in RECOVERIES {
        let mut pair = finished_lost_and_probe_timer_fired(algo);
        pair.client.close(true, 0x100, b"done").unwrap();
        let mut buf = [0u8; 65535];
        let mut sent = 0;
        while pair.client.send(&mut buf).is_ok() {
            sent += 1;
            assert!(
                sent < 100,
                "{algo}: the closing client does not stop sending"
            );
        }
        assert!(sent >= 1, "{algo}: the close was not sent");
        assert!(
            pair.client.is_draining(),
            "{algo}: the close frame went out"
        );
    }
}

#[test]
fn a_client_pads_its_handshake_probes_until_the_handshake_is_confirmed() {
    // Patch 0011. The client's Finished is lost, so its probe timer sends a
    // Handshake packet again. A server that has not validated the client's
    // address may send three times what it received (RFC 9000 §8.1): a
    // probe padded to 1200 bytes lets it answer with a full flight. Once
    // the handshake is confirmed the client pads nothing.
    for algo in RECOVERIES {
        let mut pair = finished_lost_and_probe_timer_fired(algo);
        let mut probes = Vec::new();
        let mut after = Vec::new();
        pair.advance_with(&mut |side, _, d| {
            if side == Side::Client {
                match long_type(d) {
                    Some(2) => probes.push(d.len()),
                    Some(_) => (),
                    None => after.push(d.len()),
                }
            }
            false
        });
        assert!(pair.server.is_established(), "{algo}: the probe arrived");
        assert!(!probes.is_empty(), "{algo}: no Handshake probe was sent");
        assert!(
            probes.iter().all(|&n| n >= 1200),
            "{algo}: Handshake probe sizes {probes:?}"
        );
        // The confirmed client's ACK of HANDSHAKE_DONE is not padded.
        assert!(pair.client.is_established());
        assert!(
            after.iter().any(|&n| n < 1200),
            "{algo}: 1-RTT datagrams after confirmation {after:?}"
        );
    }
}

/// How datagrams reach the server and the client of `pair`.
fn recv_infos(pair: &Pair) -> (quiche::RecvInfo, quiche::RecvInfo) {
    let to_server = quiche::RecvInfo {
        from: pair.client_seen(),
        to: pair.server.path_stats().next().unwrap().local_addr,
    };
    let to_client = quiche::RecvInfo {
        from: to_server.to,
        to: to_server.from,
    };
    (to_server, to_client)
}

/// The long-header packet type of datagram `d`'s first packet (0 Initial,
/// 2 Handshake), or None for a short header.
fn long_type(d: &[u8]) -> Option<u8> {
    (d[0] & 0x80 != 0).then_some((d[0] >> 4) & 0x3)
}

/// The length of the first QUIC packet of datagram `d`, which starts with a
/// long header (RFC 9000 §17.2).
fn first_long_packet_len(d: &[u8]) -> usize {
    let varint = |b: &[u8]| -> (u64, usize) {
        let len = 1 << (b[0] >> 6);
        let mut v = u64::from(b[0] & 0x3f);
        for x in &b[1..len] {
            v = (v << 8) | u64::from(*x);
        }
        (v, len)
    };
    let mut at = 5;
    at += 1 + d[at] as usize; // DCID
    at += 1 + d[at] as usize; // SCID
    if (d[0] >> 4) & 0x3 == 0 {
        let (token, n) = varint(&d[at..]);
        at += n + token as usize;
    }
    let (len, n) = varint(&d[at..]);
    at + n + len as usize
}

#[test]
fn a_client_probes_with_backoff_until_its_handshake_completes() {
    // Patch 0012. The server's Initial (ServerHello) arrives but all its
    // Handshake data is lost. The client has nothing in flight once the
    // server has acknowledged its Initial and its Handshake probes; RFC
    // 9002 §6.2.2.1 then lets it fall silent and wait for the server's
    // probe, which a server at its amplification limit (one that does not
    // count Handshake packets as address validation) cannot send. The
    // client must keep its probe timer until the handshake completes, and
    // keep backing off through the server's ACKs (§6.2.1); once it
    // completes, its lost Finished is probed without that backoff.
    for algo in RECOVERIES {
        let mut pair = recovery_pair(algo, None);
        let mut buf = [0u8; 65535];
        let (to_server, to_client) = recv_infos(&pair);
        // A 50 ms RTT sample, so the probe intervals are easy to measure.
        while let Ok((n, _)) = pair.client.send(&mut buf) {
            pair.server.recv(&mut buf[..n], to_server).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        // Of the server's datagrams only Initial packets and small (ACK-only)
        // Handshake packets arrive: its Handshake data is lost.
        let mut initials = 0;
        let mut server_to_client = |pair: &mut Pair, buf: &mut [u8]| {
            while let Ok((n, _)) = pair.server.send(buf) {
                let len = match long_type(&buf[..n]) {
                    Some(0) => first_long_packet_len(&buf[..n]),
                    Some(2) if n < 200 => n,
                    _ => continue,
                };
                initials += usize::from(long_type(&buf[..n]) == Some(0));
                pair.client.recv(&mut buf[..len], to_client).unwrap();
            }
        };
        server_to_client(&mut pair, &mut buf);
        assert!(!pair.client.is_established(), "{algo}");
        // Rounds: the client's datagrams reach the server, the server's
        // ACK-only answers reach the client, then the client's timer fires.
        let mut intervals = Vec::new();
        for round in 0..4 {
            let mut probes = 0;
            while let Ok((n, _)) = pair.client.send(&mut buf) {
                probes += usize::from(long_type(&buf[..n]) == Some(2));
                pair.server.recv(&mut buf[..n], to_server).unwrap();
            }
            if round > 0 {
                assert!(probes > 0, "{algo}: round {round}: no Handshake probe");
            }
            server_to_client(&mut pair, &mut buf);
            assert!(!pair.client.is_established(), "{algo}: no server data");
            let now = Instant::now();
            let t = pair.client.timeout_instant().expect("a client timer");
            let wait = t.saturating_duration_since(now);
            assert!(
                wait < Duration::from_secs(10),
                "{algo}: round {round}: the client waits {wait:?} (its idle timeout) \
                 instead of probing"
            );
            intervals.push(wait);
            std::thread::sleep(wait);
            pair.client.on_timeout();
        }
        assert!(initials > 0, "{algo}: the server's Initial arrived");
        for w in intervals[1..].windows(2) {
            assert!(
                w[1] >= w[0] * 3 / 2,
                "{algo}: the probe backoff was reset: {intervals:?}"
            );
        }
        // Now the server's packets all arrive: the client's next probe
        // acknowledges its ACK-only packets, so the server finds its flight
        // lost and sends it again. The client completes; its Finished is
        // lost.
        for _ in 0..4 {
            while let Ok((n, _)) = pair.client.send(&mut buf) {
                pair.server.recv(&mut buf[..n], to_server).unwrap();
            }
            while let Ok((n, _)) = pair.server.send(&mut buf) {
                pair.client.recv(&mut buf[..n], to_client).unwrap();
            }
            if pair.client.is_established() {
                break;
            }
            let t = pair.client.timeout_instant().expect("client timer");
            std::thread::sleep(t.saturating_duration_since(Instant::now()));
            pair.client.on_timeout();
        }
        assert!(pair.client.is_established(), "{algo}: the flight arrived");
        while pair.client.send(&mut buf).is_ok() {}
        let now = Instant::now();
        let finished = pair.client.timeout_instant().expect("Finished probe");
        let wait = finished.saturating_duration_since(now);
        let last = *intervals.last().unwrap();
        assert!(
            wait * 2 <= last,
            "{algo}: the lost Finished waits {wait:?}, the backoff of the stalled \
             handshake ({intervals:?})"
        );
    }
}
