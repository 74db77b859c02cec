//! The quic-interop-runner's QUIC test cases as `nc-interop` runs them.
//!
//! Links follow the runner's simulator scenarios (default: 10 Mbit/s,
//! 15 ms one way, a 25-packet queue): `drop-rate` and `corrupt-rate` with
//! runs of at most 3, `rebind` (port or address) at 1 s and every 5 s,
//! `droplist` and `blackhole`. What is not run is in [`NOT_RUN`].

use std::time::Duration;

use crate::link::{Buffer, LinkConfig};
use crate::loss::{LossModel, LossSchedule, LossSegment, ScheduleEnd};
use crate::relay::Rebind;

/// The files a case serves: one size per file, or `count` files of `size`.
#[derive(Clone, Copy, Debug)]
pub enum Files {
    /// One file per size.
    Sizes(&'static [usize]),
    /// `count` files of `size` bytes.
    Many {
        /// Number of files.
        count: usize,
        /// Bytes per file.
        size: usize,
    },
}

impl Files {
    /// The sizes of all files, in request order.
    pub fn sizes(&self) -> Vec<usize> {
        match *self {
            Files::Sizes(s) => s.to_vec(),
            Files::Many { count, size } => vec![size; count],
        }
    }
}

/// The runner's link shapes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// `simple-p2p` with this one-way delay.
    Simple {
        /// One-way delay.
        delay_ms: u64,
    },
    /// `drop-rate`: random loss in both directions, at most 3 in a row.
    Loss {
        /// Loss probability per packet, each direction.
        p: f64,
    },
    /// `corrupt-rate`: random corruption of one of the first 50 bytes, both
    /// directions, at most 3 in a row.
    Corrupt {
        /// Corruption probability per packet, each direction.
        p: f64,
    },
    /// `rebind`: the client's NAT binding changes at 1 s and every 5 s.
    Rebind {
        /// The address changes too, not only the port.
        addr: bool,
    },
    /// `droplist`: client packets 2 to 7 are lost (amplificationlimit).
    Droplist,
    /// `blackhole`: every packet lost for 2 s after every 5 s.
    Blackhole,
}

impl Shape {
    /// One direction of the link (`up`: client to server).
    pub fn link(&self, up: bool) -> LinkConfig {
        let burst = |p| LossSchedule::constant(LossModel::DropRate { p, burst: 3 });
        let mut c = LinkConfig {
            rate_bps: Some(10_000_000),
            delay: Duration::from_millis(15),
            buffer: Buffer::Packets(25),
            ..LinkConfig::default()
        };
        match *self {
            Shape::Simple { delay_ms } => c.delay = Duration::from_millis(delay_ms),
            Shape::Loss { p } => c.loss = burst(p),
            Shape::Corrupt { p } => c.corrupt = burst(p),
            Shape::Blackhole => c.loss = blackhole(),
            Shape::Droplist if up => c.drop_list = (2..=7).collect(),
            Shape::Droplist | Shape::Rebind { .. } => {}
        }
        c
    }

    /// The relay's NAT rebinding for this shape.
    pub fn rebind(&self) -> Option<Rebind> {
        match *self {
            Shape::Rebind { addr } => Some(Rebind {
                first: Duration::from_secs(1),
                every: Duration::from_secs(5),
                addr,
            }),
            _ => None,
        }
    }
}

fn blackhole() -> LossSchedule {
    let s = Duration::from_secs;
    LossSchedule {
        segments: vec![
            LossSegment {
                from: s(0),
                to: Some(s(5)),
                model: LossModel::None,
            },
            LossSegment {
                from: s(5),
                to: Some(s(7)),
                model: LossModel::Bernoulli { p: 1.0 },
            },
        ],
        end: ScheduleEnd::Repeat,
    }
}

/// What the wire and the endpoints must show.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expect {
    /// Distinct server Initial source connection IDs (= handshakes).
    pub handshakes: usize,
    /// `Some(true)`: a Retry with a token must be seen; `Some(false)`: no
    /// Retry may be seen (the runner checks this for handshake only);
    /// `None`: not checked.
    pub retry: Option<bool>,
    /// 0-RTT packets must be seen from the client.
    pub zero_rtt: bool,
    /// The second connection resumes a session (checked where one end is
    /// ours, from its JSON lines).
    pub resumed: bool,
    /// The server followed the client's NAT rebinding: it sent on more than
    /// one binding (and, where the server is ours, its qlog shows a
    /// PATH_CHALLENGE).
    pub rebinding: bool,
    /// The server kept to 3× what it received until the client's address
    /// was validated, and sent a large (certificate-chain) first flight.
    pub amplification: bool,
}

