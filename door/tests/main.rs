//! The door through its public API: the policy's rules against
//! metadata.yml, and whole inputs to answers.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod answers;
mod metadata;
mod published;
