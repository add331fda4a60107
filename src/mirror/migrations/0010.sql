CREATE TABLE alert_deliveries (
        event_id TEXT NOT NULL,
        webhook TEXT NOT NULL,
        format TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt_at TEXT,
        http_status INTEGER,
        error TEXT,
        delivered_at TEXT,
        PRIMARY KEY (event_id, webhook)
    ) WITHOUT ROWID;
    CREATE INDEX alert_deliveries_status ON alert_deliveries (webhook, status);
    INSERT INTO alert_deliveries (event_id, webhook, format, body, status, attempts,
            last_attempt_at, http_status, error, delivered_at)
        SELECT id, 'default', 'standard', body, status, attempts, last_attempt_at,
            http_status, error, delivered_at
        FROM alert_outbox;
    CREATE TABLE alert_events (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        body TEXT NOT NULL
    );
    INSERT INTO alert_events (id, type, created_at, body)
        SELECT id, type, created_at, body FROM alert_outbox ORDER BY rowid;
    DROP TABLE alert_outbox;
    ALTER TABLE alert_events RENAME TO alert_outbox;
