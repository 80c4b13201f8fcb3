-- Free text of human participants (issue #18, point 1): a study may ask, on the situation page,
-- the open prompt of one free-text task. `studies.free_text` is that setting as JSON
-- (`{"task": "...", "required": false, "max_chars": 2000}`), `null` for none, which is what
-- every study had before.
ALTER TABLE studies ADD COLUMN free_text TEXT NOT NULL DEFAULT 'null';

-- A participant's answer, stored with the situation page's submit (at most one per
-- participant), with the task and the prompt as shown: the study's setting may change later.
-- Deleted with the participant's other answers on withdrawal, and by cascade with the row.
CREATE TABLE participant_texts (
    id INTEGER PRIMARY KEY,
    participant_id BIGINT NOT NULL UNIQUE REFERENCES participants(id) ON DELETE CASCADE,
    task_key TEXT NOT NULL,
    prompt TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
