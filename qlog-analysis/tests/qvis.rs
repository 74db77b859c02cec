//! The qvis export against the format rules qvis applies when it loads a
//! draft-02 file (quiclog/qvis, `QlogLoaderV2.ts`, `QlogSchema02.ts`,
//! `CongestionGraphD3Renderer.ts`, `SequenceDiagramD3Renderer.ts`).

use std::cell::Cell;
use std::io::{BufReader, Read, Write};
use std::process::Command;
use std::rc::Rc;

use qlog_analysis::qvis::{self, ConvertStats, Layout, Options, EVENT_FIELDS};
use serde_json::{json, Value};

/// Options with the `event_fields` layout, whose rules most checks below
/// spell out (the default is the event-object layout).
fn ef() -> Options {
    Options {
        layout: Layout::EventFields,
        ..Options::default()
    }
}

/// A quiche 0.30 server qlog in miniature: the header exactly as quiche
/// writes it, then one event of each kind the views use, written out of
/// time order where QUIC-NC does that (an `nc:` event queued earlier).
const SERVER: &str = concat!(
    "\u{1e}{\"file_schema\":\"urn:ietf:params:qlog:file:sequential\",\"serialization_format\":\"JSON-SEQ\",",
    "\"title\":\"qnc-server qlog\",\"description\":\"qnc-server id=54\",\"trace\":{\"title\":\"qnc-server qlog\",",
    "\"description\":\"qnc-server id=54\",\"common_fields\":{\"reference_time\":{\"clock_type\":\"monotonic\",",
    "\"epoch\":\"unknown\",\"wall_clock_time\":\"2026-11-23T05:43:08.946788866Z\"}},\"vantage_point\":{\"type\":\"server\"},",
    "\"event_schemas\":[\"urn:ietf:params:qlog:events:quic-12\",\"urn:ietf:params:qlog:events:http3-12\"]}}\n",
    "\u{1e}{\"time\":0.0,\"name\":\"quic:parameters_set\",\"data\":{\"initiator\":\"remote\",\"initial_max_data\":16777216}}\n",
    "\u{1e}{\"time\":0.09,\"name\":\"quic:packet_received\",\"data\":{\"header\":{\"packet_type\":\"initial\",\"packet_number\":0,",
    "\"version\":\"1\"},\"raw\":{\"length\":1200,\"payload_length\":1154},\"frames\":[{\"frame_type\":\"crypto\",\"offset\":0,",
    "\"raw\":{\"payload_length\":1133}}]}}\n",
    "\u{1e}{\"time\":0.09,\"name\":\"quic:recovery_metrics_updated\",\"data\":{\"min_rtt\":333.0,\"smoothed_rtt\":333.0,",
    "\"latest_rtt\":333.0,\"rtt_variance\":166.5,\"congestion_window\":13500,\"bytes_in_flight\":0,",
    "\"cf_lost_packets\":{\"total\":0,\"delta\":0},\"pacing_rate\":81081}}\n",
    "\u{1e}{\"time\":0.09,\"name\":\"quic:congestion_state_updated\",\"data\":{\"new\":\"slow_start\"}}\n",
    "\u{1e}{\"time\":0.172,\"name\":\"quic:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"initial\",\"packet_number\":0},",
    "\"raw\":{\"length\":72,\"payload_length\":5},\"send_at_time\":0.172,\"frames\":[{\"frame_type\":\"ack\",",
    "\"ack_delay\":0.01,\"acked_ranges\":[[0]]}]}}\n",
    "\u{1e}{\"time\":35.503,\"name\":\"quic:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":4},",
    "\"raw\":{\"length\":1166,\"payload_length\":1128},\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":3,\"offset\":0,",
    "\"raw\":{\"payload_length\":24}},{\"frame_type\":\"unknown\",\"frame_type_bytes\":5128960,\"raw\":{\"length\":6}}]}}\n",
    "\u{1e}{\"time\":35.354,\"name\":\"http3:frame_created\",\"data\":{\"stream_id\":3,\"length\":23,",
    "\"frame\":{\"frame_type\":\"settings\"}}}\n",
    "\u{1e}{\"time\":35.503,\"name\":\"nc:source_sent\",\"data\":{\"index\":0,\"pkt_num\":4,\"length\":29,\"tagged\":true}}\n",
    "\u{1e}{\"time\":33.456,\"name\":\"nc:cc_state\",\"data\":{\"state\":\"slow_start\",\"cwnd\":13500}}\n",
    "\u{1e}{\"time\":66.635,\"name\":\"quic:packet_received\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":9},",
    "\"raw\":{\"length\":60},\"frames\":[{\"frame_type\":\"ack\",\"acked_ranges\":[[2,4]]}]}}\n",
    "\u{1e}{\"time\":66.635,\"name\":\"nc:ack_received\",\"data\":{\"i_p\":3,\"loss_estimate\":0.0,\"srtt_ms\":31.0}}\n",
    "\u{1e}{\"time\":140.113,\"name\":\"nc:repair_sent\",\"data\":{\"seq\":0,\"first\":43,\"count\":2,\"reason\":\"policy\"}}\n",
    "\u{1e}{\"time\":150.0,\"name\":\"quic:key_discarded\",\"data\":{\"key_type\":\"server_initial_secret\"}}\n",
    "\u{1e}{\"time\":151.0,\"name\":\"vendor:thing\",\"data\":{\"x\":1}}\n",
    "\u{1e}{\"time\":152.0,\"name\":\"quic:connection_closed\",\"data\":{\"owner\":\"local\"}}\n",
);

