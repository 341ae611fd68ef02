use super::*;
use crate::raw::{CELL_KEYS, GROUP_KEYS};
use schedlab_plan::axis::{Scope, AXES};

#[test]
fn every_axis_key_of_the_raw_spec_has_exactly_one_definition() {
    for (keys, scope) in [(GROUP_KEYS, Scope::Group), (CELL_KEYS, Scope::Cell)] {
        for key in keys {
            let defs: Vec<&SpecAxis> = SPEC_AXES.iter().filter(|d| d.axis.name == *key).collect();
            assert_eq!(
                defs.len(),
                1,
                "raw key `{key}` has {} definitions in SPEC_AXES",
                defs.len()
            );
            let d = defs[0];
            assert_eq!(axis::by_name(key), Some(d.axis), "`{key}` is not in axis::AXES");
            assert_eq!(d.axis.scope, scope, "`{key}` is declared as a {scope:?} key in raw.rs");
            assert_eq!(
                matches!(d.apply, Apply::Cell(_)),
                scope == Scope::Cell,
                "`{key}` applies to the wrong scope"
            );
        }
    }
    for a in AXES {
        let declared = GROUP_KEYS.iter().chain(CELL_KEYS).filter(|k| **k == a.name).count();
        assert_eq!(
            declared, 1,
            "axis {} is declared {declared} times in raw.rs's axis_keys!",
            a.name
        );
    }
    assert_eq!(SPEC_AXES.len(), AXES.len());
}

fn plan(text: &str) -> schedlab_plan::Plan {
    crate::parse("t.toml", text).unwrap_or_else(|e| panic!("{e}")).plan
}

/// Rebuilds every cell's key from the parameters stored with its results, through each
/// swept axis's `stored`: the key must come out the same, so that no axis's key text and
/// stored value disagree.
fn keys_follow_from_stored_values(text: &str, swept: &[(&str, &[&Axis])]) {
    let plan = plan(text);
    assert!(plan.cells.len() > 1, "the spec should sweep something");
    for cell in &plan.cells {
        let rt = cell.groups.iter().find_map(|g| g.workload.periodic()).map(|p| p.cell_rt(None));
        let record = schedlab_model::CellRecord { params: cell.params(), rt, ..Default::default() };
        let mut parts = Vec::new();
        let mut cell_tags = Vec::new();
        for (gname, axes) in swept {
            let Some(i) = cell.groups.iter().position(|g| g.name == *gname) else {
                assert_eq!(*gname, "", "group {gname} is in every cell of this spec");
                let gp = schedlab_model::GroupParams::default();
                cell_tags.extend(axes.iter().map(|a| {
                    (*a, (a.stored)(&record, &gp).expect("a cell axis's value is stored"))
                }));
                continue;
            };
            let gp = &record.params.groups[i];
            let tags: Vec<(&Axis, String)> = axes
                .iter()
                .map(|a| {
                    (*a, (a.stored)(&record, gp).unwrap_or_else(|| panic!("{} not stored", a.name)))
                })
                .collect();
            parts.push(axis::group_key(gname, Some(&cell.groups[i]), &tags));
        }
        assert_eq!(axis::cell_key(parts, &cell_tags), cell.key);
    }
}

#[test]
fn every_swept_axis_shows_in_the_key_as_its_stored_value() {
    let text = r#"name = "t"
[matrix]
iosched = ["none", "fast"]
workload = ["pi", "hash"]
policy = ["other", "hi"]
priority = [10, 50]
nice = [0, 5]
affinity = ["all", "0-1", "spread"]
cpu_weight = [0, 200]
cpu_max = [[50000, 100000]]
cpuset = ["0-1", [1]]
processes = [1]
[matrix.groups.bg]
workload = ["mixed"]
policy = ["rr", "batch"]
priority = [7, 8]
nice = [-2]
affinity = [[0]]
cpu_weight = [50]
cpu_max = [[3000, 10000]]
cpuset = ["1"]
processes = [3]
[groups.bg]
workload = "pi"
[policies.hi]
class = "fifo"
priority = 90
[iosched.fast]
scheduler = "mq-deadline"
"#;
    let group: &[&Axis] = &[
        &axis::WORKLOAD,
        &axis::POLICY,
        &axis::PRIORITY,
        &axis::NICE,
        &axis::AFFINITY,
        &axis::CPU_WEIGHT,
        &axis::CPU_MAX,
        &axis::CPUSET,
        &axis::PROCESSES,
    ];
    keys_follow_from_stored_values(
        text,
        &[("main", group), ("bg", group), ("", &[&axis::IOSCHED])],
    );

    let periodic = r#"name = "t"
[matrix]
workload = ["gen"]
scheduler = ["other", "fifo-rm", "edf"]
utilisation = [0.3, 0.45]
[matrix.groups.p]
scheduler = ["dwcs", "deadline"]
[groups.p]
workload = "gen"
[workloads.gen]
kind = "periodic"
generate = { tasks = 3, utilisation = 0.5, seed = 1 }
"#;
    let main: &[&Axis] = &[&axis::WORKLOAD, &axis::SCHEDULER, &axis::UTILISATION];
    keys_follow_from_stored_values(periodic, &[("main", main), ("p", &[&axis::SCHEDULER])]);
}

#[test]
fn a_value_is_checked_alike_as_a_groups_setting_and_on_its_axis() {
    // (key, a bad value); cpu_weight and processes differ on purpose (0 on an axis).
    let bad = [
        ("workload", r#""nope""#),
        ("policy", r#""nope""#),
        ("priority", "99"),
        ("nice", "20"),
        ("affinity", r#""x""#),
        ("cpu_max", "[1, 2]"),
        ("cpuset", "[5000]"),
        ("scheduler", r#""nope""#),
        ("utilisation", "0.0"),
    ];
    for (key, value) in bad {
        let workload = if key == "workload" { "" } else { "workload = \"pi\"\n" };
        let fixed = format!(
            "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.g]\n{workload}{key} = {value}\n"
        );
        let swept = format!("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.g]\n{workload}[matrix.groups.g]\n{key} = [{value}]\n");
        let (f, s) = (
            crate::parse("t.toml", &fixed).unwrap_err(),
            crate::parse("t.toml", &swept).unwrap_err(),
        );
        assert_eq!(f.message, s.message, "`{key} = {value}`");
        let line = |text: &str| {
            text.lines().collect::<Vec<_>>().iter().rposition(|l| l.starts_with(key)).unwrap() + 1
        };
        let at = (line(&fixed), key.len() + 4, line(&swept), key.len() + 5);
        assert_eq!((f.line, f.col, s.line, s.col), at, "`{key} = {value}` is located at its value");
    }
}
