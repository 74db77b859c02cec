//! One cell of the matrix: a client implementation against a server
//! implementation on one test case, run through their endpoint scripts
//! across a relay shaped like the runner's simulator, and checked.

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::cases::Case;
use super::checks;
use super::endpoints::Implementation;
use crate::experiment::process::Proc;
use crate::relay::{Relay, RelayConfig, Stats};

/// How a cell ended, in the runner's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every check passed.
    Succeeded,
    /// A check failed, an endpoint failed or the cell timed out.
    Failed,
    /// An endpoint exited 127 for the test case.
    Unsupported,
    /// An implementation is not installed here (not a failure of ours).
    Missing,
}

impl Outcome {
    /// The runner's result string (`missing` is ours).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Unsupported => "unsupported",
            Outcome::Missing => "missing",
        }
    }
}

/// The result of one cell.
#[derive(Clone, Debug)]
pub struct CellResult {
    /// How it ended.
    pub outcome: Outcome,
    /// Why, in one line ("" when it succeeded).
    pub reason: String,
    /// Goodput of a successful cell in kbit/s: all files' bytes over the
    /// client's run time (process start to exit, handshakes included).
    pub kbps: Option<f64>,
    /// The relay's statistics, when the cell got that far.
    pub relay: Option<Stats>,
}

impl CellResult {
    fn end(outcome: Outcome, reason: impl Into<String>) -> CellResult {
        CellResult {
            outcome,
            reason: reason.into(),
            kbps: None,
            relay: None,
        }
    }
}

/// Where a cell runs: its log directory and the shared certificates.
pub struct Setup<'a> {
    /// The cell's directory (created): www, downloads, logs.
    pub dir: PathBuf,
    /// Directory with `cert.pem`, `priv.key`, `ca.pem`.
    pub certs: &'a Path,
    /// Seed of the relay's loss processes.
    pub seed: u64,
    /// The cross-traffic flow's implementation (cases with cross traffic).
    pub cross: Option<&'a Implementation>,
}

/// Size of the cross-traffic download: far more than it can fetch while
/// the measured transfer runs (it is stopped when that ends).
const CROSS_BYTES: u64 = 1_000_000_000;

/// Runs `case` with `client` against `server`.
pub fn run(case: &Case, client: &Implementation, server: &Implementation, s: &Setup) -> CellResult {
    for i in [client, server] {
        if let Some(m) = &i.missing {
            return CellResult::end(Outcome::Missing, format!("{}: {m}", i.name));
        }
    }
    match run_checked(case, client, server, s) {
        Ok(r) => r,
        Err(e) => CellResult::end(Outcome::Failed, e),
    }
}