/// The client side of the same connection, 16 ms earlier on the wall clock.
const CLIENT: &str = concat!(
    "\u{1e}{\"file_schema\":\"urn:ietf:params:qlog:file:sequential\",\"title\":\"qnc-client qlog\",",
    "\"trace\":{\"common_fields\":{\"reference_time\":{\"clock_type\":\"monotonic\",\"epoch\":\"unknown\",",
    "\"wall_clock_time\":\"2026-11-23T05:43:08.930142866Z\"}},\"vantage_point\":{\"type\":\"client\"}}}\n",
    "\u{1e}{\"time\":0.101,\"name\":\"quic:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"initial\",\"packet_number\":0},",
    "\"raw\":{\"length\":1200},\"frames\":[{\"frame_type\":\"crypto\",\"offset\":0,\"raw\":{\"payload_length\":1133}}]}}\n",
    "\u{1e}{\"time\":35.2,\"name\":\"nc:decoder_updated\",\"data\":{\"i_p\":1,\"i_q\":1,\"i_r\":1,\"max_seq\":1,\"diff\":0}}\n",
);

/// The rules qvis applies to a draft-02 document with `event_fields`,
/// checked on `doc`; returns the traces.
fn check_document(doc: &Value) -> &Vec<Value> {
    assert_eq!(doc["qlog_version"], "draft-02");
    // Without qlog_format qvis alerts "required in draft-02".
    assert_eq!(doc["qlog_format"], "JSON");
    let traces = doc["traces"].as_array().expect("traces array");
    assert!(!traces.is_empty());
    for t in traces {
        assert!(
            t["vantage_point"]["type"].is_string(),
            "{}",
            t["vantage_point"]
        );
        assert!(t["common_fields"]["reference_time"].is_number());
        assert_eq!(t["common_fields"]["time_format"], "relative");
        assert_eq!(t["configuration"]["time_offset"], 0);
        assert_eq!(t["event_fields"], json!(EVENT_FIELDS));
        assert_eq!(
            t["event_fields"],
            json!(["relative_time", "category", "event", "data"])
        );
        let events = t["events"].as_array().expect("events array");
        // qvis reads events[events.length - 1] unconditionally.
        assert!(!events.is_empty());
        let mut last = f64::NEG_INFINITY;
        for e in events {
            let e = e
                .as_array()
                .unwrap_or_else(|| panic!("event not an array: {e}"));
            assert_eq!(e.len(), 4, "{e:?}");
            let time = e[0].as_f64().expect("relative_time is a number");
            assert!(time >= last, "times go back: {last} then {time}");
            last = time;
            let (category, event) = (e[1].as_str().unwrap(), e[2].as_str().unwrap());
            assert!(!["quic", "http3", "h3"].contains(&category), "{category}");
            assert!(!event.contains(':'), "{event}");
            let data = &e[3];
            assert!(data.is_object(), "data is an object: {data}");
            if category == "transport" && event.starts_with("packet_") {
                // Where qvis's congestion graph and sequence diagram look.
                assert!(data["header"]["packet_number"].is_number(), "{data}");
                assert!(data["header"]["packet_type"].is_string(), "{data}");
                assert!(data["raw"]["length"].is_number(), "{data}");
                // qvis moves these and alerts "non-compliant draft-02".
                assert!(data["header"].get("packet_size").is_none());
                assert!(data["header"].get("payload_length").is_none());
                assert!(data.get("packet_type").is_none());
            }
        }
    }
    traces
}

