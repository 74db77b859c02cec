//! End-to-end tests of the QUIC-NC coding extension (`quic_nc::install`)
//! on an in-memory quiche pair: coded transfers with seeded losses, the
//! deferral fallback, fallback to plain QUIC, and a hostile peer crafting
//! NC frames byte by byte.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nc_frames::frames::{
    put_varint, TransportParams, FRAME_NC_ACK, FRAME_NC_WINDOW, FRAME_REPAIR,
    FRAME_SOURCE_SYMBOL_ID, TRANSPORT_PARAM_ID, VARINT_MAX,
};
use quic_nc::coding::{wire, Mode, NcExtension};
use quic_nc::{CodingConfig, CodingStats, Handle};
use quic_nc_tests::{config, Pair, Side};
use quiche::extension::{
    FrameSpan, FrameType, SendContext, SendStage, StreamAction, TransportExtension,
};

// ---------------------------------------------------------------------------
// Harness

/// What one endpoint runs.
#[derive(Clone)]
enum Ext {
    /// No extension at all.
    Bare,
    /// `quic_nc::install` with `coding: None`.
    Plain,
    /// `quic_nc::install` with coding.
    Coded(CodingConfig),
}

fn coded() -> Ext {
    Ext::Coded(CodingConfig::default())
}

/// Coding in `mode` with a window of `window` symbols.
fn coding(mode: Mode, window: usize) -> CodingConfig {
    let c = CodingConfig::default();
    CodingConfig {
        mode,
        max_window: window,
        ..c
    }
}

fn install(conn: &mut quiche::Connection, ext: &Ext) -> Option<Handle> {
    let coding = match ext {
        Ext::Bare => return None,
        Ext::Plain => None,
        Ext::Coded(c) => Some(c.clone()),
    };
    let opts = quic_nc::Options {
        cc: "cubic".into(),
        coding,
        qlog: false,
    };
    Some(quic_nc::install(conn, &opts).expect("install"))
}

/// A pair with `client` and `server` installed, and their handles.
fn pair(client: Ext, server: Ext) -> (Pair, Option<Handle>, Option<Handle>) {
    let (mut ch, mut sh) = (None, None);
    let (mut ccfg, mut scfg) = (config(false), config(true));
    let p = Pair::new(&mut ccfg, &mut scfg, |side, conn| match side {
        Side::Client => ch = install(conn, &client),
        Side::Server => sh = install(conn, &server),
    });
    (p, ch, sh)
}

/// Reads everything readable on `stream`; returns whether FIN was seen.
fn read(conn: &mut quiche::Connection, stream: u64, out: &mut Vec<u8>) -> bool {
    let mut buf = vec![0u8; 65535];
    while let Ok((n, fin)) = conn.stream_recv(stream, &mut buf) {
        out.extend_from_slice(&buf[..n]);
        if fin {
            return true;
        }
    }
    false
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + i / 251) as u8) ^ salt).collect()
}

fn no_error(pair: &Pair) {
    for (name, c) in [("client", &pair.client), ("server", &pair.server)] {
        let (l, p) = (c.local_error(), c.peer_error());
        assert!(l.is_none() && p.is_none(), "{name} closed: {l:?} {p:?}");
    }
}

/// Fires due timers; with `wait`, first sleeps until the earliest deadline
/// of either side unless it is over a second away (the idle timeout).
/// Returns whether a deadline was that near.
fn tick(pair: &mut Pair, wait: bool) -> bool {
    let now = Instant::now();
    let near = [&pair.client, &pair.server]
        .iter()
        .filter_map(|c| c.timeout_instant())
        .min()
        .filter(|&t| t <= now + Duration::from_secs(1));
    if let Some(t) = near.filter(|_| wait) {
        std::thread::sleep(t.saturating_duration_since(now));
    }
    pair.fire_timers(false);
    near.is_some()
}

/// A drop filter of [`Pair::advance_with`].
type Filter<'a> = dyn FnMut(Side, u64, &[u8]) -> bool + 'a;

/// Sends `c2s` bytes client -> server (stream 4) and `s2c` bytes
/// server -> client (stream 1) at once, dropping the datagrams `drop`
/// selects, firing timers when both sides are quiet, until both directions
/// are complete; asserts the data arrived intact.
fn exchange(pair: &mut Pair, c2s: usize, s2c: usize, drop: &mut Filter) {
    let (up, down) = (pattern(c2s, 0x11), pattern(s2c, 0x5a));
    let (mut wu, mut wd, mut gu, mut gd) = (0, 0, Vec::new(), Vec::new());
    let (mut du, mut dd) = (c2s == 0, s2c == 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(du && dd) {
        if wu < c2s {
            wu += pair.client.stream_send(4, &up[wu..], true).unwrap_or(0);
        }
        if wd < s2c {
            wd += pair.server.stream_send(1, &down[wd..], true).unwrap_or(0);
        }
        let moved = pair.advance_with(drop);
        du = du || read(&mut pair.server, 4, &mut gu);
        dd = dd || read(&mut pair.client, 1, &mut gd);
        no_error(pair);
        let (u, d) = (gu.len(), gd.len());
        assert!(
            Instant::now() < deadline,
            "stalled: {u}/{c2s} up, {d}/{s2c} down"
        );
        tick(pair, moved == 0);
    }
    assert!(gu == up && gd == down, "data corrupted");
}

/// Runs the pair without losses until nothing moves and no timer is due
/// within a second (what an event loop would then sleep through).
fn settle(pair: &mut Pair) {
    for _ in 0..100 {
        let moved = pair.advance();
        no_error(pair);
        if !tick(pair, moved == 0) && moved == 0 {
            return;
        }
    }
}

/// One more send opportunity after [`settle`]: a resolution the extension
/// queued inside the last `send()` is applied only by the next one (see
/// `resolution_queued_inside_send_is_applied_without_another_event`).
fn nudge(pair: &mut Pair) {
    pair.advance();
    no_error(pair);
}

/// A filter dropping a fraction `p` of each side's datagrams (xorshift64*
/// with a fixed seed).
fn random_loss(seed: u64, p: f64) -> impl FnMut(Side, u64, &[u8]) -> bool {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move |_, _, _| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64) < p * (1u64 << 53) as f64
    }
}

