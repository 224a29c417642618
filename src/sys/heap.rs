//! The C library's heap, told to keep what is freed: the model builds vectors of one entry
//! per thread at every step and frees them at its end, and glibc's malloc by default gives
//! large blocks back to the kernel (a block over its mmap threshold is unmapped at free, and
//! a heap top over its trim threshold is cut), so the next step faults the same pages in
//! again, each one zeroed by the kernel. On the simulated machine of 100,000 threads
//! (`cargo bench --bench big_machine`) that was 15% of the model's step, steady state.
//!
//! Kept, the heap stays at the process's peak (under 200 MB there, a few MB at 1,000
//! threads): memory the observer needs at every step anyway.

/// Blocks up to this size come from the heap rather than a mapping of their own: glibc's
/// largest allowed threshold on 64-bit targets (`DEFAULT_MMAP_THRESHOLD_MAX`).
const MMAP_THRESHOLD: i32 = 32 << 20;

/// Free memory at the heap's top is given back only past this much.
const TRIM_THRESHOLD: i32 = 512 << 20;

/// Keep freed memory in the heap. Call it once, early; a no-op outside glibc.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets two of malloc's tuning parameters; it takes the allocator's
    // own lock, so it is sound at any time, and both values are in the ranges glibc accepts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