/// One test case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The runner's name.
    pub name: &'static str,
    /// The runner's abbreviation.
    pub abbr: &'static str,
    /// TESTCASE given to the client.
    pub client_tc: &'static str,
    /// TESTCASE given to the server.
    pub server_tc: &'static str,
    /// The files requested.
    pub files: Files,
    /// The link.
    pub shape: Shape,
    /// The server listens on IPv6 loopback.
    pub ipv6: bool,
    /// Longest the client may take.
    pub timeout: Duration,
    /// The checks beyond the files.
    pub expect: Expect,
    /// A measurement (goodput in kbit/s over repetitions) rather than a test.
    pub measurement: bool,
    /// Repeated `--runs` times with different loss seeds, and its goodput
    /// reported (measurements and the lossy transfers, where coding
    /// matters).
    pub timed: bool,
    /// Certificates in the server's chain (1: leaf only).
    pub chain: usize,
    /// A competing download shares the link (started 2 s before the
    /// measured client, stopped when it ends).
    pub cross_traffic: bool,
    /// One line for the report.
    pub desc: &'static str,
}

const ONE: Expect = Expect {
    handshakes: 1,
    retry: None,
    zero_rtt: false,
    resumed: false,
    rebinding: false,
    amplification: false,
};

const fn case(name: &'static str, abbr: &'static str, tc: &'static str, files: Files) -> Case {
    Case {
        name,
        abbr,
        client_tc: tc,
        server_tc: tc,
        files,
        shape: Shape::Simple { delay_ms: 15 },
        ipv6: false,
        timeout: Duration::from_secs(60),
        expect: ONE,
        measurement: false,
        timed: false,
        chain: 1,
        cross_traffic: false,
        desc: "",
    }
}

/// Every case `nc-interop` runs, in the runner's order.
pub fn all() -> Vec<Case> {
    const MB: usize = 1_000_000;
    vec![
        Case {
            desc: "handshake, 1 KB file",
            expect: Expect {
                retry: Some(false),
                ..ONE
            },
            ..case("handshake", "H", "handshake", Files::Sizes(&[1_000]))
        },
        Case {
            desc: "2, 3 and 5 MB on one connection",
            ..case(
                "transfer",
                "DC",
                "transfer",
                Files::Sizes(&[2 * MB, 3 * MB, 5 * MB]),
            )
        },
        Case {
            desc: "handshake over a 1.5 s RTT",
            shape: Shape::Simple { delay_ms: 750 },
            ..case("longrtt", "LR", "handshake", Files::Sizes(&[1_000]))
        },
        Case {
            desc: "1999 files of 32 B on one connection",
            ..case(
                "multiplexing",
                "M",
                "transfer",
                Files::Many {
                    count: 1999,
                    size: 32,
                },
            )
        },
        Case {
            desc: "server sends Retry, client returns the token",
            expect: Expect {
                retry: Some(true),
                ..ONE
            },
            ..case("retry", "S", "retry", Files::Sizes(&[10_000]))
        },
        Case {
            desc: "second connection resumes the TLS session",
            expect: Expect {
                handshakes: 2,
                resumed: true,
                ..ONE
            },
            ..case(
                "resumption",
                "R",
                "resumption",
                Files::Sizes(&[5_000, 10_000]),
            )
        },
        Case {
            desc: "second connection sends its requests in 0-RTT",
            expect: Expect {
                handshakes: 2,
                zero_rtt: true,
                resumed: true,
                ..ONE
            },
            ..case(
                "zerortt",
                "Z",
                "zerortt",
                Files::Many {
                    count: 40,
                    size: 32,
                },
            )
        },
        Case {
            desc: "HTTP/3, three files in parallel",
            ..case(
                "http3",
                "3",
                "http3",
                Files::Sizes(&[5_000, 10_000, 500_000]),
            )
        },
        Case {
            desc: "10 MB with 2 s outages every 5 s",
            shape: Shape::Blackhole,
            timed: true,
            ..case("blackhole", "B", "transfer", Files::Sizes(&[10 * MB]))
        },
        Case {
            desc: "client updates its keys (not verified on the wire: needs keys)",
            server_tc: "transfer",
            ..case("keyupdate", "U", "keyupdate", Files::Sizes(&[3 * MB]))
        },
        Case {
            desc: "50 connections of 1 KB at 30% loss each way",
            shape: Shape::Loss { p: 0.30 },
            timeout: Duration::from_secs(300),
            expect: Expect {
                handshakes: 50,
                ..ONE
            },
            ..case(
                "handshakeloss",
                "L1",
                "multiconnect",
                Files::Many {
                    count: 50,
                    size: 1_000,
                },
            )
        },
        Case {
            desc: "2 MB at 2% loss each way",
            shape: Shape::Loss { p: 0.02 },
            timed: true,
            ..case("transferloss", "L2", "transfer", Files::Sizes(&[2 * MB]))
        },
        Case {
            desc: "50 connections of 1 KB, 30% of packets corrupted each way",
            shape: Shape::Corrupt { p: 0.30 },
            timeout: Duration::from_secs(300),
            expect: Expect {
                handshakes: 50,
                ..ONE
            },
            ..case(
                "handshakecorruption",
                "C1",
                "multiconnect",
                Files::Many {
                    count: 50,
                    size: 1_000,
                },
            )
        },
        Case {
            desc: "2 MB, 2% of packets corrupted each way",
            shape: Shape::Corrupt { p: 0.02 },
            ..case(
                "transfercorruption",
                "C2",
                "transfer",
                Files::Sizes(&[2 * MB]),
            )
        },
        Case {
            desc: "transfer over IPv6",
            ipv6: true,
            ..case("ipv6", "6", "transfer", Files::Sizes(&[5_000, 10_000]))
        },
        Case {
            desc: "10 MB while the client's port changes at 1 s and every 5 s",
            shape: Shape::Rebind { addr: false },
            expect: Expect {
                rebinding: true,
                ..ONE
            },
            ..case("rebind-port", "BP", "transfer", Files::Sizes(&[10 * MB]))
        },
        Case {
            desc: "10 MB while the client's address and port change",
            shape: Shape::Rebind { addr: true },
            expect: Expect {
                rebinding: true,
                ..ONE
            },
            ..case("rebind-addr", "BA", "transfer", Files::Sizes(&[10 * MB]))
        },
        Case {
            desc: "9-certificate chain, client packets 2-7 lost: server keeps to 3x",
            shape: Shape::Droplist,
            chain: 9,
            expect: Expect {
                amplification: true,
                ..ONE
            },
            ..case(
                "amplificationlimit",
                "A",
                "transfer",
                Files::Sizes(&[5_000]),
            )
        },
        Case {
            desc: "goodput of a 10 MiB download, kbit/s",
            measurement: true,
            timed: true,
            ..case(
                "goodput",
                "G",
                "transfer",
                Files::Sizes(&[10 * 1024 * 1024]),
            )
        },
        Case {
            desc: "goodput of a 25 MB download beside a CUBIC download, kbit/s",
            measurement: true,
            timed: true,
            cross_traffic: true,
            timeout: Duration::from_secs(180),
            // The cross flow's handshake is on the wire too.
            expect: Expect {
                handshakes: 2,
                ..ONE
            },
            ..case("crosstraffic", "C", "transfer", Files::Sizes(&[25 * MB]))
        },
    ]
}