// ---------------------------------------------------------------------------
// A spy around the extension `install` puts in place

/// A deferral hook event: a lost (stream, offset, len) deferred, or its
/// resolution (`true`: acknowledged, `false`: retransmitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Deferred(u64, u64, usize),
    Resolved(u64, u64, usize, bool),
}

type Stats = Arc<Mutex<CodingStats>>;
type Res = quiche::Result<()>;
type Flag = Arc<AtomicBool>;
type Log = Arc<Mutex<Vec<Event>>>;

/// `NcExtension` behind a wrapper that records, in order, the lost ranges
/// it deferred and their resolutions, and whether the packet built last
/// carried a FIN.
struct Spy {
    inner: NcExtension,
    log: Log,
    fin: Flag,
}

impl TransportExtension for Spy {
    fn frame_types(&self) -> Vec<FrameType> {
        self.inner.frame_types()
    }
    fn frame_body_len(&self, t: u64, body: &[u8]) -> Option<usize> {
        self.inner.frame_body_len(t, body)
    }
    fn local_transport_params(&self) -> Vec<(u64, Vec<u8>)> {
        self.inner.local_transport_params()
    }
    fn on_peer_transport_params(&mut self, p: &quiche::TransportParams) -> Res {
        self.inner.on_peer_transport_params(p)
    }
    fn on_packet_received(&mut self, n: u64, t: Instant, p: &[u8], s: &[FrameSpan]) -> Res {
        self.inner.on_packet_received(n, t, p, s)
    }
    fn next_recovered(&mut self) -> Option<Vec<u8>> {
        self.inner.next_recovered()
    }
    fn wants_to_send(&self, now: Instant, pending: bool) -> bool {
        self.inner.wants_to_send(now, pending)
    }
    fn on_send(&mut self, ctx: &mut SendContext) {
        if ctx.stage() == SendStage::AfterStream {
            let r = wire::data_frames(ctx.stream_frames()).unwrap_or_default();
            self.fin.store(r.iter().any(|r| r.fin), Ordering::SeqCst);
        }
        self.inner.on_send(ctx)
    }
    fn on_frame_acked(&mut self, t: u64, token: u64, now: Instant) {
        self.inner.on_frame_acked(t, token, now)
    }
    fn on_frame_lost(&mut self, t: u64, token: u64, now: Instant) {
        self.inner.on_frame_lost(t, token, now)
    }
    fn on_stream_data_lost(&mut self, id: u64, o: u64, l: usize, f: bool, t: Instant) -> bool {
        let deferred = self.inner.on_stream_data_lost(id, o, l, f, t);
        if deferred {
            self.log.lock().unwrap().push(Event::Deferred(id, o, l));
        }
        deferred
    }
    fn next_stream_action(&mut self) -> Option<StreamAction> {
        let a = self.inner.next_stream_action()?;
        #[rustfmt::skip]
        let (s, o, l, acked) = match a {
            StreamAction::Acked { stream_id, offset, len } => (stream_id, offset, len, true),
            StreamAction::Retransmit { stream_id, offset, len, .. } => (stream_id, offset, len, false),
        };
        let mut log = self.log.lock().unwrap();
        log.push(Event::Resolved(s, o, l, acked));
        Some(a)
    }
    fn timeout(&self) -> Option<Instant> {
        self.inner.timeout()
    }
    fn on_timeout(&mut self, now: Instant) {
        self.inner.on_timeout(now)
    }
}

/// A pair whose client runs coding `cfg` behind a [`Spy`] and whose server
/// is `server`; returns the client's statistics, log and FIN flag.
fn spy_pair(cfg: CodingConfig, server: Ext) -> (Pair, Stats, Log, Flag) {
    let (stats, log, fin) = (Stats::default(), Log::default(), Flag::default());
    let (mut ccfg, mut scfg) = (config(false), config(true));
    let p = Pair::new(&mut ccfg, &mut scfg, |side, conn| match side {
        Side::Client => {
            let inner = NcExtension::new(Some(cfg.clone()), None, stats.clone(), false);
            let (log, fin) = (log.clone(), fin.clone());
            conn.set_extension(Box::new(Spy { inner, log, fin }))
                .unwrap();
        }
        Side::Server => drop(install(conn, &server)),
    });
    (p, stats, log, fin)
}

