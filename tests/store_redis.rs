//! The Redis tier's faults, at the store level: poisoned entries are never
//! loaded (nor deleted by the reader), a server that dies or hangs costs a
//! bounded number of calls and no failure, the breaker opens and closes, and
//! leases are single-flight, released, and expire with a dead holder.

#[path = "store_redis_support/mod.rs"]
mod redis_support;

use std::sync::Arc;
use std::time::Duration;

use kcache::store::{FileStore, LeaseGrant, Origin, RedisOptions, RedisStore, Store, Tiered};
use redis_support::{RedisCluster, RedisServer};

/// Options with timeouts a loaded machine never trips by itself.
fn opts(s: &RedisServer) -> RedisOptions {
    let mut o = RedisOptions::new(s.url());
    o.op_timeout = Duration::from_secs(5);
    o.connect_timeout = Duration::from_secs(5);
    o
}

fn store(o: RedisOptions) -> RedisStore {
    RedisStore::open(o).unwrap()
}

/// The one value key on the server.
fn only_value_key(s: &RedisServer) -> String {
    let keys = s.keys("kcache:k1:*:v");
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys[0].clone()
}

fn raw_get(s: &RedisServer, k: &str) -> Vec<u8> {
    redis::cmd("GET").arg(k).query(&mut s.conn()).unwrap()
}

fn raw_set(s: &RedisServer, k: &str, v: &[u8]) {
    redis::cmd("SET").arg(k).arg(v).exec(&mut s.conn()).unwrap()
}

#[test]
fn damaged_entries_are_misses_counted_and_left_in_place() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let st = store(opts(&s));
    st.put(b"key", b"the compiled program").unwrap();
    let k = only_value_key(&s);
    let good = raw_get(&s, &k);
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 0x10;
    let truncated = good[..good.len() - 3].to_vec();
    for (i, bad) in [flipped, truncated, b"not a frame".to_vec()]
        .iter()
        .enumerate()
    {
        raw_set(&s, &k, bad);
        assert_eq!(st.get(b"key").unwrap(), None, "damage {i} was loaded");
        assert_eq!(
            &raw_get(&s, &k),
            bad,
            "damage {i}: the reader deleted the entry"
        );
    }
    assert_eq!(st.local_stats().corrupt, 3);
    // `verify` removes what is damaged whatever the secret.
    let r = st.verify().unwrap();
    assert_eq!((r.checked, r.corrupt.len()), (1, 1), "{r:?}");
    assert!(s.keys("kcache:k1:*:v").is_empty());
    st.put(b"key", b"again").unwrap();
    assert_eq!(st.get(b"key").unwrap().as_deref(), Some(&b"again"[..]));
}

#[test]
fn an_entry_copied_under_another_key_is_refused() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let st = store(opts(&s));
    st.put(b"a", b"program of a").unwrap();
    let ka = only_value_key(&s);
    st.put(b"b", b"program of b").unwrap();
    let kb = s
        .keys("kcache:k1:*:v")
        .into_iter()
        .find(|k| *k != ka)
        .unwrap();
    raw_set(&s, &kb, &raw_get(&s, &ka));
    assert_eq!(st.get(b"b").unwrap(), None);
    assert_eq!(st.get(b"a").unwrap().as_deref(), Some(&b"program of a"[..]));
    assert_eq!(st.local_stats().corrupt, 1);
}

#[test]
fn with_a_secret_entries_without_or_with_a_wrong_mac_are_never_loaded() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let reader = store(opts(&s).secret(b"cluster secret"));
    // Forged without a MAC: a valid frame and checksum, by a writer with no
    // secret.
    store(opts(&s)).put(b"key", b"forged").unwrap();
    assert_eq!(reader.get(b"key").unwrap(), None);
    // Forged with a wrong MAC.
    store(opts(&s).secret(b"guessed"))
        .put(b"key", b"forged")
        .unwrap();
    assert_eq!(reader.get(b"key").unwrap(), None);
    assert_eq!(reader.local_stats().unauthenticated, 2);
    let k = only_value_key(&s);
    // Left in place, even by `verify`: a wrong secret must not erase them.
    let r = reader.verify().unwrap();
    assert_eq!(r.corrupt.len(), 1, "{r:?}");
    assert!(r.corrupt[0].reason.contains("left in place"), "{r:?}");
    assert_eq!(s.keys("kcache:k1:*:v"), std::slice::from_ref(&k));
    // A genuine entry moved under another key fails its MAC too.
    reader.put(b"key", b"genuine").unwrap();
    assert_eq!(
        reader.get(b"key").unwrap().as_deref(),
        Some(&b"genuine"[..])
    );
    reader.put(b"other", b"x").unwrap();
    let other = s
        .keys("kcache:k1:*:v")
        .into_iter()
        .find(|x| *x != k)
        .unwrap();
    raw_set(&s, &other, &raw_get(&s, &k));
    assert_eq!(reader.get(b"other").unwrap(), None);
}

