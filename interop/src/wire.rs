//! What the emulator can tell about QUIC packets without keys: the long
//! header types (Initial, 0-RTT, Handshake, Retry, Version Negotiation),
//! their versions and connection IDs, and how many short-header packets
//! passed. The interop runner checks its test cases on such facts (number
//! of handshakes = distinct source connection IDs of server Initials,
//! Retry seen, 0-RTT used); `nc-interop` reads them from the relay.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Distinct Initial source connection IDs kept per direction (a peer
/// controls them, so the set is bounded).
pub const MAX_SCIDS: usize = 4096;

/// Packet counts of one direction, as seen on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTally {
    /// Initial packets.
    pub initial: u64,
    /// 0-RTT packets.
    pub zero_rtt: u64,
    /// Bytes of 0-RTT packets (header and payload).
    pub zero_rtt_bytes: u64,
    /// Handshake packets.
    pub handshake: u64,
    /// Retry packets.
    pub retry: u64,
    /// Retry packets that carried a token.
    pub retry_with_token: u64,
    /// Version Negotiation packets.
    pub version_negotiation: u64,
    /// Short-header (1-RTT) packets.
    pub short: u64,
    /// Datagrams that did not parse as QUIC.
    pub unparsed: u64,
    /// Versions seen in long headers (other than Version Negotiation).
    pub versions: BTreeSet<u32>,
    /// Distinct source connection IDs of Initial packets, hex.
    pub initial_scids: BTreeSet<String>,
}

impl WireTally {
    /// Counts the packets of one UDP datagram (coalesced long-header
    /// packets are followed through their Length fields).
    pub fn observe(&mut self, datagram: &[u8]) {
        let mut rest = datagram;
        while !rest.is_empty() {
            match self.packet(rest) {
                Some(0) => return,
                Some(n) => rest = &rest[n..],
                None => {
                    self.unparsed += 1;
                    return;
                }
            }
        }
    }

    /// Counts one packet; returns its length when another packet may
    /// follow in the datagram, 0 when it runs to the end.
    fn packet(&mut self, p: &[u8]) -> Option<usize> {
        let b0 = *p.first()?;
        if b0 & 0x80 == 0 {
            self.short += 1;
            return Some(0);
        }
        let version = u32::from_be_bytes(p.get(1..5)?.try_into().ok()?);
        let mut r = Reader { p, at: 5 };
        let dcid_len = usize::from(r.byte()?);
        r.bytes(dcid_len)?;
        let scid_len = usize::from(r.byte()?);
        let scid = r.bytes(scid_len)?.to_vec();
        if version == 0 {
            self.version_negotiation += 1;
            return Some(0);
        }
        self.versions.insert(version);
        // QUIC v1 long-header types (RFC 9000 §17.2).
        let ty = (b0 >> 4) & 0x03;
        if ty == 3 {
            self.retry += 1;
            // Token, then the 16-byte integrity tag.
            if p.len() > r.at + 16 {
                self.retry_with_token += 1;
            }
            return Some(0);
        }
        if ty == 0 {
            let token_len = usize::try_from(r.varint()?).ok()?;
            r.bytes(token_len)?;
        }
        let len = usize::try_from(r.varint()?).ok()?;
        let end = r.at.checked_add(len)?;
        if end > p.len() {
            return None;
        }
        match ty {
            0 => {
                self.initial += 1;
                if self.initial_scids.len() < MAX_SCIDS {
                    self.initial_scids.insert(hex(&scid));
                }
            }
            1 => {
                self.zero_rtt += 1;
                self.zero_rtt_bytes += end as u64;
            }
            _ => self.handshake += 1,
        }
        Some(end)
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &WireTally) {
        self.initial += other.initial;
        self.zero_rtt += other.zero_rtt;
        self.zero_rtt_bytes += other.zero_rtt_bytes;
        self.handshake += other.handshake;
        self.retry += other.retry;
        self.retry_with_token += other.retry_with_token;
        self.version_negotiation += other.version_negotiation;
        self.short += other.short;
        self.unparsed += other.unparsed;
        self.versions.extend(other.versions.iter().copied());
        for s in &other.initial_scids {
            if self.initial_scids.len() >= MAX_SCIDS {
                break;
            }
            self.initial_scids.insert(s.clone());
        }
    }
}

struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.p.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.p.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn varint(&mut self) -> Option<u64> {
        let first = self.byte()?;
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for _ in 1..len {
            v = (v << 8) | u64::from(self.byte()?);
        }
        Some(v)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long-header packet of type `ty` with a payload of `n` bytes.
    fn long(ty: u8, scid: &[u8], token: Option<&[u8]>, n: usize) -> Vec<u8> {
        let mut p = vec![0xc0 | (ty << 4), 0, 0, 0, 1, 8];
        p.extend_from_slice(&[0xaa; 8]);
        p.push(scid.len() as u8);
        p.extend_from_slice(scid);
        if let Some(t) = token {
            p.push(t.len() as u8);
            p.extend_from_slice(t);
        }
        // Two-byte varint length.
        p.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        p.extend(std::iter::repeat_n(0x55, n));
        p
    }

    #[test]
    fn counts_coalesced_packets_and_distinct_scids() {
        let mut t = WireTally::default();
        let mut d = long(0, &[1, 2], Some(&[]), 100);
        d.extend(long(2, &[1, 2], None, 50));
        d.extend([0x40, 1, 2, 3]); // a short-header packet at the end
        t.observe(&d);
        t.observe(&long(0, &[3], Some(&[9, 9]), 10));
        t.observe(&long(1, &[3], None, 30));
        assert_eq!((t.initial, t.handshake, t.short, t.zero_rtt), (2, 1, 1, 1));
        assert_eq!(t.zero_rtt_bytes, long(1, &[3], None, 30).len() as u64);
        assert_eq!(t.initial_scids.len(), 2);
        assert_eq!(t.versions.iter().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(t.unparsed, 0);
    }

    #[test]
    fn retry_and_version_negotiation() {
        let mut t = WireTally::default();
        let mut r = vec![0xf0, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4];
        r.extend([7u8; 20]); // token
        r.extend([0u8; 16]); // integrity tag
        t.observe(&r);
        t.observe(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            (t.retry, t.retry_with_token, t.version_negotiation),
            (1, 1, 1)
        );
        assert_eq!(t.versions.len(), 1, "the Retry's v1, not the VN's 0");
    }

    #[test]
    fn garbage_never_panics() {
        let mut t = WireTally::default();
        let mut x: u32 = 1;
        for n in 0..2000 {
            let d: Vec<u8> = (0..n % 64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x | 0x80) as u8
                })
                .collect();
            t.observe(&d);
        }
        // A length that runs past the end is unparsed, not counted.
        let mut cut = long(0, &[1], Some(&[]), 100);
        cut.truncate(50);
        let before = t.initial;
        t.observe(&cut);
        assert_eq!(t.initial, before);
    }
}
