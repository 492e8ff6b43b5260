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
        "a2a::error",
        "a2a::grpc",
        "a2a::http",
        "a2a::jsonrpc",
        "a2a::rest",
        "a2a::stream",
        "a2a::transport",
        "a2a::v03",
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
}
