//! `windowsImages[]` rules of the settings: images the cluster owner
//! declares to be Windows images.

use crate::vocab::build::WindowsBuild;
use crate::vocab::glob::{Glob, GlobError};

/// A settings rule (`windowsImages[]`): images matching `pattern` are Windows images.
/// Rules are checked before the built-in conventions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRule {
    /// The glob the image reference must match.
    pub pattern: Glob,
    /// Build of the matching images. None: the build is only what the tag names as a
    /// Windows release (`ltsc2022`, `windows-2019`); a version number (`1809`, `10.0.1`)
    /// of a private image is never taken for a build.
    pub windows_build: Option<WindowsBuild>,
}

impl ImageRule {
    /// Compiles `pattern` into a rule.
    pub fn new(pattern: &str, windows_build: Option<WindowsBuild>) -> Result<Self, GlobError> {
        Ok(Self {
            pattern: Glob::new(pattern)?,
            windows_build,
        })
    }
}
