//! Foreign QUIC stacks as competing flows: `--compete hybrid,ngtcp2:cubic`.
//!
//! A flow spec is `[STACK:]CC`. Without a prefix (or with `quiche:`) the
//! flow is ours: `qnc-server`/`qnc-client` with `--cc CC`. With a prefix,
//! that stack's server and client replace ours for that flow; linkem and the
//! bottleneck accounting stay the same (linkem counts bytes per client, so
//! the share does not depend on the stack).
//!
//! * `ngtcp2:CC` (CC = cubic, reno, bbr, bbr2): ngtcp2's GnuTLS example
//!   programs from Debian's `ngtcp2-server`/`ngtcp2-client` packages
//!   (`gtlsserver`, `gtlsclient`; installed with apt-get when missing and
//!   running as root). The server serves a file of `--size` bytes from a
//!   document root; it prints no `listening` line, so the runner waits until
//!   its port shows up in `/proc/net/udp`. The client prints nothing
//!   useful: success is exit status 0 plus a downloaded file of exactly
//!   `--size` bytes; the completion time is the wall time from spawning the
//!   client to noticing its exit (polled every 2-10 ms; it includes process
//!   start-up and the handshake). ngtcp2's client does not verify the
//!   server's certificate.
//! * `quic-go:cubic`: our small quic-go program (`interop/peers/quic-go`,
//!   built by `make peers` into `target/peers/quic-go-peer`, or by the
//!   runner with `go build` when `go` is on PATH). Its server serves
//!   `/bytes/N` like `qnc-server` and prints `listening ADDR`; its client
//!   verifies against our CA and prints the same JSON line as `qnc-client`
//!   (`bytes`, `duration_s`, `status`). quic-go has only CUBIC.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::experiment::{free_port, qnc_server_command, start_listening, Options, Proc};

/// The implementation behind one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// Ours: `qnc-server`/`qnc-client` (patched quiche).
    Quiche,
    /// ngtcp2 0.12 example programs (`gtlsserver`/`gtlsclient`).
    Ngtcp2,
    /// `quic-go-peer` (quic-go's http3 package).
    QuicGo,
}

/// `gtlsserver` (Debian package `ngtcp2-server`).
pub const NGTCP2_SERVER: &str = "/usr/sbin/gtlsserver";
/// `gtlsclient` (Debian package `ngtcp2-client`).
pub const NGTCP2_CLIENT: &str = "/usr/bin/gtlsclient";
/// The file the ngtcp2 server serves from its document root.
const NGTCP2_FILE: &str = "download.bin";

impl Stack {
    /// The prefix used in flow specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Quiche => "quiche",
            Stack::Ngtcp2 => "ngtcp2",
            Stack::QuicGo => "quic-go",
        }
    }
}

/// One flow of `--compete`: a stack and its congestion controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Who runs the flow.
    pub stack: Stack,
    /// Congestion controller name, as the stack spells it.
    pub cc: String,
}

impl FlowSpec {
    /// Parses `CC`, `quiche:CC`, `ngtcp2:CC` or `quic-go:cubic`.
    pub fn parse(s: &str) -> Result<FlowSpec, String> {
        let (stack, cc) = match s.split_once(':') {
            None => (Stack::Quiche, s),
            Some(("quiche", cc)) => (Stack::Quiche, cc),
            Some(("ngtcp2", cc)) => (Stack::Ngtcp2, cc),
            Some(("quic-go", cc)) => (Stack::QuicGo, cc),
            Some((p, _)) => {
                return Err(format!(
                    "'{s}': unknown stack '{p}' (quiche, ngtcp2, quic-go)"
                ))
            }
        };
        let allowed: &[&str] = match stack {
            Stack::Quiche => &[],
            Stack::Ngtcp2 => &["cubic", "reno", "bbr", "bbr2"],
            Stack::QuicGo => &["cubic"],
        };
        if cc.is_empty() {
            return Err(format!("'{s}': no congestion controller"));
        }
        if !allowed.is_empty() && !allowed.contains(&cc) {
            return Err(format!(
                "'{s}': {} controllers are {}",
                stack.name(),
                allowed.join(", ")
            ));
        }
        Ok(FlowSpec {
            stack,
            cc: cc.to_string(),
        })
    }

