//! Our congestion controllers behind quiche's external-controller hook.
//!
//! [`configure`] maps a controller name to a quiche configuration: quiche's
//! own `reno`, `cubic` and `bbr2`, or one of ours (`hybrid`, `hybrid-yield`,
//! `ctcp`, `vegas`, `vegas-nc`, `aimd`) through [`Factory`].

use std::sync::Arc;
use std::time::Instant;

use congestion::Algorithm;
use congestion::CommonConfig;
use congestion::Controller;

use crate::channel::Channel;

/// Every name [`configure`] accepts, quiche's first.
pub const NAMES: &[&str] = &[
    "reno",
    "cubic",
    "bbr2",
    "hybrid",
    "hybrid-yield",
    "ctcp",
    "vegas",
    "vegas-nc",
    "aimd",
];

/// How a name resolves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// One of quiche's built-in controllers.
    Quiche(quiche::CongestionControlAlgorithm),
    /// One of ours, run through the external-controller hook.
    Ours(Algorithm),
}

/// Resolves a controller name (see [`NAMES`]).
pub fn resolve(name: &str) -> Result<Choice, String> {
    Ok(match name {
        "reno" => Choice::Quiche(quiche::CongestionControlAlgorithm::Reno),
        "cubic" => Choice::Quiche(quiche::CongestionControlAlgorithm::CUBIC),
        "bbr2" => Choice::Quiche(quiche::CongestionControlAlgorithm::Bbr2Gcongestion),
        // Our CUBIC model exists for simulations; on the wire, quiche's.
        "aimd" | "hybrid" | "hybrid-yield" | "ctcp" | "vegas" | "vegas-nc" => {
            Choice::Ours(name.parse::<Algorithm>()?)
        }
        other => {
            return Err(format!(
                "unknown congestion controller '{other}' (expected one of: {})",
                NAMES.join(", ")
            ))
        }
    })
}

/// Configures `config` to use the controller called `name`. Our
/// controllers need pacing, so it is enabled for them.
pub fn configure(config: &mut quiche::Config, name: &str) -> Result<Choice, String> {
    let choice = resolve(name)?;
    match choice {
        Choice::Quiche(algo) => config.set_cc_algorithm(algo),
        Choice::Ours(algo) => {
            config.enable_pacing(true);
            config.set_external_congestion_control(Arc::new(Factory::new(algo)));
        }
    }
    Ok(choice)
}

/// Builds one of our controllers per quiche path.
#[derive(Debug, Clone)]
pub struct Factory {
    algorithm: Algorithm,
    channel: Option<Channel>,
}

impl Factory {
    /// A factory for `algorithm`.
    pub fn new(algorithm: Algorithm) -> Self {
        Factory {
            algorithm,
            channel: None,
        }
    }

    /// Controllers built from now on take coding feedback from `channel`
    /// and report their state to it (use one factory per connection for
    /// that, through `Connection::set_external_congestion_control`).
    pub fn with_channel(mut self, channel: Channel) -> Self {
        self.channel = Some(channel);
        self
    }

    /// The algorithm built.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

impl quiche::cc::CongestionControllerFactory for Factory {
    fn new_controller(
        &self,
        init: &quiche::cc::ControllerInit,
    ) -> Box<dyn quiche::cc::CongestionController> {
        let common = CommonConfig {
            mss: init.max_datagram_size,
            initial_window_packets: init.initial_congestion_window_packets,
            initial_rtt: init.initial_rtt,
            ..CommonConfig::default()
        };
        Box::new(Adapter::with(
            self.algorithm.build(common),
            self.channel.clone(),
        ))
    }
}

/// Consecutive probe timeouts without an acknowledgement that count as
/// persistent congestion. quiche calls `on_retransmission_timeout` at every
/// PTO (RFC 9002: a PTO is not a congestion signal), while our
/// controllers' `on_retransmission_timeout` means persistent congestion.
/// PTOs back off exponentially, so the second in a row comes three PTO
/// periods after the last acknowledged packet: RFC 9002's persistent
/// congestion duration (section 7.6.1).
const PERSISTENT_PTOS: u32 = 2;

/// The controller's state goes to qlog when it changes, at a loss, and
/// otherwise at least this often (windows and estimates between events).
const STATE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// One of our controllers seen as a quiche controller.
#[derive(Debug)]
pub struct Adapter {
    inner: Box<dyn Controller>,
    channel: Option<Channel>,
    last_state: &'static str,
    last_state_at: Option<std::time::Instant>,
    /// Probe timeouts since the last acknowledgement.
    ptos: u32,
    acked: Vec<congestion::AckedPacket>,
    lost: Vec<congestion::LostPacket>,
}

impl Adapter {
    /// Wraps a controller.
    pub fn new(inner: Box<dyn Controller>) -> Self {
        Adapter::with(inner, None)
    }

