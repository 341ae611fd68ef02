//! `schedlab report` and `schedlab compare` (issue 7): a fixture database written through
//! the store (no root, no time), real runs where root is needed, and the report opened in
//! headless Chromium.

use crate::util::{is_root, Lab};
use schedlab_model::{CellParams, CellRecord, Environment, GroupParams, Mode, Sample};
use schedlab_store::{NewRun, Store};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A pa3-shaped mock: cpu/io/mixed x other/fifo/rr x 4/16 processes, 3 repetitions, with
/// per-process values loosely after seed 000's Figure 12 and a -5%/0/+5% spread over repetitions.
pub(crate) fn fixture(factor: f64) -> Vec<CellRecord> {
    fixture_of(factor, 3, 0.05)
}

/// [`fixture`] with `reps` repetitions whose values cycle through -spread, 0, +spread.
pub(crate) fn fixture_of(factor: f64, reps: u32, spread: f64) -> Vec<CellRecord> {
    let mut out = Vec::new();
    let mut ordinal = 0;
    let (workloads, policies, counts) =
        (["cpu", "io", "mixed"], ["other", "fifo", "rr"], [4u32, 16]);
    for (wi, w) in workloads.iter().enumerate() {
        for (pi, p) in policies.iter().enumerate() {
            for (ci, &n) in counts.iter().enumerate() {
                let cell_id = (wi * 6 + pi * 2 + ci) as u32;
                let rt = *p != "other";
                let wall = [1.3, 0.4, 1.0][wi] * (1.0 + 0.4 * pi as f64) * (1.0 + ci as f64 * 0.5);
                let invol = if rt { 1.0 } else { [700.0, 2.0, 400.0][wi] * (1.0 + ci as f64) };
                let vol = [2.0, 250.0, 450.0][wi];
                for rep in 0..reps {
                    let f = factor * (1.0 + spread * ((rep % 3) as f64 - 1.0));
                    let params = CellParams {
                        cell_id,
                        key: format!("{w}/{p}{}/n{n}", if rt { ":98" } else { "" }),
                        workload: w.to_string(),
                        workload_kind: ["pi", "copy", "mixed"][wi].to_string(),
                        policy: p.to_string(),
                        class: p.to_string(),
                        priority: if rt { 98 } else { 0 },
                        processes: n,
                        ..Default::default()
                    };
                    out.push(record(
                        params,
                        rep,
                        ordinal,
                        wall * f * n as f64 / 2.0,
                        (0..n)
                            .map(|i| Sample {
                                index: i,
                                pid: 100 + i as i32,
                                exit_code: Some(0),
                                wall_s: wall * f,
                                user_s: wall * f * 0.9,
                                sys_s: 0.01,
                                cpu_pct: 90.0,
                                involuntary_csw: (invol * f) as i64 + i as i64 % 3,
                                voluntary_csw: vol as i64 + i as i64 % 2,
                                work_units: 1e6,
                                ..Default::default()
                            })
                            .collect(),
                    ));
                    ordinal += 1;
                }
            }
        }
    }
    out
}

/// A measured repetition that ended well, released at 1.7e9 + `ordinal` (Unix seconds).
pub(crate) fn record(
    params: CellParams,
    rep: u32,
    ordinal: u32,
    makespan_s: f64,
    samples: Vec<Sample>,
) -> CellRecord {
    CellRecord {
        params,
        rep,
        ordinal,
        started_unix: 1.7e9 + ordinal as f64,
        makespan_s,
        samples,
        ..Default::default()
    }
}

