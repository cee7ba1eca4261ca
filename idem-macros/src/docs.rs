//! A function's doc comment as the description a model reads: paragraphs, not the line
//! breaks of the source. rmcp's `#[tool]` and rig's `#[rig_tool]` join doc lines with
//! "\n", so a comment wrapped at 90 columns reaches the model broken mid-sentence.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment of `attrs` as paragraphs ([`paragraphs`]), or `None` when it has no
/// text or one of its `#[doc]`s is not a string literal (`#[doc = include_str!(..)]`):
/// that one is left to the framework.
pub(crate) fn description(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("doc")) {
        match &attr.meta {
            Meta::NameValue(doc) => match &doc.value {
                Expr::Lit(ExprLit { lit: Lit::Str(text), .. }) => lines.push(text.value()),
                _ => return None,
            },
            _ => continue, // #[doc(hidden)], #[doc(alias = ..)]: no text
        }
    }
    let text = paragraphs(&lines);
    (!text.is_empty()).then_some(text)
}

/// The value of each `#[doc = ...]` of `attrs`, literal or not (`include_str!(..)`).
pub(crate) fn doc_values(attrs: &[Attribute]) -> Vec<Expr> {
    let values = attrs.iter().filter(|attr| attr.path().is_ident("doc")).filter_map(|attr| match &attr.meta {
        Meta::NameValue(doc) => Some(doc.value.clone()),
        _ => None,
    });
    values.collect()
}

/// The text of each `#[doc = "..."]` of `attrs`, as written (ADK-Rust's `#[tool]` reads
/// these, each trimmed, joined with a space).
pub(crate) fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    let lines = attrs.iter().filter(|attr| attr.path().is_ident("doc")).filter_map(|attr| match &attr.meta {
        Meta::NameValue(doc) => match &doc.value {
            Expr::Lit(ExprLit { lit: Lit::Str(text), .. }) => Some(text.value()),
            _ => None,
        },
        _ => None,
    });
    lines.collect()
}

/// The doc comment of `tool`'s status function, and the description of an ADK status tool:
/// the key's `fields` it takes, and the states it reads (the approval states too when the
/// tool asks for approval, since APPROVAL_REQUIRED sends the model there).
pub(crate) fn status_doc(tool: &str, approvals: bool, fields: &str) -> String {
    let states = "not found, in progress, completed (with its result), failed, or unknown (a call stopped before it \
                  finished; it may still record its result, so check again later)";
    let never = "Never reserves or runs anything; call it when a call's outcome is unknown, e.g. after a timeout";
    match approvals {
        false => format!("Read-only status of `{tool}` for these key fields ({fields}): {states}. {never}."),
        true => format!(
            "Read-only status of `{tool}` for these key fields ({fields}): {states}; while a person's approval is \
             involved, awaiting_approval, approved, declined or approval_expired. {never}, or to see the decision \
             after APPROVAL_REQUIRED."
        ),
    }
}

/// The tool's summary, as an approval request names it: the first sentence of its doc
/// comment (up to the first `. ` or the first paragraph's end), or nothing.
pub(crate) fn summary(attrs: &[Attribute]) -> String {
    let Some(docs) = description(attrs) else { return String::new() };
    let paragraph = docs.split("\n\n").next().unwrap_or(&docs).trim();
    match paragraph.find(". ") {
        Some(end) => paragraph[..=end].to_owned(),
        None => paragraph.to_owned(),
    }
}

