//! What `show`, `export`, `report` and `compare` read: a run, or a campaign's shards as
//! one set of cells, each cell repetition kept with the run (and machine) that measured it.

use crate::db::pick_run;
use crate::Error;
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
pub fn load(store: &Store, arg: Option<&str>) -> Result<Subject, Error> {
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
            return Err(Error::Refused(format!("\"{text}\" is neither a run id nor a campaign in this database (`schedlab runs` lists both)")))
        }
        many if many.iter().any(|c| c == prefix) => prefix.to_string(),
        many => return Err(Error::Refused(format!("\"{text}\" names {} campaigns ({}): give more of the id", many.len(), many.join(", ")))),
    };
    of_campaign(store, &campaign)
}

/// One run as a subject.
pub fn of_run(store: &Store, run: RunRow) -> Result<Subject, Error> {
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

fn of_campaign(store: &Store, campaign: &str) -> Result<Subject, Error> {
    let shards = store.campaign_runs(campaign)?;
    let (mut cells, mut origin, mut sets) = (Vec::new(), Vec::new(), Vec::new());
    for (i, r) in shards.iter().enumerate() {
        sets.extend(store.task_sets(r.id)?);
        let c = store.cells(r.id)?;
        origin.extend(std::iter::repeat_n(i, c.len()));
        cells.extend(c);
    }
    let first = shards
        .first()
        .ok_or_else(|| Error::Refused(format!("campaign {campaign} has no runs here")))?;
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
    pub fn attach_job_logs(&mut self, store: &Store) -> Result<(), Error> {
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

/// The most keys a "no such cell" message lists.
const KEYS_LISTED: usize = 12;

/// What to try after a key that matched no cell: the closest key, and every key (the first
/// [`KEYS_LISTED`] of many) after `what`, e.g. ` (did you mean "cpu/fifo:98/n10"?); its
/// cells: ...`.
pub fn key_hint(typed: &str, keys: &[&str], what: &str) -> String {
    let mut unique: Vec<&str> = keys.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let listed = unique.iter().take(KEYS_LISTED).copied().collect::<Vec<_>>().join(", ");
    let more = unique.len().saturating_sub(KEYS_LISTED);
    let closest = match typed.contains('*') {
        true => String::new(),
        false => schedlab_spec::suggest::did_you_mean(typed, unique.iter().copied()),
    };
    format!(
        "{closest}; {what}: {listed}{}",
        if more > 0 {
            format!(" and {more} more (`schedlab show` lists them)")
        } else {
            String::new()
        }
    )
}

/// The flat rows `export` writes, and what they leave out.
pub struct Rows {
    /// A row per process (or per job) of each cell repetition kept.
    pub rows: Vec<serde_json::Value>,
    /// Cell repetitions kept.
    pub cells: usize,
    /// Of those, the failed ones (their rows say so).
    pub failed: usize,
    /// Of the failed, those that never started (no rows).
    pub empty: usize,
}

impl Subject {
    /// A row per process (per job with `jobs`) of each cell repetition (warm-ups too with
    /// `warmup`), each with its own run id and, for a campaign, its machine.
    pub fn rows(&self, store: &Store, jobs: bool, warmup: bool) -> Result<Rows, Error> {
        let kept: Vec<usize> =
            (0..self.cells.len()).filter(|i| warmup || !self.cells[*i].warmup).collect();
        let failed: Vec<&CellRecord> =
            kept.iter().map(|i| &self.cells[*i]).filter(|c| !c.status.is_ok()).collect();
        let sched = schedlab_report::flat::has_sched_accounting(&self.cells);
        let mut rows = Vec::new();
        for &i in &kept {
            let (c, run) = (&self.cells[i], self.run_of(i));
            let mut mine = if jobs {
                let logs = store.job_logs(run.id, c.params.cell_id, c.rep, c.warmup)?;
                schedlab_report::export::values(&schedlab_report::flat::flatten_jobs(
                    run.id, c, &logs,
                ))
            } else {
                schedlab_report::export::values(&schedlab_report::flat::flatten_with(
                    run.id,
                    std::slice::from_ref(c),
                    sched,
                ))
            };
            if let Some(campaign) = &self.campaign {
                let machine = self.machine_of(i);
                mine = mine.into_iter().map(|v| with_machine(v, campaign, &machine)).collect();
            }
            rows.extend(mine);
        }
        Ok(Rows {
            rows,
            cells: kept.len(),
            failed: failed.len(),
            empty: failed.iter().filter(|c| c.samples.is_empty()).count(),
        })
    }
}

/// A row with `campaign` and `machine` columns right after its `run_id`.
fn with_machine(row: serde_json::Value, campaign: &str, machine: &str) -> serde_json::Value {
    let serde_json::Value::Object(fields) = row else { return row };
    let mut out = serde_json::Map::new();
    for (k, v) in fields {
        let after = k == "run_id";
        out.insert(k, v);
        if after {
            out.insert("campaign".into(), campaign.into());
            out.insert("machine".into(), machine.into());
        }
    }
    serde_json::Value::Object(out)
}

impl Subject {
    /// Keeps the cells whose key matches `pattern` (`schedlab_report::cells::key_matches`);
    /// none is a refusal that suggests the closest key and lists them when they are few.
    pub fn keep_cells(&mut self, pattern: &str) -> Result<(), Error> {
        use schedlab_report::cells::key_matches;
        let keys: Vec<&str> = self.cells.iter().map(|c| c.params.key.as_str()).collect();
        if !keys.iter().any(|k| key_matches(pattern, k)) {
            return Err(Error::Refused(format!(
                "no cell of {} matches \"{pattern}\"{}",
                self.name(),
                key_hint(pattern, &keys, "its cells")
            )));
        }
        // Each cell keeps its origin (the shard it came from).
        let (kept, origin): (Vec<_>, Vec<_>) = std::mem::take(&mut self.cells)
            .into_iter()
            .zip(std::mem::take(&mut self.origin))
            .filter(|(c, _)| key_matches(pattern, &c.params.key))
            .unzip();
        (self.cells, self.origin) = (kept, origin);
        Ok(())
    }
}
