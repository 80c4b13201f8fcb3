-- The Prolific loop (#15). One row per study that has Prolific settings: what a draft sends
-- (description, reward in cents/pence, places, the study's rules for automatic actions) and,
-- once created, the Prolific study's id. The token is never stored.
CREATE TABLE prolific_studies (
    study_id BIGINT PRIMARY KEY REFERENCES studies(id) ON DELETE CASCADE,
    prolific_study_id TEXT,
    description TEXT NOT NULL,
    reward_cents INTEGER NOT NULL,
    places INTEGER,                     -- NULL: the study's target x its situations
    auto_approve BOOLEAN NOT NULL,
    screen_out_reward_cents INTEGER,    -- NULL: screened-out submissions wait for a review
    estimated_minutes INTEGER,          -- as last sent
    drafted_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
-- Webhook deliveries by Prolific's X-Event-ID: a repeated id (Prolific delivers at least once)
-- finds its row and changes nothing.
CREATE TABLE prolific_webhook_events (
    id INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    resource_id TEXT,
    status TEXT,
    participant_id BIGINT REFERENCES participants(id) ON DELETE SET NULL,
    outcome TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL
);
