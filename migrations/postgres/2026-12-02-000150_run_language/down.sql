ALTER TABLE model_runs DROP COLUMN language;
