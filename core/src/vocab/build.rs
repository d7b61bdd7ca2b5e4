//! Windows kernel builds, as in the node label `node.kubernetes.io/windows-build`.

use std::fmt;

/// A Windows kernel build as in the node label node.kubernetes.io/windows-build ("10.0.20348").
///
/// Only the third component is stored: every supported Windows release is 10.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WindowsBuild(u32);

/// Release names (lower case) and their builds (hcsshim osversion/windowsbuilds.go).
const RELEASES: &[(&str, WindowsBuild)] = &[
    ("ltsc2016", WindowsBuild::LTSC2016),
    ("1607", WindowsBuild::LTSC2016),
    ("1709", WindowsBuild::V1709),
    ("1803", WindowsBuild::V1803),
    ("1809", WindowsBuild::LTSC2019),
    ("ltsc2019", WindowsBuild::LTSC2019),
    ("1903", WindowsBuild::V1903),
    ("1909", WindowsBuild::V1909),
    ("2004", WindowsBuild::V2004),
    ("20h2", WindowsBuild::V20H2),
    // Old .NET tags called 20H2 "2009".
    ("2009", WindowsBuild::V20H2),
    ("ltsc2022", WindowsBuild::LTSC2022),
    ("23h2", WindowsBuild::V23H2),
    ("ltsc2025", WindowsBuild::LTSC2025),
];

/// Every Windows Server build with a release name, oldest first.
pub fn known_builds() -> Vec<WindowsBuild> {
    // Inserted in order: no sort or set code for this one call.
    let mut builds: Vec<WindowsBuild> = Vec::new();
    for &(_, build) in RELEASES {
        if let Err(at) = builds.binary_search(&build) {
            builds.insert(at, build);
        }
    }
    builds
}

impl WindowsBuild {
    /// Windows Server 2016 (ltsc2016, 1607).
    pub const LTSC2016: Self = Self(14393);
    /// Windows Server, version 1709.
    pub const V1709: Self = Self(16299);
    /// Windows Server, version 1803.
    pub const V1803: Self = Self(17134);
    /// Windows Server 2019 (ltsc2019, 1809).
    pub const LTSC2019: Self = Self(17763);
    /// Windows Server, version 1903.
    pub const V1903: Self = Self(18362);
    /// Windows Server, version 1909.
    pub const V1909: Self = Self(18363);
    /// Windows Server, version 2004.
    pub const V2004: Self = Self(19041);
    /// Windows Server, version 20H2.
    pub const V20H2: Self = Self(19042);
    /// Windows Server 2022 (ltsc2022).
    pub const LTSC2022: Self = Self(20348);
    /// Windows Server, version 23H2.
    pub const V23H2: Self = Self(25398);
    /// Windows Server 2025 (ltsc2025).
    pub const LTSC2025: Self = Self(26100);

    /// The build with third component `build` (10.0.`build`).
    /// Node builds that run a container of this build with process isolation:
    /// the same build, and from Windows Server 2025 on, the next LTSC host
    /// also runs the previous LTSC build.
    pub fn compatible_hosts(self) -> Vec<WindowsBuild> {
        if self == Self::LTSC2022 {
            vec![self, Self::LTSC2025]
        } else {
            vec![self]
        }
    }

    /// The build `10.0.<build>`.
    pub const fn new(build: u32) -> Self {
        Self(build)
    }

    /// The third component of the build.
    pub const fn number(self) -> u32 {
        self.0
    }

    /// Parses the label form "10.0.N" exactly (settings validation uses this); errors say what is wrong.
    pub fn parse_label(s: &str) -> Result<Self, BuildParseError> {
        let err = |reason| Err(BuildParseError::new(s, reason));
        if s.is_empty() {
            return err(BuildErrorReason::Empty);
        }
        if s.trim() != s {
            return err(BuildErrorReason::Whitespace);
        }
        let Some(rest) = s.strip_prefix("10.0.") else {
            return if s == "10.0" {
                err(BuildErrorReason::MissingBuild)
            } else {
                err(BuildErrorReason::NotTen)
            };
        };
        if rest.is_empty() {
            return err(BuildErrorReason::MissingBuild);
        }
        if rest.contains('.') {
            // The kubelet writes three parts; a four-part value never matches a node.
            return err(BuildErrorReason::TooManyParts);
        }
        if !rest.bytes().all(|b| b.is_ascii_digit()) {
            return err(BuildErrorReason::NotANumber);
        }
        // The label is compared as a string, so "017763" would never match a node.
        if rest.len() > 1 && rest.starts_with('0') {
            return err(BuildErrorReason::LeadingZero);
        }
        match rest.parse::<u32>() {
            Ok(n) => Ok(Self(n)),
            Err(_) => err(BuildErrorReason::TooLarge),
        }
    }

