//! Fake machine trees for tests: files written below a directory that stands for `/`.

use std::path::Path;

/// Writes `text` at `path` (with or without its leading `/`) below `dir`, making the
/// directories on the way.
pub(crate) fn put(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// [`put`]s each of `files`, (path, text).
pub(crate) fn put_all(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        put(dir, path, text);
    }
}
