//! Command-line parsing for the `linkem` binary (kept in the library so it
//! can be unit-tested). A deliberately small hand-written parser: every
//! option takes one value, given as `--opt VALUE` or `--opt=VALUE`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::link::{Buffer, LinkConfig, LossPosition};
use crate::loss::LossSchedule;
use crate::relay::RelayConfig;
use crate::trace::TraceConfig;
use crate::units::{parse_buffer, parse_duration, parse_rate, BufferSpec};

/// Usage text of `linkem`.
pub const LINKEM_USAGE: &str = "\
linkem: user-space UDP link emulator (relay between clients and servers)

usage: linkem --upstream ADDR [--upstream ADDR2 ...] [options]

  --listen ADDR          address for the client (default 127.0.0.1:0)
  --upstream ADDR        server address (required); repeat it for several servers:
                         client k (in order of first appearance) goes to the k-th
                         upstream (or the last one), all sharing the same links
  --rate R               bottleneck rate both ways, e.g. 20mbit, 500kbit (default unlimited)
  --rate-up/--rate-down R      per direction (up = client->server)
  --trace FILE           capacity from a mahimahi mm-link trace both ways (one line
                         per 1500-byte delivery opportunity, ms timestamps,
                         repeated at its end) instead of --rate
  --trace-up/--trace-down FILE
  --trace-offset D       start this far into the trace(s) (default 0)
  --delay D              one-way propagation delay both ways, e.g. 20ms (default 0)
  --delay-up/--delay-down D
  --peer-delay D1,D2,...  extra one-way delay, each way, of client k's path (in order
                         of first appearance) outside the shared links: flows with
                         different RTTs behind one bottleneck (default none)
  --buffer B             drop-tail buffer: bdp (default; with a trace, at its mean
                         rate), 64p, 100kB, unlimited
  --buffer-up/--buffer-down B
  --loss L               loss model both ways (default none):
                           none | all | bernoulli:P | droprate:P,N (at most N in a row)
                           | ge:p,r[,loss_good,loss_bad] | schedule:FROM-TO=MODEL;...[;hold|;repeat]
  --loss-up/--loss-down L
  --corrupt L            corrupt delivered packets chosen by loss model L (same syntax):
                         one of the first 50 bytes gets a different random value
                         (Version Negotiation packets are spared)
  --corrupt-up/--corrupt-down L
  --drop-up/--drop-down LIST   drop packets by position, 1-based, e.g. 2-7,10
  --rebind-port FIRST,EVERY    NAT rebinding: the clients' packets leave from a new
                         port at FIRST and every EVERY after (e.g. 1s,5s)
  --rebind-addr FIRST,EVERY    the same with a new address too (127.0.0.2, ...; IPv4)
  --loss-position P      before|after the bottleneck queue (default after)
  --seed N               PRNG seed (default 1)
  --stats FILE           write counters as JSON here on exit and on SIGUSR1
  --duration D           exit after D (default: run until SIGINT/SIGTERM)
  --no-realtime          do not ask for SCHED_FIFO priority for the relay threads
                         (default: ask; it needs root and falls back silently)
  --spin D               sleep until D before each delivery, then spin
                         (default 0 with real-time priority, else 500us)
  --max-clients N        relay up to N client addresses, each with its own upstream
                         socket, all sharing the links (default 1: first client
                         only, or the number of --upstream if larger)

Prints 'listening ADDR' as the first stdout line.";

/// Parsed `linkem` options.
#[derive(Clone, Debug)]
pub struct LinkemOptions {
    /// Relay configuration (fully resolved, BDP buffers computed).
    pub relay: RelayConfig,
    /// Stats file.
    pub stats: Option<PathBuf>,
    /// Run time limit.
    pub duration: Option<Duration>,
}

/// Result of parsing: run, or print help.
#[derive(Clone, Debug)]
pub enum LinkemCommand {
    /// Run the emulator.
    Run(Box<LinkemOptions>),
    /// `--help` was given.
    Help,
}

struct Pair<T> {
    both: Option<T>,
    up: Option<T>,
    down: Option<T>,
}

impl<T> Default for Pair<T> {
    fn default() -> Self {
        Pair {
            both: None,
            up: None,
            down: None,
        }
    }
}

