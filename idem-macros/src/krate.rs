//! `crate = "my_idem"`: a name that no dependency has is one error at the string, in idem's
//! words, instead of one "cannot find module or crate" per generated path (each with
//! cargo's advice to add a crate of that name).
//!
//! A proc macro cannot ask the compiler what is in scope; the compiler's own command line
//! says which crates the user's crate depends on, and under what names (`--extern
//! my_idem=/path/libidem-<hash>.rlib`), so that is what is read. Where there is no such
//! command line (rust-analyzer runs macros in a process of its own) nothing is checked. Only
//! a single name is checked: a path of more segments (`crate::deps::idem`) may go through
//! modules of the user's crate, which no command line shows.

use crate::errors::Errors;

/// Reports `crate = "name"` when `name` is no dependency of the crate being compiled.
pub(crate) fn check(path: &syn::Path, errors: &mut Errors) {
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else { return };
    let args: Vec<String> = std::env::args().collect();
    let Some(externs) = externs(&args) else { return };
    let name = segment.ident.to_string();
    if externs.iter().any(|(extern_name, _)| *extern_name == name) {
        return;
    }
    // The path's tokens carry the span of the string they were parsed from.
    errors.at(segment.ident.span(), missing(&name, &externs));
}

/// The message for `crate = "name"` naming no dependency.
fn missing(name: &str, externs: &[(String, String)]) -> String {
    let what = format!(
        "no crate named `{name}` is in scope: `crate = \"...\"` tells the generated code where idem is when \
         your Cargo.toml gives idem-tools another name (`{name} = {{ package = \"idem-tools\", ... }}`)"
    );
    match externs.iter().find(|(_, file)| is_idem(file)) {
        Some((idem, _)) if idem == "idem" => {
            format!("{what}; this crate has it as `idem`, the default, so leave `crate = ...` out")
        }
        Some((idem, _)) => format!("{what}; this crate has it as `{idem}`: write crate = \"{idem}\""),
        None => format!(
            "{what}; this crate has no dependency on idem-tools under any name: add one, or, if idem reaches it \
             through another crate, write the path to it (crate = \"other_crate::idem\")"
        ),
    }
}

/// Whether a dependency's file is idem-tools' library, whose crate name is `idem`:
/// `libidem-<hash>.rlib` (or `.rmeta`, or a file with no hash).
fn is_idem(file: &str) -> bool {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = name.split('.').next().unwrap_or(name);
    stem == "libidem" || stem.starts_with("libidem-")
}

/// The crates rustc's command line makes available by name (each `--extern name[=file]`,
/// with the file or ""), or `None` when `args` are not a rustc command line this can read:
/// no `--crate-name` (another process runs the macro), or an `@file` of arguments.
fn externs(args: &[String]) -> Option<Vec<(String, String)>> {
    if !args.iter().any(|arg| arg == "--crate-name" || arg.starts_with("--crate-name="))
        || args.iter().any(|arg| arg.starts_with('@'))
    {
        return None;
    }
    let mut externs = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let spec = match arg.strip_prefix("--extern") {
            Some("") => args.next().map(String::as_str),
            Some(inline) => inline.strip_prefix('='),
            None => None,
        };
        let Some(spec) = spec else { continue };
        // `priv:name=file`, `noprelude,nounused:name=file`: options before a colon.
        let spec = spec.split_once(':').filter(|(options, _)| !options.contains('=')).map_or(spec, |(_, rest)| rest);
        let (name, file) = spec.split_once('=').unwrap_or((spec, ""));
        externs.push((name.to_owned(), file.to_owned()));
    }
    Some(externs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn externs_are_read_from_rustcs_command_line() {
        let found = externs(&args(
            "rustc --crate-name billing --edition=2024 src/lib.rs --extern my_idem=/t/deps/libidem-0a1b2c.rmeta \
             --extern=serde=/t/deps/libserde-99.rmeta --extern priv:secret=/t/libsecret-1.rlib \
             --extern noprelude,nounused:core --extern proc_macro",
        ))
        .unwrap();
        let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["my_idem", "serde", "secret", "core", "proc_macro"]);
        assert_eq!(found[0].1, "/t/deps/libidem-0a1b2c.rmeta");
    }

    #[test]
    fn another_command_line_is_not_read() {
        assert_eq!(externs(&args("rust-analyzer-proc-macro-srv")), None, "not rustc");
        assert_eq!(externs(&args("rustc --crate-name x @/tmp/args")), None, "arguments in a file");
    }

    #[test]
    fn idem_is_recognized_by_its_library_file() {
        assert!(is_idem("/t/deps/libidem-0a1b2c.rmeta"));
        assert!(is_idem("C:\\t\\deps\\libidem-0a1b2c.rlib"));
        assert!(!is_idem("/t/deps/libidem_runtime-0a1b2c.rmeta"));
        assert!(!is_idem("/t/deps/libidempotency-0a1b2c.rmeta"));
    }

    #[test]
    fn the_message_says_what_to_write() {
        let idem = [("idem".to_owned(), "/t/libidem-1.rmeta".to_owned())];
        assert!(
            missing("my_idem", &idem).ends_with("this crate has it as `idem`, the default, so leave `crate = ...` out")
        );
        let renamed = [("tools".to_owned(), "/t/libidem-1.rmeta".to_owned())];
        assert!(missing("my_idem", &renamed).ends_with("write crate = \"tools\""));
        assert!(missing("my_idem", &[]).contains("no dependency on idem-tools under any name"));
        assert!(missing("my_idem", &idem).starts_with("no crate named `my_idem` is in scope"));
    }
}
