//! The default store kept private to its user on Unix: its records are the tools' requests
//! and results, and on a shared host the umask (usually 022) would let every local account
//! read them.

use std::path::Path;

/// Before the default store at `path` opens: creates its missing directories with mode
/// `0700` and its file, if new, with `0600`; names existing ones that other accounts can
/// access in one warning per process, and leaves them as they are. Failures are left to
/// `SqliteStore::open`, whose error names the file and the reason.
pub(super) fn prepare(path: &Path) {
    #[cfg(unix)]
    unix::prepare(path);
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(unix)]
mod unix {
    use std::fs::{DirBuilder, OpenOptions};
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    use std::path::{Path, PathBuf};
    use std::sync::Once;

    static WARNED: Once = Once::new();

    pub(super) fn prepare(path: &Path) {
        let mut exposed = Vec::new();
        if let Some(dir) = path.parent() {
            if dir.is_dir() {
                check(dir, &mut exposed);
            } else if DirBuilder::new().recursive(true).mode(0o700).create(dir).is_ok() {
                // The umask may have taken bits from the mode: the store's own directory
                // gets exactly 0700.
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
            Ok(file) => {
                let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut name = path.as_os_str().to_owned();
                    name.push(suffix);
                    check(&PathBuf::from(name), &mut exposed);
                }
            }
            _ => {}
        }
        if !exposed.is_empty() {
            WARNED.call_once(|| {
                tracing::warn!(
                    target: "idem",
                    paths = %exposed.join(", "),
                    "other accounts can access the default store's directory or files (paths); idem leaves them \
                     as they are, but they hold the tools' requests and results: chmod 700 the directory and 600 \
                     the files to keep them private"
                );
            });
        }
    }

    /// Names `path` in `exposed` when its group or other permission bits are set.
    fn check(path: &Path, exposed: &mut Vec<String>) {
        if let Ok(meta) = std::fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o077 != 0 {
                exposed.push(format!("{} (mode {mode:04o})", path.display()));
            }
        }
    }
}
