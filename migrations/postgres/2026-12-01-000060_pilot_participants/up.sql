-- Pilot participants (issue #13, point 4): see the SQLite migration. They never count in
-- the completed counts the assignment balances.
ALTER TABLE participants ADD COLUMN pilot BOOLEAN NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION situation_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'completed' AND OLD.situation_id IS NOT NULL
       AND NOT OLD.pilot THEN
        UPDATE situation_counts SET completed = completed - 1
        WHERE study_id = OLD.study_id AND situation_id = OLD.situation_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status = 'completed' AND NEW.situation_id IS NOT NULL
       AND NOT NEW.pilot THEN
        INSERT INTO situation_counts (study_id, situation_id, completed)
        VALUES (NEW.study_id, NEW.situation_id, 1)
        ON CONFLICT (study_id, situation_id)
        DO UPDATE SET completed = situation_counts.completed + 1;
    END IF;
    RETURN NULL;
END
$$;