/// Doc lines (each `#[doc]` value, which may hold several lines) as Markdown paragraphs:
/// one leading space stripped per line, the lines of a paragraph joined with one space,
/// paragraphs separated by a blank line. A line break stays before a list item (`- `,
/// `* `, `+ `, `1. `), around a heading or a table row, and inside a ``` fence.
pub(crate) fn paragraphs(docs: &[String]) -> String {
    let mut out = String::new();
    let mut fence: Option<&str> = None;
    let mut blank = false;
    let mut line_ends_block = false;
    for line in docs.iter().flat_map(|doc| doc.split('\n')) {
        let line = line.strip_prefix(' ').unwrap_or(line).trim_end();
        let text = line.trim_start();
        if let Some(marker) = fence {
            out.push('\n');
            out.push_str(line);
            if text.starts_with(marker) {
                fence = None;
                line_ends_block = true;
            }
            continue;
        }
        if text.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        let opens_fence = ["```", "~~~"].into_iter().find(|marker| text.starts_with(marker));
        let own_line = opens_fence.is_some() || is_list_item(text) || is_heading(text) || text.starts_with('|');
        if !out.is_empty() {
            out.push_str(if blank {
                "\n\n"
            } else if own_line || line_ends_block {
                "\n"
            } else {
                " "
            });
        }
        // A list item keeps its indentation (nesting); a joined line does not.
        out.push_str(if own_line { line } else { text });
        blank = false;
        fence = opens_fence;
        line_ends_block = is_heading(text) || text.starts_with('|');
    }
    out
}

fn is_list_item(text: &str) -> bool {
    if ["- ", "* ", "+ "].iter().any(|bullet| text.starts_with(bullet)) {
        return true;
    }
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (text[digits..].starts_with(". ") || text[digits..].starts_with(") "))
}

fn is_heading(text: &str) -> bool {
    let hashes = text.chars().take_while(|&c| c == '#').count();
    (1..=6).contains(&hashes) && text[hashes..].starts_with(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(lines: &[&str]) -> String {
        paragraphs(&lines.iter().map(|line| (*line).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn lines_of_a_paragraph_are_joined_and_paragraphs_kept() {
        assert_eq!(
            joined(&[
                " Create and send the invoice. Safe to retry: a",
                " second call never sends twice.",
                "",
                " Second."
            ]),
            "Create and send the invoice. Safe to retry: a second call never sends twice.\n\nSecond."
        );
        assert_eq!(joined(&[" One line."]), "One line.");
        assert_eq!(joined(&["", " ", " Text", "", ""]), "Text", "blank lines at either end go");
        assert_eq!(joined(&["  indented  ", "  more"]), "indented more");
    }

    #[test]
    fn list_items_keep_their_line_breaks() {
        assert_eq!(
            joined(&[
                " Outcomes:",
                " - completed, with the",
                "   result",
                " - not found",
                " * starred",
                " 1. first",
                " 10) tenth"
            ]),
            "Outcomes:\n- completed, with the result\n- not found\n* starred\n1. first\n10) tenth"
        );
        assert_eq!(joined(&[" - a", "   - nested"]), "- a\n  - nested");
        assert_eq!(joined(&[" -not a list", " 2026-10 is a period"]), "-not a list 2026-10 is a period");
    }

    #[test]
    fn fences_headings_and_tables_keep_their_lines() {
        assert_eq!(
            joined(&[" Example:", " ```json", " {\"customer\":", "   \"acme\"}", "", " ```", " After."]),
            "Example:\n```json\n{\"customer\":\n  \"acme\"}\n\n```\nAfter."
        );
        assert_eq!(joined(&[" # Title", " Text", " more"]), "# Title\nText more");
        assert_eq!(joined(&[" | a | b |", " | - | - |", " Text"]), "| a | b |\n| - | - |\nText");
        assert_eq!(joined(&[" #hashtag", " text"]), "#hashtag text");
    }

    #[test]
    fn block_comments_and_several_lines_in_one_attribute() {
        assert_eq!(joined(&["\n Send the invoice\n for one period.\n"]), "Send the invoice for one period.");
    }

    #[test]
    fn only_literal_doc_comments_are_joined() {
        let item: syn::ItemFn = syn::parse_quote! {
            /// Send the
            /// invoice.
            #[doc(hidden)]
            fn f() {}
        };
        assert_eq!(description(&item.attrs).as_deref(), Some("Send the invoice."));
        let included: syn::ItemFn = syn::parse_quote! {
            /// Send.
            #[doc = include_str!("send.md")]
            fn f() {}
        };
        assert_eq!(description(&included.attrs), None);
        let undocumented: syn::ItemFn = syn::parse_quote!(
            fn f() {}
        );
        assert_eq!(description(&undocumented.attrs), None);
    }
}
