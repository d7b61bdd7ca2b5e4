//! The one layer of each platform: a tar of the static binary and the CA
//! bundle with their parent directories, nothing else (no shell, no package
//! database), gzip-compressed. Entries are sorted, owned by root, and carry
//! one fixed time, so the same inputs give the same bytes.

use std::io::Write as _;

use super::{Blob, Platform, LAYER_MEDIA_TYPE};
use crate::error::{Error, Result};

/// The binary, at the root of the file system.
pub const BINARY_PATH: &str = "os-placement";
/// Where rustls' native roots (openssl-probe's list) find a CA bundle first.
pub const CA_BUNDLE_PATH: &str = "etc/ssl/certs/ca-certificates.crt";
/// The directories above [`CA_BUNDLE_PATH`], parents first.
const CA_DIRECTORIES: [&str; 3] = ["etc/", "etc/ssl/", "etc/ssl/certs/"];

/// A layer: the tar (its digest is the config's `diff_id`) and its gzip blob.
#[derive(Debug, Clone)]
pub struct Layer {
    /// The uncompressed tar.
    pub tar: Vec<u8>,
    /// The gzip of the tar, as pushed.
    pub gzip: Blob,
}

fn layer_error(message: impl std::fmt::Display) -> Error {
    Error::Document {
        what: "the image layer".to_owned(),
        message: message.to_string(),
    }
}

/// Appends one entry owned by root with `mode` and time `epoch`.
fn append(
    tar: &mut tar::Builder<Vec<u8>>,
    path: &str,
    mode: u32,
    contents: Option<&[u8]>,
    epoch: u64,
) -> Result<()> {
    let mut header = tar::Header::new_ustar();
    let kind = match contents {
        Some(_) => tar::EntryType::Regular,
        None => tar::EntryType::Directory,
    };
    header.set_entry_type(kind);
    header.set_path(path).map_err(layer_error)?;
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(epoch);
    let data = contents.unwrap_or_default();
    header.set_size(data.len() as u64);
    header.set_cksum();
    tar.append(&header, data).map_err(layer_error)
}

/// The layer for `binary` (mode 0755) and the CA bundle (0644) if any;
/// directories 0755. Entries in path order.
pub fn layer(binary: &[u8], ca_bundle: Option<&[u8]>, epoch: i64) -> Result<Layer> {
    let epoch = u64::try_from(epoch).map_err(layer_error)?;
    let mut tar = tar::Builder::new(Vec::new());
    if let Some(bundle) = ca_bundle {
        for directory in CA_DIRECTORIES {
            append(&mut tar, directory, 0o755, None, epoch)?;
        }
        append(&mut tar, CA_BUNDLE_PATH, 0o644, Some(bundle), epoch)?;
    }
    append(&mut tar, BINARY_PATH, 0o755, Some(binary), epoch)?;
    let tar = tar.into_inner().map_err(layer_error)?;
    // No name and time 0 in the gzip header: only the tar decides the bytes.
    let mut gzip = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    gzip.write_all(&tar).map_err(layer_error)?;
    let gzip = gzip.finish().map_err(layer_error)?;
    Ok(Layer {
        tar,
        gzip: Blob {
            media_type: LAYER_MEDIA_TYPE,
            bytes: gzip,
        },
    })
}

/// Little-endian integer of `N` bytes at `at`, if the file is that long.
fn le<const N: usize>(bytes: &[u8], at: usize) -> Option<u64> {
    let field: [u8; N] = bytes.get(at..at.checked_add(N)?)?.try_into().ok()?;
    Some(field.iter().rev().fold(0, |n, b| (n << 8) | u64::from(*b)))
}

/// What an ELF file is: its machine and whether it asks for a dynamic loader.
fn elf_facts(binary: &[u8]) -> Option<(u16, bool)> {
    // 64-bit little-endian ELF only: both platforms are.
    if binary.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let machine = u16::try_from(le::<2>(binary, 18)?).ok()?;
    let table = usize::try_from(le::<8>(binary, 32)?).ok()?;
    let size = usize::try_from(le::<2>(binary, 54)?).ok()?;
    let count = usize::try_from(le::<2>(binary, 56)?).ok()?;
    const PT_INTERP: u64 = 3;
    let mut interpreter = false;
    for i in 0..count {
        let at = table.checked_add(i.checked_mul(size)?)?;
        interpreter |= le::<4>(binary, at)? == PT_INTERP;
    }
    Some((machine, interpreter))
}