    fn with(inner: Box<dyn Controller>, channel: Option<Channel>) -> Self {
        Adapter {
            inner,
            channel,
            last_state: "",
            last_state_at: None,
            ptos: 0,
            acked: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// The wrapped controller.
    pub fn inner(&self) -> &dyn Controller {
        &*self.inner
    }
}

fn rtt(r: &quiche::cc::RttEstimates) -> congestion::RttEstimates {
    congestion::RttEstimates {
        latest: r.latest,
        smoothed: r.smoothed,
        min: r.min,
        rttvar: r.rttvar,
        max_ack_delay: r.max_ack_delay,
    }
}

impl quiche::cc::CongestionController for Adapter {
    fn on_packet_sent(
        &mut self,
        now: Instant,
        bytes_in_flight: usize,
        pkt_num: u64,
        bytes: usize,
        is_retransmissible: bool,
    ) {
        self.inner
            .on_packet_sent(now, bytes_in_flight, pkt_num, bytes, is_retransmissible);
    }

    fn on_congestion_event(&mut self, ev: &quiche::cc::CongestionEvent) {
        // Same layout, different crate: convert into reused buffers.
        let mut acked = std::mem::take(&mut self.acked);
        let mut lost = std::mem::take(&mut self.lost);
        acked.clear();
        acked.extend(ev.acked.iter().map(|a| congestion::AckedPacket {
            pkt_num: a.pkt_num,
            time_sent: a.time_sent,
            bytes: a.bytes,
        }));
        lost.clear();
        lost.extend(ev.lost.iter().map(|l| congestion::LostPacket {
            pkt_num: l.pkt_num,
            bytes: l.bytes,
        }));
        let event = congestion::CongestionEvent {
            now: ev.now,
            rtt_updated: ev.rtt_updated,
            prior_in_flight: ev.prior_in_flight,
            bytes_in_flight: ev.bytes_in_flight,
            acked: &acked,
            lost: &lost,
            least_unacked: ev.least_unacked,
            rtt: rtt(&ev.rtt),
        };
        if !ev.acked.is_empty() {
            self.ptos = 0;
        }
        if let Some(c) = &self.channel {
            for f in c.take_feedback() {
                self.inner.on_coding_feedback(ev.now, &f.as_feedback());
            }
        }
        self.inner.on_congestion_event(&event);
        if let Some(c) = &self.channel {
            let state = self.inner.state_str();
            let due = self
                .last_state_at
                .is_none_or(|t| ev.now.saturating_duration_since(t) >= STATE_EVERY);
            if state != self.last_state || !ev.lost.is_empty() || due {
                c.record_state(ev.now, &*self.inner, &event.rtt);
                self.last_state = state;
                self.last_state_at = Some(ev.now);
            }
        }
        self.acked = acked;
        self.lost = lost;
    }

    fn on_retransmission_timeout(&mut self, packets_retransmitted: bool) {
        // A single PTO, e.g. after a random tail loss, must not collapse
        // the window (under 20% loss that took a coded transfer from 6 s to
        // 20 s): see PERSISTENT_PTOS.
        self.ptos = self.ptos.saturating_add(1);
        if self.ptos >= PERSISTENT_PTOS {
            self.inner.on_retransmission_timeout(packets_retransmitted);
        }
    }

    fn on_packet_neutered(&mut self, pkt_num: u64) {
        self.inner.on_packet_neutered(pkt_num);
    }

    fn on_app_limited(&mut self, bytes_in_flight: usize) {
        self.inner.on_app_limited(bytes_in_flight);
    }

    fn on_connection_migration(&mut self) {
        self.inner.on_connection_migration();
    }

    fn update_mss(&mut self, new_mss: usize) {
        self.inner.update_mss(new_mss);
    }

    fn limit_cwnd(&mut self, max_cwnd: usize) {
        self.inner.limit_cwnd(max_cwnd);
    }

    fn congestion_window(&self) -> usize {
        self.inner.congestion_window()
    }

    fn can_send(&self, bytes_in_flight: usize) -> bool {
        self.inner.can_send(bytes_in_flight)
    }

    fn is_in_recovery(&self) -> bool {
        self.inner.is_in_recovery()
    }

    fn is_cwnd_limited(&self, bytes_in_flight: usize) -> bool {
        self.inner.is_cwnd_limited(bytes_in_flight)
    }

    fn pacing_rate(&self, bytes_in_flight: usize, rtt: &quiche::cc::RttEstimates) -> u64 {
        self.inner.pacing_rate(bytes_in_flight).unwrap_or_else(|| {
            // One window per smoothed RTT, with headroom.
            let srtt = rtt.smoothed.as_secs_f64().max(1e-6);
            (self.inner.congestion_window() as f64 * 1.25 / srtt) as u64
        })
    }

    fn bandwidth_estimate(&self, rtt: &quiche::cc::RttEstimates) -> u64 {
        self.inner.bandwidth_estimate().unwrap_or_else(|| {
            let srtt = rtt.smoothed.as_secs_f64().max(1e-6);
            (self.inner.congestion_window() as f64 / srtt) as u64
        })
    }

    fn ssthresh(&self) -> Option<u64> {
        self.inner.ssthresh().map(|v| v as u64)
    }

    fn state_str(&self) -> &'static str {
        self.inner.state_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_and_unknown_is_one_line() {
        for n in NAMES {
            let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
            configure(&mut c, n).unwrap();
        }
        let e = resolve("vegas2").unwrap_err();
        assert!(e.contains("vegas2") && e.contains("hybrid") && !e.contains('\n'));
        assert_eq!(resolve("hybrid").unwrap(), Choice::Ours(Algorithm::Hybrid));
        assert_eq!(
            resolve("cubic").unwrap(),
            Choice::Quiche(quiche::CongestionControlAlgorithm::CUBIC)
        );
    }

    #[test]
    fn adapter_passes_events_through() {
        let mut a = controller(&Factory::new(Algorithm::Ctcp));
        assert_eq!(a.congestion_window(), 12_000);
        send_and_ack(&mut a, 0..10, Instant::now());
        let r = rtt_40ms();
        // Slow start doubles the window over one RTT of acks.
        assert_eq!(a.congestion_window(), 24_000);
        assert!(a.pacing_rate(0, &r) > 0);
    }

    /// A controller of `f` with 10 packets of 1200 bytes and a 100 ms
    /// initial RTT.
    fn controller(f: &Factory) -> Box<dyn quiche::cc::CongestionController> {
        use quiche::cc::CongestionControllerFactory as _;
        f.new_controller(&quiche::cc::ControllerInit {
            initial_congestion_window_packets: 10,
            max_datagram_size: 1200,
            initial_rtt: std::time::Duration::from_millis(100),
        })
    }

    /// RTT estimates of a steady 40 ms path.
    fn rtt_40ms() -> quiche::cc::RttEstimates {
        let ms = std::time::Duration::from_millis;
        quiche::cc::RttEstimates {
            latest: ms(40),
            smoothed: ms(40),
            min: ms(40),
            rttvar: ms(5),
            max_ack_delay: std::time::Duration::ZERO,
        }
    }

    /// Sends packets `pkts` together at `sent` and acknowledges them 40 ms
    /// later, in one event.
    fn send_and_ack(
        a: &mut Box<dyn quiche::cc::CongestionController>,
        pkts: std::ops::Range<u64>,
        sent: Instant,
    ) {
        for pn in pkts.clone() {
            a.on_packet_sent(sent, (pn - pkts.start) as usize * 1200, pn, 1200, true);
        }
        let acked: Vec<_> = pkts
            .clone()
            .map(|pn| quiche::cc::AckedPacket {
                pkt_num: pn,
                time_sent: sent,
                bytes: 1200,
            })
            .collect();
        a.on_congestion_event(&quiche::cc::CongestionEvent {
            now: sent + std::time::Duration::from_millis(40),
            rtt_updated: true,
            prior_in_flight: acked.len() * 1200,
            bytes_in_flight: 0,
            acked: &acked,
            lost: &[],
            least_unacked: pkts.end,
            rtt: rtt_40ms(),
        });
    }

    /// The controller's state reaches qlog at every change and loss, and
    /// otherwise every `STATE_EVERY` of ACKs: a steady window's estimates
    /// show between events too.
    #[test]
    fn controller_state_is_recorded_at_least_every_100_ms() {
        let channel = Channel::new(true);
        let mut a = controller(&Factory::new(Algorithm::Hybrid).with_channel(channel.clone()));
        let t0 = Instant::now();
        // One packet acknowledged every 20 ms for a second, in slow start
        // (no state change, no loss).
        for pn in 0..50u64 {
            send_and_ack(
                &mut a,
                pn..pn + 1,
                t0 + std::time::Duration::from_millis(20 * pn),
            );
        }
        let (states, dropped) = channel.take_states();
        assert_eq!(dropped, 0);
        assert_eq!(states.len(), 10, "{states:?}");
        assert!(states.windows(2).all(|w| w[1].0 - w[0].0 >= STATE_EVERY));
    }

    /// quiche reports every PTO; only the second in a row without an
    /// acknowledgement reaches the controller (persistent congestion).
    #[test]
    fn a_single_pto_is_not_persistent_congestion() {
        let mut a = controller(&Factory::new(Algorithm::Hybrid));
        let t0 = Instant::now();
        let initial = a.congestion_window();
        a.on_retransmission_timeout(true);
        assert_eq!(a.congestion_window(), initial);
        // An ACK in between: the next PTO is again the first.
        send_and_ack(&mut a, 0..1, t0);
        a.on_retransmission_timeout(true);
        assert_eq!(a.congestion_window(), initial);
        a.on_retransmission_timeout(true);
        assert_eq!(a.congestion_window(), 2 * 1200, "minimum window");
    }
}
