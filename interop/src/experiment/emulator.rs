//! The emulated link of a run: the `linkem` command line, stats snapshots,
//! and the figures the tables take from its statistics.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::experiment::options::{LossCase, Options};
use crate::experiment::process::{check_interrupted, Proc};
use crate::relay::Stats;

/// The `linkem` command for one run: the experiment's link (rate or traces,
/// half the RTT each way, buffer, loss, seed, and run `run`'s trace offset)
/// listening on `port`, relaying client k to `upstreams[k]`.
pub(crate) fn linkem_command(
    opts: &Options,
    port: u16,
    upstreams: &[&str],
    loss: &LossCase,
    run: usize,
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
    if !opts.flow_rtt.is_empty() {
        let extra: Vec<String> = opts
            .flow_rtt
            .iter()
            .map(|r| format!("{}us", (r.saturating_sub(opts.rtt) / 2).as_micros()))
            .collect();
        c.arg("--peer-delay").arg(extra.join(","));
    }
    if opts.traced() {
        // A trace replaces the rate of its direction only.
        for (dir, trace) in [("down", &opts.trace_down), ("up", &opts.trace_up)] {
            match trace {
                Some(t) => c.arg(format!("--trace-{dir}")).arg(t),
                None => c
                    .arg(format!("--rate-{dir}"))
                    .arg(opts.rate_bps.to_string()),
            };
        }
        c.arg("--trace-offset")
            .arg(format!("{}us", opts.trace_offset(run).as_micros()));
    } else {
        c.arg("--rate").arg(opts.rate_bps.to_string());
    }
    c.arg("--delay")
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

/// Asks linkem for a stats snapshot (SIGUSR1) and reads it from
/// `path` (its `--stats` file), waiting until `deadline` (at most 10 s).
pub(crate) fn snapshot(emu: &mut Proc, path: &Path, deadline: Instant) -> Result<Stats, String> {
    let _ = std::fs::remove_file(path);
    if emu.exited() {
        return Err(format!("linkem exited{}", emu.stderr_tail()));
    }
    // SAFETY: kill(2) on our own child's pid, which has not been reaped
    // (only `exited` reaps, and it just said the child is running).
    unsafe {
        libc::kill(emu.pid() as libc::pid_t, libc::SIGUSR1);
    }
    let until = deadline.min(Instant::now() + Duration::from_secs(10));
    loop {
        check_interrupted()?;
        if let Ok(t) = std::fs::read_to_string(path) {
            return serde_json::from_str(&t).map_err(|e| format!("linkem stats: {e}"));
        }
        if Instant::now() >= until {
            return Err(format!("linkem wrote no snapshot{}", emu.stderr_tail()));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What a down trace offered until a snapshot: the capacity as a rate
/// (offered bytes over linkem's lifetime so far, Mbit/s) and the link
/// utilisation = UDP payload bytes handed to the client / offered bytes.
/// `None` without a down trace.
pub fn offered_down(s: &Stats) -> Option<(f64, f64)> {
    let offered = s.down.link.offered_bytes?;
    if offered == 0 || s.elapsed_s <= 0.0 {
        return None;
    }
    Some((
        offered as f64 * 8.0 / s.elapsed_s / 1e6,
        s.down.sent_bytes as f64 / offered as f64,
    ))
}

/// Mean and 95th percentile time packets spent at the down bottleneck
/// (waiting + own service), ms.
pub fn sojourn_down_ms(s: &Stats) -> (f64, f64) {
    let l = &s.down.link;
    (
        l.sojourn_mean_us as f64 / 1e3,
        l.sojourn_p95_us as f64 / 1e3,
    )
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

    fn opts(args: &str) -> Options {
        crate::experiment::options::parse_matrix(
            args.split_whitespace().map(String::from),
            Path::new("/b"),
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn command_and_figures() {
        let o = opts("--rtt 30ms --spin 100us");
        let loss = LossCase::parse("5%").unwrap();
        let c = linkem_command(
            &o,
            9,
            &["127.0.0.1:1"],
            &loss,
            3,
            4,
            &PathBuf::from("/s.json"),
        );
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
        // No trace: no offered capacity.
        assert_eq!(offered_down(&s), None);
    }

    #[test]
    fn command_with_traces() {
        let dir = std::env::temp_dir().join(format!("emu-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["t.down", "t.up"] {
            std::fs::write(dir.join(f), "1\n").unwrap();
        }
        let args = |o: &Options, run: usize| {
            let c = linkem_command(
                o,
                9,
                &["127.0.0.1:1"],
                &LossCase::parse("2%").unwrap(),
                run,
                7,
                Path::new("/s.json"),
            );
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let t = dir.join("t").display().to_string();
        let o = opts(&format!(
            "--trace {t} --trace-offsets 0,40s,80s --buffer 100p"
        ));
        assert_eq!(
            args(&o, 4),
            format!(
                "--listen 127.0.0.1:9 --upstream 127.0.0.1:1 --trace-down {t}.down \
                 --trace-up {t}.up --trace-offset 40000000us --delay 20000us --buffer 100p \
                 --loss bernoulli:0.02 --loss-position after --seed 7 --stats /s.json"
            )
        );
        // A down trace only: the up link keeps the rate.
        let o = opts(&format!("--trace-down {t}.down --rate 10mbit"));
        assert_eq!(
            args(&o, 0),
            format!(
                "--listen 127.0.0.1:9 --upstream 127.0.0.1:1 --trace-down {t}.down \
                 --rate-up 10000000 --trace-offset 0us --delay 20000us --buffer bdp \
                 --loss bernoulli:0.02 --loss-position after --seed 7 --stats /s.json"
            )
        );
        let _ = std::fs::remove_dir_all(&dir);

        // 1.25 MB offered in 2 s = 5 Mbit/s; 1 MB handed to the client.
        let mut s = Stats {
            elapsed_s: 2.0,
            ..Default::default()
        };
        s.down.link.offered_bytes = Some(1_250_000);
        s.down.sent_bytes = 1_000_000;
        s.down.link.sojourn_mean_us = 12_500;
        s.down.link.sojourn_p95_us = 40_000;
        assert_eq!(offered_down(&s), Some((5.0, 0.8)));
        assert_eq!(sojourn_down_ms(&s), (12.5, 40.0));
        s.down.link.offered_bytes = Some(0);
        assert_eq!(offered_down(&s), None);
    }
}
