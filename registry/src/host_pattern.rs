//! `--allow-registry` and `--deny-registry` patterns, read by the argument
//! parser and applied by the registry host checks (`registry::hosts`).

use std::fmt;

use os_placement_core::Glob;

/// A `--allow-registry` or `--deny-registry` pattern: a glob on the host
/// (any port), or on `host:port` when it has a port (`127.0.0.1:*`).
#[derive(Debug, Clone)]
pub struct HostPattern {
    text: String,
    glob: Glob,
    with_port: bool,
}

impl HostPattern {
    /// Reads a pattern as written on the command line.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let lower = text.trim().to_ascii_lowercase();
        if lower.is_empty() || lower.contains('/') {
            return Err(format!(
                "{text:?} is not a registry host pattern: write host[:port], e.g. registry.corp.example, *.corp.example or 127.0.0.1:*"
            ));
        }
        let (host, port) = split_host_port(&lower);
        // An IPv6 address is written in brackets, which a glob reads as a class.
        let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(inner) => format!("\\[{inner}\\]"),
            None => host.to_string(),
        };
        let source = match port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        let glob = Glob::new(&source).map_err(|e| format!("{text:?}: {e}"))?;
        Ok(HostPattern {
            text: text.trim().to_string(),
            glob,
            with_port: port.is_some(),
        })
    }

    /// Whether `host` (lower case, IPv6 in brackets) on `port` matches.
    pub(crate) fn matches(&self, host: &str, port: u16) -> bool {
        if self.with_port {
            self.glob.matches(&format!("{host}:{port}"))
        } else {
            self.glob.matches(host)
        }
    }

    /// Whether `host` on some port matches: a pattern's port is ignored.
    pub(crate) fn matches_name(&self, host: &str) -> bool {
        let glob = self.glob.as_str();
        match glob.rsplit_once(':').filter(|_| self.with_port) {
            Some((name, _)) => Glob::new(name).is_ok_and(|g| g.matches(host)),
            None => self.glob.matches(host),
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `host[:port]` split at the port; an IPv6 address keeps its brackets.
pub(crate) fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[') {
        return match text.split_once("]:") {
            Some((host, port)) => (text.get(..=host.len()).unwrap_or(text), Some(port)),
            None => (text, None),
        };
    }
    match text.split_once(':') {
        // More than one colon: an IPv6 address without brackets, no port.
        Some((host, port)) if !port.contains(':') => (host, Some(port)),
        _ => (text, None),
    }
}
