-- Back to the triggers without pilots (their rows then count; delete them first).
DROP TRIGGER situation_counts_insert;
DROP TRIGGER situation_counts_delete;
DROP TRIGGER situation_counts_leave;
DROP TRIGGER situation_counts_enter;

CREATE TRIGGER situation_counts_insert AFTER INSERT ON participants
WHEN NEW.status = 'completed' AND NEW.situation_id IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO situation_counts (study_id, situation_id, completed)
    VALUES (NEW.study_id, NEW.situation_id, 0);
    UPDATE situation_counts SET completed = completed + 1
    WHERE study_id = NEW.study_id AND situation_id = NEW.situation_id;
END;

CREATE TRIGGER situation_counts_delete AFTER DELETE ON participants
WHEN OLD.status = 'completed' AND OLD.situation_id IS NOT NULL
BEGIN
    UPDATE situation_counts SET completed = completed - 1
    WHERE study_id = OLD.study_id AND situation_id = OLD.situation_id;
END;

-- Page moves do not set these columns, so they never fire the two below.
CREATE TRIGGER situation_counts_leave AFTER UPDATE OF status, situation_id, study_id ON participants
WHEN OLD.status = 'completed' AND OLD.situation_id IS NOT NULL
    AND (NEW.status IS NOT 'completed' OR NEW.situation_id IS NOT OLD.situation_id
         OR NEW.study_id IS NOT OLD.study_id)
BEGIN
    UPDATE situation_counts SET completed = completed - 1
    WHERE study_id = OLD.study_id AND situation_id = OLD.situation_id;
END;

CREATE TRIGGER situation_counts_enter AFTER UPDATE OF status, situation_id, study_id ON participants
WHEN NEW.status = 'completed' AND NEW.situation_id IS NOT NULL
    AND (OLD.status IS NOT 'completed' OR OLD.situation_id IS NOT NEW.situation_id
         OR OLD.study_id IS NOT NEW.study_id)
BEGIN
    INSERT OR IGNORE INTO situation_counts (study_id, situation_id, completed)
    VALUES (NEW.study_id, NEW.situation_id, 0);
    UPDATE situation_counts SET completed = completed + 1
    WHERE study_id = NEW.study_id AND situation_id = NEW.situation_id;
END;

ALTER TABLE participants DROP COLUMN pilot;
