//! Which registry hosts the syncer contacts. Anyone who can create a Pod
//! names the registry host of its image, so a lookup could be aimed at the
//! node's metadata endpoint (169.254.169.254) or at a service listening on
//! loopback. Before contacting a host, its addresses are read: loopback,
//! link-local, unspecified, broadcast and multicast addresses (and EC2's
//! IPv6 metadata address) are refused unless the operator allows the host
//! by pattern (`--allow-registry`, or `--insecure-registry`, which names a
//! host too). `--deny-registry` refuses hosts whatever their addresses, and
//! wins; once any allow pattern is given, only allowed hosts are contacted.
//! The same address check runs again when a connection is made
//! ([`GuardedResolver`]: no answer of a second DNS query slips through) and
//! on every redirect and token service ([`HostPolicy::check_url`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

use crate::args::RegistryArgs;
use crate::host_pattern::split_host_port;
use crate::host_pattern::HostPattern;

/// Why a host was not contacted, in words for the published failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(
    /// Why, in words.
    pub String,
);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// What an address is when it is one the syncer does not contact unless
/// allowed; `None` for an ordinary address (public or private).
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => special_v4(v4),
            None => special_v6(v6),
        },
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [first, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_link_local() {
        Some("a link-local address (where the node's metadata endpoint listens)")
    } else if first == 0 {
        Some("an unspecified address (this host)")
    } else if ip.is_broadcast() {
        Some("a broadcast address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}

/// EC2's instance metadata endpoint over IPv6 (a unique local address).
const EC2_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let [first, ..] = ip.segments();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address (this host)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address (where the node's metadata endpoint listens)")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip == EC2_METADATA_V6 {
        Some("the EC2 instance metadata endpoint")
    } else {
        None
    }
}

/// A registry as an image names it: host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Registry {
    /// Lower case; an IPv6 address in brackets.
    host: String,
    port: u16,
    /// As written (`docker.io` as `index.docker.io`).
    written: String,
}

impl Registry {
    fn parse(registry: &str, insecure: bool) -> Registry {
        let lower = registry.to_ascii_lowercase();
        let (host, port) = split_host_port(&lower);
        let default = if insecure { 80 } else { 443 };
        Registry {
            host: host.to_string(),
            port: port.and_then(|p| p.parse().ok()).unwrap_or(default),
            written: registry.to_string(),
        }
    }

    /// The names patterns are matched against: Docker Hub by both of its names.
    fn names(&self) -> Vec<&str> {
        match self.host.as_str() {
            "docker.io" | "index.docker.io" | "registry-1.docker.io" => {
                vec![self.host.as_str(), "docker.io", "index.docker.io"]
            }
            host => vec![host],
        }
    }

    /// The address, when the host is written as one.
    fn literal(&self) -> Option<IpAddr> {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        bare.parse().ok()
    }
}

/// The operator's choice of registry hosts (`--allow-registry`,
/// `--deny-registry`, `--insecure-registry`).
#[derive(Debug, Clone, Default)]
pub struct HostPolicy {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
    insecure: Vec<String>,
}

impl HostPolicy {
    /// The policy of `args`.
    pub fn new(args: &RegistryArgs) -> HostPolicy {
        HostPolicy {
            allow: args.allow_registry.clone(),
            deny: args.deny_registry.clone(),
            insecure: args.insecure_registry.clone(),
        }
    }

    /// Whether `registry` (`host[:port]` as an image names it) is reached over plain HTTP.
    pub fn insecure(&self, registry: &str) -> bool {
        self.insecure.iter().any(|r| r == registry)
    }

    /// The patterns' word on `registry`: `Ok(true)` when the operator allows
    /// it by name (its addresses are not checked), `Ok(false)` when its
    /// addresses decide.
    fn by_pattern(&self, registry: &Registry, named_by_image: bool) -> Result<bool, Refusal> {
        let names = registry.names();
        let matching = |patterns: &[HostPattern]| {
            patterns
                .iter()
                .find(|p| names.iter().any(|n| p.matches(n, registry.port)))
                .cloned()
        };
        if let Some(pattern) = matching(&self.deny) {
            return Err(Refusal(format!(
                "registry {} matches --deny-registry {pattern}",
                registry.written
            )));
        }
        let allowed = matching(&self.allow).is_some() || self.insecure(&registry.written);
        if named_by_image && !allowed && !self.allow.is_empty() {
            let listed: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
            return Err(Refusal(format!(
                "registry {} is not among the allowed ones (--allow-registry {}); add --allow-registry {} to look it up",
                registry.written,
                listed.join(", "),
                registry.written
            )));
        }
        Ok(allowed)
    }

    /// Checks the registry an image names before it is contacted: the
    /// patterns, then every address its host resolves to.
    pub async fn admit(&self, registry: &str) -> Result<(), Refusal> {
        let parsed = Registry::parse(registry, self.insecure(registry));
        if self.by_pattern(&parsed, true)? {
            return Ok(());
        }
        let addresses: Vec<IpAddr> = match parsed.literal() {
            Some(ip) => vec![ip],
            None => {
                let bare = parsed.host.as_str();
                match tokio::net::lookup_host((bare, parsed.port)).await {
                    Ok(found) => found.map(|a| a.ip()).collect(),
                    // Not resolvable now: the request says so, and is retried.
                    Err(_) => return Ok(()),
                }
            }
        };
        match addresses
            .iter()
            .find_map(|ip| special(*ip).map(|why| (ip, why)))
        {
            Some((ip, why)) => Err(refused_address(
                registry,
                *ip,
                why,
                parsed.literal().is_none(),
            )),
            None => Ok(()),
        }
    }

    /// Checks a host the registry sends the syncer to (a redirect, its
    /// token service): the deny patterns, and its address when it is
    /// written as one (a name's addresses are checked on connecting).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal(format!("{url} is not an HTTP address")));
        }
        let Some(host) = url.host_str() else {
            return Err(Refusal(format!("{url} names no host")));
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let written = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let registry = Registry {
            host: host.to_ascii_lowercase(),
            port,
            written: written.clone(),
        };
        if self.by_pattern(&registry, false)? {
            return Ok(());
        }
        match registry.literal() {
            Some(ip) => match special(ip) {
                Some(why) => Err(refused_address(&written, ip, why, false)),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Whether the operator allows `host` by name, on any port.
    fn allows_name(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.allow.iter().any(|p| p.matches_name(&host))
            || self
                .insecure
                .iter()
                .any(|r| split_host_port(&r.to_ascii_lowercase()).0 == host)
    }
}

fn refused_address(registry: &str, ip: IpAddr, why: &str, resolved: bool) -> Refusal {
    let what = if resolved {
        format!("{registry} resolves to {ip}, {why}")
    } else {
        format!("{registry} is {why}")
    };
    Refusal(format!(
        "{what}, which the syncer contacts only for a registry the operator allows: add --allow-registry {registry} to contact it"
    ))
}

/// The DNS resolver of the registry client: a host the operator has not
/// allowed by name that resolves to a special address is an error, so the
/// connection is never made (whatever an earlier query answered).
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    /// Whose allow patterns exempt a host.
    pub policy: Arc<HostPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.allows_name(&host) {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            if let Some((ip, why)) = found
                .iter()
                .find_map(|a| special(a.ip()).map(|why| (a.ip(), why)))
            {
                return Err(Box::new(refused_address(&host, ip, why, true)) as _);
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        registry: RegistryArgs,
    }

    fn policy(flags: &[&str]) -> HostPolicy {
        let args = std::iter::once("test").chain(flags.iter().copied());
        HostPolicy::new(&Flags::try_parse_from(args).unwrap().registry)
    }

    fn admit(policy: &HostPolicy, registry: &str) -> Result<(), Refusal> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(policy.admit(registry))
    }

    #[test]
    fn special_addresses_are_loopback_link_local_unspecified_and_multicast() {
        for special_one in [
            "127.0.0.1",
            "127.8.9.10",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "febf::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
        ] {
            let ip: IpAddr = special_one.parse().unwrap();
            assert!(special(ip).is_some(), "{special_one}");
        }
        // Private and public addresses are ordinary: registries live there.
        for ordinary in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "8.8.8.8",
            "2001:db8::1",
            "fd00::1",
            "fec0::1",
        ] {
            let ip: IpAddr = ordinary.parse().unwrap();
            assert_eq!(special(ip), None, "{ordinary}");
        }
        assert!(special("169.254.169.254".parse().unwrap())
            .unwrap()
            .contains("metadata"));
    }

    #[test]
    fn patterns_match_a_host_on_any_port_or_host_and_port() {
        let any_port = HostPattern::parse("*.Corp.example").unwrap();
        assert!(any_port.matches("registry.corp.example", 443));
        assert!(any_port.matches("a.b.corp.example", 5000));
        assert!(!any_port.matches("corp.example", 443));
        let with_port = HostPattern::parse("127.0.0.1:*").unwrap();
        assert!(with_port.matches("127.0.0.1", 5000));
        assert!(with_port.matches("127.0.0.1", 443));
        assert!(!with_port.matches("127.0.0.2", 5000));
        let exact = HostPattern::parse("registry:5000").unwrap();
        assert!(exact.matches("registry", 5000));
        assert!(!exact.matches("registry", 5001));
        assert!(exact.matches_name("registry"));
        let v6 = HostPattern::parse("[::1]:*").unwrap();
        assert!(v6.matches("[::1]", 5000));
        assert!(v6.matches_name("[::1]"));
        for wrong in ["", "ghcr.io/org", "reg[istry"] {
            assert!(HostPattern::parse(wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn deny_wins_and_an_allow_list_restricts_what_images_name() {
        let p = policy(&[
            "--allow-registry",
            "*.corp.example",
            "--deny-registry",
            "bad.corp.example",
        ]);
        assert_eq!(admit(&p, "good.corp.example:5000"), Ok(()));
        let denied = admit(&p, "bad.corp.example").unwrap_err().to_string();
        assert!(
            denied.contains("matches --deny-registry bad.corp.example"),
            "{denied}"
        );
        let other = admit(&p, "ghcr.io").unwrap_err().to_string();
        assert!(
            other.contains("not among the allowed ones (--allow-registry *.corp.example)")
                && other.contains("add --allow-registry ghcr.io"),
            "{other}"
        );
        // Docker Hub answers to both its names.
        let hub = policy(&["--deny-registry", "docker.io"]);
        assert!(admit(&hub, "index.docker.io").is_err());
        // An --insecure-registry host is one the operator named: allowed.
        let insecure = policy(&[
            "--allow-registry",
            "x.example",
            "--insecure-registry",
            "127.0.0.1:5000",
        ]);
        assert_eq!(admit(&insecure, "127.0.0.1:5000"), Ok(()));
        assert!(admit(&insecure, "127.0.0.1:5001").is_err());
    }

    #[test]
    fn loopback_and_metadata_hosts_are_refused_unless_allowed() {
        let open = policy(&[]);
        let refused = admit(&open, "127.0.0.1:5000").unwrap_err().to_string();
        assert!(
            refused.contains("127.0.0.1:5000 is a loopback address")
                && refused.contains("--allow-registry 127.0.0.1:5000"),
            "{refused}"
        );
        let metadata = admit(&open, "169.254.169.254").unwrap_err().to_string();
        assert!(metadata.contains("link-local"), "{metadata}");
        assert!(admit(&open, "[fe80::1]:5000").is_err());
        assert!(admit(&open, "[::1]:5000").is_err());
        // A name is refused by what it resolves to.
        let named = admit(&open, "localhost:5000").unwrap_err().to_string();
        assert!(
            named.contains("localhost:5000 resolves to") && named.contains("loopback"),
            "{named}"
        );
        // Private addresses are ordinary; a name that does not resolve is left to the request.
        assert_eq!(admit(&open, "10.1.2.3:5000"), Ok(()));
        assert_eq!(admit(&open, "registry.invalid"), Ok(()));
        // Allowed by pattern, the address is not checked.
        let allowed = policy(&[
            "--allow-registry",
            "127.0.0.1:*",
            "--allow-registry",
            "localhost",
        ]);
        assert_eq!(admit(&allowed, "127.0.0.1:5000"), Ok(()));
        assert_eq!(admit(&allowed, "localhost:5000"), Ok(()));
        assert!(allowed.allows_name("localhost") && allowed.allows_name("127.0.0.1"));
        assert!(!open.allows_name("localhost"));
    }

    #[test]
    fn redirect_and_token_service_hosts_are_checked() {
        let p = policy(&[
            "--allow-registry",
            "registry.corp.example",
            "--deny-registry",
            "*.internal",
        ]);
        let check = |url: &str| p.check_url(&Url::parse(url).unwrap());
        // A registry may send the syncer to its CDN, not chosen by a pod.
        assert_eq!(check("https://cdn.example.net/blobs/x"), Ok(()));
        assert_eq!(check("https://203.0.113.7/x"), Ok(()));
        let metadata = check("http://169.254.169.254/latest/meta-data/").unwrap_err();
        assert!(
            metadata
                .to_string()
                .contains("169.254.169.254 is a link-local address"),
            "{metadata}"
        );
        assert!(check("http://[::1]:8080/").is_err());
        assert!(check("https://vault.internal/").is_err());
        assert!(check("file:///etc/passwd").is_err());
    }
}
