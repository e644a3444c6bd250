//! Opening the SQLite database: never through a symlink, never blocking on
//! something that is not a regular file, and recreating a database that is
//! not one.

use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{ffi, Connection, OpenFlags};

use super::{error_kind, SqliteOptions, SCHEMA, SCHEMA_VERSION};
use crate::store::{nofollow, StoreError, StoreErrorKind};

/// The database, its write-ahead log and its shared-memory index.
pub(super) fn files(db: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut s = db.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    [db.to_path_buf(), with("-wal"), with("-shm")]
}

/// Creates `dir` (mode 0700) unless it is there; refuses anything but a
/// directory (a symlink included).
pub(super) fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    match nofollow::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(StoreError::io(
                "create directory",
                dir,
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(StoreError::io("stat", dir, e)),
    }
    match nofollow::create_dir(dir, 0o700) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
            Err(StoreError::io("create directory", dir, e))
        }
        _ => Ok(()),
    }
}

/// Refuses the store when the database or one of its side files is
/// anything but a regular file (SQLite would follow a symlink, block on a
/// FIFO, read a device); gives our own files mode 0600.
pub(super) fn check_files(db: &Path) -> Result<(), StoreError> {
    for p in files(db) {
        let m = match nofollow::metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::io("stat", p, e)),
        };
        if !m.file_type().is_file() {
            return Err(StoreError::io(
                "open database",
                &p,
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a regular file (remove it to let kcache recreate the store)",
                ),
            ));
        }
        if m.permissions().mode() & 0o7777 != 0o600 {
            let fixed = nofollow::open(&p, libc::O_RDONLY | libc::O_NONBLOCK, 0)
                .and_then(|fd| nofollow::set_mode(&fd, 0o600));
            if let Err(e) = fixed {
                tracing::debug!(path = %p.display(), error = %e,
                    "kcache store: could not make a database file private");
            }
        }
    }
    Ok(())
}

/// Creates the database file (mode exactly 0600) so that SQLite gives its
/// side files the same mode; an existing one is left as it is.
pub(super) fn precreate(db: &Path) -> Result<(), StoreError> {
    let created = nofollow::open(db, libc::O_RDWR | libc::O_CREAT | libc::O_NONBLOCK, 0o600)
        .map(File::from)
        .and_then(|f| {
            let m = f.metadata()?;
            if !m.file_type().is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a regular file",
                ));
            }
            if m.permissions().mode() & 0o7777 != 0o600 {
                nofollow::set_mode(&f, 0o600)?;
            }
            Ok(())
        });
    match created {
        Ok(()) => Ok(()),
        // A read-only root may still hold a readable database.
        Err(_) if nofollow::metadata(db).is_ok_and(|m| m.is_file()) => Ok(()),
        Err(e) => Err(StoreError::io("create database", db, e)),
    }
}

/// Whether opening failed because the file is not a sound database.
pub(super) fn is_damage(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Sqlite { source, .. }
            if matches!(
                source.sqlite_error_code(),
                Some(ffi::ErrorCode::NotADatabase | ffi::ErrorCode::DatabaseCorrupt)
            )
    )
}

/// Removes the database and its side files and creates an empty one.
pub(super) fn recreate(db: &Path) -> Result<(), StoreError> {
    for p in files(db) {
        match nofollow::remove_file(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(StoreError::io("remove damaged database", p, e))
            }
            _ => {}
        }
    }
    precreate(db)
}

/// Opens a connection, sets the store's pragmas and creates (or migrates)
/// the schema.
pub(super) fn connect(path: &Path, opts: &SqliteOptions) -> Result<Connection, StoreError> {
    let err = |op| {
        move |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(err("open"))?;
    conn.busy_timeout(opts.busy_timeout)
        .map_err(err("set busy timeout"))?;
    // Before the database's first page is written (by the switch to WAL),
    // so that it can shrink; on an existing database setting it would
    // wait for the write lock.
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .map_err(err("read page count"))?;
    if pages == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(err("set auto_vacuum"))?;
    }
    // Switching to WAL needs a moment alone with the file, which the busy
    // handler does not cover: retry briefly while another process opens.
    let deadline = Instant::now() + opts.busy_timeout;
    loop {
        let r: rusqlite::Result<String> =
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0));
        match r {
            Ok(_) => break,
            Err(e) if error_kind(&e) == StoreErrorKind::Busy && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            // A read-only database stays in its journal mode.
            Err(e) if error_kind(&e) == StoreErrorKind::ReadOnly => break,
            Err(e) => return Err(err("set journal_mode")(e)),
        }
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(err("set synchronous"))?;
    // The log is checkpointed (and cut back) every quarter of the disk
    // budget, so that it never holds much more than the cap allows.
    let page_size: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .map_err(err("read page size"))?;
    let quarter = (super::disk_budget(opts.max_bytes) / 4).min(i64::MAX as u64) as i64;
    conn.pragma_update(None, "journal_size_limit", quarter)
        .map_err(err("set journal_size_limit"))?;
    let pages = (quarter / page_size.max(512)).clamp(16, 1000);
    conn.pragma_update(None, "wal_autocheckpoint", pages)
        .map_err(err("set wal_autocheckpoint"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err("read schema version"))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Incompatible {
            path: path.to_path_buf(),
            found: version,
            expected: SCHEMA_VERSION,
        });
    }
    if version < SCHEMA_VERSION {
        // Version 1 stored values unframed: they are dropped, not served.
        let drop_old = if version >= 1 {
            "DELETE FROM entries;"
        } else {
            ""
        };
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {drop_old} {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            err("create schema")(e)
        })?;
    }
    for (name, value) in &opts.pragmas {
        conn.execute_batch(&format!("PRAGMA {name} = {value}"))
            .map_err(err("apply pragma"))?;
    }
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}
