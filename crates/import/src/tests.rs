//! The rt-app mapping, file text to sets and the list of what was left out.

use crate::json::parse;
use crate::rtapp::{import, parse_policy, rtapp_name, Imported};
use schedlab_plan::Class;

fn imp(text: &str) -> Imported {
    import(&parse(text).unwrap()).unwrap()
}

fn has(i: &Imported, words: &[&str]) -> bool {
    i.unmapped.iter().any(|u| words.iter().all(|w| u.contains(w)))
}

const TWO: &str = r#"{
  "global": { "duration": 2, "default_policy": "SCHED_OTHER" },
  "tasks": {
    "fifo": { "policy": "SCHED_FIFO", "priority": 10, "cpus": [0],
              "run": 2000, "timer": { "ref": "unique", "period": 10000, "mode": "absolute" } },
    "dl": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 20000,
            "run": 3000, "timer": { "ref": "unique", "period": 20000, "mode": "absolute" } }
  }
}"#;

#[test]
fn run_then_timer_gives_c_and_t_and_each_policy_its_set() {
    let i = imp(TWO);
    assert_eq!(i.duration_s, 2.0);
    assert_eq!(i.sets.len(), 2);
    let (f, d) = (&i.sets[0], &i.sets[1]);
    assert_eq!((f.scheduler, f.tasks.len(), f.cpu), ("fifo", 1, Some(0)));
    let t = &f.tasks[0];
    assert_eq!(
        (t.c_us, t.t_us, t.d_us, t.policy, t.priority),
        (2000, 10000, None, Class::Fifo, 10)
    );
    assert_eq!(f.work_fraction, 1.0, "rt-app's run is the whole job");
    assert_eq!(d.scheduler, "deadline");
    let t = &d.tasks[0];
    assert_eq!((t.c_us, t.t_us, t.d_us, t.policy), (3000, 20000, None, Class::Deadline));
    assert!(has(&i, &["scheduling classes", "cell of its own"]), "{:?}", i.unmapped);
    assert!(!has(&i, &["relative"]), "absolute timers are schedlab's releases: {:?}", i.unmapped);
}

#[test]
fn deadline_parameters_give_c_t_d_and_the_run_its_work_fraction() {
    let i = imp(
        r#"{ "tasks": { "d": { "policy": "SCHED_DEADLINE", "dl-runtime": 4000, "dl-period": 40000, "dl-deadline": 30000,
             "phases": { "p": { "run": 2000, "timer": { "ref": "unique", "period": 50000 } } } } } }"#,
    );
    let t = &i.sets[0].tasks[0];
    assert_eq!((t.c_us, t.t_us, t.d_us, t.work_us), (4000, 40000, Some(30000), 2000));
    assert_eq!(i.sets[0].work_fraction, 0.5);
    assert!(has(&i, &["every 50000 us", "dl-period is 40000 us"]), "{:?}", i.unmapped);
    assert!(has(&i, &["relative mode"]), "{:?}", i.unmapped);
    assert!(has(&i, &["duration", "10"]), "no duration given: {:?}", i.unmapped);
}

#[test]
fn instances_become_several_tasks_and_a_shared_timer_is_listed() {
    let i = imp(
        r#"{ "tasks": { "w": { "instance": 3, "policy": "SCHED_RR", "priority": 20, "delay": 1500,
             "run": 1000, "timer": { "ref": "tick", "period": 8000 } } } }"#,
    );
    let s = &i.sets[0];
    assert_eq!(s.scheduler, "rr", "SCHED_RR threads alone: a set of their own");
    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["w[0]", "w[1]", "w[2]"]);
    assert!(s
        .tasks
        .iter()
        .all(|t| (t.c_us, t.t_us, t.phase_us, t.priority) == (1000, 8000, 1500, 20)));
    assert!(has(&i, &["timer \"tick\" is shared by w[0], w[1], w[2]"]), "{:?}", i.unmapped);
    assert!(!has(&i, &["SCHED_RR runs as SCHED_FIFO"]), "{:?}", i.unmapped);
    assert!(has(&i, &["no cpus", "one CPU"]), "{:?}", i.unmapped);
}

#[test]
fn locks_barriers_and_memory_phases_are_listed_by_name() {
    let i = imp(
        r#"{ "resources": {}, "global": { "duration": 1, "calibration": "CPU0", "pi_enabled": false },
             "tasks": { "a": { "lock": "m", "run": 1000, "barrier": "sync1", "mem": 4096, "unlock": "m",
                               "timer": { "ref": "unique", "period": 10000 }, "util_min": 512 },
                        "b": { "run": 500, "iorun": 100, "suspend": "b" } } }"#,
    );
    for words in [
        &["task \"a\"", "\"lock\"", "shared"][..],
        &["\"unlock\""],
        &["\"barrier\"", "barrier between threads"],
        &["\"mem\"", "memory phase"],
        &["\"util_min\""],
        &["task \"b\"", "\"iorun\""],
        &["task \"b\"", "\"suspend\""],
        &["task \"b\" left out", "never waits"],
        &["\"resources\""],
        &["global: calibration, pi_enabled"],
    ] {
        assert!(has(&i, words), "{words:?} not in {:#?}", i.unmapped);
    }
    assert_eq!(i.sets[0].tasks[0].c_us, 1000, "a's run and timer are still mapped");
    assert_eq!(i.sets[0].tasks.len(), 1);
}

