//! Reads which of a crate's files import which, from the source text, for the tests that keep a
//! crate free of file cycles and keep its lower layers from importing its upper ones. Shared by
//! the crates' `test_module_graph.rs` (included by path: it is test code, not a crate).
//!
//! A module is a file (`task::store`, `model`, `task` for `task/mod.rs`). An import is any
//! `crate::…` or `super::…` path outside the file's test module, grouped ones
//! (`use crate::{a::B, c}`) included, resolved to the longest known module it names; a name the
//! crate root re-exports (`crate::LucidError`) counts as the module it comes from, and
//! `super::Item` as the parent module. A parent's
//! references to its own children are declarations (`mod x;`, `pub use x::Y`), not imports.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The import graph of one crate's files.
#[derive(Debug)]
pub(crate) struct ModuleGraph {
    imports: BTreeMap<String, BTreeSet<String>>,
}

impl ModuleGraph {
    /// Reads the crate whose sources are under `src` (`lib.rs` is the root, not a module).
    pub(crate) fn read(src: &Path) -> Self {
        let mut paths = Vec::new();
        files(src, &mut paths);
        let mut sources: BTreeMap<String, String> =
            paths.iter().map(|path| (module_of(src, path), std::fs::read_to_string(path).expect("source"))).collect();
        let root = sources.remove("lib").unwrap_or_default();
        let known: BTreeSet<String> = sources.keys().cloned().collect();
        let reexports = reexports(&root, &known);
        let imports = sources
            .iter()
            .map(|(module, source)| {
                let mut found = references(module, source, &known, &reexports);
                found.retain(|target| target != module && !target.starts_with(&format!("{module}::")));
                (module.clone(), found)
            })
            .collect();
        Self { imports }
    }

    /// The modules `module` imports.
    pub(crate) fn imports(&self, module: &str) -> &BTreeSet<String> {
        self.imports.get(module).unwrap_or_else(|| panic!("no module {module} in {:?}", self.imports.keys()))
    }

    /// Every module.
    pub(crate) fn modules(&self) -> impl Iterator<Item = &str> {
        self.imports.keys().map(String::as_str)
    }

    /// Panics, naming it, on the first import cycle.
    pub(crate) fn assert_no_cycles(&self) {
        fn visit<'a>(
            node: &'a str,
            graph: &'a BTreeMap<String, BTreeSet<String>>,
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
                visit(next, graph, path, done);
            }
            path.pop();
            done.insert(node);
        }
        let mut done = BTreeSet::new();
        for node in self.imports.keys() {
            visit(node, &self.imports, &mut Vec::new(), &mut done);
        }
    }

    /// The imports from a module under one of `lower` (a module and its children) to a module
    /// under one of `upper`, as `from -> to` lines.
    pub(crate) fn upward_imports(&self, lower: &[&str], upper: &[&str]) -> Vec<String> {
        let under = |module: &str, roots: &[&str]| {
            roots.iter().any(|root| module == *root || module.starts_with(&format!("{root}::")))
        };
        self.imports
            .iter()
            .filter(|(module, _)| under(module, lower))
            .flat_map(|(module, targets)| {
                targets.iter().filter(|target| under(target, upper)).map(move |target| format!("{module} -> {target}"))
            })
            .collect()
    }
}

/// The module a source file is (`task::store`, `model`, …), `task` for `task/mod.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src").with_extension("");
    let parts: Vec<String> =
        relative.iter().map(|part| part.to_string_lossy().into_owned()).filter(|part| part != "mod").collect();
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

