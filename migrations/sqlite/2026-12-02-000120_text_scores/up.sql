-- Scores of free-text answers (#18): one row per model trial and scorer, worked as a queue like
-- trials (status pending -> leased -> done | failed, a lease that expires when its worker dies).
-- score_ppm is the score in [0, 1] times 1,000,000 (the schema keeps to types both backends
-- share, and no float is one of them); scorer_version is what the scorer said it was, so a
-- report never mixes two versions of one classifier without saying so.
CREATE TABLE text_scores (
    id INTEGER PRIMARY KEY,
    trial_id BIGINT NOT NULL REFERENCES model_trials(id) ON DELETE CASCADE,
    scorer TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_at TIMESTAMP,
    scorer_version TEXT,
    score_ppm BIGINT,
    reason TEXT,
    error TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    scored_at TIMESTAMP,
    UNIQUE (trial_id, scorer)
);
CREATE INDEX text_scores_scorer_status ON text_scores (scorer, status);
