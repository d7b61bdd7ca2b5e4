//! The core's behaviour, through its public API: one test binary, a module
//! per concern. Fixtures are data files under `fixtures/`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;
mod props;

mod api;
mod architecture;
mod architecture_pinning;
mod audit;
mod capacity;
mod corpus;
mod do_no_harm;
mod facts;
mod image_references;
mod kinds;
mod linux_taint;
mod missed_mutants;
mod no_panic;
mod ownership;
mod placement;
mod properties;
mod regressions;
mod resolution;
mod syncer;
mod unreadable_facts;
mod unsatisfiable_labels;
mod windows_api_rules;
