//! Export to qvis (<https://qvis.quictools.info>, github.com/quiclog/qvis).
//!
//! qvis understands qlog up to draft-02 and version "0.3", with the
//! draft-02 event names (`transport:packet_sent`, `recovery:metrics_updated`,
//! `http:frame_created`, ...). quiche 0.30 writes the newer main schema: a
//! JSON-SEQ header without `qlog_version`/`qlog_format` (qvis refuses the
//! file) and `quic:`/`http3:` names (qvis's views would find nothing). This
//! module rewrites such a file, or several, into one draft-02 JSON
//! document with one trace per input:
//!
//! ```text
//! {"qlog_version":"draft-02","qlog_format":"JSON","title":...,"traces":[
//! {"vantage_point":{"type":"server"},"common_fields":{"reference_time":<ms since 1970>,
//!  "time_format":"relative",...},"configuration":{"time_offset":0,...},
//!  "event_fields":["relative_time","category","event","data"],"events":[
//! [0.0,"transport","parameters_set",{...}],
//! ...
//! ]}
//! ]}
//! ```
//!
//! Names and fields are mapped by [`map_name`] and [`adapt`]; QUIC-NC's
//! `nc:` events (and any other namespace) are kept, with the namespace as
//! the category. Events are written in time order (a bounded window puts
//! late-logged events back in place, see `order`), one per line.
//!
//! Streaming: each record is mapped as it is read and written as soon as
//! the reorder window releases it; memory is bounded by the window and the
//! largest record, not by the file.

mod clock;
mod mapping;
mod order;

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use serde_json::{Map, Value};

pub use clock::{reference_ms, rfc3339_ms};
pub use mapping::{adapt, map_name};

/// The `qlog_version` written.
pub const QLOG_VERSION: &str = "draft-02";

/// The `event_fields` of every trace in the [`Layout::EventFields`] layout.
pub const EVENT_FIELDS: [&str; 4] = ["relative_time", "category", "event", "data"];

/// Default [`Options::reorder_window`], in events.
pub const DEFAULT_WINDOW: usize = 1024;

/// How events are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// `[relative_time, category, event, data]` arrays with `event_fields`
    /// (the draft-01 style that draft-02 readers still accept; qvis loads it
    /// but pops up an alert on loading: "`event_fields` ... deprecated in
    /// draft-02").
    EventFields,
    /// Draft-02 event objects `{"time": ms, "name": "category:event",
    /// "data": {...}}`, which qvis loads without an alert (the default).
    #[default]
    Objects,
}

/// Conversion options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Title of the document (default: a generic one).
    pub title: Option<String>,
    /// Event layout.
    pub layout: Layout,
    /// Events held back to put late-logged ones in time order; 0 writes
    /// each event at once (late ones are then clamped).
    pub reorder_window: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            title: None,
            layout: Layout::default(),
            reorder_window: DEFAULT_WINDOW,
        }
    }
}

/// What the conversion of one input did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// The input's label (file name), as given.
    pub label: String,
    /// `server`, `client`, ... from the header, if any.
    pub vantage_point: Option<String>,
    /// Events written (not counting the placeholder of an empty trace).
    pub events: u64,
    /// Events written per draft-02 category.
    pub categories: BTreeMap<String, u64>,
    /// Events logged with a time earlier than an event before them.
    pub late: u64,
    /// Late events the window could not place, written at the time of the
    /// event before them (their own time is kept in `data.time_clamped_from`).
    pub clamped: u64,
    /// Number of the last record, if it was cut off and ignored.
    pub truncated: Option<u64>,
}

/// What a conversion did, one entry per input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Per input, in order.
    pub traces: Vec<TraceStats>,
}

impl ConvertStats {
    /// Events written over all traces.
    pub fn events(&self) -> u64 {
        self.traces.iter().map(|t| t.events).sum()
    }
}

/// Converts one JSON-SEQ qlog into a qvis document with one trace.
/// `output` receives many small writes: give it a buffered writer.
pub fn convert<R: BufRead, W: Write>(
    input: R,
    output: W,
    opts: &Options,
) -> Result<ConvertStats, String> {
    convert_many([(String::new(), input)], output, opts)
}

