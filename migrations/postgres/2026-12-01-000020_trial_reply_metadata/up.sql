-- Why a trial's last reply stopped (the provider's own finish_reason / stop_reason /
-- finishReason) and the snapshot that answered (OpenAI `model` and `system_fingerprint`,
-- Anthropic `model`, Gemini `modelVersion`): a model alias moves to new snapshots over a run.
ALTER TABLE model_trials ADD COLUMN finish_reason TEXT;
ALTER TABLE model_trials ADD COLUMN model_version TEXT;
