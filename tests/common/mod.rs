//! Helpers shared by the store test files: a filesystem layer with hooks, and
//! values that reveal a torn read.

#![allow(dead_code)]

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, Metadata};
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use kcache::store::{FsIo, RealFs};

/// A filesystem call about to be made.
#[derive(Debug)]
pub enum Call<'a> {
    CreateNew(&'a Path),
    Write,
    SetAtime,
    Sync,
    Rename(&'a Path, &'a Path),
    HardLink(&'a Path, &'a Path),
    Remove(&'a Path),
    Metadata(&'a Path),
    CreateDir(&'a Path),
}

impl Call<'_> {
    /// Whether the call changes the filesystem.
    pub fn mutates(&self) -> bool {
        !matches!(self, Call::Metadata(_) | Call::Sync)
    }
}

type Hook = Box<dyn FnMut(&Call<'_>) -> Option<io::Error> + Send>;

/// The real filesystem, with a hook that sees every call first and may fail
/// it (returning an error) or act in between (another "process" writing or
/// deleting).
pub struct Hooked {
    hook: Mutex<Hook>,
}

impl Hooked {
    pub fn new(hook: impl FnMut(&Call<'_>) -> Option<io::Error> + Send + 'static) -> Self {
        Hooked {
            hook: Mutex::new(Box::new(hook)),
        }
    }

    fn before(&self, call: Call<'_>) -> io::Result<()> {
        match (self.hook.lock().unwrap())(&call) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Hooked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hooked")
    }
}

impl FsIo for Hooked {
    fn set_atime(&self, file: &File, atime: SystemTime) -> io::Result<()> {
        self.before(Call::SetAtime)?;
        RealFs.set_atime(file, atime)
    }
    fn create_new(&self, path: &Path) -> io::Result<File> {
        self.before(Call::CreateNew(path))?;
        RealFs.create_new(path)
    }
    fn write_all(&self, file: &mut File, buf: &[u8]) -> io::Result<()> {
        self.before(Call::Write)?;
        RealFs.write_all(file, buf)
    }
    fn sync_file(&self, file: &File) -> io::Result<()> {
        self.before(Call::Sync)?;
        RealFs.sync_file(file)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.before(Call::Rename(from, to))?;
        RealFs.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.before(Call::HardLink(from, to))?;
        RealFs.hard_link(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.before(Call::Remove(path))?;
        RealFs.remove_file(path)
    }
    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.before(Call::Metadata(path))?;
        RealFs.metadata(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        RealFs.read_dir(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.before(Call::CreateDir(path))?;
        RealFs.create_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.before(Call::Sync)?;
        RealFs.sync_dir(path)
    }
}

pub fn errno(n: i32) -> io::Error {
    io::Error::from_raw_os_error(n)
}

/// A value whose every byte depends on `seed` and its position, with the
/// seed and length in a header: any mix of two values, or any truncation,
/// fails [`check_value`].
pub fn tagged_value(seed: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 12);
    v.extend_from_slice(&seed.to_le_bytes());
    v.extend_from_slice(&(len as u64).to_le_bytes());
    v.extend((0..len).map(|i| (seed as usize).wrapping_mul(31).wrapping_add(i) as u8));
    v
}

/// The seed of a value made by [`tagged_value`], if it is intact.
pub fn check_value(v: &[u8]) -> Option<u32> {
    if v.len() < 12 {
        return None;
    }
    let seed = u32::from_le_bytes(v[..4].try_into().unwrap());
    let len = u64::from_le_bytes(v[4..12].try_into().unwrap()) as usize;
    (v == tagged_value(seed, len).as_slice()).then_some(seed)
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
