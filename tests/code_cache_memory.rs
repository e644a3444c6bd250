//! What the code cache costs per entry in memory: its bookkeeping (the map
//! slot, the group's key list), not the programs it holds. Measured with a
//! counting allocator, so the figure is exact for this build; printed for the
//! README, and bounded loosely so a regression that doubles it fails.

use kcache::cache::code::{Capacity, CodeCache};
use kcache::key::Digest;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, only counting bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - layout.size() as isize, Ordering::SeqCst);
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What the resolver stores per kernel: the program and the symbol.
type Value = (Arc<()>, Arc<str>);

#[test]
fn bookkeeping_per_entry() {
    let program = Arc::new(());
    let symbol: Arc<str> = Arc::from("dense__seg1");
    let n = 100_000u32;
    let per_group = 8;
    let cache: CodeCache<Digest, Value> = CodeCache::new(Capacity::Fixed(u64::MAX));
    let before = LIVE.load(Ordering::SeqCst);
    for g in 0..n / per_group {
        let entries: Vec<(Digest, Value)> = (0..per_group)
            .map(|i| {
                let mut d = [0u8; 32];
                d[..4].copy_from_slice(&(g * per_group + i).to_le_bytes());
                (Digest(d), (Arc::clone(&program), Arc::clone(&symbol)))
            })
            .collect();
        cache.publish(entries, 1);
    }
    let bytes = (LIVE.load(Ordering::SeqCst) - before) as f64 / f64::from(n);
    println!(
        "code cache bookkeeping: {bytes:.0} bytes per entry ({n} entries, groups of {per_group})"
    );
    assert_eq!(cache.len(), n as usize);
    assert!(bytes < 200.0, "{bytes} bytes per entry");
}
