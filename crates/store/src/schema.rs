//! The schema and its migrations, tracked with PRAGMA user_version.

use rusqlite::Connection;

/// Each entry upgrades the schema by one version; never edit a released entry, append.
pub(crate) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    started_unix REAL NOT NULL,
    finished_unix REAL,
    spec_path TEXT NOT NULL,
    spec_text TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    scale REAL NOT NULL,
    env_json TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    command_line TEXT NOT NULL,
    warnings_json TEXT NOT NULL
);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    cell_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    workload TEXT NOT NULL,
    workload_kind TEXT NOT NULL,
    policy TEXT NOT NULL,
    class TEXT NOT NULL,
    priority INTEGER NOT NULL,
    nice INTEGER NOT NULL,
    processes INTEGER NOT NULL,
    rep INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    started_unix REAL NOT NULL,
    makespan_s REAL NOT NULL,
    stat_user INTEGER NOT NULL, stat_nice INTEGER NOT NULL, stat_system INTEGER NOT NULL, stat_idle INTEGER NOT NULL,
    stat_iowait INTEGER NOT NULL, stat_irq INTEGER NOT NULL, stat_softirq INTEGER NOT NULL,
    stat_ctxt INTEGER NOT NULL, stat_intr INTEGER NOT NULL, stat_forks INTEGER NOT NULL,
    engine_user_s REAL NOT NULL,
    engine_sys_s REAL NOT NULL,
    engine_max_rss_kb INTEGER NOT NULL,
    UNIQUE (run_id, cell_id, rep, warmup)
);
CREATE TABLE samples (
    cell_row INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    exit_code INTEGER,
    signal INTEGER,
    timed_out INTEGER NOT NULL,
    wall_s REAL NOT NULL,
    engine_wall_s REAL NOT NULL,
    user_s REAL NOT NULL,
    sys_s REAL NOT NULL,
    cpu_pct REAL NOT NULL,
    voluntary_csw INTEGER NOT NULL,
    involuntary_csw INTEGER NOT NULL,
    max_rss_kb INTEGER NOT NULL,
    minor_faults INTEGER NOT NULL,
    major_faults INTEGER NOT NULL,
    setup_user_s REAL NOT NULL,
    setup_sys_s REAL NOT NULL,
    setup_voluntary_csw INTEGER NOT NULL,
    setup_involuntary_csw INTEGER NOT NULL,
    work_units REAL NOT NULL,
    start_offset_s REAL NOT NULL,
    end_offset_s REAL NOT NULL,
    extra_json TEXT NOT NULL,
    PRIMARY KEY (cell_row, idx)
);
CREATE INDEX cells_by_run ON cells(run_id, ordinal);
"#,
    r#"
ALTER TABLE cells ADD COLUMN groups_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE samples ADD COLUMN group_name TEXT NOT NULL DEFAULT 'main';
ALTER TABLE samples ADD COLUMN background INTEGER NOT NULL DEFAULT 0;
ALTER TABLE samples ADD COLUMN allowed_cpus TEXT NOT NULL DEFAULT '[]';
ALTER TABLE samples ADD COLUMN cpus_seen TEXT NOT NULL DEFAULT '[]';
"#,
    r#"
ALTER TABLE samples ADD COLUMN window_cpu_s REAL NOT NULL DEFAULT 0;
"#,
    r#"
ALTER TABLE cells ADD COLUMN iosched TEXT;
ALTER TABLE cells ADD COLUMN io_json TEXT;
"#,
    r#"
ALTER TABLE cells ADD COLUMN rt_json TEXT;
"#,
    r#"
CREATE TABLE jobs (
    cell_row INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    jobs INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (cell_row, idx)
);
"#,
    r#"
ALTER TABLE samples ADD COLUMN block_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE samples ADD COLUMN block_out INTEGER NOT NULL DEFAULT 0;
"#,
    // A periodic set's utilisation was only in the cell key (`set/dwcs/utilisation=0.5/n4`)
    // before its group stored it: copy it from the key of older rows, once.
    r#"
