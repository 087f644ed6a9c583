-- Secrets at rest (issue 12, finding 4): a webhook endpoint's secret is stored sealed under
-- KAIROS_SECRET_KEY (`kairos:v1:…`, a fresh nonce each time), so it can no longer be looked up
-- by value. `secret_hash` is HMAC-SHA256 of (url, secret) under a key derived from the secret
-- key; an endpoint is found and deduplicated by it. Rows stored before sealing have it NULL
-- until the start-up pass seals them.
ALTER TABLE endpoints ADD COLUMN secret_hash TEXT;
CREATE UNIQUE INDEX endpoints_secret_hash ON endpoints (secret_hash) WHERE secret_hash IS NOT NULL;
