//! `schedlab import rt-app`: an rt-app file becomes a spec that `check` accepts, with the
//! same C, T, policy and priority per task, and with what it could not map listed.

use crate::util::{is_root, Lab};
use schedlab_spec::{Class, RtScheduler};

/// Two periodic rt-app threads, one SCHED_FIFO and one SCHED_DEADLINE, as rt-app's own
/// examples write them (comments, a trailing comma).
const TWO: &str = r#"{
	/* one SCHED_FIFO and one SCHED_DEADLINE periodic thread */
	"tasks" : {
		"fifo_task" : {
			"policy" : "SCHED_FIFO",
			"priority" : 10,
			"run" : 2000,
			"timer" : { "ref" : "unique", "period" : 10000 },
		},
		"dl_task" : {
			"policy" : "SCHED_DEADLINE",
			"dl-runtime" : 3000,
			"dl-period" : 20000,
			"run" : 3000,
			"timer" : { "ref" : "unique", "period" : 20000 }
		}
	},
	"global" : { "duration" : 2, "calibration" : "CPU0" }
}"#;

#[test]
fn an_rt_app_fifo_and_deadline_pair_imports_into_a_spec_check_accepts() {
    let lab = Lab::new();
    lab.spec("two.json", TWO);
    let out = lab.run(&["import", "rt-app", "two.json", "-o", "two.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(lab.path("two.toml")).unwrap();
    assert!(text.starts_with("# Imported from the rt-app file \"two.json\""), "{text}");
    assert!(
        text.contains(
            "# rt-app thread \"fifo_task\": SCHED_FIFO priority 10, run 2000 us, timer 10000 us"
        ),
        "{text}"
    );
    assert!(text.contains("# rt-app thread \"dl_task\": SCHED_DEADLINE, run 3000 us"), "{text}");

    let spec = schedlab_spec::parse_at("two.toml", &text, lab.dir.path()).unwrap();
    assert_eq!(spec.plan.cells.len(), 2, "one cell per scheduling class");
    let set = |w: &str| {
        let c = spec
            .plan
            .cells
            .iter()
            .find(|c| c.primary().workload_name == w)
            .unwrap_or_else(|| panic!("no cell of {w}"));
        (c.primary().policy, c.primary().workload.periodic().unwrap().clone())
    };
    let (policy, fifo) = set("rtapp_fifo");
    assert_eq!((fifo.scheduler, policy.class), (RtScheduler::Fifo, Class::Fifo));
    assert_eq!(
        (fifo.tasks.len(), fifo.tasks[0].c_ns, fifo.tasks[0].t_ns),
        (1, 2_000_000, 10_000_000)
    );
    assert_eq!(fifo.work_ns(&fifo.tasks[0]), 2_000_000, "the job runs all of rt-app's run");
    // Each task keeps its rt-app priority: the one the engine applies and the simulator ranks by.
    assert_eq!(fifo.task_priorities(), Some(vec![10]));
    assert!(!stderr.contains("priority 10 becomes"), "{stderr}");
    let (policy, dl) = set("rtapp_deadline");
    assert_eq!((dl.scheduler, policy.class), (RtScheduler::Deadline, Class::Deadline));
    assert_eq!(
        (dl.tasks.len(), dl.tasks[0].c_ns, dl.tasks[0].t_ns, dl.tasks[0].deadline_ns()),
        (1, 3_000_000, 20_000_000, 20_000_000)
    );
    let p = policy.deadline.expect("SCHED_DEADLINE parameters");
    assert_eq!((p.runtime_ns, p.period_ns), (3_000_000, 20_000_000));
    assert_eq!(
        spec.plan.cells[0].primary().workload.periodic().unwrap().duration_ns,
        2_000_000_000
    );

    // `check` also applies the privilege check, which SCHED_FIFO and SCHED_DEADLINE need root for.
    require!(is_root(), "check of SCHED_FIFO and SCHED_DEADLINE sets needs CAP_SYS_NICE (root)");
    let shown = lab.ok(&["check", "two.toml", "--wide"]);
    assert!(shown.contains("rtapp_fifo/fifo") && shown.contains("fifo (fifo prio 10)"), "{shown}");
    assert!(shown.contains("rtapp_deadline/deadline"), "{shown}");
}

#[test]
fn locks_barriers_and_memory_phases_are_listed_not_dropped() {
    let lab = Lab::new();
    lab.spec(
        "sync.json",
        r#"{ "global": { "duration": 1 }, "tasks": {
             "a": { "policy": "SCHED_FIFO", "cpus": [0], "lock": "m", "run": 1000, "unlock": "m", "barrier": "b1", "mem": 4096,
                    "timer": { "ref": "unique", "period": 10000 } },
             "b": { "policy": "SCHED_FIFO", "cpus": [0], "run": 1000, "barrier": "b1",
                    "timer": { "ref": "unique", "period": 20000 } } } }"#,
    );
    let out = lab.run(&["import", "rt-app", "sync.json", "-o", "sync.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(lab.path("sync.toml")).unwrap();
    for listed in [
        "task \"a\": \"lock\" left out",
        "task \"a\": \"unlock\" left out",
        "task \"a\": \"barrier\" left out",
        "task \"b\": \"barrier\" left out",
        "task \"a\": \"mem\" left out",
    ] {
        assert!(stderr.contains(listed), "{listed} not on stderr: {stderr}");
        assert!(text.contains(listed), "{listed} not in the spec's header: {text}");
    }
    let spec = schedlab_spec::parse_at("sync.toml", &text, lab.dir.path()).unwrap();
    let set = spec.plan.cells[0].primary().workload.periodic().unwrap();
    assert_eq!(set.tasks.len(), 2, "the threads' run and timer still make tasks");
    assert_eq!(set.cpu, Some(0));
}

#[test]
fn import_refuses_bad_json_with_its_position_and_keeps_an_existing_spec() {
    let lab = Lab::new();
    lab.spec("bad.json", "{\n  \"tasks\": {\n    \"a\": { \"run\": 10 \"sleep\": 5 }\n  }\n}\n");
    let out = lab.run(&["import", "rt-app", "bad.json", "-o", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.json:3:22:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!lab.path("bad.toml").exists(), "nothing written");

    lab.spec("two.json", TWO);
    lab.spec("mine.toml", "# my own spec\n");
    let out = lab.run(&["import", "rt-app", "two.json", "-o", "mine.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--force"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(lab.path("mine.toml")).unwrap(),
        "# my own spec\n",
        "left as it was"
    );
    lab.ok(&["import", "rt-app", "two.json", "-o", "mine.toml", "--force"]);
    assert!(std::fs::read_to_string(lab.path("mine.toml"))
        .unwrap()
        .contains("[workloads.rtapp_deadline]"));
}