/// Checks that every deferred range was resolved exactly once, and none
/// without a deferral. Returns how many loss reports were of a range still
/// deferred (quiche reports a range again when a PTO re-queued its frames
/// and the packet is declared lost later; one deferral covers both).
fn check_resolutions(log: &[Event]) -> u64 {
    let (mut pending, mut repeats) = (HashSet::new(), 0);
    for ev in log {
        match *ev {
            Event::Deferred(s, o, l) => repeats += !pending.insert((s, o, l)) as u64,
            Event::Resolved(s, o, l, _) => {
                assert!(pending.remove(&(s, o, l)), "{ev:?} not deferred")
            }
        }
    }
    assert!(pending.is_empty(), "deferrals never resolved: {pending:?}");
    repeats
}

/// Tells what the client's datagram just sent carried, from its counters
/// (the extension publishes them after every 1-RTT packet it builds, and a
/// 1-RTT datagram holds one packet): (source index, whether a repair).
struct Watch(Stats, CodingStats);

impl Watch {
    fn new(stats: &Stats) -> Watch {
        Watch(stats.clone(), stats.lock().unwrap().clone())
    }

    fn sent(&mut self) -> (Option<u64>, bool) {
        let (now, last) = (self.0.lock().unwrap().clone(), &self.1);
        let src = (now.sources_sent > last.sources_sent).then_some(last.sources_sent);
        let rep = now.repairs_sent > last.repairs_sent;
        self.1 = now;
        (src, rep)
    }
}

// ---------------------------------------------------------------------------
// 1. Coded transfers with losses

#[test]
fn coded_transfer_with_loss_both_directions() {
    let (mut p, ch, sh) = pair(coded(), coded());
    p.handshake();
    let mut lost = [0; 2];
    let mut loss = random_loss(7, 0.1);
    exchange(&mut p, 300_000, 300_000, &mut |side, i, d| {
        let drop = loss(side, i, d);
        lost[(side == Side::Server) as usize] += drop as usize * d.len();
        drop
    });
    settle(&mut p);
    let (c, s) = (ch.unwrap().stats(), sh.unwrap().stats());
    assert!(lost[0] > 20_000 && lost[1] > 20_000, "{lost:?}");
    for (name, tx, rx, conn, lost) in [
        ("client -> server", &c, &s, &p.client, lost[0]),
        ("server -> client", &s, &c, &p.server, lost[1]),
    ] {
        assert!(tx.negotiated && rx.negotiated, "{name}");
        assert_eq!(tx.mode, Some("systematic"));
        assert!(rx.recovered > 0, "{name}: nothing recovered");
        assert!(
            tx.deferred > 0 && tx.released > 0 && tx.peer_recovered > 0,
            "{name}: {tx:?}"
        );
        // Coding, not retransmission, repaired (almost) every loss.
        let retrans = conn.stats().stream_retrans_bytes as usize;
        assert!(
            retrans * 5 < lost,
            "{name}: {retrans} bytes retransmitted, {lost} lost"
        );
        // Every deferral ended: released by the peer's decoding or timed
        // out into retransmission.
        assert_eq!(tx.deferred, tx.released + tx.timed_out, "{name}: {tx:?}");
    }
}

/// Coded transfers under loss with the client behind a [`Spy`]: fully
/// coded mode with a 512-symbol window, and a window of 8 symbols (both
/// ends) under 15% loss in both modes (the window fills and stalls often: data held back,
/// probes, fallbacks). All complete and every deferral is resolved.
#[test]
fn fully_coded_and_small_window_transfers_with_loss() {
    let cases = [
        (Mode::FullyCoded, 512, 300_000, 100_000, 11, 0.1),
        (Mode::Systematic, 8, 150_000, 50_000, 5, 0.15),
        (Mode::FullyCoded, 8, 150_000, 50_000, 5, 0.15),
    ];
    for (mode, window, up, down, seed, loss) in cases {
        let cfg = coding(mode, window);
        let (mut p, stats, log, _) = spy_pair(cfg.clone(), Ext::Coded(cfg));
        p.handshake();
        exchange(&mut p, up, down, &mut random_loss(seed, loss));
        settle(&mut p);
        nudge(&mut p);
        let c = stats.lock().unwrap().clone();
        let full = mode == Mode::FullyCoded;
        assert!(c.negotiated && c.window == window as u64, "{c:?}");
        assert_eq!(c.mode, Some(if full { "full" } else { "systematic" }));
        assert!(!full || c.coded_new == c.sources_sent, "{c:?}");
        assert!(c.deferred > 0 && c.peer_recovered > 0, "{c:?}");
        // A range reported lost again while deferred (`repeats`) keeps its
        // one deferral: the counters balance without it.
        check_resolutions(&log.lock().unwrap());
        assert_eq!(c.deferred, c.released + c.timed_out, "{c:?}");
    }
}

/// Each end decodes within the window it offered and sends within the
/// peer's: a client accepting 16 symbols and a server accepting 64 move
/// data both ways under 10 % loss. A sender that used its own window
/// would run 64 symbols ahead of the client's seen index, which the client
/// closes the connection for (PROTOCOL_VIOLATION).
#[test]
fn each_direction_uses_its_receivers_window() {
    let (client, server) = (coding(Mode::Systematic, 16), coding(Mode::Systematic, 64));
    let (mut p, ch, sh) = pair(Ext::Coded(client), Ext::Coded(server));
    p.handshake();
    exchange(&mut p, 200_000, 200_000, &mut random_loss(3, 0.1));
    settle(&mut p);
    let (c, s) = (ch.unwrap().stats(), sh.unwrap().stats());
    assert_eq!((c.window, c.recv_window), (64, 16), "{c:?}");
    assert_eq!((s.window, s.recv_window), (16, 64), "{s:?}");
    assert!(c.deferred > 0 && s.deferred > 0, "{c:?} {s:?}");
    assert!(c.peer_recovered > 0 && s.peer_recovered > 0, "{c:?} {s:?}");
}