/// Refuses a binary that is not a static ELF executable of `platform`: an
/// image without a dynamic loader cannot run anything else.
pub fn check_binary(platform: &Platform, binary: &[u8]) -> Result<()> {
    let problem = match elf_facts(binary) {
        None => "not a 64-bit little-endian ELF file".to_owned(),
        Some((machine, _)) if machine != platform.elf_machine() => {
            format!("ELF machine {machine}, not {}", platform.elf_machine())
        }
        Some((_, true)) => "dynamically linked (it names an interpreter)".to_owned(),
        Some(_) => return Ok(()),
    };
    Err(Error::Usage(format!(
        "the binary for {platform} is {problem}: build it static for that target (make image)"
    )))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Read as _;

    /// A minimal ELF file: the header and one program header, `PT_INTERP` or `PT_LOAD`.
    pub(crate) fn elf(machine: u16, dynamic: bool) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
        bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
        bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
        let kind: u32 = if dynamic { 3 } else { 1 };
        bytes[64..68].copy_from_slice(&kind.to_le_bytes());
        bytes
    }

    #[test]
    fn static_binaries_of_the_platform_only() {
        let amd64 = Platform::parse("linux/amd64").unwrap();
        let arm64 = Platform::parse("linux/arm64").unwrap();
        assert!(check_binary(&amd64, &elf(62, false)).is_ok());
        assert!(check_binary(&arm64, &elf(183, false)).is_ok());
        let refused = |platform: &Platform, binary: &[u8]| {
            check_binary(platform, binary).unwrap_err().to_string()
        };
        assert!(refused(&arm64, &elf(62, false)).contains("ELF machine 62, not 183"));
        assert!(refused(&amd64, &elf(62, true)).contains("dynamically linked"));
        assert!(refused(&amd64, b"#!/bin/sh\n").contains("not a 64-bit"));
        // A program header table past the end of the file.
        let mut truncated = elf(62, false);
        truncated.truncate(66);
        assert!(refused(&amd64, &truncated).contains("not a 64-bit"));
    }

    /// Path, mode, uid, gid, time and size of each entry.
    fn entries(layer: &Layer) -> Vec<(String, u32, u64, u64, u64, u64)> {
        let mut gunzipped = Vec::new();
        flate2::read::GzDecoder::new(layer.gzip.bytes.as_slice())
            .read_to_end(&mut gunzipped)
            .unwrap();
        assert_eq!(gunzipped, layer.tar);
        let mut archive = tar::Archive::new(layer.tar.as_slice());
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let h = e.unwrap().header().clone();
                let path = h.path().unwrap().display().to_string();
                assert_eq!(h.entry_type().is_dir(), path.ends_with('/'), "{path}");
                (
                    path,
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.gid().unwrap(),
                    h.mtime().unwrap(),
                    h.size().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn layer_holds_the_binary_and_the_bundle_only() {
        let layer = layer(b"binary", Some(b"certs"), 1_700_000_000).unwrap();
        let t = 1_700_000_000;
        assert_eq!(
            entries(&layer),
            [
                ("etc/".to_owned(), 0o755, 0, 0, t, 0),
                ("etc/ssl/".to_owned(), 0o755, 0, 0, t, 0),
                ("etc/ssl/certs/".to_owned(), 0o755, 0, 0, t, 0),
                (CA_BUNDLE_PATH.to_owned(), 0o644, 0, 0, t, 5),
                (BINARY_PATH.to_owned(), 0o755, 0, 0, t, 6),
            ]
        );
        let bare = super::layer(b"binary", None, 0).unwrap();
        assert_eq!(
            entries(&bare),
            [(BINARY_PATH.to_owned(), 0o755, 0, 0, 0, 6)]
        );
        assert!(super::layer(b"binary", None, -1).is_err());
    }

    #[test]
    fn same_inputs_same_bytes() {
        let one = layer(b"binary", Some(b"certs"), 5).unwrap();
        let two = layer(b"binary", Some(b"certs"), 5).unwrap();
        assert_eq!(one.gzip, two.gzip);
        assert_ne!(layer(b"binary", Some(b"certs"), 6).unwrap().gzip, one.gzip);
    }
}
