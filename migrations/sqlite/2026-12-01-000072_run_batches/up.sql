-- Provider batches of a run (#17): the provider's batch id is kept the moment it is created, so
-- a worker that dies while the batch is processed is replaced by one that re-attaches to the
-- same batch and collects it instead of submitting the trials again. `trials` lists the
-- trial ids sent (JSON), each line's custom_id being `trial-ID`. A collector holds the batch
-- with a lease (`lease_owner`, `lease_expires_at`) so that two workers do not both collect.
CREATE TABLE run_batches (
    id INTEGER PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES model_runs(id) ON DELETE CASCADE,
    provider_batch_id TEXT NOT NULL,
    input_file_id TEXT,
    status TEXT NOT NULL,               -- 'submitted' | 'collected' | 'failed'
    trials TEXT NOT NULL,
    error TEXT,
    lease_owner TEXT,
    lease_expires_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP
);
CREATE INDEX run_batches_run_status ON run_batches (run_id, status);
