ALTER TABLE model_trials DROP COLUMN before_scores;
ALTER TABLE model_trials DROP COLUMN before_order;
ALTER TABLE model_trials DROP COLUMN persona;
