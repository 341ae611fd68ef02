//! The limits on the engine's cgroup path in a run's preflight (a CPU quota, an RT runtime
//! below the machine's; `Environment::limits`): named with their remedy, or left behind when
//! the user asks (`--escape-limits`: the engine moves out for the run, journaled, as the
//! real-time placement moves it for RT runtime). `check` and `run` look alike.

use schedlab_model::{Environment, LimitKind};
use schedlab_report::limits::{describe, warning, Remedy, ESCAPE};
use schedlab_sys::quota::Escape;
use schedlab_sys::Root;

/// What a run does about the limits on its engine's cgroup path.
#[derive(Debug, Default)]
pub struct Limits {
    /// Where the run moves its engine out of them (asked with `--escape-limits`).
    pub escape: Option<Escape>,
    /// A warning for each limit in force over the run, with its remedy.
    pub warnings: Vec<String>,
    /// What the run does about them, when it does something.
    pub notes: Vec<String>,
    /// Why a run is refused: `--escape-limits` asked for what cannot be done here.
    pub refusal: Option<String>,
}

impl Limits {
    /// The lines `check` prints: the warnings (as warnings), then the notes.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.warnings.iter().map(|w| format!("warning: {w}")).chain(self.notes.iter().cloned())
    }
}

/// What `--escape-limits` does with `e`, in words.
fn how(e: &Escape) -> String {
    let (from, to) = (e.from.display(), e.to.display());
    match e.owned {
        true => format!("moves the engine and its workers from {from} into {to}, a cgroup of schedlab's own, for the run; journaled, moved back after"),
        false => format!("moves the engine and its workers from {from} into the hierarchy's root {to} for the run (under RT group scheduling only the root holds the machine's RT runtime); journaled, moved back after"),
    }
}

/// Looks at the limits of `env` (read with the machine's facts) for a run whose plan has
/// real-time cells when `realtime`, moving out of them when `asked`; `placed`: the cgroup the
/// real-time placement runs the engine in, which leaves every limit on the path behind. Marks
/// each limit the run leaves behind in `env`, which is stored with the run.
pub fn look(
    root: &Root,
    asked: bool,
    realtime: bool,
    env: &mut Environment,
    placed: Option<&std::path::Path>,
) -> Limits {
    let mut out = Limits::default();
    if env.limits.is_empty() {
        if asked {
            out.notes.push(format!("limits: {ESCAPE}: no CPU quota and no RT runtime below the machine's on this process's cgroup path; nothing to lift"));
        }
        return out;
    }
    if let Some(to) = placed {
        for l in &mut env.limits {
            l.lifted = Some(to.to_path_buf());
        }
        let names: Vec<String> = env.limits.iter().map(describe).collect();
        out.notes.push(format!(
            "limits: the real-time placement runs the engine in {}, out of {}",
            to.display(),
            names.join(" and ")
        ));
        return out;
    }
    let target = schedlab_sys::quota::escape_target(root, &env.limits);
    match (asked, target) {
        (true, Ok(Some(e))) => {
            let names: Vec<String> = env.limits.iter().map(describe).collect();
            let names = names.join(" and ");
            out.notes.push(format!("limits: {ESCAPE} lifts {names}: it {}", how(&e)));
            for l in &mut env.limits {
                l.lifted = Some(e.to.clone());
            }
            out.escape = Some(e);
        }
        (true, Ok(None)) => {}
        (true, Err(why)) => {
            let names: Vec<String> = env.limits.iter().map(describe).collect();
            out.refusal = Some(format!("{ESCAPE} cannot lift {}: {why}", names.join(" and ")));
        }
        (false, target) => {
            let (words, cannot) = match target {
                Ok(e) => (e.as_ref().map(how).unwrap_or_default(), false),
                Err(why) => (why.to_string(), true),
            };
            let remedy = if cannot { Remedy::Cannot(&words) } else { Remedy::Escape(&words) };
            for l in &env.limits {
                match l.kind {
                    LimitKind::RtRuntime { .. } if !realtime => out.notes.push(format!(
                        "limit: {} (no cell of this plan is real-time)",
                        describe(l)
                    )),
                    _ => out.warnings.push(warning(l, remedy)),
                }
            }
        }
    }
    out
}

/// `env`'s line on the limits of `env`: each named, and what `--escape-limits` would do.
pub fn env_line(root: &Root, env: &Environment) -> String {
    if env.limits.is_empty() {
        return "none on this process's cpu cgroup path (no CPU quota, no RT runtime below the machine's)".into();
    }
    let names: Vec<String> = env.limits.iter().map(describe).collect();
    match schedlab_sys::quota::escape_target(root, &env.limits) {
        Ok(Some(e)) => format!("{}; run {ESCAPE} {}", names.join("; "), how(&e)),
        Ok(None) => names.join("; "),
        Err(why) => format!("{}; {ESCAPE} cannot lift them: {why}", names.join("; ")),
    }
}

/// The limits of `env` for `env --json`: each named with its effect, and what
/// `--escape-limits` would do (or why it cannot).
pub fn json(root: &Root, env: &Environment) -> serde_json::Value {
    let limits: Vec<serde_json::Value> = env
        .limits
        .iter()
        .map(|l| {
            serde_json::json!({
                "limit": describe(l),
                "effect": schedlab_report::limits::effect(l),
                "cgroup": l.cgroup,
                "share": l.kind.share(),
                "kind": l.kind,
            })
        })
        .collect();
    let escape = match schedlab_sys::quota::escape_target(root, &env.limits) {
        Ok(Some(e)) => {
            serde_json::json!({ "from": e.from, "to": e.to, "owned": e.owned, "how": how(&e) })
        }
        Ok(None) => serde_json::Value::Null,
        Err(why) => serde_json::json!({ "error": why.to_string() }),
    };
    serde_json::json!({ "limits": limits, "escape": escape })
}
