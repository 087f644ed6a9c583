//! This node's id: configured (`KAIROS_NODE_ID`, or the older `KAIROS_NODE`), else kept in
//! `<data_dir>/node-id`, so that a node restarted on the same data directory is the same node
//! and takes back its own in-flight jobs at once instead of waiting for their leases to end.
//!
//! The file is locked (an advisory lock held for the life of the process): a second process
//! on the same data directory cannot take the same id, and falls back to `<hostname>-<pid>`,
//! which no other process has (so it never takes back jobs that another live process holds).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The node id file in the data directory.
pub const NODE_ID_FILE: &str = "node-id";

/// The ids this process holds, with their locked files (kept open: closing drops the lock).
static HELD: Mutex<Vec<(PathBuf, File, String)>> = Mutex::new(Vec::new());

/// The host's name, or `kairos`.
pub(super) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kairos".into())
}

/// The id kept in `<data_dir>/node-id` (created as `<hostname>-<8 hex digits>` on first use),
/// or `None` when the file cannot be used or another process holds it.
pub(super) fn persisted_node_id(data_dir: &Path) -> Option<String> {
    let path = data_dir.join(NODE_ID_FILE);
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, id)) = held.iter().find(|(p, _, _)| *p == path) {
        return Some(id.clone());
    }
    match open_and_lock(data_dir, &path) {
        Ok(Some((file, id))) => {
            held.push((path, file, id.clone()));
            Some(id)
        }
        Ok(None) => {
            tracing::warn!(file = %path.display(), "another process on this data directory holds its node id; using <hostname>-<pid>");
            None
        }
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot keep a node id; using <hostname>-<pid>");
            None
        }
    }
}

fn open_and_lock(data_dir: &Path, path: &Path) -> std::io::Result<Option<(File, String)>> {
    // Private like every directory kairos creates (the node id may be the first file in it).
    super::create_private_dir(data_dir)?;
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut file = opts.open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let id = text.trim();
    let valid = !id.is_empty() && id.len() <= 200 && !id.chars().any(char::is_control);
    if valid {
        return Ok(Some((file, id.to_string())));
    }
    let suffix: u32 = rand::random();
    let id = format!("{}-{suffix:08x}", hostname());
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(format!("{id}\n").as_bytes())?;
    file.sync_all()?;
    Ok(Some((file, id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_id_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let id = persisted_node_id(dir.path()).expect("an id");
        assert_eq!(persisted_node_id(dir.path()).as_deref(), Some(id.as_str()));
        let stored = std::fs::read_to_string(dir.path().join(NODE_ID_FILE)).unwrap();
        assert_eq!(stored.trim(), id);
        // A second handle on the file (another process, as far as the lock is concerned)
        // cannot take the lock while this process holds it.
        let other = File::open(dir.path().join(NODE_ID_FILE)).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
    }
}
