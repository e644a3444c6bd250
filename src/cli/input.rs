//! Reading the files a command is given: only regular files, never more
//! than [`MAX_INPUT_BYTES`], never blocking on a FIFO or a device.

use super::Failure;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest kernel, manifest or canon input kcache reads: 64 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads `path` whole: a regular file of at most [`MAX_INPUT_BYTES`].
///
/// The file is opened non-blocking (a FIFO with no writer would block an
/// ordinary open forever) and checked with `fstat` on the open descriptor
/// before a byte is read; the read stops one byte past the limit, so a file
/// that grows meanwhile is refused too.
pub fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    let fail = |what: String| Failure(format!("cannot read {}: {what}", path.display()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail(format!(
            "not a regular file ({})",
            kind(&meta.file_type())
        )));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(fail(too_large(meta.len())));
    }
    // Sized from the stat (one byte over, to see the end in the next read):
    // a kernel is then read in two `read`s, not one per doubling.
    read_limited(file, meta.len() as usize + 1).map_err(fail)
}

/// [`read_file`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, Failure> {
    String::from_utf8(read_file(path)?)
        .map_err(|_| Failure(format!("cannot read {}: not UTF-8 text", path.display())))
}

/// Reads standard input, at most [`MAX_INPUT_BYTES`].
pub fn read_stdin() -> Result<Vec<u8>, Failure> {
    read_limited(std::io::stdin().lock(), 0)
        .map_err(|what| Failure(format!("cannot read standard input: {what}")))
}

fn read_limited(r: impl Read, capacity: usize) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(capacity);
    r.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(buf.len() as u64));
    }
    Ok(buf)
}

fn too_large(len: u64) -> String {
    format!(
        "{len} bytes or more, over the limit of {} MiB",
        MAX_INPUT_BYTES >> 20
    )
}

fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}
