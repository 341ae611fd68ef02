//! The plain structs round-trip through serde, as an integration layer will use them.

use schedlab_policy::PolicySpec;
use schedlab_sim::{SimConfig, TaskSpec};

use crate::run;

#[test]
fn config_and_tasks_deserialize_from_plain_data() {
    let config: SimConfig = serde_json::from_str(
        r#"{ "cpus": 2, "policy": { "kind": "rr", "quantum": 2 }, "horizon": 100 }"#,
    )
    .unwrap();
    assert_eq!(config.policy, PolicySpec::Rr { quantum: 2 });
    assert_eq!(config, SimConfig::new(2, PolicySpec::Rr { quantum: 2 }).with_horizon(100));
    let tasks: Vec<TaskSpec> = serde_json::from_str(
        r#"[
            { "name": "p", "workload": { "periodic": { "wcet": 1, "period": 4 } },
              "params": { "window": { "x": 1, "y": 2 } } },
            { "name": "b", "arrival": 3, "workload": { "burst": { "length": 5 } } }
        ]"#,
    )
    .unwrap();
    assert_eq!(tasks[0], TaskSpec::periodic("p", 1, 4).window(1, 2));
    assert_eq!(tasks[1], TaskSpec::burst("b", 5).at(3));
    let unknown = serde_json::from_str::<SimConfig>(
        r#"{ "cpus": 1, "policy": { "kind": "edf" }, "cpu": 2 }"#,
    );
    assert!(unknown.is_err());
    let result = run(&config, &tasks);
    let json = serde_json::to_string(&result).unwrap();
    let back: schedlab_sim::SimResult = serde_json::from_str(&json).unwrap();
    assert_eq!(back, result);
}
