//! The data directory's mode: created 0700 (owner only) when kairos creates it; an existing
//! directory is left as it is, with a warning at start when others may read it.

use std::path::Path;

/// Create `dir` (and missing parents) with mode 0700; an existing directory is left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// A warning when `dir` exists and its group or others have any access to it (its mode is
/// not 0700 or narrower); `None` otherwise.
pub fn open_dir_warning(dir: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Some(format!(
                "the data directory {} has mode {mode:04o}: other users may read its files \
                 (api-token, secret-key, kairos.db); `chmod 700 {}` keeps them to the owner",
                dir.display(),
                dir.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    None
}
