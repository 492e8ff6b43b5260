//! The engine's files import each other without cycles: the shared nouns live in `model`, which
//! imports none of the others, and every other module imports downward only. A new import that
//! closes a cycle fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module a source file is (`task::store`, `model`, …), `task` for `task/mod.rs`.
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

/// The modules `source` refers to outside its test module: `crate::a::b` and `super::b` paths.
fn references(module: &str, source: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut found = BTreeSet::new();
    for line in code.lines().map(str::trim).filter(|line| !line.starts_with("//")) {
        for (prefix, base) in [("crate::", String::new()), ("super::", parent(module))] {
            for (index, _) in line.match_indices(prefix) {
                let path: String = line[index + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                // The longest known module the path names.
                let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
                let named = (1..=segments.len()).rev().find_map(|length| {
                    let name = segments[..length].join("::");
                    let name = if base.is_empty() { name } else { format!("{base}::{name}") };
                    known.contains(&name).then_some(name)
                });
                // `super::Item` names no module below the parent: it is the parent's own item.
                match named {
                    Some(name) => {
                        found.insert(name);
                    }
                    None if known.contains(&base) => {
                        found.insert(base.clone());
                    }
                    None => {}
                }
            }
        }
    }
    found.remove(module);
    found
}

fn parent(module: &str) -> String {
    module.rsplit_once("::").map(|(parent, _)| parent.to_owned()).unwrap_or_default()
}

#[test]
fn the_engine_has_no_file_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    let sources: BTreeMap<String, String> = paths
        .iter()
        .map(|path| (module_of(&src, path), std::fs::read_to_string(path).expect("source")))
        .filter(|(module, _)| module != "lib")
        .collect();
    let known: BTreeSet<String> = sources.keys().cloned().collect();
    let graph: BTreeMap<&str, BTreeSet<String>> = sources
        .iter()
        .map(|(module, source)| {
            // A parent module's `mod`/`pub use` lines are declarations, not dependencies.
            let mut refs = references(module, source, &known);
            refs.retain(|target| !target.starts_with(&format!("{module}::")));
            (module.as_str(), refs)
        })
        .collect();
    assert!(graph["model"].is_empty(), "model imports {:?}", graph["model"]);

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
    // The graph was read: the service depends on the runtime, the runtime on the model.
    assert!(graph["task::service"].contains("task::runtime"), "{graph:?}");
    assert!(graph["task::runtime"].contains("model"), "{graph:?}");
    // The service's rooms use its shared types; the service itself names neither room.
    for room in ["task::service::paid", "task::service::push"] {
        assert!(graph[room].contains("task::service"), "{graph:?}");
        assert!(!graph["task::service"].contains(room), "{graph:?}");
    }
}
