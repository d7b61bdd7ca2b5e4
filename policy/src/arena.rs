//! A per-request bump arena for the guest's heap.
//!
//! Evaluating a request allocates many small blocks (the JSON tree, paths,
//! messages) that all die when the answer is written. Freeing them one by one
//! was a fifth of a request's time. While a request runs, allocations are cut
//! from one chunk; frees are no-ops (except the last block, which rewinds);
//! the next request starts the chunk again. What does not fit goes to the
//! system allocator, and the next chunk is larger, up to [`MAX_CHUNK`].
//!
//! The chunk is only reused at the next [`Arena::begin`]: the waPC guest
//! hands the answer to the host after the handler has returned, and that
//! answer lives in the chunk. Between requests the arena is inactive, so
//! whatever the waPC runtime allocates there (the next payload) comes from
//! the system allocator and survives the reset.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr;

/// The first chunk: enough for the corpus's largest request.
pub const INITIAL_CHUNK: usize = 256 * 1024;
/// The arena stops growing here; larger requests spill to the system allocator.
pub const MAX_CHUNK: usize = 16 * 1024 * 1024;

/// The arena over a backing allocator (the system's in the module).
pub struct Arena<A: GlobalAlloc = System> {
    backing: A,
    chunk: Cell<*mut u8>,
    capacity: Cell<usize>,
    /// Address of the chunk's next free byte.
    next: Cell<usize>,
    /// Address of the chunk's end while a request runs, else 0: the one
    /// bound the allocation fast path checks.
    limit: Cell<usize>,
    active: Cell<bool>,
    spilled: Cell<usize>,
}

// The wasm32-wasip1 guest has one thread; natively, an arena is only used
// by the test that owns it.
unsafe impl<A: GlobalAlloc + Sync> Sync for Arena<A> {}

impl<A: GlobalAlloc> Arena<A> {
    /// An arena with no chunk yet: everything goes to `backing` until [`Arena::begin`].
    pub const fn new(backing: A) -> Self {
        Arena {
            backing,
            chunk: Cell::new(ptr::null_mut()),
            capacity: Cell::new(0),
            next: Cell::new(0),
            limit: Cell::new(0),
            active: Cell::new(false),
            spilled: Cell::new(0),
        }
    }

    /// Starts a request: every block cut from the chunk so far is dead.
    /// The chunk grows when the last request spilled.
    pub fn begin(&self) {
        let wanted = if self.spilled.get() > 0 {
            (self.capacity.get() + self.spilled.get())
                .next_power_of_two()
                .min(MAX_CHUNK)
        } else {
            self.capacity.get().max(INITIAL_CHUNK)
        };
        if wanted != self.capacity.get() || self.chunk.get().is_null() {
            self.replace_chunk(wanted);
        }
        let start = self.chunk.get() as usize;
        self.next.set(start);
        self.limit.set(if start == 0 {
            0
        } else {
            start + self.capacity.get()
        });
        self.spilled.set(0);
        self.active.set(true);
    }

    /// Ends a request: later allocations go to the backing allocator.
    pub fn end(&self) {
        self.limit.set(0);
        self.active.set(false);
    }

    /// Runs `f` with the chunk set aside: what `f` allocates comes from the
    /// backing allocator and outlives the request (a cache kept across
    /// requests). The request's blocks stay where they are.
    pub fn outside<R>(&self, f: impl FnOnce() -> R) -> R {
        let limit = self.limit.replace(0);
        let active = self.active.replace(false);
        let result = f();
        self.limit.set(limit);
        self.active.set(active);
        result
    }

    /// True while a request runs and nothing has spilled: every block of the
    /// request is then in the chunk, so dropping it can be skipped.
    pub fn holds_everything(&self) -> bool {
        self.active.get() && self.spilled.get() == 0 && !self.chunk.get().is_null()
    }

    /// Bytes the current request took from the chunk.
    pub fn used(&self) -> usize {
        self.next.get().saturating_sub(self.chunk.get() as usize)
    }

