//! `verify` for the SQLite store: the database's own integrity, then every
//! row's frame.

use rusqlite::Connection;

use super::{frame, open, SqliteStore};
use crate::store::{key_to_hex, CorruptEntry, StoreError, VerifyReport};

/// What `PRAGMA integrity_check` says: `None` when the database is sound,
/// else its first complaint.
fn integrity(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut stmt = conn.prepare("PRAGMA integrity_check(20)")?;
    let lines: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(match lines.as_slice() {
        [ok] if ok == "ok" => None,
        [] => Some("integrity_check answered nothing".into()),
        [first, ..] => Some(first.clone()),
    })
}

impl SqliteStore {
    /// Checks the database; mends it (rebuilt indexes) or recreates it
    /// empty; then checks every row's frame and removes the bad ones.
    pub(super) fn verify_inner(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport::default();
        report
            .corrupt
            .append(&mut self.repaired.lock().unwrap_or_else(|p| p.into_inner()));
        let mut bad = Vec::new();
        {
            let mut inner = self.lock();
            let location = self.path.display().to_string();
            let problem = match integrity(&inner.conn) {
                Ok(None) => None,
                Ok(Some(p)) => Some(p),
                Err(e) => {
                    let e = self.err("check integrity")(e);
                    if !open::is_damage(&e) {
                        return Err(e);
                    }
                    Some(e.to_string())
                }
            };
            if let Some(problem) = problem {
                tracing::warn!(db = %location, problem, "kcache store: the database is damaged");
                let mended = inner.conn.execute_batch("REINDEX").is_ok()
                    && matches!(integrity(&inner.conn), Ok(None));
                let action = if mended {
                    "indexes rebuilt"
                } else {
                    // Closed first: closing checkpoints and deletes the log by
                    // name, which must not hit the new database's.
                    let placeholder = Connection::open_in_memory().map_err(self.err("recreate"))?;
                    drop(std::mem::replace(&mut inner.conn, placeholder));
                    inner.touched.clear();
                    open::recreate(&self.path)?;
                    inner.conn = open::connect(&self.path, &self.opts)?;
                    "recreated empty"
                };
                report.corrupt.push(CorruptEntry {
                    location: location.clone(),
                    key: None,
                    reason: format!("damaged database (integrity_check: {problem}): {action}"),
                });
            }
            let mut scan = || -> rusqlite::Result<()> {
                let mut stmt = inner
                    .conn
                    .prepare("SELECT rowid, key, value, size, checksum FROM entries")?;
                let mut rows = stmt.query([])?;
                while let Some(row) = rows.next()? {
                    report.checked += 1;
                    let key = row.get_ref(1)?.as_blob()?;
                    let value = row.get_ref(2)?.as_blob()?;
                    let size: i64 = row.get(3)?;
                    let sum = row.get_ref(4)?.as_blob()?;
                    let reason = match frame::decode(key, value, sum) {
                        Ok(p) if p.len() as i64 == size => continue,
                        Ok(p) => format!(
                            "length mismatch (size column {size}, value {} bytes)",
                            p.len()
                        ),
                        Err(d) => d.to_string(),
                    };
                    bad.push((key.to_vec(), row.get::<_, i64>(0)?, sum.to_vec(), reason));
                }
                Ok(())
            };
            scan().map_err(self.err("verify"))?;
        }
        for (key, rowid, sum, reason) in bad {
            self.drop_corrupt(&key, rowid, &sum, &reason);
            report.corrupt.push(CorruptEntry {
                location: format!("{}#{}", self.path.display(), key_to_hex(&key)),
                key: Some(key),
                reason,
            });
        }
        Ok(report)
    }
}
