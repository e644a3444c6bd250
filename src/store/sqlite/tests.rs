use super::*;
use crate::store::Store;

fn pragma(conn: &Connection, name: &str) -> i64 {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_new_database_shrinks_after_clear() {
    let t = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(t.path()).unwrap();
    let raw = Connection::open(s.path()).unwrap();
    assert_eq!(pragma(&raw, "auto_vacuum"), 2, "incremental");
    for i in 0..20u8 {
        s.put(&[i], &[i; 50_000]).unwrap();
    }
    let full = pragma(&raw, "page_count");
    s.clear().unwrap();
    let after = pragma(&raw, "page_count");
    assert!(after * 10 < full, "{after} pages of {full}");
}

/// Regression: opening used to set `auto_vacuum`, which waits for the
/// write lock, so a process could not open the store while another was
/// writing.
#[test]
fn opens_while_another_connection_holds_the_write_lock() {
    let t = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(t.path()).unwrap();
    s.put(b"k", b"v").unwrap();
    let raw = Connection::open(s.path()).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE; DELETE FROM entries;")
        .unwrap();
    let opts = SqliteOptions {
        busy_timeout: Duration::from_millis(50),
        ..SqliteOptions::default()
    };
    let other = SqliteStore::open_with(t.path(), opts).unwrap();
    assert_eq!(other.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let e = other.put(b"k2", b"v").unwrap_err();
    assert_eq!(e.kind(), StoreErrorKind::Busy, "{e}");
    raw.execute_batch("ROLLBACK").unwrap();
    other.put(b"k2", b"v").unwrap();
}

#[test]
fn buffered_access_times_reach_the_database() {
    let t = tempfile::tempdir().unwrap();
    let clock = Arc::new(super::super::ManualClock::ticking(
        UNIX_EPOCH + Duration::from_secs(1_000),
        Duration::from_secs(1),
    ));
    let opts = SqliteOptions {
        clock: clock.clone(),
        ..SqliteOptions::default()
    };
    let s = SqliteStore::open_with(t.path(), opts).unwrap();
    s.put(b"a", b"1").unwrap();
    s.put(b"b", b"2").unwrap();
    s.get(b"a").unwrap();
    let raw = Connection::open(s.path()).unwrap();
    let at = |k: &[u8]| -> i64 {
        raw.query_row("SELECT last_access FROM entries WHERE key = ?1", [k], |r| {
            r.get(0)
        })
        .unwrap()
    };
    assert!(at(b"a") < at(b"b"), "not yet written");
    s.flush().unwrap();
    assert!(at(b"a") > at(b"b"), "written by flush");
}
