-- The whole domain of DESIGN.md (SQLite). Kept in step with ../postgres: same tables, columns and types.
-- Shared column types only (BIGINT ids, INTEGER, TEXT, BOOLEAN, TIMESTAMP); JSON values as TEXT.

-- Situations ------------------------------------------------------------------------------

-- The fixed vocabulary of EmotionBench: importers reject any other emotion.
CREATE TABLE emotions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    position INTEGER NOT NULL
);
INSERT INTO emotions (name, position) VALUES
    ('Anger', 0), ('Anxiety', 1), ('Depression', 2), ('Frustration', 3),
    ('Jealousy', 4), ('Guilt', 5), ('Fear', 6), ('Embarrassment', 7);

CREATE TABLE situation_sets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

-- Factors belong to a set: a researcher's own set may name its factors differently.
CREATE TABLE factors (
    id INTEGER PRIMARY KEY,
    set_id BIGINT NOT NULL REFERENCES situation_sets(id) ON DELETE CASCADE,
    emotion_id BIGINT NOT NULL REFERENCES emotions(id),
    factor_index INTEGER NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (set_id, emotion_id, factor_index)
);

-- Situations are keyed per set: the 175 tested texts differ from situations.json for 30 keys.
CREATE TABLE situations (
    id INTEGER PRIMARY KEY,
    set_id BIGINT NOT NULL REFERENCES situation_sets(id) ON DELETE CASCADE,
    factor_id BIGINT NOT NULL REFERENCES factors(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    scenario_index INTEGER NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (set_id, key)
);
CREATE INDEX situations_factor ON situations (factor_id);

-- Instruments -----------------------------------------------------------------------------

CREATE TABLE instruments (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    min_value INTEGER NOT NULL,
    max_value INTEGER NOT NULL,
    labels TEXT NOT NULL,               -- JSON [{"value":1,"label":"..."}]
    scoring TEXT NOT NULL,              -- 'sum' | 'mean'
    multiplier INTEGER NOT NULL,
    reverse_constant INTEGER NOT NULL,  -- reversed = reverse_constant - x (= min + max)
    paper_raw_sum BOOLEAN NOT NULL,      -- published tables used raw sums for this scale
    prompt TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    builtin BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

CREATE TABLE instrument_items (
    id INTEGER PRIMARY KEY,
    instrument_id BIGINT NOT NULL REFERENCES instruments(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    text TEXT NOT NULL,
    reverse BOOLEAN NOT NULL,
    options TEXT,                       -- JSON [{"value":0,"text":"..."}] for items with their own options
    UNIQUE (instrument_id, number)
);

CREATE TABLE instrument_categories (
    id INTEGER PRIMARY KEY,
    instrument_id BIGINT NOT NULL REFERENCES instruments(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    items TEXT NOT NULL,                -- JSON [1,3,5]
    UNIQUE (instrument_id, position)
);

-- Accounts --------------------------------------------------------------------------------

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL,                 -- 'admin' | 'researcher'
    disabled BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    password_changed_at TIMESTAMP NOT NULL
);

-- Server-side sessions: only a hash of the cookie token is stored.
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    client_ip TEXT,
    user_agent TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE login_attempts (
    id INTEGER PRIMARY KEY,
    email TEXT NOT NULL,
    client_ip TEXT NOT NULL,
    succeeded BOOLEAN NOT NULL,
    at TIMESTAMP NOT NULL
);
CREATE INDEX login_attempts_email ON login_attempts (email, at);
CREATE INDEX login_attempts_ip ON login_attempts (client_ip, at);

-- Studies and participants ----------------------------------------------------------------

CREATE TABLE studies (
    id INTEGER PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    status TEXT NOT NULL,               -- 'draft' | 'open' | 'closed'
    instrument_id BIGINT NOT NULL REFERENCES instruments(id),
    situation_set_id BIGINT REFERENCES situation_sets(id),
    consent_text TEXT NOT NULL,
    debrief_text TEXT NOT NULL,
    target_per_situation INTEGER NOT NULL,
    item_order TEXT NOT NULL,           -- 'fixed' | 'shuffled'
    attention_check TEXT NOT NULL,      -- what a failed check leads to: 'flag' | 'end'
    demographics TEXT NOT NULL,         -- JSON list of demographic fields
    pid_param TEXT NOT NULL,
    study_id_param TEXT NOT NULL,
    session_id_param TEXT NOT NULL,
    code_completed TEXT,
    code_no_consent TEXT,
    code_failed_check TEXT,
    code_screened_out TEXT,
    min_situation_seconds INTEGER NOT NULL,
    reservation_minutes INTEGER NOT NULL,
    seed BIGINT NOT NULL,               -- seeds assignment tie-breaks and item orders
    retention_until TIMESTAMP,
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    opened_at TIMESTAMP,
    closed_at TIMESTAMP
);

CREATE TABLE participants (
    id INTEGER PRIMARY KEY,
    study_id BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    public_id TEXT NOT NULL UNIQUE,     -- random; the anonymous id and the cookie's reference
    prolific_pid TEXT,
    prolific_study_id TEXT,
    prolific_session_id TEXT,
    status TEXT NOT NULL,               -- 'active' | 'completed' | 'withdrawn' | 'no_consent' | 'failed_check' | 'screened_out'
    page TEXT NOT NULL,                 -- current page of the survey state machine
    situation_id BIGINT REFERENCES situations(id),
    assignment TEXT,                    -- JSON record of the draw (candidates, seed, choice)
    reserved_until TIMESTAMP,
    order_default TEXT,                 -- JSON item permutation shown for the default measure
    order_evoked TEXT,
    demographics TEXT,                  -- JSON
    flag_straightline BOOLEAN NOT NULL DEFAULT FALSE,
    flag_fast BOOLEAN NOT NULL DEFAULT FALSE,
    flag_failed_check BOOLEAN NOT NULL DEFAULT FALSE,
    imported BOOLEAN NOT NULL DEFAULT FALSE,
    source_ref TEXT,                    -- e.g. the upstream participant column when imported
    split TEXT,                         -- 'train' | 'test' for fine-tuning splits
    user_agent TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    completed_at TIMESTAMP,
    UNIQUE (study_id, prolific_pid)
);
CREATE INDEX participants_study_status ON participants (study_id, status);
CREATE INDEX participants_situation_status ON participants (situation_id, status);

-- One answer per participant, phase and item: double submits cannot duplicate.
CREATE TABLE responses (
    id INTEGER PRIMARY KEY,
    participant_id BIGINT NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
    phase TEXT NOT NULL,                -- 'default' | 'evoked'
    item_number INTEGER NOT NULL,
    value INTEGER NOT NULL,
    display_position INTEGER NOT NULL,
    created_at TIMESTAMP NOT NULL,
    UNIQUE (participant_id, phase, item_number)
);

CREATE TABLE attention_checks (
    id INTEGER PRIMARY KEY,
    participant_id BIGINT NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
    check_key TEXT NOT NULL,
    answer TEXT NOT NULL,
    passed BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    UNIQUE (participant_id, check_key)
);

CREATE TABLE page_events (
    id INTEGER PRIMARY KEY,
    participant_id BIGINT NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
    page TEXT NOT NULL,
    event TEXT NOT NULL,                -- 'shown' | 'submitted'
    at TIMESTAMP NOT NULL
);
CREATE INDEX page_events_participant ON page_events (participant_id, at);

-- Models ----------------------------------------------------------------------------------

-- Configuration only: API keys stay in environment variables, named here.
CREATE TABLE model_providers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,                 -- 'openai' | 'anthropic' | 'gemini'
    base_url TEXT NOT NULL,
    api_key_env TEXT,
    concurrency INTEGER NOT NULL,
    requests_per_minute INTEGER,
    tokens_per_minute INTEGER,
    price_input_micros BIGINT,          -- USD millionths per million input tokens
    price_output_micros BIGINT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

CREATE TABLE model_runs (
    id INTEGER PRIMARY KEY,
    study_id BIGINT REFERENCES studies(id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    instrument_id BIGINT NOT NULL REFERENCES instruments(id),
    situation_set_id BIGINT REFERENCES situation_sets(id),
    template TEXT NOT NULL,             -- 'eb-code' | 'paper' | 'stability' | custom
    params TEXT NOT NULL,               -- JSON: temperature, top_p, max_tokens, seed
    selection TEXT NOT NULL,            -- JSON: which situations
    repeats INTEGER NOT NULL,
    default_repeats INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    status TEXT NOT NULL,               -- 'queued' | 'running' | 'paused' | 'cancelled' | 'completed' | 'failed'
    source TEXT NOT NULL,               -- 'run' | 'import'
    error TEXT,
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP
);

-- One row per run x measure x situation x repeat; situation_key is '' for the default measure
-- so the uniqueness holds on both backends (NULLs are distinct in UNIQUE).
CREATE TABLE model_trials (
    id INTEGER PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES model_runs(id) ON DELETE CASCADE,
    measure TEXT NOT NULL,              -- 'default' | 'evoked'
    situation_id BIGINT REFERENCES situations(id),
    situation_key TEXT NOT NULL,
    repeat_index INTEGER NOT NULL,
    status TEXT NOT NULL,               -- 'pending' | 'leased' | 'done' | 'failed'
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_at TIMESTAMP,
    item_order TEXT NOT NULL,           -- JSON permutation: display position -> item number
    request TEXT,
    raw_reply TEXT,
    scores TEXT,                        -- JSON item scores in canonical order
    error_class TEXT,
    error TEXT,
    latency_ms BIGINT,
    input_tokens BIGINT,
    output_tokens BIGINT,
    cost_micros BIGINT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    UNIQUE (run_id, measure, situation_key, repeat_index)
);
CREATE INDEX model_trials_run_status ON model_trials (run_id, status);
CREATE INDEX model_trials_claim ON model_trials (status, lease_expires_at);

CREATE TABLE trial_attempts (
    id INTEGER PRIMARY KEY,
    trial_id BIGINT NOT NULL REFERENCES model_trials(id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    request TEXT NOT NULL,
    raw_reply TEXT,
    http_status INTEGER,
    error_class TEXT,
    error TEXT,
    latency_ms BIGINT,
    input_tokens BIGINT,
    output_tokens BIGINT,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    UNIQUE (trial_id, attempt)
);

-- Audit -----------------------------------------------------------------------------------

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at TIMESTAMP NOT NULL,
    user_id BIGINT REFERENCES users(id) ON DELETE SET NULL,
    actor TEXT NOT NULL,                -- email, or 'cli'
    action TEXT NOT NULL,
    target TEXT,
    detail TEXT,                        -- JSON
    client_ip TEXT
);
CREATE INDEX audit_log_at ON audit_log (at);
