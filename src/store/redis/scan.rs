//! `ls`, `verify`, `clear` and the counts of the remote tier: `SCAN` over the
//! store's namespace, never `KEYS` (which blocks the server while it walks
//! every key).

use std::time::{Duration, SystemTime};

use super::frame::{self, Refused, HEADER_LEN};
use super::RedisStore;
use crate::store::{CorruptEntry, EntryInfo, StoreError, VerifyReport};

const SCAN_COUNT: u64 = 1000;
/// Enough of a frame to read any store key kcache writes (47 bytes).
const PEEK: usize = HEADER_LEN + 1024;
const DELETE_IF_SAME: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// `s` with the glob characters of `SCAN MATCH` escaped.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl RedisStore {
    /// Every key of the namespace matching `suffix` (`*:v` for values, `*`
    /// for values and leases), a `SCAN` page at a time; on a cluster, on
    /// every master in turn (each holds only its own slots' keys).
    fn scan_keys(
        &self,
        suffix: &str,
        mut each: impl FnMut(Vec<String>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let pattern = format!("{}{suffix}", glob_escape(&self.ns()));
        let targets = self
            .call(|c| c.scan_targets())
            .map_err(|e| self.err("scan", e))?;
        for node in &targets {
            let mut cursor: u64 = 0;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT);
                let (next, keys) = self
                    .call(|c| c.scan(node, &scan))
                    .map_err(|e| self.err("scan", e))?;
                if !keys.is_empty() {
                    each(keys)?;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(())
    }

    /// The entries on the server: with `access`, their last access too (the
    /// server's idle time; now where the eviction policy keeps none).
    pub(super) fn scan_entries(&self, access: bool) -> Result<Vec<EntryInfo>, StoreError> {
        let mut out = Vec::new();
        let now = SystemTime::now();
        self.scan_keys("*:v", |keys| {
            type Row = (Vec<u8>, u64, Option<u64>);
            let rows: Vec<Row> = self
                .call(|c| {
                    let mut p = redis::pipe();
                    for k in &keys {
                        p.cmd("GETRANGE").arg(k).arg(0).arg(PEEK - 1);
                        p.cmd("STRLEN").arg(k);
                        if access {
                            p.cmd("OBJECT").arg("IDLETIME").arg(k);
                        } else {
                            p.cmd("EXISTS").arg("");
                        }
                    }
                    // A page is short: one round trip each. `OBJECT IDLETIME`
                    // fails under an LFU policy; the pipeline then fails too
                    // and is asked again without it.
                    c.pipe::<Vec<(Vec<u8>, u64, Option<u64>)>>(&p)
                })
                .or_else(|_| {
                    self.call(|c| {
                        let mut p = redis::pipe();
                        for k in &keys {
                            p.cmd("GETRANGE").arg(k).arg(0).arg(PEEK - 1);
                            p.cmd("STRLEN").arg(k);
                            p.cmd("EXISTS").arg("");
                        }
                        c.pipe(&p)
                    })
                })
                .map_err(|e| self.err("list", e))?;
            for (k, (head, len, idle)) in keys.iter().zip(rows) {
                // Gone since the scan, or not a frame: not an entry.
                let Some((store_key, payload_len)) = frame::peek(&head, len) else {
                    continue;
                };
                if self.value_key(store_key) != *k {
                    continue;
                }
                let idle = if access { idle.unwrap_or(0) } else { 0 };
                out.push(EntryInfo {
                    key: store_key.to_vec(),
                    size: payload_len,
                    stored_bytes: len,
                    last_access: now - Duration::from_secs(idle),
                });
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks every entry in full. A damaged entry (its bytes do not match
    /// its own checksum or name) is removed, unless rewritten since it was
    /// read; one refused only for its MAC is reported and left in place, for
    /// a reader with the wrong secret must not erase good entries.
    pub(super) fn scan_verify(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport::default();
        self.scan_keys("*:v", |keys| {
            let frames: Vec<Option<Vec<u8>>> = self
                .call(|c| {
                    let mut p = redis::pipe();
                    for k in &keys {
                        p.cmd("GET").arg(k);
                    }
                    c.pipe(&p)
                })
                .map_err(|e| self.err("verify", e))?;
            for (k, f) in keys.iter().zip(frames) {
                let Some(f) = f else { continue };
                report.checked += 1;
                let refused = match frame::decode(self.mac(), k.as_bytes(), None, &f) {
                    Ok(d) if self.value_key(d.store_key) == *k => continue,
                    Ok(_) => Refused::OtherKey,
                    Err(r) => r,
                };
                let key = frame::peek(&f, f.len() as u64).map(|(sk, _)| sk.to_vec());
                let mut reason = refused.to_string();
                if matches!(refused, Refused::Unauthenticated(_)) {
                    reason.push_str(" (left in place)");
                } else {
                    self.call(|c| {
                        redis::cmd("EVAL")
                            .arg(DELETE_IF_SAME)
                            .arg(1)
                            .arg(k)
                            .arg(&f)
                            .exec(c.one())
                    })
                    .map_err(|e| self.err("verify", e))?;
                }
                report.corrupt.push(CorruptEntry {
                    location: k.clone(),
                    key,
                    reason,
                });
            }
            Ok(())
        })?;
        Ok(report)
    }

    /// Unlinks every value and lease of the namespace (the counters stay).
    pub(super) fn scan_clear(&self) -> Result<(), StoreError> {
        self.scan_keys("*", |keys| {
            // One key a command: a multi-key UNLINK must not span slots.
            let mut p = redis::pipe();
            for k in &keys {
                p.cmd("UNLINK").arg(k).ignore();
            }
            self.call(|c| c.pipe::<()>(&p))
                .map_err(|e| self.err("clear", e))
        })
    }
}