#[test]
fn a_dead_server_is_a_miss_and_the_breaker_opens_then_closes_on_restart() {
    let Some(mut s) = RedisServer::start() else {
        return;
    };
    let mut o = opts(&s);
    o.cooldown = Duration::from_millis(20);
    let st = store(o);
    st.put(b"k", b"v").unwrap();
    assert_eq!(st.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    s.kill();
    for _ in 0..50 {
        assert_eq!(st.get(b"k").unwrap(), None);
        st.put(b"k2", b"lost").unwrap();
    }
    assert_eq!(st.breaker(), "open");
    let down = st.local_stats();
    assert_eq!(down.breaker_trips, 1, "{down:?}");
    assert!(
        down.skipped >= 95,
        "the open breaker made no calls: {down:?}"
    );
    assert!(
        st.lease(b"k", Duration::ZERO).is_err(),
        "no lease from a dead server"
    );
    s.restart();
    // Past the cooldown the next call probes, and closes the breaker.
    std::thread::sleep(Duration::from_millis(40));
    st.put(b"k3", b"landed").unwrap();
    assert_eq!(st.breaker(), "closed");
    assert_eq!(st.get(b"k3").unwrap().as_deref(), Some(&b"landed"[..]));
}

#[test]
fn a_hung_server_costs_local_hits_nothing_and_misses_at_most_three_timeouts() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut o = opts(&s);
    o.op_timeout = Duration::from_millis(50);
    o.connect_timeout = Duration::from_millis(100);
    o.cooldown = Duration::from_secs(600);
    // Written through with generous timeouts, so that a loaded machine
    // cannot open the measured store's breaker before the server hangs.
    let writer = Tiered::new(vec![
        Arc::new(FileStore::open(tmp.path().join("local")).unwrap()),
        Arc::new(store(opts(&s))),
    ]);
    for i in 0..100u32 {
        writer.put(&i.to_le_bytes(), b"compiled").unwrap();
    }
    drop(writer);
    let remote = Arc::new(store(o));
    let tiered = Tiered::new(vec![
        Arc::new(FileStore::open(tmp.path().join("local")).unwrap()),
        remote.clone(),
    ]);
    s.hang();
    let before = remote.local_stats();
    assert_eq!(before, kcache::store::RemoteStats::default());
    for i in 0..100u32 {
        let (v, origin) = tiered.get_traced(&i.to_le_bytes()).unwrap().unwrap();
        assert_eq!((v.as_slice(), origin), (&b"compiled"[..], Origin::Local));
    }
    assert_eq!(
        remote.local_stats().calls,
        before.calls,
        "local hits never ask the server"
    );
    for i in 100..200u32 {
        assert_eq!(tiered.get(&i.to_le_bytes()).unwrap(), None);
    }
    // At most three calls, each bounded by a timeout (a reconnect to the
    // hung server times out too, and opens the breaker at once); the other
    // lookups make none.
    let after = remote.local_stats();
    let calls = after.calls - before.calls;
    assert!((1..=3).contains(&calls), "{after:?}");
    assert_eq!(after.timeouts, calls, "every call timed out: {after:?}");
    assert_eq!(after.skipped - before.skipped, 100 - calls, "{after:?}");
    assert_eq!(after.breaker_trips, 1, "{after:?}");
    assert_eq!(remote.breaker(), "open");
    s.resume();
}

