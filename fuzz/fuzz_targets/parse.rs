//! Any bytes as an experiment file: parsing never panics, and every error has a location
//! inside the file and stays short (the CLI prints it as it is).
#![no_main]

use libfuzzer_sys::fuzz_target;
use schedlab_spec::{Capabilities, DeviceFacts};

const PATH: &str = "fuzz.toml";

fuzz_target!(|data: &[u8]| {
    let lines = data.split(|&b| b == b'\n').count();
    let parsed = schedlab_spec::decode(PATH, data).and_then(|text| schedlab_spec::parse_at(PATH, text, std::path::Path::new("/fuzz")));
    let errors = match parsed {
        Err(e) => vec![e],
        // The checks that need no filesystem, under a privileged and an unprivileged view.
        Ok(spec) => [
            spec.check_allowed(&Capabilities { sys_nice: false, rtprio_limit: 0, min_nice: 0 }),
            spec.check_cpus(&[0]),
            spec.check_device(&DeviceFacts::default(), None),
            spec.check_device(
                &DeviceFacts {
                    privileged: true,
                    path_error: Some("missing".into()),
                    disk: Some("vda".into()),
                    offered: Some(vec![]),
                    free_bytes: Some(0),
                    mkfs_error: None,
                },
                None,
            ),
        ]
        .into_iter()
        .filter_map(Result::err)
        .collect(),
    };
    for e in errors {
        let shown = e.to_string();
        assert!(shown.starts_with(&format!("{PATH}:{}:{}: ", e.line, e.col)), "{shown}");
        assert!(e.line >= 1 && e.line <= lines && e.col >= 1, "outside the file ({lines} lines): {shown}");
        assert!(shown.len() < 4096, "a {} byte error", shown.len());
    }
});
