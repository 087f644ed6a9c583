//! The nodes' heartbeats ([`crate::NodeStore::node_heartbeat`] and its list and prune),
//! written once over [`SqlDb`].

use super::{SqlDb, SqlRun};
use crate::binds;
use crate::{NodeHeartbeat, NodeList, NodePrune, NodeRecord, Result};

/// Upsert the node's row; a leader clears the others' leader mark in the same transaction.
pub async fn node_heartbeat<D: SqlDb>(db: &D, p: NodeHeartbeat) -> Result<()> {
    let mut tx = db.begin("node heartbeat").await?;
    {
        let mut run = D::in_tx(&mut tx);
        run.execute(
            "node heartbeat",
            "INSERT INTO nodes (id, started_at, last_heartbeat_at, leader)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at,
                last_heartbeat_at = excluded.last_heartbeat_at, leader = excluded.leader",
            binds![p.id.clone(), p.started_at, p.at, p.leader],
        )
        .await?;
        if p.leader {
            run.execute(
                "node heartbeat leader",
                "UPDATE nodes SET leader = $2 WHERE id <> $1 AND leader = $3",
                binds![p.id, false, true],
            )
            .await?;
        }
    }
    db.commit(tx, "node heartbeat").await
}

/// Every node with a row, and every node holding running jobs, by id.
pub async fn node_list(run: &mut impl SqlRun, _p: NodeList) -> Result<Vec<NodeRecord>> {
    let mut nodes = run
        .fetch(
            "node list",
            "SELECT id, started_at, last_heartbeat_at, leader FROM nodes ORDER BY id",
            vec![],
            &|r| {
                Ok(NodeRecord {
                    id: r.text("id")?,
                    started_at: Some(r.ts("started_at")?),
                    last_heartbeat_at: Some(r.ts("last_heartbeat_at")?),
                    leader: r.boolean("leader")?,
                    running: 0,
                })
            },
        )
        .await?;
    // The partial index of running jobs (jobs_lease) holds only what runs now.
    let running = run
        .fetch(
            "node running",
            "SELECT locked_by, COUNT(*) AS n FROM jobs
             WHERE state = 'running' AND locked_by IS NOT NULL GROUP BY locked_by",
            vec![],
            &|r| Ok((r.text("locked_by")?, r.int("n")?)),
        )
        .await?;
    for (node, n) in running {
        match nodes.iter_mut().find(|x| x.id == node) {
            Some(x) => x.running = n,
            None => nodes.push(NodeRecord {
                id: node,
                started_at: None,
                last_heartbeat_at: None,
                leader: false,
                running: n,
            }),
        }
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(nodes)
}

/// Delete the nodes silent since before `p.silent_before`.
pub async fn node_prune(run: &mut impl SqlRun, p: NodePrune) -> Result<u64> {
    run.execute(
        "node prune",
        "DELETE FROM nodes WHERE last_heartbeat_at < $1",
        binds![p.silent_before],
    )
    .await
}
