//! The checked-in generated code is what the proto compiles to today.

#[test]
fn the_checked_in_code_matches_the_proto() {
    let dir = std::env::temp_dir().join(format!("accord-grpc-codegen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let fresh = accord_grpc_codegen::generate(&dir).expect("the proto compiles");
    let fresh = std::fs::read_to_string(fresh).expect("generated code");
    let _ = std::fs::remove_dir_all(&dir);
    let checked_in = accord_grpc_codegen::grpc_crate().join(format!("src/gen/{}.rs", accord_grpc_codegen::PACKAGE));
    let checked_in = std::fs::read_to_string(&checked_in).expect("checked-in generated code");
    assert!(
        fresh == checked_in,
        "crates/accord-grpc/src/gen is stale: run `cargo run -p accord-grpc-codegen` and commit the result"
    );
}
