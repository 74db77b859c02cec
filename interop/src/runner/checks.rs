//! What the runner checks after a cell: the downloaded files, and on the
//! wire (the relay's tally and server view) handshakes, Retry, 0-RTT, the
//! server following a NAT rebinding and the anti-amplification limit; and
//! from our endpoints' JSON lines and qlogs, session resumption and path
//! validation.

use std::path::Path;

use serde_json::Value;

use super::cases::Case;
use super::endpoints::Implementation;
use crate::relay::{ServerSeen, Stats};

/// `downloads` holds exactly the files `names` of `www`, byte for byte.
pub fn files(www: &Path, downloads: &Path, names: &[String]) -> Result<(), String> {
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
pub fn wire(case: &Case, stats: &Stats) -> Result<(), String> {
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
pub fn resumed(
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

/// The server followed the client's NAT rebinding: it answered on more
/// than one binding and, where the server is ours, its qlog shows a
/// PATH_CHALLENGE sent (the runner reads the frame from the decrypted
/// trace).
pub fn rebinding(
    case: &Case,
    stats: &Stats,
    server: &Implementation,
    server_qlog: &Path,
) -> Result<(), String> {
    if !case.expect.rebinding {
        return Ok(());
    }
    let Some(c) = stats.per_client.first() else {
        return Err("no client on the wire".into());
    };
    if c.rebinds == 0 {
        return Err("the transfer ended before the first rebinding".into());
    }
    if c.answered_bindings < 2 {
        return Err(format!(
            "the server answered on {} binding(s) after {} rebinding(s)",
            c.answered_bindings, c.rebinds
        ));
    }
    if server.ours {
        let n = count_in_dir(server_qlog, "\"path_challenge\"");
        if n == 0 {
            return Err("no PATH_CHALLENGE in the server's qlog".into());
        }
    }
    Ok(())
}

/// Occurrences of `needle` in the files of `dir` (not recursive).
fn count_in_dir(dir: &Path, needle: &str) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .map(|t| t.matches(needle).count())
        .sum()
}

/// Bytes of server datagrams holding Handshake packets that the runner
/// wants to see at least (its check reads the CRYPTO offsets; without
/// the keys we count whole datagrams).
pub const MIN_HANDSHAKE_BYTES: usize = 7_500;

/// The anti-amplification limit, as the runner checks it at the server:
/// until a client datagram with a Handshake packet arrives, each client
/// Initial datagram allows 3× its size (4× with the runner's tolerance);
/// a server datagram larger than the remaining tolerance fails.
pub fn amplification(case: &Case, stats: &Stats) -> Result<(), String> {
    if !case.expect.amplification {
        return Ok(());
    }
    amplification_of(&stats.server_view)
}

fn amplification_of(view: &[ServerSeen]) -> Result<(), String> {
    let hs_bytes: usize = view
        .iter()
        .filter(|v| !v.from_client && v.handshake)
        .map(|v| v.len)
        .sum();
    if hs_bytes < MIN_HANDSHAKE_BYTES {
        return Err(format!(
            "server sent {hs_bytes} bytes of Handshake datagrams, fewer than \
             {MIN_HANDSHAKE_BYTES}: not using the certificate chain?"
        ));
    }
    let (mut received, mut sent) = (0usize, 0usize);
    let mut tolerance = 0usize;
    for v in view {
        if v.from_client {
            if v.handshake {
                return Ok(());
            }
            if v.initial {
                received += v.len;
                tolerance += 4 * v.len;
            }
        } else {
            sent += v.len;
            if v.len >= tolerance {
                return Err(format!(
                    "server sent {sent} bytes after receiving {received} before the client's \
                     address was validated (more than 4x)"
                ));
            }
            tolerance -= v.len;
        }
    }
    Err("the client never sent a Handshake packet in the recorded datagrams".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::ClientStats;
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
        assert!(wire(&h, &stats(1, 0, 0)).is_ok());
        assert!(wire(&h, &stats(2, 0, 0))
            .unwrap_err()
            .contains("2 handshakes"));
        assert!(wire(&h, &stats(1, 1, 0)).unwrap_err().contains("Retry"));
        // As in the runner, only the handshake case forbids a Retry.
        assert!(wire(&find("transfer").unwrap(), &stats(1, 1, 0)).is_ok());
        let mut v2 = stats(1, 0, 0);
        v2.down.wire.versions.insert(0x6b33_43cf);
        assert!(wire(&h, &v2).is_err());

        let r = find("retry").unwrap();
        assert!(wire(&r, &stats(1, 1, 0)).is_ok());
        assert!(wire(&r, &stats(1, 0, 0)).is_err());
        let mut tokenless = stats(1, 1, 0);
        tokenless.down.wire.retry_with_token = 0;
        assert!(wire(&r, &tokenless).unwrap_err().contains("token"));

        let z = find("zerortt").unwrap();
        assert!(wire(&z, &stats(2, 0, 5)).is_ok());
        assert!(wire(&z, &stats(2, 0, 0)).is_err());
        assert!(wire(&z, &stats(1, 0, 5)).is_err());
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
        assert!(files(&www, &dl, &names).is_ok());
        std::fs::write(dl.join("b"), b"hellO").unwrap();
        assert!(files(&www, &dl, &names).unwrap_err().contains("differs"));
        std::fs::write(dl.join("b"), b"hello").unwrap();
        std::fs::write(dl.join("c"), b"x").unwrap();
        assert!(files(&www, &dl, &names)
            .unwrap_err()
            .contains("1 unexpected"));
        std::fs::remove_file(dl.join("c")).unwrap();
        std::fs::remove_file(dl.join("a")).unwrap();
        assert!(files(&www, &dl, &names).unwrap_err().contains("1 missing"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn seen(from_client: bool, len: usize, initial: bool, handshake: bool) -> ServerSeen {
        ServerSeen {
            from_client,
            len,
            initial,
            handshake,
        }
    }

    #[test]
    fn amplification_follows_the_runners_accounting() {
        let a = find("amplificationlimit").unwrap();
        // One 1200-byte Initial allows 3600 (4800 with tolerance); the
        // server sends 3 x 1200, then waits; the client's next Initial
        // allows more; the client's Handshake validates.
        let mut ok = vec![seen(true, 1200, true, false)];
        ok.extend((0..3).map(|_| seen(false, 1200, true, true)));
        ok.push(seen(true, 1200, true, false));
        ok.extend((0..4).map(|_| seen(false, 1200, false, true)));
        ok.push(seen(true, 100, false, true));
        ok.extend((0..5).map(|_| seen(false, 1200, false, true)));
        let mut st = Stats {
            server_view: ok.clone(),
            ..Default::default()
        };
        assert!(amplification(&a, &st).is_ok());
        // Not checked in other cases.
        assert!(amplification(&find("transfer").unwrap(), &Stats::default()).is_ok());
        // Five datagrams on one Initial: 6000 > 4800.
        let mut over = vec![seen(true, 1200, true, false)];
        over.extend((0..5).map(|_| seen(false, 1200, true, true)));
        over.push(seen(true, 100, false, true));
        over.extend((0..3).map(|_| seen(false, 1200, false, true)));
        st.server_view = over;
        assert!(amplification(&a, &st).unwrap_err().contains("4x"));
        // A small first flight: no chain.
        st.server_view = ok[..5].to_vec();
        assert!(amplification(&a, &st).unwrap_err().contains("chain"));
        // Never validated.
        let mut never = ok.clone();
        never.retain(|v| !(v.from_client && v.handshake));
        st.server_view = never;
        assert!(amplification(&a, &st).is_err());
    }

    #[test]
    fn rebinding_needs_answers_on_two_bindings_and_our_path_challenge() {
        let bp = find("rebind-port").unwrap();
        let imp = |ours| Implementation {
            name: "x",
            script: "x.sh".into(),
            env: Vec::new(),
            client_params: String::new(),
            server_params: String::new(),
            ours,
            missing: None,
        };
        let dir = std::env::temp_dir().join(format!("nc-checks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut st = Stats::default();
        st.per_client.push(ClientStats {
            rebinds: 2,
            answered_bindings: 3,
            ..Default::default()
        });
        assert!(rebinding(&bp, &st, &imp(false), &dir).is_ok());
        assert!(rebinding(&bp, &st, &imp(true), &dir)
            .unwrap_err()
            .contains("PATH_CHALLENGE"));
        std::fs::write(dir.join("s.sqlog"), r#"{"frame_type":"path_challenge"}"#).unwrap();
        assert!(rebinding(&bp, &st, &imp(true), &dir).is_ok());
        st.per_client[0].answered_bindings = 1;
        assert!(rebinding(&bp, &st, &imp(false), &dir).is_err());
        st.per_client[0].rebinds = 0;
        assert!(rebinding(&bp, &st, &imp(false), &dir)
            .unwrap_err()
            .contains("before the first"));
        assert!(rebinding(
            &find("transfer").unwrap(),
            &Stats::default(),
            &imp(true),
            &dir
        )
        .is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
