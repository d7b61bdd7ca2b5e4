//! What comes in: the settings, the pod view of an object, the review, and
//! the facts an adapter gathered outside the request, as plain data.

pub mod capacity;
pub mod facts;
pub mod host_answers;
pub mod node;
pub mod pod;
pub mod published;
pub mod review;
pub mod settings;
