//! Scenario files: every file in `scenarios/` plans in each of its
//! variants, and a bad file is reported at its line and field.

use std::path::{Path, PathBuf};

use interop::scenario::{load, plan, Source};

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_scenario_plans_in_every_variant() {
    let files = scenarios();
    assert!(files.len() >= 8, "{files:?}");
    for f in files {
        let src = Source::read(&f).unwrap();
        let variants = src.file.variants();
        assert!(
            variants.contains(&"quick".to_string()) && variants.contains(&"full".to_string()),
            "{}: needs quick and full variants",
            f.display()
        );
        for v in [None, Some("quick"), Some("full")] {
            let p = load(&f, v, Path::new("/nonexistent"), &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!p.jobs.is_empty());
            assert!(p.max_duration.is_some(), "{}: no time bound", f.display());
        }
        // The quick variant is seconds: few runs with short caps.
        let q = load(&f, Some("quick"), Path::new("/x"), &[]).unwrap();
        assert!(
            q.total_runs() <= 6,
            "{}: {} quick runs",
            f.display(),
            q.total_runs()
        );
        assert!(
            interop::scenario::worst_case(&q).as_secs() <= 60,
            "{}",
            f.display()
        );
    }
}

fn plan_text(text: &str) -> Result<interop::scenario::Plan, String> {
    let src = Source::parse(Path::new("bad.toml"), text.to_string()).map_err(|e| e.to_string())?;
    plan(&src, &src.file, None, Path::new("/x"), &[]).map_err(|e| e.to_string())
}

