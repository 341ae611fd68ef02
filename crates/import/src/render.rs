//! An [`Imported`] task description written as a schedlab spec (TOML).

use crate::rtapp::{schedlab_priority, Imported, Set};

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// Microseconds as TOML milliseconds: an integer when whole.
fn ms(us: u64) -> String {
    if us.is_multiple_of(1000) {
        format!("{}", us / 1000)
    } else {
        format!("{}", us as f64 / 1000.0)
    }
}

/// A number as TOML: an integer when whole.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// One line of text fit for a `#` comment.
fn comment(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

impl Imported {
    /// The spec file's opening comment: where it came from, how rt-app's classes map, and
    /// what could not be mapped exactly.
    pub fn header(&self, source: &str) -> String {
        let mut h = format!(
            "# Imported from the rt-app file {} by `schedlab import rt-app` (schedlab {}).\n",
            comment(&format!("{source:?}")),
            env!("CARGO_PKG_VERSION")
        );
        h.push_str("# Times are rt-app's microseconds in milliseconds. One periodic set per scheduling class:\n");
        h.push_str("# SCHED_OTHER/BATCH/IDLE -> other, SCHED_FIFO -> fifo, SCHED_RR -> rr (each task at its rt-app\n");
        h.push_str("# priority), SCHED_DEADLINE -> deadline (C, T, D = dl-runtime, dl-period, dl-deadline).\n");
        h.push_str("# Each task's origin is noted above it.\n");
        if self.unmapped.is_empty() {
            h.push_str("#\n# Everything in the rt-app file is mapped.\n");
        } else {
            h.push_str(&format!("#\n# Not mapped exactly ({}):\n", self.unmapped.len()));
            for u in &self.unmapped {
                h.push_str(&format!("#   - {}\n", comment(u)));
            }
        }
        h.push('\n');
        h
    }

    /// The spec itself (named `name`, imported from the file `source`): one periodic workload
    /// per set, each task's origin in a comment above it.
    pub fn body(&self, name: &str, source: &str) -> String {
        let mut b = format!("name = {}\n", toml_str(name));
        b.push_str(&format!(
            "description = {}\n\n",
            toml_str(&format!("imported from the rt-app file {source}"))
        ));
        let names: Vec<String> = self.sets.iter().map(|s| toml_str(&s.name)).collect();
        b.push_str(&format!("[matrix]\nworkload = [{}]\n", names.join(", ")));
        for set in &self.sets {
            b.push_str(&render_set(set, self.duration_s));
        }
        b
    }
}

/// One set as a `[workloads.NAME]` table.
fn render_set(set: &Set, duration_s: f64) -> String {
    let mut b = format!(
        "\n[workloads.{}]\nkind = \"periodic\"\nscheduler = {}\nbody = \"spin\"\n",
        set.name,
        toml_str(set.scheduler)
    );
    b.push_str(&format!("duration_s = {}\n", num(duration_s)));
    b.push_str(&format!("work_fraction = {}\n", num(set.work_fraction)));
    if let Some(c) = set.cpu {
        b.push_str(&format!("cpu = {c}\n"));
    }
    if !set.cpus.is_empty() {
        let l: Vec<String> = set.cpus.iter().map(u32::to_string).collect();
        b.push_str(&format!("cpus = [{}]\n", l.join(", ")));
    }
    b.push_str("tasks = [\n");
    for t in &set.tasks {
        b.push_str(&format!("  # {}\n", comment(&t.origin)));
        let mut fields = vec![format!("c_ms = {}", ms(t.c_us)), format!("t_ms = {}", ms(t.t_us))];
        if let Some(d) = t.d_us {
            fields.push(format!("d_ms = {}", ms(d)));
        }
        if t.phase_us > 0 {
            fields.push(format!("phase_ms = {}", ms(t.phase_us)));
        }
        if matches!(set.scheduler, "fifo" | "rr") {
            fields.push(format!("priority = {}", schedlab_priority(t.priority)));
        }
        b.push_str(&format!("  {{ {} }},\n", fields.join(", ")));
    }
    b.push_str("]\n");
    b
}
