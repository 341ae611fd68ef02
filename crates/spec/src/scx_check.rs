//! A plan's `cpu_scheduler` values against the machine, before anything changes: a kernel
//! with sched_ext, no scheduler loaded by someone else, the privilege to load one, and
//! each scheduler's program.

use crate::error::SpecError;
use crate::validate::Locations;
use schedlab_plan::{Plan, ScxFacts};

/// Checks every sched_ext scheduler of the plan; errors point at its value.
pub(crate) fn check(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    facts: &ScxFacts,
) -> Result<(), SpecError> {
    let Some(first) = plan.cells.iter().find_map(|c| c.scx()) else { return Ok(()) };
    let at = |label: &str, msg: String| {
        let span = locs
            .cpu_schedulers
            .iter()
            .find(|(l, _)| l == label)
            .map_or(locs.matrix.clone(), |(_, s)| s.clone());
        Err(SpecError::at(&plan.source_path, src, span, msg))
    };
    if !facts.available {
        return at(
            &first.label(),
            format!(
                "this kernel ({}) has no sched_ext: /sys/kernel/sched_ext is absent (it needs Linux 6.12 or newer built with CONFIG_SCHED_CLASS_EXT=y); run the sched_ext cells on such a kernel, or keep only eevdf here",
                if facts.kernel.is_empty() { "unknown" } else { &facts.kernel }
            ),
        );
    }
    if facts.state != "disabled" {
        return at(
            &first.label(),
            format!(
                "another sched_ext scheduler is loaded (state {}, root/ops {}): stop it before the run, which loads its own",
                facts.state,
                facts.ops.as_deref().unwrap_or("empty")
            ),
        );
    }
    if !facts.may_load {
        return at(
            &first.label(),
            "loading a sched_ext scheduler needs root (CAP_SYS_ADMIN and CAP_BPF)".into(),
        );
    }
    for c in &plan.cells {
        if let Some(p) = c.scx() {
            if let Some((_, Err(why))) = facts.programs.iter().find(|(name, _)| *name == p.program)
            {
                return at(&p.label(), format!("the sched_ext scheduler {}: {why}", p.name()));
            }
        }
    }
    Ok(())
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
