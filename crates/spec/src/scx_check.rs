//! A plan's `cpu_scheduler` values and `edf-scx`/`dwcs-scx` sets against the machine, before
//! anything changes: a kernel with sched_ext, no scheduler loaded by someone else, the
//! privilege to load one, and each scheduler's program (schedlab-scx for the sets).

use crate::error::SpecError;
use crate::validate::Locations;
use schedlab_plan::{Plan, ScxFacts, SCX_DISPATCHER};

/// What loads a sched_ext scheduler: a `cpu_scheduler` value (its label) or a periodic
/// workload under `edf-scx`/`dwcs-scx` (its name).
enum User {
    Axis(String),
    Set(String),
}

impl User {
    /// What a message about a set says first: which set needs sched_ext, and why.
    fn what(&self) -> String {
        match self {
            User::Axis(_) => String::new(),
            User::Set(w) => format!(
                "workload \"{w}\" runs under schedlab's own sched_ext scheduler (edf-scx/dwcs-scx), but "
            ),
        }
    }
}

/// Checks every sched_ext scheduler of the plan; errors point at its value (or at the
/// workload whose set runs under schedlab's own).
pub(crate) fn check(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    facts: &ScxFacts,
) -> Result<(), SpecError> {
    let axis = plan.cells.iter().find_map(|c| c.scx()).map(|p| User::Axis(p.label()));
    let Some(first) = axis.or_else(|| set_user(plan)) else {
        return Ok(());
    };
    let at = |user: &User, msg: String| {
        let (places, name) = match user {
            User::Axis(label) => (&locs.cpu_schedulers, label),
            User::Set(workload) => (&locs.workloads, workload),
        };
        let span =
            places.iter().find(|(l, _)| l == name).map_or(locs.matrix.clone(), |(_, s)| s.clone());
        Err(SpecError::at(&plan.source_path, src, span, msg))
    };
    if !facts.available {
        return at(
            &first,
            format!(
                "{}this kernel ({}) has no sched_ext: /sys/kernel/sched_ext is absent (it needs Linux 6.12 or newer built with CONFIG_SCHED_CLASS_EXT=y); run the sched_ext cells on such a kernel, or {}",
                first.what(),
                if facts.kernel.is_empty() { "unknown" } else { &facts.kernel },
                match first {
                    User::Axis(_) => "keep only eevdf here",
                    User::Set(_) => "use dwcs or edf (the dispatcher by priorities) here",
                }
            ),
        );
    }
    if facts.state != "disabled" {
        return at(
            &first,
            format!(
                "{}another sched_ext scheduler is loaded (state {}, root/ops {}): stop it before the run, which loads its own",
                first.what(),
                facts.state,
                facts.ops.as_deref().unwrap_or("empty")
            ),
        );
    }
    if !facts.may_load {
        return at(
            &first,
            format!(
                "{}loading a sched_ext scheduler needs root (CAP_SYS_ADMIN and CAP_BPF)",
                first.what()
            ),
        );
    }
    for c in &plan.cells {
        if let Some(p) = c.scx() {
            if let Some((_, Err(why))) = facts.programs.iter().find(|(name, _)| *name == p.program)
            {
                return at(
                    &User::Axis(p.label()),
                    format!("the sched_ext scheduler {}: {why}", p.name()),
                );
            }
        }
    }
    if let (Some(User::Set(w)), Some((_, Err(why)))) =
        (set_user(plan), facts.programs.iter().find(|(name, _)| name == SCX_DISPATCHER))
    {
        return at(
            &User::Set(w.clone()),
            format!(
                "workload \"{w}\" runs under schedlab's own sched_ext scheduler, whose program {SCX_DISPATCHER} is not built: {why}; build it with `cargo install --path crates/scx-dwcs` (needs clang and libbpf), or put it next to the schedlab binary"
            ),
        );
    }
    Ok(())
}

/// The first periodic set under `edf-scx` or `dwcs-scx`.
fn set_user(plan: &Plan) -> Option<User> {
    plan.cells
        .iter()
        .flat_map(|c| &c.groups)
        .find(|g| g.workload.periodic().is_some_and(|p| p.scheduler.sched_ext()))
        .map(|g| User::Set(g.workload_name.clone()))
}

