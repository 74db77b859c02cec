//! Reference times. Draft-02 readers expect `common_fields.reference_time`
//! as milliseconds since the Unix epoch; the newer schema writes an object
//! (`{"clock_type", "epoch", "wall_clock_time"}`) with RFC 3339 strings.

use serde_json::Value;

/// Milliseconds since the Unix epoch of a trace's `reference_time`: a
/// number as it is, a numeric or RFC 3339 string, or an object's `epoch`
/// (when it is a date) or else its `wall_clock_time`. 0 when absent or
/// unreadable (draft-02's "unknown").
pub fn reference_ms(v: Option<&Value>) -> f64 {
    let ms = match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok().or_else(|| rfc3339_ms(s)),
        Some(Value::Object(o)) => {
            let date = |k: &str| o.get(k).and_then(Value::as_str).and_then(rfc3339_ms);
            date("epoch").or_else(|| date("wall_clock_time"))
        }
        _ => None,
    };
    ms.filter(|m| m.is_finite()).unwrap_or(0.0)
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time
/// (`2026-11-23T05:43:08.946788866Z`, `...+02:00`); `None` if it is not one.
pub fn rfc3339_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let digits = s.get(from..to)?;
        if digits.bytes().all(|c| c.is_ascii_digit()) {
            digits.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut fraction = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        fraction = format!("0.{}", &s[start..i]).parse().ok()?;
    }
    let offset_minutes = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let m = num(i + 1, i + 3)? * 60 + num(i + 4, i + 6)?;
            if *sign == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
        - offset_minutes * 60;
    Some((seconds as f64 + fraction) * 1e3)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (month 1-12).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Count years from March so that the leap day ends the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0.0));
        // Reference values computed independently (Python's datetime).
        let quiche = rfc3339_ms("2026-11-23T05:43:08.946788866Z").unwrap();
        assert!((quiche - 1_795_412_588_946.789).abs() < 1e-3, "{quiche}");
        assert_eq!(
            rfc3339_ms("2000-02-29T23:59:59-05:30"),
            Some(951_888_599_000.0)
        );
        for bad in [
            "",
            "2026-11-23",
            "2026-13-01T00:00:00Z",
            "2026-11-23T05:43:08",
            "2026-11-23T05:43:08.Z",
            "unknown",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn reference_time_forms() {
        assert_eq!(reference_ms(None), 0.0);
        assert_eq!(reference_ms(Some(&json!(1234.5))), 1234.5);
        assert_eq!(reference_ms(Some(&json!("1234.5"))), 1234.5);
        assert_eq!(reference_ms(Some(&json!("1970-01-01T00:00:01Z"))), 1000.0);
        let quiche = json!({"clock_type": "monotonic", "epoch": "unknown",
                            "wall_clock_time": "1970-01-01T00:00:02.5Z"});
        assert_eq!(reference_ms(Some(&quiche)), 2500.0);
        let system = json!({"clock_type": "system", "epoch": "1970-01-01T00:00:00.000Z"});
        assert_eq!(reference_ms(Some(&system)), 0.0);
        assert_eq!(reference_ms(Some(&json!({"epoch": "unknown"}))), 0.0);
    }
}
