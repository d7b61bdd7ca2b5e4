//! Keys of the published facts. An image reference or a node name is found
//! by the first 72 bits of the SHA-256 of its text as written, in base64url:
//! twelve characters, none of which JSON escapes. A further byte of the same
//! digest names its shard. The hash is cryptographic so that no one can pick
//! a reference whose key is another's and so borrow its facts.

use std::fmt;

use sha2::{Digest, Sha256};

/// How many shards the image facts and node names are spread over. Each is
/// one label value, so one reflector in policy-server: fixed, and small
/// enough that a shard of 50,000 images stays a few kilobytes.
pub const SHARDS: u16 = 128;

/// Characters of a key.
pub const KEY_CHARS: usize = 12;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A key: 72 bits in base64url.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key([u8; KEY_CHARS]);

impl Key {
    /// The key and shard of `text`.
    pub fn of(text: &str) -> (Key, u16) {
        let digest = Sha256::digest(text.as_bytes());
        let mut key = [0u8; KEY_CHARS];
        for (group, chunk) in digest.chunks(3).take(KEY_CHARS / 4).enumerate() {
            let bits = chunk
                .iter()
                .fold(0u32, |bits, byte| (bits << 8) | u32::from(*byte));
            for (i, slot) in key.iter_mut().skip(group * 4).take(4).enumerate() {
                let six = (bits >> (18 - 6 * i)) & 0x3f;
                *slot = ALPHABET.get(six as usize).copied().unwrap_or(b'A');
            }
        }
        let shard = digest.get(9).map_or(0, |b| u16::from(*b) % SHARDS);
        (Key(key), shard)
    }

    /// The key as written in a shard.
    pub fn as_str(&self) -> &str {
        // Always ASCII: every byte comes from the alphabet.
        std::str::from_utf8(&self.0).unwrap_or("")
    }

    /// A key read back from text: twelve characters of the alphabet.
    pub fn parse(text: &str) -> Option<Key> {
        let bytes: [u8; KEY_CHARS] = text.as_bytes().try_into().ok()?;
        bytes
            .iter()
            .all(|b| ALPHABET.contains(b))
            .then_some(Key(bytes))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The shard of `text`.
pub fn shard_of(text: &str) -> u16 {
    Key::of(text).1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_digest_prefix_in_base64url() {
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 ... (FIPS 180-2,
        // appendix B.1); its first nine bytes in base64url (RFC 4648 §5).
        let (key, shard) = Key::of("abc");
        assert_eq!(key.as_str(), "ungWv48Bz-pB");
        assert_eq!(shard, 0x41 % SHARDS);
        assert_eq!(Key::parse(key.as_str()), Some(key));
        // Negative: another text, another key; what is not a key is refused.
        assert_ne!(Key::of("abd").0, key);
        assert_eq!(Key::parse("ungWv48Bz-p"), None);
        assert_eq!(Key::parse("ungWv48Bz-p\""), None);
    }

    #[test]
    fn shards_spread_references_evenly() {
        let mut counts = vec![0u32; usize::from(SHARDS)];
        for i in 0..12_800 {
            let shard = shard_of(&format!("registry.example/team-{i}/app:1.{i}"));
            if let Some(count) = counts.get_mut(usize::from(shard)) {
                *count += 1;
            }
        }
        // 100 a shard on average; a fair hash keeps every shard within ±50 %.
        assert!(counts.iter().all(|c| (50..=150).contains(c)), "{counts:?}");
    }
}
