CREATE TABLE privacy_key (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        key BLOB NOT NULL CHECK (length(key) = 32)
    );
    INSERT INTO privacy_key (id, key) VALUES (1, randomblob(32));
    CREATE TABLE erasures (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL,
        at TEXT NOT NULL,
        reason TEXT NOT NULL CHECK (reason IN ('request','retention')),
        keep_redacted INTEGER NOT NULL CHECK (keep_redacted IN (0, 1))
    );
    CREATE INDEX erasures_user ON erasures (user_id);