#[test]
fn errors_name_file_line_and_field() {
    let base = "title = \"t\"\n[link]\nrate = \"20mbit\"\n[traffic]\nrows = [\"hybrid\"]\n";
    // A value the command line's parser rejects, at its own line.
    let e = plan_text(&base.replace("\"20mbit\"", "\"fast\"")).unwrap_err();
    assert!(e.starts_with("bad.toml:3: link.rate: --rate"), "{e}");
    // An element of a list.
    let e = plan_text(&format!("{base}[sweep]\nloss = [0,\n 0.1,\n 1.5]\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:9: sweep.loss[2]: "), "{e}");
    // An unknown row.
    let e = plan_text(&base.replace("[\"hybrid\"]", "[\"hybrid\", \"bogus:cubic\"]")).unwrap_err();
    assert!(e.starts_with("bad.toml:5: traffic.rows[1]: "), "{e}");
    // An unknown field and a type error, from the TOML reader.
    let e = plan_text(&format!("{base}[run]\nrunz = 3\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:7: ") && e.contains("runz"), "{e}");
    let e = plan_text(&format!("{base}[plot]\nlog_x = \"yes\"\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:7: "), "{e}");
    // Plot names are checked.
    let e = plan_text(&format!("{base}[plot]\ny = \"speed\"\n")).unwrap_err();
    assert!(
        e.starts_with("bad.toml:7: plot.y: 'speed' is not one of"),
        "{e}"
    );
    let e = plan_text(&format!("{base}[plot]\nx = \"rtt\"\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:7: plot.x: "), "{e}");
    let e = plan_text(&format!("{base}[plot]\nmodels = [\"ideal\", \"magic\"]\n")).unwrap_err();
    assert!(
        e.starts_with("bad.toml:7: plot.models[1]: unknown model 'magic'"),
        "{e}"
    );
    // One competing flow (or nine), and loss given twice.
    let e = plan_text("[traffic]\ncompete = [\"hybrid\"]\n").unwrap_err();
    assert!(e.starts_with("bad.toml:2: traffic.compete: 1 flows"), "{e}");
    let nine = ["\"hybrid\""; 9].join(", ");
    let e = plan_text(&format!("[traffic]\ncompete = [{nine}]\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:2: traffic.compete: 9 flows"), "{e}");
    assert!(plan_text("[traffic]\ncompete = [\"hybrid\", \"hybrid\", \"hybrid\"]\n").is_ok());
    // Per-flow round trips.
    let two = "[traffic]\ncompete = [\"hybrid\", \"cubic\"]\n";
    let p = plan_text(&format!("{two}flow_rtt = [\"80ms\", \"40ms\"]\n")).unwrap();
    assert_eq!(
        p.jobs[0].opts.flow_rtt,
        [80, 40].map(std::time::Duration::from_millis).to_vec()
    );
    let e = plan_text(&format!("{two}flow_rtt = [\"80ms\",\n \"soon\"]\n")).unwrap_err();
    assert!(e.starts_with("bad.toml:4: traffic.flow_rtt[1]: "), "{e}");
    let e = plan_text("[link]\nloss = 0.1\n[sweep]\nloss = [0]\n").unwrap_err();
    assert!(e.contains("link.loss: given both"), "{e}");
    let e = plan_text("[link]\nbuffer = \"bdp\"\n[sweep]\nbuffer = [\"64p\"]\n").unwrap_err();
    assert!(e.starts_with("bad.toml:2: buffer given both"), "{e}");
    // A missing variant.
    let dir = std::env::temp_dir().join(format!("scen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("v.toml");
    std::fs::write(&f, base).unwrap();
    let e = load(&f, Some("quick"), Path::new("/x"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no variant 'quick'"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweeps_multiply_into_jobs_and_bdp_fractions_resolve() {
    let p = plan_text(
        "[link]\nrate = \"20mbit\"\n[traffic]\nrows = [\"hybrid\", \"cubic\"]\n\
         [sweep]\nloss = [0, 0.05]\nrtt = [\"10ms\", \"100ms\"]\nbuffer = [\"bdp\", \"0.25bdp\", \"64p\"]\n",
    )
    .unwrap();
    assert_eq!(p.jobs.len(), 6);
    assert_eq!(p.total_runs(), 6 * 2 * 2 * 3); // jobs x losses x rows x runs
    let j = &p.jobs[4]; // rtt 100ms, 0.25 bdp
    assert_eq!(j.label(), "rtt=100ms buffer=0.25bdp");
    // 20 Mbit/s x 100 ms / 8 x 0.25 = 62,500 bytes.
    assert_eq!(j.opts.buffer, "62500B");
    assert_eq!(p.jobs[5].opts.buffer, "64p");
    assert_eq!(p.plot.x, "rtt"); // the first swept axis by default
    assert_eq!(p.jobs[0].opts.loss.len(), 2);
}

#[test]
fn kept_qlog_files_are_compressed_and_still_readable() {
    let dir = std::env::temp_dir().join(format!("scen-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = "\u{1e}{\"trace\":{\"vantage_point\":{\"type\":\"server\"}}}\n";
    let event = "\u{1e}{\"time\":1.5,\"name\":\"quic:packet_sent\",\"data\":{}}\n";
    let text = format!("{head}{}", event.repeat(100));
    std::fs::write(dir.join("server-ab.sqlog"), &text).unwrap();
    interop::experiment::process::gzip_files(&dir).unwrap();
    interop::experiment::process::gzip_files(&dir).unwrap(); // idempotent
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["server-ab.sqlog.gz"]);
    let gz = dir.join("server-ab.sqlog.gz");
    let mut back = String::new();
    std::io::Read::read_to_string(&mut qlog_analysis::open(&gz).unwrap(), &mut back).unwrap();
    assert_eq!(back, text);
    assert!(std::fs::metadata(&gz).unwrap().len() < 1000);
    let t = qlog_analysis::Trace::read(&gz).unwrap();
    assert_eq!(t.events.len(), 100);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn series_follow_the_plot_axes() {
    use interop::experiment::stats::{summarize_exact, Cell};
    use interop::scenario::series::series;
    use interop::scenario::JobReport;
    let p = plan_text(
        "[link]\nrate = \"20mbit\"\n[traffic]\nrows = [\"hybrid\", \"cubic\"]\n\
         [sweep]\nloss = [0, 0.1]\nrtt = [\"10ms\", \"100ms\"]\n[plot]\nx = \"rtt\"\ny = \"goodput_mbps\"\n",
    )
    .unwrap();
    let jobs: Vec<JobReport> = p
        .jobs
        .iter()
        .enumerate()
        .map(|(k, j)| JobReport {
            point: j.point.clone(),
            options: j.opts.clone(),
            results: Some(Vec::new()),
            cells: Some(
                j.opts
                    .loss
                    .iter()
                    .flat_map(|l| {
                        j.opts.rows.iter().map(move |r| Cell {
                            row: r.clone(),
                            title: r.clone(),
                            loss: l.label.clone(),
                            loss_p: l.mean,
                            goodput_mbps: summarize_exact(&[k as f64, k as f64 + 2.0]),
                            ..Default::default()
                        })
                    })
                    .collect(),
            ),
            compete: None,
            planned: 0,
        })
        .collect();
    // x = rtt: one series per (row, loss), a point per RTT in ms.
    let s = series(&p.plot, &jobs);
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(s[0].name, "hybrid loss=0%");
    let xs: Vec<f64> = s[0].points.iter().map(|q| q.x).collect();
    assert_eq!(xs, [10.0, 100.0]);
    assert_eq!((s[0].points[1].median, s[0].points[1].max), (2.0, 3.0));
    // x = loss: a series per (row, other point), x the loss probability.
    let mut plot = p.plot.clone();
    plot.x = "loss".into();
    let s = series(&plot, &jobs);
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].name, "hybrid (rtt=10ms)");
    assert_eq!(
        s[0].points.iter().map(|q| q.x).collect::<Vec<_>>(),
        [0.0, 0.1]
    );
    // x = row: a series per loss, x the row's position.
    plot.x = "row".into();
    let s = series(&plot, &jobs[..1]);
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].name, "loss=10%");
    assert_eq!(s[1].points[1].x_label, "cubic");
}
