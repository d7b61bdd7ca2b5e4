//! Which OS (and Windows build) a container image reference says it needs.
//!
//! Only the reference text is used: no registry is contacted. Conventions are those of
//! `shared/domain-facts.md` ("Image tag conventions") and of the vendors named below.
//! When in doubt the answer is `Unknown` (or `MaybeWindows`, which only warns): a wrong
//! OS or build would make a pod unschedulable.

pub use crate::input::settings::ImageRule;
use crate::vocab::build::WindowsBuild;
use crate::vocab::diagnostics::{Code, Diagnostic};

/// The OS an image reference says it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageOs {
    /// `reason` is a short human phrase for messages, e.g. `tag ltsc2019`,
    /// `repository mcr.microsoft.com/windows/servercore`,
    /// `settings windowsImages[0] (registry.example.com/win/*)`.
    Windows {
        /// The build the reference names, if any.
        build: Option<WindowsBuild>,
        /// Why, for messages.
        reason: String,
    },
    /// A hint too weak to act on: a repository named after Windows under an owner not
    /// known to publish Windows images (`registry.example.com/team/windows`). Warn only.
    MaybeWindows {
        /// Why, for messages.
        reason: String,
    },
    /// A Linux image.
    Linux {
        /// Why, for messages.
        reason: String,
    },
    /// Multi-platform, unparseable, or nothing in the reference tells.
    Unknown,
}

/// A parsed image reference; every part borrows from the input, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageRef<'a> {
    /// First path segment when it contains '.' or ':' or is "localhost" (port kept).
    pub registry: Option<&'a str>,
    /// Path without registry, e.g. "windows/servercore". Docker Hub names are kept as
    /// written ("nginx" stays "nginx"); classification treats "library/" as implied.
    pub repository: &'a str,
    /// The tag, without the `:`.
    pub tag: Option<&'a str>,
    /// Everything after '@', e.g. "sha256:...".
    pub digest: Option<&'a str>,
}

impl<'a> ImageRef<'a> {
    /// Parses `registry/path:tag@digest`; None for anything that is not a reference
    /// (empty, placeholders like `${image_path}`, bad characters, empty parts).
    pub fn parse(s: &'a str) -> Option<Self> {
        let s = s.trim();
        let (name_tag, digest) = match s.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (s, None),
        };
        if digest.is_some_and(|d| !valid_digest(d)) {
            return None;
        }
        // The tag is after a ':' of the last segment; earlier ':' is a registry port.
        let last_start = name_tag.rfind('/').map_or(0, |i| i + 1);
        let last = name_tag.get(last_start..)?;
        let (path, tag) = match last.find(':') {
            Some(j) => (name_tag.get(..last_start + j)?, Some(last.get(j + 1..)?)),
            None => (name_tag, None),
        };
        if tag.is_some_and(|t| !valid_tag(t)) {
            return None;
        }
        let (registry, repository) = match path.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (Some(first), rest)
            }
            _ => (None, path),
        };
        if registry.is_some_and(|r| !valid_registry(r)) {
            return None;
        }
        if !repository.split('/').all(valid_component) {
            return None;
        }
        Some(Self {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// `registry/repository` as written, without tag or digest.
    pub fn name(&self) -> String {
        let mut name = String::new();
        self.push_name(&mut name);
        name
    }

    fn push_name(&self, out: &mut String) {
        if let Some(registry) = self.registry {
            out.push_str(registry);
            out.push('/');
        }
        out.push_str(self.repository);
    }

    fn is_docker_hub(&self) -> bool {
        self.registry.is_none_or(|r| {
            ["docker.io", "index.docker.io", "registry-1.docker.io"]
                .iter()
                .any(|hub| r.eq_ignore_ascii_case(hub))
        })
    }
}

fn valid_component(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn valid_tag(s: &str) -> bool {
    valid_component(s)
}

fn valid_digest(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b':' | b'+' | b'.' | b'_' | b'-' | b'=')
        })
}

fn valid_registry(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']')
        })
}

/// Tokens that say Windows on any image, in the tag or in a path segment
/// (`redis:3.0-nanoserver`, `.../images/nanoserver-ltsc2025:1.4`).
const STRONG_WINDOWS_TOKENS: &[&str] = &[
    "ltsc2016",
    "ltsc2019",
    "ltsc2022",
    "ltsc2025",
    "windowsservercore",
    "windowsserver",
    "servercore",
    "nanoserver",
    // HostProcess containers exist only on Windows.
    "hostprocess",
];

/// Words a Windows release follows, apart (`windows-2019`, `win-ltsc2022`,
/// `servercore-1809`) or joined (`win2022`, `servercore2019`). Longest first.
const WINDOWS_WORDS: &[&str] = &[
    "windowsservercore",
    "windowsserver",
    "servercore",
    "nanoserver",
    "windows",
    "win",
    "ltsc",
];

/// Tokens that may stand between a Windows word and its release:
/// `windows-server-2022`, `windows-amd64-1809`.
const RELEASE_FILLERS: &[&str] = &["server", "core", "ltsc", "amd64"];

/// Desktop editions after a Windows word (`windows-11`): no container base image is a
/// desktop edition, so such a name is a virtual machine image, not a Windows container.
const DESKTOP_EDITIONS: &[&str] = &["7", "8", "10", "11", "xp", "vista"];

/// Tokens of images that mention Windows without being Windows images: cross-compiler
/// target triples (`x86_64-pc-windows-gnu`, `aarch64-pc-windows-msvc`,
/// `x86_64-w64-mingw32`), Wine or a virtual machine in a Linux container, and
/// controllers that manage Windows nodes from Linux (gMSA webhook, OpenShift WMCO).
const NOT_WINDOWS_TOKENS: &[&str] = &[
    "msvc", "gnu", "gnullvm", "mingw", "mingw32", "mingw64", "w64", "llvm", "xwin", "cross",
    "wine", "qemu", "kvm", "vm", "vnc", "webhook", "operator",
];

/// Owners whose Windows-named images are Linux images: cross-compiler toolchains
/// (dockcross, cross-rs, rustembedded/cross) and Windows in a VM (dockur/windows).
const NOT_WINDOWS_OWNERS: &[&str] = &["dockcross", "cross-rs", "rustembedded", "dockur", "dockurr"];

