//! What the std-less programs of src/bin (schedlab-forker, schedlab-hackbench) share: libc's
//! clock, errno and abort, their decimal arguments, the panic handler a no_std binary must
//! have, and the histogram's layout (schedlab's own description of it, core only: the same
//! code records here as in every other workload). Included by path, as a module of each.

#[allow(dead_code)]
#[path = "../../sys/shared/histogram.rs"]
pub mod histogram;

#[repr(C)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

#[link(name = "c")]
extern "C" {
    fn abort() -> !;
    fn __errno_location() -> *mut i32;
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

const CLOCK_MONOTONIC: i32 = 1;

/// CLOCK_MONOTONIC in ns, through glibc's vDSO path (no system call).
pub fn now_ns() -> u64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the pointer it is given.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    // SAFETY: glibc's errno location is the calling thread's, always valid.
    unsafe { *__errno_location() }
}

/// A non-negative decimal argument.
///
/// # Safety
/// `arg` must point to a NUL-terminated string (an `argv` entry).
pub unsafe fn number(arg: *const u8) -> Option<usize> {
    let mut n: usize = 0;
    let mut p = arg;
    if *p == 0 {
        return None;
    }
    while *p != 0 {
        let d = (*p).wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(d as usize)?;
        p = p.add(1);
    }
    Some(n)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort takes nothing and never returns.
    unsafe { abort() }
}

// Debug builds keep core's overflow checks, whose panic paths name this symbol; with
// panic = "abort" it is never called.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}
