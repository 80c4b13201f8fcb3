-- Invitations to create an account from the browser (#13 point 6). Like sessions, only a hash
-- of the link's token is stored: a leaked database does not leak usable links. `used_at` makes
-- a link single-use; `expires_at` is stored (not derived from `created_at`) so the lifetime can
-- change without rewriting old rows.
CREATE TABLE invites (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    email TEXT NOT NULL,
    role TEXT NOT NULL,                 -- 'admin' | 'researcher'
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at TIMESTAMP
);
CREATE INDEX invites_email ON invites (email);