/// Owners (any path segment but the last, so mirrors count) that publish only Windows
/// images: SIG Windows tools on Docker Hub, and `winamd64`, the Docker Hub namespace of
/// the official images' windows-amd64 builds (docker-library/official-images README).
const WINDOWS_ONLY_OWNERS: &[&str] = &["sigwindowstools", "winamd64"];

/// Owners whose Windows-named repositories are Windows images: calico/windows and
/// calico/node-windows (Calico), prometheus-community/windows-exporter,
/// rancher/mirrored-prometheus-windows-exporter (Rancher), kubernetes-sigs/sig-windows/*,
/// and Microsoft's Docker Hub namespace. mcr.microsoft.com counts as a whole.
const WINDOWS_PUBLISHERS: &[&str] = &[
    "calico",
    "prometheus-community",
    "rancher",
    "sig-windows",
    "microsoft",
];

/// Docker Hub namespaces of official images built for one Linux architecture
/// (docker-library/official-images README; Windows builds go to `winamd64`).
const LINUX_ARCH_NAMESPACES: &[&str] = &[
    "amd64", "arm32v5", "arm32v6", "arm32v7", "arm64v8", "i386", "mips64le", "ppc64le", "riscv64",
    "s390x",
];

/// Tag tokens naming a Linux distribution or flavour.
const LINUX_TOKENS: &[&str] = &[
    "linux",
    "bookworm",
    "bullseye",
    "buster",
    "stretch",
    "jessie",
    "trixie",
    "jammy",
    "focal",
    "noble",
    "bionic",
    "xenial",
    "resolute",
    "chiseled",
    "distroless",
];

/// Distribution tokens that may carry a version ("alpine3.19", "azurelinux3.0", "mariner2.0").
const LINUX_VERSIONED_TOKENS: &[&str] = &[
    "alpine",
    "ubuntu",
    "debian",
    "centos",
    "fedora",
    "azurelinux",
    "mariner",
];

/// Linux-only Docker Hub official images (also through mirrors keeping `library/`).
const LINUX_OFFICIAL_IMAGES: &[&str] = &[
    "alpine",
    "ubuntu",
    "debian",
    "centos",
    "fedora",
    "amazonlinux",
    "busybox",
    "rockylinux",
    "almalinux",
    "archlinux",
];

/// Retired Docker Hub names of Microsoft Windows images (`microsoft/<name>`).
const RETIRED_MICROSOFT_WINDOWS: &[&str] = &[
    "iis",
    "windowsservercore",
    "nanoserver",
    "dotnet-framework",
    "dotnet-framework-samples",
    "aspnet",
];

/// Base-image names under a `windows/` path (`windows/servercore/iis` included).
const WINDOWS_BASE_NAMES: &[&str] = &["servercore", "nanoserver", "server", "windows", "insider"];

/// mcr .NET repositories (`dotnet/<name>`) whose plain version tags are multi-platform.
const DOTNET_MULTI_PLATFORM: &[&str] = &[
    "sdk",
    "aspnet",
    "runtime",
    "monitor",
    "monitor/base",
    "aspire-dashboard",
];

/// The tokens of a tag or of one path segment: `3.0-nanoserver_1809` gives
/// `3.0`, `nanoserver`, `1809`. Borrowed, never copied.
fn tokens(run: &str) -> Tokens<'_> {
    Tokens { rest: run }
}

/// The non-empty pieces of a run between `-` and `_`, found byte by byte:
/// both are ASCII, so every cut is on a character boundary.
#[derive(Clone)]
struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while !self.rest.is_empty() {
            let bytes = self.rest.as_bytes();
            let end = bytes
                .iter()
                .position(|&b| b == b'-' || b == b'_')
                .unwrap_or(bytes.len());
            let token = self.rest.get(..end).unwrap_or_default();
            self.rest = self.rest.get(end + 1..).unwrap_or_default();
            if !token.is_empty() {
                return Some(token);
            }
        }
        None
    }
}

/// The build a release written after a Windows word names: a server year, a release
/// name or number, or a `10.0.N` version.
fn release_after_word(token: &str) -> Option<WindowsBuild> {
    WindowsBuild::from_server_year(token)
        .or_else(|| WindowsBuild::from_release(token))
        .or_else(|| WindowsBuild::parse_version(token))
}

/// The build of a Windows word joined to its release: `ltsc2022`, `win2022`,
/// `windows2019`, `servercore2019`, `nanoserver1809`.
fn joined_release(token: &str) -> Option<WindowsBuild> {
    WINDOWS_WORDS.iter().find_map(|word| {
        token
            .strip_prefix(word)
            .filter(|rest| !rest.is_empty())
            .and_then(release_after_word)
    })
}

/// A token that says Windows wherever it appears.
fn strong_token(token: &str) -> bool {
    STRONG_WINDOWS_TOKENS.contains(&token) || joined_release(token).is_some()
}

/// Fillers skipped between a Windows word and its release, at most.
const MAX_FILLERS: usize = 2;

/// For a Windows word followed by `rest`, the release it names, skipping fillers.
fn release_of_word<'t>(rest: impl Iterator<Item = &'t str>) -> Option<WindowsBuild> {
    rest.take(MAX_FILLERS + 1)
        .find(|t| !RELEASE_FILLERS.contains(t))
        .and_then(release_after_word)
}

/// Each token of a run with an iterator over the tokens after it (linear in the run).
fn with_rest(run: &str) -> impl Iterator<Item = (&str, impl Iterator<Item = &str> + Clone)> {
    let mut rest = tokens(run);
    std::iter::from_fn(move || rest.next().map(|token| (token, rest.clone())))
}

/// Builds a run of tokens names, in order. `bare` lets release numbers (`1809`) and
/// versions (`10.0.17763.4131`) count alone, as they do in known Windows repositories.
fn run_builds(run: &str, bare: bool) -> impl Iterator<Item = WindowsBuild> + '_ {
    with_rest(run).filter_map(move |(token, rest)| {
        if WINDOWS_WORDS.contains(&token) {
            return release_of_word(rest);
        }
        joined_release(token).or_else(|| {
            if bare {
                WindowsBuild::from_release(token).or_else(|| WindowsBuild::parse_version(token))
            } else {
                None
            }
        })
    })
}

