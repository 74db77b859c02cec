//! `nc-experiment bench-fairness --merge`: one report from the runs of
//! earlier reports of the same cells, so that a campaign can be made in
//! parts (seeds 1–5 one day, 6–10 the next) and judged as one.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use crate::experiment::bench::utc_stamp;
use crate::experiment::fairness::{
    document_for, exit_code, plan, seed_ranges, verdicts, write_report, Cell, CellRun,
    FairnessReport,
};
use crate::experiment::fairness_options::FairnessOptions;

/// More runs per cell than a report plausibly planned.
const MAX_RUNS: u64 = 100_000;

/// The runs of one earlier report, mapped onto this plan's cells.
#[derive(Debug)]
struct Part {
    /// The file, as given.
    path: String,
    /// The seeds it planned (`--seed` .. `--seed` + `--runs`).
    seeds: Vec<u64>,
    /// The cells of this plan it planned them for.
    cells: Vec<usize>,
    /// (cell of this plan, seed, figure) of every run it made.
    runs: Vec<(usize, u64, Option<f64>)>,
}

/// A cell as JSON, without what may differ between the parts of one
/// campaign (the per-run cap).
fn comparable(cell: &Value) -> Value {
    let mut c = cell.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("timeout");
    }
    c
}

/// The link settings of `options.base` that every part must share (the
/// cells carry the rest).
const LINK: [&str; 6] = [
    "rate_bps",
    "rtt",
    "loss_position",
    "spin",
    "no_realtime",
    "idle_ms",
];

/// Reads one report and maps its cells onto `f`'s plan `cells`: each must
/// be a cell of this plan (same group and label) with the same flows,
/// buffer, loss, size and stagger, on the same link.
fn load(path: &Path, f: &FairnessOptions, cells: &[Cell]) -> Result<Part, String> {
    let name = path.display().to_string();
    let err = |what: String| format!("--merge: {name}: {what}");
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
    let (Some(seed), Some(planned), Some(file_cells), Some(file_runs)) = (
        v["options"]["base"]["seed"].as_u64(),
        v["options"]["runs"].as_u64(),
        v["cells"].as_array(),
        v["runs"].as_array(),
    ) else {
        return Err(err(
            "not a bench-fairness report (options, cells, runs)".into()
        ));
    };
    // The seeds it planned: listed by a merged report (they may have
    // gaps), else --seed .. --seed + --runs.
    let seeds: Vec<u64> = match v["seeds"].as_array() {
        Some(list) => list.iter().filter_map(Value::as_u64).collect(),
        None if planned <= MAX_RUNS && seed.checked_add(planned).is_some() => {
            (seed..seed + planned).collect()
        }
        None => return Err(err(format!("{planned} runs from seed {seed}"))),
    };
    let base = serde_json::to_value(&f.base).map_err(|e| err(e.to_string()))?;
    for k in LINK {
        if v["options"]["base"][k] != base[k] {
            return Err(err(format!(
                "made with another {k} ({} here, {} there): give the options the runs \
                 were made with",
                base[k], v["options"]["base"][k]
            )));
        }
    }
    let ours: Vec<Value> = cells
        .iter()
        .map(|c| serde_json::to_value(c).map(|c| comparable(&c)))
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    let mut map = Vec::with_capacity(file_cells.len());
    for fc in file_cells {
        let fc = comparable(fc);
        let label = fc["label"].as_str().unwrap_or("?");
        let group = fc["group"].as_str().unwrap_or("?");
        let i = ours
            .iter()
            .position(|c| c["group"] == fc["group"] && c["label"] == fc["label"])
            .ok_or_else(|| {
                err(format!(
                    "cell '{label}' ({group}) is not in this plan: give the options the \
                     runs were made with (except --runs and --seed)"
                ))
            })?;
        if ours[i] != fc {
            return Err(err(format!(
                "cell '{label}' ({group}) differs from this plan's (flows, link, size or \
                 stagger): give the options the runs were made with"
            )));
        }
        map.push(i);
    }
    let mut runs = Vec::with_capacity(file_runs.len());
    for r in file_runs {
        let (Some(cell), Some(run)) = (r["cell"].as_u64(), r["run"].as_u64()) else {
            return Err(err("a run without its cell and run index".into()));
        };
        let Some(&i) = map.get(cell as usize) else {
            return Err(err(format!("a run of cell {cell}, which the report lacks")));
        };
        let Some(run_seed) = seed.checked_add(run).filter(|s| seeds.contains(s)) else {
            return Err(err(format!("run {run} has a seed it did not plan")));
        };
        runs.push((i, run_seed, r["value"].as_f64()));
    }
    Ok(Part {
        path: name,
        seeds,
        cells: map,
        runs,
    })
}

