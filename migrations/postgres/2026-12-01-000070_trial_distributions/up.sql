-- Answer distributions (#17): per trial, how its scores were read (`method`: parsed |
-- logprobs), each item's probabilities of the allowed answers with their expected value (JSON,
-- domain::distribution::Distributions), and whether the answer came from the response cache.
ALTER TABLE model_trials ADD COLUMN method TEXT;
ALTER TABLE model_trials ADD COLUMN distributions TEXT;
ALTER TABLE model_trials ADD COLUMN cached BOOLEAN NOT NULL DEFAULT false;
