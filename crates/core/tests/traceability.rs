//! `docs/traceability.md` cites only what exists: every file or folder its tables name is in
//! the repository, every test named in a tests column is a `fn` of that name in the file
//! cited before it in the same cell (or anywhere under `crates/` or `examples/` when no `.rs`
//! file precedes it), and every `Type::member` of a code column names a type and a function,
//! field, constant or variant that exist. A workspace-wide check, kept in this small crate so
//! that it builds and runs in seconds.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` (no `target`, no dot folders), with its text when it is a source
/// file (`.rs`, `.sql`, `.html`, `.toml`, `.sh`).
fn walk(dir: &Path, out: &mut Vec<(PathBuf, Option<String>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            walk(&path, out);
        } else {
            let source = ["rs", "sql", "html", "toml", "sh"]
                .iter()
                .any(|x| path.extension().is_some_and(|e| e == *x));
            let text = source.then(|| std::fs::read_to_string(&path).unwrap_or_default());
            out.push((path, text));
        }
    }
}

/// What the repository defines: per file (by canonical path), the names after `fn`, `const`
/// and `static` and the words; the same for all files together; and every `name:` at the
/// start of a line (fields).
struct Index {
    files: Vec<(PathBuf, Option<String>)>,
    fns_by_file: HashMap<PathBuf, HashSet<String>>,
    words_by_file: HashMap<PathBuf, HashSet<String>>,
    fns: HashSet<String>,
    fields: HashSet<String>,
    words: HashSet<String>,
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Index {
    fn build() -> Index {
        let root = root();
        let mut files = Vec::new();
        for dir in ["crates", "examples", "tests"] {
            walk(&root.join(dir), &mut files);
        }
        let (mut fns_by_file, mut words_by_file, mut fns, mut fields, mut words) = (
            HashMap::new(),
            HashMap::new(),
            HashSet::new(),
            HashSet::new(),
            HashSet::new(),
        );
        for (path, text) in &files {
            let Some(text) = text else { continue };
            let toks: Vec<&str> = text
                .split(|c: char| !is_ident_char(c))
                .filter(|w| !w.is_empty())
                .collect();
            let mut mine = HashSet::new();
            for pair in toks.windows(2) {
                if pair[0] == "fn" || pair[0] == "const" || pair[0] == "static" {
                    mine.insert(pair[1].to_string());
                }
            }
            let mine_words: HashSet<String> = toks.iter().map(|w| w.to_string()).collect();
            words.extend(mine_words.iter().cloned());
            // A field or a named argument: `name: Type`.
            for line in text.lines() {
                let t = line.trim_start().trim_start_matches("pub ");
                let t = t.trim_start_matches("pub(crate) ");
                if let Some((name, _)) = t.split_once(':')
                    && !name.is_empty()
                    && name.chars().all(is_ident_char)
                {
                    fields.insert(name.to_string());
                }
            }
            fns.extend(mine.iter().cloned());
            let key = path.canonicalize().unwrap_or_else(|_| path.clone());
            fns_by_file.insert(key.clone(), mine);
            words_by_file.insert(key, mine_words);
        }
        Index {
            files,
            fns_by_file,
            words_by_file,
            fns,
            fields,
            words,
        }
    }
}

/// The cells of each row of the document's tables (header and `|---|` rows left out).
fn rows(doc: &str) -> Vec<Vec<String>> {
    doc.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.len() >= 4 && !cells[0].starts_with("---") && cells[0] != "id")
        .collect()
}

