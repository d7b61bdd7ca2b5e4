//! The layers of ARCHITECTURE.md, held by reading the sources (as
//! rust-analyzer's tidy tests do): each file imports only from its own
//! layer or those below it, no two files import each other in a circle,
//! and nothing in the core reaches for I/O or a host.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first.
const LAYERS: &[&str] = &[
    "vocab",
    "input",
    "scheduling",
    "signals",
    "placement",
    "admission",
];

/// What the core must never use: it has no I/O and knows no host.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::io",
    "println!",
    "eprintln!",
    "wasm_bindgen",
    "wapc",
    "kubewarden_policy_sdk",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as (module path, text without comments
/// and test modules).
fn sources(dir: &Path, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            sources(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.to_vec();
            if !matches!(name.as_str(), "mod" | "lib") {
                module.push(name);
            }
            out.push((module, strip(&fs::read_to_string(&path).unwrap())));
        }
    }
}

/// The text without comments and without `#[cfg(test)]` items.
fn strip(text: &str) -> String {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    match code.find("#[cfg(test)]") {
        Some(at) => code[..at].to_string(),
        None => code,
    }
}

fn all_sources() -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    sources(&src(), &[], &mut out);
    assert!(out.len() > 20, "the core's sources were not found");
    out
}

/// The `crate::a::b::...` paths a file names, `use` trees expanded.
fn crate_paths(text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let end = rest
            .find(|c: char| {
                !(c.is_alphanumeric()
                    || c == '_'
                    || c == ':'
                    || c == '{'
                    || c == '}'
                    || c == ','
                    || c == ' '
                    || c == '\n')
            })
            .unwrap_or(rest.len());
        expand(&rest[..end], &[], &mut paths);
    }
    paths
}

fn expand(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut path = prefix.to_vec();
        path.extend(
            tree.split("::")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')),
        );
        out.push(path);
        return;
    };
    let mut head = prefix.to_vec();
    head.extend(
        tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from),
    );
    let mut depth = 0;
    let mut start = open + 1;
    for (i, c) in tree.char_indices().skip(open + 1) {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                expand(&tree[start..i], &head, out);
                return;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&tree[start..i], &head, out);
                start = i + 1;
            }
            _ => {}
        }
    }
}

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

#[test]
fn each_layer_imports_only_its_own_and_those_below() {
    let mut upward = Vec::new();
    for (module, text) in all_sources() {
        let Some(own) = module.first().and_then(|l| rank(l)) else {
            continue;
        };
        for path in crate_paths(&text) {
            if let Some(used) = path.first().and_then(|l| rank(l)) {
                if used > own {
                    upward.push(format!(
                        "{} uses crate::{}",
                        module.join("::"),
                        path.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a layer above:\n{}",
        upward.join("\n")
    );
}

#[test]
fn every_layer_has_its_folder_and_the_root_keeps_them_private() {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    for layer in LAYERS {
        assert!(src().join(layer).join("mod.rs").is_file(), "{layer}/mod.rs");
        assert!(
            lib.contains(&format!("\nmod {layer};")),
            "lib.rs: mod {layer}; (private)"
        );
    }
    assert!(lib.contains("#![deny(missing_docs)]"));
}

#[test]
fn no_two_files_import_each_other_in_a_circle() {
    let sources = all_sources();
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, text) in &sources {
        let edges = graph.entry(module.clone()).or_default();
        for path in crate_paths(text) {
            // The longest prefix of the path that is a file of the crate.
            if let Some(target) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
            {
                if &target != module && !target.is_empty() {
                    edges.insert(target);
                }
            }
        }
    }
    let circles = strongly_connected(&graph);
    assert!(circles.is_empty(), "import circles: {circles:?}");
}

/// Components of more than one node (Tarjan).
fn strongly_connected(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn the_core_has_no_io_and_no_host() {
    let mut found = Vec::new();
    for (module, text) in all_sources() {
        for word in FORBIDDEN {
            if text.contains(word) {
                found.push(format!("{}: {word}", module.join("::")));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_reader_sees_what_it_checks() {
    // The checks above are only as good as the path reader.
    let paths = crate_paths("use crate::vocab::{build::WindowsBuild, kinds::{Kind, X}};\nlet x = crate::signals::image::classify(a);");
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "vocab::build::WindowsBuild",
            "vocab::kinds::Kind",
            "vocab::kinds::X",
            "signals::image::classify"
        ]
    );
    assert_eq!(
        strip("a // crate::admission\n#[cfg(test)]\nmod t { crate::admission }"),
        "a \n"
    );
}