/// Runner cases `nc-interop` does not run, and why.
pub const NOT_RUN: &[(&str, &str)] = &[
    (
        "chacha20",
        "needs a TLS 1.3 cipher choice, which BoringSSL (quiche) lacks",
    ),
    ("v2", "quiche supports QUIC v1 only"),
    ("ecn", "quiche neither marks nor reports ECN"),
    (
        "connectionmigration",
        "quiche does not advertise a preferred address",
    ),
];

/// The case called `name`.
pub fn find(name: &str) -> Option<Case> {
    all().into_iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_abbreviations_are_unique_and_links_valid() {
        let cases = all();
        let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
        names.extend(NOT_RUN.iter().map(|n| n.0));
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        let mut abbrs: Vec<_> = cases.iter().map(|c| c.abbr).collect();
        abbrs.sort();
        abbrs.dedup();
        assert_eq!(abbrs.len(), cases.len());
        for c in &cases {
            c.shape.link(true).validate().unwrap();
            c.shape.link(false).validate().unwrap();
            assert!(c.expect.handshakes >= 1);
        }
        assert_eq!(find("multiplexing").unwrap().files.sizes().len(), 1999);
        assert!(find("chacha20").is_none());
        let timed: Vec<_> = cases.iter().filter(|c| c.timed).map(|c| c.name).collect();
        assert_eq!(
            timed,
            ["blackhole", "transferloss", "goodput", "crosstraffic"]
        );
        let a = find("amplificationlimit").unwrap();
        assert_eq!(a.shape.link(true).drop_list, [2, 3, 4, 5, 6, 7]);
        assert!(a.shape.link(false).drop_list.is_empty());
        assert_eq!(a.chain, 9);
        let ba = find("rebind-addr").unwrap();
        assert!(ba.shape.rebind().is_some_and(|r| r.addr));
        assert!(find("rebind-port")
            .unwrap()
            .shape
            .rebind()
            .is_some_and(|r| !r.addr));
        assert!(find("transfer").unwrap().shape.rebind().is_none());
        let c1 = find("handshakecorruption").unwrap().shape.link(true);
        assert!(c1.loss.is_lossless() && !c1.corrupt.is_lossless());
    }

    #[test]
    fn blackhole_is_down_two_seconds_in_seven() {
        let l = Shape::Blackhole.link(false);
        let at = |s: f64| l.loss.segment_at(Duration::from_secs_f64(s));
        assert_eq!(at(1.0), Some(0));
        assert_eq!(at(5.5), Some(1));
        assert_eq!(at(7.5), Some(0));
        assert_eq!(at(12.5), Some(1));
    }
}
