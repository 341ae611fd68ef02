//! What `show`, `export`, `report` and `compare` read: a run, or a campaign's shards as
//! one set of cells, each cell repetition kept with the run (and machine) that measured it.

use super::common::{bad_input, pick_run};
use schedlab_model::{CellRecord, Environment};
use schedlab_store::{RunRow, RunStatus, Store};
use std::collections::BTreeMap;

/// A run or a campaign, with its cells.
pub struct Subject {
    /// The run, or for a campaign a header made from its shards (id: the first shard's).
    pub run: RunRow,
    /// The campaign's id, when this is one.
    pub campaign: Option<String>,
    /// The runs the cells come from (one for a run), by shard.
    pub shards: Vec<RunRow>,
    /// Every cell repetition, shard after shard.
    pub cells: Vec<CellRecord>,
    /// For each of `cells`, the index of its run in `shards`.
    pub origin: Vec<usize>,
    /// The generated sets of its batches (`generate = { sets = N }`), shard after shard.
    pub sets: Vec<schedlab_model::sets::TaskSetRow>,
}

/// Reads a run (`7`), a campaign (`campaign:ID`, or an id or unique prefix of one that is
/// not all digits), or the newest run (None).
pub fn load(store: &Store, arg: Option<&str>) -> anyhow::Result<Subject> {
    let arg = arg.map(str::trim);
    if let Some(id) = arg.and_then(|a| a.parse::<i64>().ok()).or(None) {
        return of_run(store, pick_run(store, Some(id))?);
    }
    let Some(text) = arg else { return of_run(store, pick_run(store, None)?) };
    let prefix = text.strip_prefix("campaign:").unwrap_or(text);
    let found = store.campaigns_like(prefix)?;
    let campaign = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(bad_input(format!("\"{text}\" is neither a run id nor a campaign in this database (`schedlab runs` lists both)")))
        }
        many if many.iter().any(|c| c == prefix) => prefix.to_string(),
        many => return Err(bad_input(format!("\"{text}\" names {} campaigns ({}): give more of the id", many.len(), many.join(", ")))),
    };
    of_campaign(store, &campaign)
}

/// One run as a subject.
pub fn of_run(store: &Store, run: RunRow) -> anyhow::Result<Subject> {
    let cells = store.cells(run.id)?;
    Ok(Subject {
        sets: store.task_sets(run.id)?,
        origin: vec![0; cells.len()],
        cells,
        campaign: None,
        shards: vec![run.clone()],
        run,
    })
}

fn of_campaign(store: &Store, campaign: &str) -> anyhow::Result<Subject> {
    let shards = store.campaign_runs(campaign)?;
    let (mut cells, mut origin, mut sets) = (Vec::new(), Vec::new(), Vec::new());
    for (i, r) in shards.iter().enumerate() {
        sets.extend(store.task_sets(r.id)?);
        let c = store.cells(r.id)?;
        origin.extend(std::iter::repeat_n(i, c.len()));
        cells.extend(c);
    }
    let first =
        shards.first().ok_or_else(|| bad_input(format!("campaign {campaign} has no runs here")))?;
    let count = first.identity.shard.map(|s| s.count).unwrap_or(0);
    let have: Vec<u32> = shards.iter().filter_map(|r| r.identity.shard.map(|s| s.index)).collect();
    let missing: Vec<String> =
        (0..count).filter(|k| !have.contains(k)).map(|k| format!("{k}/{count}")).collect();
    let mut run = first.clone();
    run.status = if !missing.is_empty() {
        RunStatus::Campaign(format!("incomplete: shard {} not merged", missing.join(", ")))
    } else if shards.iter().all(|r| r.status == RunStatus::Complete) {
        RunStatus::Complete
    } else {
        let odd: Vec<String> = shards
            .iter()
            .filter(|r| r.status != RunStatus::Complete)
            .map(|r| {
                format!(
                    "{} {}",
                    r.identity.shard.map(|s| s.to_string()).unwrap_or_default(),
                    r.status
                )
            })
            .collect();
        RunStatus::Campaign(format!("shards {}", odd.join(", ")))
    };
    run.cells_done = shards.iter().map(|r| r.cells_done).sum();
    run.started_unix = shards.iter().map(|r| r.started_unix).fold(f64::INFINITY, f64::min);
    run.finished_unix = shards
        .iter()
        .map(|r| r.finished_unix)
        .collect::<Option<Vec<f64>>>()
        .map(|v| v.into_iter().fold(0.0, f64::max));
    run.warnings = shards
        .iter()
        .flat_map(|r| {
            let s = r.identity.shard.map(|s| s.to_string()).unwrap_or_default();
            r.warnings.iter().map(move |w| format!("shard {s}: {w}"))
        })
        .collect();
    Ok(Subject { run, campaign: Some(campaign.to_string()), shards, cells, origin, sets })
}

impl Subject {
    /// "run 7" or "campaign ID".
    pub fn name(&self) -> String {
        match &self.campaign {
            Some(c) => format!("campaign {c}"),
            None => format!("run {}", self.run.id),
        }
    }

    /// The run that measured `cells[i]`.
    pub fn run_of(&self, i: usize) -> &RunRow {
        &self.shards[self.origin[i]]
    }

    /// The machine that measured `cells[i]`, as tables name it.
    pub fn machine_of(&self, i: usize) -> String {
        self.run_of(i).env.machine.label()
    }