    /// Bytes the current request allocated outside the chunk.
    pub fn spilled(&self) -> usize {
        self.spilled.get()
    }

    fn replace_chunk(&self, capacity: usize) {
        let old = self.chunk.get();
        if let Some(layout) = chunk_layout(self.capacity.get()).filter(|_| !old.is_null()) {
            unsafe { self.backing.dealloc(old, layout) };
        }
        let new = match chunk_layout(capacity) {
            Some(layout) => unsafe { self.backing.alloc(layout) },
            None => ptr::null_mut(),
        };
        self.chunk.set(new);
        self.capacity.set(if new.is_null() { 0 } else { capacity });
    }

    fn contains(&self, p: *mut u8) -> bool {
        let start = self.chunk.get() as usize;
        let at = p as usize;
        !self.chunk.get().is_null() && at >= start && at < start + self.capacity.get()
    }

    /// A block cut from the chunk, if the request is active and it fits.
    #[inline]
    fn cut(&self, layout: Layout) -> Option<*mut u8> {
        // Alignments are powers of two.
        let mask = layout.align() - 1;
        let at = self.next.get().checked_add(mask).map(|a| a & !mask);
        match at.and_then(|a| Some((a, a.checked_add(layout.size())?))) {
            Some((at, end)) if end <= self.limit.get() => {
                self.next.set(end);
                let start = self.chunk.get();
                Some(start.wrapping_add(at - start as usize))
            }
            _ => {
                if self.active.get() {
                    self.spilled
                        .set(self.spilled.get().saturating_add(layout.size()));
                }
                None
            }
        }
    }

    fn is_last(&self, p: *mut u8, size: usize) -> bool {
        p as usize + size == self.next.get()
    }
}

