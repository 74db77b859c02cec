//! Event names and fields, newer qlog schema → qlog draft-02 as qvis reads
//! it (its `QlogSchema02` enums and the fields its congestion graph,
//! sequence diagram and packetization diagram look up).

use serde_json::{Map, Value};

/// Draft-02 category and event type of an event called `name` in the
/// newer schema (`namespace:event`).
///
/// * `quic:` and `transport:` events go to `transport`, except the
///   recovery events (`recovery_metrics_updated` → `recovery:metrics_updated`,
///   `recovery_parameters_set` → `recovery:parameters_set`,
///   `congestion_state_updated`, `packet_lost`, `loss_timer_updated`,
///   `marked_for_retransmit`, `ecn_state_updated` → `recovery`), the
///   connection-level ones (`server_listening`, `connection_started`,
///   `connection_closed`, `connection_id_updated`, `spin_bit_updated`,
///   `connection_state_updated`, `mtu_updated` → `connectivity`) and the keys
///   (`key_updated`, `key_discarded` → `security:key_updated`,
///   `security:key_retired`);
/// * `http3:` and `h3:` → `http`;
/// * `loglevel:<level>` → `<level>:message`;
/// * `security:key_discarded` → `security:key_retired`;
/// * everything else keeps its namespace as the category (`nc:`, `recovery:`,
///   `qpack:`, ...); a name without one gets category `unknown`.
pub fn map_name(name: &str) -> (String, String) {
    let (ns, event) = name.split_once(':').unwrap_or(("unknown", name));
    let (category, event) = match ns {
        "quic" | "transport" => quic_event(event),
        "http3" | "h3" => ("http", event),
        "loglevel" => (event, "message"),
        "security" => security_event(event),
        _ => (ns, event),
    };
    (category.to_string(), event.to_string())
}

fn quic_event(event: &str) -> (&str, &str) {
    match event {
        "recovery_metrics_updated" => ("recovery", "metrics_updated"),
        "recovery_parameters_set" => ("recovery", "parameters_set"),
        "congestion_state_updated"
        | "packet_lost"
        | "loss_timer_updated"
        | "marked_for_retransmit"
        | "ecn_state_updated" => ("recovery", event),
        "server_listening"
        | "connection_started"
        | "connection_closed"
        | "connection_id_updated"
        | "spin_bit_updated"
        | "connection_state_updated"
        | "mtu_updated" => ("connectivity", event),
        "key_updated" | "key_discarded" => security_event(event),
        _ => ("transport", event),
    }
}

fn security_event(event: &str) -> (&str, &str) {
    match event {
        "key_discarded" => ("security", "key_retired"),
        _ => ("security", event),
    }
}

/// Adapts the data of a `category:event` to draft-02 in place. Fields are
/// added or moved, never dropped:
///
/// * packet events: draft-01 style `header.packet_size` and
///   `header.payload_length` move to `raw.length` and `raw.payload_length`,
///   a top-level `packet_type` into `header` (qvis reads those places and
///   alerts otherwise); STREAM and CRYPTO frames get draft-02's `length`
///   from `raw.payload_length`; frames of type `unknown` become
///   `unknown_frame_type` with `raw_frame_type` (from `frame_type_bytes`);
/// * `parameters_set`: `owner` (draft-02) from `initiator`;
/// * `http:frame_created`/`frame_parsed`: `byte_length` from `length` or
///   `raw.length`;
/// * missing (`null`) data becomes `{}` (qvis reads fields of it).
pub fn adapt(category: &str, event: &str, data: &mut Value) {
    if data.is_null() {
        *data = Value::Object(Map::new());
    }
    let Some(d) = data.as_object_mut() else {
        return;
    };
    match (category, event) {
        ("transport", "packet_sent" | "packet_received" | "packet_dropped" | "packet_buffered")
        | ("recovery", "packet_lost") => adapt_packet(d),
        (_, "parameters_set") => copy_if_absent(d, "initiator", "owner"),
        ("http", "frame_created" | "frame_parsed") if !d.contains_key("byte_length") => {
            let len = d
                .get("length")
                .or_else(|| d.get("raw").and_then(|r| r.get("length")))
                .cloned();
            if let Some(len) = len {
                d.insert("byte_length".into(), len);
            }
        }
        _ => {}
    }
}

fn adapt_packet(d: &mut Map<String, Value>) {
    if let Some(t) = d.remove("packet_type") {
        let header = d
            .entry("header")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(h) = header.as_object_mut() {
            h.entry("packet_type").or_insert(t);
        }
    }
    for (old, new) in [
        ("packet_size", "length"),
        ("payload_length", "payload_length"),
    ] {
        let Some(v) = d
            .get_mut("header")
            .and_then(Value::as_object_mut)
            .and_then(|h| h.remove(old))
        else {
            continue;
        };
        let raw = d.entry("raw").or_insert_with(|| Value::Object(Map::new()));
        if let Some(raw) = raw.as_object_mut() {
            raw.entry(new).or_insert(v);
        }
    }
    let Some(frames) = d.get_mut("frames").and_then(Value::as_array_mut) else {
        return;
    };
    for f in frames.iter_mut().filter_map(Value::as_object_mut) {
        match f.get("frame_type").and_then(Value::as_str) {
            Some("stream" | "crypto") if !f.contains_key("length") => {
                if let Some(len) = f.get("raw").and_then(|r| r.get("payload_length")).cloned() {
                    f.insert("length".into(), len);
                }
            }
            Some("unknown") => {
                f.insert("frame_type".into(), "unknown_frame_type".into());
                copy_if_absent(f, "frame_type_bytes", "raw_frame_type");
            }
            _ => {}
        }
    }
}

