//! The scheduler's knobs on this machine (`schedlab_plan::knob` names them): where each
//! one's files are, what they say now (the facts a plan is checked against before anything
//! changes), and journaled writes, read back.
//!
//! debugfs is used where it is mounted and never mounted here: `check` must change nothing,
//! and mounting debugfs for the whole machine is its administrator's decision.

use crate::journal::{Entry, Journal};
use crate::{Root, SysError};
use schedlab_plan::knob::{Knob, KnobValue, Place};
use schedlab_plan::{KnobFact, KnobFacts};
use std::io::Write;
use std::path::PathBuf;

/// Where SMT control is.
pub const SMT_CONTROL: &str = "/sys/devices/system/cpu/smt/control";

/// What a knob's files say now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Each file with the text that puts it back as it is (for a feature its `NAME` or
    /// `NO_NAME`, for the preemption mode the mode in force).
    pub files: Vec<(PathBuf, String)>,
    /// The value as a knob value's label spells it (`100`, `full`, `off`).
    pub label: String,
    /// The words its file offers (preemption modes, governors, SMT on/off); empty for numbers.
    pub offered: Vec<String>,
}

/// Where debugfs is mounted (the standard place first), under `root`.
pub fn debugfs(root: &Root) -> Option<PathBuf> {
    let mounts =
        crate::blockdev::mounts_of_type(&root.read("/proc/self/mountinfo").ok()?, "debugfs");
    let std = PathBuf::from("/sys/kernel/debug");
    let m = if mounts.contains(&std) { std } else { mounts.into_iter().next()? };
    Some(root.path(&m.to_string_lossy()))
}

/// Reads a file as the kernel gives it; the error says which file and why, as the fact.
fn read(path: &std::path::Path) -> Result<String, KnobFact> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| {
        let p = path.display();
        match e.raw_os_error() {
            Some(libc::ENOENT) => KnobFact::Missing(format!("{p} does not exist")),
            Some(libc::EPERM) => KnobFact::Unusable(format!(
                "reading {p} gives EPERM: the kernel refuses access to it here, even to root"
            )),
            Some(libc::EACCES) => {
                KnobFact::Unusable(format!("reading {p} gives EACCES: it needs root"))
            }
            _ => KnobFact::Unusable(format!("reading {p}: {e}")),
        }
    })
}

/// What `knob`'s files say now, or the fact that says why they cannot be used.
pub fn state(root: &Root, knob: &Knob) -> Result<State, KnobFact> {
    let debug = || {
        debugfs(root).map(|d| d.join("sched")).ok_or_else(|| {
            KnobFact::Unusable(format!(
                "debugfs is not mounted (schedlab does not mount it); mount it with `mount -t debugfs debugfs /sys/kernel/debug` to use {}",
                knob.name
            ))
        })
    };
    let one = |path: PathBuf, text: String, label: String, offered: Vec<String>| {
        Ok(State { files: vec![(path, text)], label, offered })
    };
    match &knob.place {
        Place::Sysctl(f) => {
            let p = root.path(&format!("/proc/sys/kernel/{f}"));
            let v = read(&p)?;
            one(p, v.clone(), v, Vec::new())
        }
        Place::Debugfs(f) if f == "preempt" => {
            let p = debug()?.join(f);
            let (mode, offered) = preempt_modes(&read(&p)?);
            let mode = mode.ok_or_else(|| {
                KnobFact::Unusable(format!("{} names no mode in force", p.display()))
            })?;
            one(p, mode.clone(), mode, offered)
        }
        Place::Debugfs(f) => {
            let p = debug()?.join(f);
            let v = read(&p)?;
            one(p, v.clone(), v, Vec::new())
        }
        Place::Feature(name) => {
            let p = debug()?.join("features");
            let text = read(&p)?;
            let on = feature_state(&text, name)
                .ok_or_else(|| KnobFact::Missing(format!("{} lists no {name}", p.display())))?;
            let token = if on { name.clone() } else { format!("NO_{name}") };
            one(p, token, if on { "on" } else { "off" }.into(), Vec::new())
        }
        Place::Smt => {
            let p = root.path(SMT_CONTROL);
            let v = read(&p).map_err(|_| {
                KnobFact::Unusable(format!(
                    "this machine has no SMT control ({} cannot be read)",
                    p.display()
                ))
            })?;
            if v != "on" && v != "off" {
                return Err(KnobFact::Unusable(format!(
                    "this machine has no SMT to switch ({} says \"{v}\")",
                    p.display()
                )));
            }
            one(p, v.clone(), v, vec!["on".into(), "off".into()])
        }
        Place::Governor => governors(root),
    }
}

