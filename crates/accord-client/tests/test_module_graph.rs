//! The client's files import each other without cycles: every module imports downward only, and
//! the A2A bindings never import the client above them. A new import that closes a cycle fails
//! here, naming it.
//!
//! An import is any `crate::…`, `super::…` or `self::…` path outside comments and test modules,
//! grouped ones included (`use crate::{a, b::c}`, `use super::{x, y}`), and a module's `use` of
//! its own children (`pub use child::Item`): re-exports are dependencies too, so reaching an item
//! through the crate root or a parent counts as importing that root or parent. `mod` lines are
//! declarations, not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module a source file is (`a2a::client`, `http`, …), `lib` for `lib.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src").with_extension("");
    let parts: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
    let parts: Vec<String> = parts.into_iter().filter(|part| part != "mod").collect();
    parts.join("::")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads a use tree at `chars[*at..]` (`a::b`, `a::{b, c::d}`, `a::*`, `a as b`): every path it
/// names, as segments.
fn use_tree(chars: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let skip_space = |at: &mut usize| {
        while *at < chars.len() && chars[*at].is_whitespace() {
            *at += 1;
        }
    };
    let mut prefix = Vec::new();
    loop {
        skip_space(at);
        if *at < chars.len() && chars[*at] == '{' {
            *at += 1;
            let mut paths = Vec::new();
            loop {
                skip_space(at);
                if *at >= chars.len() {
                    return paths;
                }
                if chars[*at] == '}' {
                    *at += 1;
                    return paths;
                }
                if chars[*at] == ',' {
                    *at += 1;
                    continue;
                }
                let before = *at;
                for tail in use_tree(chars, at) {
                    let mut path = prefix.clone();
                    path.extend(tail.into_iter().filter(|segment| segment != "self"));
                    paths.push(path);
                }
                if *at == before {
                    *at += 1;
                }
            }
        }
        let start = *at;
        while *at < chars.len() && is_ident(chars[*at]) {
            *at += 1;
        }
        if *at == start {
            // `*`, or the end of the path.
            return vec![prefix];
        }
        prefix.push(chars[start..*at].iter().collect());
        if chars[*at..].starts_with(&[':', ':']) {
            *at += 2;
        } else {
            // `path as alias`: the alias names nothing.
            let mut probe = *at;
            skip_space(&mut probe);
            if chars[probe..].starts_with(&['a', 's']) && chars.get(probe + 2).is_some_and(|c| c.is_whitespace()) {
                probe += 2;
                skip_space(&mut probe);
                while probe < chars.len() && is_ident(chars[probe]) {
                    probe += 1;
                }
                *at = probe;
            }
            return vec![prefix];
        }
    }
}

/// The module a path lands in: the longest known module it names, else (an item reached through
/// a module file, a re-export) the module it starts from.
fn resolve(base: &[String], path: &[String], known: &BTreeSet<String>) -> Option<String> {
    let full: Vec<String> = base.iter().chain(path).cloned().collect();
    for length in (1..=full.len()).rev() {
        let name = full[..length].join("::");
        if known.contains(&name) {
            return Some(name);
        }
    }
    if base.is_empty() { Some("lib".to_owned()) } else { Some(base.join("::")) }
}