fn chunk_layout(capacity: usize) -> Option<Layout> {
    Layout::from_size_align(capacity, 16).ok()
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for Arena<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.cut(layout) {
            Some(p) => p,
            None => unsafe { self.backing.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if self.contains(p) {
            if self.active.get() && self.is_last(p, layout.size()) {
                self.next.set(p as usize);
            }
            return;
        }
        unsafe { self.backing.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.contains(p) {
            return unsafe { self.backing.realloc(p, layout, new_size) };
        }
        if self.active.get()
            && self.is_last(p, layout.size())
            && (p as usize)
                .checked_add(new_size)
                .is_some_and(|end| end <= self.limit.get())
        {
            self.next.set(p as usize + new_size);
            return p;
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            unsafe { ptr::copy_nonoverlapping(p, new, layout.size().min(new_size)) };
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn in_chunk(arena: &Arena, p: *mut u8) -> bool {
        arena.contains(p)
    }

    #[test]
    fn a_request_cuts_aligned_blocks_from_the_chunk_and_the_next_reuses_it() {
        let arena = Arena::new(System);
        arena.begin();
        let a = unsafe { arena.alloc(layout(3, 1)) };
        let b = unsafe { arena.alloc(layout(8, 8)) };
        assert!(in_chunk(&arena, a) && in_chunk(&arena, b));
        assert_eq!(b as usize % 8, 0);
        assert!(b as usize >= a as usize + 3, "blocks overlap");
        unsafe { b.write_bytes(7, 8) };
        unsafe { arena.dealloc(a, layout(3, 1)) }; // not the last block: kept
        assert_eq!(unsafe { *b }, 7);
        assert!(arena.holds_everything());
        arena.end();
        arena.begin();
        let again = unsafe { arena.alloc(layout(3, 1)) };
        assert_eq!(again, a, "the next request starts the chunk again");
        arena.end();
    }

    #[test]
    fn blocks_allocated_between_requests_survive_the_reset() {
        let arena = Arena::new(System);
        arena.begin();
        arena.end();
        // What the waPC runtime allocates before calling the handler.
        let outside = unsafe { arena.alloc(layout(64, 8)) };
        assert!(!in_chunk(&arena, outside));
        unsafe { outside.write_bytes(0xAB, 64) };
        arena.begin();
        for _ in 0..100 {
            let p = unsafe { arena.alloc(layout(64, 8)) };
            unsafe { p.write_bytes(0, 64) };
        }
        arena.end();
        assert!((0..64).all(|i| unsafe { *outside.add(i) } == 0xAB));
        unsafe { arena.dealloc(outside, layout(64, 8)) };
    }

    #[test]
    fn blocks_allocated_outside_a_request_survive_its_reset() {
        let arena = Arena::new(System);
        arena.begin();
        let inside = unsafe { arena.alloc(layout(32, 8)) };
        let kept = arena.outside(|| unsafe { arena.alloc(layout(64, 8)) });
        assert!(in_chunk(&arena, inside) && !in_chunk(&arena, kept));
        unsafe { kept.write_bytes(0xCD, 64) };
        let after = unsafe { arena.alloc(layout(32, 8)) };
        assert!(in_chunk(&arena, after), "the request goes on in the chunk");
        assert!(arena.holds_everything(), "a kept block is not a spill");
        arena.end();
        arena.begin();
        for _ in 0..100 {
            let p = unsafe { arena.alloc(layout(64, 8)) };
            unsafe { p.write_bytes(0, 64) };
        }
        arena.end();
        assert!((0..64).all(|i| unsafe { *kept.add(i) } == 0xCD));
        unsafe { arena.dealloc(kept, layout(64, 8)) };
    }

    #[test]
    fn freeing_or_growing_the_last_block_works_in_place() {
        let arena = Arena::new(System);
        arena.begin();
        let a = unsafe { arena.alloc(layout(16, 8)) };
        unsafe { a.write_bytes(5, 16) };
        let grown = unsafe { arena.realloc(a, layout(16, 8), 1024) };
        assert_eq!(grown, a, "the last block grows in place");
        assert_eq!(arena.used(), 1024);
        unsafe { arena.dealloc(grown, layout(1024, 8)) };
        assert_eq!(arena.used(), 0, "freeing the last block rewinds");
        let b = unsafe { arena.alloc(layout(16, 8)) };
        let c = unsafe { arena.alloc(layout(16, 8)) };
        unsafe { b.write_bytes(9, 16) };
        let moved = unsafe { arena.realloc(b, layout(16, 8), 32) };
        assert!(
            moved != b && moved as usize > c as usize,
            "a block below the top moves"
        );
        assert!((0..16).all(|i| unsafe { *moved.add(i) } == 9));
        arena.end();
    }

    #[test]
    fn what_does_not_fit_spills_and_the_next_chunk_holds_it() {
        let arena = Arena::new(System);
        arena.begin();
        let big = INITIAL_CHUNK + 1;
        let p = unsafe { arena.alloc(layout(big, 8)) };
        assert!(!p.is_null() && !in_chunk(&arena, p));
        assert_eq!(arena.spilled(), big);
        assert!(!arena.holds_everything(), "a spilled block must be freed");
        unsafe { arena.dealloc(p, layout(big, 8)) };
        arena.end();
        arena.begin();
        let q = unsafe { arena.alloc(layout(big, 8)) };
        assert!(
            in_chunk(&arena, q),
            "the chunk grew to the last request's need"
        );
        assert!(arena.holds_everything());
        arena.end();
    }

    #[test]
    fn the_chunk_stops_growing_at_its_cap() {
        let arena = Arena::new(System);
        arena.begin();
        let huge = MAX_CHUNK * 2;
        let p = unsafe { arena.alloc(layout(huge, 8)) };
        unsafe { arena.dealloc(p, layout(huge, 8)) };
        arena.end();
        arena.begin();
        assert_eq!(arena.capacity.get(), MAX_CHUNK);
        let q = unsafe { arena.alloc(layout(huge, 8)) };
        assert!(!in_chunk(&arena, q), "past the cap, blocks still spill");
        unsafe { arena.dealloc(q, layout(huge, 8)) };
        arena.end();
    }
}