/// Counters after a lossless coded transfer.
#[test]
fn counters_of_a_lossless_coded_transfer() {
    let (mut p, ch, sh) = pair(coded(), coded());
    p.handshake();
    exchange(&mut p, 200_000, 20_000, &mut |_, _, _| false);
    settle(&mut p);
    let (c, s) = (ch.unwrap().stats(), sh.unwrap().stats());
    for (tx, rx) in [(&c, &s), (&s, &c)] {
        let window = quic_nc::coding::config::DEFAULT_WINDOW as u64;
        assert!(tx.negotiated && tx.window == window && tx.symbol_size == 1500);
        assert!(
            tx.sources_sent > 0 && tx.repairs_sent * 20 <= tx.sources_sent,
            "{tx:?}"
        );
        assert_eq!(rx.sources_received, tx.sources_sent, "{tx:?}\n{rx:?}");
        assert_eq!(rx.repairs_received, tx.repairs_sent);
        assert_eq!(tx.deferred + tx.released + tx.timed_out + tx.abandoned, 0);
        assert_eq!(rx.recovered + tx.peer_recovered, 0);
        assert!(tx.source_bytes >= 20_000 && tx.source_bytes < 212_000);
        assert!(rx.acks_sent > 0);
    }
    assert_eq!(p.client.stats().stream_retrans_bytes, 0);
}

// ---------------------------------------------------------------------------
// 2. Deferral fallback

#[test]
fn lost_source_and_its_repairs_fall_back_to_retransmission() {
    let (mut p, stats, log, _) = spy_pair(CodingConfig::default(), coded());
    p.handshake();
    let (mut watch, fired) = (Watch::new(&stats), stats.clone());
    let (mut dropped_source, mut dropped_repairs) = (false, 0);
    // Drop source 20, then every repair (each covers it: the peer never saw
    // it) until the fallback fired.
    exchange(&mut p, 150_000, 0, &mut |side, _, _| {
        if side != Side::Client {
            return false;
        }
        let (src, rep) = watch.sent();
        dropped_source |= src == Some(20);
        let drop_rep = rep && dropped_source && fired.lock().unwrap().timed_out == 0;
        dropped_repairs += drop_rep as u32;
        src == Some(20) || drop_rep
    });
    settle(&mut p);
    nudge(&mut p);
    let c = stats.lock().unwrap().clone();
    assert!(dropped_source && dropped_repairs > 0, "{dropped_repairs}");
    assert!(c.deferred > 0 && c.timed_out > 0, "{c:?}");
    assert!(p.client.stats().stream_retrans_bytes > 0);
    let events = log.lock().unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Resolved(.., false))));
    check_resolutions(&events);
    assert_eq!(c.deferred, c.released + c.timed_out, "{c:?}");
}

/// The same lost range reported twice while deferred (PTO re-queues the
/// frames of the tail packet, then the packet is declared lost): the book
/// keeps one deferral, resolves it once, and `deferred` counts it once.
#[test]
fn deferral_counters_balance_when_a_range_is_reported_lost_twice() {
    let (mut p, stats, log, _) = spy_pair(CodingConfig::default(), coded());
    p.handshake();
    let (mut watch, mut repairs) = (Watch::new(&stats), 0);
    // Source 0 is the whole transfer: nothing follows to declare it lost,
    // so PTO re-queues its frames (deferred), and the packet is declared
    // lost later (reported again). The first repair is lost too, so that
    // the symbol is still undecoded at the second report.
    exchange(&mut p, 800, 0, &mut |side, _, _| {
        let (src, rep) = if side == Side::Client {
            watch.sent()
        } else {
            (None, false)
        };
        repairs += rep as u32;
        src == Some(0) || (rep && repairs == 1)
    });
    settle(&mut p);
    let c = stats.lock().unwrap().clone();
    assert!(
        check_resolutions(&log.lock().unwrap()) > 0,
        "reported twice"
    );
    assert_eq!(c.deferred, c.released + c.timed_out, "{c:?}");
}

/// The packet with the FIN (the last source) is lost and a tail repair
/// recovers it at once; quiche declares the packet lost later, by its time
/// threshold (a timer). The lost frames reach the extension inside the
/// next `send()`, after `send()` applied the queued resolutions, and the
/// extension queues an `Acked` for the already decoded symbol
/// (`LossDecision::AlreadyDecoded`) without asking to be woken: its
/// `timeout()` is `None` and `wants_to_send()` false. An event loop then
/// sleeps (until the idle timeout) with the range un-acked in quiche.
#[test]
fn resolution_queued_inside_send_is_applied_without_another_event() {
    let (mut p, stats, log, fin) = spy_pair(CodingConfig::default(), coded());
    p.handshake();
    let (mut watch, mut dropped_fin) = (Watch::new(&stats), false);
    // Source 5 is dropped so that the loss estimate is positive (tail
    // repairs on), then the packet carrying the FIN.
    exchange(&mut p, 30_000, 0, &mut |side, _, _| {
        if side != Side::Client {
            return false;
        }
        let src = watch.sent().0;
        let drop_fin = fin.load(Ordering::SeqCst) && !dropped_fin;
        dropped_fin |= drop_fin;
        drop_fin || src == Some(5)
    });
    settle(&mut p);
    assert!(dropped_fin);
    check_resolutions(&log.lock().unwrap());
}