/// The backticked spans of a cell, in order.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Each backticked path of `cell` followed by ` (`, with the lowercase names (`claim`,
/// `run_once`) backticked inside those parentheses, up to the one that closes them.
fn named_in(cell: &str) -> Vec<(String, Vec<String>)> {
    let parts: Vec<&str> = cell.split('`').collect();
    let mut out = Vec::new();
    // Odd parts are spans, even parts the text between them.
    for i in (1..parts.len()).step_by(2) {
        if !is_path(parts[i]) || !parts.get(i + 1).is_some_and(|t| t.starts_with(" (")) {
            continue;
        }
        let mut depth = 0i32;
        let mut names = Vec::new();
        'group: for (j, part) in parts.iter().enumerate().skip(i + 1) {
            if j % 2 == 1 {
                let lower = part.starts_with(|c: char| c.is_ascii_lowercase());
                if depth > 0 && lower && part.chars().all(is_ident_char) {
                    names.push(part.to_string());
                }
                continue;
            }
            for c in part.chars() {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                if depth == 0 && c == ')' {
                    break 'group;
                }
            }
        }
        out.push((parts[i].to_string(), names));
    }
    out
}

/// The paths a cited path stands for: `{a,b}` expanded.
fn expand(path: &str) -> Vec<String> {
    if let (Some(open), Some(close)) = (path.find('{'), path.find('}'))
        && open < close
    {
        return path[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
            .collect();
    }
    vec![path.to_string()]
}

const ROOTS: [&str; 8] = [
    "crates/",
    "docs/",
    "scripts/",
    "packaging/",
    "examples/",
    "fuzz/",
    ".ci/",
    ".cargo/",
];

/// A span that is a path: no spaces; rooted at one of [`ROOTS`], or a file name with a
/// source extension (`feeds.rs`, `templates/bulk_confirm.html`).
fn is_path(span: &str) -> bool {
    if span.contains(' ') || span.contains('<') || span.contains('…') {
        return false;
    }
    ROOTS.iter().any(|r| span.starts_with(r))
        || [".rs", ".sql", ".html", ".sh", ".toml"]
            .iter()
            .any(|x| span.ends_with(x) && !span.contains("::"))
}

/// Whether the cited path exists: from the repository root when rooted, else as the end of
/// some file's path (`feeds.rs`); one `*` segment matches any entry.
fn exists(index: &Index, path: &str) -> bool {
    let root = root();
    if !ROOTS.iter().any(|r| path.starts_with(r)) {
        let tail = format!("/{path}");
        return index
            .files
            .iter()
            .any(|(p, _)| p.to_string_lossy().ends_with(&tail));
    }
    if let Some((before, after)) = path.split_once("/*/") {
        let Ok(entries) = std::fs::read_dir(root.join(before)) else {
            return false;
        };
        return entries.flatten().any(|e| e.path().join(after).exists());
    }
    root.join(path).exists()
}

/// A test name: a lowercase identifier with an underscore (not an abbreviation with `…`).
fn is_test_name(span: &str) -> bool {
    span.contains('_')
        && !span.starts_with('_')
        && span
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn problems(doc: &str, index: &Index) -> BTreeSet<String> {
    let root = root();
    let mut bad = BTreeSet::new();
    for cells in rows(doc) {
        let id = &cells[0];
        let (code, tests) = (&cells[cells.len() - 2], &cells[cells.len() - 1]);
        for cell in &cells {
            for span in spans(cell) {
                if is_path(&span) {
                    for p in expand(&span) {
                        if !exists(index, &p) {
                            bad.insert(format!("{id}: no file or folder `{p}`"));
                        }
                    }
                }
            }
        }
        // `Type::member` in the code column.
        for span in spans(code) {
            let Some((ty, member)) = span.split_once("::") else {
                continue;
            };
            let ident = |s: &str| !s.is_empty() && s.chars().all(is_ident_char);
            if !ident(ty) || !ident(member) {
                continue;
            }
            if !index.words.contains(ty) {
                bad.insert(format!("{id}: no type `{ty}` (cited as `{span}`)"));
            }
            let found = if member.starts_with(|c: char| c.is_ascii_uppercase()) {
                index.words.contains(member)
            } else {
                index.fns.contains(member) || index.fields.contains(member)
            };
            if !found {
                bad.insert(format!(
                    "{id}: no function, field or constant `{member}` (cited as `{span}`)"
                ));
            }
        }
        // A bare name in the parentheses right after a cited `.rs` file (`native.rs` (`claim`,
        // `dead_undecodable`)) is a word of that file.
        for (path, names) in named_in(code) {
            if !(path.ends_with(".rs") && path.starts_with("crates/")) {
                continue;
            }
            let words = root
                .join(&path)
                .canonicalize()
                .ok()
                .and_then(|f| index.words_by_file.get(&f));
            for name in names {
                if !words.is_some_and(|w| w.contains(&name)) {
                    bad.insert(format!("{id}: no `{name}` in {path}"));
                }
            }
        }
        // Test names, each looked up in the `.rs` file cited before it, up to the next `;`
        // outside parentheses (`file.rs`: `a`, `b`; `other.rs`: `c`), or anywhere when none
        // is; a name in parentheses after a file is a remark on its tests, not one of them.
        let mut file: Option<PathBuf> = None;
        let mut depth = 0i32;
        for (i, part) in tests.split('`').enumerate() {
            if i % 2 == 0 {
                for c in part.chars() {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        ';' if depth == 0 => file = None,
                        _ => {}
                    }
                }
                continue;
            }
            if is_path(part) {
                file =
                    (part.ends_with(".rs") && part.starts_with("crates/")).then(|| root.join(part));
                continue;
            }
            if !is_test_name(part) || (depth > 0 && file.is_some()) {
                continue;
            }
            let found = match &file {
                Some(f) => f
                    .canonicalize()
                    .ok()
                    .and_then(|f| index.fns_by_file.get(&f))
                    .is_some_and(|fns| fns.contains(part)),
                None => index.fns.contains(part),
            };
            if !found {
                bad.insert(format!(
                    "{id}: no test `fn {part}` in {}",
                    shown(file.as_deref())
                ));
            }
        }
    }
    bad
}

/// A cited file as the report names it: from the repository root.
fn shown(file: Option<&Path>) -> String {
    let root = root();
    file.map_or("any source file".to_string(), |f| {
        f.strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned()
    })
}

#[test]
fn every_path_test_and_function_that_traceability_cites_exists() {
    let doc = std::fs::read_to_string(root().join("docs/traceability.md"))
        .expect("read docs/traceability.md");
    let index = Index::build();
    assert!(
        rows(&doc).len() > 60,
        "the tables were not read: {} rows",
        rows(&doc).len()
    );
    let bad = problems(&doc, &index);
    assert!(
        bad.is_empty(),
        "docs/traceability.md cites {} things that do not exist:\n{}",
        bad.len(),
        bad.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The check itself finds a moved file, a missing test and a missing function.
#[test]
fn the_check_reports_a_moved_file_a_missing_test_and_a_missing_function() {
    let index = Index::build();
    let doc = "| id | what | code | tests |\n|---|---|---|---|\n\
        | X-1 | r | `crates/engine/src/handlers/email.rs`; `RetryPolicy::default_for_kind`; \
        `RetryPolicy::decide`; `crates/core/src/retry.rs` (`decide`, `check_digest_budget`) \
        | `crates/core/tests/traceability.rs`: \
        `the_check_reports_a_moved_file_a_missing_test_and_a_missing_function`, \
        `no_such_test_anywhere` |\n";
    let bad = problems(doc, &index);
    let want: BTreeSet<String> = [
        "X-1: no file or folder `crates/engine/src/handlers/email.rs`",
        "X-1: no function, field or constant `default_for_kind` (cited as `RetryPolicy::default_for_kind`)",
        "X-1: no `check_digest_budget` in crates/core/src/retry.rs",
    ]
    .into_iter()
    .map(String::from)
    // Built, so that this file holds no `fn` followed by the missing test's name.
    .chain([format!(
        "X-1: no test `{} no_such_test_anywhere` in crates/core/tests/traceability.rs",
        "fn"
    )])
    .collect();
    assert_eq!(bad, want);
}
