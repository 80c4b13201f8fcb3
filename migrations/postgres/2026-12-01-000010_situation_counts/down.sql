DROP TRIGGER situation_counts_update ON participants;
DROP TRIGGER situation_counts_delete ON participants;
DROP TRIGGER situation_counts_insert ON participants;
DROP FUNCTION situation_counts_follow();
DROP TABLE situation_counts;
