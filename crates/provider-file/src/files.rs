//! Which files under the config directory are config files.

use std::path::{Path, PathBuf};

/// Every config file under `dir`, recursively, in sorted order. Hidden
/// files and directories are skipped, as are editor temp files.
pub fn list_config_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    walk(dir, &mut found)?;
    found.sort();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if is_hidden(&path) {
            continue;
        }
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            walk(&path, found)?;
        } else if is_config_file(&path) {
            found.push(path);
        }
    }
    Ok(())
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// Is `path` (relative to or under the config dir) a file we load? Checks
/// the name only, so it also answers for paths that no longer exist.
pub fn is_config_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let temp = name.starts_with('.')
        || name.starts_with('#')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".tmp");
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    !temp && matches!(extension.as_deref(), Some("yaml" | "yml" | "json"))
}

/// True when some component of `path` below `root` is hidden.
pub fn under_hidden_dir(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| {
        rel.components()
            .any(|c| c.as_os_str().to_str().is_some_and(|s| s.starts_with('.')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_names() {
        assert!(is_config_file(Path::new("a/route.yaml")));
        assert!(is_config_file(Path::new("a/list.JSON")));
        assert!(!is_config_file(Path::new("a/.route.yaml")));
        assert!(!is_config_file(Path::new("a/route.yaml~")));
        assert!(!is_config_file(Path::new("a/#route.yaml#")));
        assert!(!is_config_file(Path::new("a/route.txt")));
        assert!(under_hidden_dir(
            Path::new("/c"),
            Path::new("/c/.git/x.yaml")
        ));
        assert!(!under_hidden_dir(Path::new("/c"), Path::new("/c/x/y.yaml")));
    }
}