    /// Parses "10.0.17763.4131" (four parts: first three count) and "10.0.17763" from image tags.
    pub fn parse_version(s: &str) -> Option<Self> {
        let rest = s.strip_prefix("10.0.")?;
        let (build, revision) = match rest.split_once('.') {
            Some((b, r)) => (b, Some(r)),
            None => (rest, None),
        };
        if let Some(r) = revision {
            if r.is_empty() || !r.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
        }
        if build.is_empty() || !build.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        build.parse::<u32>().ok().map(Self)
    }

    /// Release names: "ltsc2016", "1607", "1709", "1803", "1809", "ltsc2019", "1903", "1909",
    /// "2004", "20h2", "2009" (old .NET tag for 20H2), "ltsc2022", "23h2", "ltsc2025" (case-insensitive).
    pub fn from_release(s: &str) -> Option<Self> {
        RELEASES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, build)| build)
    }

    /// Windows Server years as image tags write them after a Windows word
    /// (`windows-2019`, `win2022`, `servercore2019`): "2016", "2019", "2022", "2025".
    /// A bare year is no build: only the caller knows the word before it.
    pub fn from_server_year(s: &str) -> Option<Self> {
        match s {
            "2016" => Some(Self::LTSC2016),
            "2019" => Some(Self::LTSC2019),
            "2022" => Some(Self::LTSC2022),
            "2025" => Some(Self::LTSC2025),
            _ => None,
        }
    }

    /// Human name for messages, e.g. "Windows Server 2022 (ltsc2022)"; None for unknown builds.
    pub fn release_name(self) -> Option<&'static str> {
        let name = match self {
            Self::LTSC2016 => "Windows Server 2016 (ltsc2016, 1607)",
            Self::V1709 => "Windows Server, version 1709",
            Self::V1803 => "Windows Server, version 1803",
            Self::LTSC2019 => "Windows Server 2019 (ltsc2019, 1809)",
            Self::V1903 => "Windows Server, version 1903",
            Self::V1909 => "Windows Server, version 1909",
            Self::V2004 => "Windows Server, version 2004",
            Self::V20H2 => "Windows Server, version 20H2",
            Self::LTSC2022 => "Windows Server 2022 (ltsc2022)",
            Self::V23H2 => "Windows Server, version 23H2",
            Self::LTSC2025 => "Windows Server 2025 (ltsc2025)",
            _ => return None,
        };
        Some(name)
    }
}

impl fmt::Display for WindowsBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "10.0.{}", self.0)
    }
}

/// What is wrong with a build label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BuildErrorReason {
    Empty,
    Whitespace,
    NotTen,
    MissingBuild,
    TooManyParts,
    NotANumber,
    LeadingZero,
    TooLarge,
}

impl BuildErrorReason {
    fn text(self) -> &'static str {
        match self {
            Self::Empty => "the value is empty",
            Self::Whitespace => "it has leading or trailing whitespace",
            Self::NotTen => "Windows builds start with 10.0.",
            Self::MissingBuild => "the build number is missing",
            Self::TooManyParts => "it has more than three parts (the node label has no revision)",
            Self::NotANumber => "the build is not a decimal number",
            Self::LeadingZero => "the build has a leading zero, so it never equals a node label",
            Self::TooLarge => "the build number is too large",
        }
    }
}

/// A value that is not a `node.kubernetes.io/windows-build` label value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildParseError {
    input: String,
    reason: BuildErrorReason,
}

/// Longest input quoted back in a message, so a huge value cannot flood it.
const MAX_QUOTED: usize = 64;

impl BuildParseError {
    fn new(input: &str, reason: BuildErrorReason) -> Self {
        let input = match input.char_indices().nth(MAX_QUOTED) {
            Some((cut, _)) => format!("{}...", input.get(..cut).unwrap_or_default()),
            None => input.to_owned(),
        };
        Self { input, reason }
    }
}

impl fmt::Display for BuildParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a Windows build: {}; expected 10.0.N, e.g. 10.0.20348",
            self.input,
            self.reason.text()
        )
    }
}

