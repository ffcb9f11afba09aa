//! Short functions: no function outside the tests is over [`MAX_LINES`] lines, from its `fn`
//! line to its closing brace. A long function is several steps that each deserve a name.

use std::path::Path;

use crate::module_cycles::{CRATES, rust_files, without_test_modules};

/// The longest a function may be, in lines.
const MAX_LINES: usize = 100;

/// `line` without its comment and the insides of its string and character literals, so that
/// braces there are not counted.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            '\'' if !in_string => {
                // A character literal ('{', '\'') or a lifetime ('a): skip a literal whole.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            c if !in_string => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `line` opens a function (`fn name`, after any qualifiers).
fn function_name(line: &str) -> Option<&str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let qualifiers = &words[..at];
    let plain = qualifiers.iter().all(|w| {
        matches!(*w, "pub" | "async" | "const" | "unsafe" | "extern")
            || w.starts_with("pub(")
            || w.starts_with('"')
    });
    let name = words.get(at + 1)?;
    plain.then(|| name.split(['(', '<']).next().unwrap_or(name))
}

/// Every function over [`MAX_LINES`] lines in `text`, with its first line and its length.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<String> = text.lines().map(code_of).collect();
    let mut long = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = function_name(&lines[i]) else {
            i += 1;
            continue;
        };
        let (mut depth, mut opened, mut j) = (0i32, false, i);
        while j < lines.len() {
            for c in lines[j].chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            // A declaration without a body (in a trait) ends at its semicolon.
            if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        let length = j - i + 1;
        if opened && length > MAX_LINES {
            long.push((name.to_string(), i + 1, length));
        }
        // A function's body is not searched again: nested functions count in their parent.
        i = j + 1;
    }
    long
}

#[test]
fn no_function_outside_the_tests_is_over_a_hundred_lines() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&workspace.join(krate), &mut files);
        for file in files {
            let text = without_test_modules(&std::fs::read_to_string(&file).unwrap());
            for (name, line, length) in long_functions(&text) {
                let at = file.strip_prefix(workspace).unwrap_or(&file).display();
                long.push(format!("{at}:{line} {name}: {length} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines (give their steps names of their own):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_sees_a_long_function_and_not_braces_in_strings() {
    let body = "    let x = \"{\";\n".repeat(MAX_LINES);
    let long = format!("pub async fn long(a: u32) -> u32 {{\n{body}}}\nfn short() {{}}\n");
    assert_eq!(
        long_functions(&long),
        vec![("long".to_string(), 1, MAX_LINES + 2)]
    );
    let short = "fn short() {\n    let c = '{';\n}\nfn after() {\n}\n";
    assert!(long_functions(short).is_empty());
}