// ---------------------------------------------------------------------------
// 3. Fallback to plain QUIC

#[test]
fn coding_falls_back_to_plain_quic_without_a_coding_peer() {
    let cases = [
        ("coded client, bare server", coded(), Ext::Bare),
        ("bare client, coded server", Ext::Bare, coded()),
        ("coded client, plain server", coded(), Ext::Plain),
        ("plain client, coded server", Ext::Plain, coded()),
    ];
    for (name, client, server) in cases {
        let (mut p, ch, sh) = pair(client, server);
        p.handshake();
        exchange(&mut p, 60_000, 60_000, &mut random_loss(3, 0.05));
        settle(&mut p);
        for s in [ch, sh].into_iter().flatten().map(|h| h.stats()) {
            assert!(!s.negotiated, "{name}: {s:?}");
            let sent = s.sources_sent + s.repairs_sent + s.acks_sent + s.coded_new;
            assert_eq!(sent, 0, "{name}: an NC frame was sent: {s:?}");
            assert_eq!(s.deferred + s.sources_received + s.repairs_received, 0);
        }
        // QUIC alone repaired the losses.
        assert!(p.client.stats().stream_retrans_bytes > 0, "{name}");
        assert!(p.server.stats().stream_retrans_bytes > 0, "{name}");
    }
}

// ---------------------------------------------------------------------------
// 4. Hostile peer

/// Writes frames into the packet being built; true once its shot is done.
type Attack = Box<dyn FnMut(&mut SendContext) -> bool + Send + Sync>;

/// An attacker speaking the NC wire format byte by byte: registers the four
/// NC frame types, advertises `params` (a raw `nc_parameters` value) and,
/// once armed, runs `attack` at every send stage of its 1-RTT packets until
/// `shots` shots are done.
struct Hostile {
    params: Option<Vec<u8>>,
    armed: Arc<AtomicBool>,
    /// Ask quiche for packets (attacks that need no STREAM data).
    eager: bool,
    shots: usize,
    attack: Attack,
}

impl TransportExtension for Hostile {
    fn frame_types(&self) -> Vec<FrameType> {
        let ft = |frame_type| FrameType {
            frame_type,
            ack_eliciting: frame_type != FRAME_NC_ACK,
        };
        (FRAME_SOURCE_SYMBOL_ID..=FRAME_NC_WINDOW).map(ft).collect()
    }

    fn frame_body_len(&self, t: u64, body: &[u8]) -> Option<usize> {
        nc_frames::frames::body_len(t, body)
    }

    fn local_transport_params(&self) -> Vec<(u64, Vec<u8>)> {
        self.params
            .iter()
            .map(|v| (TRANSPORT_PARAM_ID, v.clone()))
            .collect()
    }

    fn wants_to_send(&self, _: Instant, _: bool) -> bool {
        self.eager && self.shots > 0 && self.armed.load(Ordering::SeqCst)
    }

    fn on_send(&mut self, ctx: &mut SendContext) {
        if self.shots > 0 && self.armed.load(Ordering::SeqCst) && (self.attack)(ctx) {
            self.shots -= 1;
        }
    }
}

/// A valid `nc_parameters` value: window 64, 1500-byte symbols, both modes
/// (the victim's smaller limits win).
fn good() -> Option<Vec<u8>> {
    let mut v = Vec::new();
    TransportParams::default().encode(&mut v);
    Some(v)
}

/// The victim: coding with a 16-symbol window and 100-byte symbols.
fn victim() -> Ext {
    let c = coding(Mode::Systematic, 16);
    Ext::Coded(CodingConfig {
        max_symbol_size: 100,
        ..c
    })
}

fn varints(vals: &[u64]) -> Vec<u8> {
    let mut v = Vec::new();
    vals.iter().for_each(|&x| put_varint(&mut v, x));
    v
}

/// Seeded coefficients: mode 0, repair key 1, density 15.
const SEEDED: &[u8] = &[0, 0, 1, 15];

/// A REPAIR frame: header fields, raw coefficient bytes (mode first), the
/// Length field and the payload bytes actually written.
fn repair(seq: u64, first: u64, count: u64, coefs: &[u8], len: u64, data: &[u8]) -> Vec<u8> {
    let mut v = varints(&[FRAME_REPAIR, seq, first, count]);
    v.extend_from_slice(coefs);
    put_varint(&mut v, len);
    v.extend_from_slice(data);
    v
}

/// NC_ACK {I_p, I_q-I_p, I_r-I_q, MAX_SEQ-I_r, DIFF, sources, repairs,
/// repair_seq_end}.
fn nc_ack(fields: [u64; 8]) -> Vec<u8> {
    [varints(&[FRAME_NC_ACK]), varints(&fields)].concat()
}

fn ssi(index: u64, length: usize) -> Vec<u8> {
    varints(&[FRAME_SOURCE_SYMBOL_ID, index, length as u64])
}

fn window(abandon_below: u64) -> Vec<u8> {
    varints(&[FRAME_NC_WINDOW, abandon_below])
}

