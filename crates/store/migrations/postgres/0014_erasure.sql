-- Erasure of a person (issue 15): the key of the keyed hash that an erased address's
-- suppression is stored as, and the column that holds that hash. Mirrors the SQLite file.

-- Secret keys kairos keeps. The erasure key (name 'erasure', 32 random bytes) is inserted the
-- first time a recipient is erased, never changed, never shown.
CREATE TABLE kairos_keys (
    name       text PRIMARY KEY,
    key        bytea NOT NULL,
    created_at timestamptz NOT NULL
);

-- An erased address's suppression: HMAC-SHA256 of the normalized address under the erasure
-- key, lowercase hex. Its `address` is then 'hmac-sha256:' || address_hash, never the address.
ALTER TABLE suppressions ADD COLUMN address_hash text;
CREATE UNIQUE INDEX suppressions_address_hash ON suppressions (address_hash)
    WHERE address_hash IS NOT NULL;
