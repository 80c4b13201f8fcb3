-- Imported runs were given the parameters '{}', which is not a run's parameters: they sent no
-- request. The column now holds JSON null for them, so every stored value decodes as what it is.
UPDATE model_runs SET params = 'null' WHERE source = 'import' AND params = '{}';