    /// Name of the flow's `role` ("server"/"client") program in logs and
    /// errors: `qnc-server`, `ngtcp2-client`, ...
    pub fn program(&self, role: &str) -> String {
        match self.stack {
            Stack::Quiche => format!("qnc-{role}"),
            s => format!("{}-{role}", s.name()),
        }
    }

    /// `CC` for our own flows, `STACK:CC` for foreign ones.
    pub fn label(&self) -> String {
        match self.stack {
            Stack::Quiche => self.cc.clone(),
            s => format!("{}:{}", s.name(), self.cc),
        }
    }

    /// Checks (and if possible provides) what this flow needs before the
    /// first run: ngtcp2's packages, the quic-go peer binary.
    pub fn prepare(&self, opts: &Options) -> Result<(), String> {
        match self.stack {
            Stack::Quiche => Ok(()),
            Stack::Ngtcp2 => ensure_ngtcp2(),
            Stack::QuicGo => ensure_quic_go(&opts.quic_go_peer),
        }
    }

    /// Starts this flow's server for `--size` bytes (writing the file into
    /// `root` where the stack serves files); returns it and its address.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_server(
        &self,
        opts: &Options,
        label: &str,
        root: &Path,
        dir: &Path,
        certs: &Path,
        deadline: Instant,
        idle_ms: u64,
    ) -> Result<(Proc, String), String> {
        match self.stack {
            Stack::Quiche | Stack::QuicGo => start_listening(label, dir, deadline, |port| {
                self.server_command(opts, port, root, certs, idle_ms)
            }),
            Stack::Ngtcp2 => {
                write_pattern_file(&root.join(NGTCP2_FILE), opts.size)?;
                let mut last = String::new();
                for _ in 0..3 {
                    let port = free_port()?;
                    let mut cmd = self.server_command(opts, port, root, certs, idle_ms);
                    let mut p = Proc::spawn(label, &mut cmd, dir)?;
                    let until = deadline.min(Instant::now() + Duration::from_secs(20));
                    loop {
                        if p.exited() {
                            last = format!("{label} exited{}", p.stderr_tail());
                            break;
                        }
                        if udp_port_bound(port) {
                            return Ok((p, format!("127.0.0.1:{port}")));
                        }
                        if Instant::now() >= until {
                            return Err(format!("{label} did not bind port {port}"));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                Err(last)
            }
        }
    }

    /// The server command listening on 127.0.0.1:`port`; `root` is the
    /// document root (qnc-server, ngtcp2).
    pub fn server_command(
        &self,
        opts: &Options,
        port: u16,
        root: &Path,
        certs: &Path,
        idle_ms: u64,
    ) -> Command {
        match self.stack {
            Stack::Quiche => qnc_server_command(opts, &self.cc, port, root, certs, idle_ms),
            Stack::Ngtcp2 => {
                let mut c = Command::new(NGTCP2_SERVER);
                c.arg("-q")
                    .arg(format!("--htdocs={}", root.display()))
                    .arg(format!("--cc={}", self.cc))
                    .arg(format!("--timeout={idle_ms}ms"))
                    .arg("127.0.0.1")
                    .arg(port.to_string())
                    .arg(certs.join("key.pem"))
                    .arg(certs.join("cert.pem"));
                c
            }
            Stack::QuicGo => {
                let mut c = Command::new(&opts.quic_go_peer);
                c.arg("server")
                    .arg("-addr")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("-cert")
                    .arg(certs.join("cert.pem"))
                    .arg("-key")
                    .arg(certs.join("key.pem"))
                    .arg("-idle-timeout")
                    .arg(format!("{idle_ms}ms"));
                c
            }
        }
    }

    /// The client command downloading `--size` bytes through linkem at
    /// `emu_addr` (`127.0.0.1:PORT`); an ngtcp2 client saves the body into
    /// `out_dir`.
    pub fn client_command(
        &self,
        opts: &Options,
        emu_addr: &str,
        out_dir: &Path,
        certs: &Path,
        timeout_s: u64,
    ) -> Command {
        let bytes_url = format!("https://{emu_addr}/bytes/{}", opts.size);
        match self.stack {
            Stack::Quiche => {
                let mut c = Command::new(opts.bin_dir.join("qnc-client"));
                c.arg("--ca")
                    .arg(certs.join("ca.pem"))
                    .arg("--cc")
                    .arg(&self.cc)
                    .arg("--json")
                    .arg("--timeout")
                    .arg(timeout_s.to_string())
                    .arg(bytes_url);
                c
            }
            Stack::Ngtcp2 => {
                let (host, port) = emu_addr.rsplit_once(':').unwrap_or((emu_addr, "443"));
                let mut c = Command::new(NGTCP2_CLIENT);
                c.arg("-q")
                    .arg("--exit-on-all-streams-close")
                    .arg("--disable-early-data")
                    .arg(format!("--download={}", out_dir.display()))
                    .arg(format!("--cc={}", self.cc))
                    .arg(host)
                    .arg(port)
                    .arg(format!("https://{emu_addr}/{NGTCP2_FILE}"));
                c
            }
            Stack::QuicGo => {
                let mut c = Command::new(&opts.quic_go_peer);
                c.arg("client")
                    .arg("-url")
                    .arg(bytes_url)
                    .arg("-ca")
                    .arg(certs.join("ca.pem"))
                    .arg("-timeout")
                    .arg(format!("{timeout_s}s"));
                c
            }
        }
    }

    /// Whether the client prints a JSON line `{"role":"client",...}`
    /// (else: exit status and the size of the downloaded file count).
    pub fn client_prints_json(&self) -> bool {
        self.stack != Stack::Ngtcp2
    }

    /// Where a client that saves the body puts it, given its `out_dir`.
    pub fn downloaded_file(&self, out_dir: &Path) -> Option<PathBuf> {
        (self.stack == Stack::Ngtcp2).then(|| out_dir.join(NGTCP2_FILE))
    }

    /// Whether the server prints qnc-server's `{"role":"server",...}` line.
    pub fn server_prints_json(&self) -> bool {
        self.stack == Stack::Quiche
    }
}

/// Writes `n` bytes of the `/bytes/<n>` pattern (byte i = 'a' + i % 26).
fn write_pattern_file(path: &Path, n: u64) -> Result<(), String> {
    use std::io::Write;
    let chunk: Vec<u8> = (0..(65_536 + 26)).map(|i| b'a' + (i % 26) as u8).collect();
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut off = 0u64;
    while off < n {
        let len = (n - off).min(65_536) as usize;
        let s = (off % 26) as usize;
        w.write_all(&chunk[s..s + len])
            .map_err(|e| format!("{}: {e}", path.display()))?;
        off += len as u64;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether some socket is bound to UDP 127.0.0.1:`port` (per /proc/net/udp).
fn udp_port_bound(port: u16) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/net/udp")
        .map(|t| {
            t.lines()
                .skip(1)
                .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
        })
        .unwrap_or(false)
}

/// Installs ngtcp2's example programs with apt-get if they are missing
/// (only as root); otherwise a clear error.
fn ensure_ngtcp2() -> Result<(), String> {
    let have = || Path::new(NGTCP2_SERVER).exists() && Path::new(NGTCP2_CLIENT).exists();
    if have() {
        return Ok(());
    }
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "ngtcp2 flows need {NGTCP2_SERVER} and {NGTCP2_CLIENT}: \
             apt-get install ngtcp2-server ngtcp2-client (as root)"
        ));
    }
    eprintln!("nc-experiment: installing ngtcp2-server ngtcp2-client with apt-get");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "ngtcp2-client", "ngtcp2-server"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get")
            .arg("update")
            .stdin(Stdio::null())
            .status();
        install();
    }
    if have() {
        Ok(())
    } else {
        Err("apt-get install ngtcp2-client ngtcp2-server failed".into())
    }
}