fn convert_str(inputs: &[(&str, &str)], opts: &Options) -> Result<(Value, ConvertStats), String> {
    let mut out = Vec::new();
    let inputs = inputs.iter().map(|(l, t)| (l.to_string(), t.as_bytes()));
    let stats = qvis::convert_many(inputs, &mut out, opts)?;
    let doc = serde_json::from_slice(&out).expect("the output is one JSON document");
    Ok((doc, stats))
}

fn find<'a>(events: &'a [Value], category: &str, event: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e[1] == category && e[2] == event)
        .map(|e| &e[3])
        .collect()
}

#[test]
fn a_quiche_qlog_becomes_a_draft02_document() {
    let (doc, stats) = convert_str(&[("server.sqlog", SERVER)], &ef()).unwrap();
    let traces = check_document(&doc);
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!(t["vantage_point"], json!({"type": "server"}));
    assert_eq!(t["title"], "qnc-server qlog");
    let reference = t["common_fields"]["reference_time"].as_f64().unwrap();
    assert!(
        (reference - 1_795_412_588_946.789).abs() < 0.01,
        "{reference}"
    );
    assert_eq!(t["configuration"]["original_uris"], json!(["server.sqlog"]));
    let events = t["events"].as_array().unwrap();
    assert_eq!(events.len(), 15);
    assert_eq!(stats.events(), 15);

    let sent = find(events, "transport", "packet_sent");
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["frames"][0]["acked_ranges"], json!([[0]]));
    assert_eq!(
        sent[1]["header"],
        json!({"packet_type": "1RTT", "packet_number": 4})
    );
    assert_eq!(sent[1]["raw"]["length"], 1166);
    assert_eq!(sent[1]["frames"][0]["length"], 24);
    assert_eq!(sent[1]["frames"][1]["frame_type"], "unknown_frame_type");
    assert_eq!(sent[1]["frames"][1]["raw_frame_type"], 5128960);
    let received = find(events, "transport", "packet_received");
    assert_eq!(received[1]["frames"][0]["acked_ranges"], json!([[2, 4]]));

    let metrics = find(events, "recovery", "metrics_updated");
    assert_eq!(metrics.len(), 1);
    for (key, v) in [
        ("congestion_window", json!(13500)),
        ("bytes_in_flight", json!(0)),
        ("smoothed_rtt", json!(333.0)),
        ("min_rtt", json!(333.0)),
        ("latest_rtt", json!(333.0)),
        ("cf_lost_packets", json!({"total": 0, "delta": 0})),
    ] {
        assert_eq!(metrics[0][key], v, "{key}");
    }
    assert_eq!(
        find(events, "recovery", "congestion_state_updated")[0]["new"],
        "slow_start"
    );
    assert_eq!(
        find(events, "transport", "parameters_set")[0]["owner"],
        "remote"
    );
    assert_eq!(find(events, "http", "frame_created")[0]["byte_length"], 23);
    assert_eq!(find(events, "security", "key_retired").len(), 1);
    assert_eq!(find(events, "connectivity", "connection_closed").len(), 1);
    assert_eq!(find(events, "vendor", "thing")[0], &json!({"x": 1}));

    // Every nc: event is kept, in category nc, with its fields.
    let nc: Vec<&Value> = events.iter().filter(|e| e[1] == "nc").collect();
    let names: Vec<&str> = nc.iter().map(|e| e[2].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["cc_state", "source_sent", "ack_received", "repair_sent"]
    );
    assert_eq!(
        nc[0][0], 33.456,
        "the late nc:cc_state is put in time order"
    );
    assert_eq!(nc[0][3], json!({"state": "slow_start", "cwnd": 13500}));
    assert_eq!(stats.traces[0].categories["nc"], 4);
    // nc:cc_state and http3:frame_created were logged late.
    assert_eq!((stats.traces[0].late, stats.traces[0].clamped), (2, 0));
}

