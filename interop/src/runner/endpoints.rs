//! The implementations `nc-interop` knows, each started through an
//! endpoint script with the interop runner's contract.

use std::path::{Path, PathBuf};

/// One implementation and how to run it.
#[derive(Clone, Debug)]
pub struct Implementation {
    /// Name in the matrix.
    pub name: &'static str,
    /// The endpoint script (run with bash).
    pub script: PathBuf,
    /// Extra environment (e.g. where our binaries are).
    pub env: Vec<(String, String)>,
    /// CLIENT_PARAMS.
    pub client_params: String,
    /// SERVER_PARAMS.
    pub server_params: String,
    /// Our own tools: their JSON lines say whether a session was resumed.
    pub ours: bool,
    /// Why it cannot run here, if it cannot.
    pub missing: Option<String>,
}

/// Every implementation. `repo` is the repository root, `bin` the
/// directory of `qnc-server` / `qnc-client`.
pub fn all(repo: &Path, bin: &Path) -> Vec<Implementation> {
    let ours_script = repo.join("docker/run_endpoint.sh");
    let ours_missing = ["qnc-server", "qnc-client"]
        .iter()
        .find(|b| !bin.join(b).is_file())
        .map(|b| {
            format!(
                "{} not built (cargo build --release -p quic-nc-examples)",
                bin.join(b).display()
            )
        });
    let ours = |name, nc: &str| Implementation {
        name,
        script: ours_script.clone(),
        env: vec![("QNC_BIN".into(), bin.display().to_string())],
        client_params: format!("--json --nc {nc}"),
        server_params: format!("--stats-json --nc {nc}"),
        ours: true,
        missing: ours_missing.clone(),
    };
    // Third-party peers installed by interop/peers/setup-third-party.sh
    // into <target>/third-party (bin is <target>/release or /debug).
    let peers = bin
        .parent()
        .map(|t| t.join("third-party"))
        .unwrap_or_else(|| PathBuf::from("third-party"));
    let peer = |name: &'static str, needs: &[&str]| {
        let missing = needs
            .iter()
            .map(|f| peers.join(f))
            .find(|p| !p.exists())
            .map(|p| {
                format!(
                    "{} missing (run interop/peers/setup-third-party.sh)",
                    p.display()
                )
            });
        Implementation {
            name,
            script: repo.join(format!("interop/peers/endpoints/{name}.sh")),
            env: vec![("QNC_PEERS".into(), peers.display().to_string())],
            client_params: String::new(),
            server_params: String::new(),
            ours: false,
            missing,
        }
    };
    let ngtcp2_missing = ["/usr/sbin/gtlsserver", "/usr/bin/gtlsclient"]
        .iter()
        .find(|p| !Path::new(p).is_file())
        .map(|p| format!("{p} missing (apt-get install ngtcp2-server ngtcp2-client)"));
    vec![
        ours("quic-nc", "auto"),
        ours("quic-nc-plain", "off"),
        Implementation {
            name: "ngtcp2",
            script: repo.join("interop/peers/endpoints/ngtcp2.sh"),
            env: vec![],
            client_params: String::new(),
            server_params: String::new(),
            ours: false,
            missing: ngtcp2_missing,
        },
        peer("aioquic", &["aioquic-peer"]),
        peer("quic-go", &["quic-go-peer"]),
        peer("quinn", &["quinn-peer"]),
        peer("kwik", &["kwik-peer"]),
        peer("s2n-quic", &["s2n-quic-peer"]),
        peer("curl", &["venv/bin/python"]),
    ]
}

/// The cross-traffic flow of the `crosstraffic` case: our endpoint without
/// coding and with quiche's CUBIC, standing in for the runner's iperf TCP
/// CUBIC flow (`None` if our endpoint is not in `all`).
pub fn cross_traffic(all: &[Implementation]) -> Option<Implementation> {
    let mut x = all.iter().find(|i| i.name == "quic-nc-plain")?.clone();
    x.name = "cross-traffic";
    x.client_params += " --cc cubic";
    x.server_params += " --cc cubic";
    Some(x)
}

/// The implementations called `names` (comma-separated), in that order.
pub fn select(all: &[Implementation], names: &str) -> Result<Vec<Implementation>, String> {
    names
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| {
            all.iter().find(|i| i.name == n).cloned().ok_or_else(|| {
                let known: Vec<_> = all.iter().map(|i| i.name).collect();
                format!("unknown implementation '{n}' (known: {})", known.join(", "))
            })
        })
        .collect()
}
