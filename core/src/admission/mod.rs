//! Admission: what a request needs from the host, the settings completed
//! with facts, and the decision (for a change, or for the audit of a live
//! object).

#[cfg(feature = "audit")]
pub mod audit;
pub mod context;
pub mod decide;
pub mod decision;
pub mod evaluate;
pub mod needs;
pub mod owning;
pub mod pending;
pub mod reads;
#[cfg(feature = "unreadable")]
pub mod unreadable;
pub mod update;
