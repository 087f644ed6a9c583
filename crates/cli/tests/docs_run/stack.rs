//! What a document runs against, as a new user would set it up: one `kairos serve` on a
//! fresh SQLite data directory, or two `kairos serve` nodes on one fresh PostgreSQL schema
//! behind a round-robin TCP proxy (a load balancer: consecutive connections go to
//! alternate nodes). Node 2 is started without `KAIROS_API_TOKEN`, so it takes the cluster's
//! token from the database; the docs' shell runs in node 1's folder (`cat api-token`), with
//! the database in its environment so the docs' local `kairos` commands reach the same data.

use crate::common::Server;
use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// The secret key every PostgreSQL node is given (`kairos key generate`).
const SECRET_KEY: &str = "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=";

/// The most connections the proxy forwards (a bound; a document makes a few hundred).
const PROXY_MAX_CONNECTIONS: usize = 20_000;

/// The database a document runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    /// One node, SQLite.
    Sqlite,
    /// Two nodes on one PostgreSQL schema, behind a round-robin proxy.
    Postgres,
}

/// A round-robin TCP proxy on 127.0.0.1: connection `n` goes to backend `n % len`.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Connections forwarded, per backend.
    pub forwarded: Arc<Vec<AtomicUsize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(backends: Vec<SocketAddr>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let base = format!("http://{}", listener.local_addr().expect("proxy addr"));
        let forwarded: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = forwarded.clone();
        let task = tokio::spawn(async move {
            for n in 0..PROXY_MAX_CONNECTIONS {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    break;
                };
                let i = n % backends.len();
                counts[i].fetch_add(1, Ordering::Relaxed);
                let to = backends[i];
                tokio::spawn(async move {
                    if let Ok(mut out) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                });
            }
        });
        Proxy {
            base,
            forwarded,
            task,
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The running nodes of one document's run. Fields drop in order: the nodes (killed) before
/// the schema is dropped.
pub struct Stack {
    /// The nodes; node 1 first.
    pub nodes: Vec<Server>,
    /// `KAIROS_URL`: the node, or the proxy in front of both.
    pub base: String,
    /// The cluster's API token (node 1's `api-token`).
    pub token: String,
    /// The shell's extra environment: the database, for the docs' local `kairos` commands.
    pub env: Vec<(&'static str, String)>,
    /// The proxy (PostgreSQL).
    pub proxy: Option<Proxy>,
    /// Node 1's folder: the shell's working directory and `KAIROS_DATA_DIR`.
    pub data_dir: tempfile::TempDir,
    _other_dirs: Vec<tempfile::TempDir>,
    _schema: Option<SchemaGuard>,
}

fn addr_of(base: &str) -> SocketAddr {
    base.trim_start_matches("http://")
        .parse()
        .unwrap_or_else(|e| panic!("{base}: not an address ({e})"))
}

fn token_in(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("api-token"))
        .expect("api-token")
        .trim()
        .to_string()
}

impl Stack {
    /// Start the nodes of `db`; `None` when PostgreSQL is not reachable (skipped loudly,
    /// unless `KAIROS_TEST_POSTGRES=required`).
    pub async fn start(db: Db, doc: &str) -> Option<Stack> {
        let data_dir = tempfile::tempdir().expect("tempdir");
        if db == Db::Sqlite {
            let node = Server::start(data_dir.path(), None).await;
            return Some(Stack {
                base: node.base.clone(),
                token: token_in(data_dir.path()),
                nodes: vec![node],
                env: Vec::new(),
                proxy: None,
                data_dir,
                _other_dirs: Vec::new(),
                _schema: None,
            });
        }
        let url = database_url();
        if !reachable(&url, &format!("{doc} on two PostgreSQL nodes")).await {
            return None;
        }
        let schema = SchemaGuard::new(url.clone(), "kairos_docs");
        let env: Vec<(&'static str, String)> = vec![
            ("KAIROS_DATABASE_URL", url),
            ("KAIROS_DATABASE_SCHEMA", schema.schema.clone()),
            ("KAIROS_SECRET_KEY", SECRET_KEY.to_string()),
        ];
        let node_env = |node: &'static str| {
            let mut e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            e.push(("KAIROS_NODE", node));
            e
        };
        let n1 = Server::start_with(data_dir.path(), None, &node_env("docs-1")).await;
        let dir2 = tempfile::tempdir().expect("tempdir");
        // No token: node 2 takes the one node 1 stored (issue 35's "random 401s" behind a
        // load balancer, had each node made its own).
        let n2 = Server::start_with(dir2.path(), None, &node_env("docs-2")).await;
        let token = token_in(data_dir.path());
        assert_eq!(
            token_in(dir2.path()),
            token,
            "node 2 uses the cluster's token"
        );
        let proxy = Proxy::start(vec![addr_of(&n1.base), addr_of(&n2.base)]).await;
        Some(Stack {
            base: proxy.base.clone(),
            token,
            nodes: vec![n1, n2],
            env,
            proxy: Some(proxy),
            data_dir,
            _other_dirs: vec![dir2],
            _schema: Some(schema),
        })
    }

    /// Every node's log.
    pub fn stderr(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| format!("--- node {} ---\n{}", i + 1, n.stderr()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stop every node (each must exit cleanly), then drop the schema.
    pub async fn finish(mut self) {
        for node in std::mem::take(&mut self.nodes) {
            let status = node.terminate(Duration::from_secs(30)).await;
            assert!(status.success(), "kairos serve exited with {status}");
        }
    }
}
