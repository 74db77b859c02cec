//! Spare connection IDs for the peer.
//!
//! quiche issues only the connection ID of the handshake unless the
//! application mints more. A peer that sees our packets arrive from a new
//! address (a NAT rebinding) may refuse to answer on the old ID (RFC 9000
//! §9.5 lets it continue, but quic-go, for one, waits for a fresh ID), so
//! both tools keep the peer supplied up to its `active_connection_id_limit`.

/// Once the handshake is done, issues new source connection IDs (random,
/// the length of the current one, with random reset tokens) until quiche
/// has as many as the peer accepts. Returns the new IDs, for a server to
/// route them to this connection.
pub fn top_up(conn: &mut quiche::Connection) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let len = conn.source_id().len();
    if !conn.is_established() || len == 0 {
        return out;
    }
    while conn.scids_left() > 0 {
        let mut id = vec![0u8; len];
        let mut token = [0u8; 16];
        if boring::rand::rand_bytes(&mut id).is_err()
            || boring::rand::rand_bytes(&mut token).is_err()
        {
            break;
        }
        let cid = quiche::ConnectionId::from_ref(&id);
        if conn
            .new_scid(&cid, u128::from_be_bytes(token), false)
            .is_err()
        {
            break;
        }
        out.push(id);
    }
    out
}
