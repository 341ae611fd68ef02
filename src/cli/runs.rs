//! `schedlab runs`: the stored runs.

use super::common::{open_existing, utc};
use comfy_table::{presets, Table};
use std::path::Path;
use std::process::ExitCode;

/// Runs `schedlab runs`.
pub fn run(db: &Path) -> anyhow::Result<ExitCode> {
    let store = open_existing(db)?;
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED).set_header(vec![
        "run",
        "name",
        "mode",
        "status",
        "started (UTC)",
        "cells stored",
        "scale",
        "spec",
        "campaign (shard)",
    ]);
    for r in store.runs()? {
        t.add_row(vec![
            r.id.to_string(),
            r.name,
            r.mode,
            r.status,
            utc(r.started_unix),
            r.cells_done.to_string(),
            r.scale.to_string(),
            r.spec_path,
            match (&r.identity.campaign, r.identity.shard) {
                (Some(c), Some(s)) => format!("{c} ({s})"),
                _ => String::new(),
            },
        ]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}
