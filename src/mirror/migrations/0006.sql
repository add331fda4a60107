CREATE TABLE raw_documents_v6 (
        operation TEXT NOT NULL,
        entity TEXT NOT NULL,
        content_hash BLOB NOT NULL,
        encoding TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        fetched_at TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (operation, entity)
    );
    INSERT INTO raw_documents_v6 (operation, entity, content_hash, encoding, run_id, fetched_at, body)
        SELECT operation, entity, content_hash, encoding, run_id, fetched_at, body FROM raw_documents;
    DROP TABLE raw_documents;
    ALTER TABLE raw_documents_v6 RENAME TO raw_documents;
    