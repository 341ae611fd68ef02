//! `schedlab bisect` on a generated repository (issue 45, item 6): sixteen commits whose
//! `work.sh` does a fixed amount of work, one of them (at a position drawn each run) twice
//! as much; the build fails on the first revision the bisect tests, which is skipped; the
//! bisect is stopped by SIGTERM after its first step and the same command continues it.
//!
//! Twice, not 30% more: on this 2-CPU machine with other builds running (load average 9),
//! 30 repetitions per arm left a 30% slower revision undecided (+23% [-3, 57] wall,
//! p 0.004), and undecided at the cap counts good. A step's CPU time (`--metric user`)
//! moves less with the load than its wall time does.

use crate::util::{wait_exit, wait_for, Lab};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Commits in the repository: the good one first, the bad one last.
const COMMITS: usize = 16;
/// awk loop iterations of the good work (about 50 ms).
const WORK: u64 = 1_500_000;
/// The commit whose build fails: the first the bisect tests, the middle of the 15 after
/// the good one.
const BROKEN: usize = 7;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository of [`COMMITS`] commits in which commit `slow` doubles the work and
/// commit [`BROKEN`] adds the file the build refuses (the next removes it): the commits'
/// ids, oldest first.
fn repository(dir: &Path, slow: usize) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    let mut ids = Vec::new();
    for i in 0..COMMITS {
        let work = if i >= slow { 2 * WORK } else { WORK };
        std::fs::write(
            dir.join("work.sh"),
            format!("awk 'BEGIN {{ for (i = 0; i < {work}; i++) s += i }}'\n"),
        )
        .unwrap();
        std::fs::write(dir.join("history.txt"), format!("commit {i}\n")).unwrap();
        let broken = dir.join("BROKEN");
        match i == BROKEN {
            true => std::fs::write(&broken, "").unwrap(),
            false => {
                let _ = std::fs::remove_file(&broken);
            }
        }
        git(dir, &["add", "--all"]);
        git(dir, &["commit", "--quiet", "-m", &format!("commit {i}")]);
        ids.push(git(dir, &["rev-parse", "HEAD"]));
    }
    ids
}

/// The number of steps the bisect's state file records (0 while it has none).
fn steps_in(state: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(state) else { return 0 };
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["tested"].as_array().map(Vec::len))
        .unwrap_or(0)
}

#[test]
fn bisect_finds_the_slower_commit_skips_a_broken_build_and_resumes() {
    let _quiet = crate::util::measuring();
    let lab = Lab::new();
    // A position drawn each run, never the broken commit or the one after it (a skipped
    // commit just before the first bad one would leave two candidates, as git bisect does).
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let positions: Vec<usize> = (1..COMMITS).filter(|&i| i != BROKEN && i != BROKEN + 1).collect();
    let slow = positions[nanos as usize % positions.len()];
    let repo: PathBuf = lab.path("repo");
    let ids = repository(&repo, slow);
    let spec = lab.spec(
        "bisect.toml",
        "name = \"bisect\"\n[matrix]\nworkload = [\"work\"]\n[workloads.work]\nkind = \"command\"\nargv = [\"sh\", \"{worktree}/work.sh\"]\n",
    );
    let args = [
        "bisect",
        spec.to_str().unwrap(),
        "--repo",
        repo.to_str().unwrap(),
        "--good",
        &ids[0],
        "--bad",
        "main",
        "--build",
        "test ! -e BROKEN",
        // Never a false step: 8 repetitions per arm decide a doubling at alpha 0.001 (the
        // permutation test's smallest p is 0.00016), and a margin of 25% calls the others
        // the same soon even on a loaded machine.
        "--metric",
        "user",
        "--alpha",
        "0.001",
        "--repetitions",
        "8",
        "--same-within",
        "25%",
        "--max-repetitions",
        "20",
    ];
    let state = repo.join(".git/schedlab-bisect/state.json");
    let mut first = lab.cmd(&args).stderr(std::process::Stdio::piped()).spawn().unwrap();
    wait_for("the first step", Duration::from_secs(60), || steps_in(&state) >= 1);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let status = wait_exit(&mut first, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(first.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "slow {slow}: {err}");
    assert!(
        err.contains(&format!("[1/4] {}: skipped: the build failed", &ids[BROKEN][..7])),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    let stopped_at = steps_in(&state);
    assert!(!repo.join(".git/schedlab-bisect/test").exists(), "a worktree outlived the stop");

    let out = lab.run(&args);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "slow {slow}: {stderr}\n{stdout}");
    assert!(stderr.contains(&format!("continuing the bisect of {}..main", ids[0])), "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "first bad commit: {}\n  {} commit {slow}\n",
            ids[slow],
            &ids[slow][..7]
        )),
        "slow {slow}, stopped after {stopped_at} steps: {stdout}\n{stderr}"
    );
    assert!(stdout.contains("regressed  user +"), "{stdout}");
    assert!(
        stderr.lines().any(|l| l.contains(": regressed user +") && l.contains(" p ")),
        "{stderr}"
    );
    // Every worktree is gone, and the repository's own checkout is untouched.
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

#[test]
fn bisect_refuses_revisions_out_of_order_and_an_experiment_without_worktree() {
    let lab = Lab::new();
    let repo = lab.path("repo");
    let ids = repository(&repo, 3);
    let spec = lab.spec(
        "bisect.toml",
        "name = \"bisect\"\n[matrix]\nworkload = [\"work\"]\n[workloads.work]\nkind = \"command\"\nargv = [\"sh\", \"{worktree}/work.sh\"]\n",
    );
    let plain = lab.spec(
        "plain.toml",
        "name = \"plain\"\n[matrix]\nworkload = [\"work\"]\n[workloads.work]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    let r = repo.to_str().unwrap();
    let run = |spec: &Path, good: &str, bad: &str| {
        let out =
            lab.run(&["bisect", spec.to_str().unwrap(), "--repo", r, "--good", good, "--bad", bad]);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&spec, "main", &ids[0]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not an ancestor of the bad one"), "{err}");
    let (code, err) = run(&plain, &ids[0], "main");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("names {worktree} in its argv"), "{err}");
    let (code, err) = run(&spec, "no-such-rev", "main");
    assert_eq!(code, Some(2), "{err}");
    // Nothing refused left a bisect in progress.
    assert!(!repo.join(".git/schedlab-bisect/state.json").exists(), "{err}");
}
