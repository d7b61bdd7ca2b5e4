//! Admission: what a request needs from the host, the settings completed
//! with facts, and the decision.

pub mod context;
pub mod decide;
pub mod decision;
pub mod evaluate;
pub mod needs;
pub mod owning;
pub mod update;
