//! Removing entries safely: guarded against writers that replace them, and
//! of what is not an entry file at all.

use super::*;

/// What a guarded removal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Removal {
    /// The snapshotted file was removed.
    Removed,
    /// Someone else removed it first.
    AlreadyGone,
    /// A writer replaced it; the fresh file (of this size) was kept.
    Replaced(u64),
}

impl FileStore {
    /// Removes what is in the way at an entry's path or its shard's: a
    /// symlink (itself, never what it points to), a FIFO, a socket, a device,
    /// a file where the shard directory should be, an empty directory (one
    /// that is not empty is moved into `tmp/` as `stray-…` and left there:
    /// kcache never wrote what it holds, so it is not kcache's to delete).
    /// Counted as corrupt and warned about once: it is gone afterwards.
    /// Returns what it was.
    pub(super) fn remove_stray(&self, path: &Path) -> Option<&'static str> {
        let io = &*self.opts.io;
        let shard = path.parent()?;
        let target =
            if shard != self.entries.as_path() && io.metadata(shard).is_ok_and(|m| !m.is_dir()) {
                shard
            } else {
                path
            };
        let m = io.metadata(target).ok()?;
        let ft = m.file_type();
        if ft.is_file() && target == path {
            return None;
        }
        let what = stray_kind(&m);
        let mut moved = None;
        let r = if ft.is_dir() {
            io.remove_dir(target).or_else(|_| {
                let to = self.temp_path("stray");
                io.rename(target, &to).map(|()| moved = Some(to))
            })
        } else {
            io.remove_file(target)
        };
        Counters::bump(&self.counters.corrupt);
        match r {
            Ok(()) if moved.is_some() => {
                let to = moved.as_deref().unwrap_or(target);
                tracing::warn!(path = %target.display(), what, moved_to = %to.display(),
                    "kcache store: moved aside what is not an entry file (kcache leaves it there for you to remove)")
            }
            Ok(()) => tracing::warn!(path = %target.display(), what,
                "kcache store: removed what is not an entry file"),
            Err(e) => {
                Counters::bump(&self.counters.errors);
                tracing::warn!(path = %target.display(), what, error = %e,
                    "kcache store: could not remove what is not an entry file");
            }
        }
        Some(what)
    }

    /// Removes the file at `path` only if it is still the one `snap`
    /// describes. The re-stat catches most replacements; the rename into
    /// `tmp/` and the check of what was moved catch a writer that renames in
    /// between, whose fresh file is then linked back.
    pub(super) fn guarded_remove(
        &self,
        path: &Path,
        snap: &Snapshot,
    ) -> Result<Removal, StoreError> {
        let io = &*self.opts.io;
        match io.metadata(path) {
            Ok(m) if Snapshot::of(&m) != *snap => return Ok(Removal::Replaced(m.len())),
            Ok(_) => {}
            Err(e) if not_found(&e) => return Ok(Removal::AlreadyGone),
            Err(e) => return Err(StoreError::io("stat", path, e)),
        }
        let grave = self.temp_path("evict");
        let mut recreated = false;
        loop {
            match io.rename(path, &grave) {
                Ok(()) => break,
                Err(e) if not_found(&e) => {
                    // The entry is gone, unless it was `tmp/` that was.
                    if recreated || io.metadata(&self.tmp).is_ok() {
                        return Ok(Removal::AlreadyGone);
                    }
                    recreated = true;
                    ensure_dir(io, &self.tmp)?;
                }
                Err(e) => return Err(StoreError::io("move out for removal", path, e)),
            }
        }
        let moved = match io.metadata(&grave) {
            Ok(m) => m,
            // Swept as stale by another process: it was old, and it is gone.
            Err(e) if not_found(&e) => return Ok(Removal::AlreadyGone),
            Err(e) => return Err(StoreError::io("stat", grave, e)),
        };
        if Snapshot::of(&moved) == *snap {
            return match io.remove_file(&grave) {
                Ok(()) => Ok(Removal::Removed),
                Err(e) if not_found(&e) => Ok(Removal::AlreadyGone),
                Err(e) => Err(StoreError::io("remove", grave, e)),
            };
        }
        // We moved a writer's fresh entry: put it back, unless an even newer
        // one has already taken its place.
        let kept = match io.hard_link(&grave, path) {
            Ok(()) => Removal::Replaced(moved.len()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Removal::Replaced(io.metadata(path).map(|m| m.len()).unwrap_or(0))
            }
            Err(_) => match io.rename(&grave, path) {
                Ok(()) => return Ok(Removal::Replaced(moved.len())),
                Err(e) => {
                    let _ = io.remove_file(&grave);
                    return Err(StoreError::io("restore replaced entry", path, e));
                }
            },
        };
        let _ = io.remove_file(&grave);
        Ok(kept)
    }

    /// Evicts least recently used entries until the total is at most
    /// `target`, never touching `protect` (the entry just written).
    pub(super) fn evict(
        &self,
        max_bytes: u64,
        target: u64,
        protect: Option<&Path>,
    ) -> Result<PruneReport, StoreError> {
        let _one = self.evicting.lock().unwrap_or_else(|p| p.into_inner());
        // What this pass removes is not kept open past it.
        self.kept.forget_all();
        if let Err(e) = self.sweep_stale_temps() {
            tracing::debug!(error = %e, "kcache store: sweeping stale temp files failed");
        }
        // Eviction needs no lock: a state lock held past its bound only
        // leaves the total to the next scan.
        let before = self.state.read().ok();
        let Scan {
            mut found,
            mut total,
            ..
        } = self.scan()?;
        let mut report = PruneReport::default();
        if total > max_bytes {
            found.sort_by(|a, b| a.atime.cmp(&b.atime).then_with(|| a.path.cmp(&b.path)));
            for f in &found {
                if total <= target {
                    break;
                }
                if Some(f.path.as_path()) == protect {
                    continue;
                }
                match self.guarded_remove(&f.path, &f.snap)? {
                    Removal::Removed => {
                        total -= f.snap.size;
                        report.removed += 1;
                        report.freed_bytes += f.snap.size;
                    }
                    // Gone either way: counting it keeps a lost race from
                    // making this pass evict fresh entries to make up for it.
                    Removal::AlreadyGone => total -= f.snap.size,
                    Removal::Replaced(size) => total = total - f.snap.size + size,
                }
            }
        }
        Counters::add(&self.counters.evictions, report.removed);
        report.remaining_bytes = total;
        // The scan's total is the truth as of the scan; writes other
        // processes accounted while it ran are kept on top of it.
        let written = self.state.update(|r| {
            let since = match before {
                Some(b) if b.bytes_known => r.bytes.saturating_sub(b.bytes),
                _ => 0,
            };
            r.bytes = total + since;
            r.bytes_known = true;
        });
        self.state_skipped(written);
        Ok(report)
    }

    pub(super) fn low_water(&self) -> u64 {
        (self.opts.max_bytes as u128 * self.opts.low_water_percent as u128 / 100) as u64
    }

    /// Removes a corrupt entry (unless a writer replaced it since it was
    /// read) and counts it.
    pub(super) fn drop_corrupt(&self, path: &Path, snap: &Snapshot, damage: &Damage) {
        Counters::bump(&self.counters.corrupt);
        tracing::warn!(path = %path.display(), %damage, "kcache store: removing corrupt entry");
        match self.guarded_remove(path, snap) {
            Ok(Removal::Removed) => {
                let size = snap.size as i64;
                self.account(-size);
            }
            Ok(_) => {}
            Err(e) => {
                Counters::bump(&self.counters.errors);
                tracing::warn!(error = %e, "kcache store: could not remove corrupt entry");
            }
        }
    }

    pub(super) fn clear_inner(&self) -> Result<(), StoreError> {
        let _one = self.evicting.lock().unwrap_or_else(|p| p.into_inner());
        self.kept.forget_all();
        if let Err(e) = self.sweep_stale_temps() {
            tracing::debug!(error = %e, "kcache store: sweeping stale temp files failed");
        }
        let Scan { found, strays, .. } = self.scan()?;
        for stray in &strays {
            self.remove_stray(stray);
        }
        let mut kept = 0;
        for f in &found {
            if let Removal::Replaced(size) = self.guarded_remove(&f.path, &f.snap)? {
                kept += size;
            }
        }
        let written = self.state.update(|r| {
            r.bytes = kept;
            r.bytes_known = true;
        });
        self.state_skipped(written);
        Ok(())
    }
}

/// What a non-entry file is, for warnings and `verify`.
pub(super) fn stray_kind(m: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = m.file_type();
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "a file"
    }
}

/// Whether `name` is one [`FileStore::temp_path`] gives a file a writer or a
/// removal leaves behind: `put-` or `evict-`, then the process id, a sequence
/// number and hex digits (`stray-` names a directory, never swept).
pub(super) fn is_temp_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let Some(rest) = name
        .strip_prefix("put-")
        .or_else(|| name.strip_prefix("evict-"))
    else {
        return false;
    };
    let mut parts = rest.split('-');
    let digits = |p: Option<&str>, hex: bool| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.len() <= 20
                && p.bytes()
                    .all(|b| b.is_ascii_digit() || (hex && matches!(b, b'a'..=b'f')))
        })
    };
    digits(parts.next(), false)
        && digits(parts.next(), false)
        && digits(parts.next(), true)
        && parts.next().is_none()
}
