//! Reads the qlog files our tools write (JSON-SEQ `.sqlog`, one per
//! connection) and turns them into summaries, time series and plots.
//!
//! * [`Trace::parse`] reads a file into events;
//! * [`Series::from_trace`] replays `quic:recovery_metrics_updated` (which
//!   carries only the fields that changed) into full time series;
//! * [`Summary::from_trace`] condenses a trace into one line of figures;
//! * [`plot::svg`] draws congestion window, bytes in flight and RTTs;
//! * [`qvis::convert`] rewrites qlogs into the draft-02 JSON that the qvis
//!   visualiser reads;
//! * [`timeline::Timeline`] streams a file into time bins (goodput, window,
//!   RTT, pacing, seen/decoded, repairs, recoveries) in bounded memory;
//! * [`report`] writes the HTML report of a scenario's results (plots,
//!   model overlays, tables, per-connection qlog plots);
//! * [`model`] holds the analytical models of the papers we build on
//!   (throughput, efficiency, decoding delay, queue sizes).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod events;
pub mod model;
pub mod plot;
pub mod qvis;
pub mod records;
pub mod report;
pub mod timeline;

use serde_json::Value;

/// Opens a qlog file for reading, decompressing it if its name ends in
/// `.gz` (the scenario runner compresses the qlogs it keeps).
pub fn open(path: &std::path::Path) -> std::io::Result<Box<dyn std::io::BufRead>> {
    let f = std::fs::File::open(path)?;
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
            f,
        )))
    } else {
        Box::new(std::io::BufReader::new(f))
    })
}

/// One qlog event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Milliseconds since the trace's reference time.
    pub time_ms: f64,
    /// Event name, e.g. `quic:packet_sent`.
    pub name: String,
    /// Event data.
    pub data: Value,
}

/// A parsed qlog trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// `server` or `client` (from the header's vantage point), if known.
    pub vantage_point: Option<String>,
    /// Header title, if any.
    pub title: Option<String>,
    /// Events in file order.
    pub events: Vec<Event>,
}

impl Trace {
    /// Parses a JSON-SEQ qlog (records separated by RS, 0x1E, and/or
    /// newlines). Records that are not JSON objects are errors; a truncated
    /// last record (a connection still writing) is ignored.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut trace = Trace::default();
        let records: Vec<&str> = text
            .split(['\u{1e}', '\n'])
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect();
        let n = records.len();
        for (i, rec) in records.into_iter().enumerate() {
            let v: Value = match serde_json::from_str(rec) {
                Ok(v) => v,
                Err(_) if i + 1 == n => break,
                Err(e) => return Err(format!("record {}: {e}", i + 1)),
            };
            if let Some(t) = v.get("trace") {
                trace.vantage_point = t
                    .pointer("/vantage_point/type")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                trace.title = v.get("title").and_then(Value::as_str).map(str::to_string);
                continue;
            }
            let (Some(time), Some(name)) = (
                v.get("time").and_then(Value::as_f64),
                v.get("name").and_then(Value::as_str),
            ) else {
                return Err(format!("record {}: not a qlog event", i + 1));
            };
            trace.events.push(Event {
                time_ms: time,
                name: name.to_string(),
                data: v.get("data").cloned().unwrap_or(Value::Null),
            });
        }
        Ok(trace)
    }

    /// Reads and parses a file (gzip-compressed if it ends in `.gz`).
    pub fn read(path: &std::path::Path) -> Result<Trace, String> {
        let mut text = String::new();
        open(path)
            .and_then(|mut r| std::io::Read::read_to_string(&mut r, &mut text))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Trace::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Events called `name`.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(move |e| e.name == name)
    }
}

