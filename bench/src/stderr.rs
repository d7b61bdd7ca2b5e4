//! The process's standard error sent to a file for a while. The peak-memory
//! probe runs guests under memory caps they overflow, and a Rust guest then
//! prints `memory allocation of N bytes failed` through WASI, which the host
//! passes to the process's own standard error: those lines go to the probe's
//! log instead of the report.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

/// While alive, file descriptor 2 writes to a file; dropping it restores it.
pub struct StderrTo {
    saved: RawFd,
}

impl StderrTo {
    /// Sends standard error to `path` (created or truncated).
    pub fn file(path: &Path) -> std::io::Result<StderrTo> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log = File::create(path)?;
        let _ = std::io::stderr().flush();
        // SAFETY: dup and dup2 on valid descriptors; `saved` is closed once, on drop.
        let saved = unsafe { libc::dup(2) };
        if saved < 0 || unsafe { libc::dup2(log.as_raw_fd(), 2) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(StderrTo { saved })
    }
}

impl Drop for StderrTo {
    fn drop(&mut self) {
        let _ = std::io::stderr().flush();
        // SAFETY: `saved` is the descriptor `file` duplicated; it is valid until here.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}
