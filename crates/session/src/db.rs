//! Opening the results database, and recording a new run in it.

use crate::Error;
use schedlab_store::{RunRow, Store};
use std::path::Path;

/// Refuses a database path whose directory is missing (SQLite would only say "unable to
/// open database file"): bad input, named, before anything on the machine is changed.
pub fn check_dir(db: &Path) -> Result<(), Error> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return Ok(()),
    };
    if !dir.is_dir() && !db.exists() {
        let what = if dir.exists() { "is not a directory" } else { "does not exist" };
        return Err(Error::Refused(format!(
            "cannot create the results database {}: its directory {} {what} (create it, or pass another --db / SCHEDLAB_DB)",
            db.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Opens the results database.
pub fn open(db: &Path) -> Result<Store, Error> {
    check_dir(db)?;
    Store::open(db).map_err(|e| {
        Error::Failed(format!("cannot open the results database {}: {e}", db.display()))
    })
}

/// Opens an existing database for reading; a missing file is bad input, not a new database.
pub fn open_existing(db: &Path) -> Result<Store, Error> {
    if !db.exists() {
        return Err(Error::Refused(format!(
            "no results database at {} (run an experiment first, or pass --db / SCHEDLAB_DB)",
            db.display()
        )));
    }
    open(db)
}

/// The run named on the command line, or the newest.
pub fn pick_run(store: &Store, id: Option<i64>) -> Result<RunRow, Error> {
    match id {
        Some(id) => store
            .run(id)?
            .ok_or_else(|| Error::Refused(format!("there is no run {id} (see `schedlab runs`)"))),
        None => store
            .latest(None)?
            .ok_or_else(|| Error::Refused("the database holds no runs yet".into())),
    }
}

/// Records a new run of `spec`'s plan with this process's command line; returns its id.
pub fn create_run(
    store: &Store,
    spec: &schedlab_spec::Spec,
    mode: schedlab_model::Mode,
    env: &schedlab_model::Environment,
) -> Result<i64, Error> {
    let plan = &spec.plan;
    let plan_json = serde_json::to_string(plan)?;
    store
        .create_run(&schedlab_store::NewRun {
            name: &plan.name,
            mode,
            spec_path: &plan.source_path,
            spec_text: &spec.text,
            spec_hash: &spec.hash,
            plan_json: &plan_json,
            scale: plan.scale,
            env,
            command_line: &std::env::args().collect::<Vec<_>>().join(" "),
        })
        // Nothing has changed yet when the database refuses the run (read-only, full).
        .map_err(|e| {
            Error::Refused(format!(
                "cannot record a new run in {}: {e}",
                store.path().unwrap_or("the database")
            ))
        })
}
