//! Words of the domain, with no rules: Windows builds, operating systems and
//! the placement algebra, the table of known node labels, kinds and field
//! paths, names, globs, JSON patch operations and diagnostics.

pub mod build;
pub mod constraint;
pub mod diagnostics;
pub mod field_path;
pub mod glob;
pub mod isolation;
pub mod kinds;
pub mod labels;
pub mod names;
pub mod ordered;
pub mod patch;
pub mod taint;
pub mod text;