/// The code of a file outside its test module, without line comments.
fn code(source: &str) -> String {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    code.lines()
        .map(|line| match line.find("//") {
            Some(index) => &line[..index],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths written after `prefix` in `code`, with use-groups expanded (`a::{b, c::D}` →
/// `a::b`, `a::c::D`).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (index, _) in code.match_indices(prefix) {
        // `super::` inside `crate::x::super::`-like text cannot occur; a preceding identifier
        // character means another path (`my_crate::`), which is not ours.
        if code[..index].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        expand(&code[index + prefix.len()..], String::new(), &mut found);
    }
    found
}

/// Reads one path (or use-group) at the start of `rest`, prefixed with `base`.
fn expand(rest: &str, base: String, out: &mut Vec<String>) {
    let head: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
    let path = format!("{base}{head}");
    let after = &rest[head.len()..];
    if (head.is_empty() || head.ends_with("::")) && after.starts_with('{') {
        // A group: split its top level on commas.
        let mut depth = 0usize;
        let mut start = 1;
        for (index, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        expand(after[start..index].trim_start(), path.clone(), out);
                        return;
                    }
                }
                ',' if depth == 1 => {
                    expand(after[start..index].trim_start(), path.clone(), out);
                    start = index + 1;
                }
                _ => {}
            }
        }
    } else {
        out.push(path.trim_end_matches(':').to_owned());
    }
}

/// The names the crate root re-exports from a module (`pub use error::LucidError;`).
fn reexports(root: &str, known: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code = code(root);
    let mut names = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(tree) = statement.strip_prefix("pub use ").or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let mut paths = Vec::new();
        expand(tree.trim(), String::new(), &mut paths);
        for path in paths {
            let segments: Vec<&str> = path.split("::").collect();
            if let Some(module) = longest_known(&segments, "", known)
                && let Some(name) = segments.last()
            {
                names.insert((*name).to_owned(), module);
            }
        }
    }
    names
}

fn longest_known(segments: &[&str], base: &str, known: &BTreeSet<String>) -> Option<String> {
    (1..=segments.len()).rev().find_map(|length| {
        let name = segments[..length].join("::");
        let name = if base.is_empty() { name } else { format!("{base}::{name}") };
        known.contains(&name).then_some(name)
    })
}

/// The modules `module`'s source refers to.
fn references(
    module: &str,
    source: &str,
    known: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let code = code(source);
    let parent = module.rsplit_once("::").map(|(parent, _)| parent.to_owned()).unwrap_or_default();
    let mut found = BTreeSet::new();
    for (prefix, base) in [("crate::", ""), ("super::", parent.as_str())] {
        for path in paths_after(&code, prefix) {
            let segments: Vec<&str> = path.split("::").filter(|segment| !segment.is_empty()).collect();
            if let Some(target) = longest_known(&segments, base, known) {
                found.insert(target);
            } else if !base.is_empty() && known.contains(base) {
                // `super::Item` names no module below the parent: it is the parent's own item.
                found.insert(base.to_owned());
            } else if base.is_empty()
                && let Some(target) = segments.first().and_then(|name| reexports.get(*name))
            {
                found.insert(target.clone());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_aliased_and_relative_imports_are_read() {
        let known: BTreeSet<String> = ["a", "a::b", "a::c", "d", "e"].into_iter().map(str::to_owned).collect();
        let reexports: BTreeMap<String, String> = [("Root".to_owned(), "e".to_owned())].into_iter().collect();
        let source = "use crate::{d, e::Item as Alias};\nuse super::{b::X,\n    c as C};\n// use crate::a;\n\
                      fn f() { crate::Root; super::Own; my_crate::d::x(); }\n#[cfg(test)]\nmod tests { use crate::a; }\n";
        let found = references("a::z", source, &known, &reexports);
        let expected: BTreeSet<String> = ["a", "a::b", "a::c", "d", "e"].into_iter().map(str::to_owned).collect();
        assert_eq!(found, expected);
        let root = reexports_of("pub use a::b::{X, Y as Z};\npub(crate) use d::W;\nmod e;\n", &known);
        assert_eq!(root.get("X").map(String::as_str), Some("a::b"));
        assert_eq!(root.get("Y").map(String::as_str), Some("a::b"));
        assert_eq!(root.get("W").map(String::as_str), Some("d"));
    }

    fn reexports_of(root: &str, known: &BTreeSet<String>) -> BTreeMap<String, String> {
        reexports(root, known)
    }
}
