CREATE TABLE alert_state (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        active INTEGER NOT NULL,
        crossings INTEGER NOT NULL,
        event_id TEXT,
        since TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE alert_runs (
        id INTEGER PRIMARY KEY,
        as_of TEXT NOT NULL,
        at TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('advanced','read_only')),
        events INTEGER NOT NULL
    );
    CREATE TABLE alert_outbox (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt_at TEXT,
        http_status INTEGER,
        error TEXT,
        delivered_at TEXT
    );
    CREATE INDEX alert_outbox_status ON alert_outbox (status, created_at);
    