-- Postgres only (see its migration of the same name): there a prepared statement's generic
-- plan, made while participants is nearly empty, walked every participant of the study through
-- an index that starts with study_id, so the key lookups read the key alone through these
-- partial indexes. SQLite plans each statement when it is prepared, and its planner takes the
-- unique (study_id, key) indexes for the same lookups; it needs no more indexes to maintain.
SELECT 1;
