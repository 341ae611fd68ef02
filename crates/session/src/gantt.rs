//! `simulate --gantt`: which cell's schedule to draw, over which span, and the SVG written.

use crate::Error;
use schedlab_spec::Plan;
use std::io::Write;
use std::path::PathBuf;

/// A chart `simulate` is asked to draw: cell `cell` of the plan from `from` to `to` ns (the
/// end of its simulation when None), into the new file `path`.
#[derive(Debug, Clone)]
pub struct GanttRequest {
    /// The SVG file to create (it must not exist).
    pub path: PathBuf,
    /// The cell's index in the plan.
    pub cell: u32,
    /// The span's start, ns of simulated time.
    pub from: u64,
    /// The span's end, ns (None: the simulation's end).
    pub to: Option<u64>,
}

impl GanttRequest {
    /// The chart of the cell keyed `cell` (the plan's one cell when None) of `plan`, checked
    /// before anything is simulated: the cell exists, the span is not empty, the file is new.
    pub fn new(
        plan: &Plan,
        path: PathBuf,
        cell: Option<&str>,
        from: u64,
        to: Option<u64>,
    ) -> Result<GanttRequest, Error> {
        let keys =
            || plan.cells.iter().take(12).map(|c| c.key.as_str()).collect::<Vec<_>>().join(", ");
        let cell = match cell {
            Some(k) => plan.cells.iter().find(|c| c.key == k).ok_or_else(|| {
                Error::Refused(format!("no cell `{k}` in this plan; cells: {}", keys()))
            })?,
            None if plan.cells.len() == 1 => &plan.cells[0],
            None => {
                return Err(Error::Refused(format!(
                    "--gantt needs --gantt-cell KEY: this plan has {} cells ({})",
                    plan.cells.len(),
                    keys()
                )))
            }
        };
        if to.is_some_and(|t| t <= from) {
            return Err(Error::Refused("--to must be after --from".into()));
        }
        if path.exists() {
            return Err(Error::Refused(format!(
                "{} already exists; choose a new file for the chart",
                path.display()
            )));
        }
        Ok(GanttRequest { path, cell: cell.index, from, to })
    }

    /// Draws the simulated schedule `traced` of the cell (of `plan`, stored as run `run_id`)
    /// into the file.
    pub fn write(
        &self,
        traced: Option<schedlab_simrun::SimResult>,
        plan: &Plan,
        run_id: i64,
    ) -> Result<(), Error> {
        let key = &plan.cells[self.cell as usize].key;
        let traced = traced.ok_or_else(|| {
            Error::Failed(format!(
                "no chart: cell {key} was not simulated (see its message in `schedlab show {run_id}`)"
            ))
        })?;
        let to = self.to.unwrap_or(traced.end);
        let title = format!("{} — {key} (simulated, run {run_id})", plan.name);
        let svg = schedlab_simrun::gantt::svg(&traced, &title, self.from, to)
            .map_err(|e| Error::Refused(e.to_string()))?;
        let mut f =
            std::fs::OpenOptions::new().write(true).create_new(true).open(&self.path).map_err(
                |e| Error::Refused(format!("cannot create {}: {e}", self.path.display())),
            )?;
        f.write_all(svg.as_bytes())
            .map_err(|e| Error::Failed(format!("writing {}: {e}", self.path.display())))
    }
}