/// A lab1-shaped mock (seed 004): 4 or 8 hashers, unpinned or spread, no cgroup or
/// cpu.weight 200, alone or with 8 background spinners; 3 repetitions. With the background,
/// the odd hashers take longer (less so when pinned) and the weight gives the hashers more CPU.
fn lab1_fixture() -> Vec<CellRecord> {
    let mut out = Vec::new();
    let mut cell_id = 0;
    for affinity in ["all", "spread"] {
        for weight in [None, Some(200u32)] {
            for n in [4u32, 8] {
                for bg in [0u32, 8] {
                    let group = |name: &str,
                                 workload: &str,
                                 processes,
                                 affinity: &str,
                                 cpu_weight,
                                 background| GroupParams {
                        name: name.into(),
                        workload: workload.into(),
                        workload_kind: workload.into(),
                        policy: "other".into(),
                        class: "other".into(),
                        processes,
                        affinity: affinity.into(),
                        cpu_weight,
                        background,
                        ..Default::default()
                    };
                    let mut groups = vec![group("main", "hash", n, affinity, weight, false)];
                    if bg > 0 {
                        groups.push(group("bg", "spin", bg, "all", None, true));
                    }
                    let skew = if bg == 0 {
                        0.0
                    } else if affinity == "all" {
                        1.0
                    } else {
                        0.25
                    };
                    let base = if bg == 0 {
                        1.0
                    } else if weight.is_some() {
                        1.5
                    } else {
                        2.0
                    };
                    for rep in 0..3u32 {
                        let f = 1.0 + 0.05 * (rep as f64 - 1.0);
                        let wall = |i: u32| base * f * (1.0 + skew * (i % 2) as f64);
                        let mut samples: Vec<Sample> = (0..n)
                            .map(|i| Sample {
                                index: i,
                                group: "main".into(),
                                exit_code: Some(0),
                                wall_s: wall(i),
                                user_s: 0.9 * wall(i),
                                cpu_pct: 90.0,
                                involuntary_csw: 10 + bg as i64 + i as i64 % 3,
                                voluntary_csw: 2 + i as i64 % 2,
                                window_cpu_s: f,
                                work_units: 722_000.0,
                                end_offset_s: wall(i),
                                ..Default::default()
                            })
                            .collect();
                        let spinner_cpu = if weight.is_some() { 0.5 } else { 1.0 };
                        samples.extend((0..bg).map(|i| Sample {
                            index: n + i,
                            group: "bg".into(),
                            background: true,
                            window_cpu_s: spinner_cpu,
                            work_units: 1e9,
                            ..Default::default()
                        }));
                        let params = CellParams {
                            cell_id,
                            key: format!("hash/other/affinity={affinity}/cpu_weight={}/n{n}+bg.processes={bg}", weight.unwrap_or(0)),
                            workload: "hash".into(),
                            workload_kind: "hash".into(),
                            policy: "other".into(),
                            class: "other".into(),
                            processes: n,
                            groups: groups.clone(),
                            ..Default::default()
                        };
                        out.push(record(params, rep, cell_id * 3 + rep, wall(1), samples));
                    }
                    cell_id += 1;
                }
            }
        }
    }
    out
}

/// Writes a finished run of `records` through the store; returns its id.
pub(crate) fn store_run(db: &Path, name: &str, records: &[CellRecord]) -> i64 {
    store_run_as(db, name, records, Mode::Measured, 1.0, "Fixture CPU", "0")
}

/// [`store_run`] with the run's mode, scale, CPU model and spec hash given.
fn store_run_as(
    db: &Path,
    name: &str,
    records: &[CellRecord],
    mode: Mode,
    scale: f64,
    cpu: &str,
    hash: &str,
) -> i64 {
    let mut store = Store::open(db).unwrap();
    let env = Environment {
        kernel: "6.1.0-test".into(),
        cpu_model: cpu.into(),
        cpus: 2,
        cgroup: "v2".into(),
        ..Default::default()
    };
    let spec = format!("name = \"{name}\"\n[matrix]\nworkload = [\"cpu\", \"io\", \"mixed\"]\n");
    let id = store
        .create_run(&NewRun {
            name,
            mode,
            spec_path: "fixture.toml",
            spec_text: &spec,
            spec_hash: hash,
            plan_json: "{}",
            scale,
            env: &env,
            command_line: "fixture",
        })
        .unwrap();
    for r in records {
        store.insert_cell(id, r).unwrap();
    }
    store
        .finish_run(id, &schedlab_store::RunStatus::Complete, &["a fixture warning".to_string()])
        .unwrap();
    id
}

pub(crate) fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    buf.truncate(info.buffer_size());
    // Reduce to RGB whatever the encoder chose (Chromium writes RGBA).
    let rgb =
        buf.chunks_exact(channels).flat_map(|p| [p[0], p[1 % channels], p[2 % channels]]).collect();
    (info.width, info.height, rgb)
}

