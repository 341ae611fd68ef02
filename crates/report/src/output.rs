//! Writing a report directory safely: refuse a path that is a file, a symbolic link or a
//! non-empty directory (unless forced), and create every file exclusively, so nothing
//! outside the report is ever written through a pre-existing link.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path};

/// Why a report directory could not be written.
#[derive(Debug)]
pub enum OutputError {
    /// The path is not acceptable (bad input): it names a file, a link or a non-empty directory.
    Refused(String),
    /// Writing failed.
    Io(String, io::Error),
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputError::Refused(m) => f.write_str(m),
            OutputError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for OutputError {}

fn io_err(what: String) -> impl FnOnce(io::Error) -> OutputError {
    move |e| OutputError::Io(what, e)
}

/// Checks that `dir` may receive a report, without writing anything: it must not exist,
/// or be a real (not symlinked) directory that is empty, or any directory with `force`.
pub fn check_dir(dir: &Path, force: bool) -> Result<(), OutputError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(OutputError::Refused(format!(
                "cannot use {} as the output directory: {e}",
                dir.display()
            )))
        }
    };
    if meta.file_type().is_symlink() {
        return Err(OutputError::Refused(format!(
            "{} is a symbolic link; give the real directory (a report never writes through a link)",
            dir.display()
        )));
    }
    if !meta.is_dir() {
        return Err(OutputError::Refused(format!(
            "{} exists and is not a directory; choose a new directory for the report",
            dir.display()
        )));
    }
    let mut entries = fs::read_dir(dir)
        .map_err(|e| OutputError::Refused(format!("cannot read {}: {e}", dir.display())))?;
    if !force && entries.next().is_some() {
        return Err(OutputError::Refused(format!(
            "{} is not empty; choose a new directory, or pass --force to replace the report's files in it",
            dir.display()
        )));
    }
    Ok(())
}

/// Creates `dir` (and missing parents) if needed and writes each `(relative path, bytes)`
/// in it, every file with `O_CREAT|O_EXCL`. With `force`, an existing file or link of the
/// same name is unlinked first (never followed); directories in the way are an error.
pub fn write_dir(dir: &Path, files: &[(String, Vec<u8>)], force: bool) -> Result<(), OutputError> {
    check_dir(dir, force)?;
    if fs::symlink_metadata(dir).is_err() {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(io_err(format!("cannot create {}", parent.display())))?;
        }
        fs::create_dir(dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
    }
    // Every refusal comes before the first byte is written.
    for (rel, _) in files {
        check_rel(dir, Path::new(rel))?;
    }
    for (rel, bytes) in files {
        let rel_path = Path::new(rel);
        let path = dir.join(rel_path);
        if let Some(parent) = rel_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            ensure_subdir(dir, parent)?;
        }
        if force && fs::symlink_metadata(&path).is_ok() {
            fs::remove_file(&path).map_err(io_err(format!("cannot replace {}", path.display())))?;
        }
        let mut f =
            fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(io_err(
                format!("cannot create {} (it must not exist yet)", path.display()),
            ))?;
        f.write_all(bytes).map_err(io_err(format!("cannot write {}", path.display())))?;
    }
    Ok(())
}

/// Refuses a relative path that leaves `dir`, crosses a link or a file, or names a directory.
fn check_rel(dir: &Path, rel: &Path) -> Result<(), OutputError> {
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(OutputError::Refused(format!(
            "refusing to write outside the report directory: {}",
            rel.display()
        )));
    }
    let mut at = dir.to_path_buf();
    let n = rel.components().count();
    for (i, c) in rel.components().enumerate() {
        at.push(c);
        let Ok(m) = fs::symlink_metadata(&at) else { return Ok(()) };
        let last = i + 1 == n;
        if !last && (m.file_type().is_symlink() || !m.is_dir()) {
            return Err(OutputError::Refused(format!(
                "{} exists and is not a directory (a report never writes through a link)",
                at.display()
            )));
        }
        if last && m.is_dir() {
            return Err(OutputError::Refused(format!(
                "{} is a directory; the report needs that name for a file",
                at.display()
            )));
        }
    }
    Ok(())
}

/// Makes `dir/sub` a real directory, one component at a time, never through a link.
fn ensure_subdir(dir: &Path, sub: &Path) -> Result<(), OutputError> {
    let mut at = dir.to_path_buf();
    for c in sub.components() {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {}
            Ok(_) => {
                return Err(OutputError::Refused(format!(
                    "{} exists and is not a directory",
                    at.display()
                )))
            }
            Err(_) => {
                fs::create_dir(&at).map_err(io_err(format!("cannot create {}", at.display())))?
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(String, Vec<u8>)> {
        vec![
            ("index.html".into(), b"<html>".to_vec()),
            ("figures/a.svg".into(), b"<svg/>".to_vec()),
        ]
    }

    #[test]
    fn writes_into_a_new_directory_with_parents() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b/report");
        write_dir(&dir, &files(), false).unwrap();
        assert_eq!(fs::read(dir.join("figures/a.svg")).unwrap(), b"<svg/>");
        assert_eq!(fs::read(dir.join("index.html")).unwrap(), b"<html>");
    }

    #[test]
    fn refuses_a_file_a_link_and_a_non_empty_directory() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        fs::write(&file, "x").unwrap();
        assert!(
            matches!(check_dir(&file, true), Err(OutputError::Refused(m)) if m.contains("not a directory"))
        );
        let target = t.path().join("target");
        fs::create_dir(&target).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(
            matches!(check_dir(&link, true), Err(OutputError::Refused(m)) if m.contains("symbolic link"))
        );
        let full = t.path().join("full");
        fs::create_dir(&full).unwrap();
        fs::write(full.join("old"), "x").unwrap();
        assert!(
            matches!(check_dir(&full, false), Err(OutputError::Refused(m)) if m.contains("--force"))
        );
        assert!(check_dir(&full, true).is_ok());
        assert!(check_dir(&target, false).is_ok(), "an empty directory is fine");
    }

    #[test]
    fn force_replaces_a_planted_link_without_following_it() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("r");
        fs::create_dir(&dir).unwrap();
        let victim = t.path().join("victim");
        fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("index.html")).unwrap();
        write_dir(&dir, &files(), true).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(!fs::symlink_metadata(dir.join("index.html")).unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_symlinked_figures_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("r");
        fs::create_dir(&dir).unwrap();
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("figures")).unwrap();
        assert!(matches!(write_dir(&dir, &files(), true), Err(OutputError::Refused(_))));
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(!dir.join("index.html").exists(), "nothing is written once a path is refused");
    }

    #[test]
    fn paths_leaving_the_directory_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let bad = vec![("../escape".to_string(), vec![])];
        assert!(matches!(
            write_dir(&t.path().join("r"), &bad, false),
            Err(OutputError::Refused(_))
        ));
        assert!(!t.path().join("escape").exists());
    }
}
