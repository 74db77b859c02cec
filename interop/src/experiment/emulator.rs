//! The emulated link of a run: the `linkem` command line and the figures
//! the tables take from its statistics.

use std::path::Path;
use std::process::Command;

use crate::experiment::options::{LossCase, Options};
use crate::relay::Stats;

/// The `linkem` command for one run: the experiment's link (rate, half the
/// RTT each way, buffer, loss, seed) listening on `port`, relaying client k
/// to `upstreams[k]`.
pub(crate) fn linkem_command(
    opts: &Options,
    port: u16,
    upstreams: &[&str],
    loss: &LossCase,
    seed: u64,
    stats_path: &Path,
) -> Command {
    let mut c = Command::new(&opts.linkem);
    if let Some(spin) = &opts.spin {
        c.arg("--spin").arg(spin);
    }
    if opts.no_realtime {
        c.arg("--no-realtime");
    }
    c.arg("--listen").arg(format!("127.0.0.1:{port}"));
    for u in upstreams {
        c.arg("--upstream").arg(u);
    }
    if upstreams.len() > 1 {
        c.arg("--max-clients").arg(upstreams.len().to_string());
    }
    c.arg("--rate")
        .arg(opts.rate_bps.to_string())
        .arg("--delay")
        .arg(format!("{}us", (opts.rtt / 2).as_micros()))
        .arg("--buffer")
        .arg(&opts.buffer)
        .arg("--loss")
        .arg(&loss.spec)
        .arg("--loss-position")
        .arg(&opts.loss_position)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--stats")
        .arg(stats_path);
    c
}

/// Drop-tail drops of both directions.
pub fn queue_drops(s: &Stats) -> u64 {
    s.down.link.queue_drop_packets + s.up.link.queue_drop_packets
}

/// The larger direction's peak buffer occupancy, bytes.
pub fn peak_backlog_bytes(s: &Stats) -> u64 {
    s.down
        .link
        .peak_backlog_bytes
        .max(s.up.link.peak_backlog_bytes)
}

/// UDP payload bytes handed to the client (downstream), i.e. everything
/// the server got through: data, retransmissions, repairs, headers.
pub fn delivered_down_bytes(s: &Stats) -> u64 {
    s.down.sent_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn command_and_figures() {
        let o = match crate::experiment::options::parse_args(
            [
                "--rtt".to_string(),
                "30ms".into(),
                "--spin".into(),
                "100us".into(),
            ],
            Path::new("/b"),
        )
        .unwrap()
        {
            crate::experiment::options::Command_::Run(o) => *o,
            _ => unreachable!(),
        };
        let loss = LossCase::parse("5%").unwrap();
        let c = linkem_command(&o, 9, &["127.0.0.1:1"], &loss, 4, &PathBuf::from("/s.json"));
        let a: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            a.join(" "),
            "--spin 100us --listen 127.0.0.1:9 --upstream 127.0.0.1:1 --rate 20000000 \
             --delay 15000us --buffer bdp --loss bernoulli:0.05 --loss-position after \
             --seed 4 --stats /s.json"
        );
        let mut s = Stats::default();
        s.down.link.queue_drop_packets = 3;
        s.up.link.queue_drop_packets = 1;
        s.down.link.peak_backlog_bytes = 90_000;
        s.up.link.peak_backlog_bytes = 2_000;
        s.down.sent_bytes = 77;
        assert_eq!(queue_drops(&s), 4);
        assert_eq!(peak_backlog_bytes(&s), 90_000);
        assert_eq!(delivered_down_bytes(&s), 77);
    }
}
