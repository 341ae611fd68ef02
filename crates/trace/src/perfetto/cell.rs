//! What a stored cell repetition contributes to its export, the same for a measured cell
//! and its simulation: the workers' names, and schedlab's marks (the release, each
//! worker's work from its own start to its end, each periodic job's release and deadline).

use super::{Mark, Process, Track};
use schedlab_model::jobs::JobLog;
use schedlab_model::CellRecord;

/// Each worker's name, in sample order: `schedlab worker <group>#<i>`, `i` its place
/// in its group (by worker index).
pub fn worker_names(rec: &CellRecord) -> Vec<String> {
    let mut order: Vec<usize> = (0..rec.samples.len()).collect();
    order.sort_by_key(|&i| rec.samples[i].index);
    let mut names = vec![String::new(); rec.samples.len()];
    let mut seen: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for i in order {
        let s = &rec.samples[i];
        let n = seen.entry(s.group.as_str()).or_default();
        names[i] = format!("schedlab worker {}#{n}", s.group);
        *n += 1;
    }
    names
}

/// The workers as processes (pids from `pid_of`, children of `parent`).
pub fn worker_processes(
    rec: &CellRecord,
    parent: i32,
    pid_of: impl Fn(usize) -> i32,
) -> Vec<Process> {
    worker_names(rec)
        .into_iter()
        .enumerate()
        .map(|(i, name)| Process { pid: pid_of(i), ppid: parent, name, threads: Vec::new() })
        .collect()
}

/// The marks of `rec`, released at `release_ns` (the trace's clock) with its periodic
/// set's jobs counted from `set_start_ns`: the cell's track, then one per worker.
pub fn tracks(
    rec: &CellRecord,
    release_ns: u64,
    set_start_ns: u64,
    jobs: &[(u32, JobLog)],
    pid_of: impl Fn(usize) -> i32,
) -> Vec<Track> {
    let at = |s: f64| (release_ns as i64 + (s * 1e9).round() as i64).max(0) as u64;
    let mut out = vec![Track {
        name: format!(
            "schedlab cell {} rep {}{}",
            rec.params.key,
            rec.rep + 1,
            if rec.warmup { " (warm-up)" } else { "" }
        ),
        pid: None,
        marks: vec![
            Mark { ts_ns: release_ns, name: "release".into(), end_ns: None },
            Mark { ts_ns: release_ns, name: "measured".into(), end_ns: Some(at(rec.makespan_s)) },
        ],
    }];
    for (i, (s, name)) in rec.samples.iter().zip(worker_names(rec)).enumerate() {
        let (start, end) = (at(s.start_offset_s), at(s.end_offset_s));
        let mut marks = vec![
            Mark { ts_ns: start, name: "work".into(), end_ns: Some(end) },
            Mark { ts_ns: end, name: "end".into(), end_ns: None },
        ];
        if let Some((_, log)) = jobs.iter().find(|(idx, _)| *idx == s.index) {
            for (k, j) in log.jobs.iter().enumerate() {
                let release = set_start_ns + j.release_ns;
                marks.push(Mark { ts_ns: release, name: format!("release #{k}"), end_ns: None });
                let missed = if j.met { "" } else { " missed" };
                marks.push(Mark {
                    ts_ns: release + log.d_ns,
                    name: format!("deadline #{k}{missed}"),
                    end_ns: None,
                });
            }
        }
        out.push(Track { name, pid: Some(pid_of(i)), marks });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::jobs::JobTrace;
    use schedlab_model::Sample;

    #[test]
    fn workers_are_named_in_their_group_and_marked_on_their_own_track() {
        let s = |index, group: &str, start: f64, end: f64| Sample {
            index,
            group: group.into(),
            pid: 100 + index as i32,
            start_offset_s: start,
            end_offset_s: end,
            ..Default::default()
        };
        let rec = CellRecord {
            samples: vec![s(2, "bg", 0.0, 2.0), s(0, "main", 0.001, 1.0), s(1, "main", 0.002, 1.5)],
            makespan_s: 1.5,
            ..Default::default()
        };
        assert_eq!(
            worker_names(&rec),
            ["schedlab worker bg#0", "schedlab worker main#0", "schedlab worker main#1"]
        );
        let log = JobLog {
            source: "worker".into(),
            d_ns: 5_000,
            jobs: vec![
                JobTrace { release_ns: 0, met: true, ..Default::default() },
                JobTrace { release_ns: 10_000, ..Default::default() },
            ],
            unrecorded: 0,
        };
        let t = tracks(&rec, 1_000_000_000, 1_050_000_000, &[(1, log)], |i| rec.samples[i].pid);
        assert_eq!(t.len(), 4);
        assert_eq!(
            t[0].marks[0],
            Mark { ts_ns: 1_000_000_000, name: "release".into(), end_ns: None }
        );
        assert_eq!(t[0].marks[1].end_ns, Some(2_500_000_000));
        assert_eq!((t[2].pid, t[2].name.as_str()), (Some(100), "schedlab worker main#0"));
        assert_eq!(
            t[2].marks[0],
            Mark { ts_ns: 1_001_000_000, name: "work".into(), end_ns: Some(2_000_000_000) }
        );
        let jobs: Vec<(u64, &str)> =
            t[3].marks[2..].iter().map(|m| (m.ts_ns, m.name.as_str())).collect();
        assert_eq!(
            jobs,
            vec![
                (1_050_000_000, "release #0"),
                (1_050_005_000, "deadline #0"),
                (1_050_010_000, "release #1"),
                (1_050_015_000, "deadline #1 missed")
            ]
        );
    }
}
