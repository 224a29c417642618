//! The program fork-load's children exec: it does nothing and returns 0, like contest's
//! `nil`. No std runtime start-up worth measuring: this is what the original exec'd.
fn main() {}