#[cfg(test)]
mod tests {
    use crate::{parse, CpuScheduler, ScxFacts, SpecError};
    use std::path::PathBuf;

    const SPEC: &str = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpu_scheduler = [\"eevdf\", \"scx:scx_bpfland\"]\n";

    fn facts() -> ScxFacts {
        ScxFacts {
            available: true,
            state: "disabled".into(),
            ops: None,
            may_load: true,
            kernel: "7.3.4".into(),
            programs: vec![("scx_bpfland".into(), Ok(PathBuf::from("/usr/bin/scx_bpfland")))],
        }
    }

    fn refused(text: &str, f: ScxFacts) -> SpecError {
        parse("t.toml", text).unwrap().check_scx(&f).expect_err("refused")
    }

    #[test]
    fn a_kernel_without_sched_ext_is_refused_at_the_first_scx_scheduler() {
        let e = refused(SPEC, ScxFacts { available: false, state: String::new(), ..facts() });
        assert_eq!((e.line, e.col), (4, 27), "{e}");
        assert!(e.message.contains("has no sched_ext: /sys/kernel/sched_ext is absent"), "{e}");
        assert!(e.message.contains("CONFIG_SCHED_CLASS_EXT"), "{e}");
    }

    const SET: &str = "name = \"t\"\n[matrix]\nworkload = [\"canonical\"]\nscheduler = [\"dwcs\", \"dwcs-scx\"]\n[workloads.canonical]\nkind = \"periodic\"\nduration_s = 1\nquantum_ms = 10\ntasks = [{ c_ms = 10, t_ms = 20, x = 1, y = 2 }]\n";

    fn set_facts() -> ScxFacts {
        ScxFacts {
            programs: vec![(
                schedlab_plan::SCX_DISPATCHER.into(),
                Ok(PathBuf::from("/usr/bin/schedlab-scx")),
            )],
            ..facts()
        }
    }

    #[test]
    fn a_dwcs_scx_set_is_refused_naming_the_kernel_feature_the_program_or_root() {
        let spec = parse("t.toml", SET).unwrap();
        assert_eq!(spec.plan.scx_programs(), [schedlab_plan::SCX_DISPATCHER]);
        let e = refused(SET, ScxFacts { available: false, state: String::new(), ..set_facts() });
        assert_eq!(e.line, 3, "points at the workload: {e}");
        assert!(
            e.message
                .contains("workload \"canonical\" runs under schedlab's own sched_ext scheduler"),
            "{e}"
        );
        assert!(e.message.contains("/sys/kernel/sched_ext is absent"), "{e}");
        let e = refused(
            SET,
            ScxFacts {
                programs: vec![(
                    schedlab_plan::SCX_DISPATCHER.into(),
                    Err("no executable schedlab-scx on PATH".into()),
                )],
                ..set_facts()
            },
        );
        assert!(
            e.message.contains("schedlab-scx is not built: no executable schedlab-scx on PATH"),
            "{e}"
        );
        assert!(e.message.contains("cargo install --path crates/scx-dwcs"), "{e}");
        let e = refused(SET, ScxFacts { may_load: false, ..set_facts() });
        assert!(e.message.contains("needs root"), "{e}");
        assert!(spec.check_scx(&set_facts()).is_ok());
        // The same set under the dispatcher by priorities needs no sched_ext.
        let plain = parse("t.toml", &SET.replace(", \"dwcs-scx\"", "")).unwrap();
        assert!(plain.plan.scx_programs().is_empty());
        assert!(plain.check_scx(&ScxFacts { available: false, ..facts() }).is_ok());
    }

    #[test]
    fn a_dwcs_scx_set_under_another_sched_ext_scheduler_is_refused() {
        let text = SET.replace(
            "scheduler = [\"dwcs\", \"dwcs-scx\"]\n",
            "scheduler = [\"dwcs-scx\"]\ncpu_scheduler = [\"scx:scx_bpfland\"]\n",
        );
        let e = parse("t.toml", &text).expect_err("two sched_ext schedulers");
        assert!(
            e.message.contains("periodic set under dwcs-scx, which loads schedlab's own"),
            "{e}"
        );
        assert!(e.message.contains("one sched_ext scheduler at a time"), "{e}");
    }

    #[test]
    fn a_plan_of_eevdf_alone_needs_no_sched_ext() {
        let s = parse(
            "t.toml",
            "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpu_scheduler = [\"eevdf\"]\n",
        )
        .unwrap();
        assert_eq!(s.plan.cells[0].cpu_scheduler, Some(CpuScheduler::Eevdf));
        assert!(s.check_scx(&ScxFacts { available: false, ..facts() }).is_ok());
    }

    #[test]
    fn a_scheduler_already_loaded_a_missing_program_or_no_root_is_refused_by_name() {
        let e = refused(
            SPEC,
            ScxFacts { state: "enabled".into(), ops: Some("lavd_1.0".into()), ..facts() },
        );
        assert!(
            e.message.contains(
                "another sched_ext scheduler is loaded (state enabled, root/ops lavd_1.0)"
            ),
            "{e}"
        );
        let e = refused(
            SPEC,
            ScxFacts {
                programs: vec![(
                    "scx_bpfland".into(),
                    Err("no executable scx_bpfland on PATH".into()),
                )],
                ..facts()
            },
        );
        assert!(e.message.contains("scx_bpfland: no executable scx_bpfland on PATH"), "{e}");
        let e = refused(SPEC, ScxFacts { may_load: false, ..facts() });
        assert!(e.message.contains("needs root"), "{e}");
        assert!(parse("t.toml", SPEC).unwrap().check_scx(&facts()).is_ok());
    }

    #[test]
    fn real_time_workers_in_a_sched_ext_cell_are_refused_with_the_reason() {
        let e = parse("t.toml", &format!("{SPEC}policy = [\"other\", \"fifo\"]\n"))
            .expect_err("fifo under scx");
        assert_eq!((e.line, e.col), (4, 27), "{e}");
        assert!(e.message.contains("group main runs under fifo (fifo)"), "{e}");
        assert!(e.message.contains("sched_ext does not schedule"), "{e}");
        // The same classes under the kernel's own scheduler are fine.
        let eevdf = SPEC.replace(", \"scx:scx_bpfland\"", "");
        assert!(parse("t.toml", &format!("{eevdf}policy = [\"other\", \"fifo\"]\n")).is_ok());
    }

    #[test]
    fn a_table_gives_the_arguments_and_a_relative_program_resolves_against_the_spec() {
        let s = crate::parse_at(
            "/srv/t.toml",
            "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpu_scheduler = [{ scx = \"bin/scx_lavd\", args = [\"--performance\"] }, \"scx:scx_rusty:-u 5\"]\n",
            std::path::Path::new("/srv"),
        )
        .unwrap();
        let keys: Vec<&str> = s.plan.cells.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "pi/other/n1/cpu_scheduler=scx_lavd:--performance",
                "pi/other/n1/cpu_scheduler=scx_rusty:-u 5"
            ]
        );
        assert_eq!(s.plan.cells[0].scx().unwrap().program, "/srv/bin/scx_lavd");
        assert_eq!(s.plan.scx_programs(), ["/srv/bin/scx_lavd", "scx_rusty"]);
        for (bad, says) in [
            ("\"cfs\"", "unknown cpu_scheduler \"cfs\""),
            ("{ scx = \"x\", argv = [] }", "unknown key `argv`"),
            ("{ args = [] }", "needs `scx = \"NAME\"`"),
            ("{ scx = \"x\", args = [1] }", "array of strings"),
            ("3", "got an integer"),
        ] {
            let e = parse(
                "t.toml",
                &format!("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpu_scheduler = [{bad}]\n"),
            )
            .expect_err(bad);
            assert!(e.message.contains(says) && e.line == 4, "{bad}: {e}");
        }
    }
}