/// The one build all `builds` agree on; None when there is none or they disagree
/// (no pin beats a wrong pin).
fn agreed(builds: impl Iterator<Item = WindowsBuild>) -> Option<WindowsBuild> {
    let mut found = None;
    for build in builds {
        match found {
            None => found = Some(build),
            Some(earlier) if earlier == build => {}
            Some(_) => return None,
        }
    }
    found
}

/// Whether a run says Windows through the word `windows` (`1.2-windows-amd64`,
/// `node-windows`) or a Windows word with its release (`win-2022`). `windows-11` does
/// not: desktop editions are virtual machine images.
fn windows_word_in(run: &str) -> bool {
    with_rest(run).any(|(token, mut rest)| match token {
        "windows" => !rest.next().is_some_and(|t| DESKTOP_EDITIONS.contains(&t)),
        "win" => release_of_word(rest).is_some(),
        _ => false,
    })
}

/// Longest image text quoted in a warning, so the warning stays under 256 characters.
const MAX_QUOTED_IMAGE: usize = 60;

/// The warning for an image that only may be a Windows image: the OS is left open.
pub fn maybe_windows_warning(path: &str, image: &str) -> Diagnostic {
    let image = image.trim();
    let quoted = match image.char_indices().nth(MAX_QUOTED_IMAGE) {
        Some((cut, _)) => format!("\"{}...\"", image.get(..cut).unwrap_or_default()),
        None => format!("{image:?}"),
    };
    Diagnostic::new(
        Code::AmbiguousImage,
        path,
        format!("{quoted} may be Windows: OS left unset"),
        "set windowsImages or an OS nodeSelector",
    )
}

/// Facts about a parsed reference: `written` for messages, `lower` (one lower-case copy
/// of the whole reference) for matching.
struct Facts<'w, 'l> {
    written: ImageRef<'w>,
    lower: ImageRef<'l>,
    /// The lower-case repository's path segments, split once: the rules
    /// below walk them many times.
    segments: Vec<&'l str>,
}

impl<'w, 'l> Facts<'w, 'l> {
    fn new(written: ImageRef<'w>, lower: ImageRef<'l>) -> Self {
        let segments = lower.repository.split('/').collect();
        Facts {
            written,
            lower,
            segments,
        }
    }

    fn segments(&self) -> impl Iterator<Item = &'l str> + Clone + '_ {
        self.segments.iter().copied()
    }

    fn last_segment(&self) -> &'l str {
        self.segments.last().copied().unwrap_or_default()
    }

    /// The segment before the last, if any.
    fn parent_segment(&self) -> Option<&'l str> {
        let count = self.segments.len();
        count
            .checked_sub(2)
            .and_then(|i| self.segments.get(i))
            .copied()
    }

    fn tag(&self) -> &'l str {
        self.lower.tag.unwrap_or_default()
    }

    fn tag_phrase(&self) -> String {
        let mut phrase = String::from("tag ");
        phrase.push_str(self.written.tag.unwrap_or_default());
        phrase
    }

    fn repo_phrase(&self) -> String {
        let mut phrase = String::from("repository ");
        self.written.push_name(&mut phrase);
        phrase
    }

    /// A path segment other than the last (an owner, or a mirror's prefix) is in `list`.
    fn owner_in(&self, list: &[&str]) -> bool {
        let owners = self
            .segments
            .split_last()
            .map_or(&[][..], |(_, owners)| owners);
        owners.iter().any(|s| list.contains(s))
    }

    /// `segments[i] == a` and `segments[i + 1]` satisfies `next`, for some i.
    fn has_pair(&self, a: &str, next: impl Fn(&str) -> bool) -> bool {
        self.segments()
            .zip(self.segments().skip(1))
            .any(|(x, y)| x == a && next(y))
    }

    /// Anything in the reference marks a tool about Windows rather than a Windows image.
    fn not_windows_context(&self) -> bool {
        self.owner_in(NOT_WINDOWS_OWNERS)
            || self
                .segments()
                .flat_map(tokens)
                .chain(tokens(self.tag()))
                .any(|t| NOT_WINDOWS_TOKENS.contains(&t))
    }

    /// The build the reference names: path segments by Windows words only, the tag also
    /// by bare release numbers when `bare_tag`. Disagreeing names give None.
    fn build(&self, bare_tag: bool) -> Option<WindowsBuild> {
        let path = self.segments().flat_map(|s| run_builds(s, false));
        agreed(path.chain(run_builds(self.tag(), bare_tag)))
    }

    /// Only what names a Windows release (`ltsc2022`, `windows-2019`), never a version:
    /// the build a `windowsImages` rule without `windowsBuild` reads.
    fn named_build(&self) -> Option<WindowsBuild> {
        self.build(false)
    }

    /// Repositories that hold only Windows images, where a bare release number is a build.
    fn is_known_windows_repository(&self) -> bool {
        let count = self.segments.len();
        let last = self.last_segment();
        self.has_pair("windows", |y| WINDOWS_BASE_NAMES.contains(&y))
            // mcr.microsoft.com/windows:1809 (the full "windows" image).
            || (count == 1 && last == "windows" && !self.lower.is_docker_hub())
            || self.has_pair("dotnet", |y| y == "framework")
            || (count >= 2
                && RETIRED_MICROSOFT_WINDOWS.contains(&last)
                && self.parent_segment() == Some("microsoft"))
    }

    fn tag_says_windows(&self, tool: bool) -> bool {
        tokens(self.tag()).any(strong_token) || (!tool && windows_word_in(self.tag()))
    }

    /// A path segment with a strong token or a Windows release, a Windows-only owner,
    /// a `*-windows` variant name, or a Windows-named repository of a known publisher.
    fn path_says_windows(&self, tool: bool) -> bool {
        if self.segments().flat_map(tokens).any(strong_token) {
            return true;
        }
        if tool {
            return false;
        }
        let variant = tokens(self.last_segment()).count() > 1
            && tokens(self.last_segment()).last() == Some("windows");
        let publisher = self.owner_in(WINDOWS_PUBLISHERS)
            || self
                .lower
                .registry
                .is_some_and(|r| r == "mcr.microsoft.com");
        self.owner_in(WINDOWS_ONLY_OWNERS)
            || variant
            || self
                .segments()
                .any(|s| run_builds(s, false).next().is_some())
            || (publisher && self.segments().any(windows_word_in))
    }

    fn windows(&self) -> Option<ImageOs> {
        let tool = self.not_windows_context();
        let (build, reason) = if self.is_known_windows_repository() {
            (self.build(true), self.repo_phrase())
        } else if self.tag_says_windows(tool) {
            (self.build(true), self.tag_phrase())
        } else if self.path_says_windows(tool) {
            (self.build(false), self.repo_phrase())
        } else {
            return None;
        };
        Some(ImageOs::Windows { build, reason })
    }

    /// A Windows-named path segment no rule above vouches for.
    fn maybe_windows(&self) -> Option<ImageOs> {
        (!self.not_windows_context() && self.segments().any(windows_word_in)).then(|| {
            ImageOs::MaybeWindows {
                reason: self.repo_phrase(),
            }
        })
    }

    fn has_linux_token(&self) -> bool {
        tokens(self.tag()).any(|t| {
            LINUX_TOKENS.contains(&t)
                || LINUX_VERSIONED_TOKENS.iter().any(|name| {
                    t.strip_prefix(name)
                        .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
                })
                // Red Hat UBI: ubi8, ubi9.
                || t.strip_prefix("ubi")
                    .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        })
    }

    fn is_linux_official_image(&self) -> bool {
        let last = self.last_segment();
        if !LINUX_OFFICIAL_IMAGES.contains(&last) {
            return false;
        }
        let parent = self.parent_segment();
        (self.lower.is_docker_hub() && self.segments.len() == 1)
            || parent == Some("library")
            || (last == "amazonlinux" && parent == Some("amazonlinux"))
    }

    /// Docker Hub `arm64v8/python`: an official image built for one Linux architecture.
    fn is_linux_arch_namespace(&self) -> bool {
        self.lower.is_docker_hub()
            && self.segments.len() == 2
            && self
                .segments
                .first()
                .is_some_and(|s| LINUX_ARCH_NAMESPACES.contains(s))
    }

    /// mcr .NET images whose tag means Linux. .NET 8 made the plain version tags Linux-only
    /// (dotnet/dotnet-docker#4492); earlier ones also list Windows.
    fn is_dotnet_linux(&self) -> bool {
        let Some(rest) = after_segment(self.lower.repository, "dotnet") else {
            return false;
        };
        let name = rest.strip_prefix("nightly/").unwrap_or(rest);
        if name == "runtime-deps" {
            return true; // no Windows variant exists
        }
        let major = tokens(self.tag())
            .next()
            .and_then(|t| t.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        DOTNET_MULTI_PLATFORM.contains(&name) && major.is_some_and(|m| m >= 8)
    }

    fn linux(&self) -> Option<ImageOs> {
        let reason = if self.has_linux_token() {
            self.tag_phrase()
        } else if self.is_linux_official_image() || self.is_linux_arch_namespace() {
            self.repo_phrase()
        } else if self.is_dotnet_linux() {
            match self.written.tag {
                Some(_) => format!("{}, {}", self.repo_phrase(), self.tag_phrase()),
                None => self.repo_phrase(),
            }
        } else {
            return None;
        };
        Some(ImageOs::Linux { reason })
    }

    fn classify(&self) -> ImageOs {
        self.windows()
            .or_else(|| self.linux())
            .or_else(|| self.maybe_windows())
            .unwrap_or(ImageOs::Unknown)
    }
}

