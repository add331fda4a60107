CREATE TABLE email_sends (
    subscription TEXT NOT NULL,
    as_of TEXT NOT NULL,
    recipient TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed','superseded')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_attempt_at TEXT,
    smtp_code INTEGER,
    error TEXT,
    sent_at TEXT,
    PRIMARY KEY (subscription, as_of, recipient)
) WITHOUT ROWID;
