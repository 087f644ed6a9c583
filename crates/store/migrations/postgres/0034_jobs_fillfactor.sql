-- Room on each page of the job table (issue 31). A job's row is written three times
-- (inserted, claimed, finished), and none of those updates can be HOT (the state is in the
-- partial indexes' predicates). With every page packed full, each new version went to a page
-- added at the end of the table, where all the claimers and completers of a busy queue met;
-- with a fifth of each page left free, a new version that fits lands on the page of the old
-- one, which the statement already holds, and PostgreSQL's page pruning makes room there again
-- once the old version is dead (a tenth free was too little to matter: docs/benchmarks-history.md). Only pages written from now on are
-- filled to 80 %: the setting rewrites nothing, and takes a lock that does not block reads or
-- writes.
ALTER TABLE jobs SET (fillfactor = 80);