/// What follows the path segment `name` in `repository` ("" when it is last).
fn after_segment<'r>(repository: &'r str, name: &str) -> Option<&'r str> {
    let mut start = 0;
    for segment in repository.split('/') {
        let end = start + segment.len();
        if segment == name {
            return Some(repository.get(end + 1..).unwrap_or_default());
        }
        start = end + 1;
    }
    None
}

/// The first settings rule matching `image`, as a Windows classification.
fn by_rules(image: &str, rules: &[ImageRule], facts: Option<&Facts<'_, '_>>) -> Option<ImageOs> {
    if rules.is_empty() {
        return None;
    }
    let trimmed = image.trim();
    // References are ASCII (distribution's grammar): ASCII lowering matches the
    // same images and keeps Unicode case tables (about 16 KB) out of the module.
    let lower = trimmed.to_ascii_lowercase();
    let (i, rule) = rules.iter().enumerate().find(|(_, rule)| {
        rule.pattern.matches(image) || rule.pattern.matches(trimmed) || rule.pattern.matches(&lower)
    })?;
    Some(ImageOs::Windows {
        build: rule
            .windows_build
            .or_else(|| facts.and_then(Facts::named_build)),
        reason: format!("settings windowsImages[{i}] ({})", rule.pattern.as_str()),
    })
}

