//! The fenced blocks of a Markdown document that the docs test runs, the shell script made
//! of them, and the check of the output a `console` block shows.
//!
//! The convention (the README's "Documentation" section says it for writers):
//! - ```` ```sh ```` (or `bash`, `shell`) blocks run as they are, in document order, in one
//!   shell session per document;
//! - ```` ```console ```` blocks hold `$ command` lines (a line ending in `\` continues on the
//!   next), each followed by the output it prints; the output is checked, `…` standing for
//!   any text within a line and a line holding only `…` for any number of lines;
//! - a block whose info string has the word `norun` (```` ```sh norun ````) is shown, not run
//!   (a build, a deployment, a command that serves forever); the test counts them;
//! - other blocks (`json`, `toml`, `text`, `rust`, …) are not shell.
#![allow(dead_code)] // each test binary uses a different part of this module

/// How a block is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Commands run as written.
    Shell,
    /// `$ command` lines, each followed by its expected output.
    Console,
}

/// One fenced block to run (or counted as not run).
#[derive(Debug, Clone)]
pub struct Block {
    /// 1-based line of its opening fence.
    pub line: usize,
    /// How it runs.
    pub lang: Lang,
    /// Marked `norun`: shown, not run.
    pub norun: bool,
    /// The lines between the fences.
    pub text: String,
}

/// One `$ command` of a console block and the output shown after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleStep {
    /// 1-based line of the `$` in the document.
    pub line: usize,
    /// The command, continuation lines joined with newlines.
    pub command: String,
    /// The output lines shown.
    pub expected: Vec<String>,
}

/// The shell and console blocks of `markdown`, in order.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Option<Lang>, bool, Vec<&str>)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            None if fence => {
                let info = line.trim_start().trim_start_matches('`').trim();
                let lang = match info.split_whitespace().next() {
                    Some("sh" | "bash" | "shell") => Some(Lang::Shell),
                    Some("console") => Some(Lang::Console),
                    _ => None,
                };
                let norun = info.split_whitespace().any(|w| w == "norun");
                open = Some((i + 1, lang, norun, Vec::new()));
            }
            None => {}
            Some((start, Some(lang), norun, body)) if fence => out.push(Block {
                line: start,
                lang,
                norun,
                text: body.join("\n"),
            }),
            Some((_, None, _, _)) if fence => {}
            Some((start, lang, norun, mut body)) => {
                body.push(line);
                open = Some((start, lang, norun, body));
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// The steps of a console block starting at document line `line`.
pub fn console_steps(block: &Block) -> Vec<ConsoleStep> {
    let mut steps: Vec<ConsoleStep> = Vec::new();
    let mut continuing = false;
    for (i, l) in block.text.lines().enumerate() {
        let doc_line = block.line + 1 + i;
        if continuing {
            let step = steps.last_mut().expect("a continued command");
            step.command.push('\n');
            step.command.push_str(l);
            continuing = l.ends_with('\\');
        } else if let Some(cmd) = l.strip_prefix("$ ") {
            steps.push(ConsoleStep {
                line: doc_line,
                command: cmd.to_string(),
                expected: Vec::new(),
            });
            continuing = cmd.ends_with('\\');
        } else {
            let step = steps.last_mut().unwrap_or_else(|| {
                panic!("line {doc_line}: a console block starts with output, not `$ command`")
            });
            step.expected.push(l.to_string());
        }
    }
    steps
}

/// Whether `actual` is what `expected` shows: line by line, trailing blanks ignored, `…`
/// matching any text within a line and a line of only `…` any number of lines.
pub fn output_matches(expected: &[String], actual: &str) -> bool {
    let actual: Vec<&str> = actual.lines().map(str::trim_end).collect();
    let expected: Vec<&str> = expected.iter().map(|l| l.trim_end()).collect();
    let trim = |v: &[&str]| {
        let mut n = v.len();
        while n > 0 && v[n - 1].is_empty() {
            n -= 1;
        }
        n
    };
    lines_match(&expected[..trim(&expected)], &actual[..trim(&actual)])
}

fn lines_match(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"…", rest)) => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((first, rest)) => match actual.split_first() {
            Some((a, arest)) => line_matches(first, a) && lines_match(rest, arest),
            None => false,
        },
    }
}

/// One line: `…` matches any text (also none).
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// A shell-quoted string (single quotes).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The script of one document: its runnable blocks in order, each announced (so a failure
/// names the block), console commands' standard output written to `$DOCS_OUT/<n>` (n counting
/// the document's console steps from 0). Returns the script and the console steps in order.
pub fn script(doc: &str, blocks: &[Block]) -> (String, Vec<ConsoleStep>) {
    let mut s = String::from(
        "set -Eeo pipefail\n\
         # An HTTP error answer fails the command, as a non-zero exit does.\n\
         curl() { command curl --fail-with-body \"$@\"; }\n\
         __at() { DOCS_AT=\"$1\"; echo \"docs_run: $1\" >&2; }\n\
         trap 'echo \"docs_run: FAILED (exit $?) in the block at $DOCS_AT\" >&2' ERR\n",
    );
    let mut steps = Vec::new();
    for b in blocks.iter().filter(|b| !b.norun) {
        match b.lang {
            Lang::Shell => {
                s.push_str(&format!("__at {}\n", quote(&format!("{doc}:{}", b.line))));
                s.push_str(&b.text);
                s.push('\n');
            }
            Lang::Console => {
                for step in console_steps(b) {
                    s.push_str(&format!(
                        "__at {}\n{{\n{}\n}} > \"$DOCS_OUT/{}\"\n",
                        quote(&format!("{doc}:{}", step.line)),
                        step.command,
                        steps.len()
                    ));
                    steps.push(step);
                }
            }
        }
    }
    s.push_str("echo 'docs_run: every block ran' >&2\n");
    (s, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_blocks_are_found_with_their_language_and_norun_mark() {
        let md = "# t\n```sh\necho a\n```\n```json\n{}\n```\n```sh norun\ncargo install\n```\n```console\n$ echo b\nb\n```\n";
        let b = blocks(md);
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].line, b[0].lang, b[0].norun), (2, Lang::Shell, false));
        assert!(b[1].norun);
        assert_eq!(b[2].lang, Lang::Console);
        let steps = console_steps(&b[2]);
        assert_eq!(steps[0].command, "echo b");
        assert_eq!(steps[0].expected, vec!["b".to_string()]);
        assert_eq!(steps[0].line, 12);
    }

    #[test]
    fn ellipsis_matches_text_within_a_line_and_whole_lines() {
        assert!(line_matches("id: job_…", "id: job_123"));
        assert!(!line_matches("id: job_…", "id: sch_123"));
        assert!(line_matches("a…b…c", "a-x-b-y-c"));
        assert!(!line_matches("a…b", "ba"));
        let exp = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(output_matches(&exp(&["1", "…", "4"]), "1\n2\n3\n4\n"));
        assert!(output_matches(&exp(&["1", "…", "4"]), "1\n4"));
        assert!(!output_matches(&exp(&["1", "4"]), "1\n2\n4"));
        assert!(!output_matches(&exp(&["1"]), "2"));
    }
}