#[test]
fn client_and_server_merge_into_one_trace_each() {
    let (doc, stats) =
        convert_str(&[("client.sqlog", CLIENT), ("server.sqlog", SERVER)], &ef()).unwrap();
    let traces = check_document(&doc);
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[0]["vantage_point"]["type"], "client");
    assert_eq!(traces[1]["vantage_point"]["type"], "server");
    assert_eq!(traces[0]["events"].as_array().unwrap().len(), 2);
    // Both reference times are wall-clock milliseconds, so qvis can put
    // the two sides on one time line.
    let reference = |i: usize| {
        traces[i]["common_fields"]["reference_time"]
            .as_f64()
            .unwrap()
    };
    assert!((reference(1) - reference(0) - 16.646).abs() < 1e-3);
    let vps: Vec<_> = stats
        .traces
        .iter()
        .map(|t| t.vantage_point.as_deref())
        .collect();
    assert_eq!(vps, vec![Some("client"), Some("server")]);
    assert_eq!(stats.traces[0].label, "client.sqlog");
}

#[test]
fn the_objects_layout_is_draft02_proper() {
    let opts = Options {
        layout: Layout::Objects,
        ..Options::default()
    };
    let (doc, _) = convert_str(&[("s", SERVER)], &opts).unwrap();
    let t = &doc["traces"][0];
    assert_eq!(doc["qlog_version"], "draft-02");
    assert!(t.get("event_fields").is_none());
    let events = t["events"].as_array().unwrap();
    assert_eq!(events.len(), 15);
    assert!(events
        .windows(2)
        .all(|w| w[0]["time"].as_f64() <= w[1]["time"].as_f64()));
    assert_eq!(events[1]["name"], "transport:packet_received");
    assert!(events
        .iter()
        .any(|e| e["name"] == "recovery:metrics_updated"));
    assert!(events.iter().any(|e| e["name"] == "nc:source_sent"));
}

#[test]
fn a_truncated_last_record_is_tolerated() {
    let cut = format!(
        "{SERVER}\u{1e}{{\"time\":160.0,\"name\":\"quic:packet_sent\",\"data\":{{\"raw\":{{\"len"
    );
    let (doc, stats) = convert_str(&[("s", &cut)], &ef()).unwrap();
    check_document(&doc);
    assert_eq!(stats.events(), 15);
    assert_eq!(stats.traces[0].truncated, Some(17));
}

#[test]
fn a_broken_record_in_the_middle_is_an_error_with_its_number() {
    let broken = SERVER.replacen("{\"time\":0.09,", "{\"time\":0.09 oops,", 1);
    let err = convert_str(&[("s.sqlog", &broken)], &ef()).unwrap_err();
    assert!(err.starts_with("s.sqlog: record 3: "), "{err}");
    let mut out = Vec::new();
    let err = qvis::convert(broken.as_bytes(), &mut out, &ef()).unwrap_err();
    assert!(err.starts_with("record 3: "), "{err}");
}

/// Generates `total` events on demand, one record per `read` call, and
/// counts them in `generated`; every 997th is logged 2 ms late.
struct Generator {
    total: u64,
    generated: Rc<Cell<u64>>,
    record: Vec<u8>,
    pos: usize,
}