/// Classifies `image`: settings rules first, then the built-in conventions.
pub fn classify(image: &str, rules: &[ImageRule]) -> ImageOs {
    let written = ImageRef::parse(image);
    // Most references are written in lower case: then the lower-case
    // reference is the written one, parsed once.
    let lowered = written
        .filter(|_| image.bytes().any(|b| b.is_ascii_uppercase()))
        .map(|_| image.trim().to_ascii_lowercase());
    let lower = match &lowered {
        Some(text) => ImageRef::parse(text),
        None => written,
    };
    let facts = written
        .zip(lower)
        .map(|(written, lower)| Facts::new(written, lower));
    if let Some(os) = by_rules(image, rules, facts.as_ref()) {
        return os;
    }
    facts.map_or(ImageOs::Unknown, |f| f.classify())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected classification, without the reason.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Want {
        Win(Option<u32>),
        MaybeWin,
        Linux,
        Unknown,
    }
    use Want::{Linux as L, MaybeWin as M, Unknown as U, Win as W};

    fn want_of(os: &ImageOs) -> Want {
        match os {
            ImageOs::Windows { build, .. } => W(build.map(WindowsBuild::number)),
            ImageOs::MaybeWindows { .. } => M,
            ImageOs::Linux { .. } => L,
            ImageOs::Unknown => U,
        }
    }

    fn check(cases: &[(&str, Want)], rules: &[ImageRule]) {
        let mut failures = Vec::new();
        for (image, want) in cases {
            let got = classify(image, rules);
            if want_of(&got) != *want {
                failures.push(format!("{image:?}: want {want:?}, got {got:?}"));
            }
        }
        assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    }

    #[test]
    fn parse_references() {
        type Parts<'a> = (Option<&'a str>, &'a str, Option<&'a str>, Option<&'a str>);
        let cases: &[(&str, Option<Parts>)] = &[
            ("nginx", Some((None, "nginx", None, None))),
            (
                "library/nginx:1.25",
                Some((None, "library/nginx", Some("1.25"), None)),
            ),
            (
                "docker.io/library/nginx",
                Some((Some("docker.io"), "library/nginx", None, None)),
            ),
            (
                "registry.example.com:5000/windows/servercore:ltsc2019",
                Some((
                    Some("registry.example.com:5000"),
                    "windows/servercore",
                    Some("ltsc2019"),
                    None,
                )),
            ),
            (
                "localhost/app@sha256:abcd",
                Some((Some("localhost"), "app", None, Some("sha256:abcd"))),
            ),
            (
                "localhost:5000/a/b:t@sha256:ab",
                Some((Some("localhost:5000"), "a/b", Some("t"), Some("sha256:ab"))),
            ),
            (
                "mcr.microsoft.com/windows/servercore/iis:windowsservercore ",
                Some((
                    Some("mcr.microsoft.com"),
                    "windows/servercore/iis",
                    Some("windowsservercore"),
                    None,
                )),
            ),
            ("host:5000", Some((None, "host", Some("5000"), None))),
            ("", None),
            ("   ", None),
            ("@", None),
            ("nginx@", None),
            ("nginx:", None),
            (":tag", None),
            ("::::", None),
            ("a:b:c", None),
            ("a@b@c", None),
            ("${image_path}", None),
            ("registry.example.com/", None),
            ("registry.example.com//app", None),
            ("/app", None),
            ("app/", None),
            ("ngi nx", None),
            ("naïve/image", None),
            ("reg:5000/", None),
        ];
        for (input, want) in cases {
            let got = ImageRef::parse(input).map(|r| (r.registry, r.repository, r.tag, r.digest));
            assert_eq!(got, *want, "{input:?}");
        }
        let r = ImageRef::parse("registry.example.com:5000/windows/servercore:ltsc2019").unwrap();
        assert_eq!(r.name(), "registry.example.com:5000/windows/servercore");
        assert_eq!(ImageRef::parse("nginx").unwrap().name(), "nginx");
    }

    #[test]
    fn domain_fact_tag_forms() {
        check(
            &[
                // Base images.
                ("mcr.microsoft.com/windows/servercore:ltsc2019", W(Some(17763))),
                ("mcr.microsoft.com/windows/servercore:1809", W(Some(17763))),
                ("mcr.microsoft.com/windows/servercore:20H2", W(Some(19042))),
                ("mcr.microsoft.com/windows/servercore:10.0.17763.4131", W(Some(17763))),
                ("mcr.microsoft.com/windows/servercore:10.0.20348", W(Some(20348))),
                ("mcr.microsoft.com/windows/servercore:1809-KB4493509", W(Some(17763))),
                ("mcr.microsoft.com/windows/nanoserver:ltsc2022", W(Some(20348))),
                ("mcr.microsoft.com/windows/nanoserver:1709", W(Some(16299))),
                ("mcr.microsoft.com/windows/server:ltsc2025", W(Some(26100))),
                ("mcr.microsoft.com/windows/windows:23H2", W(Some(25398))),
                ("mcr.microsoft.com/windows:1809", W(Some(17763))),
                ("mcr.microsoft.com/windows/servercore/insider:10.0.26100.1", W(Some(26100))),
                ("MCR.Microsoft.com/Windows/ServerCore:LTSC2019", W(Some(17763))),
                // .NET, .NET Framework, IIS.
                ("mcr.microsoft.com/dotnet/runtime:8.0-nanoserver-1809", W(Some(17763))),
                ("mcr.microsoft.com/dotnet/aspnet:6.0-nanoserver-2009", W(Some(19042))),
                ("mcr.microsoft.com/dotnet/framework/runtime:4.8-windowsservercore-ltsc2019", W(Some(17763))),
                ("mcr.microsoft.com/dotnet/sdk:8.0-windowsservercore-ltsc2019", W(Some(17763))),
                ("mcr.microsoft.com/dotnet/aspnet:8.0-nanoserver-ltsc2022", W(Some(20348))),
                ("mcr.microsoft.com/dotnet/framework/aspnet:4.8-windowsservercore-ltsc2019", W(Some(17763))),
                ("mcr.microsoft.com/dotnet/framework/sdk:4.8.1-windowsservercore-ltsc2025", W(Some(26100))),
                ("mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022", W(Some(20348))),
                ("mcr.microsoft.com/dotnet/framework/runtime:4.8", W(None)),
                ("mcr.microsoft.com/dotnet/framework/wcf", W(None)),
                ("mcr.microsoft.com/dotnet/framework/samples:aspnetapp", W(None)),
                // Tags that give no build.
                ("mcr.microsoft.com/windows/servercore@sha256:3b3d2c1e0f", W(None)),
                ("mcr.microsoft.com/windows/nanoserver:latest", W(None)),
                ("mcr.microsoft.com/windows/servercore", W(None)),
                ("mcr.microsoft.com/windows/servercore/iis:windowsservercore", W(None)),
                // Conflicting builds: no pin.
                ("mcr.microsoft.com/windows/servercore:ltsc2019-ltsc2022", W(None)),
                // .NET multi-platform tags.
                ("mcr.microsoft.com/dotnet/aspnet:8.0", L),
                ("mcr.microsoft.com/dotnet/sdk:9.0.100", L),
                ("mcr.microsoft.com/dotnet/runtime-deps:6.0", L),
                ("mcr.microsoft.com/dotnet/nightly/aspnet:10.0", L),
                ("mcr.microsoft.com/dotnet/aspnet:8.0-alpine", L),
                ("mcr.microsoft.com/dotnet/aspnet:6.0", U), // still lists Windows
                ("mcr.microsoft.com/dotnet/aspnet", U),
                ("mcr.microsoft.com/dotnet/samples:aspnetapp", U),
                ("mcr.microsoft.com/dotnet/samples:aspnetapp-chiseled", L),
                ("registry.example.com/dotnet/myservice:9.0", U),
                // Release numbers are hints only in Windows repositories.
                ("myapp:1809", U),
                ("registry.example.com/team/myapp:2004", U),
                ("myapp:10.0.17763", U),
                ("myapp:20H2", U),
                ("myapp:ltsc2022", W(Some(20348))),
                ("myapp:1.2-nanoserver-1809", W(Some(17763))),
                // Private mirrors and ports.
                ("registry.example.com/mirror/windows/servercore:ltsc2019", W(Some(17763))),
                ("registry.example.com:5000/windows/servercore:ltsc2019", W(Some(17763))),
                ("localhost:5000/mirror/windows/nanoserver:1809", W(Some(17763))),
                ("registry.example.com:5000/mirror/dotnet/framework/aspnet:4.8", W(None)),
                // Retired Docker Hub names, tagged and untagged.
                ("microsoft/iis", W(None)),
                ("microsoft/iis:windowsservercore-1709", W(Some(16299))),
                ("microsoft/iis:nanoserver", W(None)),
                ("microsoft/windowsservercore", W(None)),
                ("microsoft/windowsservercore:latest", W(None)),
                ("microsoft/windowsservercore:1709", W(Some(16299))),
                ("microsoft/windowsservercore:10.0.14393.1884", W(Some(14393))),
                ("microsoft/nanoserver", W(None)),
                ("microsoft/nanoserver:1803", W(Some(17134))),
                ("microsoft/dotnet-framework", W(None)),
                ("microsoft/dotnet-framework:4.7.2-sdk-windowsservercore-1803", W(Some(17134))),
                ("microsoft/aspnet", W(None)),
                ("microsoft/aspnet:4.7.2-windowsservercore-1709", W(Some(16299))),
                ("microsoft/dotnet-framework-samples", W(None)),
                ("microsoft/dotnet-framework-samples:aspnetapp", W(None)),
                ("docker.io/microsoft/iis:latest", W(None)),
                ("microsoft/dotnet:2.1-sdk", U),
                // Community Windows images.
                ("sigwindowstools/kube-proxy:VERSION-nanoserver", W(None)),
                ("sigwindowstools/flannel:FLANNEL_VERSION-hostprocess", W(None)),
                ("sigwindowstools/kube-proxy:v1.22.4-flannel-hostprocess", W(None)),
                ("sigwindowstools/k8s-gmsa-webhook:v0.3.0", U),
                ("calico/windows:v3.27.0", W(None)),
                ("calico/node-windows:v3.27.0", W(None)),
                ("dockcross/windows-static-x64:latest", U), // a Linux cross-compiler
                ("mcr.microsoft.com/mssql/server:2022-latest", U),
                ("gcr.io/k8s-staging-sig-storage/smbplugin:canary-windows-hp", W(None)),
                ("mcr.microsoft.com/oss/kubernetes/pause:3.9-windows-ltsc2022-amd64", W(Some(20348))),
                ("redis:3.0-nanoserver", W(None)),
                ("ghcr.io/prometheus-community/windows-exporter:latest", W(None)),
                ("mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0", W(None)),
                ("mcr.microsoft.com/powershell:lts-nanoserver-1809", W(Some(17763))),
                ("mcr.microsoft.com/powershell:lts-windowsserver-ltsc2022", W(Some(20348))),
                ("golang:1.22-windowsservercore-ltsc2022", W(Some(20348))),
                ("myapp:v1-linux-windows", W(None)), // a Windows token beats a Linux one
                // Multi-arch images say nothing.
                ("registry.k8s.io/pause:3.9", U),
                ("registry.k8s.io/pause:3.4.1", U),
                ("registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0", U),
                ("registry.k8s.io/sig-storage/livenessprobe:v2.19.0", U),
                ("mcr.microsoft.com/powershell:lts", U),
                ("mcr.microsoft.com/powershell", U),
                ("mcr.microsoft.com/azuredocs/azure-vote-front:v1", U),
                ("nginx", U),
                ("nginx:1.25", U),
                // Linux hints.
                ("redis:7-alpine", L),
                ("python:3.12-alpine3.19", L),
                ("python:3.12-slim-bookworm", L),
                ("ubuntu", L),
                ("ubuntu:22.04", L),
                ("library/alpine:3.19", L),
                ("docker.io/library/busybox:1.36", L),
                ("public.ecr.aws/docker/library/debian:12", L),
                ("public.ecr.aws/amazonlinux/amazonlinux:2023", L),
                ("registry.k8s.io/e2e-test-images/busybox:1.29-4", U), // multi-OS
                ("mcr.microsoft.com/cbl-mariner/base/core:2.0", U),
                ("myapp:1.0-cbl-mariner2.0", L),
                ("myapp:1.0-azurelinux3.0-distroless", L),
                ("registry.access.redhat.com/app:1-ubi9", L),
                ("myapp:v1-linux-amd64", L),
                // Not references.
                ("${image_path}", U),
                ("", U),
                ("::::", U),
                ("@", U),
                ("windows/servercore:ltsc2019:x", U),
            ],
            &[],
        );
    }

    #[test]
    fn reasons() {
        let reason = |image: &str, rules: &[ImageRule]| match classify(image, rules) {
            ImageOs::Windows { reason, .. }
            | ImageOs::MaybeWindows { reason }
            | ImageOs::Linux { reason } => reason,
            ImageOs::Unknown => String::from("unknown"),
        };
        assert_eq!(
            reason("mcr.microsoft.com/windows/servercore:ltsc2019", &[]),
            "repository mcr.microsoft.com/windows/servercore"
        );
        assert_eq!(reason("redis:3.0-nanoserver", &[]), "tag 3.0-nanoserver");
        assert_eq!(
            reason("calico/windows:v3.27.0", &[]),
            "repository calico/windows"
        );
        assert_eq!(reason("redis:7-alpine", &[]), "tag 7-alpine");
        assert_eq!(reason("busybox", &[]), "repository busybox");
        assert_eq!(
            reason("mcr.microsoft.com/dotnet/aspnet:8.0", &[]),
            "repository mcr.microsoft.com/dotnet/aspnet, tag 8.0"
        );
        let rules = [ImageRule::new("registry.example.com/win/*", None).unwrap()];
        assert_eq!(
            reason("registry.example.com/win/app:1", &rules),
            "settings windowsImages[0] (registry.example.com/win/*)"
        );
    }

    #[test]
    fn user_rules() {
        let rules = [
            ImageRule::new("registry.example.com/win/*", None).unwrap(),
            ImageRule::new(
                "registry.example.com/pinned/*",
                Some(WindowsBuild::LTSC2022),
            )
            .unwrap(),
            ImageRule::new("*/legacy-app:*", Some(WindowsBuild::LTSC2019)).unwrap(),
            ImageRule::new("${image_path}", Some(WindowsBuild::LTSC2022)).unwrap(),
        ];
        check(
            &[
                // Positive: no build in the rule: only a release name in the tag gives
                // one; a private image's version number never does (README, windowsImages).
                ("registry.example.com/win/app:1.0", W(None)),
                ("registry.example.com/win/app:1809", W(None)),
                ("registry.example.com/win/app:10.0.1", W(None)),
                ("registry.example.com/win/app:2.0-ltsc2022", W(Some(20348))),
                (
                    "registry.example.com/win/app:2.0-windows-2019",
                    W(Some(17763)),
                ),
                ("REGISTRY.example.com/win/app:1809", W(None)),
                // The rule's build overrides the tag.
                ("registry.example.com/pinned/app:ltsc2019", W(Some(20348))),
                ("registry.example.com/pinned/app", W(Some(20348))),
                ("quay.io/team/legacy-app:v3", W(Some(17763))),
                // Rules see the string as written, even when it is no reference.
                ("${image_path}", W(Some(20348))),
                // Negative: built-in rules still apply.
                ("registry.example.com/linux/app:1809", U),
                ("registry.example.com/linux/app:1-alpine", L),
                ("quay.io/team/legacy-app", U),
                ("mcr.microsoft.com/windows/nanoserver:1809", W(Some(17763))),
            ],
            &rules,
        );
        // A rule claims images the built-ins call Linux: settings come first.
        let all = [ImageRule::new("*", None).unwrap()];
        check(&[("redis:7-alpine", W(None)), ("nginx", W(None))], &all);
    }

    /// Every `image:` of the corpus with the OS SOURCES.md documents for its file.
    const CORPUS: &[(u32, &str, Want)] = &[
        (1, "microsoft/iis:windowsservercore-1709", W(Some(16299))),
        (
            2,
            "mcr.microsoft.com/windows/servercore:ltsc2019",
            W(Some(17763)),
        ),
        (3, "microsoft/windowsservercore:latest", W(None)),
        (4, "microsoft/iis", W(None)),
        (5, "redis:3.0-nanoserver", W(None)),
        (
            6,
            "mcr.microsoft.com/windows/servercore:ltsc2019",
            W(Some(17763)),
        ),
        (7, "sigwindowstools/kube-proxy:VERSION-nanoserver", W(None)),
        (8, "registry.k8s.io/pause:3.4.1", U),
        (8, "mcr.microsoft.com/windows/servercore/iis", W(None)),
        // SIG Windows publishes Windows images under sig-windows/ (a HostProcess image).
        (
            9,
            "ghcr.io/kubernetes-sigs/sig-windows/csi-proxy:v1.1.2",
            W(None),
        ),
        (
            10,
            "sigwindowstools/flannel:FLANNEL_VERSION-hostprocess",
            W(None),
        ),
        (
            11,
            "mcr.microsoft.com/powershell:lts-nanoserver-1809",
            W(Some(17763)),
        ),
        (
            11,
            "ghcr.io/prometheus-community/windows-exporter:latest",
            W(None),
        ),
        (12, "calico/windows:v3.27.0", W(None)),
        (13, "mcr.microsoft.com/windows/nanoserver:VERSION", W(None)),
        (
            14,
            "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.64.0",
            U,
        ),
        (
            14,
            "public.ecr.aws/csi-components/csi-node-driver-registrar:v2.17.0-eksbuild.5",
            U,
        ),
        (
            14,
            "public.ecr.aws/csi-components/livenessprobe:v2.19.0-eksbuild.5",
            U,
        ),
        (
            15,
            "gcr.io/k8s-staging-sig-storage/smbplugin:canary-windows-hp",
            W(None),
        ),
        (
            15,
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
            U,
        ),
        (
            16,
            "mcr.microsoft.com/dotnet/framework/samples:aspnetapp",
            W(None),
        ),
        (
            17,
            "mcr.microsoft.com/windows/nanoserver:ltsc2022",
            W(Some(20348)),
        ),
        (
            18,
            "mcr.microsoft.com/windows/nanoserver:ltsc2019",
            W(Some(17763)),
        ),
        (
            19,
            "mcr.microsoft.com/windows/servercore/iis:windowsservercore",
            W(None),
        ),
        (
            20,
            "mcr.microsoft.com/windows/servercore:ltsc2022",
            W(Some(20348)),
        ),
        (
            21,
            "mcr.microsoft.com/dotnet/framework/samples:aspnetapp",
            W(None),
        ),
        (
            22,
            "mcr.microsoft.com/windows/servercore:1809",
            W(Some(17763)),
        ),
        (23, "microsoft/windowsservercore", W(None)),
        (
            24,
            "mcr.microsoft.com/oss/kubernetes/pause:3.9-windows-ltsc2022-amd64",
            W(Some(20348)),
        ),
        (
            25,
            "mcr.microsoft.com/windows/servercore:1809",
            W(Some(17763)),
        ),
        (26, "${image_path}", U),
        (
            27,
            "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3",
            U,
        ),
        (27, "ghcr.io/flannel-io/flannel:v0.28.9", U),
        (28, "quay.io/calico/cni:v3.32.1", U),
        (28, "quay.io/calico/node:v3.32.1", U),
        (29, "quay.io/calico/kube-controllers:v3.32.1", U),
        (
            30,
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni-init:v1.23.1",
            U,
        ),
        (
            30,
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.1",
            U,
        ),
        (
            30,
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent:v1.4.2",
            U,
        ),
        (31, "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4", U),
        (32, "quay.io/prometheus/node-exporter:v1.12.1", U),
        (32, "quay.io/brancz/kube-rbac-proxy:v0.22.1", U),
        (
            33,
            "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.64.0",
            U,
        ),
        (
            33,
            "public.ecr.aws/csi-components/csi-node-driver-registrar:v2.17.0-eksbuild.5",
            U,
        ),
        (
            33,
            "public.ecr.aws/csi-components/livenessprobe:v2.19.0-eksbuild.5",
            U,
        ),
        (34, "registry.k8s.io/sig-storage/livenessprobe:v2.19.0", U),
        (
            34,
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
            U,
        ),
        (34, "gcr.io/k8s-staging-sig-storage/smbplugin:canary", U),
        (
            35,
            "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.16.0",
            U,
        ),
        (35, "registry.k8s.io/csi-secrets-store/driver:v1.6.0", U),
        (35, "registry.k8s.io/sig-storage/livenessprobe:v2.18.0", U),
        (36, "fluent/fluent-bit:1.5", U),
        (37, "k8s.gcr.io/metrics-server:v0.3.7", U),
        (38, "docker.io/cloudnativelabs/kube-router", U),
        (39, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", U),
        (
            40,
            "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.19",
            U,
        ),
        (
            41,
            "gcrio.azureedge.net/google_containers/kubedns-amd64:1.7",
            U,
        ),
        (
            41,
            "gcrio.azureedge.net/google_containers/kube-dnsmasq-amd64:1.3",
            U,
        ),
        (41, "gcr.io/google_containers/exechealthz-amd64:v1.2.0", U),
        (42, "quay.io/calico/flannel-migration-controller:v3.32.1", U),
        (43, "gcr.io/google-samples/gb-frontend:v5", U),
        (44, "registry.k8s.io/redis:e2e", U),
        (45, "gcr.io/google-samples/cassandra:v14", U),
        (46, "perl", U),
        (47, "busybox", L),
        (48, "nginx", U),
        (49, "nginx", U),
        (50, "registry.k8s.io/nginx-slim:0.7", U),
        (51, "mcr.microsoft.com/azuredocs/azure-vote-front:v1", U),
        (52, "mcr.microsoft.com/dotnet/samples:aspnetapp-chiseled", L),
        (53, "public.ecr.aws/docker/library/redis:8.10.1-alpine", L),
        (53, "quay.io/argoproj/argocd:latest", U),
        (54, "quay.io/argoproj/argocd:latest", U),
    ];

    #[test]
    fn corpus_images() {
        let cases: Vec<(&str, Want)> = CORPUS.iter().map(|&(_, i, w)| (i, w)).collect();
        check(&cases, &[]);
        // Files 01-26 are Windows workloads, 27-54 Linux ones.
        for &(file, image, _) in CORPUS {
            let got = want_of(&classify(image, &[]));
            if file <= 26 {
                assert_ne!(
                    got, L,
                    "{file:02} {image}: a Windows workload's image called Linux"
                );
            } else {
                assert!(
                    !matches!(got, W(_)),
                    "{file:02} {image}: a Linux workload's image called Windows"
                );
            }
        }
    }

    /// Every `image` value in ../shared/corpus (when present) is in CORPUS under its file.
    #[test]
    fn corpus_table_covers_corpus_files() {
        fn collect(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        match (k.as_str(), v.as_str()) {
                            ("image", Some(image)) => out.push(image.to_owned()),
                            _ => collect(v, out),
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
                _ => {}
            }
        }
        let dir = std::env::var_os("OS_PLACEMENT_CORPUS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
            });
        let Ok(entries) = std::fs::read_dir(&dir) else {
            // The corpus lives beside the repository: required under CI.
            assert!(
                std::env::var_os("CI").is_none(),
                "corpus not found at {}",
                dir.display()
            );
            // Straight to stderr: the test harness captures `eprintln!` of passing tests.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: corpus not found at {}",
                dir.display()
            );
            return;
        };
        let mut seen = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".yaml") {
                continue;
            }
            let file: u32 = name.get(..2).unwrap().parse().unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let mut images = Vec::new();
            for doc in os_placement_door::read_stream(&text) {
                collect(&doc.unwrap().root.to_json(), &mut images);
            }
            assert!(!images.is_empty(), "{name}: no image found");
            for image in images {
                assert!(
                    CORPUS.iter().any(|&(f, i, _)| f == file && i == image),
                    "{name}: {image:?} missing from CORPUS"
                );
                seen += 1;
            }
        }
        assert!(seen >= 54, "only {seen} images read from {}", dir.display());
    }

    #[test]
    fn odd_inputs_never_panic() {
        let pieces = [
            "",
            "/",
            ":",
            "@",
            ".",
            "-",
            "_",
            "a",
            "Z",
            "0",
            "9",
            " ",
            "\t",
            "\n",
            "é",
            "ǅ",
            "日",
            "\u{0}",
            "\u{202e}",
            "$",
            "{",
            "}",
            "[",
            "]",
            "windows",
            "ltsc2019",
            "1809",
            "10.0.",
            "sha256:",
            "localhost",
            "docker.io",
            "library",
            "dotnet",
            "nightly",
            "microsoft",
            "-ltsc",
        ];
        let rules = [
            ImageRule::new("*a*?[!b]*", None).unwrap(),
            ImageRule::new("[é-ǅ]*", None).unwrap(),
        ];
        // Reaching the end is the assertion: a count of the calls made could not fail.
        for a in pieces {
            for b in pieces {
                for c in ["", ":", "/", "@"] {
                    let s = format!("{a}{c}{b}");
                    let _ = classify(&s, &[]);
                    let _ = classify(&s, &rules);
                }
            }
        }
        // Pseudo-random byte strings (fixed LCG, valid UTF-8 via lossy conversion).
        let mut x: u32 = 12345;
        for len in 0..300usize {
            let bytes: Vec<u8> = (0..len % 40)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            let s = String::from_utf8_lossy(&bytes);
            let _ = classify(&s, &rules);
        }
        let huge = format!("{}:{}", "a/".repeat(10_000), "ltsc2019-".repeat(10_000));
        assert!(matches!(classify(&huge, &[]), ImageOs::Unknown));
    }
}
