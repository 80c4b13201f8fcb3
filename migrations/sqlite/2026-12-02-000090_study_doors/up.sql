-- Identity at the door (#15, point 2): per study, each check optional. A study without a row
-- has every check off and the server's per-address limit. Kept out of `studies` (other
-- settings change there) and keyed by the study.
--   require_token: a valid Prolific `prolific_token` (RS256 JWT) is needed to start;
--   token_audience: the `aud` the token must carry (our domain);
--   token_workspace_id: when set, the token's `prolific.workspace_id` must be this;
--   prolific_only: no Prolific id in the link, no entry;
--   address_limit: new participants per client address and window (NULL: the server's).
CREATE TABLE study_doors (
    study_id BIGINT PRIMARY KEY REFERENCES studies(id) ON DELETE CASCADE,
    require_token BOOLEAN NOT NULL,
    token_audience TEXT,
    token_workspace_id TEXT,
    prolific_only BOOLEAN NOT NULL,
    address_limit INTEGER,
    updated_at TIMESTAMP NOT NULL
);
-- The earlier studies whose Prolific ids may not take part in `study_id`.
CREATE TABLE study_door_exclusions (
    study_id BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    excluded_study_id BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    PRIMARY KEY (study_id, excluded_study_id)
);