/// The merged runs: run index = seed − the lowest seed. Two parts that
/// planned the same seed for the same cell would count its runs twice: an
/// error. Parts of different groups (or cells) may share seeds.
fn merge(parts: &[Part]) -> Result<(Vec<u64>, Vec<CellRun>), String> {
    let mut owner: BTreeMap<(usize, u64), &str> = BTreeMap::new();
    for p in parts {
        for &c in &p.cells {
            for &s in &p.seeds {
                if let Some(other) = owner.insert((c, s), &p.path) {
                    return Err(format!(
                        "--merge: {other} and {} both planned seed {s} for one cell: its \
                         runs would count twice",
                        p.path
                    ));
                }
            }
        }
    }
    let mut seeds: Vec<u64> = owner.keys().map(|&(_, s)| s).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let first = seeds.first().copied().unwrap_or(0);
    let runs = parts
        .iter()
        .flat_map(|p| &p.runs)
        .map(|&(cell, seed, value)| CellRun {
            cell,
            run: (seed - first) as usize,
            compete: None,
            alone: None,
            value,
        })
        .collect();
    Ok((seeds, runs))
}

/// `bench-fairness --merge`: prints the report of the merged runs and
/// writes it (markdown and JSON) to `--out`, as a campaign would. Exit
/// code 0, or 1 if no run measured anything.
pub fn merge_fairness(f: &FairnessOptions) -> Result<u8, String> {
    let cells = plan(f);
    let parts: Vec<Part> = f
        .merge
        .iter()
        .map(|p| load(p, f, &cells))
        .collect::<Result<_, _>>()?;
    let (seeds, runs) = merge(&parts)?;
    for (i, c) in cells.iter().enumerate() {
        if !runs.iter().any(|r| r.cell == i) {
            eprintln!(
                "nc-experiment: warning: --merge: no part has a run of '{}' ({}); \
                 --groups, --others or --buffers may name more than the parts ran",
                c.label,
                c.group.name()
            );
        }
    }
    // The merged report reads as one campaign: seed = --seed + run.
    let mut merged = f.clone();
    merged.base.seed = seeds.first().copied().unwrap_or(f.base.seed);
    merged.runs = seeds.len();
    let started = utc_stamp(SystemTime::now());
    let sources: Vec<String> = parts.iter().map(|p| p.path.clone()).collect();
    let mut doc = document_for(&merged, &started, &seeds, &cells, &runs);
    doc += "\nMerged from ";
    doc += &parts
        .iter()
        .map(|p| format!("{} (seeds {})", p.path, seed_ranges(&p.seeds)))
        .collect::<Vec<_>>()
        .join(", ");
    doc += ".\n";
    print!("{doc}");
    let verdicts = verdicts(&cells, &runs);
    let report = FairnessReport {
        merged_from: &sources,
        seeds: &seeds,
        started: &started,
        options: &merged,
        cells: &cells,
        runs: &runs,
        verdicts: &verdicts,
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    write_report(&f.out, &started, "json", &(json + "\n"))?;
    eprintln!("wrote {}", write_report(&f.out, &started, "md", &doc)?);
    Ok(exit_code(&runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::fairness_options::tests::opts;

    /// A report of `f`'s plan in which run r of cell c measured
    /// `value(c, r)` (None: failed).
    fn report(f: &FairnessOptions, value: impl Fn(usize, usize) -> Option<f64>) -> String {
        let cells = plan(f);
        let runs: Vec<CellRun> = (0..f.runs)
            .flat_map(|run| (0..cells.len()).map(move |cell| (cell, run)))
            .map(|(cell, run)| CellRun {
                cell,
                run,
                compete: None,
                alone: None,
                value: value(cell, run),
            })
            .collect();
        let verdicts = verdicts(&cells, &runs);
        let seeds: Vec<u64> = (0..f.runs as u64).map(|r| f.base.seed + r).collect();
        serde_json::to_string(&FairnessReport {
            merged_from: &[],
            seeds: &seeds,
            started: "x",
            options: f,
            cells: &cells,
            runs: &runs,
            verdicts: &verdicts,
        })
        .unwrap()
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn parts_merge_in_seed_order_and_overlaps_are_refused() {
        let dir = std::env::temp_dir().join(format!("fairness-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args = "--groups shallow --others reno --buffers 10kB";
        // Seeds 6-7 (the second part), then 1-3 with cell 0's run 1 failed.
        let b = write(
            &dir,
            "b.json",
            &report(&opts(&format!("{args} --runs 2 --seed 6")), |c, r| {
                Some((13 + 10 * c + r) as f64 / 10.0)
            }),
        );
        let a = write(
            &dir,
            "a.json",
            &report(&opts(&format!("{args} --runs 3 --seed 1")), |c, r| {
                (c != 0 || r != 1).then_some((10 + 10 * c + r) as f64 / 10.0)
            }),
        );
        let f = opts(args);
        let cells = plan(&f);
        let parts = [load(&b, &f, &cells).unwrap(), load(&a, &f, &cells).unwrap()];
        assert_eq!(parts[0].seeds, [6, 7]);
        let (seeds, runs) = merge(&parts).unwrap();
        assert_eq!(seeds, [1, 2, 3, 6, 7]);
        assert_eq!(runs.len(), 5 * cells.len());
        // Cell 0 in seed order: run index = seed - 1.
        let mut c0: Vec<(usize, Option<f64>)> = runs
            .iter()
            .filter(|r| r.cell == 0)
            .map(|r| (r.run, r.value))
            .collect();
        c0.sort_by_key(|r| r.0);
        assert_eq!(
            c0,
            [
                (0, Some(1.0)),
                (1, None),
                (2, Some(1.2)),
                (5, Some(1.3)),
                (6, Some(1.4))
            ]
        );
        let mut merged = f.clone();
        merged.runs = seeds.len();
        let doc = document_for(&merged, "t", &seeds, &cells, &runs);
        assert!(doc.contains("5 runs, seeds 1–3, 6–7 per cell"), "{doc}");
        assert!(doc.contains("| 1.00 – 1.20 1.30 1.40 |"), "{doc}");

        // The same seeds twice, a plan the runs were not made with, and a
        // file that is not a report.
        let twice = merge(&[load(&a, &f, &cells).unwrap(), load(&a, &f, &cells).unwrap()]);
        assert!(twice.unwrap_err().contains("both planned seed 1"));
        let load_with = |args: &str| {
            let g = opts(args);
            load(&a, &g, &plan(&g)).unwrap_err()
        };
        let other = load_with("--groups shallow --others reno --buffers 20kB");
        assert!(other.contains("not in this plan"), "{other}");
        let bigger = load_with(&format!("{args} --size 5MB"));
        assert!(bigger.contains("differs"), "{bigger}");
        let faster = load_with(&format!("{args} --rate 50mbit"));
        assert!(faster.contains("another rate_bps"), "{faster}");
        let mut huge: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
        huge["options"]["base"]["seed"] = (u64::MAX - 1).into();
        let listed = write(&dir, "listed.json", &huge.to_string());
        assert!(load(&listed, &f, &cells)
            .unwrap_err()
            .contains("did not plan"));
        huge.as_object_mut().unwrap().remove("seeds");
        let huge = write(&dir, "huge.json", &huge.to_string());
        assert!(load(&huge, &f, &cells)
            .unwrap_err()
            .contains("runs from seed"));
        let junk = write(&dir, "junk.json", "{\"runs\": []}");
        assert!(load(&junk, &f, &cells)
            .unwrap_err()
            .contains("not a bench-fairness report"));

        // A merged report lists its seeds, gaps included: merged again
        // with a part of seeds 4-5 it is accepted, with 6-7 refused.
        let mut merged_json: Value =
            serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
        merged_json["seeds"] = serde_json::json!([1, 2, 3, 6, 7]);
        merged_json["options"]["runs"] = 5.into();
        let m = write(&dir, "m.json", &merged_json.to_string());
        let c = write(
            &dir,
            "c.json",
            &report(&opts(&format!("{args} --runs 2 --seed 4")), |_, _| {
                Some(1.0)
            }),
        );
        let (seeds, _) =
            merge(&[load(&m, &f, &cells).unwrap(), load(&c, &f, &cells).unwrap()]).unwrap();
        assert_eq!(seeds, [1, 2, 3, 4, 5, 6, 7]);
        let again = merge(&[load(&m, &f, &cells).unwrap(), load(&b, &f, &cells).unwrap()]);
        assert!(again.unwrap_err().contains("both planned seed 6"));

        // One seed planned by two parts for different groups: no overlap.
        let g = opts("--groups shallow,loss --others reno --buffers 10kB");
        let g_cells = plan(&g);
        let part_of = |groups: &str, name: &str| {
            let h = opts(&format!(
                "--groups {groups} --others reno --buffers 10kB --runs 2 --seed 1"
            ));
            let path = write(&dir, name, &report(&h, |_, _| Some(1.0)));
            load(&path, &g, &g_cells).unwrap()
        };
        let (seeds, runs) =
            merge(&[part_of("shallow", "s.json"), part_of("loss", "l.json")]).unwrap();
        assert_eq!(seeds, [1, 2]);
        assert_eq!(runs.len(), 2 * g_cells.len());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
