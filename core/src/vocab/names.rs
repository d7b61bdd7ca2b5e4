//! Kubernetes name syntax (label keys, label values, DNS subdomains),
//! as apimachinery validates them.

/// `[prefix/]name`: prefix a DNS subdomain, name up to 63 alphanumerics, `-`, `_`, `.`.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty() && is_label_value(s)
}

/// Up to 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside; may be empty.
pub fn is_label_value(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() > 63 {
        return false;
    }
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// Lower-case RFC 1123 subdomain, up to 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let bytes = part.as_bytes();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    is_lower_alnum(*first)
                        && is_lower_alnum(*last)
                        && bytes.iter().all(|b| is_lower_alnum(*b) || *b == b'-')
                }
                _ => false,
            }
        })
}

/// Lower-case RFC 1123 label (a namespace name): up to 63 characters, no dots.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && !s.contains('.') && is_dns_subdomain(s)
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        for ok in ["os", "kubernetes.io/os", "node.kubernetes.io/os", "a_b.c-d"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "/os", "Kubernetes.IO/os", "os/", "-os", "a/b/c", "os!"] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn label_values() {
        assert!(is_label_value(""));
        assert!(is_label_value("windows"));
        assert!(is_label_value("10.0.20348"));
        assert!(!is_label_value("-windows"));
        assert!(!is_label_value(&"a".repeat(64)));
    }

    #[test]
    fn dns_subdomains() {
        assert!(is_dns_subdomain("windows-2022"));
        assert!(is_dns_subdomain("runc.example"));
        assert!(!is_dns_subdomain("Windows-2022"));
        assert!(!is_dns_subdomain("windows_2022"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_subdomain(""));
    }

    #[test]
    fn dns_labels() {
        assert!(is_dns_label("os-placement"));
        assert!(is_dns_label("kube-system"));
        assert!(!is_dns_label("os.placement"));
        assert!(!is_dns_label("OS-placement"));
        assert!(!is_dns_label(&"a".repeat(64)));
        assert!(!is_dns_label(""));
    }
}