/// The modules `source` (of module `module`) imports.
fn references(module: &str, source: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let code: String =
        code.lines().filter(|line| !line.trim_start().starts_with("//")).map(|line| format!("{line}\n")).collect();
    let chars: Vec<char> = code.chars().collect();
    let own: Vec<String> = if module == "lib" { Vec::new() } else { module.split("::").map(str::to_owned).collect() };
    let mut found = BTreeSet::new();
    let mut at = 0;
    while at < chars.len() {
        let preceded = at > 0 && (is_ident(chars[at - 1]) || chars[at - 1] == ':');
        let rest = &chars[at..];
        let starts = |word: &str| rest.starts_with(&word.chars().collect::<Vec<_>>());
        if !preceded && (starts("crate::") || starts("super::") || starts("self::")) {
            let mut cursor = at;
            let paths = use_tree(&chars, &mut cursor);
            for path in paths {
                let mut base: Vec<String> = own.clone();
                let mut path = path.as_slice();
                match path.first().map(String::as_str) {
                    Some("crate") => {
                        base.clear();
                        path = &path[1..];
                    }
                    Some("self") => path = &path[1..],
                    _ => {
                        while path.first().map(String::as_str) == Some("super") {
                            base.pop();
                            path = &path[1..];
                        }
                    }
                }
                if let Some(target) = resolve(&base, path, known) {
                    found.insert(target);
                }
            }
            at = cursor.max(at + 1);
            continue;
        }
        // `use child::…` (a module using or re-exporting its own child), at a statement start.
        let statement_start = at == 0 || chars[at - 1] == '\n';
        if statement_start {
            let line: String = chars[at..].iter().take_while(|c| **c != '\n').collect();
            let trimmed = line.trim_start();
            let after_use = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
                .iter()
                .find_map(|prefix| trimmed.strip_prefix(prefix));
            if let Some(tail) = after_use
                && !["crate::", "super::", "self::"].iter().any(|prefix| tail.starts_with(prefix))
            {
                let offset = line.len() - tail.len();
                let mut cursor = at + line[..offset].chars().count();
                for path in use_tree(&chars, &mut cursor) {
                    let child: Vec<String> = own.iter().chain(path.first()).cloned().collect();
                    if path.len() > 1 && known.contains(&child.join("::")) {
                        found.extend(resolve(&own, &path, known));
                    }
                }
            }
        }
        at += 1;
    }
    found.remove(module);
    found
}

#[test]
fn the_client_has_no_file_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    let sources: BTreeMap<String, String> =
        paths.iter().map(|path| (module_of(&src, path), std::fs::read_to_string(path).expect("source"))).collect();
    let known: BTreeSet<String> = sources.keys().cloned().collect();
    let graph: BTreeMap<&str, BTreeSet<String>> =
        sources.iter().map(|(module, source)| (module.as_str(), references(module, source, &known))).collect();

    // Depth-first search for a back edge.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<&'a str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(start) = path.iter().position(|seen| *seen == node) {
            panic!("a file cycle: {} -> {node}", path[start..].join(" -> "));
        }
        path.push(node);
        for next in &graph[node] {
            let next = graph.get_key_value(next.as_str()).map(|(key, _)| *key).expect("known");
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(node);
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }

    // The bindings and everything below them know nothing of the client that holds them.
    for module in ["a2a::card", "a2a::error", "a2a::grpc", "a2a::http", "a2a::jsonrpc", "a2a::rest", "a2a::stream"]
        .into_iter()
        .chain(["a2a::transport", "a2a::v03", "http"])
    {
        assert!(!graph[module].contains("a2a::client"), "{module} imports the client: {:?}", graph[module]);
        assert!(!graph[module].contains("a2a"), "{module} imports through the a2a root: {:?}", graph[module]);
    }
    // The graph was read: the client holds the seam, the bindings implement it, grouped and
    // relative imports count.
    assert!(graph["a2a::client"].contains("a2a::transport"), "{graph:?}");
    assert!(graph["a2a::v03"].contains("a2a::jsonrpc") && graph["a2a::v03"].contains("a2a::rest"), "{graph:?}");
    assert!(graph["lucid"].contains("payment"), "{graph:?}");
    assert!(graph["lib"].contains("lucid") && graph["a2a"].contains("a2a::client"), "{graph:?}");
}

#[test]
fn grouped_and_relative_imports_are_read() {
    let known: BTreeSet<String> = ["lib", "a", "a::b", "a::c", "d", "e"].into_iter().map(str::to_owned).collect();
    let source = "use crate::{d, e::Item as Alias};\nuse super::{b::X,\n    c as C};\npub use b::Y;\n// use crate::lib;\n\
                  fn f() { crate::Root; }\n#[cfg(test)]\nmod tests { use crate::a; }\n";
    let found = references("a::z", source, &known);
    let expected: BTreeSet<String> = ["lib", "d", "e", "a::b", "a::c"].into_iter().map(str::to_owned).collect();
    assert_eq!(found, expected);
    let root = references("a", "pub use b::Y;\npub use c::{Z, W};\nmod b;\n", &known);
    assert_eq!(root, ["a::b", "a::c"].into_iter().map(str::to_owned).collect());
}