/// Recovery state over time, one point per metrics update.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Event times in milliseconds.
    pub time_ms: Vec<f64>,
    /// Congestion window in bytes.
    pub cwnd: Vec<f64>,
    /// Bytes in flight.
    pub bytes_in_flight: Vec<f64>,
    /// Smoothed RTT in milliseconds.
    pub smoothed_rtt_ms: Vec<f64>,
    /// Minimum RTT in milliseconds.
    pub min_rtt_ms: Vec<f64>,
    /// Latest RTT in milliseconds.
    pub latest_rtt_ms: Vec<f64>,
    /// Pacing rate in bytes per second.
    pub pacing_rate: Vec<f64>,
    /// Packets declared lost so far.
    pub lost_packets: Vec<f64>,
}

/// Field names of `quic:recovery_metrics_updated` that [`Series`] tracks.
const METRICS: [&str; 7] = [
    "congestion_window",
    "bytes_in_flight",
    "smoothed_rtt",
    "min_rtt",
    "latest_rtt",
    "pacing_rate",
    "cf_lost_packets",
];

impl Series {
    /// Replays the metrics updates of `trace` (each carries only what
    /// changed) into full series.
    pub fn from_trace(trace: &Trace) -> Series {
        let mut s = Series::default();
        let mut state = [f64::NAN; METRICS.len()];
        for e in trace.named("quic:recovery_metrics_updated") {
            for (i, key) in METRICS.iter().enumerate() {
                let v = match e.data.get(*key) {
                    Some(Value::Object(o)) => o.get("total").and_then(Value::as_f64),
                    Some(v) => v.as_f64(),
                    None => None,
                };
                if let Some(v) = v {
                    state[i] = v;
                }
            }
            s.time_ms.push(e.time_ms);
            s.cwnd.push(state[0]);
            s.bytes_in_flight.push(state[1]);
            s.smoothed_rtt_ms.push(state[2]);
            s.min_rtt_ms.push(state[3]);
            s.latest_rtt_ms.push(state[4]);
            s.pacing_rate.push(state[5]);
            s.lost_packets.push(state[6]);
        }
        s
    }