impl Read for Generator {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.record.len() {
            let i = self.generated.get();
            if i == self.total {
                return Ok(0);
            }
            self.generated.set(i + 1);
            let mut time = i as f64 * 0.01;
            if i % 997 == 500 {
                time -= 2.0;
            }
            self.record = match i % 3 {
                0 => format!(
                    "\u{1e}{{\"time\":{time},\"name\":\"quic:packet_sent\",\"data\":{{\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{i}}},\"raw\":{{\"length\":1200}}}}}}\n"
                ),
                1 => format!(
                    "\u{1e}{{\"time\":{time},\"name\":\"quic:recovery_metrics_updated\",\"data\":{{\"bytes_in_flight\":{i}}}}}\n"
                ),
                _ => format!(
                    "\u{1e}{{\"time\":{time},\"name\":\"nc:source_sent\",\"data\":{{\"index\":{i}}}}}\n"
                ),
            }
            .into_bytes();
            self.pos = 0;
        }
        let n = buf.len().min(self.record.len() - self.pos);
        buf[..n].copy_from_slice(&self.record[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Counts lines written (one per event) and the largest gap between
/// events generated and events written.
struct Watcher {
    generated: Rc<Cell<u64>>,
    lines: u64,
    max_gap: u64,
}

impl Write for Watcher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lines += buf.iter().filter(|&&c| c == b'\n').count() as u64;
        // One newline precedes the trace, then one precedes each event.
        let started = self.lines.saturating_sub(1);
        self.max_gap = self
            .max_gap
            .max(self.generated.get().saturating_sub(started));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_large_input_streams_in_bounded_memory() {
    const TOTAL: u64 = 200_000;
    const WINDOW: usize = 256;
    let generated = Rc::new(Cell::new(0));
    let input = BufReader::new(Generator {
        total: TOTAL,
        generated: generated.clone(),
        record: Vec::new(),
        pos: 0,
    });
    let mut out = Watcher {
        generated: generated.clone(),
        lines: 0,
        max_gap: 0,
    };
    let opts = Options {
        reorder_window: WINDOW,
        ..Options::default()
    };
    let stats = qvis::convert(input, &mut out, &opts).unwrap();
    assert_eq!(generated.get(), TOTAL);
    assert_eq!(stats.events(), TOTAL);
    // "\n" before the trace, one per event, "\n]}" and "\n]}\n" at the end.
    assert_eq!(out.lines, TOTAL + 4);
    let late = (0..TOTAL).filter(|i| i % 997 == 500).count() as u64;
    assert_eq!((stats.traces[0].late, stats.traces[0].clamped), (late, 0));
    // Events are written while the input is read: at most the window, the
    // record being converted and the one read ahead are held.
    assert!(
        out.max_gap <= WINDOW as u64 + 2,
        "{} events read but not yet written",
        out.max_gap
    );
}

/// Runs `qlog-qvis` with `args` in a scratch directory holding the two
/// sample files; returns (exit code, stdout, stderr, directory).
fn cli(args: &[&str]) -> (Option<i32>, Vec<u8>, String, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "qlog-qvis-test-{}-{}",
        std::process::id(),
        args.join("_").replace(['/', '.', ' '], "")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("client.sqlog"), CLIENT).unwrap();
    std::fs::write(dir.join("server.sqlog"), SERVER).unwrap();
    let broken = SERVER.replacen("{\"time\":0.09,", "{\"time\":0.09 oops,", 1);
    std::fs::write(dir.join("broken.sqlog"), broken).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qlog-qvis"))
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), out.stdout, stderr, dir)
}

#[test]
fn the_command_line_tool() {
    let (code, stdout, stderr, dir) = cli(&["--event-fields", "client.sqlog", "server.sqlog"]);
    assert_eq!(code, Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(check_document(&doc).len(), 2);
    assert!(stderr
        .lines()
        .next()
        .unwrap()
        .contains("client.sqlog (client): 2 events"));
    std::fs::remove_dir_all(dir).unwrap();

    let (code, stdout, _, dir) = cli(&["-o", "out.qlog", "server.sqlog"]);
    assert_eq!((code, stdout.len()), (Some(0), 0));
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("out.qlog")).unwrap()).unwrap();
    assert!(doc["traces"][0]["events"][0].is_object());
    std::fs::remove_dir_all(dir).unwrap();

    let (code, _, stderr, dir) = cli(&["-o", "out.qlog", "client.sqlog", "broken.sqlog"]);
    assert_eq!(code, Some(2));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: broken.sqlog: record 3: "),
        "{stderr}"
    );
    assert!(
        !dir.join("out.qlog").exists(),
        "no half-written output is left"
    );
    std::fs::remove_dir_all(dir).unwrap();

    for args in [
        &["missing.sqlog"][..],
        &[],
        &["--bogus", "server.sqlog"],
        &["-o", "server.sqlog", "server.sqlog"],
    ] {
        let (code, _, stderr, dir) = cli(args);
        assert_eq!(code, Some(2), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.join("server.sqlog")).unwrap(),
            SERVER
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_broken_record_stops_the_reading() {
    // 10,000 records with the second one broken: the converter stops at
    // the record after it instead of reading on.
    struct Chunks(u64);
    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 10_000 {
                return Ok(0);
            }
            self.0 += 1;
            let rec: &[u8] = if self.0 == 2 {
                b"\x1e{broken\n"
            } else {
                b"\x1e{\"time\":1,\"name\":\"a:b\"}\n"
            };
            let n = rec.len().min(buf.len());
            buf[..n].copy_from_slice(&rec[..n]);
            Ok(n)
        }
    }
    let mut input = BufReader::new(Chunks(0));
    let err = qvis::convert(&mut input, Vec::new(), &ef()).unwrap_err();
    assert!(err.starts_with("record 2: "), "{err}");
    assert_eq!(input.get_ref().0, 3, "records read");
}