/// The preemption mode in force (in parentheses) and every mode offered, from
/// `sched/preempt`'s text, e.g. `none voluntary (full) lazy`.
pub fn preempt_modes(text: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let offered = text
        .split_whitespace()
        .map(|w| match w.strip_prefix('(').and_then(|w| w.strip_suffix(')')) {
            Some(m) => {
                active = Some(m.to_string());
                m.to_string()
            }
            None => w.to_string(),
        })
        .collect();
    (active, offered)
}

/// Whether `sched/features` lists `name` on (`NAME`) or off (`NO_NAME`); None if neither.
pub fn feature_state(text: &str, name: &str) -> Option<bool> {
    let off = format!("NO_{name}");
    text.split_whitespace().find_map(|w| {
        if w == name {
            Some(true)
        } else if w == off {
            Some(false)
        } else {
            None
        }
    })
}

/// Every CPU's cpufreq governor: one file per CPU, the label the common governor (or each
/// CPU's, `cpu0=a,cpu1=b`, when they differ).
fn governors(root: &Root) -> Result<State, KnobFact> {
    let base = root.path("/sys/devices/system/cpu");
    let mut cpus: Vec<(u32, PathBuf)> = std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
            let p = e.path().join("cpufreq/scaling_governor");
            p.exists().then_some((n, p))
        })
        .collect();
    cpus.sort();
    if cpus.is_empty() {
        return Err(KnobFact::Unusable(format!(
            "this machine has no CPU frequency scaling (no cpu*/cpufreq/scaling_governor under {})",
            base.display()
        )));
    }
    let mut files = Vec::new();
    for (_, p) in &cpus {
        files.push((p.clone(), read(p)?));
    }
    let offered = read(&cpus[0].1.with_file_name("scaling_available_governors"))
        .map(|t| t.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let label = if files.iter().all(|(_, g)| *g == files[0].1) {
        files[0].1.clone()
    } else {
        cpus.iter()
            .zip(&files)
            .map(|((n, _), (_, g))| format!("cpu{n}={g}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    Ok(State { files, label, offered })
}

/// What the machine says about each named knob (unknown names are left out: the spec
/// refuses them first).
pub fn facts(root: &Root, names: &[String]) -> KnobFacts {
    let mut out = KnobFacts::new();
    for name in names {
        let Ok(k) = Knob::parse(name) else { continue };
        let fact = match state(root, &k) {
            Ok(s) => KnobFact::Present {
                path: s.files[0].0.display().to_string(),
                value: s.label,
                offered: s.offered,
                unwritable: s.files.iter().find_map(|(p, _)| crate::env::unwritable(p)),
            },
            Err(f) => f,
        };
        out.insert(name.clone(), fact);
    }
    out
}

/// The value of each named knob now, by label, for the run's record of what it found;
/// a knob that cannot be read is left out.
pub fn values(root: &Root, names: &[String]) -> std::collections::BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|n| Some((n.clone(), state(root, &Knob::parse(n).ok()?).ok()?.label)))
        .collect()
}

/// Holds the files of every named knob this machine has (for the run's length, released
/// when `holds` is dropped or the process dies), before anything reads or changes them: a
/// knob another live run holds is refused, naming that run. Unknown or unusable knobs are
/// left to the spec's checks.
pub fn hold(root: &Root, names: &[String], holds: &mut crate::lock::Holds) -> Result<(), SysError> {
    for name in names {
        let Ok(k) = Knob::parse(name) else { continue };
        let Ok(s) = state(root, &k) else { continue };
        for (path, _) in &s.files {
            holds.take(&format!("the knob {name}"), path)?;
        }
    }
    Ok(())
}

/// Sets `knob` to `v`: each file's present value is journaled first (undone after the cell
/// or the run, on Ctrl-C, on errors and by `restore`), then written; returns the value in
/// force read back. The error names the knob, the file and what the kernel said.
pub fn set(
    root: &Root,
    knob: &Knob,
    v: &KnobValue,
    journal: &mut Journal,
) -> Result<String, SysError> {
    let name = &knob.name;
    let before = state(root, knob).map_err(|f| match f {
        KnobFact::Missing(why) | KnobFact::Unusable(why) => {
            SysError::refused(format!("{name}: {why}"))
        }
        KnobFact::Present { .. } => unreachable!("state errors are never Present"),
    })?;
    let text = knob.text(v);
    for (path, old) in &before.files {
        journal.record(Entry::Restore { path: path.clone(), value: old.clone() }).map_err(|e| {
            SysError::io(format!("{name}: cannot journal {} before writing it", path.display()), e)
        })?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            return Err(SysError::refused(format!(
                "{name}: the kernel refused {text} ({}: {e})",
                path.display()
            )));
        }
    }
    state(root, knob).map(|s| s.label).map_err(|_| {
        SysError::refused(format!("{name}: set to {text}, but it cannot be read back"))
    })
}

#[cfg(test)]
mod tests;
