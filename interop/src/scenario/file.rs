//! The scenario file format (TOML) and its errors.
//!
//! Every value keeps its position in the file, so that an error names the
//! file, the line and the field. The tables mirror `nc-experiment`'s
//! command line (see [`super::expand`], which turns a scenario into those
//! flags and lets the command line's parser check them): one meaning per
//! setting, whichever front end names it.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// A scenario error: where, which field, what.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// 1-based line, if known.
    pub line: Option<usize>,
    /// The field (`link.rate`, `sweep.loss[2]`), if known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A string, integer, float or boolean setting, as the command line would
/// spell it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// `"25mbit"`.
    Text(String),
    /// `3`.
    Int(i64),
    /// `0.05`.
    Float(f64),
    /// `true`.
    Bool(bool),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Text(s) => f.write_str(s),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// A positioned scalar.
pub type Setting = Spanned<Scalar>;
/// A positioned list of scalars.
pub type List = Spanned<Vec<Setting>>;

/// `[link]`: the emulated bottleneck (both directions).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Rate, e.g. `"25mbit"`.
    pub rate: Option<Setting>,
    /// Round-trip propagation delay, e.g. `"20ms"`.
    pub rtt: Option<Setting>,
    /// Drop-tail buffer: `"bdp"`, `"0.25bdp"`, `"64p"`, `"100kB"`.
    pub buffer: Option<Setting>,
    /// Loss per direction: a probability or a linkem loss spec.
    pub loss: Option<Setting>,
    /// `"before"` or `"after"` the queue.
    pub loss_position: Option<Setting>,
    /// Both directions from a trace (`NAME.down`, `NAME.up`).
    pub trace: Option<Setting>,
    /// Down link capacity trace.
    pub trace_down: Option<Setting>,
    /// Up link capacity trace.
    pub trace_up: Option<Setting>,
    /// Start offsets into the traces, one per run index.
    pub trace_offsets: Option<List>,
}

/// `[traffic]`: what the flows do.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Alternatives, one flow per run (a table row each):
    /// `[STACK:]CC[+nc=POLICY|off][+mode=full][+window=N]`.
    pub rows: Option<List>,
    /// The row ratios are taken to.
    pub reference: Option<Setting>,
    /// Instead of rows: two flows sharing the bottleneck in every run.
    pub compete: Option<List>,
    /// Start of the second competing flow after the first.
    pub stagger: Option<Setting>,
    /// Round-trip propagation delay of each competing flow (`--flow-rtt`).
    pub flow_rtt: Option<List>,
    /// Download size (`GET /bytes/N`).
    pub size: Option<Setting>,
    /// Instead: `GET /stream/RATE/DURATION`, e.g. `"8mbit/20s"`.
    pub stream: Option<Setting>,
}

/// `[run]`: repetitions and bounds.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCfg {
    /// Runs per cell (each with its own loss seed).
    pub runs: Option<Setting>,
    /// Seed of run 0 (run i uses seed + i).
    pub seed: Option<Setting>,
    /// Cap of one run, e.g. `"60s"`.
    pub timeout: Option<Setting>,
    /// The servers' idle timeout, ms.
    pub idle_timeout: Option<Setting>,
    /// Bound on the whole scenario: no run starts after it.
    pub max_duration: Option<Setting>,
}

/// `[sweep]`: the axes, each a list; the runner runs their product.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Loss settings (one table per other point, a column of cells).
    pub loss: Option<List>,
    /// Download sizes.
    pub size: Option<List>,
    /// Round-trip times.
    pub rtt: Option<List>,
    /// Rates.
    pub rate: Option<List>,
    /// Buffers.
    pub buffer: Option<List>,
}

/// `[plot]`: what the report draws.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plot {
    /// The x axis: a sweep axis (`loss`, `size`, `rtt`, `rate`, `buffer`)
    /// or `row`.
    pub x: Option<Spanned<String>>,
    /// The metric on y: a cell column (`efficiency`, `goodput_mbps`,
    /// `time_s`, `delay_p99_ms`, ...) or, for competing flows, `ratio`,
    /// `jain`.
    pub y: Option<Spanned<String>>,
    /// Model curves to overlay (see the report's model list).
    pub models: Option<Spanned<Vec<Spanned<String>>>>,
    /// Logarithmic x axis.
    pub log_x: Option<bool>,
    /// Logarithmic y axis.
    pub log_y: Option<bool>,
}

/// The tables a variant may override.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parts {
    /// `[link]`.
    pub link: Option<Link>,
    /// `[traffic]`.
    pub traffic: Option<Traffic>,
    /// `[run]`.
    pub run: Option<RunCfg>,
    /// `[sweep]`.
    pub sweep: Option<Sweep>,
    /// `[plot]`.
    pub plot: Option<Plot>,
}