#[test]
fn repeated_keys_are_one_job_and_sleep_only_threads_take_run_plus_sleep() {
    let i = imp(r#"{ "global": { "duration": 1 }, "tasks": {
             "rep": { "run": 1000, "sleep": 500, "run": 1500, "timer": { "ref": "unique", "period": 20000 } },
             "sl": { "policy": "SCHED_OTHER", "priority": -5, "run": 2000, "sleep": 8000 } } }"#);
    let t: Vec<(u64, u64)> = i.sets[0].tasks.iter().map(|t| (t.c_us, t.t_us)).collect();
    assert_eq!(t, [(2500, 20000), (2000, 10000)]);
    assert!(has(&i, &["task \"rep\"", "sleep of 500 us inside the job"]), "{:?}", i.unmapped);
    assert!(has(&i, &["task \"sl\"", "run + sleep = 10000 us"]), "{:?}", i.unmapped);
    assert!(has(&i, &["sl: nice -5"]), "{:?}", i.unmapped);
}

#[test]
fn phases_that_differ_keep_the_first_and_list_the_others() {
    let i = imp(r#"{ "tasks": { "t": { "loop": 5, "cpus": [1], "phases": {
             "light": { "loop": 10, "run": 1000, "timer": { "ref": "unique", "period": 30000, "mode": "absolute" } },
             "heavy": { "loop": 10, "run": 4000, "timer": { "ref": "unique", "period": 30000, "mode": "absolute" } } } } } }"#);
    let t = &i.sets[0].tasks[0];
    assert_eq!((t.c_us, t.t_us), (1000, 30000));
    assert_eq!(i.sets[0].cpu, Some(1));
    assert!(has(&i, &["phase \"heavy\"", "run 4000 us", "phase \"light\""]), "{:?}", i.unmapped);
    assert!(has(&i, &["loop 5"]), "{:?}", i.unmapped);
    assert_eq!(i.duration_s, 3.0, "5 rounds of 10 x 30 ms twice: {:?}", i.unmapped);
    assert!(!has(&i, &["global duration"]), "finite loops give the duration: {:?}", i.unmapped);
}

#[test]
fn differing_cpu_masks_partition_over_their_union() {
    let i = imp(r#"{ "global": { "duration": 1 }, "tasks": {
             "a": { "policy": "SCHED_FIFO", "cpus": [0], "run": 1000, "sleep": 9000 },
             "b": { "policy": "SCHED_FIFO", "cpus": [1], "run": 1000, "sleep": 9000 } } }"#);
    assert_eq!((i.sets[0].cpu, i.sets[0].cpus.clone()), (None, vec![0, 1]));
    assert!(has(&i, &["cpus differ", "a [0], b [1]"]), "{:?}", i.unmapped);
}

#[test]
fn bad_files_are_refused_with_where() {
    let e =
        super::json::parse("{\n  \"tasks\": {\n    \"a\": { \"run\": 10 \"sleep\": 5 }\n  }\n}")
            .unwrap_err();
    assert_eq!((e.line, e.col), (3, 22), "{}", e.message);
    let err = |t: &str| import(&parse(t).unwrap()).unwrap_err().to_string();
    assert!(err(r#"{ "global": {} }"#).contains("no \"tasks\""));
    assert!(err(r#"{ "tasks": { "a": { "policy": "SCHED_LOTTERY", "run": 1, "sleep": 1 } } }"#)
        .contains("unknown policy"));
    assert!(err(r#"{ "tasks": { "a": { "run": "ten", "sleep": 1 } } }"#)
        .contains("task \"a\": \"run\" must be an integer"));
    let e = err(r#"{ "tasks": { "a": { "run": 100 } } }"#);
    assert!(e.contains("no periodic task") && e.contains("never waits"), "{e}");
    // A job longer than its period is left out, named.
    let i = imp(
        r#"{ "tasks": { "a": { "run": 100, "sleep": 10 }, "b": { "run": 30, "timer": { "ref": "x", "period": 20 } } } }"#,
    );
    assert!(has(&i, &["task \"b\" left out", "C = 30 us, T = 20 us"]), "{:?}", i.unmapped);
}

#[test]
fn rt_app_policy_names_are_schedlab_classes() {
    for c in Class::ALL {
        assert_eq!(parse_policy(&rtapp_name(c)), Some(c));
    }
    assert_eq!(parse_policy("SCHED_fifo"), None);
    assert_eq!(parse_policy("FIFO"), None);
}

#[test]
fn rr_threads_beside_fifo_ones_join_their_set_and_priorities_past_98_are_listed() {
    let i = imp(r#"{ "tasks": {
             "f": { "policy": "SCHED_FIFO", "priority": 99, "run": 1000, "timer": { "ref": "unique", "period": 10000 } },
             "r": { "policy": "SCHED_RR", "priority": 30, "run": 1000, "timer": { "ref": "unique", "period": 20000 } } } }"#);
    assert_eq!(i.sets.len(), 1, "{:?}", i.sets);
    let s = &i.sets[0];
    assert_eq!(s.scheduler, "fifo");
    let prios: Vec<(Class, i64)> = s.tasks.iter().map(|t| (t.policy, t.priority)).collect();
    assert_eq!(prios, [(Class::Fifo, 99), (Class::Rr, 30)]);
    assert!(
        has(&i, &["r: SCHED_RR runs as SCHED_FIFO, in the set of the SCHED_FIFO threads"]),
        "{:?}",
        i.unmapped
    );
    assert!(has(&i, &["f: SCHED_FIFO priority 99 becomes 98"]), "{:?}", i.unmapped);
}
