-- A participant is looked up by a key of their own on every page: the session secret
-- (public_id, unique already), the shared key of a browser resumed by Prolific id
-- (resume_id) or, at the Prolific entry, the Prolific id (prolific_pid). The lookups read the key
-- alone and check the study afterwards (store::pg_pages::ByKey, issue #19): on Postgres a
-- prepared statement's generic plan, made while the table is nearly empty, otherwise walks
-- every participant of the study through an index that starts with study_id. These indexes
-- serve that read; they are partial, so participants without the key cost nothing here, and
-- neither column changes after it is set (no lost HOT updates on Postgres).
CREATE INDEX participants_resume_key ON participants (resume_id) WHERE resume_id IS NOT NULL;
CREATE INDEX participants_prolific_key ON participants (prolific_pid) WHERE prolific_pid IS NOT NULL;
