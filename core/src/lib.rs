//! Pure rule core of os-placement: a typed view of a pod spec and the
//! settings in, a decision out. No I/O, no host specifics.

pub mod build;
pub mod glob;
pub mod image;