fn copy_if_absent(d: &mut Map<String, Value>, from: &str, to: &str) {
    if !d.contains_key(to) {
        if let Some(v) = d.get(from).cloned() {
            d.insert(to.into(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn name(n: &str) -> (String, String) {
        map_name(n)
    }

    #[test]
    fn names() {
        let cases = [
            ("quic:packet_sent", "transport", "packet_sent"),
            ("quic:packet_received", "transport", "packet_received"),
            ("quic:parameters_set", "transport", "parameters_set"),
            ("quic:stream_data_moved", "transport", "stream_data_moved"),
            (
                "quic:recovery_metrics_updated",
                "recovery",
                "metrics_updated",
            ),
            ("quic:recovery_parameters_set", "recovery", "parameters_set"),
            (
                "quic:congestion_state_updated",
                "recovery",
                "congestion_state_updated",
            ),
            ("quic:packet_lost", "recovery", "packet_lost"),
            (
                "quic:connection_closed",
                "connectivity",
                "connection_closed",
            ),
            (
                "transport:connection_started",
                "connectivity",
                "connection_started",
            ),
            ("quic:key_discarded", "security", "key_retired"),
            ("security:key_discarded", "security", "key_retired"),
            ("security:key_updated", "security", "key_updated"),
            ("recovery:metrics_updated", "recovery", "metrics_updated"),
            ("http3:frame_created", "http", "frame_created"),
            ("h3:frame_parsed", "http", "frame_parsed"),
            ("qpack:headers_encoded", "qpack", "headers_encoded"),
            ("loglevel:warning", "warning", "message"),
            ("nc:source_sent", "nc", "source_sent"),
            ("nc:cc_state", "nc", "cc_state"),
            ("vendor:thing", "vendor", "thing"),
            ("bare", "unknown", "bare"),
        ];
        for (n, c, e) in cases {
            assert_eq!(name(n), (c.to_string(), e.to_string()), "{n}");
        }
    }

    #[test]
    fn packet_fields() {
        let mut d = json!({
            "header": {"packet_type": "1RTT", "packet_number": 7},
            "raw": {"length": 1200, "payload_length": 1180},
            "frames": [
                {"frame_type": "stream", "stream_id": 0, "offset": 0, "raw": {"payload_length": 1100}},
                {"frame_type": "unknown", "frame_type_bytes": 5128961, "raw": {"length": 40}},
                {"frame_type": "ack", "acked_ranges": [[0, 3], [5]]}
            ]
        });
        let before = d.clone();
        adapt("transport", "packet_sent", &mut d);
        assert_eq!(d["header"], before["header"]);
        assert_eq!(d["raw"], before["raw"]);
        assert_eq!(d["frames"][0]["length"], 1100);
        assert_eq!(d["frames"][1]["frame_type"], "unknown_frame_type");
        assert_eq!(d["frames"][1]["raw_frame_type"], 5128961);
        assert_eq!(d["frames"][2], before["frames"][2]);

        // draft-01 style fields move where qvis reads them
        let mut old =
            json!({"packet_type": "initial", "header": {"packet_number": 0, "packet_size": 1252}});
        adapt("recovery", "packet_lost", &mut old);
        assert_eq!(
            old,
            json!({"header": {"packet_type": "initial", "packet_number": 0}, "raw": {"length": 1252}})
        );
    }

    #[test]
    fn other_fields() {
        let mut p = json!({"initiator": "remote", "initial_max_data": 100});
        adapt("transport", "parameters_set", &mut p);
        assert_eq!(
            (&p["owner"], &p["initiator"]),
            (&json!("remote"), &json!("remote"))
        );
        let mut h = json!({"stream_id": 0, "length": 23, "frame": {"frame_type": "settings"}});
        adapt("http", "frame_created", &mut h);
        assert_eq!(h["byte_length"], 23);
        let mut g = json!({"stream_id": 0, "frame": {"frame_type": "data", "raw": {"length": 9}}, "raw": {"length": 11}});
        adapt("http", "frame_parsed", &mut g);
        assert_eq!(g["byte_length"], 11);
        let mut null = Value::Null;
        adapt("nc", "cc_state", &mut null);
        assert_eq!(null, json!({}));
        let mut nc = json!({"index": 3, "length": 1200});
        adapt("nc", "source_sent", &mut nc);
        assert_eq!(nc, json!({"index": 3, "length": 1200}));
    }
}
