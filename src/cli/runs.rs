//! `schedlab runs`: the stored runs.

use super::common::{open_existing, utc};
use comfy_table::{presets, Table};
use std::path::Path;
use std::process::ExitCode;

/// Runs `schedlab runs`.
pub fn run(db: &Path) -> anyhow::Result<ExitCode> {
    let store = open_existing(db)?;
    let runs = store.runs()?;
    // The campaign column only where some run is a shard.
    let sharded = runs.iter().any(|r| r.identity.shard.is_some());
    let mut header =
        vec!["run", "name", "mode", "status", "started (UTC)", "cells stored", "scale", "spec"];
    if sharded {
        header.push("campaign (shard)");
    }
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED).set_header(header);
    for r in runs {
        let campaign = match (&r.identity.campaign, r.identity.shard) {
            (Some(c), Some(s)) => format!("{c} ({s})"),
            _ => String::new(),
        };
        let mut row = vec![
            r.id.to_string(),
            super::show::shown_name(&r.name),
            r.mode,
            r.status.to_string(),
            utc(r.started_unix),
            r.cells_done.to_string(),
            r.scale.to_string(),
            r.spec_path,
        ];
        if sharded {
            row.push(campaign);
        }
        t.add_row(row);
    }
    outln!("{t}");
    Ok(ExitCode::SUCCESS)
}
