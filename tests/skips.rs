//! A skipped test says why where `cargo test` shows it (issue 33, item 10): libtest hides
//! what a passing test printed with eprintln!, so a skip used to look like any "ok".

/// A test that skips, run by the test below (ignored in ordinary runs).
#[test]
#[ignore = "run by a_skip_shows_its_reason_in_the_test_run_s_output"]
fn skip_probe() {
    require!(false, "the probe always skips");
}

#[test]
fn a_skip_shows_its_reason_in_the_test_run_s_output() {
    // This test binary, as `cargo test` runs it: output captured, nothing but the probe.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "skips::skip_probe"])
        .env_remove("RUST_TEST_NOCAPTURE")
        .output()
        .unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("1 passed"), "the probe ran: {stdout}");
    assert!(
        stderr.contains("SKIPPED skips::skip_probe: the probe always skips"),
        "the reason is in the run's output: {stdout}{stderr}"
    );
}