    /// Writes the series as CSV (header line, then one row per point).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "time_ms,cwnd,bytes_in_flight,smoothed_rtt_ms,min_rtt_ms,latest_rtt_ms,pacing_rate,lost_packets\n",
        );
        for i in 0..self.time_ms.len() {
            let row = [
                self.time_ms[i],
                self.cwnd[i],
                self.bytes_in_flight[i],
                self.smoothed_rtt_ms[i],
                self.min_rtt_ms[i],
                self.latest_rtt_ms[i],
                self.pacing_rate[i],
                self.lost_packets[i],
            ];
            let cells: Vec<String> = row
                .iter()
                .map(|v| {
                    if v.is_nan() {
                        String::new()
                    } else {
                        format!("{v}")
                    }
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

/// The figures of one trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// `server` or `client`.
    pub role: String,
    /// Time of the last event, in seconds.
    pub duration_s: f64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Bytes sent (UDP payload lengths).
    pub bytes_sent: u64,
    /// Packets received.
    pub packets_received: u64,
    /// Packets declared lost (quiche's running total).
    pub packets_lost: u64,
    /// Largest congestion window, bytes.
    pub max_cwnd: u64,
    /// Smallest RTT, milliseconds.
    pub min_rtt_ms: f64,
    /// Mean smoothed RTT over metrics updates, milliseconds.
    pub mean_srtt_ms: f64,
    /// Congestion-state transitions logged by quiche.
    pub cc_state_changes: u64,
    /// `nc:*` events (our controllers and coding layer, [`events`]).
    pub quic_nc_events: u64,
    /// Frames of types quiche does not know (extension frames), sent and
    /// received.
    pub extension_frames: u64,
    /// Time of the first received STREAM frame on a client-initiated
    /// bidirectional stream, in seconds: a client's first response byte
    /// (time to first byte), a server's first request.
    pub first_request_stream_s: Option<f64>,
}

impl Summary {
    /// Condenses `trace`.
    pub fn from_trace(trace: &Trace) -> Summary {
        let series = Series::from_trace(trace);
        let finite = |v: &[f64]| {
            v.iter()
                .copied()
                .filter(|x| x.is_finite())
                .collect::<Vec<_>>()
        };
        let srtt = finite(&series.smoothed_rtt_ms);
        let mut s = Summary {
            role: trace.vantage_point.clone().unwrap_or_default(),
            duration_s: trace.events.last().map_or(0.0, |e| e.time_ms / 1e3),
            max_cwnd: finite(&series.cwnd).into_iter().fold(0.0, f64::max) as u64,
            min_rtt_ms: finite(&series.min_rtt_ms)
                .into_iter()
                .fold(f64::INFINITY, f64::min),
            mean_srtt_ms: if srtt.is_empty() {
                f64::NAN
            } else {
                srtt.iter().sum::<f64>() / srtt.len() as f64
            },
            packets_lost: finite(&series.lost_packets).into_iter().fold(0.0, f64::max) as u64,
            ..Summary::default()
        };
        for e in &trace.events {
            match e.name.as_str() {
                "quic:packet_sent" => {
                    s.packets_sent += 1;
                    s.bytes_sent += e
                        .data
                        .pointer("/raw/length")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                }
                "quic:packet_received" => {
                    s.packets_received += 1;
                    if s.first_request_stream_s.is_none() && carries_request_stream(&e.data) {
                        s.first_request_stream_s = Some(e.time_ms / 1e3);
                    }
                }
                "quic:congestion_state_updated" => s.cc_state_changes += 1,
                n if n.starts_with(events::PREFIX) => s.quic_nc_events += 1,
                _ => {}
            }
            if matches!(e.name.as_str(), "quic:packet_sent" | "quic:packet_received") {
                if let Some(frames) = e.data.get("frames").and_then(Value::as_array) {
                    s.extension_frames += frames
                        .iter()
                        .filter(|f| f.get("frame_type").and_then(Value::as_str) == Some("unknown"))
                        .count() as u64;
                }
            }
        }
        s
    }

    /// One human-readable line.
    pub fn line(&self) -> String {
        let first = self
            .first_request_stream_s
            .map_or("-".to_string(), |t| format!("{t:.3} s"));
        format!(
            "{:<6} {:>8.3} s  sent {} pkts / {} B, recv {} pkts, lost {} ({:.2}%), max cwnd {} B, min RTT {:.2} ms, mean sRTT {:.2} ms, cc states {}, nc events {}, ext frames {}, first request-stream data {first}",
            self.role,
            self.duration_s,
            self.packets_sent,
            self.bytes_sent,
            self.packets_received,
            self.packets_lost,
            100.0 * self.packets_lost as f64 / (self.packets_sent.max(1)) as f64,
            self.max_cwnd,
            self.min_rtt_ms,
            self.mean_srtt_ms,
            self.cc_state_changes,
            self.quic_nc_events,
            self.extension_frames,
        )
    }

    /// The summary as a JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "role": self.role,
            "duration_s": self.duration_s,
            "packets_sent": self.packets_sent,
            "bytes_sent": self.bytes_sent,
            "packets_received": self.packets_received,
            "packets_lost": self.packets_lost,
            "max_cwnd": self.max_cwnd,
            "min_rtt_ms": finite_or_null(self.min_rtt_ms),
            "mean_srtt_ms": finite_or_null(self.mean_srtt_ms),
            "cc_state_changes": self.cc_state_changes,
            "quic_nc_events": self.quic_nc_events,
            "extension_frames": self.extension_frames,
            "first_request_stream_s": self.first_request_stream_s,
        })
    }
}

/// Whether a packet event holds a STREAM frame on a client-initiated
/// bidirectional stream (id ≡ 0 mod 4), where HTTP/3 requests and
/// responses travel.
fn carries_request_stream(data: &Value) -> bool {
    data.get("frames")
        .and_then(Value::as_array)
        .is_some_and(|frames| {
            frames.iter().any(|f| {
                f.get("frame_type").and_then(Value::as_str) == Some("stream")
                    && f.get("stream_id")
                        .and_then(Value::as_u64)
                        .is_some_and(|id| id % 4 == 0)
            })
        })
}