/// Where `make peers` puts the quic-go peer: `<target>/peers/quic-go-peer`
/// for binaries in `<target>/release` (or `<target>/debug`).
pub fn default_quic_go_peer(bin_dir: &Path) -> PathBuf {
    bin_dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("peers")
        .join("quic-go-peer")
}

/// Makes sure the quic-go peer exists: builds it with `go build` from
/// `interop/peers/quic-go` if it is missing and `go` is available.
fn ensure_quic_go(bin: &Path) -> Result<(), String> {
    if bin.exists() {
        return Ok(());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/quic-go");
    let hint = format!(
        "{} is missing: run `make peers` (needs Go) or pass --quic-go-peer",
        bin.display()
    );
    if !src.join("main.go").exists() {
        return Err(hint);
    }
    eprintln!("nc-experiment: building {} with go build", bin.display());
    match Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(bin)
        .arg(".")
        .current_dir(&src)
        .stdin(Stdio::null())
        .status()
    {
        Ok(s) if s.success() && bin.exists() => Ok(()),
        Ok(s) => Err(format!("{hint} (go build: {s})")),
        Err(e) => Err(format!("{hint} (go: {e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{parse_args, Command_};

    fn opts() -> Options {
        let args = ["--compete", "hybrid,ngtcp2:cubic", "--size", "1MB"];
        match parse_args(args.map(String::from), Path::new("/t/release")).unwrap() {
            Command_::Run(o) => *o,
            Command_::Help => unreachable!(),
        }
    }

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn parse_specs() {
        let f = FlowSpec::parse("hybrid").unwrap();
        assert_eq!(
            (f.stack, f.cc.as_str(), f.label()),
            (Stack::Quiche, "hybrid", "hybrid".into())
        );
        assert_eq!(FlowSpec::parse("quiche:cubic").unwrap().label(), "cubic");
        assert_eq!(f.program("client"), "qnc-client");
        let n = FlowSpec::parse("ngtcp2:bbr").unwrap();
        assert_eq!((n.stack, n.label()), (Stack::Ngtcp2, "ngtcp2:bbr".into()));
        assert_eq!(n.program("server"), "ngtcp2-server");
        assert_eq!(
            FlowSpec::parse("quic-go:cubic").unwrap().stack,
            Stack::QuicGo
        );
        for bad in [
            "",
            "ngtcp2:",
            "ngtcp2:vegas",
            "quic-go:reno",
            "msquic:cubic",
            "quiche:",
        ] {
            assert!(FlowSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn commands() {
        let o = opts();
        assert_eq!(o.quic_go_peer, PathBuf::from("/t/peers/quic-go-peer"));
        let certs = Path::new("/c");
        let n = FlowSpec::parse("ngtcp2:reno").unwrap();
        let s = n.server_command(&o, 4433, Path::new("/r"), certs, 5000);
        assert_eq!(s.get_program(), NGTCP2_SERVER);
        assert_eq!(
            args(&s),
            [
                "-q",
                "--htdocs=/r",
                "--cc=reno",
                "--timeout=5000ms",
                "127.0.0.1",
                "4433",
                "/c/key.pem",
                "/c/cert.pem"
            ]
        );
        let c = n.client_command(&o, "127.0.0.1:9000", Path::new("/d"), certs, 30);
        assert_eq!(
            args(&c)[2..],
            [
                "--disable-early-data",
                "--download=/d",
                "--cc=reno",
                "127.0.0.1",
                "9000",
                "https://127.0.0.1:9000/download.bin"
            ]
        );
        assert_eq!(
            n.downloaded_file(Path::new("/d")),
            Some(PathBuf::from("/d/download.bin"))
        );
        assert!(!n.client_prints_json() && !n.server_prints_json());

        let g = FlowSpec::parse("quic-go:cubic").unwrap();
        let c = g.client_command(&o, "127.0.0.1:9000", Path::new("/d"), certs, 30);
        assert_eq!(c.get_program(), "/t/peers/quic-go-peer");
        assert_eq!(
            args(&c),
            [
                "client",
                "-url",
                "https://127.0.0.1:9000/bytes/1000000",
                "-ca",
                "/c/ca.pem",
                "-timeout",
                "30s"
            ]
        );
        assert_eq!(
            args(&g.server_command(&o, 1, Path::new("/r"), certs, 5000))[..3],
            ["server", "-addr", "127.0.0.1:1"]
        );
        assert!(g.client_prints_json() && g.downloaded_file(Path::new("/d")).is_none());

        let q = FlowSpec::parse("hybrid").unwrap();
        let c = q.client_command(&o, "127.0.0.1:9000", Path::new("/d"), certs, 30);
        assert_eq!(c.get_program(), "/t/release/qnc-client");
        let s = q.server_command(&o, 1, Path::new("/r"), certs, 5000);
        assert_eq!(s.get_program(), "/t/release/qnc-server");
        assert!(args(&s).contains(&"--stats-json".to_string()));
        assert_eq!(args(&c)[2..4], ["--cc", "hybrid"]);
    }

    #[test]
    fn pattern_file() {
        let p = std::env::temp_dir().join(format!("peer-pattern-{}", std::process::id()));
        write_pattern_file(&p, 70_000).unwrap();
        let b = std::fs::read(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        assert_eq!(b.len(), 70_000);
        assert!(b
            .iter()
            .enumerate()
            .all(|(i, &x)| x == b'a' + (i % 26) as u8));
    }
}
