//! One cell of the matrix: a client implementation against a server
//! implementation on one test case, run through their endpoint scripts
//! across a relay shaped like the runner's simulator, and checked.

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cases::Case;
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
}

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
    let mut relay_cfg = RelayConfig::new(format!("{ip}:0").parse().expect("literal"), server_addr);
    relay_cfg.up = case.shape.link();
    relay_cfg.down = case.shape.link();
    relay_cfg.seed = s.seed;
    relay_cfg.max_clients = crate::relay::MAX_CLIENTS;
    let relay = Relay::spawn(relay_cfg).map_err(|e| format!("relay: {e}"))?;
    let front = relay.local_addr();
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
    if let Err(e) = check_files(&dir.join("www"), &dir.join("downloads"), &names)
        .and_then(|_| check_wire(case, &stats))
        .and_then(|_| check_resumed(case, client, server, &client_lines, &server_lines))
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

/// `downloads` holds exactly the files `names` of `www`, byte for byte.
pub fn check_files(www: &Path, downloads: &Path, names: &[String]) -> Result<(), String> {
    let mut got: Vec<String> = std::fs::read_dir(downloads)
        .map_err(|e| format!("{}: {e}", downloads.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    got.sort();
    let mut want = names.to_vec();
    want.sort();
    if got != want {
        let missing = want.iter().filter(|n| !got.contains(n)).count();
        let extra = got.iter().filter(|n| !want.contains(n)).count();
        return Err(format!("downloads: {missing} missing, {extra} unexpected"));
    }
    for n in names {
        let a = std::fs::read(www.join(n)).map_err(|e| e.to_string())?;
        let b = std::fs::read(downloads.join(n)).map_err(|e| e.to_string())?;
        if a != b {
            return Err(format!(
                "{n}: {} bytes downloaded, {} served, or content differs",
                b.len(),
                a.len()
            ));
        }
    }
    Ok(())
}

/// Handshakes, Retry and 0-RTT as the relay saw them.
pub fn check_wire(case: &Case, stats: &Stats) -> Result<(), String> {
    let down = &stats.down.wire;
    let up = &stats.up.wire;
    let hs = down.initial_scids.len();
    if hs != case.expect.handshakes {
        return Err(format!(
            "{hs} handshakes on the wire, expected {}",
            case.expect.handshakes
        ));
    }
    match (case.expect.retry, down.retry, down.retry_with_token) {
        (Some(true), 0, _) => return Err("no Retry on the wire".into()),
        (Some(true), _, 0) => return Err("Retry without a token".into()),
        (Some(false), n, _) if n > 0 => return Err(format!("{n} unexpected Retry packets")),
        _ => (),
    }
    if case.expect.zero_rtt && up.zero_rtt == 0 {
        return Err("no 0-RTT packets from the client".into());
    }
    let versions: Vec<u32> = down.versions.iter().copied().collect();
    if versions != [1] {
        return Err(format!(
            "server versions on the wire: {versions:x?}, expected [1]"
        ));
    }
    Ok(())
}

/// Session resumption, from the JSON lines of whichever end is ours.
fn check_resumed(
    case: &Case,
    client: &Implementation,
    server: &Implementation,
    client_lines: &[String],
    server_lines: &[String],
) -> Result<(), String> {
    if !case.expect.resumed {
        return Ok(());
    }
    let resumed = |lines: &[String]| {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["resumed"] == true)
            .count()
    };
    for (ours, lines, who) in [
        (client.ours, client_lines, "client"),
        (server.ours, server_lines, "server"),
    ] {
        if ours && resumed(lines) != 1 {
            return Err(format!(
                "{who}: {} resumed connections, expected 1",
                resumed(lines)
            ));
        }
    }
    Ok(())
}

fn save(dir: &Path, name: &str, lines: &[String]) {
    let _ = std::fs::write(dir.join(name), lines.join("\n") + "\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::cases::find;

    fn stats(handshakes: usize, retry: u64, zero_rtt: u64) -> Stats {
        let mut s = Stats::default();
        for i in 0..handshakes {
            s.down.wire.initial_scids.insert(format!("{i:02x}"));
        }
        s.down.wire.versions.insert(1);
        s.down.wire.retry = retry;
        s.down.wire.retry_with_token = retry;
        s.up.wire.zero_rtt = zero_rtt;
        s
    }

    #[test]
    fn wire_checks_fail_when_the_wire_disagrees() {
        let h = find("handshake").unwrap();
        assert!(check_wire(&h, &stats(1, 0, 0)).is_ok());
        assert!(check_wire(&h, &stats(2, 0, 0))
            .unwrap_err()
            .contains("2 handshakes"));
        assert!(check_wire(&h, &stats(1, 1, 0))
            .unwrap_err()
            .contains("Retry"));
        // As in the runner, only the handshake case forbids a Retry.
        assert!(check_wire(&find("transfer").unwrap(), &stats(1, 1, 0)).is_ok());
        let mut v2 = stats(1, 0, 0);
        v2.down.wire.versions.insert(0x6b33_43cf);
        assert!(check_wire(&h, &v2).is_err());

        let r = find("retry").unwrap();
        assert!(check_wire(&r, &stats(1, 1, 0)).is_ok());
        assert!(check_wire(&r, &stats(1, 0, 0)).is_err());
        let mut tokenless = stats(1, 1, 0);
        tokenless.down.wire.retry_with_token = 0;
        assert!(check_wire(&r, &tokenless).unwrap_err().contains("token"));

        let z = find("zerortt").unwrap();
        assert!(check_wire(&z, &stats(2, 0, 5)).is_ok());
        assert!(check_wire(&z, &stats(2, 0, 0)).is_err());
        assert!(check_wire(&z, &stats(1, 0, 5)).is_err());
    }

    #[test]
    fn file_check_compares_names_and_bytes() {
        let d = std::env::temp_dir().join(format!("nc-interop-files-{}", std::process::id()));
        let (www, dl) = (d.join("www"), d.join("dl"));
        std::fs::create_dir_all(&www).unwrap();
        std::fs::create_dir_all(&dl).unwrap();
        let names = vec!["a".to_string(), "b".to_string()];
        for n in &names {
            std::fs::write(www.join(n), b"hello").unwrap();
            std::fs::write(dl.join(n), b"hello").unwrap();
        }
        assert!(check_files(&www, &dl, &names).is_ok());
        std::fs::write(dl.join("b"), b"hellO").unwrap();
        assert!(check_files(&www, &dl, &names)
            .unwrap_err()
            .contains("differs"));
        std::fs::write(dl.join("b"), b"hello").unwrap();
        std::fs::write(dl.join("c"), b"x").unwrap();
        assert!(check_files(&www, &dl, &names)
            .unwrap_err()
            .contains("1 unexpected"));
        std::fs::remove_file(dl.join("c")).unwrap();
        std::fs::remove_file(dl.join("a")).unwrap();
        assert!(check_files(&www, &dl, &names)
            .unwrap_err()
            .contains("1 missing"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
