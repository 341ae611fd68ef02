//! Helpers shared by subcommands: exit codes, loading specs, opening the store.

use schedlab_store::{RunRow, Store};
use std::path::Path;

/// An error with a specific exit status (2 for bad input).
#[derive(Debug)]
pub struct Exit {
    /// Process exit status.
    pub code: u8,
    /// What to tell the user.
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Bad input: exit status 2.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Exit { code: 2, message: message.into() })
}

/// Reads and validates a spec (the built-in quick experiment when `file` is None), then
/// applies command-line overrides.
pub fn load_spec(file: Option<&Path>, scale: Option<f64>, repetitions: Option<u32>) -> anyhow::Result<schedlab_spec::Spec> {
    let (path, text) = match file {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| bad_input(format!("cannot read {}: {e}", p.display())))?;
            (p.display().to_string(), text)
        }
        None => ("<built-in quick.toml>".to_string(), schedlab_spec::BUILTIN_QUICK.to_string()),
    };
    let mut spec = schedlab_spec::parse(&path, &text).map_err(|e| bad_input(e.to_string()))?;
    if let Some(f) = scale {
        if !(f > 0.0 && f.is_finite()) {
            return Err(bad_input(format!("--scale must be a positive number, got {f}")));
        }
        spec.plan.scale(f);
    }
    if let Some(r) = repetitions {
        if r == 0 {
            return Err(bad_input("--repetitions must be at least 1"));
        }
        spec.plan.repetitions = r;
    }
    Ok(spec)
}

/// Opens the results database.
pub fn open_store(db: &Path) -> anyhow::Result<Store> {
    Store::open(db).map_err(|e| anyhow::anyhow!("cannot open the results database {}: {e}", db.display()))
}

/// Opens an existing database for reading; a missing file is bad input, not a new database.
pub fn open_existing(db: &Path) -> anyhow::Result<Store> {
    if !db.exists() {
        return Err(bad_input(format!("no results database at {} (run an experiment first, or pass --db / SCHEDLAB_DB)", db.display())));
    }
    open_store(db)
}

/// The run named on the command line, or the newest.
pub fn pick_run(store: &Store, id: Option<i64>) -> anyhow::Result<RunRow> {
    match id {
        Some(id) => store.run(id)?.ok_or_else(|| bad_input(format!("there is no run {id} (see `schedlab runs`)"))),
        None => store.latest(None)?.ok_or_else(|| bad_input("the database holds no runs yet")),
    }
}

/// Formats unix seconds as UTC `YYYY-MM-DD HH:MM:SS`.
pub fn utc(secs: f64) -> String {
    jiff::Timestamp::from_second(secs as i64).map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_else(|_| "?".into())
}
