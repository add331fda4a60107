CREATE TABLE maintenance_runs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('check','backup')),
    at TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT
);
