-- The response cache (#17): a provider's successful reply body, keyed by the hash of what was
-- asked (provider kind, base URL, model, the exact request body, the trial's repeat index; see
-- store::cache). The parts are kept beside the key so that an exported file can be checked
-- line by line on import.
CREATE TABLE response_cache (
    key TEXT PRIMARY KEY NOT NULL,
    provider_kind TEXT NOT NULL,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    repeat_index INTEGER NOT NULL,
    http_status INTEGER NOT NULL,
    reply TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