#[test]
fn a_remote_hit_is_remote_and_backfills_the_local_tier() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tiered = |dir: &str| {
        Tiered::new(vec![
            Arc::new(FileStore::open(tmp.path().join(dir)).unwrap()),
            Arc::new(store(opts(&s))),
        ])
    };
    let a = tiered("a");
    a.put(b"k", b"from a").unwrap();
    let b = tiered("b");
    let (v, origin) = b.get_traced(b"k").unwrap().unwrap();
    assert_eq!((v.as_slice(), origin), (&b"from a"[..], Origin::Remote));
    let local = FileStore::open(tmp.path().join("b")).unwrap();
    assert_eq!(
        local.get(b"k").unwrap().as_deref(),
        Some(&b"from a"[..]),
        "backfilled"
    );
    assert_eq!(b.get_traced(b"k").unwrap().unwrap().1, Origin::Local);
}

fn held(g: LeaseGrant) -> Box<dyn kcache::store::Lease> {
    match g {
        LeaseGrant::Free(l) | LeaseGrant::AfterWait(l) => l,
        LeaseGrant::TimedOut => panic!("timed out"),
    }
}

#[test]
fn a_lease_is_exclusive_until_released_and_a_published_value_ends_the_wait() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let a = store(opts(&s));
    let b = store(opts(&s));
    let first = a.lease(b"k", Duration::ZERO).unwrap();
    assert!(matches!(first, LeaseGrant::Free(_)));
    assert!(matches!(
        b.lease(b"k", Duration::from_millis(30)).unwrap(),
        LeaseGrant::TimedOut
    ));
    drop(held(first));
    assert!(s.keys("kcache:k1:*:l").is_empty(), "released on drop");
    let again = held(b.lease(b"k", Duration::ZERO).unwrap());
    // The holder publishes: a waiter returns as soon as it sees the value.
    b.put(b"k", b"v").unwrap();
    assert!(matches!(
        a.lease(b"k", Duration::from_secs(600)).unwrap(),
        LeaseGrant::AfterWait(_)
    ));
    drop(again);
    assert_eq!(a.local_stats().leases_waited, 1);
}

#[test]
fn a_lease_whose_holder_stops_extending_it_expires_to_a_waiter() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let mut o = opts(&s);
    o.lease = Duration::from_millis(300);
    let waiter = store(o);
    // Learn the lease key's name from a lease taken and released.
    let l = held(waiter.lease(b"k", Duration::ZERO).unwrap());
    let lk = s.keys("kcache:k1:*:l").pop().unwrap();
    drop(l);
    // A holder that died: its lease is in the server, and nobody extends it.
    redis::cmd("SET")
        .arg(&lk)
        .arg("a dead holder's token")
        .arg("PX")
        .arg(300)
        .exec(&mut s.conn())
        .unwrap();
    // The wait bound is ten minutes: only the expiry lets the waiter go.
    let g = waiter.lease(b"k", Duration::from_secs(600)).unwrap();
    assert!(matches!(g, LeaseGrant::AfterWait(_)));
    assert_eq!(waiter.local_stats().leases_expired, 1);
    assert_eq!(waiter.local_stats().leases_won, 2);
}

#[test]
fn a_holder_extends_its_lease_while_it_holds_it() {
    let Some(s) = RedisServer::start() else {
        return;
    };
    let mut o = opts(&s);
    o.lease = Duration::from_millis(1000);
    let holder = store(o);
    let l = held(holder.lease(b"k", Duration::ZERO).unwrap());
    let other = store(opts(&s));
    // Two and a half lifetimes later the lease is still held.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(matches!(
        other.lease(b"k", Duration::ZERO).unwrap(),
        LeaseGrant::TimedOut
    ));
    drop(l);
    assert!(matches!(
        other.lease(b"k", Duration::ZERO).unwrap(),
        LeaseGrant::Free(_)
    ));
}

#[test]
fn tls_and_unknown_urls_are_refused_with_a_reason() {
    let e = RedisStore::open(RedisOptions::new("rediss://h:1")).unwrap_err();
    assert!(e.to_string().contains("TLS"), "{e}");
    let e = RedisStore::open(RedisOptions::new("http://h")).unwrap_err();
    assert!(e.to_string().contains("redis://"), "{e}");
    // Nothing is sent on open: a server that is down is not an error.
    assert!(RedisStore::open(RedisOptions::new("redis+unix:///nonexistent/sock")).is_ok());
}

