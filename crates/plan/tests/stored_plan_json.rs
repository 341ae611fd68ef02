//! Runs store their plan as JSON (`runs.plan_json`) and `--resume` reads it back, so the
//! serde shapes of the plan are a stored format. `stored_plans.jsonl` holds plans written
//! by schedlab before this crate existed (cells of the example experiments: periodic sets
//! generated, canonical and partitioned, SCHED_DEADLINE, background groups, cgroup
//! weights, a loop device and I/O scheduler settings).

use schedlab_plan::{Affinity, DeviceTarget, Plan, QueueTarget};

const STORED: &str = include_str!("stored_plans.jsonl");

#[test]
fn stored_plans_read_back_and_serialize_byte_identically() {
    let mut n = 0;
    for line in STORED.lines() {
        let plan: Plan = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(serde_json::to_string(&plan).unwrap(), line, "plan {} changed shape", plan.name);
        n += 1;
    }
    assert_eq!(n, 7);
}

#[test]
fn plans_stored_before_devices_io_settings_and_cpus_existed_still_read() {
    for line in STORED.lines() {
        let plan: Plan = serde_json::from_str(line).unwrap();
        let mut old: serde_json::Value = serde_json::from_str(line).unwrap();
        old.as_object_mut().unwrap().remove("device");
        for cell in old["cells"].as_array_mut().unwrap() {
            cell.as_object_mut().unwrap().remove("io");
            for g in cell["groups"].as_array_mut().unwrap() {
                if g["workload"]["kind"] == "periodic" {
                    g["workload"].as_object_mut().unwrap().remove("cpus");
                }
            }
        }
        let read: Plan = serde_json::from_value(old).unwrap();
        assert_eq!(read.cells.len(), plan.cells.len());
        assert!(read.device.is_none() && read.cells.iter().all(|c| c.io.is_none()));
    }
}

#[test]
fn variants_no_example_uses_keep_their_spelling() {
    assert_eq!(serde_json::to_string(&Affinity::List(vec![0, 2])).unwrap(), r#"{"list":[0,2]}"#);
    assert_eq!(serde_json::to_string(&Affinity::Compact).unwrap(), "\"compact\"");
    let dir = DeviceTarget::Dir { path: "/srv".into() };
    assert_eq!(serde_json::to_string(&dir).unwrap(), r#"{"kind":"dir","path":"/srv"}"#);
    assert_eq!(serde_json::to_string(&QueueTarget::Backing).unwrap(), "\"backing\"");
}