UPDATE cells SET groups_json = json_set(groups_json, '$[0].utilisation',
    CAST(substr(substr(key, instr(key, 'utilisation=') + 12), 1,
                instr(substr(key, instr(key, 'utilisation=') + 12) || '/', '/') - 1) AS REAL))
WHERE instr(key, 'utilisation=') > 0 AND json_array_length(groups_json) > 0
  AND json_extract(groups_json, '$[0].utilisation') IS NULL;
"#,
    r#"
ALTER TABLE cells ADD COLUMN cpu_dma_latency_us INTEGER;
"#,
    r#"
ALTER TABLE cells ADD COLUMN trace_json TEXT;
"#,
    // A traced cell repetition's capture as the kernel gave it (SLTRACE1, zstd), in parts
    // of at most `TRACE_PART` bytes: SQLite caps one value at 1 GB.
    r#"
CREATE TABLE traces (
    cell_row INTEGER PRIMARY KEY REFERENCES cells(id) ON DELETE CASCADE,
    format TEXT NOT NULL,
    raw_bytes INTEGER NOT NULL,
    stored_bytes INTEGER NOT NULL,
    meta_json TEXT NOT NULL
);
CREATE TABLE trace_parts (
    cell_row INTEGER NOT NULL REFERENCES traces(cell_row) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (cell_row, part)
);
"#,
    // Scheduler knobs: a cell's swept values and every knob in force as read back; a run's
    // knobs as they were before it began.
    r#"
ALTER TABLE cells ADD COLUMN knobs_json TEXT;
ALTER TABLE cells ADD COLUMN knobs_in_force_json TEXT;
ALTER TABLE runs ADD COLUMN knobs_before_json TEXT;
"#,
    // From the first spawn to the release; NULL for older and simulated cells.
    r#"
ALTER TABLE cells ADD COLUMN spawn_s REAL;
"#,
    // Identity: every run a UUID (older runs get a random one here), and, for a shard of a
    // campaign, the campaign's id and which shard of how many it is.
    r#"
ALTER TABLE runs ADD COLUMN uuid TEXT;
ALTER TABLE runs ADD COLUMN campaign TEXT;
ALTER TABLE runs ADD COLUMN shard_index INTEGER;
ALTER TABLE runs ADD COLUMN shard_count INTEGER;
UPDATE runs SET uuid = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
    substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) ||
    substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))) WHERE uuid IS NULL;
CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);
CREATE INDEX runs_by_campaign ON runs(campaign);
"#,
    // Adaptive repetitions: how each cell's ended (how many it took, whether its main
    // figure's interval reached the target), one row per cell once it stops repeating.
    r#"
CREATE TABLE cell_repetitions (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    cell_id INTEGER NOT NULL,
    repetitions INTEGER NOT NULL,
    reached INTEGER NOT NULL,
    figure TEXT NOT NULL,
    half_width_pct REAL,
    min_reps INTEGER NOT NULL,
    max_reps INTEGER NOT NULL,
    ci_pct REAL NOT NULL,
    PRIMARY KEY (run_id, cell_id)
);
"#,
    // The cpu_scheduler axis: the cell's value as its key spells it, and what it ran under
    // (the sched_ext scheduler loaded, each worker's ext.enabled).
    r#"
ALTER TABLE cells ADD COLUMN cpu_scheduler TEXT;
ALTER TABLE cells ADD COLUMN sched_ext_json TEXT;
"#,
    // The hypervisor's steal over the cell (/proc/stat), so a figure says when to distrust it.
    r#"
ALTER TABLE cells ADD COLUMN stat_steal INTEGER NOT NULL DEFAULT 0;
"#,
    // How loaded the machine was over the cell (/proc/loadavg, /proc/pressure/cpu), so a run
    // says when other work may have disturbed it (NULL for older rows: not known).
    r#"
