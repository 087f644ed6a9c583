//! The shape issue 32 asked for, checked on the sources: one node builder, used by the
//! embedding crate without the HTTP server; kinds that are values (no global registry, no
//! handler registry); stores that read no kind's payload.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// Every `.rs` file of the crates' sources (`crates/*/src`), not their tests.
fn sources() -> Vec<PathBuf> {
    rust_files(&workspace().join("crates"))
        .into_iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "src"))
        .collect()
}

/// Every `.rs` file under `dir` (bounded: the repository's sources).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "target") {
                    todo.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
        assert!(out.len() < 20_000, "walked too far: {}", d.display());
    }
    out
}

/// The workspace crates `krate` depends on (normal dependencies, by directory name under
/// `crates/`), read from its `Cargo.toml`'s `[dependencies]` table.
fn workspace_deps(krate: &str) -> BTreeSet<String> {
    let toml = std::fs::read_to_string(workspace().join("crates").join(krate).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{krate}/Cargo.toml: {e}"));
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
        if let Some(dir) = name.strip_prefix("kairos-") {
            out.insert(dir.to_string());
        }
    }
    out
}

#[test]
fn embed_does_not_depend_on_the_server_directly_or_through_another_crate() {
    let mut seen = BTreeSet::new();
    let mut todo = vec!["embed".to_string()];
    while let Some(k) = todo.pop() {
        assert!(seen.len() < 64, "dependency walk too long");
        for d in workspace_deps(&k) {
            assert_ne!(d, "server", "kairos-{k} depends on kairos-server");
            if seen.insert(d.clone()) {
                todo.push(d);
            }
        }
    }
    assert!(
        seen.contains("app"),
        "kairos-embed builds its node with kairos-app: {seen:?}"
    );
}

#[test]
fn exactly_one_node_builder_type_in_the_crates() {
    let builders: Vec<_> = sources()
        .into_iter()
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|s| s.contains("pub struct NodeBuilder")))
        .collect();
    assert_eq!(builders.len(), 1, "{builders:?}");
    assert!(
        builders[0].ends_with("crates/app/src/node/mod.rs"),
        "{builders:?}"
    );
    assert!(
        !workspace_deps("cli").is_empty() && workspace_deps("cli").contains("app"),
        "the CLI takes its settings from kairos-app"
    );
}

#[test]
fn no_global_kind_registry_and_no_handler_registry() {
    for p in sources() {
        let s = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(!s.contains("HandlerRegistry"), "{}", p.display());
        for line in s.lines() {
            let global = [
                "static ",
                "thread_local!",
                "LazyLock",
                "OnceLock",
                "OnceCell",
            ]
            .iter()
            .any(|g| line.contains(g));
            assert!(
                !(global && line.contains("Kinds")),
                "{}: a global kind registry: {line}",
                p.display()
            );
        }
    }
}

#[test]
fn no_store_sql_reads_a_jobs_topic_variant_or_recipient_out_of_its_payload() {
    let ws = workspace();
    for krate in ["store", "store-sqlite", "store-postgres"] {
        for p in rust_files(&ws.join("crates").join(krate).join("src")) {
            let s = std::fs::read_to_string(&p).unwrap_or_default();
            for field in ["topic", "variant", "recipient_id"] {
                for quoted in [format!("'{field}'"), format!("'$.{field}'")] {
                    // A key read out of a payload: `payload ->> 'topic'`,
                    // `json_extract(payload, '$.topic')` (not the insert's own batch keys).
                    for (i, _) in s.match_indices(&quoted) {
                        let mut b = i.saturating_sub(24);
                        while !s.is_char_boundary(b) {
                            b -= 1;
                        }
                        let before = &s[b..i];
                        assert!(
                            !before.contains("payload"),
                            "{} reads {quoted} out of a payload: …{before}{quoted}",
                            p.display()
                        );
                    }
                }
            }
        }
    }
}