fn finite_or_null(v: f64) -> Value {
    if v.is_finite() {
        v.into()
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = concat!(
        "\u{1e}{\"file_schema\":\"x\",\"title\":\"t\",\"trace\":{\"vantage_point\":{\"type\":\"server\"}}}\n",
        "\u{1e}{\"time\":0.5,\"name\":\"quic:recovery_metrics_updated\",\"data\":{\"min_rtt\":40.0,\"smoothed_rtt\":40.0,\"congestion_window\":13500}}\n",
        "\u{1e}{\"time\":1.0,\"name\":\"quic:packet_sent\",\"data\":{\"raw\":{\"length\":1200},\"frames\":[{\"frame_type\":\"unknown\",\"frame_type_bytes\":1}]}}\n",
        "\u{1e}{\"time\":2.0,\"name\":\"quic:recovery_metrics_updated\",\"data\":{\"bytes_in_flight\":1200,\"smoothed_rtt\":50.0,\"cf_lost_packets\":{\"total\":3,\"delta\":3}}}\n",
        "\u{1e}{\"time\":3.0,\"name\":\"quic:packet_received\",\"data\":{\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":3}]}}\n",
        "\u{1e}{\"time\":3.5,\"name\":\"quic:packet_received\",\"data\":{\"frames\":[{\"frame_type\":\"ack\"},{\"frame_type\":\"stream\",\"stream_id\":4}]}}\n",
        "\u{1e}{\"time\":3.6,\"name\":\"quic:packet_received\",\"data\":{\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":0}]}}\n",
        "\u{1e}{\"time\":4.0,\"name\":\"nc:cc_state\",\"data\":{\"cwnd\":27000}}\n",
        "\u{1e}{\"time\":5.0,\"name\":\"quic:packet_sent\",\"data\":{\"raw\":{\"len",
    );

    #[test]
    fn parses_header_events_and_ignores_a_truncated_tail() {
        let t = Trace::parse(SAMPLE).unwrap();
        assert_eq!(t.vantage_point.as_deref(), Some("server"));
        assert_eq!(t.events.len(), 7);
        assert_eq!(t.named("quic:packet_sent").count(), 1);
    }

    #[test]
    fn metrics_deltas_are_replayed() {
        let s = Series::from_trace(&Trace::parse(SAMPLE).unwrap());
        assert_eq!(s.time_ms, vec![0.5, 2.0]);
        assert_eq!(s.cwnd, vec![13500.0, 13500.0]);
        assert_eq!(s.smoothed_rtt_ms, vec![40.0, 50.0]);
        assert!(s.bytes_in_flight[0].is_nan());
        assert_eq!(s.lost_packets[1], 3.0);
        let csv = s.to_csv();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(1).unwrap().starts_with("0.5,13500,,40,40,"));
    }

    #[test]
    fn summary_counts() {
        let s = Summary::from_trace(&Trace::parse(SAMPLE).unwrap());
        assert_eq!(s.role, "server");
        assert_eq!(
            (s.packets_sent, s.bytes_sent, s.packets_received),
            (1, 1200, 3)
        );
        // Stream 3 (a unidirectional control stream) does not count.
        assert_eq!(s.first_request_stream_s, Some(0.0035));
        assert_eq!(s.packets_lost, 3);
        assert_eq!(s.max_cwnd, 13500);
        assert_eq!(s.min_rtt_ms, 40.0);
        assert_eq!(s.mean_srtt_ms, 45.0);
        assert_eq!((s.quic_nc_events, s.extension_frames), (1, 1));
        assert!(s.line().starts_with("server"));
    }

    #[test]
    fn garbage_in_the_middle_is_an_error() {
        let bad =
            "\u{1e}{\"time\":1,\"name\":\"a\"}\n\u{1e}nope\n\u{1e}{\"time\":2,\"name\":\"b\"}\n";
        assert!(Trace::parse(bad).unwrap_err().contains("record 2"));
        assert!(Trace::parse("\u{1e}[1,2]\n\u{1e}{}\n").is_err());
    }
}
