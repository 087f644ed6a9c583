//! The `file` transport: each message is an RFC 5322 `.eml` file in the outbox directory,
//! named after the job id. The file is written to a temporary name and renamed, so a reader
//! never sees half a message, and a retry of the same job replaces its own file instead of
//! adding a second one.
//!
//! A message holds an address, a body and a working unsubscribe link: the outbox folder is
//! made (and kept) 0700 and every file 0600, whatever the umask.

use super::{EmailMessage, SendReport, build_message};
use kairos_core::{Failure, Outcome};
use std::path::{Path, PathBuf};

/// Writes `.eml` files.
#[derive(Debug, Clone)]
pub struct FileTransport {
    dir: PathBuf,
}

/// Create `dir` (and its parents) and make it 0700.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Write `bytes` to a new file at `path` (replacing one left over) readable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        opts.mode(0o600);
        let mut f = opts.open(path)?;
        // A file left over from a crash may have had other bits: set them exactly.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(bytes)
    }
    #[cfg(not(unix))]
    {
        let mut f = opts.open(path)?;
        f.write_all(bytes)
    }
}

impl FileTransport {
    /// A transport writing to `dir` (created on first send).
    pub fn new(dir: PathBuf) -> Self {
        FileTransport { dir }
    }

    /// The outbox directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write one message.
    pub async fn send(&self, m: &EmailMessage) -> SendReport {
        let msg = match build_message(m) {
            Ok(msg) => msg,
            Err(f) => return SendReport::failed(f),
        };
        // Job ids are `[a-z_0-9]`; anything else would be a path trick, refused.
        if m.id.is_empty()
            || !m
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return SendReport::failed(Failure::permanent("message id is not a safe file name"));
        }
        let bytes = msg.formatted();
        let dir = self.dir.clone();
        let id = m.id.clone();
        let written = tokio::task::spawn_blocking(move || -> std::io::Result<PathBuf> {
            private_dir(&dir)?;
            let tmp = dir.join(format!(".{id}.eml.tmp"));
            let path = dir.join(format!("{id}.eml"));
            write_private(&tmp, &bytes)?;
            std::fs::rename(&tmp, &path)?;
            Ok(path)
        })
        .await;
        match written {
            Ok(Ok(path)) => SendReport::of(Outcome::Delivered {
                provider_id: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                status_code: None,
                response: None,
            }),
            // A full disk or a permission problem may be fixed by the operator: transient.
            Ok(Err(e)) => SendReport::failed(Failure::transient(format!(
                "writing the outbox file failed: {e}"
            ))),
            Err(e) => {
                SendReport::failed(Failure::transient(format!("the writer task failed: {e}")))
            }
        }
    }
}