#[test]
fn a_cluster_store_spreads_entries_over_every_node_and_lists_verifies_and_clears_them_all() {
    let Some(cl) = RedisCluster::start() else {
        return;
    };
    let open = || {
        let seeds = cl.seeds();
        let mut o = RedisOptions::cluster(&seeds.split(',').collect::<Vec<_>>());
        o.op_timeout = Duration::from_secs(5);
        o.connect_timeout = Duration::from_secs(5);
        o.lease = Duration::from_millis(900);
        store(o)
    };
    let st = open();
    const N: u32 = 32;
    for i in 0..N {
        st.put(
            format!("key {i}").as_bytes(),
            format!("program {i}").as_bytes(),
        )
        .unwrap();
    }
    for i in 0..N {
        assert_eq!(
            st.get(format!("key {i}").as_bytes()).unwrap(),
            Some(format!("program {i}").into_bytes())
        );
    }
    // The keys are fixed, and so is the slot layout `--cluster create`
    // makes: each node holds some, so only a scan of all three finds all.
    let per_node = cl.keys_per_node("kcache:k1:*:v");
    assert!(per_node.iter().all(|k| !k.is_empty()), "{per_node:?}");
    assert_eq!(per_node.iter().map(Vec::len).sum::<usize>(), N as usize);
    assert_eq!(st.len().unwrap(), N as usize);
    assert_eq!(st.list().unwrap().len(), N as usize);
    let r = st.verify().unwrap();
    assert_eq!((r.checked, r.corrupt.len()), (u64::from(N), 0), "{r:?}");
    // Leases are single-flight there too, and held past their lifetime by
    // the heartbeat, whichever node each lives on (kernels not published
    // yet: a published value ends a wait at once).
    let other = open();
    let held: Vec<_> = (0..N)
        .map(|i| {
            match st
                .lease(format!("unpublished {i}").as_bytes(), Duration::ZERO)
                .unwrap()
            {
                LeaseGrant::Free(l) | LeaseGrant::AfterWait(l) => l,
                LeaseGrant::TimedOut => panic!("lease {i} taken"),
            }
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2000));
    for i in 0..N {
        assert!(
            matches!(
                other
                    .lease(format!("unpublished {i}").as_bytes(), Duration::ZERO)
                    .unwrap(),
                LeaseGrant::TimedOut
            ),
            "lease {i} expired while held"
        );
    }
    drop(held);
    assert!(cl.keys_per_node("kcache:k1:*:l").iter().all(Vec::is_empty));
    st.clear().unwrap();
    assert!(cl.keys_per_node("kcache:k1:*").iter().all(Vec::is_empty));
    assert_eq!(st.local_stats().errors, 0, "{:?}", st.local_stats());
}

#[test]
fn a_hung_cluster_node_fails_calls_within_their_timeouts_and_never_hangs_one() {
    let Some(cl) = RedisCluster::start() else {
        return;
    };
    let seeds = cl.seeds();
    let seeds: Vec<String> = seeds.split(',').map(str::to_string).collect();
    {
        let mut o = RedisOptions::cluster(&seeds);
        o.op_timeout = Duration::from_secs(5);
        o.connect_timeout = Duration::from_secs(5);
        let writer = store(o);
        for i in 0..12u32 {
            writer.put(&i.to_le_bytes(), b"compiled").unwrap();
        }
    }
    // The first seed hangs: connecting through it, and every call to its
    // slots, must time out rather than wait for it.
    cl.hang(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let mut o = RedisOptions::cluster(&seeds);
        o.op_timeout = Duration::from_millis(50);
        o.connect_timeout = Duration::from_millis(100);
        let st = store(o);
        let found = (0..12u32)
            .filter(|i| st.get(&i.to_le_bytes()).unwrap().is_some())
            .count();
        tx.send((found, st.local_stats())).unwrap();
    });
    // A liveness bound, far above the timeouts' sum: only a call waiting on
    // the frozen node without a timeout reaches it.
    let (found, stats) = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("a call waited on the hung node");
    worker.join().unwrap();
    assert!(
        found < 12,
        "the hung node's entries cannot be read: {stats:?}"
    );
    assert!(stats.timeouts >= 1, "{stats:?}");
}
