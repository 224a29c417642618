//! The program fork-load's children exec: it does nothing and returns 0, like contest's
//! `nil.c` (`int main(){return 0;}`).
//!
//! Built without std and without Rust's `main` shim, so exec'ing it costs what exec'ing the
//! C nil costs: crt1's start-up and libc's dynamic linking, nothing more. With std (even with
//! `#![no_main]`) the binary also loads libgcc_s and relocates std's data: measured here at
//! 1,083-1,134 execs/s against 1,320-1,343 for the C nil and 1,301-1,365 for this one (one
//! fork+exec+wait loop, 2 s each). This needs `panic = "abort"` in the profiles: a no_std
//! binary cannot have unwinding panics.
// Under `cargo test` (clippy --all-targets) the harness brings std and its own main.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(not(test), no_main)]

// crt1's _start calls `main` below through __libc_start_main.
#[cfg(not(test))]
#[link(name = "c")]
extern "C" {
    fn abort() -> !;
}

#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    0
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort takes nothing and never returns.
    unsafe { abort() }
}