impl std::error::Error for BuildParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_table() {
        let cases = [
            ("ltsc2016", 14393),
            ("1607", 14393),
            ("1709", 16299),
            ("1803", 17134),
            ("1809", 17763),
            ("ltsc2019", 17763),
            ("LTSC2019", 17763),
            ("1903", 18362),
            ("1909", 18363),
            ("2004", 19041),
            ("20H2", 19042),
            ("20h2", 19042),
            ("2009", 19042),
            ("ltsc2022", 20348),
            ("23H2", 25398),
            ("ltsc2025", 26100),
        ];
        for (name, build) in cases {
            assert_eq!(
                WindowsBuild::from_release(name),
                Some(WindowsBuild::new(build)),
                "{name}"
            );
        }
        for name in [
            "",
            "2019",
            "ltsc",
            "ltsc2020",
            "1810",
            "latest",
            "ltsc2019 ",
            "ǅ",
        ] {
            assert_eq!(WindowsBuild::from_release(name), None, "{name:?}");
        }
    }

    /// Windows Server 2016/2019/2022/2025 are LTSC releases (hcsshim osversion/windowsbuilds.go).
    #[test]
    fn server_years() {
        for (year, build) in [
            ("2016", 14393),
            ("2019", 17763),
            ("2022", 20348),
            ("2025", 26100),
        ] {
            assert_eq!(
                WindowsBuild::from_server_year(year),
                Some(WindowsBuild::new(build)),
                "{year}"
            );
        }
        // Not server years: SAC numbers, other years, desktop versions, padding.
        for s in [
            "1809", "2004", "2009", "2020", "2023", "11", "10", "", " 2019", "02019", "ltsc2022",
        ] {
            assert_eq!(WindowsBuild::from_server_year(s), None, "{s:?}");
        }
    }

    #[test]
    fn every_known_build_has_a_name() {
        for (name, build) in RELEASES {
            let human = build.release_name().unwrap();
            assert!(
                human.to_ascii_lowercase().contains(name)
                    || matches!(*name, "1607" | "1809" | "2009"),
                "{name} -> {human}"
            );
        }
        assert_eq!(
            WindowsBuild::LTSC2022.release_name(),
            Some("Windows Server 2022 (ltsc2022)")
        );
        assert_eq!(WindowsBuild::new(12345).release_name(), None);
    }

    #[test]
    fn display_and_number() {
        assert_eq!(WindowsBuild::LTSC2022.to_string(), "10.0.20348");
        assert_eq!(WindowsBuild::new(7).to_string(), "10.0.7");
        assert_eq!(WindowsBuild::LTSC2019.number(), 17763);
        assert!(WindowsBuild::LTSC2019 < WindowsBuild::LTSC2022);
    }

    #[test]
    fn parse_label_accepts() {
        for (s, n) in [
            ("10.0.17763", 17763),
            ("10.0.20348", 20348),
            ("10.0.26100", 26100),
            ("10.0.0", 0),
            ("10.0.4294967295", u32::MAX),
        ] {
            assert_eq!(
                WindowsBuild::parse_label(s),
                Ok(WindowsBuild::new(n)),
                "{s}"
            );
        }
    }

    #[test]
    fn parse_label_rejects_with_reason() {
        let huge = "9".repeat(10_000);
        let huge_label = format!("10.0.{huge}");
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("10.0", "missing"),
            ("10.0.", "missing"),
            ("10.0.x", "not a decimal"),
            ("10.0.-1", "not a decimal"),
            ("10.0.+1", "not a decimal"),
            ("10.0.1e3", "not a decimal"),
            ("10.1.17763", "start with 10.0."),
            ("6.3.9600", "start with 10.0."),
            ("ltsc2022", "start with 10.0."),
            ("10.0.17763.1", "more than three parts"),
            ("10.0.17763.", "more than three parts"),
            (" 10.0.17763", "whitespace"),
            ("10.0.17763\n", "whitespace"),
            ("10.0.017763", "leading zero"),
            ("10.0.4294967296", "too large"),
            (&huge_label, "too large"),
            ("10.0.１７７６３", "not a decimal"),
            ("ǅǅ", "start with 10.0."),
        ];
        for (s, want) in cases {
            let err = WindowsBuild::parse_label(s).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(want), "{s:?}: {msg}");
            assert!(msg.contains("expected 10.0.N, e.g. 10.0.20348"), "{msg}");
            assert!(msg.len() < 300, "message not bounded: {}", msg.len());
        }
        assert_eq!(
            WindowsBuild::parse_label("10.0").unwrap_err().to_string(),
            "\"10.0\" is not a Windows build: the build number is missing; expected 10.0.N, e.g. 10.0.20348"
        );
    }

    #[test]
    fn parse_version_forms() {
        let cases: &[(&str, Option<u32>)] = &[
            ("10.0.17763.4131", Some(17763)),
            ("10.0.17763", Some(17763)),
            ("10.0.20348.2227", Some(20348)),
            ("10.0.17763.", None),
            ("10.0.17763.4131.1", None),
            ("10.0.", None),
            ("10.0", None),
            ("10.1.17763", None),
            ("10.0.abc", None),
            ("10.0.99999999999", None),
            ("", None),
            ("ltsc2019", None),
        ];
        for (s, want) in cases {
            assert_eq!(
                WindowsBuild::parse_version(s),
                want.map(WindowsBuild::new),
                "{s:?}"
            );
        }
    }
}
