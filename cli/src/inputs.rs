//! Where manifests come from: files, folders searched recursively, stdin.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Larger inputs are refused with a clear error instead of exhausting memory.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// File name endings read when searching a folder.
const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// One place manifests are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    /// The name used in reports: the path as given, or `<stdin>`.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }
}

/// A source and its text, or why it could not be read.
#[derive(Debug)]
pub struct Input {
    pub source: Source,
    pub text: Result<String, CliError>,
}

/// Expands the command-line operands into sources: `-` is stdin, a folder
/// stands for every manifest file below it (sorted, so output is stable).
/// Operands that do not exist become inputs carrying the error.
pub fn discover(operands: &[String]) -> Vec<Input> {
    let mut inputs = Vec::new();
    for operand in operands {
        if operand == "-" {
            inputs.push(Input {
                source: Source::Stdin,
                text: read_stdin(),
            });
            continue;
        }
        let path = PathBuf::from(operand);
        if path.is_dir() {
            let mut files = Vec::new();
            match collect_manifests(&path, &mut files) {
                Ok(()) => inputs.extend(files.into_iter().map(read_file)),
                Err(e) => inputs.push(Input {
                    source: Source::File(path),
                    text: Err(e),
                }),
            }
        } else {
            inputs.push(read_file(path));
        }
    }
    inputs
}

fn collect_manifests(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let entries = fs::read_dir(dir).map_err(|source| CliError::List {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        // Symlinked folders are not followed: they can form cycles.
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if path.is_dir() {
            if !is_link {
                collect_manifests(&path, files)?;
            }
        } else if has_manifest_extension(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

fn read_file(path: PathBuf) -> Input {
    let text = read_path(&path);
    Input {
        source: Source::File(path),
        text,
    }
}

/// The text of a file, within the size limit.
pub fn read_path(path: &Path) -> Result<String, CliError> {
    read_path_within(path, MAX_INPUT_BYTES)
}

/// The text of a file (`-`: standard input), within `limit` bytes.
pub fn read_path_within(path: &Path, limit: u64) -> Result<String, CliError> {
    if path.as_os_str() == "-" {
        return read_limited(std::io::stdin().lock(), "<stdin>", limit);
    }
    let name = path.display().to_string();
    let file = fs::File::open(path).map_err(|source| CliError::Read {
        name: name.clone(),
        source,
    })?;
    read_limited(file, &name, limit)
}

fn read_stdin() -> Result<String, CliError> {
    read_limited(std::io::stdin().lock(), "<stdin>", MAX_INPUT_BYTES)
}

fn read_limited(reader: impl Read, name: &str, limit: u64) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| CliError::Read {
            name: name.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(CliError::TooLarge {
            name: name.to_owned(),
            limit_mib: limit / 1024 / 1024,
        });
    }
    String::from_utf8(bytes).map_err(|e| CliError::NotUtf8 {
        name: name.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_extensions() {
        assert!(has_manifest_extension(Path::new("a/b.yaml")));
        assert!(has_manifest_extension(Path::new("b.YML")));
        assert!(has_manifest_extension(Path::new("b.json")));
        assert!(!has_manifest_extension(Path::new("README.md")));
        assert!(!has_manifest_extension(Path::new("yaml")));
    }

    #[test]
    fn oversized_input_is_refused() {
        let big = std::io::repeat(b'a').take(MAX_INPUT_BYTES + 10);
        let err = read_limited(big, "big.yaml", MAX_INPUT_BYTES)
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than 64 MiB"), "{err}");
    }

    #[test]
    fn binary_input_is_refused() {
        let err = read_limited(&b"ab\xffcd"[..], "x.yaml", MAX_INPUT_BYTES)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not UTF-8") && err.contains("offset 2"),
            "{err}"
        );
    }
}
