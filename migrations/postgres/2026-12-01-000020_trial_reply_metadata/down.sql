ALTER TABLE model_trials DROP COLUMN model_version;
ALTER TABLE model_trials DROP COLUMN finish_reason;
