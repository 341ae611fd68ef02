//! An experiment's text as an A/B pair of arms, for `schedlab bisect` ([`with_arms`]): each
//! `command` workload whose argv names [`WORKTREE`] is written once per arm, its placeholder
//! replaced by that arm's directory, both on the `[matrix] workload` axis, in random order
//! so that any drift of the machine hits both arms alike.

use crate::SpecError;

/// The placeholder of a command workload's argv that names a revision's worktree.
pub const WORKTREE: &str = "{worktree}";

/// The arms of an experiment ([`with_arms`]): the text to parse, and which workload of it is which
/// arm of which workload of the original.
#[derive(Debug, Clone, PartialEq)]
pub struct Arms {
    /// The experiment's text with both arms.
    pub text: String,
    /// (workload of the text, workload of the original, arm index).
    pub workloads: Vec<(String, String, usize)>,
}

impl Arms {
    /// The original workload and the arm of a workload of the text, if it is an arm.
    pub fn arm_of(&self, workload: &str) -> Option<(&str, usize)> {
        self.workloads
            .iter()
            .find(|(w, ..)| w == workload)
            .map(|(_, base, arm)| (base.as_str(), *arm))
    }
}

/// `text` (the experiment file at `path`) with each `command` workload of its `[matrix]
/// workload` axis whose argv names [`WORKTREE`] replaced by one workload per arm: `NAME-SUFFIX`
/// for each `(SUFFIX, DIRECTORY)` of `arms`, its argv's placeholder replaced by DIRECTORY.
/// Workloads that do not name the placeholder leave the axis (they would not differ), and
/// the order of steps becomes random. An error when the text is not TOML, has no such
/// workload, or a new name is taken.
pub fn with_arms(path: &str, text: &str, arms: &[(&str, &str)]) -> Result<Arms, SpecError> {
    let fail = |msg: String| SpecError::at(path, text, 0..0, msg);
    let mut doc: toml::Table = toml::from_str(text)
        .map_err(|e| fail(format!("not an experiment file: {}", e.message())))?;
    let axis: Vec<String> = doc
        .get("matrix")
        .and_then(|m| m.get("workload"))
        .and_then(|w| w.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let mut workloads =
        doc.remove("workloads").and_then(|w| w.as_table().cloned()).unwrap_or_default();
    let mut names = Vec::new();
    let mut out = Vec::new();
    for name in &axis {
        let Some(def) = workloads.get(name).and_then(|d| d.as_table()).cloned() else { continue };
        let argv = def.get("argv").and_then(|a| a.as_array()).cloned().unwrap_or_default();
        if !argv.iter().any(|v| v.as_str().is_some_and(|s| s.contains(WORKTREE))) {
            continue;
        }
        workloads.remove(name);
        for (arm, (suffix, dir)) in arms.iter().enumerate() {
            let new = format!("{name}-{suffix}");
            if workloads.contains_key(&new) || axis.contains(&new) {
                return Err(fail(format!(
                    "workload \"{new}\" exists already: bisect names the arms of \"{name}\" so; rename it"
                )));
            }
            let mut def = def.clone();
            let replaced = argv
                .iter()
                .map(|v| match v.as_str() {
                    Some(s) => toml::Value::String(s.replace(WORKTREE, dir)),
                    None => v.clone(),
                })
                .collect();
            def.insert("argv".into(), toml::Value::Array(replaced));
            workloads.insert(new.clone(), toml::Value::Table(def));
            names.push(toml::Value::String(new.clone()));
            out.push((new, name.clone(), arm));
        }
    }
    if out.is_empty() {
        return Err(fail(format!(
            "no command workload of the [matrix] workload axis names {WORKTREE} in its argv: \
             bisect runs the experiment against each revision's worktree through it \
             (e.g. argv = [\"{WORKTREE}/run.sh\"])"
        )));
    }
    let matrix = doc.get_mut("matrix").and_then(|m| m.as_table_mut()).expect("the axis was read");
    matrix.insert("workload".into(), toml::Value::Array(names));
    doc.insert("workloads".into(), toml::Value::Table(workloads));
    doc.insert("order".into(), toml::Value::String("random".into()));
    let text = toml::to_string(&doc).map_err(|e| fail(format!("cannot write the arms: {e}")))?;
    Ok(Arms { text, workloads: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "name = \"b\"\nrepetitions = 3\n[matrix]\nworkload = [\"work\", \"spin\"]\nprocesses = [1, 2]\n\
        [workloads.work]\nkind = \"command\"\nargv = [\"{worktree}/work.sh\", \"--in={worktree}\"]\n\
        [workloads.spin]\nkind = \"command\"\nargv = [\"true\"]\n";

    #[test]
    fn each_worktree_workload_becomes_one_per_arm() {
        let a = with_arms("b.toml", SPEC, &[("good", "/g"), ("test", "/t")]).unwrap();
        assert_eq!(
            a.workloads,
            [("work-good".into(), "work".into(), 0), ("work-test".into(), "work".into(), 1)]
        );
        assert_eq!(a.arm_of("work-test"), Some(("work", 1)));
        assert_eq!(a.arm_of("spin"), None);
        let spec = crate::parse_at("b.toml", &a.text, std::path::Path::new("/")).unwrap();
        let keys: Vec<&str> = spec.plan.cells.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        assert!(keys.iter().all(|k| k.starts_with("work-")), "{keys:?}");
        assert!(matches!(spec.plan.order, crate::Order::Random));
        assert!(a.text.contains("\"/t/work.sh\", \"--in=/t\""), "{}", a.text);
        assert!(a.text.contains("\"/g/work.sh\", \"--in=/g\""), "{}", a.text);
    }

    #[test]
    fn an_experiment_without_the_placeholder_or_with_a_taken_name_is_refused() {
        let plain = SPEC.replace("{worktree}", "/x");
        let e = with_arms("b.toml", &plain, &[("good", "/g")]).unwrap_err();
        assert!(e.message.contains("names {worktree}"), "{e}");
        let taken = SPEC.replace(
            "[workloads.spin]",
            "[workloads.work-good]\nkind = \"command\"\nargv = [\"true\"]\n[workloads.spin]",
        );
        let e = with_arms("b.toml", &taken, &[("good", "/g")]).unwrap_err();
        assert!(e.message.contains("\"work-good\" exists already"), "{e}");
    }
}
