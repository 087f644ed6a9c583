-- SQLite only: its CHECK constraints on the job tables' states are rewritten without IN lists,
-- which SQLite evaluates by building a temporary b-tree per statement (see its 0035).
-- PostgreSQL compares an IN list in place, so this version changes nothing here.
SELECT 1;
