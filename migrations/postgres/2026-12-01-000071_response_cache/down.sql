DROP TABLE response_cache;
