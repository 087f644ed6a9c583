//! File modes of the database: `kairos.db` and its `-wal`, `-shm` and `-journal` files are
//! readable by their owner only (0600), whatever the process umask.
//!
//! The database file is created here, empty and 0600, before SQLite opens it. SQLite's unix
//! VFS creates the WAL, shared-memory and rollback-journal files later with the database
//! file's own permission bits, so they come out 0600 too. A file left with a wider mode by an
//! earlier version is narrowed to 0600 on open.

use kairos_store::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// The files SQLite keeps beside `db`.
fn companions(db: &Path) -> [PathBuf; 4] {
    let with = |suffix: &str| {
        let mut s = db.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    [
        db.to_path_buf(),
        with("-wal"),
        with("-shm"),
        with("-journal"),
    ]
}

/// Create `db` empty with mode 0600 if it does not exist, and narrow it and its companion
/// files to 0600 if they exist with a wider mode.
#[cfg(unix)]
pub(crate) fn restrict(db: &Path) -> Result<(), Error> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Error::new(
            ErrorKind::Unavailable,
            format!("database file {}: {what}", p.display()),
        )
        .with_source(e)
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(db)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("could not create it", db, e)),
    }
    for p in companions(db) {
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("could not read its mode", &p, e)),
        };
        if meta.permissions().mode() & 0o777 != 0o600 {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| io("could not set its mode to 0600", &p, e))?;
        }
    }
    Ok(())
}

/// Other systems: file modes are left to the platform.
#[cfg(not(unix))]
pub(crate) fn restrict(_db: &Path) -> Result<(), Error> {
    Ok(())
}
