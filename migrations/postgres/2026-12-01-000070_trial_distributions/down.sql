ALTER TABLE model_trials DROP COLUMN cached;
ALTER TABLE model_trials DROP COLUMN distributions;
ALTER TABLE model_trials DROP COLUMN method;
