DROP TABLE run_batches;