/// Converts several JSON-SEQ qlogs (e.g. the client and the server of one
/// connection) into one qvis document, one trace per input, in order.
/// Each input comes with a label (its file name), which prefixes its
/// errors and is kept in the trace's `configuration.original_uris`. Inputs
/// are read one after the other, each in bounded memory.
pub fn convert_many<R, W, I>(
    inputs: I,
    mut output: W,
    opts: &Options,
) -> Result<ConvertStats, String>
where
    R: BufRead,
    W: Write,
    I: IntoIterator<Item = (String, R)>,
{
    let out = &mut output;
    let write_err = |e: io::Error| format!("cannot write output: {e}");
    let mut doc = Map::new();
    doc.insert("qlog_version".into(), QLOG_VERSION.into());
    doc.insert("qlog_format".into(), "JSON".into());
    let title = opts
        .title
        .as_deref()
        .unwrap_or("QUIC-NC qlog (converted for qvis)");
    doc.insert("title".into(), title.into());
    write_open_object(out, &doc, "traces").map_err(write_err)?;
    let mut stats = ConvertStats::default();
    for (label, input) in inputs {
        if !stats.traces.is_empty() {
            out.write_all(b",").map_err(write_err)?;
        }
        out.write_all(b"\n").map_err(write_err)?;
        match convert_trace(out, input, &label, opts) {
            Ok(t) => stats.traces.push(t),
            Err(Fail::Output(e)) => return Err(write_err(e)),
            Err(Fail::Input(e)) if label.is_empty() => return Err(e),
            Err(Fail::Input(e)) => return Err(format!("{label}: {e}")),
        }
    }
    if stats.traces.is_empty() {
        return Err("no input".into());
    }
    out.write_all(b"\n]}\n")
        .and_then(|_| out.flush())
        .map_err(write_err)?;
    Ok(stats)
}

enum Fail {
    Input(String),
    Output(io::Error),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Output(e)
    }
}

impl From<serde_json::Error> for Fail {
    fn from(e: serde_json::Error) -> Fail {
        Fail::Output(e.into())
    }
}

/// One event read from the input.
struct Event {
    record: u64,
    time: f64,
    name: String,
    data: Value,
}

/// Checks that record `n` is an event and takes it apart.
fn event(n: u64, v: Value) -> Result<Event, Fail> {
    let Value::Object(mut o) = v else {
        return Err(Fail::Input(format!("record {n}: not a qlog event")));
    };
    if o.contains_key("trace") {
        return Err(Fail::Input(format!(
            "record {n}: a second qlog header (one trace per file)"
        )));
    }
    let (Some(time), Some(Value::String(name))) =
        (o.get("time").and_then(Value::as_f64), o.remove("name"))
    else {
        return Err(Fail::Input(format!("record {n}: not a qlog event")));
    };
    let data = o.remove("data").unwrap_or(Value::Null);
    Ok(Event {
        record: n,
        time,
        name,
        data,
    })
}

/// How an input's times relate to its reference time.
#[derive(Clone, Copy)]
enum TimeFormat {
    /// Milliseconds since the reference time (the newer schema; draft-02's
    /// `relative`).
    Relative,
    /// Milliseconds since the Unix epoch.
    Absolute,
    /// Milliseconds since the previous event.
    Delta,
}

/// The trace-level fields of an input's header.
struct Head {
    fields: Map<String, Value>,
    common_fields: Map<String, Value>,
    format: TimeFormat,
    reference_ms: f64,
}