fn run_checked(
    case: &Case,
    client: &Implementation,
    server: &Implementation,
    s: &Setup,
) -> Result<CellResult, String> {
    let dir = &s.dir;
    let _ = std::fs::remove_dir_all(dir);
    for d in ["www", "downloads", "server/qlog", "client/qlog"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let names = write_files(case, &dir.join("www"))?;

    let ip = if case.ipv6 { "[::1]" } else { "127.0.0.1" };
    let (mut srv, server_addr) = start_server(case, server, s, ip)?;
    if srv.exited() {
        let code = srv.terminate(Duration::ZERO).and_then(|st| st.code());
        return Ok(match code {
            Some(127) => CellResult::end(Outcome::Unsupported, "server exited 127"),
            _ => CellResult::end(
                Outcome::Failed,
                format!("server exited ({code:?}){}", srv.stderr_tail()),
            ),
        });
    }
    let cross = match (case.cross_traffic, s.cross) {
        (false, _) => None,
        (true, None) => return Err("no cross-traffic implementation given".into()),
        (true, Some(imp)) => Some(CrossTraffic::start(case, imp, s, ip)?),
    };
    let mut relay_cfg = RelayConfig::new(format!("{ip}:0").parse().expect("literal"), server_addr);
    if let Some(x) = &cross {
        // The cross flow's client comes first, so it is relayed to the
        // first upstream; the measured client to the second.
        relay_cfg.upstreams = vec![x.server_addr, server_addr];
    }
    relay_cfg.up = case.shape.link(true);
    relay_cfg.down = case.shape.link(false);
    relay_cfg.rebind = case.shape.rebind();
    relay_cfg.seed = s.seed;
    relay_cfg.max_clients = crate::relay::MAX_CLIENTS;
    let relay = Relay::spawn(relay_cfg).map_err(|e| format!("relay: {e}"))?;
    let front = relay.local_addr();
    let mut cross = match cross {
        Some(x) => Some(x.connect(&relay, ip, s)?),
        None => None,
    };
    let urls: Vec<String> = names
        .iter()
        .map(|n| format!("https://{ip}:{}/{n}", front.port()))
        .collect();

    let mut cmd = endpoint(client, "client", case.client_tc, s);
    cmd.env("REQUESTS", urls.join(" "))
        .env("CLIENT_PARAMS", &client.client_params)
        .process_group(0);
    let t0 = Instant::now();
    let mut cli = Proc::spawn("client", &mut cmd, dir)?;
    let status = cli.wait_exit(t0 + case.timeout);
    let secs = t0.elapsed().as_secs_f64();
    kill_group(cli.pid());
    if let Some(x) = cross.as_mut() {
        x.stop();
    }
    let client_lines = cli.drain_lines();
    std::thread::sleep(Duration::from_millis(100));
    let server_status = srv.terminate(Duration::from_secs(5));
    let server_lines = srv.drain_lines();
    let stats = relay.stop();
    save(dir, "client.stdout", &client_lines);
    save(dir, "server.stdout", &server_lines);
    let _ = stats.write_file(&dir.join("relay.json"));

    let status = match status {
        Ok(st) => st,
        Err(e) => return Ok(with_relay(Outcome::Failed, format!("client: {e}"), stats)),
    };
    if status.code() == Some(127) {
        return Ok(with_relay(Outcome::Unsupported, "client exited 127", stats));
    }
    if server_status.and_then(|s| s.code()) == Some(127) {
        return Ok(with_relay(Outcome::Unsupported, "server exited 127", stats));
    }
    if !status.success() {
        return Ok(with_relay(
            Outcome::Failed,
            format!("client exited with {status}{}", cli.stderr_tail()),
            stats,
        ));
    }
    if let Err(e) = checks::files(&dir.join("www"), &dir.join("downloads"), &names)
        .and_then(|_| checks::wire(case, &stats))
        .and_then(|_| checks::resumed(case, client, server, &client_lines, &server_lines))
        .and_then(|_| checks::rebinding(case, &stats, server, &dir.join("server/qlog")))
        .and_then(|_| checks::amplification(case, &stats))
    {
        return Ok(with_relay(Outcome::Failed, e, stats));
    }
    let mut r = with_relay(Outcome::Succeeded, "", stats);
    let bytes: usize = case.files.sizes().iter().sum();
    r.kbps = Some(bytes as f64 * 8.0 / secs / 1e3);
    Ok(r)
}

fn with_relay(outcome: Outcome, reason: impl Into<String>, stats: Stats) -> CellResult {
    CellResult {
        relay: Some(stats),
        ..CellResult::end(outcome, reason)
    }
}

/// A competing download on the same link (the runner's `crosstraffic`
/// uses an iperf TCP CUBIC flow; linkem relays UDP, so here it is a
/// quiche CUBIC download without coding).
struct CrossTraffic {
    server: Proc,
    server_addr: SocketAddr,
    client: Option<Proc>,
}

impl CrossTraffic {
    fn setup<'a>(s: &Setup<'a>) -> Setup<'a> {
        Setup {
            dir: s.dir.join("cross"),
            certs: s.certs,
            seed: s.seed,
            cross: None,
        }
    }

    fn start(case: &Case, imp: &Implementation, s: &Setup, ip: &str) -> Result<Self, String> {
        let cs = Self::setup(s);
        for d in ["www", "downloads", "server/qlog", "client/qlog"] {
            std::fs::create_dir_all(cs.dir.join(d)).map_err(|e| e.to_string())?;
        }
        let (mut server, server_addr) = start_server(case, imp, &cs, ip)?;
        if server.exited() {
            return Err(format!(
                "cross-traffic server exited{}",
                server.stderr_tail()
            ));
        }
        Ok(CrossTraffic {
            server,
            server_addr,
            client: None,
        })
    }

    /// Starts the cross flow's client and waits until the relay has seen
    /// it and the flow has run for 2 s.
    fn connect(
        mut self,
        relay: &crate::relay::RelayHandle,
        ip: &str,
        s: &Setup,
    ) -> Result<Self, String> {
        let cs = Self::setup(s);
        let imp = s.cross.ok_or("no cross-traffic implementation")?;
        let mut cmd = endpoint(imp, "client", "transfer", &cs);
        cmd.env(
            "REQUESTS",
            format!(
                "https://{ip}:{}/bytes/{CROSS_BYTES}",
                relay.local_addr().port()
            ),
        )
        .env("CLIENT_PARAMS", &imp.client_params)
        .process_group(0);
        self.client = Some(Proc::spawn("cross-client", &mut cmd, &cs.dir)?);
        let deadline = Instant::now() + Duration::from_secs(10);
        while relay
            .stats()
            .per_client
            .first()
            .is_none_or(|c| c.down_sent_bytes < 100_000)
        {
            if Instant::now() >= deadline {
                return Err("cross traffic did not start within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_secs(2));
        Ok(self)
    }

    fn stop(&mut self) {
        if let Some(c) = self.client.take() {
            kill_group(c.pid());
        }
        let _ = self.server.terminate(Duration::from_secs(2));
    }
}

impl Drop for CrossTraffic {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The endpoint script of `imp` with the runner's variables for `role`.
fn endpoint(imp: &Implementation, role: &str, testcase: &str, s: &Setup) -> Command {
    let dir = &s.dir;
    let mut c = Command::new("bash");
    c.arg(&imp.script)
        .envs(imp.env.iter().map(|(k, v)| (k, v)))
        .env("ROLE", role)
        .env("TESTCASE", testcase)
        .env("QNC_WWW", dir.join("www"))
        .env("QNC_DOWNLOADS", dir.join("downloads"))
        .env("QNC_CERTS", s.certs)
        .env("QNC_SETUP", dir.join("no-setup"))
        .env("QNC_WAIT", "")
        .env("QNC_SESSION", dir.join(format!("{role}/session.bin")))
        .env("QNC_RTT_CACHE", dir.join(format!("{role}/rtt-cache")))
        .env("QLOGDIR", dir.join(format!("{role}/qlog")))
        .env("SSLKEYLOGFILE", dir.join(format!("{role}/keys.log")))
        .env_remove("REQUESTS")
        .env_remove("SERVER_PARAMS")
        .env_remove("CLIENT_PARAMS");
    c
}

/// Starts the server on a free port and waits until it holds the port.
/// The port is free when chosen but another process may take it before
/// the server binds it, so a server that exits at once (other than with
/// 127, unsupported) is started again on another port, up to 3 times.
fn start_server(
    case: &Case,
    imp: &Implementation,
    s: &Setup,
    ip: &str,
) -> Result<(Proc, SocketAddr), String> {
    let mut last = None;
    for _ in 0..3 {
        let probe = UdpSocket::bind(format!("{ip}:0")).map_err(|e| format!("{ip}: {e}"))?;
        let addr = probe.local_addr().map_err(|e| e.to_string())?;
        drop(probe);
        let mut cmd = endpoint(imp, "server", case.server_tc, s);
        cmd.env("QNC_LISTEN", addr.to_string())
            .env("SERVER_PARAMS", &imp.server_params);
        let mut p = Proc::spawn("server", &mut cmd, &s.dir)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if UdpSocket::bind(addr).is_err() {
                return Ok((p, addr));
            }
            if p.exited() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "server did not bind {addr} within 20 s{}",
                    p.stderr_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Exited before binding: unsupported (127) is final.
        let code = p.terminate(Duration::ZERO).and_then(|st| st.code());
        if code == Some(127) {
            return Ok((p, addr));
        }
        last = Some((p, addr));
    }
    // Reported through its exit status by the caller.
    last.ok_or_else(|| "server did not start".into())
}

fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(std::process::Stdio::null())
        .status();
}

/// Writes the case's files into `www`; returns their names.
fn write_files(case: &Case, www: &Path) -> Result<Vec<String>, String> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    case.files
        .sizes()
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let name = format!("{}-{i}", case.abbr.to_lowercase());
            let data: Vec<u8> = (0..size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 32) as u8
                })
                .collect();
            std::fs::write(www.join(&name), data).map_err(|e| format!("{name}: {e}"))?;
            Ok(name)
        })
        .collect()
}

fn save(dir: &Path, name: &str, lines: &[String]) {
    let _ = std::fs::write(dir.join(name), lines.join("\n") + "\n");
}