fn push_all(ctx: &mut SendContext, frames: &[Vec<u8>]) -> bool {
    for f in frames {
        let ty = nc_frames::frames::Reader::new(f).varint().unwrap_or(0);
        assert!(ctx.push_frame(f, ty, 0, true, false), "frame does not fit");
    }
    true
}

/// An attack pushing `frames` once, in the BeforeStream stage.
fn push(frames: Vec<Vec<u8>>) -> Attack {
    Box::new(move |ctx| ctx.stage() == SendStage::BeforeStream && push_all(ctx, &frames))
}

/// An attack appending `make(L)` after the data frames (L bytes) of a
/// packet carrying STREAM data.
fn after_data(make: impl Fn(usize) -> Vec<Vec<u8>> + Send + Sync + 'static) -> Attack {
    Box::new(move |ctx| {
        let l = ctx.stream_frames().len();
        ctx.stage() == SendStage::AfterStream && l > 0 && push_all(ctx, &make(l))
    })
}

/// As `Pair::advance` without losses, but stops at a send error instead of
/// panicking (a server that fails the handshake on the client's transport
/// parameters closes, then its `send()` reports CryptoFail).
fn pump(pair: &mut Pair) -> usize {
    let (c, s, mut moved) = ("127.0.0.1:1234", "127.0.0.1:4321", 0);
    loop {
        let n = flow(&mut pair.client, &mut pair.server, c, s);
        match n + flow(&mut pair.server, &mut pair.client, s, c) {
            0 => return moved,
            n => moved += n,
        }
    }
}

/// Moves every datagram `from` wants to send to `to`.
fn flow(from: &mut quiche::Connection, to: &mut quiche::Connection, f: &str, t: &str) -> usize {
    let info = quiche::RecvInfo {
        from: f.parse().unwrap(),
        to: t.parse().unwrap(),
    };
    let (mut buf, mut n) = (vec![0u8; 65535], 0);
    while let Ok((len, _)) = from.send(&mut buf) {
        n += 1;
        let _ = to.recv(&mut buf[..len], info);
    }
    n
}

/// An attack's outcome: the pair, the victim's side and handle.
struct Attacked(Pair, Side, Option<Handle>);

impl Attacked {
    fn victim(&self) -> &quiche::Connection {
        match self.1 {
            Side::Client => &self.0.client,
            Side::Server => &self.0.server,
        }
    }

    fn stats(&self) -> CodingStats {
        self.2.as_ref().unwrap().stats()
    }

    /// The victim closed the connection with transport error `code`.
    fn closed_with(&self, code: u64, case: &str) {
        let e = self.victim().local_error();
        let e = e.unwrap_or_else(|| panic!("{case}: the victim did not close"));
        assert!(!e.is_app && e.error_code == code, "{case}: {e:?}");
    }

    /// The victim is still up.
    fn alive(&self, case: &str) {
        let (v, e) = (self.victim(), self.victim().local_error());
        assert!(e.is_none() && !v.is_closed(), "{case}: {e:?}");
    }
}

/// A [`Hostile`] advertising `params` that runs `attack` `shots` times.
fn hostile(params: Option<Vec<u8>>, shots: usize, attack: Attack) -> Hostile {
    let (armed, eager) = (Flag::default(), false);
    Hostile {
        params,
        armed,
        eager,
        shots,
        attack,
    }
}

/// Runs `hostile` against `victim` on `victim_side`; once armed, the
/// hostile side writes `data` bytes on a stream (attacks on STREAM data).
fn attack(victim_side: Side, victim: Ext, mut hostile: Hostile, data: usize) -> Attacked {
    let armed = hostile.armed.clone();
    hostile.eager = data == 0;
    let mut hostile = Some(hostile);
    let mut handle = None;
    let (mut ccfg, mut scfg) = (config(false), config(true));
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |side, conn| {
        if side == victim_side {
            handle = install(conn, &victim);
        } else {
            conn.set_extension(Box::new(hostile.take().unwrap()))
                .unwrap();
        }
    });
    pump(&mut pair);
    if pair.client.is_established() && pair.server.is_established() {
        armed.store(true, Ordering::SeqCst);
        let (stream, hostile) = match victim_side {
            Side::Server => (4, &mut pair.client),
            Side::Client => (1, &mut pair.server),
        };
        if data > 0 {
            hostile
                .stream_send(stream, &vec![0x42; data], false)
                .unwrap();
        }
        for _ in 0..10 {
            let moved = pump(&mut pair);
            tick(&mut pair, false);
            if moved == 0 {
                break;
            }
        }
    }
    Attacked(pair, victim_side, handle)
}

/// A frame attack by the client on a coded server.
fn hit(data: usize, a: Attack) -> Attacked {
    attack(Side::Server, victim(), hostile(good(), 1, a), data)
}

const FRAME_ENCODING_ERROR: u64 = 0x07;
const TRANSPORT_PARAMETER_ERROR: u64 = 0x08;
const PROTOCOL_VIOLATION: u64 = 0x0a;

