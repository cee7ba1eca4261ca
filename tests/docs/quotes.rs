//! The code the docs quote from compiled files is those files' text. (The examples
//! themselves run in the idem-examples package's tests: `examples/tests/examples.rs`.)

use std::path::Path;

/// The files whose code blocks may quote other files: the README, and the crate and module
/// docs that docs.rs shows (read from their `//!` lines, without the `//! ` in front).
const QUOTING: [&str; 7] = [
    "README.md",
    "src/lib.rs",
    "idem-runtime/src/frameworks/rmcp/mod.rs",
    "idem-runtime/src/frameworks/rig.rs",
    "idem-runtime/src/frameworks/adk.rs",
    "idem-runtime/src/store/mod.rs",
    "idem-runtime/src/telemetry.rs",
];

/// The docs' code that says it is quoted from a file (`<!-- quoted from PATH -->` on the
/// line above the block) is that file's text: every piece between `// ...` lines is in the
/// file, in order. So the docs cannot drift from code that `cargo test` compiles.
#[test]
fn the_docs_quote_compiled_files_verbatim() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut quoted = Vec::new();
    for quoting in QUOTING {
        let text = std::fs::read_to_string(root.join(quoting)).unwrap();
        let docs = if quoting.ends_with(".rs") { doc_lines(&text) } else { text };
        let mut lines = docs.lines();
        while let Some(line) = lines.next() {
            let Some(path) = line.strip_prefix("<!-- quoted from ").and_then(|rest| rest.strip_suffix(" -->")) else {
                continue;
            };
            assert!(
                lines.next().is_some_and(|fence| fence.starts_with("```")),
                "{quoting}: a code block follows the mark for {path}"
            );
            let block: Vec<&str> = lines.by_ref().take_while(|line| !line.starts_with("```")).collect();
            let file =
                std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{quoting} quotes {path}: {e}"));
            let mut from = 0;
            for piece in block.split(|line| line.trim() == "// ...") {
                let piece = piece.join("\n");
                let piece = piece.trim_matches('\n');
                match file[from..].find(piece) {
                    Some(at) => from += at + piece.len(),
                    None => panic!(
                        "{quoting}'s quote of {path} is not its text:\n{}",
                        first_difference(piece, &file[from..])
                    ),
                }
            }
            quoted.push(path.to_owned());
        }
    }
    let quotes = [
        "examples/adk_agent.rs",
        "examples/mcp_server.rs",
        "examples/remote_mcp/billing.rs",
        "tests/frameworks/rmcp/tenants.rs",
        "tests/support/stable_identifiers.rs",
    ];
    for path in quotes {
        assert!(quoted.iter().any(|q| q == path), "the docs quote {path} (marked `<!-- quoted from {path} -->`)");
    }
}

/// A Rust file's inner doc comments as the Markdown rustdoc reads: the `//!` lines, each
/// without `//!` and the one space after it.
fn doc_lines(source: &str) -> String {
    let docs = source.lines().filter_map(|line| line.trim_start().strip_prefix("//!"));
    docs.map(|line| line.strip_prefix(' ').unwrap_or(line)).collect::<Vec<_>>().join("\n")
}

/// The quoted piece up to its first line that the file does not continue with.
fn first_difference(piece: &str, file: &str) -> String {
    let lines: Vec<&str> = piece.lines().collect();
    let matching = (1..=lines.len()).take_while(|&n| file.contains(&lines[..n].join("\n"))).last().unwrap_or(0);
    let shown = lines.get(matching).copied().unwrap_or_default();
    format!("{}\n>>> {shown}", lines[..matching].join("\n"))
}