ALTER TABLE cells ADD COLUMN load1 REAL;
ALTER TABLE cells ADD COLUMN cpu_pressure_us INTEGER;
"#,
    // The scheduler's own accounting per process, read at its exit (/proc/PID/schedstat and
    // /proc/PID/sched) or filled by the simulator (NULL for older rows: not known).
    r#"
ALTER TABLE samples ADD COLUMN oncpu_s REAL;
ALTER TABLE samples ADD COLUMN run_delay_s REAL;
ALTER TABLE samples ADD COLUMN timeslices INTEGER;
ALTER TABLE samples ADD COLUMN migrations INTEGER;
ALTER TABLE samples ADD COLUMN sched_voluntary INTEGER;
ALTER TABLE samples ADD COLUMN sched_involuntary INTEGER;
"#,
    // Many generated task sets per cell (issue #32): one row per set, its parameters, its
    // outcome under the cell's scheduler and the analytical tests' verdicts (JSON), per-job
    // records only when the batch asks for them.
    r#"
CREATE TABLE task_sets (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    cell_id INTEGER NOT NULL,
    set_index INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    scheduler TEXT NOT NULL,
    utilisation REAL NOT NULL,
    plain_utilisation REAL NOT NULL,
    min_utilisation REAL NOT NULL,
    cpus INTEGER NOT NULL,
    tasks_json TEXT NOT NULL,
    jobs INTEGER NOT NULL,
    misses INTEGER NOT NULL,
    violations INTEGER NOT NULL,
    schedulable INTEGER NOT NULL,
    tests_json TEXT NOT NULL,
    message TEXT,
    jobs_json TEXT,
    PRIMARY KEY (run_id, cell_id, set_index)
);
"#,
    // `schedlab calibrate` (issue #40): this machine's overheads, measured, with its facts;
    // the run that measured the dispatchers, if one did (merge copies a calibration with
    // it). Its id is the rowid.
    r#"
CREATE TABLE calibrations (
    created_unix REAL NOT NULL,
    machine_json TEXT NOT NULL,
    calibration_json TEXT NOT NULL,
    run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL
);
"#,
    // `schedlab noise` (issue #45): this machine's A/A floor per cell and figure, measured by
    // a run of two identical arms; the machine's facts beside it, so `compare` takes the
    // newest floor of the same machine.
    r#"
CREATE TABLE floors (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    created_unix REAL NOT NULL,
    machine_json TEXT NOT NULL,
    cell_key TEXT NOT NULL,
    figure TEXT NOT NULL,
    floor_json TEXT NOT NULL,
    PRIMARY KEY (run_id, cell_key, figure)
);
"#,
    // The CFS bandwidth throttling each cell repetition met (issue #47): cpu.stat's deltas of
    // every cgroup with a CPU quota over its workers, as JSON (NULL: none, or not known).
    r#"
ALTER TABLE cells ADD COLUMN throttling_json TEXT;
"#,
];

/// An error that says `why` and nothing else (no "Invalid parameter name:" before it).
pub(crate) fn plain_error(why: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(why),
    )
}

/// Applies every migration newer than the database's user_version, in one write
/// transaction that reads the version itself: two processes opening a new database at once
/// take turns (the second waits, then finds the schema done) instead of both creating it.
pub fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let version =
        |conn: &Connection| conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    let newest = MIGRATIONS.len() as i64;
    let refuse = |have: i64| {
        if have < 0 {
            plain_error(format!("this database has schema version {have}, which no schedlab writes: it is not a schedlab database"))
        } else {
            plain_error(format!(
                "this database has schema version {have}, newer than this schedlab understands ({newest}); upgrade schedlab"
            ))
        }
    };
    // Up to date already: no write lock for a reader.
    match version(conn)? {
        have if have > newest || have < 0 => return Err(refuse(have)),
        have if have == newest => return Ok(()),
        _ => {}
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = (|| {
        let have = version(conn)?;
        if have > newest || have < 0 {
            return Err(refuse(have));
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(have as usize) {
            conn.execute_batch(&format!("{m} PRAGMA user_version = {};", i + 1))?;
        }
        Ok(())
    })();
    match done {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}