#[test]
fn hostile_malformed_frames_are_frame_encoding_errors() {
    #[rustfmt::skip]
    let cases = [
        // Length says 1000 bytes, 10 follow (the packet is shorter).
        ("REPAIR truncated", repair(0, 0, 1, SEEDED, 1000, &[0; 10])),
        ("REPAIR density 16", repair(0, 0, 1, &[0, 0, 1, 16], 2, &[0; 2])),
        ("REPAIR count 0", repair(0, 0, 0, SEEDED, 2, &[0; 2])),
        ("REPAIR coefficient mode 2", repair(0, 0, 1, &[2, 1], 2, &[0; 2])),
        ("REPAIR 4000 explicit coefs", repair(0, 0, 4000, &[1, 1], 0, &[])),
        ("REPAIR sequence 2^62-1", repair(VARINT_MAX, 0, 1, SEEDED, 2, &[0; 2])),
        ("REPAIR window past 2^62", repair(0, VARINT_MAX, 2, SEEDED, 2, &[0; 2])),
        // MAX_SEQ = 1, I_q = 0, DIFF = 2.
        ("NC_ACK DIFF > MAX_SEQ - I_q", nc_ack([0, 0, 0, 1, 2, 0, 0, 0])),
    ];
    for (case, frame) in cases {
        hit(0, push(vec![frame])).closed_with(FRAME_ENCODING_ERROR, case);
    }
}

#[test]
fn hostile_repairs_beyond_negotiated_limits_are_protocol_violations() {
    // Window 16, symbols of 100 bytes (coded length up to 102), I_p = 0.
    let z = [0u8; 103];
    #[rustfmt::skip]
    let cases = [
        ("REPAIR count 17", repair(0, 0, 17, SEEDED, 2, &z[..2])),
        ("REPAIR [10, 17)", repair(0, 10, 7, SEEDED, 2, &z[..2])),
        ("REPAIR [16, 17)", repair(0, 16, 1, SEEDED, 2, &z[..2])),
        ("REPAIR coded length 103", repair(0, 0, 1, SEEDED, 103, &z)),
        // Coded forms too short to hold a length prefix.
        ("REPAIR coded length 0", repair(0, 0, 1, &[1, 1], 0, &[])),
        ("REPAIR coded length 1", repair(0, 0, 1, &[1, 1], 1, &z[..1])),
        // Explicit coefficient 1: decodes at once to a symbol whose length
        // prefix says 200 bytes, or holding a PING frame.
        ("REPAIR corrupt length prefix", repair(0, 3, 1, &[1, 1], 4, &[0, 200, 0, 0])),
        ("REPAIR decoding to a PING", repair(0, 3, 1, &[1, 1], 3, &[0, 1, 1])),
    ];
    for (case, frame) in cases {
        hit(0, push(vec![frame])).closed_with(PROTOCOL_VIOLATION, case);
    }
    // The same limits, just met: accepted. Symbol 10 decodes at once to 3
    // PADDING bytes, symbol 0 to an empty symbol.
    #[rustfmt::skip]
    let ok = [
        ("REPAIR [10, 16)", repair(0, 10, 6, &[1, 1, 0, 0, 0, 0, 0], 5, &[0, 3, 0, 0, 0])),
        ("REPAIR coded length 102", repair(0, 0, 1, SEEDED, 102, &z[..102])),
    ];
    for (case, frame) in ok {
        let a = hit(0, push(vec![frame]));
        a.alive(case);
        let s = a.stats();
        assert_eq!((s.repairs_received, s.recovered), (1, 1), "{case}: {s:?}");
    }
    let zero_coefs = [&[1u8][..], &[0; 16]].concat();
    let a = hit(0, push(vec![repair(0, 0, 16, &zero_coefs, 2, &[0, 0])]));
    a.alive("REPAIR with all-zero coefficients");
}

#[test]
fn hostile_nc_ack_of_unsent_symbols_is_a_protocol_violation() {
    // The victim sent no symbol and no repair.
    let cases = [
        ("NC_ACK MAX_SEQ 1", nc_ack([0, 0, 0, 1, 0, 0, 0, 0])),
        ("NC_ACK I_p 5", nc_ack([5, 0, 0, 0, 0, 0, 0, 0])),
        ("NC_ACK repair_seq_end 1", nc_ack([0, 0, 0, 0, 0, 0, 0, 1])),
    ];
    for (case, frame) in cases {
        hit(0, push(vec![frame])).closed_with(PROTOCOL_VIOLATION, case);
    }
    hit(0, push(vec![nc_ack([0; 8])])).alive("NC_ACK of nothing");
}

/// Tags the packet's STREAM frame plus the raw PING frame pushed right
/// before it (as if it were an NC frame).
fn tag_over_ping() -> Attack {
    let mut pinged = false;
    Box::new(move |ctx| match ctx.stage() {
        SendStage::BeforeStream if ctx.data_pending() => {
            pinged = ctx.push_frame(&[0x01], FRAME_NC_WINDOW, 0, true, false);
            false
        }
        SendStage::AfterStream if pinged && !ctx.stream_frames().is_empty() => {
            let l = ctx.stream_frames().len() + 1;
            ctx.push_frame(&ssi(0, l), FRAME_SOURCE_SYMBOL_ID, 0, true, false)
        }
        _ => false,
    })
}

/// A tag of 99 bytes right after the ACK frame, if any (fewer precede).
fn tag_after_ack() -> Attack {
    Box::new(|ctx| {
        ctx.stage() == SendStage::AfterAck
            && ctx.push_frame(&ssi(0, 99), FRAME_SOURCE_SYMBOL_ID, 0, false, false)
    })
}