impl Head {
    /// From the header record (`{"qlog_version"?, "title"?, "trace": {...}}`),
    /// if the input has one.
    fn new(header: Option<Value>) -> Head {
        let mut header = match header {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        let mut trace = match header.remove("trace") {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        let mut common_fields = match trace.remove("common_fields") {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        let format = match common_fields
            .remove("time_format")
            .as_ref()
            .and_then(Value::as_str)
        {
            Some("absolute") => TimeFormat::Absolute,
            Some("delta") => TimeFormat::Delta,
            _ => TimeFormat::Relative,
        };
        let reference_ms = reference_ms(common_fields.remove("reference_time").as_ref());
        let mut fields = Map::new();
        for key in ["title", "description"] {
            if let Some(v) = trace.remove(key).or_else(|| header.remove(key)) {
                fields.insert(key.into(), v);
            }
        }
        let vantage_point = match trace.remove("vantage_point") {
            Some(v @ Value::Object(_)) => v,
            _ => serde_json::json!({"type": "unknown"}),
        };
        fields.insert("vantage_point".into(), vantage_point);
        Head {
            fields,
            common_fields,
            format,
            reference_ms,
        }
    }
}

/// Turns an input's event times into times relative to the reference
/// time written in the trace.
struct Clock {
    format: TimeFormat,
    reference_ms: f64,
    elapsed: f64,
}

impl Clock {
    /// `first` is the first event's time (the reference of absolute times).
    fn new(head: &Head, first: Option<f64>) -> Clock {
        let reference_ms = match head.format {
            TimeFormat::Absolute => first.unwrap_or(0.0),
            _ => head.reference_ms,
        };
        Clock {
            format: head.format,
            reference_ms,
            elapsed: 0.0,
        }
    }

    fn relative(&mut self, e: &Event) -> Result<f64, Fail> {
        let t = match self.format {
            TimeFormat::Relative => e.time,
            TimeFormat::Absolute => e.time - self.reference_ms,
            TimeFormat::Delta => {
                self.elapsed += e.time;
                self.elapsed
            }
        };
        if t.is_finite() {
            Ok(t)
        } else {
            Err(Fail::Input(format!(
                "record {}: time out of range",
                e.record
            )))
        }
    }
}

/// Converts one input into one trace of the document.
fn convert_trace<R: BufRead, W: Write>(
    out: &mut W,
    input: R,
    label: &str,
    opts: &Options,
) -> Result<TraceStats, Fail> {
    let mut records = crate::records::Records::new(input);
    let next = |r: &mut crate::records::Records<R>| r.next_record().map_err(Fail::Input);
    let mut header = None;
    let mut first = match next(&mut records)? {
        None => return Err(Fail::Input("no qlog records".into())),
        Some((1, v)) if v.get("traces").is_some() => {
            return Err(Fail::Input(
                "record 1: a qlog JSON file (with \"traces\"), not JSON-SEQ".into(),
            ))
        }
        Some((_, v)) if v.get("trace").is_some() => {
            header = Some(v);
            next(&mut records)?
        }
        first => first,
    }
    .map(|(n, v)| event(n, v))
    .transpose()?;

    let head = Head::new(header);
    let mut clock = Clock::new(&head, first.as_ref().map(|e| e.time));
    let mut stats = TraceStats {
        label: label.to_string(),
        vantage_point: head
            .fields
            .get("vantage_point")
            .and_then(|v| v.get("type"))
            .and_then(Value::as_str)
            .map(str::to_string),
        ..TraceStats::default()
    };
    write_trace_head(out, &head, clock.reference_ms, label, opts.layout)?;

    let mut window = order::Window::new(opts.reorder_window);
    loop {
        let e = match first.take() {
            Some(e) => e,
            None => match next(&mut records)? {
                Some((n, v)) => event(n, v)?,
                None => break,
            },
        };
        let time = clock.relative(&e)?;
        let (category, name) = map_name(&e.name);
        let mut data = e.data;
        adapt(&category, &name, &mut data);
        if let Some(r) = window.push(time, (category, name, data)) {
            write_released(out, r, opts.layout, &mut stats)?;
        }
    }
    while let Some(r) = window.pop() {
        write_released(out, r, opts.layout, &mut stats)?;
    }
    if stats.events == 0 {
        // qvis cannot load a trace without events.
        let note = serde_json::json!({"message": "no events in this qlog"});
        write_event(out, true, opts.layout, 0.0, "info", "message", &note)?;
    }
    out.write_all(b"\n]}")?;
    stats.late = window.late;
    stats.clamped = window.clamped;
    stats.truncated = records.truncated;
    Ok(stats)
}

/// Writes `fields` as a JSON object left open at the array `key`:
/// `{...,"key":[`.
fn write_open_object<W: Write>(
    out: &mut W,
    fields: &Map<String, Value>,
    key: &str,
) -> io::Result<()> {
    let mut text = serde_json::to_string(fields)?;
    text.pop(); // the closing brace
    if fields.is_empty() {
        text.push('"');
    } else {
        text.push_str(",\"");
    }
    text.push_str(key);
    text.push_str("\":[");
    out.write_all(text.as_bytes())
}

fn write_trace_head<W: Write>(
    out: &mut W,
    head: &Head,
    reference_ms: f64,
    label: &str,
    layout: Layout,
) -> io::Result<()> {
    let mut trace = head.fields.clone();
    let mut common = head.common_fields.clone();
    common.insert("reference_time".into(), reference_ms.into());
    common.insert("time_format".into(), "relative".into());
    trace.insert("common_fields".into(), common.into());
    let mut configuration = serde_json::json!({"time_offset": 0, "time_units": "ms"});
    if !label.is_empty() {
        configuration["original_uris"] = serde_json::json!([label]);
    }
    trace.insert("configuration".into(), configuration);
    if layout == Layout::EventFields {
        trace.insert("event_fields".into(), EVENT_FIELDS.to_vec().into());
    }
    write_open_object(out, &trace, "events")
}

fn write_released<W: Write>(
    out: &mut W,
    r: order::Released<(String, String, Value)>,
    layout: Layout,
    stats: &mut TraceStats,
) -> Result<(), Fail> {
    let (category, name, mut data) = r.item;
    if let (Some(t), Some(d)) = (r.clamped_from, data.as_object_mut()) {
        d.insert("time_clamped_from".into(), t.into());
    }
    write_event(
        out,
        stats.events == 0,
        layout,
        r.time,
        &category,
        &name,
        &data,
    )?;
    stats.events += 1;
    match stats.categories.get_mut(&category) {
        Some(c) => *c += 1,
        None => {
            stats.categories.insert(category, 1);
        }
    }
    Ok(())
}

/// Writes one event on its own line.
fn write_event<W: Write>(
    out: &mut W,
    first: bool,
    layout: Layout,
    time: f64,
    category: &str,
    name: &str,
    data: &Value,
) -> Result<(), Fail> {
    out.write_all(if first { b"\n" } else { b",\n" })?;
    match layout {
        Layout::EventFields => {
            out.write_all(b"[")?;
            serde_json::to_writer(&mut *out, &time)?;
            out.write_all(b",")?;
            serde_json::to_writer(&mut *out, category)?;
            out.write_all(b",")?;
            serde_json::to_writer(&mut *out, name)?;
            out.write_all(b",")?;
            serde_json::to_writer(&mut *out, data)?;
            out.write_all(b"]")?;
        }
        Layout::Objects => {
            out.write_all(b"{\"time\":")?;
            serde_json::to_writer(&mut *out, &time)?;
            out.write_all(b",\"name\":")?;
            serde_json::to_writer(&mut *out, &format!("{category}:{name}"))?;
            out.write_all(b",\"data\":")?;
            serde_json::to_writer(&mut *out, data)?;
            out.write_all(b"}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `event_fields` layout, whose arrays these tests index.
    fn ef() -> Options {
        Options {
            layout: Layout::EventFields,
            ..Options::default()
        }
    }

    fn run(text: &str, opts: &Options) -> Result<(Value, ConvertStats), String> {
        let mut out = Vec::new();
        let stats = convert(text.as_bytes(), &mut out, opts)?;
        let doc = serde_json::from_slice(&out).map_err(|e| e.to_string())?;
        Ok((doc, stats))
    }

    fn events(doc: &Value) -> &Vec<Value> {
        doc["traces"][0]["events"].as_array().unwrap()
    }

    #[test]
    fn quiche_header_becomes_trace_fields() {
        let text = concat!(
            "\u{1e}{\"file_schema\":\"urn:ietf:params:qlog:file:sequential\",\"title\":\"top\",",
            "\"trace\":{\"description\":\"d\",\"vantage_point\":{\"type\":\"client\"},",
            "\"common_fields\":{\"group_id\":\"g1\",\"reference_time\":{\"clock_type\":\"monotonic\",",
            "\"epoch\":\"unknown\",\"wall_clock_time\":\"1970-01-01T00:00:10Z\"}}}}\n",
            "\u{1e}{\"time\":1.5,\"name\":\"quic:packet_sent\",\"data\":{}}\n",
        );
        let (doc, stats) = run(text, &ef()).unwrap();
        let t = &doc["traces"][0];
        assert_eq!(t["title"], "top");
        assert_eq!(t["description"], "d");
        assert_eq!(t["vantage_point"], json!({"type": "client"}));
        assert_eq!(
            t["common_fields"],
            json!({"group_id": "g1", "reference_time": 10000.0, "time_format": "relative"})
        );
        assert_eq!(t["configuration"]["time_offset"], 0);
        assert_eq!(
            events(&doc)[0],
            json!([1.5, "transport", "packet_sent", {}])
        );
        assert_eq!(stats.traces[0].vantage_point.as_deref(), Some("client"));
    }

    #[test]
    fn absolute_and_delta_times_become_relative() {
        let abs = concat!(
            "{\"qlog_version\":\"0.3\",\"trace\":{\"common_fields\":{\"time_format\":\"absolute\"}}}\n",
            "{\"time\":1000.0,\"name\":\"transport:a\"}\n",
            "{\"time\":1002.5,\"name\":\"transport:b\"}\n",
        );
        let (doc, _) = run(abs, &ef()).unwrap();
        assert_eq!(doc["traces"][0]["common_fields"]["reference_time"], 1000.0);
        let times: Vec<f64> = events(&doc)
            .iter()
            .map(|e| e[0].as_f64().unwrap())
            .collect();
        assert_eq!(times, vec![0.0, 2.5]);

        let delta = abs
            .replace("absolute", "delta")
            .replace("1000.0", "3.0")
            .replace("1002.5", "2.0");
        let (doc, _) = run(&delta, &ef()).unwrap();
        let times: Vec<f64> = events(&doc)
            .iter()
            .map(|e| e[0].as_f64().unwrap())
            .collect();
        assert_eq!(times, vec![3.0, 5.0]);
    }

    #[test]
    fn late_events_are_reordered_or_clamped() {
        let text = concat!(
            "{\"time\":1.0,\"name\":\"quic:packet_sent\",\"data\":{}}\n",
            "{\"time\":3.0,\"name\":\"quic:packet_sent\",\"data\":{}}\n",
            "{\"time\":2.0,\"name\":\"nc:cc_state\",\"data\":{}}\n",
        );
        let (doc, stats) = run(text, &ef()).unwrap();
        let names: Vec<&str> = events(&doc)
            .iter()
            .map(|e| e[2].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["packet_sent", "cc_state", "packet_sent"]);
        assert_eq!((stats.traces[0].late, stats.traces[0].clamped), (1, 0));

        let opts = Options {
            reorder_window: 0,
            ..ef()
        };
        let (doc, stats) = run(text, &opts).unwrap();
        assert_eq!(
            events(&doc)[2],
            json!([3.0, "nc", "cc_state", {"time_clamped_from": 2.0}])
        );
        assert_eq!(stats.traces[0].clamped, 1);
    }

    #[test]
    fn objects_layout() {
        let text = "{\"time\":0.5,\"name\":\"http3:frame_created\",\"data\":{\"length\":3}}\n";
        let opts = Options {
            layout: Layout::Objects,
            title: Some("T".into()),
            ..ef()
        };
        let (doc, _) = run(text, &opts).unwrap();
        assert_eq!(doc["title"], "T");
        assert!(doc["traces"][0].get("event_fields").is_none());
        assert_eq!(
            events(&doc)[0],
            json!({"time": 0.5, "name": "http:frame_created", "data": {"length": 3, "byte_length": 3}})
        );
    }

    #[test]
    fn a_header_only_trace_gets_a_placeholder_event() {
        let (doc, stats) = run("\u{1e}{\"trace\":{}}\n", &ef()).unwrap();
        assert_eq!(
            events(&doc),
            &vec![json!([0.0, "info", "message", {"message": "no events in this qlog"}])]
        );
        assert_eq!(
            doc["traces"][0]["vantage_point"],
            json!({"type": "unknown"})
        );
        assert_eq!(stats.events(), 0);
    }

    #[test]
    fn input_errors() {
        let err = |t: &str| run(t, &ef()).unwrap_err();
        assert_eq!(err(""), "no qlog records");
        assert!(err("{\"qlog_version\":\"draft-02\",\"traces\":[]}").contains("not JSON-SEQ"));
        assert!(
            err("{\"trace\":{}}\n{\"trace\":{}}\n").starts_with("record 2: a second qlog header")
        );
        assert!(err("{\"time\":1}\n{\"time\":2,\"name\":\"x\"}\n")
            .starts_with("record 1: not a qlog event"));
        assert!(err("[1]\n").starts_with("record 1: not a qlog event"));
        let overflow = concat!(
            "{\"trace\":{\"common_fields\":{\"time_format\":\"delta\"}}}\n",
            "{\"time\":1e308,\"name\":\"x\"}\n{\"time\":1e308,\"name\":\"x\"}\n",
        );
        assert_eq!(err(overflow), "record 3: time out of range");
        let many = convert_many(
            [
                ("a.sqlog".to_string(), &b"{\"trace\":{}}\n"[..]),
                ("b.sqlog".to_string(), &b"x\ny\n"[..]),
            ],
            Vec::new(),
            &ef(),
        );
        assert!(many.unwrap_err().starts_with("b.sqlog: record 1: "));
        let none: [(String, &[u8]); 0] = [];
        assert_eq!(
            convert_many(none, Vec::new(), &ef()).unwrap_err(),
            "no input"
        );
    }
}
