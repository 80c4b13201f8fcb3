-- Secrets shared by every process of an installation (several `serve` replicas on one
-- database must sign and check the same CSRF tokens). Created on first start-up (#14).
CREATE TABLE server_secrets (
    name TEXT NOT NULL PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