#[test]
fn hostile_source_symbol_ids_are_checked() {
    // The hostile client writes 40 bytes on stream 4: one STREAM frame of
    // L < 100 bytes (the symbol size) in the packet. An NC_WINDOW(0) frame
    // is 5 bytes long.
    #[rustfmt::skip]
    let cases: Vec<(&str, Attack)> = vec![
        ("two SOURCE_SYMBOL_IDs", after_data(|l| vec![ssi(0, l), ssi(1, 0)])),
        ("index 16 beyond the window", after_data(|l| vec![ssi(16, l)])),
        ("length beyond the symbol size", after_data(|_| vec![ssi(0, 101)])),
        ("length reaching into an NC frame", after_data(|l| vec![window(0), ssi(0, l + 5)])),
        // The tag starts at the STREAM frame's stream id byte (4).
        ("length cutting a STREAM frame", after_data(|l| vec![ssi(0, l - 1)])),
        ("tagged bytes include a PING frame", tag_over_ping()),
        ("length beyond the bytes before it", tag_after_ack()),
    ];
    for (case, a) in cases {
        hit(40, a).closed_with(PROTOCOL_VIOLATION, case);
    }
    // A well-formed tag of the last symbol the window allows.
    let a = hit(40, after_data(|l| vec![ssi(15, l)]));
    a.alive("SOURCE_SYMBOL_ID 15");
    assert_eq!(a.stats().sources_received, 1);
}

#[test]
fn hostile_nc_window_beyond_the_window_is_a_protocol_violation() {
    hit(0, push(vec![window(17)])).closed_with(PROTOCOL_VIOLATION, "NC_WINDOW 17");
    hit(0, push(vec![window(16)])).alive("NC_WINDOW 16");
}

#[test]
fn hostile_nc_frames_without_negotiation() {
    // (victim side, victim, hostile's nc_parameters, expected error)
    #[rustfmt::skip]
    let cases = [
        (Side::Server, victim(), None, PROTOCOL_VIOLATION, "coded server, peer did not offer"),
        (Side::Client, victim(), None, PROTOCOL_VIOLATION, "coded client, peer did not offer"),
        (Side::Server, Ext::Plain, good(), FRAME_ENCODING_ERROR, "server with coding off"),
        (Side::Server, Ext::Bare, good(), FRAME_ENCODING_ERROR, "server without extension"),
    ];
    for (side, v, params, code, case) in cases {
        let a = attack(side, v, hostile(params, 1, push(vec![window(0)])), 0);
        a.closed_with(code, case);
        assert!(a.2.is_none_or(|h| !h.stats().negotiated));
    }
}

#[test]
fn hostile_transport_parameters() {
    let trailing = [good().unwrap(), vec![0]].concat();
    let truncated = good().unwrap()[..3].to_vec();
    for side in [Side::Server, Side::Client] {
        for (case, v) in [("trailing byte", &trailing), ("truncated", &truncated)] {
            let a = attack(side, victim(), hostile(Some(v.clone()), 0, push(vec![])), 0);
            let case = format!("{case}, victim {side:?}");
            a.closed_with(TRANSPORT_PARAMETER_ERROR, &case);
        }
    }
    // Unknown version or field, zero window, unknown mode bit: coding is
    // simply off, and the connection works.
    let variants: [fn(&mut TransportParams); 4] = [
        |t| t.version = 2,
        |t| t.field = 9,
        |t| t.max_window = 0,
        |t| t.modes = 0x04,
    ];
    for set in variants {
        let (mut tp, mut v) = (TransportParams::default(), Vec::new());
        set(&mut tp);
        tp.encode(&mut v);
        let mut a = attack(Side::Server, victim(), hostile(Some(v), 0, push(vec![])), 0);
        a.alive(&format!("{tp:?}"));
        exchange(&mut a.0, 5_000, 5_000, &mut |_, _, _| false);
        let s = a.stats();
        assert!(!s.negotiated && s.sources_sent == 0, "{tp:?}: {s:?}");
    }
}

#[test]
fn hostile_repair_flood_is_shed_not_fatal() {
    // 40 packets of 40 valid repairs over [0, 16): random combinations of
    // 16 empty symbols (coded length 2, all zero). The victim's decoding
    // budget: bursts of 64 * 16 symbol operations, refilled at 1000/s.
    let pushed = Arc::new(AtomicU64::new(0));
    let (count, mut seq) = (pushed.clone(), 0u64);
    let flood: Attack = Box::new(move |ctx| {
        if ctx.stage() != SendStage::BeforeStream {
            return false;
        }
        for _ in 0..40 {
            let [k0, k1] = (seq as u16).to_be_bytes();
            let f = repair(seq, 0, 16, &[0, k0, k1, 15], 2, &[0, 0]);
            if !ctx.push_frame(&f, FRAME_REPAIR, seq, true, false) {
                break;
            }
            seq += 1;
            count.fetch_add(1, Ordering::SeqCst);
        }
        true
    });
    let Ext::Coded(c) = victim() else {
        unreachable!()
    };
    let v = Ext::Coded(CodingConfig {
        work_per_second: 1000.0,
        ..c
    });
    let a = attack(Side::Server, v, hostile(good(), 40, flood), 0);
    a.alive("repair flood");
    let (s, n) = (a.stats(), pushed.load(Ordering::SeqCst));
    assert!(n >= 1000, "{n}");
    assert_eq!(s.repairs_received + s.shed, n, "{s:?}");
    assert!(s.shed > 0 && s.repairs_received >= 16, "{s:?}");
    // The 16 empty symbols were decoded and delivered (as nothing).
    assert_eq!(s.recovered, 16, "{s:?}");
}
