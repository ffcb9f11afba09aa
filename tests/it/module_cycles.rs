//! No circles in the house: within each crate, the modules (one per file) that name each other
//! form no ring, and neither do the top-level modules and folders once each folder is taken as
//! one. A module names another through `crate::` or `super::` paths, and a `lib.rs` or `mod.rs`
//! also through its own children's names (`pub use listener::Listener`); a name the crate root
//! or a folder's `mod.rs` defines counts as that module's, so a ring through `lib.rs` is seen.
//! A name two modules need lives below both. Test modules (`#[cfg(test)] mod tests`, at the end
//! of a file) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates' source roots, relative to the workspace.
pub(crate) const CRATES: &[&str] = &[
    "src",
    "web/src",
    "workers/src",
    "shared/core/src",
    "shared/engine/src",
    "shared/azure/src",
];

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `routes::jobs` for `api/job_broker.rs`, `routes` for `routes/mod.rs`, `` for `lib.rs`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every path that `text` names after `crate::` or `super::` (groups expanded), each as the
/// segments after that prefix, with whether it was `super::`.
fn paths(text: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    for (prefix, is_super) in [("crate::", false), ("super::", true)] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            // `$crate::`, `tessera_shared::crate_x` and the like are not ours.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            for path in expand(rest, Vec::new()) {
                out.push((is_super, path));
            }
        }
    }
    out
}

/// `text` without its test modules (`#[cfg(test)] mod NAME { ... }`, wherever they are).
pub(crate) fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]\n") {
        let after = &rest[at + "#[cfg(test)]\n".len()..];
        let declaration = after
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        let is_module = declaration.starts_with("mod ")
            && declaration
                .lines()
                .next()
                .is_some_and(|line| line.trim_end().ends_with('{'));
        if !is_module {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        }
        out.push_str(&rest[..at]);
        let open = at + "#[cfg(test)]\n".len() + after.find('{').unwrap_or(0);
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The modules a `lib.rs` or `mod.rs` declares (`mod a;`, `pub mod b;`, `pub(crate) mod c;`).
fn children(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.split_once("mod ")?;
            let (visibility, rest) = rest;
            let declared = visibility.is_empty() || visibility.starts_with("pub");
            let name = rest.strip_suffix(';')?;
            (declared && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .then(|| name.to_string())
        })
        .collect()
}

/// Every path that `text` names from one of its own `children` (`child::item`, groups
/// expanded), each as the segments from the child on.
fn child_paths(text: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for child in children {
        let prefix = format!("{child}::");
        let mut rest = text;
        while let Some(at) = rest.find(&prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            // `crate::child::` is counted as a `crate::` path; `other::child::` is not ours.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            out.extend(expand(rest, vec![child.clone()]));
        }
    }
    out
}

/// The paths a use-tree at the start of `text` names: `a::b::c`, or `a::{b, c::d}`.
fn expand(text: &str, mut prefix: Vec<String>) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        let mut items = Vec::new();
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return items
            .into_iter()
            .filter(|item| !item.trim().is_empty())
            .flat_map(|item| expand(item, prefix.clone()))
            .collect();
    }
    let ident: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if ident.is_empty() {
        return vec![prefix];
    }
    prefix.push(ident.clone());
    match text[ident.len()..].strip_prefix("::") {
        Some(rest) => expand(rest, prefix),
        None => vec![prefix],
    }
}

/// The modules each module names, as a graph.
fn graph(root: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(root, f)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_of(root, file);
        let text = std::fs::read_to_string(file).unwrap();
        let text = without_test_modules(&text);
        // Comments (doc links included) name modules without using them.
        let text: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let is_mod_file = file
            .file_stem()
            .is_some_and(|s| s == "mod" || s == "lib" || s == "main");
        let own: Vec<(bool, Vec<String>)> = if is_mod_file {
            child_paths(&text, &children(&text))
                .into_iter()
                .map(|path| {
                    let mut full = module.clone();
                    full.extend(path);
                    (false, full)
                })
                .collect()
        } else {
            Vec::new()
        };
        for (is_super, path) in paths(&text).into_iter().chain(own) {
            let mut full = if is_super {
                // `super` of a file `a/b.rs` is `a`; of `a/b/mod.rs` it is also `a`.
                let mut parent = module.clone();
                if !is_mod_file || !parent.is_empty() {
                    parent.pop();
                }
                parent
            } else {
                Vec::new()
            };
            full.extend(path);
            // The longest prefix that is a module of this crate.
            let target = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|p| modules.contains(p));
            if let Some(target) = target
                && target != module
            {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
        edges.entry(module).or_default();
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn rings(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut ring = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                ring.push(if w.is_empty() {
                    "crate".to_string()
                } else {
                    w.join("::")
                });
                if w == v {
                    break;
                }
            }
            if ring.len() > 1 {
                ring.sort();
                s.found.push(ring);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.found
}

/// The graph of the top-level modules and folders: each module taken as the first segment of
/// its path (the crate root stays itself).
fn folders(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let top = |m: &Vec<String>| m.iter().take(1).cloned().collect::<Vec<String>>();
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, to) in edges {
        let entry = out.entry(top(from)).or_default();
        entry.extend(to.iter().map(top).filter(|t| *t != top(from)));
    }
    out
}

/// The rings of a crate's source root, module by module and folder by folder.
fn rings_in(root: &Path) -> Vec<Vec<String>> {
    let edges = graph(root);
    let mut found = rings(&edges);
    for ring in rings(&folders(&edges)) {
        if !found.contains(&ring) {
            found.push(ring);
        }
    }
    found
}

#[test]
fn no_crate_has_a_ring_of_modules() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for krate in CRATES {
        for ring in rings_in(&workspace.join(krate)) {
            found.push(format!("{krate}: {}", ring.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "module rings:\n{}", found.join("\n"));
}

#[test]
fn the_ring_check_finds_a_ring() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "use crate::{c::C, a::A};\npub struct B;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("c.rs"), "pub struct C;\n").unwrap();
    assert_eq!(rings(&graph(dir.path())), vec![vec!["a", "b"]]);
    std::fs::write(dir.path().join("a.rs"), "use crate::c::C;\npub struct A;\n").unwrap();
    assert!(rings(&graph(dir.path())).is_empty());
}

/// A ring through the crate root (the root re-exports a module that uses a name the root
/// defines) and one between folders (each folder's modules use the other folder's) are found.
#[test]
fn the_ring_check_sees_the_crate_root_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod x;\nmod y;\npub use a::A;\npub struct Root;\n",
    );
    write("a.rs", "use crate::Root;\npub struct A;\n");
    write("x/mod.rs", "mod inner;\npub struct X;\n");
    write("x/inner.rs", "use crate::y::Y;\n");
    write("y.rs", "use crate::x::X;\npub struct Y;\n");
    let found = rings_in(dir.path());
    assert!(
        found.contains(&vec!["a".to_string(), "crate".to_string()]),
        "{found:?}"
    );
    assert!(
        found.contains(&vec!["x".to_string(), "y".to_string()]),
        "{found:?}"
    );
    // The root's name moved below both, and the folders used one way: no ring.
    write("root.rs", "pub struct Root;\n");
    write(
        "lib.rs",
        "mod a;\nmod root;\nmod x;\nmod y;\npub use a::A;\n",
    );
    write("a.rs", "use crate::root::Root;\npub struct A;\n");
    write("y.rs", "pub struct Y;\n");
    assert!(
        rings_in(dir.path()).is_empty(),
        "{:?}",
        rings_in(dir.path())
    );
}
