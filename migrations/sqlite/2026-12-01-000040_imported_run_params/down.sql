UPDATE model_runs SET params = '{}' WHERE source = 'import' AND params = 'null';
