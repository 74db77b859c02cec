//! NAT rebinding on quiche as our server configures it.
//!
//! quiche keeps every path a peer has used and caps them at the local
//! `active_connection_id_limit` (its own suite checks that this bounds the
//! path events of a peer rotating ports), so a server follows at most
//! limit − 1 rebindings per connection. Our server raises the limit to
//! `SERVER_PATHS`; these tests pin both facts, with the client's single
//! connection ID and with a spare one (the new path then takes a new DCID).

use quic_nc_examples::transport::SERVER_PATHS;
use quic_nc_tests::config;
use quic_nc_tests::Pair;

/// Rebinds the client `n` times; returns how many rebindings the server
/// followed (received the client's stream on the new address) before the
/// first it did not.
fn rebindings(limit: u64, spare: bool, n: u16) -> u16 {
    let mut ccfg = config(false);
    let mut scfg = config(true);
    scfg.set_active_connection_id_limit(limit);
    let mut pair = Pair::new(&mut ccfg, &mut scfg, |_, _| {});
    pair.handshake();
    if spare {
        let cid = quiche::ConnectionId::from_ref(&[0xc2; 16]);
        assert_eq!(pair.client.new_scid(&cid, 0x1234, false), Ok(1));
        pair.advance();
    }
    for k in 1..=n {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{}", 2000 + k).parse().unwrap();
        pair.rebind_client(addr);
        let stream = 4 * u64::from(k);
        let msg = format!("after rebinding {k}");
        assert_eq!(
            pair.client.stream_send(stream, msg.as_bytes(), true),
            Ok(msg.len())
        );
        pair.advance();
        let mut got = Vec::new();
        if !pair.server_read(stream, &mut got) {
            return k - 1;
        }
        assert_eq!(got, msg.as_bytes(), "rebinding {k}");
        let peers: Vec<_> = pair
            .server
            .paths_iter("127.0.0.1:4321".parse().unwrap())
            .collect();
        assert!(peers.contains(&addr), "rebinding {k}: paths {peers:?}");
        assert!(pair.server.local_error().is_none());
    }
    n
}

#[test]
fn quiche_default_follows_one_rebinding() {
    for spare in [false, true] {
        assert_eq!(rebindings(2, spare, 3), 1, "spare {spare}");
    }
}

#[test]
fn our_server_follows_limit_minus_one_rebindings() {
    const {
        assert!(
            SERVER_PATHS >= 4,
            "the interop runner rebinds at 1 s and 6 s"
        )
    };
    let n = SERVER_PATHS as u16 - 1;
    for spare in [false, true] {
        assert_eq!(rebindings(SERVER_PATHS, spare, n + 1), n, "spare {spare}");
    }
}
