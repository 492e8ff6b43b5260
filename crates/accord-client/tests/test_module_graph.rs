//! The client's files import each other without cycles: every module imports downward only, and
//! the A2A bindings never import the client above them (nor the `a2a` module that holds it). A
//! new import that closes a cycle fails here, naming it. The graph is read by the engine's shared
//! reader (`module_graph`), which says what counts as an import.

#[path = "../../accord-engine/tests/module_graph/mod.rs"]
mod module_graph;

use std::path::Path;

use module_graph::ModuleGraph;

#[test]
fn the_client_has_no_file_cycles() {
    let graph = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    graph.assert_no_cycles();

    // The bindings and everything below them know nothing of the client that holds them.
    let below = [
        "a2a::card",
        "a2a::grpc",
        "a2a::http",
        "a2a::jsonrpc",
        "a2a::rest",
        "a2a::stream",
        "a2a::transport",
        "a2a::v03",
        "error",
        "http",
    ];
    let upward = graph.upward_imports(&below, &["a2a::client"]);
    assert!(upward.is_empty(), "bindings import the client:\n{}", upward.join("\n"));
    for module in below {
        assert!(!graph.imports(module).contains("a2a"), "{module} imports through the a2a root: {graph:?}");
    }
    // The graph was read: the client holds the seam, the bindings implement it.
    assert!(graph.imports("a2a::client").contains("a2a::transport"), "{graph:?}");
    assert!(graph.imports("a2a::v03").contains("a2a::jsonrpc"), "{graph:?}");
    assert!(graph.imports("a2a::v03").contains("a2a::rest"), "{graph:?}");
    assert!(graph.imports("lucid").contains("payment"), "{graph:?}");
    // Every client fails with the crate's one error.
    for module in ["a2a::client", "a2a::jsonrpc", "a2a::grpc", "lucid", "rpc", "signed", "tasks"] {
        assert!(graph.imports(module).contains("error"), "{module} does not use the crate's error: {graph:?}");
    }
}

/// The crate has one public error type: the only public type that implements
/// `std::error::Error` is `ClientError` (a crate-private one may adapt a library's trait bound).
#[test]
fn the_crate_has_one_public_error_type() {
    let mut public_errors = Vec::new();
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(std::fs::read_dir(&path).expect("src").map(|entry| entry.expect("entry").path()));
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("source");
        for line in source.lines() {
            let Some(name) = line.trim().strip_prefix("impl std::error::Error for ") else { continue };
            let name = name.trim_end_matches(" {").trim();
            let public = [format!("pub enum {name} "), format!("pub struct {name} "), format!("pub struct {name}(")]
                .iter()
                .any(|declaration| source.contains(declaration.as_str()));
            if public {
                public_errors.push(name.to_owned());
            }
        }
    }
    assert_eq!(public_errors, ["ClientError"]);
}