/// Pixels close to `c`, and the horizontal extent they cover.
fn colour_extent(w: u32, rgb: &[u8], c: (u8, u8, u8)) -> (usize, u32) {
    let (mut n, mut lo, mut hi) = (0, u32::MAX, 0);
    for (i, p) in rgb.chunks_exact(3).enumerate() {
        if p[0].abs_diff(c.0) < 16 && p[1].abs_diff(c.1) < 16 && p[2].abs_diff(c.2) < 16 {
            let x = i as u32 % w;
            n += 1;
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    (n, if n == 0 { 0 } else { hi - lo })
}

/// Asserts an image shows `series` lines drawn across the categories (not just a legend).
pub(crate) fn assert_drawn(what: &str, w: u32, rgb: &[u8], series: usize) {
    for (i, c) in schedlab_report::plots::PALETTE.iter().take(series).enumerate() {
        let (n, extent) = colour_extent(w, rgb, *c);
        assert!(
            n > 100 && extent > 200,
            "{what}: series {i} shows {n} pixels over {extent} px: the figure is blank or cut"
        );
    }
}

pub(crate) fn figure_ids(html: &str) -> Vec<String> {
    html.split("<figure id=\"").skip(1).map(|s| s[..s.find('"').unwrap()].to_string()).collect()
}

#[test]
fn report_of_a_fixture_run_has_every_figure_as_svg_and_png() {
    let lab = Lab::new();
    let id = store_run(&lab.db(), "pa3-fixture", &fixture(1.0));
    let out = lab.ok(&["report", &id.to_string(), "-o", "rep"]);
    assert!(out.contains("15 figures"), "{out}");
    let dir = lab.path("rep");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let ids = figure_ids(&html);
    assert_eq!(ids.len(), 15, "5 figures x 3 workloads: {ids:?}");
    for id in &ids {
        let stem = id.strip_prefix("fig-").unwrap();
        let svg = std::fs::read_to_string(dir.join(format!("figures/{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{stem}.svg");
        let (w, h, rgb) = decode(&dir.join(format!("figures/{stem}.png")));
        assert_eq!((w, h), (760, 420));
        assert_drawn(&format!("{stem}.png"), w, &rgb, 3);
    }
    assert!(
        html.contains("a fixture warning")
            && html.contains("Fixture CPU")
            && html.contains("name = &quot;pa3-fixture&quot;")
    );
    for banned in ["<script", "<link", "<img", "src=", "url(", "href=\"http"] {
        assert!(!html.contains(banned), "the report must fetch nothing: found {banned}");
    }
}

#[test]
fn report_refuses_bad_output_and_unknown_runs_before_writing() {
    let lab = Lab::new();
    let id = store_run(&lab.db(), "f", &fixture(1.0)).to_string();
    std::fs::write(lab.path("afile"), "keep").unwrap();
    std::fs::create_dir(lab.path("full")).unwrap();
    std::fs::write(lab.path("full/old.txt"), "keep").unwrap();
    std::os::unix::fs::symlink(lab.path("full"), lab.path("link")).unwrap();
    for (args, why) in [
        (vec!["report", &id, "-o", "afile"], "not a directory"),
        (vec!["report", &id, "-o", "full"], "not empty"),
        (vec!["report", &id, "-o", "link", "--force"], "symbolic link"),
        (vec!["report", "99", "-o", "new"], "there is no run 99"),
        (vec!["report", &id, "-o", "new", "--compare", "42"], "there is no run 42"),
        (vec!["report", &id, "-o", "new", "--metric", "latency"], "unknown metric"),
    ] {
        let out = lab.run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(lab.path("afile")).unwrap(), "keep");
    assert_eq!(
        std::fs::read_dir(lab.path("full")).unwrap().count(),
        1,
        "nothing written into the non-empty directory"
    );
    assert!(!lab.path("new").exists(), "no directory for a refused report");
    // --force writes beside what is there, and an empty existing directory needs no force.
    lab.ok(&["report", &id, "-o", "full", "--force"]);
    assert!(lab.path("full/index.html").exists() && lab.path("full/old.txt").exists());
    std::fs::create_dir(lab.path("empty")).unwrap();
    lab.ok(&["report", &id, "-o", "empty"]);
}

#[test]
fn compare_prints_table_markdown_and_json_and_the_report_gains_a_section() {
    let lab = Lab::new();
    let a = store_run(&lab.db(), "a", &fixture(1.0)).to_string();
    // B: every cell 50% slower, beyond the 5% spread between repetitions, and enough for each
    // of the 18 cells' tests to stay significant after Holm's correction (p < 0.05 / 18).
    let b = store_run(&lab.db(), "b", &fixture(1.5)).to_string();
    // Three repetitions a run cannot decide: the permutation test's smallest p is 0.1.
    let table = lab.ok(&["compare", &a, &b]);
    assert!(table.contains("0 regressed, 0 improved, 0 same, 18 undecided of 18"), "{table}");
    assert!(table.contains("cpu/fifo:98/n16") && table.contains("add repetitions"), "{table}");
    let md = lab.ok(&["compare", &a, &b, "--format", "markdown", "--metric", "makespan"]);
    assert!(md.contains("\n| cell | n 1 | run 1 mean ±95% CI |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", &a, &b, "--format", "json", "--metric", "user"]))
            .unwrap();
    assert_eq!(json["metric"], "user");
    assert_eq!(json["cells"].as_array().unwrap().len(), 18);
    assert_eq!(
        json["cells"][0]["a_values"].as_array().unwrap().len(),
        3,
        "one value per repetition"
    );
    let same = lab.ok(&["compare", &a, &a, "--format", "json"]);
    let same: serde_json::Value = serde_json::from_str(&same).unwrap();
    assert_eq!(same["summary"]["higher"], 0);
    assert_eq!(same["summary"]["lower"], 0);

    lab.ok(&["report", &a, "-o", "cmp", "--compare", &b, "--metric", "involuntary"]);
    let html = std::fs::read_to_string(lab.path("cmp/index.html")).unwrap();
    assert!(html.contains("Comparison: run 1 (A) against run 2 (B)"));
    assert!(html.contains("<details open>\n<summary>involuntary switches per process</summary>"));

    let other = store_run(&lab.db(), "other", &fixture(1.0)[..0]).to_string();
    let out = lab.run(&["compare", &a, &other]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cell in common"));
    let out = lab.run(&["compare", &a, &b, "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_warns_on_stderr_markdown_and_json_when_runs_differ_in_scale_mode_machine_or_spec() {
    let lab = Lab::new();
    let a = store_run(&lab.db(), "a", &fixture(1.0)).to_string();
    let same = store_run(&lab.db(), "same", &fixture(1.0)).to_string();
    let out = lab.run(&["compare", &a, &same]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("warning"),
        "two runs alike: no warning"
    );
    let b =
        store_run_as(&lab.db(), "b", &fixture(1.0), Mode::Sim, 0.5, "Other CPU", "1").to_string();
    let out = lab.run(&["compare", &a, &b]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    for w in [
        "differ in scale (run 1: 1, run 3: 0.5)",
        "run 1 was measured and run 3 simulated",
        "CPU Fixture CPU vs Other CPU",
        "different spec texts",
    ] {
        assert!(err.contains(w), "no warning {w:?}: {err}");
    }
    let md = lab.ok(&["compare", &a, &b, "--format", "markdown"]);
    assert!(md.starts_with("> **Warning:** the runs differ in scale"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", &a, &b, "--format", "json"])).unwrap();
    assert_eq!(json["warnings"].as_array().unwrap().len(), 4, "{}", json["warnings"]);
}

/// Chromium for `test`, or None after printing why the test is skipped.
pub(crate) fn chromium_for(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        eprintln!("SKIPPED {test}: chromium is not installed (apt-get install chromium)");
    }
    found
}

/// Chromium on PATH, if installed.
pub(crate) fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Screenshots `page` in headless Chromium (fresh profile, no network services) into `png`.
fn screenshot(chromium: &Path, page: &Path, png: &Path, size: (u32, u32)) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success() && png.exists(),
                "chromium failed ({status}) to screenshot {}",
                page.display()
            );
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish a screenshot of {} in 180 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Vertical runs (start, end) of the figure boxes' border colour in column `x`.
fn border_runs(w: u32, h: u32, rgb: &[u8], x: u32) -> Vec<(u32, u32)> {
    let is_border = |y: u32| {
        let i = ((y * w + x) * 3) as usize;
        rgb[i].abs_diff(0xd9) < 6 && rgb[i + 1].abs_diff(0xdc) < 6 && rgb[i + 2].abs_diff(0xe1) < 6
    };
    let mut runs = Vec::new();
    let mut start = None;
    for y in 0..h {
        match (is_border(y), start) {
            (true, None) => start = Some(y),
            (false, Some(s)) => {
                runs.push((s, y));
                start = None;
            }
            _ => {}
        }
    }
    runs.into_iter().filter(|(a, b)| b - a > 100).collect()
}

/// Opens the report in Chromium as one tall page and checks each figure box shows its
/// `series` series drawn across the plot. Returns how many figures it checked.
pub(crate) fn check_in_chromium(chromium: &Path, dir: &Path, series: usize) -> usize {
    check_figures_in_chromium(chromium, dir, &|_| (series, series))
}

/// As [`check_in_chromium`], with `want(figure id)` = (the series the figure has, how many of
/// them must be drawn across the plot): a measured run's lines may coincide and hide each other.
pub(crate) fn check_figures_in_chromium(
    chromium: &Path,
    dir: &Path,
    want: &dyn Fn(&str) -> (usize, usize),
) -> usize {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let ids = figure_ids(&html);
    assert!(!ids.is_empty(), "no figures in the report");
    let shot = dir.join("screenshot.png");
    // One figure box per ~510 px in the one-column grid, below the header.
    let height = (600 * ids.len() as u32 + 2000).max(16000);
    screenshot(chromium, &dir.join("index.html"), &shot, (1000, height));
    let (w, h, rgb) = decode(&shot);
    // The figure boxes' left border sits at main's left padding; find the column by its colour.
    let x = (16..64).max_by_key(|x| border_runs(w, h, &rgb, *x).len()).unwrap();
    let boxes = border_runs(w, h, &rgb, x);
    assert!(
        boxes.len() >= ids.len(),
        "found {} boxes for {} figures in the screenshot",
        boxes.len(),
        ids.len()
    );
    let debug = std::env::var_os("SCHEDLAB_DEBUG_SHOTS");
    for (id, (y0, y1)) in ids.iter().zip(&boxes) {
        assert!((380..700).contains(&(y1 - y0)), "{id}: a box of {} px is not a figure", y1 - y0);
        let crop: Vec<u8> = (*y0..*y1)
            .flat_map(|y| rgb[((y * w) * 3) as usize..((y + 1) * w * 3) as usize].to_vec())
            .collect();
        if let Some(d) = &debug {
            let f = std::fs::File::create(Path::new(d).join(format!("{id}.png"))).unwrap();
            let mut e = png::Encoder::new(f, w, y1 - y0);
            e.set_color(png::ColorType::Rgb);
            e.write_header().unwrap().write_image_data(&crop).unwrap();
        }
        let (series, spanning) = want(id);
        let drawn = schedlab_report::plots::PALETTE.iter().take(series).filter(|c| {
            let (n, extent) = colour_extent(w, &crop, **c);
            n > 100 && extent > 200
        });
        let drawn = drawn.count();
        assert!(drawn >= spanning, "{id}: {drawn} of its {series} series drawn across the plot, {spanning} wanted: blank or cut?");
    }
    ids.len()
}

#[test]
fn pa3_report_renders_every_figure_in_chromium() {
    let Some(chromium) = chromium_for("report::pa3_report_renders_every_figure_in_chromium") else {
        return;
    };
    let lab = Lab::new();
    let _one_at_a_time = measuring();
    let id = if is_root() {
        let pa3 = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/pa3.toml");
        // One repetition keeps the run short (its mixed cells' synchronous writes do not
        // scale); error bars are drawn and checked on the fixture run.
        lab.ok(&["run", pa3, "--scale", "0.002", "--repetitions", "1"]);
        "1".to_string()
    } else {
        eprintln!("not root: pa3's fifo and rr cells need CAP_SYS_NICE, so the report is of the fixture run");
        store_run(&lab.db(), "pa3-fixture", &fixture(1.0)).to_string()
    };
    lab.ok(&["report", &id, "-o", "rep"]);
    let checked = check_in_chromium(&chromium, &lab.path("rep"), 3);
    assert_eq!(checked, 15, "5 figures for each of cpu, io and mixed");
}

#[test]
fn lab1_report_renders_every_figure_in_chromium() {
    let Some(chromium) = chromium_for("report::lab1_report_renders_every_figure_in_chromium")
    else {
        return;
    };
    let lab = Lab::new();
    let _one_at_a_time = measuring();
    // 4 counts x (alone, 8 bg, 9 bg) x 2 affinities x 2 weights.
    let (id, figures) = if is_root() {
        let lab1 = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/lab1.toml");
        // 48 cells, each hasher ~10 ms of hashing: about 20 s on 2 CPUs, mostly process start-up.
        lab.ok(&["run", lab1, "--scale", "0.002", "--repetitions", "2"]);
        // Per background setting (alone, 8 bg, 9 bg): the 5 per-workload figures, Jain's
        // index and completion times at 4, 8, 16 and 32 hashers; the group share with a background.
        ("1".to_string(), 3 * (6 + 4) + 2)
    } else {
        eprintln!("not root: lab1's cgroup weights need root, so the report is of a lab1-shaped fixture run");
        (store_run(&lab.db(), "lab1-fixture", &lab1_fixture()).to_string(), 2 * (6 + 2) + 1)
    };
    lab.ok(&["report", &id, "-o", "rep"]);
    let html = std::fs::read_to_string(lab.path("rep/index.html")).unwrap();
    for fig in ["jain-hash-8_bg", "completion-hash-n8-8_bg", "share-hash-8_bg"] {
        assert!(
            html.contains(&format!("<figure id=\"fig-{fig}\">")),
            "no {fig}: {:?}",
            figure_ids(&html)
        );
    }
    // Every chart has a series per affinity x weight: unpinned or spread, no cgroup or weight 200.
    let checked = check_in_chromium(&chromium, &lab.path("rep"), 4);
    assert_eq!(checked, figures, "{:?}", figure_ids(&html));
}

/// A one-cell experiment whose key (`w/p/n<procs>`) is the same whatever the class, so
/// runs under different classes match cell for cell.
fn one_cell_spec(lab: &Lab, class: &str, procs: usize) -> String {
    let text = format!(
        "name = \"cmp-{class}\"\nrepetitions = 8\n[matrix]\nworkload = [\"w\"]\npolicy = [\"p\"]\nprocesses = [{procs}]\n\
         [workloads.w]\nkind = \"pi\"\niterations = 20_000_000\n[policies.p]\nclass = \"{class}\"\n"
    );
    lab.spec(&format!("{class}.toml"), &text).to_str().unwrap().to_string()
}

/// Serialises real runs: pa3's RT workers would preempt the FIFO workers of the compare
/// tests and change what they measure (one lock shared with the other RT tests).
pub(crate) fn measuring() -> std::sync::MutexGuard<'static, ()> {
    crate::util::measuring()
}

/// Two CPU-bound processes per CPU, so SCHED_OTHER ones preempt each other.
fn procs() -> usize {
    2 * std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn compare_json(lab: &Lab, metric: &str, alpha: &str) -> serde_json::Value {
    let out =
        lab.ok(&["compare", "1", "2", "--metric", metric, "--format", "json", "--alpha", alpha]);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn compare_flags_fifo_against_other_involuntary_switches() {
    require!(is_root(), "SCHED_FIFO needs CAP_SYS_NICE (run as root)");
    let _one_at_a_time = measuring();
    // What the two runs measure is timing (a stretched wall time raises FIFO workers' switches):
    // the comparison is judged under testkit's retry rule, each attempt with two fresh runs.
    schedlab_testkit::in_some_attempt("compare fifo against other", 3, |_| {
        let lab = Lab::new();
        let n = procs();
        lab.ok(&["run", &one_cell_spec(&lab, "other", n)]);
        lab.ok(&["run", &one_cell_spec(&lab, "fifo", n)]);
        let v = compare_json(&lab, "involuntary", "0.05");
        let c = &v["cells"][0];
        assert_eq!(c["key"], format!("w/p/n{n}"));
        assert_eq!(c["a_values"].as_array().unwrap().len(), 8, "one value per repetition: {c}");
        // Run to completion, FIFO workers are (almost) never preempted; SCHED_OTHER ones share CPUs.
        let (p, ratio) =
            (c["welch"]["p_value"].as_f64().unwrap(), c["ratio"]["ratio"].as_f64().unwrap());
        if c["change"] == "lower" && p < 0.05 && ratio < 0.5 {
            Ok(())
        } else {
            Err(format!(
                "FIFO not clearly lower (change {}, p {p}, ratio {ratio}): {c}",
                c["change"]
            ))
        }
    });
}

#[test]
fn two_runs_of_the_same_cell_are_not_significant() {
    require!(is_root(), "SCHED_FIFO needs CAP_SYS_NICE (run as root)");
    let _one_at_a_time = measuring();
    // Involuntary switches of FIFO workers hardly depend on how fast the machine is at the
    // moment (user and wall times do: other load shifts them between runs, and compare
    // rightly reports that as a difference). At alpha 0.001 chance alone fails an attempt
    // once in a thousand when nothing changed; at 0.05 one in twenty. A host that stops the
    // vCPUs during one run only is a real difference between the runs: timing, retried.
    schedlab_testkit::in_some_attempt("two runs of one cell", 3, |_| {
        let lab = Lab::new();
        let spec = one_cell_spec(&lab, "fifo", procs());
        lab.ok(&["run", &spec]);
        lab.ok(&["run", &spec]);
        let v = compare_json(&lab, "involuntary", "0.001");
        let c = &v["cells"][0];
        let summary = &v["summary"];
        assert_eq!(
            (summary["higher"] == 0, summary["lower"] == 0),
            (c["change"] != "higher", c["change"] != "lower"),
            "{v}"
        );
        if c["change"] == "unchanged" {
            Ok(())
        } else {
            Err(format!("the same cell changed between two runs: {c}"))
        }
    });
}

/// The fixture with a kernel trace per repetition: each worker `runnable_s` waiting.
fn traced_fixture(factor: f64, runnable_s: f64) -> Vec<CellRecord> {
    use schedlab_model::trace::{CellTrace, WorkerTrace};
    let mut records = fixture(factor);
    for (i, r) in records.iter_mut().enumerate() {
        let mut workers = Vec::new();
        for (k, s) in r.samples.iter_mut().enumerate() {
            s.pid = (100 * i + k) as i32 + 1;
            let spread = 1.0 + 0.05 * (r.rep as f64 - 1.0);
            workers.push(WorkerTrace {
                pid: s.pid,
                run_s: s.user_s,
                runnable_s: runnable_s * spread,
                migrations: 2,
                ..Default::default()
            });
        }
        r.trace = Some(CellTrace { workers, ..Default::default() });
    }
    records
}

#[test]
fn compare_on_trace_metrics_needs_traced_runs_and_finds_the_change() {
    let lab = Lab::new();
    let plain = store_run(&lab.db(), "plain", &fixture(1.0)).to_string();
    let a = store_run(&lab.db(), "a", &traced_fixture(1.0, 0.1)).to_string();
    let b = store_run(&lab.db(), "b", &traced_fixture(1.0, 0.2)).to_string();
    for args in [
        ["compare", &plain, &a, "--metric", "runnable"],
        ["compare", &a, &plain, "--metric", "wakeup_p99"],
    ] {
        let out = lab.run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("run {plain} (plain) was not traced")) && err.contains("--trace"),
            "{err}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(
        &lab.ok(&["compare", &a, &b, "--metric", "runnable", "--format", "json"]),
    )
    .unwrap();
    assert_eq!(json["metric"], "runnable");
    assert_eq!(json["summary"]["higher"], 18, "every cell waits twice as long in B: {json}");
    let out = lab.run(&["report", &plain, "-o", "r", "--compare", &a, "--metric", "migrations"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a report comparing on a trace metric needs both runs traced"
    );
    lab.ok(&["report", &a, "-o", "r2", "--compare", &b, "--metric", "runnable"]);
    let html = std::fs::read_to_string(lab.path("r2/index.html")).unwrap();
    assert!(
        html.contains("<details open>\n<summary>runnable (waiting) per process [s]</summary>"),
        "the chosen trace metric first"
    );
    assert!(html.contains("Kernel traces per cell"), "the traced run's trace table");
}