/// A whole scenario file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// One-line title.
    pub title: Option<String>,
    /// The figure or table of a paper it mirrors.
    pub source: Option<String>,
    /// What it shows.
    pub description: Option<String>,
    /// `[link]`.
    pub link: Option<Link>,
    /// `[traffic]`.
    pub traffic: Option<Traffic>,
    /// `[run]`.
    pub run: Option<RunCfg>,
    /// `[sweep]`.
    pub sweep: Option<Sweep>,
    /// `[plot]`.
    pub plot: Option<Plot>,
    /// `[variant.NAME]`: overrides, e.g. `quick` (seconds, for the tests)
    /// and `full` (for the report).
    pub variant: Option<BTreeMap<String, Parts>>,
}

/// Fills every field of `$base` that `$over` sets.
macro_rules! overlay {
    ($base:expr, $over:expr, $($f:ident),+) => {
        $( if $over.$f.is_some() { $base.$f = $over.$f.clone(); } )+
    };
}

impl File {
    /// The scenario with variant `name`'s settings laid over the base
    /// (field by field; a sweep axis replaces the base's axis).
    pub fn with_variant(&self, name: &str) -> Option<File> {
        let v = self.variant.as_ref()?.get(name)?;
        let mut f = self.clone();
        if let Some(o) = &v.link {
            let b = f.link.get_or_insert_with(Default::default);
            overlay!(
                b,
                o,
                rate,
                rtt,
                buffer,
                loss,
                loss_position,
                trace,
                trace_down,
                trace_up
            );
            overlay!(b, o, trace_offsets);
        }
        if let Some(o) = &v.traffic {
            let b = f.traffic.get_or_insert_with(Default::default);
            overlay!(b, o, rows, reference, compete, stagger, flow_rtt, size, stream);
        }
        if let Some(o) = &v.run {
            let b = f.run.get_or_insert_with(Default::default);
            overlay!(b, o, runs, seed, timeout, idle_timeout, max_duration);
        }
        if let Some(o) = &v.sweep {
            let b = f.sweep.get_or_insert_with(Default::default);
            overlay!(b, o, loss, size, rtt, rate, buffer);
        }
        if let Some(o) = &v.plot {
            let b = f.plot.get_or_insert_with(Default::default);
            overlay!(b, o, x, y, models, log_x, log_y);
        }
        Some(f)
    }

    /// The variant names, sorted.
    pub fn variants(&self) -> Vec<String> {
        self.variant
            .as_ref()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// A parsed scenario file with what is needed to point at its lines.
#[derive(Clone, Debug)]
pub struct Source {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The parsed file.
    pub file: File,
}

impl Source {
    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Source, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.into(),
            line: None,
            field: None,
            message: e.to_string(),
        })?;
        Source::parse(path, text)
    }

    /// Parses `text` (read from `path`).
    pub fn parse(path: &Path, text: String) -> Result<Source, ScenarioError> {
        let file: File = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| line_of(&text, s.start));
            ScenarioError {
                file: path.into(),
                line,
                field: None,
                message: e.message().trim().to_string(),
            }
        })?;
        Ok(Source {
            path: path.into(),
            text,
            file,
        })
    }

    /// An error about `field` at `span`.
    pub fn error(&self, span: Option<Range<usize>>, field: &str, message: String) -> ScenarioError {
        ScenarioError {
            file: self.path.clone(),
            line: span.map(|s| line_of(&self.text, s.start)),
            field: (!field.is_empty()).then(|| field.to_string()),
            message,
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Source, ScenarioError> {
        Source::parse(Path::new("s.toml"), t.to_string())
    }

    #[test]
    fn unknown_field_names_its_line() {
        let e = parse("title = \"x\"\n[link]\nrate = \"1mbit\"\nrat = 3\n").unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("unknown field `rat`"), "{e}");
        assert!(e.to_string().starts_with("s.toml:4: "), "{e}");
    }

    #[test]
    fn syntax_error_names_its_line() {
        let e = parse("[link]\nrate = \n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    #[test]
    fn variant_overrides_field_by_field() {
        let s = parse(
            "[link]\nrate = \"25mbit\"\nrtt = \"20ms\"\n[sweep]\nloss = [0, 0.1, 0.2]\n\
             [variant.quick]\nlink = { rate = \"5mbit\" }\nsweep = { loss = [0.1] }\n",
        )
        .unwrap();
        let q = s.file.with_variant("quick").unwrap();
        let l = q.link.unwrap();
        assert_eq!(l.rate.unwrap().into_inner(), Scalar::Text("5mbit".into()));
        assert_eq!(l.rtt.unwrap().into_inner(), Scalar::Text("20ms".into()));
        assert_eq!(q.sweep.unwrap().loss.unwrap().into_inner().len(), 1);
        assert!(s.file.with_variant("full").is_none());
        assert_eq!(s.file.variants(), vec!["quick".to_string()]);
    }

    #[test]
    fn lines_are_counted_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
