-- Exclusion rules (issue #15, point 4): which evidence signals leave a participant out of the
-- analysis, set per study before launch (`signals`: a JSON list of signal names). Its own
-- table keyed by study, not a column of `studies`. Changes are audited (audit_log); the time
-- of the last one, and whether it came after the study opened, is what the report's header
-- shows.
CREATE TABLE study_exclusions (
    study_id BIGINT PRIMARY KEY REFERENCES studies(id) ON DELETE CASCADE,
    signals TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    changed_after_opening BOOLEAN NOT NULL
);