    /// Fills the per-job records of the subject's own cells (see `Store::attach_job_logs`).
    pub fn attach_job_logs(&mut self, store: &Store) -> anyhow::Result<()> {
        for (i, r) in self.shards.iter().enumerate() {
            let mut mine: Vec<CellRecord> = Vec::new();
            let at: Vec<usize> = (0..self.cells.len()).filter(|j| self.origin[*j] == i).collect();
            for j in &at {
                mine.push(std::mem::take(&mut self.cells[*j]));
            }
            store.attach_job_logs(r.id, &mut mine)?;
            for (j, c) in at.into_iter().zip(mine) {
                self.cells[j] = c;
            }
        }
        Ok(())
    }

    /// The distinct machines, in shard order, with their environments.
    pub fn machines(&self) -> Vec<(String, &Environment)> {
        let mut out: Vec<(String, &Environment)> = Vec::new();
        for r in &self.shards {
            let l = r.env.machine.label();
            if !out.iter().any(|(m, _)| *m == l) {
                out.push((l, &r.env));
            }
        }
        out
    }

    /// For each cell key, the machines that measured its measured repetitions and how many.
    pub fn measured_on(&self) -> BTreeMap<String, Vec<(String, usize)>> {
        let mut out: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
        for (i, c) in self.cells.iter().enumerate().filter(|(_, c)| !c.warmup) {
            let list = out.entry(c.params.key.clone()).or_default();
            let m = self.machine_of(i);
            match list.iter_mut().find(|(x, _)| *x == m) {
                Some((_, n)) => *n += 1,
                None => list.push((m, 1)),
            }
        }
        out
    }

    /// Which machines measured which cells, one line per set of machines: "2 on m1, 1 on m2:
    /// 3 cells (a, b, c)", naming at most `keys` cells a line.
    pub fn measured_on_lines(&self, keys: usize) -> Vec<String> {
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, ms) in self.measured_on() {
            by.entry(ms.iter().map(|(m, n)| format!("{n} on {m}")).collect::<Vec<_>>().join(", "))
                .or_default()
                .push(k);
        }
        by.into_iter()
            .map(|(on, cells)| {
                let more = if cells.len() > keys {
                    format!(", ... {} more", cells.len() - keys)
                } else {
                    String::new()
                };
                let shown: Vec<&str> = cells.iter().take(keys).map(String::as_str).collect();
                format!("{on}: {} cells ({}{more})", cells.len(), shown.join(", "))
            })
            .collect()
    }

    /// A warning for each cell whose repetitions come from machines whose facts differ (its
    /// figures pool them), and one naming the differences.
    pub fn pooling_warnings(&self) -> Vec<String> {
        let machines = self.machines();
        let Some((first, env0)) = machines.first() else { return Vec::new() };
        let mut out = Vec::new();
        let mut unlike: Vec<&str> = Vec::new();
        for (m, env) in &machines[1..] {
            let d = env0.fact_differences(env);
            if !d.is_empty() {
                out.push(format!("machines {first} and {m} differ: {}", d.join("; ")));
                unlike.push(m);
            }
        }
        if unlike.is_empty() {
            return out;
        }
        let mixed: Vec<String> = self
            .measured_on()
            .into_iter()
            .filter(|(_, ms)| ms.len() > 1 && ms.iter().any(|(m, _)| unlike.contains(&m.as_str())))
            .map(|(k, ms)| {
                format!(
                    "{k} ({})",
                    ms.iter().map(|(m, n)| format!("{n} on {m}")).collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        if !mixed.is_empty() {
            out.push(format!(
                "{} cells pool repetitions from machines whose facts differ, so their spread includes the machines': {}",
                mixed.len(),
                mixed.join("; ")
            ));
        }
        out
    }
}

/// Warnings for a comparison of `a` with `b`: the machines that measured them differ (by
/// facts, or only by identity), and either side pools repetitions from unlike machines.
pub fn machine_warnings(a: &Subject, b: &Subject) -> Vec<String> {
    let mut out = Vec::new();
    // compare's run_differences already names the CPU, CPU count and kernel of the two headers.
    let covered = ["CPU: ", "CPUs: ", "kernel: "];
    for (ma, ea) in a.machines() {
        for (mb, eb) in b.machines() {
            let headers = ea == &a.run.env && eb == &b.run.env;
            // Ambient settings (cpu_dma_latency, governor, sysctls) do not make another machine.
            let d: Vec<String> = ea
                .hardware_differences(eb)
                .into_iter()
                .filter(|d| !(headers && covered.iter().any(|c| d.starts_with(c))))
                .collect();
            if !d.is_empty() {
                out.push(format!(
                    "the machines differ: {} was measured on {ma}, {} on {mb}, and they differ in {}; the ratios show the machines as well as any change",
                    a.name(),
                    b.name(),
                    d.join("; ")
                ));
            } else if !ea.same_machine(eb) && ma != mb && ea.hardware_differences(eb).is_empty() {
                out.push(format!(
                    "{} was measured on {ma}, {} on {mb}: different machines with the same facts",
                    a.name(),
                    b.name()
                ));
            }
            let s = ea.setting_differences(eb);
            if !s.is_empty() {
                out.push(format!(
                    "settings differ: {} ({} \u{2192} {}); the ratios show the settings as well as any change",
                    s.join("; "),
                    a.name(),
                    b.name()
                ));
            }
        }
    }
    for s in [a, b] {
        out.extend(s.pooling_warnings().into_iter().map(|w| format!("{}: {w}", s.name())));
    }
    out
}
