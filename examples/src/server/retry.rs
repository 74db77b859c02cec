//! Address validation with Retry (RFC 9000 §8.1.2): the tokens `qnc-server
//! --retry` puts in Retry packets, and their check when the client's next
//! Initial brings one back.
//!
//! A token is `magic | issued (u64 s, big-endian) | odcid length | odcid |
//! tag`, where the tag is the first 16 bytes of HMAC-SHA256 under a key
//! drawn at start-up over everything before it plus the client's address.
//! So a token is only good for the address it was issued to, for
//! [`TOKEN_LIFETIME`], and it carries the original destination connection
//! ID the server must echo in its transport parameters.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use boring::hash::MessageDigest;
use boring::hmac::Hmac;

/// How long a Retry token is accepted after it was issued.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(10);
const MAGIC: &[u8; 4] = b"qnc1";
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = MAGIC.len() + 8 + 1;

/// Mints and checks Retry tokens under one secret key.
pub struct RetryTokens {
    key: [u8; 32],
}

impl RetryTokens {
    /// A fresh random key.
    pub fn new() -> Result<RetryTokens, String> {
        let mut key = [0u8; 32];
        boring::rand::rand_bytes(&mut key).map_err(|e| format!("random: {e}"))?;
        Ok(RetryTokens { key })
    }

    /// The token for a client at `addr` whose first Initial was sent to
    /// `odcid`, issued at `now`.
    pub fn mint(&self, addr: SocketAddr, odcid: &[u8], now: SystemTime) -> Vec<u8> {
        let issued = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let len = odcid.len().min(quiche::MAX_CONN_ID_LEN);
        let mut t = Vec::with_capacity(HEADER_LEN + len + TAG_LEN);
        t.extend_from_slice(MAGIC);
        t.extend_from_slice(&issued.to_be_bytes());
        t.push(len as u8);
        t.extend_from_slice(&odcid[..len]);
        let tag = self.tag(&t, addr);
        t.extend_from_slice(&tag);
        t
    }

    /// The original destination connection ID carried by `token`, if the
    /// token is ours, unaltered, issued to `addr` and not expired at `now`.
    pub fn validate(&self, token: &[u8], addr: SocketAddr, now: SystemTime) -> Option<Vec<u8>> {
        if token.len() < HEADER_LEN + TAG_LEN || &token[..MAGIC.len()] != MAGIC {
            return None;
        }
        let len = usize::from(token[HEADER_LEN - 1]);
        if len > quiche::MAX_CONN_ID_LEN || token.len() != HEADER_LEN + len + TAG_LEN {
            return None;
        }
        let (body, tag) = token.split_at(HEADER_LEN + len);
        if !boring::memcmp::eq(&self.tag(body, addr), tag) {
            return None;
        }
        let issued = u64::from_be_bytes(token[MAGIC.len()..MAGIC.len() + 8].try_into().ok()?);
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        // A token from the future (clock stepped back) is refused as well.
        if issued > now || now - issued > TOKEN_LIFETIME.as_secs() {
            return None;
        }
        Some(body[HEADER_LEN..].to_vec())
    }

    fn tag(&self, body: &[u8], addr: SocketAddr) -> [u8; TAG_LEN] {
        let mut out = [0u8; TAG_LEN];
        let ip = match addr.ip() {
            IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            IpAddr::V6(a) => a.octets(),
        };
        // HMAC over memory buffers fails only when allocation fails; a
        // random tag then makes the check fail closed.
        let mac = Hmac::init(&self.key, &MessageDigest::sha256()).and_then(|mut h| {
            h.update(body)?;
            h.update(&ip)?;
            h.update(&addr.port().to_be_bytes())?;
            h.finalize()
        });
        match mac {
            Ok(m) => out.copy_from_slice(&m[..TAG_LEN]),
            Err(_) => boring::rand::rand_bytes(&mut out).unwrap_or(()),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn token_round_trip_carries_the_odcid() {
        let t = RetryTokens::new().unwrap();
        let now = SystemTime::now();
        let a = addr("127.0.0.1:5000");
        let tok = t.mint(a, &[1, 2, 3, 4, 5, 6, 7, 8], now);
        assert_eq!(t.validate(&tok, a, now), Some(vec![1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(
            t.validate(&tok, a, now + TOKEN_LIFETIME),
            Some(vec![1, 2, 3, 4, 5, 6, 7, 8])
        );
        let v6 = addr("[::1]:443");
        let tok6 = t.mint(v6, &[], now);
        assert_eq!(t.validate(&tok6, v6, now), Some(vec![]));
    }

    #[test]
    fn wrong_address_port_key_or_age_is_refused() {
        let t = RetryTokens::new().unwrap();
        let now = SystemTime::now();
        let a = addr("127.0.0.1:5000");
        let tok = t.mint(a, &[9; 20], now);
        assert!(t.validate(&tok, addr("127.0.0.2:5000"), now).is_none());
        assert!(t.validate(&tok, addr("127.0.0.1:5001"), now).is_none());
        assert!(t
            .validate(&tok, addr("[::ffff:127.0.0.1]:5000"), now)
            .is_some());
        let expired = now + TOKEN_LIFETIME + Duration::from_secs(1);
        assert!(t.validate(&tok, a, expired).is_none());
        assert!(t.validate(&tok, a, now - Duration::from_secs(5)).is_none());
        let other = RetryTokens::new().unwrap();
        assert!(other.validate(&tok, a, now).is_none());
    }

    #[test]
    fn altered_or_malformed_tokens_are_refused_without_panicking() {
        let t = RetryTokens::new().unwrap();
        let now = SystemTime::now();
        let a = addr("10.0.0.1:1");
        let tok = t.mint(a, &[7; 8], now);
        for i in 0..tok.len() {
            let mut bad = tok.clone();
            bad[i] ^= 0x01;
            assert!(t.validate(&bad, a, now).is_none(), "byte {i}");
        }
        for n in 0..tok.len() {
            assert!(t.validate(&tok[..n], a, now).is_none());
        }
        let mut long = tok.clone();
        long.push(0);
        assert!(t.validate(&long, a, now).is_none());
        // A length byte that points past the end, or beyond the CID limit.
        let mut lie = tok.clone();
        lie[HEADER_LEN - 1] = 255;
        assert!(t.validate(&lie, a, now).is_none());
    }
}