impl<T: Clone> Pair<T> {
    fn get(&self, up: bool) -> Option<T> {
        if up {
            self.up.clone()
        } else {
            self.down.clone()
        }
        .or_else(|| self.both.clone())
    }
}

/// Parses a list of 1-based packet positions: `2-7,10`.
fn parse_positions(v: &str) -> Result<Vec<u64>, String> {
    const MAX: u64 = 100_000;
    let num = |t: &str| -> Result<u64, String> {
        t.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=MAX).contains(n))
            .ok_or_else(|| format!("'{t}' is not a packet position in 1..={MAX}"))
    };
    let mut out = Vec::new();
    for part in v.split(',').filter(|p| !p.trim().is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a {
                    return Err(format!("range '{part}' is empty"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
        if out.len() > MAX as usize {
            return Err("too many positions".into());
        }
    }
    if out.is_empty() {
        return Err("empty list of positions".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses `linkem`'s arguments (without the program name).
pub fn parse_linkem_args<I: IntoIterator<Item = String>>(args: I) -> Result<LinkemCommand, String> {
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("literal");
    let mut upstreams: Vec<SocketAddr> = Vec::new();
    let mut peer_delay: Vec<Duration> = Vec::new();
    let mut rate: Pair<Option<u64>> = Pair::default();
    let mut delay: Pair<Duration> = Pair::default();
    let mut buffer: Pair<BufferSpec> = Pair::default();
    let mut loss: Pair<LossSchedule> = Pair::default();
    let mut corrupt: Pair<LossSchedule> = Pair::default();
    let mut drops: Pair<Vec<u64>> = Pair::default();
    let mut rebind: Option<crate::relay::Rebind> = None;
    let mut trace: Pair<PathBuf> = Pair::default();
    let mut trace_offset = Duration::ZERO;
    let mut position = LossPosition::default();
    let mut seed = 1u64;
    let mut stats = None;
    let mut duration = None;
    let mut spin = None;
    let mut max_clients: Option<usize> = None;

    let mut realtime = true;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(LinkemCommand::Help);
        }
        if arg == "--no-realtime" {
            realtime = false;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if !name.starts_with("--") {
            return Err(format!("unexpected argument '{arg}' (see --help)"));
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("option {name} needs a value"))?,
        };
        let v = value.as_str();
        let ctx = |e: String| format!("{name}: {e}");
        match name.as_str() {
            "--listen" => listen = v.parse().map_err(|_| ctx(format!("bad address '{v}'")))?,
            "--upstream" => {
                upstreams.push(v.parse().map_err(|_| ctx(format!("bad address '{v}'")))?)
            }
            "--rate" => rate.both = Some(parse_rate(v).map_err(ctx)?),
            "--rate-up" => rate.up = Some(parse_rate(v).map_err(ctx)?),
            "--rate-down" => rate.down = Some(parse_rate(v).map_err(ctx)?),
            "--delay" => delay.both = Some(parse_duration_ms(v).map_err(ctx)?),
            "--delay-up" => delay.up = Some(parse_duration_ms(v).map_err(ctx)?),
            "--delay-down" => delay.down = Some(parse_duration_ms(v).map_err(ctx)?),
            "--peer-delay" => {
                peer_delay = v
                    .split(',')
                    .map(parse_duration_ms)
                    .collect::<Result<_, _>>()
                    .map_err(ctx)?
            }
            "--buffer" => buffer.both = Some(parse_buffer(v).map_err(ctx)?),
            "--buffer-up" => buffer.up = Some(parse_buffer(v).map_err(ctx)?),
            "--buffer-down" => buffer.down = Some(parse_buffer(v).map_err(ctx)?),
            "--loss" => loss.both = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--loss-up" => loss.up = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--loss-down" => loss.down = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--corrupt" => corrupt.both = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--corrupt-up" => corrupt.up = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--corrupt-down" => corrupt.down = Some(LossSchedule::parse(v).map_err(ctx)?),
            "--drop-up" => drops.up = Some(parse_positions(v).map_err(ctx)?),
            "--drop-down" => drops.down = Some(parse_positions(v).map_err(ctx)?),
            "--rebind-port" | "--rebind-addr" => {
                let (first, every) = v
                    .split_once(',')
                    .ok_or_else(|| ctx(format!("'{v}' must look like FIRST,EVERY (e.g. 1s,5s)")))?;
                rebind = Some(crate::relay::Rebind {
                    first: parse_duration(first).map_err(ctx)?,
                    every: parse_duration(every).map_err(ctx)?,
                    addr: name == "--rebind-addr",
                })
            }
            "--trace" => trace.both = Some(PathBuf::from(v)),
            "--trace-up" => trace.up = Some(PathBuf::from(v)),
            "--trace-down" => trace.down = Some(PathBuf::from(v)),
            "--trace-offset" => trace_offset = parse_duration(v).map_err(ctx)?,
            "--loss-position" => {
                position = match v {
                    "before" => LossPosition::BeforeQueue,
                    "after" => LossPosition::AfterQueue,
                    _ => return Err(ctx(format!("'{v}' is not 'before' or 'after'"))),
                }
            }
            "--seed" => {
                seed = v
                    .parse()
                    .map_err(|_| ctx(format!("'{v}' is not an unsigned integer")))?
            }
            "--max-clients" => {
                max_clients = Some(
                    v.parse()
                        .ok()
                        .filter(|n| (1..=crate::relay::MAX_CLIENTS).contains(n))
                        .ok_or_else(|| {
                            ctx(format!("'{v}' is not in 1..={}", crate::relay::MAX_CLIENTS))
                        })?,
                )
            }
            "--spin" => spin = Some(parse_duration(v).map_err(ctx)?),
            "--stats" => stats = Some(PathBuf::from(v)),
            "--duration" => {
                let d = parse_duration(v).map_err(ctx)?;
                if d.is_zero() {
                    return Err(ctx("must be > 0".into()));
                }
                duration = Some(d)
            }
            _ => return Err(format!("unknown option '{name}' (see --help)")),
        }
    }
    if upstreams.is_empty() {
        return Err("--upstream ADDR is required".into());
    }
    if upstreams.len() > crate::relay::MAX_CLIENTS {
        return Err(format!(
            "at most {} --upstream addresses",
            crate::relay::MAX_CLIENTS
        ));
    }
    let max_clients = max_clients.unwrap_or(upstreams.len());
    let d_up = delay.get(true).unwrap_or_default();
    let d_down = delay.get(false).unwrap_or_default();
    let rtt = d_up + d_down;
    let mk = |up: bool| -> Result<LinkConfig, String> {
        let dir = if up { "up" } else { "down" };
        let tr = match trace.get(up) {
            Some(p) => Some(
                TraceConfig::load(&p, trace_offset).map_err(|e| format!("--trace-{dir}: {e}"))?,
            ),
            None => None,
        };
        let own_rate = if up { rate.up } else { rate.down };
        if tr.is_some() && own_rate.flatten().is_some() {
            return Err(format!(
                "--rate-{dir} and a trace for the {dir} link exclude each other"
            ));
        }
        let r = if tr.is_some() {
            None
        } else {
            rate.get(up).flatten()
        };
        let bdp_rate = r.or(tr.as_ref().map(|t| t.mean_rate_bps));
        let buf = match buffer.get(up).unwrap_or(BufferSpec::Bdp) {
            BufferSpec::Bdp => Buffer::bdp(bdp_rate, rtt, crate::MTU as u64),
            BufferSpec::Packets(p) => Buffer::Packets(p),
            BufferSpec::Bytes(b) => Buffer::Bytes(b),
            BufferSpec::Unlimited => Buffer::Unlimited,
        };
        let c = LinkConfig {
            rate_bps: r,
            delay: if up { d_up } else { d_down },
            buffer: buf,
            loss: loss.get(up).unwrap_or_else(LossSchedule::none),
            loss_position: position,
            trace: tr,
            corrupt: corrupt.get(up).unwrap_or_else(LossSchedule::none),
            drop_list: if up {
                drops.up.clone()
            } else {
                drops.down.clone()
            }
            .unwrap_or_default(),
        };
        c.validate()
            .map_err(|e| format!("{} link: {e}", if up { "up" } else { "down" }))?;
        Ok(c)
    };
    let mut relay = RelayConfig::new(listen, upstreams[0]);
    relay.upstreams = upstreams;
    relay.up = mk(true)?;
    relay.down = mk(false)?;
    relay.seed = seed;
    relay.spin_window = spin;
    relay.max_clients = max_clients;
    relay.realtime = realtime;
    relay.rebind = rebind;
    relay.peer_delay = peer_delay;
    Ok(LinkemCommand::Run(Box::new(LinkemOptions {
        relay,
        stats,
        duration,
    })))
}

/// Durations for `--delay`: a bare number means milliseconds.
fn parse_duration_ms(s: &str) -> Result<Duration, String> {
    crate::units::parse_duration_with(s, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::LossModel;

    fn parse(s: &str) -> Result<LinkemOptions, String> {
        match parse_linkem_args(s.split_whitespace().map(String::from))? {
            LinkemCommand::Run(o) => Ok(*o),
            LinkemCommand::Help => Err("help".into()),
        }
    }

    #[test]
    fn corruption_drop_lists_and_rebinding() {
        let o = parse(
            "--upstream 127.0.0.1:1 --corrupt droprate:30%,3 --drop-up 2-4,7 --rebind-addr 1s,5s",
        )
        .unwrap();
        let c = LossModel::DropRate { p: 0.3, burst: 3 };
        assert_eq!(o.relay.up.corrupt, LossSchedule::constant(c));
        assert_eq!(o.relay.down.corrupt, LossSchedule::constant(c));
        assert_eq!(o.relay.up.drop_list, [2, 3, 4, 7]);
        assert!(o.relay.down.drop_list.is_empty());
        let r = o.relay.rebind.unwrap();
        assert!(o.relay.peer_delay.is_empty());
        let o = parse("--upstream 127.0.0.1:1 --peer-delay 0,20ms,5").unwrap();
        assert_eq!(
            o.relay.peer_delay,
            [0, 20, 5].map(Duration::from_millis).to_vec()
        );
        assert!(parse("--upstream 127.0.0.1:1 --peer-delay 5,x").is_err());
        assert_eq!(r.first, Duration::from_secs(1));
        assert_eq!(r.every, Duration::from_secs(5));
        assert!(r.addr);
        let o = parse("--upstream 127.0.0.1:1 --rebind-port 500ms,2s").unwrap();
        assert!(!o.relay.rebind.unwrap().addr);
        for bad in [
            "--upstream 127.0.0.1:1 --drop-up 0",
            "--upstream 127.0.0.1:1 --drop-up 5-2",
            "--upstream 127.0.0.1:1 --drop-up x",
            "--upstream 127.0.0.1:1 --rebind-port 1s",
            "--upstream 127.0.0.1:1 --corrupt droprate:0.3",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_and_bdp() {
        let o = parse("--upstream 127.0.0.1:4433 --rate 20mbit --delay 20ms --loss bernoulli:0.05")
            .unwrap();
        assert_eq!(o.relay.up.rate_bps, Some(20_000_000));
        assert_eq!(o.relay.down.delay, Duration::from_millis(20));
        // 20 Mbit/s × 40 ms = 100 000 bytes
        assert_eq!(o.relay.up.buffer, Buffer::Bytes(100_000));
        assert_eq!(o.relay.down.buffer, Buffer::Bytes(100_000));
        assert_eq!(
            o.relay.up.loss,
            LossSchedule::constant(LossModel::Bernoulli { p: 0.05 })
        );
        assert_eq!(o.relay.down.loss, o.relay.up.loss);
        assert_eq!(o.relay.up.loss_position, LossPosition::AfterQueue);
    }

    #[test]
    fn asymmetric() {
        let o = parse(
            "--upstream=127.0.0.1:1 --rate 10mbit --rate-down 50mbit --delay-up 10 --delay-down 30ms \
             --loss-down ge:0.01,0.3 --buffer-up 64p --loss-position before --seed 9 --duration 2s",
        )
        .unwrap();
        assert_eq!(o.relay.up.rate_bps, Some(10_000_000));
        assert_eq!(o.relay.down.rate_bps, Some(50_000_000));
        assert_eq!(o.relay.up.delay, Duration::from_millis(10));
        assert_eq!(o.relay.up.buffer, Buffer::Packets(64));
        assert_eq!(o.relay.down.buffer, Buffer::Bytes(250_000));
        assert!(o.relay.up.loss.is_lossless());
        assert!(!o.relay.down.loss.is_lossless());
        assert_eq!(o.relay.seed, 9);
        assert_eq!(o.duration, Some(Duration::from_secs(2)));
        assert_eq!(o.relay.up.loss_position, LossPosition::BeforeQueue);
    }

    #[test]
    fn several_upstreams() {
        let o = parse("--upstream 127.0.0.1:1 --upstream 127.0.0.1:2").unwrap();
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        assert_eq!(o.relay.upstreams, [a, b]);
        // max-clients defaults to the number of upstreams.
        assert_eq!(o.relay.max_clients, 2);
        assert_eq!(o.relay.upstream_of(0), Some(a));
        assert_eq!(o.relay.upstream_of(1), Some(b));
        assert_eq!(o.relay.upstream_of(5), Some(b));
        let o = parse("--upstream 127.0.0.1:1 --upstream 127.0.0.1:2 --max-clients 3").unwrap();
        assert_eq!(o.relay.max_clients, 3);
        let o = parse("--upstream 127.0.0.1:1").unwrap();
        assert_eq!(o.relay.upstreams, [a]);
        assert_eq!(o.relay.max_clients, 1);
    }

    #[test]
    fn traces() {
        let dir = std::env::temp_dir().join(format!("linkem-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.down");
        // 4 opportunities per 2 ms = 24 Mbit/s.
        std::fs::write(&good, "1\n1\n2\n2\n").unwrap();
        let bad = dir.join("bad.up");
        std::fs::write(&bad, "1\n2\nfast\n").unwrap();
        let g = good.display();
        let o = parse(&format!(
            "--upstream 127.0.0.1:1 --rate 10mbit --trace-down {g} --delay 20ms --trace-offset 1s"
        ))
        .unwrap();
        let t = o.relay.down.trace.as_ref().unwrap();
        assert_eq!((t.opportunities, t.mean_rate_bps), (4, 24_000_000));
        assert_eq!(t.offset, Duration::from_secs(1));
        assert_eq!(o.relay.down.rate_bps, None);
        // bdp at the trace's mean rate: 24 Mbit/s × 40 ms.
        assert_eq!(o.relay.down.buffer, Buffer::Bytes(120_000));
        assert_eq!(o.relay.up.rate_bps, Some(10_000_000));
        assert!(o.relay.up.trace.is_none());
        let o = parse(&format!("--upstream 127.0.0.1:1 --trace {g} --buffer 100p")).unwrap();
        assert!(o.relay.up.trace.is_some() && o.relay.down.trace.is_some());
        let e = parse(&format!(
            "--upstream 127.0.0.1:1 --trace-up {}",
            bad.display()
        ))
        .unwrap_err();
        assert!(e.contains("bad.up:3:") && e.contains("'fast'"), "{e}");
        let e = parse(&format!(
            "--upstream 127.0.0.1:1 --rate-down 5mbit --trace-down {g}"
        ))
        .unwrap_err();
        assert!(e.contains("exclude"), "{e}");
        assert!(parse("--upstream 127.0.0.1:1 --trace /nonexistent/trace").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn errors() {
        for bad in [
            "--rate 20mbit",
            "--upstream nowhere",
            "--upstream 127.0.0.1:1 --rate -5mbit",
            "--upstream 127.0.0.1:1 --rate NaN",
            "--upstream 127.0.0.1:1 --loss bernoulli:1.5",
            "--upstream 127.0.0.1:1 --rate 10mbit --buffer 1000",
            "--upstream 127.0.0.1:1 --rate 10mbit --buffer 0p",
            "--upstream 127.0.0.1:1 --delay 5parsecs",
            "--upstream 127.0.0.1:1 --loss-position middle",
            "--upstream 127.0.0.1:1 --bogus 1",
            "--upstream 127.0.0.1:1 --seed",
            "--upstream 127.0.0.1:1 stray",
            "--upstream 127.0.0.1:1 --max-clients 0",
            "--upstream 127.0.0.1:1 --max-clients 65",
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
